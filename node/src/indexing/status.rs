//! The index section of `/status`: what the index holds, what this run did, and what the cell
//! store holds for the cells this node owns.

use serde::{Deserialize, Serialize};
use weft_index::IndexStats;

/// A document just indexed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecentDocument {
    pub url: String,
    pub title: String,
    pub chunks: usize,
    pub unix_ms: u64,
}

/// The index section of `/status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexStatus {
    /// What the index holds (all runs).
    #[serde(flatten)]
    pub stored: IndexStats,
    /// Pages indexed in this run (re-indexed ones included), and how many replaced a version.
    pub pages_indexed: u64,
    pub pages_replaced: u64,
    pub pages_aliased: u64,
    pub pages_failed: u64,
    /// Pages re-indexed with the reference extractor's better text.
    pub pages_improved: u64,
    pub chunks_embedded: u64,
    /// Chunks per second of indexing-thread time (dedup, chunking, embedding, commit).
    pub chunks_per_sec: f64,
    /// Pages waiting for the indexer.
    pub queue: u64,
    /// Documents evicted by the disk quota in this run.
    #[serde(default)]
    pub evicted: u64,
    pub queries: u64,
    /// The embedding model's id (16 hex digits of blake3 of the model file): vectors compare
    /// only between nodes with the same one.
    #[serde(default)]
    pub model: String,
    /// What the embedding model's sessions took from the heap when they loaded, bytes
    /// (`embed.sessions` copies of the weights).
    #[serde(default)]
    pub model_memory_bytes: u64,
    /// Runs of the indexer stopped so that a question could use the model at once; each was
    /// run again after (`Embedder::set_yielding`).
    #[serde(default)]
    pub runs_yielded: u64,
    /// Extracting the pages held again with this build's extractor, from their kept responses.
    #[serde(default)]
    pub reextraction: crate::reextract::ReextractionStatus,
    /// What the cell store holds for the cells this node owns (semantic placement): documents,
    /// chunks and the bytes of their vectors in memory. `None` without the network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<CellsHeld>,
}

/// See [`IndexStatus::cells`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CellsHeld {
    pub documents: u64,
    pub chunks: u64,
    pub vector_memory_bytes: u64,
    /// Its document store in memory.
    #[serde(default)]
    pub store_memory_bytes: u64,
    /// Chunks refused since the start because their publisher or their cell was over its
    /// quota here.
    pub over_quota: u64,
    /// Copies of other members' documents held for the ids this node owns, and their bytes
    /// (`index.replicas`, bounded by `index.replica_quota_mb`).
    #[serde(default)]
    pub copies: u64,
    #[serde(default)]
    pub copy_bytes: u64,
    /// Copies refused since the start for the bound or a publisher's quota.
    #[serde(default)]
    pub copies_refused: u64,
    /// Copies evicted since the start to make room, under the bound, for copies of ids this
    /// node stands nearer to (the farthest first).
    #[serde(default)]
    pub copies_evicted: u64,
    /// What repair after changes of the member set has sent.
    #[serde(default)]
    pub repair: crate::replicas::RepairStatus,
}
