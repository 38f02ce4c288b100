//! The simulations at scale, on virtual time and without sockets: the membership designs
//! (`scale`, `scale-plot`) and the data plane's connections (`data-plane`).

use std::path::PathBuf;
use weft_simnet::plot;
use weft_simnet::scale::data_plane::Design;

#[derive(clap::Args)]
pub(crate) struct ScaleArgs {
    /// Designs to run, each at every size: today, roster.
    #[arg(long, default_value = "today,roster")]
    pub(crate) design: String,
    /// The roster's anti-entropy round, in seconds.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) round_secs: f64,
    /// The roster design with every member's real roster and the real exchanges, not only
    /// the observers' (memory grows with the square of the members: up to ~1,000).
    #[arg(long)]
    pub(crate) real_everywhere: bool,
    /// The odds that a roster exchange is lost after its digest (the roster design).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) loss: f64,
    /// The roster design's views drawn at random (the roster alone), not among the grid's
    /// links as past 32 members.
    #[arg(long)]
    pub(crate) random_views: bool,
    /// Members online on average, one run each, e.g. 100,1000,3000.
    #[arg(long, default_value = "100,1000")]
    pub(crate) members: String,
    /// Simulated minutes per run.
    #[arg(long, default_value_t = 30.0)]
    pub(crate) minutes: f64,
    /// Members running the real membership table (they measure the rings).
    #[arg(long, default_value_t = 16)]
    pub(crate) observers: usize,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// No churn: every member arrives in the first minute and stays (to compare with a live
    /// run of the same size).
    #[arg(long)]
    pub(crate) stable: bool,
    /// Members gossip no routing summaries (as with `run --no-index`).
    #[arg(long)]
    pub(crate) no_summaries: bool,
    /// The heartbeat design's period and the periods a member may miss (its defaults were
    /// 5 s and 4).
    #[arg(long, default_value_t = 5.0)]
    pub(crate) heartbeat_secs: f64,
    #[arg(long, default_value_t = 4)]
    pub(crate) missed_heartbeats: u32,
    /// A share of the members cut off from the rest for a while: SHARE@FROM_MINUTE+MINUTES,
    /// e.g. 0.3@10+5.
    #[arg(long)]
    pub(crate) partition: Option<weft_simnet::scale::Partition>,
    /// A directory for `scale.json` and `scale.svg`.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub(crate) struct ScalePlotArgs {
    /// A `scale.json`; repeatable.
    #[arg(long, required = true)]
    pub(crate) from: Vec<PathBuf>,
    #[arg(long)]
    pub(crate) out: PathBuf,
}

#[derive(clap::Args)]
pub(crate) struct DataPlaneArgs {
    /// Members, one run each, e.g. 1000,3000,10000.
    #[arg(long, default_value = "1000,3000,10000")]
    pub(crate) members: String,
    /// Pages each member indexes per second, one run each.
    #[arg(long, default_value = "1,4")]
    pub(crate) pages_per_sec: String,
    /// How messages reach their member, one run each: direct (a small network's), direct:S[:L]
    /// (straight, over connections closed S seconds after their last use; with L, URLs sent
    /// to each owner in one batch every L seconds), gridD:M (at most
    /// D hops over a fixed overlay of D coordinates, ~M members a bucket), or hybridD:M:S
    /// (URLs and records over that grid, postings and copies straight over connections
    /// closed S seconds after their last use; with :nat-grid, over the grid when both ends
    /// are behind NAT; with :urls-only, records straight too, as a large network runs today),
    /// e.g. direct,grid4:1.5,hybrid4:1.5:2,hybrid5:1.5:0.5:nat-grid,hybrid5:1.5:0.5:urls-only.
    #[arg(long, default_value = "direct,grid3:2,grid4:2")]
    pub(crate) design: String,
    /// Cells postings are placed in (default: the shipped codebook's 256).
    #[arg(long)]
    pub(crate) cells: Option<usize>,
    /// Members each linked host's URLs go to: 1, its owner (today's); 2 for a frontier kept
    /// on a second member too.
    #[arg(long, default_value_t = 1)]
    pub(crate) url_holders: usize,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// A file for the figures as JSON.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
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

/// `scale`: each design at each size.
pub(crate) fn scale(args: ScaleArgs) -> Result<(), String> {
    let protocol = Protocol {
        design: args.design,
        stable: args.stable,
        summaries: !args.no_summaries,
        heartbeat_secs: args.heartbeat_secs,
        missed_heartbeats: args.missed_heartbeats,
        partition: args.partition,
        round_secs: args.round_secs,
        real_everywhere: args.real_everywhere,
        loss: args.loss,
        random_views: args.random_views,
    };
    run_scale(&args.members, args.minutes, args.observers, args.seed, protocol, args.out)
}

fn run_scale(
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

pub(crate) fn scale_plot(from: &[PathBuf], out: &std::path::Path) -> Result<(), String> {
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

/// `data-plane`: each design at each size and rate.
pub(crate) fn data_plane(args: DataPlaneArgs) -> Result<(), String> {
    use weft_simnet::scale::data_plane::{self, Traffic};
    let DataPlaneArgs { members, pages_per_sec, design, cells, url_holders, seed, out } = args;
    if !(1..=3).contains(&url_holders) {
        return Err(format!("--url-holders {url_holders}: 1, 2 or 3"));
    }
    let sizes: Vec<usize> = list(&members, "--members")?;
    let rates: Vec<f64> = list(&pages_per_sec, "--pages-per-sec")?;
    let designs: Vec<Design> = design.split(',').map(|d| parse_design(d.trim())).collect::<Result<_, _>>()?;
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

/// One `--design` of `data-plane`: direct, direct:S[:L], gridD:M or hybridD:M:S[:nat-grid][:urls-only].
fn parse_design(d: &str) -> Result<Design, String> {
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
}

/// A comma-separated list of `what`.
fn list<T: std::str::FromStr>(text: &str, what: &str) -> Result<Vec<T>, String>
where
    T::Err: std::fmt::Display,
{
    text.split(',').map(|m| m.trim().parse::<T>().map_err(|e| format!("{what} {m:?}: {e}"))).collect()
}
