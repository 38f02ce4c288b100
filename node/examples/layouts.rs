//! Layout learning, measured: a real node (release build, Debian's Chromium as the teacher)
//! crawls news sites in four designs on loopback (`weft_simnet::news`), then
//!
//! - how many pages the worker extracted by template during the crawl, and how many it does
//!   once warmed up (every article run through the worker again with the store the crawl built);
//! - extraction F1 against the true text, template path vs the generic extractor, on the same
//!   pages, in the same run (the dev-set scorer's metric);
//! - how often the teacher ran per 1,000 pages;
//! - browser pages/s and memory per instance, rendering articles through the crawler's rules.
//!
//! `cargo run --release -p weft-node --example layouts -- [--sites 8] [--pages 150] [--renders 40]`

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_config::Config;
use weft_extract::devset::{score_page, summarize, PageScore};
use weft_node::browser::{BrowserPool, BrowserSettings};
use weft_node::layouts::{LayoutStore, RenderFetcher, Worker};
use weft_node::page::FetchedPage;
use weft_node::{Node, RunOptions};
use weft_simnet::news::{news_site, Article, NewsSite, DESIGNS};
use weft_simnet::{Resource, WebServer};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn config(server: &WebServer, dir: &std::path::Path, delay_ms: u64) -> Config {
    let mut c = Config { data_dir: dir.to_path_buf(), ..Default::default() };
    c.index.enabled = false; // extraction is measured here, not embedding
    c.api.enabled = false;
    c.extract.second_opinion = weft_config::SecondOpinion::Off;
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = IpAddr::from([127, 0, 0, 1]);
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect::<BTreeMap<_, _>>();
    c.politeness.default_delay_ms = delay_ms;
    c.frontier.seen_capacity = 100_000;
    c.crawl.concurrency = 8;
    c
}

/// One design's articles and their scores.
#[derive(Default)]
struct DesignScores {
    articles: usize,
    by_template: usize,
    /// The template path's scores, on the pages a template extracted...
    template: Vec<PageScore>,
    /// ... the generic extractor's on the same pages ...
    generic_same: Vec<PageScore>,
    /// ... and on every article.
    generic_all: Vec<PageScore>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        0.0
    } else {
        v[v.len() / 2]
    }
}

fn main() -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    let (sites, pages, renders) = (arg("--sites", 8), arg("--pages", 150), arg("--renders", 40));
    // A polite crawl: the teacher learns while the crawl waits between requests to a host.
    let delay_ms = arg("--delay-ms", 250) as u64;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let news: Vec<_> = (0..sites)
            .map(|i| {
                (format!("{}{i}.test", DESIGNS[i % 4]), news_site(&format!("{}{i}.test", DESIGNS[i % 4]), i, pages))
            })
            .collect();
        let server = WebServer::start(news.iter().map(|(_, n)| n.site.clone()).collect()).await?;
        let dir = tempfile::tempdir()?;
        let mut c = config(&server, dir.path(), delay_ms);
        c.crawl.seeds = news.iter().map(|(h, _)| server.url(h, "/")).collect();
        crawl(&c, sites, pages, delay_ms).await?;
        warmed_up(&c, &server, &news)?;
        browser(&c, &server, &news, sites * pages, renders).await
    })
}

/// 1. The crawl, with the worker and the teacher.
async fn crawl(c: &weft_config::Config, sites: usize, pages: usize, delay_ms: u64) -> anyhow::Result<()> {
    let node = Node::open(c.clone())?;
    let crawler = node.crawler().clone();
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let t = Instant::now();
    node.run(RunOptions { exit_when_idle: true }, rx, |_| {}).await?;
    let crawl_secs = t.elapsed().as_secs_f64();
    let status = crawler.status();
    drop(crawler);
    let n = |k: &str| status.extraction.get(k).copied().unwrap_or(0);
    let fetched = status.pages_fetched;
    println!(
        "crawl: {fetched} pages from {sites} sites ({pages} articles each, {delay_ms} ms between requests to a host) in {crawl_secs:.1} s"
    );
    println!(
        "  during the crawl: {} pages by template, {} generic ({:.1}% by template, warm-up included)",
        n("layout:template"),
        n("layout:generic"),
        100.0 * n("layout:template") as f64 / fetched.max(1) as f64
    );
    println!(
        "  teacher: {} runs ({} learned, {} failed, {} found JavaScript needed) = {:.1} per 1,000 pages",
        n("teacher:runs"),
        n("teacher:learned"),
        n("teacher:failed"),
        n("teacher:js_required"),
        1000.0 * n("teacher:runs") as f64 / fetched.max(1) as f64
    );
    println!(
        "  new signatures that took a host template: {} by the worker, {} by the teacher (no render); template failures: {}",
        n("layout:adopted"),
        n("teacher:adopted"),
        n("layout:template_failed")
    );

    Ok(())
}

/// 2. Warmed up: every article through the worker with the store the crawl built, next to the
/// generic extractor, both scored against the truth.
fn warmed_up(c: &weft_config::Config, server: &WebServer, news: &[(String, NewsSite)]) -> anyhow::Result<()> {
    let store = LayoutStore::open_dir(&c.data_dir, c.layouts.teach_after)?;
    let metrics = Arc::new(weft_node::metrics::Metrics::default());
    let worker = Worker::new(store, &c.layouts, metrics, Arc::new(AtomicBool::new(false)), Arc::default());
    let mut by_design: BTreeMap<&str, DesignScores> = BTreeMap::new();
    for (i, (host, site)) in news.iter().enumerate() {
        for Article { path, text, .. } in &site.articles {
            let Resource::Html(html) = &site.site.routes[path] else { continue };
            let url = url::Url::parse(&server.url(host, path))?;
            let page = FetchedPage {
                url: url.clone(),
                status: 200,
                content_type: Some("text/html; charset=utf-8".into()),
                content_language: None,
                body: html.clone().into_bytes().into(),
                depth: 1,
                fetched_at: std::time::SystemTime::now(),
                rendered: false,
            };
            let (generic, dom) = weft_extract::extract_with_dom(html.as_bytes(), &[], &url);
            let mut e = generic.clone();
            let worked = worker.work(&page, &mut e, &dom);
            let entry = by_design.entry(DESIGNS[i % 4]).or_default();
            entry.articles += 1;
            let g = score_page(text, &generic.text);
            entry.generic_all.push(g);
            if worked.template.is_some() {
                entry.by_template += 1;
                let t = score_page(text, &e.text);
                if std::env::var_os("WEFT_SHOW_MISSES").is_some() && t.f1() < 0.95 {
                    eprintln!(
                        "{url}: template F1 {:.3} (generic {:.3})\n  got:   {:?}\n  truth: {:?}",
                        t.f1(),
                        g.f1(),
                        e.text,
                        text
                    );
                }
                entry.template.push(t);
                entry.generic_same.push(g);
            }
        }
    }
    println!("warmed up (every article through the worker again):");
    println!(
        "  {:<9} {:>8} {:>12} {:>14} {:>16} {:>14}",
        "design", "articles", "by template", "F1 template", "F1 generic (same)", "F1 generic (all)"
    );
    let (mut all_t, mut all_g_same, mut all_g, mut total, mut templ) = (Vec::new(), Vec::new(), Vec::new(), 0, 0);
    for (
        design,
        DesignScores { articles: count, by_template: by, template: t, generic_all: g_all, generic_same: g_same },
    ) in &by_design
    {
        println!(
            "  {design:<9} {count:>8} {:>11.1}% {:>14.3} {:>16.3} {:>14.3}",
            100.0 * *by as f64 / *count as f64,
            summarize(t).f1,
            summarize(g_same).f1,
            summarize(g_all).f1
        );
        total += count;
        templ += by;
        all_t.extend(t.iter().copied());
        all_g_same.extend(g_same.iter().copied());
        all_g.extend(g_all.iter().copied());
    }
    println!(
        "  {:<9} {total:>8} {:>11.1}% {:>14.3} {:>16.3} {:>14.3}",
        "all",
        100.0 * templ as f64 / total.max(1) as f64,
        summarize(&all_t).f1,
        summarize(&all_g_same).f1,
        summarize(&all_g).f1
    );
    drop(worker);

    Ok(())
}

/// 3. The browser: render articles through the crawler's rules (robots.txt, the SSRF guard; no
/// delay between requests, so the browser itself is measured), 1 and 2 instances.
async fn browser(
    c: &weft_config::Config,
    server: &WebServer,
    news: &[(String, NewsSite)],
    articles: usize,
    renders: usize,
) -> anyhow::Result<()> {
    let dir2 = tempfile::tempdir()?;
    let node = Node::open(config(server, dir2.path(), 0))?;
    let fetcher = RenderFetcher::new(Arc::new(node.crawler().clone()), c.layouts.max_subresources);
    let fetch_for = move |u: &str| fetcher.for_page(&url::Url::parse(u).unwrap(), None, Duration::from_secs(30)).0;
    let urls: Vec<String> = news
        .iter()
        .flat_map(|(h, s)| s.articles.iter().map(move |a| (h.clone(), a.path.clone())))
        .step_by((articles / renders.max(1)).max(1))
        .take(renders)
        .map(|(h, p)| server.url(&h, &p))
        .collect();
    for instances in [1usize, 2] {
        let pool = Arc::new(
            BrowserPool::launch(BrowserSettings { instances, timeout: Duration::from_secs(30), ..Default::default() })
                .await?,
        );
        // One warm-up render per instance.
        for u in urls.iter().take(instances) {
            pool.render(u, fetch_for(u)).await?;
        }
        let t = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        let mut took = Vec::new();
        for u in &urls {
            let (pool, fetch, u) = (pool.clone(), fetch_for(u), u.clone());
            tasks.spawn(async move { pool.render(&u, fetch).await.map(|r| r.took.as_secs_f64() * 1000.0) });
        }
        let mut peak: Vec<u64> = vec![0; instances];
        while let Some(r) = tasks.join_next().await {
            took.push(r??);
            for (p, m) in peak.iter_mut().zip(pool.memory()) {
                *p = (*p).max(m);
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let mib: Vec<String> = peak.iter().map(|b| format!("{:.0}", *b as f64 / (1 << 20) as f64)).collect();
        println!(
            "browser, {instances} instance(s): {} pages in {secs:.1} s = {:.1} pages/s, median render {:.0} ms, peak memory per instance {} MiB",
            urls.len(),
            urls.len() as f64 / secs,
            median(took),
            mib.join(" / ")
        );
        pool.close().await;
    }
    Ok(())
}
