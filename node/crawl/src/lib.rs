//! The crawl loop: lease a ready URL from the frontier, make sure robots.txt allows it, fetch
//! it, hand the page to the pipeline, queue what it links to, complete the lease.
//!
//! Politeness lives in the frontier (one lease per host, ready times); this loop only adds the
//! global concurrency limit. Every request to a host — robots.txt, sitemaps, redirects, pages —
//! is its own lease, so each waits its host's delay: when robots.txt is not cached, the lease
//! fetches only robots.txt and is requeued, and the page follows after the delay.
//!
//! A lease is completed (and the frontier flushed to disk) only after everything the page
//! taught us is queued, so a crash at any point leaves either the page still queued or the
//! page done *and* its links queued.
//!
//! - `run_loop.rs`: the loop itself and the stop's grace; `lease.rs`: one lease from request
//!   to completion; `status.rs`: the crawl's part of `/status`; `members.rs`: hosts changing
//!   hands (URLs other members send, hand-offs, what a leaving node keeps until its requests end).
//! - `outcome.rs`: the decisions, pure: how a response ends a lease, redirects, candidates.
//! - `processing.rs`: a fetched page through the pipeline, and what it teaches;
//!   `queueing.rs`: what the crawl finds, to this node's frontier or to its hosts' owners.
//! - `robots.rs`: fetching robots.txt (a lease of its own) and the sitemaps it names.
//! - `borrowed.rs`: requests made for the browser under the crawl's rules; `second.rs`: second
//!   copies of queues, this node's for others and others' kept here ([`weft_frontier::SecondCopy`]).
//! - `adapt.rs`: what the crawl learns about its hosts and acts on — URL patterns and scheme
//!   changes, hosts refusing the crawler, archive hints for hosts whose queue ran dry, hubs
//!   revisited on a schedule — and `stall.rs`, whether the crawl as a whole is stuck.
//!
//! What the crawl does not own it reaches through two small traits given at construction:
//! [`Route`] (in a network, URLs of hosts another member owns go to it: the node's
//! `routing.rs`) and [`Renders`] (pages that need JavaScript go to the browser:
//! `weft_layouts::RenderQueue`). Neither the network nor the browser is a dependency.
//!
//! Beside the loop, what it and the node share: [`metrics`] (the node's counters), [`storage`]
//! (bounded durable writes; a fault stops the node), [`received`] (what became of the URLs
//! other members sent); and `layout_tier.rs`, the crawl and the counters as the layout tier
//! sees them (`weft_layouts::Crawl`, `weft_layouts::Tally`).
//!
//! Module order: received, storage → metrics → layout_tier, adapt, control, outcome, robots,
//! stall → queueing → processing → adopt, borrowed, lease, members, run_loop, second, status.

mod adapt;
mod adopt;
mod borrowed;
mod control;
mod layout_tier;
mod lease;
mod members;
pub mod metrics;
pub mod outcome;
mod processing;
mod queueing;
pub mod received;
mod robots;
mod run_loop;
mod second;
mod stall;
mod status;
pub mod storage;

pub use adapt::{Adapt, AdaptSettings};
use control::Control;
pub use control::CrawlState;
pub use status::CrawlStatus;
pub use weft_fetch::{BrowserFetchError, Renders, WaitingPage};

use crate::metrics::Metrics;
use crate::storage::{blocking, Storage, StorageFault};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use weft_fetch::fetcher::{Fetched, Fetcher};
use weft_fetch::page::{FetchedPage, Pipeline};
use weft_frontier::{Candidate, Durability, Fate, Frontier, PushOutcome, RobotsCache};
use weft_url::{normalize, HostKey};

/// Where discovered URLs go in a network (see `routing.rs`).
pub trait Route: Send + Sync + 'static {
    /// Keeps the candidates whose host this node owns; sends the rest to their owners.
    fn route(&self, candidates: Vec<Candidate>) -> Vec<Candidate>;
    /// A URL this node is done with, on a host that may have changed hands while it was
    /// leased: its owner learns it is done. Nothing to do for a host still this node's.
    fn forward_done(&self, url: &Url);
    /// The member that owns `host` when it is not this node.
    fn owner(&self, host: &str) -> Option<String>;
    /// A fresh copy of the page at `url` that another member holds (`index.replicas`): the
    /// crawl indexes it instead of fetching the page again. `None` when no holder has one
    /// (answered within a short deadline).
    fn copy_of(&self, url: &Url) -> futures::future::BoxFuture<'static, Option<weft_fetch::page::HeldCopy>> {
        let _ = url;
        Box::pin(std::future::ready(None))
    }
}

/// Crawl-loop settings (the rest lives in the frontier and the fetcher).
#[derive(Debug, Clone)]
pub struct CrawlSettings {
    pub concurrency: usize,
    pub follow_sitemaps: bool,
    pub follow_external_links: bool,
    /// `crawl.max_hosts_per_source` (see [`weft_frontier::fanout`]).
    pub max_hosts_per_source: usize,
    pub max_redirects: u32,
    /// How long in-flight requests may take to finish at shutdown before those still unanswered
    /// give up (their leases stay queued: fetched after a restart, or by the host's next owner
    /// when this node leaves). Pages fetched by then are processed to the end, for up to
    /// [`PROCESSING_GRACE`] more: a page cut short is fetched a second time.
    pub shutdown_grace: Duration,
    /// Subresource fetches one render may make (`layouts.max_subresources`).
    pub render_subresources: usize,
}

impl CrawlSettings {
    pub fn from_config(c: &weft_config::Config) -> CrawlSettings {
        CrawlSettings {
            concurrency: c.crawl.concurrency,
            follow_sitemaps: c.crawl.follow_sitemaps,
            follow_external_links: c.crawl.follow_external_links,
            max_hosts_per_source: c.crawl.max_hosts_per_source,
            max_redirects: c.fetch.max_redirects,
            shutdown_grace: Duration::from_secs(c.crawl.shutdown_grace_secs),
            render_subresources: c.layouts.max_subresources,
        }
    }
}

/// What a crawler is made of. The collaborators it calls out to are given here, once: none is
/// filled in after construction.
pub struct Parts {
    pub frontier: Frontier,
    /// What happened to each URL (for `/urls` and the export).
    pub outcomes: weft_frontier::Outcomes,
    /// What the crawl learns about its hosts (patterns, refusals, hints, revisits, stalls).
    pub adapt: Adapt,
    pub robots: RobotsCache,
    pub fetcher: Fetcher,
    pub pipeline: Arc<dyn Pipeline>,
    pub metrics: Arc<Metrics>,
    pub settings: CrawlSettings,
    /// Flushes go through it: bounded, and a failure stops the node (see `storage.rs`).
    pub storage: Storage,
    /// In a network: sends URLs of hosts other members own to them. Alone: everything is this
    /// node's.
    pub route: Option<Arc<dyn Route>>,
    /// The JavaScript tier, when layouts are enabled.
    pub renders: Option<Arc<dyn Renders>>,
    /// Where pages' HTTP responses are kept, with `crawl.keep_responses`.
    pub responses: Option<weft_content::responses::ResponseStore>,
}

/// At a stop, how long pages already fetched may still take to be processed once unanswered
/// requests gave up. With the default grace a stop stays inside the 90 s a service manager
/// allows (`node/debian/weft.service`): 20 s + 40 s, then the leave's hand-off.
pub const PROCESSING_GRACE: Duration = Duration::from_secs(40);

/// The crawler of one node. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct Crawler {
    inner: Arc<Inner>,
}

struct Inner {
    frontier: Mutex<Frontier>,
    outcomes: weft_frontier::Outcomes,
    adapt: Adapt,
    durability: Durability,
    /// Flushes go through it: bounded, and a failure stops the node (see `storage.rs`).
    storage: Storage,
    robots: Mutex<RobotsCache>,
    fetcher: Fetcher,
    pipeline: Arc<dyn Pipeline>,
    metrics: Arc<Metrics>,
    settings: CrawlSettings,
    seed_hosts: Mutex<HashSet<HostKey>>,
    /// The other hosts each host's links brought in (bounded per source host).
    fanout: Mutex<weft_frontier::fanout::Fanout>,
    /// Crawling, idle, paused, throttled or stopping, and the wake-up.
    control: Control,
    route: Option<Arc<dyn Route>>,
    renders: Option<Arc<dyn Renders>>,
    responses: Option<weft_content::responses::ResponseStore>,
    /// Leases completed in memory whose completion is not on disk yet: a crash now would
    /// fetch them again (`/status` `unflushed`).
    unflushed: std::sync::atomic::AtomicU64,
    /// Pages fetched whose lease is still open while they are processed (extraction, the
    /// indexer's queue): fetched, but not on the done list until their completion. A leaving
    /// node tells them done with its busy hosts' done lists ([`Crawler::done_of`]).
    processing: Mutex<HashSet<HostedUrl>>,
}

/// A URL and the frontier host it is queued under (`name:port` as the frontier keys hosts).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct HostedUrl {
    host: String,
    url: String,
}

impl Crawler {
    pub fn new(parts: Parts) -> Crawler {
        let Parts {
            frontier,
            outcomes,
            adapt,
            robots,
            fetcher,
            pipeline,
            metrics,
            settings,
            storage,
            route,
            renders,
            responses,
        } = parts;
        let max_hosts_per_source = settings.max_hosts_per_source;
        Crawler {
            inner: Arc::new(Inner {
                outcomes,
                adapt,
                durability: frontier.durability(),
                storage,
                frontier: Mutex::new(frontier),
                robots: Mutex::new(robots),
                fetcher,
                pipeline,
                metrics,
                settings,
                seed_hosts: Mutex::new(HashSet::new()),
                fanout: Mutex::new(weft_frontier::fanout::Fanout::new(max_hosts_per_source)),
                control: Control::default(),
                route,
                renders,
                responses,
                unflushed: std::sync::atomic::AtomicU64::new(0),
                processing: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// The pipeline fetched pages go down.
    pub fn pipeline(&self) -> Arc<dyn Pipeline> {
        self.inner.pipeline.clone()
    }

    /// Where pages' responses are kept, with `crawl.keep_responses`.
    pub fn responses(&self) -> Option<&weft_content::responses::ResponseStore> {
        self.inner.responses.as_ref()
    }

    /// Queues seed URLs at depth 0. Already-seen seeds are ignored; malformed ones are
    /// reported; in a network, seeds of hosts another member owns are sent to it (`Ok(None)`).
    /// Durable when this returns.
    pub async fn add_seeds(&self, seeds: &[String]) -> Vec<(String, Result<Option<PushOutcome>, String>)> {
        let mut results = Vec::new();
        for seed in seeds {
            let r = match normalize(seed, None) {
                Ok(url) => {
                    self.inner.seed_hosts.lock().insert(HostKey::of(&url));
                    self.inner.push(Candidate::page(url, 0)).map_err(|e| e.to_string())
                }
                Err(e) => {
                    self.inner.metrics.error(e.kind(), seed, &e);
                    Err(e.to_string())
                }
            };
            results.push((seed.clone(), r));
        }
        if let Err(fault) = self.inner.flush().await {
            // Not durable, so not acknowledged.
            for (_, r) in &mut results {
                *r = Err(fault.to_string());
            }
        }
        self.inner.control.wake();
        results
    }

    /// One request outside the crawl's queue (the teacher's static pages, a page the browser
    /// failed on), under the crawl's rules; see `Inner::fetch_for_browser`.
    pub async fn fetch_for_browser(&self, url: &Url, patience: Duration) -> Result<Fetched, BrowserFetchError> {
        self.inner.fetch_for_browser(url, patience).await
    }

    /// Stops starting requests (in-flight ones finish); `resume` starts again. Not persisted:
    /// a restarted node crawls.
    pub fn pause(&self) {
        self.inner.control.pause(true);
    }

    /// Returns once the crawl is neither paused nor throttled: the browser's work (renders,
    /// lessons) starts no request while the crawl's does not either.
    pub async fn until_running(&self) {
        while self.inner.control.held().is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Holds back (or releases) new requests because of memory (see `memory.rs`).
    pub fn throttle(&self, on: bool) {
        self.inner.control.throttle(on);
    }

    pub fn resume(&self) {
        self.inner.control.pause(false);
    }

    /// Blocks a host for good (see [`Frontier::block_host`]); returns the queued URLs dropped.
    /// Durable when this returns.
    pub async fn block_host(&self, host: &str) -> anyhow::Result<u64> {
        let mut dropped = blocking(|| self.inner.frontier.lock().block_host(host))?;
        // Its pages waiting for the browser go too.
        if let Some(r) = &self.inner.renders {
            let waiting = r.waiting(&mut |h| h == host);
            r.forget(&waiting);
            dropped += waiting.len() as u64;
        }
        self.inner.flush().await?;
        Ok(dropped)
    }

    /// Lifts a block; says whether the host was blocked. Durable when this returns.
    pub async fn unblock_host(&self, host: &str) -> anyhow::Result<bool> {
        let was = blocking(|| self.inner.frontier.lock().unblock_host(host))?;
        self.inner.flush().await?;
        Ok(was)
    }

    /// What this node's crawl knows of a normalized URL: where it stands in the frontier, what
    /// happened when it was tried, and who owns its host when another member does. Blocking
    /// (sled reads): call it from the blocking pool.
    pub fn url_report(&self, url: &Url) -> anyhow::Result<weft_content::urls::CrawlView> {
        let host = HostKey::of(url);
        let state = self.inner.frontier.lock().url_state(url)?;
        let outcome = self.inner.outcomes.get(url.as_str())?;
        let owner = self.inner.route.as_ref().and_then(|r| r.owner(host.as_str()));
        Ok(weft_content::urls::CrawlView { host: host.into_string(), frontier: state, outcome, owner })
    }

    /// The recorded outcomes, in URL order after `after` (for the export).
    pub fn outcomes(&self) -> weft_frontier::Outcomes {
        self.inner.outcomes.clone()
    }

    pub fn top_hosts(&self, n: usize) -> Vec<weft_frontier::HostLoad> {
        self.inner.frontier.lock().top_hosts(n)
    }

    pub fn blocked_hosts(&self) -> Vec<String> {
        self.inner.frontier.lock().blocked_hosts()
    }

    /// Counts URLs other members sent that are not URLs at all (`/status` `received`).
    pub fn count_received_invalid(&self, n: u64) {
        self.inner.metrics.received.invalid(n);
    }

    /// The deepest a page may be queued (`frontier.max_depth`).
    pub fn max_depth(&self) -> u32 {
        self.inner.frontier.lock().settings().max_depth
    }

    /// Whether the crawl loop has stopped (or is stopping): no new work should start.
    pub fn stopping(&self) -> bool {
        self.state() == CrawlState::Stopping
    }

    /// Pages queued for the browser or being rendered.
    pub fn rendering(&self) -> usize {
        self.inner.renders.as_ref().map_or(0, |r| blocking(|| r.rendering()))
    }

    /// Wakes the crawl loop (new URLs, or work finished elsewhere).
    pub fn wake(&self) {
        self.inner.control.wake();
    }

    /// A page the browser rendered (or fetched again after the browser failed on it) goes
    /// down the pipeline; its links are queued and durable when this returns.
    pub async fn process_rendered(&self, page: FetchedPage) {
        self.inner.process_page(page).await;
        let _ = self.inner.flush().await;
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.inner.metrics.clone()
    }

    pub fn state(&self) -> CrawlState {
        self.inner.control.state()
    }

    /// The crawl's part of `/status`.
    pub fn status(&self) -> CrawlStatus {
        let now = Instant::now();
        let (stats, next_ready) = {
            let f = self.inner.frontier.lock();
            (f.stats(), f.next_ready(now))
        };
        let unflushed = self.inner.unflushed.load(Ordering::Acquire);
        let backlog = stall::Backlog {
            queued: stats.queued,
            hosts_with_queue: stats.hosts_with_queue,
            blocked: 0,
            next_ready_in: next_ready.map(|t| t.saturating_duration_since(now)),
        };
        let state = self.state();
        let stalled = match state {
            CrawlState::Crawling | CrawlState::Idle => self.inner.adapt.stall(backlog),
            _ => None,
        };
        let blocked = self.inner.adapt.blocked();
        CrawlStatus::of(&self.inner.metrics, &stats, state, unflushed, blocked, stalled)
    }

    /// What the crawl learned of its hosts' URLs: templates, counts, page types, scheme changes.
    pub fn patterns(&self) -> &weft_frontier::patterns::Patterns {
        &self.inner.adapt.patterns
    }

    /// Writes a seen-set snapshot and flushes everything to disk (called on a timer and at
    /// shutdown). The filter is serialized under the lock; the write runs on the blocking pool.
    pub async fn snapshot(&self) -> anyhow::Result<usize> {
        let job = blocking(|| self.inner.frontier.lock().snapshot_job())?;
        Ok(self.inner.storage.bounded("writing the seen-set snapshot", move || job.write()).await?)
    }

    /// Lets the frontier's idle hosts leave memory (see `Frontier::evict_idle`); returns how
    /// many left.
    pub async fn evict_idle_hosts(&self) -> anyhow::Result<usize> {
        let now = Instant::now();
        Ok(blocking(|| self.inner.frontier.lock().evict_idle(now))?)
    }

    /// Compacts the frontier's files when a drained queue has left them mostly deletions (see
    /// `Frontier::compaction_due`); on the blocking pool, not bounded like a flush (it may take
    /// minutes on a large queue, and writes go on meanwhile). Returns whether it ran.
    pub async fn compact_frontier(&self) -> anyhow::Result<bool> {
        let Some(job) = blocking(|| self.inner.frontier.lock().compaction_due()) else { return Ok(false) };
        tokio::task::spawn_blocking(move || job.run()).await??;
        Ok(true)
    }

    /// The node's storage guard.
    pub fn storage(&self) -> &Storage {
        &self.inner.storage
    }
}

impl Inner {
    fn set_state(&self, state: CrawlState) {
        self.control.set_state(state);
    }

    fn is_stopping(&self) -> bool {
        self.control.is_stopping()
    }

    /// Makes frontier writes durable, and the pipeline's (the index's documents): on the
    /// blocking pool, bounded; a failure is a storage fault (it stops the node).
    async fn flush(&self) -> Result<(), StorageFault> {
        let d = self.durability.clone();
        self.storage.bounded("flushing the frontier", move || d.flush()).await?;
        let pipeline = self.pipeline.clone();
        self.storage.bounded("flushing the index's documents", move || pipeline.persist()).await
    }

    /// Records what happened to `url` (for `/urls`); a failure to record is logged, not fatal:
    /// the crawl's own state is the frontier's.
    fn note(&self, url: &str, fate: Fate) {
        if let Err(e) = blocking(|| self.outcomes.record(url, fate)) {
            tracing::warn!(url, "recording a URL's outcome failed: {e}");
        }
    }

    /// The retries of `url` ran out: its last failure is final.
    fn gave_up(&self, url: &str) {
        let Ok(Some(last)) = blocking(|| self.outcomes.get(url)) else { return };
        let fate = match last.fate {
            Fate::Status { status, .. } => Fate::Status { status, retrying: false },
            Fate::Failed { error, detail, .. } => Fate::Failed { error, detail, retrying: false },
            other => other,
        };
        // Not an attempt of its own: written as is.
        let _ = blocking(|| self.outcomes.settle(url, fate));
    }
}
