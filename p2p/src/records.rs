//! Network-wide near-duplicates: every indexed document's 64-bit SimHash is published under its
//! four 16-bit pigeonhole blocks, so a node about to index a page can ask "has anyone indexed
//! something within 3 bits of this?" with at most four keys — any match within 3 bits shares
//! at least one block exactly. (Not the ~41,664 lookups of asking for every fingerprint within
//! 3 bit flips.)
//!
//! A block's record lives on the [`RECORD_OWNERS`] members that own its point on the ring
//! ([`RecordKey::point`]), as cells and document copies do: every member computes the owners
//! of any key from the roster it holds, so a lookup is one request to one owner per key and a
//! publication one to each owner — no iterative walk through strangers, no connections beyond
//! the owners. The owner merges what it is sent (no read-modify-write race between
//! publishers). Records live in memory ([`Store`]): a member that restarts, or a key whose
//! owners change, starts empty and fills as pages are published; a missed record costs a
//! missed duplicate, never data.
//!
//! `/weft/records/1` ([`RecordWire`]) carries it: a [`RecordRequest::Get`] of a fingerprint
//! (the owner answers every entry it holds under the fingerprint's four keys) or a
//! [`RecordRequest::Put`] of one entry, addressed to an owner ([`Addressed`]). On a large network
//! a request goes over the grid (`crate::grid`), a member one coordinate nearer its owner a hop:
//! a hop hands a put on at once and holds a lookup until the next one answers, then passes the
//! answer back. So an entry is signed by the peer that indexed it ([`DupEntry::signed`]): the
//! members it passes through can neither change nor invent one, and an asker checks the entry
//! it is answered with.

use crate::signing::{self, SignedBytes};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use weft_page::PeerName;

/// Entries a record keeps (the most recent).
pub const MAX_ENTRIES: usize = 16;
/// Members that hold each record: the first owners of its point on the ring.
pub const RECORD_OWNERS: usize = 3;
/// Longest URL an entry may carry.
pub const MAX_URL_BYTES: usize = 2048;
/// Longest peer id an entry may carry (an ed25519 peer id is 52 characters).
pub const MAX_PEER_BYTES: usize = 128;
/// Longest public key or signature an entry may carry (ed25519: 36 and 64 bytes).
pub const MAX_SIGNING_BYTES: usize = 128;
/// Largest request: one entry and its address.
pub const MAX_REQUEST_BYTES: u64 = 4 * 1024;
/// Entries one answer carries at most: four records' worth.
pub const MAX_FOUND: usize = 4 * MAX_ENTRIES;
/// The bytes a node's records hold at most (the oldest records go first): about 200,000
/// entries of typical URLs. There are 262,144 keys in all, each held by [`RECORD_OWNERS`]
/// members.
pub const STORE_BYTES: usize = 32 * 1024 * 1024;

/// One indexed document, as the network knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DupEntry {
    pub simhash: u64,
    pub url: String,
    /// Peer id of the node that indexed it (the one that published it).
    pub peer: PeerName,
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The publisher's public key (libp2p's protobuf encoding), which must be `peer`'s.
    #[serde(with = "serde_bytes")]
    pub publisher: Vec<u8>,
    /// The publisher's signature over the fields above ([`DupEntry::signed_bytes`]).
    #[serde(with = "serde_bytes")]
    pub signature: Vec<u8>,
}

impl DupEntry {
    /// An entry for a document `key`'s node indexed, signed by it.
    pub fn signed(key: &libp2p::identity::Keypair, simhash: u64, url: String, time: u64) -> DupEntry {
        let peer = key.public().to_peer_id().to_string();
        let mut entry =
            DupEntry { simhash, url, peer: PeerName::from(peer), time, publisher: Vec::new(), signature: Vec::new() };
        (entry.publisher, entry.signature) = signing::sign(key, &entry.signed_bytes());
        entry
    }

    /// What its publisher signs: every field but the key and signature, each length-prefixed.
    fn signed_bytes(&self) -> Vec<u8> {
        let mut out = SignedBytes::new("weft-dup-entry/1", self.url.len() + self.peer.len() + 16);
        out.field(&self.simhash.to_le_bytes()).field(self.url.as_bytes());
        out.field(self.peer.as_bytes()).field(&self.time.to_le_bytes());
        out.into_bytes()
    }

    /// Checks the entry is of bounded size and signed by the peer it names.
    pub fn check(&self) -> Result<(), RecordError> {
        if !self.fits() {
            return Err(RecordError::Shape);
        }
        match signing::verify(&self.publisher, &self.signature, &self.signed_bytes()) {
            Ok(signer) if signer.to_string() == self.peer => Ok(()),
            _ => Err(RecordError::Forged(self.peer.chars().take(60).collect())),
        }
    }

    /// What the entry holds in memory, roughly.
    fn bytes(&self) -> usize {
        self.url.len() + self.peer.len() + self.publisher.len() + self.signature.len() + 96
    }

    fn fits(&self) -> bool {
        self.url.len() <= MAX_URL_BYTES
            && self.peer.len() <= MAX_PEER_BYTES
            && self.publisher.len() <= MAX_SIGNING_BYTES
            && self.signature.len() <= MAX_SIGNING_BYTES
    }
}

/// One of a fingerprint's four blocks: which (0..4, most significant first) and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordKey {
    pub index: u8,
    pub block: u16,
}

impl RecordKey {
    /// Where the record lives on the ring: a hash of the key, so that the blocks of similar
    /// pages (equal values under different indexes) spread over different owners.
    pub fn point(&self) -> u64 {
        let mut h = blake3::Hasher::new();
        h.update(b"weft/simhash/1/");
        h.update(&[self.index]);
        h.update(&self.block.to_be_bytes());
        u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().expect("8 bytes"))
    }
}

/// The four keys of a fingerprint.
pub fn keys(hash: u64) -> [RecordKey; 4] {
    let key = |i: u8| RecordKey { index: i, block: (hash >> (48 - 16 * u32::from(i))) as u16 };
    [key(0), key(1), key(2), key(3)]
}

/// What a peer asks of a record's owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordRequest {
    /// Every entry the owner holds under the four keys of `hash`.
    Get { hash: u64 },
    /// Add `entry` under the keys of its fingerprint the owner owns.
    Put { entry: DupEntry },
}

/// A request on the wire: for `to` (a peer id), sent straight or handed on over the grid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addressed {
    pub to: String,
    /// Members it went through so far, the sender counted: 1 when sent straight.
    pub hops: u8,
    pub request: RecordRequest,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RecordReply {
    Found {
        entries: Vec<DupEntry>,
    },
    Stored,
    /// The owner's ring does not give it any of the entry's keys (rings differ for a moment
    /// after a membership change).
    NotOwner,
    /// The sender is not a member of this node's network.
    NotMember,
    /// The sender is over its rate: try later, or not at all.
    Busy,
    /// A hop could not hand the request on (its next hop failed, or the member it is for is
    /// not on the hop's ring): ask another owner.
    Unreached,
}

/// `/weft/records/1`.
pub struct RecordWire;

impl crate::codec::Wire for RecordWire {
    type Request = Addressed;
    type Response = RecordReply;
    const NAME: &'static str = "record request";
    const MAX_REQUEST_BYTES: u64 = MAX_REQUEST_BYTES;
    /// [`MAX_FOUND`] entries of the longest URLs.
    const MAX_RESPONSE_BYTES: u64 = (MAX_FOUND * (MAX_URL_BYTES + MAX_PEER_BYTES + 2 * MAX_SIGNING_BYTES + 64)) as u64;
    /// Sixty-four requests of the largest size.
    const MAX_BUFFERED_BYTES: u64 = 64 * MAX_REQUEST_BYTES;
}

/// Why an entry or a request a peer sent was refused: an honest node never sends any.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("an entry with a URL, peer id, key or signature over its bound")]
    Shape,
    #[error("an entry attributed to {0} without its signature")]
    Forged(String),
    #[error("a request for {0:?}, which is no peer id")]
    Address(String),
    #[error("a request {0} hops along, over the limit of {max}", max = crate::grid::MAX_HOPS)]
    TooManyHops(u8),
}

/// Checks a request a peer sent: addressed to a peer, within the hop limit, and an entry to
/// keep bounded and signed by the peer it names (a member speaks for itself only, whoever
/// carries its entry).
pub fn check_request(request: &Addressed) -> Result<libp2p::PeerId, RecordError> {
    let to = request.to.parse().map_err(|_| RecordError::Address(request.to.chars().take(60).collect()))?;
    if request.hops > crate::grid::MAX_HOPS {
        return Err(RecordError::TooManyHops(request.hops));
    }
    if let RecordRequest::Put { entry } = &request.request {
        entry.check()?;
    }
    Ok(to)
}

/// An answer's entries as this node keeps them: bounded in number and size (their signatures
/// are checked on the one [`nearest`] picks).
pub fn sanitize(mut entries: Vec<DupEntry>) -> Vec<DupEntry> {
    entries.retain(DupEntry::fits);
    entries.truncate(MAX_FOUND);
    entries
}

/// `entries` with `new` added (replacing an older entry for the same URL), newest kept.
pub fn merge(mut entries: Vec<DupEntry>, new: DupEntry) -> Vec<DupEntry> {
    entries.retain(|e| e.url != new.url);
    entries.push(new);
    entries.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.url.cmp(&b.url)));
    entries.truncate(MAX_ENTRIES);
    entries
}

/// The records this node holds for the keys it owns, bounded by [`STORE_BYTES`] (the records
/// made first go first when it is full).
#[derive(Debug)]
pub struct Store {
    records: HashMap<RecordKey, Vec<DupEntry>>,
    /// Keys in the order their records were made.
    order: VecDeque<RecordKey>,
    bytes: usize,
    max_bytes: usize,
}

impl Default for Store {
    fn default() -> Self {
        Store::new(STORE_BYTES)
    }
}

impl Store {
    pub fn new(max_bytes: usize) -> Store {
        Store { records: HashMap::new(), order: VecDeque::new(), bytes: 0, max_bytes }
    }

    /// Adds `entry` under `key`.
    pub fn put(&mut self, key: RecordKey, entry: DupEntry) {
        let old = self.records.remove(&key);
        if old.is_none() {
            self.order.push_back(key);
        }
        let old = old.unwrap_or_default();
        self.bytes -= old.iter().map(DupEntry::bytes).sum::<usize>();
        let merged = merge(old, entry);
        self.bytes += merged.iter().map(DupEntry::bytes).sum::<usize>();
        self.records.insert(key, merged);
        while self.bytes > self.max_bytes {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(gone) = self.records.remove(&oldest) {
                self.bytes -= gone.iter().map(DupEntry::bytes).sum::<usize>();
            }
        }
    }

    /// The entries held under `key`.
    pub fn get(&self, key: &RecordKey) -> &[DupEntry] {
        self.records.get(key).map_or(&[], Vec::as_slice)
    }

    /// Every entry held under the four keys of `hash`.
    pub fn found(&self, hash: u64) -> Vec<DupEntry> {
        keys(hash).iter().flat_map(|k| self.get(k).iter().cloned()).collect()
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Bytes the records hold, roughly.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

/// The entry nearest to `hash` within `max_distance` bits, other than `url` itself, among those
/// signed by the peers they name.
pub fn nearest<'a>(
    entries: impl IntoIterator<Item = &'a DupEntry>,
    hash: u64,
    max_distance: u32,
    url: &str,
) -> Option<(DupEntry, u32)> {
    let mut near: Vec<(&DupEntry, u32)> = entries
        .into_iter()
        .filter(|e| e.url != url)
        .map(|e| (e, (e.simhash ^ hash).count_ones()))
        .filter(|(_, d)| *d <= max_distance)
        .collect();
    // Nearest first; a signature is checked only on the candidate about to be picked.
    near.sort_by(|(a, da), (b, db)| da.cmp(db).then_with(|| a.time.cmp(&b.time)));
    near.into_iter().find(|(e, _)| e.check().is_ok()).map(|(e, d)| (e.clone(), d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> libp2p::identity::Keypair {
        libp2p::identity::Keypair::ed25519_from_bytes([7; 32]).unwrap()
    }

    fn entry(url: &str, simhash: u64, time: u64) -> DupEntry {
        DupEntry::signed(&key(), simhash, url.into(), time)
    }

    #[test]
    fn a_fingerprint_within_three_bits_shares_a_key() {
        let h = 0xdead_beef_0123_4567u64;
        let near = h ^ (1 << 3) ^ (1 << 20) ^ (1 << 40);
        let (a, b) = (keys(h), keys(near));
        assert!(a.iter().zip(&b).any(|(x, y)| x == y));
        assert!(keys(!h).iter().zip(&a).all(|(x, y)| x != y));
        assert_eq!(a[0], RecordKey { index: 0, block: 0xdead });
        assert_eq!(a[3], RecordKey { index: 3, block: 0x4567 });
        // Equal blocks under different indexes live at different points.
        let same = [0u8, 1, 2, 3].map(|index| RecordKey { index, block: 7 }.point());
        assert!(same.iter().enumerate().all(|(i, p)| same[i + 1..].iter().all(|q| q != p)));
    }

    #[test]
    fn records_merge_cap_and_replace_by_url() {
        let mut e = Vec::new();
        for i in 0..40 {
            e = merge(e, entry(&format!("http://a.test/{i}"), i, i));
        }
        assert_eq!(e.len(), MAX_ENTRIES);
        assert_eq!(e[0].url, "http://a.test/39", "newest first");
        let e2 = merge(e.clone(), entry("http://a.test/39", 7, 100));
        assert_eq!(e2.len(), MAX_ENTRIES, "same URL replaced, not added");
        assert_eq!(e2[0].simhash, 7);
    }

    #[test]
    fn an_entry_is_bounded_and_signed_by_the_peer_it_names() {
        let e = entry("http://a.test/1", 1, 1);
        assert_eq!(e.peer, key().public().to_peer_id().to_string());
        assert_eq!(e.check(), Ok(()));
        let forged = |e: DupEntry| Err(RecordError::Forged(e.peer.chars().take(60).collect()));
        // Changed on the way, or attributed to another peer: not its publisher's.
        let moved = DupEntry { url: "http://a.test/2".into(), ..e.clone() };
        assert_eq!(moved.check(), forged(moved.clone()));
        let other = libp2p::identity::Keypair::generate_ed25519();
        let framed = DupEntry { peer: PeerName::from(other.public().to_peer_id().to_string()), ..e.clone() };
        assert_eq!(framed.check(), forged(framed.clone()));
        let mut claimed = DupEntry::signed(&other, 1, "http://a.test/1".into(), 1);
        claimed.peer = e.peer.clone();
        assert_eq!(claimed.check(), forged(claimed.clone()));
        let long = DupEntry::signed(&key(), 1, format!("http://a.test/{}", "x".repeat(MAX_URL_BYTES)), 1);
        assert_eq!(long.check(), Err(RecordError::Shape));
        let mut many: Vec<DupEntry> = (0..MAX_FOUND + 5).map(|i| entry(&format!("http://a.test/{i}"), 1, 1)).collect();
        many.push(long);
        let kept = sanitize(many);
        assert_eq!(kept.len(), MAX_FOUND);
        assert!(kept.iter().all(|e| e.url.len() <= MAX_URL_BYTES));
    }

    #[test]
    fn a_request_names_a_peer_stays_within_the_hops_and_carries_signed_entries_only() {
        let to = libp2p::PeerId::random();
        let put =
            |entry: DupEntry, hops: u8| Addressed { to: to.to_string(), hops, request: RecordRequest::Put { entry } };
        assert_eq!(check_request(&put(entry("http://a.test/", 1, 1), 1)), Ok(to));
        let max = crate::grid::MAX_HOPS;
        assert_eq!(check_request(&put(entry("http://a.test/", 1, 1), max)), Ok(to));
        assert_eq!(check_request(&put(entry("http://a.test/", 1, 1), max + 1)), Err(RecordError::TooManyHops(max + 1)));
        let changed = DupEntry { time: 2, ..entry("http://a.test/", 1, 1) };
        assert!(matches!(check_request(&put(changed, 2)), Err(RecordError::Forged(_))));
        let get = Addressed { to: "not a peer".into(), hops: 1, request: RecordRequest::Get { hash: 1 } };
        assert_eq!(check_request(&get), Err(RecordError::Address("not a peer".into())));
    }

    /// The data-plane model's `record_bytes` (300) comes from these sizes.
    #[test]
    fn an_addressed_put_and_lookup_are_a_few_hundred_bytes_on_the_wire() {
        let to = libp2p::PeerId::random().to_string();
        let url = "https://www.example-news.test/2026/12/07/a-story-about-something.html".to_string();
        let put =
            Addressed { to: to.clone(), hops: 1, request: RecordRequest::Put { entry: entry(&url, 1 << 63, 1 << 31) } };
        let get = Addressed { to, hops: 1, request: RecordRequest::Get { hash: 1 << 63 } };
        let size = |a: &Addressed| cbor4ii::serde::to_vec(Vec::new(), a).unwrap().len();
        let (put, get) = (size(&put), size(&get));
        assert!((300..=420).contains(&put), "{put}");
        assert!((70..=130).contains(&get), "{get}");
    }

    #[test]
    fn the_store_answers_a_fingerprint_from_its_four_keys_and_stays_in_its_bound() {
        let mut s = Store::new(10_000);
        let h = 0x1111_2222_3333_4444u64;
        let [k0, _, k2, _] = keys(h);
        s.put(k0, entry("http://a.test/0", h, 1));
        s.put(k2, entry("http://a.test/2", h ^ 1, 2));
        s.put(k2, entry("http://a.test/2", h ^ 1, 3));
        let found = s.found(h);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            nearest(&found, h, 3, "http://a.test/0").map(|(e, d)| (e.url, d)),
            Some(("http://a.test/2".into(), 1))
        );
        assert!(s.found(!h).is_empty());
        // Full: the records made first go first.
        for i in 0..200u16 {
            s.put(RecordKey { index: 1, block: i }, entry(&format!("http://b.test/{i}"), u64::from(i), 5));
        }
        assert!(s.bytes() <= 10_000, "{}", s.bytes());
        assert!(s.get(&k0).is_empty(), "the oldest record went");
        assert_eq!(s.get(&RecordKey { index: 1, block: 199 }).len(), 1);
        assert_eq!(s.len(), s.order.len());
    }

    #[test]
    fn the_nearest_other_document_within_the_distance_wins() {
        let h = 0xffff_0000_ffff_0000u64;
        let entries =
            [entry("http://me.test/", h, 1), entry("http://far.test/", !h, 1), entry("http://near.test/", h ^ 0b11, 5)];
        assert_eq!(
            nearest(&entries, h, 3, "http://me.test/").map(|(e, d)| (e.url, d)),
            Some(("http://near.test/".into(), 2))
        );
        assert_eq!(nearest(&entries, h, 1, "http://me.test/"), None);
        // An entry that is not its publisher's is passed over, however near.
        let forged = DupEntry { url: "http://forged.test/".into(), ..entry("http://x.test/", h ^ 1, 1) };
        let with_forged = [entries[2].clone(), forged];
        assert_eq!(
            nearest(&with_forged, h, 3, "http://me.test/").map(|(e, d)| (e.url, d)),
            Some(("http://near.test/".into(), 2))
        );
    }
}
