//! Layout learning end to end, in a real node with Debian's Chromium, the real model and real
//! sled, over loopback HTTP. Coast News (see `common/coast.rs`) goes through three phases on
//! one data dir:
//!
//! 1. six v1 articles: the fifth sighting of the layout queues the teacher, which renders one,
//!    learns a template and stores it;
//! 2. twenty more v1 articles are extracted by the template alone (each requested once: no
//!    browser), v2's moved iframe is recorded as a drift while the template keeps working, v3's
//!    renamed classes break the template — the change is recorded, the page repaired on the
//!    spot and the layout re-learned; an operator's override template extracts another host;
//! 3. the site becomes a single-page app (v4): the first page is rendered because its static
//!    text is empty, the host is remembered as needing the browser (its other pages skip the
//!    static fetch), the migration is in the change log, and the rendered text is indexed.

use crate::common;

use common::coast::{self, Version};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;
use weft_config::Config;
use weft_extract::changes::ChangeKind;
use weft_node::layouts::{HostDetail, HostSummary, LayoutStore};
use weft_node::{CrawlStatus, Node, RunOptions, Status};
use weft_simnet::{Resource, Site, WebServer};

const HOST: &str = "coast.test";
const MANUAL: &str = "manual.test";

fn manual_page(n: usize) -> String {
    let body: String = coast::paragraphs(n + 50).iter().map(|p| format!("<p>{p}</p>")).collect();
    format!(
        "<!doctype html><html><head><title>Manual {n}</title></head><body><div class=\"wrap\">\
         <h2 class=\"headline\">Manual story {n}</h2><div class=\"story-text\">{body}\
         <div class=\"promo\"><p>Subscribe now to read every story about the harbour, the ocean and the shore \
         for less than a coffee a week, cancel any time you like.</p></div></div></div></body></html>"
    )
}

fn site_before() -> Vec<Site> {
    let v1: Vec<String> = (0..6).map(|n| format!("/v1/{n}")).collect();
    let mut more: Vec<String> = (6..26).map(|n| format!("/v1/{n}")).collect();
    more.extend((0..4).map(|n| format!("/v2/{n}")));
    more.extend((0..6).map(|n| format!("/v3/{n}")));
    let mut site = Site::new(HOST).html("/", &coast::hub(&v1)).html("/more", &coast::hub(&more));
    for n in 0..26 {
        site = site.html(&format!("/v1/{n}"), &coast::article(n, Version::V1));
    }
    for n in 0..4 {
        site = site.html(&format!("/v2/{n}"), &coast::article(200 + n, Version::V2));
    }
    for n in 0..6 {
        site = site.html(&format!("/v3/{n}"), &coast::article(300 + n, Version::V3));
    }
    let links: Vec<String> = (0..6).map(|n| format!("/m/{n}")).collect();
    let mut manual = Site::new(MANUAL).html("/", &coast::hub(&links));
    for n in 0..6 {
        manual = manual.html(&format!("/m/{n}"), &manual_page(n));
    }
    vec![site, manual]
}

/// v4: the same host as a single-page app.
fn site_after() -> Site {
    let v4: Vec<String> = (0..6).map(|n| format!("/v4/{n}")).collect();
    let mut site = Site::new(HOST).html("/app", &coast::hub(&v4));
    for n in 0..6 {
        site = site
            .html(&format!("/v4/{n}"), &coast::spa(400 + n))
            .with(&format!("/v4/{}.js", 400 + n), Resource::text("application/javascript", coast::spa_js(400 + n)));
    }
    site
}

fn config(server: &WebServer, data_dir: &Path, seeds: &[&str]) -> Config {
    let mut c = Config { data_dir: data_dir.to_path_buf(), ..Default::default() };
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect::<BTreeMap<_, _>>();
    c.politeness.default_delay_ms = 20;
    c.frontier.seen_capacity = 10_000;
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.seeds = seeds.iter().map(|s| s.to_string()).collect();
    c.embed = weft_index::testing::embed_config();
    c.layouts.browsers = 1;
    // The fixture's layouts are judged by the worker, not by the reference extractor.
    c.extract.second_opinion = weft_config::SecondOpinion::Off;
    c
}

/// Runs a node until it is idle (crawl, teacher and renders done) and returns its status.
async fn run_until_idle(config: Config) -> CrawlStatus {
    let node = Node::open(config).expect("node opens");
    let crawler = node.crawler().clone();
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let run = node.run(RunOptions { exit_when_idle: true }, rx, |_| {});
    tokio::time::timeout(Duration::from_secs(300), run).await.expect("idle within 5 minutes").expect("node runs");
    crawler.status()
}

fn count(status: &CrawlStatus, key: &str) -> u64 {
    status.extraction.get(key).copied().unwrap_or(0)
}

/// The data dir's layout store and index, opened after the node stopped.
struct Stored {
    layouts: LayoutStore,
    index: weft_index::LocalIndex,
    _db: sled::Db,
}

fn open_stored(c: &Config) -> Stored {
    let db = weft_frontier::open_db(&c.data_dir.join("db"), 16 << 20).unwrap();
    let tables = weft_frontier::Tables::open_dir(&c.data_dir.join("frontier")).unwrap();
    let layouts = LayoutStore::open(&tables, &db, 5).unwrap();
    let index = weft_index::LocalIndex::open(&db, &c.data_dir, c.embed.dims, &c.index).unwrap();
    Stored { layouts, index, _db: db }
}

impl Stored {
    /// Checks the indexed document of `path` against article `n`'s truth — with `title`, as a
    /// template extracts it: that title and exactly the true text's words; returns its text.
    fn check_article(&self, server: &WebServer, host: &str, path: &str, title: Option<&str>, n: usize) -> String {
        let url = server.url(host, path);
        let doc = self.index.document(&url).unwrap().unwrap_or_else(|| panic!("{url} is indexed"));
        if let Some(title) = title {
            assert_eq!(doc.title, title, "{url}");
            assert_eq!(doc.word_count as usize, coast::words(n), "{url}: the true text's words, no more, no less");
        }
        let text: Vec<String> =
            doc.chunks.iter().map(|k| self.index.store().chunk(*k).unwrap().unwrap().text().unwrap()).collect();
        let text = text.join(" ");
        for p in coast::paragraphs(n) {
            let first_sentence = p.split(". ").next().unwrap();
            assert!(text.contains(first_sentence), "{url}: {first_sentence:?} missing from {text:?}");
        }
        text
    }
}

fn requests_for(server: &WebServer, host: &str, path: &str) -> usize {
    server.requests().iter().filter(|r| r.host.starts_with(host) && r.path == path).count()
}

/// Each test drives Chromium and the model: one at a time on two cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn templates_are_learned_used_repaired_relearned_and_a_spa_is_rendered() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let server = WebServer::start(site_before()).await.unwrap();
    let dir = common::work_dir();
    let url = |path: &str| server.url(HOST, path);
    // Layouts are kept per host key (`name:port`).
    let (coast_key, manual_key) = (format!("{HOST}:{}", server.port()), format!("{MANUAL}:{}", server.port()));

    // Phase 1: six v1 articles; the teacher learns the layout.
    let c = config(&server, dir.path(), &[&url("/")]);
    let status = run_until_idle(c.clone()).await;
    assert_eq!(count(&status, "teacher:runs"), 1, "{:?}", status.extraction);
    assert_eq!(count(&status, "teacher:learned"), 1, "{:?}", status.extraction);
    {
        let s = open_stored(&c);
        let detail = s.layouts.detail(&coast_key).unwrap();
        let t = &detail.templates.first().expect("a template").template;
        assert_eq!((t.selectors.title.as_str(), t.selectors.content.as_str()), ("h1.post-title", "div.post-body"));
        assert_eq!(t.exclusions, ["div.share-bar"]);
        assert_eq!(t.version, 1);
        let evidence = detail.templates[0].evidence.join("\n");
        assert!(evidence.contains("validated on 3 of 3"), "{evidence}");
        assert!(evidence.contains("Readability.js"), "{evidence}");
        assert!(t.confidence > 0.7, "{}", t.confidence);
    }

    // Phase 2: the worker at work, with the operator's override for another host.
    std::fs::write(
        dir.path().join("templates.toml"),
        format!(
            "[[template]]\nhost = \"{MANUAL}\"\ntitle = \"h2.headline\"\ncontent = \"div.story-text\"\n\
             exclusions = [\".promo\"]\n"
        ),
    )
    .unwrap();
    let c = config(&server, dir.path(), &[&url("/more"), &server.url(MANUAL, "/")]);
    let status = run_until_idle(c.clone()).await;
    let ex = &status.extraction;
    assert_eq!(count(&status, "render:rendered"), 0, "no page needed the browser: {ex:?}");
    assert_eq!(count(&status, "teacher:runs"), 1, "only v3 is taught: {ex:?}");
    assert_eq!(count(&status, "teacher:learned"), 1, "{ex:?}");
    assert!(count(&status, "layout:template") >= 20 + 4 + 6 + 6, "v1, v2, v3 and the manual pages: {ex:?}");
    assert_eq!(count(&status, "layout:adopted"), 1, "v2 adopts v1's template once: {ex:?}");
    assert!(count(&status, "layout:template_failed") >= 1, "{ex:?}");
    for n in 6..26 {
        // The worker's pages: fetched once (the static fetch), never by a browser.
        assert_eq!(requests_for(&server, HOST, &format!("/v1/{n}")), 1, "/v1/{n}");
    }
    {
        let s = open_stored(&c);
        for n in 6..26 {
            let text = s.check_article(&server, HOST, &format!("/v1/{n}"), Some(&coast::title(n)), n);
            assert!(!text.contains("Mastodon") && !text.contains("Most read"), "{text}");
        }
        for n in 0..4 {
            s.check_article(&server, HOST, &format!("/v2/{n}"), Some(&coast::title(200 + n)), 200 + n);
        }
        for n in 0..6 {
            s.check_article(&server, HOST, &format!("/v3/{n}"), Some(&coast::title(300 + n)), 300 + n);
        }
        for n in 0..6 {
            let text = s.check_article(&server, MANUAL, &format!("/m/{n}"), Some(&format!("Manual story {n}")), n + 50);
            assert!(!text.contains("Subscribe"), "the override's exclusion: {text}");
        }
        let changes = s.layouts.changes(&coast_key).unwrap();
        let drift = changes.iter().find(|c| !c.breaking).expect("v2's drift is recorded");
        assert!(drift.kinds.iter().any(|k| matches!(k, ChangeKind::Relocated { .. })), "{drift:?}");
        assert!(drift.kinds.contains(&ChangeKind::Iframes { before: 1, after: 1 }), "{drift:?}");
        let rename = changes.iter().find(|c| c.breaking).expect("v3's break is recorded");
        let renames = vec![
            ("h1.post-title".to_string(), "h1.title".to_string()),
            ("div.post-body".to_string(), "div.content".to_string()),
        ];
        assert_eq!(rename.kinds[0], ChangeKind::ClassRename { renames }, "{rename:?}");
        let detail = s.layouts.detail(&coast_key).unwrap();
        let v2 = detail.templates.iter().find(|l| l.template.selectors.title == "h1.title").expect("v3 re-learned");
        assert_eq!((v2.template.version, v2.template.selectors.content.as_str()), (2, "div.content"));
        let manual = s.layouts.detail(&manual_key).unwrap();
        assert_eq!(manual.signatures.iter().map(|s| s.record.by_template).sum::<u64>(), 6, "{manual:?}");
        assert!(manual.signatures.iter().all(|s| !s.record.queued), "no teacher for a host with an override");
    }

    // Phase 3: the site became a single-page app.
    server.replace_site(site_after());
    let c = config(&server, dir.path(), &[&url("/app")]);
    let node = common::Running::start(c.clone()).await;
    let api = node.api;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    let status: Status = loop {
        let s: Status = serde_json::from_value(node.get("/status").await).unwrap();
        let l = s.layouts.clone().unwrap();
        if s.crawl.state == "idle"
            && l.render_queue == 0
            && l.teacher_queue == 0
            && count(&s.crawl, "render:rendered") == 6
            // The browsers' memory is measured every two seconds, not on each `/status`.
            && !l.browser_memory_bytes.is_empty()
        {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "phase 3 did not finish: {s:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let l = status.layouts.clone().unwrap();
    assert_eq!((l.hosts_rendering, l.browsers_running), (1, 1), "{l:?}");
    assert!(l.browser_memory_bytes[0] > 10 << 20, "{l:?}");
    assert_eq!(count(&status.crawl, "render:rendered"), 6, "{:?}", status.crawl.extraction);
    // `weft templates` through the API.
    let mut out = Vec::new();
    weft_node::templates_cli::run(&c, api, weft_node::templates_cli::What::List, true, &mut out).await.unwrap();
    let hosts: Vec<HostSummary> = serde_json::from_slice(&out).unwrap();
    let coast_host = hosts.iter().find(|h| h.host == coast_key).unwrap();
    let rendering = coast_host.rendering.as_ref().expect("the host's decision");
    assert!(rendering.render && rendering.score >= 0.4, "{rendering:?}");
    assert!(rendering.signals.iter().any(|s| s.contains("empty_app_container")), "{rendering:?}");
    let mut out = Vec::new();
    let what = weft_node::templates_cli::What::Changes(coast_host.host.clone());
    weft_node::templates_cli::run(&c, api, what, false, &mut out).await.unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("single-page app") && printed.contains("class rename"), "{printed}");
    node.shutdown().await;

    // Every page once: the first v4 page was fetched statically and rendered from that body
    // (never fetched again); the others went straight to the browser.
    for n in 0..6 {
        assert_eq!(requests_for(&server, HOST, &format!("/v4/{n}")), 1, "/v4/{n}");
    }
    // Over the whole test — static fetches, the teacher's lessons, renders — no page was asked
    // for twice (robots.txt and sitemaps aside).
    let mut counts: std::collections::BTreeMap<(String, String), usize> = Default::default();
    for r in server.requests() {
        *counts.entry((r.host.clone(), r.path.clone())).or_default() += 1;
    }
    let twice: Vec<_> = counts
        .iter()
        .filter(|((_, p), n)| **n > 1 && !p.starts_with("/robots.txt") && !p.contains("sitemap"))
        .collect();
    assert!(twice.is_empty(), "requested more than once: {twice:?}");
    let s = open_stored(&c);
    for n in 0..6 {
        // The generic extractor on the rendered DOM: the script's text is there.
        s.check_article(&server, HOST, &format!("/v4/{n}"), None, 400 + n);
    }
    // `weft templates show` from the data dir, with no node running.
    let closed: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    drop(s);
    let mut out = Vec::new();
    let what = weft_node::templates_cli::What::Show(coast_host.host.clone());
    weft_node::templates_cli::run(&c, closed, what, true, &mut out).await.unwrap();
    let detail: HostDetail = serde_json::from_slice(&out).unwrap();
    assert!(detail.templates.len() >= 3, "v1 (L1), v3 (L1 and L2), v2's adopted copy: {detail:?}");
}

/// Issue 32: short pages among long ones of one layout. A brief (~24 words, under a template's
/// 40-word minimum) that the learned template's selectors fit is a short page, not a layout
/// change: nothing is recorded, nothing re-learned, and no page is requested twice (a re-learn
/// used to fetch the layout's first samples again each time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_pages_among_long_ones_are_no_layout_change_and_every_page_is_requested_once() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    const BRIEF: &str = "brief.test";
    let first: Vec<String> = (0..6).map(|n| format!("/long/{n}")).collect();
    // Long and short items interleaved, as a news site's feed has them.
    let mixed: Vec<String> = (6..18).flat_map(|n| [format!("/long/{n}"), format!("/short/{n}")]).collect();
    let mut site = Site::new(BRIEF).html("/", &coast::hub(&first)).html("/more", &coast::hub(&mixed));
    for n in 0..18 {
        site = site.html(&format!("/long/{n}"), &coast::article(500 + n, Version::V1));
        site = site.html(&format!("/short/{n}"), &coast::short_article(600 + n));
    }
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let key = format!("{BRIEF}:{}", server.port());

    // The layout is learned on long pages ...
    let c = config(&server, dir.path(), &[&server.url(BRIEF, "/")]);
    let status = run_until_idle(c).await;
    assert_eq!(count(&status, "teacher:learned"), 1, "{:?}", status.extraction);
    // ... then the feed brings long and short items of it.
    let c = config(&server, dir.path(), &[&server.url(BRIEF, "/more")]);
    let status = run_until_idle(c.clone()).await;
    let ex = &status.extraction;
    assert!(count(&status, "layout:short_page") >= 12, "every brief met the template: {ex:?}");
    assert_eq!(count(&status, "layout:template_failed"), 0, "{ex:?}");
    assert_eq!(count(&status, "teacher:runs"), 0, "nothing to re-learn: {ex:?}");
    assert!(count(&status, "layout:template") >= 12, "the long items by the template: {ex:?}");
    let mut twice: Vec<String> = Vec::new();
    for r in server.requests().iter().filter(|r| r.path != "/robots.txt" && !r.path.contains("sitemap")) {
        if requests_for(&server, BRIEF, &r.path) > 1 {
            twice.push(r.path.clone());
        }
    }
    assert!(twice.is_empty(), "requested more than once: {twice:?}");
    let s = open_stored(&c);
    assert!(s.layouts.changes(&key).unwrap().is_empty(), "no change recorded: {:?}", s.layouts.changes(&key));
    for n in 6..18 {
        // The brief is indexed with its text (the generic extraction).
        let url = server.url(BRIEF, &format!("/short/{n}"));
        let doc = s.index.document(&url).unwrap().unwrap_or_else(|| panic!("{url} is indexed"));
        let text: Vec<String> =
            doc.chunks.iter().map(|k| s.index.store().chunk(*k).unwrap().unwrap().text().unwrap()).collect();
        let first = coast::paragraphs(600 + n)[0].split(". ").next().unwrap().to_string();
        assert!(text.join(" ").contains(&first), "{url}: {first:?} missing from {text:?}");
    }
}
