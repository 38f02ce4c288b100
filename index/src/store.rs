//! The document store, in sled: what each document is, what its chunks say, their vectors, and
//! the SimHash block tables.
//!
//! | tree | key | value |
//! |---|---|---|
//! | `index.docs` | doc id (16 bytes) | [`DocRecord`]: url, title, metadata, fetched_at, simhash, chunk keys, state |
//! | `index.chunks` | chunk key (u64 BE) | [`ChunkRecord`]: doc id, position, previous/next chunk keys, byte range, LZ4-compressed text |
//! | `index.vectors` | chunk key (u64 BE) | the chunk's unit vector as little-endian f16 |
//! | `index.simhash` | block position, block value, doc id | the full fingerprint |
//!
//! Replacing a document is one sled transaction over all four trees: its old chunks, vectors
//! and block entries go in the same step as the new ones arrive, so a crash can never leave
//! orphans. Vectors are kept here (768 bytes per chunk at f16) so that the HNSW index is a
//! cache that can always be rebuilt.

use crate::dedup::{self, BLOCKS};
use crate::{DocId, IndexError};
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionError, Transactional};
use sled::{Db, Tree};

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

/// sled trees of the index.
#[derive(Clone)]
pub struct DocStore {
    docs: Tree,
    chunks: Tree,
    vectors: Tree,
    blocks: Tree,
    /// Document id → the page's outbound links (postcard): what a copy of the document carries,
    /// so that a member that indexes it from the copy instead of fetching it (its crawler
    /// gone) still follows the page's links.
    links: Tree,
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
    pub fn open(db: &Db) -> Result<DocStore, IndexError> {
        Ok(DocStore {
            docs: db.open_tree("index.docs")?,
            chunks: db.open_tree("index.chunks")?,
            vectors: db.open_tree("index.vectors")?,
            blocks: db.open_tree("index.simhash")?,
            links: db.open_tree("index.links")?,
        })
    }

    /// Keeps the outbound links of document `id` (the first [`MAX_LINKS`]), replacing any.
    pub fn set_links(&self, id: &DocId, links: &[String]) -> Result<(), IndexError> {
        let links = &links[..links.len().min(MAX_LINKS)];
        self.links.insert(id.0, encode(&links))?;
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
        self.vectors.iter().map(|r| {
            let (k, v) = r?;
            let key = u64::from_be_bytes(k.as_ref().try_into().map_err(|_| IndexError::Corrupt("vector key".into()))?);
            Ok((key, vector_from_bytes(&v)))
        })
    }

    /// Documents stored (indexed, aliases and failed alike).
    pub fn doc_count(&self) -> usize {
        self.docs.len()
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Whether a vector is stored under `key` (without reading it).
    pub fn has_vector(&self, key: u64) -> bool {
        self.vectors.contains_key(key.to_be_bytes()).unwrap_or(false)
    }

    pub fn vector_count(&self) -> usize {
        self.vectors.len()
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
        items.map(|r| {
            let (k, v) = r?;
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
            for entry in self.blocks.scan_prefix(prefix) {
                let (k, v) = entry?;
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
    /// all in one transaction. An alias is added to its canonical document's alias list.
    pub fn put(&self, id: DocId, record: &DocRecord, chunks: &[NewChunk]) -> Result<Replaced, IndexError> {
        let new_keys: std::collections::HashSet<u64> = chunks.iter().map(|c| c.key).collect();
        let result = (&self.docs, &self.chunks, &self.vectors, &self.blocks).transaction(
            |(docs, chunk_tree, vector_tree, blocks)| {
                let abort = |e: IndexError| ConflictableTransactionError::Abort(e);
                let mut replaced = Replaced::default();
                let mut record = record.clone();
                if let Some(old) = docs.get(id.0)? {
                    let old: DocRecord = decode_doc(&old).map_err(abort)?;
                    // Aliases recorded against this document stay with it across re-crawls.
                    for alias in old.aliases {
                        if !record.aliases.contains(&alias) && alias != record.url {
                            record.aliases.push(alias);
                        }
                    }
                    replaced.old_state = Some(old.state.clone());
                    for key in &old.chunks {
                        chunk_tree.remove(&key.to_be_bytes())?;
                        vector_tree.remove(&key.to_be_bytes())?;
                        if !new_keys.contains(key) {
                            replaced.removed.push(*key);
                        }
                    }
                    if let (Some(hash), DocState::Indexed) = (old.simhash, &old.state) {
                        for (p, b) in dedup::blocks(hash).into_iter().enumerate() {
                            blocks.remove(&block_key(p, b, &id)[..])?;
                        }
                    }
                }
                for c in chunks {
                    chunk_tree.insert(&c.key.to_be_bytes(), encode(&c.record))?;
                    vector_tree.insert(&c.key.to_be_bytes(), vector_bytes(&c.vector))?;
                }
                if let (Some(hash), DocState::Indexed) = (record.simhash, &record.state) {
                    for (p, b) in dedup::blocks(hash).into_iter().enumerate().take(BLOCKS) {
                        blocks.insert(&block_key(p, b, &id)[..], &hash.to_be_bytes())?;
                    }
                }
                if let DocState::Alias { canonical, .. } = &record.state {
                    if let Some(bytes) = docs.get(canonical.0)? {
                        let mut c: DocRecord = decode_doc(&bytes).map_err(abort)?;
                        if !c.aliases.contains(&record.url) {
                            c.aliases.push(record.url.clone());
                            docs.insert(&canonical.0, encode(&c))?;
                        }
                    }
                }
                docs.insert(&id.0, encode(&record))?;
                Ok(replaced)
            },
        );
        match result {
            Ok(r) => Ok(r),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(e.into()),
        }
    }

    /// Removes a document with its chunks, vectors and SimHash blocks in one transaction;
    /// returns its record (`None` if there was none). Aliases recorded against it stay (as
    /// records without chunks).
    pub fn remove(&self, id: DocId) -> Result<Option<DocRecord>, IndexError> {
        let result = (&self.docs, &self.chunks, &self.vectors, &self.blocks).transaction(
            |(docs, chunk_tree, vector_tree, blocks)| {
                let abort = |e: IndexError| ConflictableTransactionError::Abort(e);
                let Some(old) = docs.remove(&id.0)? else { return Ok(None) };
                let old: DocRecord = decode_doc(&old).map_err(abort)?;
                for key in &old.chunks {
                    chunk_tree.remove(&key.to_be_bytes())?;
                    vector_tree.remove(&key.to_be_bytes())?;
                }
                if let (Some(hash), DocState::Indexed) = (old.simhash, &old.state) {
                    for (p, b) in dedup::blocks(hash).into_iter().enumerate() {
                        blocks.remove(&block_key(p, b, &id)[..])?;
                    }
                }
                Ok(Some(old))
            },
        );
        if matches!(result, Ok(Some(_))) {
            self.links.remove(id.0)?;
        }
        match result {
            Ok(r) => Ok(r),
            Err(TransactionError::Abort(e)) => Err(e),
            Err(TransactionError::Storage(e)) => Err(e.into()),
        }
    }

    pub fn flush(&self) -> Result<(), IndexError> {
        self.docs.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1() -> DocRecordV1 {
        DocRecordV1 {
            url: "https://a.test/x".into(),
            title: "X".into(),
            description: None,
            language: Some("en".into()),
            site_name: None,
            published: Some("2026-03-01T09:00:00+00:00".into()),
            page_type: Some("article".into()),
            fetched_at: 7,
            word_count: 300,
            simhash: Some(42),
            chunks: vec![1, 2],
            state: DocState::Alias { canonical: DocId([3; 16]), distance: 2 },
            aliases: vec!["https://a.test/y".into()],
        }
    }

    #[test]
    fn documents_written_by_the_first_release_still_read() {
        let old = decode_doc(&encode(&v1())).unwrap();
        assert_eq!((old.url.as_str(), old.word_count, old.chunks.len()), ("https://a.test/x", 300, 2));
        assert_eq!(old.state, DocState::Alias { canonical: DocId([3; 16]), distance: 2 });
        assert_eq!((old.modified, old.author, old.canonical), (None, None, None));
        // And this release's records read back whole.
        let new = DocRecord {
            modified: Some("2026-04-02T10:30:00+00:00".into()),
            author: Some("Ada Lovelace".into()),
            canonical: Some("https://a.test/x".into()),
            ..decode_doc(&encode(&v1())).unwrap()
        };
        assert_eq!(decode_doc(&encode(&new)).unwrap(), new);
        assert!(matches!(decode_doc(b"\xff\xff"), Err(IndexError::Corrupt(_))));
    }
}
