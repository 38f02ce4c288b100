//! Storage faults end the node cleanly: a clear message, `/health` unhealthy, a non-zero exit
//! within a bound — never a hang, and never an acknowledgement for something not on disk.
//!
//! sled can block for good when its files fail under it (seen with the data dir removed:
//! `flush` never returned, and every other writer then waited on sled's lock). So:
//!
//! - **Nothing touches sled on an async worker thread.** Flushes run on the blocking pool
//!   ([`Storage::bounded`]); the other calls — frontier, robots cache, layout store, outbox
//!   journal, all of them in-memory most of the time but able to block on sled's log — run
//!   inside [`blocking`], which hands the worker's other tasks to another thread first. A
//!   stuck storage call can therefore never starve the runtime: timers, signals, the API and
//!   the shutdown path keep running.
//! - **Every flush has a bound** (`storage.flush_timeout_secs`). One that fails or outlasts it
//!   is a fault.
//! - **The data dir is watched** ([`Storage::watch`]): still there, still the same directory,
//!   and a small probe file can be written and synced (read-only mounts, a full disk and I/O
//!   errors fail it).
//! - **A fault is final.** It is logged once with the path and the OS error, `/health` turns
//!   unhealthy, the crawl stops and `Node::run` returns the error; the `weft` binary also arms
//!   a watchdog that exits the process shortly after, whatever is still stuck.
//!   Acknowledgements (a URL batch from another member, seeds over the API) follow a flush
//!   that succeeded, so a fault loses nothing that was acknowledged.

use parking_lot::Mutex;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What a check of the data dir found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DataDirFault {
    #[error("the data dir is gone")]
    Gone,
    #[error("the data dir was replaced by another directory")]
    Replaced,
    #[error("cannot write {}: {error}", probe.display())]
    Unwritable { probe: PathBuf, error: String },
}

/// Why the node's storage can no longer be trusted.
#[derive(Debug, Clone, thiserror::Error)]
#[error("storage fault in {path}: {what}: {error}")]
pub struct StorageFault {
    pub path: PathBuf,
    /// What was being done: `flush`, `probe`, ...
    pub what: String,
    /// The OS's (or sled's) words, or how long it hung.
    pub error: String,
}

/// The node's storage guard. Cheap to clone.
#[derive(Clone)]
pub struct Storage {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    /// (device, inode) of the data dir when the node started.
    identity: Option<(u64, u64)>,
    timeout: Duration,
    fault: Mutex<Option<StorageFault>>,
    faulted: watch::Sender<bool>,
    /// Storage calls that failed without ending the node (a write the crawl could go on
    /// without): counted in `/status` and `/metrics`, so a node that is not progressing says why.
    errors: AtomicU64,
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

pub use weft_db::blocking;

impl Storage {
    /// A guard for the data dir `data_dir`, with flushes bounded by `timeout`.
    pub fn new(data_dir: &Path, timeout: Duration) -> Storage {
        let (faulted, _) = watch::channel(false);
        Storage {
            inner: Arc::new(Inner {
                data_dir: data_dir.to_path_buf(),
                identity: identity(data_dir),
                timeout,
                fault: Mutex::new(None),
                faulted,
                errors: AtomicU64::new(0),
            }),
        }
    }

    /// The fault, once there is one.
    pub fn fault(&self) -> Option<StorageFault> {
        self.inner.fault.lock().clone()
    }

    /// Turns true at the first fault.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.inner.faulted.subscribe()
    }

    /// Counts and logs a storage call that failed without being a fault.
    pub fn error(&self, what: &str, error: impl std::fmt::Display) {
        self.inner.errors.fetch_add(1, Ordering::Relaxed);
        tracing::error!(what, "storage: {error}");
    }

    /// Storage calls failed so far (faults included).
    pub fn errors(&self) -> u64 {
        self.inner.errors.load(Ordering::Relaxed)
    }

    /// Records a fault (the first one wins and is logged).
    pub fn report(&self, what: &str, error: impl std::fmt::Display) -> StorageFault {
        let mut slot = self.inner.fault.lock();
        if let Some(f) = &*slot {
            return f.clone();
        }
        self.inner.errors.fetch_add(1, Ordering::Relaxed);
        let fault =
            StorageFault { path: self.inner.data_dir.clone(), what: what.to_string(), error: error.to_string() };
        tracing::error!(path = %fault.path.display(), what = fault.what, error = fault.error, "storage failed: stopping the node");
        *slot = Some(fault.clone());
        self.inner.faulted.send_replace(true);
        fault
    }

    /// Runs `op` (a flush, a snapshot) on the blocking pool, waiting at most the flush bound. A
    /// failure or a timeout is a fault.
    pub async fn bounded<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
        &self,
        what: &str,
        op: impl FnOnce() -> Result<T, E> + Send + 'static,
    ) -> Result<T, StorageFault> {
        if let Some(f) = self.fault() {
            return Err(f);
        }
        let task = tokio::task::spawn_blocking(op);
        match tokio::time::timeout(self.inner.timeout, task).await {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(e))) => Err(self.report(what, e)),
            Ok(Err(join)) => Err(self.report(what, join)),
            Err(_) => Err(self.report(what, format!("no answer within {:?}", self.inner.timeout))),
        }
    }

    /// One check of the data dir: there, the same directory, and writable to the disk.
    pub fn check(&self) -> Result<(), DataDirFault> {
        let dir = &self.inner.data_dir;
        match (identity(dir), self.inner.identity) {
            (None, _) => return Err(DataDirFault::Gone),
            (Some(now), Some(then)) if now != then => return Err(DataDirFault::Replaced),
            _ => {}
        }
        // Checks may run at once (the watch, the database's generation): each its own probe,
        // or one would remove the other's file under it.
        static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = PROBES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let probe = dir.join(format!(".weft-probe-{n}"));
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::File::create(&probe)?;
            f.write_all(&[0u8; 4096])?;
            f.sync_all()?;
            std::fs::remove_file(&probe)
        };
        write().map_err(|error| {
            let _ = std::fs::remove_file(&probe);
            DataDirFault::Unwritable { probe: probe.clone(), error: error.to_string() }
        })
    }

    /// Checks the data dir every `every` (each check bounded like a flush) until a fault.
    pub async fn watch(self, every: Duration) {
        let mut faulted = self.subscribe();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = faulted.wait_for(|f| *f) => return,
            }
            let me = self.clone();
            if let Err(fault) = self.bounded("check", move || me.check()).await {
                tracing::debug!("data dir check: {fault}");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_or_hung_flush_is_a_fault_and_the_first_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        // A bound far above what a healthy flush takes: with the suite running beside it, a
        // blocking thread once took over 200 ms to start, and a flush that did nothing "hung".
        let s = Storage::new(dir.path(), Duration::from_secs(30));
        s.bounded("flush", || Ok::<(), String>(())).await.unwrap();
        assert!(s.check().is_ok());
        let mut rx = s.subscribe();
        let e = s.bounded("flush", || Err::<(), _>("No space left on device (os error 28)")).await.unwrap_err();
        assert!(e.to_string().contains("os error 28"), "{e}");
        assert!(*rx.borrow_and_update());
        let later = s.bounded("flush", || Ok::<(), String>(())).await.unwrap_err();
        assert_eq!(later.error, e.error, "a fault is final");
        s.error("frontier push", "No space left on device (os error 28)");
        assert_eq!(s.errors(), 2, "the fault and the failed push are counted for /status and /metrics");

        let s = Storage::new(dir.path(), Duration::from_millis(100));
        let hung = s
            .bounded("flush", || {
                std::thread::sleep(Duration::from_secs(2));
                Ok::<(), String>(())
            })
            .await
            .unwrap_err();
        assert_eq!(hung.error, "no answer within 100ms", "a bound under a second is said in ms");
    }

    /// The watch and the generation task check the data dir at once: neither may fail the
    /// other (they shared one probe file, and one removed it under the other: a healthy node
    /// stopped with "cannot write .weft-probe: No such file or directory").
    #[test]
    fn checks_at_the_same_time_do_not_fail_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::new(dir.path(), Duration::from_secs(1));
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..100 {
                        s.check().unwrap();
                    }
                });
            }
        });
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no probe left behind");
    }

    #[test]
    fn a_removed_data_dir_fails_the_check() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        let s = Storage::new(&dir, Duration::from_secs(1));
        assert!(s.check().is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(s.check(), Err(DataDirFault::Gone));
    }
}
