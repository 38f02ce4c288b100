//! robots.txt: fetched as a lease of its own (so the page after it waits its host's delay),
//! cached in the frontier's database, and the sitemaps it names queued.

use super::outcome::robots_sitemaps;
use super::Inner;
use crate::metrics::inc;
use crate::storage::blocking;
use std::sync::atomic::Ordering;
use std::time::Duration;
use url::Url;
use weft_fetch::fetcher::{Expect, FetchError, Fetched};
use weft_frontier::{Completion, Lease, RobotsFetch, RobotsOutcome, UrlKind};

impl Inner {
    /// Fetches and caches robots.txt for the lease's host; the lease itself is requeued so
    /// the page request waits its politeness delay after this one.
    pub(super) async fn fetch_robots(&self, lease: &Lease, url: &Url) -> (Completion, bool) {
        let host = &lease.entry.host;
        let Ok(mut target) = url.join("/robots.txt") else {
            return (Completion::Done { page: false }, false);
        };
        let fetch = match self.download_robots(url, &mut target).await {
            Some(f) => f,
            None => return (Completion::Done { page: false }, false),
        };
        let outcome = RobotsOutcome::from_fetch(fetch);
        let stored = blocking(|| self.robots.lock().put(host, outcome, weft_clock::now_secs()));
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
                    self.storage.error("frontier crawl delay", e);
                }
                if self.settings.follow_sitemaps && lease.entry.kind == UrlKind::Page {
                    let sitemaps = robots_sitemaps(rules.sitemaps(), url, lease.entry.depth, |u| self.may_follow(u));
                    self.push_all(sitemaps);
                }
            }
            Err(e) => self.storage.error("storing robots.txt", e),
        }
        (Completion::Requeue { wait: Duration::ZERO }, true)
    }

    /// Downloads robots.txt from `target` (following up to five redirects); `None` when the
    /// SSRF guard blocks the host (no request was made, and none ever will be).
    pub(super) async fn download_robots(&self, url: &Url, target: &mut Url) -> Option<RobotsFetch> {
        inc(&self.metrics.robots_fetched);
        let mut hops = 0;
        Some(loop {
            inc(&self.metrics.requests);
            match self.fetcher.fetch(target, Expect::Robots).await {
                Ok(Fetched::Body { status, body, .. }) => {
                    self.adapt.no_progress(None);
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
                Ok(Fetched::Status { status } | Fetched::Challenge { status }) => {
                    break RobotsFetch::Response { status, body: Vec::new() }
                }
                // No validators were sent: a 304 here is the server's mistake; try again later.
                Ok(Fetched::NotModified) => break RobotsFetch::Unreachable("HTTP 304 to a plain request".into()),
                Err(e @ FetchError::Blocked(_)) => {
                    self.metrics.error(e.kind(), url.as_str(), &e);
                    return None;
                }
                Err(e) => {
                    // What the stall check reads: robots.txt is every host's first request.
                    self.adapt.no_progress(Some(e.kind()));
                    self.metrics.error("robots_unreachable", target.as_str(), &e);
                    break RobotsFetch::Unreachable(e.to_string());
                }
            }
        })
    }
}
