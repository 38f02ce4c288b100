//! Hostile publishers of document copies on `/weft/postings/1`, over real libp2p on loopback:
//! a stranger; a member sending a copy of a page of a host it never owned (directly, or as a
//! holder's hand-over), passing on another member's copy as its own publication, changing a
//! signed copy, filing a page under another page's id. The hostile member is a bare
//! rust-libp2p peer holding a real member's identity. And `/weft/doc/1`: a member reads a
//! document from its holder, checked against its publisher's signature.

use crate::hostile_postings::{within, Publisher};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_p2p::doc_wire::{DocReply, DocRequest};
use weft_p2p::postings::{PageMeta, PostingBatch, PostingReply};
use weft_p2p::replicas::{doc_id, Replica, Span};
use weft_p2p::{NetworkConfig, NetworkHandle, PeerId, Ring, DEFAULT_VNODES};

/// A node that keeps an index (of this model) and three copies of each document.
fn config(bootstrap: Vec<String>) -> NetworkConfig {
    NetworkConfig { model: Some("test-model".into()), doc_replicas: 3, ..crate::tcp_config(bootstrap) }
}

/// The copies that reached a node's store: (from whom, the copy).
type Copies = Arc<Mutex<Vec<(Option<PeerId>, Replica)>>>;

/// A node that stores the copies reaching it (records them here) and acknowledges them, and
/// answers reads of documents from what it recorded.
fn holder(
    key: libp2p::identity::Keypair,
    bootstrap: Vec<String>,
) -> (NetworkHandle, tokio::task::JoinHandle<()>, Copies) {
    let started = weft_p2p::start(key, config(bootstrap)).unwrap();
    let (n, task, mut postings, mut reads) = (started.handle, started.task, started.postings, started.documents);
    let copies: Copies = Arc::default();
    let into = copies.clone();
    tokio::spawn(async move {
        while let Some(i) = postings.recv().await {
            let taken = (i.batch.postings.len() + i.batch.replicas.len()) as u32;
            into.lock().unwrap().extend(i.batch.replicas.into_iter().map(|r| (i.from, r)));
            if let Some(reply) = i.reply {
                let _ = reply.send(Some(taken));
            }
        }
    });
    let held = copies.clone();
    tokio::spawn(async move {
        while let Some(read) = reads.recv().await {
            let DocRequest::Read { doc } = &read.ask else {
                let _ = read.reply.send(DocReply::Busy); // copies are not compared here
                continue;
            };
            let found = held.lock().unwrap().iter().find(|(_, r)| r.doc == *doc).map(|(_, r)| r.clone());
            let _ = read.reply.send(found.map_or(DocReply::Missing, |r| DocReply::Found(Box::new(r))));
        }
    });
    (n, task, copies)
}

/// A signed copy of `url`'s page by `key`.
fn copy(url: &str, key: &libp2p::identity::Keypair) -> Replica {
    let text = "The page's main text, in two chunks.".to_string();
    let mut r = Replica {
        doc: doc_id(url),
        page: PageMeta { url: url.into(), title: "A page".into(), ..Default::default() },
        facts: weft_page::PageFacts { language: Some("en".into()), ..Default::default() },
        word_count: 7,
        simhash: None,
        chunks: vec![Span { start: 0, end: 10, tokens: 3 }, Span { start: 11, end: text.len() as u32, tokens: 6 }],
        text,
        fetched_at: 1_790_000_000,
        links: Vec::new(),
        publisher: Vec::new(),
        signature: Vec::new(),
    };
    r.sign(key);
    r
}

fn batch(replicas: Vec<Replica>, handover: bool) -> PostingBatch {
    PostingBatch { replicas, handover, ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_sends_copies_only_of_its_own_hosts_pages_as_it_signed_them() {
    let (n, n_task, copies) = holder(libp2p::identity::Keypair::generate_ed25519(), vec![]);
    let addr = crate::tcp_addr(&n).await;

    // A stranger's copy is not taken.
    let stranger_key = libp2p::identity::Keypair::generate_ed25519();
    let mut stranger = Publisher::connect(stranger_key.clone(), &addr).await;
    let replies = stranger.send(vec![batch(vec![copy("http://anywhere.test/p", &stranger_key)], false)]).await;
    assert_eq!(replies, vec![Some(PostingReply::NotMember)]);

    // b joins first, then a (whose identity the hostile publisher holds): a never had a ring
    // to itself, where it would have owned every host.
    let key_b = libp2p::identity::Keypair::generate_ed25519();
    let (b, b_task, _) = holder(key_b.clone(), vec![addr.clone()]);
    within(60, "two members", n.wait_for(|s| s.members.len() == 2)).await;
    let key_a = libp2p::identity::Keypair::generate_ed25519();
    let (a, a_task, _) = holder(key_a.clone(), vec![addr.clone()]);
    for m in [&n, &a, &b] {
        within(60, "three members", m.wait_for(|s| s.members.len() == 3)).await;
    }
    let (nid, aid, bid) = (n.peer_id(), a.peer_id(), b.peer_id());
    let ring = |ms: &[PeerId]| Ring::new(ms.iter().copied(), DEFAULT_VNODES);
    // The rings n may have seen: with a and b at any stage of admission (a quarter of their
    // points to all of them), with and without n (a starting node also believes the owners
    // of the ring without it), and n's own now.
    let v = DEFAULT_VNODES;
    let mut rings = vec![ring(&[nid, aid, bid]), (*n.ring()).clone(), ring(&[nid])];
    for wa in [v / 4, v / 2, 3 * v / 4, v] {
        for wb in [v / 4, v / 2, 3 * v / 4, v] {
            for wn in [0, v] {
                let ms = [(nid, wn), (aid, wa), (bid, wb)];
                rings.push(Ring::weighted(ms.into_iter().filter(|(_, w)| *w > 0), v));
            }
        }
    }
    let hosts: Vec<String> = (0..2000).map(|i| format!("h{i}.test")).collect();
    let own: Vec<&String> =
        hosts.iter().filter(|h| rings[0].owner(h) == Some(&aid) && rings[1].owner(h) == Some(&aid)).take(4).collect();
    let never: Vec<&String> = hosts.iter().filter(|h| rings.iter().all(|r| r.owner(h) != Some(&aid))).take(3).collect();
    let of_b: Vec<&String> =
        hosts.iter().filter(|h| rings[0].owner(h) == Some(&bid) && rings[1].owner(h) == Some(&bid)).take(1).collect();
    let mut hostile = Publisher::connect(key_a.clone(), &addr).await;

    // One batch: two copies of a's own pages (taken: with three members, n holds every id
    // a publishes); refused: a page of a host a never owned, b's copy passed on by a as its
    // own publication, a copy changed after it was signed, a page filed under another's id.
    let mut mixed: Vec<Replica> = own[..2].iter().map(|h| copy(&format!("http://{h}/mine"), &key_a)).collect();
    mixed.push(copy(&format!("http://{}/forged", never[0]), &key_a));
    mixed.push(copy(&format!("http://{}/theirs", of_b[0]), &key_b));
    let mut changed = copy(&format!("http://{}/changed", own[2]), &key_a);
    changed.text = "Words its publisher never wrote, in two chunks.".into();
    mixed.push(changed);
    let mut misfiled = copy(&format!("http://{}/one", own[3]), &key_a);
    misfiled.doc = doc_id(&format!("http://{}/another", own[3]));
    misfiled.sign(&key_a);
    mixed.push(misfiled);
    let replies = hostile.send(vec![batch(mixed, false)]).await;
    let urls: Vec<String> = copies.lock().unwrap().iter().map(|(_, r)| r.page.url.clone()).collect();
    assert_eq!(replies, vec![Some(PostingReply::Ack { taken: 2, refused: 4 })], "kept {urls:?}");
    let status = n.status().postings;
    assert_eq!((status.replicas_received, status.replicas_refused), (2, 4), "{status:?}");

    // The forged page as a holder's hand-over: a held no copies of it (a is not the page's
    // publisher, and n's ids are n's) — refused.
    let reply = hostile.send(vec![batch(vec![copy(&format!("http://{}/handed", never[1]), &key_a)], true)]).await;
    assert!(matches!(reply[0], Some(PostingReply::Ack { taken: 0, refused: 1 }) | None), "{reply:?}");

    // What reached n's store: a's two pages, as a sent them.
    let held = copies.lock().unwrap().clone();
    assert_eq!(held.len(), 2, "{held:?}");
    for (from, r) in &held {
        assert_eq!(*from, Some(aid));
        assert_eq!(r.publisher_id(), Some(aid));
        assert!(r.page.url.ends_with("/mine"));
    }

    // `/weft/doc/1`: b reads one of a's documents from n (its holder), as a signed it; a
    // document nobody holds is missing everywhere.
    let doc = held[0].1.doc.clone();
    let got =
        within(20, "a read", b.get_document(&doc, &[nid], 3, Duration::from_millis(300), Duration::from_secs(5))).await;
    let (from, r) = got.found.expect("found");
    assert_eq!((from, &r), (nid, &held[0].1), "{:?}", got.asked);
    let none = b
        .get_document(&doc_id("http://nowhere.test/"), &[], 3, Duration::from_millis(300), Duration::from_secs(5))
        .await;
    assert!(none.found.is_none());
    assert!(none.asked.iter().all(|(_, said)| said == "missing"), "{:?}", none.asked);
    assert!(n.status().documents.served >= 1, "{:?}", n.status().documents);

    // Comparing copies (`weft_p2p::copy_sync`): a member's request reaches the node (which
    // answers here that it has nothing to compare: this holder keeps no stores); a request to
    // send more than `MAX_SEND` copies is past a bound no honest peer crosses, and bans its
    // sender.
    let reply = within(10, "digests", b.ask_documents(nid, DocRequest::Digests)).await;
    assert_eq!(reply, Ok(DocReply::Busy));
    assert_eq!(n.status().banned_peers, 0);
    let too_many = DocRequest::Send { docs: vec![doc.clone(); weft_p2p::copy_sync::MAX_SEND + 1] };
    let reply = within(10, "an oversized request", b.ask_documents(nid, too_many)).await;
    assert!(reply.is_err(), "{reply:?}");
    within(10, "b banned", n.wait_for(|s| s.banned_peers == 1)).await;
    for (m, t) in [(a, a_task), (b, b_task), (n, n_task)] {
        m.stop();
        t.await.unwrap();
    }
}
