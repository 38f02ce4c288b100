//! How fast a node's search page answers a person: the time to the first byte of `/find` for a
//! network question (the page is rendered once the answer is merged, so the first byte is the
//! whole wait), and the page's size. `weft demo` prints it for its network.

use std::net::SocketAddr;
use std::time::Instant;

/// The search page's figures over a set of questions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PageTiming {
    pub questions: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    /// A page's size, mean, in KB.
    pub mean_kb: f64,
    /// Pages that said the answer was partial.
    pub partial: usize,
}

/// Up to `n` titles of the documents `api`'s node holds (in id order: a draw across its hosts):
/// questions whose pages the network has.
pub async fn titles(http: &reqwest::Client, api: SocketAddr, n: usize) -> Vec<String> {
    let url = format!("http://{api}/documents?limit={n}");
    let Ok(r) = http.get(url).send().await else { return Vec::new() };
    let Ok(v) = r.json::<serde_json::Value>().await else { return Vec::new() };
    v["documents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["title"].as_str().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string))
        .take(n)
        .collect()
}

/// Questions asked a second at most: a household's pace is far below it, and each question
/// asks its peers, which answer a peer's `search.peer_queries_per_sec` (20) and refuse the
/// rest as busy — a flood would time the refusals.
const PER_SEC: f64 = 10.0;

/// Asks `/find` each question in turn, [`PER_SEC`] a second at most; `None` when none was
/// answered.
pub async fn time(http: &reqwest::Client, api: SocketAddr, questions: &[String]) -> Option<PageTiming> {
    let (mut ms, mut bytes, mut partial) = (Vec::new(), 0usize, 0usize);
    let mut pace = tokio::time::interval(std::time::Duration::from_secs_f64(1.0 / PER_SEC));
    for q in questions {
        pace.tick().await;
        let started = Instant::now();
        let Ok(r) = http.get(format!("http://{api}/find")).query(&[("q", q)]).send().await else { continue };
        // `send` returns with the response's head: the first byte has arrived.
        let first_byte = started.elapsed().as_secs_f64() * 1e3;
        if !r.status().is_success() {
            continue;
        }
        let Ok(body) = r.text().await else { continue };
        ms.push(first_byte);
        bytes += body.len();
        partial += usize::from(body.contains("id=\"partial\""));
    }
    if ms.is_empty() {
        return None;
    }
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    Some(PageTiming {
        questions: ms.len(),
        p50_ms: at(0.5),
        p95_ms: at(0.95),
        mean_kb: bytes as f64 / ms.len() as f64 / 1000.0,
        partial,
    })
}
