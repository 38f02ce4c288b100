//! The URL exchange between real nodes: malformed batches get their sender banned, only a
//! host's previous owner may say its pages are done or leave second copies, a newcomer's URLs go
//! through a would-be monitor, and a member back from a crash takes a hand-off meant for it.

use super::*;

/// Writes raw bytes as a `/weft/urls/1` request: what a buggy or hostile peer can send.
#[derive(Clone, Default)]
struct RawCodec;

impl libp2p::request_response::Codec for RawCodec {
    type Protocol = libp2p::StreamProtocol;
    type Request = Vec<u8>;
    type Response = weft_p2p::exchange::BatchReply;

    async fn read_request<T>(&mut self, _: &Self::Protocol, _: &mut T) -> std::io::Result<Vec<u8>>
    where
        T: futures::AsyncRead + Unpin + Send,
    {
        Err(std::io::Error::other("this peer only sends"))
    }

    async fn read_response<T>(&mut self, _: &Self::Protocol, io: &mut T) -> std::io::Result<Self::Response>
    where
        T: futures::AsyncRead + Unpin + Send,
    {
        use futures::AsyncReadExt;
        let mut bytes = Vec::new();
        io.take(1024).read_to_end(&mut bytes).await?;
        cbor4ii::serde::from_slice(&bytes).map_err(|e| std::io::Error::other(e.to_string()))
    }

    async fn write_request<T>(&mut self, _: &Self::Protocol, io: &mut T, bytes: Vec<u8>) -> std::io::Result<()>
    where
        T: futures::AsyncWrite + Unpin + Send,
    {
        use futures::AsyncWriteExt;
        io.write_all(&bytes).await?;
        io.close().await
    }

    async fn write_response<T>(&mut self, _: &Self::Protocol, _: &mut T, _: Self::Response) -> std::io::Result<()>
    where
        T: futures::AsyncWrite + Unpin + Send,
    {
        Err(std::io::Error::other("this peer only sends"))
    }
}

fn cbor(batch: &weft_p2p::exchange::UrlBatch) -> Vec<u8> {
    cbor4ii::serde::to_vec(Vec::new(), batch).unwrap()
}

/// A bare libp2p peer that speaks only `/weft/urls/1`: it sends one request of raw bytes and
/// reports the reply, if any, and whether its connection was closed.
async fn raw_send(target: &str, bytes: Vec<u8>) -> (Option<weft_p2p::exchange::BatchReply>, bool) {
    use futures::StreamExt;
    use libp2p::request_response::{self, ProtocolSupport};
    use libp2p::swarm::SwarmEvent;
    let mut swarm = libp2p::SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
        .unwrap()
        .with_behaviour(|_| {
            request_response::Behaviour::with_codec(
                RawCodec,
                [(weft_p2p::behaviour::URLS_PROTOCOL, ProtocolSupport::Outbound)],
                request_response::Config::default(),
            )
        })
        .unwrap()
        // Stay connected after the request, so a close is the node's doing.
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(60)))
        .build();
    let addr: libp2p::Multiaddr = target.parse().unwrap();
    let Some(libp2p::multiaddr::Protocol::P2p(peer)) = addr.iter().last() else { panic!("{target}") };
    swarm.dial(addr).unwrap();
    let mut bytes = Some(bytes);
    let (mut reply, mut closed) = (None, false);
    let _ = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match swarm.select_next_some().await {
                SwarmEvent::ConnectionEstablished { .. } => {
                    if let Some(b) = bytes.take() {
                        swarm.behaviour_mut().send_request(&peer, b);
                    }
                }
                SwarmEvent::Behaviour(request_response::Event::Message {
                    message: request_response::Message::Response { response, .. },
                    ..
                }) => {
                    reply = Some(response);
                    break;
                }
                SwarmEvent::ConnectionClosed { num_established: 0, .. } => {
                    closed = true;
                    break;
                }
                _ => {}
            }
        }
    })
    .await;
    (reply, closed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_batches_get_their_sender_banned_and_the_node_goes_on() {
    use weft_p2p::exchange::{BatchReply, UrlBatch, UrlKind, WireUrl, MAX_BATCH_BYTES};
    let key = libp2p::identity::Keypair::generate_ed25519();
    let started = weft_p2p::start(key, config(vec![])).unwrap();
    let (n, task, mut inbound) = (started.handle, started.task, started.inbound);
    // Play the node's part: acknowledge what arrives.
    tokio::spawn(async move {
        while let Some(i) = inbound.recv().await {
            if let Some(reply) = i.reply {
                let _ = reply.send(i.urls.len() as u32);
            }
        }
    });
    let addr = crate::tcp_addr(&n).await;
    let url = |u: &str| WireUrl::new(u, 1, UrlKind::Page);

    let too_many = cbor(&UrlBatch {
        urls: (0..1001).map(|i| url(&format!("http://a.test/{i}"))).collect(),
        hops: 0,
        handoff: false,
        second: false,
    });
    let oversized = vec![0x61; MAX_BATCH_BYTES as usize + 10];
    let garbage = b"\xff\xfe definitely not CBOR".to_vec();
    for (i, bad) in [too_many, oversized, garbage].into_iter().enumerate() {
        let (reply, closed) = raw_send(&addr, bad).await;
        assert!(reply.is_none() && closed, "bad request {i}: {reply:?}, closed {closed}");
        let _ = tokio::time::timeout(Duration::from_secs(5), n.wait_for(|s| s.batches_refused == i as u64 + 1)).await;
        let s = n.status();
        assert_eq!((s.batches_refused, s.banned_peers), (i as u64 + 1, i + 1), "{s:?}");
    }

    // The node goes on, and a well-formed batch from a peer that is not a member is answered
    // but not taken: a stranger cannot queue what this node crawls.
    let good = UrlBatch {
        urls: vec![url("http://a.test/1"), url("https://b.test/x")],
        hops: 0,
        handoff: false,
        second: false,
    };
    let (reply, closed) = raw_send(&addr, cbor(&good)).await;
    assert_eq!((reply, closed), (Some(BatchReply::NotMember), false));
    // The reply may reach the stranger before the node's status says so (a loaded run saw 0).
    let _ = tokio::time::timeout(Duration::from_secs(5), n.wait_for(|s| s.batches_not_member == 1)).await;
    let s = n.status();
    assert_eq!((s.urls_received, s.batches_not_member, s.banned_peers), (0, 1, 3), "{s:?}");

    // A member's batch is taken; its bad URLs (ftp, a private IP literal) are dropped and
    // counted. The member sends as soon as n is on its ring, which may be before n has heard
    // its heartbeat: then it is told so, announces itself and sends again.
    let (m, m_task) = node(vec![addr.clone()]).await;
    within(60, "n on m's ring", m.wait_for(|s| s.members.len() == 2)).await;
    let ring = m.ring();
    let of_n = |h: &String| ring.owner(h) == Some(&n.peer_id());
    let hosts: Vec<String> = (0..1000).map(|i| format!("h{i}.test")).filter(of_n).take(3).collect();
    let ip = (1..=255).map(|i| format!("10.0.0.{i}")).find(of_n).unwrap();
    let urls = [
        format!("http://{}/1", hosts[0]),
        format!("ftp://{}/", hosts[1]),
        format!("http://{ip}/"),
        format!("https://{}/x", hosts[2]),
    ];
    m.send_urls(urls.iter().map(|u| url(u)).collect());
    within(20, "the member's batch", n.wait_for(|s| s.urls_received == 2)).await;
    assert_eq!(n.status().urls_rejected, 2);
    for (x, t) in [(m, m_task), (n, task)] {
        x.stop();
        t.await.unwrap();
    }
}

/// A node that records what reaches it through `/weft/urls/1` and acknowledges it.
pub(super) async fn recording_node(bootstrap: Vec<String>) -> (NetworkHandle, tokio::task::JoinHandle<()>, Recorded) {
    let key = libp2p::identity::Keypair::generate_ed25519();
    recording_node_with(key, config(bootstrap)).await
}

/// A recording node that also records the URLs it is given to store and pass on to their
/// owners ([`weft_p2p::Inbound::forward`]).
pub(super) async fn forwarding_node(
    key: libp2p::identity::Keypair,
    config: NetworkConfig,
) -> (NetworkHandle, tokio::task::JoinHandle<()>, Recorded, Recorded) {
    let started = weft_p2p::start(key, config).unwrap();
    let (n, task, mut inbound) = (started.handle, started.task, started.inbound);
    let (got, forwarded) = (Recorded::default(), Recorded::default());
    let (seen, passed) = (got.clone(), forwarded.clone());
    tokio::spawn(async move {
        while let Some(i) = inbound.recv().await {
            let count = i.urls.len() as u32;
            seen.lock().unwrap().extend(i.urls);
            passed.lock().unwrap().extend(i.forward);
            if let Some(reply) = i.reply {
                let _ = reply.send(count);
            }
        }
    });
    (n, task, got, forwarded)
}

/// Members a and b, joined through `addr` (node n's), once n, a and b count three members;
/// with every ring n went through on the way (n alone, n and a, n and b, all three) and, last,
/// the ring without n: what a member may say about a host is judged against these.
async fn two_more_members(
    n: &NetworkHandle,
    addr: &str,
) -> ((NetworkHandle, tokio::task::JoinHandle<()>), (NetworkHandle, tokio::task::JoinHandle<()>), [weft_p2p::Ring; 5]) {
    let (a, a_task) = node(vec![addr.to_string()]).await;
    let (b, b_task) = node(vec![addr.to_string()]).await;
    for m in [n, &a, &b] {
        within(60, "three members", m.wait_for(|s| s.members.len() == 3)).await;
    }
    let (nid, aid, bid) = (n.peer_id(), a.peer_id(), b.peer_id());
    let ring = |ms: &[weft_p2p::PeerId]| weft_p2p::Ring::new(ms.iter().copied(), weft_p2p::DEFAULT_VNODES);
    let rings = [ring(&[nid]), ring(&[nid, aid]), ring(&[nid, bid]), ring(&[nid, aid, bid]), ring(&[aid, bid])];
    ((a, a_task), (b, b_task), rings)
}

/// `http://{host}/page` reached the node for each of `taken`, for none of `never`.
fn only_these_reached(got: &Recorded, taken: &[&String], never: &[&String]) {
    let delivered: Vec<String> = got.lock().unwrap().iter().map(|u| u.url.clone()).collect();
    for h in taken {
        assert!(delivered.contains(&format!("http://{h}/page")), "{h}: {delivered:?}");
    }
    for h in never {
        assert!(!delivered.contains(&format!("http://{h}/page")), "{h} was never a's: {delivered:?}");
    }
}

/// The page-suppression attack: URLs sent as done are marked seen by their receiver and never
/// fetched. A stranger's batch of them is not taken at all; a member's "done" counts only for
/// hosts it owned (now, before a membership change, or while the receiver was away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_hosts_previous_owner_can_say_its_pages_are_done() {
    use weft_p2p::exchange::{BatchReply, UrlBatch, UrlKind, WireUrl};
    let (n, n_task, got) = recording_node(vec![]).await;
    let addr = crate::tcp_addr(&n).await;

    // A stranger's twenty "done" pages.
    let done: Vec<WireUrl> =
        (0..20).map(|i| WireUrl::new(format!("http://victim{i}.test/"), 0, UrlKind::Done)).collect();
    let (reply, _) = raw_send(&addr, cbor(&UrlBatch { urls: done, hops: 0, handoff: true, second: false })).await;
    assert_eq!(reply, Some(BatchReply::NotMember));
    assert!(got.lock().unwrap().is_empty(), "nothing of a stranger's reaches the node");

    // Two members, a and b.
    let ((a, a_task), (b, b_task), rings) = two_more_members(&n, &addr).await;
    let (nid, aid) = (n.peer_id(), a.peer_id());
    let apart = &rings[4];
    let hosts: Vec<String> = (0..2000).map(|i| format!("h{i}.test")).collect();
    let now_n = |h: &&String| rings[3].owner(h) == Some(&nid);
    // Hosts n owns that a never owned on any of those rings: a cannot be done with them.
    let never_a: Vec<&String> =
        hosts.iter().filter(now_n).filter(|h| rings.iter().all(|r| r.owner(h) != Some(&aid))).take(5).collect();
    // Hosts n owns that were a's before n was there (n just started): a hands them over.
    let a_before_n: Vec<&String> =
        hosts.iter().filter(now_n).filter(|h| apart.owner(h) == Some(&aid)).take(5).collect();
    assert!(never_a.len() == 5 && a_before_n.len() == 5);
    let urls: Vec<WireUrl> =
        never_a.iter().chain(&a_before_n).map(|h| WireUrl::new(format!("http://{h}/page"), 0, UrlKind::Done)).collect();
    a.send_urls(urls);
    within(30, "a's batch taken", n.wait_for(|s| s.done_refused == 5)).await;
    within(10, "the rest delivered", async {
        while got.lock().unwrap().len() < 5 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    only_these_reached(&got, &a_before_n, &never_a);
    for (m, t) in [(a, a_task), (b, b_task), (n, n_task)] {
        m.stop();
        t.await.unwrap();
    }
}

/// Second copies (`UrlBatch::second`) say what a host's owner has queued: the member that would
/// take the host over keeps them and crawls them if the owner dies. A stranger's are not
/// taken; a member's only for hosts it owns (or owned lately), so that no peer plants URLs to
/// be crawled for hosts it never held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_hosts_owner_leaves_second_copies_with_the_member_that_would_take_it_over() {
    use weft_p2p::exchange::{BatchReply, UrlBatch, UrlKind, WireUrl};
    let (n, n_task, got) = recording_node(vec![]).await;
    let addr = crate::tcp_addr(&n).await;
    let page = |h: &str| WireUrl::new(format!("http://{h}/page"), 1, UrlKind::Page);
    let (reply, _) =
        raw_send(&addr, cbor(&UrlBatch { urls: vec![page("a.test")], hops: 0, handoff: false, second: true })).await;
    assert_eq!(reply, Some(BatchReply::NotMember));

    let ((a, a_task), (b, b_task), rings) = two_more_members(&n, &addr).await;
    let (nid, aid) = (n.peer_id(), a.peer_id());
    let hosts: Vec<String> = (0..2000).map(|i| format!("h{i}.test")).collect();
    // a's hosts, and hosts a owned on no ring n knows of.
    let of_a: Vec<&String> = hosts.iter().filter(|h| rings[3].owner(h) == Some(&aid)).take(5).collect();
    let never_a: Vec<&String> =
        hosts.iter().filter(|h| rings.iter().all(|r| r.owner(h) != Some(&aid))).take(5).collect();
    assert!(of_a.len() == 5 && never_a.len() == 5);
    let urls: Vec<WireUrl> = of_a.iter().chain(&never_a).map(|h| page(h)).collect();
    assert!(a.send_second_copies(nid, urls).await, "the batch is acknowledged");
    assert_eq!(n.status().second_copies_received, 5);
    only_these_reached(&got, &of_a, &never_a);
    for (m, t) in [(a, a_task), (b, b_task), (n, n_task)] {
        m.stop();
        t.await.unwrap();
    }
}

/// A newcomer's seeds do not wait out its probation (the churn sweep's seed 2: a newcomer given
/// the seeds, killed, restarted and leaving before it is admitted): its would-be monitors take
/// its page URLs (within an allowance all newcomers share) and route them to the owners; its
/// "done" is refused like any non-owner's. The monitor acknowledges them only once its node
/// holds those it passes on (the churn sweep's seed 29: a monitor killed before it reached
/// their owner took a newcomer's seeds with it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_on_its_probation_hands_its_urls_to_a_would_be_monitor() {
    use weft_p2p::exchange::{UrlKind, WireUrl};
    let key = libp2p::identity::Keypair::generate_ed25519;
    let (a, a_task, got_a, passed_a) = forwarding_node(key(), config(vec![])).await;
    let addr = crate::tcp_addr(&a).await;
    let (b, b_task, got_b, passed_b) = forwarding_node(key(), config(vec![addr.clone()])).await;
    for m in [&a, &b] {
        within(60, "two members", m.wait_for(|s| s.members.len() == 2 && s.roster.stage == "member")).await;
    }
    // A newcomer's probation is the network's age when it arrives (five minutes at most): let
    // the network age so the newcomer is on probation long after its URLs are on their way.
    tokio::time::sleep(Duration::from_secs(40)).await;
    let (c, c_task, got_c) = recording_node(vec![addr.clone()]).await;
    within(60, "c has the roster", c.wait_for(|s| s.roster.stage == "probation")).await;
    let hosts: Vec<String> = (0..40).map(|i| format!("h{i}.test")).collect();
    let mut urls: Vec<WireUrl> =
        hosts.iter().map(|h| WireUrl::new(format!("http://{h}/seed"), 0, UrlKind::Page)).collect();
    urls.push(WireUrl::new("http://h0.test/done", 0, UrlKind::Done));
    c.send_urls(urls);
    let taken = || got_a.lock().unwrap().len() + got_b.lock().unwrap().len();
    within(30, "c's seeds at their owners", async {
        while taken() < hosts.len() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let s = c.status();
    assert_ne!(s.roster.stage, "member", "delivered while c was on probation: {:?}", s.roster);
    assert!(got_c.lock().unwrap().is_empty(), "c owns nothing yet");
    let delivered: Vec<String> =
        got_a.lock().unwrap().iter().chain(got_b.lock().unwrap().iter()).map(|u| u.url.clone()).collect();
    assert_eq!(delivered.len(), hosts.len(), "each once, and not the done one: {delivered:?}");
    let (sa, sb) = (a.status(), b.status());
    assert_eq!(sa.urls_from_newcomers + sb.urls_from_newcomers, hosts.len() as u64 + 1, "{sa:?}\n{sb:?}");
    assert_eq!(sa.done_refused + sb.done_refused, 1);
    // The monitor c sent to kept its own hosts' and gave its node the others' to store before
    // acknowledging: exactly the URLs that reached the other member.
    let urls = |r: &Recorded| -> std::collections::BTreeSet<String> {
        r.lock().unwrap().iter().map(|u| u.url.clone()).collect()
    };
    let (via_a, via_b) = (!passed_a.lock().unwrap().is_empty(), !passed_b.lock().unwrap().is_empty());
    assert!(via_a != via_b, "one monitor took c's URLs: {passed_a:?} {passed_b:?}");
    let (passed, reached) = if via_a { (urls(&passed_a), urls(&got_b)) } else { (urls(&passed_b), urls(&got_a)) };
    assert_eq!(passed, reached);
    // Each host reached the owner both rings name.
    let ring = a.ring();
    for u in got_a.lock().unwrap().iter() {
        assert_eq!(ring.owner(&u.ring_host().unwrap()), Some(&a.peer_id()), "{}", u.url);
    }
    for (m, t) in [(c, c_task), (b, b_task), (a, a_task)] {
        m.stop();
        t.await.unwrap();
    }
}

/// The churn sweep's seeds 25 and 29: a member is killed, another leaves while the first is
/// down (its ring still holds the killed member, whose hosts it hands URLs to), and the killed
/// member comes back. The returning node never had the leaver on a ring; it takes the leaver's
/// batches — its queue and what it is done with — because the roster it pulls holds the
/// leaver's signed departure, instead of answering "not a member" until the leaver gives up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_back_from_a_crash_takes_the_hand_off_of_one_that_left_while_it_was_down() {
    use weft_p2p::exchange::{UrlKind, WireUrl};
    // The crashed member stays on the others' rings while it is down (its monitors declare it
    // dead only after twenty seconds).
    let patient = |bootstrap: Vec<String>| {
        let c =
            P2pConfig { enabled: true, listen: vec!["/ip4/127.0.0.1/tcp/0".into()], bootstrap, ..P2pConfig::default() };
        NetworkConfig::from_config(&c).unwrap()
    };
    let start = |bootstrap: Vec<String>| {
        let started = weft_p2p::start(libp2p::identity::Keypair::generate_ed25519(), patient(bootstrap)).unwrap();
        (started.handle, started.task)
    };
    let (first, first_task) = start(vec![]);
    let boot = crate::tcp_addr(&first).await;
    let (other, other_task) = start(vec![boot.clone()]);
    let (leaver, leaver_task) = start(vec![boot.clone()]);
    let key = libp2p::identity::Keypair::generate_ed25519();
    let (back, back_task, _) = recording_node_with(key.clone(), patient(vec![boot.clone()])).await;
    for n in [&first, &other, &leaver, &back] {
        within(60, "four members", n.wait_for(|s| s.members.len() == 4)).await;
    }
    let (lid, bid) = (leaver.peer_id(), back.peer_id());
    // Hosts the leaver owns that go to the crashed member once the leaver is off the ring.
    let ring = leaver.ring();
    let members: Vec<_> = ring.members().iter().copied().filter(|m| *m != lid).collect();
    let after = weft_p2p::Ring::new(members, weft_p2p::DEFAULT_VNODES);
    let hosts: Vec<String> = (0..3000)
        .map(|i| format!("h{i}.test"))
        .filter(|h| ring.owner(h) == Some(&lid) && after.owner(h) == Some(&bid))
        .take(6)
        .collect();
    assert_eq!(hosts.len(), 6);

    // The member crashes; the leaver hands its queue and its done pages to it and leaves.
    back_task.abort();
    let _ = back_task.await;
    drop(back);
    leaver.leave();
    within(10, "off its own ring", async {
        let mut rings = leaver.ring_changes();
        rings.wait_for(|r| !r.contains(&lid)).await.unwrap();
    })
    .await;
    let urls: Vec<WireUrl> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| {
            WireUrl::new(format!("http://{h}/page"), 0, if i % 2 == 0 { UrlKind::Done } else { UrlKind::Page })
        })
        .collect();
    leaver.hand_off(urls.clone(), Vec::new());
    tokio::time::sleep(Duration::from_secs(3)).await;

    // It comes back, with its key, after the leaver left.
    let (back, back_task, got) = recording_node_with(key, patient(vec![boot.clone()])).await;
    within(90, "the leaver's hand-off is taken and acknowledged", async {
        loop {
            let s = leaver.status();
            if got.lock().unwrap().len() >= urls.len() && s.urls_waiting == 0 && s.urls_in_flight == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let mut taken: Vec<(String, UrlKind)> = got.lock().unwrap().iter().map(|u| (u.url.clone(), u.kind)).collect();
    taken.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sent: Vec<(String, UrlKind)> = urls.iter().map(|u| (u.url.clone(), u.kind)).collect();
    sent.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(taken, sent, "the done pages count as done: they were the leaver's hosts");
    assert_eq!(back.status().done_refused, 0);
    for (n, t) in [(leaver, leaver_task), (other, other_task), (first, first_task), (back, back_task)] {
        n.stop();
        t.await.unwrap();
    }
}
