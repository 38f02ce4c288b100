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

use crate::fetcher::{Expect, FetchError, Fetched, Fetcher};
use crate::metrics::{inc, Metrics, Status};
use crate::pipeline::{FetchedPage, Pipeline};
use crate::storage::{blocking, Storage, StorageFault};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{watch, Notify};
use tokio::task::JoinSet;
use url::Url;
use weft_extract::{parse_sitemap, Sitemap};
use weft_frontier::{
    host_key, normalize, normalize_url, Borrow, Candidate, Completed, Completion, Durability, Frontier, Lease, Next,
    PushOutcome, Returned, RobotsCache, RobotsFetch, RobotsOutcome, UrlKind, Verdict,
};

/// Crawl-loop settings (the rest lives in the frontier and the fetcher).
#[derive(Debug, Clone)]
pub struct CrawlSettings {
    pub concurrency: usize,
    pub follow_sitemaps: bool,
    pub follow_external_links: bool,
    pub max_redirects: u32,
    /// How long in-flight requests may take to finish at shutdown before they are abandoned
    /// (abandoned leases stay queued and are fetched after a restart).
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
            max_redirects: c.fetch.max_redirects,
            // Long enough for the pages in flight to be indexed on a busy box (a lease completes
            // once its page is indexed); a lease abandoned at a stop is fetched again — by this
            // node after a restart, or by the host's next owner when this node leaves.
            shutdown_grace: Duration::from_secs(20),
            render_subresources: c.layouts.max_subresources,
        }
    }
}

/// Memory for rendered pages' subresources kept for the run.
const SUBRESOURCE_CACHE_BYTES: usize = 32 << 20;

const CRAWLING: u8 = 0;
const IDLE: u8 = 1;
const STOPPING: u8 = 2;
const PAUSED: u8 = 3;
const THROTTLED: u8 = 4;

/// The crawler of one node. Cheap to share (`Arc` inside).
#[derive(Clone)]
pub struct Crawler {
    inner: Arc<Inner>,
}

struct Inner {
    frontier: Mutex<Frontier>,
    durability: Durability,
    /// Flushes go through it: bounded, and a failure stops the node (see `storage.rs`).
    storage: Storage,
    robots: Mutex<RobotsCache>,
    fetcher: Fetcher,
    pipeline: Arc<dyn Pipeline>,
    metrics: Arc<Metrics>,
    settings: CrawlSettings,
    wake: Notify,
    seed_hosts: Mutex<HashSet<String>>,
    state: AtomicU8,
    /// In a network: sends URLs of hosts other members own to them.
    router: Mutex<Option<crate::routing::Router>>,
    /// The JavaScript tier: pages for the browser.
    rendering: Mutex<Option<crate::rendering::RenderQueue>>,
    /// The operator paused the crawl: no new requests start (in-flight ones finish).
    paused: std::sync::atomic::AtomicBool,
    /// Over the memory target: no new requests start until memory is back down.
    throttled: std::sync::atomic::AtomicBool,
    /// Rendered pages' subresources, fetched once per run (see `render_fetch.rs`).
    subresources: Mutex<crate::render_fetch::SubresourceCache>,
}

fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Crawler {
    pub fn new(
        frontier: Frontier,
        robots: RobotsCache,
        fetcher: Fetcher,
        pipeline: Arc<dyn Pipeline>,
        metrics: Arc<Metrics>,
        settings: CrawlSettings,
        storage: Storage,
    ) -> Crawler {
        Crawler {
            inner: Arc::new(Inner {
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
                state: AtomicU8::new(CRAWLING),
                router: Mutex::new(None),
                rendering: Mutex::new(None),
                paused: std::sync::atomic::AtomicBool::new(false),
                throttled: std::sync::atomic::AtomicBool::new(false),
                subresources: Mutex::new(crate::render_fetch::SubresourceCache::new(SUBRESOURCE_CACHE_BYTES)),
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
                    self.inner.seed_hosts.lock().insert(host_key(&url));
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

    /// Routes discovered URLs through `router`: from now on this node queues only URLs of
    /// hosts it owns and sends the rest to their owners.
    pub fn set_router(&self, router: crate::routing::Router) {
        *self.inner.router.lock() = Some(router);
    }

    /// Sends pages that need JavaScript to `queue` (and, for hosts known to need it, skips the
    /// static fetch). While pages wait there the crawl is not idle.
    pub fn set_rendering(&self, queue: crate::rendering::RenderQueue) {
        *self.inner.rendering.lock() = Some(queue);
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
        let queue = self.inner.rendering.lock().clone();
        if let Some(q) = queue {
            let renders = q.waiting_for(|h| h == host);
            q.forget(&renders);
            dropped += renders.len() as u64;
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

    /// The hosts with the most work queued.
    pub fn top_hosts(&self, n: usize) -> Vec<weft_frontier::HostLoad> {
        self.inner.frontier.lock().top_hosts(n)
    }

    pub fn blocked_hosts(&self) -> Vec<String> {
        self.inner.frontier.lock().blocked_hosts()
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

    /// Queues URLs whose hosts this node owns (sent by other members): not routed again, not
    /// filtered by this run's seed hosts. Returns how many are queued or were already known,
    /// once they are durable; an error means they are not (do not acknowledge them).
    pub async fn add_owned(&self, candidates: Vec<Candidate>) -> Result<u32, StorageFault> {
        let metrics = self.inner.metrics.clone();
        let accepted = blocking(|| {
            let mut accepted = 0;
            let mut frontier = self.inner.frontier.lock();
            for c in candidates {
                match frontier.push(c) {
                    Ok(PushOutcome::Queued) => {
                        inc(&metrics.urls_queued);
                        accepted += 1;
                    }
                    Ok(_) => accepted += 1,
                    Err(e) => tracing::error!("frontier push failed: {e}"),
                }
            }
            accepted
        });
        self.inner.flush().await?;
        self.inner.wake.notify_one();
        Ok(accepted)
    }

    /// Holds back the hosts `pick` selects for `grace` (see [`Frontier::hold_hosts`]).
    pub fn hold_hosts(&self, pick: impl FnMut(&str) -> bool, grace: std::time::Duration) -> usize {
        let held = blocking(|| self.inner.frontier.lock().hold_hosts(pick, std::time::Instant::now() + grace));
        self.inner.wake.notify_one();
        held
    }

    /// Ends the hand-over hold of the hosts `pick` selects from `at` on (see
    /// [`Frontier::release_hosts`]).
    pub fn release_hosts(&self, pick: impl FnMut(&str) -> bool, at: std::time::Instant) -> usize {
        let released = blocking(|| self.inner.frontier.lock().release_hosts(pick, at));
        self.inner.wake.notify_one();
        released
    }

    /// Holds the hosts this node meets from now on until `until` too (see
    /// [`Frontier::hold_new_hosts`]).
    pub fn hold_new_hosts(&self, hold: Option<(std::time::Instant, weft_frontier::HostFilter)>) {
        blocking(|| self.inner.frontier.lock().hold_new_hosts(hold));
        self.inner.wake.notify_one();
    }

    /// Marks URLs the previous owner of their host already fetched as seen (see
    /// [`Frontier::mark_done`]); returns how many, once durable.
    pub async fn mark_done(&self, urls: Vec<url::Url>) -> Result<u32, StorageFault> {
        if urls.is_empty() {
            return Ok(0);
        }
        let n = urls.len() as u32;
        blocking(|| {
            let mut frontier = self.inner.frontier.lock();
            for u in &urls {
                if let Err(e) = frontier.mark_done(u) {
                    tracing::error!("frontier: {e}");
                }
            }
        });
        self.inner.flush().await?;
        Ok(n)
    }

    /// Gives away the hosts for which `keep(host)` is false: their queued URLs, after `persist`
    /// has stored them, and the URLs done on them (see [`Frontier::hand_off`]); durable when
    /// this returns. Pages of those hosts waiting for the browser are part of their queue:
    /// they go as queued URLs (the new owner fetches and decides for itself), not as done.
    pub async fn hand_off(
        &self,
        mut keep: impl FnMut(&str) -> bool,
        persist: impl FnOnce(&weft_frontier::HandOff) -> Result<(), sled::Error>,
    ) -> weft_frontier::HandOff {
        let queue = self.inner.rendering.lock().clone();
        let renders = queue.as_ref().map(|q| q.waiting_for(|h| !keep(h))).unwrap_or_default();
        let mut handed: Option<weft_frontier::HandOff> = None;
        let result = blocking(|| {
            self.inner.frontier.lock().hand_off(keep, |given| {
                let rendering: HashSet<&str> = renders.iter().map(|(_, j)| j.url.as_str()).collect();
                let mut all = weft_frontier::HandOff {
                    queued: given.queued.clone(),
                    done: given.done.iter().filter(|u| !rendering.contains(u.as_str())).cloned().collect(),
                };
                for (_, j) in &renders {
                    let Ok(url) = Url::parse(&j.url) else { continue };
                    all.queued.push(weft_frontier::QueuedUrl {
                        host: host_key(&url),
                        url: j.url.clone(),
                        kind: UrlKind::Page,
                        depth: j.depth,
                        inlinks: 0,
                        score: 0.0,
                        attempts: 0,
                        redirects: Vec::new(),
                        discovered_unix_ms: j.at * 1000,
                    });
                }
                persist(&all)?;
                handed = Some(all);
                Ok(())
            })
        });
        if let Err(e) = result {
            tracing::error!("handing off queued URLs failed: {e}");
            return weft_frontier::HandOff::default();
        }
        let _ = self.inner.flush().await;
        if let Some(q) = queue.filter(|_| handed.is_some()) {
            q.forget(&renders);
        }
        handed.unwrap_or_default()
    }

    /// The fetch function for one render of `page` (see `render_fetch.rs`): the document is
    /// answered from `document`, the body the crawl already has (fetched once under the
    /// crawl's rules only when there is none); images, fonts, media and favicons are refused;
    /// other subresources come from the node's cache or go out under the crawl's rules
    /// (robots.txt, the host's delay and backoff, the SSRF guard, waiting at most `patience`
    /// for a host), at most `layouts.max_subresources` per render. What they refuse fails in
    /// the browser. The session tells afterwards which document the page was rendered from.
    pub fn render_fetch(
        &self,
        page: &Url,
        document: Option<crate::layouts::StoredPage>,
        patience: Duration,
    ) -> (crate::browser::Fetch, Arc<crate::render_fetch::RenderSession>) {
        use crate::browser::PageResponse;
        use crate::render_fetch::{decide, document_response, Decision, RenderSession};
        let session = Arc::new(RenderSession::new(page.clone(), document, self.inner.settings.render_subresources));
        let inner = self.inner.clone();
        let s = session.clone();
        let fetch: crate::browser::Fetch = Arc::new(move |req: crate::browser::PageRequest| {
            let (inner, session) = (inner.clone(), s.clone());
            Box::pin(async move {
                let m = &inner.metrics;
                let decision = decide(&req, &session.page);
                let url = Url::parse(&req.url).ok()?;
                match decision {
                    Decision::Refuse(why) => {
                        m.extraction("render_requests", &format!("refused_{why}"));
                        return None;
                    }
                    Decision::Document => {
                        if let Some(d) = session.document() {
                            m.extraction("render_requests", "document_from_crawl");
                            return Some(document_response(&d));
                        }
                    }
                    Decision::Subresource => {
                        if let Some(cached) = inner.subresources.lock().get(url.as_str()) {
                            m.extraction("render_requests", "subresource_cached");
                            return cached;
                        }
                        if !session.take_subresource() {
                            m.extraction("render_requests", "subresource_over_cap");
                            return None;
                        }
                    }
                }
                let empty = |status: u16| PageResponse { status, headers: Vec::new(), body: Vec::new() };
                let answer = match inner.fetch_for_browser(&url, patience).await {
                    Ok(Fetched::Body { status, content_type, body, .. }) => {
                        if decision == Decision::Document {
                            session.set_document(crate::layouts::StoredPage {
                                status,
                                content_type: content_type.clone(),
                                body: body.to_vec(),
                            });
                        }
                        Some(PageResponse {
                            status,
                            headers: content_type.map(|c| vec![("content-type".to_string(), c)]).unwrap_or_default(),
                            body: body.to_vec(),
                        })
                    }
                    Ok(Fetched::Redirect { status, location }) => Some(PageResponse {
                        status,
                        headers: vec![("location".to_string(), location)],
                        body: Vec::new(),
                    }),
                    Ok(Fetched::RateLimited { status, .. }) | Ok(Fetched::Status { status }) => Some(empty(status)),
                    Err(e) => {
                        tracing::debug!(url = %url, "browser request refused: {e}");
                        None
                    }
                };
                if decision == Decision::Subresource {
                    m.extraction("render_requests", "subresource_fetched");
                    inner.subresources.lock().put(url.as_str(), answer.clone());
                } else {
                    m.extraction("render_requests", "document_fetched");
                }
                answer
            })
        });
        (fetch, session)
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.inner.metrics.clone()
    }

    pub fn status(&self) -> Status {
        let stats = self.inner.frontier.lock().stats();
        let state = match self.inner.state.load(Ordering::Relaxed) {
            CRAWLING => "crawling",
            IDLE => "idle",
            PAUSED => "paused",
            THROTTLED => "throttled",
            _ => "stopping",
        };
        self.inner.metrics.snapshot(&stats, state)
    }

    /// Writes a seen-set snapshot and flushes everything to disk (called on a timer and at
    /// shutdown). The filter is serialized under the lock; the write runs on the blocking pool.
    pub async fn snapshot(&self) -> anyhow::Result<usize> {
        let job = blocking(|| self.inner.frontier.lock().snapshot_job())?;
        Ok(self.inner.storage.bounded("writing the seen-set snapshot", move || job.write()).await?)
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
        loop {
            if *shutdown.borrow() || *fault.borrow_and_update() {
                break;
            }
            while let Some(done) = tasks.try_join_next() {
                if let Err(e) = done {
                    tracing::error!("crawl task failed: {e}");
                }
            }
            let paused = inner.paused.load(Ordering::Acquire);
            if paused || inner.throttled.load(Ordering::Acquire) {
                inner.state.store(if paused { PAUSED } else { THROTTLED }, Ordering::Relaxed);
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
                    inner.state.store(CRAWLING, Ordering::Relaxed);
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
                    let rendering = inner.rendering.lock().as_ref().map_or(0, |q| q.pending());
                    if tasks.is_empty() && rendering == 0 {
                        inner.state.store(IDLE, Ordering::Relaxed);
                        if exit_when_idle {
                            break;
                        }
                    }
                    None
                }
                Err(e) => {
                    tracing::error!("frontier error: {e}; retrying in 1 s");
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
                _ = shutdown.changed() => {}
                _ = fault.changed() => {}
            }
        }

        inner.state.store(STOPPING, Ordering::Relaxed);
        if let Some(fault) = inner.storage.fault() {
            // Nothing more can be made durable; what was acknowledged already is.
            tasks.abort_all();
            return Err(fault.into());
        }
        let in_flight = tasks.len();
        if in_flight > 0 {
            tracing::info!(in_flight, "finishing in-flight requests");
            let drained = tokio::time::timeout(inner.settings.shutdown_grace, async {
                while tasks.join_next().await.is_some() {}
            })
            .await;
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
    /// Candidates this node should queue itself (all of them, outside a network).
    fn routed(&self, candidates: Vec<Candidate>) -> Vec<Candidate> {
        match &*self.router.lock() {
            Some(router) => router.route(candidates),
            None => candidates,
        }
    }

    /// Queues `c` here, or sends it to the member that owns its host (`None`).
    fn push(&self, c: Candidate) -> Result<Option<PushOutcome>, weft_frontier::FrontierError> {
        let Some(c) = blocking(|| self.routed(vec![c])).pop() else { return Ok(None) };
        let outcome = blocking(|| self.frontier.lock().push(c))?;
        if outcome == PushOutcome::Queued {
            inc(&self.metrics.urls_queued);
        }
        Ok(Some(outcome))
    }

    fn push_all(&self, candidates: Vec<Candidate>) {
        blocking(|| {
            let candidates = self.routed(candidates);
            let mut frontier = self.frontier.lock();
            for c in candidates {
                match frontier.push(c) {
                    Ok(PushOutcome::Queued) => inc(&self.metrics.urls_queued),
                    Ok(_) => {}
                    Err(e) => tracing::error!("frontier push failed: {e}"),
                }
            }
        })
    }

    /// Makes frontier writes durable: on the blocking pool, bounded; a failure is a storage
    /// fault (it stops the node).
    async fn flush(&self) -> Result<(), StorageFault> {
        let d = self.durability.clone();
        self.storage.bounded("flushing the frontier", move || d.flush()).await
    }

    fn may_follow(&self, url: &Url) -> bool {
        self.settings.follow_external_links || self.seed_hosts.lock().contains(&host_key(url))
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
        let result = blocking(|| self.frontier.lock().complete(lease, completion, requested, Instant::now()));
        if matches!(result, Ok(Completed::Removed | Completed::GaveUp)) {
            // The host may have changed hands while this lease was out: its new owner learns
            // that this URL is done (nothing happens for a host still this node's).
            if let (Some(router), Some(url)) = (self.router.lock().clone(), url) {
                blocking(|| router.forward_done(&url));
            }
        }
        match result {
            Ok(Completed::GaveUp) => inc(&self.metrics.gave_up),
            Ok(Completed::Requeued) if completion == Completion::Retry => inc(&self.metrics.retries),
            Ok(_) => {}
            Err(e) => tracing::error!("completing a lease failed: {e}"),
        }
        let _ = self.flush().await;
        self.wake.notify_one();
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
            return self.fetch_robots(lease, url).await;
        };
        if let Err(e) = blocking(|| self.frontier.lock().set_crawl_delay(host, rules.crawl_delay())) {
            tracing::error!("frontier error: {e}");
        }
        match rules.check(url.as_str(), now) {
            Verdict::Allowed => {}
            Verdict::Disallowed => {
                inc(&self.metrics.robots_disallowed);
                return (Completion::Done { page: false }, false);
            }
            Verdict::Unavailable { retry_in } => return (Completion::Requeue { wait: retry_in }, false),
        }

        let kind = lease.entry.kind;
        if kind == UrlKind::Page {
            let queue = self.rendering.lock().clone();
            if let Some(reason) = queue.as_ref().and_then(|q| q.host_renders(host)) {
                // Known to need the browser: it fetches the page itself, under the same rules.
                match queue.map(|q| q.push(url, lease.entry.depth, &reason, None)) {
                    Some(Ok(())) => return (Completion::Done { page: false }, false),
                    Some(Err(e)) => tracing::error!("render queue: {e}"),
                    None => {}
                }
            }
        }
        let expect = if kind == UrlKind::Sitemap { Expect::Sitemap } else { Expect::Html };
        inc(&self.metrics.requests);
        let started = Instant::now();
        let fetched = self.fetcher.fetch(url, expect).await;
        self.metrics.histograms.fetch.observe(started.elapsed().as_secs_f64());
        match fetched {
            Ok(Fetched::Body { status, content_type, content_language, body }) => {
                self.metrics.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                if kind == UrlKind::Sitemap {
                    inc(&self.metrics.sitemaps_fetched);
                    self.process_sitemap(lease, url, &body);
                    return (Completion::Done { page: false }, true);
                }
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
                self.process_page(page).await;
                (Completion::Done { page: true }, true)
            }
            Ok(Fetched::Redirect { location, .. }) => {
                inc(&self.metrics.redirects);
                self.follow_redirect(lease, url, &location);
                (Completion::Done { page: false }, true)
            }
            Ok(Fetched::RateLimited { retry_after, .. }) => {
                inc(&self.metrics.rate_limited);
                (Completion::RateLimited { retry_after }, true)
            }
            Ok(Fetched::Status { status }) => {
                // A missing speculative /sitemap.xml is normal, not an error.
                let quiet = kind == UrlKind::Sitemap && (status == 404 || status == 410);
                if !quiet {
                    let kind = if status >= 500 { "http_5xx" } else { "http_4xx" };
                    self.metrics.error(kind, url.as_str(), &format!("HTTP {status}"));
                }
                if status >= 500 {
                    (Completion::Retry, true)
                } else {
                    (Completion::Done { page: false }, true)
                }
            }
            Err(e) => {
                self.metrics.error(e.kind(), url.as_str(), &e);
                let requested = !matches!(e, FetchError::Blocked(_));
                if e.is_transient() {
                    (Completion::Retry, requested)
                } else {
                    (Completion::Done { page: false }, requested)
                }
            }
        }
    }

    /// Fetches and caches robots.txt for the lease's host; the lease itself is requeued so
    /// the page request waits its politeness delay after this one.
    async fn fetch_robots(&self, lease: &Lease, url: &Url) -> (Completion, bool) {
        let host = &lease.entry.host;
        let Ok(mut target) = url.join("/robots.txt") else {
            return (Completion::Done { page: false }, false);
        };
        let fetch = match self.download_robots(url, &mut target).await {
            Some(f) => f,
            None => return (Completion::Done { page: false }, false),
        };
        let outcome = RobotsOutcome::from_fetch(fetch);
        let stored = blocking(|| self.robots.lock().put(host, outcome, now_unix()));
        match stored {
            Ok(rules) => {
                if rules.parse_failed {
                    self.metrics.error(
                        "robots_unparseable",
                        target.as_str(),
                        &"robots.txt could not be parsed; treated as empty",
                    );
                }
                if let Err(e) = blocking(|| self.frontier.lock().set_crawl_delay(host, rules.crawl_delay())) {
                    tracing::error!("frontier error: {e}");
                }
                if self.settings.follow_sitemaps && lease.entry.kind == UrlKind::Page {
                    let mut sitemaps: Vec<String> = rules.sitemaps().to_vec();
                    sitemaps.push("/sitemap.xml".into());
                    let candidates = sitemaps
                        .iter()
                        .filter_map(|s| normalize(s, Some(url)).ok())
                        .filter(|u| self.may_follow(u))
                        .map(|u| Candidate {
                            url: u,
                            kind: UrlKind::Sitemap,
                            depth: lease.entry.depth,
                            redirects: vec![],
                        })
                        .collect();
                    self.push_all(candidates);
                }
            }
            Err(e) => tracing::error!("storing robots.txt failed: {e}"),
        }
        (Completion::Requeue { wait: Duration::ZERO }, true)
    }

    /// Downloads robots.txt from `target` (following up to five redirects); `None` when the
    /// SSRF guard blocks the host (no request was made, and none ever will be).
    async fn download_robots(&self, url: &Url, target: &mut Url) -> Option<RobotsFetch> {
        inc(&self.metrics.robots_fetched);
        let mut hops = 0;
        Some(loop {
            inc(&self.metrics.requests);
            match self.fetcher.fetch(target, Expect::Robots).await {
                Ok(Fetched::Body { status, body, .. }) => {
                    self.metrics.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                    break RobotsFetch::Response { status, body: body.to_vec() };
                }
                Ok(Fetched::Redirect { location, .. }) => {
                    hops += 1;
                    match target.join(&location) {
                        Ok(next) if hops <= 5 => *target = next,
                        _ => break RobotsFetch::TooManyRedirects,
                    }
                }
                // Google's choice, and the polite one: a rate-limited robots.txt means "not now".
                Ok(Fetched::RateLimited { status, .. }) => break RobotsFetch::Unreachable(format!("HTTP {status}")),
                Ok(Fetched::Status { status }) => break RobotsFetch::Response { status, body: Vec::new() },
                Err(FetchError::Blocked(b)) => {
                    self.metrics.error("ssrf_blocked", url.as_str(), &b);
                    return None;
                }
                Err(e) => {
                    self.metrics.error("robots_unreachable", target.as_str(), &e);
                    break RobotsFetch::Unreachable(e.to_string());
                }
            }
        })
    }

    /// One request for a browser — a page or a subresource it asked for — under the crawl's
    /// rules: robots.txt (fetched first if not cached, itself a polite request), one request at
    /// a time per host and the host's delay, Crawl-delay and backoff (waited out, up to
    /// `patience`), the SSRF guard. Redirects come back as such for the browser to follow.
    pub async fn fetch_for_browser(&self, url: &Url, patience: Duration) -> Result<Fetched, BrowserFetchError> {
        let deadline = tokio::time::Instant::now() + patience;
        let host = weft_frontier::host_key(url);
        let rules = loop {
            if let Some(rules) = blocking(|| self.robots.lock().get(&host, now_unix())) {
                break rules;
            }
            self.borrow(&host, deadline).await?;
            let mut target = url.join("/robots.txt").map_err(|_| BrowserFetchError::NoHost)?;
            let fetched = self.download_robots(url, &mut target).await;
            let returned = if fetched.is_some() { Returned::Requested } else { Returned::Unused };
            self.give_back(&host, returned);
            let fetched = fetched.ok_or(BrowserFetchError::Blocked)?;
            let stored = blocking(|| self.robots.lock().put(&host, RobotsOutcome::from_fetch(fetched), now_unix()));
            if let Ok(rules) = &stored {
                let _ = blocking(|| self.frontier.lock().set_crawl_delay(&host, rules.crawl_delay()));
            }
        };
        match rules.check(url.as_str(), now_unix()) {
            Verdict::Allowed => {}
            Verdict::Disallowed => {
                inc(&self.metrics.robots_disallowed);
                return Err(BrowserFetchError::Disallowed);
            }
            Verdict::Unavailable { .. } => return Err(BrowserFetchError::RobotsUnavailable),
        }
        self.borrow(&host, deadline).await?;
        inc(&self.metrics.requests);
        let result = self.fetcher.fetch(url, Expect::Resource).await;
        let returned = match &result {
            Ok(Fetched::RateLimited { retry_after, .. }) => Returned::RateLimited { retry_after: *retry_after },
            Err(FetchError::Blocked(_)) => Returned::Unused,
            _ => Returned::Requested,
        };
        if let Ok(Fetched::Body { body, .. }) = &result {
            self.metrics.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
        }
        self.give_back(&host, returned);
        result.map_err(|e| BrowserFetchError::Fetch(e.to_string()))
    }

    /// Returns a host taken with [`Inner::borrow`] and wakes the crawl loop: it may be waiting
    /// on this very host (`Next::Busy`), and nothing else would tell it the host is free.
    /// (Before this wake, a favicon request answered after the teacher's job had ended left
    /// the crawl asleep for good with URLs queued.)
    fn give_back(&self, host: &str, returned: Returned) {
        if let Err(e) = blocking(|| self.frontier.lock().return_host(host, returned, Instant::now())) {
            tracing::error!("frontier error: {e}");
        }
        self.wake.notify_one();
    }

    /// Waits until `host` is free and its delay has passed, then takes it.
    async fn borrow(&self, host: &str, deadline: tokio::time::Instant) -> Result<(), BrowserFetchError> {
        loop {
            let answer = blocking(|| self.frontier.lock().borrow_host(host, Instant::now()));
            let wait = match answer {
                Ok(Borrow::Granted) => return Ok(()),
                Ok(Borrow::WaitUntil(t)) => tokio::time::Instant::from_std(t),
                Ok(Borrow::Busy) => tokio::time::Instant::now() + Duration::from_millis(20),
                Err(e) => return Err(BrowserFetchError::Fetch(e.to_string())),
            };
            if wait > deadline {
                return Err(BrowserFetchError::Impatient);
            }
            tokio::time::sleep_until(wait).await;
        }
    }

    async fn process_page(&self, page: FetchedPage) {
        let depth = page.depth;
        let page_url = page.url.clone();
        let rendered = page.rendered;
        // Kept for the browser if the page goes there: it never fetches a page twice.
        let (status, content_type, body) = (page.status, page.content_type.clone(), page.body.clone());
        let pipeline = self.pipeline.clone();
        let processed = match tokio::task::spawn_blocking(move || pipeline.process(&page)).await {
            Ok(p) => p,
            Err(e) => {
                self.metrics.error("pipeline_panic", page_url.as_str(), &e);
                return;
            }
        };
        if let Some(reason) = processed.render.as_ref().filter(|_| !rendered) {
            let queue = self.rendering.lock().clone();
            let html = crate::layouts::StoredPage { status, content_type, body: body.to_vec() };
            match queue.map(|q| q.push(&page_url, depth, reason, Some(&html))) {
                Some(Ok(())) => self.metrics.extraction("render", "queued"),
                Some(Err(e)) => tracing::error!("render queue: {e}"),
                None => {}
            }
        }
        self.metrics.links_found.fetch_add(processed.links.len() as u64, Ordering::Relaxed);
        let mut candidates = Vec::new();
        for link in processed.links {
            if link.nofollow {
                continue;
            }
            // Links arrive normalized by the extractor (with the frontier's normalizer).
            if !self.may_follow(&link.url) {
                continue;
            }
            // A linked sitemap is fetched as one (parsed for its URLs, not extracted).
            let path = link.url.path().to_ascii_lowercase();
            let is_sitemap = path.contains("sitemap") && (path.ends_with(".xml") || path.ends_with(".xml.gz"));
            let kind = if is_sitemap { UrlKind::Sitemap } else { UrlKind::Page };
            candidates.push(Candidate { url: link.url, kind, depth: depth + 1, redirects: Vec::new() });
        }
        // The extractor's pagination hint: the predicted next page of a listing, even when the
        // page only links it through a script-driven "load more" button.
        if let Some(next) = processed.extracted.as_ref().and_then(|e| e.classification.hints.next_page.clone()) {
            if self.may_follow(&next) && !candidates.iter().any(|c| c.url == next) {
                candidates.push(Candidate::page(next, depth + 1));
            }
        }
        self.push_all(candidates);
    }

    fn process_sitemap(&self, lease: &Lease, url: &Url, body: &[u8]) {
        let depth = lease.entry.depth;
        // An index lists more sitemaps (same depth); a urlset lists pages (one hop further).
        let (urls, kind, depth) = match parse_sitemap(body, url) {
            Ok(Sitemap::Index(urls)) => (urls, UrlKind::Sitemap, depth),
            Ok(Sitemap::Pages(urls)) => (urls, UrlKind::Page, depth + 1),
            Err(e) => {
                self.metrics.error(e.kind(), url.as_str(), &e);
                return;
            }
        };
        let candidates = urls
            .into_iter()
            .filter_map(|u| normalize_url(u).ok())
            .filter(|u| self.may_follow(u))
            .map(|u| Candidate { url: u, kind, depth, redirects: vec![] })
            .collect();
        self.push_all(candidates);
    }

    fn follow_redirect(&self, lease: &Lease, url: &Url, location: &str) {
        let target = match normalize(location, Some(url)) {
            Ok(t) => t,
            Err(e) => {
                self.metrics.error(e.kind(), location, &e);
                return;
            }
        };
        let mut chain = lease.entry.redirects.clone();
        chain.push(url.to_string());
        if chain.iter().any(|u| u == target.as_str()) {
            self.metrics.error("redirect_loop", url.as_str(), &format!("redirect loop back to {target}"));
            return;
        }
        if chain.len() > self.settings.max_redirects as usize {
            self.metrics.error(
                "too_many_redirects",
                url.as_str(),
                &format!("more than {} redirects", self.settings.max_redirects),
            );
            return;
        }
        if !self.may_follow(&target) {
            return;
        }
        let candidate = Candidate { url: target, kind: lease.entry.kind, depth: lease.entry.depth, redirects: chain };
        if let Err(e) = self.push(candidate) {
            tracing::error!("frontier push failed: {e}");
        }
    }
}

/// Why a browser's request was not made.
#[derive(Debug, thiserror::Error)]
pub enum BrowserFetchError {
    #[error("the URL has no host")]
    NoHost,
    #[error("robots.txt disallows it")]
    Disallowed,
    #[error("robots.txt is unavailable for now")]
    RobotsUnavailable,
    #[error("the SSRF guard blocks the host")]
    Blocked,
    #[error("the host's politeness delay runs past the render's patience")]
    Impatient,
    #[error("{0}")]
    Fetch(String),
}
