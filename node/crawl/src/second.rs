//! The crawler's side of second copies ([`weft_frontier::SecondCopy`]): the notes its
//! frontier writes for its hosts' second holders, the URLs it keeps for other owners, and what
//! a ring change does to both.

use super::Crawler;
use crate::metrics::inc;
use crate::storage::{blocking, StorageFault};
use std::collections::HashSet;
use weft_frontier::SecondCopy;

/// What a ring change did to second copies ([`Crawler::second_copies_after_change`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SecondCopiesMoved {
    /// URLs kept for a host this node owns now (its owner is gone), queued here.
    pub adopted: usize,
    /// URLs kept for hosts this node is no longer near enough on the ring to take over, or
    /// that their owner handed over as it left.
    pub dropped: usize,
    /// Queued URLs of this node's hosts written again for their new second holders.
    pub sent_again: usize,
}

impl Crawler {
    /// From now on the frontier writes a note for the second holder of each URL it queues or
    /// is done with (a node joining a network turns this on; see [`weft_frontier::second`]).
    pub fn send_second_copies(&self) {
        blocking(|| self.inner.frontier.lock().send_second_copies(true));
    }

    /// The first `max` notes waiting for second holders from sequence number `from` on, oldest
    /// first, with their sequence numbers.
    pub fn second_copies(&self, from: u64, max: usize) -> Vec<(u64, SecondCopy)> {
        match blocking(|| self.inner.frontier.lock().second_copies(from, max)) {
            Ok(notes) => notes,
            Err(e) => {
                self.inner.storage.error("frontier second copies", e);
                Vec::new()
            }
        }
    }

    /// Notes that reached their second holder, or that no member needs (their host is not
    /// this node's any more, or it has no second holder): they go.
    pub fn second_copies_sent(&self, seqs: &[u64]) {
        if let Err(e) = blocking(|| self.inner.frontier.lock().second_copies_sent(seqs)) {
            self.inner.storage.error("frontier second copies", e);
        }
    }

    /// Keeps the notes a host's owner sent (the network checked that it owns the hosts and
    /// that this node would take them over; the frontier keeps no more of a host than its page
    /// budget); true once they are durable, false when the frontier refused them (not to be
    /// acknowledged: the owner sends them again).
    pub async fn keep_second_copies(&self, notes: Vec<SecondCopy>) -> Result<bool, StorageFault> {
        match blocking(|| self.inner.frontier.lock().keep(&notes)) {
            Ok(0) => {}
            Ok(over) => tracing::warn!(urls = over, "second copies past a host's page budget were not kept"),
            Err(e) => {
                self.inner.storage.error("frontier keep", e);
                return Ok(false);
            }
        }
        self.inner.flush().await?;
        Ok(true)
    }

    /// The hosts this node keeps URLs for.
    pub fn kept_hosts(&self) -> HashSet<String> {
        match blocking(|| self.inner.frontier.lock().kept_hosts()) {
            Ok(hosts) => hosts.into_iter().collect(),
            Err(e) => {
                self.inner.storage.error("frontier kept hosts", e);
                HashSet::new()
            }
        }
    }

    /// After a ring change (and from time to time): queues what was kept for the hosts `adopt`
    /// picks (their owner crashed), drops what was kept for the hosts `keep` does not (this
    /// node would no longer take them over, or their owner handed them over), and writes the whole queue of each of its hosts for its second
    /// holder (`holder_of`) when the queue was last written for another (see
    /// [`weft_frontier::Frontier::send_queues_to`]). Durable before it returns.
    pub async fn second_copies_after_change(
        &self,
        adopt: impl Fn(&str) -> bool,
        keep: impl Fn(&str) -> bool,
        holder_of: impl FnMut(&str) -> Option<Vec<u8>>,
    ) -> Result<SecondCopiesMoved, StorageFault> {
        let metrics = self.inner.metrics.clone();
        let moved = blocking(|| -> Result<SecondCopiesMoved, weft_frontier::FrontierError> {
            let mut frontier = self.inner.frontier.lock();
            let mut moved = SecondCopiesMoved::default();
            for host in frontier.kept_hosts()? {
                if adopt(&host) {
                    let queued = frontier.adopt_kept(&host)?;
                    (0..queued).for_each(|_| inc(&metrics.urls_queued));
                    moved.adopted += queued;
                } else if !keep(&host) {
                    moved.dropped += frontier.drop_kept(&host)?;
                }
            }
            moved.sent_again = frontier.send_queues_to(holder_of)?;
            Ok(moved)
        });
        // A refused write leaves the rest for the next change (what is kept stays kept).
        let moved = moved.unwrap_or_else(|e| {
            self.inner.storage.error("frontier second copies", e);
            SecondCopiesMoved::default()
        });
        self.inner.flush().await?;
        if moved.adopted > 0 {
            self.inner.control.wake();
        }
        Ok(moved)
    }
}
