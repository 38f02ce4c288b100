//! What the frontier takes and gives: its settings, the URLs offered and leased, and what
//! became of them.

use crate::politeness::PolitenessPolicy;
use crate::score::UrlKind;
use crate::store::QKey;
pub use crate::store::QueuedUrl;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};
use url::Url;

/// Where a URL stands in the frontier (see [`Frontier::url_state`](super::Frontier::url_state)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlState {
    Queued,
    Done,
    Seen,
    Unseen,
}

/// Frontier settings. The node derives them from its config (`weft_config` is not a
/// dependency of this crate); the defaults here are the config's defaults for a node alone.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierSettings {
    pub max_depth: u32,
    pub max_pages_per_host: u64,
    pub inlink_cap: u32,
    pub seen_capacity: u64,
    pub seen_fp_rate: f64,
    pub max_retries: u32,
    pub politeness: PolitenessPolicy,
    /// The queue store's block cache, bytes. With the write buffers and the journal's bound,
    /// it is what keeps the frontier's footprint flat however many URLs are queued.
    pub cache_bytes: u64,
    /// Each of the queue store's keyspaces' write buffer (memtable), bytes.
    pub write_buffer_bytes: u64,
}

impl Default for FrontierSettings {
    fn default() -> Self {
        FrontierSettings {
            max_depth: 16,
            max_pages_per_host: 100_000,
            inlink_cap: 5,
            seen_capacity: 10_000_000,
            seen_fp_rate: 0.01,
            max_retries: 3,
            politeness: PolitenessPolicy::default(),
            cache_bytes: 8 << 20,
            write_buffer_bytes: 8 << 20,
        }
    }
}

/// One host's load, for the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLoad {
    pub host: String,
    pub queued: u64,
    pub fetched: u64,
    pub in_flight: bool,
}

/// A URL offered to the frontier. The URL must already be normalized.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub url: Url,
    pub kind: UrlKind,
    pub depth: u32,
    pub redirects: Vec<String>,
    /// Linked from a hub page: its priority gains [`crate::score::HUB_BOOST`].
    pub from_hub: bool,
}

impl Candidate {
    pub fn page(url: Url, depth: u32) -> Candidate {
        Candidate::of(url, UrlKind::Page, depth)
    }

    pub fn of(url: Url, kind: UrlKind, depth: u32) -> Candidate {
        Candidate { url, kind, depth, redirects: Vec::new(), from_hub: false }
    }
}

/// What became of a pushed candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    Queued,
    /// Already queued or fetched (or a Bloom false positive). A still-queued URL gains an inlink.
    AlreadySeen,
    TooDeep,
    Binary,
    HostBudgetExhausted,
    /// The operator blocked its host.
    Blocked,
}

/// A URL handed out for fetching. Its host has no other request in flight until the lease is
/// completed; an uncompleted lease (crash) leaves the URL queued.
#[derive(Debug, Clone)]
pub struct Lease {
    /// Its queue entry's key.
    pub key: QKey,
    pub entry: QueuedUrl,
}

/// What [`Frontier::next`](super::Frontier::next) has to offer.
#[derive(Debug)]
pub enum Next {
    Ready(Lease),
    /// Nothing is ready before this instant.
    WaitUntil(Instant),
    /// Everything queued belongs to hosts with a request in flight.
    Busy,
    /// Nothing queued and nothing in flight.
    Empty,
}

/// What [`Frontier::borrow_host`](super::Frontier::borrow_host) says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Borrow {
    /// The host is this caller's until [`Frontier::return_host`](super::Frontier::return_host).
    Granted,
    /// Its politeness delay (or a hold) runs until then.
    WaitUntil(Instant),
    /// A request to it is in flight; ask again shortly.
    Busy,
}

/// How a borrowed host's request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Returned {
    /// A request reached the host (the delay counts from now).
    Requested,
    /// The host answered 429 or 503, maybe with Retry-After: back off as for a queued URL.
    RateLimited { retry_after: Option<Duration> },
    /// No request was made after all.
    Unused,
}

/// How a leased URL ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Completion {
    /// Handled for good. `page` counts against the host's page budget.
    Done { page: bool },
    /// Transient failure: requeue unless the retry budget is spent.
    Retry,
    /// 429/503: requeue and back the host off.
    RateLimited { retry_after: Option<Duration> },
    /// Not attempted yet for a reason outside the URL (e.g. robots.txt just fetched, or
    /// unreachable): requeue without counting an attempt; the host waits at least `wait`.
    Requeue { wait: Duration },
}

/// What [`Frontier::complete`](super::Frontier::complete) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    Removed,
    Requeued,
    /// The retry budget was spent; the URL is dropped.
    GaveUp,
}

/// Counters for `/status`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FrontierStats {
    pub queued: u64,
    pub in_flight: u64,
    /// Hosts known: every host with a record in the store.
    pub hosts: u64,
    /// Hosts held in memory: those with work, or used within [`IDLE_FOR`].
    pub hosts_in_memory: u64,
    pub hosts_with_queue: u64,
    pub seen: u64,
    pub seen_bytes: u64,
    /// URLs met again after the seen-set's filters forgot them, known from the disk (queued or
    /// done here) and so not queued twice.
    pub seen_recalled: u64,
    /// The store's memory: its block cache as filled, pinned blocks and write buffer.
    pub store_memory_bytes: u64,
    /// Second copies: notes waiting for this node's hosts' second holders, URLs kept for others.
    pub second_copies: super::SecondCopiesCounts,
}
