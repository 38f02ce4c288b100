//! The `/status` tree — the crawl's counters and each subsystem's section — and its
//! Prometheus encoding for `/metrics`. Counters are kept where the work happens
//! (`metrics.rs`, the crawl, the index, the network); this module only reads them.

use crate::indexing::{IndexService, IndexStatus};
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use weft_crawl::metrics::Histograms;
use weft_crawl::{CrawlStatus, Crawler};
use weft_layouts::{Layouts, LayoutsStatus};

/// `GET /status`: the crawl's counters and every subsystem's section.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Status {
    #[serde(flatten)]
    pub crawl: CrawlStatus,
    /// The local index. On by default; absent only for an operator who turned the index off
    /// (`index.enabled = false`, a crawl-only node), so `/status` never shows an empty section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexStatus>,
    /// The peer-to-peer network (absent for a standalone node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<weft_p2p::NetworkStatus>,
    /// Resident memory of the node and its browsers, bytes, and the target (0: none).
    #[serde(default)]
    pub memory_bytes: u64,
    #[serde(default)]
    pub memory_target_bytes: u64,
    /// Where the memory is.
    #[serde(default)]
    pub memory: MemoryStatus,
    /// Layout learning and the browser. On by default; absent only for an operator who turned
    /// layouts off (`layouts.enabled = false`), so `/status` never shows an empty section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layouts: Option<LayoutsStatus>,
    /// The node's storage: failed storage calls, and the fault that stops the node, if any.
    #[serde(default)]
    pub storage: StorageStatus,
}

/// Where a node's memory is, bytes: the node's resident set by kind, the parts it can name, and
/// the rest (ONNX Runtime's model and arena, sled's and tantivy's caches, the frontier, the
/// network and the allocator's own).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MemoryStatus {
    /// The node's own resident set (its browsers not included): anonymous memory, and pages of
    /// mapped files (the vector index's sealed segments among them; the kernel takes these
    /// back under pressure).
    pub anonymous: u64,
    pub file_backed: u64,
    /// The vector index's in-memory part (its delta and the segments' views), and the cell
    /// store's.
    pub vectors: u64,
    pub cell_vectors: u64,
    /// The embedding model's sessions, as they loaded (`index.model_memory_bytes`).
    #[serde(default)]
    pub model: u64,
    /// The frontier's seen-set.
    #[serde(default)]
    pub seen_set: u64,
    /// The fjall stores (the frontier's, the documents', the cell store's): their block caches
    /// as filled, the index and filter blocks they keep pinned, and their write buffers.
    #[serde(default)]
    pub storage: u64,
    /// The browsers' process trees (proportional set size).
    pub browsers: u64,
    /// Anonymous memory not in the parts above: sled's caches (`storage.cache_mb`, the cell
    /// store's), tantivy's 24 MiB writer, the model's working arena, the crawl's hosts and
    /// buffers, and what the allocator holds free.
    pub other: u64,
    /// The allocator's view (glibc's `mallinfo2`; 0 elsewhere), beside the parts rather than
    /// among them: what is allocated and live, and what it holds free in its heaps (not all
    /// resident: the node hands free pages back every 30 s). A growing `other` with a flat
    /// `heap_free` is live data; the other way round it is fragmentation.
    #[serde(default)]
    pub heap_live: u64,
    #[serde(default)]
    pub heap_free: u64,
}

/// The storage section of `/status`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct StorageStatus {
    /// Storage calls that failed (a write the crawl went on without, or the fault).
    pub errors: u64,
    /// Why the storage can no longer be trusted (`/health` is 503 and the node is stopping).
    pub fault: Option<String>,
}

impl Status {
    /// The node's status now: the crawl's, and the sections of the parts it runs.
    pub fn gather(
        crawler: &Crawler,
        index: Option<&Arc<IndexService>>,
        network: Option<&weft_p2p::NetworkHandle>,
        layouts: Option<&Layouts>,
    ) -> Status {
        let metrics = crawler.metrics();
        let index = index.map(|i| i.status());
        let layouts = layouts.map(Layouts::status);
        let (anonymous, file_backed) = crate::procmem::own_rss_parts();
        let (heap_live, heap_free) = crate::procmem::heap();
        let vectors = index.as_ref().map_or(0, |i| i.stored.vector_memory_bytes);
        let cell_vectors = index.as_ref().and_then(|i| i.cells.as_ref()).map_or(0, |c| c.vector_memory_bytes);
        let model = index.as_ref().map_or(0, |i| i.model_memory_bytes);
        let crawl = crawler.status();
        let seen_set = crawl.seen_bytes;
        let storage = crawl.frontier_store_bytes
            + index
                .as_ref()
                .map_or(0, |i| i.stored.store_memory_bytes + i.cells.as_ref().map_or(0, |c| c.store_memory_bytes));
        let memory = MemoryStatus {
            anonymous,
            file_backed,
            vectors,
            cell_vectors,
            model,
            seen_set,
            storage,
            browsers: layouts.as_ref().map_or(0, |l| l.browser_memory_bytes.iter().sum()),
            other: anonymous.saturating_sub(vectors + cell_vectors + model + seen_set + storage),
            heap_live,
            heap_free,
        };
        Status {
            crawl,
            index,
            network: network.map(|n| n.status()),
            memory_bytes: metrics.memory_bytes.load(Relaxed),
            memory_target_bytes: metrics.memory_target_bytes.load(Relaxed),
            memory,
            layouts,
            storage: StorageStatus {
                errors: crawler.storage().errors(),
                fault: crawler.storage().fault().map(|f| f.to_string()),
            },
        }
    }
}

#[derive(Debug)]
struct StatusCollector(Status);

type Labels = Vec<(&'static str, String)>;

impl prometheus_client::collector::Collector for StatusCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let status = &self.0;
        encode_crawl(&mut enc, status)?;
        if let Some(n) = &status.network {
            encode_network(&mut enc, n)?;
        }
        if let Some(l) = &status.layouts {
            encode_layouts(&mut enc, l)?;
        }
        if let Some(i) = &status.index {
            encode_index(&mut enc, i)?;
        }
        Ok(())
    }
}

/// The crawl's, the storage's and the memory's metrics.
fn encode_crawl(enc: &mut DescriptorEncoder, status: &Status) -> Result<(), std::fmt::Error> {
    let s = &status.crawl;
    let counters: [(&str, &str, u64); 19] = [
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
        ("weft_revisits", "Hub pages queued again by the freshness loop", s.revisits),
        ("weft_not_modified", "Conditional requests answered 304 Not Modified", s.not_modified),
        ("weft_scheme_changes", "URL-scheme changes recorded", s.scheme_changes),
        ("weft_found_when_idle", "URLs queued from archive hints when a host's queue ran dry", s.found_when_idle),
        ("weft_hosts_blocked", "Times a host refusing the crawler was paused", s.hosts_blocked),
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
    let r = &s.received;
    let mut m = enc.encode_descriptor(
        "weft_received_urls",
        "URLs other members sent (hand-overs, links to this node's hosts), by what became of them",
        None,
        MetricType::Counter,
    )?;
    let fates = [
        ("queued", r.queued),
        ("already_queued", r.already_queued),
        ("already_done", r.already_done),
        ("done_reported", r.done_reported),
        ("invalid", r.invalid),
        ("forwarded", r.forwarded),
    ]
    .map(|(fate, v)| (fate.to_string(), v));
    let refused = r.refused.iter().map(|(why, v)| (format!("refused_{why}"), *v));
    for (fate, v) in fates.into_iter().chain(refused) {
        let labels: Labels = vec![("fate", fate)];
        ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
    }
    let mut m = enc.encode_descriptor("weft_extraction", "Extraction outcomes by kind", None, MetricType::Counter)?;
    for (kind, v) in &s.extraction {
        let labels: Labels = vec![("kind", kind.clone())];
        ConstCounter::new(*v).encode(m.encode_family(&labels)?)?;
    }
    let storage = &status.storage;
    let errors = ConstCounter::new(storage.errors);
    errors.encode(enc.encode_descriptor(
        "weft_storage_errors",
        "Storage calls that failed",
        None,
        MetricType::Counter,
    )?)?;
    let gauges: [(&str, &str, u64); 21] = [
        ("weft_storage_fault", "1 once the storage failed (the node is stopping)", u64::from(storage.fault.is_some())),
        ("weft_crawl_stalled", "1 while the crawl makes no progress with work queued", u64::from(s.stalled.is_some())),
        ("weft_hosts_blocking", "Hosts refusing the crawler right now (paused)", s.blocked_by_hosts.len() as u64),
        ("weft_memory_bytes", "Resident memory of the node and its browsers", status.memory_bytes),
        ("weft_memory_target_bytes", "The memory target (0: none)", status.memory_target_bytes),
        ("weft_memory_anonymous_bytes", "The node's anonymous resident memory", status.memory.anonymous),
        (
            "weft_memory_file_backed_bytes",
            "The node's resident pages of mapped files (the vector segments among them)",
            status.memory.file_backed,
        ),
        (
            "weft_memory_vectors_bytes",
            "The vector indexes' in-memory part (the node's own and the cell store's)",
            status.memory.vectors + status.memory.cell_vectors,
        ),
        ("weft_memory_model_bytes", "The embedding model's sessions, as they loaded", status.memory.model),
        (
            "weft_memory_storage_bytes",
            "The fjall stores' block caches as filled, pinned blocks and write buffers",
            status.memory.storage,
        ),
        ("weft_memory_browsers_bytes", "The browsers' process trees (proportional set size)", status.memory.browsers),
        (
            "weft_memory_other_bytes",
            "Anonymous memory not in the vectors, the model, the seen-set or the fjall stores",
            status.memory.other,
        ),
        ("weft_memory_heap_live_bytes", "The allocator's live allocations (glibc)", status.memory.heap_live),
        (
            "weft_memory_heap_free_bytes",
            "Free memory the allocator holds in its heaps (glibc)",
            status.memory.heap_free,
        ),
        ("weft_frontier_queued", "URLs queued", s.queued),
        ("weft_frontier_in_flight", "Requests in flight", s.in_flight),
        ("weft_frontier_hosts", "Hosts known", s.hosts),
        ("weft_frontier_hosts_with_queue", "Hosts with queued URLs", s.hosts_with_queue),
        ("weft_seen_urls", "URLs in the seen-set", s.seen_urls),
        ("weft_seen_bytes", "Memory of the seen-set", s.seen_bytes),
        ("weft_seen_recalled", "URLs met again after the seen-set forgot them, known from disk", s.seen_recalled),
    ];
    encode_gauges(enc, &gauges)?;
    Ok(())
}

/// The network's metrics: reachability, URLs exchanged, postings and copies, search.
fn encode_network(enc: &mut DescriptorEncoder, n: &weft_p2p::NetworkStatus) -> Result<(), std::fmt::Error> {
    let r = &n.reachability;
    let gauges: [(&str, &str, u64); 9] = [
        ("weft_p2p_connected_peers", "Peers with an open connection", n.connected_peers as u64),
        ("weft_p2p_direct_peers", "Peers connected directly", r.direct_peers as u64),
        ("weft_p2p_relayed_peers", "Peers connected only through a relay", r.relayed_peers as u64),
        ("weft_p2p_relay_slots_held", "Relays holding a slot for this node (behind NAT)", r.relays.len() as u64),
        ("weft_p2p_relay_reservations", "Slots this node's relay holds for others", r.relay_reservations as u64),
        ("weft_p2p_relay_circuits", "Circuits open through this node's relay", r.relay_circuits as u64),
        ("weft_p2p_members", "Members of the network, this node included", n.members.len() as u64),
        (
            "weft_p2p_ring_share_permille",
            "This node's share of the hash ring, per mille",
            (n.ring_share * 1000.0) as u64,
        ),
        (
            "weft_p2p_admitted_permille",
            "The part of its full ring points this node holds (a newcomer grows to 1000), per mille",
            (n.admitted * 1000.0).round() as u64,
        ),
    ];
    encode_gauges(enc, &gauges)?;
    let reach: [Plain; 3] = [
        ("weft_p2p_hole_punches", "Relayed connections made direct by hole punching", r.hole_punches),
        ("weft_p2p_hole_punch_failures", "Hole punching attempts that failed", r.hole_punch_failures),
        ("weft_p2p_relay_circuits_served", "Circuits this node's relay opened for others", r.relay_circuits_served),
    ];
    encode_counters(enc, &reach)?;
    let counters: [Plain; 14] = [
        (
            "weft_p2p_roster_refused_events",
            "Roster events refused: forged, malformed or against the admission rules",
            n.roster.refused_events,
        ),
        ("weft_p2p_dht_refused", "Near-duplicate record requests refused", n.dht_refused),
        ("weft_p2p_dht_lookups", "Near-duplicate lookups in the DHT", n.dht_lookups),
        ("weft_p2p_dht_duplicates_found", "DHT lookups that found a near duplicate", n.dht_duplicates_found),
        ("weft_p2p_dht_published", "Fingerprints published in the DHT", n.dht_published),
        ("weft_p2p_urls_sent", "URLs other members acknowledged from this node", n.urls_sent),
        ("weft_p2p_urls_received", "URLs received for this node's hosts", n.urls_received),
        ("weft_p2p_urls_forwarded", "URLs received for other members' hosts and passed on", n.urls_forwarded),
        ("weft_p2p_urls_rejected", "URLs received and dropped", n.urls_rejected),
        ("weft_p2p_batches_refused", "URL batches refused (their senders banned)", n.batches_refused),
        ("weft_p2p_batches_rate_limited", "URL batches answered busy", n.batches_rate_limited),
        (
            "weft_p2p_batches_not_member",
            "URL batches refused because their sender is not a member",
            n.batches_not_member,
        ),
        (
            "weft_p2p_urls_from_newcomers",
            "Page URLs taken from newcomers on their probation that this member will monitor",
            n.urls_from_newcomers,
        ),
        (
            "weft_p2p_requests_cut",
            "URL batches and search requests dropped while being read (their budget was held)",
            n.requests_cut,
        ),
    ];
    encode_counters(enc, &counters)?;
    let gauges: [Plain; 8] = [
        ("weft_p2p_bans", "Peers banned now", n.banned_peers as u64),
        ("weft_p2p_roster_entries", "Entries in this node's roster, departures included", n.roster.entries as u64),
        (
            "weft_p2p_requests_buffered_bytes",
            "Bytes held by URL batches and search requests still being read",
            n.requests_buffered_bytes,
        ),
        ("weft_p2p_roster_members", "Members in this node's roster", n.roster.members as u64),
        ("weft_p2p_dht_lookup_ms_p50", "Median DHT lookup time, milliseconds", n.dht_lookup_ms_p50 as u64),
        ("weft_p2p_dht_lookup_ms_p99", "99th percentile DHT lookup time, milliseconds", n.dht_lookup_ms_p99 as u64),
        ("weft_p2p_urls_waiting", "URLs waiting to be sent or retried", n.urls_waiting),
        ("weft_p2p_dht_records", "Near-duplicate records this node holds for the blocks it owns", n.dht_records),
    ];
    encode_gauges(enc, &gauges)?;
    encode_postings(enc, &n.postings)?;
    encode_search(enc, &n.search)
}

/// Semantic placement: the postings this node publishes and holds, and its cells.
fn encode_postings(enc: &mut DescriptorEncoder, p: &weft_p2p::PostingsStatus) -> Result<(), std::fmt::Error> {
    let counters: [Plain; 5] = [
        ("weft_postings_published", "Postings and withdrawals their cells' owners acknowledged", p.published),
        ("weft_postings_dropped", "Postings dropped because the publish backlog was full", p.dropped),
        ("weft_postings_received", "Postings received for this node's cells and stored", p.received),
        ("weft_postings_refused", "Postings received and refused", p.refused),
        (
            "weft_postings_disputed",
            "Of those refused, pages of hosts their publisher would own on a ring lacking a few members",
            p.disputed,
        ),
    ];
    encode_counters(enc, &counters)?;
    let gauges: [Plain; 5] = [
        ("weft_postings_backlog", "Postings waiting to be sent or acknowledged", p.backlog),
        (
            "weft_postings_backlog_bytes",
            "Estimated bytes of the postings and copies waiting to be sent or acknowledged",
            p.backlog_bytes,
        ),
        ("weft_cells_owned", "Cells of the level asked at this node owns", p.cells_owned as u64),
        (
            "weft_cells_level",
            "The level of the codebook's ladder questions ask at (0: its first 256 cells)",
            p.level as u64,
        ),
        (
            "weft_postings_cells_per_chunk",
            "Cells each chunk this node indexes is posted to (two, three in a large network)",
            p.cells_per_chunk as u64,
        ),
    ];
    encode_gauges(enc, &gauges)?;
    Ok(())
}

/// Network search: the questions this node asks and answers.
fn encode_search(enc: &mut DescriptorEncoder, q: &weft_p2p::SearchStatus) -> Result<(), std::fmt::Error> {
    let counters: [Plain; 6] = [
        ("weft_search_queries", "Network queries this node sent", q.queries),
        ("weft_search_peers_contacted", "Peers asked by this node's network queries", q.peers_contacted),
        ("weft_search_partial", "Network queries returned with a peer missing", q.partial),
        ("weft_search_answered", "Other nodes' queries answered", q.answered),
        ("weft_search_busy", "Other nodes' queries refused as busy", q.busy),
        ("weft_search_bad_replies", "Peers' answers that failed the checks", q.bad_replies),
    ];
    encode_counters(enc, &counters)?;
    let gauges: [Plain; 2] = [
        ("weft_search_ms_p50", "Median network query time, milliseconds", q.ms_p50 as u64),
        ("weft_search_ms_p95", "95th percentile network query time, milliseconds", q.ms_p95 as u64),
    ];
    encode_gauges(enc, &gauges)?;
    Ok(())
}

/// The layout tier's and the browsers' metrics.
fn encode_layouts(enc: &mut DescriptorEncoder, l: &LayoutsStatus) -> Result<(), std::fmt::Error> {
    let gauges: [Plain; 6] = [
        ("weft_layout_templates", "Layout templates stored", l.templates),
        ("weft_layout_hosts_rendering", "Hosts whose pages are rendered in the browser", l.hosts_rendering),
        ("weft_layout_teacher_queue", "Layouts waiting for the teacher", l.teacher_queue),
        ("weft_layout_render_queue", "Pages waiting for the browser", l.render_queue),
        ("weft_browsers_running", "Headless Chromium instances running", l.browsers_running),
        ("weft_browser_memory_bytes", "Resident memory of the browser pool", l.browser_memory_bytes.iter().sum()),
    ];
    encode_gauges(enc, &gauges)?;
    Ok(())
}

/// The index's and the cell store's metrics.
fn encode_index(enc: &mut DescriptorEncoder, i: &IndexStatus) -> Result<(), std::fmt::Error> {
    let counters: [(&str, &str, u64); 6] = [
        ("weft_index_pages_indexed", "Pages indexed in this run", i.pages_indexed),
        ("weft_index_pages_aliased", "Pages recorded as near duplicates in this run", i.pages_aliased),
        ("weft_index_pages_failed", "Pages that could not be indexed in this run", i.pages_failed),
        ("weft_index_chunks_embedded", "Chunks embedded in this run", i.chunks_embedded),
        ("weft_index_queries", "Search queries answered", i.queries),
        ("weft_index_pages_improved", "Pages re-indexed with the reference extractor's text", i.pages_improved),
    ];
    encode_counters(enc, &counters)?;
    let gauges: [(&str, &str, u64); 7] = [
        ("weft_index_documents", "Documents in the index", i.stored.documents),
        ("weft_index_aliases", "Near-duplicate URLs recorded as aliases", i.stored.aliases),
        ("weft_index_failed", "Documents recorded as failed", i.stored.failed),
        ("weft_index_chunks", "Chunks stored", i.stored.chunks),
        ("weft_index_vectors", "Vectors in the HNSW index", i.stored.vectors),
        ("weft_index_vector_memory_bytes", "Memory of the HNSW index", i.stored.vector_memory_bytes),
        ("weft_index_queue", "Pages waiting for the indexer", i.queue),
    ];
    encode_gauges(enc, &gauges)?;
    if let Some(c) = &i.cells {
        let gauges: [Plain; 3] = [
            ("weft_cells_documents", "Documents with postings held for this node's cells", c.documents),
            ("weft_cells_chunks", "Chunks held for this node's cells", c.chunks),
            ("weft_cells_vector_memory_bytes", "Memory of the cell store's HNSW index", c.vector_memory_bytes),
        ];
        encode_gauges(enc, &gauges)?;
        let counters: [Plain; 1] =
            [("weft_cells_over_quota", "Chunks refused for a publisher's or a cell's quota here", c.over_quota)];
        encode_counters(enc, &counters)?;
    }
    Ok(())
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
    use std::collections::HashSet;
    use weft_crawl::metrics::{inc, Metrics};
    use weft_crawl::CrawlState;
    use weft_frontier::FrontierStats;

    fn status_of(m: &Metrics) -> Status {
        Status {
            crawl: CrawlStatus::of(m, &FrontierStats::default(), CrawlState::Idle, 0, Vec::new(), None),
            index: None,
            network: None,
            memory_bytes: 0,
            memory_target_bytes: 0,
            memory: MemoryStatus::default(),
            layouts: None,
            storage: StorageStatus::default(),
        }
    }

    #[test]
    fn prometheus_text_has_counters_and_labelled_errors() {
        let m = Metrics::default();
        inc(&m.pages_fetched);
        m.error("timeout", "http://a.test/", &"slow");
        m.error("timeout", "http://a.test/", &"slow");
        m.histograms.fetch.observe(0.02);
        let text = render_prometheus(&status_of(&m), &m.histograms);
        assert!(text.contains("weft_fetch_seconds_count 1"), "{text}");
        assert!(text.contains("weft_fetch_seconds_bucket{le=\"0.02\"} 1"), "{text}");
        assert!(text.contains("weft_pages_fetched_total 1"), "{text}");
        assert!(text.contains("weft_errors_total{kind=\"timeout\"} 2"), "{text}");
        assert!(text.contains("weft_received_urls_total{fate=\"queued\"} 0"), "{text}");
        assert!(text.contains("# TYPE weft_frontier_queued gauge"), "{text}");
        assert!(text.contains("weft_storage_fault 0") && text.contains("weft_storage_errors_total 0"), "{text}");
        assert!(text.trim_end().ends_with("# EOF"));
        let mut faulted = status_of(&m);
        faulted.storage = StorageStatus { errors: 3, fault: Some("storage fault in /d: flush: os error 28".into()) };
        let text = render_prometheus(&faulted, &m.histograms);
        assert!(text.contains("weft_storage_fault 1") && text.contains("weft_storage_errors_total 3"), "{text}");
    }

    /// Every metric the Grafana dashboard (`docs/grafana-dashboard.json`) queries is one the
    /// node exposes — checked against a status with every section present.
    #[test]
    fn the_grafana_dashboard_queries_only_exposed_metrics() {
        let m = Metrics::default();
        let mut status = status_of(&m);
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
