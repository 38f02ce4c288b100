//! Homelab reachability, end to end: a public node, a node behind a home router's NAT (cone:
//! port-preserving masquerade) and one behind a symmetric NAT (a random port per connection),
//! built from Linux network namespaces and nftables on this machine (see `weft_simnet::natlab`).
//! Real `weft` processes with the default configuration crawl a multi-host web served on the
//! lab's internet; the seeds go to the node behind the cone NAT, so the URLs it finds for the
//! other NATed node's hosts can only get there through a relay. Judged from the web server's
//! log and the nodes' own status: full coverage, no URL stuck in an outbox, relay slots held by
//! both NATed nodes, and every node's network searches answered by both others.
//!
//! Needs root and `ip`/`nft` (scripts/setup.sh installs them); skipped with a message where
//! namespaces cannot be made, and failed there under `CI=true`.

use crate::common;
use std::time::Duration;
use weft_simnet::docs::{docs_dir, WebSpec};
use weft_simnet::natlab::{run_lab, Lab, LabSpec, Nat};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_behind_cone_and_symmetric_nat_get_their_urls_and_answer_searches() {
    let _network = common::one_network_at_a_time();
    if let Err(e) = Lab::build() {
        common::skip(&format!("the NAT lab cannot be built on this machine: {e}"));
        return;
    }
    // Kept under target/test-failures/ if the test fails (SIMNET_KEEP=1: kept anyway).
    let work = weft_test_support::failures::WorkDir::new("nat_lab").unwrap();
    let work_path = work.path().to_path_buf();
    let spec = LabSpec {
        weft: env!("CARGO_BIN_EXE_weft").into(),
        models: std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../models"),
        docs: docs_dir(),
        work_dir: work_path.clone(),
        homes: vec![Nat::Cone, Nat::Symmetric],
        web: WebSpec { hosts: 12, pages: 72, seed: 7, news_sites: 1, news_articles: 8, ..WebSpec::default() },
        timeout: Duration::from_secs(300),
        searches: 3,
        exchange_urls: 0,
    };
    let report = run_lab(&spec).await.unwrap_or_else(|e| panic!("{e}"));
    // What a failure prints: compact (CI shows a bounded part of a failing test's output), the
    // nodes before the web's long coverage curve, then what each node's log says of joining,
    // the members and its warnings, which no figure of the report shows.
    let summary = format!(
        "nodes {}\nsearches {}\nweb {}\n{}",
        serde_json::to_string(&report.nodes).unwrap(),
        serde_json::to_string(&report.searches).unwrap(),
        serde_json::to_string(&report.web).unwrap(),
        report.nodes.iter().map(|n| log_digest(&work_path, &n.name)).collect::<String>()
    );
    for n in &report.nodes {
        eprintln!(
            "{} ({}): {}; ring share {:.2}, {} fetched, {} URLs sent, {} received, {} waiting",
            n.name,
            n.nat.as_deref().unwrap_or("public"),
            n.reachability["summary"],
            n.ring_share,
            n.fetched,
            n.urls_sent,
            n.urls_received,
            n.urls_waiting + n.urls_in_flight
        );
    }
    for s in &report.searches {
        eprintln!("search from {}: answered by {:?}, failed {:?}", s.from, s.answered, s.failed);
    }

    let w = &report.web;
    assert_eq!(w.covered, w.reachable, "lost: {:?}", w.lost);
    assert!(w.politeness_violations.is_empty(), "{:?}", w.politeness_violations);
    assert!(report.settled_secs.is_some(), "not covered with empty outboxes within the timeout: {summary}");
    let [public, cone, symmetric] = &report.nodes[..] else { panic!("three nodes: {summary}") };
    for n in &report.nodes {
        assert_eq!(n.members, 3, "{}: {summary}", n.name);
        assert_eq!(n.urls_waiting + n.urls_in_flight, 0, "{} has URLs stuck in its outbox: {summary}", n.name);
        assert!(n.fetched > 0, "{} crawled nothing: {summary}", n.name);
    }
    // Reachability as each node found it, and what it tells the others.
    assert_eq!(public.reachability["kind"], "public", "{summary}");
    for home in [cone, symmetric] {
        assert_eq!(home.reachability["kind"], "behind_nat", "{summary}");
        assert!(
            !home.reachability["relays"].as_array().unwrap().is_empty(),
            "{} holds no relay slot: {summary}",
            home.name
        );
        let advertised = home.reachability["advertised"].as_array().unwrap();
        assert!(
            !advertised.is_empty() && advertised.iter().all(|a| a.as_str().unwrap().contains("/p2p-circuit")),
            "a node behind NAT advertises only its relay circuits: {summary}"
        );
        // URLs found by the others reached it (the seeds went to the cone node).
        assert!(home.urls_received > 0 || home.name == "h1", "{} received no URLs: {summary}", home.name);
    }
    for a in public.reachability["advertised"].as_array().unwrap() {
        let a = a.as_str().unwrap();
        assert!(!a.contains("/ip4/127.") && !a.contains("/ip4/10."), "private address advertised: {a}");
    }
    assert!(public.reachability["relay_circuits_served"].as_u64().unwrap() > 0, "{summary}");
    // `weft doctor`, run beside each node: fine for the public one, a fix for the relayed ones.
    assert_eq!(public.doctor["verdict"], "ok", "{summary}");
    for home in [cone, symmetric] {
        assert_eq!(home.doctor["verdict"], "warn", "{summary}");
        let fix = home.doctor["fix"].as_str().unwrap_or_default();
        assert!(fix.contains("forward") && fix.contains("UPnP"), "{fix}");
    }

    // Every node's searches reach both others, directly or through the relay.
    for n in &report.nodes {
        let others: Vec<&str> = report.nodes.iter().filter(|o| o.name != n.name).map(|o| o.name.as_str()).collect();
        let reached = report
            .searches
            .iter()
            .filter(|s| s.from == n.name)
            .any(|s| others.iter().all(|o| s.answered.iter().any(|(peer, _)| peer == o)));
        assert!(reached, "{}'s searches were not answered by {:?}: {summary}", n.name, others);
    }
}

/// The lines of `name`'s log that say how it joined and crawled: warnings and errors, members
/// met and lost, the member set settling, relay slots (at most 40, each cut at 300 bytes).
fn log_digest(work: &std::path::Path, name: &str) -> String {
    let log = std::fs::read_to_string(work.join(name).join("weft.log")).unwrap_or_default();
    let telling = ["\"WARN\"", "\"ERROR\"", "member", "crawling", "relay: slot"];
    let lines: Vec<&str> = log.lines().filter(|l| telling.iter().any(|t| l.contains(t))).take(40).collect();
    let mut out = format!("--- {name}'s log ({} telling lines of {}):\n", lines.len(), log.lines().count());
    for l in lines {
        out.push_str(&l[..l.floor_char_boundary(300)]);
        out.push('\n');
    }
    out
}
