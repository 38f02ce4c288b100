//! The cell store: the chunks other nodes (and this one) published to the cells this node owns
//! (see `weft_p2p::placement`), searchable like the local index — by meaning and by words —
//! so that a question about them is answered here while their crawler is away.
//!
//! It is a [`LocalIndex`] of its own (sled, USearch, tantivy under `cells/` in the data dir)
//! that holds *parts* of documents: a document's chunks fall in different cells, owned by
//! different nodes, and arrive in any order. So chunks are merged into what is stored of their
//! document: the same fetch (`fetched_at`) adds chunks, a newer fetch replaces the document's
//! chunks, an older one is ignored. A withdrawal drops the document's chunks published before
//! it. Who published a document is kept beside it (provenance in answers; counting).
//!
//! A publisher announces each of its documents again now and then (the node's re-announce); a
//! document not announced within a TTL is dropped by [`CellStore::expire`] — the pages of a
//! volunteer gone for good, and of hosts it crawled long ago, do not stay forever.
//!
//! Bounded: at most `max_chunks` chunks; a document that would pass it is refused
//! ([`CellStoreError::Full`]), and its publisher is told to come back later. Quotas keep one
//! publisher, or one cell, from taking the store: a publisher may hold at most a quarter of
//! it and a cell an eighth (see [`Limits`]); a document over either is refused
//! ([`CellStoreError::Quota`], counted) — a publisher owns the hosts it crawls and could
//! otherwise fill every store it posts to with pages it makes up on them.

/// What a cell's next owner is handed, and what this node keeps after.
mod hand_over;
/// How much one publisher and one cell may hold.
mod quotas;

use crate::replicas::ReplicaStore;
use crate::store::{ChunkRecord, DocRecord, DocState, NewChunk};
use crate::{DocId, Hit, IndexError, LocalIndex};
pub use quotas::Limits;
use quotas::{positions, Over, Tallies};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use weft_config::IndexConfig;
use weft_page::PeerName;

/// A chunk published to a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellChunk {
    pub cell: u32,
    pub position: u32,
    pub text: String,
    /// A unit vector.
    pub vector: Vec<f32>,
    /// Its publisher's signature (see `weft_p2p::postings::Posting::signed_bytes`), kept to
    /// hand the chunk on to a cell's next owner as its publisher signed it.
    pub signature: Vec<u8>,
}

/// What a publisher sent of one document: its metadata and some of its chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct CellDoc {
    pub id: DocId,
    pub page: weft_page::PageMeta,
    pub language: Option<String>,
    pub simhash: Option<u64>,
    /// Unix seconds: when the publisher fetched the page (a newer fetch replaces an older).
    pub fetched_at: u64,
    /// The publishing peer.
    pub publisher: PeerName,
    /// The publishing peer's public key (libp2p's protobuf encoding), kept with the chunks'
    /// signatures.
    pub publisher_key: Vec<u8>,
    pub chunks: Vec<CellChunk>,
}

#[derive(Debug, thiserror::Error)]
pub enum CellStoreError {
    #[error("the cell store is full ({0} chunks)")]
    Full(usize),
    #[error("over the {what} quota ({max} chunks)")]
    Quota { what: &'static str, max: usize },
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// Who published a stored document, and the cells of its stored chunks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    pub publisher: PeerName,
    /// (position, cell) of each stored chunk and each cell it was posted to.
    pub cells: Vec<(u32, u32)>,
}

/// A stored document's publisher key and the signature of each stored chunk, by position.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Signed {
    key: Vec<u8>,
    signatures: Vec<(u32, Vec<u8>)>,
}

impl Signed {
    /// The signature held for the chunk at `position` (empty for none).
    fn of(&self, position: u32) -> Vec<u8> {
        self.signatures.iter().find(|(p, _)| *p == position).map(|(_, s)| s.clone()).unwrap_or_default()
    }
}

/// What [`CellStore::put`] did with a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// Stored (new chunks, or a newer fetch).
    Stored,
    /// Nothing new: an older fetch, or chunks already held.
    Unchanged,
}

/// See the module doc.
pub struct CellStore {
    index: LocalIndex,
    provenance: sled::Tree,
    /// Document id → [`Signed`].
    signed: sled::Tree,
    /// Document id → when it was last announced here (stored, or sent again), Unix seconds.
    announced: sled::Tree,
    limits: Limits,
    tallies: parking_lot::Mutex<Tallies>,
    over_quota: AtomicU64,
    /// The copies of documents held for the ids this node owns, in the same database.
    replicas: ReplicaStore,
}

impl CellStore {
    /// Opens (or creates) the cell store in `dir` (its own sled database and index files).
    pub fn open(dir: &Path, dims: usize, config: &IndexConfig, limits: Limits) -> Result<CellStore, IndexError> {
        std::fs::create_dir_all(dir)?;
        let db = weft_db::open_db(&dir.join("db"), 16 << 20).map_err(IndexError::Store)?;
        let provenance = db.open_tree("provenance").map_err(IndexError::Store)?;
        let signed = db.open_tree("signed").map_err(IndexError::Store)?;
        let announced = db.open_tree("announced").map_err(IndexError::Store)?;
        let index = LocalIndex::open(&db, dir, dims, config)?;
        let replicas = ReplicaStore::open(&db, config.replica_bytes())?;
        let mut tallies = Tallies::default();
        for entry in provenance.iter() {
            let (_, bytes) = entry.map_err(IndexError::Store)?;
            let p: Provenance =
                postcard::from_bytes(&bytes).map_err(|e| IndexError::Corrupt(format!("provenance: {e}")))?;
            tallies.add(&p, 1);
        }
        let tallies = parking_lot::Mutex::new(tallies);
        let over_quota = AtomicU64::new(0);
        Ok(CellStore { index, provenance, signed, announced, limits, tallies, over_quota, replicas })
    }

    /// The copies of whole documents this node holds for others (`weft_p2p::replicas`): kept
    /// in the cell store's database, so one sled cache serves both.
    pub fn replicas(&self) -> &ReplicaStore {
        &self.replicas
    }

    /// Stores what a publisher sent of a document (see the module doc for the merge). A chunk
    /// may come once per cell it was posted to: it is stored once, and each of its cells kept.
    pub fn put(&self, doc: CellDoc) -> Result<Put, CellStoreError> {
        let old = self.index.store().doc(&doc.id)?;
        let mut chunks: Vec<CellChunk> = Vec::new();
        let mut publisher_key = doc.publisher_key.clone();
        let mut pairs: Vec<(u32, u32)> = doc.chunks.iter().map(|c| (c.position, c.cell)).collect();
        // What is held of the document now (read once: the merge and the quotas both need it).
        let held = match &old {
            Some(_) => self.provenance(&doc.id)?,
            None => None,
        };
        match &old {
            Some(old) if old.fetched_at > doc.fetched_at => return Ok(Put::Unchanged),
            Some(old) if old.fetched_at == doc.fetched_at => {
                let held_cells = held.as_ref().map(|p| p.cells.as_slice()).unwrap_or_default();
                if pairs.iter().all(|p| held_cells.contains(p)) {
                    // Announced again: it lives another TTL.
                    self.touch(&doc.id, weft_clock::now_secs())?;
                    return Ok(Put::Unchanged);
                }
                // The same fetch: keep what is held, add what is new.
                let signed = self.signed(&doc.id)?;
                if publisher_key.is_empty() {
                    publisher_key = signed.key.clone();
                }
                for key in &old.chunks {
                    let (Some(record), Some(vector)) =
                        (self.index.store().chunk(*key)?, self.index.store().vector(*key)?)
                    else {
                        continue;
                    };
                    if doc.chunks.iter().any(|c| c.position == record.position) {
                        continue;
                    }
                    let signature = signed.of(record.position);
                    chunks.push(CellChunk {
                        cell: 0,
                        position: record.position,
                        text: record.text()?,
                        vector,
                        signature,
                    });
                }
                pairs.extend_from_slice(held_cells);
            }
            _ => {}
        }
        chunks.extend(doc.chunks);
        chunks.sort_by_key(|c| c.position);
        chunks.dedup_by_key(|c| c.position);
        pairs.sort_unstable();
        pairs.dedup();
        let before = old.as_ref().map_or(0, |o| o.chunks.len());
        if self.index.store().chunk_count() + chunks.len() > self.limits.chunks + before {
            return Err(CellStoreError::Full(self.limits.chunks));
        }
        let provenance = Provenance { publisher: doc.publisher, cells: pairs };
        self.within_quotas(held.as_ref(), &provenance)?;
        let mut new = Vec::with_capacity(chunks.len());
        let mut words = 0usize;
        for c in &chunks {
            words += c.text.split_whitespace().count();
            let record = ChunkRecord::new(doc.id, c.position, 0, c.text.len(), 0, &c.text);
            new.push(NewChunk { key: doc.id.chunk_key(c.position), record, vector: c.vector.clone() });
        }
        let page = doc.page;
        let record = DocRecord {
            url: page.url,
            title: page.title,
            description: None,
            language: doc.language,
            site_name: None,
            published: page.published,
            page_type: None,
            fetched_at: doc.fetched_at,
            word_count: words as u32,
            simhash: doc.simhash,
            chunks: new.iter().map(|c| c.key).collect(),
            state: DocState::Indexed,
            aliases: Vec::new(),
            modified: page.modified,
            author: page.author,
            canonical: page.canonical,
        };
        self.index.commit(doc.id, &record, new)?;
        let bytes = postcard::to_stdvec(&provenance).expect("provenance serializes");
        self.provenance.insert(doc.id.0, bytes).map_err(IndexError::Store)?;
        let mut tallies = self.tallies.lock();
        if let Some(held) = &held {
            tallies.add(held, -1);
        }
        tallies.add(&provenance, 1);
        drop(tallies);
        let signatures = chunks.into_iter().map(|c| (c.position, c.signature)).collect();
        self.put_signed(&doc.id, &Signed { key: publisher_key, signatures })?;
        self.touch(&doc.id, weft_clock::now_secs())?;
        Ok(Put::Stored)
    }

    /// Drops a document's chunks published before `at` (Unix seconds); says whether it did.
    pub fn withdraw(&self, id: DocId, at: u64) -> Result<bool, IndexError> {
        match self.index.store().doc(&id)? {
            Some(old) if old.fetched_at <= at => {
                self.forget(id)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn touch(&self, id: &DocId, now: u64) -> Result<(), IndexError> {
        self.announced.insert(id.0, &now.to_be_bytes()).map_err(IndexError::Store)?;
        Ok(())
    }

    /// Drops the documents not announced within `ttl` seconds of `now` (Unix seconds); returns
    /// how many. A document stored before announcements were recorded counts as announced now.
    pub fn expire(&self, now: u64, ttl: u64) -> Result<usize, IndexError> {
        let mut dropped = 0;
        for entry in self.provenance.iter() {
            let (key, _) = entry.map_err(IndexError::Store)?;
            let Ok(raw) = <[u8; 16]>::try_from(key.as_ref()) else { continue };
            let id = DocId(raw);
            let at = self.announced.get(id.0).map_err(IndexError::Store)?;
            match at.and_then(|b| <[u8; 8]>::try_from(b.as_ref()).ok()).map(u64::from_be_bytes) {
                Some(at) if at.saturating_add(ttl) < now => {
                    self.forget(id)?;
                    dropped += 1;
                }
                Some(_) => {}
                None => self.touch(&id, now)?,
            }
        }
        Ok(dropped)
    }

    /// Removes a document and what is kept beside it.
    fn forget(&self, id: DocId) -> Result<(), IndexError> {
        let held = self.provenance(&id)?;
        self.index.remove(id)?;
        self.provenance.remove(id.0).map_err(IndexError::Store)?;
        self.signed.remove(id.0).map_err(IndexError::Store)?;
        self.announced.remove(id.0).map_err(IndexError::Store)?;
        if let Some(held) = held {
            self.tallies.lock().add(&held, -1);
        }
        Ok(())
    }

    /// Whether storing `new` in place of `held` keeps its publisher and its cells within
    /// their quotas; what is refused is counted.
    fn within_quotas(&self, held: Option<&Provenance>, new: &Provenance) -> Result<(), CellStoreError> {
        match self.tallies.lock().over(&self.limits, held, new) {
            Some(Over { what, max }) => {
                self.over_quota.fetch_add(positions(new) as u64, Ordering::Relaxed);
                Err(CellStoreError::Quota { what, max })
            }
            None => Ok(()),
        }
    }

    /// Chunks refused for a publisher's or a cell's quota since the start.
    pub fn over_quota(&self) -> u64 {
        self.over_quota.load(Ordering::Relaxed)
    }

    /// The publisher key and chunk signatures held for `id` (empty for none).
    fn signed(&self, id: &DocId) -> Result<Signed, IndexError> {
        let Some(bytes) = self.signed.get(id.0).map_err(IndexError::Store)? else { return Ok(Signed::default()) };
        postcard::from_bytes(&bytes).map_err(|e| IndexError::Corrupt(format!("signatures: {e}")))
    }

    fn put_signed(&self, id: &DocId, signed: &Signed) -> Result<(), IndexError> {
        let bytes = postcard::to_stdvec(signed).expect("signatures serialize");
        self.signed.insert(id.0, bytes).map_err(IndexError::Store)?;
        Ok(())
    }

    /// Who published `id`, and the cells of its chunks held here.
    pub fn provenance(&self, id: &DocId) -> Result<Option<Provenance>, IndexError> {
        let Some(bytes) = self.provenance.get(id.0).map_err(IndexError::Store)? else { return Ok(None) };
        postcard::from_bytes(&bytes).map(Some).map_err(|e| IndexError::Corrupt(format!("provenance: {e}")))
    }

    /// The `k` best documents held here for a question, by meaning and words fused (as
    /// [`LocalIndex::search_hybrid`]); by meaning alone without words.
    /// Each hit names the cell its chunk was posted to and the peer that published it (`self`
    /// for this node's own postings is left unnamed).
    pub fn search(&self, text: Option<&str>, vector: &[f32], k: usize) -> Result<Vec<Hit>, IndexError> {
        let mut hits = match text {
            Some(t) if !t.trim().is_empty() => self.index.search_hybrid(t, vector, k)?,
            _ => self.index.search(vector, k)?,
        };
        for h in &mut hits {
            if let Some(p) = self.provenance(&DocId::of_url(&h.page.url))? {
                h.cell = p.cells.iter().find(|(pos, _)| *pos == h.chunk).map(|(_, c)| *c);
                h.crawled_by = Some(p.publisher).filter(|p| !p.is_this_node());
            }
        }
        Ok(hits)
    }

    /// Makes what was stored searchable by words (a tantivy commit: call it after a batch).
    pub fn sync(&self) -> Result<(), IndexError> {
        self.index.sync()
    }

    /// Merges its small vector segments ([`LocalIndex::merge_segments`]).
    pub fn merge_segments(&self) -> Result<bool, IndexError> {
        self.index.merge_segments()
    }

    /// Writes the vector snapshot and flushes (at the stop, and now and then).
    pub fn snapshot(&self) -> Result<bool, IndexError> {
        self.index.snapshot()
    }

    /// The step its snapshot is in, while one runs ([`LocalIndex::snapshot_step`]).
    pub fn snapshot_step(&self) -> Option<&'static str> {
        self.index.snapshot_step()
    }

    /// Whether every chunk held is searchable by its words too: the words' index is committed
    /// every few seconds ([`CellStore::sync`]), after the chunk is stored and searchable by
    /// meaning, so for a moment a fresh posting is found by its vector only.
    pub fn words_current(&self) -> bool {
        self.index.lexical().len() == self.counts().1 as u64
    }

    /// Documents and chunks held.
    pub fn counts(&self) -> (usize, usize) {
        (self.index.store().doc_count(), self.index.store().chunk_count())
    }

    /// Bytes of the vectors in memory.
    pub fn vector_memory_bytes(&self) -> usize {
        self.index.vectors().memory_usage()
    }

    /// Bytes of its document store in memory ([`weft_db::LsmMemory`]).
    pub fn store_memory_bytes(&self) -> u64 {
        self.index.store().memory().total()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    fn doc(url: &str, fetched_at: u64, chunks: &[(u32, &str, [f32; 4])]) -> CellDoc {
        CellDoc {
            id: DocId::of_url(url),
            page: weft_page::PageMeta { url: url.into(), title: format!("Title of {url}"), ..Default::default() },
            language: Some("en".into()),
            simhash: Some(7),
            fetched_at,
            publisher: "peer-a".into(),
            publisher_key: vec![1, 2, 3],
            chunks: chunks
                .iter()
                .map(|(p, t, v)| CellChunk {
                    cell: *p,
                    position: *p,
                    text: t.to_string(),
                    vector: unit(v),
                    signature: format!("signed {p} at {fetched_at}").into_bytes(),
                })
                .collect(),
        }
    }

    #[test]
    fn parts_of_a_document_merge_a_newer_fetch_replaces_and_a_withdrawal_drops() {
        let dir = tempfile::tempdir().unwrap();
        let store = CellStore::open(dir.path(), 4, &IndexConfig::default(), Limits::of(100)).unwrap();
        let url = "http://a.test/p";
        let first = doc(url, 10, &[(0, "alpha bravo charlie", [1.0, 0.0, 0.0, 0.0])]);
        assert_eq!(store.put(first.clone()).unwrap(), Put::Stored);
        assert_eq!(store.put(first).unwrap(), Put::Unchanged, "the same chunk again");
        // Another cell's chunk of the same fetch joins it.
        assert_eq!(store.put(doc(url, 10, &[(3, "delta echo foxtrot", [0.0, 1.0, 0.0, 0.0])])).unwrap(), Put::Stored);
        assert_eq!(store.counts(), (1, 2));
        store.sync().unwrap();
        let hits = store.search(Some("echo"), &unit(&[0.0, 1.0, 0.1, 0.0]), 5).unwrap();
        assert_eq!(hits[0].page.url, url);
        assert_eq!(hits[0].chunk, 3);
        assert_eq!(hits[0].page.title, "Title of http://a.test/p");
        assert_eq!((hits[0].cell, hits[0].crawled_by.as_ref().map(PeerName::as_str)), (Some(3), Some("peer-a")));
        let prov = store.provenance(&DocId::of_url(url)).unwrap().unwrap();
        assert_eq!((prov.publisher.as_str(), prov.cells.len()), ("peer-a", 2));
        // What a cell's new owner is handed: the chunks of that cell only.
        let held = store.held_in(&[3].into_iter().collect()).unwrap();
        assert_eq!((held.len(), held[0].chunks.len()), (1, 1));
        let chunk = &held[0].chunks[0];
        assert_eq!((chunk.cell, chunk.position, chunk.text.as_str()), (3, 3, "delta echo foxtrot"));
        // As its publisher signed it.
        assert_eq!(
            (chunk.signature.as_slice(), held[0].publisher_key.as_slice()),
            (&b"signed 3 at 10"[..], &[1u8, 2, 3][..])
        );
        let both = store.held_in(&[0, 3].into_iter().collect()).unwrap();
        assert_eq!(both[0].chunks[0].signature, b"signed 0 at 10", "kept across the merge");
        assert_eq!((held[0].fetched_at, held[0].page.url.as_str()), (10, url));
        // An older fetch changes nothing; a newer one replaces every chunk.
        assert_eq!(store.put(doc(url, 5, &[(1, "old", [0.0, 0.0, 1.0, 0.0])])).unwrap(), Put::Unchanged);
        assert_eq!(store.put(doc(url, 20, &[(1, "golf hotel", [0.0, 0.0, 1.0, 0.0])])).unwrap(), Put::Stored);
        assert_eq!(store.counts(), (1, 1));
        // A withdrawal older than the fetch held does not drop it; a newer one does.
        assert!(!store.withdraw(DocId::of_url(url), 15).unwrap());
        assert!(store.withdraw(DocId::of_url(url), 20).unwrap());
        assert_eq!(store.counts(), (0, 0));
        assert!(store.provenance(&DocId::of_url(url)).unwrap().is_none());
    }

    #[test]
    fn a_cells_documents_are_read_a_page_at_a_time_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = CellStore::open(dir.path(), 4, &IndexConfig::default(), Limits::of(1000)).unwrap();
        // Twenty-five documents with a chunk in cell 3, fifteen in cell 0 only.
        for i in 0..40 {
            let cell = if i % 8 < 5 { 3 } else { 0 };
            store.put(doc(&format!("http://a.test/{i}"), 1, &[(cell, "alpha", [1.0, 0.0, 0.0, 0.0])])).unwrap();
        }
        let cells = [3].into_iter().collect();
        let whole: Vec<DocId> = store.held_in(&cells).unwrap().into_iter().map(|d| d.id).collect();
        assert_eq!(whole.len(), 25);
        let (mut paged, mut after, mut pages) = (Vec::new(), None, 0);
        loop {
            let (page, next) = store.held_in_page(&cells, after, 7).unwrap();
            assert!(page.len() <= 7);
            pages += 1;
            paged.extend(page.into_iter().map(|d| d.id));
            match next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        assert_eq!(paged, whole, "every document once, in the same order");
        assert_eq!(pages, 4);
    }

    #[test]
    fn cells_no_longer_owned_are_dropped_chunk_by_chunk() {
        let dir = tempfile::tempdir().unwrap();
        let store = CellStore::open(dir.path(), 4, &IndexConfig::default(), Limits::of(100)).unwrap();
        // Chunk positions are their cells here (see `doc`): p has chunks in cells 0 and 3,
        // q in cell 3 only; p's chunk 0 was also posted to cell 5.
        store
            .put(doc("http://a.test/p", 1, &[(0, "alpha", [1.0, 0.0, 0.0, 0.0]), (3, "delta", [0.0, 1.0, 0.0, 0.0])]))
            .unwrap();
        let mut twice = doc("http://a.test/p", 1, &[(0, "alpha", [1.0, 0.0, 0.0, 0.0])]);
        twice.chunks[0].cell = 5;
        store.put(twice).unwrap();
        store.put(doc("http://a.test/q", 1, &[(3, "echo", [0.0, 0.0, 1.0, 0.0])])).unwrap();
        assert_eq!(store.counts(), (2, 3));
        // Cell 0 goes: p's chunk 0 stays for cell 5.
        assert_eq!(store.keep_cells(|c| c != 0).unwrap(), (0, 0));
        // Cell 3 goes: q goes whole, p keeps chunk 0 only.
        assert_eq!(store.keep_cells(|c| c == 5).unwrap(), (1, 2));
        assert_eq!(store.counts(), (1, 1));
        store.sync().unwrap();
        let hits = store.search(Some("delta echo"), &unit(&[0.0, 1.0, 0.0, 0.0]), 5).unwrap();
        assert!(hits.iter().all(|h| h.page.url == "http://a.test/p" && h.chunk == 0), "{hits:?}");
        let prov = store.provenance(&DocId::of_url("http://a.test/p")).unwrap().unwrap();
        assert_eq!(prov.cells, vec![(0, 5)]);
        assert_eq!(store.held_in(&[3].into_iter().collect()).unwrap(), vec![]);
    }

    #[test]
    fn one_publisher_or_one_cell_cannot_take_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits { chunks: 100, per_publisher: 4, per_cell: 3 };
        let store = CellStore::open(dir.path(), 4, &IndexConfig::default(), limits).unwrap();
        let v = [1.0, 0.0, 0.0, 0.0];
        // peer-a: four chunks in cells 0..4 fit; a fifth is over its quota.
        store.put(doc("http://a.test/1", 1, &[(0, "a", v), (1, "b", v)])).unwrap();
        store.put(doc("http://a.test/2", 1, &[(2, "c", v), (3, "d", v)])).unwrap();
        let over = store.put(doc("http://a.test/3", 1, &[(4, "e", v)]));
        assert!(matches!(over, Err(CellStoreError::Quota { what: "publisher", max: 4 })), "{over:?}");
        // A newer fetch of a document it holds counts once: replacing two chunks with two fits.
        assert_eq!(store.put(doc("http://a.test/2", 2, &[(2, "c2", v), (3, "d2", v)])).unwrap(), Put::Stored);
        // Cell 0 holds a's chunk; two more publishers fill it to three, a fourth is refused.
        for (i, publisher) in ["peer-b", "peer-c", "peer-d"].into_iter().enumerate() {
            let mut d = doc(&format!("http://b.test/{i}"), 1, &[(0, "f", v)]);
            d.publisher = publisher.into();
            let put = store.put(d);
            if i < 2 {
                put.unwrap();
            } else {
                assert!(matches!(put, Err(CellStoreError::Quota { what: "cell", max: 3 })), "{put:?}");
            }
        }
        assert_eq!(store.over_quota(), 2);
        // Withdrawn, a's chunks make room for its others; the tallies survive a reopen.
        assert!(store.withdraw(DocId::of_url("http://a.test/1"), 5).unwrap());
        store.put(doc("http://a.test/3", 1, &[(4, "e", v)])).unwrap();
        drop(store);
        let store = CellStore::open(dir.path(), 4, &IndexConfig::default(), limits).unwrap();
        let over = store.put(doc("http://a.test/4", 1, &[(5, "g", v), (6, "h", v)]));
        assert!(matches!(over, Err(CellStoreError::Quota { what: "publisher", .. })), "3 held + 2: {over:?}");
        store.put(doc("http://a.test/4", 1, &[(5, "g", v)])).unwrap();
    }

    #[test]
    fn what_is_not_announced_again_within_the_ttl_expires() {
        let dir = tempfile::tempdir().unwrap();
        let store = CellStore::open(dir.path(), 4, &IndexConfig::default(), Limits::of(100)).unwrap();
        let v = [1.0, 0.0, 0.0, 0.0];
        let now = weft_clock::now_secs();
        store.put(doc("http://a.test/1", 1, &[(0, "a", v)])).unwrap();
        store.put(doc("http://a.test/2", 1, &[(1, "b", v)])).unwrap();
        assert_eq!(store.expire(now + 50, 100).unwrap(), 0, "within the TTL");
        // Announced again (the same fetch): it lives on from then.
        let later = now + 80;
        store.touch(&DocId::of_url("http://a.test/2"), later).unwrap();
        assert_eq!(store.put(doc("http://a.test/1", 1, &[(0, "a", v)])).unwrap(), Put::Unchanged);
        store.touch(&DocId::of_url("http://a.test/1"), now).unwrap(); // as if not announced again
        assert_eq!(store.expire(now + 150, 100).unwrap(), 1);
        assert_eq!(store.counts(), (1, 1));
        assert!(store.provenance(&DocId::of_url("http://a.test/1")).unwrap().is_none());
        assert_eq!(store.expire(later + 101, 100).unwrap(), 1);
        assert_eq!(store.counts(), (0, 0));
    }

    #[test]
    fn a_full_store_refuses_and_what_it_holds_survives_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = CellStore::open(
                dir.path(),
                4,
                &IndexConfig::default(),
                Limits { chunks: 2, per_publisher: 2, per_cell: 2 },
            )
            .unwrap();
            store
                .put(doc("http://a.test/1", 1, &[(0, "one", [1.0, 0.0, 0.0, 0.0]), (1, "two", [0.0, 1.0, 0.0, 0.0])]))
                .unwrap();
            let full = store.put(doc("http://a.test/2", 1, &[(0, "three", [0.0, 0.0, 1.0, 0.0])]));
            assert!(matches!(full, Err(CellStoreError::Full(2))));
            store.snapshot().unwrap();
        }
        let store = CellStore::open(
            dir.path(),
            4,
            &IndexConfig::default(),
            Limits { chunks: 2, per_publisher: 2, per_cell: 2 },
        )
        .unwrap();
        assert_eq!(store.counts(), (1, 2));
        let hits = store.search(None, &unit(&[0.0, 1.0, 0.0, 0.0]), 1).unwrap();
        assert_eq!((hits[0].page.url.as_str(), hits[0].chunk), ("http://a.test/1", 1));
    }
}
