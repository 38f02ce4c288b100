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
//! `node` holds one node's process, configuration and log; `reports` what a run reports.

use crate::churn::{Action, Event};
use crate::docs::{self, DocsError, DocsWeb, WebSpec};
use crate::load;
use crate::ports::free_port;
use crate::report::{self, Expectations};
use crate::search_eval::{self, Asked, SearchReport, SearchSpec};
use crate::web::WebServer;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod documents;
pub mod freshness;
mod node;
mod reports;
mod roster;

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

struct Sim<'a> {
    spec: &'a RunSpec,
    web: &'a DocsWeb,
    nodes: Vec<Node>,
    bootstrap: String,
    http: reqwest::Client,
    /// Nodes killed with SIGKILL: (their User-Agent, when).
    kills: Vec<(String, Instant)>,
    leaves: Vec<(String, Instant)>,
    /// The pages the nodes still up held copies of just after each kill (see
    /// [`documents::held_copies`]).
    held_at_kill: std::collections::HashSet<(String, String)>,
    /// A node that exited while it was to run (its number and exit status): the run ends with
    /// it at once rather than waiting out its bounds for a node that is gone.
    died: Option<(usize, String)>,
    /// The roster the nodes report, sampled at each look at their statuses.
    roster: roster::RosterWatch,
}

impl Sim<'_> {
    fn add_node(&mut self, seeds: bool) -> Result<usize, RunError> {
        let n = self.nodes.len();
        let dir = self.spec.work_dir.join(format!("node{n}"));
        std::fs::create_dir_all(&dir).map_err(|e| io("creating a node dir", e))?;
        let port = || free_port().map_err(|e| io("picking a port", e));
        let ports = (port()?, port()?);
        let boot = (n > 0).then_some(self.bootstrap.as_str());
        let config = node_config(self.spec, self.web, n, &dir, ports, boot, seeds);
        std::fs::write(dir.join("weft.toml"), config.to_toml()).map_err(|e| io("writing a node config", e))?;
        let mut node = Node {
            n,
            dir,
            api_port: ports.0,
            child: None,
            state: State::Up,
            status: None,
            ready: false,
            rss_kib: 0,
            peak_kib: 0,
            connections: Vec::new(),
        };
        spawn(self.spec, &mut node)?;
        self.nodes.push(node);
        Ok(n)
    }

    async fn apply(&mut self, action: Action) -> Result<String, RunError> {
        Ok(match action {
            Action::Kill(n) => {
                let node = &mut self.nodes[n];
                if let Some(mut child) = node.child.take() {
                    let _ = child.start_kill();
                    self.kills.push((user_agent(n), Instant::now()));
                    let _ = child.wait().await;
                }
                node.state = State::Killed;
                if self.spec.index {
                    let apis: Vec<std::net::SocketAddr> = self
                        .nodes
                        .iter()
                        .filter(|n| n.state == State::Up)
                        .map(|n| std::net::SocketAddr::from(([127, 0, 0, 1], n.api_port)))
                        .collect();
                    let held = documents::held_copies(&self.http, &apis).await;
                    self.held_at_kill.extend(held);
                }
                format!("kill {n}")
            }
            Action::Restart(n) => {
                spawn(self.spec, &mut self.nodes[n])?;
                format!("restart {n}")
            }
            Action::Join(k) => {
                let mut added = Vec::new();
                for _ in 0..k {
                    added.push(self.add_node(false)?.to_string());
                }
                format!("join {}", added.join(","))
            }
            Action::Leave(n) => {
                let node = &mut self.nodes[n];
                if let Some(pid) = node.child.as_ref().and_then(|c| c.id()) {
                    // SAFETY: kill(2) with a pid this process spawned and has not reaped.
                    unsafe {
                        libc::kill(pid as libc::pid_t, libc::SIGTERM);
                    }
                }
                node.state = State::Leaving;
                self.leaves.push((user_agent(n), Instant::now()));
                format!("leave {n}")
            }
        })
    }

    /// Waits until node 0 counts `n` members.
    async fn members(&mut self, n: usize, timeout: Duration) -> Result<(), RunError> {
        let deadline = Instant::now() + timeout;
        loop {
            self.observe().await;
            self.death()?;
            let members = self.nodes[0].status.as_ref().and_then(|s| s["network"]["members"].as_array().map(Vec::len));
            if members == Some(n) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let log = self.nodes[0].log();
                return Err(RunError::NodeStuck { node: 0, what: "see every member", secs: timeout.as_secs(), log });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Nodes up whose API has answered since their process started.
    fn up(&self) -> Vec<usize> {
        self.nodes.iter().filter(|n| n.state == State::Up && n.ready).map(|n| n.n).collect()
    }

    /// Waits until the index queues are empty and every posting published has been
    /// acknowledged by its cells' owners, for two seconds in a row (the exact answer is over
    /// every indexed chunk: a posting still on its way is a miss no routing could avoid), at
    /// most `limit`.
    async fn search_ready(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut settled_at: Option<Instant> = None;
        while Instant::now() < deadline && self.died.is_none() {
            self.observe().await;
            let statuses: Vec<&serde_json::Value> =
                self.nodes.iter().filter(|n| n.state == State::Up).filter_map(|n| n.status.as_ref()).collect();
            let queued: u64 = statuses
                .iter()
                .map(|s| {
                    s["index"]["queue"].as_u64().unwrap_or(0)
                        + s["network"]["postings"]["backlog"].as_u64().unwrap_or(0)
                })
                .sum();
            if queued > 0 {
                settled_at = None;
            } else if settled_at.get_or_insert_with(Instant::now).elapsed() >= Duration::from_secs(2) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        false
    }

    /// Asks the questions, round-robin over the live nodes, applying the search phase's churn.
    async fn search_phase(
        &mut self,
        search: &SearchSpec,
        web: &DocsWeb,
        marks: &mut Vec<Mark>,
        run_started: Instant,
    ) -> Result<(Vec<Asked>, load::LoadReport), RunError> {
        let settling = Instant::now();
        if self.search_ready(Duration::from_secs(120)).await {
            eprintln!("[search] the network settled in {:.0} s", settling.elapsed().as_secs_f64());
        } else {
            self.death()?;
            eprintln!("search: the network (index queues, postings) did not settle within 120 s; asking anyway");
        }
        let questions = search_eval::questions(&web.titles, search.queries, self.spec.web.seed);
        let mut pending: std::collections::VecDeque<Event> = search.churn.iter().copied().collect();
        eprintln!("[search   0s] asking {} questions", questions.len());
        let pids: Vec<(usize, u32)> =
            self.nodes.iter().filter_map(|n| Some((n.n, n.child.as_ref().and_then(|c| c.id())?))).collect();
        let sampler = load::LoadSampler::start(pids, self.spec.work_dir.join("load.tsv"));
        let started = Instant::now();
        let mut asked = Vec::with_capacity(questions.len());
        let mut observed: Option<Instant> = None;
        for (i, q) in questions.iter().enumerate() {
            let mut changed = false;
            while pending.front().is_some_and(|e| e.at <= started.elapsed()) {
                let event = pending.pop_front().expect("an event");
                let what = self.apply(event.action).await?;
                eprintln!("[search {:>3}s] {what}", started.elapsed().as_secs());
                marks.push(Mark { at_secs: run_started.elapsed().as_secs_f64(), event: format!("search: {what}") });
                changed = true;
            }
            // Every node's status before every question was load of the simulator's own on the
            // nodes it measures (fifty statuses a question at N = 50): after a churn event, while
            // a node up has not answered yet, and otherwise every fifth second.
            let waiting = self.nodes.iter().any(|n| n.state == State::Up && !n.ready);
            if changed || waiting || observed.is_none_or(|t| t.elapsed() >= Duration::from_secs(5)) {
                self.observe().await;
                observed = Some(Instant::now());
            }
            self.death()?;
            let up = self.up();
            let down: Vec<usize> = self.nodes.iter().filter(|n| n.state == State::Killed).map(|n| n.n).collect();
            let Some(&node) = up.get(i % up.len().max(1)) else { break };
            let api = std::net::SocketAddr::from(([127, 0, 0, 1], self.nodes[node].api_port));
            // By meaning alone (judged for recall), then as a user asks.
            for dense in [true, false] {
                let at = started.elapsed();
                let answer = search_eval::ask(&self.http, api, q, 10, dense).await;
                asked.push(search_eval::record(q, dense, node, at, (up.clone(), down.clone()), answer));
            }
            if (i + 1) % 50 == 0 {
                eprintln!("[search {:>3}s] {} questions asked", started.elapsed().as_secs(), i + 1);
            }
            tokio::time::sleep(search.interval).await;
        }
        let load = tokio::task::spawn_blocking(move || sampler.stop()).await.unwrap_or_default();
        Ok((asked, load))
    }

    /// Reaps nodes that finished leaving, samples memory and polls every live node's status.
    async fn observe(&mut self) {
        let polls = self.nodes.iter().filter(|n| n.state == State::Up).map(|n| {
            let url = format!("http://127.0.0.1:{}/status", n.api_port);
            let http = self.http.clone();
            async move {
                let r = http.get(url).timeout(Duration::from_secs(2)).send().await.ok()?;
                r.json::<serde_json::Value>().await.ok()
            }
        });
        let statuses = futures_util::future::join_all(polls).await;
        let up: Vec<usize> = self.nodes.iter().filter(|n| n.state == State::Up).map(|n| n.n).collect();
        for (n, status) in up.iter().copied().zip(statuses) {
            if let Some(peers) = status.as_ref().and_then(|s| s["network"]["connected_peers"].as_u64()) {
                self.nodes[n].connections.push(peers);
            }
            if status.is_some() {
                self.nodes[n].status = status;
                self.nodes[n].ready = true;
            }
        }
        let seen: Vec<&serde_json::Value> = up.iter().filter_map(|n| self.nodes[*n].status.as_ref()).collect();
        self.roster.sample(&seen, self.spec.nodes);
        for node in &mut self.nodes {
            if let Some(child) = node.child.as_mut() {
                if let Some((rss, peak)) = child.id().and_then(memory) {
                    node.rss_kib = rss;
                    node.peak_kib = peak;
                }
                if node.state == State::Leaving && matches!(child.try_wait(), Ok(Some(_))) {
                    node.state = State::Left;
                    node.child = None;
                } else if node.state == State::Up {
                    if let Ok(Some(exit)) = child.try_wait() {
                        self.died.get_or_insert((node.n, exit.to_string()));
                    }
                }
            }
        }
    }

    /// The error for a node that exited while it was to run, if one did.
    fn death(&self) -> Result<(), RunError> {
        match &self.died {
            Some((n, exit)) => Err(self.nodes[*n].died(exit.clone())),
            None => Ok(()),
        }
    }
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
    let web = built.expect("the web was built")?;
    drop(pages);
    std::fs::create_dir_all(&spec.work_dir).map_err(|e| io("creating the work dir", e))?;

    let started = Instant::now();
    let http = reqwest::Client::builder().no_proxy().build().map_err(|e| io("HTTP client", e))?;
    let mut sim = Sim {
        spec,
        web: &web,
        nodes: Vec::new(),
        bootstrap: String::new(),
        http,
        kills: Vec::new(),
        held_at_kill: std::collections::HashSet::new(),
        leaves: Vec::new(),
        died: None,
        roster: roster::RosterWatch::new(started),
    };
    // The seeds go to the last initial node, started once the others formed a network: a
    // crawl that starts while members are still arriving moves hosts around needlessly.
    sim.add_node(spec.nodes == 1)?;
    sim.bootstrap = logged_addr(&mut sim.nodes[0], "/p2p/", Duration::from_secs(60)).await?;
    for _ in 1..spec.nodes.saturating_sub(1) {
        sim.add_node(false)?;
    }
    if spec.nodes > 1 {
        // Starting many nodes on few cores takes a while: a minute, plus two seconds a node.
        let patience = Duration::from_secs(60 + 2 * spec.nodes as u64);
        sim.members(spec.nodes - 1, patience).await?;
        sim.add_node(true)?;
    }
    // The schedule counts from here: events due while the first members were still forming
    // would otherwise fire at once as the crawl starts (a leave of the seeds node as it
    // started: its seeds never left it).
    let crawl_started = Instant::now();

    let mut marks = Vec::new();
    let mut pending: std::collections::VecDeque<Event> = spec.churn.iter().copied().collect();
    let mut covered_since: Option<Instant> = None;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // How soon pages are found, probed while the crawl goes on (with the search phase only:
    // the probes' questions are load the other runs do not ask for).
    let mut freshness = spec.search.is_some().then(freshness::Freshness::new);
    loop {
        tick.tick().await;
        let elapsed = started.elapsed();
        let mut events = Vec::new();
        while pending.front().is_some_and(|e| e.at <= crawl_started.elapsed()) {
            let event = pending.pop_front().expect("an event");
            let what = sim.apply(event.action).await?;
            marks.push(Mark { at_secs: started.elapsed().as_secs_f64(), event: what.clone() });
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
            let up: Vec<(usize, std::net::SocketAddr)> = sim
                .up()
                .into_iter()
                .map(|n| (n, std::net::SocketAddr::from(([127, 0, 0, 1], sim.nodes[n].api_port))))
                .collect();
            f.tick(&log, &web, &server, &up, &sim.http);
        }
        let covered = covered(&log, &web);
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
    let elapsed = started.elapsed();
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
    let live: Vec<LiveNode> = sim
        .nodes
        .iter()
        .filter(|n| n.state == State::Up)
        .map(|n| LiveNode { node: n.n, api: std::net::SocketAddr::from(([127, 0, 0, 1], n.api_port)) })
        .collect();
    // Every article page fetched, read back through every node up.
    let documents = if spec.index && !live.is_empty() {
        let fetched: std::collections::HashSet<(&str, &str)> =
            log.iter().filter(|r| (200..300).contains(&r.status)).map(|r| (r.host.as_str(), r.path.as_str())).collect();
        let urls: Vec<String> = web
            .titles
            .keys()
            .filter(|(h, p)| fetched.contains(&(h.as_str(), p.as_str())))
            .map(|(h, p)| server.url(h, p))
            .collect();
        let apis: Vec<std::net::SocketAddr> = live.iter().map(|n| n.api).collect();
        // After repair: once every node up has delivered its postings and copies (a minute
        // at most), as a volunteer reading a page some minutes later would find it.
        let settled = Instant::now();
        loop {
            sim.observe().await;
            let backlog: u64 = sim
                .nodes
                .iter()
                .filter(|n| n.state == State::Up)
                .filter_map(|n| n.status.as_ref())
                .map(|s| s["network"]["postings"]["backlog"].as_u64().unwrap_or(0))
                .sum();
            if backlog == 0 || settled.elapsed() > Duration::from_secs(60) {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Some(documents::read_back(&sim.http, &apis, &urls).await)
    } else {
        None
    };
    finish(&live).await;
    for node in &mut sim.nodes {
        if let Some(mut child) = node.child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    let search = match asked {
        Some((asked, load)) => {
            let json = serde_json::to_string_pretty(&asked).map_err(|e| io("encoding the questions", e))?;
            std::fs::write(spec.work_dir.join("search.json"), json).map_err(|e| io("writing search.json", e))?;
            let dirs: Vec<PathBuf> = sim.nodes.iter().map(|n| n.dir.join("data")).collect();
            let total = sim.nodes.len();
            let models = spec.models.clone();
            let judged = tokio::task::spawn_blocking(move || search_eval::judge(&asked, &dirs, &models, total))
                .await
                .map_err(|e| io("judging the searches", e))?
                .map_err(|e| io("judging the searches", e))?;
            Some(SearchReport { load: Some(load), ..judged })
        }
        None => None,
    };
    let default_gap = Duration::from_millis(spec.delay_ms);
    let retry_after = Duration::from_secs(docs::RETRY_AFTER_SECS);
    let expect = Expectations {
        reachable: &web.reachable,
        gaps: &web.gaps,
        default_gap,
        disallowed: &web.disallowed,
        retry_after,
        start: Some(started),
        kills: &sim.kills,
        leaves: &sim.leaves,
        held_at_kill: &sim.held_at_kill,
    };
    let judged = report::judge(&log, &expect);
    let mut fetch_rate: BTreeMap<usize, Vec<(u64, usize)>> = BTreeMap::new();
    let mut nodes = Vec::new();
    for node in &sim.nodes {
        let agent = user_agent(node.n);
        let mine: Vec<&crate::web::Request> = log.iter().filter(|r| r.user_agent.starts_with(&agent)).collect();
        let ok: Vec<&&crate::web::Request> =
            mine.iter().filter(|r| (200..300).contains(&r.status) && report::is_page(r)).collect();
        let mut per_sec: BTreeMap<u64, usize> = BTreeMap::new();
        for r in &ok {
            *per_sec.entry(r.started.saturating_duration_since(started).as_secs()).or_default() += 1;
        }
        let last = elapsed.as_secs();
        fetch_rate.insert(node.n, (0..=last).map(|s| (s, per_sec.get(&s).copied().unwrap_or(0))).collect());
        let s = node.status.clone().unwrap_or_default();
        let net = &s["network"];
        let u = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
        nodes.push(NodeReport {
            node: node.n,
            peer_id: net["peer_id"].as_str().unwrap_or_default().to_string(),
            state: match node.state {
                State::Up => "up",
                State::Killed => "killed",
                State::Leaving | State::Left => "left",
            }
            .to_string(),
            fetches: ok.len(),
            requests: mine.len(),
            ring_share: if node.state == State::Up { net["ring_share"].as_f64().unwrap_or(0.0) } else { 0.0 },
            dedup_hits: u(&s["index"]["pages_aliased"]),
            urls_sent: u(&net["urls_sent"]),
            urls_received: u(&net["urls_received"]),
            urls_passed_on: u(&net["urls_forwarded"]),
            grid_links: u(&net["grid"]["links"]),
            dht_lookups: u(&net["dht_lookups"]),
            dht_published: u(&net["dht_published"]),
            dht_passed_on: u(&net["dht_forwarded"]),
            rss_mib: node.rss_kib as f64 / 1024.0,
            peak_rss_mib: node.peak_kib as f64 / 1024.0,
            connections_mean: node.connections.iter().sum::<u64>() as f64 / node.connections.len().max(1) as f64,
            connections_max: node.connections.iter().copied().max().unwrap_or(0),
            memory_parts_mib: {
                let m = |k: &str| s["memory"][k].as_f64().unwrap_or(0.0) / (1u64 << 20) as f64;
                reports::MemoryParts {
                    anonymous: m("anonymous"),
                    file_backed: m("file_backed"),
                    vectors: m("vectors"),
                    cell_vectors: m("cell_vectors"),
                    model: m("model"),
                    seen_set: m("seen_set"),
                    storage: m("storage"),
                    browsers: m("browsers"),
                    other: m("other"),
                }
            },
            teacher_runs: u(&s["extraction"]["teacher:runs"]),
            templates: u(&s["layouts"]["templates"]),
            pages_by_template: u(&s["extraction"]["layout:template"]),
            pages_rendered: u(&s["extraction"]["render:rendered"]),
            browser_starts: u(&s["layouts"]["browser_starts"]),
            own_chunks: u(&s["index"]["chunks"]),
            cell_chunks: u(&s["index"]["cells"]["chunks"]),
            cells_owned: u(&net["postings"]["cells_owned"]),
            postings_published: u(&net["postings"]["published"]),
            postings_received: u(&net["postings"]["received"]),
            postings_refused: u(&net["postings"]["refused"]),
            postings_disputed: u(&net["postings"]["disputed"]),
            banned_peers: u(&net["banned_peers"]),
            own_documents: u(&s["index"]["documents"]),
            copies: u(&s["index"]["cells"]["copies"]),
            copy_bytes: u(&s["index"]["cells"]["copy_bytes"]),
            copies_received: u(&net["postings"]["replicas_received"]),
            copies_refused: u(&net["postings"]["replicas_refused"]),
            pages_adopted: u(&s["pages_adopted"]),
            repair_copies: u(&s["index"]["cells"]["repair"]["copies_sent"]),
            repair_bytes: u(&s["index"]["cells"]["repair"]["bytes_sent"]),
            repair_rounds: u(&s["index"]["cells"]["repair"]["rounds"]),
            repair_plan_ms: u(&s["index"]["cells"]["repair"]["last_plan_ms"]),
            compare_rounds: u(&s["index"]["cells"]["repair"]["compare_rounds"]),
            copies_asked: u(&s["index"]["cells"]["repair"]["copies_asked"]),
            copies_sent_on_request: u(&s["index"]["cells"]["repair"]["copies_sent_on_request"]),
        });
    }
    let up: Vec<&NodeReport> = nodes.iter().filter(|n| n.rss_mib > 0.0).collect();
    Ok(RunReport {
        spec: SpecSummary {
            nodes: spec.nodes,
            hosts: spec.web.hosts,
            pages: spec.web.pages,
            seed: spec.web.seed,
            duration_secs: spec.duration.as_secs(),
            churn: spec.churn.iter().map(|e| format!("{:?}@{}s", e.action, e.at.as_secs())).collect(),
            delay_ms: spec.delay_ms,
            index: spec.index,
        },
        elapsed_secs: elapsed.as_secs_f64(),
        formed_secs: crawl_started.saturating_duration_since(started).as_secs_f64(),
        web: judged,
        urls_exchanged: nodes.iter().map(|n| n.urls_sent).sum(),
        urls_passed_on: nodes.iter().map(|n| n.urls_passed_on).sum(),
        dht_messages: nodes.iter().map(|n| n.dht_lookups + n.dht_published).sum(),
        dht_passed_on: nodes.iter().map(|n| n.dht_passed_on).sum(),
        dedup_hits: nodes.iter().map(|n| n.dedup_hits).sum(),
        mean_rss_mib: if up.is_empty() { 0.0 } else { up.iter().map(|n| n.rss_mib).sum::<f64>() / up.len() as f64 },
        max_peak_rss_mib: nodes.iter().map(|n| n.peak_rss_mib).fold(0.0, f64::max),
        connections_mean: {
            let all: Vec<u64> = sim.nodes.iter().flat_map(|n| n.connections.iter().copied()).collect();
            all.iter().sum::<u64>() as f64 / all.len().max(1) as f64
        },
        connections_max: nodes.iter().map(|n| n.connections_max).max().unwrap_or(0),
        nodes,
        churn: marks,
        fetch_rate,
        search,
        freshness,
        documents,
        roster: sim.roster.report(),
    })
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
