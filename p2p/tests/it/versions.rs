//! A peer that speaks another version of the protocol is refused with a message naming both
//! versions — by a node it connects to, and by a node that tries to join through it — never
//! taken into the member set. The other peer is a bare rust-libp2p peer announcing
//! `/weft/0.2.0` in identify — the version before the codebook's ladder, whose members would
//! refuse a large network's postings and strike their senders — over real TCP on loopback.

use futures::StreamExt;
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{identify, ping, Multiaddr};
use std::time::Duration;

use crate::tcp_config as config;

const THEIRS: &str = "/weft/0.2.0";

#[derive(NetworkBehaviour)]
struct Other {
    identify: identify::Behaviour,
    ping: ping::Behaviour,
}

fn other_peer() -> libp2p::Swarm<Other> {
    libp2p::SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
        .unwrap()
        .with_behaviour(|key| Other {
            identify: identify::Behaviour::new(identify::Config::new(THEIRS.into(), key.public())),
            ping: ping::Behaviour::default(),
        })
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_of_another_version_is_refused_and_named_with_its_version() {
    let node = weft_p2p::start(libp2p::identity::Keypair::generate_ed25519(), config(vec![])).unwrap();
    let n = node.handle;
    let addr: Multiaddr = crate::tcp_addr(&n).await.parse().unwrap();
    let mut other = other_peer();
    let other_id = *other.local_peer_id();
    other.dial(addr.clone()).unwrap();
    // The node reads the other's identify, refuses it and closes the connection; a second dial
    // is refused while the refusal lasts.
    let (mut closed, mut redialled_refused) = (false, false);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !(closed && redialled_refused) {
        let event =
            tokio::time::timeout_at(deadline, other.select_next_some()).await.expect("the node closes the connection");
        match event {
            SwarmEvent::ConnectionClosed { num_established: 0, .. } if !closed => {
                closed = true;
                other.dial(addr.clone()).unwrap();
            }
            SwarmEvent::ConnectionClosed { num_established: 0, .. } | SwarmEvent::OutgoingConnectionError { .. }
                if closed =>
            {
                redialled_refused = true;
            }
            _ => {}
        }
    }
    let s = n.status();
    assert_eq!(s.other_versions.get(&other_id.to_string()), Some(&format!("{THEIRS:?}")), "{s:?}");
    assert!(!s.members.contains(&other_id.to_string()), "never a member: {s:?}");
    assert_eq!(s.banned_peers, 0, "refused, not banned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_bootstrap_peer_speaks_another_version_says_so() {
    let mut other = other_peer();
    other.listen_on("/ip4/127.0.0.1/tcp/0".parse().unwrap()).unwrap();
    let listen = loop {
        if let SwarmEvent::NewListenAddr { address, .. } = other.select_next_some().await {
            break address;
        }
    };
    let boot = format!("{listen}/p2p/{}", other.local_peer_id());
    tokio::spawn(async move {
        loop {
            other.select_next_some().await;
        }
    });
    let node = weft_p2p::start(libp2p::identity::Keypair::generate_ed25519(), config(vec![boot])).unwrap();
    let n = node.handle;
    let said = n.wait_for(|s| match &s.joining {
        weft_p2p::Joining::Retrying { last_error, .. } => last_error.contains(THEIRS),
        _ => false,
    });
    tokio::time::timeout(Duration::from_secs(20), said).await.expect("the node says why it cannot join");
    let s = n.status();
    let weft_p2p::Joining::Retrying { last_error, .. } = &s.joining else { unreachable!() };
    assert!(
        last_error.contains(weft_p2p::versions::PROTOCOL_VERSION) && last_error.contains("upgrade"),
        "{last_error}"
    );
    assert!(s.members.is_empty(), "no roster to join, and none founded: it has a bootstrap peer: {s:?}");
}
