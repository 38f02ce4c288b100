//! One lease from request to completion: robots.txt first, the fetch (cut at a stop if still
//! unanswered), the decision of `outcome.rs`, and the completion that makes it durable.

use super::outcome::Action;
use super::{outcome, HostedUrl, Inner};
use crate::metrics::inc;
use crate::storage::blocking;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use url::Url;
use weft_extract::parse_sitemap;
use weft_fetch::fetcher::{Expect, FetchError, Fetched};
use weft_fetch::page::FetchedPage;
use weft_frontier::{health, Candidate, Completed, Completion, Fate, Lease, UrlKind, Verdict};

impl Inner {
    pub(super) async fn process(self: Arc<Self>, lease: Lease) {
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
        if let Some(url) = url_string.clone() {
            // On the done list now (or back in the queue).
            self.processing.lock().remove(&HostedUrl { host: host.clone(), url });
        }
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
        self.control.wake();
    }

    /// Runs a request until it is answered, or `None` once a stop's grace cut requests short.
    async fn until_cut<F: std::future::Future>(&self, request: F) -> Option<F::Output> {
        let mut cut = self.control.requests_cut();
        tokio::select! {
            answered = request => Some(answered),
            _ = cut.wait_for(|cut| *cut) => None,
        }
    }

    /// Does the work of one lease; returns how it ended and whether the host was contacted.
    async fn handle(&self, lease: &Lease, url: &Url) -> (Completion, bool) {
        if let Some(ended) = self.before_request(lease, url).await {
            return ended;
        }
        let kind = lease.entry.kind;
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
        self.judge_host(lease, url, &fetched, &mut outcome);
        self.note(url.as_str(), outcome::fate(url, &fetched, &outcome.completion));
        if let Some((kind, detail)) = &outcome.error {
            self.metrics.error(kind, url.as_str(), detail);
        }
        self.act(lease, url, outcome.action.clone(), fetched).await;
        (outcome.completion, outcome.requested)
    }

    /// What may end a lease before its request: its host blocked meanwhile, a copy another
    /// member holds (indexed instead), robots.txt (fetched first, or forbidding the URL), or
    /// a host whose pages go to the browser. `None`: the request goes out.
    async fn before_request(&self, lease: &Lease, url: &Url) -> Option<(Completion, bool)> {
        let host = &lease.entry.host;
        if self.frontier.lock().is_blocked(host) {
            // Leased just before the operator blocked its host.
            return Some((Completion::Done { page: false }, false));
        }
        if lease.entry.kind == UrlKind::Page {
            // A page another member holds a fresh copy of is indexed from it, not fetched
            // again: its host changed hands when its crawler left or died, or this node lost
            // the completion in a crash. (No request: robots.txt is not needed either.)
            if let Some(route) = &self.route {
                if let Some(copy) = self.until_cut(route.copy_of(url)).await.flatten() {
                    if self.adopt(lease, url, copy).await {
                        return Some((Completion::Done { page: true }, false));
                    }
                }
            }
        }
        let now = weft_clock::now_secs();
        let cached = blocking(|| self.robots.lock().get(host, now));
        let Some(rules) = cached else {
            let cut = (Completion::Requeue { wait: Duration::ZERO }, false);
            return Some(self.until_cut(self.fetch_robots(lease, url)).await.unwrap_or(cut));
        };
        if let Err(e) = blocking(|| self.frontier.lock().set_crawl_delay(host, rules.crawl_delay())) {
            self.storage.error("frontier crawl delay", e);
        }
        match rules.check(url.as_str(), now) {
            Verdict::Allowed => {}
            Verdict::Disallowed => {
                inc(&self.metrics.robots_disallowed);
                self.note(url.as_str(), Fate::Disallowed);
                return Some((Completion::Done { page: false }, false));
            }
            Verdict::Unavailable { retry_in } => return Some((Completion::Requeue { wait: retry_in }, false)),
            Verdict::GaveUp => {
                let why = format!("robots.txt unreachable {} times in a row", weft_frontier::ROBOTS_TRIES);
                self.metrics.error("robots_gave_up", url.as_str(), &why);
                self.note(url.as_str(), Fate::Skipped { reason: "robots_unreachable".into() });
                return Some((Completion::Done { page: false }, false));
            }
        }

        if lease.entry.kind == UrlKind::Page {
            if let Some(r) = &self.renders {
                if let Some(reason) = r.host_renders(host) {
                    // Known to need the browser: it fetches the page itself, under the same rules.
                    match r.push(url, lease.entry.depth, &reason, None) {
                        Ok(()) => {
                            self.note(url.as_str(), Fate::Rendering);
                            return Some((Completion::Done { page: false }, false));
                        }
                        Err(e) => tracing::error!("render queue: {e}"),
                    }
                }
            }
        }
        None
    }

    /// What the response says of its host (see `Adapt::answer`): a host refusing the crawler
    /// pauses its queue and the URL waits with it; a host answering again gets what it
    /// refused queued again.
    fn judge_host(
        &self,
        lease: &Lease,
        url: &Url,
        fetched: &Result<Fetched, FetchError>,
        outcome: &mut outcome::Outcome,
    ) {
        let host = &lease.entry.host;
        match blocking(|| self.adapt.answer(host, url.as_str(), outcome::answer(fetched))) {
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
        match (fetched, outcome.action == Action::Nothing && outcome.error.is_some()) {
            (Ok(Fetched::Body { .. } | Fetched::NotModified), false) => self.adapt.progress(),
            (Err(e), _) => self.adapt.no_progress(Some(e.kind())),
            _ => self.adapt.no_progress(None),
        }
    }

    /// Does what the response calls for: a page processed (and a hub scheduled for revisits),
    /// a sitemap read, a redirect followed, the counters.
    async fn act(&self, lease: &Lease, url: &Url, action: Action, fetched: Result<Fetched, FetchError>) {
        let (host, kind) = (&lease.entry.host, lease.entry.kind);
        match (action, fetched) {
            (
                Action::ProcessPage,
                Ok(Fetched::Body { status, content_type, content_language, body, validators, head }),
            ) => {
                self.metrics.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
                inc(&self.metrics.pages_fetched);
                if let Some(responses) = &self.responses {
                    self.keep_response(responses, url, status, *head, &body);
                }
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
                // Removed once completed ([`Inner::process`]).
                self.processing.lock().insert(HostedUrl { host: host.clone(), url: url.to_string() });
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
    }

    /// Keeps a page's HTTP response for WARC export (`crawl.keep_responses`). A failure to keep
    /// it is counted and logged; the page is still indexed.
    fn keep_response(
        &self,
        responses: &weft_content::responses::ResponseStore,
        url: &Url,
        status: u16,
        head: weft_fetch::fetcher::HttpHead,
        body: &[u8],
    ) {
        let kept = weft_content::responses::KeptResponse {
            url: url.to_string(),
            fetched_at_ms: weft_clock::now_ms(),
            version: format!("{:?}", head.version),
            status,
            headers: weft_fetch::fetcher::header_list(&head.headers),
            request_headers: weft_fetch::fetcher::header_list(&head.request),
            body: body.to_vec(),
        };
        if let Err(e) = blocking(|| responses.keep(&kept)) {
            self.metrics.error("response_not_kept", url.as_str(), &e);
        }
    }
}
