//! A fetched page, processed: the pipeline extracts and indexes it (on the blocking pool),
//! a page that needs JavaScript goes to the browser, its links are queued, and what it teaches
//! about its host (URL templates, scheme changes, archives, hubs) is learned. A redirect is
//! followed the same way, as a link of the page that answered with it.

use crate::metrics::{inc, Event, Render};
use crate::outcome;
use crate::storage::blocking;
use crate::Inner;
use std::sync::atomic::Ordering;
use url::Url;
use weft_extract::PageType;
use weft_fetch::page::FetchedPage;
use weft_frontier::{Lease, UrlKind};
use weft_url::HostKey;

impl Inner {
    pub(crate) fn may_follow(&self, url: &Url) -> bool {
        self.settings.follow_external_links || self.seed_hosts.lock().contains(&HostKey::of(url))
    }

    pub(crate) async fn process_page(&self, page: FetchedPage) -> PageLearned {
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
        learned.queued = self.queue_links(&page_url, candidates);
        learned
    }

    /// Counts the page's URL template (a scheme change it completes is logged and counted),
    /// remembers its archive links; says whether it is a hub to revisit.
    pub(crate) fn learn_from_page(&self, url: &Url, e: &weft_extract::Extracted, rendered: bool) -> bool {
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

    pub(crate) fn follow_redirect(&self, lease: &Lease, url: &Url, location: &str) {
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
pub(crate) struct PageLearned {
    /// Links newly queued.
    pub queued: usize,
    /// A hub of a known template: revisit it.
    pub hub: bool,
}
