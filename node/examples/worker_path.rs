//! The worker path, measured: extraction plus the layout worker applying a template, per page,
//! on the extraction dev sets — the DOM the extractor parsed reused by the worker (today's
//! code) against the worker parsing the page again (what it did before: decode, then
//! html5ever once more), alternating per page in one run, medians.
//!
//! Every page's host gets an operator template (content `body`, title `title, h1`), so the
//! worker applies a template to every page: the case a second parse would cost most. The store
//! is a real sled database; the worker is the node's.
//!
//! `cargo run --release -p weft-node --example worker_path -- [DEVSET_DIR ...]`
//! (default: `../shared/extraction-devset` and `../shared/extraction-devset-2`).

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use url::Url;
use weft_extract::devset;
use weft_extract::template::{Level, Origin, Selectors, Template};
use weft_node::layouts::{LayoutStore, Worker};
use weft_node::page::FetchedPage;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    v[v.len() / 2]
}

/// What the worker did before it was given the extractor's DOM: decode and parse the page
/// again (`worker.rs` `parse`, as it was).
fn parse_again(page: &FetchedPage) -> scraper::Html {
    let tld = page.url.host_str().and_then(|h| h.rsplit('.').next());
    let decoded = weft_extract::decode::decode(&page.body, page.content_type.as_deref(), tld, &mut Vec::new());
    scraper::Html::parse_document(&decoded.text)
}

fn template_for(host: &str) -> Template {
    Template {
        host: host.to_string(),
        signature: "0000000000000000".into(),
        level: Level::L1,
        selectors: Selectors { title: "title, h1".into(), content: "body".into(), date: None, author: None },
        exclusions: Vec::new(),
        confidence: 1.0,
        version: 1,
        origin: Origin::Manual,
        learned_at: 0,
    }
}

fn run(dir: &Path) -> anyhow::Result<()> {
    let pages = devset::load(dir)?;
    let pages: Vec<FetchedPage> = pages
        .into_iter()
        .filter_map(|p| {
            let url = Url::parse(&p.url).ok()?;
            Some(FetchedPage {
                url,
                status: 200,
                content_type: None,
                content_language: None,
                body: p.html.into(),
                depth: 1,
                fetched_at: SystemTime::now(),
                rendered: false,
            })
        })
        .collect();
    let hosts: std::collections::BTreeSet<String> =
        pages.iter().map(|p| weft_url::HostKey::of(&p.url).into_string()).collect();
    let tmp = tempfile::tempdir()?;
    let store = LayoutStore::open_dir(tmp.path(), 3)?.with_overrides(hosts.iter().map(|h| template_for(h)).collect());
    let config = weft_config::Config::default();
    let metrics = Arc::new(weft_node::metrics::Metrics::default());
    let worker = Worker::new(store, &config.layouts, metrics, Arc::new(AtomicBool::new(true)), Arc::default());

    let (mut before, mut after, mut extract_only) = (Vec::new(), Vec::new(), Vec::new());
    let mut by_template = 0;
    for (i, page) in pages.iter().enumerate() {
        let headers: [(&str, &str); 0] = [];
        let once = || {
            let t = Instant::now();
            let (mut e, dom) = weft_extract::extract_with_dom(&page.body, &headers, &page.url);
            let w = worker.work(page, &mut e, &dom);
            (t.elapsed().as_secs_f64() * 1000.0, w.template.is_some())
        };
        let twice = || {
            let t = Instant::now();
            let mut e = weft_extract::extract(&page.body, &headers, &page.url);
            let dom = parse_again(page);
            worker.work(page, &mut e, &dom);
            t.elapsed().as_secs_f64() * 1000.0
        };
        // Alternate which goes first: the machine is shared and noisy.
        let (a, b) = if i % 2 == 0 {
            let a = once();
            (a, twice())
        } else {
            let b = twice();
            (once(), b)
        };
        after.push(a.0);
        by_template += usize::from(a.1);
        before.push(b);
        let t = Instant::now();
        let _ = weft_extract::extract(&page.body, &headers, &page.url);
        extract_only.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    println!(
        "{name:<22} {:>5} pages ({by_template} by template)  extract alone {:>6.2} ms  worker path: parsed twice {:>6.2} ms, once {:>6.2} ms  ({:+.0}%)",
        pages.len(),
        median(extract_only),
        median(before.clone()),
        median(after.clone()),
        100.0 * (median(after) / median(before) - 1.0)
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let dirs =
        if args.is_empty() { vec![root.join("extraction-devset"), root.join("extraction-devset-2")] } else { args };
    println!("median per page, release build, single thread (extraction + layout worker applying a template)");
    for dir in dirs {
        if !dir.join("ground-truth.json").is_file() {
            println!("{}: no dev set there (ground-truth.json missing); skipped", dir.display());
            continue;
        }
        run(&dir)?;
    }
    Ok(())
}
