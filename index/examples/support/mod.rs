//! What the index's benchmarks share: a small seeded random source, the process's resident
//! memory, handing glibc's free pages back, a percentile of sorted samples and numeric flags.
// Each example uses a part of this module.
#![allow(dead_code)]

/// Xorshift: fast, seeded, the same sequence on every machine.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 11) as f32 / (1u64 << 53) as f32
    }

    /// Roughly normal (sum of four uniforms), variance 1/3.
    pub fn gauss(&mut self) -> f32 {
        (0..4).map(|_| self.unit()).sum::<f32>() - 2.0
    }
}

/// A line of `/proc/self/status`, MiB (`VmRSS`, `RssAnon`, `RssFile`).
fn status_mib(field: &str) -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// The process's resident memory, MiB (`VmRSS`).
pub fn rss_mib() -> f64 {
    status_mib("VmRSS:")
}

/// The process's resident memory by kind, MiB: anonymous (its own allocations) and file-backed
/// (mapped files' pages in the page cache, which the kernel takes back under pressure).
pub fn rss_parts_mib() -> (f64, f64) {
    (status_mib("RssAnon:"), status_mib("RssFile:"))
}

/// The `p` quantile of `sorted` (nearest rank below).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// glibc's free pages handed back to the system (`malloc_trim`), as the node's memory watcher
/// does every 30 s, so the memory read after it is what the process holds, not what the
/// allocator kept.
pub fn trim() {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: malloc_trim only walks the allocator's own arenas under their locks.
    unsafe {
        malloc_trim(0);
    }
}

/// The number after `name` on the command line, or `default`.
pub fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}
