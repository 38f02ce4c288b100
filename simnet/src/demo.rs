//! `weft demo`: three real nodes on loopback crawl a slice of the synthetic web for about a
//! minute (a progress bar shows pages fetched), index what they fetch, and answer searches;
//! each result says which node answered. Then the server-side truth of the crawl.

use crate::runner::{self, LiveNode, RunError, RunSpec};
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};

/// Questions asked of the network once the crawl is done.
pub const QUESTIONS: [&str; 4] = [
    "how do I back up a database and restore it later",
    "make slow queries faster with an index",
    "what happens when two transactions change the same row",
    "give a user permission to read a table",
];

/// One search result and the node that answered it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub node: usize,
    /// Answered from postings: the cell the chunk was posted to and the node that crawled it.
    pub cell: Option<u32>,
    pub crawled_by: Option<usize>,
    pub score: f64,
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// How a question was routed: the nodes asked as owners of its best cells, with those cells.
pub type Route = Vec<(usize, Vec<u32>)>;

/// Asks the first node to search the network (`scope=network`): it asks the owners of the
/// question's best cells, and merges their
/// answers with its own. Each result is labelled with the node that answered it; the route
/// says which nodes were asked for which cells.
pub async fn ask(http: &reqwest::Client, nodes: &[LiveNode], question: &str, k: usize) -> (Vec<Answer>, Route) {
    let mut node_of = std::collections::HashMap::new();
    for n in nodes {
        let Ok(r) = http.get(format!("http://{}/status", n.api)).send().await else { continue };
        let Ok(v) = r.json::<serde_json::Value>().await else { continue };
        if let Some(id) = v["network"]["peer_id"].as_str() {
            node_of.insert(id.to_string(), n.node);
        }
    }
    let Some(first) = nodes.first() else { return (Vec::new(), Vec::new()) };
    let Ok(v) = crate::search_eval::ask(http, first.api, question, k, false).await else {
        return (Vec::new(), Vec::new());
    };
    let route: Route = v["network"]["by_cell"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            let node = node_of.get(pair[0].as_str()?).copied()?;
            let cells = pair[1].as_array()?.iter().filter_map(|c| c.as_u64().map(|c| c as u32)).collect();
            Some((node, cells))
        })
        .collect();
    let answers = v["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|hit| Answer {
            node: hit["peer"].as_str().and_then(|p| node_of.get(p).copied()).unwrap_or(first.node),
            cell: hit["cell"].as_u64().map(|c| c as u32),
            crawled_by: hit["crawled_by"].as_str().and_then(|p| node_of.get(p).copied()),
            score: hit["rank_score"].as_f64().unwrap_or(0.0),
            title: hit["title"].as_str().unwrap_or_default().to_string(),
            url: hit["url"].as_str().unwrap_or_default().to_string(),
            snippet: hit["snippet"].as_str().unwrap_or_default().to_string(),
        })
        .collect();
    (answers, route)
}

/// Waits until no node has pages waiting for the embedder (at most `limit`).
async fn indexed(http: &reqwest::Client, nodes: &[LiveNode], limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let mut waiting = 0;
        for n in nodes {
            let Ok(r) = http.get(format!("http://{}/status", n.api)).send().await else { continue };
            let v: serde_json::Value = r.json().await.unwrap_or_default();
            waiting += v["index"]["queue"].as_u64().unwrap_or(0);
        }
        if waiting == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn shorten(s: &str, max: usize) -> String {
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Questions the search page is timed with: page titles the network holds.
const TIMED_QUESTIONS: usize = 100;

/// Runs the demo of `spec` (three nodes, a small web, no churn); the nodes stay up `linger`
/// after the questions, for a person to open the dashboard and the search page.
pub async fn run(spec: &RunSpec, linger: Duration) -> Result<(), RunError> {
    println!(
        "Weft demo: {} nodes on 127.0.0.1 crawl {} pages of the PostgreSQL manual served as {} web sites, \
         politely ({} ms between requests to a host, robots.txt obeyed), and index them by meaning.",
        spec.nodes, spec.web.pages, spec.web.hosts, spec.delay_ms
    );
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let bar = ProgressBar::new(1);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:40.cyan/blue}] {pos}/{len} pages  {msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    let http = reqwest::Client::builder().no_proxy().build().map_err(|e| RunError::Io(e.to_string()))?;
    let report = runner::run_with(
        spec,
        |p| {
            if !tty && p.elapsed.as_secs() % 10 == 0 {
                // No progress bar without a terminal: a line every ten seconds instead.
                eprintln!(
                    "[{:>3}s] {}/{} pages fetched, {} nodes crawling",
                    p.elapsed.as_secs(),
                    p.covered,
                    p.reachable,
                    p.alive
                );
            }
            bar.set_length(p.reachable as u64);
            bar.set_position(p.covered as u64);
            bar.set_message(format!("{} nodes crawling", p.alive));
        },
        async |nodes: &[LiveNode]| {
            bar.finish_with_message("crawl done");
            let spinner = ProgressBar::new_spinner();
            spinner.set_message("indexing the last pages");
            spinner.enable_steady_tick(Duration::from_millis(120));
            indexed(&http, nodes, Duration::from_secs(90)).await;
            spinner.finish_and_clear();
            for question in QUESTIONS {
                println!("\nweft search \"{question}\"   (asked at node {}, answered by the network)", nodes[0].node);
                let (answers, route) = ask(&http, nodes, question, 3).await;
                if !route.is_empty() {
                    let asked: Vec<String> = route
                        .iter()
                        .map(|(node, cells)| {
                            let cells: Vec<String> = cells.iter().map(u32::to_string).collect();
                            format!("node {node} for cells {}", cells.join(", "))
                        })
                        .collect();
                    println!("  asked by meaning: {}", asked.join("; "));
                }
                if answers.is_empty() {
                    println!("  (no answers yet)");
                }
                for a in answers {
                    let from = match (a.cell, a.crawled_by) {
                        (Some(cell), Some(by)) => format!(" (cell {cell}, crawled by node {by})"),
                        (Some(cell), None) => format!(" (cell {cell}, its own crawl)"),
                        _ => String::new(),
                    };
                    println!("  {:.2}  node {}{from}  {}  {}", a.score, a.node, a.title, a.url);
                    println!("        {}", shorten(&a.snippet, 110));
                }
            }
            let api = nodes[0].api;
            println!("\nThe dashboard: http://{api}/   The search page: http://{api}/find");
            let mut titles = Vec::new();
            for n in nodes {
                let more = crate::find_timing::titles(&http, n.api, TIMED_QUESTIONS - titles.len()).await;
                titles.extend(more);
            }
            if let Some(t) = crate::find_timing::time(&http, api, &titles).await {
                println!(
                    "  {} questions through the search page (page titles, asked of the network): first byte \
                     p50 {:.0} ms, p95 {:.0} ms; a page of results {:.1} KB; {} partial",
                    t.questions, t.p50_ms, t.p95_ms, t.mean_kb, t.partial
                );
            }
            if !linger.is_zero() {
                println!("  the nodes stay up for {} s (--linger): open the addresses above", linger.as_secs());
                tokio::time::sleep(linger).await;
            }
        },
    )
    .await?;
    let w = &report.web;
    println!("\nWhat the web server saw (its own log, not what the nodes claim):");
    println!("  reachable pages fetched  {}/{} ({:.1}%)", w.covered, w.reachable, w.coverage * 100.0);
    println!("  fetched twice            {} ({:.1}%)", w.duplicate_fetches, w.duplicate_rate * 100.0);
    println!("  politeness violations    {}", w.politeness_violations.len());
    println!(
        "  other requests           {} robots.txt, {} sitemaps, {} scripts of rendered pages",
        w.robots_requests, w.sitemap_requests, w.subresource_requests
    );
    println!("  layouts                  {}", crate::runner::layouts_line(&report));
    for n in &report.nodes {
        println!(
            "  node {}: {} pages fetched, owns {:.0}% of the ring, {} near-duplicates recognised, {:.0} MiB resident",
            n.node,
            n.fetches,
            n.ring_share * 100.0,
            n.dedup_hits,
            n.rss_mib
        );
        println!("          memory by part, MiB: {}", n.memory_parts_mib.line());
    }
    Ok(())
}
