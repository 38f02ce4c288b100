//! The frontier: scores and order, politeness, retries, budgets, blocks and revisits here;
//! hosts changing hands in `hand_offs.rs`, the files in `storage.rs`.

#[path = "../common/mod.rs"]
mod common;
mod hand_offs;
mod storage;

use common::*;
use std::time::{Duration, Instant};
use weft_frontier::*;
use weft_url::*;

fn settings() -> FrontierSettings {
    let mut s = FrontierSettings::default();
    s.politeness.default_delay = Duration::from_millis(100);
    s.seen_capacity = 10_000;
    s
}

fn take(f: &mut Frontier, now: Instant) -> Lease {
    match f.next(now).unwrap() {
        Next::Ready(l) => l,
        other => panic!("expected a ready URL, got {other:?}"),
    }
}

#[test]
fn dedups_and_orders_by_score() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    assert_eq!(f.push(page("http://a.test/about", 2)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://a.test/news/today", 2)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://a.test/deep", 5)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://A.test/about#x", 2)).unwrap(), PushOutcome::AlreadySeen);
    assert_eq!(f.push(page("http://a.test/photo.jpg", 1)).unwrap(), PushOutcome::Binary);
    assert_eq!(f.push(page("http://a.test/too-deep", 17)).unwrap(), PushOutcome::TooDeep);
    let now = Instant::now();
    let first = take(&mut f, now);
    assert_eq!(first.entry.url, "http://a.test/news/today");
    assert!(matches!(f.next(now).unwrap(), Next::Busy), "one request per host");
    f.complete(first, Completion::Done { page: true }, true, now).unwrap();
    match f.next(now).unwrap() {
        Next::WaitUntil(t) => assert!(t >= now + Duration::from_millis(100)),
        other => panic!("host must wait its delay, got {other:?}"),
    }
    let later = now + Duration::from_millis(101);
    assert_eq!(take(&mut f, later).entry.url, "http://a.test/about");
}

#[test]
fn inlinks_raise_priority() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    f.push(page("http://a.test/x", 1)).unwrap();
    f.push(page("http://a.test/y", 1)).unwrap();
    for _ in 0..3 {
        assert_eq!(f.push(page("http://a.test/y", 1)).unwrap(), PushOutcome::AlreadySeen);
    }
    let l = take(&mut f, Instant::now());
    assert_eq!(l.entry.url, "http://a.test/y");
    assert_eq!(l.entry.inlinks, 3);
    assert_eq!(f.stats().queued, 2);
}

#[test]
fn hosts_are_interleaved_by_ready_time() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    for h in ["a", "b", "c"] {
        for i in 0..3 {
            f.push(page(&format!("http://{h}.test/{i}"), 0)).unwrap();
        }
    }
    let now = Instant::now();
    let leases: Vec<Lease> = (0..3).map(|_| take(&mut f, now)).collect();
    let mut hosts: Vec<_> = leases.iter().map(|l| l.entry.host.clone()).collect();
    hosts.sort();
    assert_eq!(hosts, ["a.test", "b.test", "c.test"]);
    assert!(matches!(f.next(now).unwrap(), Next::Busy));
    for l in leases {
        f.complete(l, Completion::Done { page: true }, true, now).unwrap();
    }
    assert!(matches!(f.next(now).unwrap(), Next::WaitUntil(_)));
}

#[test]
fn retries_then_gives_up() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_retries = 2;
    s.politeness.default_delay = Duration::ZERO;
    let (_db, mut f) = open(dir.path(), s);
    f.push(page("http://a.test/flaky", 0)).unwrap();
    let mut results = Vec::new();
    for _ in 0..3 {
        let l = take(&mut f, Instant::now());
        results.push(f.complete(l, Completion::Retry, true, Instant::now()).unwrap());
    }
    assert_eq!(results, [Completed::Requeued, Completed::Requeued, Completed::GaveUp]);
    assert!(matches!(f.next(Instant::now()).unwrap(), Next::Empty));
}

#[test]
fn rate_limit_backs_off_and_requeues() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    f.push(page("http://a.test/x", 0)).unwrap();
    let now = Instant::now();
    let l = take(&mut f, now);
    f.complete(l, Completion::RateLimited { retry_after: Some(Duration::from_secs(3)) }, true, now).unwrap();
    match f.next(now).unwrap() {
        Next::WaitUntil(t) => assert_eq!(t, now + Duration::from_secs(3)),
        other => panic!("{other:?}"),
    }
    assert_eq!(take(&mut f, now + Duration::from_secs(3)).entry.attempts, 0);
}

#[test]
fn host_page_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_pages_per_host = 2;
    s.politeness.default_delay = Duration::ZERO;
    let (_db, mut f) = open(dir.path(), s);
    assert_eq!(f.push(page("http://a.test/1", 0)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://a.test/2", 0)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://a.test/3", 0)).unwrap(), PushOutcome::HostBudgetExhausted);
    let sitemap = Candidate::of(normalize("http://a.test/sitemap.xml", None).unwrap(), UrlKind::Sitemap, 0);
    assert_eq!(f.push(sitemap).unwrap(), PushOutcome::Queued, "sitemaps are not pages");
}

#[test]
fn a_blocked_host_loses_its_queue_takes_nothing_new_and_stays_blocked_after_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut f) = open(dir.path(), settings());
    for i in 0..5 {
        f.push(page(&format!("http://bad.test/{i}"), 0)).unwrap();
    }
    f.push(page("http://good.test/", 0)).unwrap();
    assert_eq!(f.block_host("bad.test").unwrap(), 5);
    assert_eq!(f.stats().queued, 1);
    assert_eq!(f.push(page("http://bad.test/new", 0)).unwrap(), PushOutcome::Blocked);
    let lease = take(&mut f, Instant::now());
    assert_eq!(lease.entry.host, "good.test");
    f.durability().flush().unwrap();
    drop(f);
    let mut f = Frontier::open(&db, &dir.path().join("frontier"), settings()).unwrap();
    assert_eq!(f.blocked_hosts(), ["bad.test"]);
    assert_eq!(f.push(page("http://bad.test/other", 0)).unwrap(), PushOutcome::Blocked);
    assert!(f.unblock_host("bad.test").unwrap());
    assert_eq!(f.push(page("http://bad.test/other", 0)).unwrap(), PushOutcome::Queued);
    assert_eq!(f.push(page("http://bad.test/1", 0)).unwrap(), PushOutcome::AlreadySeen, "dropped URLs stay seen");
}

#[test]
fn a_hubs_links_go_first_and_keep_their_boost_as_inlinks_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    f.push(page("http://a.test/x", 1)).unwrap();
    f.push(page("http://a.test/y", 1)).unwrap();
    f.push(Candidate { from_hub: true, ..page("http://a.test/z", 1) }).unwrap();
    f.push(page("http://a.test/x", 1)).unwrap();
    // z: 1.1 + 0.5 (hub); x: 1.1 + 0.2 (one inlink); y: 1.1.
    f.push(page("http://a.test/z", 1)).unwrap();
    let mut now = Instant::now() + Duration::from_millis(1);
    let mut order = Vec::new();
    for _ in 0..3 {
        let l = take(&mut f, now);
        order.push(l.entry.url.clone());
        f.complete(l, Completion::Done { page: true }, true, now).unwrap();
        now += Duration::from_millis(101);
    }
    assert_eq!(order, ["http://a.test/z", "http://a.test/x", "http://a.test/y"]);
}

#[test]
fn a_revisit_is_queued_although_seen_once_at_a_time_and_outside_the_page_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.max_pages_per_host = 1;
    let (_db, mut f) = open(dir.path(), s);
    f.push(page("http://a.test/", 0)).unwrap();
    let now = Instant::now();
    let l = take(&mut f, now);
    f.complete(l, Completion::Done { page: true }, true, now).unwrap();
    assert_eq!(f.push(page("http://a.test/", 0)).unwrap(), PushOutcome::AlreadySeen);
    assert!(!f.host_has_work("a.test"));
    let revisit = Candidate::of(normalize("http://a.test/", None).unwrap(), UrlKind::Revisit, 0);
    assert_eq!(f.push(revisit.clone()).unwrap(), PushOutcome::Queued, "seen, and the budget is spent: still queued");
    assert_eq!(f.push(revisit).unwrap(), PushOutcome::AlreadySeen, "once");
    assert!(f.host_has_work("a.test"));
    let later = now + Duration::from_millis(101);
    let l = take(&mut f, later);
    assert_eq!((l.entry.url.as_str(), l.entry.kind), ("http://a.test/", UrlKind::Revisit));
}
