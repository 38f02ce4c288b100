//! Sealed segments of the vector index: HNSW graphs written once, then searched from disk.
//!
//! The vector index keeps only its newest vectors in memory (the delta, see
//! [`crate::vectors`]); when the delta reaches a segment's size it is written here and from then
//! on searched through USearch's memory-mapped *view* of the file — its vectors and graph stay on
//! disk, and the pages a search touches are the kernel's page cache, which it takes back under
//! memory pressure. A node's memory then stays flat as its index grows to millions of chunks.
//!
//! A segment is three files in `vectors/`: `seg-NNNNNN.usearch` (the graph and vectors),
//! `seg-NNNNNN.keys` (its keys, little-endian u64s: what it holds, for checking it against the
//! document store on open and for compaction — USearch cannot list a view's keys) and
//! `seg-NNNNNN.blake3` (the checksum of the other two). The checksum is renamed into place
//! last: a segment exists once its checksum does, and a crash mid-write leaves files without one,
//! which the next open deletes. Segments never change after that; a key removed or replaced
//! later is masked by the vector index, not rewritten here.

use crate::IndexError;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use usearch::Index;

/// The directory of the segments, beside the delta's snapshot.
pub const DIR: &str = "vectors";

fn vx(e: impl std::fmt::Display) -> IndexError {
    IndexError::Vectors(e.to_string())
}

/// One sealed segment, viewed from its file.
pub struct Segment {
    pub id: u64,
    /// The view; it points into `map`, so it is declared (and dropped) first.
    pub index: Index,
    /// Vectors it holds (masked ones included).
    pub len: usize,
    /// The segment's file, mapped read-only (never written after the segment is complete):
    /// held for the view, which reads it.
    _map: memmap2::Mmap,
}

fn path(dir: &Path, id: u64, ext: &str) -> PathBuf {
    dir.join(format!("seg-{id:06}.{ext}"))
}

/// The checksum of a segment's graph and keys.
fn checksum(graph: &Path, keys: &Path) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(File::open(graph)?)?;
    hasher.update_reader(File::open(keys)?)?;
    Ok(hasher.finalize().to_hex().to_string())
}

fn str_path(p: &Path) -> Result<&str, IndexError> {
    p.to_str().ok_or_else(|| vx("data dir path is not UTF-8"))
}

/// What is wrong with a vector snapshot on disk (the node then rebuilds it from the document
/// store).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotDamage {
    #[error("the snapshot has no checksum")]
    NoChecksum,
    #[error("cannot read {what}: {error}")]
    Unreadable { what: String, error: String },
    #[error("{} does not match its checksum: its bytes changed on disk", .0.display())]
    Changed(std::path::PathBuf),
}

impl Segment {
    /// Writes `index` (holding exactly `keys`) as segment `id` in `dir` — each file to a
    /// temporary name, fsynced, renamed, the checksum last, the directory fsynced — and opens
    /// its view with `expansion_search`.
    pub fn write(
        dir: &Path,
        id: u64,
        index: &Index,
        keys: &[u64],
        expansion_search: usize,
    ) -> Result<Segment, IndexError> {
        std::fs::create_dir_all(dir)?;
        let (graph, keys_file, sum) = (path(dir, id, "usearch"), path(dir, id, "keys"), path(dir, id, "blake3"));
        let tmp = |p: &Path| p.with_extension(format!("{}.tmp", p.extension().and_then(|e| e.to_str()).unwrap_or("")));
        index.save(str_path(&tmp(&graph))?).map_err(vx)?;
        File::open(tmp(&graph))?.sync_all()?;
        let mut f = File::create(tmp(&keys_file))?;
        let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::write(tmp(&sum), checksum(&tmp(&graph), &tmp(&keys_file))?)?;
        File::open(tmp(&sum))?.sync_all()?;
        std::fs::rename(tmp(&graph), &graph)?;
        std::fs::rename(tmp(&keys_file), &keys_file)?;
        std::fs::rename(tmp(&sum), &sum)?;
        File::open(dir)?.sync_all()?;
        Segment::view(dir, id, keys.len(), expansion_search)
    }

    /// Views segment `id`'s file. The file is mapped here rather than by USearch (its
    /// `restore_view`) so that the pages its view reads while opening can be handed back:
    /// opening a view walks every node of the graph to find where each begins, which left the
    /// whole graph (~17% of the file) mapped in this process and counted in its resident memory
    /// — growing with the index, though no search had asked for it. After the walk the pages
    /// are dropped from the mapping (they stay in the kernel's page cache while it has room);
    /// a search maps back only the pages it reads.
    fn view(dir: &Path, id: u64, len: usize, expansion_search: usize) -> Result<Segment, IndexError> {
        let file = File::open(path(dir, id, "usearch"))?;
        // SAFETY: a segment's file is complete (its checksum is written last) and never
        // written again; a later merge or compaction deletes it, which leaves a mapping intact.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        let index = Index::new(&Index::metadata_from_buffer(&map).map_err(vx)?.into()).map_err(vx)?;
        // SAFETY: `map` outlives `index`: both live in the `Segment`, `index` dropped first.
        unsafe { index.view_from_buffer(&map) }.map_err(vx)?;
        // SAFETY: a read-only shared mapping of a file: dropping its pages loses nothing, the
        // next read maps them again from the page cache (or the file).
        let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        index.change_expansion_search(expansion_search);
        if index.size() != len {
            return Err(vx(format!("segment {id} holds {} vectors, its keys file {len}", index.size())));
        }
        Ok(Segment { id, index, len, _map: map })
    }

    /// Every complete segment in `dir`, in id order, each checked against its checksum and
    /// viewed; files of a segment whose checksum was never written (a crash mid-write) are
    /// deleted. An error names a segment that fails its check (the caller rebuilds).
    pub fn open_all(dir: &Path, expansion_search: usize) -> Result<Vec<Segment>, String> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
        let mut ids = Vec::new();
        let mut stray = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            match name.strip_prefix("seg-").and_then(|r| r.split_once('.')) {
                Some((id, "blake3")) => ids.extend(id.parse::<u64>().ok()),
                _ => stray.push(e.path()),
            }
        }
        ids.sort_unstable();
        for p in stray {
            let complete = ids.iter().any(|id| p == path(dir, *id, "usearch") || p == path(dir, *id, "keys"));
            if !complete {
                let _ = std::fs::remove_file(&p);
            }
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let (graph, keys) = (path(dir, id, "usearch"), path(dir, id, "keys"));
            let expected =
                std::fs::read_to_string(path(dir, id, "blake3")).map_err(|e| format!("segment {id}: {e}"))?;
            let actual = checksum(&graph, &keys).map_err(|e| format!("segment {id}: {e}"))?;
            if actual != expected.trim() {
                return Err(format!("segment {id} does not match its checksum: its bytes changed on disk"));
            }
            let len = std::fs::metadata(&keys).map_err(|e| format!("segment {id}: {e}"))?.len() as usize / 8;
            out.push(Segment::view(dir, id, len, expansion_search).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }

    /// The keys this segment holds, in the order they were added (read from its keys file).
    pub fn keys(&self, dir: &Path) -> Result<Vec<u64>, IndexError> {
        let bytes = std::fs::read(path(dir, self.id, "keys"))?;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    }

    /// Deletes every segment file in `dir` (a rebuild starts over).
    pub fn delete_all(dir: &Path) -> Result<(), IndexError> {
        if dir.exists() {
            for e in std::fs::read_dir(dir)?.flatten() {
                if e.file_name().to_string_lossy().starts_with("seg-") {
                    std::fs::remove_file(e.path())?;
                }
            }
        }
        Ok(())
    }

    /// Deletes this segment's files, checksum first (so a crash midway leaves no segment).
    pub fn delete(dir: &Path, id: u64) -> Result<(), IndexError> {
        for ext in ["blake3", "usearch", "keys"] {
            match std::fs::remove_file(path(dir, id, ext)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether every segment in `dir` matches its checksum (what `weft doctor` checks).
    pub fn verify_all(dir: &Path) -> Result<usize, SnapshotDamage> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Ok(0) };
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(id) = name.strip_prefix("seg-").and_then(|r| r.strip_suffix(".blake3")) else { continue };
            let Ok(id) = id.parse::<u64>() else { continue };
            let unreadable = |error: std::io::Error| SnapshotDamage::Unreadable {
                what: format!("segment {id}"),
                error: error.to_string(),
            };
            let expected = std::fs::read_to_string(e.path()).map_err(unreadable)?;
            let actual = checksum(&path(dir, id, "usearch"), &path(dir, id, "keys")).map_err(unreadable)?;
            if actual != expected.trim() {
                return Err(SnapshotDamage::Changed(path(dir, id, "usearch")));
            }
            n += 1;
        }
        Ok(n)
    }

    /// Bytes the segments in `dir` take on disk.
    pub fn disk_bytes(dir: &Path) -> u64 {
        crate::dir_bytes(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use usearch::{IndexOptions, MetricKind, ScalarKind};

    /// Resident KiB of the mappings of `file` in this process (its lines of `/proc/self/smaps`).
    fn resident_kib(file: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let name = file.to_str().unwrap();
        let mut ours = false;
        let mut kib = 0;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if first.contains('-') && !first.ends_with(':') {
                ours = line.ends_with(name);
            } else if ours && first == "Rss:" {
                kib += line.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            }
        }
        kib
    }

    /// Opening a segment's view reads every node of its graph; those pages are handed back
    /// afterwards, so a segment nobody searched holds next to nothing resident, and a search
    /// still finds its vectors (mapping back the pages it reads).
    #[test]
    fn an_opened_segment_holds_little_resident_and_still_answers() {
        let dir = tempfile::tempdir().unwrap();
        let dims = 64;
        let options = IndexOptions {
            dimensions: dims,
            metric: MetricKind::Cos,
            quantization: ScalarKind::F16,
            connectivity: 16,
            expansion_add: 64,
            expansion_search: 64,
            multi: false,
        };
        let index = Index::new(&options).unwrap();
        let n = 20_000u64;
        index.reserve(n as usize).unwrap();
        let vector = |k: u64| -> Vec<f32> {
            (0..dims as u64).map(|i| ((k.wrapping_mul(2_654_435_761) ^ (i * 40_503)) % 1000) as f32 - 500.0).collect()
        };
        for k in 0..n {
            index.add(k, &vector(k)).unwrap();
        }
        let keys: Vec<u64> = (0..n).collect();
        let segment = Segment::write(dir.path(), 1, &index, &keys, 64).unwrap();
        drop(index);
        let file = path(dir.path(), 1, "usearch");
        let size_kib = std::fs::metadata(&file).unwrap().len() / 1024;
        let resident = resident_kib(&file);
        assert!(resident * 20 < size_kib, "{resident} KiB of the {size_kib} KiB file resident after opening");
        let found = segment.index.search(&vector(4242), 1).unwrap();
        assert_eq!(found.keys.first(), Some(&4242));
        assert!(resident_kib(&file) > 0, "the search mapped the pages it read");
        // Opened again from disk (as a node that restarts), the same holds.
        drop(segment);
        let segments = Segment::open_all(dir.path(), 64).unwrap();
        assert_eq!(segments.len(), 1);
        assert!(resident_kib(&file) * 20 < size_kib);
        assert_eq!(segments[0].index.search(&vector(77), 1).unwrap().keys.first(), Some(&77));
    }
}
