//! `weft-simnet`: the synthetic web and the network simulator.
//!
//! - `serve`: the small generated web on loopback, for manual crawls;
//! - `run`: many real `weft` nodes crawling the PostgreSQL-manual web under churn, judged from
//!   the server's log, with a JSON report and an SVG chart;
//! - `demo`: three nodes, a minute of crawling with a progress bar, then searches (what
//!   `weft demo` and the README's main command run).

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;
use weft_simnet::docs::{self, WebSpec};
use weft_simnet::runner::{self, RunReport, RunSpec};
use weft_simnet::{churn, demo, generated_site, plot, sweep, topic_site, WebServer};

#[derive(Parser)]
#[command(name = "weft-simnet", about = "Weft's synthetic web and network simulator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Common {
    /// The weft binary; default: `weft` beside this program.
    #[arg(long)]
    weft: Option<PathBuf>,
    /// Where node data dirs, configs and logs go; default: a fresh temporary directory
    /// (removed afterwards unless --keep).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Keep the work dir (node logs, data) after the run.
    #[arg(long)]
    keep: bool,
    /// The documentation HTML the web is built from (env WEFT_SIMNET_DOCS).
    #[arg(long)]
    docs: Option<PathBuf>,
    /// The directory scripts/setup.sh filled with the model files.
    #[arg(long, default_value = "models")]
    models: PathBuf,
    /// The web's seed: which pages are served and how they link.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Each node's politeness delay between requests to one host.
    #[arg(long, default_value_t = 250)]
    delay_ms: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Serve generated sites `site0.test` … (and, with --topics, `topics.test`) on 127.0.0.1
    /// (virtual hosts by Host header) until interrupted. Prints `<host> <seed URL>` per host.
    Serve {
        #[arg(long, default_value_t = 3)]
        hosts: usize,
        #[arg(long, default_value_t = 40)]
        pages: usize,
        /// Also serve the topic web (thirty pages on distinct subjects) as `topics.test`.
        #[arg(long)]
        topics: bool,
    },
    /// Run N weft nodes against the synthetic web with churn, and report.
    Run {
        #[arg(long, default_value_t = 5)]
        nodes: usize,
        #[arg(long, default_value_t = 20)]
        hosts: usize,
        #[arg(long, default_value_t = 500)]
        pages: usize,
        /// News sites (layouts for the teacher) and articles on each.
        #[arg(long, default_value_t = 4)]
        news_sites: usize,
        #[arg(long, default_value_t = 30)]
        news_articles: usize,
        /// Longest run, e.g. 300s or 5m.
        #[arg(long, default_value = "300s")]
        duration: String,
        /// Timed from the crawl's start (the seeds node's), e.g.
        /// kill:3@60s,restart:3@90s,join:2@120s,leave:1@150s
        #[arg(long, default_value = "")]
        churn: String,
        #[arg(long)]
        report: Option<PathBuf>,
        #[arg(long)]
        plot: Option<PathBuf>,
        /// Run without the index (crawl and network only; no model needed).
        #[arg(long)]
        no_index: bool,
        /// Stop as soon as every churn event happened and every reachable page was fetched.
        #[arg(long)]
        until_covered: bool,
        /// After the crawl, ask the network this many questions (page titles) and judge the
        /// answers against an exact index over every node's chunks (recall@10).
        #[arg(long, default_value_t = 0)]
        queries: usize,
        /// Milliseconds between questions.
        #[arg(long, default_value_t = 100)]
        query_interval_ms: u64,
        /// Churn while the questions are asked, timed from the first question, e.g.
        /// kill:2@5s,restart:2@20s.
        #[arg(long, default_value = "")]
        search_churn: String,
        /// Peers every question goes to (default: the nodes' budget, max(4, 20% of N) ≤ 8).
        #[arg(long)]
        fanout: Option<usize>,
        #[command(flatten)]
        common: Common,
    },
    /// Churn as a property: one run per seed, each under a random schedule drawn from the
    /// seed (kills with their restarts, leaves, joins, and always a node killed, restarted and
    /// then leaving), each judged by the invariant: every reachable page fetched, no
    /// politeness violation, no repeat a kill does not explain. Prints the seeds that fail
    /// and how to replay them; exits 1 if any did.
    Sweep {
        /// Seeds to run, e.g. `1-30` or `7`.
        #[arg(long, default_value = "1-5")]
        seeds: String,
        #[arg(long, default_value_t = 5)]
        nodes: usize,
        #[arg(long, default_value_t = 10)]
        hosts: usize,
        #[arg(long, default_value_t = 150)]
        pages: usize,
        /// News sites (layouts for the teacher) and articles on each.
        #[arg(long, default_value_t = 2)]
        news_sites: usize,
        #[arg(long, default_value_t = 12)]
        news_articles: usize,
        /// The schedules' events start this far into the crawl ...
        #[arg(long, default_value = "10s")]
        from: String,
        /// ... and by this far (a restart or leave may follow its kill up to 90 s later).
        #[arg(long, default_value = "60s")]
        span: String,
        /// Longest run per seed.
        #[arg(long, default_value = "400s")]
        duration: String,
        /// Every seed's result as JSON.
        #[arg(long)]
        report: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Three nodes on loopback crawl the synthetic web for about a minute, then answer searches.
    Demo {
        /// Seconds of crawling at most (it stops earlier when everything is fetched).
        #[arg(long, default_value_t = 90)]
        seconds: u64,
        /// Seconds the nodes stay up after the questions, to open the dashboard and the search
        /// page in a browser.
        #[arg(long, default_value_t = 0)]
        linger: u64,
        #[command(flatten)]
        common: Common,
    },
    /// The data plane at scale: the peers each member is connected to for URLs, postings,
    /// records and copies, from one window of every member's traffic on the real ring and the
    /// real placement (no sockets). Prints a Markdown table; writes the figures as JSON with --out.
    DataPlane {
        /// Members, one run each, e.g. 1000,3000,10000.
        #[arg(long, default_value = "1000,3000,10000")]
        members: String,
        /// Pages each member indexes per second, one run each.
        #[arg(long, default_value = "1,4")]
        pages_per_sec: String,
        /// How messages reach their member, one run each: direct (a small network's), direct:S[:L]
        /// (straight, over connections closed S seconds after their last use; with L, URLs sent
        /// to each owner in one batch every L seconds), gridD:M (at most
        /// D hops over a fixed overlay of D coordinates, ~M members a bucket), or hybridD:M:S
        /// (URLs and records over that grid, postings and copies straight over connections
        /// closed S seconds after their last use; with :nat-grid, over the grid when both ends
        /// are behind NAT; with :urls-only, records straight too, as a large network runs today),
        /// e.g. direct,grid4:1.5,hybrid4:1.5:2,hybrid5:1.5:0.5:nat-grid,hybrid5:1.5:0.5:urls-only.
        #[arg(long, default_value = "direct,grid3:2,grid4:2")]
        design: String,
        /// Cells postings are placed in (default: the shipped codebook's 256).
        #[arg(long)]
        cells: Option<usize>,
        /// Members each linked host's URLs go to: 1, its owner (today's); 2 for a frontier kept
        /// on a second member too.
        #[arg(long, default_value_t = 1)]
        url_holders: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// A file for the figures as JSON.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Draws `scale.svg` and prints the tables from the JSON of earlier `scale` runs.
    ScalePlot {
        /// A `scale.json`; repeatable.
        #[arg(long, required = true)]
        from: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
    },
    /// The network at scale, simulated on virtual time (no sockets): today's membership design
    /// and the roster's at each size, measured per member. Prints a Markdown table; writes every
    /// run's figures as JSON and a plot with --out.
    Scale {
        /// Designs to run, each at every size: today, roster.
        #[arg(long, default_value = "today,roster")]
        design: String,
        /// The roster's anti-entropy round, in seconds.
        #[arg(long, default_value_t = 2.0)]
        round_secs: f64,
        /// The roster design with every member's real roster and the real exchanges, not only
        /// the observers' (memory grows with the square of the members: up to ~1,000).
        #[arg(long)]
        real_everywhere: bool,
        /// The odds that a roster exchange is lost after its digest (the roster design).
        #[arg(long, default_value_t = 0.0)]
        loss: f64,
        /// The roster design's views drawn at random (the roster alone), not among the grid's
        /// links as past 32 members.
        #[arg(long)]
        random_views: bool,
        /// Members online on average, one run each, e.g. 100,1000,3000.
        #[arg(long, default_value = "100,1000")]
        members: String,
        /// Simulated minutes per run.
        #[arg(long, default_value_t = 30.0)]
        minutes: f64,
        /// Members running the real membership table (they measure the rings).
        #[arg(long, default_value_t = 16)]
        observers: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// No churn: every member arrives in the first minute and stays (to compare with a live
        /// run of the same size).
        #[arg(long)]
        stable: bool,
        /// Members gossip no routing summaries (as with `run --no-index`).
        #[arg(long)]
        no_summaries: bool,
        /// The heartbeat design's period and the periods a member may miss (its defaults were
        /// 5 s and 4).
        #[arg(long, default_value_t = 5.0)]
        heartbeat_secs: f64,
        #[arg(long, default_value_t = 4)]
        missed_heartbeats: u32,
        /// A share of the members cut off from the rest for a while: SHARE@FROM_MINUTE+MINUTES,
        /// e.g. 0.3@10+5.
        #[arg(long)]
        partition: Option<weft_simnet::scale::Partition>,
        /// A directory for `scale.json` and `scale.svg`.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn main() {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let result = rt.block_on(async {
        match cli.command {
            Command::Serve { hosts, pages, topics } => serve(hosts, pages, topics).await,
            Command::Run {
                nodes,
                hosts,
                pages,
                news_sites,
                news_articles,
                duration,
                churn,
                report,
                plot,
                no_index,
                until_covered,
                queries,
                query_interval_ms,
                search_churn,
                fanout,
                common,
            } => {
                let duration = churn::parse_time(&duration).map_err(|e| e.to_string())?;
                let events = churn::parse(&churn, nodes).map_err(|e| e.to_string())?;
                let web = WebSpec { hosts, pages, seed: common.seed, news_sites, news_articles, ..WebSpec::default() };
                let (mut spec, _tmp) = spec(&common, nodes, web, duration, events, !no_index, until_covered)?;
                if queries > 0 {
                    if no_index {
                        return Err("--queries needs the index (drop --no-index)".to_string());
                    }
                    let churn = churn::parse(&search_churn, nodes).map_err(|e| e.to_string())?;
                    let interval = Duration::from_millis(query_interval_ms);
                    spec.search = Some(weft_simnet::search_eval::SearchSpec { queries, interval, churn, fanout });
                }
                let result = runner::run(&spec, |p| {
                    for e in &p.events {
                        eprintln!("[{:>4}s] {e}", p.elapsed.as_secs());
                    }
                    if p.elapsed.as_secs() % 10 == 0 {
                        eprintln!(
                            "[{:>4}s] {}/{} pages fetched, {} nodes up",
                            p.elapsed.as_secs(),
                            p.covered,
                            p.reachable,
                            p.alive
                        );
                    }
                })
                .await
                .map_err(|e| e.to_string())?;
                write_outputs(&result, report, plot)?;
                print_summary(&result);
                keep_note(&common, &spec);
                Ok(())
            }
            Command::Sweep {
                seeds,
                nodes,
                hosts,
                pages,
                news_sites,
                news_articles,
                from,
                span,
                duration,
                report,
                common,
            } => {
                let seeds = parse_seeds(&seeds)?;
                let window = sweep::Window {
                    from: churn::parse_time(&from).map_err(|e| e.to_string())?,
                    span: churn::parse_time(&span).map_err(|e| e.to_string())?,
                };
                let duration = churn::parse_time(&duration).map_err(|e| e.to_string())?;
                let web = WebSpec { hosts, pages, seed: common.seed, news_sites, news_articles, ..WebSpec::default() };
                let (base, _tmp) = spec(&common, nodes, web, duration, Vec::new(), true, true)?;
                let runs = sweep::sweep(&base, seeds, window, |r| println!("{}", sweep::line(r)))
                    .await
                    .map_err(|(seed, e)| format!("seed {seed}: {e}"))?;
                if let Some(path) = report {
                    let json = serde_json::to_string_pretty(&runs).map_err(|e| e.to_string())?;
                    std::fs::write(&path, json).map_err(|e| format!("writing {}: {e}", path.display()))?;
                }
                keep_note(&common, &base);
                let failed: Vec<&sweep::SeedRun> = runs.iter().filter(|r| !r.broken.is_empty()).collect();
                println!("{} seeds, {} held the invariant", runs.len(), runs.len() - failed.len());
                for r in &failed {
                    println!("seed {} broke it: {}", r.seed, r.broken.join("; "));
                    println!(
                        "  replay: weft-simnet run --nodes {nodes} --hosts {hosts} --pages {pages} --news-sites {news_sites} --news-articles {news_articles} --seed {} --duration {} --until-covered --keep --churn '{}'",
                        common.seed, duration.as_secs(), r.churn
                    );
                }
                if failed.is_empty() {
                    Ok(())
                } else {
                    Err(format!("{} of {} seeds broke the invariant", failed.len(), runs.len()))
                }
            }
            Command::Scale {
                design,
                round_secs,
                real_everywhere,
                loss,
                random_views,
                members,
                minutes,
                observers,
                seed,
                stable,
                no_summaries,
                heartbeat_secs,
                missed_heartbeats,
                partition,
                out,
            } => {
                let protocol =
                    Protocol {
                    design,
                    stable,
                    summaries: !no_summaries,
                    heartbeat_secs,
                    missed_heartbeats,
                    partition,
                    round_secs,
                    real_everywhere,
                    loss,
                    random_views,
                };
                scale(&members, minutes, observers, seed, protocol, out)
            }
            Command::ScalePlot { from, out } => scale_plot(&from, &out),
            Command::DataPlane { members, pages_per_sec, design, cells, url_holders, seed, out } => {
                data_plane(&members, &pages_per_sec, &design, cells, url_holders, seed, out)
            }
            Command::Demo { seconds, linger, common } => {
                // Four news sites of twelve articles: enough for the teacher to learn each design
                // within the minute.
                let web = WebSpec { hosts: 12, pages: 180, seed: common.seed, news_articles: 12, ..WebSpec::default() };
                let (spec, _tmp) = spec(&common, 3, web, Duration::from_secs(seconds), Vec::new(), true, true)?;
                demo::run(&spec, Duration::from_secs(linger)).await.map_err(|e| e.to_string())?;
                keep_note(&common, &spec);
                Ok(())
            }
        }
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn scale_plot(from: &[PathBuf], out: &std::path::Path) -> Result<(), String> {
    use weft_simnet::scale::Summary;
    #[derive(serde::Deserialize)]
    struct Run {
        summary: Summary,
    }
    let mut rows = Vec::new();
    for path in from {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let runs: Vec<Run> = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        rows.extend(runs.into_iter().map(|r| r.summary));
    }
    rows.sort_by(|a, b| (&a.design, a.members).cmp(&(&b.design, b.members)));
    println!("{}", Summary::table(&rows));
    println!("{}", Summary::received_table(&rows));
    println!("{}", Summary::backlog_table(&rows));
    std::fs::write(out, plot::scale_svg(&rows)?).map_err(|e| format!("{}: {e}", out.display()))
}

fn data_plane(
    members: &str,
    pages_per_sec: &str,
    design: &str,
    cells: Option<usize>,
    url_holders: usize,
    seed: u64,
    out: Option<PathBuf>,
) -> Result<(), String> {
    use weft_simnet::scale::data_plane::{self, Design, Traffic};
    if !(1..=3).contains(&url_holders) {
        return Err(format!("--url-holders {url_holders}: 1, 2 or 3"));
    }
    let sizes: Vec<usize> = list(members, "--members")?;
    let rates: Vec<f64> = list(pages_per_sec, "--pages-per-sec")?;
    let designs: Vec<Design> = design
        .split(',')
        .map(|d| {
            let d = d.trim();
            let dims = |d: &str| d.parse().ok().filter(|d| (1..=6).contains(d));
            let positive = |p: &str| p.parse().ok().filter(|p: &f64| *p > 0.0);
            let parts: Vec<&str> = d.split(':').collect();
            let overlay = match &parts[..] {
                [first, per] => first
                    .strip_prefix("grid")
                    .and_then(dims)
                    .zip(positive(per))
                    .map(|(dims, per_bucket)| Design::Grid { dims, per_bucket }),
                [first, per, bulk, rest @ ..] if rest.iter().all(|r| ["nat-grid", "urls-only"].contains(r)) => {
                    match (first.strip_prefix("hybrid").and_then(dims), positive(per), positive(bulk)) {
                        (Some(dims), Some(per_bucket), Some(bulk_secs)) => Some(Design::Hybrid {
                            dims,
                            per_bucket,
                            bulk_secs,
                            nat_over_grid: rest.contains(&"nat-grid"),
                            records_over_grid: !rest.contains(&"urls-only"),
                        }),
                        _ => None,
                    }
                }
                _ => None,
            };
            let brief = match &parts[..] {
                ["direct", secs] => positive(secs).map(|secs| Design::Brief { secs, url_linger: None }),
                ["direct", secs, linger] => {
                    positive(secs).zip(positive(linger)).map(|(secs, l)| Design::Brief { secs, url_linger: Some(l) })
                }
                _ => None,
            };
            match (d, overlay.or(brief)) {
                ("direct", _) => Ok(Design::Direct),
                (_, Some(o)) => Ok(o),
                _ => Err(format!(
                    "--design {d:?}: direct, direct:S[:L] (connections closed S s after their last use; URLs \
                     sent to each owner once every L s), gridD:M \
                     (D of 1–6 coordinates, M members a bucket) or hybridD:M:S \
                     (postings and copies straight, their connections closed after S s; :nat-grid \
                     sends them over the grid between two members behind NAT, :urls-only sends records \
                     straight too)"
                )),
            }
        })
        .collect::<Result<_, _>>()?;
    let mut runs = Vec::new();
    for design in designs {
        for n in &sizes {
            for rate in &rates {
                let traffic = Traffic { pages_per_sec: *rate, cells, url_holders, ..Traffic::default() };
                let started = std::time::Instant::now();
                runs.push(data_plane::run(*n, &traffic, design, seed));
                eprintln!("{design}, {n} members, {rate} pages/s: {:.0} s", started.elapsed().as_secs_f64());
            }
        }
    }
    println!("{}", data_plane::table(&runs));
    if let Some(path) = out {
        let json = serde_json::to_string_pretty(&runs).map_err(|e| e.to_string())?;
        std::fs::write(&path, json).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// A comma-separated list of `what`.
fn list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    text.split(',').map(|m| m.trim().parse::<T>().map_err(|e| format!("{what} {m:?}: {e}"))).collect()
}

/// `scale`'s settings of the network it simulates.
struct Protocol {
    design: String,
    round_secs: f64,
    real_everywhere: bool,
    loss: f64,
    random_views: bool,
    stable: bool,
    summaries: bool,
    heartbeat_secs: f64,
    missed_heartbeats: u32,
    partition: Option<weft_simnet::scale::Partition>,
}

fn scale(
    members: &str,
    minutes: f64,
    observers: usize,
    seed: u64,
    protocol: Protocol,
    out: Option<PathBuf>,
) -> Result<(), String> {
    use weft_simnet::scale::{self, Scenario, Summary};
    let sizes: Vec<usize> = members
        .split(',')
        .map(|m| m.trim().parse::<usize>().map_err(|e| format!("--members {m:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let designs: Vec<&str> = protocol.design.split(',').map(str::trim).collect();
    if let Some(d) = designs.iter().find(|d| !matches!(**d, "today" | "roster")) {
        return Err(format!("--design {d:?}: the designs are today and roster"));
    }
    let mut rows = Vec::new();
    let mut runs = Vec::new();
    for (n, design) in sizes.iter().flat_map(|n| designs.iter().map(move |d| (*n, *d))) {
        let mut scenario = Scenario::new(n, minutes, seed);
        scenario.round_secs = protocol.round_secs;
        scenario.real_everywhere = protocol.real_everywhere;
        scenario.loss = protocol.loss;
        scenario.random_views = protocol.random_views;
        scenario.observers = observers;
        scenario.stable = protocol.stable;
        scenario.summaries = protocol.summaries;
        scenario.heartbeat_secs = protocol.heartbeat_secs;
        scenario.missed_heartbeats = protocol.missed_heartbeats;
        scenario.partition = protocol.partition;
        eprintln!("{design}, {n} members, {minutes} simulated minutes ...");
        let (summary, figures) =
            if design == "today" { scale::run_today(&scenario) } else { scale::run_roster(&scenario) };
        eprintln!("  done in {:.0} s", summary.wall_secs);
        rows.push(summary.clone());
        runs.push(serde_json::json!({ "summary": summary, "figures": figures }));
    }
    println!("{}", Summary::table(&rows));
    println!("{}", Summary::received_table(&rows));
    println!("{}", Summary::backlog_table(&rows));
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let json = serde_json::to_string_pretty(&runs).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("scale.json"), json).map_err(|e| e.to_string())?;
        let svg = plot::scale_svg(&rows)?;
        std::fs::write(dir.join("scale.svg"), svg).map_err(|e| e.to_string())?;
        eprintln!("wrote {}/scale.json and scale.svg", dir.display());
    }
    Ok(())
}

fn spec(
    common: &Common,
    nodes: usize,
    web: WebSpec,
    duration: Duration,
    churn: Vec<churn::Event>,
    index: bool,
    until_covered: bool,
) -> Result<(RunSpec, Option<tempfile::TempDir>), String> {
    let weft = match &common.weft {
        Some(w) => w.clone(),
        None => std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("weft"),
    };
    let (work_dir, tmp) = match &common.work_dir {
        Some(d) => (d.clone(), None),
        None => {
            let t = tempfile::Builder::new().prefix("weft-simnet-").tempdir().map_err(|e| e.to_string())?;
            if common.keep {
                (t.keep(), None)
            } else {
                (t.path().to_path_buf(), Some(t))
            }
        }
    };
    let models = std::path::absolute(&common.models).map_err(|e| e.to_string())?;
    let docs = common.docs.clone().unwrap_or_else(docs::docs_dir);
    let spec = RunSpec {
        weft,
        work_dir,
        nodes,
        web,
        docs,
        duration,
        churn,
        delay_ms: common.delay_ms,
        index,
        models,
        until_covered,
        search: None,
    };
    Ok((spec, tmp))
}

/// `1-30` or `7`.
fn parse_seeds(s: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let bad = || format!("--seeds {s:?}: expected N or FROM-TO");
    let (a, b) = s.split_once('-').unwrap_or((s, s));
    let (a, b): (u64, u64) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
    if a > b {
        return Err(bad());
    }
    Ok(a..=b)
}

fn keep_note(common: &Common, spec: &RunSpec) {
    if common.keep || common.work_dir.is_some() {
        eprintln!("node logs and data: {}", spec.work_dir.display());
    }
}

fn write_outputs(r: &RunReport, report: Option<PathBuf>, plot: Option<PathBuf>) -> Result<(), String> {
    if let Some(path) = report {
        let json = serde_json::to_string_pretty(r).map_err(|e| e.to_string())?;
        std::fs::write(&path, json).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    if let Some(path) = plot {
        std::fs::write(&path, plot::svg(r)?).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}

fn print_summary(r: &RunReport) {
    let w = &r.web;
    println!(
        "{} nodes ({} at the end), {} hosts, {:.0} s",
        r.nodes.len(),
        r.nodes.iter().filter(|n| n.state == "up").count(),
        r.spec.hosts,
        r.elapsed_secs
    );
    println!("coverage          {}/{} reachable pages ({:.2}%)", w.covered, w.reachable, w.coverage * 100.0);
    println!("duplicate fetches {} ({:.2}%)", w.duplicate_fetches, w.duplicate_rate * 100.0);
    println!(
        "after a SIGKILL   {} pages fetched again (the killed node had not acknowledged them), {} of them although a node up held a copy{}",
        w.duplicates_after_kill,
        w.repeats_with_a_copy.len(),
        if w.repeats_with_a_copy.is_empty() { String::new() } else { format!(": {}", w.repeats_with_a_copy.join(", ")) }
    );
    println!(
        "other requests    {} robots.txt, {} sitemaps, {} subresources of rendered pages ({} repeated by one node, at most {} for one URL)",
        w.robots_requests, w.sitemap_requests, w.subresource_requests, w.subresource_repeats_by_a_node, w.subresource_max_requests
    );
    println!("layouts           {}", runner::layouts_line(r));
    println!("placement         {}", runner::placement_line(r));
    println!("roster            {}", runner::roster_line(&r.roster));
    println!("copies            {}", runner::copies_line(r));
    if let Some(d) = &r.documents {
        println!("read back         {}", runner::documents::summary(d));
        if !d.lost.is_empty() {
            println!("                  no node could read: {}", d.lost.join(", "));
        }
        if !d.partial.is_empty() {
            println!("                  read by some nodes only (how many): {}", d.partial.join(", "));
        }
    }
    if let Some(f) = &r.freshness {
        println!("found after       {}", f.summary());
    }
    println!("lost URLs         {}", w.lost.len());
    println!("politeness        {} violations", w.politeness_violations.len());
    for v in w.politeness_violations.iter().take(10) {
        println!("                  {v}");
    }
    println!("dedup hits        {}", r.dedup_hits);
    let grid: Vec<u64> = r.nodes.iter().filter(|n| n.state == "up").map(|n| n.grid_links).collect();
    let links = grid.iter().sum::<u64>() as f64 / grid.len().max(1) as f64;
    println!(
        "URLs exchanged    {} ({} passed on; grid links {links:.1} a node)   DHT messages {} ({} passed on)",
        r.urls_exchanged, r.urls_passed_on, r.dht_messages, r.dht_passed_on
    );
    println!("connections       {:.1} per node on average, {} at most", r.connections_mean, r.connections_max);
    println!(
        "memory per node   {:.0} MiB mean RSS at the end, {:.0} MiB highest peak; {}",
        r.mean_rss_mib,
        r.max_peak_rss_mib,
        runner::memory_parts_line(r)
    );
    if let Some(s) = &r.search {
        println!(
            "search            {} questions: recall@10 {:.3} ({:.0}% of questions ≥ 0.9), {:.1} peers contacted on average (at most {}, budget {}: {:.0}% within), p50 {:.0} ms, p95 {:.0} ms, {} partial, {} failed, {} that did not wait for a superseded peer",
            s.queries,
            s.recall_at_10,
            s.queries_recall_over_0_9 * 100.0,
            s.peers_contacted_mean,
            s.peers_contacted_max,
            s.peer_budget,
            s.within_budget * 100.0,
            s.ms_p50,
            s.ms_p95,
            s.partial,
            s.failed,
            s.superseded
        );
        println!(
            "                  p95 of each part: embedding the question {:.0} ms, the asked node's own search {:.0} ms, the network's {:.0} ms",
            s.embed_ms_p95, s.local_ms_p95, s.network_ms_p95
        );
        if let Some(l) = &s.load {
            let threads: Vec<String> = l.threads.iter().take(5).map(|(t, secs)| format!("{t} {secs:.0} s")).collect();
            println!(
                "                  the box while asking: CPUs busy p50 {:.0}%, max {:.0}% ({} of {} s at ≥ 90%), disk wait max {:.0}%; the nodes took {:.0} of {:.0} busy CPU s, most in {}",
                l.busy_p50 * 100.0,
                l.busy_max * 100.0,
                l.saturated_seconds,
                l.seconds,
                l.iowait_max * 100.0,
                l.nodes_cpu_secs,
                l.box_cpu_secs,
                threads.join(", ")
            );
        }
        println!(
            "                  ceiling: {:.3} had the best {} peers been asked (a question's top 10 lies on {:.1} nodes on average)",
            s.oracle_recall_at_budget, s.peer_budget, s.nodes_holding_top_10
        );
        println!(
            "                  as users ask (meaning and words fused): {} questions, {} failed, p50 {:.0} ms; they keep {:.3} of the exact top 10 by meaning",
            s.hybrid_queries, s.hybrid_failed, s.hybrid_ms_p50, s.hybrid_overlap_at_10
        );
        if let Some(down) = s.recall_at_10_while_down {
            println!(
                "                  recall@10 {down:.3} over the {} questions asked while a node was down",
                s.queries_while_down
            );
        }
    }
    println!("node  state   fetches  ring share  dedup  URLs sent  RSS MiB");
    for n in &r.nodes {
        println!(
            "{:>4}  {:<6} {:>8}  {:>9.1}%  {:>5}  {:>9}  {:>7.0}",
            n.node,
            n.state,
            n.fetches,
            n.ring_share * 100.0,
            n.dedup_hits,
            n.urls_sent,
            n.rss_mib
        );
    }
}

async fn serve(hosts: usize, pages: usize, topics: bool) -> Result<(), String> {
    let mut sites: Vec<_> = (0..hosts).map(|h| generated_site(&format!("site{h}.test"), pages, 3)).collect();
    if topics {
        sites.push(topic_site("topics.test"));
    }
    let server = WebServer::start(sites).await.map_err(|e| e.to_string())?;
    for host in (0..hosts).map(|h| format!("site{h}.test")).chain(topics.then(|| "topics.test".to_string())) {
        println!("{host} {}", server.url(&host, "/"));
    }
    tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
    eprintln!("served {} requests", server.requests().len());
    Ok(())
}
