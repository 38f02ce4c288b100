//! URL batches and record requests over the grid (`weft_p2p::grid`, the node's
//! `network/overlay.rs`): a batch for an owner beyond a member's links goes to one of its links
//! first, which stores the URLs, acknowledges them and passes them on; the owner queues them
//! from that link. A near-duplicate record is handed on the same way to its owners, and a
//! lookup's answer comes back along its path.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_p2p::exchange::{UrlKind, WireUrl};
use weft_p2p::grid::{Grid, Shape};
use weft_p2p::records::{self, RECORD_OWNERS};
use weft_p2p::{NetworkConfig, PeerId};

const NODES: usize = 12;

fn config(bootstrap: Vec<String>) -> NetworkConfig {
    // The grid takes over past `grid::FROM_MEMBERS` (32) members; twelve nodes on one box show
    // its forwarding when it takes over from one.
    NetworkConfig { grid_from_members: 1, ..crate::tcp_config(bootstrap) }
}

/// What reached each node: (the node, the URL, who sent it, whether to pass it on).
type Arrived = Arc<Mutex<Vec<(PeerId, String, Option<PeerId>, bool)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn urls_and_records_for_an_owner_beyond_a_member_s_links_are_passed_on_by_a_link() {
    // Identities are random: twelve members may fall in the grid's buckets so that no pair is
    // two coordinates apart with a member between (the test would have no path to show); such
    // a network is stopped and another drawn.
    let mut attempts = 0;
    let (mut nodes, ring, grid, (sender, owner, host)) = loop {
        attempts += 1;
        let nodes = crate::members(NODES, config).await;
        // The grid every member computes from the ring they agree on.
        let ring = nodes[0].handle.ring();
        let members = ring.members().to_vec();
        assert_eq!(members.len(), NODES);
        let grid = Grid::new(Shape::network(NODES), members.iter().map(|p| (*p, p)));
        // A sender and a host whose owner is beyond its links (they differ in two coordinates or
        // more), with a bucket between them that holds a member.
        let mut chosen = None;
        'search: for (i, n) in nodes.iter().enumerate() {
            let me = n.handle.peer_id();
            for h in 0..5000 {
                let host = format!("g{h}.test");
                let Some(owner) = ring.owner(&host).copied() else { continue };
                if owner != me && grid.differ(me, owner) >= Some(2) && grid.path(me, owner, |_| 0).len() > 1 {
                    chosen = Some((i, owner, host));
                    break 'search;
                }
            }
        }
        if let Some(chosen) = chosen {
            break (nodes, ring, grid, chosen);
        }
        assert!(attempts < 5, "five networks of twelve members in a row had no pair two coordinates apart");
        for n in nodes {
            n.handle.stop();
            n.task.await.unwrap();
        }
    };
    let arrived = Arrived::default();
    for n in nodes.iter_mut() {
        let me = n.handle.peer_id();
        let mut inbound = std::mem::replace(&mut n.inbound, tokio::sync::mpsc::channel(1).1);
        let arrived = arrived.clone();
        tokio::spawn(async move {
            while let Some(i) = inbound.recv().await {
                let mut a = arrived.lock().unwrap();
                a.extend(i.urls.iter().map(|u| (me, u.url.clone(), i.from, false)));
                a.extend(i.forward.iter().map(|u| (me, u.url.clone(), i.from, true)));
                if let Some(reply) = i.reply {
                    let _ = reply.send(i.urls.len() as u32);
                }
            }
        });
    }
    let me = nodes[sender].handle.peer_id();
    let links = grid.neighbours(me);
    assert!(!links.contains(&owner));
    let url = format!("http://{host}/page");
    nodes[sender].handle.send_urls(vec![WireUrl::new(url.clone(), 0, UrlKind::Page)]);

    crate::network::within(60, "the URL reaches its owner", async {
        while !arrived.lock().unwrap().iter().any(|(at, u, _, pass)| *at == owner && *u == url && !pass) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let arrived = arrived.lock().unwrap().clone();
    // A link of the sender took it to pass on, and the owner had it from a link of its own.
    let passed: Vec<_> = arrived.iter().filter(|(_, u, _, pass)| *u == url && *pass).collect();
    assert!(!passed.is_empty(), "nobody passed it on: {arrived:?}");
    let (first_hop, _, from, _) = passed[0];
    assert_eq!(*from, Some(me));
    assert!(links.contains(first_hop), "{first_hop} is not a link of the sender");
    let (_, _, last_hop, _) = arrived.iter().find(|(at, u, _, pass)| *at == owner && *u == url && !pass).unwrap();
    let last_hop = last_hop.expect("from a member");
    assert_ne!(last_hop, me, "the sender sent it straight");
    assert!(grid.neighbours(owner).contains(&last_hop), "{last_hop} is not a link of the owner");
    // Queued once, by its owner alone.
    let queued: Vec<_> = arrived.iter().filter(|(_, u, _, pass)| *u == url && !pass).collect();
    assert_eq!(queued.len(), 1, "{queued:?}");

    // A record whose owners include one beyond its publisher's links, looked up by a member
    // that is none of the first owners and has one of them beyond its links.
    let owners = |hash: u64| records::keys(hash).map(|k| ring.owners_of_point(k.point(), RECORD_OWNERS));
    let beyond = |from: PeerId, to: PeerId| grid.differ(from, to) >= Some(2) && grid.path(from, to, |_| 0).len() > 1;
    let (publisher, asker) = (nodes[sender].handle.clone(), nodes[(sender + 1) % NODES].handle.clone());
    let (p, a) = (publisher.peer_id(), asker.peer_id());
    let hash = (1..100_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .find(|h| {
            // The lookup is for a fingerprint two bits away (in the last block): it asks the
            // first owners of that one's keys.
            let firsts: Vec<PeerId> = owners(h ^ 0b101).iter().map(|o| o[0]).collect();
            owners(*h).iter().flatten().any(|o| beyond(p, *o))
                && !firsts.contains(&a)
                && !firsts.contains(&p)
                && firsts.iter().any(|o| beyond(a, *o))
        })
        .expect("a fingerprint whose owners lie beyond both members' links");
    let forwarded = |nodes: &[weft_p2p::Started]| nodes.iter().map(|n| n.handle.status().dht_forwarded).sum::<u64>();
    publisher.publish_fingerprint(hash, "http://r.test/story".into(), 1);
    let held = |n: &PeerId| owners(hash).iter().filter(|o| o.contains(n)).count() as u64;
    for n in &nodes {
        let want = held(&n.handle.peer_id());
        crate::network::within(30, "the record at its owners", n.handle.wait_for(move |s| s.dht_records >= want)).await;
    }
    let after_put = forwarded(&nodes);
    assert!(after_put > 0, "no put was handed on");
    let near = hash ^ 0b101;
    let found = tokio::task::spawn_blocking(move || {
        asker.find_duplicate_blocking(near, 3, "http://r.test/other", Duration::from_secs(15))
    })
    .await
    .unwrap();
    let (entry, distance) = found.expect("the record found over the grid");
    assert_eq!(entry.check(), Ok(()));
    assert_eq!((entry.url.as_str(), entry.peer.to_string(), distance), ("http://r.test/story", p.to_string(), 2));
    crate::network::within(10, "the lookup handed on", async {
        while forwarded(&nodes) <= after_put {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    for n in nodes {
        n.handle.stop();
        n.task.await.unwrap();
    }
}
