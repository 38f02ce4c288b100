//! Opening a sled database the way every Weft store does. sled's defaults do not fit a node:
//! its page cache is 1 GiB, a reopen in the same process can find the file lock still held by
//! the closing handle's background writer, and some damaged files make it panic rather than
//! return an error. The frontier, the index's cell store, the node and the tests all open
//! through [`open_db`], so each of those is handled once.
//!
//! Beside it, helpers for the fjall stores: [`keyspace_options`] (how every keyspace is
//! made), [`Syncs`] (coalesced syncs), [`LsmMemory`] (what a store holds in memory, for
//! `/status`), [`MemtableAge`] (slow memtables written out by age, so a store's write buffer
//! stops growing minutes after start), [`Table`] (a named table in a keyspace, for the small
//! stores that left sled) and [`FirstFailure`] (the cause behind fjall's `Poisoned`); and
//! [`blocking`], how async code calls a store without holding up the runtime.
//!
//! Module order: aging, failure, lsm, syncs, table.

mod aging;
mod failure;
mod lsm;
mod syncs;
mod table;
pub use aging::{MemtableAge, MEMTABLE_MAX_AGE, MEMTABLE_MIN_SEALED};
pub use failure::FirstFailure;
pub use lsm::{keyspace_options, LsmMemory};
pub use syncs::Syncs;
pub use table::{move_sled_tree, Entry, Ids, MoveError, Table, MOVE_BATCH};

/// Runs a storage call that may block (sled, fjall) without holding up the async runtime: on a
/// multi-threaded runtime the worker hands its other tasks to another thread first; elsewhere
/// (a current-thread runtime, a plain thread) it simply runs.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Opens the node's sled database with a bounded page cache (sled's default is 1 GiB, far
/// too much for a homelab box that also runs an embedding model).
///
/// sled finishes in-flight log writes on background pool threads that keep the file lock
/// for a moment after the last handle is dropped, so a reopen right after a close (a
/// restart in the same process, a test) can find the lock still held. The lock is retried
/// for up to [`LOCK_WAIT`]; a lock held longer belongs to another process and is reported.
///
/// sled panics on some damaged files instead of returning an error: that panic is caught and
/// returned as [`sled::Error::Corruption`], so the node can say which files are damaged
/// instead of crashing.
pub fn open_db(path: &std::path::Path, cache_bytes: u64) -> Result<sled::Db, sled::Error> {
    let config = sled::Config::new().path(path).cache_capacity(cache_bytes).flush_every_ms(Some(500));
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    let open = || match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| config.open())) {
        Ok(opened) => opened,
        Err(_) => Err(sled::Error::Corruption { at: None, bt: () }),
    };
    loop {
        match open() {
            Err(e) if is_lock_held(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other,
        }
    }
}

/// How long [`open_db`] waits for a lock left by this process's own closing handle.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether `e` says another process holds the database's lock (another node on the same data
/// dir), as opposed to damaged files or an I/O error.
pub fn is_lock_held(e: &sled::Error) -> bool {
    match e {
        sled::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::WouldBlock || io.to_string().contains("could not acquire lock")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    /// A reopen right after the last handle is dropped waits for the lock instead of failing
    /// (the race a test once lost in CI); a database another open handle holds is reported as
    /// held, after the wait.
    #[test]
    fn a_reopen_after_a_close_waits_for_the_lock_and_a_held_lock_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0u32..20 {
            let db = super::open_db(dir.path(), 1 << 20).unwrap();
            db.insert(i.to_be_bytes(), &[1u8; 64][..]).unwrap();
            assert_eq!(db.len(), i as usize + 1, "reopen {i} sees every earlier write");
        }
        let held = super::open_db(dir.path(), 1 << 20).unwrap();
        let started = std::time::Instant::now();
        let second = super::open_db(dir.path(), 1 << 20);
        assert!(matches!(&second, Err(e) if super::is_lock_held(e)), "{:?}", second.err());
        assert!(started.elapsed() >= super::LOCK_WAIT);
        drop(held);
    }
}
