//! What the frontier says about itself and its URLs: states, counters, the busiest hosts.

use super::resident::HostQueue;
use super::Frontier;
use crate::host::HostKey;
use crate::store::Result;
use crate::{FrontierStats, HostLoad, UrlState};
use std::time::Instant;
use url::Url;

impl Frontier {
    /// Is this URL in the seen-set?
    pub fn seen(&self, url: &str) -> bool {
        self.seen.contains(url)
    }

    /// Where a normalized URL stands here: queued, done (fetched or given up on), only seen
    /// (met and not queued: refused, or sent to its host's owner), or never met. The seen-set
    /// is a pair of Bloom filters that remember the last `seen_capacity` URLs or so: `Seen` may,
    /// rarely, be a URL never met, and `Unseen` a URL only seen long ago.
    pub fn url_state(&self, url: &Url) -> Result<UrlState> {
        let u = url.as_str();
        let host = HostKey::of(url);
        if self.store.queued_key(u, host.as_str())?.is_some() {
            return Ok(UrlState::Queued);
        }
        if let Some(id) = self.known_id(host.as_str())? {
            if self.store.is_done(id, u, host.as_str())? {
                return Ok(UrlState::Done);
            }
        }
        Ok(if self.seen.contains(u) { UrlState::Seen } else { UrlState::Unseen })
    }

    /// Whether `host` has work: URLs queued, or a request in flight.
    pub fn host_has_work(&self, host: &str) -> bool {
        self.host_ids.get(host).is_some_and(|&id| {
            let h = &self.hosts[id as usize];
            h.queued > 0 || h.in_flight
        })
    }

    /// When the first host with work may be asked, if none may be now (for the stall check).
    pub fn next_ready(&self, now: Instant) -> Option<Instant> {
        let ready = self.hosts.iter().filter(|h| h.queued > 0 && !h.in_flight).map(HostQueue::ready_at).min()?;
        (ready > now).then_some(ready)
    }

    pub fn stats(&self) -> FrontierStats {
        FrontierStats {
            queued: self.queued,
            in_flight: self.in_flight,
            hosts: self.known,
            hosts_in_memory: self.hosts.len() as u64,
            hosts_with_queue: self.hosts.iter().filter(|h| h.queued > 0).count() as u64,
            seen: self.seen.len(),
            seen_bytes: self.seen.memory_bytes() as u64,
            seen_recalled: self.seen_recalled,
            store_memory_bytes: self.store.memory().total(),
            second_copies: self.second_copies_counts(),
        }
    }

    /// The `n` hosts with the most URLs queued (ties: most fetched), for the dashboard.
    pub fn top_hosts(&self, n: usize) -> Vec<HostLoad> {
        let mut v: Vec<HostLoad> = self
            .hosts
            .iter()
            .filter(|h| h.queued > 0 || h.fetched > 0)
            .map(|h| HostLoad { host: h.name.clone(), queued: h.queued, fetched: h.fetched, in_flight: h.in_flight })
            .collect();
        v.sort_by(|a, b| b.queued.cmp(&a.queued).then(b.fetched.cmp(&a.fetched)).then(a.host.cmp(&b.host)));
        v.truncate(n);
        v
    }
}
