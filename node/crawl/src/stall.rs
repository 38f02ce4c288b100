//! Is the crawl getting anywhere? (seed 000 "Stall Detection".) A node whose crawl makes no
//! progress for `crawl.stall_secs` while work is queued says so — in `/status` (`stalled`, with
//! the reason it can tell) and in `weft doctor` — instead of looking busy.
//!
//! Progress is a page or sitemap fetched (any 2xx, or a 304). What happened since the last
//! progress tells the reason: every request failing on DNS, on connecting or on time-outs
//! (the network, or the resolver, is down), every host with work refusing the crawler
//! (blocked), or every host backing off (rate limits, robots.txt unreachable) with nothing
//! failing. Pure: the crawl feeds it and asks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Why the crawl is stalled.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stall {
    /// Seconds since the last progress.
    pub for_secs: u64,
    /// A short code: `dns`, `network`, `timeouts`, `blocked`, `backing_off`, `errors`, `unknown`.
    pub cause: String,
    /// One sentence for the operator.
    pub reason: String,
}

/// What the crawl has done since its last progress.
#[derive(Debug)]
pub struct StallWatch {
    last_progress: Instant,
    /// Requests that got an answer without progress (4xx, 5xx, 429, redirects).
    answered: u64,
    /// Failures by error kind.
    failures: BTreeMap<&'static str, u64>,
}

/// What the frontier and the host checks say right now.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backlog {
    /// URLs queued.
    pub queued: u64,
    /// Hosts with work queued.
    pub hosts_with_queue: u64,
    /// Of those, hosts blocked (refusing the crawler).
    pub blocked: u64,
    /// When the earliest host may be asked again, if no host is ready now.
    pub next_ready_in: Option<Duration>,
}

impl StallWatch {
    pub fn new(now: Instant) -> StallWatch {
        StallWatch { last_progress: now, answered: 0, failures: BTreeMap::new() }
    }

    /// A page or sitemap arrived: the crawl is moving.
    pub fn progress(&mut self, now: Instant) {
        self.last_progress = now;
        self.answered = 0;
        self.failures.clear();
    }

    /// A request was answered without progress.
    pub fn answered(&mut self) {
        self.answered += 1;
    }

    /// A request failed with an error of `kind` (`dns`, `connect`, `timeout`, ...).
    pub fn failed(&mut self, kind: &'static str) {
        *self.failures.entry(kind).or_insert(0) += 1;
    }

    /// Nothing to crawl is not a stall: the watch restarts.
    pub fn idle(&mut self, now: Instant) {
        self.progress(now);
    }

    /// Whether the crawl is stalled at `now` (no progress for `after` while work is queued),
    /// and why.
    pub fn check(&self, now: Instant, after: Duration, backlog: Backlog) -> Option<Stall> {
        let since = now.saturating_duration_since(self.last_progress);
        if backlog.queued == 0 || since < after {
            return None;
        }
        let failed: u64 = self.failures.values().sum();
        let kind = |k: &str| self.failures.get(k).copied().unwrap_or(0);
        let most = |n: u64| n > 0 && n * 4 >= (failed + self.answered) * 3;
        let for_secs = since.as_secs();
        let (cause, reason) = if most(kind("dns")) {
            (
                "dns",
                format!(
                    "{} of the last requests failed to resolve host names: is DNS reachable from this machine?",
                    kind("dns")
                ),
            )
        } else if most(kind("connect")) {
            ("network", format!("{} of the last requests could not connect: is the network down?", kind("connect")))
        } else if most(kind("timeout")) {
            (
                "timeouts",
                format!("{} of the last requests timed out: the network or the hosts are unreachable", kind("timeout")),
            )
        } else if backlog.hosts_with_queue > 0 && backlog.blocked >= backlog.hosts_with_queue {
            ("blocked", format!("every host with work queued ({}) refuses the crawler and is paused", backlog.blocked))
        } else if failed + self.answered == 0 && backlog.next_ready_in.is_some() {
            let wait = backlog.next_ready_in.unwrap_or_default().as_secs();
            ("backing_off", format!("every host with work is backing off (rate limits, robots.txt unreachable); the next may be asked in {wait} s"))
        } else if failed + self.answered > 0 {
            let top = self.failures.iter().max_by_key(|(_, n)| **n).map_or("http".to_string(), |(k, _)| k.to_string());
            (
                "errors",
                format!("{} requests since the last page, none fetched a page (mostly {top})", failed + self.answered),
            )
        } else {
            ("unknown", "work is queued but no request was made".to_string())
        };
        Some(Stall {
            for_secs,
            cause: cause.into(),
            reason: format!("No page fetched for {for_secs} s with {} URLs queued: {reason}.", backlog.queued),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backlog() -> Backlog {
        Backlog { queued: 50, hosts_with_queue: 3, blocked: 0, next_ready_in: None }
    }

    #[test]
    fn no_progress_with_work_queued_is_a_stall_with_the_reason_the_failures_give() {
        let t0 = Instant::now();
        let after = Duration::from_secs(60);
        let mut w = StallWatch::new(t0);
        for _ in 0..9 {
            w.failed("dns");
        }
        w.failed("timeout");
        assert_eq!(w.check(t0 + Duration::from_secs(30), after, backlog()), None, "not yet");
        let s = w.check(t0 + Duration::from_secs(61), after, backlog()).unwrap();
        assert_eq!((s.cause.as_str(), s.for_secs), ("dns", 61));
        assert!(
            s.reason
                .starts_with("No page fetched for 61 s with 50 URLs queued: 9 of the last requests failed to resolve"),
            "{}",
            s.reason
        );
        assert_eq!(
            w.check(t0 + Duration::from_secs(61), after, Backlog { queued: 0, ..backlog() }),
            None,
            "nothing queued"
        );
        w.progress(t0 + Duration::from_secs(62));
        assert_eq!(w.check(t0 + Duration::from_secs(100), after, backlog()), None);
    }

    #[test]
    fn causes_in_order_connect_blocked_backing_off_errors() {
        let t0 = Instant::now();
        let later = t0 + Duration::from_secs(600);
        let after = Duration::from_secs(300);
        let mut w = StallWatch::new(t0);
        w.failed("connect");
        w.failed("connect");
        assert_eq!(w.check(later, after, backlog()).unwrap().cause, "network");
        let mut w = StallWatch::new(t0);
        for _ in 0..8 {
            w.answered();
        }
        let blocked = Backlog { blocked: 3, ..backlog() };
        assert_eq!(w.check(later, after, blocked).unwrap().cause, "blocked");
        assert_eq!(w.check(later, after, backlog()).unwrap().cause, "errors");
        let w = StallWatch::new(t0);
        let waiting = Backlog { next_ready_in: Some(Duration::from_secs(90)), ..backlog() };
        let s = w.check(later, after, waiting).unwrap();
        assert_eq!(s.cause, "backing_off");
        assert!(s.reason.contains("in 90 s"));
    }
}
