//! The seen-set in generations: its memory stays fixed however many URLs a crawl meets, and
//! what its filters forgot the store still knows (real fjall and sled files).

mod common;
use std::time::{Duration, Instant};
use weft_frontier::*;

fn settings() -> FrontierSettings {
    let mut s = FrontierSettings::default();
    s.politeness.default_delay = Duration::ZERO;
    // Two generations of 500 URLs each: the crawl below meets twelve times that.
    s.seen_capacity = 1_000;
    s
}

fn page(u: &str) -> Candidate {
    common::page(u, 1)
}

fn open(dir: &std::path::Path) -> (sled::Db, Frontier) {
    common::open(dir, settings())
}

fn ours(i: usize) -> String {
    format!("http://a.test/p/{i}")
}

#[test]
fn a_url_the_seen_set_forgot_is_still_not_queued_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path());
    // All queued but for the rare Bloom false positive (a new URL taken for seen).
    let ours_queued: Vec<usize> =
        (0..300).filter(|&i| f.push(page(&ours(i))).unwrap() == PushOutcome::Queued).collect();
    assert!(ours_queued.len() >= 295, "{}", ours_queued.len());
    // A hundred of them fetched: they leave the queue for the host's done list.
    let mut done = 0;
    while done < 100 {
        match f.next(Instant::now()).unwrap() {
            Next::Ready(l) => {
                f.complete(l, Completion::Done { page: true }, true, Instant::now()).unwrap();
                done += 1;
            }
            other => panic!("expected a ready URL, got {other:?}"),
        }
    }
    let memory = |f: &Frontier| f.stats().seen_bytes;
    for i in 0..6_000 {
        f.push(page(&format!("http://b{}.test/q/{i}", i % 40))).unwrap();
    }
    let after_rotations = memory(&f);
    for i in 6_000..12_000 {
        f.push(page(&format!("http://b{}.test/q/{i}", i % 40))).unwrap();
    }
    assert_eq!(memory(&f), after_rotations, "twelve times the capacity, memory unchanged");
    let queued = f.stats().queued;
    // a.test's URLs are long gone from the filters: met again, the store answers for them.
    for &i in &ours_queued {
        assert_eq!(f.push(page(&ours(i))).unwrap(), PushOutcome::AlreadySeen, "{}", ours(i));
    }
    assert_eq!(f.stats().queued, queued, "nothing queued twice");
    let recalled = f.stats().seen_recalled;
    assert!(
        recalled + 10 >= ours_queued.len() as u64,
        "most came back from the store (a few are false positives): {recalled}"
    );
    // Recalled URLs are remembered again: the next meeting costs no read.
    for &i in &ours_queued {
        f.push(page(&ours(i))).unwrap();
    }
    // (A few may be read again: met as false positives of a generation dropped since.)
    assert!(f.stats().seen_recalled <= recalled + 5, "{} after {recalled}", f.stats().seen_recalled);
    // New URLs are still queued (a false positive aside).
    let fresh =
        (0..20).filter(|i| f.push(page(&format!("http://a.test/new/{i}"))).unwrap() == PushOutcome::Queued).count();
    assert!(fresh >= 18, "{fresh}");
    // And so after a restart from the snapshot.
    f.snapshot_job().unwrap().write().unwrap();
    drop(f);
    let (_db2, mut f) = {
        drop(_db);
        open(dir.path())
    };
    assert_eq!(f.stats().seen_bytes, after_rotations);
    for &i in ours_queued.iter().step_by(7) {
        assert_eq!(f.push(page(&ours(i))).unwrap(), PushOutcome::AlreadySeen);
    }
    assert_eq!(f.stats().queued, queued + fresh as u64);
}

#[test]
fn an_earlier_releases_snapshot_is_read_then_replaced() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    let mut old = LegacySeenSet::with_capacity(1_000, 0.01);
    old.insert("http://old.test/x");
    // The earlier layout: the journal mark, then the one growing filter.
    let legacy = dir.path().join("frontier/seen.bloom");
    std::fs::write(&legacy, postcard::to_allocvec(&(0u64, &old)).unwrap()).unwrap();
    let (db, f) = open(dir.path());
    assert!(f.seen("http://old.test/x"));
    f.snapshot_job().unwrap().write().unwrap();
    assert!(!legacy.exists(), "the new snapshot replaces it");
    assert!(dir.path().join("frontier/seen.gens").exists());
    drop((f, db));
    let (_db, f) = open(dir.path());
    assert!(f.seen("http://old.test/x"));
}
