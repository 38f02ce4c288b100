//! [`LocalIndex`]: the document store and the vector index as one thing that commits
//! documents and answers queries.

use crate::lexical::{LexicalIndex, Rebuilt};
use crate::store::{DocStore, NewChunk};
use crate::vectors::{Opened, VectorIndex};
use crate::{DocId, DocRecord, DocState, IndexError};
use parking_lot::Mutex;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use weft_config::IndexConfig;
use weft_page::PageMeta;
use weft_page::PeerName;
use weft_vecmath::dot;

/// Snippets are cut to about this many characters.
const SNIPPET_CHARS: usize = 320;
/// Recent failures kept for `/status`.
const RECENT_FAILURES: usize = 20;

/// One search result: a document, with its best-matching chunk as the snippet.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Hit {
    /// The page's address and what it says of itself (its fields sit at the hit's top level).
    #[serde(flatten)]
    pub page: PageMeta,
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
    /// The document's rank (1 = best) by BM25 on the node that holds it, when the query's words
    /// matched it: with `score`, what [`fuse`] orders by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexical_rank: Option<u32>,
    /// Answered from postings (semantic placement): the cell of the network's codebook the
    /// chunk was posted to, and the peer that crawled the page. `None` for this node's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawled_by: Option<PeerName>,
}

/// How a ranking by meaning (cosine) and a ranking by words (BM25 rank) become one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Textbook reciprocal rank fusion: 1 / (k + rank) in each list, summed. Blind to how far
    /// apart the cosines are, so a page the words rank first overtakes a page the meaning
    /// puts far ahead (measured: a sixth of the topic web's paraphrased questions lost).
    Rrf { k: f32 },
    /// The cosine plus `weight` / lexical rank: the words' first place is worth `weight` of
    /// cosine, their second half that. It settles near-ties in meaning — where identifiers
    /// and names live, the dense model seeing `work_mem` and `maintenance_work_mem` alike —
    /// and cannot overturn a clear lead in meaning.
    CosinePlusRank { weight: f32 },
}

impl Fusion {
    /// What searches use: see `simnet/examples/hybrid.rs` for the measurements behind it.
    pub const DEFAULT: Fusion = Fusion::CosinePlusRank { weight: 0.1 };
}

/// [`Fusion::CosinePlusRank`]'s value of one hit: its cosine plus `weight` over its words'
/// rank (a rank below 1 counts as 1).
fn cosine_plus_rank(cosine: f32, lexical_rank: Option<u32>, weight: f32) -> f32 {
    cosine + lexical_rank.map_or(0.0, |r| weight / r.max(1) as f32)
}

impl Hit {
    /// The value results are ordered by ([`Fusion::DEFAULT`]: the cosine plus the words'
    /// share), which is what a reader should see beside them: shown alone, the cosine of a
    /// result the words lifted is lower than the one below it.
    pub fn rank_score(&self) -> f32 {
        match Fusion::DEFAULT {
            Fusion::CosinePlusRank { weight } => cosine_plus_rank(self.score, self.lexical_rank, weight),
            // RRF's value depends on where a hit stands among the others, not on the hit.
            Fusion::Rrf { .. } => self.score,
        }
    }
}

/// Orders hits by fusing two rankings — by `score` (cosine: comparable across nodes) and by
/// `lexical_rank` (each node's BM25 rank for the query's words) — best first. Without
/// lexical ranks this is the cosine order.
pub fn fuse<T>(
    hits: Vec<T>,
    fusion: Fusion,
    score: impl Fn(&T) -> f32,
    lexical_rank: impl Fn(&T) -> Option<u32>,
) -> Vec<T> {
    let mut by_score: Vec<usize> = (0..hits.len()).collect();
    by_score.sort_by(|&a, &b| score(&hits[b]).total_cmp(&score(&hits[a])));
    let mut fused = vec![0f32; hits.len()];
    for (rank, &i) in by_score.iter().enumerate() {
        let lexical = lexical_rank(&hits[i]);
        fused[i] = match fusion {
            Fusion::Rrf { k } => 1.0 / (k + rank as f32 + 1.0) + lexical.map_or(0.0, |r| 1.0 / (k + r.max(1) as f32)),
            Fusion::CosinePlusRank { weight } => cosine_plus_rank(score(&hits[i]), lexical, weight),
        };
    }
    let mut ranked: Vec<(f32, f32, T)> = hits.into_iter().zip(fused).map(|(h, f)| (f, score(&h), h)).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.total_cmp(&a.1)));
    ranked.into_iter().map(|(_, _, h)| h).collect()
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
    /// The document store in memory ([`weft_db::LsmMemory`]: block cache, pinned blocks,
    /// write buffer).
    #[serde(default)]
    pub store_memory_bytes: u64,
    /// The vector index's sealed segments (searched from disk), the vectors masked in them,
    /// and its files' bytes on disk.
    #[serde(default)]
    pub vector_segments: u64,
    #[serde(default)]
    pub vectors_masked: u64,
    #[serde(default)]
    pub vector_disk_bytes: u64,
    /// Chunks in the lexical (BM25) index, and its size on disk.
    #[serde(default)]
    pub lexical_chunks: u64,
    #[serde(default)]
    pub lexical_bytes: u64,
    /// The latest failures: url and reason.
    pub recent_failures: Vec<(String, String)>,
}

/// The latest failures (url, reason): what `/status` shows beside the store's counts.
#[derive(Default)]
struct Counts {
    recent_failures: VecDeque<(String, String)>,
}

/// The local index.
pub struct LocalIndex {
    store: DocStore,
    vectors: VectorIndex,
    opened: Opened,
    lexical: LexicalIndex,
    lexical_rebuilt: Option<Rebuilt>,
    /// Serializes commits (replacing a document touches the document store, the HNSW index and
    /// the lexical index in turn) and keeps the latest failures; the counts are the store's.
    counts: Mutex<Counts>,
    /// The step a snapshot is in, while one runs ([`LocalIndex::snapshot_step`]).
    snapshot_step: Mutex<Option<&'static str>>,
}

impl LocalIndex {
    /// Opens the index stored in `dir` (the data dir), rebuilding the vector index from the
    /// store if its snapshot is missing or stale. `db` is the node's sled database, where an
    /// earlier release kept the documents: they are moved out of it when found there.
    pub fn open(db: &sled::Db, dir: &Path, dims: usize, config: &IndexConfig) -> Result<LocalIndex, IndexError> {
        let store = DocStore::open(dir, db)?;
        let (vectors, opened) = VectorIndex::open(dir, dims, config, &store)?;
        let (lexical, lexical_rebuilt) = LexicalIndex::open(dir, &store)?;
        if let Some(why) = &lexical_rebuilt {
            tracing::info!(chunks = lexical.len(), "lexical index rebuilt from the store: {why:?}");
        }
        Ok(LocalIndex {
            store,
            vectors,
            opened,
            lexical,
            lexical_rebuilt,
            counts: Mutex::new(Counts::default()),
            snapshot_step: Mutex::new(None),
        })
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

    pub fn lexical(&self) -> &LexicalIndex {
        &self.lexical
    }

    /// Why the lexical index was rebuilt when opened (`None`: loaded as it was).
    pub fn lexical_rebuilt(&self) -> Option<&Rebuilt> {
        self.lexical_rebuilt.as_ref()
    }

    /// Makes the lexical index's writes since the last call searchable and durable (the
    /// indexer calls it after each batch: a tantivy commit per document would be slow).
    pub fn sync(&self) -> Result<(), IndexError> {
        self.lexical.commit()
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
        let texts = chunks.iter().map(|c| Ok((c.key, c.record.text()?))).collect::<Result<Vec<_>, IndexError>>()?;
        let texts: Vec<(u64, &str)> = texts.iter().map(|(k, t)| (*k, t.as_str())).collect();
        self.lexical.replace(&id, &record.title, &texts)?;
        if let DocState::Failed { reason } = &record.state {
            if counts.recent_failures.len() == RECENT_FAILURES {
                counts.recent_failures.pop_front();
            }
            counts.recent_failures.push_back((record.url.clone(), reason.clone()));
        }
        Ok(())
    }

    /// Removes a document everywhere (the document store, the HNSW and lexical indexes); says
    /// whether it was there.
    pub fn remove(&self, id: DocId) -> Result<bool, IndexError> {
        let _serial = self.counts.lock();
        let Some(old) = self.store.remove(id)? else { return Ok(false) };
        for key in &old.chunks {
            self.vectors.remove(*key)?;
        }
        self.lexical.remove(&id);
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
            hits.extend(self.hit(&doc, key, score)?);
        }
        Ok(hits)
    }

    /// A result: document `doc`, its chunk `key` as the snippet.
    fn hit(&self, doc: &DocId, key: u64, score: f32) -> Result<Option<Hit>, IndexError> {
        let (Some(record), Some(chunk)) = (self.store.doc(doc)?, self.store.chunk(key)?) else { return Ok(None) };
        Ok(Some(Hit {
            page: record.page(),
            snippet: snippet(&chunk.text()?),
            score,
            chunk: chunk.position,
            aliases: record.aliases,
            simhash: record.simhash,
            lexical_rank: None,
            cell: None,
            crawled_by: None,
        }))
    }

    /// The `k` best documents for a query by meaning (`vector`, a unit vector) and by its words
    /// (`text`, BM25), fused ([`Fusion::DEFAULT`]). A document only the words found gets the
    /// cosine of its best word-matching chunk as its score, so scores stay comparable across
    /// nodes.
    pub fn search_hybrid(&self, text: &str, vector: &[f32], k: usize) -> Result<Vec<Hit>, IndexError> {
        self.search_fused(text, vector, k, Fusion::DEFAULT)
    }

    /// [`LocalIndex::search_hybrid`] with another [`Fusion`] (to compare them).
    pub fn search_fused(&self, text: &str, vector: &[f32], k: usize, fusion: Fusion) -> Result<Vec<Hit>, IndexError> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let depth = (2 * k).max(10);
        let mut hits = self.search(vector, depth)?;
        let mut ranked_docs: Vec<DocId> = Vec::new();
        for (key, _) in self.lexical.search(text, depth * 3)? {
            let Some(chunk) = self.store.chunk(key)? else { continue };
            if ranked_docs.contains(&chunk.doc) {
                continue;
            }
            ranked_docs.push(chunk.doc);
            let rank = ranked_docs.len() as u32;
            let url = self.store.doc(&chunk.doc)?.map(|r| r.url);
            match hits.iter_mut().find(|h| Some(&h.page.url) == url.as_ref()) {
                Some(h) => h.lexical_rank = Some(rank),
                None => {
                    let cosine = self.store.vector(key)?.map_or(0.0, |v| dot(&v, vector));
                    if let Some(mut h) = self.hit(&chunk.doc, key, cosine)? {
                        h.lexical_rank = Some(rank);
                        hits.push(h);
                    }
                }
            }
            if ranked_docs.len() == depth {
                break;
            }
        }
        let mut fused = fuse(hits, fusion, |h| h.score, |h| h.lexical_rank);
        fused.truncate(k);
        Ok(fused)
    }

    /// Writes the vector snapshot if anything changed; returns whether it wrote. A vector
    /// segment mostly masked is compacted here too (one per snapshot).
    ///
    /// Each step is logged when it starts (debug) and when it took over [`SLOW_STEP`] (warn), so
    /// that a snapshot which outlasts the node's storage bound names the step it was in.
    pub fn snapshot(&self) -> Result<bool, IndexError> {
        let result = (|| {
            self.step("syncing the document store", || self.store.flush())?;
            self.step("committing the lexical index", || self.lexical.commit())?;
            let wrote = self.step("writing the vector snapshot", || self.vectors.snapshot())?;
            if self.step("compacting a masked vector segment", || self.vectors.compact(&self.store))? {
                self.step("writing the vector snapshot", || self.vectors.snapshot())?;
            }
            Ok(wrote)
        })();
        *self.snapshot_step.lock() = None;
        result
    }

    /// Merges small vector segments if there are enough of them
    /// ([`crate::vectors::VectorIndex::merge_small`]); returns whether it merged. Apart from
    /// [`LocalIndex::snapshot`]: a merge is CPU work of up to ~20 s, not a storage step.
    pub fn merge_segments(&self) -> Result<bool, IndexError> {
        self.vectors.merge_small()
    }

    /// The step a snapshot is in while one runs: what a caller that stopped waiting for it
    /// reports.
    pub fn snapshot_step(&self) -> Option<&'static str> {
        *self.snapshot_step.lock()
    }

    fn step<T>(&self, what: &'static str, run: impl FnOnce() -> Result<T, IndexError>) -> Result<T, IndexError> {
        *self.snapshot_step.lock() = Some(what);
        tracing::debug!("index snapshot: {what}");
        let started = std::time::Instant::now();
        let result = run();
        if started.elapsed() >= SLOW_STEP {
            tracing::warn!(secs = started.elapsed().as_secs_f32(), "index snapshot: {what} was slow");
        }
        result
    }

    pub fn stats(&self) -> IndexStats {
        let counts = self.counts.lock();
        let stored = self.store.doc_counts();
        IndexStats {
            documents: stored.indexed,
            aliases: stored.aliases,
            failed: stored.failed,
            chunks: self.store.chunk_count() as u64,
            vectors: self.vectors.len() as u64,
            vector_memory_bytes: self.vectors.memory_usage() as u64,
            store_memory_bytes: self.store.memory().total(),
            vector_segments: self.vectors.segments().0 as u64,
            vectors_masked: self.vectors.segments().1 as u64,
            vector_disk_bytes: self.vectors.disk_bytes(),
            lexical_chunks: self.lexical.len(),
            lexical_bytes: self.lexical.disk_bytes(),
            recent_failures: counts.recent_failures.iter().cloned().collect(),
        }
    }
}

/// A snapshot step taking longer than this is logged.
const SLOW_STEP: std::time::Duration = std::time::Duration::from_secs(5);

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

    /// The demo once printed 0.37, 0.38, 0.40 down its list: the cosines of hits the words had
    /// reordered. The figure a hit shows is the one it is ordered by.
    #[test]
    fn the_shown_score_is_the_one_hits_are_ordered_by() {
        let hit = |url: &str, score: f32, lexical_rank: Option<u32>| super::Hit {
            page: weft_page::PageMeta { url: url.into(), ..Default::default() },
            snippet: String::new(),
            score,
            chunk: 0,
            aliases: Vec::new(),
            simhash: None,
            lexical_rank,
            cell: None,
            crawled_by: None,
        };
        let hits = vec![hit("a", 0.40, None), hit("b", 0.38, Some(2)), hit("c", 0.37, Some(1)), hit("d", 0.2, None)];
        let fused = super::fuse(hits, super::Fusion::DEFAULT, |h| h.score, |h| h.lexical_rank);
        let order: Vec<&str> = fused.iter().map(|h| h.page.url.as_str()).collect();
        assert_eq!(order, ["c", "b", "a", "d"], "the words lift c and b over a");
        let shown: Vec<f32> = fused.iter().map(super::Hit::rank_score).collect();
        assert!(shown.windows(2).all(|w| w[0] >= w[1]), "{shown:?}");
        assert!((shown[0] - 0.47).abs() < 1e-6 && (shown[2] - 0.40).abs() < 1e-6, "{shown:?}");
    }

    #[test]
    fn words_settle_near_ties_in_meaning_and_cannot_overturn_a_clear_lead() {
        use super::{fuse, Fusion};
        let order = |hits: &[(&'static str, f32, Option<u32>)], fusion| -> Vec<&'static str> {
            fuse(hits.to_vec(), fusion, |h| h.1, |h| h.2).into_iter().map(|h| h.0).collect()
        };
        // `work_mem` and `maintenance_work_mem` alike to the model; the words tell them apart.
        let near_tie = [("maintenance_work_mem", 0.593, Some(2)), ("work_mem", 0.572, Some(1)), ("other", 0.55, None)];
        assert_eq!(order(&near_tie, Fusion::DEFAULT), ["work_mem", "maintenance_work_mem", "other"]);
        // The meaning far ahead, the words matching a function word elsewhere: kept first by
        // default, overturned by textbook RRF.
        let lead = [("tides", 0.61, None), ("kayaking", 0.25, Some(1)), ("sql-do", 0.12, Some(2))];
        assert_eq!(order(&lead, Fusion::DEFAULT), ["tides", "kayaking", "sql-do"]);
        assert_eq!(order(&lead, Fusion::Rrf { k: 60.0 })[0], "kayaking");
        // No words matched: the cosine order.
        let plain = [("b", 0.2, None), ("a", 0.9, None), ("c", 0.5, None)];
        assert_eq!(order(&plain, Fusion::DEFAULT), ["a", "c", "b"]);
    }
}
