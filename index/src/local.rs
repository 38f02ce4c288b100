//! [`LocalIndex`]: the document store and the vector index as one thing that commits
//! documents and answers queries.

use crate::store::{DocStore, NewChunk};
use crate::vectors::{Opened, VectorIndex};
use crate::{DocId, DocRecord, DocState, IndexError};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use weft_config::IndexConfig;

/// Snippets are cut to about this many characters.
const SNIPPET_CHARS: usize = 320;
/// Recent failures kept for `/status`.
const RECENT_FAILURES: usize = 20;

/// One search result: a document, with its best-matching chunk as the snippet.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Hit {
    pub url: String,
    pub title: String,
    pub snippet: String,
    /// Cosine similarity of the query and the best chunk.
    pub score: f32,
    /// Which chunk of the document matched best.
    pub chunk: u32,
    /// Other URLs with (nearly) the same text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// The document's SimHash (merging results across nodes folds near duplicates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash: Option<u64>,
    /// What the page says of itself: who wrote it, when (RFC 3339), its canonical URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
}

/// What the index holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct IndexStats {
    pub documents: u64,
    pub aliases: u64,
    pub failed: u64,
    pub chunks: u64,
    pub vectors: u64,
    pub vector_memory_bytes: u64,
    /// The latest failures: url and reason.
    pub recent_failures: Vec<(String, String)>,
}

#[derive(Default)]
struct Counts {
    indexed: u64,
    aliases: u64,
    failed: u64,
    recent_failures: VecDeque<(String, String)>,
}

impl Counts {
    fn add(&mut self, state: &DocState, sign: i64) {
        let c = match state {
            DocState::Indexed => &mut self.indexed,
            DocState::Alias { .. } => &mut self.aliases,
            DocState::Failed { .. } => &mut self.failed,
        };
        *c = c.saturating_add_signed(sign);
    }
}

/// The local index.
pub struct LocalIndex {
    store: DocStore,
    vectors: VectorIndex,
    opened: Opened,
    /// Serializes commits: replacing a document touches sled and the HNSW index in turn.
    counts: Mutex<Counts>,
}

impl LocalIndex {
    /// Opens the index stored in `db` and `dir` (the data dir), rebuilding the vector index
    /// from the store if its snapshot is missing or stale.
    pub fn open(db: &sled::Db, dir: &Path, dims: usize, config: &IndexConfig) -> Result<LocalIndex, IndexError> {
        let store = DocStore::open(db)?;
        let (vectors, opened) = VectorIndex::open(dir, dims, config, &store)?;
        let mut counts = Counts::default();
        for entry in store.docs() {
            let (_, record) = entry?;
            counts.add(&record.state, 1);
        }
        Ok(LocalIndex { store, vectors, opened, counts: Mutex::new(counts) })
    }

    pub fn store(&self) -> &DocStore {
        &self.store
    }

    pub fn vectors(&self) -> &VectorIndex {
        &self.vectors
    }

    /// How the vector index was opened (loaded, new, or rebuilt and why).
    pub fn opened(&self) -> &Opened {
        &self.opened
    }

    /// Stores a document and its chunks, replacing its previous version everywhere.
    pub fn commit(&self, id: DocId, record: &DocRecord, chunks: Vec<NewChunk>) -> Result<(), IndexError> {
        let mut counts = self.counts.lock();
        let replaced = self.store.put(id, record, &chunks)?;
        for key in &replaced.removed {
            self.vectors.remove(*key)?;
        }
        for c in &chunks {
            self.vectors.add(c.key, &c.vector)?;
        }
        if let Some(old) = &replaced.old_state {
            counts.add(old, -1);
        }
        counts.add(&record.state, 1);
        if let DocState::Failed { reason } = &record.state {
            if counts.recent_failures.len() == RECENT_FAILURES {
                counts.recent_failures.pop_front();
            }
            counts.recent_failures.push_back((record.url.clone(), reason.clone()));
        }
        Ok(())
    }

    /// Removes a document everywhere (sled and the HNSW index); says whether it was there.
    pub fn remove(&self, id: DocId) -> Result<bool, IndexError> {
        let mut counts = self.counts.lock();
        let Some(old) = self.store.remove(id)? else { return Ok(false) };
        for key in &old.chunks {
            self.vectors.remove(*key)?;
        }
        counts.add(&old.state, -1);
        Ok(true)
    }

    /// The `n` documents fetched longest ago, oldest first: what a disk quota evicts.
    pub fn oldest(&self, n: usize) -> Result<Vec<(DocId, DocRecord)>, IndexError> {
        let mut all: Vec<(u64, DocId)> = Vec::new();
        for entry in self.store.docs() {
            let (id, record) = entry?;
            all.push((record.fetched_at, id));
        }
        all.sort_by_key(|(at, id)| (*at, id.0));
        let mut out = Vec::with_capacity(n.min(all.len()));
        for (_, id) in all.into_iter().take(n) {
            if let Some(record) = self.store.doc(&id)? {
                out.push((id, record));
            }
        }
        Ok(out)
    }

    /// The stored record of `url`.
    pub fn document(&self, url: &str) -> Result<Option<DocRecord>, IndexError> {
        self.store.doc(&DocId::of_url(url))
    }

    /// The `k` documents whose chunks are nearest to `query` (a unit vector), best first.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<Hit>, IndexError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        // Several chunks of one document can crowd the top; ask for more and group.
        let candidates = self.vectors.search(query, (k * 5).max(50))?;
        let mut best: Vec<(DocId, u64, f32)> = Vec::new();
        let mut seen: HashMap<DocId, ()> = HashMap::new();
        for (key, score) in candidates {
            let Some(chunk) = self.store.chunk(key)? else { continue };
            if seen.insert(chunk.doc, ()).is_none() {
                best.push((chunk.doc, key, score));
                if best.len() == k {
                    break;
                }
            }
        }
        let mut hits = Vec::with_capacity(best.len());
        for (doc, key, score) in best {
            let (Some(record), Some(chunk)) = (self.store.doc(&doc)?, self.store.chunk(key)?) else { continue };
            hits.push(Hit {
                url: record.url,
                title: record.title,
                snippet: snippet(&chunk.text()?),
                score,
                chunk: chunk.position,
                aliases: record.aliases,
                simhash: record.simhash,
                author: record.author,
                published: record.published,
                modified: record.modified,
                canonical: record.canonical,
            });
        }
        Ok(hits)
    }

    /// Writes the vector snapshot if anything changed; returns whether it wrote.
    pub fn snapshot(&self) -> Result<bool, IndexError> {
        self.store.flush()?;
        self.vectors.snapshot()
    }

    pub fn stats(&self) -> IndexStats {
        let counts = self.counts.lock();
        IndexStats {
            documents: counts.indexed,
            aliases: counts.aliases,
            failed: counts.failed,
            chunks: self.store.chunk_count() as u64,
            vectors: self.vectors.len() as u64,
            vector_memory_bytes: self.vectors.memory_usage() as u64,
            recent_failures: counts.recent_failures.iter().cloned().collect(),
        }
    }
}

/// The first ~320 characters of a chunk, cut at a word.
fn snippet(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= SNIPPET_CHARS {
        return text.to_string();
    }
    let cut = text.char_indices().nth(SNIPPET_CHARS).map_or(text.len(), |(i, _)| i);
    let head = &text[..cut];
    let head = head.rfind(char::is_whitespace).filter(|&i| i > cut / 2).map_or(head, |i| &head[..i]);
    format!("{}…", head.trim_end())
}

#[cfg(test)]
mod tests {
    #[test]
    fn snippets_are_cut_at_words() {
        let s = super::snippet(&"alpha beta ".repeat(100));
        assert!(s.ends_with("beta…") || s.ends_with("alpha…"), "{s}");
        assert!(s.chars().count() <= 321);
        assert_eq!(super::snippet("  short  "), "short");
    }
}
