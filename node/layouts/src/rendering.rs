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
//! A page whose host failed — its document answered a 5xx, a 429 or nothing, during the render
//! and in the fetch after — is not indexed as the error the browser showed, nor dropped: it
//! goes back to the queue's end to wait [`RENDER_RETRY_SECS`] for its host, and is given up
//! (counted, with the reason in the error log) only after the last wait or for a failure that
//! is for good (a 4xx, robots.txt, the SSRF guard), as the crawl gives up a static page.
//!
//! The crawl loop reaches the queue through [`weft_fetch::Renders`], which [`RenderQueue`]
//! implements: this module depends on the crawl, not the other way round.

use super::browser::{BrowserPool, LazyPool};
use super::render_fetch::{DocumentFailure, RenderFetcher};
use super::store::{LayoutStore, PageRole, RenderJob, StoredPage};
use crate::crawl::CrawlHandle;
use crate::events::{Event, Render, Tally};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::sync::Notify;
use url::Url;
use weft_db::blocking;
use weft_fetch::page::{FetchedPage, RenderReason};
use weft_fetch::{Renders, WaitingPage};
use weft_url::HostKey;

/// The queue of pages for the browser (in the layout store).
#[derive(Clone)]
pub struct RenderQueue {
    store: LayoutStore,
    wake: Arc<Notify>,
    /// Queue keys claimed: being rendered (or about to be), or being given away with their
    /// host.
    in_flight: Arc<parking_lot::Mutex<HashSet<Vec<u8>>>>,
    /// Closed when the node leaves: the renderer takes no further page.
    closed: Arc<AtomicBool>,
}

impl RenderQueue {
    pub fn new(store: LayoutStore) -> RenderQueue {
        RenderQueue { store, wake: Arc::new(Notify::new()), in_flight: Arc::default(), closed: Arc::default() }
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
        let at = weft_clock::now_secs();
        if let Some(p) = page {
            blocking(|| self.store.keep_page(PageRole::Render, url.as_str(), p))?;
        }
        blocking(|| {
            self.store.queue_render(&RenderJob {
                url: url.to_string(),
                depth,
                reason: reason.to_string(),
                at,
                tries: 0,
                not_before: 0,
            })
        })?;
        self.wake.notify_one();
        Ok(())
    }
}

impl RenderQueue {
    /// The oldest page waiting for the browser that nobody has claimed; claimed for the
    /// caller when `claim` (see [`Renders::waiting`] for the other claimant).
    fn next_unclaimed(&self, claim: bool) -> Option<(Vec<u8>, RenderJob)> {
        let mut claimed = self.in_flight.lock();
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let now = weft_clock::now_secs();
        let mut after: Option<Vec<u8>> = None;
        let found = loop {
            match blocking(|| self.store.next_render(after.as_deref())) {
                // Claimed, or a retry still waiting for its host.
                Ok(Some((k, j))) if claimed.contains(&k) || j.not_before > now => after = Some(k),
                Ok(found) => break found,
                Err(e) => {
                    tracing::error!("render queue: {e}");
                    break None;
                }
            }
        };
        if claim {
            if let Some((k, _)) = &found {
                claimed.insert(k.clone());
            }
        }
        found
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
        // An expired decision lets one page through statically to be re-checked.
        let now = weft_clock::now_secs();
        let decided = blocking(|| self.store.rendering_due(host, now)).ok().flatten();
        decided.map(|h| RenderReason::HostRenders(h.reason))
    }

    /// Pages waiting for the browser (not being rendered now) whose host `pick` selects: they
    /// belong to their host's queue, and go with it when the host changes hands. They are
    /// claimed under the same lock the renderer claims its next page with, so a page is either
    /// rendered here or given away, never both; [`Renders::forget`] or [`Renders::release`]
    /// ends the claim.
    fn waiting(&self, pick: &mut dyn FnMut(&str) -> bool) -> Vec<WaitingPage> {
        let mut claimed = self.in_flight.lock();
        let all = blocking(|| self.store.renders()).unwrap_or_default();
        let pages: Vec<WaitingPage> = all
            .into_iter()
            .filter(|(k, _)| !claimed.contains(k))
            .filter_map(|(key, j)| {
                let url = Url::parse(&j.url).ok()?;
                pick(HostKey::of(&url).as_str()).then_some(WaitingPage { key, url, depth: j.depth, queued_unix: j.at })
            })
            .collect();
        claimed.extend(pages.iter().map(|p| p.key.clone()));
        pages
    }

    fn held_page(&self, page: &WaitingPage) -> Option<FetchedPage> {
        let held = blocking(|| self.store.page(PageRole::Render, page.url.as_str())).ok().flatten()?;
        Some(FetchedPage {
            url: page.url.clone(),
            status: held.status,
            content_type: held.content_type,
            content_language: None,
            body: held.body.into(),
            depth: page.depth,
            fetched_at: SystemTime::now(),
            // Not to be queued for the browser again: it is indexed as fetched.
            rendered: true,
        })
    }

    fn forget(&self, pages: &[WaitingPage]) {
        for p in pages {
            let _ = blocking(|| self.store.render_done(&p.key));
            let _ = blocking(|| self.store.drop_page(PageRole::Render, p.url.as_str()));
        }
        self.release(pages);
    }

    fn release(&self, pages: &[WaitingPage]) {
        let mut claimed = self.in_flight.lock();
        for p in pages {
            claimed.remove(&p.key);
        }
    }

    /// Pages queued or being rendered, and teacher jobs (which may queue renders).
    fn pending(&self) -> usize {
        blocking(|| self.store.pending_work())
    }

    fn rendering(&self) -> usize {
        blocking(|| self.store.render_jobs())
    }

    fn hosts_rendering(&self) -> Vec<String> {
        let claimed = self.in_flight.lock().clone();
        if claimed.is_empty() {
            return Vec::new();
        }
        let all = blocking(|| self.store.renders()).unwrap_or_default();
        let mut hosts: Vec<String> = all
            .into_iter()
            .filter(|(k, _)| claimed.contains(k))
            .filter_map(|(_, j)| Url::parse(&j.url).ok().map(|u| HostKey::of(&u).into_string()))
            .collect();
        hosts.sort();
        hosts.dedup();
        hosts
    }

    fn close(&self) {
        // Under the claim lock: a page the renderer is claiming right now is claimed before
        // the queue closes, or not at all.
        let _claimed = self.in_flight.lock();
        self.closed.store(true, Ordering::Release);
    }
}

/// Renders queued pages until the task is dropped, `pool.instances` at a time.
pub async fn run(
    queue: RenderQueue,
    crawler: CrawlHandle,
    fetcher: RenderFetcher,
    pool: Arc<LazyPool>,
    patience: Duration,
    metrics: Arc<dyn Tally>,
) {
    let limit = Arc::new(tokio::sync::Semaphore::new(0));
    let mut started = false;
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        while tasks.try_join_next().is_some() {}
        if queue.next_unclaimed(false).is_none() {
            tokio::select! {
                _ = queue.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
            continue;
        }
        crawler.until_running().await;
        let browser = pool.get().await;
        if !started {
            let n = browser.as_ref().map_or(1, |b| b.instances());
            limit.add_permits(n);
            started = true;
        }
        let permit = limit.clone().acquire_owned().await.expect("never closed");
        // Claimed only now, with a browser free: while waiting for one, the page may have gone
        // with its host to another member (and its HTML with it).
        let Some((key, job)) = queue.next_unclaimed(true) else { continue };
        let (queue, crawler, fetcher, metrics) = (queue.clone(), crawler.clone(), fetcher.clone(), metrics.clone());
        tasks.spawn(async move {
            let failed = render_one(&queue, &crawler, &fetcher, browser, &job, patience, metrics.as_ref()).await;
            let again = failed.as_ref().and_then(|f| retry_after(job.tries, f));
            match (failed, again) {
                (Some(f), Some(wait)) => {
                    metrics.count_event(Event::Render(Render::Retried));
                    tracing::info!(url = %job.url, tries = job.tries + 1, wait_secs = wait.as_secs(), "render failed ({}): queued again", f.reason);
                    let not_before = weft_clock::now_secs() + wait.as_secs();
                    let again = RenderJob { tries: job.tries + 1, not_before, ..job.clone() };
                    if let Err(e) = blocking(|| queue.store.retry_render(&key, &again)) {
                        tracing::error!("render queue: {e}");
                    }
                }
                (failed, _) => {
                    if let Some(f) = failed {
                        metrics.count_event(Event::Render(Render::GaveUp));
                        let why = format!("{} (after {} tries)", f.reason, job.tries + 1);
                        metrics.error("render_gave_up", &job.url, &why);
                    }
                    if let Err(e) = blocking(|| queue.store.render_done(&key)) {
                        tracing::error!("render queue: {e}");
                    }
                    let _ = blocking(|| queue.store.drop_page(PageRole::Render, &job.url));
                }
            }
            queue.in_flight.lock().remove(&key);
            crawler.wake();
            drop(permit);
        });
    }
}

/// How long a page whose host failed waits before its next try, by the tries so far; after
/// the last, the page is given up.
pub const RENDER_RETRY_SECS: [u64; 3] = [30, 120, 480];

/// When to try a page again after `failure`, having tried it `tries + 1` times: `None` when
/// the failure is for good or the tries are spent.
pub fn retry_after(tries: u32, failure: &DocumentFailure) -> Option<Duration> {
    let secs = RENDER_RETRY_SECS.get(tries as usize)?;
    failure.transient.then(|| Duration::from_secs(*secs))
}

/// Renders one page and sends it down the pipeline — or, if the browser fails on it, the HTML
/// the crawl holds (fetched once more only if there is none). Returns why the page's HTML could
/// not be had when it could not (the host answered an error or nothing): nothing was indexed.
async fn render_one(
    queue: &RenderQueue,
    crawler: &CrawlHandle,
    fetcher: &RenderFetcher,
    browser: Option<Arc<BrowserPool>>,
    job: &RenderJob,
    patience: Duration,
    metrics: &dyn Tally,
) -> Option<DocumentFailure> {
    let Ok(url) = Url::parse(&job.url) else { return None };
    let host = HostKey::of(&url);
    let document = blocking(|| queue.store.page(PageRole::Render, url.as_str())).ok().flatten();
    let (fetch, session) = fetcher.for_page(&url, document, patience);
    let rendered = match &browser {
        Some(b) => b.render(url.as_str(), fetch).await.map_err(|e| e.to_string()),
        None => Err("no browser".to_string()),
    };
    // The browser shows whatever its document request was answered with: an error status, or
    // nothing. That is not the page.
    let rendered = match (rendered, session.document(), session.document_failed()) {
        (Ok(_), None, Some(f)) => return Some(f),
        (rendered, _, _) => rendered,
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
            // document request) already has, fetched again only if there is none — and not
            // again at once when the browser's own request for it just failed.
            let static_page = match (session.document(), session.document_failed()) {
                (Some(d), _) => Ok(weft_fetch::fetcher::Fetched::Body {
                    status: d.status,
                    content_type: d.content_type,
                    content_language: None,
                    body: d.body.into(),
                    validators: Default::default(),
                    head: Default::default(),
                }),
                (None, Some(f)) => return Some(f),
                (None, None) => crawler.fetch_for_browser(&url, patience).await,
            };
            match static_page {
                Ok(weft_fetch::fetcher::Fetched::Body { status, content_type, content_language, body, .. }) => {
                    FetchedPage {
                        url: url.clone(),
                        status,
                        content_type,
                        content_language,
                        body,
                        depth: job.depth,
                        fetched_at: SystemTime::now(),
                        rendered: true,
                    }
                }
                other => {
                    let f = DocumentFailure::of(&other)?;
                    metrics.error("render_fallback_failed", url.as_str(), &f.reason);
                    return Some(f);
                }
            }
        }
    };
    crawler.process_rendered(page).await;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue of pages for the browser; `held` says whether this node fetched their HTML.
    fn queue_with(urls: &[&str], held: bool) -> (tempfile::TempDir, RenderQueue) {
        let dir = tempfile::tempdir().unwrap();
        let queue = RenderQueue::new(LayoutStore::open_dir(dir.path(), 5).unwrap());
        for u in urls {
            let page = StoredPage { status: 200, content_type: None, body: b"<p>held</p>".to_vec() };
            let page = held.then_some(&page);
            queue.push_stored(&Url::parse(u).unwrap(), 1, &RenderReason::LayoutNeedsJs, page).unwrap();
        }
        (dir, queue)
    }

    #[test]
    fn a_host_failing_for_now_is_tried_again_later_and_a_refusal_is_final() {
        use weft_fetch::fetcher::Fetched;
        use weft_fetch::BrowserFetchError;
        let status = |s: u16| DocumentFailure::of(&Ok(Fetched::Status { status: s })).unwrap();
        assert!(status(503).transient && !status(404).transient);
        let timeout = Err(BrowserFetchError::Fetch { error: "timed out".into(), transient: true });
        assert!(DocumentFailure::of(&timeout).unwrap().transient);
        assert!(!DocumentFailure::of(&Err(BrowserFetchError::Disallowed)).unwrap().transient);
        let body = Ok(Fetched::Body {
            status: 200,
            content_type: None,
            content_language: None,
            body: Default::default(),
            validators: Default::default(),
            head: Default::default(),
        });
        assert_eq!(DocumentFailure::of(&body), None);
        let moved = Ok(Fetched::Redirect { status: 301, location: "/b".into() });
        assert_eq!(DocumentFailure::of(&moved), None, "the browser follows it and renders where it lands");
        let waits: Vec<_> = (0..4).map(|t| retry_after(t, &status(503)).map(|d| d.as_secs())).collect();
        assert_eq!(waits, [Some(30), Some(120), Some(480), None], "three retries, then given up");
        assert_eq!(retry_after(0, &status(404)), None);
    }

    #[test]
    fn a_retry_waits_for_its_time_while_later_pages_go_first() {
        let (_dir, q) = queue_with(&["http://a.test/1", "http://b.test/1"], false);
        let (k, job) = q.next_unclaimed(true).unwrap();
        let later = RenderJob { tries: 1, not_before: weft_clock::now_secs() + 60, ..job.clone() };
        q.store.retry_render(&k, &later).unwrap();
        q.in_flight.lock().remove(&k);
        let (k2, next) = q.next_unclaimed(true).unwrap();
        assert_eq!(next.url, "http://b.test/1");
        assert!(q.next_unclaimed(true).is_none(), "a.test's page waits for its time");
        q.store.render_done(&k2).unwrap();
        let (k3, _) = q.store.next_render(None).unwrap().unwrap();
        let due = RenderJob { not_before: weft_clock::now_secs(), ..later };
        q.store.retry_render(&k3, &due).unwrap();
        assert_eq!(q.next_unclaimed(true).unwrap().1.url, "http://a.test/1", "its time came");
    }

    #[test]
    fn a_page_given_away_is_not_rendered_and_a_page_being_rendered_is_not_given_away() {
        let (_dir, q) = queue_with(&["http://a.test/1", "http://b.test/1"], false);
        // The renderer claims a.test's page first.
        let (_, job) = q.next_unclaimed(true).unwrap();
        assert_eq!(job.url, "http://a.test/1");
        // A hand-off of every host: only b.test's page is waiting, and it is now claimed.
        let given = q.waiting(&mut |_| true);
        assert_eq!(given.iter().map(|w| w.url.as_str()).collect::<Vec<_>>(), ["http://b.test/1"]);
        assert!(q.next_unclaimed(true).is_none(), "the renderer cannot take a page being handed over");
        // The hand-off failed: the page stays and may be rendered.
        q.release(&given);
        assert_eq!(q.next_unclaimed(false).unwrap().1.url, "http://b.test/1");
        // It succeeded this time: gone.
        let given = q.waiting(&mut |h| h == "b.test");
        q.forget(&given);
        assert!(q.next_unclaimed(false).is_none());
    }

    #[test]
    fn a_page_fetched_here_is_handed_over_with_its_html_and_one_never_fetched_without() {
        let (_dir, q) = queue_with(&["http://a.test/1"], true);
        q.push_stored(&Url::parse("http://b.test/1").unwrap(), 2, &RenderReason::LayoutNeedsJs, None).unwrap();
        let given = q.waiting(&mut |_| true);
        assert_eq!(given.len(), 2);
        let a = q.held_page(&given[0]).expect("a.test's HTML is held");
        assert_eq!(
            (a.url.as_str(), a.depth, &a.body[..], a.rendered),
            ("http://a.test/1", 1, &b"<p>held</p>"[..], true)
        );
        assert!(q.held_page(&given[1]).is_none(), "b.test's page was never fetched");
    }

    #[test]
    fn a_closed_queue_gives_the_renderer_nothing_and_its_pages_go_with_their_hosts() {
        let (_dir, q) = queue_with(&["http://a.test/1", "http://b.test/1"], true);
        let (_, first) = q.next_unclaimed(true).unwrap();
        assert_eq!(q.rendering(), 2, "queued and being rendered alike");
        q.close();
        assert!(q.next_unclaimed(true).is_none() && q.next_unclaimed(false).is_none());
        let given = q.waiting(&mut |_| true);
        assert_eq!(given.iter().map(|w| w.url.as_str()).collect::<Vec<_>>(), ["http://b.test/1"]);
        q.forget(&given);
        assert_eq!(q.rendering(), 1, "{} is still being rendered", first.url);
    }
}
