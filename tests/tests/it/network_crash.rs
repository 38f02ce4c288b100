//! A member that crashes and never comes back, on a crawling network over real libp2p on
//! loopback: the URLs it had queued for its hosts are not lost with it. Each host's second
//! holder (the member that owns the host without it) kept a copy of the queue, and crawls it
//! once the others have signed the crashed member's death — also when the member crashed just
//! after a host was handed to it, before it could send a copy of its own.

use crate::common::{self, Member};
use std::collections::HashMap;
use std::time::Duration;
use weft_p2p::Ring;
use weft_simnet::{Site, WebServer};

const PAGES: usize = 30;
const DELAY_MS: u64 = 500;

fn site() -> Site {
    site_on("slow.test", PAGES)
}

fn site_on(host: &str, pages: usize) -> Site {
    (0..pages).fold(Site::new(host), |site, i| {
        site.html(&format!("/p{i}"), &format!("<html><body><p>page {i}, linking nowhere</p></body></html>"))
    })
}

/// How many times each page of slow.test was fetched, by node.
fn fetches(server: &WebServer) -> HashMap<String, Vec<usize>> {
    fetches_on(server, "slow.test")
}

fn fetches_on(server: &WebServer, host: &str) -> HashMap<String, Vec<usize>> {
    let mut by_page: HashMap<String, Vec<usize>> = HashMap::new();
    for r in server.requests().into_iter().filter(|r| r.host == host && r.path.starts_with("/p")) {
        let node = (0..3).find(|n| r.user_agent.contains(&format!("WeftTestNode{n}"))).expect("a node's request");
        by_page.entry(r.path).or_default().push(node);
    }
    by_page
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_of_a_member_that_crashed_for_good_is_crawled_by_its_hosts_second_holder() {
    let _network = common::one_of_several_networks();
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

/// A member that joins takes hosts from the members that held them, and the member that gave a
/// host is the host's second holder on the new ring (the ring without the joiner is the old
/// one). Until the joiner's own notes reach it, the giver's copy of what it handed over is the
/// only other one: a joiner that crashes as the queue arrives does not take it along.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_handed_to_a_member_that_crashes_as_it_arrives_is_crawled_by_the_member_that_gave_it() {
    let _network = common::one_of_several_networks();
    let dirs: Vec<common::WorkDir> = (0..3).map(|_| common::work_dir()).collect();
    // The identities first, to name a host the third member takes from the first two.
    let peers: Vec<weft_p2p::PeerId> =
        dirs.iter().map(|d| weft_p2p::identity::load_or_create(d.path()).unwrap().public().to_peer_id()).collect();
    let vnodes = weft_config::Config::default().p2p.vnodes;
    let (two, three) = (Ring::new(peers[..2].to_vec(), vnodes), Ring::new(peers.clone(), vnodes));
    let host = (0..)
        .map(|i| format!("slow-{i}.test"))
        .find(|h| three.owner(h) == Some(&peers[2]))
        .expect("some host is the third member's");
    let giver = peers.iter().position(|p| Some(p) == two.owner(&host)).unwrap();
    assert_eq!(three.owners_of_point(weft_p2p::ring::host_point(&host), 2)[1], peers[giver]);

    // More pages, slower than above: a good part of the queue is left when the joiner is in (a
    // join takes 5-25 s).
    const PAGES: usize = 40;
    let server = WebServer::start(vec![site_on(&host, PAGES)]).await.unwrap();
    let tweak = |c: &mut weft_config::Config| c.politeness.default_delay_ms = 3 * DELAY_MS;
    let mut members = vec![Member::start(&server, dirs[0].path(), 0, vec![], tweak).await];
    let boot = members[0].bootstrap();
    members.push(Member::start(&server, dirs[1].path(), 1, boot.clone(), tweak).await);
    common::all_members(&[&members[0].net, &members[1].net], 2, Duration::from_secs(60)).await;
    let seeds: Vec<String> = (0..PAGES).map(|i| server.url(&host, &format!("/p{i}"))).collect();
    members[giver].crawler.add_seeds(&seeds).await;
    common::until("the giver has fetched a few pages", Duration::from_secs(30), || {
        fetches_on(&server, &host).len() >= 3
    })
    .await;

    // The third member joins, is handed the host's queue, and crashes the moment it has it:
    // before its second copies go out (they leave once a second).
    let joiner = Member::start(&server, dirs[2].path(), 2, boot, tweak).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while joiner.crawler.status().received.queued == 0 {
        assert!(std::time::Instant::now() < deadline, "the joiner was not handed the host's queue");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let from_joiner = members[giver].net.status().second_copies_received;
    let kept = members[giver].crawler.kept_hosts().iter().any(|h| h.split(':').next() == Some(host.as_str()));
    joiner.crash();
    // Unless the joiner's own notes were quicker than this test (they go once a second), what the
    // giver keeps is what it handed over.
    if from_joiner == 0 {
        assert!(kept, "the giver keeps no copy of the queue it handed over");
    }
    let fetched_before = fetches_on(&server, &host).len();
    assert!(fetched_before + 5 <= PAGES, "{fetched_before} of {PAGES} fetched before the hand-over");

    // The two sign its death, the host is the giver's again, and it crawls the rest.
    common::until("every page fetched", Duration::from_secs(150), || fetches_on(&server, &host).len() == PAGES).await;
    let by_page = fetches_on(&server, &host);
    assert!(by_page.values().flatten().all(|n| *n == giver), "only the giver fetches {host}: {by_page:?}");
    let twice: Vec<_> = by_page.iter().filter(|(_, nodes)| nodes.len() > 1).collect();
    assert!(twice.len() <= 1, "fetched twice: {twice:?}");
    for m in members {
        m.stop().await;
    }
}
