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
//! - `outcome.rs`: the decisions, pure: how a response ends a lease, redirects, candidates.
//! - `robots.rs`: fetching robots.txt (a lease of its own) and the sitemaps it names.
//! - `borrowed.rs`: requests made for the browser under the crawl's rules.
//! - `adapt.rs`: what the crawl learns about its hosts and acts on — URL patterns and scheme
//!   changes, hosts refusing the crawler, archive hints for hosts whose queue ran dry, hubs
//!   revisited on a schedule — and `stall.rs`, whether the crawl as a whole is stuck.
//!
//! What the crawl does not own it reaches through two small traits given at construction:
//! [`Route`] (in a network, URLs of hosts another member owns go to it: `routing.rs`) and
//! [`Renders`] (pages that need JavaScript go to the browser: `layouts/rendering.rs`). Both
//! depend on this module, never the other way round.

mod adapt;
mod borrowed;
mod members;
pub mod outcome;
mod robots;
mod stall;

pub use adapt::{Adapt, AdaptSettings, BlockedHost};
pub use borrowed::BrowserFetchError;
pub use stall::Stall;

use crate::fetcher::{Expect, Fetched, Fetcher};
use crate::metrics::{inc, Event, Metrics, Render};
use crate::page::{FetchedPage, Pipeline, RenderReason};
use crate::storage::{blocking, Storage, StorageFault};
use outcome::Action;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use url::Url;
use weft_extract::{parse_sitemap, PageType};
use weft_frontier::health;
use weft_frontier::{
    normalize, Candidate, Completed, Completion, Durability, Fate, Frontier, FrontierStats, HostKey, Lease, Next,
    PushOutcome, RobotsCache, UrlKind, Verdict,
};

/// Where discovered URLs go in a network (see `routing.rs`).
pub trait Route: Send + Sync + 'static {
    /// Keeps the candidates whose host this node owns; sends the rest to their owners.
    fn route(&self, candidates: Vec<Candidate>) -> Vec<Candidate>;
    /// A URL this node is done with, on a host that may have changed hands while it was
    /// leased: its owner learns it is done. Nothing to do for a host still this node's.
    fn forward_done(&self, url: &Url);
    /// The member that owns `host` when it is not this node.
    fn owner(&self, host: &str) -> Option<String>;
}

/// The browser tier's queue, as the crawl sees it (see `layouts/rendering.rs`).
pub trait Renders: Send + Sync + 'static {
    /// Queues a page for the browser, with the page the crawl fetched when it has one (the
    /// browser is answered from it rather than fetching the page again).
    fn push(&self, url: &Url, depth: u32, reason: &RenderReason, fetched: Option<&FetchedPage>) -> anyhow::Result<()>;
    /// Why every page of `host` goes straight to the browser, if it does.
    fn host_renders(&self, host: &str) -> Option<RenderReason>;
    /// Pages waiting for the browser (not being rendered) whose host `pick` selects, claimed
    /// until [`Renders::forget`] or [`Renders::release`]: the renderer will not take them.
    fn waiting(&self, pick: &mut dyn FnMut(&str) -> bool) -> Vec<WaitingPage>;
    /// The HTML this node fetched for a waiting page, as the page to index when it will not be
    /// rendered here (its host changed hands); `None` when the crawl never fetched it.
    fn held_page(&self, page: &WaitingPage) -> Option<FetchedPage>;
    /// Takes pages off the queue (handed over with their host, or their host blocked).
    fn forget(&self, pages: &[WaitingPage]);
    /// Gives back pages [`Renders::waiting`] returned and that stay (a hand-off failed).
    fn release(&self, pages: &[WaitingPage]);
    /// Pages queued or being rendered, and work that may queue more: the crawl is not idle.
    fn pending(&self) -> usize;
    /// Pages queued for the browser or being rendered now.
    fn rendering(&self) -> usize;
    /// Hosts of the pages the browser is rendering now (or claimed for a hand-off): a node
    /// leaving keeps them until those renders end.
    fn hosts_rendering(&self) -> Vec<String>;
    /// The renderer takes no further page: the node is leaving, and what still waits goes
    /// with its host ([`Renders::waiting`]; a page fetched here is indexed from its HTML).
    fn close(&self);
}

/// A page waiting for the browser: part of its host's queue.
#[derive(Debug, Clone)]
pub struct WaitingPage {
    /// The queue's key for it.
    pub key: Vec<u8>,
    pub url: Url,
    pub depth: u32,
    /// When it was queued, seconds since the Unix epoch.
    pub queued_unix: u64,
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

/// What the crawl loop is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CrawlState {
    Crawling = 0,
    /// Nothing queued and nothing in flight.
    Idle = 1,
    Stopping = 2,
    /// The operator paused it.
    Paused = 3,
    /// Over the memory target: no new requests until memory is back down.
    Throttled = 4,
}

impl CrawlState {
    pub fn as_str(self) -> &'static str {
        match self {
            CrawlState::Crawling => "crawling",
            CrawlState::Idle => "idle",
            CrawlState::Stopping => "stopping",
            CrawlState::Paused => "paused",
            CrawlState::Throttled => "throttled",
        }
    }

    fn from_u8(v: u8) -> CrawlState {
        match v {
            0 => CrawlState::Crawling,
            1 => CrawlState::Idle,
            3 => CrawlState::Paused,
            4 => CrawlState::Throttled,
            _ => CrawlState::Stopping,
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
}

/// At a stop, how long pages already fetched may still take to be processed once unanswered
/// requests gave up. With the default grace a stop stays inside the 90 s a service manager
/// allows (`docs/weft.service`): 20 s + 40 s, then the leave's hand-off.
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
    wake: Notify,
    seed_hosts: Mutex<HashSet<HostKey>>,
    /// The other hosts each host's links brought in (bounded per source host).
    fanout: Mutex<weft_frontier::fanout::Fanout>,
    /// A [`CrawlState`].
    state: AtomicU8,
    route: Option<Arc<dyn Route>>,
    renders: Option<Arc<dyn Renders>>,
    /// The operator paused the crawl: no new requests start (in-flight ones finish).
    paused: std::sync::atomic::AtomicBool,
    /// Over the memory target: no new requests start until memory is back down.
    throttled: std::sync::atomic::AtomicBool,
    /// Leases completed in memory whose completion is not on disk yet: a crash now would
    /// fetch them again (`/status` `unflushed`).
    unflushed: std::sync::atomic::AtomicU64,
    /// Turns true when a stop's grace is over: requests still waiting for their answer give
    /// up (their URLs go back to the queue), pages already fetched are still processed.
    requests_cut: watch::Sender<bool>,
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Crawler {
    pub fn new(parts: Parts) -> Crawler {
        let Parts { frontier, outcomes, adapt, robots, fetcher, pipeline, metrics, settings, storage, route, renders } =
            parts;
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
                wake: Notify::new(),
                seed_hosts: Mutex::new(HashSet::new()),
                fanout: Mutex::new(weft_frontier::fanout::Fanout::new(max_hosts_per_source)),
                state: AtomicU8::new(CrawlState::Crawling as u8),
                route,
                renders,
                paused: std::sync::atomic::AtomicBool::new(false),
                throttled: std::sync::atomic::AtomicBool::new(false),
                unflushed: std::sync::atomic::AtomicU64::new(0),
                requests_cut: watch::Sender::new(false),
            }),
        }
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
        self.inner.wake.notify_one();
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
        self.inner.paused.store(true, Ordering::Release);
        self.inner.wake.notify_one();
    }

    /// Returns once the crawl is neither paused nor throttled: the browser's work (renders,
    /// lessons) starts no request while the crawl's does not either.
    pub async fn until_running(&self) {
        while self.inner.paused.load(Ordering::Acquire) || self.inner.throttled.load(Ordering::Acquire) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Holds back (or releases) new requests because of memory (see `memory.rs`).
    pub fn throttle(&self, on: bool) {
        self.inner.throttled.store(on, Ordering::Release);
        self.inner.wake.notify_one();
    }

    pub fn resume(&self) {
        self.inner.paused.store(false, Ordering::Release);
        self.inner.wake.notify_one();
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
    pub fn url_report(&self, url: &Url) -> anyhow::Result<crate::urls::CrawlView> {
        let host = HostKey::of(url);
        let state = self.inner.frontier.lock().url_state(url)?;
        let outcome = self.inner.outcomes.get(url.as_str())?;
        let owner = self.inner.route.as_ref().and_then(|r| r.owner(host.as_str()));
        Ok(crate::urls::CrawlView { host: host.into_string(), frontier: state, outcome, owner })
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

    /// Before this node leaves the network: the browser takes no further page. What still
    /// waits for it goes with its host ([`Crawler::hand_off`]: a page whose HTML is here is
    /// indexed from it, one never fetched goes to the host's new owner as queued); the pages
    /// being rendered now finish.
    pub fn close_renders(&self) {
        if let Some(r) = &self.inner.renders {
            r.close();
        }
    }

    /// Hosts this node is requesting right now — a fetch in flight, a browser's request, a
    /// page being rendered: a leaving node hands them over only once those end, so their next
    /// owner does not ask them closer than their delay behind this node.
    pub fn busy_hosts(&self) -> std::collections::HashSet<String> {
        let mut busy: std::collections::HashSet<String> =
            blocking(|| self.inner.frontier.lock().busy_hosts()).into_iter().collect();
        if let Some(r) = &self.inner.renders {
            busy.extend(r.hosts_rendering());
        }
        busy
    }

    /// The URLs done here on `hosts` (see [`weft_frontier::Frontier::done_of`]).
    pub fn done_of(&self, hosts: &std::collections::HashSet<String>) -> Vec<String> {
        match blocking(|| self.inner.frontier.lock().done_of(hosts)) {
            Ok(done) => done,
            Err(e) => {
                self.inner.storage.error("frontier done list", e);
                Vec::new()
            }
        }
    }

    /// Hosts of the pages the browser is rendering now.
    pub fn hosts_rendering(&self) -> Vec<String> {
        self.inner.renders.as_ref().map_or_else(Vec::new, |r| r.hosts_rendering())
    }

    /// Pages queued for the browser or being rendered.
    pub fn rendering(&self) -> usize {
        self.inner.renders.as_ref().map_or(0, |r| blocking(|| r.rendering()))
    }

    /// Wakes the crawl loop (new URLs, or work finished elsewhere).
    pub fn wake(&self) {
        self.inner.wake.notify_one();
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
        CrawlState::from_u8(self.inner.state.load(Ordering::Relaxed))
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

    /// Runs until `shutdown` turns true (or, with `exit_when_idle`, until nothing is left to
    /// crawl), then finishes in-flight requests within the grace period and flushes state.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>, exit_when_idle: bool) -> anyhow::Result<()> {
        let inner = &self.inner;
        let mut tasks: JoinSet<()> = JoinSet::new();
        let mut fault = inner.storage.subscribe();
        // The freshness loop: due revisits are queued once a second.
        let revisiting = inner.adapt.settings.hub_revisit.is_some();
        let mut revisit_tick = tokio::time::interval(Duration::from_secs(1));
        revisit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut revisits_checked = Instant::now();
        loop {
            if *shutdown.borrow() || *fault.borrow_and_update() {
                break;
            }
            if revisiting && revisits_checked.elapsed() >= Duration::from_secs(1) {
                revisits_checked = Instant::now();
                inner.queue_revisits();
            }
            while let Some(done) = tasks.try_join_next() {
                if let Err(e) = done {
                    tracing::error!("crawl task failed: {e}");
                }
            }
            let paused = inner.paused.load(Ordering::Acquire);
            if paused || inner.throttled.load(Ordering::Acquire) {
                inner.set_state(if paused { CrawlState::Paused } else { CrawlState::Throttled });
                tokio::select! {
                    _ = inner.wake.notified() => {}
                    Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                    _ = shutdown.changed() => {}
                    _ = fault.changed() => {}
                }
                continue;
            }
            if tasks.len() >= inner.settings.concurrency {
                tokio::select! {
                    _ = tasks.join_next() => {}
                    _ = shutdown.changed() => {}
                    _ = fault.changed() => {}
                }
                continue;
            }
            let next = blocking(|| inner.frontier.lock().next(Instant::now()));
            let wait_until = match next {
                Ok(Next::Ready(lease)) => {
                    inner.set_state(CrawlState::Crawling);
                    let inner = inner.clone();
                    tasks.spawn(async move { inner.process(lease).await });
                    continue;
                }
                Ok(Next::WaitUntil(t)) => {
                    if tasks.is_empty() {
                        // Nothing in flight: the crawl waits on politeness alone.
                        let wait = t.saturating_duration_since(Instant::now());
                        inner.metrics.histograms.politeness_wait.observe(wait.as_secs_f64());
                    }
                    Some(t)
                }
                Ok(Next::Busy) => None,
                Ok(Next::Empty) => {
                    let rendering = inner.renders.as_ref().map_or(0, |r| r.pending());
                    if tasks.is_empty() && rendering == 0 {
                        inner.set_state(CrawlState::Idle);
                        inner.adapt.idle_crawl();
                        if exit_when_idle {
                            break;
                        }
                    }
                    None
                }
                Err(e) => {
                    inner.storage.error("frontier lease (retrying in 1 s)", e);
                    Some(Instant::now() + Duration::from_secs(1))
                }
            };
            let sleep = async {
                match wait_until {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = inner.wake.notified() => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = revisit_tick.tick(), if revisiting => {}
                _ = shutdown.changed() => {}
                _ = fault.changed() => {}
            }
        }

        inner.set_state(CrawlState::Stopping);
        if let Some(fault) = inner.storage.fault() {
            // Nothing more can be made durable; what was acknowledged already is.
            tasks.abort_all();
            return Err(fault.into());
        }
        let in_flight = tasks.len();
        if in_flight > 0 {
            tracing::info!(in_flight, "finishing in-flight requests");
            let grace = inner.settings.shutdown_grace;
            let mut drained = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
            if drained.is_err() {
                // Requests still unanswered give up and go back to the queue; a page already
                // here is processed to the end (its links queued, its lease done): cut short,
                // it went to its host's next owner as queued and was fetched a second time
                // (the churn scenario caught it on a loaded machine: indexing outlasted the
                // grace). PROCESSING_GRACE bounds a processing that does not end.
                inner.requests_cut.send_replace(true);
                tracing::info!(left = tasks.len(), "grace period over; unanswered requests go back to the queue");
                drained =
                    tokio::time::timeout(PROCESSING_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
            }
            if drained.is_err() {
                tracing::warn!(left = tasks.len(), "grace period over; unfinished URLs stay queued for the next start");
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                // Back in the queue: a leave hands them to the host's next owner as queued.
                if let Err(e) = blocking(|| inner.frontier.lock().abandon_leases()) {
                    tracing::error!("frontier error: {e}");
                }
            }
        }
        // Writing the snapshot also flushes every pending frontier write.
        let bytes = self.snapshot().await?;
        let pages_fetched = inner.metrics.pages_fetched.load(Ordering::Relaxed);
        tracing::info!(pages_fetched, seen_snapshot_bytes = bytes, "crawl state flushed");
        Ok(())
    }
}

impl Inner {
    fn set_state(&self, state: CrawlState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    fn is_stopping(&self) -> bool {
        CrawlState::from_u8(self.state.load(Ordering::Relaxed)) == CrawlState::Stopping
    }

    /// Candidates this node should queue itself (all of them, outside a network).
    fn routed(&self, candidates: Vec<Candidate>) -> Vec<Candidate> {
        let Some(route) = &self.route else { return candidates };
        // Pages past the depth limit stay here to be refused as too deep: their owner caps
        // the depth a peer sends rather than refusing on its word.
        let (max_depth, stopping) = (self.frontier.lock().settings().max_depth, self.is_stopping());
        let (mut kept, to_route): (Vec<Candidate>, Vec<Candidate>) = candidates.into_iter().partition(|c| {
            (c.kind == UrlKind::Page && c.depth > max_depth)
                // Leaving, off the ring already: a link to a host whose queue this node still
                // holds (a request in flight) joins that queue and goes over with it, rather
                // than reaching the host's next owner while this node still asks the host.
                || (stopping && self.frontier.lock().holds(HostKey::of(&c.url).as_str()))
        });
        kept.extend(route.route(to_route));
        kept
    }

    /// Queues `c` here, or sends it to the member that owns its host (`None`).
    fn push(&self, c: Candidate) -> Result<Option<PushOutcome>, weft_frontier::FrontierError> {
        let Some(c) = blocking(|| self.routed(vec![c])).pop() else { return Ok(None) };
        let url = c.url.to_string();
        let outcome = blocking(|| self.frontier.lock().push(c))?;
        if outcome == PushOutcome::Queued {
            inc(&self.metrics.urls_queued);
        }
        blocking(|| self.note_refused(&url, outcome));
        Ok(Some(outcome))
    }

    /// Queues the candidates this node owns (sending the rest to their owners); returns how
    /// many were newly queued here.
    fn push_all(&self, candidates: Vec<Candidate>) -> usize {
        blocking(|| {
            let candidates = self.routed(candidates);
            let mut refused = Vec::new();
            let mut queued = 0;
            let mut frontier = self.frontier.lock();
            for c in candidates {
                let url = c.url.to_string();
                match frontier.push(c) {
                    Ok(PushOutcome::Queued) => {
                        inc(&self.metrics.urls_queued);
                        queued += 1;
                    }
                    Ok(PushOutcome::AlreadySeen) => {}
                    Ok(other) => refused.push((url, other)),
                    Err(e) => self.storage.error("frontier push", e),
                }
            }
            drop(frontier);
            for (url, outcome) in refused {
                self.note_refused(&url, outcome);
            }
            queued
        })
    }

    /// Queues the revisits that are due (the freshness loop).
    fn queue_revisits(&self) {
        let due = blocking(|| self.adapt.due(256));
        if due.is_empty() {
            return;
        }
        let candidates: Vec<Candidate> = due
            .iter()
            .filter_map(|r| Url::parse(&r.url).ok().map(|u| Candidate::of(u, UrlKind::Revisit, r.depth)))
            .collect();
        let queued = self.push_all(candidates);
        self.metrics.revisits.fetch_add(queued as u64, Ordering::Relaxed);
        self.wake.notify_one();
    }

    /// `host`'s queue ran dry: its archive hints, and `/sitemap.xml` if never tried, are queued.
    fn host_ran_dry(&self, host: &str, scheme: &str) {
        if blocking(|| self.frontier.lock().host_has_work(host)) {
            return;
        }
        let found = blocking(|| self.adapt.idle(host, scheme));
        if found.is_empty() {
            return;
        }
        let mut candidates: Vec<Candidate> = found
            .archives
            .iter()
            .filter_map(|u| normalize(u, None).ok())
            .map(|u| {
                let kind = outcome::link_kind(&u);
                Candidate::of(u, kind, 1)
            })
            .collect();
        if self.settings.follow_sitemaps {
            candidates.extend(
                found.sitemap.and_then(|u| normalize(&u, None).ok()).map(|u| Candidate::of(u, UrlKind::Sitemap, 0)),
            );
        }
        let queued = self.push_all(candidates);
        if queued > 0 {
            tracing::debug!(host, queued, "queue ran dry: archive hints and sitemap queued");
            self.metrics.found_when_idle.fetch_add(queued as u64, Ordering::Relaxed);
        }
    }

    /// Makes frontier writes durable: on the blocking pool, bounded; a failure is a storage
    /// fault (it stops the node).
    async fn flush(&self) -> Result<(), StorageFault> {
        let d = self.durability.clone();
        self.storage.bounded("flushing the frontier", move || d.flush()).await
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

    /// Records why a candidate was not queued, when it was refused outright.
    fn note_refused(&self, url: &str, outcome: PushOutcome) {
        let reason = match outcome {
            PushOutcome::Binary => "binary",
            PushOutcome::TooDeep => "too_deep",
            PushOutcome::HostBudgetExhausted => "host_budget_exhausted",
            PushOutcome::Blocked => "host_blocked",
            PushOutcome::Queued | PushOutcome::AlreadySeen => return,
        };
        if let Err(e) = self.outcomes.record_skip(url, reason) {
            tracing::warn!(url, "recording a URL's outcome failed: {e}");
        }
    }

    fn may_follow(&self, url: &Url) -> bool {
        self.settings.follow_external_links || self.seed_hosts.lock().contains(&HostKey::of(url))
    }

    async fn process(self: Arc<Self>, lease: Lease) {
        let (completion, requested) = match Url::parse(&lease.entry.url) {
            Ok(url) => self.handle(&lease, &url).await,
            Err(e) => {
                self.metrics.error("url_parse", &lease.entry.url, &e);
                (Completion::Done { page: false }, false)
            }
        };
        let url = Url::parse(&lease.entry.url).ok();
        let url_string = url.as_ref().map(Url::to_string);
        let (host, scheme) = (lease.entry.host.clone(), url.as_ref().map(|u| u.scheme().to_string()));
        self.unflushed.fetch_add(1, Ordering::AcqRel);
        let result = blocking(|| self.frontier.lock().complete(lease, completion, requested, Instant::now()));
        if matches!(result, Ok(Completed::Removed | Completed::GaveUp)) {
            // The host may have changed hands while this lease was out: its new owner learns
            // that this URL is done (nothing happens for a host still this node's).
            if let (Some(route), Some(url)) = (&self.route, url) {
                blocking(|| route.forward_done(&url));
            }
        }
        match result {
            Ok(Completed::GaveUp) => {
                inc(&self.metrics.gave_up);
                if let Some(url) = &url_string {
                    self.gave_up(url);
                }
            }
            Ok(Completed::Requeued) if completion == Completion::Retry => inc(&self.metrics.retries),
            Ok(_) => {}
            Err(e) => self.storage.error("frontier complete", e),
        }
        match &scheme {
            // Only a host that was reached: one the guard refuses or robots.txt could not reach
            // has nothing to discover.
            Some(scheme) if requested => self.host_ran_dry(&host, scheme),
            _ => {}
        }
        let _ = self.flush().await;
        self.unflushed.fetch_sub(1, Ordering::AcqRel);
        self.wake.notify_one();
    }

    /// Runs a request until it is answered, or `None` once a stop's grace cut requests short.
    async fn until_cut<F: std::future::Future>(&self, request: F) -> Option<F::Output> {
        let mut cut = self.requests_cut.subscribe();
        tokio::select! {
            answered = request => Some(answered),
            _ = cut.wait_for(|cut| *cut) => None,
        }
    }

    /// Does the work of one lease; returns how it ended and whether the host was contacted.
    async fn handle(&self, lease: &Lease, url: &Url) -> (Completion, bool) {
        let host = &lease.entry.host;
        if self.frontier.lock().is_blocked(host) {
            // Leased just before the operator blocked its host.
            return (Completion::Done { page: false }, false);
        }
        let now = now_unix();
        let cached = blocking(|| self.robots.lock().get(host, now));
        let Some(rules) = cached else {
            let cut = (Completion::Requeue { wait: Duration::ZERO }, false);
            return self.until_cut(self.fetch_robots(lease, url)).await.unwrap_or(cut);
        };
        if let Err(e) = blocking(|| self.frontier.lock().set_crawl_delay(host, rules.crawl_delay())) {
            self.storage.error("frontier crawl delay", e);
        }
        match rules.check(url.as_str(), now) {
            Verdict::Allowed => {}
            Verdict::Disallowed => {
                inc(&self.metrics.robots_disallowed);
                self.note(url.as_str(), Fate::Disallowed);
                return (Completion::Done { page: false }, false);
            }
            Verdict::Unavailable { retry_in } => return (Completion::Requeue { wait: retry_in }, false),
            Verdict::GaveUp => {
                let why = format!("robots.txt unreachable {} times in a row", weft_frontier::ROBOTS_TRIES);
                self.metrics.error("robots_gave_up", url.as_str(), &why);
                self.note(url.as_str(), Fate::Skipped { reason: "robots_unreachable".into() });
                return (Completion::Done { page: false }, false);
            }
        }

        let kind = lease.entry.kind;
        if kind == UrlKind::Page {
            if let Some(r) = &self.renders {
                if let Some(reason) = r.host_renders(host) {
                    // Known to need the browser: it fetches the page itself, under the same rules.
                    match r.push(url, lease.entry.depth, &reason, None) {
                        Ok(()) => {
                            self.note(url.as_str(), Fate::Rendering);
                            return (Completion::Done { page: false }, false);
                        }
                        Err(e) => tracing::error!("render queue: {e}"),
                    }
                }
            }
        }
        let expect = if kind == UrlKind::Sitemap { Expect::Sitemap } else { Expect::Html };
        // A revisit asks for the page only if it changed since it was last served.
        let validators = if kind == UrlKind::Revisit { blocking(|| self.adapt.validators(url.as_str())) } else { None };
        inc(&self.metrics.requests);
        let started = Instant::now();
        let Some(fetched) = self.until_cut(self.fetcher.fetch_if_changed(url, expect, validators.as_ref())).await
        else {
            return (Completion::Requeue { wait: Duration::ZERO }, false);
        };
        self.metrics.histograms.fetch.observe(started.elapsed().as_secs_f64());
        let mut outcome = outcome::of_fetch(kind, &fetched);
        match blocking(|| self.adapt.answer(host, url.as_str(), outcome::answer(&fetched))) {
            health::Verdict::Continue => {}
            health::Verdict::Pause { pause, newly } => {
                if newly {
                    inc(&self.metrics.hosts_blocked);
                    let reason = self.adapt.blocked().into_iter().find(|b| b.host == *host).map(|b| b.blocked.reason);
                    tracing::warn!(
                        host,
                        reason = reason.as_deref().unwrap_or(""),
                        "host refuses the crawler; queue paused"
                    );
                }
                // Not this URL's fault: it waits with its host and is tried again after the pause.
                outcome.completion = Completion::Requeue { wait: pause };
                outcome.action = Action::Nothing;
            }
            health::Verdict::Unblocked { retry } => {
                tracing::info!(host, again = retry.len(), "host answers again; its queue resumes");
                // What it refused before it was judged blocked is fetched again (the seen-set
                // has those URLs: they go back as revisits, plain requests without validators).
                let candidates = retry
                    .iter()
                    .filter_map(|u| Url::parse(u).ok())
                    .map(|u| Candidate::of(u, UrlKind::Revisit, lease.entry.depth))
                    .collect();
                self.push_all(candidates);
            }
        }
        match (&fetched, outcome.action == Action::Nothing && outcome.error.is_some()) {
            (Ok(Fetched::Body { .. } | Fetched::NotModified), false) => self.adapt.progress(),
            (Err(e), _) => self.adapt.no_progress(Some(e.kind())),
            _ => self.adapt.no_progress(None),
        }
        self.note(url.as_str(), outcome::fate(url, &fetched, &outcome.completion));
        if let Some((kind, detail)) = &outcome.error {
            self.metrics.error(kind, url.as_str(), detail);
        }
        match (outcome.action, fetched) {
            (Action::ProcessPage, Ok(Fetched::Body { status, content_type, content_language, body, validators })) => {
                self.metrics.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                inc(&self.metrics.pages_fetched);
                let page = FetchedPage {
                    url: url.clone(),
                    status,
                    content_type,
                    content_language,
                    body,
                    depth: lease.entry.depth,
                    fetched_at: SystemTime::now(),
                    rendered: false,
                };
                let learned = self.process_page(page).await;
                let scheduled = kind == UrlKind::Revisit && blocking(|| self.adapt.is_scheduled(url.as_str()));
                if learned.hub || scheduled {
                    // The freshness loop: a hub comes back after the base interval if it brought
                    // new links (or is new), later and later while it brings none.
                    let changed = kind != UrlKind::Revisit || learned.queued > 0;
                    blocking(|| self.adapt.visited(url.as_str(), lease.entry.depth, changed, Some(validators)));
                }
            }
            (_, Ok(Fetched::NotModified)) => {
                inc(&self.metrics.not_modified);
                blocking(|| self.adapt.visited(url.as_str(), lease.entry.depth, false, None));
            }
            (_, Ok(Fetched::Status { status: 404 | 410 })) if kind == UrlKind::Revisit => {
                // The hub is gone: it leaves the freshness loop.
                blocking(|| self.adapt.forget_revisit(url.as_str()));
            }
            (Action::ParseSitemap, Ok(Fetched::Body { body, .. })) => {
                self.metrics.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                inc(&self.metrics.sitemaps_fetched);
                let parsed = parse_sitemap(&body, url);
                match outcome::sitemap_candidates(parsed, lease.entry.depth, |u| self.may_follow(u)) {
                    Ok(candidates) => {
                        self.push_all(candidates);
                    }
                    Err(e) => self.metrics.error(e.kind(), url.as_str(), &e),
                }
            }
            (Action::Follow(location), _) => {
                inc(&self.metrics.redirects);
                self.follow_redirect(lease, url, &location);
            }
            (_, Ok(Fetched::RateLimited { .. })) => inc(&self.metrics.rate_limited),
            _ => {}
        }
        (outcome.completion, outcome.requested)
    }

    async fn process_page(&self, page: FetchedPage) -> PageLearned {
        let depth = page.depth;
        let page_url = page.url.clone();
        let rendered = page.rendered;
        let pipeline = self.pipeline.clone();
        // The page stays here (the pipeline borrows it): if it goes to the browser, its HTML
        // goes with it and the browser never fetches it again.
        let (page, processed) = match tokio::task::spawn_blocking(move || {
            let processed = pipeline.process(&page);
            (page, processed)
        })
        .await
        {
            Ok(p) => p,
            Err(e) => {
                self.metrics.error("pipeline_panic", page_url.as_str(), &e);
                return PageLearned::default();
            }
        };
        if let (Some(reason), Some(r), false) = (&processed.render, &self.renders, rendered) {
            match r.push(&page_url, depth, reason, Some(&page)) {
                Ok(()) => self.metrics.count_event(Event::Render(Render::Queued)),
                Err(e) => tracing::error!("render queue: {e}"),
            }
        }
        self.metrics.links_found.fetch_add(processed.links.len() as u64, Ordering::Relaxed);
        let mut learned = PageLearned::default();
        if let Some(e) = &processed.extracted {
            learned.hub = self.learn_from_page(&page_url, e, rendered);
        }
        let next = processed.extracted.as_ref().and_then(|e| e.classification.hints.next_page.clone());
        let from_hub = processed.extracted.as_ref().is_some_and(|e| e.classification.page_type == PageType::Hub);
        let candidates = outcome::page_candidates(processed.links, next, depth, from_hub, |u| self.may_follow(u));
        let source = HostKey::of(&page_url);
        let (candidates, dropped) = outcome::cap_hosts(candidates, &source);
        if dropped > 0 {
            let why = format!("{dropped} links to hosts past the first {}", outcome::MAX_HOSTS_PER_PAGE);
            self.metrics.error("hosts_per_page_capped", page_url.as_str(), &why);
        }
        let (candidates, dropped) =
            outcome::cap_source(candidates, &source, &mut self.fanout.lock(), std::time::Instant::now());
        if dropped > 0 {
            let why = format!(
                "{dropped} links to hosts past the {} this host's pages brought in today",
                self.settings.max_hosts_per_source
            );
            self.metrics.error("hosts_per_source_capped", page_url.as_str(), &why);
        }
        learned.queued = self.push_all(candidates);
        learned
    }

    /// Counts the page's URL template (a scheme change it completes is logged and counted),
    /// remembers its archive links; says whether it is a hub to revisit.
    fn learn_from_page(&self, url: &Url, e: &weft_extract::Extracted, rendered: bool) -> bool {
        let host = HostKey::of(url).into_string();
        let c = &e.classification;
        let page_type = match c.page_type {
            PageType::Article => "article",
            PageType::Hub => "hub",
            PageType::Other => "other",
        };
        let archives: Vec<&str> =
            c.hints.archives.iter().filter(|a| HostKey::of(a).as_str() == host).map(Url::as_str).collect();
        blocking(|| self.adapt.archives(&host, archives));
        if rendered {
            // Counted when it was fetched.
            return false;
        }
        let lesson = blocking(|| self.adapt.page(&host, url.as_str(), &c.template, page_type));
        if let Some(change) = &lesson.change {
            inc(&self.metrics.scheme_changes);
            tracing::info!(host, from = %change.from, to = %change.to, "URL scheme changed: {}", change.reason);
        }
        lesson.revisit
    }

    fn follow_redirect(&self, lease: &Lease, url: &Url, location: &str) {
        let e = &lease.entry;
        let max = self.settings.max_redirects;
        match outcome::redirect(e.kind, e.depth, &e.redirects, url, location, max) {
            Ok(target) if self.may_follow(&target.url) => {
                let host = HostKey::of(url);
                if HostKey::of(&target.url) == host && e.kind != UrlKind::Sitemap {
                    // Old URLs redirecting to another template: the host moved its scheme.
                    let (from, to) =
                        (weft_extract::classify::template(url), weft_extract::classify::template(&target.url));
                    let change = blocking(|| {
                        self.adapt.redirected(host.as_str(), (&from, url.as_str()), (&to, target.url.as_str()))
                    });
                    if let Some(change) = change {
                        inc(&self.metrics.scheme_changes);
                        tracing::info!(host = %host, from = %change.from, to = %change.to, "URL scheme changed: {}", change.reason);
                    }
                }
                if let Err(e) = self.push(target) {
                    self.storage.error("frontier push", e);
                }
            }
            Ok(_) => {}
            Err(err @ outcome::RedirectError::Location(_)) => self.metrics.error(err.kind(), location, &err),
            Err(err) => self.metrics.error(err.kind(), url.as_str(), &err),
        }
    }
}

/// What a processed page brought.
#[derive(Debug, Default)]
struct PageLearned {
    /// Links newly queued.
    queued: usize,
    /// A hub of a known template: revisit it.
    hub: bool,
}

/// The crawl's part of `/status`: its counters and the frontier's.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CrawlStatus {
    /// `crawling`, `stalled` (no progress with work queued, see `stalled`), `idle`, `paused`,
    /// `throttled` (over the memory target) or `stopping`.
    pub state: String,
    pub uptime_secs: f64,
    /// HTML pages fetched with a 2xx status.
    pub pages_fetched: u64,
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
        }
    }
}
