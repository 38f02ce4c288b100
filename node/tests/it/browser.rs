//! The browser pool with Debian's real Chromium: pages from a loopback web server, every request
//! answered through the pool's fetch function (here: plain HTTP to 127.0.0.1 for `.test`
//! hosts, nothing else), element boxes read from the rendered layout, and a single-page app's
//! text that only exists after its script fetched it.

use crate::common;

use std::time::Duration;
use weft_node::browser::{BrowserPool, BrowserSettings};
use weft_simnet::{Resource, Site, WebServer};

const PARAGRAPH: &str = "The tide rises and falls twice a day because the moon pulls the oceans toward it while the earth turns beneath that bulge of water.";

fn article() -> String {
    let body: String = (0..5).map(|i| format!("<p>{PARAGRAPH} ({i})</p>")).collect();
    format!(
        "<!doctype html><html><head><title>Tides | News</title>\
         <style>h1 {{ font-size: 40px }} .sidebar {{ float: right; width: 200px; font-size: 12px }} \
         .post-body {{ width: 700px; font-size: 18px }}</style></head><body>\
         <nav class=\"menu\"><a href=\"/\">Home</a> <a href=\"/about\">About</a></nav>\
         <aside class=\"sidebar\"><h2>Related</h2><p>Other stories you may like</p></aside>\
         <article class=\"post\"><h1 class=\"post-title\">Why the tide turns</h1>\
         <div class=\"post-body\">{body}</div></article>\
         <img src=\"http://tracker.example/pixel.gif\"><div hidden>hidden words</div></body></html>"
    )
}

const SPA: &str = "<!doctype html><html><head><title>App</title></head><body><div id=\"app\"></div>\
                   <script src=\"/app.js\"></script></body></html>";
const APP_JS: &str = "fetch('/data.json').then(r => r.json()).then(d => {\
    const h = document.createElement('h1'); h.textContent = d.title; document.getElementById('app').appendChild(h);\
    for (const p of d.paragraphs) { const e = document.createElement('p'); e.textContent = p; document.getElementById('app').appendChild(e); }\
  });";

fn data_json() -> String {
    let paragraphs: Vec<String> = (0..4).map(|i| format!("{PARAGRAPH} [{i}]")).collect();
    serde_json::json!({ "title": "Tides, rendered by a script", "paragraphs": paragraphs }).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_through_weft_and_reports_the_layout() {
    let site = Site::new("news.test")
        .html("/article", &article())
        .html("/spa", SPA)
        .with("/app.js", Resource::text("application/javascript", APP_JS))
        .with("/data.json", Resource::text("application/json", data_json()));
    let server = WebServer::start(vec![site]).await.unwrap();
    let settings = BrowserSettings { instances: 2, timeout: Duration::from_secs(30), ..Default::default() };
    let pool = BrowserPool::launch(settings).await.expect("Debian's chromium starts (scripts/setup.sh)");
    assert_eq!(pool.instances(), 2);
    let fetch = common::loopback_fetch(&server);

    // Both instances at once.
    let (a, b) = tokio::join!(
        pool.render("http://news.test/article", fetch.clone()),
        pool.render("http://news.test/spa", fetch.clone())
    );
    let (article, spa) = (a.unwrap(), b.unwrap());

    // The layout as rendered: the title is the largest text, the body the largest text block,
    // the hidden element is not visible, the sidebar is narrow.
    let by_class = |c: &str| article.elements.iter().find(|e| e.classes.iter().any(|x| x == c)).unwrap();
    let h1 = article.elements.iter().find(|e| e.tag == "h1").unwrap();
    assert_eq!(h1.font_size, 40.0);
    assert!(article.elements.iter().filter(|e| e.visible).all(|e| e.font_size <= h1.font_size));
    let body = by_class("post-body");
    assert!(body.text_chars > 600 && body.width >= 700.0 && body.font_size == 18.0, "{body:?}");
    assert!(by_class("sidebar").width <= 200.0);
    assert!(h1.y < body.y, "the title is above the text");
    let hidden = article.elements.iter().find(|e| e.text == "hidden words");
    assert!(hidden.is_none_or(|e| !e.visible));
    // The path finds the element in the rendered HTML.
    let doc = scraper::Html::parse_document(&article.html);
    let found = doc.select(&scraper::Selector::parse(&body.path).unwrap()).next().unwrap();
    assert_eq!(found.value().attr("class"), Some("post-body"));

    // Every request went through the fetch function; the tracker was blocked, not fetched.
    let asked: Vec<(&str, bool)> = article.requests.iter().map(|(r, ok)| (r.url.as_str(), *ok)).collect();
    assert!(asked.contains(&("http://news.test/article", true)), "{asked:?}");
    assert!(asked.contains(&("http://tracker.example/pixel.gif", false)), "{asked:?}");

    // The single-page app: its text exists only after the script fetched the data.
    assert!(spa.html.contains("Tides, rendered by a script") && spa.html.contains("[3]"), "{}", spa.html);
    let app = spa.elements.iter().find(|e| e.id == "app").unwrap();
    assert!(app.text_chars > 400, "{app:?}");
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    for p in ["/article", "/spa", "/app.js", "/data.json"] {
        assert!(paths.iter().any(|x| x == p), "{p} in {paths:?}");
    }

    let memory = pool.memory();
    assert!(memory.iter().all(|m| *m > 10 << 20), "{memory:?}");
    pool.close().await;
}

/// A node's configuration for `host` served on 127.0.0.1, the defaults otherwise
/// ([`common::default_config`]): the test drives the crawler and the browser itself.
fn loopback_config(dir: &std::path::Path, host: &str, delay_ms: u64) -> weft_config::Config {
    let mut config = common::default_config(dir);
    config.fetch.resolve = [(host.to_string(), "127.0.0.1".parse().unwrap())].into();
    config.politeness.default_delay_ms = delay_ms;
    config
}

/// A page rendered through the crawler obeys the crawl's rules for every request it makes:
/// robots.txt first, nothing under a Disallow, one request at a time and the host's delay
/// between them — judged from the web server's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendering_through_the_crawler_is_polite_and_obeys_robots() {
    let page = "<!doctype html><html><head><title>P</title><link rel=\"stylesheet\" href=\"/c.css\"></head>\
                <body><p id=\"out\">static</p><img src=\"/private/secret.png\">\
                <script src=\"/a.js\"></script><script src=\"/b.js\"></script></body></html>";
    let a_js = "fetch('/private/data.json').catch(() => {}); document.getElementById('out').textContent = 'scripted';";
    let site = Site::new("polite.test")
        .with("/robots.txt", Resource::robots("User-agent: *\nDisallow: /private/\n"))
        .html("/page", page)
        .with("/a.js", Resource::text("application/javascript", a_js))
        .with("/b.js", Resource::text("application/javascript", "window.b = 1;"))
        .with("/c.css", Resource::text("text/css", "p { color: black }"))
        .with("/private/secret.png", Resource::text("image/png", "x"))
        .with("/private/data.json", Resource::text("application/json", "{}"));
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let config = loopback_config(dir.path(), "polite.test", 300);
    let max_subresources = config.layouts.max_subresources;
    let node = weft_node::Node::open(config).unwrap();
    let page_url = url::Url::parse(&format!("http://polite.test:{}/page", server.port())).unwrap();
    let fetcher = weft_node::layouts::RenderFetcher::new(std::sync::Arc::new(node.crawler().clone()), max_subresources);
    let (fetch, _) = fetcher.for_page(&page_url, None, Duration::from_secs(20));
    let pool =
        BrowserPool::launch(BrowserSettings { instances: 1, timeout: Duration::from_secs(30), ..Default::default() })
            .await
            .unwrap();
    let url = format!("http://polite.test:{}/page", server.port());
    let rendered = pool.render(&url, fetch).await.unwrap();
    pool.close().await;
    assert!(rendered.html.contains("scripted"), "the scripts ran");

    let log = server.requests();
    let paths: Vec<&str> = log.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths.first(), Some(&"/robots.txt"), "{paths:?}");
    for p in ["/page", "/a.js", "/b.js", "/c.css"] {
        assert_eq!(paths.iter().filter(|x| **x == p).count(), 1, "{p} once in {paths:?}");
    }
    assert!(paths.iter().all(|p| !p.starts_with("/private/")), "{paths:?}");
    let refused: Vec<&str> = rendered.requests.iter().filter(|(_, ok)| !ok).map(|(r, _)| r.url.as_str()).collect();
    assert!(refused.iter().any(|u| u.ends_with("/private/secret.png")), "{refused:?}");
    for w in log.windows(2) {
        assert!(w[1].started >= w[0].answered, "one request at a time: {paths:?}");
        let gap = w[1].started.duration_since(w[0].answered);
        assert!(gap >= Duration::from_millis(295), "{gap:?} between {} and {}", w[0].path, w[1].path);
    }
}

/// A node runs for months and Chromium's memory grows with what it renders: an instance is
/// restarted after `restart_after_renders` pages, and once measured past `restart_above_bytes`
/// — a new process in its place, the pool the same size, every page still rendered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_is_restarted_after_its_renders_and_past_its_memory() {
    let site = Site::new("news.test").html("/article", &article());
    let server = WebServer::start(vec![site]).await.unwrap();
    let fetch = common::loopback_fetch(&server);
    // Two pages an instance (the default is 200), no memory bound.
    let settings = BrowserSettings {
        instances: 1,
        timeout: Duration::from_secs(30),
        restart_after_renders: 2,
        restart_above_bytes: 0,
        ..Default::default()
    };
    let pool = BrowserPool::launch(settings).await.expect("Debian's chromium starts (scripts/setup.sh)");
    let first = pool.measure_memory();
    assert_eq!(first.len(), 1);
    for _ in 0..5 {
        let page = pool.render("http://news.test/article", fetch.clone()).await.unwrap();
        assert!(page.html.contains("Why the tide turns"));
    }
    assert_eq!(pool.restarts(), 2, "after the second and the fourth page");
    assert_eq!(pool.instances(), 1);
    assert!(pool.measure_memory()[0] > 0, "the fresh instance is measured");
    pool.close().await;

    // A memory bound any Chromium is past: restarted after each page once measured.
    let settings = BrowserSettings {
        instances: 1,
        timeout: Duration::from_secs(30),
        restart_after_renders: 0,
        restart_above_bytes: 1,
        ..Default::default()
    };
    let pool = BrowserPool::launch(settings).await.unwrap();
    pool.render("http://news.test/article", fetch.clone()).await.unwrap();
    assert_eq!(pool.restarts(), 0, "not measured yet");
    assert!(pool.measure_memory()[0] > 1);
    pool.render("http://news.test/article", fetch.clone()).await.unwrap();
    assert_eq!(pool.restarts(), 1);
    pool.render("http://news.test/article", fetch).await.unwrap();
    assert_eq!(pool.restarts(), 1, "the fresh instance is not judged by the old one's figure");
    assert_eq!(pool.instances(), 1);
    pool.close().await;
}

/// A page of a host whose pages go straight to the browser (no static fetch, so no HTML
/// held), whose server fails for a moment — a 503 to the browser's request for it — is neither
/// indexed as that error nor lost: the real render queue (`layouts::rendering`, a real node's
/// crawler and Chromium) puts it back to wait for its host and renders it once the first wait
/// (`RENDER_RETRY_SECS[0]`, 30 s) has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_whose_host_failed_during_its_render_is_rendered_again_after_its_wait() {
    let page = common::coast::spa(0).replace("/v4/", "/a/");
    let site = Site::new("spa.test")
        .with("/a/0", Resource::Sequence(vec![Resource::status(503), Resource::Html(page)]))
        .with("/a/0.js", Resource::text("application/javascript", common::coast::spa_js(0)));
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let config = loopback_config(dir.path(), "spa.test", 100);
    let node = weft_node::Node::open(config.clone()).unwrap();
    let layouts = node.layouts().expect("layouts are on by default");
    let url = url::Url::parse(&format!("http://spa.test:{}/a/0", server.port())).unwrap();
    let reason = weft_node::page::RenderReason::HostRenders("the test".into());
    layouts.renders.push_stored(&url, 1, &reason, None).unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    layouts.spawn(
        &config,
        &(std::sync::Arc::new(node.crawler().clone()) as weft_node::layouts::CrawlHandle),
        &mut tasks,
    );
    let metrics = node.crawler().metrics();
    let count = |k: &str| metrics.extractions().get(k).copied().unwrap_or(0);
    let index = node.index().expect("the index is on by default");
    let indexed = || index.recent().into_iter().any(|d| d.url == url.as_str() && d.chunks > 0);
    // The render is counted before its job leaves the queue and before the indexer has the
    // page: all three are waited for, each within the bound.
    let started = std::time::Instant::now();
    while count("render:rendered") == 0 || layouts.store.render_jobs() > 0 || !indexed() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "not rendered again, left in the queue or not indexed: {:?}, {} jobs queued, indexed {:?}",
            metrics.extractions(),
            layouts.store.render_jobs(),
            index.recent()
        );
        assert_eq!(count("render:gave_up"), 0, "{:?}", metrics.extractions());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(count("render:retried"), 1, "{:?}", metrics.extractions());
    assert_eq!(count("render:rendered"), 1, "{:?}", metrics.extractions());
    let tries: Vec<_> = server.requests().into_iter().filter(|r| r.path == "/a/0").collect();
    assert_eq!(tries.len(), 2, "the 503, then the page");
    let waited = tries[1].started.duration_since(tries[0].answered);
    let first = Duration::from_secs(weft_node::layouts::RENDER_RETRY_SECS[0]);
    assert!(waited >= first - Duration::from_secs(1), "tried again after {waited:?}");
    tasks.abort_all();
    if let Some(pool) = layouts.pool.started() {
        pool.close().await;
    }
}
