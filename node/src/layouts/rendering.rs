//! The JavaScript tier: pages that need a browser to show their text are rendered in the pool
//! and go down the pipeline in their rendered form.
//!
//! The worker decides (see `worker.rs`) and the crawl loop queues: a page whose static
//! extraction asked for rendering, and — once a host is known to need the browser — every page
//! of that host, without a static fetch first. The queue is in sled ([`LayoutStore`]), and an
//! entry leaves it only after the rendered page's extraction and links are stored, so a crash
//! renders it again rather than losing it. Every request the page makes goes through the
//! crawler ([`RenderFetcher`]): robots.txt, the host's delay, the SSRF guard. A page the browser
//! cannot render is indexed from the HTML already held (fetched statically once more only if
//! there is none).
//!
//! The crawl loop reaches the queue through [`crate::Renders`], which [`RenderQueue`]
//! implements: this module depends on the crawl, not the other way round.

use super::browser::{BrowserPool, LazyPool};
use super::render_fetch::RenderFetcher;
use super::store::{LayoutStore, PageRole, RenderJob, StoredPage};
use crate::crawl::{Crawler, Renders, WaitingPage};
use crate::metrics::{Event, Metrics, Render};
use crate::page::{FetchedPage, RenderReason};
use crate::storage::blocking;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use url::Url;
use weft_frontier::HostKey;

/// The queue of pages for the browser (in the layout store).
#[derive(Clone)]
pub struct RenderQueue {
    store: LayoutStore,
    wake: Arc<Notify>,
    in_flight: Arc<parking_lot::Mutex<HashSet<Vec<u8>>>>,
}

impl RenderQueue {
    pub fn new(store: LayoutStore) -> RenderQueue {
        RenderQueue { store, wake: Arc::new(Notify::new()), in_flight: Arc::default() }
    }

    /// Queues a page for the browser, with its HTML when the crawl already fetched it (the
    /// browser is answered from it rather than fetching the page again).
    pub fn push_stored(
        &self,
        url: &Url,
        depth: u32,
        reason: &RenderReason,
        page: Option<&StoredPage>,
    ) -> Result<(), super::LayoutError> {
        let at = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if let Some(p) = page {
            blocking(|| self.store.keep_page(PageRole::Render, url.as_str(), p))?;
        }
        blocking(|| {
            self.store.queue_render(&RenderJob { url: url.to_string(), depth, reason: reason.to_string(), at })
        })?;
        self.wake.notify_one();
        Ok(())
    }
}

impl Renders for RenderQueue {
    fn push(&self, url: &Url, depth: u32, reason: &RenderReason, fetched: Option<&FetchedPage>) -> anyhow::Result<()> {
        let stored = fetched.map(|p| StoredPage {
            status: p.status,
            content_type: p.content_type.clone(),
            body: p.body.to_vec(),
        });
        Ok(self.push_stored(url, depth, reason, stored.as_ref())?)
    }

    fn host_renders(&self, host: &str) -> Option<RenderReason> {
        let decided = blocking(|| self.store.host_rendering(host)).ok().flatten();
        decided.filter(|h| h.render).map(|h| RenderReason::HostRenders(h.reason))
    }

    /// Pages waiting for the browser (not being rendered now) whose host `pick` selects: they
    /// belong to their host's queue, and go with it when the host changes hands.
    fn waiting(&self, pick: &mut dyn FnMut(&str) -> bool) -> Vec<WaitingPage> {
        let all = blocking(|| self.store.renders()).unwrap_or_default();
        let in_flight = self.in_flight.lock().clone();
        all.into_iter()
            .filter(|(k, _)| !in_flight.contains(k))
            .filter_map(|(key, j)| {
                let url = Url::parse(&j.url).ok()?;
                pick(HostKey::of(&url).as_str()).then_some(WaitingPage { key, url, depth: j.depth, queued_unix: j.at })
            })
            .collect()
    }

    fn forget(&self, pages: &[WaitingPage]) {
        for p in pages {
            let _ = blocking(|| self.store.render_done(&p.key));
            let _ = blocking(|| self.store.drop_page(PageRole::Render, p.url.as_str()));
        }
    }

    /// Pages queued or being rendered, and teacher jobs (which may queue renders).
    fn pending(&self) -> usize {
        blocking(|| self.store.pending_work())
    }
}

/// Renders queued pages until the task is dropped, `pool.instances` at a time.
pub async fn run(
    queue: RenderQueue,
    crawler: Crawler,
    fetcher: RenderFetcher,
    pool: Arc<LazyPool>,
    patience: Duration,
    metrics: Arc<Metrics>,
) {
    let limit = Arc::new(tokio::sync::Semaphore::new(0));
    let mut started = false;
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        let next = {
            let in_flight = queue.in_flight.lock();
            let mut after: Option<Vec<u8>> = None;
            loop {
                match blocking(|| queue.store.next_render(after.as_deref())) {
                    Ok(Some((k, _))) if in_flight.contains(&k) => after = Some(k),
                    Ok(found) => break found,
                    Err(e) => {
                        tracing::error!("render queue: {e}");
                        break None;
                    }
                }
            }
        };
        let Some((key, job)) = next else {
            tokio::select! {
                _ = queue.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
            continue;
        };
        crawler.until_running().await;
        let browser = pool.get().await;
        if !started {
            let n = browser.as_ref().map_or(1, |b| b.instances());
            limit.add_permits(n);
            started = true;
        }
        let permit = limit.clone().acquire_owned().await.expect("never closed");
        queue.in_flight.lock().insert(key.clone());
        let (queue, crawler, fetcher, metrics) = (queue.clone(), crawler.clone(), fetcher.clone(), metrics.clone());
        tasks.spawn(async move {
            render_one(&queue, &crawler, &fetcher, browser, &job, patience, &metrics).await;
            if let Err(e) = blocking(|| queue.store.render_done(&key)) {
                tracing::error!("render queue: {e}");
            }
            let _ = blocking(|| queue.store.drop_page(PageRole::Render, &job.url));
            queue.in_flight.lock().remove(&key);
            crawler.wake();
            drop(permit);
        });
    }
}

async fn render_one(
    queue: &RenderQueue,
    crawler: &Crawler,
    fetcher: &RenderFetcher,
    browser: Option<Arc<BrowserPool>>,
    job: &RenderJob,
    patience: Duration,
    metrics: &Metrics,
) {
    let Ok(url) = Url::parse(&job.url) else { return };
    let host = HostKey::of(&url);
    let document = blocking(|| queue.store.page(PageRole::Render, url.as_str())).ok().flatten();
    let (fetch, session) = fetcher.for_page(&url, document, patience);
    let rendered = match &browser {
        Some(b) => b.render(url.as_str(), fetch).await.map_err(|e| e.to_string()),
        None => Err("no browser".to_string()),
    };
    let page = match rendered {
        Ok(r) => {
            metrics.count_event(Event::Render(Render::Rendered));
            let _ = blocking(|| queue.store.rendered(host.as_str()));
            tracing::debug!(url = %url, took_ms = r.took.as_millis() as u64, reason = job.reason, "rendered");
            FetchedPage {
                url: url.clone(),
                status: 200,
                content_type: Some("text/html; charset=utf-8".into()),
                content_language: None,
                body: r.html.into_bytes().into(),
                depth: job.depth,
                fetched_at: SystemTime::now(),
                rendered: true,
            }
        }
        Err(e) => {
            metrics.error("render_failed", url.as_str(), &e);
            // Indexed as it is rather than lost: from the HTML the crawl (or the browser's
            // document request) already has, fetched again only if there is none.
            let static_page = match session.document() {
                Some(d) => Ok(crate::fetcher::Fetched::Body {
                    status: d.status,
                    content_type: d.content_type,
                    content_language: None,
                    body: d.body.into(),
                }),
                None => crawler.fetch_for_browser(&url, patience).await.map_err(|e| e.to_string()),
            };
            match static_page {
                Ok(crate::fetcher::Fetched::Body { status, content_type, content_language, body }) => FetchedPage {
                    url: url.clone(),
                    status,
                    content_type,
                    content_language,
                    body,
                    depth: job.depth,
                    fetched_at: SystemTime::now(),
                    rendered: true,
                },
                Ok(_) => return,
                Err(e) => {
                    metrics.error("render_fallback_failed", url.as_str(), &e);
                    return;
                }
            }
        }
    };
    crawler.process_rendered(page).await;
}
