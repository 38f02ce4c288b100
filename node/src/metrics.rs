//! Counters of what the node did, and the two views of them: `/status` (JSON, for people and
//! `weft status`) and `/metrics` (Prometheus text format, for Grafana). Both are rendered from
//! one [`Status`] snapshot so they can never disagree.

use parking_lot::Mutex;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;
use weft_frontier::FrontierStats;

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
    fn register(&self, registry: &mut prometheus_client::registry::Registry) {
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

    pub fn snapshot(&self, frontier: &FrontierStats, state: &str) -> Status {
        let errors: BTreeMap<String, u64> = self.errors.lock().iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let uptime = self.started.elapsed().as_secs_f64();
        let pages = self.pages_fetched.load(Relaxed);
        Status {
            state: state.to_string(),
            uptime_secs: uptime,
            pages_fetched: pages,
            pages_per_sec: if uptime > 0.0 { pages as f64 / uptime } else { 0.0 },
            requests: self.requests.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            robots_fetched: self.robots_fetched.load(Relaxed),
            sitemaps_fetched: self.sitemaps_fetched.load(Relaxed),
            redirects: self.redirects.load(Relaxed),
            links_found: self.links_found.load(Relaxed),
            urls_queued: self.urls_queued.load(Relaxed),
            robots_disallowed: self.robots_disallowed.load(Relaxed),
            rate_limited: self.rate_limited.load(Relaxed),
            retries: self.retries.load(Relaxed),
            gave_up: self.gave_up.load(Relaxed),
            errors_total: errors.values().sum(),
            errors,
            extraction: self.extraction.lock().clone(),
            queued: frontier.queued,
            in_flight: frontier.in_flight,
            hosts: frontier.hosts,
            hosts_with_queue: frontier.hosts_with_queue,
            seen_urls: frontier.seen,
            seen_bytes: frontier.seen_bytes,
            index: None,
            network: None,
            layouts: None,
            memory_bytes: self.memory_bytes.load(Relaxed),
            memory_target_bytes: self.memory_target_bytes.load(Relaxed),
        }
    }
}

/// `GET /status`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Status {
    /// `crawling`, `idle`, `paused`, `throttled` (over the memory target) or `stopping`.
    pub state: String,
    pub uptime_secs: f64,
    /// HTML pages fetched with a 2xx status.
    pub pages_fetched: u64,
    pub pages_per_sec: f64,
    /// Every HTTP request made, robots.txt, sitemaps and redirects included.
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
    pub robots_fetched: u64,
    pub sitemaps_fetched: u64,
    pub redirects: u64,
    pub links_found: u64,
    /// URLs newly added to the queue since start.
    pub urls_queued: u64,
    pub robots_disallowed: u64,
    pub rate_limited: u64,
    pub retries: u64,
    pub gave_up: u64,
    pub errors_total: u64,
    /// Errors by kind (`timeout`, `body_too_large`, `url_scheme`, ...).
    pub errors: BTreeMap<String, u64>,
    /// Extraction outcomes: page types, JS recommendations, warnings, second opinions.
    #[serde(default)]
    pub extraction: BTreeMap<String, u64>,
    /// URLs waiting in the frontier (in-flight ones included).
    pub queued: u64,
    pub in_flight: u64,
    pub hosts: u64,
    pub hosts_with_queue: u64,
    pub seen_urls: u64,
    pub seen_bytes: u64,
    /// The local index (absent when `index.enabled = false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<crate::indexing::IndexStatus>,
    /// The peer-to-peer network (absent for a standalone node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<weft_p2p::NetworkStatus>,
    /// Resident memory of the node and its browsers, bytes, and the target (0: none).
    #[serde(default)]
    pub memory_bytes: u64,
    #[serde(default)]
    pub memory_target_bytes: u64,
    /// Layout learning and the browser (absent when `layouts.enabled = false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layouts: Option<LayoutsStatus>,
}

/// `/status` `layouts`: the worker's and the teacher's state. Counters of what they did are in
/// `extraction` (`layout:template`, `layout:generic`, `teacher:runs`, `render:rendered`, ...).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LayoutsStatus {
    /// Templates stored (one per signature and level).
    pub templates: u64,
    /// Hosts whose pages go through the browser.
    pub hosts_rendering: u64,
    pub teacher_queue: u64,
    pub render_queue: u64,
    /// Whether Chromium can be used, and how many instances run now.
    pub browser_available: bool,
    pub browsers_running: u64,
    /// Times the pool was started (it stops after `layouts.browser_idle_secs` without work).
    #[serde(default)]
    pub browser_starts: u64,
    /// Resident memory of each running instance (all its processes), bytes.
    pub browser_memory_bytes: Vec<u64>,
}

#[derive(Debug)]
struct StatusCollector(Status);

type Labels = Vec<(&'static str, String)>;

impl prometheus_client::collector::Collector for StatusCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let s = &self.0;
        let counters: [(&str, &str, u64); 14] = [
            ("weft_pages_fetched", "HTML pages fetched with a 2xx status", s.pages_fetched),
            ("weft_requests", "HTTP requests made", s.requests),
            ("weft_bytes", "Body bytes received", s.bytes),
            ("weft_robots_fetched", "robots.txt fetches", s.robots_fetched),
            ("weft_sitemaps_fetched", "Sitemaps fetched", s.sitemaps_fetched),
            ("weft_redirects", "Redirect responses", s.redirects),
            ("weft_links_found", "Links found in pages", s.links_found),
            ("weft_urls_queued", "URLs newly queued", s.urls_queued),
            ("weft_robots_disallowed", "URLs skipped because robots.txt disallows them", s.robots_disallowed),
            ("weft_rate_limited", "429/503 responses", s.rate_limited),
            ("weft_retries", "Transient failures requeued", s.retries),
            ("weft_gave_up", "URLs dropped after exhausting retries", s.gave_up),
            ("weft_errors_all", "Errors of every kind", s.errors_total),
            ("weft_uptime_seconds", "Seconds since start", s.uptime_secs as u64),
        ];
        for (name, help, v) in counters {
            if name == "weft_uptime_seconds" {
                ConstGauge::new(v as i64).encode(enc.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
            } else {
                ConstCounter::new(v).encode(enc.encode_descriptor(name, help, None, MetricType::Counter)?)?;
            }
        }
        let mut m = enc.encode_descriptor("weft_errors", "Errors by kind", None, MetricType::Counter)?;
        for (kind, v) in &s.errors {
            let labels: Labels = vec![("kind", kind.clone())];
            ConstCounter::new(*v).encode(m.encode_family(&labels)?)?;
        }
        let mut m =
            enc.encode_descriptor("weft_extraction", "Extraction outcomes by kind", None, MetricType::Counter)?;
        for (kind, v) in &s.extraction {
            let labels: Labels = vec![("kind", kind.clone())];
            ConstCounter::new(*v).encode(m.encode_family(&labels)?)?;
        }
        let gauges: [(&str, &str, u64); 8] = [
            ("weft_memory_bytes", "Resident memory of the node and its browsers", s.memory_bytes),
            ("weft_memory_target_bytes", "The memory target (0: none)", s.memory_target_bytes),
            ("weft_frontier_queued", "URLs queued", s.queued),
            ("weft_frontier_in_flight", "Requests in flight", s.in_flight),
            ("weft_frontier_hosts", "Hosts known", s.hosts),
            ("weft_frontier_hosts_with_queue", "Hosts with queued URLs", s.hosts_with_queue),
            ("weft_seen_urls", "URLs in the seen-set", s.seen_urls),
            ("weft_seen_bytes", "Memory of the seen-set", s.seen_bytes),
        ];
        encode_gauges(&mut enc, &gauges)?;
        if let Some(n) = &s.network {
            let r = &n.reachability;
            let gauges: [(&str, &str, u64); 8] = [
                ("weft_p2p_connected_peers", "Peers with an open connection", n.connected_peers as u64),
                ("weft_p2p_direct_peers", "Peers connected directly", r.direct_peers as u64),
                ("weft_p2p_relayed_peers", "Peers connected only through a relay", r.relayed_peers as u64),
                (
                    "weft_p2p_relay_slots_held",
                    "Relays holding a slot for this node (behind NAT)",
                    r.relays.len() as u64,
                ),
                (
                    "weft_p2p_relay_reservations",
                    "Slots this node's relay holds for others",
                    r.relay_reservations as u64,
                ),
                ("weft_p2p_relay_circuits", "Circuits open through this node's relay", r.relay_circuits as u64),
                ("weft_p2p_members", "Members of the network, this node included", n.members.len() as u64),
                (
                    "weft_p2p_ring_share_permille",
                    "This node's share of the hash ring, per mille",
                    (n.ring_share * 1000.0) as u64,
                ),
            ];
            encode_gauges(&mut enc, &gauges)?;
            let reach: [Plain; 3] = [
                ("weft_p2p_hole_punches", "Relayed connections made direct by hole punching", r.hole_punches),
                ("weft_p2p_hole_punch_failures", "Hole punching attempts that failed", r.hole_punch_failures),
                (
                    "weft_p2p_relay_circuits_served",
                    "Circuits this node's relay opened for others",
                    r.relay_circuits_served,
                ),
            ];
            encode_counters(&mut enc, &reach)?;
            let counters: [Plain; 11] = [
                ("weft_p2p_dht_lookups", "Near-duplicate lookups in the DHT", n.dht_lookups),
                ("weft_p2p_dht_duplicates_found", "DHT lookups that found a near duplicate", n.dht_duplicates_found),
                ("weft_p2p_dht_published", "Fingerprints published in the DHT", n.dht_published),
                ("weft_p2p_urls_sent", "URLs other members acknowledged from this node", n.urls_sent),
                ("weft_p2p_urls_received", "URLs received for this node's hosts", n.urls_received),
                ("weft_p2p_urls_forwarded", "URLs received for other members' hosts and passed on", n.urls_forwarded),
                ("weft_p2p_urls_rejected", "URLs received and dropped", n.urls_rejected),
                ("weft_p2p_batches_refused", "URL batches refused (their senders banned)", n.batches_refused),
                ("weft_p2p_batches_rate_limited", "URL batches answered busy", n.batches_rate_limited),
                ("weft_p2p_heartbeats_rejected", "Heartbeats rejected", n.rejected_heartbeats),
                ("weft_p2p_bans", "Peers banned now", n.banned_peers as u64),
            ];
            encode_counters(&mut enc, &counters[..10])?;
            let gauges: [Plain; 4] = [
                counters[10],
                ("weft_p2p_dht_lookup_ms_p50", "Median DHT lookup time, milliseconds", n.dht_lookup_ms_p50 as u64),
                (
                    "weft_p2p_dht_lookup_ms_p99",
                    "99th percentile DHT lookup time, milliseconds",
                    n.dht_lookup_ms_p99 as u64,
                ),
                ("weft_p2p_urls_waiting", "URLs waiting to be sent or retried", n.urls_waiting),
            ];
            encode_gauges(&mut enc, &gauges)?;
            let q = &n.search;
            let counters: [Plain; 6] = [
                ("weft_search_queries", "Network queries this node sent", q.queries),
                ("weft_search_peers_contacted", "Peers asked by this node's network queries", q.peers_contacted),
                ("weft_search_partial", "Network queries returned with a peer missing", q.partial),
                ("weft_search_answered", "Other nodes' queries answered", q.answered),
                ("weft_search_busy", "Other nodes' queries refused as busy", q.busy),
                ("weft_search_bad_replies", "Peers' answers that failed the checks", q.bad_replies),
            ];
            encode_counters(&mut enc, &counters)?;
            let gauges: [Plain; 4] = [
                (
                    "weft_search_summaries_known",
                    "Members whose routing summary this node holds",
                    q.summaries_known as u64,
                ),
                (
                    "weft_search_buckets_provided",
                    "LSH buckets this node provides in the DHT",
                    q.buckets_provided as u64,
                ),
                ("weft_search_ms_p50", "Median network query time, milliseconds", q.ms_p50 as u64),
                ("weft_search_ms_p95", "95th percentile network query time, milliseconds", q.ms_p95 as u64),
            ];
            encode_gauges(&mut enc, &gauges)?;
        }
        if let Some(l) = &s.layouts {
            let gauges: [Plain; 6] = [
                ("weft_layout_templates", "Layout templates stored", l.templates),
                ("weft_layout_hosts_rendering", "Hosts whose pages are rendered in the browser", l.hosts_rendering),
                ("weft_layout_teacher_queue", "Layouts waiting for the teacher", l.teacher_queue),
                ("weft_layout_render_queue", "Pages waiting for the browser", l.render_queue),
                ("weft_browsers_running", "Headless Chromium instances running", l.browsers_running),
                (
                    "weft_browser_memory_bytes",
                    "Resident memory of the browser pool",
                    l.browser_memory_bytes.iter().sum(),
                ),
            ];
            encode_gauges(&mut enc, &gauges)?;
        }
        if let Some(i) = &s.index {
            let counters: [(&str, &str, u64); 6] = [
                ("weft_index_pages_indexed", "Pages indexed in this run", i.pages_indexed),
                ("weft_index_pages_aliased", "Pages recorded as near duplicates in this run", i.pages_aliased),
                ("weft_index_pages_failed", "Pages that could not be indexed in this run", i.pages_failed),
                ("weft_index_chunks_embedded", "Chunks embedded in this run", i.chunks_embedded),
                ("weft_index_queries", "Search queries answered", i.queries),
                ("weft_index_pages_improved", "Pages re-indexed with the reference extractor's text", i.pages_improved),
            ];
            encode_counters(&mut enc, &counters)?;
            let gauges: [(&str, &str, u64); 7] = [
                ("weft_index_documents", "Documents in the index", i.stored.documents),
                ("weft_index_aliases", "Near-duplicate URLs recorded as aliases", i.stored.aliases),
                ("weft_index_failed", "Documents recorded as failed", i.stored.failed),
                ("weft_index_chunks", "Chunks stored", i.stored.chunks),
                ("weft_index_vectors", "Vectors in the HNSW index", i.stored.vectors),
                ("weft_index_vector_memory_bytes", "Memory of the HNSW index", i.stored.vector_memory_bytes),
                ("weft_index_queue", "Pages waiting for the indexer", i.queue),
            ];
            encode_gauges(&mut enc, &gauges)?;
        }
        Ok(())
    }
}

/// (name, help, value) of plain metrics.
type Plain<'a> = (&'a str, &'a str, u64);

fn encode_gauges(enc: &mut DescriptorEncoder, gauges: &[Plain]) -> Result<(), std::fmt::Error> {
    for &(name, help, v) in gauges {
        ConstGauge::new(v as i64).encode(enc.encode_descriptor(name, help, None, MetricType::Gauge)?)?;
    }
    Ok(())
}

fn encode_counters(enc: &mut DescriptorEncoder, counters: &[Plain]) -> Result<(), std::fmt::Error> {
    for &(name, help, v) in counters {
        ConstCounter::new(v).encode(enc.encode_descriptor(name, help, None, MetricType::Counter)?)?;
    }
    Ok(())
}

/// Renders a status snapshot and the latency histograms in the Prometheus text exposition
/// format.
pub fn render_prometheus(status: &Status, histograms: &Histograms) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(StatusCollector(status.clone())));
    histograms.register(&mut registry);
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, &registry).expect("writing to a String cannot fail");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_has_counters_and_labelled_errors() {
        let m = Metrics::default();
        inc(&m.pages_fetched);
        m.error("timeout", "http://a.test/", &"slow");
        m.error("timeout", "http://a.test/", &"slow");
        m.histograms.fetch.observe(0.02);
        let text = render_prometheus(&m.snapshot(&FrontierStats::default(), "idle"), &m.histograms);
        assert!(text.contains("weft_fetch_seconds_count 1"), "{text}");
        assert!(text.contains("weft_fetch_seconds_bucket{le=\"0.02\"} 1"), "{text}");
        assert!(text.contains("weft_pages_fetched_total 1"), "{text}");
        assert!(text.contains("weft_errors_total{kind=\"timeout\"} 2"), "{text}");
        assert!(text.contains("# TYPE weft_frontier_queued gauge"), "{text}");
        assert!(text.trim_end().ends_with("# EOF"));
    }

    /// Every metric the Grafana dashboard (`docs/grafana-dashboard.json`) queries is one the
    /// node exposes — checked against a status with every section present.
    #[test]
    fn the_grafana_dashboard_queries_only_exposed_metrics() {
        let m = Metrics::default();
        let mut status = m.snapshot(&FrontierStats::default(), "idle");
        status.index = Some(Default::default());
        status.network = Some(Default::default());
        status.layouts = Some(Default::default());
        let text = render_prometheus(&status, &m.histograms);
        let mut exposed = HashSet::new();
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            if let (Some("#"), Some("TYPE"), Some(name), Some(kind)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            {
                match kind {
                    "counter" => {
                        exposed.insert(format!("{name}_total"));
                    }
                    "histogram" => {
                        for s in ["_bucket", "_sum", "_count"] {
                            exposed.insert(format!("{name}{s}"));
                        }
                    }
                    _ => {
                        exposed.insert(name.to_string());
                    }
                }
            }
        }
        let dashboard: serde_json::Value =
            serde_json::from_str(include_str!("../../docs/grafana-dashboard.json")).expect("the dashboard is JSON");
        let re = regex_lite_names(&dashboard.to_string());
        assert!(re.len() > 20, "{re:?}");
        let missing: Vec<&String> = re.iter().filter(|n| !exposed.contains(*n)).collect();
        assert!(missing.is_empty(), "the dashboard queries metrics the node does not expose: {missing:?}");
    }

    /// The `weft_*` metric names in a text.
    fn regex_lite_names(text: &str) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        let mut rest = text;
        while let Some(i) = rest.find("weft_") {
            let name: String =
                rest[i..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
            rest = &rest[i + name.len()..];
            if name != "weft_" && !name.starts_with("weft_node") {
                out.insert(name);
            }
        }
        out
    }
}
