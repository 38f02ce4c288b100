//! A peer that opens many `/weft/urls/1` streams and half-sends a large batch on each, then
//! goes quiet: libp2p keeps a request's bytes for as long as its stream lives, and an
//! adversarial review saw 90 such streams take +357 MB. Real libp2p over real TCP on loopback;
//! the attacker is a bare rust-libp2p peer. Its own file: the test reads this process's RSS,
//! which other tests running beside it would disturb.

use futures::StreamExt;
use libp2p::request_response::{self, ProtocolSupport};
use libp2p::swarm::SwarmEvent;
use std::time::Duration;
use weft_p2p::exchange::{UrlKind, WireUrl};

/// Streams the attacker opens, and the bytes of a batch each sends before it stalls.
const STREAMS: usize = 90;
const HALF_SENT: usize = 3 * 1024 * 1024;

use crate::tcp_config as config;

fn rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Writes the first [`HALF_SENT`] bytes of a request (from one shared buffer: the attacker's
/// own memory stays out of the measurement), then never finishes it.
#[derive(Clone)]
struct Stall(&'static [u8]);

impl request_response::Codec for Stall {
    type Protocol = libp2p::StreamProtocol;
    type Request = ();
    type Response = Vec<u8>;

    async fn read_request<T>(&mut self, _: &Self::Protocol, _: &mut T) -> std::io::Result<()>
    where
        T: futures::AsyncRead + Unpin + Send,
    {
        Err(std::io::Error::other("this peer only sends"))
    }

    async fn read_response<T>(&mut self, _: &Self::Protocol, io: &mut T) -> std::io::Result<Vec<u8>>
    where
        T: futures::AsyncRead + Unpin + Send,
    {
        use futures::AsyncReadExt;
        let mut bytes = Vec::new();
        io.take(1024).read_to_end(&mut bytes).await?;
        Ok(bytes)
    }

    async fn write_request<T>(&mut self, _: &Self::Protocol, io: &mut T, _: ()) -> std::io::Result<()>
    where
        T: futures::AsyncWrite + Unpin + Send,
    {
        use futures::AsyncWriteExt;
        io.write_all(self.0).await?;
        io.flush().await?;
        futures::future::pending::<()>().await;
        Ok(())
    }

    async fn write_response<T>(&mut self, _: &Self::Protocol, _: &mut T, _: Vec<u8>) -> std::io::Result<()>
    where
        T: futures::AsyncWrite + Unpin + Send,
    {
        Err(std::io::Error::other("this peer only sends"))
    }
}

/// Measures the process's resident memory: run alone in a process of its own (the crate's
/// other tests share this binary and run beside it).
#[test]
fn half_sent_batches_hold_a_bounded_amount_of_memory_and_ban_their_sender() {
    if !crate::alone("hostile_streams::half_sent_batches_hold_a_bounded_amount_of_memory_and_ban_their_sender") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(half_sent_batches());
}

async fn half_sent_batches() {
    let key = libp2p::identity::Keypair::generate_ed25519();
    let started = weft_p2p::start(key, config(vec![])).unwrap();
    let (n, n_task, mut inbound) = (started.handle, started.task, started.inbound);
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = got.clone();
    tokio::spawn(async move {
        while let Some(i) = inbound.recv().await {
            let count = i.urls.len() as u32;
            seen.lock().unwrap().extend(i.urls.into_iter().map(|u| u.url));
            if let Some(reply) = i.reply {
                let _ = reply.send(count);
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), n.wait_for(|s| !s.listen_addrs.is_empty())).await.unwrap();
    let addr = n.status().listen_addrs[0].clone();

    // An honest member, there before the attack.
    let member = weft_p2p::start(libp2p::identity::Keypair::generate_ed25519(), config(vec![addr.clone()])).unwrap();
    let (m, m_task) = (member.handle, member.task);
    let mut m_inbound = member.inbound;
    tokio::spawn(async move { while m_inbound.recv().await.is_some() {} });
    for x in [&n, &m] {
        tokio::time::timeout(Duration::from_secs(60), x.wait_for(|s| s.members.len() == 2)).await.unwrap();
    }

    // The attacker: one connection, as many streams as it likes, each 3 MiB into a batch
    // (an unfinished CBOR array of URL strings: nothing to decode until the end).
    let body: &'static [u8] = {
        let mut b = vec![0x9f_u8]; // an array of indefinite length
        while b.len() < HALF_SENT {
            b.push(0x78);
            b.push(60);
            b.extend_from_slice(&[b'a'; 60]);
        }
        b.truncate(HALF_SENT);
        Vec::leak(b)
    };
    let mut attacker = libp2p::SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(libp2p::tcp::Config::default(), libp2p::noise::Config::new, libp2p::yamux::Config::default)
        .unwrap()
        .with_behaviour(|_| {
            request_response::Behaviour::with_codec(
                Stall(body),
                [(weft_p2p::behaviour::URLS_PROTOCOL, ProtocolSupport::Outbound)],
                request_response::Config::default()
                    .with_request_timeout(Duration::from_secs(120))
                    .with_max_concurrent_streams(STREAMS + 10),
            )
        })
        .unwrap()
        .with_swarm_config(|c| c.with_idle_connection_timeout(Duration::from_secs(120)))
        .build();
    let target: libp2p::Multiaddr = addr.parse().unwrap();
    let Some(libp2p::multiaddr::Protocol::P2p(peer)) = target.iter().last() else { panic!("{addr}") };
    let before = rss();
    attacker.dial(target).unwrap();
    let attack = tokio::spawn(async move {
        let mut closed = false;
        loop {
            match attacker.select_next_some().await {
                SwarmEvent::ConnectionEstablished { .. } => {
                    for _ in 0..STREAMS {
                        attacker.behaviour_mut().send_request(&peer, ());
                    }
                }
                SwarmEvent::ConnectionClosed { num_established: 0, .. } => closed = true,
                SwarmEvent::OutgoingConnectionError { .. } if closed => return,
                _ => {}
            }
            if closed {
                // Banned: its dials are refused from now on.
                let _ = attacker.dial(addr.parse::<libp2p::Multiaddr>().unwrap());
            }
        }
    });

    // While the attack holds its streams: the node's memory and its request budget.
    let (mut peak_rss, mut peak_held) = (before, 0);
    let started = tokio::time::Instant::now();
    // The member sends a batch in the middle of it.
    let urls: Vec<WireUrl> = {
        let ring = m.ring();
        (0..2000)
            .map(|i| format!("http://h{i}.test/"))
            .filter(|u| ring.owner(&u[7..u.len() - 1]) == Some(&n.peer_id()))
            .take(50)
            .map(|u| WireUrl::new(u, 1, UrlKind::Page))
            .collect()
    };
    let mut sent = false;
    while started.elapsed() < Duration::from_secs(45) {
        if !sent && started.elapsed() > Duration::from_secs(3) {
            m.send_urls(urls.clone());
            sent = true;
        }
        let s = n.status();
        peak_rss = peak_rss.max(rss());
        peak_held = peak_held.max(s.requests_buffered_bytes);
        if s.banned_peers == 1 && s.requests_buffered_bytes == 0 && got.lock().unwrap().len() == urls.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let s = n.status();
    let grew = peak_rss.saturating_sub(before);
    eprintln!(
        "RSS {} MiB -> peak {} MiB (+{} MiB); budget peak {} MiB; {s:?}",
        before >> 20,
        peak_rss >> 20,
        grew >> 20,
        peak_held >> 20
    );
    // 90 streams × 3 MiB read into growing buffers was ~360 MiB; now 16 streams fit on the
    // connection and the budget holds 64 MiB.
    assert!(peak_held > 0 && peak_held <= 64 << 20, "budget peak {peak_held}");
    assert!(grew < 128 << 20, "RSS grew {} MiB", grew >> 20);
    assert_eq!(s.banned_peers, 1, "the staller is banned: {s:?}");
    assert!(s.batches_refused >= 1, "{s:?}");
    assert_eq!(s.requests_buffered_bytes, 0, "its buffers are given back");
    assert_eq!(got.lock().unwrap().len(), urls.len(), "the member's batch arrived: {s:?}");
    assert!(!m.status().members.is_empty());

    attack.abort();
    for (x, t) in [(m, m_task), (n, n_task)] {
        x.stop();
        t.await.unwrap();
    }
}
