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
}

impl CrawlSettings {
    pub fn from_config(c: &weft_config::Config) -> CrawlSettings {
        CrawlSettings {
            concurrency: c.crawl.concurrency,
            follow_sitemaps: c.crawl.follow_sitemaps,
            follow_external_links: c.crawl.follow_external_links,
            max_redirects: c.fetch.max_redirects,
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

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
}

/// Makes frontier writes durable without blocking the async runtime.
async fn flush(d: &Durability) -> anyhow::Result<()> {
    let d = d.clone();
    tokio::task::spawn_blocking(move || d.flush()).await??;
    Ok(())
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
    ) -> Crawler {
        Crawler {
            inner: Arc::new(Inner {
                durability: frontier.durability(),
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
        if let Err(e) = flush(&self.inner.durability).await {
            tracing::error!("flushing the frontier failed: {e}");
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
        let dropped = self.inner.frontier.lock().block_host(host)?;
        flush(&self.inner.durability).await?;
        Ok(dropped)
    }

    /// Lifts a block; says whether the host was blocked. Durable when this returns.
    pub async fn unblock_host(&self, host: &str) -> anyhow::Result<bool> {
        let was = self.inner.frontier.lock().unblock_host(host)?;
        flush(&self.inner.durability).await?;
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
        if let Err(e) = flush(&self.inner.durability).await {
            tracing::error!("flushing the frontier failed: {e}");
        }
    }

    /// Queues URLs whose hosts this node owns (sent by other members): not routed again, not
    /// filtered by this run's seed hosts. Returns how many are queued or were already known;
    /// durable when this returns.
    pub async fn add_owned(&self, candidates: Vec<Candidate>) -> u32 {
        let mut accepted = 0;
        {
            let mut frontier = self.inner.frontier.lock();
            for c in candidates {
                match frontier.push(c) {
                    Ok(PushOutcome::Queued) => {
                        inc(&self.inner.metrics.urls_queued);
                        accepted += 1;
                    }
                    Ok(_) => accepted += 1,
                    Err(e) => tracing::error!("frontier push failed: {e}"),
                }
            }
        }
        if let Err(e) = flush(&self.inner.durability).await {
            tracing::error!("flushing the frontier failed: {e}");
        }
        self.inner.wake.notify_one();
        accepted
    }

    /// Holds back the hosts `pick` selects for `grace` (see [`Frontier::hold_hosts`]).
    pub fn hold_hosts(&self, pick: impl FnMut(&str) -> bool, grace: std::time::Duration) -> usize {
        let held = self.inner.frontier.lock().hold_hosts(pick, std::time::Instant::now() + grace);
        self.inner.wake.notify_one();
        held
    }

    /// Marks URLs the previous owner of their host already fetched as seen (see
    /// [`Frontier::mark_done`]); returns how many; durable when this returns.
    pub async fn mark_done(&self, urls: Vec<url::Url>) -> u32 {
        if urls.is_empty() {
            return 0;
        }
        let n = urls.len() as u32;
        {
            let mut frontier = self.inner.frontier.lock();
            for u in &urls {
                if let Err(e) = frontier.mark_done(u) {
                    tracing::error!("frontier: {e}");
                }
            }
        }
        if let Err(e) = flush(&self.inner.durability).await {
            tracing::error!("flushing the frontier failed: {e}");
        }
        n
    }

    /// Gives away the hosts for which `keep(host)` is false: their queued URLs, after `persist`
    /// has stored them, and the URLs done on them (see [`Frontier::hand_off`]); durable when
    /// this returns.
    pub async fn hand_off(
        &self,
        keep: impl FnMut(&str) -> bool,
        persist: impl FnOnce(&weft_frontier::HandOff) -> Result<(), sled::Error>,
    ) -> weft_frontier::HandOff {
        let given = match self.inner.frontier.lock().hand_off(keep, persist) {
            Ok(given) => given,
            Err(e) => {
                tracing::error!("handing off queued URLs failed: {e}");
                return weft_frontier::HandOff::default();
            }
        };
        if let Err(e) = flush(&self.inner.durability).await {
            tracing::error!("flushing the frontier failed: {e}");
        }
        given
    }

    /// The fetch function for the browser pool: every request a rendered page makes goes out
    /// under the crawl's rules (robots.txt, the host's delay and backoff, the SSRF guard, waiting
    /// at most `patience` for a host); what they refuse fails in the browser. GET only.
    pub fn browser_fetch(&self, patience: Duration) -> crate::browser::Fetch {
        use crate::browser::PageResponse;
        let inner = self.inner.clone();
        Arc::new(move |req: crate::browser::PageRequest| {
            let inner = inner.clone();
            Box::pin(async move {
                if req.method != "GET" {
                    return None;
                }
                let url = Url::parse(&req.url).ok()?;
                let empty = |status: u16| PageResponse { status, headers: Vec::new(), body: Vec::new() };
                match inner.fetch_for_browser(&url, patience).await {
                    Ok(Fetched::Body { status, content_type, body, .. }) => Some(PageResponse {
                        status,
                        headers: content_type.map(|c| vec![("content-type".to_string(), c)]).unwrap_or_default(),
                        body: body.to_vec(),
                    }),
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
                }
            })
        })
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
        let job = self.inner.frontier.lock().snapshot_job()?;
        Ok(tokio::task::spawn_blocking(move || job.write()).await??)
    }

    /// Runs until `shutdown` turns true (or, with `exit_when_idle`, until nothing is left to
    /// crawl), then finishes in-flight requests within the grace period and flushes state.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>, exit_when_idle: bool) -> anyhow::Result<()> {
        let inner = &self.inner;
        let mut tasks: JoinSet<()> = JoinSet::new();
        loop {
            if *shutdown.borrow() {
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
                }
                continue;
            }
            if tasks.len() >= inner.settings.concurrency {
                tokio::select! {
                    _ = tasks.join_next() => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
            let next = inner.frontier.lock().next(Instant::now());
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
            }
        }

        inner.state.store(STOPPING, Ordering::Relaxed);
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
        let Some(c) = self.routed(vec![c]).pop() else { return Ok(None) };
        let outcome = self.frontier.lock().push(c)?;
        if outcome == PushOutcome::Queued {
            inc(&self.metrics.urls_queued);
        }
        Ok(Some(outcome))
    }

    fn push_all(&self, candidates: Vec<Candidate>) {
        let candidates = self.routed(candidates);
        let mut frontier = self.frontier.lock();
        for c in candidates {
            match frontier.push(c) {
                Ok(PushOutcome::Queued) => inc(&self.metrics.urls_queued),
                Ok(_) => {}
                Err(e) => tracing::error!("frontier push failed: {e}"),
            }
        }
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
        let result = self.frontier.lock().complete(lease, completion, requested, Instant::now());
        match result {
            Ok(Completed::GaveUp) => inc(&self.metrics.gave_up),
            Ok(Completed::Requeued) if completion == Completion::Retry => inc(&self.metrics.retries),
            Ok(_) => {}
            Err(e) => tracing::error!("completing a lease failed: {e}"),
        }
        if let Err(e) = flush(&self.durability).await {
            tracing::error!("flushing the frontier failed: {e}");
        }
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
        let cached = self.robots.lock().get(host, now);
        let Some(rules) = cached else {
            return self.fetch_robots(lease, url).await;
        };
        if let Err(e) = self.frontier.lock().set_crawl_delay(host, rules.crawl_delay()) {
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
                match queue.map(|q| q.push(url, lease.entry.depth, &reason)) {
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
        let stored = self.robots.lock().put(host, outcome, now_unix());
        match stored {
            Ok(rules) => {
                if rules.parse_failed {
                    self.metrics.error(
                        "robots_unparseable",
                        target.as_str(),
                        &"robots.txt could not be parsed; treated as empty",
                    );
                }
                if let Err(e) = self.frontier.lock().set_crawl_delay(host, rules.crawl_delay()) {
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
            if let Some(rules) = self.robots.lock().get(&host, now_unix()) {
                break rules;
            }
            self.borrow(&host, deadline).await?;
            let mut target = url.join("/robots.txt").map_err(|_| BrowserFetchError::NoHost)?;
            let fetched = self.download_robots(url, &mut target).await;
            let returned = if fetched.is_some() { Returned::Requested } else { Returned::Unused };
            let _ = self.frontier.lock().return_host(&host, returned, Instant::now());
            let fetched = fetched.ok_or(BrowserFetchError::Blocked)?;
            let stored = self.robots.lock().put(&host, RobotsOutcome::from_fetch(fetched), now_unix());
            if let Ok(rules) = &stored {
                let _ = self.frontier.lock().set_crawl_delay(&host, rules.crawl_delay());
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
        let _ = self.frontier.lock().return_host(&host, returned, Instant::now());
        result.map_err(|e| BrowserFetchError::Fetch(e.to_string()))
    }

    /// Waits until `host` is free and its delay has passed, then takes it.
    async fn borrow(&self, host: &str, deadline: tokio::time::Instant) -> Result<(), BrowserFetchError> {
        loop {
            let answer = self.frontier.lock().borrow_host(host, Instant::now());
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
            match queue.map(|q| q.push(&page_url, depth, reason)) {
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
