//! How much memory a process and its descendants use, from Linux `/proc` (zeros elsewhere):
//! the node's own resident set, and the proportional set size of its browsers' process trees.
//!
//! Measuring is not free: a process's proportional set size (`smaps_rollup`) makes the kernel
//! walk that process's page tables under its memory lock. So only the trees asked for are
//! read (found through the cheap `/proc/*/stat`), and callers measure on a timer, on the
//! blocking pool: reading every process on the machine from every `/status` call costs a box
//! of several nodes most of its CPU in system time.

/// This process's resident set, bytes (0 where `/proc` is not there).
pub fn own_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status").ok().and_then(|s| kb(&s, "VmRSS:")).map_or(0, |kb| kb * 1024)
}

/// This process's resident set by kind, bytes: anonymous (its own allocations) and
/// file-backed (mapped files' pages — the vector index's sealed segments among them — which
/// the kernel takes back under memory pressure). Zeros where `/proc` is not there.
pub fn own_rss_parts() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let part = |field: &str| kb(&s, field).map_or(0, |kb| kb * 1024);
    (part("RssAnon:"), part("RssFile:"))
}

/// The allocator's heaps, bytes: what is allocated and live (in its arenas and in chunks mapped
/// on their own), and what it holds free in its arenas — freed memory not yet reused, part of
/// which [`trim`] has handed back to the system (so it is not all resident). Together they tell
/// live growth from fragmentation. glibc's `mallinfo2` (zeros elsewhere), which walks the
/// arenas' free lists under their locks — while it walks, every thread that allocates waits —
/// so it is read at most once a second ([`HEAP_EVERY`]) however often `/status` is asked.
/// Fifty nodes on two cores, each asked for its status before every question of the
/// simulator's search phase, spent ~7% of the box in `int_mallinfo` and the walk's
/// consolidation, with the nodes' answers to questions waiting behind it.
pub fn heap() -> (u64, u64) {
    static LAST: parking_lot::Mutex<Option<(std::time::Instant, (u64, u64))>> = parking_lot::Mutex::new(None);
    let mut last = LAST.lock();
    match *last {
        Some((at, heap)) if at.elapsed() < HEAP_EVERY => heap,
        _ => {
            let heap = weft_index::embed::heap_bytes();
            *last = Some((std::time::Instant::now(), heap));
            heap
        }
    }
}

/// How long [`heap`]'s reading stands.
const HEAP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Hands the allocator's free pages back to the system (glibc's `malloc_trim`; nothing
/// elsewhere). ONNX Runtime is C++ on glibc's malloc: loading a model and running it leave
/// tens of MiB free but mapped in the heap (a session of the embedding model: 128 MiB resident
/// after loading, 96 MiB once trimmed), which a box running several nodes pays for in full.
/// Takes a few milliseconds over a heap of a few hundred MiB; blocking.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own arenas under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// How many heaps (arenas) glibc's malloc may keep: [`ARENAS`], unless `MALLOC_ARENA_MAX` is
/// set in the environment (then glibc reads that); and its mapping threshold, [`MMAP_THRESHOLD`],
/// unless `MALLOC_MMAP_THRESHOLD_` is set. Called first thing in `main`, before any thread starts.
///
/// Arenas: memory freed in a thread's arena serves only its threads, and a node runs 100+
/// threads; with one arena it serves every thread, and on two cores (ONNX Runtime's tensors
/// coming from its own arena) the one lock is not where a crawl waits.
///
/// Threshold: glibc raises it to the size of each large block freed, so after warm-up a crawl's
/// large buffers would come from the heaps and fragment them; fixed, they get their own
/// mappings. Both measured with `crawl_soak` (docs/src/benchmarks.md).
pub fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (variable, parameter, value) in [
        ("MALLOC_ARENA_MAX", libc::M_ARENA_MAX, ARENAS),
        ("MALLOC_MMAP_THRESHOLD_", libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ] {
        // The environment wins: glibc has read it already.
        if std::env::var_os(variable).is_none() {
            // SAFETY: mallopt only sets a malloc parameter; called before other threads exist.
            unsafe {
                libc::mallopt(parameter, value);
            }
        }
    }
}

/// glibc's per-thread caches off for a long-running node: when `GLIBC_TUNABLES` does not
/// already set `glibc.malloc.tcache_count`, re-executes this program (same arguments, same
/// process id) with it set to 0, and does not return. It returns when the tunable is set (the
/// user's choice, or the re-executed process) or the program cannot be re-executed (a binary
/// replaced on disk, one run by `qemu-user`), which only costs the memory. glibc reads its
/// tunables when a program starts and offers no call to change them later. Call it early in
/// `main`, before any thread starts, and only for `weft start`.
///
/// It calls `execve` itself (`Command::exec`'s `execvp` hands a file the kernel cannot run to
/// `/bin/sh`). The caches go because each thread keeps freed small chunks for itself, and a
/// node's ~140 threads are mostly idle (`crawl_soak`, docs/src/benchmarks.md).
pub fn drop_thread_caches() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        const TCACHE: &str = "glibc.malloc.tcache_count";
        let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
        if tunables.contains(TCACHE) {
            return;
        }
        let Ok(exe) = std::env::current_exe() else { return };
        let value = if tunables.is_empty() { format!("{TCACHE}=0") } else { format!("{tunables}:{TCACHE}=0") };
        let c = |b: &[u8]| CString::new(b).ok();
        let Some(path) = c(exe.as_os_str().as_bytes()) else { return };
        let Some(argv) = std::env::args_os().map(|a| c(a.as_bytes())).collect::<Option<Vec<CString>>>() else {
            return;
        };
        let mut env: Vec<CString> = std::env::vars_os()
            .filter(|(k, _)| k != "GLIBC_TUNABLES")
            .filter_map(|(k, v)| c(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
            .collect();
        env.extend(c(format!("GLIBC_TUNABLES={value}").as_bytes()));
        let ptrs = |v: &[CString]| v.iter().map(|s| s.as_ptr()).chain([std::ptr::null()]).collect::<Vec<_>>();
        let (argv, env) = (ptrs(&argv), ptrs(&env));
        // SAFETY: NUL-terminated strings in NULL-terminated arrays, all alive across the call;
        // `execve` returns only when it failed, and the node then runs with the caches on.
        unsafe {
            libc::execve(path.as_ptr(), argv.as_ptr(), env.as_ptr());
        }
    }
}

/// Allocations of this many bytes or more get their own mapping, returned to the system when
/// freed ([`tune_malloc`]): glibc's starting value, kept instead of raised.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 128 * 1024;

/// The arenas [`tune_malloc`] allows: one heap that every thread's freed memory returns to
/// (see there for the measurements).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const ARENAS: i32 = 1;

/// A `Field:   1234 kB` line's number.
fn kb(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
}
