//! The HNSW vector index (USearch, cosine): the newest vectors in memory, the rest in sealed
//! segments searched from disk, and how it survives crashes.
//!
//! **Memory that does not grow with the index.** New vectors go to the *delta*, an HNSW index
//! in memory; when it holds [`SEGMENT_CHUNKS`] it is sealed — written as a segment and from then
//! on searched through a memory-mapped view of its file (see [`crate::segments`]) — and a new,
//! empty delta starts. A search asks the delta and every segment for their best and merges
//! them. A key removed or replaced while its vector sits in a segment is *masked* there (the
//! segment is never rewritten): searches skip it. Sealed deltas are small (so is the delta's
//! memory) and merged four at a time into larger segments ([`VectorIndex::merge_small`]), so
//! the number of segments a search visits stays what large deltas gave.
//!
//! **Crashes.** The delta is written to `vectors.usearch` in the data dir on a timer and at
//! shutdown: to a temporary file first, fsynced, then renamed over the old snapshot and the
//! directory fsynced, so a crash mid-write leaves the previous snapshot intact. Beside it
//! `vectors.usearch.keys` lists its keys and the last segment sealed before it. Between
//! snapshots the vectors are safe anyway: the document store holds every chunk's vector (see
//! [`crate::store`]). On open every part is checked against the store: a segment's key that the
//! store no longer has, or that a newer part holds, is masked; a key the store has that no part
//! holds (the delta's snapshot was older than the last commit) is added again from the store; a delta snapshot
//! older than the last segment is dropped and caught up the same way. Only a part that cannot
//! be read — missing, built with other settings, or failing its BLAKE3 checksum (a flipped byte
//! in the middle of the vectors loads without an error and silently changes search results) —
//! makes the whole index be rebuilt from the store, and `weft doctor` says so.
//!
//! Scalar quantization is configurable (`index.quantization`, default f16: half the memory of
//! f32, recall unchanged for unit vectors; measured in docs/src/benchmarks.md).

pub use crate::segments::SnapshotDamage;
use crate::segments::{self, Segment};
use crate::store::DocStore;
use crate::IndexError;
use parking_lot::RwLock;
use std::collections::HashSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};
use weft_config::{IndexConfig, Quantization};

/// File name of the snapshot in the data dir.
pub const FILE: &str = "vectors.usearch";
/// File name of the snapshot's checksum (hex BLAKE3 of the snapshot's bytes).
pub const CHECKSUM_FILE: &str = "vectors.usearch.blake3";
/// File name of the delta snapshot's keys: the last segment sealed before it (u64), then its
/// keys (u64s), little-endian.
pub const KEYS_FILE: &str = "vectors.usearch.keys";
/// Vectors the delta holds before it is sealed into a segment: ~16 MiB of memory at most (384
/// dimensions in f16 with their graph). A delta of 65,536 held up to ~65 MiB, a saw-tooth of
/// about a sixth of a crawling node's memory; a smaller one alone would make four times as many
/// segments for every search to visit, so small segments are merged ([`MERGE_FANIN`]).
pub const SEGMENT_CHUNKS: usize = 16_384;
/// Sealed segments under `MERGE_FANIN` × the delta's size are merged, `MERGE_FANIN` at a time
/// (oldest first), into one segment of up to 65,536 vectors: a search at 3,000,000 chunks visits
/// ~47 segments, as it did when the delta held 65,536. A merge builds its graph in memory away
/// from the index's lock (~65 MiB for the ~20 s it takes) and runs apart from the snapshot.
pub const MERGE_FANIN: usize = 4;

fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(File::open(path)?)?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// Whether the snapshot in `dir` — the delta's and every sealed segment's — is the one its
/// checksum was written for. `Ok(false)`: there is no snapshot. An error says what is wrong
/// (the node rebuilds the index from the document store).
pub fn verify_snapshot(dir: &Path) -> Result<bool, SnapshotDamage> {
    let segments = Segment::verify_all(&dir.join(segments::DIR))?;
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(segments > 0);
    }
    let expected = match std::fs::read_to_string(dir.join(CHECKSUM_FILE)) {
        Ok(s) => s.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(SnapshotDamage::NoChecksum),
        Err(e) => return Err(SnapshotDamage::Unreadable { what: CHECKSUM_FILE.into(), error: e.to_string() }),
    };
    let actual = hash_file(&path)
        .map_err(|e| SnapshotDamage::Unreadable { what: path.display().to_string(), error: e.to_string() })?;
    if actual != expected {
        return Err(SnapshotDamage::Changed(path));
    }
    Ok(true)
}

/// Bytes the vector index takes on disk in `dir`: the delta's snapshot and the segments.
pub fn disk_bytes(dir: &Path) -> u64 {
    let file = |name: &str| std::fs::metadata(dir.join(name)).map_or(0, |m| m.len());
    file(FILE) + file(KEYS_FILE) + Segment::disk_bytes(&dir.join(segments::DIR))
}

/// What the index holds: the delta in memory, the sealed segments, and the keys masked in them.
struct Parts {
    delta: Index,
    delta_keys: HashSet<u64>,
    /// Shared, so that a merge reads the segments it merges away from the lock.
    segments: Vec<Arc<Segment>>,
    /// (segment id, key): a vector of a segment that is no longer the key's (removed, or
    /// replaced by a newer one elsewhere).
    masked: HashSet<(u64, u64)>,
}

impl Parts {
    /// The highest segment id (0 without segments).
    fn last_id(&self) -> u64 {
        self.segments.iter().map(|s| s.id).max().unwrap_or(0)
    }

    /// Drops `key` wherever it is: out of the delta, masked in the segments holding it.
    fn forget(&mut self, key: u64) -> Result<(), IndexError> {
        if self.delta_keys.remove(&key) {
            self.delta.remove(key).map_err(vx)?;
        }
        let older: Vec<u64> = self.live_in_segments(key).collect();
        for id in older {
            self.masked.insert((id, key));
        }
        Ok(())
    }

    /// Puts `segment`, holding `kept`, in place of the segments `old` (a compaction's or a
    /// merge's): what was masked in them while it was built is masked in it too.
    fn replace(&mut self, old: &[u64], segment: Segment, kept: &[u64]) {
        for key in kept {
            if old.iter().any(|o| self.masked.contains(&(*o, *key))) {
                self.masked.insert((segment.id, *key));
            }
        }
        self.masked.retain(|(s, _)| !old.contains(s));
        self.segments.retain(|s| !old.contains(&s.id));
        self.segments.push(Arc::new(segment));
    }

    /// The segments holding `key` unmasked.
    fn live_in_segments(&self, key: u64) -> impl Iterator<Item = u64> + '_ {
        self.segments.iter().filter(move |s| s.index.contains(key) && !self.masked.contains(&(s.id, key))).map(|s| s.id)
    }
}

/// The vector index.
pub struct VectorIndex {
    parts: RwLock<Parts>,
    /// The delta's snapshot; the segments are in `vectors/` beside it.
    path: PathBuf,
    options: IndexOptions,
    dirty: AtomicBool,
    segment_chunks: AtomicUsize,
    /// Set while a merge builds its segment: the delta is not sealed meanwhile (it may grow
    /// past its size for that while), so the merged segment is the newest when it is written
    /// and no other segment takes its id.
    merging: AtomicBool,
    /// Held by a merge or a compaction, which both write a segment built away from the lock.
    maintenance: parking_lot::Mutex<()>,
    /// Held while the delta's snapshot is written (its temporary files have one name).
    snapshotting: parking_lot::Mutex<()>,
}

/// Clears [`VectorIndex::merging`] however a merge ends.
struct Merging<'a>(&'a AtomicBool);

impl Drop for Merging<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Why the index was rebuilt from the document store on open, if it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// The snapshot matched the document store, or was caught up with it.
    Loaded,
    /// Nothing to load and nothing stored: a new node.
    New,
    Rebuilt {
        reason: String,
        vectors: usize,
    },
}

fn vx(e: impl std::fmt::Display) -> IndexError {
    IndexError::Vectors(e.to_string())
}

fn options(dims: usize, config: &IndexConfig) -> IndexOptions {
    IndexOptions {
        dimensions: dims,
        metric: MetricKind::Cos,
        quantization: match config.quantization {
            Quantization::F32 => ScalarKind::F32,
            Quantization::F16 => ScalarKind::F16,
            Quantization::Bf16 => ScalarKind::BF16,
            Quantization::I8 => ScalarKind::I8,
        },
        connectivity: config.connectivity,
        expansion_add: config.expansion_add,
        expansion_search: config.expansion_search,
        multi: false,
    }
}

fn new_delta(options: &IndexOptions) -> Result<Index, IndexError> {
    let index = Index::new(options).map_err(vx)?;
    index.reserve(1024).map_err(vx)?;
    Ok(index)
}

/// The best `k` of several parts' answers (distance, key), nearest first.
fn merge(mut all: Vec<(u64, f32)>, k: usize) -> Vec<(u64, f32)> {
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    all.truncate(k);
    all.into_iter().map(|(key, d)| (key, 1.0 - d)).collect()
}

impl VectorIndex {
    /// An empty index whose delta snapshots to `path` (and whose segments go to `vectors/`
    /// beside it).
    pub fn new(path: PathBuf, dims: usize, config: &IndexConfig) -> Result<VectorIndex, IndexError> {
        let options = options(dims, config);
        let parts = Parts {
            delta: new_delta(&options)?,
            delta_keys: HashSet::new(),
            segments: Vec::new(),
            masked: HashSet::new(),
        };
        Ok(VectorIndex {
            parts: RwLock::new(parts),
            path,
            options,
            dirty: AtomicBool::new(false),
            segment_chunks: AtomicUsize::new(SEGMENT_CHUNKS),
            merging: AtomicBool::new(false),
            maintenance: parking_lot::Mutex::new(()),
            snapshotting: parking_lot::Mutex::new(()),
        })
    }

    /// Seals the delta at `n` vectors instead of [`SEGMENT_CHUNKS`] (tests and benchmarks).
    pub fn set_segment_chunks(&self, n: usize) {
        self.segment_chunks.store(n.max(1), Ordering::Relaxed);
    }

    fn segments_dir(&self) -> PathBuf {
        self.path.parent().unwrap_or(Path::new(".")).join(segments::DIR)
    }

    /// Loads the snapshot in `dir` and checks it against `store`: catches up what the
    /// snapshot missed, and rebuilds the index when a part cannot be read.
    pub fn open(
        dir: &Path,
        dims: usize,
        config: &IndexConfig,
        store: &DocStore,
    ) -> Result<(VectorIndex, Opened), IndexError> {
        let path = dir.join(FILE);
        let vectors = VectorIndex::new(path.clone(), dims, config)?;
        let has_segments = dir.join(segments::DIR).exists();
        let problem = if path.exists() || has_segments {
            vectors.load_checked(store).err()
        } else {
            Some("no snapshot".to_string())
        };
        let Some(reason) = problem else {
            return Ok((vectors, Opened::Loaded));
        };
        if store.vector_count() == 0 {
            Segment::delete_all(&dir.join(segments::DIR))?;
            return Ok((VectorIndex::new(path, dims, config)?, Opened::New));
        }
        let vectors = VectorIndex::new(path, dims, config)?;
        let n = vectors.rebuild(store)?;
        tracing::warn!(vectors = n, "vector index rebuilt from the document store: {reason}");
        Ok((vectors, Opened::Rebuilt { reason, vectors: n }))
    }

    fn load_checked(&self, store: &DocStore) -> Result<(), String> {
        let dir = self.path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let segments = Segment::open_all(&dir.join(segments::DIR), self.options.expansion_search)?;
        for s in &segments {
            if s.index.dimensions() != self.options.dimensions || s.index.scalar_kind() != self.options.quantization {
                return Err(format!("segment {} was built with other settings than the config's", s.id));
            }
        }
        let last_sealed = segments.iter().map(|s| s.id).max().unwrap_or(0);
        let mut parts = self.parts.write();
        parts.segments = segments.into_iter().map(Arc::new).collect();
        // The delta: its snapshot, unless it is older than the last segment sealed (a crash
        // between the sealing and the next snapshot) — then what it held is caught up below.
        if self.path.exists() {
            verify_snapshot(&dir).map_err(|e| e.to_string())?;
            let keys = std::fs::read(dir.join(KEYS_FILE)).map_err(|e| format!("{KEYS_FILE}: {e}"))?;
            let words: Vec<u64> =
                keys.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
            if words.first().copied() == Some(last_sealed) {
                let path = self.path.to_str().ok_or("data dir path is not UTF-8")?;
                let meta = Index::metadata(path).map_err(|e| format!("unreadable snapshot: {e}"))?;
                if meta.dimensions as usize != self.options.dimensions || meta.quantization != self.options.quantization
                {
                    return Err(format!(
                        "snapshot has {} dims as {:?}; config wants {} as {:?}",
                        meta.dimensions, meta.quantization, self.options.dimensions, self.options.quantization
                    ));
                }
                parts.delta.load(path).map_err(|e| format!("unreadable snapshot: {e}"))?;
                parts.delta.change_expansion_search(self.options.expansion_search);
                parts.delta.change_expansion_add(self.options.expansion_add);
                parts.delta_keys = words[1..].iter().copied().collect();
                if parts.delta.size() != parts.delta_keys.len() {
                    return Err(format!(
                        "snapshot holds {} vectors, its keys file {}",
                        parts.delta.size(),
                        parts.delta_keys.len()
                    ));
                }
            } else {
                tracing::info!("the vector snapshot is older than the last segment: catching up from the store");
                self.dirty.store(true, Ordering::Release);
            }
        }
        // Each key lives in one part: the newest that holds it, if the store still has it.
        let mut live: HashSet<u64> = HashSet::with_capacity(store.vector_count());
        let gone: Vec<u64> = parts.delta_keys.iter().copied().filter(|k| !store.has_vector(*k)).collect();
        for k in gone {
            parts.delta.remove(k).map_err(|e| e.to_string())?;
            parts.delta_keys.remove(&k);
            self.dirty.store(true, Ordering::Release);
        }
        live.extend(parts.delta_keys.iter().copied());
        let mut masked = HashSet::new();
        for s in parts.segments.iter().rev() {
            for key in s.keys(&dir.join(segments::DIR)).map_err(|e| e.to_string())? {
                if live.contains(&key) || !store.has_vector(key) {
                    masked.insert((s.id, key));
                } else {
                    live.insert(key);
                }
            }
        }
        parts.masked = masked;
        let missing = store.vector_count().saturating_sub(live.len());
        drop(parts);
        if missing > 0 {
            // Keys the store has that no part holds: commits after the last snapshot.
            let mut added = 0;
            for entry in store.vectors() {
                let (key, v) = entry.map_err(|e| e.to_string())?;
                if !live.contains(&key) {
                    self.add(key, &v).map_err(|e| e.to_string())?;
                    added += 1;
                }
            }
            tracing::info!(added, "vector index caught up with the document store");
        }
        Ok(())
    }

    /// Re-adds every vector in `store` (the segments are written anew).
    pub fn rebuild(&self, store: &DocStore) -> Result<usize, IndexError> {
        {
            let mut parts = self.parts.write();
            parts.segments.clear();
            parts.masked.clear();
            parts.delta_keys.clear();
            parts.delta = new_delta(&self.options)?;
            Segment::delete_all(&self.segments_dir())?;
        }
        let mut n = 0;
        for entry in store.vectors() {
            let (key, v) = entry?;
            self.add(key, &v)?;
            n += 1;
        }
        Ok(n)
    }

    /// Adds or replaces `key`.
    pub fn add(&self, key: u64, vector: &[f32]) -> Result<(), IndexError> {
        let mut parts = self.parts.write();
        parts.forget(key)?;
        let delta = &parts.delta;
        if delta.size() + 1 > delta.capacity() {
            delta.reserve((delta.capacity() * 2).max(1024)).map_err(vx)?;
        }
        delta.add(key, vector).map_err(vx)?;
        parts.delta_keys.insert(key);
        self.dirty.store(true, Ordering::Release);
        if parts.delta_keys.len() >= self.segment_chunks.load(Ordering::Relaxed)
            && !self.merging.load(Ordering::Acquire)
        {
            self.seal(&mut parts)?;
        }
        Ok(())
    }

    /// Writes the delta as the next segment, views it, and starts an empty delta.
    fn seal(&self, parts: &mut Parts) -> Result<(), IndexError> {
        let id = parts.last_id() + 1;
        let keys: Vec<u64> = parts.delta_keys.iter().copied().collect();
        let segment = Segment::write(&self.segments_dir(), id, &parts.delta, &keys, self.options.expansion_search)?;
        parts.segments.push(Arc::new(segment));
        parts.delta = new_delta(&self.options)?;
        parts.delta_keys.clear();
        // The delta's snapshot is now older than the segment: it is written again (empty)
        // at the next snapshot; a crash before that drops it on open.
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// Rewrites the first segment of which more than half is masked, from the vectors `store`
    /// holds for its live keys (built away from the lock; searches and adds go on meanwhile),
    /// so that pages re-indexed and removed over months do not leave segments of dead vectors
    /// on disk and in every search. Returns whether it rewrote one.
    pub fn compact(&self, store: &DocStore) -> Result<bool, IndexError> {
        let _one = self.maintenance.lock();
        let dir = self.segments_dir();
        let (old, keys) = {
            let parts = self.parts.read();
            let Some(s) = parts.segments.iter().find(|s| {
                let masked = parts.masked.iter().filter(|(id, _)| *id == s.id).count();
                masked * 2 > s.len
            }) else {
                return Ok(false);
            };
            let keys: Vec<u64> = s.keys(&dir)?.into_iter().filter(|k| !parts.masked.contains(&(s.id, *k))).collect();
            (s.id, keys)
        };
        let index = Index::new(&self.options).map_err(vx)?;
        index.reserve(keys.len().max(1)).map_err(vx)?;
        let mut kept = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(v) = store.vector(key)? {
                index.add(key, &v).map_err(vx)?;
                kept.push(key);
            }
        }
        let mut parts = self.parts.write();
        let id = parts.last_id() + 1;
        let segment = Segment::write(&dir, id, &index, &kept, self.options.expansion_search)?;
        parts.replace(&[old], segment, &kept);
        Segment::delete(&dir, old)?;
        // The delta's snapshot names the last segment sealed: written again.
        self.dirty.store(true, Ordering::Release);
        tracing::info!(old, new = id, vectors = kept.len(), "vector segment compacted");
        Ok(true)
    }

    /// Merges the oldest [`MERGE_FANIN`] sealed deltas (segments of at most half
    /// `MERGE_FANIN` × the delta's size) into one, from their own live vectors (read from their
    /// files); returns whether it merged.
    /// The graph is built and written away from the lock (searches and adds go on; the delta is
    /// not sealed meanwhile), then swapped in: the merged segment takes the next id, and what
    /// was masked in the old segments while it was built is masked in it too.
    pub fn merge_small(&self) -> Result<bool, IndexError> {
        let _one = self.maintenance.lock();
        let target = self.segment_chunks.load(Ordering::Relaxed).saturating_mul(MERGE_FANIN);
        self.merging.store(true, Ordering::Release);
        let _merging = Merging(&self.merging);
        let dir = self.segments_dir();
        let (old, keys, id) = {
            let parts = self.parts.read();
            // Sealed deltas (~16k each), not merged segments (~65k): half the target tells them
            // apart, so a merged segment is not merged again into ever larger graphs (recall
            // falls as one graph grows; a compaction rewrites one left mostly masked).
            let mut small: Vec<&Arc<Segment>> = parts.segments.iter().filter(|s| s.len <= target / 2).collect();
            if small.len() < MERGE_FANIN {
                return Ok(false);
            }
            small.sort_by_key(|s| s.id);
            let old: Vec<u64> = small[..MERGE_FANIN].iter().map(|s| s.id).collect();
            // Each old segment with its live keys.
            let mut keys = Vec::new();
            for s in &small[..MERGE_FANIN] {
                let live: Vec<u64> =
                    s.keys(&dir)?.into_iter().filter(|k| !parts.masked.contains(&(s.id, *k))).collect();
                keys.push((Arc::clone(s), live));
            }
            (old, keys, parts.last_id() + 1)
        };
        let index = Index::new(&self.options).map_err(vx)?;
        index.reserve(keys.iter().map(|(_, k)| k.len()).sum::<usize>().max(1)).map_err(vx)?;
        let mut kept = Vec::new();
        let mut v = vec![0f32; self.options.dimensions];
        for (segment, live) in keys {
            for key in live {
                if segment.index.get(key, &mut v).map_err(vx)? > 0 {
                    index.add(key, &v).map_err(vx)?;
                    kept.push(key);
                }
            }
        }
        // No segment was sealed or compacted meanwhile (`merging`, `maintenance`): `id` is
        // still the next one.
        let segment = Segment::write(&dir, id, &index, &kept, self.options.expansion_search)?;
        drop(index);
        self.parts.write().replace(&old, segment, &kept);
        self.dirty.store(true, Ordering::Release);
        for o in &old {
            Segment::delete(&dir, *o)?;
        }
        tracing::info!(?old, new = id, vectors = kept.len(), "vector segments merged");
        // The delta's snapshot names the last segment: written now, so that a crash finds the
        // delta it holds newer than the merged segment.
        self.snapshot()?;
        Ok(true)
    }

    pub fn remove(&self, key: u64) -> Result<(), IndexError> {
        self.parts.write().forget(key)?;
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// The `k` nearest keys to `query` with their cosine similarity, best first: the best of
    /// the delta and of every segment (masked keys skipped).
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let parts = self.parts.read();
        if k == 0 {
            return Ok(Vec::new());
        }
        let mut all = Vec::new();
        if parts.delta.size() > 0 {
            let m = parts.delta.search(query, k).map_err(vx)?;
            all.extend(m.keys.into_iter().zip(m.distances));
        }
        for s in &parts.segments {
            let m = if parts.masked.is_empty() {
                s.index.search(query, k)
            } else {
                s.index.filtered_search(query, k, |key| !parts.masked.contains(&(s.id, key)))
            };
            let m = m.map_err(vx)?;
            all.extend(m.keys.into_iter().zip(m.distances));
        }
        Ok(merge(all, k))
    }

    /// Brute-force search (for measuring the HNSW index's recall).
    pub fn exact_search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let parts = self.parts.read();
        let mut all = Vec::new();
        if parts.delta.size() > 0 {
            let m = parts.delta.exact_search(query, k).map_err(vx)?;
            all.extend(m.keys.into_iter().zip(m.distances));
        }
        for s in &parts.segments {
            let masked = parts.masked.iter().filter(|(id, _)| *id == s.id).count();
            let m = s.index.exact_search(query, k + masked).map_err(vx)?;
            let kept = m.keys.into_iter().zip(m.distances).filter(|(key, _)| !parts.masked.contains(&(s.id, *key)));
            all.extend(kept);
        }
        Ok(merge(all, k))
    }

    pub fn contains(&self, key: u64) -> bool {
        let parts = self.parts.read();
        parts.delta_keys.contains(&key) || parts.live_in_segments(key).next().is_some()
    }

    pub fn len(&self) -> usize {
        let parts = self.parts.read();
        parts.delta_keys.len() + parts.segments.iter().map(|s| s.len).sum::<usize>() - parts.masked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the index's files take on disk (the delta's snapshot and the segments).
    pub fn disk_bytes(&self) -> u64 {
        disk_bytes(self.path.parent().unwrap_or(Path::new(".")))
    }

    /// Sealed segments, and the vectors masked in them.
    pub fn segments(&self) -> (usize, usize) {
        let parts = self.parts.read();
        (parts.segments.len(), parts.masked.len())
    }

    /// Bytes the index holds in memory: the delta, and what USearch keeps of each segment's
    /// view (its key lookup; the vectors and graph stay in the mapped file).
    pub fn memory_usage(&self) -> usize {
        let parts = self.parts.read();
        parts.delta.memory_usage() + parts.segments.iter().map(|s| s.index.memory_usage()).sum::<usize>()
    }

    /// Writes the delta's snapshot if anything changed since the last one: temp file, fsync,
    /// rename, fsync the directory. Returns whether it wrote.
    pub fn snapshot(&self) -> Result<bool, IndexError> {
        let _one = self.snapshotting.lock();
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return Ok(false);
        }
        let result = self.write_snapshot();
        if result.is_err() {
            self.dirty.store(true, Ordering::Release);
        }
        result.map(|_| true)
    }

    fn write_snapshot(&self) -> Result<(), IndexError> {
        let tmp = self.path.with_extension("usearch.tmp");
        let tmp_str = tmp.to_str().ok_or_else(|| vx("data dir path is not UTF-8"))?;
        let keys_path = self.path.with_extension("usearch.keys");
        let keys_tmp = self.path.with_extension("usearch.keys.tmp");
        {
            // Read lock: searches go on, writers wait, so the files are one consistent state.
            let parts = self.parts.read();
            parts.delta.save(tmp_str).map_err(vx)?;
            let last_sealed = parts.last_id();
            let words = std::iter::once(last_sealed).chain(parts.delta_keys.iter().copied());
            std::fs::write(&keys_tmp, words.flat_map(u64::to_le_bytes).collect::<Vec<u8>>())?;
        }
        File::open(&tmp)?.sync_all()?;
        File::open(&keys_tmp)?.sync_all()?;
        // The checksum is renamed into place after the snapshot: a crash in between leaves a
        // snapshot that fails its check, and is rebuilt from the store (slower, never wrong).
        let sum = self.path.with_extension("usearch.blake3");
        let sum_tmp = self.path.with_extension("usearch.blake3.tmp");
        std::fs::write(&sum_tmp, hash_file(&tmp)?)?;
        File::open(&sum_tmp)?.sync_all()?;
        std::fs::rename(&keys_tmp, &keys_path)?;
        std::fs::rename(&tmp, &self.path)?;
        std::fs::rename(&sum_tmp, &sum)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}
