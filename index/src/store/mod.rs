//! The document store: what each document is, what its chunks say, their vectors, the
//! SimHash block tables and the pages' links, in an LSM tree ([fjall], `<dir>/documents`).
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `docs` | doc id (16 bytes) | [`DocRecord`]: url, title, metadata, fetched_at, simhash, chunk keys, state |
//! | `chunks` | chunk key (u64 BE) | [`ChunkRecord`]: doc id, position, previous/next chunk keys, byte range, LZ4-compressed text |
//! | `vectors` | chunk key (u64 BE) | the chunk's unit vector as little-endian f16 |
//! | `simhash` | block position, block value, doc id | the full fingerprint |
//! | `links` | doc id | the page's outbound links (postcard) |
//!
//! Replacing a document is one atomic write batch over all the keyspaces: its old chunks,
//! vectors and block entries go in the same step as the new ones arrive, so a crash can never
//! leave orphans. Writes are serialised by the store (a batch is built from what the document
//! had before). Vectors are kept here (768 bytes per chunk at f16) so that the HNSW index is a
//! cache that can always be rebuilt.
//!
//! # Why not sled
//! These trees were in sled until measured: sled's memory follows its database's size whatever
//! its cache is set to (its page table only grows, spacejam/sled#852, and it remembers every
//! page it paged out, #1093). 150,000 one-chunk documents written as the indexer writes them
//! took sled from 33 to 74 MiB anonymous (32 MiB cache) and 26 to 45 (4 MiB), still rising;
//! this store took 20 to 34 MiB, then 55 at 500,000 (~0.03 KiB a document once its cache is
//! full), and wrote the 150,000 in 19 s against sled's ~4 minutes
//! (`index/examples/store_drift.rs`, docs/src/benchmarks.md). A node that indexes for months
//! must not carry that growth. A store written by an earlier release is moved over from sled
//! when first opened ([`legacy`]).
//!
//! # Durability
//! Every batch reaches the operating system before `put` returns (fjall's journal is written,
//! not synced), so a killed process loses nothing; [`DocStore::flush`] syncs for power loss.

pub mod legacy;

use crate::dedup::{self, BLOCKS};
use crate::{DocId, IndexError};
use fjall::{Database, Keyspace, OwnedWriteBatch, PersistMode};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What became of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DocState {
    /// Chunked, embedded and searchable.
    Indexed,
    /// A near duplicate of `canonical` (within `distance` SimHash bits): recorded, not embedded.
    Alias { canonical: DocId, distance: u32 },
    /// Embedding failed twice; the reason is kept for `/status`.
    Failed { reason: String },
}

/// A document as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocRecord {
    pub url: String,
    pub title: String,
    pub description: Option<String>,
    pub language: Option<String>,
    pub site_name: Option<String>,
    pub published: Option<String>,
    pub page_type: Option<String>,
    /// Seconds since the Unix epoch.
    pub fetched_at: u64,
    pub word_count: u32,
    pub simhash: Option<u64>,
    /// Keys of the chunks, in document order (empty unless indexed).
    pub chunks: Vec<u64>,
    pub state: DocState,
    /// URLs recorded as near duplicates of this document.
    pub aliases: Vec<String>,
    // Added after the first release: records written before have none (see `decode_doc`).
    /// Last modified, RFC 3339.
    pub modified: Option<String>,
    pub author: Option<String>,
    /// The URL the page names as canonical.
    pub canonical: Option<String>,
}

impl DocRecord {
    /// Its description, language, site name and page type, as views and copies carry them.
    pub fn facts(&self) -> weft_page::PageFacts {
        weft_page::PageFacts {
            description: self.description.clone(),
            language: self.language.clone(),
            site: self.site_name.clone(),
            page_type: self.page_type.clone(),
        }
    }

    /// The page's address and what it says of itself, as hits, views and exports carry it.
    pub fn page(&self) -> weft_page::PageMeta {
        weft_page::PageMeta {
            url: self.url.clone(),
            title: self.title.clone(),
            canonical: self.canonical.clone(),
            author: self.author.clone(),
            published: self.published.clone(),
            modified: self.modified.clone(),
        }
    }
}

/// A document as the first release stored it: read, never written.
#[derive(Deserialize)]
#[cfg_attr(test, derive(Serialize))]
struct DocRecordV1 {
    url: String,
    title: String,
    description: Option<String>,
    language: Option<String>,
    site_name: Option<String>,
    published: Option<String>,
    page_type: Option<String>,
    fetched_at: u64,
    word_count: u32,
    simhash: Option<u64>,
    chunks: Vec<u64>,
    state: DocState,
    aliases: Vec<String>,
}

/// Decodes a stored document, of this release or of the first (postcard has no optional
/// trailing fields: a first-release record is too short for this layout, so it fails first).
fn decode_doc(bytes: &[u8]) -> Result<DocRecord, IndexError> {
    decode::<DocRecord>(bytes, "document").or_else(|e| {
        let Ok(v1) = postcard::from_bytes::<DocRecordV1>(bytes) else { return Err(e) };
        Ok(DocRecord {
            url: v1.url,
            title: v1.title,
            description: v1.description,
            language: v1.language,
            site_name: v1.site_name,
            published: v1.published,
            page_type: v1.page_type,
            fetched_at: v1.fetched_at,
            word_count: v1.word_count,
            simhash: v1.simhash,
            chunks: v1.chunks,
            state: v1.state,
            aliases: v1.aliases,
            modified: None,
            author: None,
            canonical: None,
        })
    })
}

/// A chunk as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkRecord {
    pub doc: DocId,
    pub position: u32,
    /// Keys of the chunks before and after this one in the document (context for a hit).
    pub prev: Option<u64>,
    pub next: Option<u64>,
    /// Byte range in the document's main text.
    pub start: u32,
    pub end: u32,
    pub tokens: u32,
    text_lz4: Vec<u8>,
}

impl ChunkRecord {
    pub fn new(doc: DocId, position: u32, start: usize, end: usize, tokens: usize, text: &str) -> ChunkRecord {
        ChunkRecord {
            doc,
            position,
            prev: None,
            next: None,
            start: start as u32,
            end: end as u32,
            tokens: tokens as u32,
            text_lz4: lz4_flex::compress_prepend_size(text.as_bytes()),
        }
    }

    pub fn text(&self) -> Result<String, IndexError> {
        let bytes = lz4_flex::decompress_size_prepended(&self.text_lz4)
            .map_err(|e| IndexError::Corrupt(format!("chunk text: {e}")))?;
        String::from_utf8(bytes).map_err(|e| IndexError::Corrupt(format!("chunk text: {e}")))
    }
}

/// A chunk ready to be stored: key, record and vector.
pub struct NewChunk {
    pub key: u64,
    pub record: ChunkRecord,
    pub vector: Vec<f32>,
}

/// The index's documents. Cheap to clone (handles).
#[derive(Clone)]
pub struct DocStore {
    db: Database,
    docs: Keyspace,
    chunks: Keyspace,
    vectors: Keyspace,
    blocks: Keyspace,
    /// Document id → the page's outbound links (postcard): what a copy of the document carries,
    /// so that a member that indexes it from the copy instead of fetching it (its crawler
    /// gone) still follows the page's links.
    links: Keyspace,
    meta: Keyspace,
    path: PathBuf,
    /// Held while a batch is built and committed: a batch is computed from what the document
    /// had before, and fjall's batches do not check that it is still so.
    write: Arc<Mutex<()>>,
    /// Documents stored by state ([`DocCounts`]) and chunks stored, counted when opened and
    /// kept with each batch (fjall's `len` reads every key).
    counts: Arc<[AtomicU64; 4]>,
    /// Writes counted, syncs coalesced: see [`DocStore::flush`].
    syncs: Arc<weft_db::Syncs>,
    /// The SimHash blocks and links fill their memtables slowly: written out by age
    /// ([`weft_db::MemtableAge`]), checked at each sync.
    aging: Arc<weft_db::MemtableAge>,
}

/// The store's directory under the index's directory.
pub const DIR: &str = "documents";
/// fjall's block cache for the documents: hits, context chunks and near-duplicate lookups
/// read through it, the rest through the kernel's page cache. Those reads land anywhere in the
/// store, so a cache serves few of them again: a larger one keeps filling long after the node
/// looks settled, for reads the kernel's cache answers in microseconds.
const CACHE_BYTES: u64 = 4 << 20;
/// The memtable of one keyspace: with the cache, what the store holds in memory (six
/// keyspaces, most of them written little).
const MEMTABLE_BYTES: u64 = 4 << 20;
/// The journal may hold this much before memtables are flushed (fjall's least).
const JOURNAL_BYTES: u64 = 64 << 20;
/// The `meta` key that says a store written by an earlier release (in sled) was moved here.
const MOVED_FROM_SLED: &[u8] = b"moved-from-sled";

/// Bytes the store under `dir` (the index's directory) takes on disk, open or not.
pub fn disk_bytes(dir: &Path) -> u64 {
    crate::dir_bytes(&dir.join(DIR))
}

/// Documents stored, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DocCounts {
    pub indexed: u64,
    pub aliases: u64,
    pub failed: u64,
}

/// Links kept per document, at most (a page's first ones: navigation and content alike).
pub const MAX_LINKS: usize = 500;

/// What a [`DocStore::put`] replaced.
#[derive(Debug, Default)]
pub struct Replaced {
    /// Chunk keys the document had before and no longer has.
    pub removed: Vec<u64>,
    /// The document's state before, if it existed.
    pub old_state: Option<DocState>,
}

fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("records always serialize")
}

fn decode<'a, T: Deserialize<'a>>(bytes: &'a [u8], what: &str) -> Result<T, IndexError> {
    postcard::from_bytes(bytes).map_err(|e| IndexError::Corrupt(format!("{what}: {e}")))
}

fn block_key(position: usize, block: u16, doc: &DocId) -> [u8; 19] {
    let mut k = [0u8; 19];
    k[0] = position as u8;
    k[1..3].copy_from_slice(&block.to_be_bytes());
    k[3..].copy_from_slice(&doc.0);
    k
}

/// Little-endian f16 bytes of a vector.
pub fn vector_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| half::f16::from_f32(*x).to_le_bytes()).collect()
}

/// The vector stored as [`vector_bytes`].
pub fn vector_from_bytes(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()
}

impl DocStore {
    /// Opens (or creates) the store under `dir`, the index's directory. A store that an
    /// earlier release kept in `legacy` (sled trees `index.*`) is moved over first, once.
    pub fn open(dir: &Path, legacy: &sled::Db) -> Result<DocStore, IndexError> {
        let path = dir.join(DIR);
        std::fs::create_dir_all(&path)?;
        let db = Database::builder(&path).cache_size(CACHE_BYTES).max_journaling_size(JOURNAL_BYTES).open()?;
        let ks = |name: &str| db.keyspace(name, || weft_db::keyspace_options(MEMTABLE_BYTES));
        let store = DocStore {
            docs: ks("docs")?,
            chunks: ks("chunks")?,
            vectors: ks("vectors")?,
            blocks: ks("simhash")?,
            links: ks("links")?,
            meta: ks("meta")?,
            db,
            path,
            write: Arc::new(Mutex::new(())),
            counts: Arc::default(),
            syncs: Arc::default(),
            aging: Arc::default(),
        };
        legacy::move_from_sled(&store, legacy)?;
        for item in store.docs_after(None) {
            let (_, record) = item?;
            store.count(&[(Some(&record.state), 1)], record.chunks.len() as i64);
        }
        Ok(store)
    }

    /// Keeps the outbound links of document `id` (the first [`MAX_LINKS`]), replacing any.
    pub fn set_links(&self, id: &DocId, links: &[String]) -> Result<(), IndexError> {
        let links = &links[..links.len().min(MAX_LINKS)];
        self.links.insert(id.0, encode(&links))?;
        self.syncs.wrote();
        Ok(())
    }

    /// The outbound links kept for document `id` (none for a document indexed before links
    /// were kept).
    pub fn links(&self, id: &DocId) -> Result<Vec<String>, IndexError> {
        Ok(self.links.get(id.0)?.map(|b| decode(&b, "links")).transpose()?.unwrap_or_default())
    }

    pub fn doc(&self, id: &DocId) -> Result<Option<DocRecord>, IndexError> {
        self.docs.get(id.0)?.map(|b| decode_doc(&b)).transpose()
    }

    pub fn chunk(&self, key: u64) -> Result<Option<ChunkRecord>, IndexError> {
        self.chunks.get(key.to_be_bytes())?.map(|b| decode(&b, "chunk")).transpose()
    }

    pub fn vector(&self, key: u64) -> Result<Option<Vec<f32>>, IndexError> {
        Ok(self.vectors.get(key.to_be_bytes())?.map(|b| vector_from_bytes(&b)))
    }

    /// Every stored vector, for rebuilding the HNSW index.
    pub fn vectors(&self) -> impl Iterator<Item = Result<(u64, Vec<f32>), IndexError>> + '_ {
        self.vectors.iter().map(|item| {
            let (k, v) = item.into_inner()?;
            let key = u64::from_be_bytes(k.as_ref().try_into().map_err(|_| IndexError::Corrupt("vector key".into()))?);
            Ok((key, vector_from_bytes(&v)))
        })
    }

    /// What the store holds in memory ([`weft_db::LsmMemory`]).
    pub fn memory(&self) -> weft_db::LsmMemory {
        weft_db::LsmMemory::of(&self.db, &self.keyspaces())
    }

    fn keyspaces(&self) -> [&Keyspace; 6] {
        [&self.docs, &self.chunks, &self.vectors, &self.blocks, &self.links, &self.meta]
    }

    /// Documents stored, by state.
    pub fn doc_counts(&self) -> DocCounts {
        let n = |i: usize| self.counts[i].load(Ordering::Relaxed);
        DocCounts { indexed: n(0), aliases: n(1), failed: n(2) }
    }

    /// Documents stored (indexed, aliases and failed alike).
    pub fn doc_count(&self) -> usize {
        let c = self.doc_counts();
        (c.indexed + c.aliases + c.failed) as usize
    }

    /// Chunks stored (each with its vector).
    pub fn chunk_count(&self) -> usize {
        self.counts[3].load(Ordering::Relaxed) as usize
    }

    /// Whether a vector is stored under `key` (without reading it).
    pub fn has_vector(&self, key: u64) -> bool {
        self.vectors.contains_key(key.to_be_bytes()).unwrap_or(false)
    }

    pub fn vector_count(&self) -> usize {
        self.chunk_count()
    }

    /// Every document record (for statistics).
    pub fn docs(&self) -> impl Iterator<Item = Result<(DocId, DocRecord), IndexError>> + '_ {
        self.docs_after(None)
    }

    /// The document records in key order, after `after` when given (paging a listing).
    pub fn docs_after(
        &self,
        after: Option<&DocId>,
    ) -> impl Iterator<Item = Result<(DocId, DocRecord), IndexError>> + '_ {
        let items = match after {
            Some(a) => self.docs.range::<&[u8], _>((std::ops::Bound::Excluded(&a.0[..]), std::ops::Bound::Unbounded)),
            None => self.docs.iter(),
        };
        items.map(|item| {
            let (k, v) = item.into_inner()?;
            let id = DocId(k.as_ref().try_into().map_err(|_| IndexError::Corrupt("document key".into()))?);
            Ok((id, decode_doc(&v)?))
        })
    }

    /// The indexed document nearest to `hash` within `max_distance` bits, other than `except`.
    pub fn near_duplicate(
        &self,
        hash: u64,
        max_distance: u32,
        except: &DocId,
    ) -> Result<Option<(DocId, u32)>, IndexError> {
        let mut best: Option<(DocId, u32)> = None;
        for (position, block) in dedup::blocks(hash).into_iter().enumerate() {
            let mut prefix = [0u8; 3];
            prefix[0] = position as u8;
            prefix[1..].copy_from_slice(&block.to_be_bytes());
            for entry in self.blocks.prefix(prefix) {
                let (k, v) = entry.into_inner()?;
                let doc = DocId(k[3..].try_into().map_err(|_| IndexError::Corrupt("simhash key".into()))?);
                let other =
                    u64::from_be_bytes(v.as_ref().try_into().map_err(|_| IndexError::Corrupt("simhash".into()))?);
                let d = dedup::distance(hash, other);
                if doc != *except && d <= max_distance && best.is_none_or(|(_, bd)| d < bd) {
                    best = Some((doc, d));
                }
            }
        }
        Ok(best)
    }

    /// Stores `record` under `id` with `chunks`, replacing whatever the document had before,
    /// all in one batch. An alias is added to its canonical document's alias list.
    pub fn put(&self, id: DocId, record: &DocRecord, chunks: &[NewChunk]) -> Result<Replaced, IndexError> {
        let _write = self.write.lock();
        // A batch applies its writes under one sequence number, so a key must appear in it
        // once: what is written again is not also removed.
        let new_keys: HashSet<u64> = chunks.iter().map(|c| c.key).collect();
        let mut batch = self.db.batch();
        let mut replaced = Replaced::default();
        let mut record = record.clone();
        let new_blocks = indexed_blocks(record.simhash, &record.state, &id);
        let mut stored = 0i64;
        if let Some(old) = self.doc(&id)? {
            // Aliases recorded against this document stay with it across re-crawls.
            for alias in old.aliases {
                if !record.aliases.contains(&alias) && alias != record.url {
                    record.aliases.push(alias);
                }
            }
            replaced.old_state = Some(old.state.clone());
            for key in &old.chunks {
                if !new_keys.contains(key) {
                    self.remove_chunk(&mut batch, *key, &mut stored)?;
                    replaced.removed.push(*key);
                }
            }
            for block in indexed_blocks(old.simhash, &old.state, &id) {
                if !new_blocks.contains(&block) {
                    batch.remove(&self.blocks, block.to_vec());
                }
            }
        }
        for c in chunks {
            if !self.chunks.contains_key(c.key.to_be_bytes())? {
                stored += 1;
            }
            batch.insert(&self.chunks, c.key.to_be_bytes(), encode(&c.record));
            batch.insert(&self.vectors, c.key.to_be_bytes(), vector_bytes(&c.vector));
        }
        if let Some(hash) = record.simhash {
            for block in &new_blocks {
                batch.insert(&self.blocks, block.to_vec(), hash.to_be_bytes());
            }
        }
        if let DocState::Alias { canonical, .. } = &record.state {
            if *canonical != id {
                if let Some(mut c) = self.doc(canonical)? {
                    if !c.aliases.contains(&record.url) {
                        c.aliases.push(record.url.clone());
                        batch.insert(&self.docs, canonical.0, encode(&c));
                    }
                }
            }
        }
        batch.insert(&self.docs, id.0, encode(&record));
        self.commit(batch, &[(replaced.old_state.as_ref(), -1), (Some(&record.state), 1)], stored)?;
        Ok(replaced)
    }

    /// Removes a document with its chunks, vectors, SimHash blocks and links in one batch;
    /// returns its record (`None` if there was none). Aliases recorded against it stay (as
    /// records without chunks).
    pub fn remove(&self, id: DocId) -> Result<Option<DocRecord>, IndexError> {
        let _write = self.write.lock();
        let Some(old) = self.doc(&id)? else { return Ok(None) };
        let mut batch = self.db.batch();
        let mut stored = 0i64;
        for key in &old.chunks {
            self.remove_chunk(&mut batch, *key, &mut stored)?;
        }
        for block in indexed_blocks(old.simhash, &old.state, &id) {
            batch.remove(&self.blocks, block.to_vec());
        }
        batch.remove(&self.docs, id.0);
        batch.remove(&self.links, id.0);
        self.commit(batch, &[(Some(&old.state), -1)], stored)?;
        Ok(Some(old))
    }

    /// Removes chunk `key` and its vector in `batch`, counting it in `stored` if it was there.
    fn remove_chunk(&self, batch: &mut OwnedWriteBatch, key: u64, stored: &mut i64) -> Result<(), IndexError> {
        if self.chunks.contains_key(key.to_be_bytes())? {
            *stored -= 1;
        }
        batch.remove(&self.chunks, key.to_be_bytes());
        batch.remove(&self.vectors, key.to_be_bytes());
        Ok(())
    }

    /// Commits `batch` and moves the counts by what it changed: documents in a state (gone:
    /// -1, arrived: +1) and chunks.
    fn commit(
        &self,
        batch: OwnedWriteBatch,
        states: &[(Option<&DocState>, i64)],
        chunks: i64,
    ) -> Result<(), IndexError> {
        batch.commit()?;
        self.syncs.wrote();
        self.count(states, chunks);
        Ok(())
    }

    fn count(&self, states: &[(Option<&DocState>, i64)], chunks: i64) {
        let by_state = states.iter().filter_map(|(state, by)| {
            let i = match (*state)? {
                DocState::Indexed => 0,
                DocState::Alias { .. } => 1,
                DocState::Failed { .. } => 2,
            };
            Some((i, *by))
        });
        for (i, by) in by_state.chain([(3, chunks)]) {
            let _ = self.counts[i]
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| Some(n.saturating_add_signed(by)));
        }
    }

    /// Syncs everything written so far to disk.
    ///
    /// The crawl asks for a sync after every page, so syncs are coalesced ([`weft_db::Syncs`]):
    /// a caller waits for the sync in progress and returns if that one covered every write made
    /// before the call, and a sync is skipped when nothing was written since the last.
    pub fn flush(&self) -> Result<(), IndexError> {
        self.syncs.sync_writes(|| self.db.persist(PersistMode::SyncAll))?;
        self.aging.seal_old(&self.keyspaces())?;
        Ok(())
    }

    /// Gives back the space of removed documents now rather than when later writes compact
    /// it (the disk quota calls it after evicting): every keyspace's memtable is written out
    /// and its tables compacted into one run without what was removed. Blocking: seconds, or
    /// minutes for a large store.
    pub fn reclaim(&self) -> Result<(), IndexError> {
        for ks in [&self.docs, &self.chunks, &self.vectors, &self.blocks, &self.links] {
            ks.rotate_memtable_and_wait()?;
            ks.major_compact()?;
        }
        Ok(())
    }
}

/// The SimHash block keys of an indexed document (none for aliases, failures and pages
/// without a fingerprint).
fn indexed_blocks(simhash: Option<u64>, state: &DocState, id: &DocId) -> Vec<[u8; 19]> {
    match (simhash, state) {
        (Some(hash), DocState::Indexed) => {
            dedup::blocks(hash).into_iter().enumerate().take(BLOCKS).map(|(p, b)| block_key(p, b, id)).collect()
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
