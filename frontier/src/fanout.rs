//! How many other hosts one host's pages may bring into the crawl.
//!
//! Every new host costs the node memory (its queue, robots record and politeness state) and a
//! robots.txt request, and a host discovered is a host crawled. A page is already held to a
//! hundred other hosts by the crawler (`MAX_HOSTS_PER_PAGE` in the node); without a bound per *source*, a
//! site of a thousand generated pages, each linking a hundred made-up hosts, would still bring
//! in a hundred thousand — the adversarial review's 100,017 hosts and 1.9 GB, spread over
//! pages. Real sites link a few hundred distinct hosts at most: a source may bring
//! [`MAX_HOSTS_PER_SOURCE`] per [`WINDOW`]; links to hosts it already brought (or to the
//! page's own host) always pass.
//!
//! A source is a *site* ([`HostKey::site`](crate::host::HostKey::site), the registrable
//! domain), not a host: subdomains cost nothing to make, so a source counted per host would
//! let one domain spread its pages over a thousand subdomains and bring a thousand hosts from
//! each. Its own other subdomains count toward its cap like any other host.

use crate::host::HostKey;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Distinct other hosts one source site's links may bring in per [`WINDOW`], by default
/// (`crawl.max_hosts_per_source`).
pub const MAX_HOSTS_PER_SOURCE: usize = 1000;
/// How long a source host's count lasts before it starts again.
pub const WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Source sites tracked at once; past it the one counted longest ago is forgotten.
pub const MAX_SOURCES: usize = 4096;
/// Host hashes kept over all sources; past it the source counted longest ago is forgotten.
/// Bounds the memory to 1–2 MiB (a hash is 4 bytes in its source's sorted list, ~6 with
/// the lists' spare room): sources × hosts alone, 4,096 × 1,000, would let it reach tens of
/// MiB on a box meant to have little (issue 37). A source forgotten starts its count again,
/// which only a crawl with hundreds of other sources at their cap at once can bring about.
pub const MAX_HASHES: usize = 1 << 18;

/// The hosts each source site has brought in this window (as hashes).
#[derive(Debug)]
pub struct Fanout {
    max: usize,
    sources: HashMap<String, Source>,
    /// Hashes held over all sources.
    hashes: usize,
}

impl Default for Fanout {
    fn default() -> Self {
        Fanout::new(MAX_HOSTS_PER_SOURCE)
    }
}

#[derive(Debug)]
struct Source {
    since: Instant,
    /// The hosts brought, as 32-bit hashes, sorted. A source holds at most a thousand or so,
    /// so two of them share a hash about once in ten thousand sources' windows, which lets one
    /// host more through; a hash set of 64-bit hashes took four times the memory (a crawl of
    /// 500 sites linking each other filled the bound to 6 MiB with it; as lists the same
    /// hashes take about 1 MiB).
    targets: Vec<u32>,
}

impl Source {
    fn starting(now: Instant) -> Source {
        Source { since: now, targets: Vec::new() }
    }
}

fn hash(host: &str) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    host.hash(&mut h);
    h.finish() as u32
}

impl Fanout {
    /// A source site may bring `max` other hosts per [`WINDOW`].
    pub fn new(max: usize) -> Fanout {
        Fanout { max, sources: HashMap::new(), hashes: 0 }
    }

    /// Whether a link on a page of host `page` to host `target` may be followed at `now`: yes
    /// to the page's own host, to a host the page's site already brought in this window, or
    /// while that site has brought fewer than its maximum.
    pub fn admit(&mut self, page: &HostKey, target: &HostKey, now: Instant) -> bool {
        if page == target {
            return true;
        }
        let (source, target) = (page.site(), hash(target.as_str()));
        if let Some(s) = self.sources.get_mut(source) {
            if now.saturating_duration_since(s.since) >= WINDOW {
                self.hashes -= s.targets.len();
                *s = Source::starting(now);
            }
            if s.targets.binary_search(&target).is_ok() {
                return true;
            }
            if s.targets.len() >= self.max {
                return false;
            }
        }
        // A hash to keep: room is made first.
        while self.hashes >= MAX_HASHES || (!self.sources.contains_key(source) && self.sources.len() >= MAX_SOURCES) {
            if !self.forget_oldest(source) {
                break;
            }
        }
        let s = self.sources.entry(source.to_string()).or_insert_with(|| Source::starting(now));
        if let Err(at) = s.targets.binary_search(&target) {
            s.targets.insert(at, target);
            self.hashes += 1;
        }
        true
    }

    /// Forgets the source counted longest ago other than `keep`; false when there is none.
    fn forget_oldest(&mut self, keep: &str) -> bool {
        let oldest = self
            .sources
            .iter()
            .filter(|(k, _)| k.as_str() != keep)
            .min_by_key(|(_, s)| s.since)
            .map(|(k, _)| k.clone());
        match oldest.and_then(|k| self.sources.remove(&k)) {
            Some(s) => {
                self.hashes -= s.targets.len();
                true
            }
            None => false,
        }
    }

    /// Source sites tracked now.
    pub fn sources(&self) -> usize {
        self.sources.len()
    }

    /// Host hashes held now, over all sources.
    pub fn hashes(&self) -> usize {
        self.hashes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(host: &str) -> HostKey {
        HostKey::from_stored(host)
    }

    #[test]
    fn a_source_brings_a_bounded_number_of_hosts_per_window() {
        let mut f = Fanout::default();
        let t0 = Instant::now();
        let brought = (0..5000).filter(|i| f.admit(&k("spam.test"), &k(&format!("h{i}.test")), t0)).count();
        assert_eq!(brought, MAX_HOSTS_PER_SOURCE);
        // Hosts it already brought, and its own, still pass; another source is not affected.
        assert!(f.admit(&k("spam.test"), &k("h7.test"), t0));
        assert!(f.admit(&k("spam.test"), &k("spam.test"), t0));
        assert!(f.admit(&k("news.test"), &k("h4000.test"), t0));
        // A new window starts the count again.
        let later = t0 + WINDOW;
        assert!(f.admit(&k("spam.test"), &k("h4000.test"), later));
    }

    #[test]
    fn a_site_spread_over_subdomains_is_one_source() {
        let mut f = Fanout::default();
        let t0 = Instant::now();
        // A thousand subdomains of one domain, each linking ten made-up hosts: one cap in all.
        let brought = (0..1000)
            .flat_map(|s| (0..10).map(move |i| (format!("s{s}.spam.example.co.uk:8080"), format!("h{s}-{i}.test"))))
            .filter(|(page, target)| f.admit(&k(page), &k(target), t0))
            .count();
        assert_eq!(brought, MAX_HOSTS_PER_SOURCE);
        assert_eq!(f.sources(), 1);
        // Its own subdomains are hosts like any other; the page's own host always passes.
        assert!(!f.admit(&k("www.spam.example.co.uk"), &k("new.spam.example.co.uk"), t0));
        assert!(f.admit(&k("www.spam.example.co.uk"), &k("www.spam.example.co.uk"), t0));
        // Blogs under a public suffix are sites of their own.
        assert!(f.admit(&k("alice.github.io"), &k("h1.test"), t0));
        assert_eq!(f.sources(), 2);
    }

    #[test]
    fn the_sources_tracked_are_bounded_and_the_oldest_is_forgotten() {
        let mut f = Fanout::default();
        let t0 = Instant::now();
        for i in 0..MAX_SOURCES + 10 {
            assert!(f.admit(&k(&format!("s{i}.test")), &k("x.test"), t0 + Duration::from_millis(i as u64)));
        }
        assert_eq!(f.sources(), MAX_SOURCES);
    }

    #[test]
    fn the_hashes_held_are_bounded_over_all_sources_and_the_oldest_source_goes_first() {
        let mut f = Fanout::default();
        let t0 = Instant::now();
        // 300 sources at their cap would hold 300,000 hashes: past the bound, the sources
        // counted longest ago are forgotten.
        for s in 0..300u64 {
            let at = t0 + Duration::from_millis(s);
            let brought = (0..MAX_HOSTS_PER_SOURCE + 5)
                .filter(|i| f.admit(&k(&format!("s{s}.test")), &k(&format!("h{i}.test")), at));
            assert_eq!(brought.count(), MAX_HOSTS_PER_SOURCE, "source {s} is held to its cap");
            assert!(f.hashes() <= MAX_HASHES);
        }
        assert!(f.hashes() > MAX_HASHES - MAX_HOSTS_PER_SOURCE, "a whole source is forgotten at a time");
        assert_eq!(f.hashes(), f.sources.values().map(|s| s.targets.len()).sum::<usize>());
        assert!(!f.sources.contains_key("s0.test"), "the oldest source was forgotten");
        assert!(f.sources.contains_key("s299.test"));
        // The newest sources are still held to their cap.
        assert!(!f.admit(&k("s299.test"), &k("new.test"), t0));
        assert!(f.admit(&k("s299.test"), &k("h3.test"), t0));
    }

    #[test]
    fn a_new_window_gives_back_its_hashes() {
        let mut f = Fanout::default();
        let t0 = Instant::now();
        for i in 0..10 {
            assert!(f.admit(&k("a.test"), &k(&format!("h{i}.test")), t0));
        }
        assert_eq!(f.hashes(), 10);
        assert!(f.admit(&k("a.test"), &k("h0.test"), t0 + WINDOW));
        assert_eq!(f.hashes(), 1);
    }
}
