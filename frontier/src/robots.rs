//! robots.txt: what a fetch of it means (RFC 9309), and a cache of it in sled.
//!
//! - 2xx: the body (capped by the fetcher) is parsed with `texting_robots`; a body it cannot
//!   parse is treated as no rules, like an empty file.
//! - 4xx, or more redirects than allowed: "unavailable" — the site has no rules for us: allow all.
//! - 5xx or unreachable (network error, timeout): "unreachable" — assume complete disallow for
//!   now and ask again after `robots_retry_secs`. URLs of the host stay queued meanwhile.
//!
//! A fetched robots.txt is trusted for `robots_cache_secs` (24 h by default). The cache lives
//! in sled, so a restarted node does not ask every host again; parsed rules are also kept in
//! memory for hosts in use.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use texting_robots::Robot;

/// What fetching `/robots.txt` produced, as the fetcher reports it.
#[derive(Debug, Clone)]
pub enum RobotsFetch {
    Response { status: u16, body: Vec<u8> },
    TooManyRedirects,
    Unreachable(String),
}

/// What the fetch means, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum RobotsOutcome {
    /// A robots.txt body to obey.
    Rules(Vec<u8>),
    /// No rules apply (4xx, too many redirects).
    AllowAll { status: u16 },
    /// Server error or unreachable: disallow everything until retried.
    Unreachable { reason: String },
}

impl RobotsOutcome {
    pub fn from_fetch(fetch: RobotsFetch) -> RobotsOutcome {
        match fetch {
            RobotsFetch::Response { status, body } if (200..300).contains(&status) => RobotsOutcome::Rules(body),
            RobotsFetch::Response { status, .. } if (400..500).contains(&status) => RobotsOutcome::AllowAll { status },
            RobotsFetch::Response { status, .. } if (500..600).contains(&status) => {
                RobotsOutcome::Unreachable { reason: format!("HTTP {status}") }
            }
            // 1xx/3xx that survived redirect handling, or nonsense codes: treat as unavailable.
            RobotsFetch::Response { status, .. } => RobotsOutcome::AllowAll { status },
            RobotsFetch::TooManyRedirects => RobotsOutcome::AllowAll { status: 310 },
            RobotsFetch::Unreachable(reason) => RobotsOutcome::Unreachable { reason },
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct RobotsRecord {
    fetched_unix: u64,
    outcome: RobotsOutcome,
    /// Fetches in a row that found robots.txt unreachable (0 after any answer).
    #[serde(default)]
    unreachable_in_a_row: u32,
}

/// A host whose robots.txt was unreachable this many times in a row (each [`RobotsCache`]
/// retry interval apart) is given up: its URLs are dropped, not retried for ever. A page of
/// 100,000 links to dead hosts once kept a node re-probing their robots.txt for good.
pub const ROBOTS_TRIES: u32 = 4;

/// The answer for one URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Disallowed,
    /// robots.txt is unreachable; ask again after this long.
    Unavailable {
        retry_in: Duration,
    },
    /// robots.txt was unreachable [`ROBOTS_TRIES`] times in a row: the host is given up.
    GaveUp,
}

/// Parsed rules for one host.
pub struct HostRobots {
    fetched_unix: u64,
    expires_unix: u64,
    robot: Option<Robot>,
    unreachable: bool,
    /// Unreachable [`ROBOTS_TRIES`] times in a row.
    gave_up: bool,
    /// The body could not be parsed and was treated as empty.
    pub parse_failed: bool,
}

impl HostRobots {
    fn build(agent: &str, record: &RobotsRecord, ttl: u64, retry: u64) -> HostRobots {
        let (robot, unreachable, parse_failed) = match &record.outcome {
            RobotsOutcome::Rules(body) => match Robot::new(agent, body) {
                Ok(r) => (Some(r), false, false),
                Err(_) => (None, false, true),
            },
            RobotsOutcome::AllowAll { .. } => (None, false, false),
            RobotsOutcome::Unreachable { .. } => (None, true, false),
        };
        let gave_up = unreachable && record.unreachable_in_a_row >= ROBOTS_TRIES;
        // A host given up is asked again after the rules' usual lifetime (a day by default).
        let life = if unreachable && !gave_up { retry } else { ttl };
        HostRobots {
            fetched_unix: record.fetched_unix,
            // Times are whole seconds, rounded down: a robots.txt answered at 100.9 s is stored
            // as 100. Without the extra second its rules would lapse at 100 + life, up to a
            // second early, and an unreachable host was asked again 0.1 s after a 503 with a
            // one-second retry. Kept one second longer, the wait is never shorter than `life`.
            expires_unix: record.fetched_unix.saturating_add(life).saturating_add(1),
            robot,
            unreachable,
            gave_up,
            parse_failed,
        }
    }

    /// May `url` (absolute, on this host) be fetched?
    pub fn check(&self, url: &str, now_unix: u64) -> Verdict {
        if self.gave_up {
            return Verdict::GaveUp;
        }
        if self.unreachable {
            return Verdict::Unavailable {
                retry_in: Duration::from_secs(self.expires_unix.saturating_sub(now_unix).max(1)),
            };
        }
        match &self.robot {
            Some(r) if !r.allowed(url) => Verdict::Disallowed,
            _ => Verdict::Allowed,
        }
    }

    /// `Crawl-delay`, if given (negative or absurd values ignored, capped at one day).
    pub fn crawl_delay(&self) -> Option<Duration> {
        let d = self.robot.as_ref()?.delay?;
        (d.is_finite() && d >= 0.0).then(|| Duration::from_secs_f32(d.min(86_400.0)))
    }

    /// `Sitemap:` URLs listed in the file.
    pub fn sitemaps(&self) -> &[String] {
        self.robot.as_ref().map(|r| r.sitemaps.as_slice()).unwrap_or(&[])
    }

    pub fn fetched_unix(&self) -> u64 {
        self.fetched_unix
    }

    fn fresh(&self, now_unix: u64) -> bool {
        now_unix < self.expires_unix
    }
}

/// robots.txt cache: sled for durability, a bounded map of parsed rules for speed.
pub struct RobotsCache {
    tree: sled::Tree,
    agent: String,
    ttl_secs: u64,
    retry_secs: u64,
    parsed: HashMap<String, Arc<HostRobots>>,
    max_parsed: usize,
}

impl RobotsCache {
    /// `agent` is the product token matched against `User-agent:` lines.
    pub fn open(db: &sled::Db, agent: &str, ttl_secs: u64, retry_secs: u64) -> Result<RobotsCache, sled::Error> {
        Ok(RobotsCache {
            tree: db.open_tree("robots")?,
            agent: agent.to_string(),
            ttl_secs,
            retry_secs,
            parsed: HashMap::new(),
            max_parsed: 10_000,
        })
    }

    /// Fresh rules for `host`, or `None` if robots.txt must be (re)fetched.
    pub fn get(&mut self, host: &str, now_unix: u64) -> Option<Arc<HostRobots>> {
        if let Some(r) = self.parsed.get(host) {
            if r.fresh(now_unix) {
                return Some(r.clone());
            }
            self.parsed.remove(host);
            return None;
        }
        let bytes = self.tree.get(host).ok()??;
        let record: RobotsRecord = postcard::from_bytes(&bytes).ok()?;
        let rules = Arc::new(HostRobots::build(&self.agent, &record, self.ttl_secs, self.retry_secs));
        if !rules.fresh(now_unix) {
            return None;
        }
        self.remember(host, rules.clone());
        Some(rules)
    }

    /// Stores a fetch result and returns the rules it implies.
    pub fn put(&mut self, host: &str, outcome: RobotsOutcome, now_unix: u64) -> Result<Arc<HostRobots>, sled::Error> {
        let unreachable_in_a_row = if matches!(outcome, RobotsOutcome::Unreachable { .. }) {
            let before = self.tree.get(host)?.and_then(|b| postcard::from_bytes::<RobotsRecord>(&b).ok());
            before.map_or(0, |r| r.unreachable_in_a_row).saturating_add(1)
        } else {
            0
        };
        let record = RobotsRecord { fetched_unix: now_unix, outcome, unreachable_in_a_row };
        let bytes = postcard::to_allocvec(&record).expect("robots record serializes");
        self.tree.insert(host, bytes)?;
        let rules = Arc::new(HostRobots::build(&self.agent, &record, self.ttl_secs, self.retry_secs));
        self.remember(host, rules.clone());
        Ok(rules)
    }

    fn remember(&mut self, host: &str, rules: Arc<HostRobots>) {
        if self.parsed.len() >= self.max_parsed {
            // Parsed rules are a cache of sled; dropping them all is cheap and simple.
            self.parsed.clear();
        }
        self.parsed.insert(host.to_string(), rules);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache() -> (tempfile::TempDir, RobotsCache) {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path(), 8 << 20).unwrap();
        let c = RobotsCache::open(&db, "WeftBot", 86_400, 600).unwrap();
        (dir, c)
    }

    fn outcome(status: u16, body: &str) -> RobotsOutcome {
        RobotsOutcome::from_fetch(RobotsFetch::Response { status, body: body.as_bytes().to_vec() })
    }

    #[test]
    fn rfc9309_status_handling() {
        assert!(matches!(outcome(200, ""), RobotsOutcome::Rules(_)));
        assert_eq!(outcome(404, ""), RobotsOutcome::AllowAll { status: 404 });
        assert_eq!(outcome(403, ""), RobotsOutcome::AllowAll { status: 403 });
        assert!(matches!(outcome(503, ""), RobotsOutcome::Unreachable { .. }));
        assert!(matches!(
            RobotsOutcome::from_fetch(RobotsFetch::Unreachable("timeout".into())),
            RobotsOutcome::Unreachable { .. }
        ));
        assert!(matches!(RobotsOutcome::from_fetch(RobotsFetch::TooManyRedirects), RobotsOutcome::AllowAll { .. }));
    }

    #[test]
    fn a_host_whose_robots_txt_stays_unreachable_is_given_up_after_a_few_tries() {
        let (_d, mut c) = cache();
        let down = || RobotsOutcome::from_fetch(RobotsFetch::Unreachable("connect: refused".into()));
        let mut t = 1000;
        for i in 1..ROBOTS_TRIES {
            let r = c.put("dead.test", down(), t).unwrap();
            assert_eq!(
                r.check("http://dead.test/", t),
                // 600 s and the second the stored time was rounded down by.
                Verdict::Unavailable { retry_in: Duration::from_secs(601) },
                "{i}"
            );
            t += 601;
        }
        let r = c.put("dead.test", down(), t).unwrap();
        assert_eq!(r.check("http://dead.test/", t), Verdict::GaveUp);
        assert_eq!(c.get("dead.test", t + 3600).unwrap().check("http://dead.test/x", t + 3600), Verdict::GaveUp);
        assert!(c.get("dead.test", t + 86_401).is_none(), "asked again a day later");
        // An answer resets the count.
        c.put("dead.test", outcome(404, ""), t + 86_401).unwrap();
        let r = c.put("dead.test", down(), t + 90_000).unwrap();
        assert!(matches!(r.check("http://dead.test/", t + 90_000), Verdict::Unavailable { .. }));
    }

    #[test]
    fn rules_delay_and_sitemaps() {
        let (_d, mut c) = cache();
        let body = "User-agent: *\nDisallow: /private\nCrawl-delay: 2\nSitemap: http://a.test/sm.xml\n\nUser-agent: OtherBot\nDisallow: /\n";
        let r = c.put("a.test", outcome(200, body), 1000).unwrap();
        assert_eq!(r.check("http://a.test/private/x", 1000), Verdict::Disallowed);
        assert_eq!(r.check("http://a.test/public", 1000), Verdict::Allowed);
        assert_eq!(r.crawl_delay(), Some(Duration::from_secs(2)));
        assert_eq!(r.sitemaps(), ["http://a.test/sm.xml".to_string()]);
    }

    #[test]
    fn specific_group_wins_over_star() {
        let (_d, mut c) = cache();
        let r =
            c.put("a.test", outcome(200, "User-agent: *\nDisallow: /\n\nUser-agent: weftbot\nAllow: /\n"), 0).unwrap();
        assert_eq!(r.check("http://a.test/x", 0), Verdict::Allowed);
    }

    #[test]
    fn unreachable_disallows_until_retry_and_then_expires() {
        let (_d, mut c) = cache();
        let r = c.put("a.test", outcome(500, ""), 1000).unwrap();
        assert_eq!(r.check("http://a.test/x", 1100), Verdict::Unavailable { retry_in: Duration::from_secs(501) });
        assert!(c.get("a.test", 1500).is_some());
        // Stored at second 1000 means answered somewhere in [1000, 1001): at second 1600 the
        // full 600 s may not have passed yet.
        assert!(c.get("a.test", 1600).is_some(), "never asked again early");
        assert!(c.get("a.test", 1601).is_none(), "retry time reached");
    }

    #[test]
    fn cached_in_sled_for_ttl() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = crate::open_db(dir.path(), 8 << 20).unwrap();
            let mut c = RobotsCache::open(&db, "WeftBot", 86_400, 600).unwrap();
            c.put("a.test", outcome(200, "User-agent: *\nDisallow: /x\n"), 1000).unwrap();
            db.flush().unwrap();
        }
        let db = crate::open_db(dir.path(), 8 << 20).unwrap();
        let mut c = RobotsCache::open(&db, "WeftBot", 86_400, 600).unwrap();
        let r = c.get("a.test", 2000).expect("cached");
        assert_eq!(r.check("http://a.test/x", 2000), Verdict::Disallowed);
        assert!(c.get("a.test", 1000 + 86_400).is_some(), "not a second early");
        assert!(c.get("a.test", 1000 + 86_401).is_none(), "expired after 24 h");
    }

    #[test]
    fn hostile_bodies_never_panic() {
        let (_d, mut c) = cache();
        let mut garbage: Vec<u8> = (0..200_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        garbage.extend_from_slice(b"\nDisallow: /\0\xff\xfe");
        let r = c.put("g.test", RobotsOutcome::Rules(garbage), 0).unwrap();
        let _ = r.check("http://g.test/x", 0);
        let many: String = (0..20_000).map(|i| format!("Disallow: /p{i}*x$\n")).collect();
        let r = c.put("m.test", outcome(200, &format!("User-agent: *\n{many}")), 0).unwrap();
        assert_eq!(r.check("http://m.test/p7/yx", 0), Verdict::Disallowed);
        let r = c.put("d.test", outcome(200, "User-agent: *\nCrawl-delay: -5\nCrawl-delay: NaN\n"), 0).unwrap();
        assert!(r.crawl_delay().is_none() || r.crawl_delay().unwrap() < Duration::from_secs(86_401));
    }
}
