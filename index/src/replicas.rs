//! The replica store: copies of documents other members indexed, held here because this node
//! owns their ids on the ring (see `weft_p2p::replicas`), so that a document stays readable —
//! and its page is not fetched again — after the node that crawled it is gone.
//!
//! A copy is kept as its publisher signed and sent it: opaque bytes (the network's encoding,
//! which this crate does not read) under the document's id, with a small head beside it —
//! when the page was fetched, the size, who published it — so that what is held can be
//! listed, counted and compared without reading the copies. A newer fetch replaces an older
//! copy; an older one is ignored.
//!
//! Bounded: at most `max_bytes` in all, and a quarter of that per publisher (a publisher owns
//! the hosts it crawls, and could otherwise fill every holder with pages it makes up on them).
//! A copy over its publisher's quota is refused and counted. A full store makes room by
//! evicting the copies this node is **farthest** from — the ids it holds as the last of their
//! holders on the ring (their nearer holders keep them), then the next-to-last — never one
//! nearer than the copy coming in; with nothing farther to evict, the copy is refused. The
//! caller ranks ids (`rank`: 0 for the first holder of an id, larger farther; the store does
//! not know the ring). The copies of ids this node no longer owns are dropped by
//! [`ReplicaStore::keep`] once their new holders have them.

use crate::{DocId, IndexError};
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use weft_page::PeerName;

/// What is kept beside each copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// Unix seconds: when the publisher fetched the page.
    pub fetched_at: u64,
    /// The copy's size in bytes.
    pub bytes: u32,
    /// The publishing peer.
    pub publisher: PeerName,
}

/// What [`ReplicaStore::put`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// A copy of a document not held before.
    Stored,
    /// A newer fetch replaced the copy held.
    Replaced,
    /// The copy held is as new or newer: nothing changed.
    Kept,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error("the replica store is full ({0} bytes)")]
    Full(u64),
    #[error("over the publisher's quota ({0} bytes)")]
    Quota(u64),
    #[error(transparent)]
    Index(#[from] IndexError),
}

#[derive(Debug, Default)]
struct Tallies {
    bytes: u64,
    count: usize,
    by_publisher: HashMap<PeerName, u64>,
}

impl Tallies {
    fn add(&mut self, head: &Head) {
        self.bytes += u64::from(head.bytes);
        self.count += 1;
        *self.by_publisher.entry(head.publisher.clone()).or_default() += u64::from(head.bytes);
    }

    fn remove(&mut self, head: &Head) {
        self.bytes = self.bytes.saturating_sub(u64::from(head.bytes));
        self.count = self.count.saturating_sub(1);
        if let Some(b) = self.by_publisher.get_mut(&head.publisher) {
            *b = b.saturating_sub(u64::from(head.bytes));
            if *b == 0 {
                self.by_publisher.remove(&head.publisher);
            }
        }
    }
}

/// See the module doc.
pub struct ReplicaStore {
    /// Document id → [`Head`] (postcard).
    heads: sled::Tree,
    /// Document id → the copy's bytes.
    bodies: sled::Tree,
    max_bytes: u64,
    tallies: parking_lot::Mutex<Tallies>,
    refused: AtomicU64,
    evicted: AtomicU64,
    /// A full store's last look for room found too little farther than this rank for this
    /// many bytes: a copy ranked there or farther, needing as much, is refused without
    /// looking again, until something is removed or the ranks change ([`ReplicaStore::keep`]).
    no_room_from: parking_lot::Mutex<Option<(u32, u64)>>,
    /// The copies refused for the bound or a quota lately (id → fetch time), so that comparing
    /// with a co-holder does not ask for them again and again (see `weft_p2p::copy_sync`):
    /// forgotten when the store next drops copies for the ring ([`ReplicaStore::keep`]), or all
    /// at once when [`REFUSALS_REMEMBERED`] are remembered.
    refusals: parking_lot::Mutex<HashMap<DocId, u64>>,
}

/// Refusals remembered at most (~40 bytes each).
pub const REFUSALS_REMEMBERED: usize = 65_536;

/// Room made beyond what a copy needs when the store is full, as a share of the bound: the
/// search for the farthest copies reads every head, so it runs once per this much turnover,
/// not once per copy.
const EVICT_HEADROOM: u64 = 32;

fn store_err(e: TransactionError<IndexError>) -> IndexError {
    match e {
        TransactionError::Abort(e) => e,
        TransactionError::Storage(e) => IndexError::Store(e),
    }
}

fn decode(bytes: &[u8]) -> Result<Head, IndexError> {
    postcard::from_bytes(bytes).map_err(|e| IndexError::Corrupt(format!("replica head: {e}")))
}

impl ReplicaStore {
    /// Opens the store's trees in `db` (the cell store's database: one sled cache for both),
    /// holding at most `max_bytes` of copies.
    pub fn open(db: &sled::Db, max_bytes: u64) -> Result<ReplicaStore, IndexError> {
        let heads = db.open_tree("replica_heads").map_err(IndexError::Store)?;
        let bodies = db.open_tree("replica_bodies").map_err(IndexError::Store)?;
        let mut tallies = Tallies::default();
        for entry in heads.iter() {
            let (_, bytes) = entry.map_err(IndexError::Store)?;
            tallies.add(&decode(&bytes)?);
        }
        let tallies = parking_lot::Mutex::new(tallies);
        Ok(ReplicaStore {
            heads,
            bodies,
            max_bytes,
            tallies,
            refused: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            no_room_from: parking_lot::Mutex::new(None),
            refusals: parking_lot::Mutex::new(HashMap::new()),
        })
    }

    /// Stores `body`, a copy of document `id` fetched at `fetched_at` and published by
    /// `publisher`, unless a copy as new is held. A full store evicts copies `rank` puts
    /// farther than `id` to make room (see the module doc).
    pub fn put(
        &self,
        id: DocId,
        fetched_at: u64,
        publisher: &str,
        body: &[u8],
        rank: &dyn Fn(&DocId) -> u32,
    ) -> Result<Put, ReplicaError> {
        let mut tallies = self.tallies.lock();
        let old = self.head(&id)?;
        if old.as_ref().is_some_and(|o| o.fetched_at >= fetched_at) {
            return Ok(Put::Kept);
        }
        let head = Head { fetched_at, bytes: body.len() as u32, publisher: PeerName::from(publisher) };
        let freed = old.as_ref().map_or(0, |o| u64::from(o.bytes));
        let freed_own = old.as_ref().filter(|o| o.publisher == publisher).map_or(0, |o| u64::from(o.bytes));
        let quota = self.max_bytes / 4;
        let own = tallies.by_publisher.get(publisher).copied().unwrap_or(0);
        if own - freed_own + u64::from(head.bytes) > quota {
            self.refuse(id, fetched_at);
            return Err(ReplicaError::Quota(quota));
        }
        let after = tallies.bytes - freed + u64::from(head.bytes);
        let nearness = rank(&id);
        if after > self.max_bytes && !self.make_room(&id, nearness, after - self.max_bytes, rank, &mut tallies)? {
            self.refuse(id, fetched_at);
            return Err(ReplicaError::Full(self.max_bytes));
        }
        let encoded = postcard::to_allocvec(&head).map_err(|e| IndexError::Corrupt(format!("replica head: {e}")))?;
        (&self.heads, &self.bodies)
            .transaction(|(heads, bodies)| {
                heads.insert(&id.0[..], encoded.as_slice())?;
                bodies.insert(&id.0[..], body)?;
                Ok::<_, ConflictableTransactionError<IndexError>>(())
            })
            .map_err(store_err)?;
        if let Some(o) = &old {
            tallies.remove(o);
        }
        tallies.add(&head);
        let mut no_room = self.no_room_from.lock();
        if no_room.is_some_and(|(rank, _)| nearness > rank) {
            // Something farther to evict now.
            *no_room = None;
        }
        Ok(if old.is_some() { Put::Replaced } else { Put::Stored })
    }

    fn refuse(&self, id: DocId, fetched_at: u64) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let mut refusals = self.refusals.lock();
        if refusals.len() >= REFUSALS_REMEMBERED {
            refusals.clear();
        }
        refusals.insert(id, fetched_at);
    }

    /// Whether a copy of `id` fetched at `fetched_at` (or later) was refused lately: asking for
    /// it again would only have it refused again.
    pub fn was_refused(&self, id: &DocId, fetched_at: u64) -> bool {
        self.refusals.lock().get(id).is_some_and(|at| *at >= fetched_at)
    }

    /// Evicts the copies ranked farthest, all farther than `nearer_than`, until `need` bytes
    /// (and some headroom) are free; `false`, evicting nothing, when those farther copies do
    /// not add up to `need`.
    fn make_room(
        &self,
        id: &DocId,
        nearer_than: u32,
        need: u64,
        rank: &dyn Fn(&DocId) -> u32,
        tallies: &mut Tallies,
    ) -> Result<bool, IndexError> {
        let mut no_room = self.no_room_from.lock();
        if no_room.is_some_and(|(rank, needed)| nearer_than >= rank && need >= needed) {
            return Ok(false);
        }
        let mut farther: Vec<(u32, DocId, Head)> = Vec::new();
        for entry in self.heads.iter() {
            let (key, bytes) = entry.map_err(IndexError::Store)?;
            let Ok(other) = <[u8; 16]>::try_from(key.as_ref()).map(DocId) else { continue };
            let r = rank(&other);
            if r > nearer_than && other != *id {
                farther.push((r, other, decode(&bytes)?));
            }
        }
        if farther.iter().map(|(_, _, h)| u64::from(h.bytes)).sum::<u64>() < need {
            *no_room = Some((nearer_than, need));
            return Ok(false);
        }
        // Farthest first; among equals, the oldest fetch.
        farther.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.fetched_at.cmp(&b.2.fetched_at)));
        let target = need + self.max_bytes / EVICT_HEADROOM;
        let mut freed = 0;
        for (_, other, head) in farther {
            if freed >= target {
                break;
            }
            self.remove_locked(&other, &head, tallies)?;
            self.evicted.fetch_add(1, Ordering::Relaxed);
            freed += u64::from(head.bytes);
        }
        Ok(true)
    }

    /// The copy of document `id`, if one is held.
    pub fn get(&self, id: &DocId) -> Result<Option<Vec<u8>>, IndexError> {
        Ok(self.bodies.get(id.0).map_err(IndexError::Store)?.map(|v| v.to_vec()))
    }

    /// What is kept beside the copy of `id`.
    pub fn head(&self, id: &DocId) -> Result<Option<Head>, IndexError> {
        self.heads.get(id.0).map_err(IndexError::Store)?.map(|v| decode(&v)).transpose()
    }

    /// Drops the copy of `id` if it was fetched at or before `at` (its publisher withdrew it);
    /// returns whether one was dropped.
    pub fn withdraw(&self, id: &DocId, at: u64) -> Result<bool, IndexError> {
        let mut tallies = self.tallies.lock();
        match self.head(id)? {
            Some(head) if head.fetched_at <= at => {
                self.remove_locked(id, &head, &mut tallies)?;
                *self.no_room_from.lock() = None;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn remove_locked(&self, id: &DocId, head: &Head, tallies: &mut Tallies) -> Result<(), IndexError> {
        (&self.heads, &self.bodies)
            .transaction(|(heads, bodies)| {
                heads.remove(&id.0[..])?;
                bodies.remove(&id.0[..])?;
                Ok::<_, ConflictableTransactionError<IndexError>>(())
            })
            .map_err(store_err)?;
        tallies.remove(head);
        Ok(())
    }

    /// Every copy held: its document's id and head, in id order (which is ring order: an id's
    /// first 64 bits are its point).
    pub fn heads(&self) -> Result<Vec<(DocId, Head)>, IndexError> {
        let mut out = Vec::with_capacity(self.tallies.lock().count);
        for entry in self.heads.iter() {
            let (key, bytes) = entry.map_err(IndexError::Store)?;
            let Ok(id) = <[u8; 16]>::try_from(key.as_ref()) else { continue };
            out.push((DocId(id), decode(&bytes)?));
        }
        Ok(out)
    }

    /// Up to `limit` copies after the id `cursor` (from the first without), in id order: what
    /// an export or the API lists.
    pub fn page(&self, cursor: Option<&DocId>, limit: usize) -> Result<Vec<(DocId, Vec<u8>)>, IndexError> {
        use std::ops::Bound;
        let from = match cursor {
            Some(c) => Bound::Excluded(c.0.to_vec()),
            None => Bound::Unbounded,
        };
        let mut out = Vec::new();
        for entry in self.bodies.range::<Vec<u8>, _>((from, Bound::Unbounded)).take(limit) {
            let (key, body) = entry.map_err(IndexError::Store)?;
            let Ok(id) = <[u8; 16]>::try_from(key.as_ref()) else { continue };
            out.push((DocId(id), body.to_vec()));
        }
        Ok(out)
    }

    /// Drops every copy for which `keep` is false (ids this node no longer owns); returns how
    /// many were dropped.
    pub fn keep(&self, keep: impl Fn(&DocId) -> bool) -> Result<usize, IndexError> {
        // Called when the ring changes: the ranks a full store last looked at have changed, and
        // a copy refused before may be taken now.
        *self.no_room_from.lock() = None;
        self.refusals.lock().clear();
        let mut dropped = 0;
        for (id, _) in self.heads()? {
            if keep(&id) {
                continue;
            }
            let mut tallies = self.tallies.lock();
            if let Some(head) = self.head(&id)? {
                self.remove_locked(&id, &head, &mut tallies)?;
                dropped += 1;
            }
        }
        Ok(dropped)
    }

    /// Copies held, and their bytes.
    pub fn counts(&self) -> (usize, u64) {
        let t = self.tallies.lock();
        (t.count, t.bytes)
    }

    /// Copies refused for the store's bound or a publisher's quota, since the start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Copies evicted to make room for nearer ones, since the start.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id ranked alike: nothing is farther than a copy coming in.
    fn same(_: &DocId) -> u32 {
        0
    }

    fn store(max: u64) -> (tempfile::TempDir, ReplicaStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = weft_db::open_db(dir.path(), 8 << 20).unwrap();
        let s = ReplicaStore::open(&db, max).unwrap();
        (dir, s)
    }

    #[test]
    fn a_newer_fetch_replaces_an_older_copy_and_an_older_one_is_ignored() {
        let (_d, s) = store(1 << 20);
        let id = DocId::of_url("http://a.test/p");
        assert_eq!(s.put(id, 10, "p1", b"first", &same).unwrap(), Put::Stored);
        assert_eq!(s.put(id, 5, "p1", b"older", &same).unwrap(), Put::Kept);
        assert_eq!(s.get(&id).unwrap().unwrap(), b"first");
        assert_eq!(s.put(id, 20, "p2", b"second!", &same).unwrap(), Put::Replaced);
        assert_eq!(s.get(&id).unwrap().unwrap(), b"second!");
        assert_eq!(s.counts(), (1, 7));
        assert_eq!(s.head(&id).unwrap().unwrap().publisher, "p2");
        assert!(!s.withdraw(&id, 19).unwrap(), "withdrawn before this fetch");
        assert!(s.withdraw(&id, 20).unwrap());
        assert_eq!(s.counts(), (0, 0));
        assert!(s.get(&id).unwrap().is_none());
    }

    #[test]
    fn the_bound_and_a_publishers_quarter_are_kept_and_counts_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = weft_db::open_db(dir.path(), 8 << 20).unwrap();
            let s = ReplicaStore::open(&db, 400).unwrap();
            let body = vec![7u8; 60];
            let id = |i: u32| DocId::of_url(&format!("http://a.test/{i}"));
            s.put(id(0), 1, "greedy", &body, &same).unwrap();
            assert!(matches!(s.put(id(1), 1, "greedy", &body, &same), Err(ReplicaError::Quota(100))), "over a quarter");
            // Replacing its own copy frees what the old one held.
            assert_eq!(s.put(id(0), 2, "greedy", &body, &same).unwrap(), Put::Replaced);
            for (i, p) in ["b", "c", "d", "e", "f"].iter().enumerate() {
                s.put(id(10 + i as u32), 1, p, &body, &same).unwrap();
            }
            assert!(matches!(s.put(id(20), 1, "g", &body, &same), Err(ReplicaError::Full(400))));
            assert_eq!(s.refused(), 2);
            assert_eq!(s.counts(), (6, 360));
            // Remembered, so that nobody asks for them again: that fetch or an older one.
            assert!(s.was_refused(&id(1), 1) && s.was_refused(&id(20), 0) && !s.was_refused(&id(20), 2));
            assert!(!s.was_refused(&id(0), 1), "kept, not refused");
            let dropped = s.keep(|d| *d != id(10) && *d != id(11)).unwrap();
            assert_eq!(dropped, 2);
            assert!(!s.was_refused(&id(20), 1), "forgotten when the ring changes: there may be room");
        }
        let db = weft_db::open_db(dir.path(), 8 << 20).unwrap();
        let s = ReplicaStore::open(&db, 400).unwrap();
        assert_eq!(s.counts(), (4, 240));
        assert_eq!(s.heads().unwrap().len(), 4);
        let first = s.page(None, 3).unwrap();
        assert_eq!(first.len(), 3);
        let rest = s.page(Some(&first[2].0), 3).unwrap();
        assert_eq!(rest.len(), 1, "a page after the cursor");
        assert!(first[2].0 .0 < rest[0].0 .0);
    }

    #[test]
    fn a_full_store_evicts_the_copies_it_is_farthest_from_and_never_a_nearer_one() {
        let (_d, s) = store(1000);
        let id = |i: u32| DocId::of_url(&format!("http://a.test/{i}"));
        // Ten copies of 100 bytes from five publishers (a quarter each at most): ids 0–3 this
        // node holds as their first holder, 4–6 as the second, 7–9 as the third.
        let ranks: HashMap<DocId, u32> = (0..10).map(|i| (id(i), [0, 0, 0, 0, 1, 1, 1, 2, 2, 2][i as usize])).collect();
        let rank = |d: &DocId| ranks.get(d).copied().unwrap_or(0);
        for i in 0..10 {
            s.put(id(i), 1, ["p", "q", "r", "s", "v"][i as usize % 5], &[1u8; 100], &rank).unwrap();
        }
        assert_eq!(s.counts(), (10, 1000));
        // A copy it is second holder of: a third-holder copy goes, the oldest of those first
        // (with headroom: 1000/32 more bytes than it needs, so two).
        s.put(id(7), 2, "r", &[1u8; 100], &rank).unwrap();
        let fresh = |i: u32| DocId::of_url(&format!("http://b.test/{i}"));
        let rank2 = |d: &DocId| if *d == fresh(0) || *d == fresh(1) { 1 } else { rank(d) };
        assert_eq!(s.put(fresh(0), 1, "t", &[2u8; 100], &rank2).unwrap(), Put::Stored);
        assert_eq!(s.evicted(), 2);
        let held: Vec<DocId> = s.heads().unwrap().into_iter().map(|(d, _)| d).collect();
        assert!(held.contains(&id(7)), "the newest of the farthest stays");
        assert!(!held.contains(&id(8)) && !held.contains(&id(9)));
        assert!((0..7).all(|i| held.contains(&id(i))), "nothing nearer went");
        assert_eq!(s.put(fresh(1), 1, "t", &[2u8; 100], &rank2).unwrap(), Put::Stored, "into the headroom");
        // Full again, with one third-holder copy left: not enough farther than a second-holder copy
        // of 200 bytes, so it is refused and nothing is evicted; a first-holder copy takes room from
        // the second holders.
        let big = DocId::of_url("http://c.test/big");
        let rank3 = |d: &DocId| if *d == big { 1 } else { rank2(d) };
        assert!(matches!(s.put(big, 1, "u", &[3u8; 200], &rank3), Err(ReplicaError::Full(1000))));
        assert_eq!(s.evicted(), 2);
        let first = DocId::of_url("http://c.test/first");
        let rank4 = |d: &DocId| if *d == first { 0 } else { rank2(d) };
        assert_eq!(s.put(first, 1, "u", &[3u8; 200], &rank4).unwrap(), Put::Stored);
        let held: Vec<DocId> = s.heads().unwrap().into_iter().map(|(d, _)| d).collect();
        assert!((0..4).all(|i| held.contains(&id(i))), "first-holder copies stay");
        assert!(!held.contains(&id(7)), "the farthest went first");
        assert!(s.counts().1 <= 1000);
    }
}
