//! Hostile gossip on real libp2p over loopback: routing summaries whose seal is forged, broken
//! or replayed (see `weft_p2p::sealed`), and one that names another author.

use super::network::{config, recording_node_with, within};
use std::time::Duration;

type Recording = (weft_p2p::NetworkHandle, tokio::task::JoinHandle<()>, super::network::Recorded);

/// Two honest members, `n` and `m` (bootstrapped from `n`), each configured by `config`, once
/// each counts both; and `n`'s TCP address.
async fn two_members(config: impl Fn(Vec<String>) -> weft_p2p::NetworkConfig) -> (Recording, Recording, String) {
    let key = libp2p::identity::Keypair::generate_ed25519;
    let n = recording_node_with(key(), config(vec![])).await;
    let addr = crate::tcp_addr(&n.0).await;
    let m = recording_node_with(key(), config(vec![addr.clone()])).await;
    for x in [&n.0, &m.0] {
        within(60, "two members", x.wait_for(|s| s.members.len() == 2)).await;
    }
    (n, m, addr)
}

/// A bare gossipsub peer of `key`'s identity on the summaries' topic.
fn gossip_swarm(key: libp2p::identity::Keypair) -> libp2p::Swarm<libp2p::gossipsub::Behaviour> {
    use libp2p::gossipsub;
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
        .unwrap()
        .with_behaviour(|_| {
            let config = gossipsub::ConfigBuilder::default()
                .heartbeat_interval(Duration::from_millis(500))
                // As the nodes gossip: anonymous messages sealed by their authors.
                .validation_mode(gossipsub::ValidationMode::Anonymous)
                .message_id_fn(weft_p2p::sealed::message_id)
                .build()
                .unwrap();
            gossipsub::Behaviour::new(gossipsub::MessageAuthenticity::Anonymous, config).unwrap()
        })
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(300)))
        .build();
    let topic = gossipsub::IdentTopic::new(weft_p2p::summaries::TOPIC);
    swarm.behaviour_mut().subscribe(&topic).unwrap();
    swarm
}

/// A peer connected to `n` only gossips a summary naming `m` (sealed by itself), a sealed
/// summary changed after sealing, an unsealed one, one sealed for another topic, and a genuine
/// summary of its own followed by an older one. `n` refuses the first four (each once: the
/// impostor as a summary, the other three as gossip), drops the older one as stale without
/// blaming anyone, and forwards none of them: `m`, which hears gossip through `n`, refuses
/// nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_broken_and_replayed_gossip_is_refused_once_and_not_forwarded() {
    use futures::StreamExt;
    use weft_p2p::sealed::seal;
    use weft_p2p::summaries::{Summary, TOPIC};
    let ((n, n_task, _), (m, m_task, _), addr) = two_members(config).await;

    let attacker = libp2p::identity::Keypair::generate_ed25519();
    let me = attacker.public().to_peer_id().to_string();
    let summary = |peer: &str, version: u64| {
        Summary::new(peer.to_string(), version, "m".into(), &[vec![1.0, 0.0, 0.0]], vec![3]).encode()
    };
    let mut changed = seal(&attacker, TOPIC, 2, &summary(&me, 2)).unwrap();
    *changed.last_mut().unwrap() ^= 1;
    let messages = vec![
        seal(&attacker, TOPIC, 1, &summary(&m.peer_id().to_string(), 1)).unwrap(),
        changed,
        summary(&me, 3),
        seal(&attacker, "/weft/members/2", 3, &summary(&me, 4)).unwrap(),
        seal(&attacker, TOPIC, 10, &summary(&me, 10)).unwrap(),
        seal(&attacker, TOPIC, 5, &summary(&me, 5)).unwrap(),
    ];
    let mut swarm = gossip_swarm(attacker.clone());
    swarm.dial(addr.parse::<libp2p::Multiaddr>().unwrap()).unwrap();
    let gossiping = tokio::spawn(async move {
        let topic = libp2p::gossipsub::IdentTopic::new(TOPIC);
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            tokio::select! {
                // Until n is known to listen on the topic, publishing fails; once a message
                // went out, publishing it again is refused as a duplicate.
                _ = tick.tick() => for bytes in &messages {
                    let _ = swarm.behaviour_mut().publish(topic.clone(), bytes.clone());
                },
                _ = swarm.select_next_some() => {}
            }
        }
    });

    let refused = |s: &weft_p2p::NetworkStatus| (s.rejected_gossip, s.search.summaries_rejected);
    let four = n.wait_for(|s| s.rejected_gossip >= 3 && s.search.summaries_rejected >= 1);
    within(30, "n refuses the four bad messages", four).await;
    // Time for anything n forwarded to reach m, and for another round of publishing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (sn, sm) = (n.status(), m.status());
    assert_eq!(refused(&sn), (3, 1), "each refused once, the stale one not counted: {sn:?}");
    assert_eq!(refused(&sm), (0, 0), "n forwarded a bad message: {sm:?}");
    gossiping.abort();
    for (x, t) in [(m, m_task), (n, n_task)] {
        x.stop();
        t.await.unwrap();
    }
}
