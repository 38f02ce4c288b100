//! A node joining mid-crawl takes over its hosts' queues; links to the hosts of a node that left go to
//! their next owners.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joining_node_takes_over_its_hosts() {
    let _network = common::one_of_several_networks();
    let server = WebServer::start_with(|port| web(port, &[("hub0.test", "j")])).await.unwrap();

    // Node 0 alone, slow (8 s between requests to a host: robots.txt, the sitemap and three
    // pages take 40 s): it owns everything and queues it, and is still crawling when node 1 is
    // admitted (its probation is as long as the network is old when it arrives).
    let first = start(&server, 0, vec![], 8000).await;
    let boot = first.network.status().listen_addrs[0].clone();
    first.crawler.add_seeds(&[server.url("hub0.test", "/")]).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    while pages(&server, "hub0").is_empty() {
        assert!(Instant::now() < deadline, "node 0 does not crawl");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Node 1 joins mid-crawl.
    let (second, ()) = join_owning(&[&first], &hosts("j"), || {
        let boot = boot.clone();
        let server = &server;
        async move { (start(server, 1, vec![boot], 8000).await, ()) }
    })
    .await;
    let joined = Instant::now();
    until_all_fetched(&server, "j", 60).await;
    let ring = second.network.ring();
    let ids: HashMap<weft_p2p::PeerId, usize> =
        [(&first, 0), (&second, 1)].iter().map(|(r, n)| (r.network.peer_id(), *n)).collect();
    let owner = |host: &str| ids[ring.owner(host).unwrap()];
    let newcomer_hosts: Vec<String> = (0..HOSTS).map(|i| format!("j{i}.test")).filter(|h| owner(h) == 1).collect();
    assert!(!newcomer_hosts.is_empty(), "node 1 owns some j-hosts");
    let grace = joined + Duration::from_secs(1); // a fetch in flight at the change finishes
    for r in server.requests().into_iter().filter(|r| r.host.starts_with('j')) {
        let n = node_of(&r);
        if n == 1 {
            assert_eq!(owner(&r.host), 1, "node 1 requested {} which it does not own", r.host);
        } else if owner(&r.host) == 1 {
            assert!(r.started < grace, "node 0 requested {}{} after handing the host over", r.host, r.path);
        }
    }
    let by_newcomer: HashSet<String> =
        server.requests().into_iter().filter(|r| node_of(r) == 1).map(|r| r.host).collect();
    assert!(newcomer_hosts.iter().any(|h| by_newcomer.contains(h)), "node 1 crawled hosts handed to it");

    for r in [first, second] {
        r.stop.send(true).unwrap();
        r.task.await.unwrap().unwrap();
    }
}

/// A member that joined and left: links to the hosts it owned, found after it left, go to
/// their owners on the ring without it; nothing waits for it. (A test of its own beside
/// [`a_joining_node_takes_over_its_hosts`]: a newcomer's probation is as long as the network
/// is old, and here the network is young.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_to_the_hosts_of_a_node_that_left_go_to_their_next_owners() {
    let _network = common::one_of_several_networks();
    let server = WebServer::start_with(|port| web(port, &[("hub1.test", "k")])).await.unwrap();
    let (first, second) = two_members(&server, 8000).await;
    let boot = first.network.status().listen_addrs[0].clone();

    // Node 2 joins, then leaves right before node 0 finds links to its hosts.
    let (third, ()) = join_owning(&[&first, &second], &hosts("k"), || {
        let boot = boot.clone();
        let server = &server;
        async move { (start(server, 2, vec![boot], 0).await, ()) }
    })
    .await;
    third.network.stop();
    third.stop.send(true).unwrap();
    third.task.await.unwrap().unwrap();
    first.crawler.add_seeds(&[server.url("hub1.test", "/")]).await;
    members(&[&first, &second], 2).await;
    until_all_fetched(&server, "k", 90).await;
    let late: HashSet<usize> =
        server.requests().into_iter().filter(|r| r.host.starts_with('k')).map(|r| node_of(&r)).collect();
    assert!(!late.contains(&2), "the stopped node fetched nothing of hub1's hosts");
    let waiting: u64 = [&first, &second].iter().map(|r| r.network.status().urls_waiting).sum();
    assert_eq!(waiting, 0, "no URL is left waiting for the departed member");

    for r in [first, second] {
        r.stop.send(true).unwrap();
        r.task.await.unwrap().unwrap();
    }
}
