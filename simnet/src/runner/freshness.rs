//! How soon a page is found: while the nodes crawl, every [`EVERY`] an article page just fetched
//! is asked for by its title at another node (by meaning, routed as a user's question is),
//! every [`POLL`], until the page is among the top 10 or [`GIVE_UP`] has passed. The time from
//! the web server answering the fetch to the first answer that holds the page covers
//! extraction, embedding, publishing the postings to the cells' owners and their storing them
//! — what a volunteer waits for between a page being crawled and the network finding it.
//!
//! The probes' questions are also the run's questions asked *while* the network crawls and
//! embeds: their latency (`took_ms` as the asked node reports it) is reported beside the
//! question phase's, which comes after the crawl.
//!
//! A title can be too plain for its page ever to reach the top 10 (an "Overview" among many);
//! such a probe is reported as not found, not dropped.

use super::user_agent;
use crate::docs::DocsWeb;
use crate::search_eval;
use crate::web::{Request, WebServer};
use serde::Serialize;
use std::time::{Duration, Instant};

/// A probe starts this often while the crawl goes on.
pub(super) const EVERY: Duration = Duration::from_secs(10);
/// A probe asks again this often ...
const POLL: Duration = Duration::from_millis(500);
/// ... for this long at most.
const GIVE_UP: Duration = Duration::from_secs(120);

/// One page probed.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub url: String,
    pub question: String,
    /// The node that fetched it, and the node asked.
    pub fetched_by: Option<usize>,
    pub asked: usize,
    /// Seconds from the fetch's answer to the first answer holding the page.
    pub found_after_secs: Option<f64>,
    pub questions: usize,
    /// Each answered question's time at the asked node, ms.
    pub took_ms: Vec<f64>,
}

/// Every probe of the run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct FreshnessReport {
    pub probes: Vec<Probe>,
    pub found: usize,
    pub p50_secs: f64,
    pub p95_secs: f64,
    pub max_secs: f64,
    /// The probes' questions, all asked during the crawl: how many were answered, and their
    /// p50 / p95 latency in ms.
    pub questions_answered: usize,
    pub question_ms_p50: f64,
    pub question_ms_p95: f64,
}

impl FreshnessReport {
    fn of(probes: Vec<Probe>) -> FreshnessReport {
        let mut times: Vec<f64> = probes.iter().filter_map(|p| p.found_after_secs).collect();
        times.sort_by(f64::total_cmp);
        let at = |times: &[f64], q: f64| {
            times.get(((times.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0)
        };
        let mut ms: Vec<f64> = probes.iter().flat_map(|p| p.took_ms.iter().copied()).collect();
        ms.sort_by(f64::total_cmp);
        FreshnessReport {
            found: times.len(),
            p50_secs: at(&times, 0.5),
            p95_secs: at(&times, 0.95),
            max_secs: at(&times, 1.0),
            questions_answered: ms.len(),
            question_ms_p50: at(&ms, 0.5),
            question_ms_p95: at(&ms, 0.95),
            probes,
        }
    }

    /// The report's line.
    pub fn summary(&self) -> String {
        format!(
            "{} of {} pages probed found from another node within {} s of their fetch; p50 {:.1} s, p95 {:.1} s, max {:.1} s; \
             their {} questions, asked during the crawl: p50 {:.0} ms, p95 {:.0} ms",
            self.found,
            self.probes.len(),
            GIVE_UP.as_secs(),
            self.p50_secs,
            self.p95_secs,
            self.max_secs,
            self.questions_answered,
            self.question_ms_p50,
            self.question_ms_p95
        )
    }
}

/// The probes of a run.
pub(super) struct Freshness {
    /// How much of the server's log was looked at.
    seen: usize,
    last: Option<Instant>,
    running: Vec<tokio::task::JoinHandle<Probe>>,
}

impl Freshness {
    pub(super) fn new() -> Freshness {
        Freshness { seen: 0, last: None, running: Vec::new() }
    }

    /// Starts a probe if one is due: the latest article page fetched since the last look,
    /// asked at the node after its fetcher among `up` (node, API address).
    pub(super) fn tick(
        &mut self,
        log: &[Request],
        web: &DocsWeb,
        server: &WebServer,
        up: &[(usize, std::net::SocketAddr)],
        http: &reqwest::Client,
    ) {
        if self.last.is_some_and(|t| t.elapsed() < EVERY) || up.len() < 2 {
            return;
        }
        let fresh = &log[self.seen.min(log.len())..];
        self.seen = log.len();
        let Some((r, title)) = fresh.iter().rev().find_map(|r| {
            let title = web.titles.get(&(r.host.clone(), r.path.clone()))?;
            (200..300).contains(&r.status).then_some((r, title))
        }) else {
            return;
        };
        self.last = Some(Instant::now());
        let fetched_by = up.iter().map(|(n, _)| *n).find(|n| r.user_agent.starts_with(&user_agent(*n)));
        let at = fetched_by.and_then(|f| up.iter().position(|(n, _)| *n == f)).map_or(0, |i| (i + 1) % up.len());
        let (asked, api) = up[at];
        let url = server.url(&r.host, &r.path);
        let question = search_eval::question(title);
        let fetched = r.answered;
        let http = http.clone();
        self.running.push(tokio::spawn(async move {
            let mut probe =
                Probe { url, question, fetched_by, asked, found_after_secs: None, questions: 0, took_ms: Vec::new() };
            while fetched.elapsed() < GIVE_UP {
                probe.questions += 1;
                if let Ok(v) = search_eval::ask(&http, api, &probe.question, 10, true).await {
                    probe.took_ms.extend(v["took_ms"].as_f64());
                    let holds = v["hits"].as_array().into_iter().flatten().any(|h| {
                        h["url"] == probe.url.as_str()
                            || h["aliases"].as_array().into_iter().flatten().any(|a| a == probe.url.as_str())
                    });
                    if holds {
                        probe.found_after_secs = Some(fetched.elapsed().as_secs_f64());
                        break;
                    }
                }
                tokio::time::sleep(POLL).await;
            }
            probe
        }));
    }

    /// Waits for the probes still running (each ends within [`GIVE_UP`] of its fetch).
    pub(super) async fn report(self) -> FreshnessReport {
        let mut probes = Vec::new();
        for task in self.running {
            if let Ok(p) = task.await {
                probes.push(p);
            }
        }
        FreshnessReport::of(probes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(found: Option<f64>) -> Probe {
        Probe {
            url: "http://a.test/".into(),
            question: "q".into(),
            fetched_by: Some(0),
            asked: 1,
            found_after_secs: found,
            questions: 1,
            took_ms: found.map(|s| s * 10.0).into_iter().collect(),
        }
    }

    #[test]
    fn the_figures_count_found_probes_only() {
        let r = FreshnessReport::of(vec![probe(Some(3.0)), probe(None), probe(Some(1.0)), probe(Some(2.0))]);
        assert_eq!((r.found, r.probes.len()), (3, 4));
        assert_eq!((r.p50_secs, r.max_secs), (2.0, 3.0));
        assert_eq!((r.questions_answered, r.question_ms_p50, r.question_ms_p95), (3, 20.0, 30.0));
        let none = FreshnessReport::of(vec![probe(None)]);
        assert_eq!((none.found, none.p50_secs), (0, 0.0));
        assert!(none.summary().starts_with("0 of 1 pages"));
    }
}
