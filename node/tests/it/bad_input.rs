//! Hostile and broken input: each case is a typed error counted in /status, and the crawl goes on.

use crate::common;

use std::time::Duration;
use weft_simnet::{Resource, Site, WebServer};

fn redirect(to: &str) -> Resource {
    Resource::Redirect { status: 301, location: to.into() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_counted_and_the_crawl_goes_on() {
    let links = [
        "/chain/1",
        "/loop/a",
        "/huge",
        "/pdf",
        "/slow",
        "/latin1",
        "/untyped",
        "/gone",
        "/err",
        "javascript:alert(1)",
        "mailto:x@y.z",
        "http://user:pw@x.test/",
        "ftp://x.test/",
        "/ok",
    ];
    let index: String = links.iter().map(|l| format!("<a href=\"{l}\">{l}</a>\n")).collect();
    let mut site = Site::new("bad.test")
        .with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"))
        .html("/", &format!("{index}<a href='/many/0'>m</a>"))
        .with("/chain/1", redirect("/chain/2"))
        .with("/chain/2", redirect("/chain/3"))
        .with("/chain/3", redirect("/final"))
        .html("/final", "<p>landed</p>")
        .with("/loop/a", redirect("/loop/b"))
        .with("/loop/b", redirect("/loop/a"))
        .with("/huge", Resource::Huge { bytes: 3 * 1024 * 1024 })
        .with("/pdf", Resource::text("application/pdf", b"%PDF-1.4".to_vec()))
        .with("/slow", Resource::SlowDrip { chunk: 10, interval: Duration::from_millis(1500), chunks: 3 })
        .with(
            "/latin1",
            Resource::Raw {
                status: 200,
                headers: vec![("content-type".into(), "text/html".into())],
                body: b"<p>caf\xe9 \xff\xfe</p><a href='/ok'>ok</a>".to_vec(),
            },
        )
        .with("/untyped", Resource::Raw { status: 200, headers: vec![], body: b"\x00\x01binary".to_vec() })
        .with("/gone", Resource::status(404))
        .with("/err", Resource::status(500))
        .html("/ok", "<p>fine</p>");
    // 11 hops of redirects: more than max_redirects (10).
    for i in 0..11 {
        site = site.with(&format!("/many/{i}"), redirect(&format!("/many/{}", i + 1)));
    }
    let garbage = Site::new("garbage.test")
        .with(
            "/robots.txt",
            Resource::text("text/plain", (0..300_000u32).map(|i| (i * 7919 % 251) as u8).collect::<Vec<u8>>()),
        )
        .html("/", "<p>garbage robots, still crawled</p>");
    // A 4 MiB robots.txt is read up to the 500 KiB cap and obeyed as far as it goes.
    let huge_robots = Site::new("hugerobots.test")
        .with("/robots.txt", Resource::Huge { bytes: 4 * 1024 * 1024 })
        .html("/", "<p>huge robots, still crawled</p>");
    let server = WebServer::start(vec![site, garbage, huge_robots]).await.unwrap();
    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 0);
    cfg.fetch.max_body_bytes = 1024 * 1024;
    cfg.fetch.read_timeout_ms = 500;
    cfg.politeness.max_retries = 1;
    cfg.crawl.seeds =
        vec![server.url("bad.test", "/"), server.url("garbage.test", "/"), server.url("hugerobots.test", "/")];
    let status = common::crawl_until_idle(cfg, Duration::from_secs(60)).await;

    let e = |k: &str| status.errors.get(k).copied().unwrap_or(0);
    assert_eq!(e("redirect_loop"), 1, "{status:?}");
    assert_eq!(e("too_many_redirects"), 1, "{status:?}");
    assert_eq!(e("body_too_large"), 1, "{status:?}");
    assert_eq!(e("not_html"), 2, "pdf and untyped binary: {status:?}");
    assert_eq!(e("timeout"), 2, "slow drip, tried twice: {status:?}");
    // The unlabelled Latin-1 page is decoded by detection and extracted like any other.
    assert!(status.extraction.get("page_type:other").copied().unwrap_or(0) >= 4, "{status:?}");
    assert_eq!(e("http_4xx"), 1, "{status:?}");
    assert_eq!(e("http_5xx"), 2, "500 retried once: {status:?}");
    assert_eq!(e("url_scheme"), 3, "javascript, mailto, ftp: {status:?}");
    assert_eq!(e("url_userinfo"), 1, "{status:?}");
    assert_eq!(status.gave_up, 2, "slow and err: {status:?}");

    let log = server.requests();
    let count = |p: &str| log.iter().filter(|r| r.path == p).count();
    assert_eq!(count("/final"), 1, "a redirect chain lands once");
    assert_eq!(count("/ok"), 1, "pages after bad ones are still crawled, once");
    assert_eq!(count("/loop/a") + count("/loop/b"), 2, "a loop is cut at the first repeat");
    assert_eq!(count("/many/10"), 1);
    assert_eq!(count("/many/11"), 0, "the 11th redirect target is not fetched");
    assert_eq!(log.iter().filter(|r| r.host == "garbage.test" && r.path == "/").count(), 1);
    assert_eq!(log.iter().filter(|r| r.host == "hugerobots.test" && r.path == "/").count(), 1);
    assert!(status.bytes < 3 * 1024 * 1024, "the huge robots.txt was cut at the cap: {} bytes read", status.bytes);
    assert_eq!(status.queued, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssrf_guard_blocks_loopback_unless_allowed() {
    let site = Site::new("inner.test").with("/robots.txt", Resource::robots("")).html("/", "<p>router admin</p>");
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 0);
    cfg.fetch.allow_private_networks = false;
    // A node on the public web says who runs it (without a contact it would not start).
    cfg.fetch.contact_url = "mailto:crawler-ops@weft-volunteers.org".into();
    // Through the resolver (the override maps inner.test to 127.0.0.1) and as an IP literal.
    cfg.crawl.seeds = vec![server.url("inner.test", "/"), format!("http://127.0.0.1:{}/", server.port())];
    let status = common::crawl_until_idle(cfg, Duration::from_secs(30)).await;
    assert!(server.requests().is_empty(), "nothing may reach a loopback server: {:?}", server.requests());
    assert_eq!(status.errors.get("ssrf_blocked").copied(), Some(2), "{status:?}");
    assert_eq!(status.queued, 0);

    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 0);
    cfg.crawl.seeds = vec![server.url("inner.test", "/")];
    let status = common::crawl_until_idle(cfg, Duration::from_secs(30)).await;
    assert_eq!(status.pages_fetched, 1, "allow_private_networks lifts the guard");
}

/// A node must name a contact for site owners before it crawls the public web: `weft start`
/// with the defaults (private networks refused, no contact) exits at once and says how to set
/// one; a placeholder contact is refused by name; a crawl of private networks needs none, and
/// then public addresses are refused as `no_contact`, never fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_public_web_needs_a_contact_and_private_networks_do_not() {
    let dir = common::work_dir();
    let weft = |args: &[&str]| {
        std::process::Command::new(common::WEFT)
            .arg("start")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--api-listen", "127.0.0.1:0"])
            .args(args)
            .env_remove("WEFT_FETCH__CONTACT_URL")
            .env_remove("WEFT_FETCH__ALLOW_PRIVATE_NETWORKS")
            .output()
            .unwrap()
    };
    let out = weft(&["--seed", "https://example.org/"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("fetch.contact_url") && err.contains("--contact"), "{err}");
    let out = weft(&["--contact", "https://example.com/about-my-crawler"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("fetch.contact_url") && err.contains("placeholder") && err.contains("command-line flag"),
        "{err}"
    );

    // Private networks only: the loopback site is crawled, a public address is not asked.
    let site = Site::new("lan.test").with("/robots.txt", Resource::robots("")).html("/", "<p>a page on the LAN</p>");
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 0);
    assert!(cfg.fetch.contact_url.is_empty(), "the test config names no contact");
    cfg.fetch.resolve.insert("public.test".into(), "93.184.215.14".parse().unwrap());
    cfg.crawl.seeds = vec![server.url("lan.test", "/"), "http://public.test/".into(), "http://93.184.215.14/".into()];
    let status = common::crawl_until_idle(cfg, Duration::from_secs(30)).await;
    assert_eq!(status.pages_fetched, 1, "{status:?}");
    assert_eq!(status.errors.get("no_contact").copied(), Some(2), "{status:?}");
}

/// A site of generated pages linking made-up hosts: each page is held to 100 other hosts,
/// and the site's pages together to `crawl.max_hosts_per_source` (lowered here from 1,000 to
/// 50 so the test does not crawl a thousand hosts; the unit tests in `weft_frontier::fanout`
/// cover the default). The pages are spread over subdomains, which cost nothing to make: the
/// cap counts the registrable domain, its own subdomains among the hosts it brings. An
/// adversarial review's page of 100,000 links to distinct dead hosts made 100,017 hosts and
/// 1.9 GB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_site_linking_made_up_hosts_brings_a_bounded_number_of_them() {
    const PAGES: usize = 10;
    let sub = |i: usize| format!("s{i}.spam.test");
    let mut sites = vec![Site::new("spam.test")];
    sites.extend((0..PAGES).map(|i| Site::new(&sub(i))));
    let server = WebServer::start(sites).await.unwrap();
    let dead = |k: usize| format!("d{k}.test");
    let port = server.port();
    let link = |k: usize| format!("<a href=\"http://{}:{port}/\">x</a>\n", dead(k));
    let robots = || Resource::robots("User-agent: *\nAllow: /\n");
    let index: String = (0..PAGES).map(|i| format!("<a href='http://{}:{port}/p'>{i}</a>\n", sub(i))).collect();
    server.replace_site(
        Site::new("spam.test")
            .with("/robots.txt", robots())
            .html("/", &format!("{index}<a href='/flood'>f</a>"))
            .html("/flood", &(0..100_000).map(link).collect::<String>()),
    );
    for i in 0..PAGES {
        let page = (i * 100..(i + 1) * 100).map(link).collect::<String>();
        server.replace_site(Site::new(&sub(i)).with("/robots.txt", robots()).html("/p", &page));
    }
    let dir = common::work_dir();
    let mut cfg = common::config(&server, dir.path(), 0);
    // Every made-up host resolves to the test server (which answers 404 for hosts it does not
    // serve: robots.txt allows all, the page is gone): nothing leaves the machine.
    let lo: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    cfg.fetch.resolve.extend((0..100_000).map(|k| (dead(k), lo)));
    cfg.crawl.max_hosts_per_source = 50;
    cfg.crawl.seeds = vec![server.url("spam.test", "/")];
    let status = common::crawl_until_idle(cfg, Duration::from_secs(120)).await;

    let hosts: std::collections::HashSet<String> =
        server.requests().into_iter().map(|r| r.host).filter(|h| h != "spam.test").collect();
    // The ten subdomains count among the fifty: forty made-up hosts.
    assert_eq!(hosts.len(), 50, "{status:?}");
    assert_eq!(hosts.iter().filter(|h| h.ends_with(".spam.test")).count(), PAGES, "{hosts:?}");
    let e = |k: &str| status.errors.get(k).copied().unwrap_or(0);
    assert_eq!(e("hosts_per_page_capped"), 1, "the flood page: {status:?}");
    assert!(e("hosts_per_source_capped") >= PAGES as u64, "{status:?}");
    assert_eq!(status.queued, 0);
}
