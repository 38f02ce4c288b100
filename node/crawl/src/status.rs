//! The crawl's part of `/status`.

use super::adapt::BlockedHost;
use super::stall::Stall;
use super::CrawlState;
use crate::metrics::Metrics;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weft_frontier::FrontierStats;

/// The crawl's part of `/status`: its counters and the frontier's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CrawlStatus {
    /// `crawling`, `stalled` (no progress with work queued, see `stalled`), `idle`, `paused`,
    /// `throttled` (over the memory target) or `stopping`.
    pub state: String,
    pub uptime_secs: f64,
    /// HTML pages fetched with a 2xx status.
    pub pages_fetched: u64,
    /// Pages indexed from a copy another member held, not fetched (see `index.replicas`).
    #[serde(default)]
    pub pages_adopted: u64,
    pub pages_per_sec: f64,
    /// Every HTTP request made, robots.txt, sitemaps and redirects included.
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
    pub robots_fetched: u64,
    pub sitemaps_fetched: u64,
    pub redirects: u64,
    pub links_found: u64,
    /// URLs newly added to the queue since start.
    pub urls_queued: u64,
    pub robots_disallowed: u64,
    pub rate_limited: u64,
    pub retries: u64,
    pub gave_up: u64,
    /// Hub pages queued again by the freshness loop.
    #[serde(default)]
    pub revisits: u64,
    /// Conditional requests answered 304 Not Modified.
    #[serde(default)]
    pub not_modified: u64,
    /// URL-scheme changes recorded (see `weft templates changes HOST`).
    #[serde(default)]
    pub scheme_changes: u64,
    /// URLs queued from archive hints and sitemap probes when a host's queue ran dry.
    #[serde(default)]
    pub found_when_idle: u64,
    /// Times a host refusing the crawler was paused.
    #[serde(default)]
    pub hosts_blocked: u64,
    /// Hosts refusing the crawler right now (401/403/451, bot checks), with the evidence;
    /// their queues are paused and probed again later.
    #[serde(default)]
    pub blocked_by_hosts: Vec<BlockedHost>,
    /// Set while the crawl makes no progress with work queued (`state` is then `stalled`).
    #[serde(default)]
    pub stalled: Option<Stall>,
    /// What became of the URLs other members sent (hand-overs, links to this node's hosts).
    #[serde(default)]
    pub received: crate::received::ReceivedStatus,
    /// Second copies (in a network): notes waiting for this node's hosts' second holders — a
    /// number that grows while a holder is down — and the URLs kept for other members' hosts.
    #[serde(default)]
    pub second_copies: weft_frontier::SecondCopiesCounts,
    pub errors_total: u64,
    /// Errors by kind (`timeout`, `body_too_large`, `url_scheme`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Extraction outcomes: page types, JS recommendations, warnings, second opinions.
    #[serde(default)]
    pub extraction: BTreeMap<String, u64>,
    /// URLs waiting in the frontier (in-flight ones included).
    pub queued: u64,
    pub in_flight: u64,
    /// Leases completed whose completion is not on disk yet (a crash now would fetch those
    /// pages again); 0 when everything done is durable.
    #[serde(default)]
    pub unflushed: u64,
    /// Hosts known (each with a record in the frontier's store) ...
    pub hosts: u64,
    /// ... those held in memory: with work, or used within the last ten minutes.
    #[serde(default)]
    pub hosts_in_memory: u64,
    pub hosts_with_queue: u64,
    pub seen_urls: u64,
    pub seen_bytes: u64,
    /// URLs met again after the seen-set forgot them, that the frontier's store knew.
    #[serde(default)]
    pub seen_recalled: u64,
    /// The frontier's store in memory ([`weft_db::LsmMemory`]: block cache, pinned blocks,
    /// write buffer).
    #[serde(default)]
    pub frontier_store_bytes: u64,
}

impl CrawlStatus {
    pub fn of(
        m: &Metrics,
        frontier: &FrontierStats,
        state: CrawlState,
        unflushed: u64,
        blocked_by_hosts: Vec<BlockedHost>,
        stalled: Option<Stall>,
    ) -> CrawlStatus {
        use std::sync::atomic::Ordering::Relaxed;
        let errors: BTreeMap<String, u64> = m.errors().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let uptime = m.uptime().as_secs_f64();
        let pages = m.pages_fetched.load(Relaxed);
        let state = match (&stalled, state) {
            (Some(_), CrawlState::Crawling) => "stalled",
            _ => state.as_str(),
        };
        CrawlStatus {
            state: state.to_string(),
            uptime_secs: uptime,
            pages_fetched: pages,
            pages_adopted: m.pages_adopted.load(Relaxed),
            pages_per_sec: if uptime > 0.0 { pages as f64 / uptime } else { 0.0 },
            requests: m.requests.load(Relaxed),
            bytes: m.bytes.load(Relaxed),
            robots_fetched: m.robots_fetched.load(Relaxed),
            sitemaps_fetched: m.sitemaps_fetched.load(Relaxed),
            redirects: m.redirects.load(Relaxed),
            links_found: m.links_found.load(Relaxed),
            urls_queued: m.urls_queued.load(Relaxed),
            robots_disallowed: m.robots_disallowed.load(Relaxed),
            rate_limited: m.rate_limited.load(Relaxed),
            retries: m.retries.load(Relaxed),
            gave_up: m.gave_up.load(Relaxed),
            revisits: m.revisits.load(Relaxed),
            not_modified: m.not_modified.load(Relaxed),
            scheme_changes: m.scheme_changes.load(Relaxed),
            found_when_idle: m.found_when_idle.load(Relaxed),
            hosts_blocked: m.hosts_blocked.load(Relaxed),
            blocked_by_hosts,
            stalled,
            received: m.received.snapshot(),
            errors_total: errors.values().sum(),
            errors,
            extraction: m.extractions(),
            queued: frontier.queued,
            in_flight: frontier.in_flight,
            unflushed,
            hosts: frontier.hosts,
            hosts_in_memory: frontier.hosts_in_memory,
            hosts_with_queue: frontier.hosts_with_queue,
            seen_urls: frontier.seen,
            seen_bytes: frontier.seen_bytes,
            seen_recalled: frontier.seen_recalled,
            frontier_store_bytes: frontier.store_memory_bytes,
            second_copies: frontier.second_copies,
        }
    }
}
