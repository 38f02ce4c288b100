//! Where a new document's near duplicates are looked for, and what the network is told.
//!
//! The index owns near-duplicate detection. A document's SimHash is computed once, where the
//! document is made ([`Document::fingerprinted`]). This node's own tables are asked first (no
//! round trip). Then the network's are asked, through [`NetworkDuplicates`], which the node
//! implements over the DHT (this crate does no network I/O). At commit, the indexer checks the
//! local tables and its own batch again, because another document may have arrived meanwhile.
//! A document it indexes has its fingerprint published the same way.

use crate::{DocId, Document, LocalIndex, Outcome};

/// The network's side of near-duplicate detection.
pub trait NetworkDuplicates: Send + Sync {
    /// A document indexed by another node within `max_distance` bits of `simhash`, other than
    /// `url`: its URL and the distance. Blocking, and bounded by the implementation.
    fn find(&self, simhash: u64, max_distance: u32, url: &str) -> Option<(String, u32)>;

    /// Tells the network that this node indexed `url`, whose text has `simhash`.
    fn publish(&self, simhash: u64, url: &str, fetched_at: u64);
}

/// The document indexed elsewhere in the network that `doc` nearly duplicates, if any. `None`
/// when dedup is off (`max_distance` 0), when the document has no fingerprint (call
/// [`Document::fingerprinted`] first), or when a document indexed here is near enough: the
/// indexer records that alias itself when it commits, and the network is not asked.
pub fn remote_duplicate(
    index: &LocalIndex,
    doc: &Document,
    max_distance: u32,
    network: &dyn NetworkDuplicates,
) -> Option<(String, u32)> {
    let hash = doc.simhash.filter(|_| max_distance > 0)?;
    let local = index.store().near_duplicate(hash, max_distance, &DocId::of_url(&doc.url));
    if matches!(local, Ok(Some(_))) {
        return None;
    }
    network.find(hash, max_distance, &doc.url)
}

/// Publishes the fingerprint of a document this node indexed (not an alias, not a failure;
/// nothing with dedup off).
pub fn publish_indexed(
    network: &dyn NetworkDuplicates,
    max_distance: u32,
    outcome: &Outcome,
    simhash: Option<u64>,
    url: &str,
    fetched_at: u64,
) {
    if let (Outcome::Indexed { .. }, Some(hash), true) = (outcome, simhash, max_distance > 0) {
        network.publish(hash, url, fetched_at);
    }
}
