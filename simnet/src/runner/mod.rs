//! The simulator proper: real `weft` processes on loopback crawling the synthetic web while
//! nodes crash, come back, join and leave; judged from the web server's log.
//!
//! Each node is one `weft start` process with its own data dir, API port and p2p port (kept
//! across restarts, so node 0's bootstrap address stays valid), fetching with the User-Agent
//! `WeftSim<n>/1.0` so the server's log tells the nodes apart. Node 0 starts first; every
//! other node bootstraps from it. The last initial node is given every host's root as a seed,
//! once the others formed a network: seeds of hosts it does not own travel to their owner like
//! any discovered URL. The crawl, and the churn schedule's clock, start with it.
//!
//! Churn (see [`crate::churn`]): `kill` is SIGKILL (no goodbye: its monitors declare it
//! dead), `restart` starts the same node on the same data dir, `join` adds fresh nodes,
//! `leave` is SIGTERM — the node leaves the network gracefully and never comes back.
//!
//! `sim` holds the nodes under simulation and what happens to them, `node` one node's process,
//! configuration and log; `judging` makes the report of a run, `reports` is what it reports.

use crate::churn::Event;
use crate::docs::{self, DocsError, DocsWeb, WebSpec};
use crate::load;
use crate::search_eval::{self, Asked, SearchReport, SearchSpec};
use crate::web::WebServer;
use sim::Sim;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod documents;
pub mod freshness;
mod judging;
mod node;
mod reports;
mod roster;
mod sim;

pub use node::*;
pub use reports::*;
pub use roster::{roster_line, RosterReport};

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The `weft` binary.
    pub weft: PathBuf,
    /// Where the nodes' data dirs, configs and logs go.
    pub work_dir: PathBuf,
    /// Nodes at the start.
    pub nodes: usize,
    pub web: WebSpec,
    /// Directory of the documentation HTML the web is built from.
    pub docs: PathBuf,
    /// The run stops after this long at the latest.
    pub duration: Duration,
    pub churn: Vec<Event>,
    /// Each node's politeness delay per host.
    pub delay_ms: u64,
    /// Run the index (chunk, embed, store) on every node; needs the model files.
    pub index: bool,
    /// The directory `scripts/setup.sh` fills: model, tokenizer, ONNX Runtime.
    pub models: PathBuf,
    /// Stop early once every churn event happened and every reachable page was fetched
    /// (after a few seconds more, to catch late duplicates).
    pub until_covered: bool,
    /// After the crawl: ask the network questions and judge its answers (needs the index).
    pub search: Option<SearchSpec>,
}

/// How the run is going, once a second.
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed: Duration,
    pub covered: usize,
    pub reachable: usize,
    pub alive: usize,
    /// Churn events that happened since the last tick.
    pub events: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Docs(#[from] DocsError),
    #[error("{0}")]
    Io(String),
    #[error("the weft binary {0} does not exist; build it with `cargo build --release -p weft-node` or pass --weft")]
    NoWeft(PathBuf),
    #[error("the model files are not in {0} (index on); run scripts/setup.sh, pass --models, or run with --no-index")]
    NoModels(PathBuf),
    #[error("node {node} did not {what} within {secs} s; its log: {log}")]
    NodeStuck { node: usize, what: &'static str, secs: u64, log: PathBuf },
    #[error("node {node} exited on its own ({exit}) while it was to run; its log: {log}; it ends:\n{tail}")]
    NodeDied { node: usize, exit: String, log: PathBuf, tail: String },
}

pub(crate) fn io(what: &str, e: impl std::fmt::Display) -> RunError {
    RunError::Io(format!("{what}: {e}"))
}

/// The server's log as a table: start and answer time (seconds into the run), host, path,
/// status, User-Agent.
pub(crate) fn write_log(path: &Path, log: &[crate::web::Request], started: Instant) -> Result<(), RunError> {
    use std::fmt::Write as _;
    let mut out = String::from("started\tanswered\thost\tpath\tstatus\tuser_agent\n");
    for r in log {
        let at = |t: Instant| t.saturating_duration_since(started).as_secs_f64();
        let _ = writeln!(
            out,
            "{:.3}\t{:.3}\t{}\t{}\t{}\t{}",
            at(r.started),
            at(r.answered),
            r.host,
            r.path,
            r.status,
            r.user_agent
        );
    }
    std::fs::write(path, out).map_err(|e| io("writing the request log", e))
}

/// Page requests answered 2xx, from the log.
fn covered(log: &[crate::web::Request], web: &DocsWeb) -> usize {
    let ok: std::collections::HashSet<(&str, &str)> =
        log.iter().filter(|r| (200..300).contains(&r.status)).map(|r| (r.host.as_str(), r.path.as_str())).collect();
    web.reachable.iter().filter(|(h, p)| ok.contains(&(h.as_str(), p.as_str()))).count()
}

/// Runs the simulation: serves the web, starts the nodes, applies the churn, and judges.
pub async fn run(spec: &RunSpec, on_tick: impl FnMut(&Progress)) -> Result<RunReport, RunError> {
    run_with(spec, on_tick, async |_: &[LiveNode]| {}).await
}

/// [`run`], calling `finish` with the nodes still up once the crawl has ended and before they
/// are stopped (the demo searches them there).
pub async fn run_with(
    spec: &RunSpec,
    mut on_tick: impl FnMut(&Progress),
    finish: impl AsyncFnOnce(&[LiveNode]),
) -> Result<RunReport, RunError> {
    if !spec.weft.is_file() {
        return Err(RunError::NoWeft(spec.weft.clone()));
    }
    if spec.index && !spec.models.join("all-MiniLM-L6-v2-int8/model.onnx").is_file() {
        return Err(RunError::NoModels(spec.models.clone()));
    }
    let (server, web) = serve(spec).await?;
    std::fs::create_dir_all(&spec.work_dir).map_err(|e| io("creating the work dir", e))?;
    let started = Instant::now();
    let mut sim = Sim::new(spec, &web, started)?;
    sim.form().await?;
    // The schedule counts from here: events due while the first members were still forming
    // would otherwise fire at once as the crawl starts (a leave of the seeds node as it
    // started: its seeds never left it).
    let times = Times { started, crawl_started: Instant::now(), elapsed: Duration::ZERO };
    let mut marks = Vec::new();
    let freshness = crawl(&mut sim, &server, times, &mut marks, &mut on_tick).await?;
    let times = Times { elapsed: started.elapsed(), ..times };
    let log = server.requests();
    write_log(&spec.work_dir.join("requests.tsv"), &log, started)?;
    let freshness = match freshness {
        Some(f) => Some(f.report().await),
        None => None,
    };
    let asked = match &spec.search {
        Some(search) => Some(sim.search_phase(search, &web, &mut marks, started).await?),
        None => None,
    };
    let live = sim.live();
    let documents = match spec.index && !live.is_empty() {
        true => Some(sim.read_back(&log, &server, &live).await),
        false => None,
    };
    finish(&live).await;
    sim.stop_all().await;
    let search = match asked {
        Some((asked, load)) => Some(judge_search(&sim, asked, load).await?),
        None => None,
    };
    Ok(judging::run_report(&sim, &log, times, judging::Found { marks, search, freshness, documents }))
}

/// The synthetic web built from the docs and served on loopback.
async fn serve(spec: &RunSpec) -> Result<(WebServer, DocsWeb), RunError> {
    let pages = docs::load(&spec.docs)?;
    let mut built = None;
    let server = WebServer::start_with(|port| match docs::build(&pages, &spec.web, port) {
        Ok(web) => {
            let sites = web.sites.clone();
            built = Some(Ok(web));
            sites
        }
        Err(e) => {
            built = Some(Err(e));
            Vec::new()
        }
    })
    .await
    .map_err(|e| io("starting the web server", e))?;
    Ok((server, built.expect("the web was built")?))
}

/// When the run started, when its crawl (and the churn schedule's clock) did, and how long the
/// crawl ran.
#[derive(Debug, Clone, Copy)]
struct Times {
    started: Instant,
    crawl_started: Instant,
    elapsed: Duration,
}

/// The crawl: once a second, the churn events due, the nodes observed, progress reported;
/// until every reachable page was fetched and no event is left (with `until_covered`), or
/// the run's duration is over. Returns the freshness probes, when the run has a search phase
/// (their questions are load the other runs do not ask for).
async fn crawl(
    sim: &mut Sim<'_>,
    server: &WebServer,
    times: Times,
    marks: &mut Vec<Mark>,
    on_tick: &mut impl FnMut(&Progress),
) -> Result<Option<freshness::Freshness>, RunError> {
    let (spec, web) = (sim.spec, sim.web);
    let mut pending: VecDeque<Event> = spec.churn.iter().copied().collect();
    let mut covered_since: Option<Instant> = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut freshness = spec.search.is_some().then(freshness::Freshness::new);
    loop {
        tick.tick().await;
        let elapsed = times.started.elapsed();
        let mut events = Vec::new();
        while pending.front().is_some_and(|e| e.at <= times.crawl_started.elapsed()) {
            let event = pending.pop_front().expect("an event");
            let what = sim.apply(event.action).await?;
            marks.push(Mark { at_secs: times.started.elapsed().as_secs_f64(), event: what.clone() });
            events.push(what);
        }
        // Every node's full status each second is load a real network does not have (each
        // status is milliseconds of a node's CPU, and the simulator parses all of them): with
        // many nodes on two cores, every fifth second, or at once after an event.
        if !events.is_empty() || spec.nodes <= 25 || elapsed.as_secs() % 5 == 0 {
            sim.observe().await;
        }
        sim.death()?;
        let log = server.requests();
        if let Some(f) = freshness.as_mut() {
            let up: Vec<(usize, std::net::SocketAddr)> = (sim.up().into_iter())
                .map(|n| (n, std::net::SocketAddr::from(([127, 0, 0, 1], sim.nodes[n].api_port))))
                .collect();
            f.tick(&log, web, server, &up, &sim.http);
        }
        let covered = covered(&log, web);
        let alive = sim.nodes.iter().filter(|n| n.state == State::Up).count();
        on_tick(&Progress { elapsed, covered, reachable: web.reachable.len(), alive, events });
        if covered == web.reachable.len() && pending.is_empty() {
            let since = *covered_since.get_or_insert_with(Instant::now);
            if spec.until_covered && since.elapsed() >= Duration::from_secs(5) {
                break;
            }
        } else {
            covered_since = None;
        }
        if elapsed >= spec.duration {
            break;
        }
    }
    Ok(freshness)
}

/// The questions asked, written to `search.json` and judged against the exact answer over
/// every node's index.
async fn judge_search(sim: &Sim<'_>, asked: Vec<Asked>, load: load::LoadReport) -> Result<SearchReport, RunError> {
    let spec = sim.spec;
    let json = serde_json::to_string_pretty(&asked).map_err(|e| io("encoding the questions", e))?;
    std::fs::write(spec.work_dir.join("search.json"), json).map_err(|e| io("writing search.json", e))?;
    let dirs: Vec<PathBuf> = sim.nodes.iter().map(|n| n.dir.join("data")).collect();
    let total = sim.nodes.len();
    let models = spec.models.clone();
    let judged = tokio::task::spawn_blocking(move || search_eval::judge(&asked, &dirs, &models, total))
        .await
        .map_err(|e| io("judging the searches", e))?
        .map_err(|e| io("judging the searches", e))?;
    Ok(SearchReport { load: Some(load), ..judged })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node that dies at its start ends the run at once with its exit status, instead of
    /// the run waiting out a minute for its address (and the whole duration for its pages).
    #[tokio::test]
    async fn a_node_that_exits_at_start_ends_the_run_with_its_exit_status() {
        let docs = crate::docs::docs_dir();
        if !docs.is_dir() {
            panic!("{} is missing: run scripts/setup.sh (it installs postgresql-doc)", docs.display());
        }
        let work = tempfile::tempdir().unwrap();
        let spec = RunSpec {
            weft: "/bin/false".into(),
            work_dir: work.path().to_path_buf(),
            nodes: 3,
            web: WebSpec { hosts: 2, pages: 20, seed: 1, ..WebSpec::default() },
            docs,
            duration: Duration::from_secs(600),
            churn: Vec::new(),
            delay_ms: 250,
            index: false,
            models: PathBuf::new(),
            until_covered: true,
            search: None,
        };
        match run(&spec, |_| {}).await {
            Err(RunError::NodeDied { node: 0, exit, .. }) => assert!(exit.contains("exit status: 1"), "{exit}"),
            other => panic!("{:?}", other.map(|r| r.elapsed_secs)),
        }
    }
}
