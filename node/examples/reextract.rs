//! What an upgraded node's pass over its kept responses does on real pages (issue 77): the
//! pages of both extraction dev sets (`../shared`, or `EXTRACTION_DEVSET` / `EXTRACTION_DEVSET_2`)
//! served on 127.0.0.1, each under its own host and path, crawled by a node with the defaults
//! but for the rules alone (`extract.learned = false`, what builds before the learned classifier
//! ran) and `crawl.keep_responses`; then the same data dir started with the default extractor.
//! Prints the pass's counts from `/status`, how long it took, and the requests the server saw
//! in the second run, by kind (pages fetched again, robots.txt, the rest of the crawl).
//!
//! `cargo run --release -p weft-node --example reextract`

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};
use weft_extract::devset;
use weft_node::{Node, RunOptions};
use weft_simnet::{Resource, Site, WebServer};

fn config(server: &WebServer, data: &std::path::Path, seeds: Vec<String>, learned: bool) -> weft_config::Config {
    let mut c = weft_config::Config { data_dir: data.to_path_buf(), ..Default::default() };
    c.embed = weft_index::testing::embed_config();
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect::<BTreeMap<_, _>>();
    c.politeness.default_delay_ms = 0;
    c.crawl.max_depth = 0;
    c.crawl.seeds = seeds;
    c.crawl.keep_responses = true;
    c.extract.learned = learned;
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c
}

type Running = (tokio::task::JoinHandle<anyhow::Result<()>>, std::net::SocketAddr, tokio::sync::watch::Sender<bool>);

/// Opens and runs a node on `config`; returns once its API listens.
async fn start(config: weft_config::Config) -> anyhow::Result<Running> {
    let node = Node::open(config)?;
    let (stop, rx) = tokio::sync::watch::channel(false);
    let (tx, api) = tokio::sync::oneshot::channel();
    let run = tokio::spawn(node.run(RunOptions::default(), rx, move |a| {
        let _ = tx.send(a);
    }));
    Ok((run, api.await?, stop))
}

async fn status(api: std::net::SocketAddr) -> serde_json::Value {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    client.get(format!("http://{api}/status")).send().await.unwrap().json().await.unwrap()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    // One site per host of the dev sets' pages, each page at its own path.
    let mut sites: HashMap<String, Site> = HashMap::new();
    let mut pages = Vec::new();
    for set in [devset::NEWS, devset::MODERN] {
        let dir = set
            .locate(None)
            .ok_or_else(|| anyhow::anyhow!("the dev set {} is not there (set {})", set.name, set.env_var))?;
        for p in devset::load(&dir)? {
            let Ok(url) = url::Url::parse(&p.url) else { continue };
            let Some(host) = url.host_str().map(|h| format!("{}.test", h.replace('.', "-"))) else { continue };
            let path = url[url::Position::BeforePath..].to_string();
            let site =
                sites.entry(host.clone()).or_insert_with(|| Site::new(&host).with("/robots.txt", Resource::robots("")));
            if site.routes.contains_key(&path) {
                continue;
            }
            site.routes.insert(
                path.clone(),
                Resource::Raw { status: 200, headers: vec![("content-type".into(), "text/html".into())], body: p.html },
            );
            pages.push((host, path));
        }
    }
    let server = WebServer::start(sites.into_values().collect()).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let seeds: Vec<String> = pages.iter().map(|(h, p)| server.url(h, p)).collect();
    let work = tempfile::tempdir()?;
    let data = work.path().join("data");
    println!("{} pages on {} hosts", seeds.len(), server.hosts().len());

    // The build before: the rules alone, until every page is indexed (nothing in flight or
    // waiting for the indexer, the count steady for 15 s: a few hosts' robots.txt fail and
    // their pages wait out a back-off, which the measure need not).
    let started = Instant::now();
    let (run, api, stop) = start(config(&server, &data, seeds.clone(), false)).await?;
    let (mut last, mut steady) = (u64::MAX, Instant::now());
    loop {
        let s = status(api).await;
        let documents = s["index"]["documents"].as_u64().unwrap_or(0);
        if documents != last || s["in_flight"] != 0 || s["index"]["queue"] != 0 {
            (last, steady) = (documents, Instant::now());
        } else if steady.elapsed() > Duration::from_secs(15) {
            break;
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(3600), "the crawl did not settle in an hour: {s}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let _ = stop.send(true);
    run.await??;
    println!("crawled with the rules alone in {:.0} s: {last} documents", started.elapsed().as_secs_f64());
    let fetched = server.requests().len();

    // The upgrade: the default extractor on the same data dir.
    let started = Instant::now();
    let (run, api, stop) = start(config(&server, &data, seeds, true)).await?;
    let r = loop {
        let s = status(api).await;
        let r = s["index"]["reextraction"].clone();
        if r["state"] == "done" {
            break (r, s["index"]["documents"].clone());
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(1800), "the pass did not end in 30 minutes: {r}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let secs = started.elapsed().as_secs_f64();
    let _ = stop.send(true);
    run.await??;
    let (r, documents) = r;
    println!(
        "upgraded: {documents} documents held; the pass {:.0} s ({:.1} ms a response)",
        secs,
        secs * 1e3 / r["done"].as_f64().unwrap_or(1.0)
    );
    println!("{}", serde_json::to_string_pretty(&r)?);
    // What the server saw in the second run: a page of the first run fetched again would be a
    // crawl the pass was meant to spare; robots.txt, the few URLs left waiting in the first run
    // and the browser's subresources are the crawl going on.
    let seeds: std::collections::HashSet<(String, String)> = pages.into_iter().collect();
    let later = &server.requests()[fetched..];
    let again = later.iter().filter(|r| seeds.contains(&(r.host.clone(), r.path.clone()))).count();
    let robots = later.iter().filter(|r| r.path == "/robots.txt").count();
    println!(
        "requests in the second run: {} — pages of the first run fetched again {again}, robots.txt {robots}, other {}",
        later.len(),
        later.len() - again - robots
    );
    Ok(())
}
