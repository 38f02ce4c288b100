//! Requests made for the browser — a page the teacher samples, a rendered page's
//! subresources — under the crawl's rules: the host is borrowed from the frontier like a
//! lease (one request at a time per host, its delay and backoff), robots.txt is checked
//! (fetched first if not cached), and the SSRF guard applies.

use super::Inner;
use crate::metrics::inc;
use crate::storage::blocking;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use url::Url;
use weft_fetch::fetcher::{Expect, FetchError, Fetched};
use weft_fetch::BrowserFetchError;
use weft_frontier::{Borrow, Returned, RobotsOutcome, Verdict};

impl Inner {
    /// One request for a browser — a page or a subresource it asked for — under the crawl's
    /// rules: robots.txt (fetched first if not cached, itself a polite request), one request at
    /// a time per host and the host's delay, Crawl-delay and backoff (waited out, up to
    /// `patience`), the SSRF guard. Redirects come back as such for the browser to follow.
    pub(super) async fn fetch_for_browser(&self, url: &Url, patience: Duration) -> Result<Fetched, BrowserFetchError> {
        let deadline = tokio::time::Instant::now() + patience;
        let host = weft_url::HostKey::of(url).into_string();
        let rules = loop {
            if let Some(rules) = blocking(|| self.robots.lock().get(&host, weft_clock::now_secs())) {
                break rules;
            }
            self.borrow(&host, deadline).await?;
            let mut target = url.join("/robots.txt").map_err(|_| BrowserFetchError::NoHost)?;
            let fetched = self.download_robots(url, &mut target).await;
            let returned = if fetched.is_some() { Returned::Requested } else { Returned::Unused };
            self.give_back(&host, returned);
            let fetched = fetched.ok_or(BrowserFetchError::Blocked)?;
            let stored =
                blocking(|| self.robots.lock().put(&host, RobotsOutcome::from_fetch(fetched), weft_clock::now_secs()));
            if let Ok(rules) = &stored {
                let _ = blocking(|| self.frontier.lock().set_crawl_delay(&host, rules.crawl_delay()));
            }
        };
        match rules.check(url.as_str(), weft_clock::now_secs()) {
            Verdict::Allowed => {}
            Verdict::Disallowed => {
                inc(&self.metrics.robots_disallowed);
                return Err(BrowserFetchError::Disallowed);
            }
            Verdict::Unavailable { .. } | Verdict::GaveUp => return Err(BrowserFetchError::RobotsUnavailable),
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
        result.map_err(|e| BrowserFetchError::Fetch { transient: e.is_transient(), error: e.to_string() })
    }

    /// Returns a host taken with [`Inner::borrow`] and wakes the crawl loop: it may be waiting
    /// on this very host (`Next::Busy`), and nothing else would tell it the host is free.
    /// (Before this wake, a favicon request answered after the teacher's job had ended left
    /// the crawl asleep for good with URLs queued.)
    fn give_back(&self, host: &str, returned: Returned) {
        if let Err(e) = blocking(|| self.frontier.lock().return_host(host, returned, Instant::now())) {
            self.storage.error("frontier return host", e);
        }
        self.control.wake();
    }

    /// Waits until `host` is free and its delay has passed, then takes it.
    async fn borrow(&self, host: &str, deadline: tokio::time::Instant) -> Result<(), BrowserFetchError> {
        loop {
            let answer = blocking(|| self.frontier.lock().borrow_host(host, Instant::now()));
            let wait = match answer {
                Ok(Borrow::Granted) => return Ok(()),
                Ok(Borrow::WaitUntil(t)) => tokio::time::Instant::from_std(t),
                Ok(Borrow::Busy) => tokio::time::Instant::now() + Duration::from_millis(20),
                Err(e) => return Err(BrowserFetchError::Fetch { error: e.to_string(), transient: true }),
            };
            if wait > deadline {
                return Err(BrowserFetchError::Impatient);
            }
            tokio::time::sleep_until(wait).await;
        }
    }
}
