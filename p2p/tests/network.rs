//! Real libp2p over real TCP on loopback: nodes join through one bootstrap node, agree on the
//! member set and on the owner of every host, notice a member that left, and a node whose
//! bootstrap peer does not answer keeps retrying and says so.

use std::time::Duration;
use weft_config::P2pConfig;
use weft_p2p::{Joining, NetworkConfig, NetworkHandle};

fn config(bootstrap: Vec<String>) -> NetworkConfig {
    let c = P2pConfig {
        enabled: true,
        listen: vec!["/ip4/127.0.0.1/tcp/0".into(), "/ip4/127.0.0.1/udp/0/quic-v1".into()],
        bootstrap,
        heartbeat_secs: 1,
        missed_heartbeats: 3,
        ..P2pConfig::default()
    };
    NetworkConfig::from_config(&c).unwrap()
}

async fn node(bootstrap: Vec<String>) -> (NetworkHandle, tokio::task::JoinHandle<()>) {
    let key = libp2p::identity::Keypair::generate_ed25519();
    weft_p2p::start(key, config(bootstrap)).await.unwrap()
}

async fn within<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_nodes_agree_on_members_and_owners_and_notice_one_leaving() {
    let (first, first_task) = node(vec![]).await;
    within(10, "first node listens", first.wait_for(|s| s.listen_addrs.iter().any(|a| a.contains("/tcp/")))).await;
    let boot = first.status().listen_addrs.into_iter().find(|a| a.contains("/tcp/")).unwrap();
    assert!(boot.contains(&format!("/p2p/{}", first.peer_id())), "{boot}");
    assert_eq!(first.status().joining, Joining::First);

    let mut nodes = vec![(first, first_task)];
    for _ in 0..4 {
        nodes.push(node(vec![boot.clone()]).await);
    }
    for (n, _) in &nodes {
        within(60, "every node sees five members", n.wait_for(|s| s.members.len() == 5)).await;
    }
    let members = nodes[0].0.status().members;
    for (n, _) in &nodes[1..] {
        let s = n.status();
        assert_eq!(s.members, members);
        assert_eq!(s.joining, Joining::Joined, "{s:?}");
        assert!(s.connected_peers >= 1);
    }
    let rings: Vec<_> = nodes.iter().map(|(n, _)| n.ring()).collect();
    let mut owned = std::collections::HashMap::new();
    for h in 0..10_000 {
        let host = format!("www.site{h}.example");
        let owner = rings[0].owner(&host).unwrap();
        assert!(rings.iter().all(|r| r.owner(&host) == Some(owner)), "{host}");
        *owned.entry(owner.to_string()).or_insert(0) += 1;
    }
    assert_eq!(owned.len(), 5, "every member owns hosts: {owned:?}");
    let shares: f64 = nodes.iter().map(|(n, _)| n.status().ring_share).sum();
    assert!((shares - 1.0).abs() < 1e-6, "{shares}");

    // One member stops: after its heartbeats are missed, the others drop it and agree again.
    let (gone, gone_task) = nodes.pop().unwrap();
    gone.stop();
    gone_task.await.unwrap();
    let gone_id = gone.peer_id().to_string();
    for (n, _) in &nodes {
        within(30, "the stopped member is dropped", n.wait_for(|s| s.members.len() == 4)).await;
        assert!(!n.status().members.contains(&gone_id));
    }
    let rings: Vec<_> = nodes.iter().map(|(n, _)| n.ring()).collect();
    for h in 0..2_000 {
        let host = format!("www.site{h}.example");
        let owner = rings[0].owner(&host).unwrap();
        assert_ne!(owner, gone_id);
        assert!(rings.iter().all(|r| r.owner(&host) == Some(owner)));
    }
    for (n, task) in nodes {
        n.stop();
        task.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_bootstrap_peer_is_retried_with_backoff() {
    // A port nothing listens on (bound, then released), with a valid peer id.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let nobody = libp2p::identity::Keypair::generate_ed25519().public().to_peer_id();
    let (n, task) = node(vec![format!("/ip4/127.0.0.1/tcp/{port}/p2p/{nobody}")]).await;
    within(20, "second retry scheduled", n.wait_for(|s| matches!(s.joining, Joining::Retrying { attempt: 2.., .. })))
        .await;
    let Joining::Retrying { next_in_secs, last_error, .. } = n.status().joining else { unreachable!() };
    assert!(next_in_secs >= 2, "backoff doubles");
    assert!(!last_error.is_empty());
    n.stop();
    task.await.unwrap();
}

#[test]
fn bad_addresses_are_typed_errors() {
    let bad = P2pConfig { listen: vec!["not an addr".into()], ..P2pConfig::default() };
    assert!(NetworkConfig::from_config(&bad).unwrap_err().to_string().contains("p2p.listen"));
    let no_id = P2pConfig { bootstrap: vec!["/ip4/127.0.0.1/tcp/7701".into()], ..P2pConfig::default() };
    assert!(NetworkConfig::from_config(&no_id).unwrap_err().to_string().contains("/p2p/<peer id>"));
}
