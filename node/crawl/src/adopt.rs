//! Pages the network already holds: a page another member holds a fresh copy of is indexed
//! from that copy instead of fetched (its host changed hands when its crawler left or died, or
//! this node lost the completion in a crash), and the pages of a crawler gone for good are
//! queued again so that their hosts' new owners do that (see `node/src/replicas.rs`).

use super::{outcome, Crawler, Inner};
use crate::metrics::inc;
use url::Url;
use weft_frontier::{Candidate, Lease};
use weft_url::normalize;

impl Crawler {
    /// Queues pages again whose crawler is gone for good (their copies survive on this node):
    /// each goes to its host's owner, which indexes it from a copy instead of fetching it and
    /// follows its links — what the departed crawler had queued of those hosts is found again.
    /// A page its owner has done already is not queued twice. Returns how many were queued
    /// here.
    pub async fn rediscover(&self, urls: &[String]) -> usize {
        let candidates: Vec<Candidate> =
            urls.iter().filter_map(|u| normalize(u, None).ok()).map(|u| Candidate::page(u, 1)).collect();
        let queued = self.inner.push_all(candidates);
        let _ = self.inner.flush().await;
        self.inner.control.wake();
        queued
    }
}

impl Inner {
    /// Indexes the page at `url` from a copy another member held instead of fetching it, and
    /// follows its links as if it had been fetched; `false` when it could not be indexed (the
    /// page is fetched then).
    pub(super) async fn adopt(&self, lease: &Lease, url: &Url, copy: weft_fetch::page::HeldCopy) -> bool {
        let pipeline = self.pipeline.clone();
        let (fetched_at, holder) = (copy.document.fetched_at, copy.holder.clone());
        let links = copy.links.clone();
        let indexed = tokio::task::spawn_blocking(move || pipeline.adopt(&copy)).await.unwrap_or(false);
        if !indexed {
            return false;
        }
        inc(&self.metrics.pages_adopted);
        self.note(url.as_str(), weft_frontier::outcomes::Fate::Adopted { holder, fetched_at });
        let depth = lease.entry.depth;
        let candidates = links
            .into_iter()
            .filter(|u| self.may_follow(u))
            .map(|u| {
                let kind = outcome::link_kind(&u);
                Candidate::of(u, kind, depth + 1)
            })
            .collect();
        self.queue_links(url, candidates);
        true
    }
}
