//! Hostile publishers on `/weft/postings/1`, over real libp2p on loopback: a stranger; a
//! member posting pages of a host it never owned (directly, or as a cell's hand-over),
//! claiming a cell its vector is not in, passing on another member's postings as its own
//! publishing, changing a signed posting, or withdrawing another member's page; a member
//! flooding past its rate. The hostile member is
//! a bare rust-libp2p peer holding a real member's identity — what a modified node is: the
//! receiver attributes everything it sends to that member, and a posting stands for a page
//! only when its publisher owned the page's host.

use futures::StreamExt;
use libp2p::request_response::{self, OutboundRequestId, ProtocolSupport};
use libp2p::swarm::SwarmEvent;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft_p2p::codec::{Codec, Frame};
use weft_p2p::postings::{PageMeta, Posting, PostingBatch, PostingReply, PostingWire, Tombstone};
use weft_p2p::ring::host_point;
use weft_p2p::{NetworkConfig, NetworkHandle, PeerId, Ring, DEFAULT_VNODES};

const MODEL: &str = "test-model";

/// A node that holds postings of [`MODEL`].
fn config(bootstrap: Vec<String>) -> NetworkConfig {
    NetworkConfig { model: Some(MODEL.into()), ..crate::tcp_config(bootstrap) }
}

/// What reached a node's store: (from whom, the posting).
type Stored = Arc<Mutex<Vec<(Option<PeerId>, Posting)>>>;

/// A node that stores what reaches it (records it here) and acknowledges it, as a node's
/// cell store does.
fn holder(
    key: libp2p::identity::Keypair,
    bootstrap: Vec<String>,
) -> (NetworkHandle, tokio::task::JoinHandle<()>, Stored) {
    let started = weft_p2p::start(key, config(bootstrap)).unwrap();
    let (n, task, mut postings) = (started.handle, started.task, started.postings);
    let stored: Stored = Arc::default();
    let into = stored.clone();
    tokio::spawn(async move {
        while let Some(i) = postings.recv().await {
            let taken = i.batch.postings.len() as u32;
            into.lock().unwrap().extend(i.batch.postings.into_iter().map(|p| (i.from, p)));
            if let Some(reply) = i.reply {
                let _ = reply.send(Some(taken));
            }
        }
    });
    (n, task, stored)
}

pub(crate) async fn within<T>(secs: u64, what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), f).await.unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// A bare libp2p peer speaking only `/weft/postings/1`, under an identity of its choosing.
pub(crate) struct Publisher {
    swarm: libp2p::Swarm<request_response::Behaviour<Codec<PostingWire>>>,
    target: PeerId,
}

impl Publisher {
    pub(crate) async fn connect(key: libp2p::identity::Keypair, target: &str) -> Publisher {
        let mut swarm = libp2p::SwarmBuilder::with_existing_identity(key)
            .with_tokio()
            .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
            .unwrap()
            .with_behaviour(|_| {
                request_response::Behaviour::with_codec(
                    Codec::<PostingWire>::new().0,
                    [(weft_p2p::behaviour::POSTINGS_PROTOCOL, ProtocolSupport::Outbound)],
                    request_response::Config::default(),
                )
            })
            .unwrap()
            .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(120)))
            .build();
        let addr: libp2p::Multiaddr = target.parse().unwrap();
        let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() else { panic!("{target}") };
        swarm.dial(addr).unwrap();
        within(20, "the publisher's connection", async {
            loop {
                if let SwarmEvent::ConnectionEstablished { .. } = swarm.select_next_some().await {
                    break;
                }
            }
        })
        .await;
        Publisher { swarm, target: peer }
    }

    /// Sends `batches` at once; their replies in order (`None`: none came — the request failed
    /// or the connection was closed).
    pub(crate) async fn send(&mut self, batches: Vec<PostingBatch>) -> Vec<Option<PostingReply>> {
        let ids: Vec<OutboundRequestId> = batches
            .into_iter()
            .map(|b| self.swarm.behaviour_mut().send_request(&self.target, Frame::Request(b)))
            .collect();
        let mut replies: HashMap<OutboundRequestId, Option<PostingReply>> = HashMap::new();
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            while replies.len() < ids.len() {
                match self.swarm.select_next_some().await {
                    SwarmEvent::Behaviour(request_response::Event::Message {
                        message: request_response::Message::Response { request_id, response },
                        ..
                    }) => {
                        replies.insert(request_id, Some(response));
                    }
                    SwarmEvent::Behaviour(request_response::Event::OutboundFailure { request_id, error, .. }) => {
                        eprintln!("no reply: {error}");
                        replies.insert(request_id, None);
                    }
                    SwarmEvent::ConnectionClosed { num_established: 0, .. } => break,
                    _ => {}
                }
            }
        })
        .await;
        ids.iter().map(|id| replies.remove(id).flatten()).collect()
    }
}

/// A well-formed posting of `url`'s page signed by `key`: its vector is cell `cell`'s own
/// centroid.
fn posting(url: &str, cell: u32, key: &libp2p::identity::Keypair) -> Posting {
    let book = weft_p2p::placement::shipped();
    let doc =
        format!("{:032x}", u128::from_le_bytes(blake3::hash(url.as_bytes()).as_bytes()[..16].try_into().unwrap()));
    let mut p = Posting {
        codebook: book.id().to_string(),
        cell,
        model: MODEL.into(),
        doc,
        position: 0,
        page: PageMeta { url: url.into(), title: "A page".into(), ..Default::default() },
        text: "the chunk's words".into(),
        vector: Posting::encode_vector(book.cell(cell)),
        simhash: None,
        language: Some("en".into()),
        fetched_at: 1_790_000_000,
        publisher: Vec::new(),
        signature: Vec::new(),
    };
    p.sign(key);
    p
}

fn batch(postings: Vec<Posting>) -> PostingBatch {
    PostingBatch { postings, ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_speaks_only_for_its_own_hosts_within_its_rate() {
    let (n, n_task, stored) = holder(libp2p::identity::Keypair::generate_ed25519(), vec![]);
    let addr = crate::tcp_addr(&n).await;

    // A stranger's posting is not taken, nor counted against anyone but the stranger.
    let stranger_key = libp2p::identity::Keypair::generate_ed25519();
    let mut stranger = Publisher::connect(stranger_key.clone(), &addr).await;
    let replies = stranger.send(vec![batch(vec![posting("http://anywhere.test/p", 7, &stranger_key)])]).await;
    assert_eq!(replies, vec![Some(PostingReply::NotMember)]);

    // Two members: b, then a (whose identity the hostile publisher holds) once n has met b,
    // so that n's rings are known: n alone, n and b, all three.
    let key_b = libp2p::identity::Keypair::generate_ed25519();
    let (b, b_task, _) = holder(key_b.clone(), vec![addr.clone()]);
    within(60, "n meets b", n.wait_for(|s| s.members.len() == 2)).await;
    let key_a = libp2p::identity::Keypair::generate_ed25519();
    let (a, a_task, _) = holder(key_a.clone(), vec![addr.clone()]);
    for m in [&n, &a, &b] {
        within(60, "three members", m.wait_for(|s| s.members.len() == 3)).await;
    }
    let (nid, aid, bid) = (n.peer_id(), a.peer_id(), b.peer_id());
    let ring = |ms: &[PeerId]| Ring::new(ms.iter().copied(), DEFAULT_VNODES);
    // Every ring n went through on the way to three members, and the ring without n.
    let rings = [ring(&[nid]), ring(&[nid, aid]), ring(&[nid, bid]), ring(&[nid, aid, bid]), ring(&[aid, bid])];
    let hosts: Vec<String> = (0..2000).map(|i| format!("h{i}.test")).collect();
    let own: Vec<&String> = hosts.iter().filter(|h| rings[3].owner(h) == Some(&aid)).take(20).collect();
    // Hosts a never owned: those it would own were the member before it unknown to it (its
    // ring and n's disagree) apart from those it would not.
    let second = |h: &str| rings[3].owners_of_point(host_point(h), 2).contains(&aid);
    let never_owned = |h: &&String| rings.iter().all(|r| r.owner(h) != Some(&aid));
    let never: Vec<&String> = hosts.iter().filter(never_owned).filter(|h| !second(h)).take(5).collect();
    // n never had a ring of n and a alone: a host after b then a never was a's there.
    let had = [&rings[0], &rings[2], &rings[3], &rings[4]];
    let disputed: Vec<&String> =
        hosts.iter().filter(|h| had.iter().all(|r| r.owner(h) != Some(&aid)) && second(h)).take(3).collect();
    assert!(own.len() == 20 && never.len() == 5 && disputed.len() == 3);
    let of_b: Vec<&String> = hosts.iter().filter(|h| rings[3].owner(h) == Some(&bid)).take(1).collect();
    let mut hostile = Publisher::connect(key_a.clone(), &addr).await;

    // One batch: three of a's own pages (taken), and refused: two pages of hosts a never
    // owned, b's posting of b's page passed on by a as if it published it, a's posting
    // changed after it was signed, and a vector claimed for a cell far from it. Not refused
    // whole: no strike.
    let book = weft_p2p::placement::shipped();
    let far = (0..book.len() as u32)
        .min_by(|x, y| {
            let dot = |c: u32| weft_vecmath::dot(book.cell(c), book.cell(0));
            dot(*x).total_cmp(&dot(*y))
        })
        .unwrap();
    let mut mixed: Vec<Posting> = own[..3]
        .iter()
        .enumerate()
        .map(|(i, h)| posting(&format!("http://{h}/mixed"), i as u32 * 17, &key_a))
        .collect();
    mixed.extend(never[..2].iter().map(|h| posting(&format!("http://{h}/mixed"), 40, &key_a)));
    mixed.push(posting(&format!("http://{}/theirs", of_b[0]), 41, &key_b));
    let mut changed = posting(&format!("http://{}/changed", own[0]), 42, &key_a);
    changed.page.title = "A title its publisher never gave it".into();
    mixed.push(changed);
    let mut wrong_cell = posting(&format!("http://{}/wrong", own[0]), 0, &key_a);
    wrong_cell.cell = far;
    mixed.push(wrong_cell);
    let replies = hostile.send(vec![batch(mixed)]).await;
    assert_eq!(replies, vec![Some(PostingReply::Ack { taken: 3, refused: 5 })]);

    // A flood: three waves of eight batches (the streams one connection may have open at
    // once), back to back, each batch one posting of a's own. Over the rate (4 batches a
    // second, bursts of 8) they are answered busy, and only what the rate allows is stored.
    let started = Instant::now();
    let mut replies = Vec::new();
    for wave in 0..3 {
        let flood: Vec<PostingBatch> = (0..8)
            .map(|i| batch(vec![posting(&format!("http://{}/flood{wave}-{i}", own[3 + i]), 5, &key_a)]))
            .collect();
        replies.extend(hostile.send(flood).await);
    }
    let took = started.elapsed().as_secs_f64();
    let acked = replies.iter().filter(|r| matches!(r, Some(PostingReply::Ack { taken: 1, .. }))).count();
    let busy = replies.iter().filter(|r| **r == Some(PostingReply::Busy)).count();
    assert_eq!(acked + busy, 24, "{replies:?}");
    assert!(busy >= 8 && (acked as f64) <= 8.0 + 4.0 * took + 1.0, "{acked} taken, {busy} busy in {took:.1} s");
    assert!(n.status().postings.busy >= busy as u64, "{:?}", n.status().postings);
    tokio::time::sleep(Duration::from_secs(3)).await; // the rate's tokens come back

    // Batches refused whole — pages of a host a never owned, the same passed off as a
    // cell's hand-over (a holds every cell: three members, three replicas), a withdrawal of
    // another member's page — are strikes; the third in a row bans a. A batch of which
    // something is taken clears them (a member whose ring differs for a while is no
    // offender): one strike, then a page of a's own, then pages a would own on a ring
    // lacking one member (no strike), then the three.
    let forged: Vec<Posting> = never.iter().map(|h| posting(&format!("http://{h}/forged"), 9, &key_a)).collect();
    let reply = hostile.send(vec![batch(forged.clone())]).await.remove(0);
    assert!(matches!(reply, Some(PostingReply::Ack { taken: 0, refused: 5 })), "a first strike: {reply:?}");
    let reply = hostile.send(vec![batch(vec![posting(&format!("http://{}/again", own[1]), 5, &key_a)])]).await;
    assert_eq!(reply, vec![Some(PostingReply::Ack { taken: 1, refused: 0 })], "taken: the strike is cleared");
    // Pages of hosts a would own on a ring without the member before it: refused, counted as
    // disputed, no strike (a member that missed a join publishes nothing else for a while).
    let before = n.status().postings.disputed;
    let theirs: Vec<Posting> = disputed.iter().map(|h| posting(&format!("http://{h}/lagging"), 9, &key_a)).collect();
    let reply = hostile.send(vec![batch(theirs)]).await.remove(0);
    assert_eq!(reply, Some(PostingReply::Ack { taken: 0, refused: 3 }), "refused, no strike");
    within(10, "disputes counted", n.wait_for(|s| s.postings.disputed == before + 3)).await;
    let handed = PostingBatch { postings: forged.clone(), handover: true, ..Default::default() };
    let withdrawal = PostingBatch {
        tombstones: vec![Tombstone {
            doc: posting(&format!("http://{}/p", never[4]), 0, &key_b).doc,
            url: format!("http://{}/p", never[4]),
            at: 1_790_000_100,
        }],
        ..Default::default()
    };
    for (i, bad) in [batch(forged), handed, withdrawal].into_iter().enumerate() {
        let before = n.status().postings.refused;
        let reply = hostile.send(vec![bad]).await.remove(0);
        if i < 2 {
            assert!(matches!(reply, Some(PostingReply::Ack { taken: 0, refused }) if refused > 0), "{i}: {reply:?}");
        } else {
            assert_eq!(reply, None, "the third strike bans without an answer");
        }
        within(10, "refusals counted", n.wait_for(|s| s.postings.refused > before)).await;
    }
    // Banned: its connections with n refused for a while. It stays on n's ring, as on every
    // member's: the roster is the network's, and one member cannot take another out of it.
    within(10, "a banned", n.wait_for(|s| s.banned_peers == 1)).await;
    assert!(n.status().members.contains(&aid.to_string()));

    // What reached n's store: a's own pages, nothing else — not the stranger's, not the
    // forged ones, not the wrong cell.
    let stored = stored.lock().unwrap().clone();
    assert_eq!(stored.len(), 4 + acked, "{stored:?}");
    for (from, p) in &stored {
        assert_eq!(*from, Some(aid));
        let host = weft_p2p::postings::host_of(&p.page.url).unwrap();
        assert!(own.iter().any(|h| **h == host), "{}", p.page.url);
    }
    for (m, t) in [(a, a_task), (b, b_task), (n, n_task)] {
        m.stop();
        t.await.unwrap();
    }
}
