//! A node crawling a link-heavy web for an hour (issue 23): one release `weft start` process,
//! default configuration (index, layouts and Chromium on, as shipped) except what loopback
//! needs and the network (one node alone), crawling an endless [`LinkFarm`] web on 127.0.0.1 where every page links to dozens of
//! URLs never seen before — so its frontier grows far faster than it drains, as a real crawl's
//! does. Every 30 s it prints the node's pages fetched, URLs queued, the weft process's
//! resident memory (`VmRSS`, browsers not included), the frontier's files and the whole data
//! dir; at the end the same figures at the start and end of the last half of the run, to show
//! whether memory stays flat while the queue grows.
//!
//! `cargo build --release -p weft-node && cargo run --release -p weft-simnet --example crawl_soak -- [--minutes 60] [--hosts 500] [--links 60] [--keep]`
//! (`WEFT_BIN=path` runs another `weft` binary than `target/release/weft`, to compare builds).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_simnet::{LinkFarm, Site, WebServer};

/// How far from a checkpoint the samples of its median go, minutes.
const MEDIAN_SPAN: f64 = 2.5;

/// The median RSS of the samples within [`MEDIAN_SPAN`] of minute `at` (none without samples
/// there).
fn median_rss(samples: &[Sample], at: f64) -> Option<f64> {
    let mut near: Vec<f64> = samples.iter().filter(|s| (s.minutes - at).abs() <= MEDIAN_SPAN).map(|s| s.rss).collect();
    near.sort_by(f64::total_cmp);
    (!near.is_empty()).then(|| near[near.len() / 2])
}

/// The node's `/status` (null when it does not answer).
async fn status(client: &reqwest::Client, api: &str) -> serde_json::Value {
    let Ok(r) = client.get(format!("{api}/status")).send().await else { return serde_json::Value::Null };
    r.json().await.unwrap_or(serde_json::Value::Null)
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn dir_size(p: &Path) -> u64 {
    std::fs::read_dir(p)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_size(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .map_or(0.0, |kb: f64| kb / 1024.0)
}

/// `name value` lines of the node's `/metrics`.
async fn metrics(client: &reqwest::Client, api: &str) -> BTreeMap<String, f64> {
    let Ok(r) = client.get(format!("{api}/metrics")).send().await else { return BTreeMap::new() };
    let text = r.text().await.unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    minutes: f64,
    pages: f64,
    queued: f64,
    rss: f64,
    /// The node's own figures by part (`/metrics`), MiB: anonymous memory, pages of mapped
    /// files, the vector index's in-memory part, the browsers' process trees.
    anon: f64,
    file: f64,
    vectors: f64,
    browsers: f64,
    /// The fjall stores' memory, the rest of the anonymous memory, the allocator's live heap.
    storage: f64,
    other: f64,
    heap_live: f64,
    /// The storage part's two largest stores, MiB (`/status`): the frontier's and the documents'.
    frontier_store: f64,
    doc_store: f64,
    frontier_mib: f64,
    data_mib: f64,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let minutes = arg("--minutes", 60);
    let hosts = arg("--hosts", 500) as usize;
    let links = arg("--links", 60) as usize;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let weft = std::env::var_os("WEFT_BIN").map(PathBuf::from).unwrap_or(root.join("target/release/weft"));
    let models = std::env::var_os("WEFT_MODELS").map(PathBuf::from).unwrap_or(root.join("models"));
    if !weft.exists() {
        return Err(format!("{} is missing: cargo build --release -p weft-node", weft.display()).into());
    }
    if !models.join("all-MiniLM-L6-v2-int8/model.onnx").exists() {
        return Err(format!("the model files are not in {}: run scripts/setup.sh", models.display()).into());
    }
    let names: Vec<String> = (0..hosts).map(|h| format!("farm{h}.test")).collect();
    let server = WebServer::start_with(|port| {
        let farm = LinkFarm { links, hosts: Arc::new(names.iter().map(|n| format!("{n}:{port}")).collect()) };
        names.iter().map(|n| Site::link_farm(n, farm.clone())).collect()
    })
    .await?;
    let Node { mut child, work, data, api_port } = start_node(&server, &names, &weft, &models)?;
    let pid = child.id().unwrap_or(0);
    let api = format!("http://127.0.0.1:{api_port}");
    let client = reqwest::Client::new();
    println!(
        "crawl soak: {minutes} min, {hosts} link-farm hosts, {links} links per page (every fifth to another host), default config"
    );
    Sample::print_header();
    let started = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    while started.elapsed() < Duration::from_secs(minutes * 60) {
        tokio::time::sleep(Duration::from_secs(30)).await;
        if let Ok(Some(status)) = child.try_wait() {
            // Kept for reading: the log says why.
            let kept = work.keep();
            let log = std::fs::read_to_string(kept.join("weft.log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().filter(|l| !l.contains("\"INFO\"")).take(20).collect();
            for l in tail.iter().rev() {
                eprintln!("{l}");
            }
            return Err(format!("weft exited early ({status}); see {}", kept.join("weft.log").display()).into());
        }
        let s = Sample::take(&client, &api, pid, &data, started).await;
        s.print_row();
        samples.push(s);
    }
    let _ = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status();
    let _ = tokio::time::timeout(Duration::from_secs(60), child.wait()).await;
    summarize(&samples);
    // `--keep`: the data dir stays for a look afterwards (`weft doctor --data-dir DIR`).
    if std::env::args().any(|a| a == "--keep") {
        println!("kept the data dir: {}", work.keep().join("data").display());
    }
    Ok(())
}

/// The node under soak: its process, work dir, data dir and API port.
struct Node {
    child: tokio::process::Child,
    work: tempfile::TempDir,
    data: PathBuf,
    api_port: u16,
}

/// One node with the default configuration alone, seeded with every host's root.
fn start_node(
    server: &WebServer,
    names: &[String],
    weft: &Path,
    models: &Path,
) -> Result<Node, Box<dyn std::error::Error>> {
    let work = tempfile::tempdir()?;
    let data = work.path().join("data");
    let api_port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut c = weft_config::Config { data_dir: data.clone(), ..Default::default() };
    let lo: IpAddr = IpAddr::from([127, 0, 0, 1]);
    c.fetch.allow_private_networks = true;
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect();
    c.crawl.follow_external_links = true;
    c.crawl.seeds = names.iter().map(|n| server.url(n, "/")).collect();
    c.api.listen = std::net::SocketAddr::from((lo, api_port));
    // One node alone: the network has nothing to do here (the frontier's growth is what is
    // measured), and off it sends nothing anywhere.
    c.p2p.enabled = false;
    c.embed.model = models.join("all-MiniLM-L6-v2-int8/model.onnx");
    c.embed.tokenizer = models.join("all-MiniLM-L6-v2-int8/tokenizer.json");
    c.embed.ort_library = models.join("onnxruntime-1.31.1/libonnxruntime.so");
    let config = work.path().join("weft.toml");
    std::fs::write(&config, c.to_toml())?;
    let log = std::fs::File::create(work.path().join("weft.log"))?;
    let child = tokio::process::Command::new(weft)
        .args(["start", "--config"])
        .arg(&config)
        // The node reads every `WEFT_*` variable as configuration: `WEFT_BIN` is ours.
        .env_remove("WEFT_BIN")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()?;
    Ok(Node { child, work, data, api_port })
}

impl Sample {
    /// The node's figures now, from `/metrics`, `/status` and the data dir.
    async fn take(client: &reqwest::Client, api: &str, pid: u32, data: &Path, started: Instant) -> Sample {
        let m = metrics(client, api).await;
        let status = status(client, api).await;
        let store = |pointer: &str| status.pointer(pointer).and_then(|v| v.as_f64()).unwrap_or(0.0) / 1048576.0;
        let mib = |k: &str| m.get(k).copied().unwrap_or(0.0) / 1048576.0;
        Sample {
            minutes: started.elapsed().as_secs_f64() / 60.0,
            pages: m.get("weft_pages_fetched_total").copied().unwrap_or(0.0),
            queued: m.get("weft_frontier_queued").copied().unwrap_or(0.0),
            rss: rss_mib(pid),
            anon: mib("weft_memory_anonymous_bytes"),
            file: mib("weft_memory_file_backed_bytes"),
            vectors: mib("weft_memory_vectors_bytes"),
            browsers: mib("weft_memory_browsers_bytes"),
            storage: mib("weft_memory_storage_bytes"),
            other: mib("weft_memory_other_bytes"),
            heap_live: mib("weft_memory_heap_live_bytes"),
            frontier_store: store("/frontier_store_bytes"),
            doc_store: store("/index/store_memory_bytes"),
            frontier_mib: dir_size(&data.join("frontier")) as f64 / 1048576.0,
            data_mib: dir_size(data) as f64 / 1048576.0,
        }
    }

    fn print_header() {
        println!(
            "{:>7} {:>9} {:>10} {:>9} {:>6} {:>6} {:>8} {:>8} {:>9} {:>5} {:>6} {:>10} {:>9} {:>13} {:>10}",
            "minutes",
            "pages",
            "queued",
            "RSS MiB",
            "anon",
            "file",
            "vectors",
            "storage",
            "(frontier",
            "docs)",
            "other",
            "heap live",
            "browsers",
            "frontier MiB",
            "data MiB"
        );
    }

    fn print_row(&self) {
        let s = self;
        println!(
            "{:>7.1} {:>9.0} {:>10.0} {:>9.0} {:>6.0} {:>6.0} {:>8.0} {:>8.0} {:>9.0} {:>5.0} {:>6.0} {:>10.0} {:>9.0} {:>13.0} {:>10.0}",
            s.minutes,
            s.pages,
            s.queued,
            s.rss,
            s.anon,
            s.file,
            s.vectors,
            s.storage,
            s.frontier_store,
            s.doc_store,
            s.other,
            s.heap_live,
            s.browsers,
            s.frontier_mib,
            s.data_mib
        );
    }
}

/// RSS at the checkpoints, its growth after the warm-up (from single samples and from
/// medians), and the crawl's totals.
fn summarize(samples: &[Sample]) {
    // The checkpoints (37): RSS at 1, 10, 30 and 60 min, and the growth after the
    // first 10 minutes (warm-up) to the end.
    let at = |min: f64| samples.iter().min_by(|a, b| (a.minutes - min).abs().total_cmp(&(b.minutes - min).abs()));
    for min in [1.0, 10.0, 30.0, 60.0] {
        if let Some(s) = at(min).filter(|s| (s.minutes - min).abs() < 1.0) {
            println!(
                "at {:>4.1} min: RSS {:.0} MiB (anonymous {:.0}, mapped files {:.0}, vectors {:.0}), browsers {:.0} MiB, {:.0} pages",
                s.minutes, s.rss, s.anon, s.file, s.vectors, s.browsers, s.pages
            );
        }
    }
    if let (Some(warm), Some(last)) = (at(10.0).filter(|s| s.minutes >= 9.0), samples.last()) {
        let peak = samples.iter().filter(|s| s.minutes >= warm.minutes).map(|s| s.rss).fold(0.0, f64::max);
        println!(
            "growth after warm-up: {:.0} MiB at {:.1} min -> {:.0} MiB at {:.1} min ({:+.1}%), peak after warm-up {:.0} MiB",
            warm.rss,
            warm.minutes,
            last.rss,
            last.minutes,
            (last.rss / warm.rss - 1.0) * 100.0,
            peak
        );
    }
    // The same growth from medians: a node's memory saw-tooths by tens of MiB (memtables
    // written out, the vector delta sealed every few minutes), so one sample at each end
    // measures where in the saw-tooth it fell as much as the trend. The median of the samples
    // within MEDIAN_SPAN of minute 10 and of the end does not.
    if let (Some(warm), Some(last)) =
        (median_rss(&samples, 10.0), samples.last().and_then(|l| median_rss(&samples, l.minutes)))
    {
        let mid = median_rss(&samples, 30.0).unwrap_or(f64::NAN);
        println!(
            "by medians (samples within {MEDIAN_SPAN} min): {warm:.0} MiB at 10 min, {mid:.0} at 30, {last:.0} at the end ({:+.1}% after warm-up)",
            (last / warm - 1.0) * 100.0
        );
    }
    if let (Some(first), Some(mid), Some(last)) = (samples.first(), samples.get(samples.len() / 2), samples.last()) {
        println!(
            "after {:.0} min: {:.0} pages fetched ({:.1}/s), {:.0} URLs queued ({:.0} per page fetched); weft RSS {:.0} MiB at {:.0} queued (min {:.1}), {:.0} MiB at {:.0} queued (min {:.1}), {:.0} MiB at the end; frontier {:.0} MiB on disk, data dir {:.0} MiB (first sample: RSS {:.0} MiB)",
            last.minutes,
            last.pages,
            last.pages / (last.minutes * 60.0),
            last.queued,
            last.queued / last.pages.max(1.0),
            mid.rss,
            mid.queued,
            mid.minutes,
            last.rss,
            last.queued,
            last.minutes,
            last.rss,
            last.frontier_mib,
            last.data_mib,
            first.rss,
        );
    }
}
