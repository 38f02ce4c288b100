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

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Tests that run a network of nodes take this first: on two cores, two networks at once slow
/// each other past their bounds (a crate's tests share one process and run two at a time).
/// Lighter tests run beside them.
pub fn one_network_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
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
}
