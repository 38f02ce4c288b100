//! After the crawl: is every page the network indexed still readable — from every node up,
//! whoever crawled it and whether its crawler is still there? Each article page fetched in
//! the run is read by its document id through every live node's API
//! (`GET /documents/{id}`, which answers from the node's own index, a copy it holds, or a
//! copy read from a holder over `/weft/doc/1`), and where each answer came from is counted.
//!
//! Up to [`READ_ALL_UP_TO`] nodes every page is read through every node. On a larger network
//! that is pages × nodes reads (50,000 at 50 nodes, more than a loaded box answers in a quarter
//! of an hour), so each page is read through [`SAMPLE`] nodes instead, taken in rotation so that
//! every node answers about as many reads; "everywhere" then means "from every node asked", and
//! the holders' count (which needs every node) is left out. The reads stop after [`BUDGET`]:
//! reads not made by then are counted as such, not as misses.

use futures_util::StreamExt;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Reads in flight at once.
const CONCURRENT: usize = 8;
/// Networks up to this size read every page through every node ...
pub const READ_ALL_UP_TO: usize = 20;
/// ... larger ones through this many nodes per page.
pub const SAMPLE: usize = 10;
/// Reads not started within this long are skipped (and counted).
pub const BUDGET: Duration = Duration::from_secs(600);

/// What reading every page back found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DocumentsReport {
    /// Article pages fetched in the run (their documents are what should be readable).
    pub pages: usize,
    /// Nodes up, and how many of them each page was read through (all of them up to
    /// [`READ_ALL_UP_TO`], else [`SAMPLE`]).
    pub nodes: usize,
    pub asked_per_page: usize,
    /// Pages readable from at least one node, and from every node asked.
    pub found: usize,
    pub everywhere: usize,
    /// Reads in all, reads that found nothing, and reads skipped when [`BUDGET`] ran out
    /// (then only the first `reached` pages were read at all).
    pub reads: usize,
    pub missed: usize,
    pub skipped: usize,
    pub reached: usize,
    /// Reads by where the answer came from: `local`, `copy`, `peer`.
    pub by_source: BTreeMap<String, usize>,
    /// Read latency by source, milliseconds: (p50, p95).
    pub ms: BTreeMap<String, (f64, f64)>,
    /// A few of the pages no node could read, and of those some nodes could not.
    pub lost: Vec<String>,
    pub partial: Vec<String>,
    /// Pages some node answered as an alias (a near duplicate of another page, recorded by the
    /// node that fetched it and not indexed: no copies are made of it), and of those, the ones
    /// not readable from every node.
    pub aliases: usize,
    pub aliases_not_everywhere: usize,
    /// Pages by how many nodes up hold them — as their own document (`local`) or a copy
    /// (`copy`) — (aliases left out: no copies are made of them). With `index.replicas` = r,
    /// a page whose crawler is up should have r + 1, one whose crawler is gone r (on a network
    /// of more than r nodes). Empty when the pages were read through a sample of the nodes.
    pub holders: BTreeMap<usize, usize>,
}

/// The document id of `url` as the nodes spell it (the normalized URL's).
fn doc_of(url: &str) -> Option<String> {
    let normalized = weft_url::normalize(url, None).ok()?;
    Some(weft_index::DocId::of_url(normalized.as_str()).hex())
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// One read of a page through one node.
enum Read {
    /// Answered: where from (`local`, `copy`, `peer`), and whether as an alias.
    Found(String, bool),
    Missed,
    /// Not made: the [`BUDGET`] had run out.
    Skipped,
}

/// The nodes (indexes into the `n` apis) page `i` is read through: all of them on a small
/// network, else [`SAMPLE`] consecutive ones starting where the previous page's ended, so every
/// node answers about as many reads.
fn asked(i: usize, n: usize) -> Vec<usize> {
    let k = asked_per_page(n);
    (0..k).map(|j| (i * k + j) % n).collect()
}

/// How many of `n` nodes each page is read through.
fn asked_per_page(n: usize) -> usize {
    if n <= READ_ALL_UP_TO {
        n
    } else {
        SAMPLE
    }
}

/// Reads each of `urls` through each of `apis` (or a sample of them: see the module doc).
pub async fn read_back(http: &reqwest::Client, apis: &[SocketAddr], urls: &[String]) -> DocumentsReport {
    let jobs: Vec<(usize, SocketAddr, String)> = urls
        .iter()
        .enumerate()
        .filter_map(|(i, u)| doc_of(u).map(|d| (i, d)))
        .flat_map(|(i, d)| asked(i, apis.len()).into_iter().map(move |a| (i, a, d.clone())))
        .map(|(i, a, d)| (i, apis[a], d))
        .collect();
    let begun = Instant::now();
    let answers: Vec<(usize, Read, f64)> = futures_util::stream::iter(jobs)
        .map(|(i, api, doc)| async move {
            if begun.elapsed() > BUDGET {
                return (i, Read::Skipped, 0.0);
            }
            let started = Instant::now();
            let reply = http.get(format!("http://{api}/documents/{doc}")).send().await;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let source = match reply {
                Ok(r) if r.status().is_success() => r.json::<serde_json::Value>().await.ok().and_then(|v| {
                    let alias = v["state"] == "alias";
                    v["source"]["held"].as_str().map(|s| (s.to_string(), alias))
                }),
                _ => None,
            };
            (i, source.map_or(Read::Missed, |(s, alias)| Read::Found(s, alias)), ms)
        })
        .buffer_unordered(CONCURRENT)
        .collect()
        .await;
    let asked_per_page = asked_per_page(apis.len());
    let mut report = DocumentsReport { pages: urls.len(), nodes: apis.len(), asked_per_page, ..Default::default() };
    let mut per_page = vec![0usize; urls.len()];
    let mut held = vec![0usize; urls.len()];
    let mut alias = vec![false; urls.len()];
    let mut ms: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut reached = vec![false; urls.len()];
    for (i, read, t) in answers {
        if let Read::Skipped = read {
            report.skipped += 1;
            continue;
        }
        report.reads += 1;
        reached[i] = true;
        let Read::Found(s, is_alias) = read else {
            report.missed += 1;
            continue;
        };
        per_page[i] += 1;
        held[i] += usize::from(s == "local" || s == "copy");
        alias[i] |= is_alias;
        *report.by_source.entry(s.clone()).or_default() += 1;
        ms.entry(s).or_default().push(t);
    }
    report.found = per_page.iter().filter(|n| **n > 0).count();
    report.reached = reached.iter().filter(|r| **r).count();
    if asked_per_page == apis.len() {
        for (h, _) in held.iter().zip(&alias).filter(|(_, a)| !**a) {
            *report.holders.entry(*h).or_default() += 1;
        }
    }
    report.aliases = alias.iter().filter(|a| **a).count();
    report.aliases_not_everywhere = alias.iter().zip(&per_page).filter(|(a, n)| **a && **n < asked_per_page).count();
    report.everywhere = per_page.iter().filter(|n| **n == asked_per_page).count();
    report.lost = per_page.iter().zip(urls).filter(|(n, _)| **n == 0).map(|(_, u)| u.clone()).take(10).collect();
    report.partial = per_page
        .iter()
        .zip(urls)
        .filter(|(n, _)| **n > 0 && **n < asked_per_page)
        .map(|(n, u)| format!("{u} ({n})"))
        .take(10)
        .collect();
    for (s, mut v) in ms {
        v.sort_by(f64::total_cmp);
        report.ms.insert(s, (percentile(&v, 0.5), percentile(&v, 0.95)));
    }
    report
}

/// The report in a few lines, for the console.
pub fn summary(r: &DocumentsReport) -> String {
    let sources: Vec<String> = r
        .by_source
        .iter()
        .map(|(s, n)| {
            let (p50, p95) = r.ms.get(s).copied().unwrap_or_default();
            format!("{s} {n} (p50 {p50:.1} / p95 {p95:.1} ms)")
        })
        .collect();
    let asked = if r.asked_per_page == r.nodes {
        format!("from all {} nodes up", r.nodes)
    } else {
        format!("from all {} nodes asked of {} up", r.asked_per_page, r.nodes)
    };
    let skipped = if r.skipped > 0 {
        format!(" ({} reads skipped: the time ran out after {} of the pages were read)", r.skipped, r.reached)
    } else {
        String::new()
    };
    let holders = if r.asked_per_page < r.nodes {
        "not counted (a sample of the nodes was asked)".to_string()
    } else {
        r.holders.iter().map(|(h, n)| format!("{h}: {n}")).collect::<Vec<_>>().join(", ")
    };
    format!(
        "documents: {} of {} article pages readable from some node, {} {asked}; {} of {} reads \
         answered ({}), {} missed{skipped}; {} of the pages are aliases (near duplicates, not indexed: read only \
         where they were fetched), {} of them not from every node asked; pages by holders up (own or copy): \
         {holders}",
        r.found,
        r.pages,
        r.everywhere,
        r.reads - r.missed,
        r.reads,
        sources.join(", "),
        r.missed,
        r.aliases,
        r.aliases_not_everywhere,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pages_id_is_its_normalized_urls() {
        assert_eq!(doc_of("http://a.test:8080/p"), Some(weft_index::DocId::of_url("http://a.test:8080/p").hex()));
        assert_eq!(doc_of("not a url"), None);
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 0.5), 2.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn a_large_network_is_read_through_a_rotating_sample() {
        assert_eq!(asked(3, 5), vec![0, 1, 2, 3, 4]);
        assert_eq!(asked(7, READ_ALL_UP_TO).len(), READ_ALL_UP_TO);
        // 50 nodes: 10 per page, consecutive, each node asked as often as the others.
        assert_eq!(asked(0, 50), (0..10).collect::<Vec<_>>());
        assert_eq!(asked(4, 50), (40..50).collect::<Vec<_>>());
        assert_eq!(asked(5, 50), (0..10).collect::<Vec<_>>());
        let mut per_node = vec![0usize; 50];
        for i in 0..100 {
            for n in asked(i, 50) {
                per_node[n] += 1;
            }
        }
        assert!(per_node.iter().all(|n| *n == 20));
    }
}

/// The pages whose copies the nodes at `apis` hold (`GET /copies`, page by page), as (host,
/// path): taken just after a kill, it tells a page fetched again because no copy of it
/// survived from one fetched again although one did.
pub async fn held_copies(http: &reqwest::Client, apis: &[SocketAddr]) -> std::collections::HashSet<(String, String)> {
    let mut out = std::collections::HashSet::new();
    for api in apis {
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("http://{api}/copies?limit=500");
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let Ok(reply) = http.get(url).send().await else { break };
            let Ok(page) = reply.json::<serde_json::Value>().await else { break };
            for copy in page["copies"].as_array().into_iter().flatten() {
                if let Some(u) = copy["url"].as_str().and_then(|u| reqwest::Url::parse(u).ok()) {
                    let path = match u.query() {
                        Some(q) => format!("{}?{q}", u.path()),
                        None => u.path().to_string(),
                    };
                    out.insert((u.host_str().unwrap_or_default().to_string(), path));
                }
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_string()),
                None => break,
            }
        }
    }
    out
}
