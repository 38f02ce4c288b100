//! What two members compare to find the roster entries one of them lacks, in a few hundred
//! bytes whatever the network's size.
//!
//! Entries are cut into [`BUCKETS`] buckets: [`RECENT`] of [`RECENT_SECS`] by the time of
//! their last change, then [`MID`] of [`MID_SECS`], then the rest by the first four bits of
//! their key. Changes are recent, so two members that differ mostly differ in a recent bucket
//! of a few dozen entries; a newcomer, whose buckets are all empty, is sent the entries
//! outright. The cuts are on whole multiples of the bucket widths and taken at the asker's
//! `now`, so both sides cut the same entries the same way. A bucket's hash is the XOR of its
//! entries' hashes, kept up to date as entries change (see `crate::roster::Roster`).

use serde::{Deserialize, Serialize};

pub const RECENT: usize = 8;
pub const RECENT_SECS: u64 = 8;
pub const MID: usize = 8;
pub const MID_SECS: u64 = 64;
/// Buckets of the older entries, by the top bits of their key.
pub const OLD: usize = 16;
pub const BUCKETS: usize = RECENT + MID + OLD;
/// A digest's or an answer's bucket lists, at most (the rest next time).
pub const MAX_KEYS: usize = 4096;

/// The hash of one entry: its key and version.
pub fn entry_hash(key: u64, version: u64) -> u64 {
    mix(key ^ mix(version ^ 0x9e37_79b9_7f4a_7c15))
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The old bucket of a key.
pub fn old_bucket(key: u64) -> usize {
    (key >> 60) as usize
}

/// The keys of old bucket `b`: `[start, end]`.
pub fn old_range(b: usize) -> (u64, u64) {
    let start = (b as u64) << 60;
    (start, start | ((1u64 << 60) - 1))
}

/// Where the time buckets are cut at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cuts {
    /// Descending: time bucket `i` holds `[cuts[i + 1], cuts[i])`; bucket 0 has no upper end.
    cuts: [u64; RECENT + MID + 1],
}

impl Cuts {
    pub fn at(now: u64) -> Cuts {
        let mut cuts = [0u64; RECENT + MID + 1];
        cuts[0] = u64::MAX;
        let recent = now / RECENT_SECS * RECENT_SECS;
        for (i, cut) in cuts.iter_mut().enumerate().take(RECENT + 1).skip(1) {
            *cut = recent.saturating_sub((i as u64 - 1) * RECENT_SECS);
        }
        let mid = cuts[RECENT] / MID_SECS * MID_SECS;
        for i in 0..MID {
            cuts[RECENT + 1 + i] = mid.saturating_sub(i as u64 * MID_SECS);
        }
        // The first mid bucket may be empty (when the recent span ends on a multiple).
        Cuts { cuts }
    }

    /// Entries changed at or after this are in time buckets; older ones by key.
    pub fn old_before(&self) -> u64 {
        self.cuts[RECENT + MID]
    }

    /// The bucket of an entry changed at `at` with key `key`.
    pub fn bucket(&self, at: u64, key: u64) -> usize {
        if at < self.old_before() {
            return RECENT + MID + old_bucket(key);
        }
        (1..=RECENT + MID).find(|i| at >= self.cuts[*i]).map_or(RECENT + MID - 1, |i| i - 1)
    }

    /// The times of time bucket `b`: `[from, until)`.
    pub fn span(&self, b: usize) -> (u64, u64) {
        (self.cuts[b + 1], self.cuts[b])
    }
}

/// One side's bucket hashes, cut at its `now`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Digest {
    pub now: u64,
    pub hashes: Vec<u64>,
}

/// The keys and versions of one bucket's entries.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct BucketKeys {
    pub bucket: u8,
    pub keys: Vec<(u64, u64)>,
}

#[cfg(test)]
mod tests {
    use super::{old_bucket, Cuts, MID, MID_SECS, OLD, RECENT, RECENT_SECS};

    #[test]
    fn every_time_falls_in_one_bucket_and_newer_ones_in_lower_buckets() {
        for now in [1_780_000_000u64, 1_780_000_007, 1_780_000_064, 1_780_000_100] {
            let cuts = Cuts::at(now);
            let mut last = usize::MAX;
            for ago in (0..2_000u64).rev() {
                let b = cuts.bucket(now - ago, 7);
                assert!(b <= last || last >= RECENT + MID, "{ago}s ago in {b} after {last}");
                last = b;
                if b < RECENT + MID {
                    let (from, until) = cuts.span(b);
                    assert!((from..until).contains(&(now - ago)));
                }
            }
            assert_eq!(cuts.bucket(now + 50, 0), 0, "a clock ahead lands in the newest bucket");
            assert!(now - cuts.old_before() >= (RECENT as u64 - 1) * RECENT_SECS + (MID as u64 - 1) * MID_SECS);
        }
        assert_eq!(old_bucket(u64::MAX), OLD - 1);
        assert_eq!(old_bucket(0), 0);
    }
}
