//! Real libp2p over real TCP on loopback: nodes join through one bootstrap node, agree on the
//! member set and on the owner of every host, notice a member that left, and a node whose
//! bootstrap peer does not answer keeps retrying and says so.

mod records;
mod urls;

use urls::forwarding_node;

use std::time::Duration;
use weft_config::P2pConfig;
use weft_p2p::{Joining, NetworkConfig, NetworkHandle};

pub(super) fn config(bootstrap: Vec<String>) -> NetworkConfig {
    let c = P2pConfig {
        enabled: true,
        listen: vec!["/ip4/127.0.0.1/tcp/0".into(), "/ip4/127.0.0.1/udp/0/quic-v1".into()],
        bootstrap,
        ..P2pConfig::default()
    };
    NetworkConfig::from_config(&c).unwrap()
}

async fn node(bootstrap: Vec<String>) -> (NetworkHandle, tokio::task::JoinHandle<()>) {
    let key = libp2p::identity::Keypair::generate_ed25519();
    let started = weft_p2p::start(key, config(bootstrap)).unwrap();
    (started.handle, started.task)
}

pub(super) async fn within<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_nodes_agree_on_members_and_owners_and_notice_one_leaving() {
    let (first, first_task) = node(vec![]).await;
    let boot = crate::tcp_addr(&first).await;
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

    // A near-duplicate record lives on the owners of each of its fingerprint's four blocks and
    // nowhere else, and any member finds a fingerprint within 3 bits of it.
    use weft_p2p::records::{self, RECORD_OWNERS};
    let hash = 0x0123_4567_89ab_cdefu64;
    let me = nodes[0].0.peer_id().to_string();
    nodes[0].0.publish_fingerprint(hash, "https://a.test/story".into(), 1);
    // What an answer says of the entry (signed by its publisher, the node that indexed it).
    let entry = (hash, "https://a.test/story".to_string(), me, 1u64);
    let said = |found: Option<(records::DupEntry, u32)>| {
        found.map(|(e, d)| {
            assert_eq!(e.check(), Ok(()));
            ((e.simhash, e.url, e.peer.to_string(), e.time), d)
        })
    };
    let owners = |key: &records::RecordKey| rings[0].owners_of_point(key.point(), RECORD_OWNERS);
    let keys_of = |p: &libp2p::PeerId| records::keys(hash).iter().filter(|k| owners(k).contains(p)).count() as u64;
    for (n, _) in &nodes {
        let want = keys_of(&n.peer_id());
        within(20, "the record at its owners", n.wait_for(|s| s.dht_records >= want)).await;
    }
    for (n, _) in &nodes {
        assert_eq!(n.status().dht_records, keys_of(&n.peer_id()), "records held by {}", n.peer_id());
    }
    // Blocks 0 and 2 shared, 3 bits away.
    let near = hash ^ 0b101 ^ (1 << 40);
    let ask = |n: &NetworkHandle, h: u64| {
        let n = n.clone();
        tokio::task::spawn_blocking(move || {
            n.find_duplicate_blocking(h, 3, "https://b.test/story", Duration::from_secs(15))
        })
    };
    let first_owner = owners(&records::keys(hash)[0])[0];
    let asker = nodes.iter().map(|(n, _)| n.clone()).find(|n| n.peer_id() != first_owner).unwrap();
    assert_eq!(said(ask(&asker, near).await.unwrap()), Some((entry.clone(), 3)));
    assert_eq!(ask(&asker, !hash).await.unwrap(), None);

    // The first owner of block 0 stops without a word: its monitors declare it dead, the others
    // agree again, and the record is still found (its next owner holds it).
    let i = nodes.iter().position(|(n, _)| n.peer_id() == first_owner).unwrap();
    let (gone, gone_task) = nodes.remove(i);
    gone.stop();
    gone_task.await.unwrap();
    let gone_id = gone.peer_id().to_string();
    for (n, _) in &nodes {
        within(60, "the stopped member is dropped", n.wait_for(|s| s.members.len() == 4)).await;
        assert!(!n.status().members.contains(&gone_id));
    }
    let rings: Vec<_> = nodes.iter().map(|(n, _)| n.ring()).collect();
    for h in 0..2_000 {
        let host = format!("www.site{h}.example");
        let owner = rings[0].owner(&host).unwrap();
        assert_ne!(owner.to_string(), gone_id);
        assert!(rings.iter().all(|r| r.owner(&host) == Some(owner)));
    }
    assert_eq!(said(ask(&asker, near).await.unwrap()), Some((entry, 3)));
    // The answer can reach the asker before the loop publishes its status (a lookup answered
    // from this node's own records is sent within the command that counts it).
    within(10, "the third lookup counted", asker.wait_for(|s| s.dht_lookups == 3)).await;
    assert_eq!(asker.status().dht_lookups, 3, "{:?}", asker.status());
    for (n, task) in nodes {
        n.stop();
        task.await.unwrap();
    }
}

/// The roster (`weft_p2p::roster`) on real connections: the first node founds it, the others
/// join it within the network's first seconds (a young network's probation is its age), every
/// ring holds the roster's members, a member that leaves is gone from every roster and ring at
/// once, and one that vanishes is declared dead by two of its monitors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_nodes_build_one_roster_and_a_vanished_member_is_declared_dead() {
    let (first, first_task) = node(vec![]).await;
    let boot = crate::tcp_addr(&first).await;
    let mut nodes = vec![(first, first_task)];
    for _ in 0..4 {
        nodes.push(node(vec![boot.clone()]).await);
    }
    let settled = |n: usize| {
        move |s: &weft_p2p::NetworkStatus| s.roster.stage == "member" && s.roster.members == n && s.members.len() == n
    };
    for (n, _) in &nodes {
        within(90, "every node a member of a roster of five", n.wait_for(settled(5))).await;
    }
    let alike = |nodes: &[(NetworkHandle, tokio::task::JoinHandle<()>)]| {
        let prints: Vec<String> = nodes.iter().map(|(n, _)| n.status().roster.fingerprint).collect();
        prints.iter().all(|p| *p == prints[0])
    };
    within(30, "the rosters alike", async {
        while !alike(&nodes) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(nodes.iter().all(|(n, _)| n.status().roster.refused_events == 0));

    // One leaves with its last word: gone from every roster within seconds.
    let (gone, gone_task) = nodes.pop().unwrap();
    gone.leave();
    tokio::time::sleep(Duration::from_millis(500)).await;
    gone.stop();
    gone_task.await.unwrap();
    for (n, _) in &nodes {
        within(15, "the departure in every roster", n.wait_for(|s| s.roster.members == 4)).await;
    }

    // One vanishes without a word (its task dropped, its connections closed): two of its
    // monitors declare it dead after they lost it for twenty seconds.
    let (vanished, vanished_task) = nodes.pop().unwrap();
    vanished_task.abort();
    let _ = vanished_task.await;
    drop(vanished);
    for (n, _) in &nodes {
        within(60, "the vanished member declared dead", n.wait_for(|s| s.roster.members == 3)).await;
    }
    within(30, "the rosters alike again", async {
        while !alike(&nodes) {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
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

pub(super) type Recorded = std::sync::Arc<std::sync::Mutex<Vec<weft_p2p::WireUrl>>>;

pub(super) async fn recording_node_with(
    key: libp2p::identity::Keypair,
    config: NetworkConfig,
) -> (NetworkHandle, tokio::task::JoinHandle<()>, Recorded) {
    let (n, task, got, _) = forwarding_node(key, config).await;
    (n, task, got)
}

/// The network's founder has no bootstrap peer: restarted on another port, no member knows where
/// it is, and with no one to ask for the roster it would found a network of its own ten seconds
/// later. It dials the members it saved at its stop, pulls the roster from them and is a member
/// of its network again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_founder_restarted_without_bootstrap_peers_finds_its_network_through_the_members_it_saved() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("peers.json");
    let founder = |c: NetworkConfig| NetworkConfig { saved_peers: Some(saved.clone()), ..c };
    let key = libp2p::identity::Keypair::generate_ed25519();
    let first = weft_p2p::start(key.clone(), founder(config(vec![]))).unwrap();
    let addr = crate::tcp_addr(&first.handle).await;
    let (b, b_task) = node(vec![addr.clone()]).await;
    let (c, c_task) = node(vec![addr.clone()]).await;
    for n in [&first.handle, &b, &c] {
        within(60, "three members", n.wait_for(|s| s.members.len() == 3 && s.roster.stage == "member")).await;
    }
    first.handle.stop();
    first.task.await.unwrap();
    let kept = std::fs::read_to_string(&saved).expect("the members were saved at the stop");
    assert!(kept.contains(&b.peer_id().to_string()) && kept.contains(&c.peer_id().to_string()), "{kept}");

    // Back with the same key, on new ports, still with no bootstrap peer.
    let again = weft_p2p::start(key, founder(config(vec![]))).unwrap();
    let a = &again.handle;
    within(60, "the founder back in its network", a.wait_for(|s| s.members.len() == 3 && s.roster.stage == "member"))
        .await;
    // Past the ten seconds after which a node with no roster founds its own network.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let (sa, sb) = (a.status(), b.status());
    assert_eq!(sa.members, sb.members);
    assert_eq!(sa.roster.fingerprint, sb.roster.fingerprint, "{:?}\n{:?}", sa.roster, sb.roster);
    assert_eq!(sa.roster.members, 3);
    for (n, t) in [(again.handle, again.task), (b, b_task), (c, c_task)] {
        n.stop();
        t.await.unwrap();
    }
}

/// Strangers that fill a node's connection slots from outside do not keep it from dialling its
/// own network: some slots are kept for the connections it makes (here 16 slots, 8 kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_filling_the_incoming_slots_do_not_lock_a_node_out_of_its_network() {
    use futures::StreamExt;
    let max = 16u32;
    // The bootstrap peer's address is known before it runs (a volunteer's configured peer).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let b_key = libp2p::identity::Keypair::generate_ed25519();
    let b_addr = format!("/ip4/127.0.0.1/tcp/{port}/p2p/{}", b_key.public().to_peer_id());
    let mut c = P2pConfig {
        enabled: true,
        listen: vec!["/ip4/127.0.0.1/tcp/0".into()],
        bootstrap: vec![b_addr],
        max_connections: max,
        ..P2pConfig::default()
    };
    let a = weft_p2p::start(libp2p::identity::Keypair::generate_ed25519(), NetworkConfig::from_config(&c).unwrap())
        .unwrap();
    within(10, "listening", a.handle.wait_for(|s| !s.listen_addrs.is_empty())).await;
    let a_addr: libp2p::Multiaddr = a.handle.status().listen_addrs[0].parse().unwrap();

    // As many strangers as the node has slots connect to it and stay.
    let mut strangers = Vec::new();
    for _ in 0..max {
        let mut s = libp2p::SwarmBuilder::with_new_identity()
            .with_tokio()
            .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
            .unwrap()
            .with_behaviour(|_| libp2p::ping::Behaviour::default())
            .unwrap()
            .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(120)))
            .build();
        s.dial(a_addr.clone()).unwrap();
        strangers.push(tokio::spawn(async move {
            loop {
                s.select_next_some().await;
            }
        }));
    }
    let reserved = weft_p2p::behaviour::reserved_outgoing(max) as usize;
    within(20, "strangers connected", a.handle.wait_for(|s| s.connected_peers >= max as usize - reserved)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(a.handle.status().connected_peers, max as usize - reserved, "strangers take the incoming slots only");

    // The bootstrap peer comes up: the node's next retry reaches it and they form a network.
    c.listen = vec![format!("/ip4/127.0.0.1/tcp/{port}")];
    c.bootstrap = Vec::new();
    let b = weft_p2p::start(b_key, NetworkConfig::from_config(&c).unwrap()).unwrap();
    for n in [&a.handle, &b.handle] {
        within(60, "two members", n.wait_for(|s| s.members.len() == 2)).await;
    }
    for t in strangers {
        t.abort();
    }
    for (n, t) in [(a.handle, a.task), (b.handle, b.task)] {
        n.stop();
        t.await.unwrap();
    }
}
