//! The frontier on disk: reopened, snapshotted, imported from sled, idle hosts out of memory and
//! back, small write buffers.

use super::*;

#[test]
fn queue_survives_reopen_and_completed_urls_stay_seen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut f) = open(dir.path(), settings());
        for i in 0..10 {
            f.push(page(&format!("http://a.test/{i}"), 0)).unwrap();
        }
        let l = take(&mut f, Instant::now());
        let done_url = l.entry.url.clone();
        f.complete(l, Completion::Done { page: true }, true, Instant::now()).unwrap();
        let _in_flight = take(&mut f, Instant::now() + Duration::from_secs(1));
        f.durability().flush().unwrap();
        // No snapshot was taken: the seen-set must come back from the journal.
        drop(f);
        drop(db);
        let (_db, f) = open(dir.path(), settings());
        assert_eq!(f.stats().queued, 9, "the in-flight lease was never completed, so it is still queued");
        assert!(f.seen(&done_url));
    }
    let (_db, mut f) = open(dir.path(), settings());
    assert_eq!(f.push(page("http://a.test/0", 0)).unwrap(), PushOutcome::AlreadySeen);
}

#[test]
fn snapshot_truncates_journal_and_restores() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut f) = open(dir.path(), settings());
        for i in 0..100 {
            f.push(page(&format!("http://a.test/{i}"), 0)).unwrap();
        }
        f.snapshot_job().unwrap().write().unwrap();
        f.push(page("http://a.test/after", 0)).unwrap();
        assert_eq!(f.journal_len().unwrap(), 1, "only the URL pushed after the snapshot is journaled");
        f.durability().flush().unwrap();
        drop(db);
    }
    let (_db, f) = open(dir.path(), settings());
    assert!(f.seen("http://a.test/42") && f.seen("http://a.test/after"));
    assert_eq!(f.stats().seen, 101);
}

#[test]
fn politeness_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.politeness.default_delay = Duration::from_secs(60);
    {
        let (db, mut f) = open(dir.path(), s.clone());
        f.push(page("http://a.test/1", 0)).unwrap();
        f.push(page("http://a.test/2", 0)).unwrap();
        let l = take(&mut f, Instant::now());
        f.complete(l, Completion::Done { page: true }, true, Instant::now()).unwrap();
        f.durability().flush().unwrap();
        drop(db);
    }
    let (_db, mut f) = open(dir.path(), s);
    match f.next(Instant::now()).unwrap() {
        Next::WaitUntil(t) => assert!(t > Instant::now() + Duration::from_secs(50)),
        other => panic!("restart must not reset the host's delay: {other:?}"),
    }
}

#[test]
fn a_frontier_kept_in_sled_before_is_imported_once() {
    use serde::Serialize;
    #[derive(Serialize)]
    struct OldSnapshot<'a> {
        mark: u64,
        seen: &'a LegacySeenSet,
    }
    #[derive(Serialize)]
    struct OldHost {
        fetched: u64,
        next_allowed_unix_ms: u64,
        backoff_level: u32,
    }
    let dir = tempfile::tempdir().unwrap();
    let db = open_db(&dir.path().join("db"), 8 << 20).unwrap();
    {
        // The old layout, written as the old frontier wrote it.
        let old = db.open_tree("frontier").unwrap();
        let mut seen = LegacySeenSet::with_capacity(1000, 0.01);
        seen.insert("http://a.test/fetched");
        old.insert(b"m:seen", postcard::to_allocvec(&OldSnapshot { mark: 3, seen: &seen }).unwrap()).unwrap();
        old.insert(b"j\0\0\0\0\0\0\0\x04", &b"http://a.test/journaled"[..]).unwrap();
        for (seq, url, score) in [(1u64, "http://a.test/low", 0.5f32), (2, "http://a.test/high", 2.0)] {
            let q = QueuedUrl {
                url: url.into(),
                host: "a.test".into(),
                kind: UrlKind::Page,
                depth: 1,
                inlinks: 2,
                score,
                attempts: 1,
                redirects: vec![],
                discovered_unix_ms: 7,
            };
            let mut k = vec![b'q'];
            k.extend_from_slice(&seq.to_be_bytes());
            old.insert(k, postcard::to_allocvec(&q).unwrap()).unwrap();
            old.insert([&b"u"[..], url.as_bytes()].concat(), &seq.to_be_bytes()).unwrap();
        }
        old.insert(&b"da.test\0http://a.test/fetched"[..], &[]).unwrap();
        old.insert(&b"bbad.test"[..], &[]).unwrap();
        let hosts = db.open_tree("hosts").unwrap();
        let later = weft_clock::now_ms() + 120_000;
        let rec = OldHost { fetched: 4, next_allowed_unix_ms: later, backoff_level: 1 };
        hosts.insert("a.test", postcard::to_allocvec(&rec).unwrap()).unwrap();
        db.flush().unwrap();
    }
    let check = |f: &mut Frontier| {
        assert_eq!(f.stats().queued, 2);
        assert!(f.seen("http://a.test/fetched") && f.seen("http://a.test/journaled"));
        assert_eq!(f.blocked_hosts(), ["bad.test"]);
        let state = |f: &Frontier, u: &str| f.url_state(&normalize(u, None).unwrap()).unwrap();
        assert_eq!(state(f, "http://a.test/fetched"), UrlState::Done);
        assert_eq!(state(f, "http://a.test/high"), UrlState::Queued);
        assert_eq!(f.top_hosts(1)[0].fetched, 4);
        match f.next(Instant::now()).unwrap() {
            Next::WaitUntil(t) => assert!(t > Instant::now() + Duration::from_secs(100), "its delay came along"),
            other => panic!("expected the host to wait, got {other:?}"),
        }
    };
    let mut f = Frontier::open(&db, &dir.path().join("frontier"), settings()).unwrap();
    check(&mut f);
    assert!(!db.tree_names().iter().any(|t| t.as_ref() == b"frontier"), "the old tree is dropped");
    let l = take(&mut f, Instant::now() + Duration::from_secs(200));
    assert_eq!(
        (l.entry.url.as_str(), l.entry.score, l.entry.attempts, l.entry.inlinks),
        ("http://a.test/high", 2.0, 1, 2)
    );
    f.abandon_leases().unwrap();
    f.durability().flush().unwrap();
    drop(f);
    let mut f = Frontier::open(&db, &dir.path().join("frontier"), settings()).unwrap();
    check(&mut f);
}

/// A host with nothing queued and no request for `IDLE_FOR` leaves memory; its record keeps
/// what it needs (fetched count, politeness, done URLs), it comes back with its next URL, a
/// reopen brings back only the hosts with work, and a hand-off passes on its done URLs and
/// forgets it. (An adversarial review's page of 100,000 dead hosts once held them all in
/// memory for good.)
#[test]
fn idle_hosts_leave_memory_and_come_back_with_their_counts_and_done_urls() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_pages_per_host = 3;
    let (db, mut f) = open(dir.path(), s.clone());
    for i in 0..100 {
        f.push(page(&format!("http://h{i}.test/a"), 0)).unwrap();
    }
    let t0 = Instant::now();
    for _ in 0..100 {
        let l = take(&mut f, t0);
        f.complete(l, Completion::Done { page: true }, true, t0).unwrap();
    }
    f.push(page("http://busy.test/1", 0)).unwrap();
    f.push(page("http://busy.test/2", 0)).unwrap();
    assert_eq!(f.stats().hosts_in_memory, 101);
    assert_eq!(f.evict_idle(t0 + IDLE_FOR / 2).unwrap(), 0, "not idle long enough");
    let later = t0 + IDLE_FOR + Duration::from_secs(1);
    assert_eq!(f.evict_idle(later).unwrap(), 100);
    let st = f.stats();
    assert_eq!((st.hosts, st.hosts_in_memory, st.hosts_with_queue, st.queued), (101, 1, 1, 2));
    // What was done stays done; a new URL brings the host back with its count (1 of 3 fetched).
    assert_eq!(f.url_state(&normalize("http://h7.test/a", None).unwrap()).unwrap(), UrlState::Done);
    assert_eq!(f.push(page("http://h7.test/a", 0)).unwrap(), PushOutcome::AlreadySeen);
    assert_eq!(f.push(page("http://h7.test/b", 0)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://h7.test/c", 0)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://h7.test/d", 0)).unwrap(), PushOutcome::HostBudgetExhausted);
    assert_eq!(f.stats().hosts_in_memory, 2);
    f.durability().flush().unwrap();
    drop(f);
    drop(db);

    let (_db, mut f) = open(dir.path(), s);
    let st = f.stats();
    assert_eq!((st.hosts, st.hosts_in_memory, st.queued), (101, 2, 4), "only the hosts with work");
    assert_eq!(f.url_state(&normalize("http://h42.test/a", None).unwrap()).unwrap(), UrlState::Done);
    // Given away while out of memory: the done URLs go with the hosts, which leave the store.
    let gone = |h: &str| h == "h1.test" || h.starts_with("h1") && h.len() == "h10.test".len();
    let handed = f.hand_off(|h| !gone(h), |_| Ok(())).unwrap();
    let mut done = handed.done.clone();
    done.sort();
    assert_eq!(done.len(), 11, "{done:?}");
    assert_eq!(done[0], "http://h1.test/a");
    assert_eq!(f.stats().hosts, 90);
    assert!(f.hand_off(|h| !gone(h), |_| Ok(())).unwrap().done.is_empty(), "passed on once");
    assert_eq!(f.url_state(&normalize("http://h1.test/a", None).unwrap()).unwrap(), UrlState::Seen);
}

/// The most tables any of the store's own keyspaces holds (keyspace 0 is fjall's metadata).
fn most_tables(lsm: &std::path::Path) -> usize {
    let keyspaces = std::fs::read_dir(lsm.join("keyspaces")).into_iter().flatten().flatten();
    let data = keyspaces.filter(|k| k.file_name() != "0");
    data.map(|k| std::fs::read_dir(k.path().join("tables")).map_or(0, |t| t.count())).max().unwrap_or(0)
}

#[test]
fn a_small_configured_write_buffer_flushes_tables_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    (s.cache_bytes, s.write_buffer_bytes) = (1 << 20, 1 << 20);
    s.seen_capacity = 100_000;
    let mut queued = 0;
    {
        let (_db, mut f) = open(dir.path(), s.clone());
        for i in 0..20_000 {
            let url = format!("http://h{}.test/a/long/enough/path/to/fill/the/buffer/{i:08}", i % 50);
            queued += u64::from(f.push(page(&url, 1)).unwrap() == PushOutcome::Queued);
        }
        assert!(queued > 19_000, "{queued} queued: the seen-set is sized for them");
        assert_eq!(f.stats().queued, queued);
        f.durability().flush().unwrap();
        // ~2 MiB of URL records: with the configured buffer (not the 8 MiB default) the tree
        // writes them out as tables of ~1 MiB while the frontier is open, in its workers.
        let lsm = dir.path().join("frontier").join("lsm");
        let deadline = Instant::now() + Duration::from_secs(30);
        while most_tables(&lsm) < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(most_tables(&lsm) >= 2, "the 1 MiB write buffer was not used");
    }
    let (_db, f) = open(dir.path(), s);
    assert_eq!(f.stats().queued, queued);
}
