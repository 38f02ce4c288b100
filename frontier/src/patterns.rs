//! URL pattern tracking (seed 002): which URL templates each host's pages follow, how many
//! pages each had, since when, of which page type — and when a host moves its pages to a new
//! URL scheme.
//!
//! Templates come from the extractor's classifier (`/{yyyy}/{mm}/{slug}`); this module only
//! counts them, so it stays pure and cheap. A scheme change is found two ways:
//!
//! - **by counts**: a new template passes [`NEW_MIN`] pages while an established one of the same
//!   page type ([`OLD_MIN`] pages or more, seen before the new one) stopped appearing — none of
//!   the new template's last [`NEW_MIN`] pages came after the old one's last page;
//! - **by redirects**: [`REDIRECT_MIN`] redirects on the host from URLs of one template to URLs
//!   of another (`/blog/{slug}` → `/articles/{yyyy}/{slug}`), learned from the redirect chains
//!   the crawler follows anyway.
//!
//! Each (old, new) pair is reported once, with its evidence. The tracker keeps at most
//! [`MAX_TEMPLATES`] templates per host (the least recently seen go first): a site with a
//! template per page cannot make it grow without bound.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};

/// Pages of a new template before a change by counts is considered.
pub const NEW_MIN: u64 = 10;
/// Pages an old template must have had to count as established.
pub const OLD_MIN: u64 = 5;
/// Redirects from one template to another before they say the scheme moved.
pub const REDIRECT_MIN: u64 = 3;
/// Templates remembered per host.
pub const MAX_TEMPLATES: usize = 64;
/// Example URLs kept per template and per redirect mapping.
const SAMPLES: usize = 3;

/// One URL template of a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    pub template: String,
    /// Pages fetched whose URL has this template.
    pub count: u64,
    /// Seconds since the Unix epoch.
    pub first_seen: u64,
    pub last_seen: u64,
    /// Pages by page type (`article`, `hub`, `other`).
    pub page_types: BTreeMap<String, u64>,
    pub samples: Vec<String>,
    /// The host's page counter at this template's first and last page.
    first_seq: u64,
    last_seq: u64,
    /// The host's page counter at each of the last [`NEW_MIN`] pages.
    recent: VecDeque<u64>,
}

impl Pattern {
    /// The page type most of its pages had.
    pub fn page_type(&self) -> Option<&str> {
        self.page_types.iter().max_by_key(|(_, n)| **n).map(|(t, _)| t.as_str())
    }
}

/// Redirects seen from URLs of one template to URLs of another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RedirectMap {
    pub from: String,
    pub to: String,
    pub count: u64,
    /// (from URL, to URL)
    pub examples: Vec<(String, String)>,
}

/// How a scheme change was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detected {
    /// A new template took over while the old one stopped appearing.
    Counts,
    /// Old URLs redirect to new ones.
    Redirects,
}

/// A host moved its pages from one URL template to another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemeChange {
    pub from: String,
    pub to: String,
    pub detected: Detected,
    /// The facts behind it (counts, example URLs, redirects).
    pub evidence: Vec<String>,
    /// One sentence for the operator.
    pub reason: String,
    /// An example URL of the new scheme.
    pub url: String,
    /// Seconds since the Unix epoch.
    pub at: u64,
}

/// What is known of one host's URLs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostPatterns {
    /// Pages observed on the host.
    seq: u64,
    pub templates: Vec<Pattern>,
    pub redirects: Vec<RedirectMap>,
    /// (from, to) pairs already reported.
    reported: Vec<(String, String)>,
}

impl HostPatterns {
    /// Counts a fetched page of `template` (of `page_type`) at `url`, seen at `now`; returns
    /// the scheme change it completes, if any.
    pub fn observe(&mut self, template: &str, page_type: &str, url: &str, now: u64) -> Option<SchemeChange> {
        self.seq += 1;
        let seq = self.seq;
        let i = match self.templates.iter().position(|p| p.template == template) {
            Some(i) => i,
            None => {
                if self.templates.len() >= MAX_TEMPLATES {
                    // The least recently seen goes.
                    if let Some(old) = (0..self.templates.len()).min_by_key(|&i| self.templates[i].last_seq) {
                        self.templates.swap_remove(old);
                    }
                }
                self.templates.push(Pattern {
                    template: template.to_string(),
                    count: 0,
                    first_seen: now,
                    last_seen: now,
                    page_types: BTreeMap::new(),
                    samples: Vec::new(),
                    first_seq: seq,
                    last_seq: seq,
                    recent: VecDeque::new(),
                });
                self.templates.len() - 1
            }
        };
        let p = &mut self.templates[i];
        p.count += 1;
        p.last_seen = now;
        p.last_seq = seq;
        *p.page_types.entry(page_type.to_string()).or_insert(0) += 1;
        if p.samples.len() < SAMPLES && !p.samples.iter().any(|s| s == url) {
            p.samples.push(url.to_string());
        }
        p.recent.push_back(seq);
        while p.recent.len() > NEW_MIN as usize {
            p.recent.pop_front();
        }
        if p.count < NEW_MIN {
            return None;
        }
        let new = self.templates[i].clone();
        let window_start = *new.recent.front()?;
        let old = self
            .templates
            .iter()
            .filter(|o| {
                o.template != new.template
                    && o.count >= OLD_MIN
                    && o.first_seq < new.first_seq
                    && o.last_seq < window_start
                    && o.page_type() == new.page_type()
                    && !self.reported.contains(&(o.template.clone(), new.template.clone()))
            })
            // The one the new template most plausibly replaced: the last to stop.
            .max_by_key(|o| o.last_seq)?
            .clone();
        self.reported.push((old.template.clone(), new.template.clone()));
        let kind = new.page_type().unwrap_or("other").to_string();
        Some(SchemeChange {
            evidence: vec![
                format!("{} pages of {} since {}", new.count, new.template, new.samples.first().map_or("", String::as_str)),
                format!(
                    "{} pages of {} before; none among the host's last {} {kind} pages",
                    old.count, old.template, NEW_MIN
                ),
                format!("e.g. {} → {}", old.samples.first().map_or("", String::as_str), new.samples.first().map_or("", String::as_str)),
            ],
            reason: format!(
                "The host's {kind} pages moved from {} to {}: the new scheme has {} pages and the old one stopped appearing.",
                old.template, new.template, new.count
            ),
            url: url.to_string(),
            from: old.template,
            to: new.template,
            detected: Detected::Counts,
            at: now,
        })
    }

    /// Counts a redirect from `from_url` (template `from`) to `to_url` (template `to`) on this
    /// host; returns the scheme change it completes, if any.
    pub fn redirected(&mut self, from: &str, to: &str, from_url: &str, to_url: &str, now: u64) -> Option<SchemeChange> {
        if from == to {
            return None;
        }
        let i = match self.redirects.iter().position(|r| r.from == from && r.to == to) {
            Some(i) => i,
            None => {
                if self.redirects.len() >= MAX_TEMPLATES {
                    self.redirects.remove(0);
                }
                self.redirects.push(RedirectMap { from: from.into(), to: to.into(), count: 0, examples: Vec::new() });
                self.redirects.len() - 1
            }
        };
        let r = &mut self.redirects[i];
        r.count += 1;
        if r.examples.len() < SAMPLES {
            r.examples.push((from_url.to_string(), to_url.to_string()));
        }
        let pair = (from.to_string(), to.to_string());
        if r.count < REDIRECT_MIN || self.reported.contains(&pair) {
            return None;
        }
        let r = r.clone();
        self.reported.push(pair);
        let mut evidence = vec![format!("{} redirects from {} to {}", r.count, r.from, r.to)];
        evidence.extend(r.examples.iter().map(|(a, b)| format!("{a} → {b}")));
        Some(SchemeChange {
            reason: format!(
                "The host moved its pages from {} to {}: old URLs redirect to the new scheme ({} seen).",
                r.from, r.to, r.count
            ),
            evidence,
            url: to_url.to_string(),
            from: r.from,
            to: r.to,
            detected: Detected::Redirects,
            at: now,
        })
    }

    /// The template's usual page type, once it has had two pages (seed 002's
    /// `match_to_page_type`: what a URL of a known template will probably be).
    pub fn page_type_of(&self, template: &str) -> Option<&str> {
        self.templates.iter().find(|p| p.template == template && p.count >= 2).and_then(Pattern::page_type)
    }

    /// Pages observed on the host.
    pub fn pages(&self) -> u64 {
        self.seq
    }
}

/// Every host's URL patterns and its URL-scheme changes, in the table `url_patterns` of the
/// frontier's store ([`crate::Tables`]; a sled tree of that name until sled's memory was
/// measured to grow with every write, and this is written every page):
/// `p` + host → [`HostPatterns`]; `c` + host + 0 + time (s) + sequence → [`SchemeChange`]
/// (values JSON). Safe to share: updates of one host's record are serialized.
#[derive(Clone)]
pub struct Patterns {
    tree: weft_db::Table,
    ids: std::sync::Arc<weft_db::Ids>,
    lock: std::sync::Arc<std::sync::Mutex<()>>,
}

/// The table's name (and the sled tree's, in an earlier release).
const TABLE: &str = "url_patterns";

fn pkey(host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + host.len());
    k.push(b'p');
    k.extend_from_slice(host.as_bytes());
    k
}

fn cprefix(host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(2 + host.len());
    k.push(b'c');
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k
}

impl Patterns {
    /// The URL patterns kept in `tables`, an earlier release's sled tree of them (in `legacy`)
    /// moved in first, once.
    pub fn open(tables: &crate::Tables, legacy: &sled::Db) -> Result<Patterns, crate::FrontierError> {
        let tree = tables.table(TABLE);
        let moved = tree.move_from_sled(legacy, TABLE)?;
        if moved > 0 {
            tracing::info!(moved, "URL patterns moved from the sled database to the frontier's store");
        }
        Ok(Patterns { tree, ids: std::sync::Arc::new(weft_db::Ids::new(0)), lock: Default::default() })
    }

    /// What is known of `host`'s URLs.
    pub fn host(&self, host: &str) -> fjall::Result<Option<HostPatterns>> {
        Ok(self.tree.get(pkey(host))?.and_then(|v| serde_json::from_slice(&v).ok()))
    }

    fn update(
        &self,
        host: &str,
        f: impl FnOnce(&mut HostPatterns) -> Option<SchemeChange>,
    ) -> fjall::Result<Option<SchemeChange>> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut h = self.host(host)?.unwrap_or_default();
        let change = f(&mut h);
        self.tree.insert(pkey(host), serde_json::to_vec(&h).expect("patterns serialize"))?;
        if let Some(c) = &change {
            let mut k = cprefix(host);
            k.extend_from_slice(&c.at.to_be_bytes());
            k.extend_from_slice(&self.ids.next().to_be_bytes());
            self.tree.insert(k, serde_json::to_vec(c).expect("change serializes"))?;
        }
        Ok(change)
    }

    /// Counts a fetched page (see [`HostPatterns::observe`]); a scheme change it completes is
    /// recorded in the host's change log and returned.
    pub fn observe(
        &self,
        host: &str,
        template: &str,
        page_type: &str,
        url: &str,
        now: u64,
    ) -> fjall::Result<Option<SchemeChange>> {
        self.update(host, |h| h.observe(template, page_type, url, now))
    }

    /// Counts a redirect on `host` (see [`HostPatterns::redirected`]).
    pub fn redirected(
        &self,
        host: &str,
        from: (&str, &str),
        to: (&str, &str),
        now: u64,
    ) -> fjall::Result<Option<SchemeChange>> {
        if from.0 == to.0 {
            return Ok(None);
        }
        self.update(host, |h| h.redirected(from.0, to.0, from.1, to.1, now))
    }

    /// The URL-scheme changes recorded for `host`, oldest first.
    pub fn changes(&self, host: &str) -> fjall::Result<Vec<SchemeChange>> {
        let mut out = Vec::new();
        for item in self.tree.scan_prefix(cprefix(host)) {
            let (_, v) = item?;
            if let Ok(c) = serde_json::from_slice(&v) {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Drops the changes recorded before `before` (seconds since the Unix epoch); returns how
    /// many.
    pub fn prune_changes(&self, before: u64) -> fjall::Result<usize> {
        let mut n = 0;
        for item in self.tree.scan_prefix(b"c") {
            let (k, v) = item?;
            let old = serde_json::from_slice::<SchemeChange>(&v).map_or(true, |c| c.at < before);
            if old {
                self.tree.remove(k)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Forgets what was learned of `host`'s URLs (the operator asked to re-learn it); the
    /// change log stays.
    pub fn forget(&self, host: &str) -> fjall::Result<bool> {
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        Ok(self.tree.remove(pkey(host))?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(h: &mut HostPatterns, template: &str, kind: &str, n: usize, tag: &str) -> Vec<SchemeChange> {
        (0..n)
            .filter_map(|i| h.observe(template, kind, &format!("https://a.test/{tag}/{i}"), 1000 + i as u64))
            .collect()
    }

    #[test]
    fn a_new_template_taking_over_from_one_that_stopped_is_a_scheme_change() {
        let mut h = HostPatterns::default();
        assert!(feed(&mut h, "/blog/{slug}", "article", 12, "blog").is_empty());
        assert!(feed(&mut h, "/", "hub", 1, "hub").is_empty());
        let changes = feed(&mut h, "/articles/{yyyy}/{mm}/{slug}", "article", 12, "new");
        assert_eq!(changes.len(), 1, "reported once: {changes:?}");
        let c = &changes[0];
        assert_eq!(
            (c.from.as_str(), c.to.as_str(), c.detected),
            ("/blog/{slug}", "/articles/{yyyy}/{mm}/{slug}", Detected::Counts)
        );
        assert_eq!(c.url, "https://a.test/new/9", "the tenth page of the new scheme completes it");
        assert!(c.evidence.iter().any(|e| e.contains("12 pages of /blog/{slug}")), "{:?}", c.evidence);
        let p = h.templates.iter().find(|p| p.template == "/blog/{slug}").unwrap();
        assert_eq!((p.count, p.page_type(), p.first_seen, p.last_seen), (12, Some("article"), 1000, 1011));
        assert_eq!(h.page_type_of("/"), None, "one page says nothing yet");
        assert_eq!(h.page_type_of("/blog/{slug}"), Some("article"));
    }

    #[test]
    fn two_schemes_in_use_side_by_side_are_no_change() {
        let mut h = HostPatterns::default();
        feed(&mut h, "/news/{slug}", "article", 8, "news");
        for i in 0..40 {
            // Interleaved: the old scheme keeps appearing.
            let (t, tag) = if i % 3 == 0 { ("/news/{slug}", "news") } else { ("/video/{id}", "video") };
            assert!(h.observe(t, "article", &format!("https://a.test/{tag}/x{i}"), 2000).is_none());
        }
    }

    #[test]
    fn a_new_template_of_another_page_type_replaces_nothing() {
        let mut h = HostPatterns::default();
        feed(&mut h, "/blog/{slug}", "article", 12, "blog");
        assert!(feed(&mut h, "/tag/{name}", "hub", 12, "tag").is_empty());
    }

    #[test]
    fn redirects_from_one_template_to_another_say_the_scheme_moved() {
        let mut h = HostPatterns::default();
        let (from, to) = ("/blog/{slug}", "/articles/{yyyy}/{slug}");
        assert!(h.redirected(from, to, "https://a.test/blog/a-b-c", "https://a.test/articles/2025/a-b-c", 5).is_none());
        assert!(h.redirected(from, to, "https://a.test/blog/d-e-f", "https://a.test/articles/2025/d-e-f", 6).is_none());
        assert!(h.redirected("/x", "/x", "https://a.test/x", "https://a.test/x/", 6).is_none(), "same template");
        let c = h.redirected(from, to, "https://a.test/blog/g-h-i", "https://a.test/articles/2025/g-h-i", 7).unwrap();
        assert_eq!(c.detected, Detected::Redirects);
        assert!(c.evidence.iter().any(|e| e == "https://a.test/blog/a-b-c → https://a.test/articles/2025/a-b-c"));
        assert!(h.redirected(from, to, "https://a.test/blog/j", "https://a.test/articles/2025/j", 8).is_none(), "once");
        // The counts agree later: the pair is not reported again.
        feed(&mut h, from, "article", 6, "blog");
        assert!(feed(&mut h, to, "article", 12, "articles").is_empty());
    }

    #[test]
    fn templates_per_host_are_bounded() {
        let mut h = HostPatterns::default();
        for i in 0..(MAX_TEMPLATES + 50) {
            h.observe(&format!("/t{i}"), "other", "https://a.test/", i as u64);
        }
        assert_eq!(h.templates.len(), MAX_TEMPLATES);
        assert!(h.templates.iter().any(|p| p.template == format!("/t{}", MAX_TEMPLATES + 49)), "the newest stays");
    }

    #[test]
    fn the_store_records_each_change_once_in_the_hosts_change_log_and_prunes_old_ones() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = crate::open_db(&dir.path().join("db"), 1 << 20).unwrap();
        let tables = crate::Tables::open_dir(&dir.path().join("frontier")).unwrap();
        let p = Patterns::open(&tables, &legacy).unwrap();
        for i in 0..3 {
            let (a, b) = (format!("https://a.test/blog/x-y-{i}"), format!("https://a.test/articles/2025/x-y-{i}"));
            p.redirected("a.test", ("/blog/{slug}", &a), ("/articles/{yyyy}/{slug}", &b), 100 + i).unwrap();
        }
        p.observe("a.test", "/", "hub", "https://a.test/", 200).unwrap();
        let changes = p.changes("a.test").unwrap();
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].at, 102);
        assert!(p.changes("b.test").unwrap().is_empty());
        assert_eq!(p.host("a.test").unwrap().unwrap().pages(), 1);
        assert_eq!(p.prune_changes(102).unwrap(), 0);
        assert_eq!(p.prune_changes(103).unwrap(), 1);
        assert!(p.forget("a.test").unwrap());
        assert!(p.host("a.test").unwrap().is_none());
    }
}
