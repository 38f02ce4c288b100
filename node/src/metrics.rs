//! Counters and histograms of what the node did, updated where the work happens. Their two
//! views — `/status` (JSON) and `/metrics` (Prometheus) — are rendered from one snapshot in
//! `status.rs`, so they can never disagree.

use parking_lot::Mutex;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

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
    pub(crate) fn register(&self, registry: &mut prometheus_client::registry::Registry) {
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

    /// Counts an extraction outcome: `page_type:article`, `js:static`, `warning:invalid_bytes`,
    /// `second_opinion:taken`, ...
    pub fn extraction(&self, group: &str, value: &str) {
        self.extraction_n(group, value, 1);
    }

    pub fn extraction_n(&self, group: &str, value: &str, n: u64) {
        *self.extraction.lock().entry(format!("{group}:{value}")).or_insert(0) += n;
    }

    /// Records the counters now (called every few seconds by the node).
    pub fn sample(&self) {
        let unix_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
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
