//! What became of the URLs other members sent this node: the queues and done lists of hosts
//! it gained (hand-overs), and links other members found to its hosts. A loss in a hand-over
//! shows here (`/status` `received`, `/metrics` `weft_received_urls_total{fate}`) without
//! reading a log: every URL received ends in exactly one fate.

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weft_frontier::{PushOutcome, Received};

/// The counters, updated where received URLs are queued.
#[derive(Default)]
pub struct ReceivedCounts(Mutex<ReceivedStatus>);

/// The fates of received URLs, since start.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReceivedStatus {
    /// URLs received in all (each counted once below).
    pub urls: u64,
    /// Queued here: new, or seen here before but neither queued nor done (given away with its
    /// host earlier and now back).
    pub queued: u64,
    /// Queued here already.
    pub already_queued: u64,
    /// Fetched or given up on here, or reported done by a host's previous owner already.
    pub already_done: u64,
    /// Reported done by a host's previous owner (fetched there): recorded, and taken out of
    /// the queue if a link had put it there.
    pub done_reported: u64,
    /// Not queued by the frontier's rules, by reason (`binary`, `host_budget_exhausted`,
    /// `host_blocked`, `too_deep`).
    pub refused: BTreeMap<String, u64>,
    /// Not a URL this node would fetch: unparsable, not normalizable.
    pub invalid: u64,
    /// Its host is another member's by now (the sender's ring was older): sent on to it.
    #[serde(default)]
    pub forwarded: u64,
}

/// The stable name of a refusal.
pub fn refusal(outcome: PushOutcome) -> &'static str {
    match outcome {
        PushOutcome::Binary => "binary",
        PushOutcome::TooDeep => "too_deep",
        PushOutcome::HostBudgetExhausted => "host_budget_exhausted",
        PushOutcome::Blocked => "host_blocked",
        PushOutcome::Queued | PushOutcome::AlreadySeen => "none",
    }
}

impl ReceivedCounts {
    /// One received URL's fate in the frontier.
    pub fn pushed(&self, r: &Received) {
        let mut s = self.0.lock();
        s.urls += 1;
        match r {
            Received::Queued => s.queued += 1,
            Received::AlreadyQueued => s.already_queued += 1,
            Received::AlreadyDone => s.already_done += 1,
            Received::Refused(why) => *s.refused.entry(refusal(*why).to_string()).or_insert(0) += 1,
        }
    }

    pub fn done_reported(&self, n: u64) {
        let mut s = self.0.lock();
        s.urls += n;
        s.done_reported += n;
    }

    pub fn invalid(&self, n: u64) {
        let mut s = self.0.lock();
        s.urls += n;
        s.invalid += n;
    }

    pub fn forwarded(&self, n: u64) {
        let mut s = self.0.lock();
        s.urls += n;
        s.forwarded += n;
    }

    pub fn snapshot(&self) -> ReceivedStatus {
        self.0.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_url_has_one_fate() {
        let c = ReceivedCounts::default();
        c.pushed(&Received::Queued);
        c.pushed(&Received::AlreadyDone);
        c.pushed(&Received::Refused(PushOutcome::Binary));
        c.pushed(&Received::Refused(PushOutcome::Binary));
        c.done_reported(3);
        c.invalid(1);
        c.forwarded(2);
        let s = c.snapshot();
        assert_eq!(s.urls, 10);
        let fates = s.queued + s.already_queued + s.already_done + s.done_reported + s.invalid + s.forwarded;
        assert_eq!(fates + s.refused.values().sum::<u64>(), s.urls);
        assert_eq!(s.refused.get("binary"), Some(&2));
    }
}
