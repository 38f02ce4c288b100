//! What system tests need to fail readably: a work dir — node data dirs and logs, the web
//! server's request log — removed when the test passes and kept under
//! `target/test-failures/<test>/` when it fails, in CI too (a failure whose logs went away with
//! its temporary dir cannot be read, only re-run); and one network at a time, so a test does
//! not fail for its neighbour's load.

use std::path::{Path, PathBuf};

/// A temporary work dir that outlives a failing test (see the module doc). `SIMNET_KEEP=1`
/// keeps it where it is whatever the outcome.
pub struct WorkDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    test: String,
}

impl WorkDir {
    /// A fresh dir for the test named `test` (its kept copy's name).
    pub fn new(test: &str) -> std::io::Result<WorkDir> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().to_path_buf();
        let dir = if std::env::var_os("SIMNET_KEEP").is_some() {
            let _ = dir.keep();
            None
        } else {
            Some(dir)
        };
        eprintln!("work dir: {}", path.display());
        Ok(WorkDir { dir, path, test: test.to_string() })
    }

    /// A fresh dir for the test running on this thread, named after it (libtest names each
    /// test's thread after the test): `module-test`, then `module-test-2`, `-3`, ... for the
    /// test's further dirs. For a system test's data dirs, so a failure keeps them.
    pub fn for_this_test() -> std::io::Result<WorkDir> {
        thread_local! {
            static MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        }
        let n = MADE.with(|m| {
            m.set(m.get() + 1);
            m.get()
        });
        let test = std::thread::current().name().unwrap_or("unnamed").replace("::", "-");
        WorkDir::new(&if n == 1 { test } else { format!("{test}-{n}") })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Tests that run a network of nodes take this first: on two cores, two networks at once slow
/// each other past their bounds. Lighter tests run beside them. The turn is held across
/// processes too (an `flock` on `network.lock` in the target dir), because the test runner
/// runs several test binaries at once and each crate's tests share one process.
pub fn one_network_at_a_time() -> NetworkTurn {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let asked = std::time::Instant::now();
    let in_process = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let path = network_lock();
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("the network lock {}: {e}", path.display()));
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor this function owns; released when `file` closes.
    while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "the network lock {}: {e}", path.display());
    }
    let test = std::thread::current().name().unwrap_or("unnamed").to_string();
    NetworkTurn { _file: file, _in_process: in_process, test, asked, got: std::time::Instant::now() }
}

/// Where each network turn is written down when it ends, a line each: the test, the seconds it
/// waited for its turn and the seconds it held it. The turns run one after another, so what
/// they held is the suite's floor; the runner sums them (`scripts/run_tests.py`).
pub fn turns_log() -> PathBuf {
    network_lock().with_file_name("network-turns.tsv")
}

/// The file whose `flock` is the network's turn: `network.lock` in the target dir.
fn network_lock() -> PathBuf {
    failures_dir().parent().map_or_else(std::env::temp_dir, Path::to_path_buf).join("network.lock")
}

/// A test's turn to run a network (see [`one_network_at_a_time`]); the next test's starts
/// when it is dropped.
pub struct NetworkTurn {
    // Field order is drop order: the file lock goes first, then the in-process one.
    _file: std::fs::File,
    _in_process: std::sync::MutexGuard<'static, ()>,
    test: String,
    asked: std::time::Instant,
    got: std::time::Instant,
}

impl Drop for NetworkTurn {
    /// Writes the turn down (see [`turns_log`]) before the locks go; a log that cannot be
    /// written costs the figure, not the test.
    fn drop(&mut self) {
        use std::io::Write;
        let (waited, held) = (self.got - self.asked, self.got.elapsed());
        let line = format!("{}\t{:.1}\t{:.1}\n", self.test, waited.as_secs_f64(), held.as_secs_f64());
        let log = std::fs::OpenOptions::new().create(true).append(true).open(turns_log());
        if let Ok(mut f) = log {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Where failing tests leave their work dirs: `$CARGO_TARGET_DIR/test-failures`, or the
/// workspace's `target/test-failures`.
pub fn failures_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("test-failures"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-failures"),
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !std::thread::panicking() || self.dir.is_none() {
            return;
        }
        let to = failures_dir().join(&self.test);
        let _ = std::fs::remove_dir_all(&to);
        let copied = std::fs::create_dir_all(&to).and_then(|()| copy_tree(&self.path, &to));
        match copied {
            Ok(()) => eprintln!("the failed test's work dir (logs, data dirs) is kept at {}", to.display()),
            Err(e) => eprintln!("could not keep the failed test's work dir at {}: {e}", to.display()),
        }
    }
}

/// Copies the tree at `from` into `to` (files and dirs; sockets and the like are left out).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_test_leaves_its_work_dir_under_test_failures() {
        let name = "simnet-failures-unit-test";
        let kept = failures_dir().join(name);
        let _ = std::fs::remove_dir_all(&kept);
        let outcome = std::panic::catch_unwind(|| {
            let work = WorkDir::new(name).unwrap();
            std::fs::create_dir_all(work.path().join("node0")).unwrap();
            std::fs::write(work.path().join("node0/node.log"), "a line\n").unwrap();
            panic!("the test fails");
        });
        assert!(outcome.is_err());
        assert_eq!(std::fs::read_to_string(kept.join("node0/node.log")).unwrap(), "a line\n");
        std::fs::remove_dir_all(&kept).unwrap();
        // A passing test leaves nothing.
        let path = {
            let work = WorkDir::new(name).unwrap();
            work.path().to_path_buf()
        };
        assert!(!path.exists() && !kept.exists());
    }

    #[test]
    fn a_tests_dirs_are_named_after_it_and_numbered() {
        let first = failures_dir().join("failures-tests-a_tests_dirs_are_named_after_it_and_numbered");
        let second = first.with_file_name(format!("{}-2", first.file_name().unwrap().to_string_lossy()));
        let _ = std::fs::remove_dir_all(&first);
        let _ = std::fs::remove_dir_all(&second);
        let outcome = std::panic::catch_unwind(|| {
            let (a, b) = (WorkDir::for_this_test().unwrap(), WorkDir::for_this_test().unwrap());
            std::fs::write(a.path().join("a"), "").unwrap();
            std::fs::write(b.path().join("b"), "").unwrap();
            panic!("the test fails");
        });
        assert!(outcome.is_err());
        assert!(first.join("a").exists() && second.join("b").exists(), "{first:?} {second:?}");
        std::fs::remove_dir_all(&first).unwrap();
        std::fs::remove_dir_all(&second).unwrap();
    }

    #[test]
    fn networks_take_turns_across_processes() {
        use std::os::fd::AsRawFd;
        let turn = one_network_at_a_time();
        let other = std::fs::File::open(network_lock()).unwrap();
        // SAFETY: a non-blocking flock on a descriptor this test owns, as another process would.
        let try_lock = || unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_ne!(try_lock(), 0, "taken while a test holds its turn");
        // Not asserted free after `drop(turn)`: a test binary running beside this one may take
        // its turn in between.
        drop(turn);
    }
}
