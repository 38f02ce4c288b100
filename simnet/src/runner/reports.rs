//! What a run reports: per node, per churn event, and the whole run.

use crate::report::Report;
use crate::search_eval::SearchReport;
use serde::Serialize;
use std::collections::BTreeMap;

/// One node as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub node: usize,
    pub peer_id: String,
    /// `up`, `killed` or `left` at the end of the run.
    pub state: String,
    /// Successful page fetches in the server's log with this node's User-Agent.
    pub fetches: usize,
    /// Requests of any kind (robots.txt, sitemaps, retries) in the server's log.
    pub requests: usize,
    /// Its share of the hash ring when last seen.
    pub ring_share: f64,
    /// Pages its index recorded as near duplicates (locally or through the DHT).
    pub dedup_hits: u64,
    /// URLs it sent to other members and had acknowledged.
    pub urls_sent: u64,
    pub urls_received: u64,
    /// URLs it received for other members' hosts and passed on (over the grid, or past a stale
    /// ring), and its links on the grid when last seen (0 while batches go straight).
    pub urls_passed_on: u64,
    pub grid_links: u64,
    /// DHT lookups and publications (near-duplicate records), and the record requests for other
    /// members it passed on over the grid.
    pub dht_lookups: u64,
    pub dht_published: u64,
    #[serde(default)]
    pub dht_passed_on: u64,
    /// Resident memory when last seen, and the peak of its last process, in MiB.
    pub rss_mib: f64,
    pub peak_rss_mib: f64,
    /// Its open connections over the run (`/status` `network.connected_peers`, sampled at each
    /// status read): the mean and the most.
    pub connections_mean: f64,
    pub connections_max: u64,
    /// Where its memory was when last seen (`/status` `memory`), MiB: anonymous and
    /// file-backed, the vector indexes' in-memory parts (own and cell store), its browsers, and
    /// the rest of the anonymous memory.
    #[serde(default)]
    pub memory_parts_mib: MemoryParts,
    /// Layout learning when last seen: teacher jobs run, templates stored, pages extracted by
    /// a template, pages rendered in the browser, times its browsers were started.
    pub teacher_runs: u64,
    pub templates: u64,
    pub pages_by_template: u64,
    pub pages_rendered: u64,
    pub browser_starts: u64,
    /// Placement by meaning when last seen: chunks of its own index, chunks its cell store
    /// holds for the cells it owns, cells owned, and postings it published (acknowledged),
    /// received and refused (and of those, refused because its publisher's ring and this
    /// node's disagreed on a host's owner: no strike).
    pub own_chunks: u64,
    pub cell_chunks: u64,
    pub cells_owned: u64,
    pub postings_published: u64,
    pub postings_received: u64,
    pub postings_refused: u64,
    pub postings_disputed: u64,
    /// Peers it had banned when last seen (any reason: bad answers, postings, URL batches).
    pub banned_peers: u64,
    /// Document copies when last seen: its own documents, the copies it holds for others (and
    /// their bytes), copies received, and pages it indexed from another member's copy instead
    /// of fetching them.
    pub own_documents: u64,
    pub copies: u64,
    pub copy_bytes: u64,
    pub copies_received: u64,
    pub copies_refused: u64,
    pub pages_adopted: u64,
    /// Repair after changes of the member set: copies (and bytes) sent to new holders, rounds,
    /// and how long its last round took to plan (ms).
    pub repair_copies: u64,
    pub repair_bytes: u64,
    pub repair_rounds: u64,
    pub repair_plan_ms: u64,
    /// Comparing copies with co-holders: rounds, copies this node asked for (it lacked them),
    /// copies it sent because a co-holder asked.
    pub compare_rounds: u64,
    pub copies_asked: u64,
    pub copies_sent_on_request: u64,
}

/// A node's memory by part, MiB (see [`NodeReport::memory_parts_mib`]).
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct MemoryParts {
    pub anonymous: f64,
    pub file_backed: f64,
    pub vectors: f64,
    pub cell_vectors: f64,
    #[serde(default)]
    pub model: f64,
    #[serde(default)]
    pub seen_set: f64,
    #[serde(default)]
    pub storage: f64,
    pub browsers: f64,
    pub other: f64,
}

impl MemoryParts {
    /// The parts in a few words: `anonymous 300 (vectors 16, cell store's vectors 8, model 180,
    /// seen-set 12, storage 30, other 84) + mapped files 40, browsers 500`.
    pub fn line(&self) -> String {
        format!(
            "anonymous {:.0} (vectors {:.1}, cell store's vectors {:.1}, model {:.0}, seen-set {:.0}, storage {:.0}, other {:.0}) + mapped files {:.0}, browsers {:.0}",
            self.anonymous,
            self.vectors,
            self.cell_vectors,
            self.model,
            self.seen_set,
            self.storage,
            self.other,
            self.file_backed,
            self.browsers
        )
    }
}

/// The mean memory by part of the nodes up at the end, in a line.
pub fn memory_parts_line(r: &RunReport) -> String {
    let up: Vec<&NodeReport> = r.nodes.iter().filter(|n| n.state == "up" && n.rss_mib > 0.0).collect();
    let n = up.len().max(1) as f64;
    let mean = |f: fn(&MemoryParts) -> f64| up.iter().map(|x| f(&x.memory_parts_mib)).sum::<f64>() / n;
    let parts = MemoryParts {
        anonymous: mean(|m| m.anonymous),
        file_backed: mean(|m| m.file_backed),
        vectors: mean(|m| m.vectors),
        cell_vectors: mean(|m| m.cell_vectors),
        model: mean(|m| m.model),
        seen_set: mean(|m| m.seen_set),
        storage: mean(|m| m.storage),
        browsers: mean(|m| m.browsers),
        other: mean(|m| m.other),
    };
    format!("by part (mean MiB): {}", parts.line())
}

/// Document copies across the nodes up at the end, in a line: copies held against the nodes'
/// own documents (storage as a multiple), pages indexed from a copy instead of fetched.
pub fn copies_line(r: &RunReport) -> String {
    let up: Vec<&NodeReport> = r.nodes.iter().filter(|n| n.state == "up" && n.rss_mib > 0.0).collect();
    let own: u64 = up.iter().map(|n| n.own_documents).sum();
    let copies: u64 = up.iter().map(|n| n.copies).sum();
    let bytes: u64 = up.iter().map(|n| n.copy_bytes).sum();
    let adopted: u64 = r.nodes.iter().map(|n| n.pages_adopted).sum();
    let repaired: u64 = r.nodes.iter().map(|n| n.repair_copies).sum();
    let repair_bytes: u64 = r.nodes.iter().map(|n| n.repair_bytes).sum();
    let plan_ms = r.nodes.iter().map(|n| n.repair_plan_ms).max().unwrap_or(0);
    let rounds: u64 = r.nodes.iter().map(|n| n.compare_rounds).sum();
    let asked: u64 = r.nodes.iter().map(|n| n.copies_asked).sum();
    let sent: u64 = r.nodes.iter().map(|n| n.copies_sent_on_request).sum();
    format!(
        "copies: {copies} held against {own} own documents ({:.1}×, {:.1} MiB); {adopted} pages indexed from a copy instead of fetched; repair sent {repaired} copies ({:.1} MiB) to new holders, its slowest last plan {plan_ms} ms; {rounds} rounds comparing with co-holders asked for {asked} copies, {sent} sent on request",
        copies as f64 / own.max(1) as f64,
        bytes as f64 / (1 << 20) as f64,
        repair_bytes as f64 / (1 << 20) as f64
    )
}

/// Placement by meaning across the nodes up at the end, in a line: what the cell stores hold
/// next to the nodes' own indexes (storage as a multiple, and the fullest store against the
/// mean: the load balance), postings published and refused.
pub fn placement_line(r: &RunReport) -> String {
    let up: Vec<&NodeReport> = r.nodes.iter().filter(|n| n.state == "up" && n.rss_mib > 0.0).collect();
    if up.is_empty() {
        return "no node up".into();
    }
    let own: u64 = up.iter().map(|n| n.own_chunks).sum();
    let held: u64 = up.iter().map(|n| n.cell_chunks).sum();
    let mean = held as f64 / up.len() as f64;
    let max = up.iter().map(|n| n.cell_chunks).max().unwrap_or(0);
    format!(
        "cell stores hold {held} chunks against {own} in the nodes' own indexes ({:.1}×); fullest store {max} chunks, {:.2}× the mean; {} postings published, {} received, {} refused ({} disputed); {} bans in force",
        held as f64 / own.max(1) as f64,
        max as f64 / mean.max(1.0),
        r.nodes.iter().map(|n| n.postings_published).sum::<u64>(),
        r.nodes.iter().map(|n| n.postings_received).sum::<u64>(),
        r.nodes.iter().map(|n| n.postings_refused).sum::<u64>(),
        r.nodes.iter().map(|n| n.postings_disputed).sum::<u64>(),
        r.nodes.iter().map(|n| n.banned_peers).sum::<u64>(),
    )
}

/// Layout learning across the nodes, in a line: teacher runs, templates, pages extracted by
/// a template, pages rendered, browser starts.
pub fn layouts_line(r: &RunReport) -> String {
    let sum = |f: fn(&NodeReport) -> u64| r.nodes.iter().map(f).sum::<u64>();
    format!(
        "{} teacher runs, {} templates, {} pages extracted by a template, {} pages rendered, browsers started {} times",
        sum(|n| n.teacher_runs),
        sum(|n| n.templates),
        sum(|n| n.pages_by_template),
        sum(|n| n.pages_rendered),
        sum(|n| n.browser_starts)
    )
}

/// A churn event as it happened.
#[derive(Debug, Clone, Serialize)]
pub struct Mark {
    pub at_secs: f64,
    pub event: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpecSummary {
    pub nodes: usize,
    pub hosts: usize,
    pub pages: usize,
    pub seed: u64,
    pub duration_secs: u64,
    pub churn: Vec<String>,
    pub delay_ms: u64,
    pub index: bool,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub spec: SpecSummary,
    pub elapsed_secs: f64,
    /// Seconds from the first node's start until every initial node but the seeds node was a
    /// member: when the crawl, and the churn schedule's clock, started.
    pub formed_secs: f64,
    /// The server-side truth: coverage, duplicates, lost URLs, politeness.
    pub web: Report,
    pub nodes: Vec<NodeReport>,
    pub churn: Vec<Mark>,
    /// Per node: (second of the run, successful page fetches in that second).
    pub fetch_rate: BTreeMap<usize, Vec<(u64, usize)>>,
    /// Messages between nodes: URLs exchanged, DHT lookups and publications, in all.
    pub urls_exchanged: u64,
    /// Of the URLs received, those passed on to another member (see [`NodeReport`]).
    pub urls_passed_on: u64,
    pub dht_messages: u64,
    /// Of the record requests, the hops that passed one on (see [`NodeReport`]).
    #[serde(default)]
    pub dht_passed_on: u64,
    pub dedup_hits: u64,
    pub mean_rss_mib: f64,
    /// Open connections per node over the run, every node's samples together: the mean and
    /// the most any node held.
    pub connections_mean: f64,
    pub connections_max: u64,
    pub max_peak_rss_mib: f64,
    /// The search phase, when asked for: recall@10 against an exact index, peers contacted,
    /// latency (every question's record is in `search.json` in the work dir).
    pub search: Option<SearchReport>,
    /// How soon a page just fetched was found from another node, probed during the crawl
    /// (with the search phase).
    pub freshness: Option<super::freshness::FreshnessReport>,
    /// Every article page fetched, read back by its document id through every node up at the
    /// end (with an index).
    pub documents: Option<super::documents::DocumentsReport>,
    /// The roster run beside today's membership (see `runner/roster.rs`).
    pub roster: super::roster::RosterReport,
}
