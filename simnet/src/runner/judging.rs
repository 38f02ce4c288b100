//! The run's report: the server's log judged against what the web allows (politeness, robots,
//! no page fetched twice, no page lost), each node's figures from its last status and its
//! requests, and what the run found (churn marks, search, freshness, documents read back).

use super::documents::DocumentsReport;
use super::freshness::FreshnessReport;
use super::node::{user_agent, Node, State};
use super::reports::{Mark, MemoryParts, NodeReport, RunReport, SpecSummary};
use super::sim::Sim;
use super::Times;
use crate::docs;
use crate::report::{self, Expectations};
use crate::search_eval::SearchReport;
use crate::web::Request;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What the run found besides the log and the nodes' statuses.
pub(super) struct Found {
    pub marks: Vec<Mark>,
    pub search: Option<SearchReport>,
    pub freshness: Option<FreshnessReport>,
    pub documents: Option<DocumentsReport>,
}

/// The report of a run that ended.
pub(super) fn run_report(sim: &Sim<'_>, log: &[Request], times: Times, found: Found) -> RunReport {
    let (spec, web) = (sim.spec, sim.web);
    let expect = Expectations {
        reachable: &web.reachable,
        gaps: &web.gaps,
        default_gap: Duration::from_millis(spec.delay_ms),
        disallowed: &web.disallowed,
        retry_after: Duration::from_secs(docs::RETRY_AFTER_SECS),
        start: Some(times.started),
        kills: &sim.kills,
        leaves: &sim.leaves,
        held_at_kill: &sim.held_at_kill,
    };
    let judged = report::judge(log, &expect);
    let mut fetch_rate: BTreeMap<usize, Vec<(u64, usize)>> = BTreeMap::new();
    let mut nodes = Vec::new();
    for node in &sim.nodes {
        let (report, rate) = node_report(node, log, times.started, times.elapsed);
        fetch_rate.insert(node.n, rate);
        nodes.push(report);
    }
    let up: Vec<&NodeReport> = nodes.iter().filter(|n| n.rss_mib > 0.0).collect();
    RunReport {
        spec: SpecSummary {
            nodes: spec.nodes,
            hosts: spec.web.hosts,
            pages: spec.web.pages,
            seed: spec.web.seed,
            duration_secs: spec.duration.as_secs(),
            churn: spec.churn.iter().map(|e| format!("{:?}@{}s", e.action, e.at.as_secs())).collect(),
            delay_ms: spec.delay_ms,
            index: spec.index,
        },
        elapsed_secs: times.elapsed.as_secs_f64(),
        formed_secs: times.crawl_started.saturating_duration_since(times.started).as_secs_f64(),
        web: judged,
        urls_exchanged: nodes.iter().map(|n| n.urls_sent).sum(),
        urls_passed_on: nodes.iter().map(|n| n.urls_passed_on).sum(),
        dht_messages: nodes.iter().map(|n| n.dht_lookups + n.dht_published).sum(),
        dht_passed_on: nodes.iter().map(|n| n.dht_passed_on).sum(),
        dedup_hits: nodes.iter().map(|n| n.dedup_hits).sum(),
        mean_rss_mib: if up.is_empty() { 0.0 } else { up.iter().map(|n| n.rss_mib).sum::<f64>() / up.len() as f64 },
        max_peak_rss_mib: nodes.iter().map(|n| n.peak_rss_mib).fold(0.0, f64::max),
        connections_mean: {
            let all: Vec<u64> = sim.nodes.iter().flat_map(|n| n.connections.iter().copied()).collect();
            all.iter().sum::<u64>() as f64 / all.len().max(1) as f64
        },
        connections_max: nodes.iter().map(|n| n.connections_max).max().unwrap_or(0),
        nodes,
        churn: found.marks,
        fetch_rate,
        search: found.search,
        freshness: found.freshness,
        documents: found.documents,
        roster: sim.roster.report(),
    }
}

/// One node's figures, from its requests in the log and its last status; and its page fetches
/// per second of the run.
fn node_report(node: &Node, log: &[Request], started: Instant, elapsed: Duration) -> (NodeReport, Vec<(u64, usize)>) {
    let agent = user_agent(node.n);
    let mine: Vec<&Request> = log.iter().filter(|r| r.user_agent.starts_with(&agent)).collect();
    let ok: Vec<&&Request> = mine.iter().filter(|r| (200..300).contains(&r.status) && report::is_page(r)).collect();
    let mut per_sec: BTreeMap<u64, usize> = BTreeMap::new();
    for r in &ok {
        *per_sec.entry(r.started.saturating_duration_since(started).as_secs()).or_default() += 1;
    }
    let rate = (0..=elapsed.as_secs()).map(|s| (s, per_sec.get(&s).copied().unwrap_or(0))).collect();
    let s = node.status.clone().unwrap_or_default();
    let net = &s["network"];
    let u = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let report = NodeReport {
        node: node.n,
        peer_id: net["peer_id"].as_str().unwrap_or_default().to_string(),
        state: match node.state {
            State::Up => "up",
            State::Killed => "killed",
            State::Leaving | State::Left => "left",
        }
        .to_string(),
        fetches: ok.len(),
        requests: mine.len(),
        ring_share: if node.state == State::Up { net["ring_share"].as_f64().unwrap_or(0.0) } else { 0.0 },
        dedup_hits: u(&s["index"]["pages_aliased"]),
        urls_sent: u(&net["urls_sent"]),
        urls_received: u(&net["urls_received"]),
        urls_passed_on: u(&net["urls_forwarded"]),
        grid_links: u(&net["grid"]["links"]),
        dht_lookups: u(&net["dht_lookups"]),
        dht_published: u(&net["dht_published"]),
        dht_passed_on: u(&net["dht_forwarded"]),
        rss_mib: node.rss_kib as f64 / 1024.0,
        peak_rss_mib: node.peak_kib as f64 / 1024.0,
        connections_mean: node.connections.iter().sum::<u64>() as f64 / node.connections.len().max(1) as f64,
        connections_max: node.connections.iter().copied().max().unwrap_or(0),
        memory_parts_mib: {
            let m = |k: &str| s["memory"][k].as_f64().unwrap_or(0.0) / (1u64 << 20) as f64;
            MemoryParts {
                anonymous: m("anonymous"),
                file_backed: m("file_backed"),
                vectors: m("vectors"),
                cell_vectors: m("cell_vectors"),
                model: m("model"),
                seen_set: m("seen_set"),
                storage: m("storage"),
                browsers: m("browsers"),
                other: m("other"),
            }
        },
        teacher_runs: u(&s["extraction"]["teacher:runs"]),
        templates: u(&s["layouts"]["templates"]),
        pages_by_template: u(&s["extraction"]["layout:template"]),
        pages_rendered: u(&s["extraction"]["render:rendered"]),
        browser_starts: u(&s["layouts"]["browser_starts"]),
        own_chunks: u(&s["index"]["chunks"]),
        cell_chunks: u(&s["index"]["cells"]["chunks"]),
        cells_owned: u(&net["postings"]["cells_owned"]),
        postings_published: u(&net["postings"]["published"]),
        postings_received: u(&net["postings"]["received"]),
        postings_refused: u(&net["postings"]["refused"]),
        postings_disputed: u(&net["postings"]["disputed"]),
        banned_peers: u(&net["banned_peers"]),
        own_documents: u(&s["index"]["documents"]),
        copies: u(&s["index"]["cells"]["copies"]),
        copy_bytes: u(&s["index"]["cells"]["copy_bytes"]),
        copies_received: u(&net["postings"]["replicas_received"]),
        copies_refused: u(&net["postings"]["replicas_refused"]),
        pages_adopted: u(&s["pages_adopted"]),
        repair_copies: u(&s["index"]["cells"]["repair"]["copies_sent"]),
        repair_bytes: u(&s["index"]["cells"]["repair"]["bytes_sent"]),
        repair_rounds: u(&s["index"]["cells"]["repair"]["rounds"]),
        repair_plan_ms: u(&s["index"]["cells"]["repair"]["last_plan_ms"]),
        compare_rounds: u(&s["index"]["cells"]["repair"]["compare_rounds"]),
        copies_asked: u(&s["index"]["cells"]["repair"]["copies_asked"]),
        copies_sent_on_request: u(&s["index"]["cells"]["repair"]["copies_sent_on_request"]),
    };
    (report, rate)
}
