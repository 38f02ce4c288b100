//! The outbox of postings: each [`Posting`] goes to the owners of its cell on the current ring
//! (`replicas` of them, see [`crate::placement::Ladder::owners`]), and each document copy
//! ([`Replica`]) to the owners of its document's id (`doc_replicas` of them, see
//! [`crate::replicas::doc_owners`]), in batches of at most
//! [`MAX_BATCH_ITEMS`], one batch in flight per owner at a time. A batch that fails is tried
//! again with a growing delay, re-routed to the cell's owners on the ring of that moment (an
//! owner that left has successors). A batch an owner acknowledged is stored there, so it is
//! forgotten here.
//!
//! Bounded: at most `max_waiting` items and `max_bytes` of them wait (queued, in flight or
//! waiting for a retry); more are dropped and counted (a document's postings go out again when
//! it is indexed again, and with its periodic announcement). The bytes matter more than the
//! items: a posting is ~2.6 KB and a document's copy up to its whole text, so 200,000 items
//! could be ~1 GB, and a busy node's outbox grows by tens of MiB in minutes. Hand-overs, which must not be
//! dropped, wait for room instead ([`Publisher::waiting_bytes`] is what they watch, through
//! the node's status). Pure: the event loop sends and times.

use crate::placement::Ladder;
use crate::postings::{Posting, PostingBatch, Tombstone, MAX_BATCH_ITEMS};
use crate::replicas::{doc_holders, Replica};
use crate::ring::Ring;
use libp2p::PeerId;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// The first retry of a failed batch waits this long, doubling up to [`MAX_RETRY`].
const FIRST_RETRY: Duration = Duration::from_secs(2);
const MAX_RETRY: Duration = Duration::from_secs(120);
/// Bytes of postings in one batch, at most (estimated: text, vector, metadata).
const BATCH_BYTES: usize = 2 * 1024 * 1024;
/// A batch that is not full waits this long for more postings to the same owner: a page's
/// postings are a few per owner, and every batch costs its owner a request and a write.
pub const LINGER: Duration = Duration::from_secs(1);
/// The estimated bytes of the items waiting, at most: room for ~25,000 postings, a few minutes of a fast crawl's
/// publishing while every owner is slow; hand-overs wait below [`HAND_OVER_ROOM`].
pub const MAX_WAITING_BYTES: usize = 64 * 1024 * 1024;
/// A hand-over (of cells' postings or documents' copies) queues its next piece only while the
/// outbox holds less than this, so it never fills the outbox past what new publications need.
pub const HAND_OVER_ROOM: usize = MAX_WAITING_BYTES / 2;

/// A withdrawal and the cells its document was posted to (their owners get it).
#[derive(Debug, Clone, PartialEq)]
pub struct Withdrawal {
    pub tombstone: Tombstone,
    pub cells: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq)]
enum Item {
    Posting(Posting),
    Tombstone(Tombstone, u32),
    /// A posting held for a cell, handed to one of the cell's new owners.
    HandOver(Posting),
    /// A copy of a document, for the owners of its id.
    Replica(Replica),
    /// A copy held for a document's id, handed to one of the id's new owners.
    ReplicaHandOver(Replica),
}

/// Where an item goes: the owners of a cell, or the holders of a document's copies (which
/// depend on its publisher: see [`doc_holders`]; `None` is this node).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Place<'a> {
    Cell(u32),
    Doc(&'a str, Option<PeerId>),
}

impl Item {
    fn place(&self) -> Place<'_> {
        match self {
            Item::Posting(p) | Item::HandOver(p) => Place::Cell(p.cell),
            Item::Tombstone(_, cell) => Place::Cell(*cell),
            Item::Replica(r) => Place::Doc(&r.doc, None),
            Item::ReplicaHandOver(r) => Place::Doc(&r.doc, r.publisher_id()),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Item::Posting(p) | Item::HandOver(p) => {
                p.text.len() + p.vector.len() + p.page.url.len() + p.page.title.len() + 200
            }
            Item::Tombstone(t, _) => t.url.len() + 64,
            Item::Replica(r) | Item::ReplicaHandOver(r) => r.bytes(),
        }
    }

    fn handover(&self) -> bool {
        matches!(self, Item::HandOver(_) | Item::ReplicaHandOver(_))
    }
}

/// A batch on its way to `owner`.
#[derive(Debug, Clone)]
pub struct Flight {
    pub owner: PeerId,
    pub batch: PostingBatch,
    items: Vec<Item>,
    attempts: u32,
}

/// See the module doc.
#[derive(Debug)]
pub struct Publisher {
    ladder: &'static Ladder,
    replicas: usize,
    doc_replicas: usize,
    max_waiting: usize,
    max_bytes: usize,
    queues: BTreeMap<PeerId, VecDeque<Item>>,
    /// When each owner's queue last became non-empty (its batch goes [`LINGER`] later, or
    /// when full).
    since: BTreeMap<PeerId, Instant>,
    /// Owners with a batch in flight (one each).
    busy: HashSet<PeerId>,
    retries: Vec<(Instant, Flight)>,
    waiting: usize,
    /// The estimated bytes of the items waiting ([`Item::bytes`], each owner's copy counted).
    waiting_bytes: usize,
    /// Items dropped because the outbox was full.
    pub dropped: u64,
    /// Items acknowledged by their owners.
    pub delivered: u64,
}

impl Publisher {
    /// An outbox for the cells of `ladder` (by their global numbers) with `replicas` owners
    /// each, and documents with `doc_replicas` holders each (0: no copies), holding at most
    /// `max_waiting` items and `max_bytes` of them.
    pub fn new(
        ladder: &'static Ladder,
        replicas: usize,
        doc_replicas: usize,
        max_waiting: usize,
        max_bytes: usize,
    ) -> Publisher {
        Publisher {
            ladder,
            replicas: replicas.max(1),
            doc_replicas,
            max_waiting,
            max_bytes,
            queues: BTreeMap::new(),
            since: BTreeMap::new(),
            busy: HashSet::new(),
            retries: Vec::new(),
            waiting: 0,
            waiting_bytes: 0,
            dropped: 0,
            delivered: 0,
        }
    }

    /// Items queued or in flight.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// The estimated bytes of the items queued or in flight.
    pub fn waiting_bytes(&self) -> usize {
        self.waiting_bytes
    }

    /// Takes one more item of `bytes` if both bounds allow; counts it dropped if not.
    fn admit(&mut self, bytes: usize) -> bool {
        if self.waiting >= self.max_waiting || self.waiting_bytes + bytes > self.max_bytes {
            self.dropped += 1;
            return false;
        }
        self.waiting += 1;
        self.waiting_bytes += bytes;
        true
    }

    /// `items` left the outbox (acknowledged, or moved to be routed again).
    fn release(&mut self, items: &[Item]) {
        self.waiting -= items.len();
        self.waiting_bytes -= items.iter().map(Item::bytes).sum::<usize>();
    }

    /// Queues postings and withdrawals for their cells' owners on `ring`, and document copies
    /// for their ids' owners. What this node (`me`) owns itself is returned, to be stored here.
    pub fn publish(
        &mut self,
        postings: Vec<Posting>,
        withdrawals: Vec<Withdrawal>,
        replicas: Vec<Replica>,
        ring: &Ring,
        me: &PeerId,
    ) -> PostingBatch {
        let mut items: Vec<Item> = postings.into_iter().map(Item::Posting).collect();
        items.extend(replicas.into_iter().map(Item::Replica));
        for w in withdrawals {
            items.extend(w.cells.iter().map(|c| Item::Tombstone(w.tombstone.clone(), *c)));
        }
        self.route(items, ring, me, true)
    }

    /// Queues postings this node holds for their cells for `owner`, a new owner of those cells
    /// (sent in batches marked [`PostingBatch::handover`]).
    pub fn hand_over(&mut self, owner: PeerId, postings: Vec<Posting>) {
        self.hand_over_items(owner, postings.into_iter().map(Item::HandOver));
    }

    /// Queues document copies this node holds for `owner`, a new owner of their ids (or a
    /// holder that lacks them).
    pub fn hand_over_replicas(&mut self, owner: PeerId, replicas: Vec<Replica>) {
        self.hand_over_items(owner, replicas.into_iter().map(Item::ReplicaHandOver));
    }

    fn hand_over_items(&mut self, owner: PeerId, items: impl Iterator<Item = Item>) {
        for item in items {
            if !self.admit(item.bytes()) {
                continue;
            }
            self.since.entry(owner).or_insert_with(Instant::now);
            self.queues.entry(owner).or_default().push_back(item);
        }
    }

    /// The members `place` goes to on `ring` (`me`: this node).
    fn owners(&self, ring: &Ring, place: Place<'_>, me: &PeerId) -> Vec<PeerId> {
        match place {
            Place::Cell(cell) => self.ladder.owners(ring, cell, self.replicas),
            Place::Doc(doc, publisher) => doc_holders(ring, doc, self.doc_replicas, &publisher.unwrap_or(*me)),
        }
    }

    /// Queues `items` for their owners other than `me`; returns those `me` owns if `keep_mine`.
    fn route(&mut self, items: Vec<Item>, ring: &Ring, me: &PeerId, keep_mine: bool) -> PostingBatch {
        let mut mine = PostingBatch::default();
        for item in items {
            let owners = self.owners(ring, item.place(), me);
            let bytes = item.bytes();
            let mut to_me = false;
            for owner in owners {
                if owner == *me {
                    to_me = true;
                    continue;
                }
                if !self.admit(bytes) {
                    continue;
                }
                self.since.entry(owner).or_insert_with(Instant::now);
                self.queues.entry(owner).or_default().push_back(item.clone());
            }
            // A ring of this node alone (or a stale one) still keeps what is its own.
            if to_me && keep_mine {
                match item {
                    Item::Posting(p) | Item::HandOver(p) => mine.postings.push(p),
                    Item::Tombstone(t, _) => {
                        if !mine.tombstones.contains(&t) {
                            mine.tombstones.push(t)
                        }
                    }
                    Item::Replica(r) | Item::ReplicaHandOver(r) => mine.replicas.push(r),
                }
            }
        }
        mine
    }

    /// The batches to send now: one per owner without a batch in flight, and the retries whose
    /// time came (re-routed on `ring` if their owner no longer holds their cells).
    pub fn due(&mut self, ring: &Ring, me: &PeerId, now: Instant) -> Vec<Flight> {
        let mut out = Vec::new();
        let (ready, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.retries).into_iter().partition(|(at, _)| *at <= now);
        self.retries = later;
        for (_, f) in ready {
            // Items whose cell the owner still holds go back to it; the rest to the cell's
            // owners now (this node keeps nothing from a retry: it published to itself first).
            let (stay, moved): (Vec<Item>, Vec<Item>) =
                f.items.into_iter().partition(|i| self.owners(ring, i.place(), me).contains(&f.owner));
            self.release(&moved);
            let stay_n = stay.len();
            if stay_n > 0 {
                out.push(Flight { owner: f.owner, batch: batch_of(&stay), items: stay, attempts: f.attempts });
            } else {
                self.busy.remove(&f.owner);
            }
            let _ = self.route(moved, ring, me, false);
        }
        let owners: Vec<PeerId> = self.queues.keys().filter(|o| self.ready(o, now)).copied().collect();
        for owner in owners {
            let Some(queue) = self.queues.get_mut(&owner) else { continue };
            let mut items = Vec::new();
            let mut bytes = 0;
            while let Some(item) = queue.front() {
                if items.len() == MAX_BATCH_ITEMS || (bytes + item.bytes() > BATCH_BYTES && !items.is_empty()) {
                    break;
                }
                // A batch is a hand-over or a publication, not both.
                if items.first().is_some_and(|first: &Item| first.handover() != item.handover()) {
                    break;
                }
                bytes += item.bytes();
                items.push(queue.pop_front().expect("a front item"));
            }
            if queue.is_empty() {
                self.queues.remove(&owner);
                self.since.remove(&owner);
            } else {
                self.since.insert(owner, now);
            }
            if items.is_empty() {
                continue;
            }
            self.busy.insert(owner);
            out.push(Flight { owner, batch: batch_of(&items), items, attempts: 0 });
        }
        out
    }

    /// When the next retry is due.
    pub fn next_retry(&self) -> Option<Instant> {
        self.retries.iter().map(|(at, _)| *at).min()
    }

    /// When [`Publisher::due`] next has something to send: a retry, or a queue that is full or
    /// has waited [`LINGER`].
    pub fn next_due(&self) -> Option<Instant> {
        let queued = self.queues.iter().filter(|(o, _)| !self.busy.contains(*o)).map(|(o, q)| {
            let since = self.since.get(o).copied().unwrap_or_else(Instant::now);
            if q.len() >= MAX_BATCH_ITEMS {
                since
            } else {
                since + LINGER
            }
        });
        queued.chain(self.next_retry()).min()
    }

    /// Whether `owner`'s queue may go now: no batch in flight, and full or waited [`LINGER`].
    fn ready(&self, owner: &PeerId, now: Instant) -> bool {
        !self.busy.contains(owner)
            && self
                .queues
                .get(owner)
                .is_some_and(|q| q.len() >= MAX_BATCH_ITEMS || self.since.get(owner).is_none_or(|s| now >= *s + LINGER))
    }

    /// `flight` was acknowledged: stored at its owner.
    pub fn acked(&mut self, flight: Flight) {
        self.release(&flight.items);
        self.delivered += flight.items.len() as u64;
        self.busy.remove(&flight.owner);
    }

    /// `flight` failed (no connection, refused for now): tried again after a growing delay.
    pub fn failed(&mut self, mut flight: Flight, now: Instant) {
        let delay = FIRST_RETRY.saturating_mul(1 << flight.attempts.min(10)).min(MAX_RETRY);
        flight.attempts += 1;
        self.retries.push((now + delay, flight));
    }

    /// `flight` was answered busy: tried again after `delay`, without counting an attempt.
    pub fn later(&mut self, flight: Flight, delay: Duration, now: Instant) {
        self.retries.push((now + delay, flight));
    }
}

fn batch_of(items: &[Item]) -> PostingBatch {
    let mut b = PostingBatch { handover: items.first().is_some_and(Item::handover), ..Default::default() };
    for i in items {
        match i {
            Item::Posting(p) | Item::HandOver(p) => b.postings.push(p.clone()),
            Item::Tombstone(t, _) => {
                if !b.tombstones.contains(t) {
                    b.tombstones.push(t.clone())
                }
            }
            Item::Replica(r) | Item::ReplicaHandOver(r) => b.replicas.push(r.clone()),
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::shipped_ladder;
    use crate::postings::PageMeta;
    use std::collections::HashMap;

    fn posting(cell: u32, i: u32) -> Posting {
        Posting {
            codebook: "cb".into(),
            cell,
            model: "m".into(),
            doc: format!("{i:032x}"),
            position: 0,
            page: PageMeta { url: format!("http://a.test/{i}"), title: "t".into(), ..Default::default() },
            text: "text".into(),
            vector: vec![0; 6],
            simhash: None,
            language: None,
            fetched_at: 1,
            publisher: Vec::new(),
            signature: Vec::new(),
        }
    }

    #[test]
    fn postings_go_to_each_owner_of_their_cell_in_batches_one_at_a_time() {
        let members: Vec<PeerId> = (0..5).map(|_| PeerId::random()).collect();
        let me = members[0];
        let ring = Ring::new(members.clone(), 50);
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 10_000, usize::MAX);
        let postings: Vec<Posting> = (0..600).map(|i| posting(i % 7, i)).collect();
        let mine = p.publish(postings.clone(), Vec::new(), Vec::new(), &ring, &me);
        // Every posting reaches its three owners: this node keeps its own share.
        let mut expected_mine = 0;
        let mut expected_out = 0;
        for q in &postings {
            let owners = shipped_ladder().owners(&ring, q.cell, 3);
            assert_eq!(owners.len(), 3);
            if owners.contains(&me) {
                expected_mine += 1;
            }
            expected_out += owners.iter().filter(|o| **o != me).count();
        }
        assert_eq!(mine.postings.len(), expected_mine);
        assert_eq!(p.waiting(), expected_out);
        assert!(
            p.due(&ring, &me, Instant::now()).iter().all(|f| f.batch.len() == MAX_BATCH_ITEMS),
            "only full ones at once"
        );
        let now = Instant::now() + LINGER;
        p = {
            // Start over so the first batches are the lingered ones.
            let mut q = Publisher::new(shipped_ladder(), 3, 3, 10_000, usize::MAX);
            q.publish(postings.clone(), Vec::new(), Vec::new(), &ring, &me);
            q
        };
        let first = p.due(&ring, &me, now);
        assert!(first.iter().all(|f| f.batch.len() <= MAX_BATCH_ITEMS && f.owner != me));
        let owners: HashSet<PeerId> = first.iter().map(|f| f.owner).collect();
        assert_eq!(owners.len(), first.len(), "one batch in flight per owner");
        assert!(p.due(&ring, &me, now).is_empty(), "nothing more until those are answered");
        let mut sent = 0;
        let mut flights = first;
        let mut t = now;
        while !flights.is_empty() {
            for f in flights {
                sent += f.batch.len();
                p.acked(f);
            }
            t += LINGER;
            flights = p.due(&ring, &me, t);
        }
        assert_eq!(sent, expected_out);
        assert_eq!((p.waiting(), p.delivered as usize), (0, expected_out));
    }

    #[test]
    fn a_failed_batch_waits_and_moves_to_the_cells_new_owner_when_its_owner_left() {
        let members: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
        let me = members[0];
        let ring = Ring::new(members.clone(), 50);
        let mut p = Publisher::new(shipped_ladder(), 1, 3, 10_000, usize::MAX);
        // A cell some other member owns alone.
        let cell = (0..100).find(|c| shipped_ladder().owners(&ring, *c, 1)[0] != me).unwrap();
        let owner = shipped_ladder().owners(&ring, cell, 1)[0];
        assert!(p.publish(vec![posting(cell, 1)], Vec::new(), Vec::new(), &ring, &me).is_empty());
        assert!(p.due(&ring, &me, Instant::now()).is_empty(), "a batch of one lingers");
        let now = Instant::now() + LINGER;
        let f = p.due(&ring, &me, now).pop().unwrap();
        assert_eq!(f.owner, owner);
        p.failed(f, now);
        assert!(p.due(&ring, &me, now).is_empty(), "not before its delay");
        assert_eq!(p.next_retry(), Some(now + FIRST_RETRY));
        // Its owner left: the retry goes to the cell's next owner.
        let rest: Vec<PeerId> = members.iter().copied().filter(|m| *m != owner).collect();
        let ring2 = Ring::new(rest, 50);
        let next = shipped_ladder().owners(&ring2, cell, 1)[0];
        let later = now + FIRST_RETRY;
        let mut due = p.due(&ring2, &me, later);
        if next == me {
            assert!(due.is_empty(), "this node owns the cell now: it holds the posting already");
        } else {
            assert_eq!(due.pop().unwrap().owner, next);
        }
        assert_eq!(p.waiting(), usize::from(next != me));
    }

    #[test]
    fn a_hand_over_goes_to_its_owner_in_batches_of_its_own() {
        let members: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        let (me, new) = (members[0], members[1]);
        let ring = Ring::new(members.clone(), 50);
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 100, usize::MAX);
        p.hand_over(new, vec![posting(1, 1), posting(2, 2)]);
        p.publish(vec![posting(1, 3)], Vec::new(), Vec::new(), &ring, &me);
        let due = p.due(&ring, &me, Instant::now() + LINGER);
        let to_new: Vec<&Flight> = due.iter().filter(|f| f.owner == new).collect();
        assert_eq!(to_new.len(), 1, "one batch in flight per owner");
        assert!(to_new[0].batch.handover && to_new[0].batch.postings.len() == 2, "{:?}", to_new[0].batch);
        let f = due.into_iter().find(|f| f.owner == new).unwrap();
        p.acked(f);
        let next = p.due(&ring, &me, Instant::now() + LINGER * 2);
        let f = next.iter().find(|f| f.owner == new).unwrap();
        assert!(!f.batch.handover && f.batch.postings.len() == 1, "then its own publication");
    }

    #[test]
    fn a_full_outbox_drops_and_counts_and_withdrawals_reach_every_cell() {
        let members: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        let me = members[0];
        let ring = Ring::new(members.clone(), 50);
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 4, usize::MAX);
        p.publish((0..10).map(|i| posting(1, i)).collect(), Vec::new(), Vec::new(), &ring, &me);
        assert_eq!(p.waiting(), 4);
        assert_eq!(p.dropped, 20 - 4, "ten postings to two other owners each, four kept");
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 100, usize::MAX);
        let t = Tombstone { doc: format!("{:032x}", 1), url: "http://a.test/1".into(), at: 2 };
        let mine =
            p.publish(Vec::new(), vec![Withdrawal { tombstone: t.clone(), cells: vec![1, 2] }], Vec::new(), &ring, &me);
        assert_eq!(mine.tombstones, vec![t.clone()], "once, for all its cells");
        let due = p.due(&ring, &me, Instant::now() + LINGER);
        assert_eq!(due.len(), 2);
        assert!(due.iter().all(|f| f.batch.tombstones == vec![t.clone()]));
    }

    #[test]
    fn the_outbox_is_bounded_by_bytes_and_gives_them_back_when_acknowledged() {
        let members: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        let me = members[0];
        let ring = Ring::new(members.clone(), 50);
        let one = Item::Posting(posting(1, 0)).bytes();
        // Room for five owners' copies: ten postings to two other owners each need twenty.
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 10_000, 5 * one);
        p.publish((0..10).map(|i| posting(1, i)).collect(), Vec::new(), Vec::new(), &ring, &me);
        assert_eq!((p.waiting(), p.waiting_bytes(), p.dropped), (5, 5 * one, 15));
        let due = p.due(&ring, &me, Instant::now() + LINGER);
        assert!(!due.is_empty());
        for f in due {
            p.acked(f);
        }
        let sent: usize = 5 - p.waiting();
        assert_eq!(p.waiting_bytes(), p.waiting() * one, "what was acknowledged is room again");
        assert!(sent > 0);
        // A retry that moves to other owners keeps its bytes counted once.
        p.publish(vec![posting(2, 0)], Vec::new(), Vec::new(), &ring, &me);
        assert_eq!(p.waiting_bytes(), p.waiting() * one);
    }

    fn replica(url: &str) -> Replica {
        Replica {
            doc: crate::replicas::doc_id(url),
            page: PageMeta { url: url.into(), title: "t".into(), ..Default::default() },
            facts: Default::default(),
            word_count: 1,
            simhash: None,
            text: "text".into(),
            chunks: Vec::new(),
            fetched_at: 1,
            links: Vec::new(),
            publisher: Vec::new(),
            signature: Vec::new(),
        }
    }

    #[test]
    fn a_documents_copy_goes_to_its_holders_but_never_to_its_publisher() {
        let members: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        let ring = Ring::new(members.clone(), 50);
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 1000, usize::MAX);
        let urls: Vec<String> = (0..40).map(|i| format!("http://a.test/{i}")).collect();
        for me in &members[..1] {
            let mine = p.publish(Vec::new(), Vec::new(), urls.iter().map(|u| replica(u)).collect(), &ring, me);
            assert!(mine.is_empty(), "a publisher keeps no copy of its own documents");
            let due = p.due(&ring, me, Instant::now() + LINGER);
            let mut to: HashMap<String, Vec<PeerId>> = HashMap::new();
            for f in &due {
                assert!(!f.batch.handover && f.batch.postings.is_empty());
                for r in &f.batch.replicas {
                    to.entry(r.doc.clone()).or_default().push(f.owner);
                }
            }
            for u in &urls {
                let doc = crate::replicas::doc_id(u);
                let mut got = to[&doc].clone();
                got.sort();
                let mut want = doc_holders(&ring, &doc, 3, me);
                want.sort();
                assert_eq!(got, want, "{u}");
                assert_eq!(got.len(), 3);
            }
        }
        // Handed over: to the one member named, in a batch marked so.
        let mut p = Publisher::new(shipped_ladder(), 3, 3, 1000, usize::MAX);
        p.hand_over_replicas(members[3], vec![replica("http://b.test/")]);
        let due = p.due(&ring, &members[0], Instant::now() + LINGER);
        assert_eq!(due.len(), 1);
        assert!(due[0].owner == members[3] && due[0].batch.handover && due[0].batch.replicas.len() == 1);
        // No copies when the network keeps none.
        let mut p = Publisher::new(shipped_ladder(), 3, 0, 1000, usize::MAX);
        p.publish(Vec::new(), Vec::new(), vec![replica("http://c.test/")], &ring, &members[0]);
        assert_eq!(p.waiting(), 0);
    }
}
