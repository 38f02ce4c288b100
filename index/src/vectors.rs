//! The HNSW vector index (USearch, cosine), and how it survives crashes.
//!
//! The index lives in memory and is written to `vectors.usearch` in the data dir on a timer and
//! at shutdown: to a temporary file first, fsynced, then renamed over the old snapshot and the
//! directory fsynced, so a crash mid-write leaves the previous snapshot intact. Between
//! snapshots the vectors are safe anyway: sled holds every chunk's vector (see
//! [`crate::store`]). On open, a snapshot that disagrees with sled — missing, unreadable, built
//! with other settings, or simply older than the last commit — is rebuilt from sled's vectors.
//! Each snapshot is written with its BLAKE3 checksum (`vectors.usearch.blake3`): a snapshot
//! whose bytes changed on disk (a flipped byte in the middle of the vectors loads without an
//! error and silently changes search results) is rebuilt too, and `weft doctor` says so.
//!
//! Scalar quantization is configurable (`index.quantization`, default f16: half the memory of
//! f32, recall unchanged for unit vectors; measured in docs/src/benchmarks.md).

use crate::store::DocStore;
use crate::IndexError;
use parking_lot::RwLock;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};
use weft_config::{IndexConfig, Quantization};

/// File name of the snapshot in the data dir.
pub const FILE: &str = "vectors.usearch";
/// File name of the snapshot's checksum (hex BLAKE3 of the snapshot's bytes).
pub const CHECKSUM_FILE: &str = "vectors.usearch.blake3";

fn hash_file(path: &Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(File::open(path)?)?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// Whether the snapshot in `dir` is the one its checksum was written for. `Ok(false)`: there
/// is no snapshot. An error says what is wrong (the node rebuilds the snapshot from sled).
pub fn verify_snapshot(dir: &Path) -> Result<bool, String> {
    let path = dir.join(FILE);
    if !path.exists() {
        return Ok(false);
    }
    let expected = match std::fs::read_to_string(dir.join(CHECKSUM_FILE)) {
        Ok(s) => s.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("the snapshot has no checksum".into()),
        Err(e) => return Err(format!("cannot read {CHECKSUM_FILE}: {e}")),
    };
    let actual = hash_file(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if actual != expected {
        return Err(format!("{} does not match its checksum: its bytes changed on disk", path.display()));
    }
    Ok(true)
}

/// The vector index.
pub struct VectorIndex {
    index: RwLock<Index>,
    path: PathBuf,
    options: IndexOptions,
    dirty: AtomicBool,
}

/// Why the index was rebuilt from sled on open, if it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// The snapshot matched sled.
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

impl VectorIndex {
    /// An empty in-memory index that snapshots to `path`.
    pub fn new(path: PathBuf, dims: usize, config: &IndexConfig) -> Result<VectorIndex, IndexError> {
        let options = options(dims, config);
        let index = Index::new(&options).map_err(vx)?;
        index.reserve(1024).map_err(vx)?;
        Ok(VectorIndex { index: RwLock::new(index), path, options, dirty: AtomicBool::new(false) })
    }

    /// Loads the snapshot in `dir` and checks it against `store`; rebuilds it if they differ.
    pub fn open(
        dir: &Path,
        dims: usize,
        config: &IndexConfig,
        store: &DocStore,
    ) -> Result<(VectorIndex, Opened), IndexError> {
        let path = dir.join(FILE);
        let vectors = VectorIndex::new(path.clone(), dims, config)?;
        let problem = if path.exists() { vectors.load_checked(store).err() } else { Some("no snapshot".to_string()) };
        let Some(reason) = problem else {
            return Ok((vectors, Opened::Loaded));
        };
        if store.vector_count() == 0 {
            return Ok((VectorIndex::new(path, dims, config)?, Opened::New));
        }
        let vectors = VectorIndex::new(path, dims, config)?;
        let n = vectors.rebuild(store)?;
        tracing::warn!(vectors = n, "vector index rebuilt from the document store: {reason}");
        Ok((vectors, Opened::Rebuilt { reason, vectors: n }))
    }

    fn load_checked(&self, store: &DocStore) -> Result<(), String> {
        verify_snapshot(self.path.parent().unwrap_or(Path::new(".")))?;
        let path = self.path.to_str().ok_or("data dir path is not UTF-8")?;
        let meta = Index::metadata(path).map_err(|e| format!("unreadable snapshot: {e}"))?;
        if meta.dimensions as usize != self.options.dimensions || meta.quantization != self.options.quantization {
            return Err(format!(
                "snapshot has {} dims as {:?}; config wants {} as {:?}",
                meta.dimensions, meta.quantization, self.options.dimensions, self.options.quantization
            ));
        }
        let index = self.index.write();
        index.load(path).map_err(|e| format!("unreadable snapshot: {e}"))?;
        index.change_expansion_search(self.options.expansion_search);
        index.change_expansion_add(self.options.expansion_add);
        if index.size() != store.vector_count() {
            return Err(format!("snapshot holds {} vectors, the store {}", index.size(), store.vector_count()));
        }
        for entry in store.vectors() {
            let (key, _) = entry.map_err(|e| e.to_string())?;
            if !index.contains(key) {
                return Err("snapshot is older than the store".into());
            }
        }
        Ok(())
    }

    /// Re-adds every vector in `store`.
    pub fn rebuild(&self, store: &DocStore) -> Result<usize, IndexError> {
        {
            let index = self.index.write();
            index.reset().map_err(vx)?;
            index.reserve(store.vector_count().max(1024)).map_err(vx)?;
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
        let index = self.index.write();
        if index.contains(key) {
            index.remove(key).map_err(vx)?;
        }
        if index.size() + 1 > index.capacity() {
            index.reserve((index.capacity() * 2).max(1024)).map_err(vx)?;
        }
        index.add(key, vector).map_err(vx)?;
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    pub fn remove(&self, key: u64) -> Result<(), IndexError> {
        self.index.write().remove(key).map_err(vx)?;
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// The `k` nearest keys to `query` with their cosine similarity, best first.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let index = self.index.read();
        if index.size() == 0 || k == 0 {
            return Ok(Vec::new());
        }
        let m = index.search(query, k).map_err(vx)?;
        Ok(m.keys.into_iter().zip(m.distances).map(|(key, d)| (key, 1.0 - d)).collect())
    }

    /// Brute-force search (for measuring the HNSW index's recall).
    pub fn exact_search(&self, query: &[f32], k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        let index = self.index.read();
        let m = index.exact_search(query, k).map_err(vx)?;
        Ok(m.keys.into_iter().zip(m.distances).map(|(key, d)| (key, 1.0 - d)).collect())
    }

    pub fn contains(&self, key: u64) -> bool {
        self.index.read().contains(key)
    }

    pub fn len(&self) -> usize {
        self.index.read().size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the index holds in memory.
    pub fn memory_usage(&self) -> usize {
        self.index.read().memory_usage()
    }

    /// Writes the snapshot if anything changed since the last one: temp file, fsync, rename,
    /// fsync the directory. Returns whether it wrote.
    pub fn snapshot(&self) -> Result<bool, IndexError> {
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
        // Read lock: searches go on, writers wait, so the file is one consistent state.
        self.index.read().save(tmp_str).map_err(vx)?;
        File::open(&tmp)?.sync_all()?;
        // The checksum is renamed into place after the snapshot: a crash in between leaves a
        // snapshot that fails its check, and is rebuilt from sled (slower, never wrong).
        let sum = self.path.with_extension("usearch.blake3");
        let sum_tmp = self.path.with_extension("usearch.blake3.tmp");
        std::fs::write(&sum_tmp, hash_file(&tmp)?)?;
        File::open(&sum_tmp)?.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        std::fs::rename(&sum_tmp, &sum)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}
