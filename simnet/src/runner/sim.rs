//! The nodes under simulation and what happens to them: started, formed into a network,
//! killed, restarted, joined and leaving (the churn's actions), watched (their statuses,
//! memory and connections), asked the run's questions, and read back at its end.

use super::documents;
use super::node::{logged_addr, memory, node_config, spawn, user_agent, LiveNode, Node, State};
use super::roster::RosterWatch;
use super::{io, Mark, RunError, RunSpec};
use crate::churn::{Action, Event};
use crate::docs::DocsWeb;
use crate::load;
use crate::ports::free_port;
use crate::search_eval::{self, Asked, SearchSpec};
use crate::web::WebServer;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub(super) struct Sim<'a> {
    pub(super) spec: &'a RunSpec,
    pub(super) web: &'a DocsWeb,
    pub(super) nodes: Vec<Node>,
    pub(super) bootstrap: String,
    pub(super) http: reqwest::Client,
    /// Nodes killed with SIGKILL: (their User-Agent, when).
    pub(super) kills: Vec<(String, Instant)>,
    pub(super) leaves: Vec<(String, Instant)>,
    /// The pages the nodes still up held copies of just after each kill (see
    /// [`documents::held_copies`]).
    pub(super) held_at_kill: HashSet<(String, String)>,
    /// A node that exited while it was to run (its number and exit status): the run ends with
    /// it at once rather than waiting out its bounds for a node that is gone.
    pub(super) died: Option<(usize, String)>,
    /// The roster the nodes report, sampled at each look at their statuses.
    pub(super) roster: RosterWatch,
}

impl Sim<'_> {
    pub(super) fn add_node(&mut self, seeds: bool) -> Result<usize, RunError> {
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

    pub(super) async fn apply(&mut self, action: Action) -> Result<String, RunError> {
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
    pub(super) async fn members(&mut self, n: usize, timeout: Duration) -> Result<(), RunError> {
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
    pub(super) fn up(&self) -> Vec<usize> {
        self.nodes.iter().filter(|n| n.state == State::Up && n.ready).map(|n| n.n).collect()
    }

    /// Waits until the index queues are empty and every posting published has been
    /// acknowledged by its cells' owners, for two seconds in a row (the exact answer is over
    /// every indexed chunk: a posting still on its way is a miss no routing could avoid), at
    /// most `limit`.
    pub(super) async fn search_ready(&mut self, limit: Duration) -> bool {
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
    pub(super) async fn search_phase(
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
    pub(super) async fn observe(&mut self) {
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
    pub(super) fn death(&self) -> Result<(), RunError> {
        match &self.died {
            Some((n, exit)) => Err(self.nodes[*n].died(exit.clone())),
            None => Ok(()),
        }
    }
}

impl<'a> Sim<'a> {
    pub(super) fn new(spec: &'a RunSpec, web: &'a DocsWeb, started: Instant) -> Result<Sim<'a>, RunError> {
        Ok(Sim {
            spec,
            web,
            nodes: Vec::new(),
            bootstrap: String::new(),
            http: reqwest::Client::builder().no_proxy().build().map_err(|e| io("HTTP client", e))?,
            kills: Vec::new(),
            held_at_kill: HashSet::new(),
            leaves: Vec::new(),
            died: None,
            roster: RosterWatch::new(started),
        })
    }

    /// Starts the initial nodes: node 0, the others bootstrapping from it, and once they
    /// formed a network the last one with the seeds — a crawl that starts while members are
    /// still arriving moves hosts around needlessly.
    pub(super) async fn form(&mut self) -> Result<(), RunError> {
        let nodes = self.spec.nodes;
        self.add_node(nodes == 1)?;
        self.bootstrap = logged_addr(&mut self.nodes[0], "/p2p/", Duration::from_secs(60)).await?;
        for _ in 1..nodes.saturating_sub(1) {
            self.add_node(false)?;
        }
        if nodes > 1 {
            // Starting many nodes on few cores takes a while: a minute, plus two seconds a node.
            let patience = Duration::from_secs(60 + 2 * nodes as u64);
            self.members(nodes - 1, patience).await?;
            self.add_node(true)?;
        }
        Ok(())
    }

    /// The nodes up, and their APIs.
    pub(super) fn live(&self) -> Vec<LiveNode> {
        self.nodes
            .iter()
            .filter(|n| n.state == State::Up)
            .map(|n| LiveNode { node: n.n, api: SocketAddr::from(([127, 0, 0, 1], n.api_port)) })
            .collect()
    }

    /// Every article page fetched (per the server's `log`), read back through every node in
    /// `live` — after repair: once every node up has delivered its postings and copies (a
    /// minute at most), as a volunteer reading a page some minutes later would find it.
    pub(super) async fn read_back(
        &mut self,
        log: &[crate::web::Request],
        server: &WebServer,
        live: &[LiveNode],
    ) -> documents::DocumentsReport {
        let fetched: HashSet<(&str, &str)> =
            log.iter().filter(|r| (200..300).contains(&r.status)).map(|r| (r.host.as_str(), r.path.as_str())).collect();
        let urls: Vec<String> = (self.web.titles.keys())
            .filter(|(h, p)| fetched.contains(&(h.as_str(), p.as_str())))
            .map(|(h, p)| server.url(h, p))
            .collect();
        let apis: Vec<SocketAddr> = live.iter().map(|n| n.api).collect();
        let settled = Instant::now();
        loop {
            self.observe().await;
            let backlog: u64 = (self.nodes.iter())
                .filter(|n| n.state == State::Up)
                .filter_map(|n| n.status.as_ref())
                .map(|s| s["network"]["postings"]["backlog"].as_u64().unwrap_or(0))
                .sum();
            if backlog == 0 || settled.elapsed() > Duration::from_secs(60) {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        documents::read_back(&self.http, &apis, &urls).await
    }

    /// Stops every node still running (SIGKILL: the run is over).
    pub(super) async fn stop_all(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    }
}
