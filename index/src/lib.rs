//! The local index of a Weft node: what turns crawled pages into something searchable by
//! meaning.
//!
//! Pages flow one way through it: [`Indexer::index`] takes extracted documents, finds near
//! duplicates ([`dedup`]: SimHash over word 3-grams, pigeonhole block tables), cuts the rest
//! into model-sized chunks ([`chunk`]), embeds them ([`embed`]: all-MiniLM-L6-v2 through ONNX
//! Runtime) and commits documents, chunks and vectors ([`store`]: fjall; [`vectors`]: USearch
//! HNSW; [`lexical`]: tantivy BM25 over the same chunks). [`LocalIndex::search`] embeds nothing
//! itself: it takes a query vector — and, for [`LocalIndex::search_hybrid`], the query's words —
//! and returns documents, best chunk first. The vector index keeps its newest vectors in memory
//! and seals the rest into [`segments`] searched from disk, so its memory does not grow with it.
//!
//! The document store is the source of truth — it holds every chunk's text *and* vector — and the USearch
//! files are snapshots of an index that can always be rebuilt from it. That is what makes the
//! vector index crash-safe without a journal: on open, the snapshot is checked against the store and
//! caught up with it (rebuilt when a part cannot be read). The lexical index is a cache of the store in the same way.
//!
//! [`cells::CellStore`] is a second such index, of what other nodes published to the cells of
//! the embedding space this node owns (semantic placement: see `weft_p2p::placement`); beside
//! it, in its database, [`replicas::ReplicaStore`] holds whole copies of the documents whose
//! ids this node owns (see `weft_p2p::replicas`).
//!
//! Module order (each module uses only those before it; `tests/architecture/tests/module_graph.rs`
//! checks it): dedup, kmeans, segments, testing, tokenizer → chunk, embed, store → documents,
//! lexical, vectors → indexer, local, replicas → cells, duplicates.

pub mod cells;
pub mod chunk;
pub mod dedup;
pub mod documents;
pub mod duplicates;
pub mod embed;
mod indexer;
pub mod kmeans;
pub mod lexical;
mod local;
pub mod replicas;
pub mod segments;
pub mod store;
pub mod tokenizer;
pub mod vectors;

#[doc(hidden)]
pub mod testing;

pub use chunk::{Chunker, Span};
pub use documents::{DocumentMeta, DocumentPage, DocumentView, Listing};
pub use embed::Embedder;
pub use indexer::{Document, Indexer, Outcome};
pub use local::{fuse, Fusion, Hit, IndexStats, LocalIndex};
pub use store::{DocRecord, DocState};
pub use weft_page::{PageFacts, PageMeta, PeerName};

use std::fmt;
use std::path::Path;

/// Identifies a document: the first 16 bytes of blake3 of its normalized URL.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct DocId(pub [u8; 16]);

impl DocId {
    pub fn of_url(url: &str) -> DocId {
        let hash = blake3::hash(url.as_bytes());
        let mut id = [0u8; 16];
        id.copy_from_slice(&hash.as_bytes()[..16]);
        DocId(id)
    }

    /// The key of this document's chunk at `position`: blake3 of document id and position,
    /// cut to the 64 bits a USearch key holds. Stable: re-crawling a page reuses its keys.
    pub fn chunk_key(&self, position: u32) -> u64 {
        let mut h = blake3::Hasher::new();
        h.update(&self.0);
        h.update(&position.to_le_bytes());
        let mut key = [0u8; 8];
        key.copy_from_slice(&h.finalize().as_bytes()[..8]);
        u64::from_le_bytes(key)
    }

    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Debug for DocId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DocId({})", self.hex())
    }
}

/// Bytes the files under `dir` take on disk, its subdirectories' included (0 when it is
/// missing): what the index's stores report for the disk quota and `/status`.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// Everything that can go wrong in the index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A model file is missing; the message says how to get it.
    #[error("{0}")]
    Missing(String),
    #[error("embedding model: {0}")]
    Model(String),
    #[error("tokenizer: {0}")]
    Tokenize(String),
    #[error("inference failed: {0}")]
    Inference(String),
    #[error("vector index: {0}")]
    Vectors(String),
    #[error("lexical index: {0}")]
    Lexical(String),
    #[error("node database: {0}")]
    Store(#[from] sled::Error),
    #[error("document store: {0}")]
    Documents(#[from] fjall::Error),
    #[error("corrupt record in the document store: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl IndexError {
    pub(crate) fn missing(what: &str, key: &str, path: &Path) -> IndexError {
        IndexError::Missing(format!(
            "{what} not found at {}: run scripts/setup.sh (it fetches the model files into models/), set {key}, \
             or set index.enabled = false to crawl without indexing",
            path.display()
        ))
    }

    /// A short stable name for counters.
    pub fn kind(&self) -> &'static str {
        match self {
            IndexError::Missing(_) => "missing_model",
            IndexError::Model(_) => "model",
            IndexError::Tokenize(_) => "tokenize",
            IndexError::Inference(_) => "inference",
            IndexError::Vectors(_) => "vectors",
            IndexError::Lexical(_) => "lexical",
            IndexError::Store(_) | IndexError::Documents(_) => "store",
            IndexError::Corrupt(_) => "corrupt",
            IndexError::Io(_) => "io",
        }
    }
}
