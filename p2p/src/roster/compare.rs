//! Anti-entropy: two members compare their rosters by [`Digest`] and send each other the
//! entries one lacks ([`Roster::answer`], [`Roster::follow_up`], [`Roster::events_for`]); a node
//! with an empty roster pulls it in pages first ([`Roster::snapshot`]).

use super::digest::{entry_hash, old_bucket, old_range, BucketKeys, Cuts, Digest, BUCKETS, MAX_KEYS, MID, RECENT};
use super::event::Event;
use super::{Entry, Roster, ANSWER_BYTES, TOMBSTONE_FOR};
use std::collections::HashMap;

impl Roster {
    /// Whether an entry counts in digests at `now` (a departure past its time no longer does).
    pub(super) fn counted(e: &Entry, now: u64) -> bool {
        !(e.gone() && e.event.at + TOMBSTONE_FOR <= now)
    }

    /// This roster's digest at `now`.
    pub fn digest(&self, now: u64) -> Digest {
        let cuts = Cuts::at(now);
        let mut hashes = vec![0u64; BUCKETS];
        hashes[RECENT + MID..].copy_from_slice(&self.xor);
        for (at, key) in self.by_time.range((cuts.old_before(), 0)..) {
            let h = entry_hash(*key, self.entries[key].version());
            hashes[cuts.bucket(*at, *key)] ^= h;
            hashes[RECENT + MID + old_bucket(*key)] ^= h;
        }
        for (_, key) in self.tombstones.range(..(now.saturating_sub(TOMBSTONE_FOR).saturating_add(1), 0)) {
            let e = &self.entries[key];
            if !Self::counted(e, now) {
                hashes[RECENT + MID + old_bucket(*key)] ^= entry_hash(*key, e.version());
            }
        }
        Digest { now, hashes }
    }

    /// The entries of bucket `b` when cut at `now`.
    fn bucket(&self, b: usize, now: u64) -> Vec<(u64, &Entry)> {
        let cuts = Cuts::at(now);
        let found: Vec<(u64, &Entry)> = if b < RECENT + MID {
            let (from, until) = cuts.span(b);
            self.by_time.range((from, 0)..(until, 0)).map(|(_, k)| (*k, &self.entries[k])).collect()
        } else {
            let (start, end) = old_range(b - RECENT - MID);
            self.entries
                .range(start..=end)
                .filter(|(_, e)| e.event.at < cuts.old_before())
                .map(|(k, e)| (*k, e))
                .collect()
        };
        found.into_iter().filter(|(_, e)| Self::counted(e, now)).collect()
    }

    /// The answer to `theirs`: for each bucket that differs, this roster's keys and versions —
    /// or, where theirs is empty, its entries outright, up to [`ANSWER_BYTES`].
    ///
    /// An entry that changed lately sits in a time bucket on the side that has the change and
    /// in an old bucket on the side that does not, so while time buckets differ the old ones
    /// differ too, for nothing: their keys (a sixteenth of the roster each) are sent only once
    /// every time bucket agrees — the recent past first, then what is older.
    pub fn answer(&self, theirs: &Digest) -> Answer {
        let mine = self.digest(theirs.now);
        let mut answer = Answer::default();
        let mut bytes = 0;
        let n = BUCKETS.min(theirs.hashes.len());
        let recent_differ = (0..n.min(RECENT + MID)).any(|b| mine.hashes[b] != theirs.hashes[b]);
        for b in 0..n {
            if mine.hashes[b] == theirs.hashes[b] || (recent_differ && b >= RECENT + MID && theirs.hashes[b] != 0) {
                continue;
            }
            let entries = self.bucket(b, theirs.now);
            if theirs.hashes[b] == 0 {
                for (_, e) in entries {
                    if bytes >= ANSWER_BYTES {
                        break;
                    }
                    bytes += e.event.encode().len();
                    answer.events.push(e.event.as_ref().clone());
                }
            } else {
                let keys = entries.iter().map(|(k, e)| (*k, e.version())).take(MAX_KEYS).collect();
                answer.keys.push(BucketKeys { bucket: b as u8, keys });
            }
        }
        answer
    }

    /// What the asker sends back on `answer` to its digest at `now`: the entries the other
    /// lacks or holds older, and the keys it wants.
    pub fn follow_up(&self, answer: &Answer, now: u64) -> FollowUp {
        let mut up = FollowUp::default();
        let mut bytes = 0;
        for bucket in answer.keys.iter().take(BUCKETS) {
            let theirs: HashMap<u64, u64> = bucket.keys.iter().take(MAX_KEYS).copied().collect();
            for (key, e) in self.bucket(usize::from(bucket.bucket), now) {
                if theirs.get(&key).is_none_or(|v| *v < e.version()) && bytes < ANSWER_BYTES {
                    bytes += e.event.encode().len();
                    up.events.push(e.event.as_ref().clone());
                }
            }
            for (key, version) in &bucket.keys {
                if self.entries.get(key).is_none_or(|e| e.version() < *version) {
                    up.want.push(*key);
                }
            }
        }
        up.want.truncate(MAX_KEYS);
        up
    }

    /// The entries of `keys` this roster holds, up to [`ANSWER_BYTES`].
    pub fn events_for(&self, keys: &[u64]) -> Vec<Event> {
        let mut bytes = 0;
        let mut out = Vec::new();
        for key in keys.iter().take(MAX_KEYS) {
            if let Some(e) = self.entries.get(key) {
                if bytes >= ANSWER_BYTES {
                    break;
                }
                bytes += e.event.encode().len();
                out.push(e.event.as_ref().clone());
            }
        }
        out
    }

    /// A page of the roster in key order, after `after` (from the start for `None`), up to
    /// [`ANSWER_BYTES`], and where the next page starts. A node with an empty roster pulls it
    /// this way before it compares digests: a digest's key lists would cost it the keys of
    /// every member at every round.
    pub fn snapshot(&self, after: Option<u64>, now: u64) -> Snapshot {
        let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        let mut page = Snapshot::default();
        let mut bytes = 0;
        for (key, e) in self.entries.range((from, std::ops::Bound::Unbounded)) {
            if bytes >= ANSWER_BYTES {
                page.next = Some(page.last);
                break;
            }
            page.last = *key;
            if Self::counted(e, now) {
                bytes += e.event.encode().len();
                page.events.push(e.event.as_ref().clone());
            }
        }
        page
    }
}

/// The answer to a digest.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub keys: Vec<BucketKeys>,
    pub events: Vec<Event>,
}

/// A page of the roster (see [`Roster::snapshot`]).
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub events: Vec<Event>,
    /// The key of the page's last entry, and where the next page starts (none: the last page).
    pub last: u64,
    pub next: Option<u64>,
}

/// The asker's entries the other lacks, and the keys it wants from it.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct FollowUp {
    pub events: Vec<Event>,
    pub want: Vec<u64>,
}
