//! Document copies, the node's side (see `weft_p2p::replicas`): every document this node
//! indexes goes, with its postings, to the `index.replicas` owners of its id; the copies of
//! the ids this node owns are kept in the replica store (beside the cell store); whenever the
//! member set changes, copies go to the ids' new owners, so that each document keeps its
//! holders while members come and go; and other members' reads (`/weft/doc/1`) are answered
//! from the local index or the copies held.

use crate::blocking::{bounded, STORE_BOUND};
use std::collections::BTreeMap;
use std::sync::Arc;
use weft_content::copies::{held, replica_of};
use weft_index::cells::CellStore;
use weft_index::{DocId, DocState, IndexError, LocalIndex};
use weft_p2p::replicas::{doc_holders, Replica};
use weft_p2p::{PeerId, Ring};

/// Who a received record (a posting, a copy) is counted against: the peer that signed it —
/// for a hand-over, not the member that passed it on — or the sender of an unsigned one;
/// [`weft_index::PeerName::this_node`] for this node's own (`from` is `None`).
pub fn publisher_name(from: Option<PeerId>, signer: Option<PeerId>) -> weft_index::PeerName {
    match (from, signer) {
        (None, _) => weft_index::PeerName::this_node(),
        (Some(_), Some(signer)) => signer.to_string().into(),
        (Some(from), None) => from.to_string().into(),
    }
}

/// How far this node stands from holding each id on `ring`, as the replica store ranks the
/// copies it could evict: 0 as the id's first owner, 1 as the next, …; `r + 1` when it is not
/// among the id's `r + 1` first owners at all (a copy it keeps only until the new holders
/// have it).
pub fn nearness(ring: Arc<Ring>, me: PeerId, r: usize) -> impl Fn(&DocId) -> u32 {
    move |id: &DocId| {
        let owners = weft_p2p::replicas::doc_owners(&ring, &id.hex(), r + 1);
        owners.iter().position(|o| *o == me).unwrap_or(owners.len().max(r + 1)) as u32
    }
}

/// Stores copies the network delivered (checked there); returns how many were taken. A full
/// store makes room by evicting the copies `rank` puts farthest (see [`nearness`]). A copy
/// refused for the store's bound or its publisher's quota is counted by the store and
/// acknowledged as not taken (its publisher does not send it again and again). Blocking.
pub fn store(
    cells: &CellStore,
    replicas: &[Replica],
    from: Option<PeerId>,
    rank: &dyn Fn(&DocId) -> u32,
) -> Result<u32, IndexError> {
    let mut taken = 0;
    for r in replicas {
        let Ok(id) = DocId::parse_hex(&r.doc) else { continue };
        let publisher = publisher_name(from, r.publisher_id());
        match cells.replicas().put(id, r.fetched_at, &publisher, &r.encode(), rank) {
            Ok(_) => taken += 1,
            Err(weft_index::replicas::ReplicaError::Index(e)) => return Err(e),
            Err(e) => tracing::debug!(doc = r.doc, "copy not kept: {e}"),
        }
    }
    Ok(taken)
}

/// The document `doc` as this node can hand it to another member: its own (unsigned: the
/// network signs it as it leaves), else the copy it holds. Blocking.
pub fn look_up(index: &LocalIndex, cells: &CellStore, doc: &str) -> Result<Option<Replica>, IndexError> {
    let id = DocId::parse_hex(doc).map_err(|e| IndexError::Corrupt(e.to_string()))?;
    match replica_of(index, &id)? {
        Some(own) => Ok(Some(own)),
        None => held(cells, &id),
    }
}

/// For each member that must be sent copies after the ring went from `before` to `after`: the
/// documents (of `docs`: id and publisher) it now holds and did not. A publisher that is still
/// a member sends its own documents; a publisher's copies are sent by the first of their
/// holders on `before` still a member once it is gone.
pub fn gained_holders(
    before: &Ring,
    after: &Ring,
    r: usize,
    me: &PeerId,
    docs: impl IntoIterator<Item = (String, PeerId)>,
) -> BTreeMap<PeerId, Vec<String>> {
    let mut out: BTreeMap<PeerId, Vec<String>> = BTreeMap::new();
    for (doc, publisher) in docs {
        let old = doc_holders(before, &doc, r, &publisher);
        // The publisher sends while it is a member; after it, the first holder still there.
        let sender = if after.contains(&publisher) { Some(&publisher) } else { old.iter().find(|o| after.contains(o)) };
        if sender != Some(me) {
            continue;
        }
        for new in doc_holders(after, &doc, r, &publisher) {
            if !old.contains(&new) && new != *me {
                out.entry(new).or_default().push(doc.clone());
            }
        }
    }
    out
}

/// The documents (of `docs`) whose crawler left between `before` and `after` and of which this
/// node is the first holder still a member: it queues their pages again (see
/// `Crawler::rediscover`).
pub fn orphaned(
    before: &Ring,
    after: &Ring,
    r: usize,
    me: &PeerId,
    docs: &[(String, PeerId)],
) -> Vec<(String, PeerId)> {
    docs.iter()
        .filter(|(doc, publisher)| {
            before.contains(publisher)
                && !after.contains(publisher)
                && doc_holders(before, doc, r, publisher).iter().find(|o| after.contains(o)) == Some(me)
        })
        .cloned()
        .collect()
}

/// Of the copies held (`heads`: id and crawler), those this node speaks for on `ring` — their
/// crawler is no longer a member and this node is the first of their holders — grouped by the
/// other holders, each to be sent them again: a copy a repair lost in flight (its sender died
/// mid-way) or that a holder lost since comes back with the weekly re-send, as a live
/// crawler's own documents come back with its re-announce.
pub fn orphan_resends(ring: &Ring, me: &PeerId, r: usize, heads: &[(DocId, PeerId)]) -> Vec<(PeerId, Vec<DocId>)> {
    let mut to: BTreeMap<PeerId, Vec<DocId>> = BTreeMap::new();
    for (id, crawler) in heads {
        if ring.contains(crawler) {
            continue;
        }
        let holders = doc_holders(ring, &id.hex(), r, crawler);
        if holders.first() == Some(me) {
            for h in &holders[1..] {
                to.entry(*h).or_default().push(*id);
            }
        }
    }
    to.into_iter().collect()
}

/// Queues pages again through the crawl (each to its host's owner); says how many were queued
/// here. (A function, not the crawler: the crawl comes after this module.)
pub type Rediscover = Arc<dyn Fn(Vec<String>) -> futures::future::BoxFuture<'static, usize> + Send + Sync>;

/// What repair has done since the start (`/status` `index.cells.repair`).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RepairStatus {
    /// Changes of the member set repaired after.
    pub rounds: u64,
    /// Copies sent to members that became holders, and their bytes.
    pub copies_sent: u64,
    pub bytes_sent: u64,
    /// Pages of crawlers gone for good queued again through the crawl.
    pub pages_requeued: u64,
    /// How long the last round took to work out what to send (reading the index and the
    /// copies held), ms.
    pub last_plan_ms: u64,
    /// Comparisons with co-holders (see `copy_sync`): rounds, co-holders compared with, buckets
    /// found to differ, copies asked for (and sent here as hand-overs), and how long the last
    /// round took, ms.
    #[serde(default)]
    pub compare_rounds: u64,
    #[serde(default)]
    pub compared_with: u64,
    #[serde(default)]
    pub buckets_differing: u64,
    #[serde(default)]
    pub copies_asked: u64,
    #[serde(default)]
    pub last_compare_ms: u64,
    /// Copies this node sent because a co-holder asked for them.
    #[serde(default)]
    pub copies_sent_on_request: u64,
}

/// The running tally behind [`RepairStatus`], shared by the repair task and the status.
#[derive(Debug, Default)]
pub struct Repairs(parking_lot::Mutex<RepairStatus>);

impl Repairs {
    pub fn status(&self) -> RepairStatus {
        *self.0.lock()
    }

    /// Changes the tally.
    pub fn update(&self, change: impl FnOnce(&mut RepairStatus)) {
        change(&mut self.0.lock())
    }
}

/// A copy to send in a repair: its document, and whether this node indexed it (else it is a
/// copy held for another member's page).
type Sending = (DocId, bool);
/// What a repair sends, by new holder.
type Plan = Vec<(PeerId, Vec<Sending>)>;

/// Repairs the copies whenever the member set changes: every document this node indexed and
/// every copy it is first to hold goes to the members that gained its id — a member that left
/// or died leaves no document with fewer holders once this is done (its successors on the
/// ring are the new holders, and a surviving holder sends them the copy). Runs until the
/// network stops.
pub async fn repair_on_changes(
    index: Arc<LocalIndex>,
    cells: Arc<CellStore>,
    network: weft_p2p::NetworkHandle,
    rediscover: Rediscover,
    r: usize,
    tally: Arc<Repairs>,
) {
    let me = network.peer_id();
    let mut rings = network.ring_changes();
    let mut previous = rings.borrow_and_update().clone();
    while rings.changed().await.is_ok() {
        let ring = rings.borrow_and_update().clone();
        let (before, after) = (previous.clone(), ring.clone());
        previous = ring;
        let (plan_index, plan_cells) = (index.clone(), cells.clone());
        let plan = move || -> Result<(Plan, Vec<String>), IndexError> {
            let mut docs: Vec<(String, PeerId)> = Vec::new();
            for entry in plan_index.store().docs_after(None) {
                let (id, record) = entry?;
                if record.state == DocState::Indexed {
                    docs.push((id.hex(), me));
                }
            }
            for (id, head) in plan_cells.replicas().heads()? {
                if let Ok(publisher) = head.publisher.parse() {
                    docs.push((id.hex(), publisher));
                }
            }
            // The pages of crawlers gone for good, which this node speaks for now (a head names
            // the copy's signer).
            let mut orphans = Vec::new();
            for (doc, _) in orphaned(&before, &after, r, &me, &docs) {
                let Ok(id) = DocId::parse_hex(&doc) else { continue };
                orphans.extend(held(&plan_cells, &id)?.map(|copy| copy.page.url));
            }
            let own: std::collections::HashSet<String> =
                docs.iter().filter(|(_, p)| *p == me).map(|(d, _)| d.clone()).collect();
            let gained = gained_holders(&before, &after, r, &me, docs);
            let plan: Plan = gained
                .into_iter()
                .map(|(to, ids)| {
                    let ids = ids
                        .into_iter()
                        .filter_map(|doc| Some((DocId::parse_hex(&doc).ok()?, own.contains(&doc))))
                        .collect();
                    (to, ids)
                })
                .collect();
            Ok((plan, orphans))
        };
        let started = std::time::Instant::now();
        let Some((plan, orphans)) = bounded("copy repair", STORE_BOUND * 4, plan).await else {
            continue;
        };
        {
            let mut t = tally.0.lock();
            t.rounds += 1;
            t.last_plan_ms = started.elapsed().as_millis() as u64;
            t.pages_requeued += orphans.len() as u64;
        }
        if !orphans.is_empty() {
            let pages = orphans.len();
            let queued = rediscover(orphans).await;
            tracing::info!(pages, queued, "queued again the pages of a crawler gone for good");
        }
        // The copies are read and queued a piece at a time (see `hand_over`): a node's copies
        // together may be far more than its memory should hold.
        for (to, ids) in plan {
            tracing::info!(%to, copies = ids.len(), "sending document copies to a new holder");
            for piece in ids.chunks(crate::hand_over::PIECE_DOCS) {
                let (index, cells, piece) = (index.clone(), cells.clone(), piece.to_vec());
                let read = move || -> Result<Vec<Replica>, IndexError> {
                    let mut copies = Vec::with_capacity(piece.len());
                    for (id, own) in piece {
                        copies.extend(if own { replica_of(&index, &id)? } else { held(&cells, &id)? });
                    }
                    Ok(copies)
                };
                let Some(copies) = bounded("copy repair", STORE_BOUND * 4, read).await else { break };
                {
                    let mut t = tally.0.lock();
                    t.copies_sent += copies.len() as u64;
                    t.bytes_sent += copies.iter().map(|c| c.encode().len() as u64).sum::<u64>();
                }
                network.hand_over_replicas(to, copies);
                crate::hand_over::room(&network).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gained_holder_is_sent_each_copy_once() {
        let members: Vec<PeerId> = (0..7).map(|_| PeerId::random()).collect();
        let docs: Vec<String> = (0..300).map(|i| DocId::of_url(&format!("http://h{i}.test/")).hex()).collect();
        // Published by members[0] (which stays); members[2] leaves, members[6] joins.
        let publisher = members[0];
        let before = Ring::new(members[..6].to_vec(), 50);
        let after = Ring::new(members.iter().enumerate().filter(|(i, _)| *i != 2).map(|(_, m)| *m), 50);
        let mut sent: BTreeMap<(PeerId, String), usize> = BTreeMap::new();
        for me in members.iter().filter(|m| after.contains(m)) {
            let held: Vec<(String, PeerId)> = docs
                .iter()
                .filter(|d| doc_holders(&before, d, 3, &publisher).contains(me) || *me == publisher)
                .map(|d| (d.clone(), publisher))
                .collect();
            for (to, ids) in gained_holders(&before, &after, 3, me, held) {
                for d in ids {
                    *sent.entry((to, d)).or_default() += 1;
                }
            }
        }
        // Every document's holders on the new ring: those that held it, and those sent it —
        // once, by the publisher (a surviving holder leaves it to the publisher).
        for d in &docs {
            let holders = doc_holders(&after, d, 3, &publisher);
            assert_eq!(holders.len(), 3);
            assert!(!holders.contains(&publisher));
            for owner in holders {
                let had = doc_holders(&before, d, 3, &publisher).contains(&owner);
                let got = sent.get(&(owner, d.clone())).copied().unwrap_or(0);
                assert!(had || got == 1, "{d}: a new holder got {got} copies");
                assert!(!had || got == 0, "{d}: a holder was sent what it had");
            }
        }
        assert!(sent.keys().any(|(to, _)| *to == members[6]), "the newcomer gained some");
        // The publisher gone for good: the first surviving holder sends each copy, once.
        let gone = Ring::new(members[1..].to_vec(), 50);
        let held_on = |ring: &Ring, me: &PeerId| -> Vec<(String, PeerId)> {
            docs.iter()
                .filter(|d| doc_holders(ring, d, 3, &publisher).contains(me))
                .map(|d| (d.clone(), publisher))
                .collect()
        };
        let mut sent: BTreeMap<(PeerId, String), usize> = BTreeMap::new();
        for me in &members[1..] {
            for (to, ids) in gained_holders(&after, &gone, 3, me, held_on(&after, me)) {
                for d in ids {
                    *sent.entry((to, d)).or_default() += 1;
                }
            }
        }
        assert!(sent.values().all(|n| *n == 1));
        // And its pages are queued again by exactly one surviving holder each.
        let mut queued: BTreeMap<String, usize> = BTreeMap::new();
        for me in &members[1..] {
            let held = held_on(&after, me);
            for (d, _) in orphaned(&after, &gone, 3, me, &held) {
                *queued.entry(d).or_default() += 1;
            }
            assert!(orphaned(&after, &after, 3, me, &held).is_empty(), "not while the publisher is there");
        }
        assert_eq!(queued.len(), docs.len());
        assert!(queued.values().all(|n| *n == 1));
        for d in &docs {
            for owner in doc_holders(&gone, d, 3, &publisher) {
                let had = doc_holders(&after, d, 3, &publisher).contains(&owner);
                assert!(had || sent.contains_key(&(owner, d.clone())), "{d}: a holder left out");
            }
        }
    }

    #[test]
    fn nearness_is_the_rank_among_an_ids_owners_and_past_them_for_an_id_not_owned() {
        let members: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        let ring = Arc::new(Ring::new(members.clone(), 50));
        let mut seen = [0usize; 5];
        for i in 0..200 {
            let id = DocId::of_url(&format!("http://h{i}.test/"));
            let owners = weft_p2p::replicas::doc_owners(&ring, &id.hex(), 4);
            for m in &members {
                let rank = nearness(ring.clone(), *m, 3)(&id) as usize;
                match owners.iter().position(|o| o == m) {
                    Some(p) => assert_eq!(rank, p),
                    None => assert_eq!(rank, 4, "not an owner: past every owner"),
                }
                seen[rank] += 1;
            }
        }
        assert!(seen.iter().all(|n| *n > 0), "every rank met: {seen:?}");
    }

    #[test]
    fn the_first_holder_of_a_departed_crawlers_copy_resends_it_to_the_other_holders_alone() {
        let members: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        let (gone, alive) = (PeerId::random(), members[0]);
        let ring = Ring::new(members.clone(), 50);
        let heads: Vec<(DocId, PeerId)> = (0..300)
            .map(|i| (DocId::of_url(&format!("http://h{i}.test/")), if i % 2 == 0 { gone } else { alive }))
            .collect();
        let mut sent: BTreeMap<(PeerId, DocId), usize> = BTreeMap::new();
        for me in &members {
            for (to, ids) in orphan_resends(&ring, me, 3, &heads) {
                assert_ne!(to, *me);
                for id in ids {
                    let holders = doc_holders(&ring, &id.hex(), 3, &gone);
                    assert_eq!(holders[0], *me, "only the first holder sends");
                    assert!(holders.contains(&to));
                    *sent.entry((to, id)).or_default() += 1;
                }
            }
        }
        // Each orphan's second and third holders get it once; a live crawler's copies are its own
        // to re-announce.
        let orphans = heads.iter().filter(|(_, c)| *c == gone).count();
        assert_eq!(sent.len(), orphans * 2);
        assert!(sent.values().all(|n| *n == 1));
        assert!(sent.keys().all(|(_, id)| heads.iter().any(|(d, c)| d == id && *c == gone)));
    }
}
