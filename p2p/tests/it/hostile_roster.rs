//! A hostile peer on `/weft/roster/1`, real libp2p over loopback: identities made up by the
//! hundred, sponsored by more made-up identities, and a forged departure of an honest member.

use super::network::{config, recording_node_with, within};
use libp2p::request_response::{self, ProtocolSupport};
use std::time::Duration;
use weft_p2p::codec::{Codec, Frame};
use weft_p2p::roster::event::{Event, What};
use weft_p2p::roster::wire::{RosterRequest, RosterWire};
use weft_p2p::roster::FollowUp;

type RosterSwarm = libp2p::Swarm<request_response::Behaviour<Codec<RosterWire>>>;

/// A bare peer that speaks only `/weft/roster/1`.
fn roster_swarm(key: libp2p::identity::Keypair) -> RosterSwarm {
    libp2p::SwarmBuilder::with_existing_identity(key)
        .with_tokio()
        .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
        .unwrap()
        .with_behaviour(|_| {
            let protocols = [(weft_p2p::behaviour::ROSTER_PROTOCOL, ProtocolSupport::Full)];
            request_response::Behaviour::with_codec(Codec::new().0, protocols, request_response::Config::default())
        })
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(300)))
        .build()
}

/// The ring-takeover attack, on the roster: keys cost nothing, so one peer sends the Joined
/// events of a hundred made-up identities — half signed by themselves alone, half also by two
/// made-up "sponsors" — and a Left of an honest member signed by itself, and one Joined whose
/// signature it broke. None is a member: a join needs sponsors who are members, a departure the
/// member's own signature. The honest members stay two, their ring shares hold, every URL
/// reaches its owner, and the forgeries are counted as refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_identities_and_a_forged_departure_do_not_change_the_roster() {
    use futures::StreamExt;
    let key = libp2p::identity::Keypair::generate_ed25519;
    let (n, n_task, got_n) = recording_node_with(key(), config(vec![])).await;
    let addr = crate::tcp_addr(&n).await;
    let (m, m_task, got_m) = recording_node_with(key(), config(vec![addr.clone()])).await;
    for x in [&n, &m] {
        within(60, "two members", x.wait_for(|s| s.members.len() == 2 && s.roster.stage == "member")).await;
    }
    let honest = n.status().ring_share;

    let now = weft_clock::now_secs();
    let mut events = Vec::new();
    for i in 0..100 {
        let sybil = key();
        let peer = sybil.public().to_peer_id();
        let joined = Event::new(&peer, now, What::Joined { vnodes: 150, since: now, block: 0 }).signed_by(&sybil);
        events.push(if i % 2 == 0 { joined } else { joined.signed_by(&key()).signed_by(&key()) });
    }
    let attacker = key();
    events.push(Event::new(&m.peer_id(), now, What::Left).signed_by(&attacker));
    let mut broken = events[0].clone();
    broken.at += 1;
    events.push(broken);
    let mut swarm = roster_swarm(attacker);
    swarm.dial(addr.parse::<libp2p::Multiaddr>().unwrap()).unwrap();
    let n_id = n.peer_id();
    let attacking = tokio::spawn(async move {
        let mut sent = false;
        loop {
            match swarm.select_next_some().await {
                libp2p::swarm::SwarmEvent::ConnectionEstablished { peer_id, .. } if peer_id == n_id && !sent => {
                    sent = true;
                    // Two pushes: the events do not all fit one follow-up's budget.
                    for chunk in events.chunks(50) {
                        let up = FollowUp { events: chunk.to_vec(), want: Vec::new() };
                        swarm.behaviour_mut().send_request(&n_id, Frame::Request(RosterRequest::FollowUp(up)));
                    }
                }
                _ => {}
            }
        }
    });

    within(30, "n refuses the forged departure and the broken signature", n.wait_for(|s| s.roster.refused_events >= 2))
        .await;
    let until = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < until {
        for x in [&n, &m] {
            let s = x.status();
            assert_eq!(s.members.len(), 2, "{} members: {:?}", s.members.len(), s.roster);
            assert!(s.members.contains(&m.peer_id().to_string()), "the forged departure was believed");
        }
        let share = n.status().ring_share;
        assert!((share - honest).abs() <= 0.01, "ring share {share} against {honest} honest");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // No URL is lost to an owner that does not exist.
    let urls: Vec<weft_p2p::WireUrl> = (0..200)
        .map(|i| weft_p2p::WireUrl::new(format!("http://site{i}.test/"), 0, weft_p2p::exchange::UrlKind::Page))
        .collect();
    m.send_urls(urls);
    within(30, "every URL reaches its owner", async {
        while got_n.lock().unwrap().len() + got_m.lock().unwrap().len() < 200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    attacking.abort();
    for (x, t) in [(m, m_task), (n, n_task)] {
        x.stop();
        t.await.unwrap();
    }
}
