//! The crawling commands: real `weft` nodes on the synthetic web — a run under churn, a sweep
//! of random schedules, the demo — and the generated web served alone.

use crate::Common;
use std::path::PathBuf;
use std::time::Duration;
use weft_simnet::docs::{self, WebSpec};
use weft_simnet::runner::{self, RunReport, RunSpec};
use weft_simnet::{churn, demo, generated_site, plot, sweep, topic_site, WebServer};

#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    #[arg(long, default_value_t = 3)]
    pub(crate) hosts: usize,
    #[arg(long, default_value_t = 40)]
    pub(crate) pages: usize,
    /// Also serve the topic web (thirty pages on distinct subjects) as `topics.test`.
    #[arg(long)]
    pub(crate) topics: bool,
}

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    #[arg(long, default_value_t = 5)]
    pub(crate) nodes: usize,
    #[arg(long, default_value_t = 20)]
    pub(crate) hosts: usize,
    #[arg(long, default_value_t = 500)]
    pub(crate) pages: usize,
    /// News sites (layouts for the teacher) and articles on each.
    #[arg(long, default_value_t = 4)]
    pub(crate) news_sites: usize,
    #[arg(long, default_value_t = 30)]
    pub(crate) news_articles: usize,
    /// Longest run, e.g. 300s or 5m.
    #[arg(long, default_value = "300s")]
    pub(crate) duration: String,
    /// Timed from the crawl's start (the seeds node's), e.g.
    /// kill:3@60s,restart:3@90s,join:2@120s,leave:1@150s
    #[arg(long, default_value = "")]
    pub(crate) churn: String,
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// Run without the index (crawl and network only; no model needed).
    #[arg(long)]
    pub(crate) no_index: bool,
    /// Stop as soon as every churn event happened and every reachable page was fetched.
    #[arg(long)]
    pub(crate) until_covered: bool,
    /// After the crawl, ask the network this many questions (page titles) and judge the
    /// answers against an exact index over every node's chunks (recall@10).
    #[arg(long, default_value_t = 0)]
    pub(crate) queries: usize,
    /// Milliseconds between questions.
    #[arg(long, default_value_t = 100)]
    pub(crate) query_interval_ms: u64,
    /// Churn while the questions are asked, timed from the first question, e.g.
    /// kill:2@5s,restart:2@20s.
    #[arg(long, default_value = "")]
    pub(crate) search_churn: String,
    /// Peers every question goes to (default: the nodes' budget, max(4, 20% of N) ≤ 8).
    #[arg(long)]
    pub(crate) fanout: Option<usize>,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(clap::Args)]
pub(crate) struct SweepArgs {
    /// Seeds to run, e.g. `1-30` or `7`.
    #[arg(long, default_value = "1-5")]
    pub(crate) seeds: String,
    #[arg(long, default_value_t = 5)]
    pub(crate) nodes: usize,
    #[arg(long, default_value_t = 10)]
    pub(crate) hosts: usize,
    #[arg(long, default_value_t = 150)]
    pub(crate) pages: usize,
    /// News sites (layouts for the teacher) and articles on each.
    #[arg(long, default_value_t = 2)]
    pub(crate) news_sites: usize,
    #[arg(long, default_value_t = 12)]
    pub(crate) news_articles: usize,
    /// The schedules' events start this far into the crawl ...
    #[arg(long, default_value = "10s")]
    pub(crate) from: String,
    /// ... and by this far (a restart or leave may follow its kill up to 90 s later).
    #[arg(long, default_value = "60s")]
    pub(crate) span: String,
    /// Longest run per seed.
    #[arg(long, default_value = "400s")]
    pub(crate) duration: String,
    /// Every seed's result as JSON.
    #[arg(long)]
    pub(crate) report: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(clap::Args)]
pub(crate) struct DemoArgs {
    /// Seconds of crawling at most (it stops earlier when everything is fetched).
    #[arg(long, default_value_t = 90)]
    pub(crate) seconds: u64,
    /// Seconds the nodes stay up after the questions, to open the dashboard and the search
    /// page in a browser.
    #[arg(long, default_value_t = 0)]
    pub(crate) linger: u64,
    #[command(flatten)]
    pub(crate) common: Common,
}

/// `run`: the nodes under the churn asked for, a report, a summary.
pub(crate) async fn run(args: RunArgs) -> Result<(), String> {
    let RunArgs {
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
    } = args;
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

/// `sweep`: one run per seed under its random schedule, each judged by the invariant.
pub(crate) async fn sweep(args: SweepArgs) -> Result<(), String> {
    let SweepArgs { seeds, nodes, hosts, pages, news_sites, news_articles, from, span, duration, report, common } =
        args;
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

/// `demo`: three nodes, a minute of crawling, then searches.
pub(crate) async fn demo(args: DemoArgs) -> Result<(), String> {
    let DemoArgs { seconds, linger, common } = args;
    // Four news sites of twelve articles: enough for the teacher to learn each design within
    // the minute.
    let web = WebSpec { hosts: 12, pages: 180, seed: common.seed, news_articles: 12, ..WebSpec::default() };
    let (spec, _tmp) = spec(&common, 3, web, Duration::from_secs(seconds), Vec::new(), true, true)?;
    demo::run(&spec, Duration::from_secs(linger)).await.map_err(|e| e.to_string())?;
    keep_note(&common, &spec);
    Ok(())
}

/// `serve`: the generated sites on loopback until interrupted.
pub(crate) async fn serve(args: ServeArgs) -> Result<(), String> {
    let ServeArgs { hosts, pages, topics } = args;
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
