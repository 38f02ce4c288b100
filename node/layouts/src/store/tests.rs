use super::{key, JobOutcome, LayoutStore, RenderJob, TeacherJob};
use crate::{load_overrides, HostRendering, Learned, OverrideError, Relearned, SignatureRecord};
use weft_extract::changes::{Change, ChangeKind, Snapshot};
use weft_extract::template::{Level, Origin, Selectors, Template};

fn store(threshold: u64) -> (tempfile::TempDir, LayoutStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = LayoutStore::open_dir(dir.path(), threshold).unwrap();
    (dir, store)
}

fn template(origin: Origin, level: Level, signature: &str) -> Learned {
    Learned {
        template: Template {
            host: "h.test".into(),
            signature: signature.into(),
            level,
            selectors: Selectors { title: "h1".into(), content: "div.body".into(), date: None, author: None },
            exclusions: Vec::new(),
            confidence: 0.9,
            version: 0,
            origin,
            learned_at: 0,
        },
        snapshot: Snapshot::default(),
        evidence: Vec::new(),
    }
}

#[test]
fn a_signature_seen_often_enough_is_queued_once_and_a_template_ends_it() {
    let (_d, s) = store(5);
    for i in 0..4 {
        let o = s.observe("h.test", "a1", "b2", &format!("http://h.test/{i}"), i, false).unwrap();
        assert!(o.template.is_none() && o.queued.is_none());
    }
    let o = s.observe("h.test", "a1", "b2", "http://h.test/4", 4, false).unwrap();
    let job = o.queued.expect("the fifth sighting queues the teacher");
    assert_eq!(job.urls, ["http://h.test/0", "http://h.test/1", "http://h.test/2"]);
    assert!(s.observe("h.test", "a1", "b2", "http://h.test/5", 5, false).unwrap().queued.is_none(), "once");
    let (k, next) = s.next_job().unwrap().unwrap();
    assert_eq!(next, job);
    assert_eq!(s.pending_work(), 1, "a job being taught is still pending");
    s.job_finished(&k).unwrap();
    assert_eq!(s.next_job().unwrap(), None);
    assert_eq!(s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap(), 1);
    let o = s.observe("h.test", "a1", "b2", "http://h.test/6", 6, false).unwrap();
    assert_eq!(o.template.unwrap().template.version, 1);
    let sigs = s.signatures("h.test").unwrap();
    assert_eq!(sigs.len(), 1);
    assert_eq!((sigs[0].0, sigs[0].1.as_str(), sigs[0].2.seen), (Level::L1, "a1", 7));
    assert_eq!(sigs[0].2.template_version, Some(1));
}

#[test]
fn failures_record_changes_queue_relearning_and_manual_templates_win() {
    let (_d, s) = store(5);
    s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap();
    let learned = s.template("h.test", "a1", "zz").unwrap().unwrap();
    let change = Change {
        kinds: vec![ChangeKind::Unknown],
        evidence: vec!["x".into()],
        reason: "changed".into(),
        breaking: true,
        url: "http://h.test/9".into(),
        at: 42,
    };
    let job = s.failed(&learned, &change).unwrap().expect("queued");
    assert_eq!(job.urls[0], "http://h.test/9");
    assert!(s.failed(&learned, &change).unwrap().is_none(), "one job per layout");
    assert_eq!(s.changes("h.test").unwrap(), std::slice::from_ref(&change), "and one entry while it is re-learned");
    assert_eq!(s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap(), 2, "re-learned: version 2");
    // A manual template by L2 wins over the learned L1 one, and the teacher cannot replace it.
    s.learned(template(Origin::Manual, Level::L2, "b2"), None).unwrap();
    assert_eq!(s.template("h.test", "a1", "b2").unwrap().unwrap().template.origin, Origin::Manual);
    let v = s.learned(template(Origin::Learned, Level::L2, "b2"), None).unwrap();
    assert_eq!(s.template("h.test", "a1", "b2").unwrap().unwrap().template.origin, Origin::Manual);
    assert_eq!(v, 1);
    // A layout found to need JavaScript is not taught again.
    s.job_done("h.test", Level::L1, "c3", JobOutcome::JsRequired).unwrap();
    for i in 0..10 {
        let o = s.observe("h.test", "c3", "zz", &format!("http://h.test/c{i}"), i, false).unwrap();
        assert!(o.queued.is_none() && o.js_required);
    }
    assert_eq!(s.templates(Some("h.test")).unwrap().len(), 2);
    assert_eq!(s.templates(Some("other.test")).unwrap().len(), 0);
}

#[test]
fn decisions_expire_templates_are_taught_again_and_a_js_host_is_rechecked() {
    const DAY: u64 = 86_400;
    let (_d, s) = store(5);
    let s = s.with_decision_ttl(7);
    let mut t = template(Origin::Learned, Level::L1, "a1");
    t.template.learned_at = 10 * DAY;
    s.learned(t, None).unwrap();
    let o = s.observe("h.test", "a1", "zz", "http://h.test/1", 16 * DAY, false).unwrap();
    assert!(o.template.is_some() && o.queued.is_none(), "six days: still fresh");
    let o = s.observe("h.test", "a1", "zz", "http://h.test/2", 18 * DAY, false).unwrap();
    let job = o.queued.expect("eight days: taught again");
    assert_eq!((job.reason.as_str(), job.signature.as_str()), ("expired: learned 8 days ago", "a1"));
    assert!(o.template.is_some(), "and used meanwhile");
    assert!(s.observe("h.test", "a1", "zz", "http://h.test/3", 18 * DAY, false).unwrap().queued.is_none(), "once");
    // A manual template never expires.
    let mut m = template(Origin::Manual, Level::L1, "m1");
    m.template.learned_at = 0;
    s.learned(m, None).unwrap();
    assert!(s.observe("h.test", "m1", "zz", "http://h.test/m", 400 * DAY, false).unwrap().queued.is_none());

    // The browser decision: used while fresh, re-checked once expired.
    let decision = HostRendering { render: true, decided_at: 10 * DAY, ..HostRendering::default() };
    assert!(s.decide_rendering("js.test", decision).unwrap());
    assert!(s.rendering_due("js.test", 12 * DAY).unwrap().is_some());
    assert!(s.rendering_due("js.test", 18 * DAY).unwrap().is_none(), "expired: a static fetch decides");
    assert!(s.host_rendering("js.test").unwrap().unwrap().rechecking);
    assert!(s.rendering_due("js.test", 18 * DAY).unwrap().is_none(), "static until decided");
    assert!(!s.recheck_done("js.test", true, 18 * DAY).unwrap(), "still needed: renewed");
    assert!(s.rendering_due("js.test", 20 * DAY).unwrap().is_some());
    assert!(s.rendering_due("js.test", 26 * DAY).unwrap().is_none());
    assert!(s.recheck_done("js.test", false, 26 * DAY).unwrap(), "not needed any more: static again");
    assert!(s.host_rendering("js.test").unwrap().is_none());
}

#[test]
fn a_page_the_extractor_was_unsure_of_queues_its_layout_at_once() {
    let (_d, s) = store(5);
    let o = s.observe("h.test", "u1", "zz", "http://h.test/u", 1, true).unwrap();
    assert!(o.queued.is_none(), "a one-off page is not taught");
    let o = s.observe("h.test", "u1", "zz", "http://h.test/v", 2, true).unwrap();
    assert_eq!(o.queued.expect("queued at the second sighting, not the fifth").reason, "low confidence");
    let o = s.observe("h.test", "s1", "zz", "http://h.test/s", 1, false).unwrap();
    assert!(o.queued.is_none(), "a sure page waits for the threshold");
}

#[test]
fn relearning_forgets_a_hosts_layouts_and_old_changes_are_pruned() {
    let (_d, s) = store(5);
    s.observe("h.test", "q1", "zz", "http://h.test/2", 1, true).unwrap();
    assert!(s.observe("h.test", "q1", "zz", "http://h.test/3", 1, true).unwrap().queued.is_some());
    s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap();
    s.observe("h.test", "a1", "zz", "http://h.test/1", 1, false).unwrap();
    s.decide_rendering("h.test", HostRendering { render: true, ..HostRendering::default() }).unwrap();
    s.observe("other.test", "a1", "zz", "http://other.test/1", 1, false).unwrap();
    let r = s.relearn("h.test").unwrap();
    assert_eq!(r, Relearned { templates: 1, signatures: 2, jobs: 1, rendering: true });
    assert!(s.template("h.test", "a1", "zz").unwrap().is_none());
    assert!(s.signatures("h.test").unwrap().is_empty());
    assert_eq!(s.signatures("other.test").unwrap().len(), 1, "other hosts keep theirs");
    let change = |at| Change {
        kinds: vec![ChangeKind::Unknown],
        evidence: vec![],
        reason: "x".into(),
        breaking: false,
        url: "http://h.test/".into(),
        at,
    };
    s.record_change("h.test", &change(100)).unwrap();
    s.record_change("h.test", &change(200)).unwrap();
    assert_eq!(s.prune_changes(150).unwrap(), 1);
    assert_eq!(s.changes("h.test").unwrap(), [change(200)]);
}

#[test]
fn the_override_file_is_read_checked_and_wins_for_its_host_with_any_port() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("templates.toml");
    assert!(load_overrides(&path).unwrap().is_empty(), "no file, no templates");
    std::fs::write(
        &path,
        "[[template]]\nhost = \"News.Test\"\ntitle = \"h1\"\ncontent = \"div.body\"\nexclusions = [\".ad\"]\n",
    )
    .unwrap();
    let t = load_overrides(&path).unwrap();
    assert_eq!((t[0].host.as_str(), t[0].origin, t[0].exclusions.len()), ("news.test", Origin::Manual, 1));
    let (_d, s) = store(5);
    let s = s.with_overrides(t);
    s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap();
    let got = s.template("news.test:8080", "a1", "b2").unwrap().unwrap();
    assert_eq!(got.template.origin, Origin::Manual);
    assert!(s.template("h.test", "a1", "b2").unwrap().is_some_and(|l| l.template.origin == Origin::Learned));
    // A selector that does not parse is named with its place in the file.
    std::fs::write(&path, "[[template]]\nhost = \"a.test\"\ntitle = \"h1\"\ncontent = \"div[\"\n").unwrap();
    let err = load_overrides(&path).unwrap_err().to_string();
    assert!(err.contains("template 1") && err.contains("content") && err.contains("div["), "{err}");
    std::fs::write(&path, "[[template]]\nhost = \"a.test\"\ntitel = \"h1\"\n").unwrap();
    assert!(matches!(load_overrides(&path), Err(OverrideError::Parse { .. })));
}

/// Page `i` of h.test waiting for the browser.
fn job(i: u64) -> RenderJob {
    RenderJob { url: format!("http://h.test/{i}"), depth: 1, reason: "js".into(), at: i, tries: 0, not_before: 0 }
}

#[test]
fn host_rendering_is_decided_once_and_renders_stay_queued_until_done() {
    let (_d, s) = store(5);
    let decision = |reason: &str| HostRendering { render: true, reason: reason.into(), ..Default::default() };
    assert!(s.decide_rendering("h.test", decision("first")).unwrap());
    assert!(!s.decide_rendering("h.test", decision("second")).unwrap(), "the first decision stands");
    s.rendered("h.test").unwrap();
    let h = s.host_rendering("h.test").unwrap().unwrap();
    assert_eq!((h.reason.as_str(), h.rendered), ("first", 1));
    assert_eq!(s.status().hosts_rendering, 1);
    for i in 0..3 {
        assert!(s.queue_render(&job(i)).unwrap());
    }
    // The crawl and the teacher may both send a page: it waits once (a second job would
    // find its HTML gone with the first one's render and fetch the page again).
    assert!(!s.queue_render(&job(1)).unwrap());
    assert_eq!(s.renders().unwrap().len(), 3);
    let (k0, j0) = s.next_render(None).unwrap().unwrap();
    let (k1, j1) = s.next_render(Some(&k0)).unwrap().unwrap();
    assert_eq!((j0.url.as_str(), j1.url.as_str()), ("http://h.test/0", "http://h.test/1"));
    assert_eq!(s.pending_work(), 3, "taken is not done");
    s.render_done(&k1).unwrap();
    s.render_done(&k0).unwrap();
    assert_eq!(s.next_render(None).unwrap().unwrap().1.url, "http://h.test/2");
    assert!(s.queue_render(&job(1)).unwrap(), "rendered: it may be queued again");
}

#[test]
fn a_render_retried_goes_to_the_queue_end_with_its_tries_and_stays_once() {
    let (_d, s) = store(5);
    for i in 0..2 {
        assert!(s.queue_render(&job(i)).unwrap());
    }
    let (k0, j0) = s.next_render(None).unwrap().unwrap();
    s.retry_render(&k0, &RenderJob { tries: 1, not_before: 99, ..j0 }).unwrap();
    let queued = s.renders().unwrap();
    assert_eq!(queued.len(), 2, "moved, not copied");
    assert_eq!(queued[0].1.url, "http://h.test/1");
    assert_eq!((queued[1].1.url.as_str(), queued[1].1.tries, queued[1].1.not_before), ("http://h.test/0", 1, 99));
    assert!(!s.queue_render(&job(0)).unwrap(), "still waiting: not queued twice");
    s.render_done(&queued[1].0).unwrap();
    assert!(s.queue_render(&job(0)).unwrap(), "done: it may be queued again");
}

#[test]
fn hosts_templates_are_tried_before_teaching_and_an_adopted_one_is_kept() {
    let (_d, s) = store(2);
    s.learned(template(Origin::Learned, Level::L1, "a1"), Some("b2")).unwrap();
    assert_eq!(s.templates(Some("h.test")).unwrap().len(), 2, "under L1 and L2");
    // A new layout of the host: the worker tries the host's templates; nothing is taught
    // while they might fit (three misses).
    for i in 0..3 {
        let o = s.observe("h.test", "new", "other", &format!("http://h.test/n{i}"), i, false).unwrap();
        assert!(o.template.is_none() && o.try_host_templates && o.queued.is_none(), "{i}");
        s.missed("h.test", "new").unwrap();
    }
    let o = s.observe("h.test", "new", "other", "http://h.test/n3", 3, false).unwrap();
    assert!(!o.try_host_templates && o.queued.is_some(), "none fitted: taught");
    // Another new layout that a host template fits is adopted, with its version.
    let from = s.host_templates("h.test").unwrap().remove(0);
    s.adopt(&from, "h.test", "third").unwrap();
    let got = s.template("h.test", "third", "zz").unwrap().unwrap();
    assert_eq!((got.template.signature.as_str(), got.template.version), ("third", 1));
    assert_eq!(s.host_templates("h.test").unwrap().len(), 1, "one per distinct set of selectors");
    assert_eq!(s.overview().unwrap()[0].templates, 3);
}

#[test]
fn a_host_goes_to_the_browser_only_when_most_of_its_recent_pages_need_it() {
    let (_d, s) = store(5);
    // One app shell among static articles: the host stays static.
    for needed in [false, false, true, false, false, false, false, false] {
        assert!(!s.note_js_need("news.test", needed).unwrap());
    }
    // A site that became a single-page app: the third of its last five pages flips it.
    assert!(!s.note_js_need("spa.test", false).unwrap());
    assert!(!s.note_js_need("spa.test", true).unwrap());
    assert!(!s.note_js_need("spa.test", true).unwrap());
    assert!(s.note_js_need("spa.test", true).unwrap());
    // Older pages fall out of the window.
    for _ in 0..5 {
        s.note_js_need("mixed.test", true).unwrap();
    }
    for _ in 0..3 {
        s.note_js_need("mixed.test", false).unwrap();
    }
    assert!(!s.note_js_need("mixed.test", false).unwrap(), "two of the last five");
}

/// A data dir of an earlier release kept the layout store in sled: its records are moved into
/// the frontier's store when a node opens it, the sled trees are gone afterwards, and a job
/// queued after the move runs after the jobs moved (its sequence continues above theirs).
#[test]
fn an_earlier_releases_sled_trees_are_moved_in_and_the_queue_keeps_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let job = |signature: &str| TeacherJob {
        host: "h.test".into(),
        level: Level::L1,
        signature: signature.into(),
        urls: vec!["http://h.test/a".into()],
        reason: "unseen".into(),
        at: 1,
    };
    {
        let legacy = weft_db::open_db(&dir.path().join("db"), 1 << 20).unwrap();
        let jobs = legacy.open_tree("layout.jobs").unwrap();
        // An earlier release's sequence numbers came from sled's `generate_id`, far above the
        // clock's microseconds in this test: the new job must still sort after.
        jobs.insert((u64::MAX - 100).to_be_bytes(), serde_json::to_vec(&job("old")).unwrap()).unwrap();
        let sigs = legacy.open_tree("layout.signatures").unwrap();
        let record = SignatureRecord { seen: 4, ..Default::default() };
        sigs.insert(key("h.test", Level::L1, "old"), serde_json::to_vec(&record).unwrap()).unwrap();
        legacy.flush().unwrap();
    }
    let s = LayoutStore::open_dir(dir.path(), 5).unwrap();
    let sigs = s.signatures("h.test").unwrap();
    assert_eq!((sigs.len(), sigs[0].2.seen), (1, 4), "the signature's count came over");
    s.enqueue(&job("new")).unwrap();
    let (k, first) = s.next_job().unwrap().unwrap();
    assert_eq!(first.signature, "old", "the moved job is still first");
    s.job_finished(&k).unwrap();
    assert_eq!(s.next_job().unwrap().unwrap().1.signature, "new");
    drop(s);
    let legacy = weft_db::open_db(&dir.path().join("db"), 1 << 20).unwrap();
    assert!(!legacy.tree_names().iter().any(|n| n.starts_with(b"layout.")), "the sled trees were dropped");
}
