//! Hosts changing hands: what a hand-off takes away and carries, what comes back, holds,
//! borrowed hosts, abandoned leases and a leaving node's busy hosts.

use super::*;

#[test]
fn hand_off_removes_the_queues_of_hosts_given_away_and_reports_a_leased_url_done() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    for u in
        ["http://keep.test/1", "http://keep.test/2", "http://away.test/1", "http://away.test/2", "http://away.test/3"]
    {
        f.push(page(u, 1)).unwrap();
    }
    // One URL of away.test is being fetched.
    let now = Instant::now();
    let mut leased = None;
    for _ in 0..2 {
        let l = take(&mut f, now);
        if l.entry.host == "away.test" {
            leased = Some(l);
            break;
        }
        f.complete(l, Completion::Requeue { wait: Duration::ZERO }, false, now).unwrap();
    }
    let leased = leased.expect("an away.test lease");
    // A failing store elsewhere leaves the queue as it was.
    let refused = f.hand_off(|host| host == "keep.test", |_| Err(sled::Error::Unsupported("full".into())));
    assert!(refused.is_err());
    assert_eq!(f.stats().queued, 5);
    let mut persisted = Vec::new();
    let given = f
        .hand_off(
            |host| host == "keep.test",
            |e| {
                persisted = e.queued.iter().map(|q| q.url.clone()).collect();
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(persisted.len(), given.queued.len(), "persisted before removal");
    assert_eq!(
        given.done,
        vec![leased.entry.url.clone()],
        "the leased URL is this node's to finish: done for the next owner"
    );
    let mut urls: Vec<String> = given.queued.iter().map(|q| q.url.clone()).collect();
    urls.sort();
    let mut expected = vec!["http://away.test/1", "http://away.test/2", "http://away.test/3"];
    expected.retain(|u| *u != leased.entry.url);
    assert_eq!(urls, expected);
    assert_eq!(f.stats().queued, 3, "keep.test's two and the leased one");
    assert!(f.seen("http://away.test/1"), "handed-off URLs stay seen");
    f.complete(leased, Completion::Done { page: true }, true, now).unwrap();
    // Only keep.test is left to crawl.
    for i in 1..=2 {
        let later = now + Duration::from_secs(5 * i);
        let l = take(&mut f, later);
        assert_eq!(l.entry.host, "keep.test");
        f.complete(l, Completion::Done { page: true }, true, later).unwrap();
    }
    assert!(matches!(f.next(now + Duration::from_secs(20)).unwrap(), Next::Empty));
}

#[test]
fn a_host_handed_off_carries_what_was_fetched_and_waits_the_grace_when_it_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.politeness.handover_grace = Duration::from_secs(2);
    let (_db, mut f) = open(dir.path(), s);
    let t0 = Instant::now();
    f.push(page("http://h.test/1", 1)).unwrap();
    f.push(page("http://h.test/2", 1)).unwrap();
    let first = f.next(t0).unwrap();
    assert!(
        matches!(first, Next::WaitUntil(t) if t >= t0 + Duration::from_millis(1900)),
        "a new host waits the grace: {first:?}"
    );
    let later = t0 + Duration::from_secs(3);
    let l = take(&mut f, later);
    let fetched = l.entry.url.clone();
    f.complete(l, Completion::Done { page: true }, true, later).unwrap();

    let given = f.hand_off(|_| false, |_| Ok(())).unwrap();
    assert_eq!(given.done, vec![fetched.clone()], "the next owner learns what was fetched");
    assert_eq!(given.queued.len(), 1);
    assert!(f.hand_off(|_| false, |_| Ok(())).unwrap().is_empty(), "a host is given away once");

    // Another node (the new owner) marks the fetched URL seen and queues the rest.
    let dir2 = tempfile::tempdir().unwrap();
    let (_db2, mut other) = open(dir2.path(), settings());
    // A link got the URL queued there before the hint arrived: the hint takes it out.
    assert_eq!(other.push(page(&fetched, 1)).unwrap(), PushOutcome::Queued);
    assert!(other.mark_done(&normalize(&fetched, None).unwrap()).unwrap());
    assert_eq!(other.stats().queued, 0);
    assert!(!other.mark_done(&normalize(&fetched, None).unwrap()).unwrap(), "once");
    assert_eq!(other.push(page(&fetched, 1)).unwrap(), PushOutcome::AlreadySeen);
    // ... and passes it on should the host move again.
    assert_eq!(other.hand_off(|_| false, |_| Ok(())).unwrap().done, vec![fetched]);

    // The host comes back to the first node: its first request waits the grace again.
    f.push(page("http://h.test/3", 1)).unwrap();
    let back = Instant::now();
    match f.next(back).unwrap() {
        Next::WaitUntil(t) => assert!(t > back + Duration::from_millis(1500), "waits the grace"),
        Next::Ready(l) => panic!("{} was ready at once", l.entry.url),
        other => panic!("{other:?}"),
    }
}

/// The churn simulator's loss: node A owned a host, handed it to B (the URLs stay in A's
/// seen-set), got it back when B left — and dropped B's hand-over as "seen". What another
/// member sends is judged by the queue and the done list, not the seen-set.
#[test]
fn a_host_handed_back_is_queued_again_although_its_urls_were_seen_here() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut a) = open(dir.path(), settings());
    // Past a new host's hand-over grace.
    let t0 = Instant::now() + Duration::from_secs(60);
    for i in 0..4 {
        a.push(page(&format!("http://h.test/{i}"), 1)).unwrap();
    }
    let l = take(&mut a, t0);
    let fetched = l.entry.url.clone();
    a.complete(l, Completion::Done { page: true }, true, t0).unwrap();
    // A gives the host away: three queued URLs and one done.
    let given = a.hand_off(|_| false, |_| Ok(())).unwrap();
    assert_eq!((given.queued.len(), given.done.len()), (3, 1));
    assert_eq!(a.stats().queued, 0);

    // B fetched one of them and hands the host back with the other two and its done list.
    let (b_fetched, back) = (given.queued[0].url.clone(), &given.queued[1..]);
    for d in [&fetched, &b_fetched] {
        a.mark_done(&normalize(d, None).unwrap()).unwrap();
    }
    for q in back {
        let c = page(&q.url, q.depth);
        assert_eq!(a.push(c.clone()).unwrap(), PushOutcome::AlreadySeen, "a link is still judged by the seen-set");
        assert_eq!(a.push_received(c).unwrap(), Received::Queued, "{} handed back", q.url);
    }
    assert_eq!(a.stats().queued, 2, "the two URLs B did not fetch are A's to fetch");
    // Sent again (a retry of the batch, a link from a third member): nothing doubles.
    for q in back {
        assert_eq!(a.push_received(page(&q.url, q.depth)).unwrap(), Received::AlreadyQueued);
    }
    // What A fetched before, and what B reported done although A had it in its seen-set,
    // is not queued again by anyone's word.
    assert_eq!(a.push_received(page(&fetched, 1)).unwrap(), Received::AlreadyDone);
    assert_eq!(a.push_received(page(&b_fetched, 1)).unwrap(), Received::AlreadyDone);
    assert_eq!(a.stats().queued, 2);
    // A URL refused by the rules says why.
    assert_eq!(a.push_received(page("http://h.test/photo.jpg", 1)).unwrap(), Received::Refused(PushOutcome::Binary));

    // Across a reopen: the done list and the queue are on disk.
    drop(a);
    drop(_db);
    let (_db, mut a) = open(dir.path(), settings());
    assert_eq!(a.stats().queued, 2);
    assert_eq!(a.push_received(page(&b_fetched, 1)).unwrap(), Received::AlreadyDone);
    assert_eq!(a.push_received(page(&back[0].url, 1)).unwrap(), Received::AlreadyQueued);
}

/// A host given away and handed back with nothing queued (its new owner left having fetched
/// nothing, or everything) is this node's again: its done list goes on with the next hand-off.
/// It did not: only a URL queued for the host took it back, so the next owner was told nothing
/// and fetched the host's pages a second time (found when a hand-off test drew its newcomer
/// twice). A URL queued for it later still waits the hand-over grace from its return.
#[test]
fn a_host_handed_back_with_only_its_done_list_is_handed_on_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.politeness.handover_grace = Duration::from_secs(1);
    let (_db, mut a) = open(dir.path(), s);
    let t0 = Instant::now();
    for i in 0..2 {
        a.push(page(&format!("http://h.test/{i}"), 1)).unwrap();
    }
    let mut fetched = Vec::new();
    for t in [t0 + Duration::from_millis(1100), t0 + Duration::from_millis(1200)] {
        let l = take(&mut a, t);
        fetched.push(l.entry.url.clone());
        a.complete(l, Completion::Done { page: true }, true, t).unwrap();
    }
    let given = a.hand_off(|_| false, |_| Ok(())).unwrap();
    assert_eq!((given.queued.len(), given.done.len()), (0, 2));
    assert!(!a.holds("h.test"));

    // The new owner leaves: the done list comes back, nothing queued.
    for u in &fetched {
        a.mark_done(&normalize(u, None).unwrap()).unwrap();
    }
    assert!(a.holds("h.test"), "the host is this node's again");
    // A third member takes the host: it is told what was fetched.
    let mut done = a.hand_off(|_| false, |_| Ok(())).unwrap().done;
    done.sort();
    fetched.sort();
    assert_eq!(done, fetched, "the done list goes on with the host");

    // Back once more, done only, after the last request's delay has passed; then a link to a
    // new page: it waits the grace all the same.
    std::thread::sleep(Duration::from_millis(1500));
    for u in &fetched {
        a.mark_done(&normalize(u, None).unwrap()).unwrap();
    }
    let back = Instant::now();
    a.push(page("http://h.test/new", 1)).unwrap();
    match a.next(back).unwrap() {
        Next::WaitUntil(t) => assert!(t > back + Duration::from_millis(800), "waits the grace"),
        Next::Ready(l) => panic!("{} was ready at once", l.entry.url),
        other => panic!("{other:?}"),
    }
}

/// Churn sweep seed 2: a page the browser was to render left its queue here (done), then went
/// with its host to the next owner as queued, never fetched. The host came back with it, and
/// the done list dropped it: five pages nobody fetched. A URL handed over as queued is not
/// done here.
#[test]
fn a_page_handed_over_unfetched_is_queued_again_when_its_host_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut a) = open(dir.path(), settings());
    let t0 = Instant::now() + Duration::from_secs(60);
    a.push(page("http://r.test/1", 1)).unwrap();
    // Off the queue to wait for the browser: done as far as the queue knows.
    let l = take(&mut a, t0);
    let waiting = l.entry.url.clone();
    a.complete(l, Completion::Done { page: true }, true, t0).unwrap();
    let given = a.hand_off(|_| false, |_| Ok(())).unwrap();
    assert_eq!(given.done, vec![waiting.clone()]);
    // The crawler sends it as queued, not done, and takes it off the done list here.
    let url = normalize(&waiting, None).unwrap();
    assert_eq!(a.undo_done(std::slice::from_ref(&url)).unwrap(), 1);
    assert_eq!(a.undo_done(std::slice::from_ref(&url)).unwrap(), 0, "once");
    // Across a reopen, the host comes back with it: this node's to fetch.
    drop(a);
    drop(_db);
    let (_db, mut a) = open(dir.path(), settings());
    assert_eq!(a.push_received(page(&waiting, 1)).unwrap(), Received::Queued);
    assert_eq!(a.stats().queued, 1);
}

#[test]
fn held_hosts_wait_and_the_others_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    f.push(page("http://held.test/1", 1)).unwrap();
    f.push(page("http://free.test/1", 1)).unwrap();
    let now = Instant::now();
    assert_eq!(f.hold_hosts(|h| h == "held.test", now + Duration::from_secs(2)), 1);
    let l = take(&mut f, now);
    assert_eq!(l.entry.host, "free.test", "the held host is not ready");
    match f.next(now).unwrap() {
        Next::WaitUntil(t) => assert_eq!(t, now + Duration::from_secs(2)),
        other => panic!("{other:?}"),
    }
    assert_eq!(take(&mut f, now + Duration::from_secs(2)).entry.host, "held.test");
}

#[test]
fn a_released_hold_keeps_politeness_and_new_hosts_can_be_held_by_a_filter() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    f.push(page("http://a.test/1", 1)).unwrap();
    f.push(page("http://a.test/2", 1)).unwrap();
    let now = Instant::now();
    // A request: a.test may go again after its 100 ms delay.
    let l = take(&mut f, now);
    f.complete(l, Completion::Done { page: true }, true, now).unwrap();
    f.hold_hosts(|_| true, now + Duration::from_secs(10));
    assert_eq!(f.release_hosts(|h| h == "a.test", now), 1);
    match f.next(now).unwrap() {
        Next::WaitUntil(t) => assert!(t >= now + Duration::from_millis(100), "the delay still applies"),
        other => panic!("{other:?}"),
    }
    // Hosts met from now on: the filter says which wait.
    let until = now + Duration::from_secs(10);
    f.hold_new_hosts(Some((until, Box::new(|h: &str| h == "held.test"))));
    f.push(page("http://held.test/1", 1)).unwrap();
    f.push(page("http://free.test/1", 1)).unwrap();
    f.hold_new_hosts(None);
    let later = now + Duration::from_secs(1);
    let hosts: Vec<String> = (0..2).map(|_| take(&mut f, later).entry.host).collect();
    assert!(hosts.contains(&"free.test".to_string()) && !hosts.contains(&"held.test".to_string()), "{hosts:?}");
    assert_eq!(f.release_hosts(|h| h == "held.test", later), 1);
    assert_eq!(take(&mut f, later).entry.host, "held.test");
}

#[test]
fn a_borrowed_host_obeys_the_same_delays_as_a_lease() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    let delay = settings().politeness.default_delay;
    let t0 = Instant::now();
    assert_eq!(f.borrow_host("a.test", t0).unwrap(), Borrow::Granted);
    assert_eq!(f.borrow_host("a.test", t0).unwrap(), Borrow::Busy, "one request at a time");
    // A queued URL of the host waits too.
    f.push(page("http://a.test/x", 0)).unwrap();
    assert!(matches!(f.next(t0).unwrap(), Next::Busy));
    f.return_host("a.test", Returned::Requested, t0).unwrap();
    assert_eq!(f.borrow_host("a.test", t0).unwrap(), Borrow::WaitUntil(t0 + delay));
    let lease = take(&mut f, t0 + delay);
    assert_eq!(f.borrow_host("a.test", t0 + delay).unwrap(), Borrow::Busy, "a lease holds the host");
    f.complete(lease, Completion::Done { page: true }, true, t0 + delay).unwrap();
    let t1 = t0 + delay * 2;
    assert_eq!(f.borrow_host("a.test", t1).unwrap(), Borrow::Granted);
    // 429 with Retry-After: the host waits that long.
    f.return_host("a.test", Returned::RateLimited { retry_after: Some(Duration::from_secs(30)) }, t1).unwrap();
    assert!(matches!(f.borrow_host("a.test", t1 + Duration::from_secs(29)).unwrap(), Borrow::WaitUntil(_)));
    assert_eq!(f.borrow_host("a.test", t1 + Duration::from_secs(31)).unwrap(), Borrow::Granted);
    // Other hosts are not affected.
    assert_eq!(f.borrow_host("b.test", t0).unwrap(), Borrow::Granted);
}

#[test]
fn abandoned_leases_go_back_to_the_queue_and_to_the_next_owner() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    f.push(page("http://away.test/1", 1)).unwrap();
    f.push(page("http://away.test/2", 1)).unwrap();
    let now = Instant::now();
    let leased = take(&mut f, now);
    // The task holding the lease was abandoned at a stop: the lease is never completed.
    assert_eq!(f.abandon_leases().unwrap(), 1);
    assert_eq!(f.stats().in_flight, 0);
    let given = f.hand_off(|_| false, |_| Ok(())).unwrap();
    let mut urls: Vec<String> = given.queued.iter().map(|q| q.url.clone()).collect();
    urls.sort();
    assert_eq!(urls, vec!["http://away.test/1", "http://away.test/2"], "queued, not done");
    assert!(given.done.is_empty() && urls.contains(&leased.entry.url));
}

#[test]
fn a_leaving_node_can_keep_the_hosts_it_is_requesting_and_knows_which_it_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    for u in ["http://busy.test/1", "http://busy.test/2", "http://idle.test/1", "http://lent.test/1"] {
        f.push(page(u, 1)).unwrap();
    }
    let now = Instant::now();
    // A lease on busy.test (whichever host comes first, the others go back).
    let lease = loop {
        let l = take(&mut f, now);
        if l.entry.host == "busy.test" {
            break l;
        }
        f.complete(l, Completion::Requeue { wait: Duration::ZERO }, false, now).unwrap();
    };
    // A browser's request on lent.test.
    assert!(matches!(f.borrow_host("lent.test", now + Duration::from_secs(1)).unwrap(), Borrow::Granted));
    let mut busy = f.busy_hosts();
    busy.sort();
    assert_eq!(busy, ["busy.test", "lent.test"]);
    // What was fetched on the busy hosts can be told at once (idle.test/1... not fetched yet).
    let busy_set: std::collections::HashSet<String> = busy.iter().cloned().collect();
    assert!(f.done_of(&busy_set).unwrap().is_empty(), "nothing completed yet");
    let given = f.hand_off(|h| busy.iter().any(|b| b == h), |_| Ok(())).unwrap();
    assert_eq!(given.queued.iter().map(|q| q.url.as_str()).collect::<Vec<_>>(), ["http://idle.test/1"]);
    assert!(given.done.is_empty(), "nothing leased was given away: {:?}", given.done);
    assert!(f.holds("busy.test") && f.holds("lent.test"));
    assert!(!f.holds("idle.test"), "given away");
    assert!(!f.holds("never.test"));
    // The request ends; the second hand-off takes the rest.
    f.complete(lease, Completion::Done { page: true }, true, now).unwrap();
    assert_eq!(f.done_of(&busy_set).unwrap(), ["http://busy.test/1"]);
    f.return_host("lent.test", Returned::Requested, now).unwrap();
    assert!(f.busy_hosts().is_empty());
    let rest = f.hand_off(|_| false, |_| Ok(())).unwrap();
    let mut queued: Vec<&str> = rest.queued.iter().map(|q| q.url.as_str()).collect();
    queued.sort();
    assert_eq!(queued, ["http://busy.test/2", "http://lent.test/1"]);
    assert!(rest.done.iter().any(|u| u == "http://busy.test/1"), "{:?}", rest.done);
}

#[test]
fn a_host_that_asked_to_back_off_goes_with_its_wait_and_its_next_owner_waits_too() {
    let dir = tempfile::tempdir().unwrap();
    let (_db, mut f) = open(dir.path(), settings());
    for u in ["http://slow.test/1", "http://slow.test/2", "http://calm.test/1"] {
        f.push(page(u, 0)).unwrap();
    }
    // slow.test answers 429 with Retry-After: 300; calm.test answers.
    let now = Instant::now();
    for _ in 0..2 {
        let l = take(&mut f, now);
        let answer = match l.entry.host.as_str() {
            "slow.test" => Completion::RateLimited { retry_after: Some(Duration::from_secs(300)) },
            _ => Completion::Done { page: true },
        };
        f.complete(l, answer, true, now).unwrap();
    }
    let given = f.hand_off(|_| false, |e| if e.waits.len() == 1 { Ok(()) } else { panic!("{e:?}") }).unwrap();
    assert_eq!(given.waits.len(), 1, "calm.test asked for no wait: {:?}", given.waits);
    let (host, wait) = &given.waits[0];
    assert_eq!(host, "slow.test");
    assert!(*wait > Duration::from_secs(295) && *wait <= Duration::from_secs(300), "{wait:?}");

    // The host's next owner takes its queue and its wait: nothing before the wait is over.
    let dir2 = tempfile::tempdir().unwrap();
    let (_db2, mut g) = open(dir2.path(), settings());
    for q in &given.queued {
        g.push_received(Candidate::page(normalize(&q.url, None).unwrap(), q.depth)).unwrap();
    }
    let received = Instant::now();
    g.defer_host(host, received + *wait).unwrap();
    match g.next(received).unwrap() {
        Next::WaitUntil(t) => assert!(t >= received + Duration::from_secs(295), "{:?}", t - received),
        other => panic!("slow.test must wait out its Retry-After, got {other:?}"),
    }

    // A wait is a peer's word: at most the longest backoff (10 minutes).
    let dir3 = tempfile::tempdir().unwrap();
    let (_db3, mut h) = open(dir3.path(), settings());
    h.push(page("http://other.test/1", 0)).unwrap();
    let asked = Instant::now();
    h.defer_host("other.test", asked + Duration::from_secs(86_400)).unwrap();
    match h.next(asked).unwrap() {
        Next::WaitUntil(t) => assert!(t <= asked + Duration::from_secs(601), "{:?}", t - asked),
        other => panic!("{other:?}"),
    }
}
