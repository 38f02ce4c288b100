//! Crawl-loop ceiling: pages/s against the loopback test server with politeness delays at 0,
//! so what is measured is the machinery (frontier, robots, fetch, link discovery, durability),
//! not the waiting. Run: `cargo run --release -p weft-node --example bench_crawl [HOSTS PAGES]`

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;
use weft_config::Config;
use weft_node::{Node, RunOptions};
use weft_simnet::{generated_site, WebServer};

fn main() -> anyhow::Result<()> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (hosts, pages) = (args.first().copied().unwrap_or(50), args.get(1).copied().unwrap_or(200));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let sites = (0..hosts).map(|h| generated_site(&format!("h{h}.test"), pages, 4)).collect();
        let server = WebServer::start(sites).await?;
        let dir = tempfile::tempdir()?;
        let mut c = Config { data_dir: dir.path().to_path_buf(), ..Default::default() };
        c.index.enabled = false; // the crawl loop alone
        c.layouts.enabled = false; // the crawl loop alone, as the reference crawler measures it
        c.api.enabled = false;
        c.fetch.allow_private_networks = true;
        let lo: IpAddr = "127.0.0.1".parse()?;
        c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect::<BTreeMap<_, _>>();
        c.politeness.default_delay_ms = 0;
        c.frontier.seen_capacity = 1_000_000;
        c.crawl.seeds = (0..hosts).map(|h| server.url(&format!("h{h}.test"), "/")).collect();
        let node = Node::open(c)?;
        let crawler = node.crawler().clone();
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let t = Instant::now();
        node.run(RunOptions { exit_when_idle: true }, rx, |_| {}).await?;
        let secs = t.elapsed().as_secs_f64();
        let s = crawler.status();
        assert_eq!(s.pages_fetched as usize, hosts * pages, "every page crawled");
        println!(
            "crawl loop: {hosts} hosts x {pages} pages, delay 0, concurrency 32: {} pages in {secs:.2} s = {:.0} pages/s ({:.0} requests/s incl. robots.txt and sitemaps)",
            s.pages_fetched,
            s.pages_fetched as f64 / secs,
            s.requests as f64 / secs
        );
        anyhow::Ok(())
    })
}
