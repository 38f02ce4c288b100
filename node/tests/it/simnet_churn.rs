//! The simulator's CI scenario: five real `weft` processes (the default configuration: index
//! on with the real model, layout learning on with Chromium) crawl the PostgreSQL-manual web
//! (20 hosts, 250 pages, one pathology per host, JavaScript shells on one) and four news sites
//! in four designs while node 3 is killed
//! with SIGKILL and restarted, a sixth node joins and node 1 leaves for good. Judged from the
//! web server's own log: coverage, politeness, lost URLs, duplicate fetches. Then sixty
//! questions are asked of the network and judged against exact kNN over every node's chunks.

use crate::common;
use std::time::Duration;
use weft_simnet::churn;
use weft_simnet::docs::{docs_dir, WebSpec};
use weft_simnet::runner::{run, RunSpec};
use weft_simnet::search_eval::SearchSpec;
use weft_test_support::failures::WorkDir;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_nodes_with_a_crash_a_join_and_a_leave_crawl_everything_politely_once() {
    let _one = common::one_network_at_a_time();
    // Kept under target/test-failures/ if the test fails (SIMNET_KEEP=1: kept anyway).
    let work = WorkDir::new("simnet_churn-five_nodes").unwrap();
    let work_path = work.path().to_path_buf();
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let spec = RunSpec {
        weft: env!("CARGO_BIN_EXE_weft").into(),
        work_dir: work_path.clone(),
        nodes: 5,
        web: WebSpec { hosts: 20, pages: 250, seed: 1, ..WebSpec::default() },
        docs: docs_dir(),
        // A bound, not a goal: the run ends as soon as every reachable page is fetched. With 500
        // pages that took 234 s on a quiet day here and 375–400+ s on two shared cores; 250
        // (every host and its pathology kept, the crawl still running through the last churn
        // event at 40 s) reach the same assertions in 210 s beside another test. Pages not
        // fetched by the bound count as lost.
        duration: Duration::from_secs(600),
        churn: churn::parse("kill:3@15s,restart:3@25s,join:1@30s,leave:1@40s", 5).unwrap(),
        delay_ms: 250,
        index: true,
        models,
        until_covered: true,
        search: Some(SearchSpec { queries: 60, interval: Duration::from_millis(50), churn: Vec::new(), fanout: None }),
    };
    let report = run(&spec, |p| {
        for e in &p.events {
            eprintln!("[{:>3}s] {e}", p.elapsed.as_secs());
        }
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let w = &report.web;
    let summary = serde_json::to_string_pretty(&report).unwrap();
    eprintln!(
        "coverage {}/{}, duplicates {} ({:.2}%) + {} after kills, lost {}, violations {}, {:.0} s",
        w.covered,
        w.reachable,
        w.duplicate_fetches,
        w.duplicate_rate * 100.0,
        w.duplicates_after_kill,
        w.lost.len(),
        w.politeness_violations.len(),
        report.elapsed_secs
    );
    eprintln!("roster: {}", weft_simnet::runner::roster_line(&report.roster));

    let events: Vec<&str> = report.churn.iter().map(|m| m.event.as_str()).collect();
    assert_eq!(events, ["kill 3", "restart 3", "join 5", "leave 1"]);
    assert_eq!(report.nodes.len(), 6);
    assert_eq!(report.nodes[1].state, "left");
    // Per node, in one line: the whole summary is too long for a CI log's excerpt.
    let nodes: Vec<String> = report
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{} {} fetches {} requests {} ring {:.2} sent {} received {}",
                n.node, n.state, n.fetches, n.requests, n.ring_share, n.urls_sent, n.urls_received
            )
        })
        .collect();
    eprintln!("nodes: {nodes:?}");
    // Every node up from the start crawled. Not necessarily the one that joined at 30 s: a
    // newcomer to an older network holds part of its ring points at first (admission by age),
    // and they may be hosts with nothing left to fetch — one run handed it one host with 0
    // URLs, and it fetched nothing while every page was fetched once, politely.
    assert!(
        report.nodes.iter().filter(|n| n.state == "up" && n.node < 5).all(|n| n.fetches > 0),
        "every node crawled: {nodes:?}"
    );

    assert_eq!(w.reachable, 408, "250 pages, 20 tables of contents, 10 mirrors, 4 news sites of 32 pages");
    assert!(w.coverage >= 0.99, "coverage {:.3}: {:?}", w.coverage, w.lost);
    assert!(w.lost.is_empty(), "lost: {:?}", w.lost);
    assert!(w.politeness_violations.is_empty(), "{:?}", w.politeness_violations);
    // No page is fetched twice — not by a render, not by the teacher, not by a hand-off —
    // except pages a SIGKILLed node had fetched without acknowledging (the known gap).
    assert_eq!(w.duplicate_fetches, 0, "fetched twice: {:#?}", w.unexplained);
    assert!(
        w.duplicates_after_kill <= 30,
        "{} repeats after the kill: {:?}",
        w.duplicates_after_kill,
        w.repeated_pages
    );
    assert_eq!(w.subresource_repeats_by_a_node, 0, "a node's subresource cache answers repeats");
    // The defaults ran: layouts were taught, used and pages rendered during the churn.
    let sum = |f: fn(&weft_simnet::runner::NodeReport) -> u64| report.nodes.iter().map(f).sum::<u64>();
    eprintln!(
        "layouts: {}; {} subresource requests",
        weft_simnet::runner::layouts_line(&report),
        w.subresource_requests
    );
    assert!(sum(|n| n.teacher_runs) > 0 && sum(|n| n.pages_by_template) > 0, "{summary}");
    assert!(sum(|n| n.pages_rendered) > 0, "{summary}");
    assert!(report.elapsed_secs < 620.0, "took {:.0} s", report.elapsed_secs);
    // The mirrors are near duplicates of host 0's pages: the network recognised some of them.
    assert!(report.dedup_hits > 0, "{summary}");

    // Network search: five members, so the budget (four peers) reaches every other node.
    let s = report.search.as_ref().expect("the search phase ran");
    eprintln!("search: {s:?}");
    assert_eq!((s.queries, s.failed), (60, 0), "{s:?}");
    // The same questions as users ask them (meaning and words fused on every node).
    assert_eq!((s.hybrid_queries, s.hybrid_failed), (60, 0), "{s:?}");
    assert!(s.recall_at_10 >= 0.9, "{s:?}");
    assert!(s.peers_contacted_max <= s.peer_budget + 1 && s.within_budget >= 0.95, "{s:?}");

    let svg = weft_simnet::plot::svg(&report).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("kill 3") && svg.contains("leave 1"));
}

/// Churn as a property: three seeds, each a random schedule (a node killed, restarted and then
/// leaving, plus more kills, leaves or joins at random moments of the crawl), each judged by
/// the invariant from the server's log (a repeat is explained by a kill of the earlier fetcher,
/// or by a kill between its leave and the repeat: see `weft_simnet::report::Expectations`). A failure prints its seed and schedule; replay it with
/// `weft-simnet run … --churn '<schedule>'` or `WEFT_SWEEP_SEEDS=<seed>` here. Many more seeds:
/// the `churn_sweep` example.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_churn_schedules_lose_nothing_and_repeat_only_what_a_kill_explains() {
    let _one = common::one_network_at_a_time();
    use weft_simnet::sweep::{line, standard, sweep};
    let seeds: Vec<u64> = match std::env::var("WEFT_SWEEP_SEEDS") {
        Ok(s) => s.split(',').map(|s| s.trim().parse().expect("WEFT_SWEEP_SEEDS: numbers, comma-separated")).collect(),
        // Three seeds (about two minutes each here), each of which caught bugs: 2 (a node
        // killed and restarted twice, then leaving: pages waiting for the browser handed over
        // unfetched stayed done at the node that got their host back, and were never fetched),
        // 3 (two leaves among kills: a page fetched and still being processed when its node
        // left was fetched again by the host's next owner) and 29 (pages a restarted node
        // rendered after their host's interim owner had fetched them; leavers' hand-offs
        // refused by a member back from a crash). Thirty seeds and more are the `churn_sweep`
        // example's job.
        Err(_) => vec![2, 3, 29],
    };
    let work = WorkDir::new("simnet_churn-random_schedules").unwrap();
    let work_path = work.path().to_path_buf();
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let (base, window) = standard(env!("CARGO_BIN_EXE_weft").into(), work_path, models);
    let runs = sweep(&base, seeds, window, |r| eprintln!("{}\n  roster: {}", line(r), r.roster))
        .await
        .unwrap_or_else(|(seed, e)| panic!("seed {seed} could not run: {e}"));
    let failed: Vec<String> = (runs.iter().filter(|r| !r.broken.is_empty()))
        .map(|r| format!("{}\n  roster: {}\n  {}", line(r), r.roster, r.broken.join("; ")))
        .collect();
    assert!(failed.is_empty(), "seeds broke the invariant:\n{}", failed.join("\n"));
}
