//! Per-host politeness: when may this host be asked again?
//!
//! Each host is a token bucket of capacity one that refills `delay` after the previous request
//! *finished* — so a slow server automatically gets fewer requests — where `delay` is the
//! robots.txt `Crawl-delay` if there is one, else the configured default. A 429 or 503 empties
//! the bucket for `Retry-After` (capped) or an exponential backoff (30 s, 60 s, … up to 10 min).
//! One request per host is in flight at a time; the frontier enforces that with a lease.

use std::time::{Duration, Instant};

/// The node-wide politeness settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolitenessPolicy {
    pub default_delay: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// How long a host new to this node (or back from another member) waits before its first
    /// request: in a network the previous owner may have asked it a moment ago. Zero alone.
    pub handover_grace: Duration,
}

impl Default for PolitenessPolicy {
    fn default() -> Self {
        PolitenessPolicy {
            default_delay: Duration::from_millis(1000),
            backoff_initial: Duration::from_secs(30),
            backoff_max: Duration::from_secs(600),
            handover_grace: Duration::ZERO,
        }
    }
}

/// One host's bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPoliteness {
    /// From robots.txt; `None` means the default delay.
    pub crawl_delay: Option<Duration>,
    /// Consecutive rate-limit responses (0 = not backing off).
    pub backoff_level: u32,
    /// Earliest time the next request may start.
    pub next_allowed: Instant,
}

impl HostPoliteness {
    pub fn new(now: Instant) -> HostPoliteness {
        HostPoliteness { crawl_delay: None, backoff_level: 0, next_allowed: now }
    }
}

impl PolitenessPolicy {
    /// The pause owed to a host between two requests.
    pub fn delay(&self, host: &HostPoliteness) -> Duration {
        host.crawl_delay.unwrap_or(self.default_delay)
    }

    /// A request to the host finished (any response, or a network error).
    pub fn on_request_done(&self, host: &mut HostPoliteness, now: Instant) {
        host.backoff_level = 0;
        host.next_allowed = host.next_allowed.max(now + self.delay(host));
    }

    /// The host answered 429 or 503: back off, honouring `Retry-After` up to the ceiling and
    /// never less than the normal delay.
    pub fn on_rate_limited(&self, host: &mut HostPoliteness, now: Instant, retry_after: Option<Duration>) -> Duration {
        host.backoff_level = host.backoff_level.saturating_add(1);
        let wait = match retry_after {
            Some(d) => d.min(self.backoff_max),
            None => {
                let factor = 1u32 << (host.backoff_level - 1).min(16);
                self.backoff_initial.saturating_mul(factor).min(self.backoff_max)
            }
        }
        .max(self.delay(host));
        host.next_allowed = host.next_allowed.max(now + wait);
        wait
    }

    /// The host may not be asked before `until` (robots.txt unreachable, retry later).
    pub fn defer(&self, host: &mut HostPoliteness, until: Instant) {
        host.next_allowed = host.next_allowed.max(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_is_crawl_delay_or_default() {
        let p = PolitenessPolicy::default();
        let now = Instant::now();
        let mut h = HostPoliteness::new(now);
        p.on_request_done(&mut h, now);
        assert_eq!(h.next_allowed, now + Duration::from_secs(1));
        h.crawl_delay = Some(Duration::from_secs(5));
        p.on_request_done(&mut h, now);
        assert_eq!(h.next_allowed, now + Duration::from_secs(5));
    }

    #[test]
    fn backoff_doubles_to_ceiling_and_resets() {
        let p = PolitenessPolicy::default();
        let now = Instant::now();
        let mut h = HostPoliteness::new(now);
        let waits: Vec<u64> = (0..7).map(|_| p.on_rate_limited(&mut h, now, None).as_secs()).collect();
        assert_eq!(waits, vec![30, 60, 120, 240, 480, 600, 600]);
        p.on_request_done(&mut h, now);
        assert_eq!(h.backoff_level, 0);
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let p = PolitenessPolicy::default();
        let now = Instant::now();
        let mut h = HostPoliteness::new(now);
        assert_eq!(p.on_rate_limited(&mut h, now, Some(Duration::from_secs(7))).as_secs(), 7);
        assert_eq!(p.on_rate_limited(&mut h, now, Some(Duration::from_secs(99_999))).as_secs(), 600);
        assert_eq!(
            p.on_rate_limited(&mut h, now, Some(Duration::ZERO)),
            Duration::from_secs(1),
            "never below the delay"
        );
    }
}
