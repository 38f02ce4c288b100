//! Second copies of a host's queue (`weft_frontier::SecondCopy`): an owner's notes, a second
//! holder's kept URLs, and what the second holder queues once it owns the host.

mod common;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use weft_frontier::*;

fn settings() -> FrontierSettings {
    let mut s = FrontierSettings::default();
    s.politeness.default_delay = Duration::from_millis(1);
    s.seen_capacity = 10_000;
    s
}

fn page(u: &str) -> Candidate {
    common::page(u, 1)
}

fn open(dir: &std::path::Path) -> (sled::Db, Frontier) {
    common::open(dir, settings())
}

fn urls(notes: &[(u64, SecondCopy)], keep: bool) -> BTreeSet<String> {
    notes
        .iter()
        .filter(|(_, n)| matches!(n, SecondCopy::Keep { .. }) == keep)
        .map(|(_, n)| n.url().to_string())
        .collect()
}

/// Drains the frontier: every ready URL fetched, in order.
fn crawl_all(f: &mut Frontier) -> Vec<String> {
    let mut fetched = Vec::new();
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        match f.next(Instant::now()).unwrap() {
            Next::Ready(l) => {
                fetched.push(l.entry.url.clone());
                f.complete(l, Completion::Done { page: true }, true, Instant::now()).unwrap();
            }
            Next::Empty => break,
            _ => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    fetched
}

#[test]
fn what_an_owner_queues_its_second_holder_keeps_and_queues_once_the_owner_is_gone() {
    let owner_dir = tempfile::tempdir().unwrap();
    let (db, mut owner) = open(owner_dir.path());
    owner.send_second_copies(true);
    for u in ["http://a.test/1", "https://a.test/2", "http://a.test/3", "http://b.test/1"] {
        assert_eq!(owner.push(page(u)).unwrap(), PushOutcome::Queued);
    }
    // Seen already: no second note.
    assert_eq!(owner.push(page("http://a.test/1")).unwrap(), PushOutcome::AlreadySeen);
    // One fetched: its note says so.
    let lease = match owner.next(Instant::now()).unwrap() {
        Next::Ready(l) => l,
        other => panic!("{other:?}"),
    };
    let fetched = lease.entry.url.clone();
    owner.complete(lease, Completion::Done { page: true }, true, Instant::now()).unwrap();

    // The notes outlive the process that wrote them (nothing was sent yet), and so does their
    // count.
    assert_eq!(owner.stats().second_copies.notes_waiting, 5);
    drop((owner, db));
    let (_db, mut owner) = open(owner_dir.path());
    assert_eq!(owner.stats().second_copies.notes_waiting, 5);
    let notes = owner.second_copies(0, 100).unwrap();
    let queued: BTreeSet<String> =
        ["http://a.test/1", "https://a.test/2", "http://a.test/3", "http://b.test/1"].map(String::from).into();
    assert_eq!(urls(&notes, true), queued);
    assert_eq!(urls(&notes, false), BTreeSet::from([fetched.clone()]));
    assert!(notes.windows(2).all(|w| w[0].0 < w[1].0), "oldest first");
    assert_eq!(notes.iter().map(|(_, n)| n.host()).filter(|h| *h == "b.test").count(), 1);

    // The second holder keeps them aside: nothing of it is queued or crawled.
    let second_dir = tempfile::tempdir().unwrap();
    let (_db2, mut second) = open(second_dir.path());
    assert_eq!(second.keep(&notes.iter().map(|(_, n)| n.clone()).collect::<Vec<_>>()).unwrap(), 0);
    assert_eq!(second.kept_hosts().unwrap(), ["a.test", "b.test"]);
    let counts = second.stats().second_copies;
    assert_eq!((counts.kept_urls, counts.kept_hosts, counts.notes_waiting), (3, 2, 0), "{counts:?}");
    drop(second);
    drop(_db2);
    let (_db2, mut second) = open(second_dir.path());
    assert_eq!(second.stats().second_copies, counts, "counted again at open");
    let mut kept: Vec<String> = second.kept_of("a.test").unwrap().into_iter().map(|(u, _)| u).collect();
    kept.sort();
    let mut left: Vec<String> = queued.iter().filter(|u| u.contains("a.test") && **u != fetched).cloned().collect();
    left.sort();
    assert_eq!(kept, left, "the fetched URL is not kept");
    assert!(matches!(second.next(Instant::now()).unwrap(), Next::Empty));

    // Sent: the owner's notes go.
    let seqs: Vec<u64> = notes.iter().map(|(s, _)| *s).collect();
    owner.second_copies_sent(&seqs).unwrap();
    assert!(owner.second_copies(0, 100).unwrap().is_empty());
    assert_eq!(owner.stats().second_copies.notes_waiting, 0);

    // The owner is gone and the second holder owns a.test: it queues what was kept, crawls it,
    // and keeps it no more. b.test it no longer holds for anyone.
    assert_eq!(second.adopt_kept("a.test").unwrap(), left.len());
    assert_eq!(second.drop_kept("b.test").unwrap(), 1);
    assert!(second.kept_hosts().unwrap().is_empty());
    assert_eq!(second.stats().second_copies, SecondCopiesCounts::default());
    let mut crawled = crawl_all(&mut second);
    crawled.sort();
    assert_eq!(crawled, left);
    // Adopted twice (a note arriving late): queued once.
    second
        .keep(&[SecondCopy::Keep { host: "a.test".into(), url: left[0].clone(), depth: 1, kind: UrlKind::Page }])
        .unwrap();
    assert_eq!(second.adopt_kept("a.test").unwrap(), 0, "done here already");
}

#[test]
fn a_new_second_holder_is_sent_the_whole_queue_once_and_a_node_alone_writes_no_notes() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut f) = open(dir.path());
    for u in ["http://a.test/1", "http://a.test/2", "http://b.test/1"] {
        f.push(page(u)).unwrap();
    }
    assert!(f.second_copies(0, 10).unwrap().is_empty(), "alone: no one to tell");
    f.send_second_copies(true);
    // a.test has a second holder now (a member joined); b.test none yet.
    let holder = |h: &str| (h == "a.test").then(|| b"peer-1".to_vec());
    assert_eq!(f.send_queues_to(holder).unwrap(), 2);
    let notes = f.second_copies(0, 10).unwrap();
    assert_eq!(urls(&notes, true), BTreeSet::from(["http://a.test/1".to_string(), "http://a.test/2".to_string()]));
    assert_eq!(f.second_copies(0, 1).unwrap().len(), 1, "a bounded read");
    // Read on from past a note: the ones after it.
    let rest = f.second_copies(notes[0].0 + 1, 10).unwrap();
    assert_eq!(rest, notes[1..]);
    assert!(f.second_copies(notes[1].0 + 1, 10).unwrap().is_empty());
    // The same holder again, after a restart too: nothing more to write.
    assert_eq!(f.send_queues_to(holder).unwrap(), 0);
    drop((f, db));
    let (_db, mut f) = open(dir.path());
    f.send_second_copies(true);
    assert_eq!(f.send_queues_to(holder).unwrap(), 0);
    // Another holder: it gets the whole queue.
    assert_eq!(f.send_queues_to(|h| (h == "a.test").then(|| b"peer-2".to_vec())).unwrap(), 2);
    // Given away and back (its holder may have dropped what it kept meanwhile): written whole
    // again, to the same holder too.
    let given = f.hand_off(|h| h != "a.test", |_| Ok(())).unwrap();
    for q in &given.queued {
        f.push_received(common::page(&q.url, q.depth)).unwrap();
    }
    assert_eq!(f.send_queues_to(|h| (h == "a.test").then(|| b"peer-2".to_vec())).unwrap(), 2);
}

#[test]
fn a_host_keeps_no_more_urls_than_its_owner_may_queue() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_pages_per_host = 3;
    let (_db, mut f) = common::open(dir.path(), s);
    let keep = |host: &str, i: usize| SecondCopy::Keep {
        host: host.into(),
        url: format!("http://{host}/{i}"),
        depth: 1,
        kind: UrlKind::Page,
    };
    let notes: Vec<SecondCopy> = (0..5).map(|i| keep("a.test", i)).chain([keep("b.test", 0)]).collect();
    assert_eq!(f.keep(&notes).unwrap(), 2, "two past a.test's budget");
    assert_eq!(f.kept_of("a.test").unwrap().len(), 3);
    assert_eq!(f.kept_of("b.test").unwrap().len(), 1);
    // Later batches count what is kept already; a URL forgotten makes room for one more.
    assert_eq!(f.keep(&[keep("a.test", 9)]).unwrap(), 1);
    let forget = SecondCopy::Forget { host: "a.test".into(), url: "http://a.test/0".into() };
    assert_eq!(f.keep(&[forget, keep("a.test", 9)]).unwrap(), 0);
    let mut kept: Vec<String> = f.kept_of("a.test").unwrap().into_iter().map(|(u, _)| u).collect();
    kept.sort();
    assert_eq!(kept, ["http://a.test/1", "http://a.test/2", "http://a.test/9"]);
    // Kept and forgotten in one batch, then sent twice in one: each URL counts once.
    let again = [keep("a.test", 1), SecondCopy::Forget { host: "a.test".into(), url: "http://a.test/1".into() }];
    assert_eq!(f.keep(&again).unwrap(), 0);
    assert_eq!(f.keep(&[keep("a.test", 1), keep("a.test", 1)]).unwrap(), 0);
    assert_eq!(f.kept_of("a.test").unwrap().len(), 3);
    // Dropped, the host starts again from nothing.
    assert_eq!(f.drop_kept("a.test").unwrap(), 3);
    assert_eq!(f.keep(&(0..4).map(|i| keep("a.test", i)).collect::<Vec<_>>()).unwrap(), 1);
}

#[test]
fn a_blocked_hosts_queue_is_forgotten_at_its_second_holder_too() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path());
    f.send_second_copies(true);
    for u in ["http://a.test/1", "http://a.test/2", "http://b.test/1"] {
        f.push(page(u)).unwrap();
    }
    let sent: Vec<u64> = f.second_copies(0, 10).unwrap().into_iter().map(|(seq, _)| seq).collect();
    f.second_copies_sent(&sent).unwrap();
    assert_eq!(f.block_host("a.test").unwrap(), 2);
    let notes = f.second_copies(0, 10).unwrap();
    assert_eq!(urls(&notes, false), BTreeSet::from(["http://a.test/1".to_string(), "http://a.test/2".to_string()]));
    assert!(urls(&notes, true).is_empty());
}
