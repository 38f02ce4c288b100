//! Politeness, robots.txt and rate limits, judged from the server's own request log.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;
use weft_simnet::{generated_site, Resource, Site, WebServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_are_never_hit_faster_than_their_delay() {
    // a: default delay; b: Crawl-delay 1 s and a Disallow; c: a 429 with Retry-After.
    let a = generated_site("a.test", 8, 3);
    let mut b = generated_site("b.test", 4, 2)
        .with("/robots.txt", Resource::robots("User-agent: *\nCrawl-delay: 1\nDisallow: /private\n"))
        .html("/private/secret", "<a href='/p/1'>x</a>");
    let root = b.routes.get("/").cloned();
    if let Some(Resource::Html(h)) = root {
        b = b.html("/", &h.replace("<nav>", "<nav><a href='/private/secret'>s</a><a href='/private/other'>o</a>"));
    }
    let c = Site::new("c.test").with("/robots.txt", Resource::status(404)).html("/", "<a href='/busy'>busy</a>").with(
        "/busy",
        Resource::Sequence(vec![
            Resource::Raw { status: 429, headers: vec![("retry-after".into(), "2".into())], body: vec![] },
            Resource::Html("<p>finally</p>".into()),
        ]),
    );
    let server = WebServer::start(vec![a, b, c]).await.unwrap();
    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 300);
    cfg.crawl.seeds = ["a.test", "b.test", "c.test"].iter().map(|h| server.url(h, "/")).collect();
    let status = common::crawl_until_idle(cfg, Duration::from_secs(60)).await;

    let log = server.requests();
    let mut by_host: HashMap<&str, Vec<_>> = HashMap::new();
    for r in &log {
        by_host.entry(r.host.as_str()).or_default().push(r);
    }
    let delays = [("a.test", 300), ("b.test", 1000), ("c.test", 300)];
    for (host, ms) in delays {
        let reqs = by_host.get(host).unwrap_or_else(|| panic!("{host} was never contacted"));
        for w in reqs.windows(2) {
            let gap = w[1].started.duration_since(w[0].answered);
            assert!(gap >= Duration::from_millis(ms), "{host}: {} then {} after only {gap:?}", w[0].path, w[1].path);
        }
    }
    assert!(log.iter().all(|r| !r.path.starts_with("/private")), "a disallowed path was fetched");
    assert!(log.iter().all(|r| r.user_agent.starts_with("WeftBot/")), "every request carries the User-Agent");

    let busy: Vec<_> = by_host["c.test"].iter().filter(|r| r.path == "/busy").collect();
    assert_eq!(busy.len(), 2, "429 is retried once, then succeeds");
    assert!(busy[1].started.duration_since(busy[0].answered) >= Duration::from_secs(2), "Retry-After honoured");

    for (host, pages) in [("a.test", 8), ("b.test", 4)] {
        let mut paths: Vec<_> = by_host[host]
            .iter()
            .filter(|r| r.path == "/" || r.path.starts_with("/p/"))
            .map(|r| r.path.clone())
            .collect();
        let n = paths.len();
        paths.sort();
        paths.dedup();
        assert_eq!((paths.len(), n), (pages, pages), "{host}: every page exactly once");
        assert_eq!(by_host[host].iter().filter(|r| r.path == "/robots.txt").count(), 1, "robots.txt fetched once");
    }
    assert_eq!(status.robots_disallowed, 2);
    assert_eq!(status.rate_limited, 1);
    assert_eq!(status.queued, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn robots_5xx_disallows_until_it_recovers() {
    let site = generated_site("r.test", 3, 2).with(
        "/robots.txt",
        Resource::Sequence(vec![Resource::status(503), Resource::robots("User-agent: *\nAllow: /\n")]),
    );
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 0);
    cfg.politeness.robots_retry_secs = 1;
    cfg.crawl.seeds = vec![server.url("r.test", "/")];
    let status = common::crawl_until_idle(cfg, Duration::from_secs(30)).await;
    let log = server.requests();
    let robots: Vec<_> = log.iter().filter(|r| r.path == "/robots.txt").collect();
    assert_eq!(robots.len(), 2);
    let first_page = log.iter().find(|r| r.path == "/").expect("the page is fetched after recovery");
    assert!(first_page.started >= robots[1].answered, "no page before robots.txt answered 2xx");
    assert!(robots[1].started.duration_since(robots[0].answered) >= Duration::from_secs(1), "retry waited");
    assert_eq!(status.pages_fetched, 3);
}
