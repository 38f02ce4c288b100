//! Hosts the operator blocked.

use super::Frontier;
use crate::store::Result;

impl Frontier {
    /// Blocks `host` (a host key, `name` or `name:port`) for good: its queued URLs are dropped
    /// (they stay in the seen-set; the host's second holder is told to forget them too), and
    /// nothing of it is queued again until [`Frontier::unblock_host`]. A request in flight
    /// finishes. Returns how many queued URLs were dropped. Durable with the next flush.
    pub fn block_host(&mut self, host: &str) -> Result<u64> {
        self.store.set_blocked(host, true)?;
        self.blocked.insert(host.to_string());
        let dropped = self.give_away(|h| h != host, |_| Ok(()), true)?;
        Ok(dropped.queued.len() as u64)
    }

    /// Lifts a block; says whether the host was blocked. URLs dropped by the block are not
    /// coming back (they are seen); new links to the host are queued again.
    pub fn unblock_host(&mut self, host: &str) -> Result<bool> {
        self.store.set_blocked(host, false)?;
        Ok(self.blocked.remove(host))
    }

    pub fn is_blocked(&self, host: &str) -> bool {
        self.blocked.contains(host)
    }

    /// The blocked hosts, sorted.
    pub fn blocked_hosts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.blocked.iter().cloned().collect();
        v.sort();
        v
    }
}
