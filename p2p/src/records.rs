//! Network-wide near-duplicates: every indexed document's 64-bit SimHash is published in the
//! DHT under its four 16-bit pigeonhole blocks, so a node about to index a page can ask "has
//! anyone indexed something within 3 bits of this?" with at most four lookups — any match
//! within 3 bits shares at least one block exactly. (Not the ~41,664 lookups of asking for every
//! fingerprint within 3 bit flips.)
//!
//! Many documents share a block value, so a record holds a short list of entries; publishers
//! read, merge and write it back. A lost race only costs a missed duplicate, never data.

use serde::{Deserialize, Serialize};

/// Entries a record keeps (the most recent).
pub const MAX_ENTRIES: usize = 16;
/// Largest record value accepted.
pub const MAX_RECORD_BYTES: usize = 8 * 1024;

/// One indexed document, as the network knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DupEntry {
    pub simhash: u64,
    pub url: String,
    /// Peer id of the node that indexed it.
    pub peer: String,
    /// Seconds since the Unix epoch.
    pub time: u64,
}

/// What every near-duplicate record key starts with: a node stores only records under its
/// own namespaces, in their own shape ([`is_key`], [`decode_strict`]).
pub const KEY_PREFIX: &[u8] = b"weft/simhash/1/";

/// The DHT key of block `index` (0..4, most significant first) with value `block`:
/// [`KEY_PREFIX`] ‖ index ‖ block (big-endian). Kademlia places a key by its SHA-256, so the
/// key itself need not look random.
pub fn block_key(index: u8, block: u16) -> Vec<u8> {
    let mut key = KEY_PREFIX.to_vec();
    key.push(index);
    key.extend_from_slice(&block.to_be_bytes());
    key
}

/// Whether `key` is a near-duplicate record key ([`block_key`]).
pub fn is_key(key: &[u8]) -> bool {
    key.len() == KEY_PREFIX.len() + 3 && key.starts_with(KEY_PREFIX) && key[KEY_PREFIX.len()] < 4
}

/// Why a record a peer asked this node to store was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("not a Weft record key")]
    Key,
    #[error("record of {0} bytes is over the {MAX_RECORD_BYTES}-byte cap")]
    TooLarge(usize),
    #[error("record value is not a list of 1 to {MAX_ENTRIES} entries")]
    Shape,
}

/// A record value as a peer sent it to be stored: it must be exactly what [`encode`] makes —
/// 1 to [`MAX_ENTRIES`] entries, each with a bounded URL and peer id.
pub fn decode_strict(key: &[u8], bytes: &[u8]) -> Result<Vec<DupEntry>, RecordError> {
    if !is_key(key) {
        return Err(RecordError::Key);
    }
    if bytes.len() > MAX_RECORD_BYTES {
        return Err(RecordError::TooLarge(bytes.len()));
    }
    let entries: Vec<DupEntry> = cbor4ii::serde::from_slice(bytes).map_err(|_| RecordError::Shape)?;
    let fits = |e: &DupEntry| e.url.len() <= 2048 && e.peer.len() <= 128;
    if entries.is_empty() || entries.len() > MAX_ENTRIES || !entries.iter().all(fits) {
        return Err(RecordError::Shape);
    }
    Ok(entries)
}

/// The four keys of a fingerprint.
pub fn keys(hash: u64) -> [Vec<u8>; 4] {
    let b = |i: u32| (hash >> (48 - 16 * i)) as u16;
    [block_key(0, b(0)), block_key(1, b(1)), block_key(2, b(2)), block_key(3, b(3))]
}

pub fn encode(entries: &[DupEntry]) -> Vec<u8> {
    cbor4ii::serde::to_vec(Vec::new(), &entries).expect("entries encode")
}

/// Decodes a record value; anything malformed or oversized is no entries.
pub fn decode(bytes: &[u8]) -> Vec<DupEntry> {
    if bytes.len() > MAX_RECORD_BYTES {
        return Vec::new();
    }
    let mut entries: Vec<DupEntry> = cbor4ii::serde::from_slice(bytes).unwrap_or_default();
    entries.retain(|e| e.url.len() <= 2048 && e.peer.len() <= 128);
    entries.truncate(MAX_ENTRIES);
    entries
}

/// `entries` with `new` added (replacing an older entry for the same URL), newest kept.
pub fn merge(mut entries: Vec<DupEntry>, new: DupEntry) -> Vec<DupEntry> {
    entries.retain(|e| e.url != new.url);
    entries.push(new);
    entries.sort_by(|a, b| b.time.cmp(&a.time).then_with(|| a.url.cmp(&b.url)));
    entries.dedup_by(|a, b| a.url == b.url);
    entries.truncate(MAX_ENTRIES);
    while encode(&entries).len() > MAX_RECORD_BYTES && entries.len() > 1 {
        entries.pop();
    }
    entries
}

/// The entry nearest to `hash` within `max_distance` bits, other than `url` itself.
pub fn nearest<'a>(
    entries: impl IntoIterator<Item = &'a DupEntry>,
    hash: u64,
    max_distance: u32,
    url: &str,
) -> Option<(DupEntry, u32)> {
    entries
        .into_iter()
        .filter(|e| e.url != url)
        .map(|e| (e, (e.simhash ^ hash).count_ones()))
        .filter(|(_, d)| *d <= max_distance)
        .min_by(|(a, da), (b, db)| da.cmp(db).then_with(|| a.time.cmp(&b.time)))
        .map(|(e, d)| (e.clone(), d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(url: &str, simhash: u64, time: u64) -> DupEntry {
        DupEntry { simhash, url: url.into(), peer: "p".into(), time }
    }

    #[test]
    fn a_fingerprint_within_three_bits_shares_a_key() {
        let h = 0xdead_beef_0123_4567u64;
        let near = h ^ (1 << 3) ^ (1 << 20) ^ (1 << 40);
        let (a, b) = (keys(h), keys(near));
        assert!(a.iter().zip(&b).any(|(x, y)| x == y));
        assert!(keys(!h).iter().zip(&a).all(|(x, y)| x != y));
        assert_eq!(a[0], block_key(0, 0xdead));
    }

    #[test]
    fn records_merge_cap_and_survive_garbage() {
        let mut e = Vec::new();
        for i in 0..40 {
            e = merge(e, entry(&format!("http://a.test/{i}"), i, i));
        }
        assert_eq!(e.len(), MAX_ENTRIES);
        assert_eq!(e[0].url, "http://a.test/39", "newest first");
        let e2 = merge(e.clone(), entry("http://a.test/39", 7, 100));
        assert_eq!(e2.len(), MAX_ENTRIES, "same URL replaced, not added");
        assert_eq!(decode(&encode(&e2)), e2);
        assert!(decode(b"\xff garbage").is_empty());
        assert!(decode(&vec![0u8; MAX_RECORD_BYTES + 1]).is_empty());
    }

    #[test]
    fn only_weft_keys_and_values_of_their_shape_are_stored_for_others() {
        let key = block_key(2, 0xbeef);
        assert!(is_key(&key) && !is_key(&block_key(4, 1)) && !is_key(b"weft/simhash/1/\x00\x00"));
        assert!(!is_key(&[0u8; 32]), "a random 32-byte key (what the flood used)");
        let good = encode(&[entry("http://a.test/1", 1, 1)]);
        assert_eq!(decode_strict(&key, &good).unwrap().len(), 1);
        assert_eq!(decode_strict(&[7u8; 32], &good), Err(RecordError::Key));
        assert_eq!(
            decode_strict(&key, &vec![0u8; MAX_RECORD_BYTES + 1]),
            Err(RecordError::TooLarge(MAX_RECORD_BYTES + 1))
        );
        assert_eq!(decode_strict(&key, b"\xff garbage"), Err(RecordError::Shape));
        assert_eq!(decode_strict(&key, &encode(&[])), Err(RecordError::Shape));
        let many: Vec<DupEntry> = (0..MAX_ENTRIES + 1).map(|i| entry(&format!("http://a.test/{i}"), 1, 1)).collect();
        assert_eq!(decode_strict(&key, &encode(&many)), Err(RecordError::Shape));
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
    }
}
