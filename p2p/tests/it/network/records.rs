//! Near-duplicate records between real nodes: every request attributable, and rate-limited.

use super::urls::recording_node;
use super::*;

/// A bare libp2p peer that speaks only `/weft/records/1`: once connected it sends `requests`,
/// eight in flight at a time (as fast as the node answers), and returns the replies that came
/// back, and whether its connection was closed.
async fn raw_records(
    target: &str,
    requests: Vec<weft_p2p::records::RecordRequest>,
) -> (Vec<weft_p2p::records::RecordReply>, bool) {
    use futures::StreamExt;
    use libp2p::request_response::{self, ProtocolSupport};
    use libp2p::swarm::SwarmEvent;
    use weft_p2p::codec::{Codec, Frame};
    let mut swarm = libp2p::SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
        .unwrap()
        .with_behaviour(|_| {
            request_response::Behaviour::with_codec(
                Codec::<weft_p2p::records::RecordWire>::new().0,
                [(weft_p2p::behaviour::RECORDS_PROTOCOL, ProtocolSupport::Outbound)],
                request_response::Config::default(),
            )
        })
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
        .build();
    let addr: libp2p::Multiaddr = target.parse().unwrap();
    let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() else { panic!("{target}") };
    swarm.dial(addr).unwrap();
    let mut requests = requests.into_iter();
    let (mut in_flight, mut replies, mut closed, mut failed) = (0, Vec::new(), false, false);
    let _ = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            match swarm.select_next_some().await {
                SwarmEvent::ConnectionEstablished { .. } => {}
                SwarmEvent::Behaviour(request_response::Event::Message {
                    message: request_response::Message::Response { response, .. },
                    ..
                }) => {
                    replies.push(response);
                    in_flight -= 1;
                }
                SwarmEvent::Behaviour(request_response::Event::OutboundFailure { .. }) => {
                    in_flight -= 1;
                    failed = true;
                }
                SwarmEvent::ConnectionClosed { num_established: 0, .. } => {
                    closed = true;
                    break;
                }
                _ => continue,
            }
            while in_flight < 8 {
                let Some(r) = requests.next() else { break };
                let addressed = weft_p2p::records::Addressed { to: peer.to_string(), hops: 1, request: r };
                swarm.behaviour_mut().send_request(&peer, Frame::Request(addressed));
                in_flight += 1;
            }
            // A request that failed may be the node closing the connection: the stream's
            // failure can arrive before the connection's close, so wait for that (or the timeout).
            if in_flight == 0 && !failed {
                break;
            }
        }
    })
    .await;
    (replies, closed)
}

/// Record requests are bounded, attributable and rate-limited: an entry not signed by the peer
/// it names bans its sender; a stranger's lookups are answered `NotMember` (nothing a node holds is
/// told to a peer outside its network), and a flood of them over the sender's rate is refused
/// and then banned. (The memory attack this guards against: one peer once had a node store
/// 50,000 records of 8 KiB.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_requests_are_attributable_and_rate_limited() {
    use weft_p2p::records::{DupEntry, RecordReply, RecordRequest};
    let (n, n_task, _) = recording_node(vec![]).await;
    let addr = crate::tcp_addr(&n).await;

    // Signed, but by another key than that of the peer it names.
    let mut forged = DupEntry::signed(&libp2p::identity::Keypair::generate_ed25519(), 1, "http://a.test/".into(), 1);
    forged.peer = n.peer_id().to_string().into();
    let (replies, closed) = raw_records(&addr, vec![RecordRequest::Put { entry: forged }]).await;
    assert!(replies.is_empty() && closed, "{replies:?}");
    within(10, "the forger banned", n.wait_for(|s| s.banned_peers == 1)).await;
    assert_eq!(n.status().dht_records, 0);

    let (replies, closed) = raw_records(&addr, vec![RecordRequest::Get { hash: 1 }]).await;
    assert_eq!((replies, closed), (vec![RecordReply::NotMember], false));

    // As fast as a peer can send them: refused over the rate, then banned.
    let flood = (0..weft_p2p::network::DHT_FLOOD as u64 + 400).map(|hash| RecordRequest::Get { hash }).collect();
    let (replies, closed) = raw_records(&addr, flood).await;
    assert!(closed, "the flooder's connection is closed");
    assert!(replies.contains(&RecordReply::Busy), "over the rate: Busy");
    // A ceiling, not a goal: the node judges each request in turn.
    within(60, "the flooder banned", n.wait_for(|s| s.banned_peers == 2)).await;
    let s = n.status();
    assert!(s.dht_refused >= 2 + u64::from(weft_p2p::network::DHT_FLOOD), "{s:?}");
    n.stop();
    n_task.await.unwrap();
}
