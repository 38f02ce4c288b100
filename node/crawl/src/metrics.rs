//! Counters and histograms of what the node did, updated where the work happens. Their two
//! views — `/status` (JSON) and `/metrics` (Prometheus) — are rendered from one snapshot in
//! `status.rs`, so they can never disagree.

use parking_lot::Mutex;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;
pub use weft_layouts::events::{Layout, Render, RenderRequest, Teacher};

/// Latency distributions, observed where the work happens (Prometheus histograms; seconds).
#[derive(Debug, Clone)]
pub struct Histograms {
    /// One HTTP fetch by the crawl loop, response body included.
    pub fetch: Histogram,
    /// The crawl loop waiting because every host with work is inside its politeness delay.
    pub politeness_wait: Histogram,
    /// One indexing batch: dedup, chunking, embedding (most of it) and the commit.
    pub index_batch: Histogram,
    /// Embedding one query.
    pub embed_query: Histogram,
    /// A search through the API, by scope.
    pub search_local: Histogram,
    pub search_network: Histogram,
}

impl Default for Histograms {
    fn default() -> Self {
        let h = |start: f64, factor: f64, n: u16| Histogram::new(exponential_buckets(start, factor, n));
        Histograms {
            fetch: h(0.005, 2.0, 14),
            politeness_wait: h(0.01, 2.0, 14),
            index_batch: h(0.01, 2.0, 14),
            embed_query: h(0.001, 2.0, 12),
            search_local: h(0.001, 2.0, 14),
            search_network: h(0.001, 2.0, 14),
        }
    }
}

impl Histograms {
    pub fn register(&self, registry: &mut prometheus_client::registry::Registry) {
        let all: [(&str, &str, &Histogram); 6] = [
            ("weft_fetch_seconds", "One HTTP fetch of the crawl loop, body included", &self.fetch),
            (
                "weft_politeness_wait_seconds",
                "Crawl-loop waits because every host with work is inside its politeness delay",
                &self.politeness_wait,
            ),
            (
                "weft_index_batch_seconds",
                "One indexing batch: dedup, chunking, embedding and commit",
                &self.index_batch,
            ),
            ("weft_embed_query_seconds", "Embedding one search query", &self.embed_query),
            ("weft_search_local_seconds", "A local search through the API", &self.search_local),
            ("weft_search_network_seconds", "A network search through the API", &self.search_network),
        ];
        for (name, help, h) in all {
            registry.register(name, help, h.clone());
        }
    }
}

/// How many samples of the counters are kept for the dashboard's charts (an hour at 5 s).
pub const HISTORY_SAMPLES: usize = 720;

/// The counters at one moment, for charts over time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub unix_ms: u64,
    pub pages_fetched: u64,
    pub requests: u64,
    pub errors: u64,
    pub bytes: u64,
}

/// Live counters, updated by the crawl loop.
pub struct Metrics {
    pub histograms: Histograms,
    /// Set by the memory watch.
    pub memory_bytes: AtomicU64,
    pub memory_target_bytes: AtomicU64,
    history: Mutex<std::collections::VecDeque<Sample>>,
    started: Instant,
    pub pages_fetched: AtomicU64,
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
    pub robots_fetched: AtomicU64,
    pub sitemaps_fetched: AtomicU64,
    pub redirects: AtomicU64,
    pub links_found: AtomicU64,
    pub urls_queued: AtomicU64,
    pub robots_disallowed: AtomicU64,
    pub rate_limited: AtomicU64,
    pub retries: AtomicU64,
    pub gave_up: AtomicU64,
    /// Revisits of hub pages queued (the freshness loop).
    pub revisits: AtomicU64,
    /// Conditional requests answered 304 Not Modified.
    pub not_modified: AtomicU64,
    /// URL-scheme changes recorded.
    pub scheme_changes: AtomicU64,
    /// URLs queued from archive hints and sitemap probes when a host's queue ran dry.
    pub found_when_idle: AtomicU64,
    /// Times a host was found refusing the crawler and paused.
    pub hosts_blocked: AtomicU64,
    /// Pages indexed from a copy another member held instead of being fetched (their host
    /// changed hands, or this node lost their completion in a crash).
    pub pages_adopted: AtomicU64,
    /// What became of the URLs other members sent.
    pub received: crate::received::ReceivedCounts,
    errors: Mutex<BTreeMap<&'static str, u64>>,
    warned: Mutex<HashSet<&'static str>>,
    extraction: Mutex<BTreeMap<String, u64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            histograms: Histograms::default(),
            memory_bytes: AtomicU64::new(0),
            memory_target_bytes: AtomicU64::new(0),
            history: Mutex::new(std::collections::VecDeque::with_capacity(HISTORY_SAMPLES)),
            started: Instant::now(),
            pages_fetched: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            robots_fetched: AtomicU64::new(0),
            sitemaps_fetched: AtomicU64::new(0),
            redirects: AtomicU64::new(0),
            links_found: AtomicU64::new(0),
            urls_queued: AtomicU64::new(0),
            robots_disallowed: AtomicU64::new(0),
            rate_limited: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            gave_up: AtomicU64::new(0),
            pages_adopted: AtomicU64::new(0),
            revisits: AtomicU64::new(0),
            not_modified: AtomicU64::new(0),
            scheme_changes: AtomicU64::new(0),
            found_when_idle: AtomicU64::new(0),
            hosts_blocked: AtomicU64::new(0),
            received: Default::default(),
            errors: Mutex::new(BTreeMap::new()),
            warned: Mutex::new(HashSet::new()),
            extraction: Mutex::new(BTreeMap::new()),
        }
    }
}

pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

impl Metrics {
    /// Counts an error of `kind` and logs it: the first of each kind at WARN, the rest at
    /// DEBUG, so a hostile site cannot flood the operator's log.
    pub fn error(&self, kind: &'static str, url: &str, detail: &dyn std::fmt::Display) {
        *self.errors.lock().entry(kind).or_insert(0) += 1;
        if self.warned.lock().insert(kind) {
            tracing::warn!(kind, url, "{detail} (further `{kind}` errors are logged at debug level)");
        } else {
            tracing::debug!(kind, url, "{detail}");
        }
    }

    /// Counts an error of `kind` without logging it: for rejections that are routine on the
    /// open web (a `mailto:` link is not news).
    pub fn count(&self, kind: &'static str) {
        self.count_n(kind, 1);
    }

    pub fn count_n(&self, kind: &'static str, n: u64) {
        *self.errors.lock().entry(kind).or_insert(0) += n;
    }

    /// Counts an extraction or layout outcome (`/status` `extraction`, `/metrics`
    /// `weft_extraction_total{kind}`).
    pub fn count_event(&self, event: Event) {
        *self.extraction.lock().entry(event.key()).or_insert(0) += 1;
    }

    /// Records the counters now (called every few seconds by the node).
    pub fn sample(&self) {
        let unix_ms = weft_clock::now_ms();
        let sample = Sample {
            unix_ms,
            pages_fetched: self.pages_fetched.load(Relaxed),
            requests: self.requests.load(Relaxed),
            errors: self.errors.lock().values().sum(),
            bytes: self.bytes.load(Relaxed),
        };
        let mut h = self.history.lock();
        if h.len() == HISTORY_SAMPLES {
            h.pop_front();
        }
        h.push_back(sample);
    }

    /// The samples kept, oldest first.
    pub fn history(&self) -> Vec<Sample> {
        self.history.lock().iter().copied().collect()
    }

    /// Time since the node started.
    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Errors counted, by kind.
    pub fn errors(&self) -> BTreeMap<&'static str, u64> {
        self.errors.lock().clone()
    }

    /// Extraction outcomes counted, by `group:value`.
    pub fn extractions(&self) -> BTreeMap<String, u64> {
        self.extraction.lock().clone()
    }
}

/// An outcome the extraction stages count, keyed `group:value` in `/status` `extraction`. One
/// variant per group and one per value: a name is checked by the compiler, not discovered as
/// a counter nobody reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The page type the extractor decided (`article`, `hub`, `other`).
    PageType(&'static str),
    /// What the static HTML says about the need for JavaScript.
    Js(&'static str),
    /// An extractor warning, by kind.
    Warning(&'static str),
    Layout(Layout),
    Render(Render),
    RenderRequest(RenderRequest),
    Teacher(Teacher),
    SecondOpinion(SecondOpinion),
}

impl From<weft_layouts::Event> for Event {
    fn from(e: weft_layouts::Event) -> Event {
        match e {
            weft_layouts::Event::Layout(l) => Event::Layout(l),
            weft_layouts::Event::Render(r) => Event::Render(r),
            weft_layouts::Event::RenderRequest(r) => Event::RenderRequest(r),
            weft_layouts::Event::Teacher(t) => Event::Teacher(t),
        }
    }
}

/// The layout tier's counts and errors go to the node's metrics.
impl weft_layouts::Tally for Metrics {
    fn count_event(&self, event: weft_layouts::Event) {
        Metrics::count_event(self, event.into());
    }

    fn error(&self, kind: &'static str, url: &str, detail: &dyn std::fmt::Display) {
        Metrics::error(self, kind, url, detail);
    }
}

impl Event {
    /// `group:value`.
    pub fn key(&self) -> String {
        let (group, value): (&str, &str) = match self {
            Event::PageType(v) => ("page_type", v),
            Event::Js(v) => ("js", v),
            Event::Warning(v) => ("warning", v),
            // The layout tier's groups are keyed as it keys them.
            Event::Layout(l) => return weft_layouts::Event::Layout(*l).key(),
            Event::Render(r) => return weft_layouts::Event::Render(*r).key(),
            Event::RenderRequest(r) => return weft_layouts::Event::RenderRequest(*r).key(),
            Event::Teacher(t) => return weft_layouts::Event::Teacher(*t).key(),
            Event::SecondOpinion(o) => ("second_opinion", o.as_str()),
        };
        format!("{group}:{value}")
    }
}

/// The Readability.js second opinion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondOpinion {
    Sent,
    Taken,
    KeptNative,
    Failed,
    Unavailable,
    OverBudget,
    SkippedBusy,
    SkippedQueueFull,
    DroppedUnconsumed,
}

impl SecondOpinion {
    pub fn as_str(&self) -> &'static str {
        match self {
            SecondOpinion::Sent => "sent",
            SecondOpinion::Taken => "taken",
            SecondOpinion::KeptNative => "kept_native",
            SecondOpinion::Failed => "failed",
            SecondOpinion::Unavailable => "unavailable",
            SecondOpinion::OverBudget => "over_budget",
            SecondOpinion::SkippedBusy => "skipped_busy",
            SecondOpinion::SkippedQueueFull => "skipped_queue_full",
            SecondOpinion::DroppedUnconsumed => "dropped_unconsumed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys are what `/status`, the dashboard and the tests read: they keep their names.
    #[test]
    fn events_keep_their_group_value_keys() {
        let m = Metrics::default();
        m.count_event(Event::Layout(Layout::Template));
        m.count_event(Event::Layout(Layout::Template));
        m.count_event(Event::RenderRequest(RenderRequest::Refused("Image")));
        m.count_event(Event::RenderRequest(RenderRequest::SubresourceOverCap));
        m.count_event(Event::SecondOpinion(SecondOpinion::KeptNative));
        m.count_event(Event::Teacher(Teacher::JsRequired));
        m.count_event(Event::PageType("article"));
        let got = m.extractions();
        let want: BTreeMap<String, u64> = [
            ("layout:template", 2),
            ("page_type:article", 1),
            ("render_requests:refused_Image", 1),
            ("render_requests:subresource_over_cap", 1),
            ("second_opinion:kept_native", 1),
            ("teacher:js_required", 1),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(got, want);
    }
}
