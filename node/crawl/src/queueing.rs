//! Queueing what the crawl finds: candidates this node owns go to its frontier, the rest to
//! their hosts' owners ([`crate::Route`]); the links of a page within the caps on new hosts;
//! revisits that are due; a host's archive hints and sitemap when its queue runs dry. A
//! candidate refused outright is recorded with why.

use crate::metrics::inc;
use crate::outcome;
use crate::storage::blocking;
use crate::Inner;
use std::sync::atomic::Ordering;
use url::Url;
use weft_frontier::{Candidate, PushOutcome, UrlKind};
use weft_url::{normalize, HostKey};

impl Inner {
    /// Candidates this node should queue itself (all of them, outside a network).
    pub(crate) fn routed(&self, candidates: Vec<Candidate>) -> Vec<Candidate> {
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
    pub(crate) fn push(&self, c: Candidate) -> Result<Option<PushOutcome>, weft_frontier::FrontierError> {
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
    pub(crate) fn push_all(&self, candidates: Vec<Candidate>) -> usize {
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
    pub(crate) fn queue_revisits(&self) {
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
        self.control.wake();
    }

    /// `host`'s queue ran dry: its archive hints, and `/sitemap.xml` if never tried, are queued.
    pub(crate) fn host_ran_dry(&self, host: &str, scheme: &str) {
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

    /// Records why a candidate was not queued, when it was refused outright.
    pub(crate) fn note_refused(&self, url: &str, outcome: PushOutcome) {
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

    /// Queues the links found on `page_url` within the caps on new hosts per page and per
    /// source host; returns how many were new.
    pub(crate) fn queue_links(&self, page_url: &Url, candidates: Vec<Candidate>) -> usize {
        let source = HostKey::of(page_url);
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
        self.push_all(candidates)
    }
}
