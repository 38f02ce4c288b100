//! Adaptive crawling end to end (seeds 000–002), in one real node crawling the simulator's news
//! sites over loopback while they change under it. Layout learning is on, as shipped; the index
//! is off (this is about crawling, see `common::config`).
//!
//! - `moved.test` moves its articles from `/blog/{slug}` to `/articles/{yyyy}/{mm}/{slug}`, old
//!   URLs answering 301: the hub's revisit finds the new scheme, and the host's change log
//!   records one URL-scheme change, with evidence; `weft templates changes` shows it.
//! - `growing.test` publishes new articles: the freshness loop revisits its front page, fetches
//!   the new articles and none of the old ones again, and an unchanged front page costs a 304.
//! - `refusing.test` starts answering 403 and bot-check pages: it is marked blocked with the
//!   evidence in `/status`, its queue pauses instead of being worked through; when it answers
//!   again the probe unblocks it and every article is fetched — the ones refused before the
//!   block too, none twice.
//! - `deep.test` links its archive only from a page at the depth limit: the archive is found
//!   when the host's queue ran dry.
//! - `POST /templates/{host}/relearn` (token) forgets what was learned of a host.
//!
//! A second test starves a node of any reachable host: `/status` and `weft doctor` say the
//! crawl is stalled, and why.

use crate::common;
use weft_test_support::until;

use std::time::Duration;
use weft_simnet::news::news_site_at;
use weft_simnet::{Resource, Site, WebServer};

/// Slugs long enough to be `{slug}` in a URL template.
fn slug(i: usize) -> String {
    format!("harbour-council-story-number-{i}")
}

fn moved_before() -> Site {
    let paths: Vec<String> = (0..12).map(|i| format!("/blog/{}", slug(i))).collect();
    news_site_at("moved.test", 0, &paths).site.with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"))
}

/// After the move: the front page lists twelve new articles under the new scheme and four
/// stale old-scheme links; every old URL redirects to its new place.
fn moved_after() -> Site {
    let mut paths: Vec<String> = (100..112).map(|i| format!("/articles/2026/05/{}", slug(i))).collect();
    let stale: Vec<usize> = (200..204).collect();
    paths.extend(stale.iter().map(|&i| format!("/blog/{}", slug(i))));
    let mut site = news_site_at("moved.test", 0, &paths).site;
    for &i in &stale {
        // The stale link's page lives at the new address.
        let old = format!("/blog/{}", slug(i));
        let page = site.routes.remove(&old).unwrap();
        site = site.with(&format!("/articles/2026/04/{}", slug(i)), page);
    }
    for i in (0..12).chain(stale) {
        let to =
            if i >= 200 { format!("/articles/2026/04/{}", slug(i)) } else { format!("/articles/2025/11/{}", slug(i)) };
        site = site.with(&format!("/blog/{}", slug(i)), Resource::Redirect { status: 301, location: to });
    }
    site.with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"))
}

/// `n` articles, newest first on the front page.
fn growing(n: usize) -> Site {
    let paths: Vec<String> = (0..n).rev().map(|i| format!("/news/{}", slug(i))).collect();
    news_site_at("growing.test", 1, &paths).site.with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"))
}

const REFUSING_ROBOTS: &str = "User-agent: *\nCrawl-delay: 1\nAllow: /\n";

fn refusing() -> Site {
    let paths: Vec<String> = (0..20).map(|i| format!("/r/{}", slug(i))).collect();
    news_site_at("refusing.test", 2, &paths).site.with("/robots.txt", Resource::robots(REFUSING_ROBOTS))
}

/// Every page refused: the front page (revisited as a hub every few seconds, so asked again in
/// any window of answers) with a plain 403, every article with a bot-check page. Chosen by path,
/// not by a route's place in the site's map: that map is a `HashMap`, whose order differs from
/// run to run (choosing by it failed the test when the pages asked happened to be all plain).
fn refusing_blocked() -> Site {
    let mut site = Site::new("refusing.test").with("/robots.txt", Resource::robots(REFUSING_ROBOTS));
    let challenge = "<!doctype html><html><head><title>Just a moment...</title></head><body>\
                     <div id=\"cf-chl-widget\">Checking your browser before accessing the site.</div></body></html>";
    for path in refusing().routes.keys().filter(|p| *p != "/robots.txt") {
        let r = if path.as_str() == "/" {
            Resource::status(403)
        } else {
            Resource::Raw {
                status: 403,
                headers: vec![("content-type".into(), "text/html".into())],
                body: challenge.as_bytes().to_vec(),
            }
        };
        site = site.with(path, r);
    }
    site
}

/// `/` → `/a` → `/b`, which alone links the archive: with `crawl.max_depth = 2` the archive is
/// one hop too deep to follow.
fn deep() -> Site {
    let page = |title: &str, links: &str| {
        format!("<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1><p>{links}</p></body></html>")
    };
    let olds: String = (0..3).map(|i| format!("<li><a href=\"/old/{}\">Old story {i}</a></li>", slug(i))).collect();
    let mut site = Site::new("deep.test")
        .with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"))
        .html("/", &page("Deep", "<a href=\"/a\">A</a>"))
        .html("/a", &page("A", "<a href=\"/b\">B</a>"))
        .html("/b", &page("B", "<a href=\"/archive/2025\">Archive</a>"))
        .html("/archive/2025", &format!("<!doctype html><html><body><h1>2025</h1><ul>{olds}</ul></body></html>"));
    for i in 0..3 {
        site = site.html(&format!("/old/{}", slug(i)), &page(&format!("Old story {i}"), "An old story."));
    }
    site
}

/// Successful (200) requests of `host` whose path starts with `prefix`, by path.
fn fetched(server: &WebServer, host: &str, prefix: &str) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for r in server.requests() {
        if r.host == host && r.path.starts_with(prefix) && r.status == 200 {
            *out.entry(r.path).or_insert(0) += 1;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_follows_a_scheme_move_revisits_hubs_pauses_a_refusing_host_and_finds_a_deep_archive() {
    let server = WebServer::start(vec![moved_before(), growing(12), refusing(), deep()]).await.unwrap();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    let mut c = common::config(&server, &data, 20);
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.max_depth = 2;
    c.crawl.hub_revisit_secs = 3;
    c.crawl.blocked_pause_secs = 3;
    c.crawl.blocked_pause_max_secs = 6;
    c.crawl.seeds =
        ["moved.test", "growing.test", "refusing.test", "deep.test"].iter().map(|h| server.url(h, "/")).collect();
    let node = common::Running::start(c).await;
    // Hosts are keyed with their port (`HostKey`): the API names them so.
    let key = |h: &str| format!("{h}:{}", server.port());

    // The first pages arrive; then refusing.test starts refusing.
    until("refusing.test's first articles", Duration::from_secs(60), || {
        fetched(&server, "refusing.test", "/r/").len() >= 2
    })
    .await;
    server.replace_site(refusing_blocked());
    until("moved.test's old-scheme articles", Duration::from_secs(60), || {
        fetched(&server, "moved.test", "/blog/").len() == 12
    })
    .await;
    until("growing.test's first twelve articles", Duration::from_secs(60), || {
        fetched(&server, "growing.test", "/news/").len() == 12
    })
    .await;

    // refusing.test is blocked, with the evidence, and paused rather than worked through.
    let mut blocked = serde_json::Value::Null;
    for _ in 0..150 {
        let s = node.get("/status").await;
        if let Some(b) =
            s["blocked_by_hosts"].as_array().and_then(|a| a.iter().find(|b| b["host"] == key("refusing.test")))
        {
            blocked = b.clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        !blocked.is_null(),
        "refusing.test is never marked blocked: {:?}",
        server.requests().iter().filter(|r| r.host == "refusing.test").map(|r| (&r.path, r.status)).collect::<Vec<_>>()
    );
    let evidence: Vec<String> =
        blocked["evidence"].as_array().unwrap().iter().map(|e| e.as_str().unwrap().to_string()).collect();
    // Both kinds counted: "{refused} of its last {n} answers were refusals or bot checks
    // ({challenges} challenge pages)", with some but not all of the refusals bot checks.
    let count = |after: &str| -> usize {
        let tail = &evidence[0][evidence[0].find(after).map(|i| i + after.len()).unwrap_or(0)..];
        tail.split(|c: char| !c.is_ascii_digit()).find(|w| !w.is_empty()).and_then(|w| w.parse().ok()).unwrap_or(0)
    };
    let (refused, challenges) = (count(""), count("("));
    assert!(
        evidence[0].contains("refusals or bot checks") && challenges >= 1 && challenges < refused,
        "{evidence:?}\nrequests to refusing.test: {:?}",
        server.requests().iter().filter(|r| r.host == "refusing.test").map(|r| (&r.path, r.status)).collect::<Vec<_>>()
    );
    assert!(evidence[1..].iter().any(|e| e.contains("→ 403")), "{evidence:?}");
    assert!(blocked["reason"].as_str().unwrap().contains("paused"));
    let refused_before = server.requests().iter().filter(|r| r.host == "refusing.test" && r.status == 403).count();
    // Paused: over the next four seconds (one pause of three), at most a probe or two.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let refused_after = server.requests().iter().filter(|r| r.host == "refusing.test" && r.status == 403).count();
    assert!(refused_after - refused_before <= 2, "a paused host got {} requests", refused_after - refused_before);
    let status = node.get("/status").await;
    assert!(status["hosts_blocked"].as_u64().unwrap() >= 1);
    assert!(status["stalled"].is_null(), "the other hosts progress: {}", status["stalled"]);

    // The sites change: refusing.test answers again, moved.test moves, growing.test publishes.
    server.replace_site(refusing());
    server.replace_site(moved_after());
    server.replace_site(growing(18));

    // growing.test: the six new articles, no old one twice, and a 304 once nothing changed.
    until("growing.test's new articles", Duration::from_secs(60), || {
        fetched(&server, "growing.test", "/news/").len() == 18
    })
    .await;
    until("a 304 from growing.test's front page", Duration::from_secs(60), || {
        server.requests().iter().any(|r| r.host == "growing.test" && r.path == "/" && r.status == 304)
    })
    .await;
    let news = fetched(&server, "growing.test", "/news/");
    assert!(news.values().all(|&n| n == 1), "articles fetched again: {news:?}");

    // moved.test: the new scheme's pages, the stale links through their redirects.
    until("moved.test's new-scheme articles", Duration::from_secs(60), || {
        fetched(&server, "moved.test", "/articles/").len() == 16
    })
    .await;
    let changes = node.get(&format!("/templates/{}/changes", key("moved.test"))).await;
    let schemes: Vec<&serde_json::Value> = changes
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["kinds"].as_array().unwrap().iter().any(|k| k["type"] == "url_scheme"))
        .collect();
    assert_eq!(schemes.len(), 1, "one scheme change, however many ways it was seen: {changes:#}");
    let kind = &schemes[0]["kinds"][0];
    assert_eq!(
        (kind["from"].as_str(), kind["to"].as_str()),
        (Some("/blog/{slug}"), Some("/articles/{yyyy}/{mm}/{slug}"))
    );
    assert!(!schemes[0]["evidence"].as_array().unwrap().is_empty());
    let detail = node.get(&format!("/templates/{}", key("moved.test"))).await;
    let templates = detail["url_patterns"]["templates"].as_array().unwrap();
    let blog = templates.iter().find(|t| t["template"] == "/blog/{slug}").expect("the old template is counted");
    assert_eq!((blog["count"].as_u64(), blog["page_types"]["article"].as_u64()), (Some(12), Some(12)));
    let old = fetched(&server, "moved.test", "/blog/");
    assert!(old.values().all(|&n| n == 1), "old articles fetched again: {old:?}");
    let status = node.get("/status").await;
    assert!(status["scheme_changes"].as_u64().unwrap() >= 1);
    assert!(status["not_modified"].as_u64().unwrap() >= 1);
    assert!(status["revisits"].as_u64().unwrap() >= 2);

    // The CLI shows the same change log.
    let out = std::process::Command::new(common::WEFT)
        .args(["templates", "changes", &key("moved.test"), "--api", &node.api.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("[URL scheme]") && text.contains("/articles/{yyyy}/{mm}/{slug}"),
        "{text}"
    );

    // refusing.test: unblocked by a served probe; every article fetched, none twice.
    until("refusing.test's articles after the block", Duration::from_secs(90), || {
        fetched(&server, "refusing.test", "/r/").len() == 20
    })
    .await;
    let r = fetched(&server, "refusing.test", "/r/");
    assert!(r.values().all(|&n| n == 1), "articles fetched twice: {r:?}");
    let status = node.get("/status").await;
    assert!(
        status["blocked_by_hosts"].as_array().unwrap().iter().all(|b| b["host"] != key("refusing.test")),
        "{}",
        status["blocked_by_hosts"]
    );

    // deep.test: the archive (too deep to follow) was found when the host ran dry.
    until("deep.test's archive", Duration::from_secs(60), || fetched(&server, "deep.test", "/old/").len() == 3).await;
    assert!(node.get("/status").await["found_when_idle"].as_u64().unwrap() >= 1);

    // Relearning a host: refused without the token, done with it.
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://{}/templates/{}/relearn", node.api, key("moved.test"));
    assert_eq!(client.post(&url).send().await.unwrap().status(), 401);
    let token = weft_node::token::ApiToken::load_or_create(&data).unwrap();
    let resp = client.post(&url).bearer_auth(token.as_str()).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!((body["host"].as_str(), body["url_patterns"].as_bool()), (Some(key("moved.test").as_str()), Some(true)));
    assert!(body["signatures"].as_u64().unwrap() >= 1, "{body}");
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_that_cannot_reach_anything_says_it_is_stalled_and_why() {
    let server = WebServer::start(vec![]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::config(&server, &dir.path().join("data"), 20);
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.stall_secs = 2;
    // Hosts on a port nothing listens on: every connection is refused.
    for i in 0..4 {
        c.fetch.resolve.insert(format!("dead{i}.test"), "127.0.0.1".parse().unwrap());
    }
    c.crawl.seeds = (0..4).map(|i| format!("http://dead{i}.test:1/")).collect();
    let node = common::Running::start(c.clone()).await;
    let mut stalled = serde_json::Value::Null;
    for _ in 0..100 {
        let s = node.get("/status").await;
        if s["state"] == "stalled" {
            stalled = s["stalled"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(stalled["cause"], "network", "{stalled}");
    assert!(stalled["reason"].as_str().unwrap().contains("could not connect"), "{stalled}");
    c.api.listen = node.api;
    let checks = weft_node::doctor::run(&c).await;
    let crawl = checks.iter().find(|c| c.name == "crawl progress").unwrap();
    assert_eq!(crawl.verdict, weft_node::doctor::Verdict::Warn);
    assert!(
        crawl.detail.contains("could not connect") && crawl.fix.as_deref().unwrap().contains("network"),
        "{crawl:?}"
    );
    node.shutdown().await;
}
