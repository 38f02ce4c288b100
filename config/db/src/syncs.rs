//! Syncs coalesced, for a store that many threads ask to sync.
//!
//! The crawl asks for a sync after every page it completes: ~50 a second on a busy node. A
//! fjall sync (`persist(SyncAll)`) is an fsync under the database's journal lock, with no
//! coalescing of its own, so asked for one after another the syncs queue up behind each other
//! and the writers wait between them. A node's index snapshot waited 60 s behind such a queue
//! at minute 54 of an hour's crawl and the node stopped with a storage fault.
//!
//! Here a sync covers every caller whose *ticket* it reached: a caller takes a ticket (the
//! store's count of writes, or of requests when writes are not counted), waits for the sync in
//! progress, and returns if that one covered its ticket. One sync runs at a time, and each
//! covers everything asked for before it started.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// Coalesced syncs of one store.
#[derive(Debug, Default)]
pub struct Syncs {
    /// Tickets handed out: writes made, or syncs asked for.
    issued: AtomicU64,
    /// The ticket the last sync covered, and the syncs made.
    synced: Mutex<(u64, u64)>,
}

impl Syncs {
    /// Counts one write; a [`Syncs::sync_writes`] after it syncs it.
    pub fn wrote(&self) {
        self.issued.fetch_add(1, Ordering::AcqRel);
    }

    /// Syncs the writes counted with [`Syncs::wrote`] so far, unless a sync already covered
    /// them (then nothing is done: a store written by nobody since is not synced again).
    pub fn sync_writes<E>(&self, persist: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        self.sync_upto(self.issued.load(Ordering::Acquire), persist)
    }

    /// Syncs everything written before this call, for a store whose writes are not counted:
    /// the call is the ticket.
    pub fn sync_request<E>(&self, persist: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        let ticket = self.issued.fetch_add(1, Ordering::AcqRel) + 1;
        self.sync_upto(ticket, persist)
    }

    fn sync_upto<E>(&self, ticket: u64, persist: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        let mut synced = self.synced.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if synced.0 >= ticket {
            return Ok(());
        }
        // Everything ticketed before the sync starts is covered by it.
        let covers = self.issued.load(Ordering::Acquire);
        persist()?;
        *synced = (covers, synced.1 + 1);
        Ok(())
    }

    /// Syncs made so far.
    pub fn count(&self) -> u64 {
        self.synced.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).1
    }
}

#[cfg(test)]
mod tests {
    use super::Syncs;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    /// Counted writes: one sync for writes made, none when nothing new was written.
    #[test]
    fn a_sync_of_counted_writes_is_skipped_when_nothing_new_was_written() {
        let syncs = Syncs::default();
        let ok = || Ok::<(), ()>(());
        syncs.sync_writes(ok).unwrap();
        assert_eq!(syncs.count(), 0, "nothing written yet");
        syncs.wrote();
        syncs.sync_writes(ok).unwrap();
        syncs.sync_writes(ok).unwrap();
        assert_eq!(syncs.count(), 1);
        syncs.wrote();
        syncs.sync_writes(ok).unwrap();
        assert_eq!(syncs.count(), 2);
    }

    /// Requests one after another each sync; 32 threads asking at once while each sync takes
    /// 20 ms share a few syncs, every caller returning only after a sync that started after its
    /// request.
    #[test]
    fn requests_made_while_a_sync_runs_share_the_next_one() {
        let syncs = Syncs::default();
        let ok = || Ok::<(), ()>(());
        syncs.sync_request(ok).unwrap();
        syncs.sync_request(ok).unwrap();
        assert_eq!(syncs.count(), 2, "a lone request always syncs");

        let started = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..32 {
                s.spawn(|| {
                    let asked = started.load(Ordering::SeqCst);
                    syncs
                        .sync_request(|| {
                            started.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(20));
                            Ok::<(), ()>(())
                        })
                        .unwrap();
                    assert!(
                        started.load(Ordering::SeqCst) > asked,
                        "returned after a sync that started after the request"
                    );
                });
            }
        });
        let made = syncs.count() - 2;
        assert!((1..32).contains(&made), "{made} syncs for 32 requests");
    }
}
