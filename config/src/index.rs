//! The index's settings: the sentence-embedding model and how its vectors, words and documents
//! are kept.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How token vectors become one sentence vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Mean over the tokens the attention mask keeps (sentence-transformers' MiniLM models).
    #[default]
    Mean,
    /// The first token's vector (models trained with CLS pooling).
    Cls,
}

/// The sentence-embedding model. Any ONNX model with BERT-style inputs (`input_ids`,
/// `attention_mask`, optionally `token_type_ids`) and a `[batch, tokens, dims]` output can be
/// swapped in by pointing these at its files. Relative paths are looked for in the installation
/// ([`EmbedConfig::resolve_in`]), never the working directory; `scripts/setup.sh` puts the
/// default files in `models/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedConfig {
    pub model: PathBuf,
    pub tokenizer: PathBuf,
    /// `libonnxruntime.so`, loaded at run time.
    pub ort_library: PathBuf,
    /// Output dimensions of the model.
    pub dims: usize,
    /// Longest input the model reads, special tokens included (MiniLM: 256). Chunks are cut to
    /// fit it, and the tokenizer's own truncation is overridden to it.
    pub max_tokens: usize,
    pub pooling: Pooling,
    /// Threads for indexing and questions (0 = one per core), shared out among `sessions`.
    pub threads: usize,
    /// ONNX Runtime sessions of the model the threads are shared among (at most `threads`).
    /// Each session holds its own copy of the model's weights as ONNX Runtime optimised them
    /// (~92 MiB for the int8 MiniLM) and its own arena of working memory, so each costs a small
    /// box ~100–140 MiB; one session per thread embeds faster than one session running each
    /// inference on all threads (5–7% on an idle box, ~30% on a busy one: `bench_embed`,
    /// docs/src/benchmarks.md).
    pub sessions: usize,
    /// Chunks per inference run at most.
    pub batch_size: usize,
    /// Padded tokens (rows × longest row) per inference run at most: small runs keep the
    /// activations in cache (throughput is flat from 256 to 1024 on 2 cores) and the model's
    /// working memory small, and a question, which shares the indexer's model, stops the
    /// indexer's run or, when that run was stopped once already, waits for it (256 = one full
    /// chunk: a question waited ~40 ms p50 while indexing against ~190 ms at 1024 before runs
    /// were stopped; `embed_sharing`, docs/src/benchmarks.md).
    pub batch_tokens: usize,
}

impl Default for EmbedConfig {
    fn default() -> Self {
        let dir = PathBuf::from("models/all-MiniLM-L6-v2-int8");
        EmbedConfig {
            model: dir.join("model.onnx"),
            tokenizer: dir.join("tokenizer.json"),
            ort_library: PathBuf::from("models/onnxruntime-1.31.1/libonnxruntime.so"),
            dims: 384,
            max_tokens: 256,
            pooling: Pooling::Mean,
            threads: 0,
            sessions: 1,
            batch_size: 32,
            batch_tokens: 256,
        }
    }
}

impl EmbedConfig {
    /// Makes the relative model paths absolute: each becomes the first of `dirs` joined with it
    /// where that file exists, or the first joined with it when none has it (so an error names
    /// where it was looked for). Absolute paths, and everything when `dirs` is empty, stay.
    pub fn resolve_in(&mut self, dirs: &[PathBuf]) {
        let Some(first) = dirs.first() else { return };
        for path in [&mut self.model, &mut self.tokenizer, &mut self.ort_library] {
            if path.is_relative() {
                let found = dirs.iter().map(|d| d.join(&*path)).find(|p| p.is_file());
                *path = found.unwrap_or_else(|| first.join(&*path));
            }
        }
    }
}

/// Scalar type of the stored vectors in the HNSW index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    F32,
    /// Half the memory of f32 with no measurable recall loss for unit vectors.
    #[default]
    F16,
    Bf16,
    I8,
}

/// The local index: chunking, deduplication, vector index and document store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct IndexConfig {
    /// Index what is crawled (off: crawl and extract only).
    pub enabled: bool,
    /// Share of each chunk repeated at the start of the next one.
    pub chunk_overlap: f32,
    /// Prefix each chunk with the page title before embedding.
    pub title_prefix: bool,
    /// Searches fuse a lexical (BM25) ranking of the query's words with the vector ranking
    /// (the cosine plus a reciprocal-rank bonus for the words' rank): names, identifiers and
    /// rare words are what small dense models miss. The lexical index is kept either way.
    pub hybrid: bool,
    /// Pages whose SimHash is within this many bits of an indexed page are recorded as its
    /// aliases instead of being indexed again. 0 ..= 3 (the block tables find at most 3).
    pub dedup_max_distance: u32,
    pub quantization: Quantization,
    /// HNSW links per node (USearch "connectivity").
    pub connectivity: usize,
    /// HNSW candidate list while inserting.
    pub expansion_add: usize,
    /// HNSW candidate list while searching.
    pub expansion_search: usize,
    /// Seconds between vector index snapshots (also written at shutdown).
    pub snapshot_interval_secs: u64,
    /// Extracted pages waiting for the indexer; when full, fetching waits.
    pub queue: usize,
    /// Disk the node's database and vector snapshot, and the copies it holds for others, may
    /// use, MiB (0: no limit). The copies get a quarter at most (see `replica_quota_mb`); over
    /// the rest, the documents fetched longest ago are evicted until the use is back under 90%.
    pub disk_quota_mb: u64,
    /// Seconds between disk-quota checks (sled reclaims freed space lazily, so checks are
    /// spaced to let it catch up).
    pub quota_check_secs: u64,
    /// Members that hold a copy of each indexed document (its metadata, main text and chunk
    /// boundaries) besides the node that fetched it: the owners of the document's id on the
    /// ring. A document stays readable and is not fetched again while one of them is up.
    pub replicas: usize,
    /// Disk the copies held for other members may use, MiB (and at most a quarter of
    /// `disk_quota_mb` when that is set: the copies count under it); past it the copies
    /// farthest from this node's ranges are dropped first.
    pub replica_quota_mb: u64,
    /// Seconds between rounds of comparing the copies held with co-holders (two of them a
    /// round, in turn; also a minute after the member set changes): what a push missed — a
    /// copy lost in flight, evicted, or lost with a disk — is asked for and sent again.
    pub compare_copies_secs: u64,
}

impl Default for IndexConfig {
    fn default() -> Self {
        IndexConfig {
            enabled: true,
            chunk_overlap: 0.15,
            title_prefix: true,
            hybrid: true,
            dedup_max_distance: 3,
            quantization: Quantization::F16,
            connectivity: 16,
            expansion_add: 128,
            expansion_search: 64,
            snapshot_interval_secs: 60,
            queue: 64,
            disk_quota_mb: 0,
            quota_check_secs: 300,
            replicas: 3,
            replica_quota_mb: 2048,
            compare_copies_secs: 300,
        }
    }
}

impl IndexConfig {
    /// Bytes the copies held for other members may take: `replica_quota_mb`, and at most a
    /// quarter of `disk_quota_mb` when that is set (the copies count under the disk quota).
    pub fn replica_bytes(&self) -> u64 {
        let bound = self.replica_quota_mb.saturating_mul(1 << 20);
        match self.disk_quota_mb {
            0 => bound,
            quota => bound.min(quota.saturating_mul(1 << 20) / 4),
        }
    }

    /// The disk quota left to the node's own database and vectors once the copies it holds
    /// (`copies`: it holds some) have their share, bytes; 0 with no disk quota.
    pub fn own_quota_bytes(&self, copies: bool) -> u64 {
        let quota = self.disk_quota_mb.saturating_mul(1 << 20);
        if copies && self.replicas > 0 {
            quota.saturating_sub(self.replica_bytes())
        } else {
            quota
        }
    }
}
