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
/// set in the environment (then glibc reads that); and its mapping threshold (below). Called
/// first thing in `main`, before any thread starts.
///
/// glibc gives threads their own arenas, up to eight per core, and memory freed in one arena
/// serves only that arena's threads. A node's threads are many (tokio's blocking pool grows to
/// 100+ threads under a crawl's storage calls, plus ONNX Runtime's, sled's, fjall's, tantivy's),
/// so its freed memory sits in many arenas of tens of MiB that no other thread can reuse. With
/// **one**, freed memory serves every thread: a crawling node holds far less at the same page
/// rate (`crawl_soak`; the figures are in docs/src/benchmarks.md). On two cores at most two
/// threads allocate at once, and ONNX Runtime's tensors come from its own arena, so the one
/// lock is not where a crawl waits. Not measured on four cores, such as a Raspberry Pi's:
/// `MALLOC_ARENA_MAX=2` there gives two.
///
/// It also fixes the size from which an allocation gets its own mapping at [`MMAP_THRESHOLD`],
/// unless `MALLOC_MMAP_THRESHOLD_` is set. glibc starts at 128 KiB but raises the threshold to
/// the size of each large block freed (up to 32 MiB), so after warm-up a crawl's large buffers
/// (pages, storage blocks, batches) came from the heaps and left them fragmented: from minute 5
/// to 17 of a crawl, anonymous memory grew 74 MiB of which the live heap 12 and the free memory
/// glibc kept 66. With the threshold fixed, the hour-long crawl held 380 / 498 MiB at 10 / 60
/// minutes against 438 / 580, glibc's free memory 23 → 80 MiB over it (`crawl_soak`,
/// docs/src/benchmarks.md).
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
/// process id) with it set to 0, and does not return; returns when it is set (the user's
/// choice, or the re-executed process) or the program cannot be re-executed (a binary replaced
/// on disk, or an aarch64 binary run by `qemu-user` on another machine), which only costs the
/// memory. It calls `execve` itself: `Command::exec` goes through `execvp`, which hands a file
/// the kernel cannot run to `/bin/sh` instead of failing (under `qemu-user` the node then died
/// with "Syntax error" from the shell reading the binary). glibc reads its tunables from the
/// environment when the program starts and offers no call to change them later. Call it early
/// in `main`, before any thread starts, and only for `weft start`: a short command has no use
/// for it.
///
/// Why: each thread keeps up to seven freed chunks of each small size for itself, apart from
/// the heaps, where they serve no other thread and do not coalesce with their neighbours. A
/// crawling node runs ~140 threads, most of them tokio's blocking pool idle between bursts of
/// storage calls, and side by side for 30 minutes the same crawl held 24–34 MiB less at every
/// minute from the fifth with the caches off, growing 15 MiB after minute 10 against 25, at
/// the same page rate (`crawl_soak`, docs/src/benchmarks.md).
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
