//! Rate limits on what peers send: a token bucket per peer for batches, and one allowance that
//! all newcomers share for the URLs a member takes from them.

use super::{BATCHES_PER_SEC, NEWCOMER_URLS_BURST, NEWCOMER_URLS_PER_HOUR};
use std::collections::HashMap;
use std::time::Instant;

/// A token bucket per peer: `per_sec` requests on average, bursts of twice that
/// ([`BATCHES_PER_SEC`] by default).
#[derive(Debug)]
pub struct RateLimit {
    per_sec: f64,
    buckets: HashMap<String, (f64, Instant)>,
    /// The map's size at which idle buckets are dropped next (amortized: it doubles).
    prune_at: usize,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit::new(BATCHES_PER_SEC)
    }
}

impl RateLimit {
    pub fn new(per_sec: f64) -> RateLimit {
        RateLimit { per_sec, buckets: HashMap::new(), prune_at: 1024 }
    }

    /// Takes a token for `peer`; false when it is over its rate.
    pub fn allow(&mut self, peer: &str, now: Instant) -> bool {
        let burst = self.per_sec * 2.0;
        if self.buckets.len() >= self.prune_at {
            // A bucket idle long enough to have filled up is the same as no bucket: dropping
            // it changes no answer, and peers come and go (so would the map, for ever).
            let refill = std::time::Duration::from_secs_f64(burst / self.per_sec);
            self.buckets.retain(|_, (_, last)| now.saturating_duration_since(*last) < refill);
            self.prune_at = (self.buckets.len() * 2).max(1024);
        }
        let (tokens, last) = self.buckets.entry(peer.to_string()).or_insert((burst, now));
        *tokens = (*tokens + now.saturating_duration_since(*last).as_secs_f64() * self.per_sec).min(burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// How many page URLs a member takes from newcomers, all of them together.
///
/// A newcomer on its probation is on no ring, and its owners refuse its URLs; its user's seeds
/// go to a would-be monitor instead, which routes them as its own. One bucket for every
/// newcomer, not one each: identities cost nothing, so a crowd of them gets no more than one.
/// A newcomer over it waits, and sends its URLs itself once it is a member.
#[derive(Debug)]
pub struct NewcomerAllowance {
    tokens: f64,
    last: Instant,
}

impl NewcomerAllowance {
    pub fn new(now: Instant) -> NewcomerAllowance {
        NewcomerAllowance { tokens: NEWCOMER_URLS_BURST, last: now }
    }

    /// Takes `urls` URLs' worth; false (and nothing taken) when the allowance is short.
    pub fn take(&mut self, urls: usize, now: Instant) -> bool {
        let per_sec = NEWCOMER_URLS_PER_HOUR / 3600.0;
        self.tokens =
            (self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * per_sec).min(NEWCOMER_URLS_BURST);
        self.last = now;
        if self.tokens >= urls as f64 {
            self.tokens -= urls as f64;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::BATCH_URLS;
    use std::time::Duration;

    #[test]
    fn newcomers_share_one_allowance_that_refills_over_the_hour() {
        let t0 = Instant::now();
        let mut a = NewcomerAllowance::new(t0);
        assert!(a.take(BATCH_URLS, t0), "a full batch at once");
        assert!(!a.take(1, t0), "then nothing");
        let later = t0 + Duration::from_secs(12);
        assert!(!a.take(13, later), "twelve seconds refill twelve URLs, not thirteen");
        assert!(a.take(12, later));
        // Never more than the burst, however long it waited.
        let much_later = later + Duration::from_secs(86_400);
        assert!(!a.take(BATCH_URLS + 1, much_later));
        assert!(a.take(BATCH_URLS, much_later));
    }

    #[test]
    fn rate_limit_buckets_of_peers_gone_quiet_are_dropped() {
        let mut r = RateLimit::new(10.0);
        let t0 = Instant::now();
        for i in 0..1024 {
            assert!(r.allow(&format!("p{i}"), t0));
        }
        // Two seconds later every bucket is full again: the next new peer prunes them all.
        let t1 = t0 + std::time::Duration::from_secs(2);
        assert!(r.allow("new", t1));
        assert_eq!(r.buckets.len(), 1);
        // A busy peer keeps its (spent) bucket through a prune.
        for _ in 0..20 {
            r.allow("busy", t1);
        }
        assert!(!r.allow("busy", t1));
        for i in 0..1100 {
            r.allow(&format!("q{i}"), t1);
        }
        assert!(!r.allow("busy", t1), "still over its rate");
    }

    #[test]
    fn the_rate_limit_allows_a_burst_then_the_average() {
        let (mut rl, t0) = (RateLimit::default(), Instant::now());
        let burst = (0..100).filter(|_| rl.allow("p", t0)).count();
        assert_eq!(burst, (BATCHES_PER_SEC * 2.0) as usize);
        assert!(!rl.allow("p", t0));
        assert!(rl.allow("q", t0), "per peer");
        assert!(rl.allow("p", t0 + Duration::from_millis(100)), "refilled");
    }
}
