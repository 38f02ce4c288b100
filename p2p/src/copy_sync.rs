//! Anti-entropy for document copies: two members that hold copies of the same ids compare
//! what they hold, range by range, and the one that lacks a copy (or holds an older fetch of
//! it) asks the other to send it.
//!
//! Pushes do most of the work — a crawler sends each document's copies to its holders, and on
//! every change of the member set repair sends what the new holders gained. What they miss is
//! what this is for: a copy lost in flight when its sender died, one a full store evicted or
//! refused, one lost with a holder's disk (a volunteer restoring its key on a new disk) — found
//! within a round instead of at the weekly re-send, and without either side listing all it
//! holds.
//!
//! Ids are cut into [`BUCKETS`] ranges by their first bits (an id's first 64 bits are its
//! point on the ring, so a bucket is an arc). For each bucket a side computes a [`Digest`] —
//! how many, and the XOR of a hash of each (id, fetch time) — over the copies *the asker should
//! hold*: those whose holders on the answering side's ring include the asker. Equal digests:
//! nothing to do. A bucket that differs is listed (paged), the asker picks what it lacks or
//! holds older ([`wanted`]) and asks for it, at most [`MAX_SEND`] ids at a time; the other side
//! sends those as a hand-over, through the same acknowledged, checked outbox as a repair (the
//! asker checks each copy's signature and the sender's right to it as it would a pushed one).
//! Nothing is remembered between rounds: a round cut short resumes by running again.
//!
//! Pure: the sets, digests, pages and the checks of what a peer answered; the node reads its
//! stores and the event loop carries the requests (`/weft/doc/1`, see [`crate::replicas`]).

use crate::replicas::{doc_holders, doc_point};
use crate::ring::Ring;
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Ranges the ids are cut into: the first 10 bits of an id.
pub const BUCKETS: u16 = 1024;
const SHIFT: u32 = 64 - 10;
/// Ids one page of a bucket's listing carries, at most.
pub const MAX_LIST: usize = 1024;
/// Ids one request asks to be sent, at most.
pub const MAX_SEND: usize = 256;

/// The bucket of document `doc` (a 32-hex-digit id); `None` for a malformed id.
pub fn bucket_of(doc: &str) -> Option<u16> {
    doc_point(doc).map(|p| (p >> SHIFT) as u16)
}

/// One bucket's summary: how many copies, and the XOR of each one's [`entry_hash`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    pub bucket: u16,
    pub count: u32,
    pub hash: u64,
}

/// One page of a bucket's listing: ids in order with their fetch times; `more` when the
/// bucket goes on past the last.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub entries: Vec<(String, u64)>,
    pub more: bool,
}

/// A copy a member holds, as the comparison sees it: its id (the first 16 bytes of blake3 of
/// the URL, as a number: 24 bytes a copy where hex strings would be ~60) and fetch time, and
/// who published it (an index into [`Holdings::publishers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    id: u128,
    fetched_at: u64,
    publisher: u32,
}

/// Everything a member holds — its own documents and the copies it keeps for others — in id
/// order, ready to be compared with any co-holder's.
#[derive(Debug, Clone, Default)]
pub struct Holdings {
    entries: Vec<Entry>,
    publishers: Vec<PeerId>,
}

fn id_of(doc: &str) -> Option<u128> {
    (doc.len() == 32).then(|| u128::from_str_radix(doc, 16).ok()).flatten()
}

fn hex(id: u128) -> String {
    format!("{id:032x}")
}

impl Holdings {
    /// From (id, fetch time, publisher) triples in any order; malformed ids are skipped, and
    /// of one id held twice (an own document and a stale copy) the newer fetch counts.
    pub fn new(held: impl IntoIterator<Item = (String, u64, PeerId)>) -> Holdings {
        let mut index: HashMap<PeerId, u32> = HashMap::new();
        let mut publishers = Vec::new();
        let mut entries: Vec<Entry> = held
            .into_iter()
            .filter_map(|(doc, fetched_at, p)| {
                let id = id_of(&doc)?;
                let publisher = *index.entry(p).or_insert_with(|| {
                    publishers.push(p);
                    publishers.len() as u32 - 1
                });
                Some(Entry { id, fetched_at, publisher })
            })
            .collect();
        entries.sort_by(|a, b| a.id.cmp(&b.id).then(b.fetched_at.cmp(&a.fetched_at)));
        entries.dedup_by_key(|e| e.id);
        Holdings { entries, publishers }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether `member` should hold `e` on `ring` (`r` holders an id, its publisher not one).
    fn for_member(&self, e: &Entry, ring: &Ring, r: usize, member: &PeerId) -> bool {
        doc_holders(ring, &hex(e.id), r, &self.publishers[e.publisher as usize]).contains(member)
    }

    /// The digests of what `member` should hold of this, bucket by bucket (empty buckets left
    /// out): what a co-holder asking is answered, and what a member compares with it for itself.
    pub fn digests(&self, ring: &Ring, r: usize, member: &PeerId) -> Vec<Digest> {
        let mut out: Vec<Digest> = Vec::new();
        for e in self.entries.iter().filter(|e| self.for_member(e, ring, r, member)) {
            let bucket = (e.id >> (64 + SHIFT)) as u16;
            if out.last().is_none_or(|d| d.bucket != bucket) {
                out.push(Digest { bucket, count: 0, hash: 0 });
            }
            let d = out.last_mut().expect("pushed");
            d.count += 1;
            d.hash ^= entry_hash(e.id, e.fetched_at);
        }
        out
    }

    /// One page of what `member` should hold of this in `bucket`, after the id `after`.
    pub fn list(&self, ring: &Ring, r: usize, member: &PeerId, bucket: u16, after: Option<&str>) -> Listed {
        let first = u128::from(bucket) << (64 + SHIFT);
        let start = match after.and_then(id_of) {
            Some(a) => self.entries.partition_point(|e| e.id <= a),
            None => self.entries.partition_point(|e| e.id < first),
        };
        let mut page = Listed::default();
        for e in &self.entries[start..] {
            if (e.id >> (64 + SHIFT)) as u16 != bucket {
                break;
            }
            if !self.for_member(e, ring, r, member) {
                continue;
            }
            if page.entries.len() == MAX_LIST {
                page.more = true;
                break;
            }
            page.entries.push((hex(e.id), e.fetched_at));
        }
        page
    }

    /// The fetch time held for each id (to compare a listing with).
    pub fn fetched(&self) -> HashMap<String, u64> {
        self.entries.iter().map(|e| (hex(e.id), e.fetched_at)).collect()
    }

    /// Of `docs`, those held here that `member` should hold (a request to send is answered
    /// with these only: a peer pulls what it is a holder of, not the store).
    pub fn sendable(&self, ring: &Ring, r: usize, member: &PeerId, docs: &[String]) -> Vec<String> {
        docs.iter()
            .filter(|d| {
                let Some(id) = id_of(d) else { return false };
                match self.entries.binary_search_by_key(&id, |e| e.id) {
                    Ok(i) => self.for_member(&self.entries[i], ring, r, member),
                    Err(_) => false,
                }
            })
            .cloned()
            .collect()
    }
}

/// What a copy adds to its bucket's digest: 64 bits of blake3 over its id and fetch time.
pub fn entry_hash(id: u128, fetched_at: u64) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&id.to_be_bytes()).update(&fetched_at.to_le_bytes());
    u64::from_le_bytes(h.finalize().as_bytes()[..8].try_into().expect("8 bytes"))
}

/// The buckets where the other side holds something for this member that differs from what
/// it holds (a bucket only this member has something in is the other's to ask about).
pub fn differing(mine: &[Digest], theirs: &[Digest]) -> Vec<u16> {
    let mine: HashMap<u16, &Digest> = mine.iter().map(|d| (d.bucket, d)).collect();
    let mut out: Vec<u16> =
        theirs.iter().filter(|t| t.count > 0 && mine.get(&t.bucket) != Some(&t)).map(|t| t.bucket).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Of a listing, the ids this member lacks or holds an older fetch of.
pub fn wanted(mine: &HashMap<String, u64>, listed: &[(String, u64)]) -> Vec<String> {
    listed.iter().filter(|(d, at)| mine.get(d).is_none_or(|m| m < at)).map(|(d, _)| d.clone()).collect()
}

/// Why a peer's answer to a comparison was not believed (it is dropped, the round goes on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSync {
    #[error("more than {0} entries")]
    TooMany(usize),
    #[error("bucket {0} out of range or repeated")]
    Bucket(u16),
    #[error("id {0:?} is not in the bucket asked for, or out of order")]
    Id(String),
}

/// Checks a peer's digests: buckets in range, each once, in order.
pub fn check_digests(digests: &[Digest]) -> Result<(), BadSync> {
    if digests.len() > BUCKETS as usize {
        return Err(BadSync::TooMany(BUCKETS as usize));
    }
    let mut last: Option<u16> = None;
    for d in digests {
        if d.bucket >= BUCKETS || last.is_some_and(|l| l >= d.bucket) {
            return Err(BadSync::Bucket(d.bucket));
        }
        last = Some(d.bucket);
    }
    Ok(())
}

/// Checks a peer's page of `bucket` asked for after `after`: at most [`MAX_LIST`] ids, each
/// well formed, in the bucket, past `after` and in increasing order.
pub fn check_listed(bucket: u16, after: Option<&str>, listed: &Listed) -> Result<(), BadSync> {
    if listed.entries.len() > MAX_LIST {
        return Err(BadSync::TooMany(MAX_LIST));
    }
    let mut last = after.and_then(id_of);
    for (doc, _) in &listed.entries {
        let id = id_of(doc).filter(|id| (id >> (64 + SHIFT)) as u16 == bucket && last.is_none_or(|l| l < *id));
        let Some(id) = id else { return Err(BadSync::Id(doc.chars().take(40).collect())) };
        last = Some(id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicas::doc_id;

    fn docs(n: usize) -> Vec<String> {
        (0..n).map(|i| doc_id(&format!("http://h{i}.test/p"))).collect()
    }

    /// What `member` holds on `ring` of `docs` published by `publisher`, at fetch time 100.
    fn holdings(ring: &Ring, member: &PeerId, publisher: &PeerId, docs: &[String]) -> Holdings {
        Holdings::new(
            docs.iter()
                .filter(|d| doc_holders(ring, d, 3, publisher).contains(member) || member == publisher)
                .map(|d| (d.clone(), 100, *publisher)),
        )
    }

    /// A whole comparison as a member runs it against one co-holder: digests, the listing of
    /// each bucket that differs (page by page), the ids wanted.
    fn compare(ring: &Ring, me: &PeerId, mine: &Holdings, theirs: &Holdings) -> Vec<String> {
        let (my, their) = (mine.digests(ring, 3, me), theirs.digests(ring, 3, me));
        check_digests(&their).unwrap();
        let fetched = mine.fetched();
        let mut out = Vec::new();
        for bucket in differing(&my, &their) {
            let mut after: Option<String> = None;
            loop {
                let page = theirs.list(ring, 3, me, bucket, after.as_deref());
                check_listed(bucket, after.as_deref(), &page).unwrap();
                out.extend(wanted(&fetched, &page.entries));
                after = page.entries.last().map(|(d, _)| d.clone());
                if !page.more {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn a_holder_finds_exactly_the_copies_it_lost_and_the_newer_fetches() {
        let members: Vec<PeerId> = (0..6).map(|_| PeerId::random()).collect();
        let ring = Ring::new(members.clone(), 50);
        let publisher = members[0];
        let all = docs(3000);
        let me = members[1];
        let theirs = holdings(&ring, &members[2], &publisher, &all);
        let crawler = holdings(&ring, &publisher, &publisher, &all);
        let full = holdings(&ring, &me, &publisher, &all);
        assert!(full.len() > 1000, "{}", full.len());
        // Nothing lost: the digests agree with every co-holder, nothing is asked for.
        assert!(compare(&ring, &me, &full, &theirs).is_empty());
        assert!(compare(&ring, &me, &full, &crawler).is_empty());
        // Some copies lost, one held at an older fetch: those, and only those, are wanted —
        // from the crawler all of them, from another holder the ones it shares.
        let mut lost: Vec<String> = full.fetched().into_keys().step_by(7).collect();
        lost.sort();
        let (stale, gone) = lost.split_first().unwrap();
        let kept = Holdings::new(full.fetched().into_iter().filter(|(d, _)| !gone.contains(d)).map(|(d, at)| {
            let at = if d == *stale { at - 1 } else { at };
            (d, at, publisher)
        }));
        let mut got = compare(&ring, &me, &kept, &crawler);
        got.sort();
        assert_eq!(got, lost);
        let from_holder = compare(&ring, &me, &kept, &theirs);
        assert!(!from_holder.is_empty());
        assert!(from_holder
            .iter()
            .all(|d| lost.contains(d) && doc_holders(&ring, d, 3, &publisher).contains(&members[2])));
        // A peer is sent only what it holds: another member's share is not sendable to it.
        let not_mine: Vec<String> =
            all.iter().filter(|d| !doc_holders(&ring, d, 3, &publisher).contains(&me)).take(5).cloned().collect();
        assert!(crawler.sendable(&ring, 3, &me, &not_mine).is_empty());
        assert_eq!(crawler.sendable(&ring, 3, &me, &lost).len(), lost.len());
        assert!(crawler.sendable(&ring, 3, &me, &["zz".into()]).is_empty());
    }

    #[test]
    fn a_bucket_is_listed_in_pages_in_id_order() {
        let me = PeerId::random();
        let ring = Ring::new([me, PeerId::random()], 50);
        // 5,000 ids in one bucket: made by hand (blake3 ids spread over all buckets).
        let publisher = PeerId::random();
        let held = Holdings::new((0..5000u128).map(|i| (hex((7u128 << 118) | i * 977), 5, publisher)));
        let digests = held.digests(&ring, 3, &me);
        assert_eq!(digests.len(), 1);
        assert_eq!((digests[0].bucket, digests[0].count), (7, 5000));
        let mut after: Option<String> = None;
        let mut seen = 0;
        loop {
            let page = held.list(&ring, 3, &me, 7, after.as_deref());
            assert!(page.entries.len() <= MAX_LIST);
            check_listed(7, after.as_deref(), &page).unwrap();
            seen += page.entries.len();
            after = page.entries.last().map(|(d, _)| d.clone());
            if !page.more {
                break;
            }
        }
        assert_eq!(seen, 5000);
        assert!(held.list(&ring, 3, &me, 8, None).entries.is_empty());
    }

    #[test]
    fn a_peers_answers_are_checked() {
        let d = |bucket: u16| Digest { bucket, count: 1, hash: 0 };
        assert_eq!(check_digests(&[d(1), d(5)]), Ok(()));
        assert_eq!(check_digests(&[d(5), d(1)]), Err(BadSync::Bucket(1)), "out of order");
        assert_eq!(check_digests(&[d(5), d(5)]), Err(BadSync::Bucket(5)), "twice");
        assert_eq!(check_digests(&[d(BUCKETS)]), Err(BadSync::Bucket(BUCKETS)));
        let id = |b: u128, i: u128| hex((b << 118) | i);
        let page = |ids: Vec<String>| Listed { entries: ids.into_iter().map(|d| (d, 1)).collect(), more: false };
        assert_eq!(check_listed(3, None, &page(vec![id(3, 1), id(3, 2)])), Ok(()));
        assert!(check_listed(3, None, &page(vec![id(4, 1)])).is_err(), "another bucket");
        assert!(check_listed(3, None, &page(vec![id(3, 2), id(3, 1)])).is_err(), "out of order");
        assert!(check_listed(3, Some(&id(3, 5)), &page(vec![id(3, 2)])).is_err(), "before the cursor");
        assert!(check_listed(3, None, &page(vec!["not an id".into()])).is_err());
        assert!(check_listed(3, None, &page(vec![id(3, 1); MAX_LIST + 1])).is_err());
        // Only what the other side holds and differs is a bucket to list.
        let mine = [Digest { bucket: 1, count: 2, hash: 9 }, Digest { bucket: 2, count: 1, hash: 4 }];
        let theirs = [Digest { bucket: 1, count: 2, hash: 9 }, Digest { bucket: 3, count: 1, hash: 4 }];
        assert_eq!(differing(&mine, &theirs), vec![3]);
        assert_eq!(bucket_of(&id(1000, 3)), Some(1000));
        assert_eq!(bucket_of("xyz"), None);
    }
}
