//! The vector index's sealed segments on real files (USearch views of them, sled beside):
//! vectors sealed into segments are searched from disk with the delta's, a key replaced or
//! removed is masked in its segment, a reopen checks every part against sled — catching up
//! after a crash instead of rebuilding — and a segment whose bytes changed is rebuilt, never
//! trusted.

use weft_index::store::{ChunkRecord, NewChunk};
use weft_index::testing::open_index;
use weft_index::vectors::Opened;
use weft_index::{DocId, LocalIndex};

/// Seeded unit vectors of the index's 384 dimensions.
fn vectors(n: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut s = seed;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f32 / (1u64 << 53) as f32 - 0.5
    };
    (0..n)
        .map(|_| {
            let mut v: Vec<f32> = (0..384).map(|_| next()).collect();
            weft_index::embed::normalize(&mut v);
            v
        })
        .collect()
}

fn id(i: usize) -> DocId {
    DocId::of_url(&format!("http://s.test/{i}"))
}

/// Page `i` with one chunk whose vector is `v`.
fn commit(index: &LocalIndex, i: usize, v: &[f32]) {
    let (url, text) = (format!("http://s.test/{i}"), format!("chunk of page {i}"));
    let chunk = NewChunk {
        key: id(i).chunk_key(0),
        record: ChunkRecord::new(id(i), 0, 0, text.len(), 4, &text),
        vector: v.to_vec(),
    };
    let record = weft_index::testing::indexed_record(&url, &format!("Page {i}"), 100, 4, vec![chunk.key]);
    index.commit(id(i), &record, vec![chunk]).unwrap();
}

/// The key `v` is nearest to, and its similarity.
fn nearest(index: &LocalIndex, v: &[f32]) -> (u64, f32) {
    index.vectors().search(v, 1).unwrap()[0]
}

#[test]
fn sealed_segments_are_searched_masked_checked_on_open_and_rebuilt_when_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let vs = vectors(44, 7);
    let other = vectors(1, 99).remove(0);
    {
        let (_db, index) = open_index(dir.path());
        index.vectors().set_segment_chunks(8);
        for (i, v) in vs.iter().enumerate().take(40) {
            commit(&index, i, v);
        }
        assert_eq!(index.vectors().segments(), (5, 0), "forty vectors, five sealed segments of eight");
        assert_eq!(index.vectors().len(), 40);
        for (i, v) in vs.iter().enumerate().take(40) {
            let (key, sim) = nearest(&index, v);
            assert_eq!(key, id(i).chunk_key(0), "vector {i}");
            assert!(sim > 0.99);
        }
        // Page 3 changes: its old vector is masked in its segment, the new one found.
        commit(&index, 3, &other);
        assert_eq!(index.vectors().segments(), (5, 1));
        assert_eq!(nearest(&index, &other).0, id(3).chunk_key(0));
        assert_ne!(nearest(&index, &vs[3]).0, id(3).chunk_key(0), "the old vector is not served");
        // Page 5 is removed: masked, never served.
        assert!(index.remove(id(5)).unwrap());
        assert!(!index.vectors().contains(id(5).chunk_key(0)));
        assert_ne!(nearest(&index, &vs[5]).0, id(5).chunk_key(0));
        assert_eq!(index.vectors().len(), 39);
        let exact = index.vectors().exact_search(&vs[5], 3).unwrap();
        assert!(exact.iter().all(|(k, _)| *k != id(5).chunk_key(0)), "nor by the exact search");
        assert!(index.snapshot().unwrap());
    }
    assert_eq!(weft_index::vectors::verify_snapshot(dir.path()), Ok(true));
    {
        // Reopened: the same parts, the masks found again from sled.
        let (_db, index) = open_index(dir.path());
        assert_eq!(*index.opened(), Opened::Loaded);
        assert_eq!(index.vectors().segments(), (5, 2));
        assert_eq!(index.vectors().len(), 39);
        assert_eq!(nearest(&index, &other).0, id(3).chunk_key(0));
        assert_ne!(nearest(&index, &vs[5]).0, id(5).chunk_key(0));
        // A crash after these commits and before the next snapshot:
        for (i, v) in vs.iter().enumerate().skip(40) {
            commit(&index, i, v);
        }
        index.store().flush().unwrap();
    }
    {
        // Caught up from sled, not rebuilt.
        let (_db, index) = open_index(dir.path());
        assert_eq!(*index.opened(), Opened::Loaded);
        assert_eq!(index.vectors().len(), 43);
        assert_eq!(nearest(&index, &vs[42]).0, id(42).chunk_key(0));
        // The first segment held pages 0 to 7; 3 and 5 are masked there already. Three more
        // removed make it mostly masked: it is rewritten with the three left at the next
        // snapshot, and its masks go with it.
        for i in 0..3 {
            assert!(index.remove(id(i)).unwrap());
        }
        assert_eq!(index.vectors().segments(), (5, 5));
        index.snapshot().unwrap();
        assert_eq!(index.vectors().segments(), (5, 0), "one segment out, one in: no masks left");
        assert!(!dir.path().join("vectors/seg-000001.usearch").exists());
        assert!(dir.path().join("vectors/seg-000006.usearch").exists());
        assert_eq!(index.vectors().len(), 40);
        for i in [4, 6, 7] {
            assert_eq!(nearest(&index, &vs[i]).0, id(i).chunk_key(0), "vector {i} kept");
        }
        for i in 0..3 {
            assert!(!index.vectors().contains(id(i).chunk_key(0)));
        }
    }
    {
        let (_db, index) = open_index(dir.path());
        assert_eq!(*index.opened(), Opened::Loaded);
        assert_eq!((index.vectors().len(), index.vectors().segments()), (40, (5, 0)));
    }
    // A flipped byte in a segment: the check says which, and the index is rebuilt from sled.
    let seg = dir.path().join("vectors/seg-000002.usearch");
    let mut bytes = std::fs::read(&seg).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&seg, &bytes).unwrap();
    let why = weft_index::vectors::verify_snapshot(dir.path()).unwrap_err();
    assert!(
        matches!(&why, weft_index::vectors::SnapshotDamage::Changed(p) if p.to_string_lossy().contains("seg-000002")),
        "{why}"
    );
    let (_db, index) = open_index(dir.path());
    let Opened::Rebuilt { reason, vectors } = index.opened() else { panic!("{:?}", index.opened()) };
    assert!(reason.contains("checksum"), "{reason}");
    assert_eq!(*vectors, 40);
    assert_eq!(index.vectors().segments(), (0, 0), "the default segment holds them all: no seal yet");
    for (i, v) in vs.iter().enumerate().filter(|(i, _)| ![0, 1, 2, 3, 5].contains(i)) {
        assert_eq!(nearest(&index, v).0, id(i).chunk_key(0), "vector {i} after the rebuild");
    }
    assert!(index.snapshot().unwrap());
    assert_eq!(weft_index::vectors::verify_snapshot(dir.path()), Ok(true), "sound again");
}

#[test]
fn small_segments_are_merged_four_at_a_time_keeping_every_live_vector_and_no_masked_one() {
    let dir = tempfile::tempdir().unwrap();
    let vs = vectors(22, 11);
    let other = vectors(1, 77).remove(0);
    {
        let (_db, index) = open_index(dir.path());
        index.vectors().set_segment_chunks(4);
        for (i, v) in vs.iter().enumerate().take(20) {
            commit(&index, i, v);
        }
        assert_eq!(index.vectors().segments(), (5, 0), "twenty vectors, five sealed deltas of four");
        // Page 1 changes (its old vector masked in segment 1), page 2 goes (masked too).
        commit(&index, 1, &other);
        assert!(index.remove(id(2)).unwrap());
        assert_eq!(index.vectors().segments(), (5, 2));
        assert!(index.merge_segments().unwrap(), "five small segments: the oldest four merge");
        // Segments 1-4 became one (14 vectors: 16 less the two masked), the fifth is left.
        assert_eq!(index.vectors().segments(), (2, 0), "no masks carried: the masked vectors stayed out");
        assert!(!dir.path().join("vectors/seg-000001.usearch").exists());
        assert!(dir.path().join("vectors/seg-000006.usearch").exists());
        assert!(!index.merge_segments().unwrap(), "one small segment left, and the merged one is not small");
        assert_eq!(index.vectors().len(), 19);
        for (i, v) in vs.iter().enumerate().take(20).filter(|(i, _)| ![1, 2].contains(i)) {
            let (key, sim) = nearest(&index, v);
            assert_eq!(key, id(i).chunk_key(0), "vector {i} after the merge");
            assert!(sim > 0.99, "vector {i} read back from its segment: {sim}");
        }
        assert_eq!(nearest(&index, &other).0, id(1).chunk_key(0), "page 1's new vector");
        assert_ne!(nearest(&index, &vs[2]).0, id(2).chunk_key(0), "the removed page is not served");
        // After the merge, a key of the merged segment replaced: masked there.
        commit(&index, 7, &vs[20]);
        assert_eq!(index.vectors().segments(), (2, 1));
        assert_eq!(nearest(&index, &vs[20]).0, id(7).chunk_key(0));
        commit(&index, 21, &vs[21]);
        index.snapshot().unwrap();
    }
    assert_eq!(weft_index::vectors::verify_snapshot(dir.path()), Ok(true));
    // Reopened: the merged segment checks out against the store, nothing rebuilt.
    let (_db, index) = open_index(dir.path());
    assert_eq!(*index.opened(), Opened::Loaded);
    assert_eq!(index.vectors().segments(), (2, 1));
    assert_eq!(index.vectors().len(), 20);
    assert_eq!(nearest(&index, &vs[20]).0, id(7).chunk_key(0));
    assert_eq!(nearest(&index, &vs[21]).0, id(21).chunk_key(0));
    for i in [0, 3, 4, 8, 13, 19] {
        assert_eq!(nearest(&index, &vs[i]).0, id(i).chunk_key(0), "vector {i} after the reopen");
    }
}
