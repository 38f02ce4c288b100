//! A member that crashes and never comes back, on a crawling network over real libp2p on
//! loopback: the URLs it had queued for its hosts are not lost with it. Each host's second
//! holder (the member that owns the host without it) kept a copy of the queue, and crawls it
//! once the others have signed the crashed member's death.

use crate::common::{self, Member};
use std::collections::HashMap;
use std::time::Duration;
use weft_simnet::{Site, WebServer};

const PAGES: usize = 30;
const DELAY_MS: u64 = 500;

fn site() -> Site {
    (0..PAGES).fold(Site::new("slow.test"), |site, i| {
        site.html(&format!("/p{i}"), &format!("<html><body><p>page {i}, linking nowhere</p></body></html>"))
    })
}

/// How many times each page was fetched, by node.
fn fetches(server: &WebServer) -> HashMap<String, Vec<usize>> {
    let mut by_page: HashMap<String, Vec<usize>> = HashMap::new();
    for r in server.requests().into_iter().filter(|r| r.host == "slow.test" && r.path.starts_with("/p")) {
        let node = (0..3).find(|n| r.user_agent.contains(&format!("WeftTestNode{n}"))).expect("a node's request");
        by_page.entry(r.path).or_default().push(node);
    }
    by_page
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_of_a_member_that_crashed_for_good_is_crawled_by_its_hosts_second_holder() {
    let _network = common::one_network_at_a_time();
    let server = WebServer::start(vec![site()]).await.unwrap();
    let dirs: Vec<common::WorkDir> = (0..3).map(|_| common::work_dir()).collect();
    let tweak = |c: &mut weft_config::Config| c.politeness.default_delay_ms = DELAY_MS;
    let mut members = vec![Member::start(&server, dirs[0].path(), 0, vec![], tweak).await];
    for (n, dir) in dirs.iter().enumerate().skip(1) {
        let boot = members[0].bootstrap();
        members.push(Member::start(&server, dir.path(), n, boot, tweak).await);
    }
    let nets: Vec<_> = members.iter().map(|m| m.net.clone()).collect();
    common::all_members(&nets.iter().collect::<Vec<_>>(), 3, Duration::from_secs(60)).await;

    // Who owns slow.test, and who would without it.
    let ring = nets[0].ring();
    let owners = ring.owners_of_point(weft_p2p::ring::host_point("slow.test"), 2);
    let index_of = |p: &weft_p2p::PeerId| nets.iter().position(|n| n.peer_id() == *p).unwrap();
    let (owner, second) = (index_of(&owners[0]), index_of(&owners[1]));

    // The seeds go in at the second holder, which sends them to the owner (and forgets them
    // once it has them queued).
    let seeds: Vec<String> = (0..PAGES).map(|i| server.url("slow.test", &format!("/p{i}"))).collect();
    members[second].crawler.add_seeds(&seeds).await;
    common::until("the second holder keeps the owner's queue", Duration::from_secs(30), || {
        nets[second].status().second_copies_received >= PAGES as u64
    })
    .await;
    common::until("the owner has fetched a few pages", Duration::from_secs(30), || {
        fetches(&server).values().filter(|nodes| nodes.contains(&owner)).count() >= 3
    })
    .await;

    // It crashes for good, most of its queue unfetched.
    let crashed = members.remove(owner);
    let fetched_by_owner = fetches(&server).values().filter(|nodes| nodes.contains(&owner)).count();
    crashed.crash();
    assert!(fetched_by_owner < PAGES / 2, "the owner fetched {fetched_by_owner} of {PAGES} before it crashed");

    // The others sign its death; slow.test passes to its second holder, which crawls what was
    // left of the queue.
    common::until("every page fetched", Duration::from_secs(120), || fetches(&server).len() == PAGES).await;
    let by_page = fetches(&server);
    let twice: Vec<(&String, &Vec<usize>)> = by_page.iter().filter(|(_, nodes)| nodes.len() > 1).collect();
    // A page fetched in the owner's last moment, whose note had not left it yet, may be fetched
    // again; nothing else.
    assert!(twice.len() <= 1, "fetched twice: {twice:?}");
    let after: usize = by_page.values().filter(|nodes| nodes.iter().any(|n| *n != owner)).count();
    assert!(after >= PAGES - fetched_by_owner - 1, "{after} pages fetched after the crash");
    assert!(
        by_page.values().flatten().all(|n| *n == owner || *n == second),
        "only the owner and then its second holder fetch slow.test: {by_page:?}"
    );
    for m in members {
        m.stop().await;
    }
}
