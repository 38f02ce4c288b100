//! One simulated node: its `weft` process, its configuration, its log, its memory.

use super::{io, RunError, RunSpec};
use crate::docs::DocsWeb;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    Up,
    Killed,
    Leaving,
    Left,
}

pub(super) struct Node {
    pub(super) n: usize,
    pub(super) dir: PathBuf,
    pub(super) api_port: u16,
    pub(super) child: Option<tokio::process::Child>,
    pub(super) state: State,
    pub(super) status: Option<serde_json::Value>,
    /// Whether its API has answered since its current process started.
    pub(super) ready: bool,
    pub(super) rss_kib: u64,
    pub(super) peak_kib: u64,
    /// Its open connections (`/status` `network.connected_peers`), one sample per status read.
    pub(super) connections: Vec<u64>,
}

impl Node {
    pub(super) fn log(&self) -> PathBuf {
        self.dir.join("weft.log")
    }

    /// The error for this node having exited (`exit`) while it was to run, with its log's end.
    pub(super) fn died(&self, exit: String) -> RunError {
        let log = self.log();
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        RunError::NodeDied { node: self.n, exit, log, tail }
    }
}

pub(crate) fn user_agent(n: usize) -> String {
    format!("WeftSim{n}/1.0")
}

/// The node's config: loopback everything, the web's hosts pinned to 127.0.0.1.
pub(super) fn node_config(
    spec: &RunSpec,
    web: &DocsWeb,
    n: usize,
    dir: &Path,
    ports: (u16, u16),
    bootstrap: Option<&str>,
    seeds: bool,
) -> weft_config::Config {
    let mut c = weft_config::Config { data_dir: dir.join("data"), ..Default::default() };
    let lo: IpAddr = IpAddr::from([127, 0, 0, 1]);
    c.fetch.allow_private_networks = true;
    c.fetch.resolve = web.hosts.iter().map(|h| (h.clone(), lo)).collect();
    c.fetch.user_agent = user_agent(n);
    c.crawl.follow_external_links = true;
    if seeds {
        c.crawl.seeds = web.seeds.clone();
    }
    c.politeness.default_delay_ms = spec.delay_ms;
    // The web's error bursts are short: back off seconds, not the production minutes.
    c.politeness.backoff_initial_secs = 2;
    c.politeness.backoff_max_secs = 16;
    c.frontier.seen_capacity = 100_000;
    c.api.listen = std::net::SocketAddr::from((lo, ports.0));
    c.p2p.enabled = true;
    c.p2p.listen = vec![format!("/ip4/127.0.0.1/tcp/{}", ports.1)];
    c.p2p.bootstrap = bootstrap.map(|b| vec![b.to_string()]).unwrap_or_default();
    // Many nodes on two cores: one browser each (below).
    let many = spec.nodes > 25;
    c.p2p.leave_timeout_secs = 20;
    c.index.enabled = spec.index;
    // Layout learning is on, as shipped: the web has news sites in several designs and
    // JavaScript shells, so teachers and renderers work during churn. Browsers start only on
    // nodes that meet such pages and stop when idle; with many nodes on two cores, one each.
    if many {
        c.layouts.browsers = 1;
    }
    if let Some(f) = spec.search.as_ref().and_then(|s| s.fanout) {
        c.search.fanout = f;
        c.search.min_fanout = f;
    }
    // Many nodes share two cores: one embedding thread each.
    c.embed.threads = 1;
    c.embed.model = spec.models.join("all-MiniLM-L6-v2-int8/model.onnx");
    c.embed.tokenizer = spec.models.join("all-MiniLM-L6-v2-int8/tokenizer.json");
    c.embed.ort_library = spec.models.join("onnxruntime-1.31.1/libonnxruntime.so");
    c
}

pub(super) fn spawn(spec: &RunSpec, node: &mut Node) -> Result<(), RunError> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.log())
        .map_err(|e| io("opening a node log", e))?;
    let mut command = tokio::process::Command::new(&spec.weft);
    // A simulator stopped by a signal runs no destructors (`kill_on_drop` does not fire): the
    // kernel kills its nodes instead, or fifty of them would hold the box's memory on their own.
    // (The signal follows the forking thread: nodes are spawned from the runtime's threads,
    // which live as long as the simulator.)
    let parent = std::process::id();
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    // No `RUST_LOG` is set: the node logs with its own default filter, as a user runs it (one
    // given to the simulator passes on). "info" alone let gossipsub write a line for every
    // message it drops for a slow peer.
    let child = command
        .args(["--log-format", "json", "start", "--config"])
        .arg(node.dir.join("weft.toml"))
        // The simulator's own setting, not the node's: `WEFT_*` is the node's configuration,
        // and it refuses a key it does not know.
        .env_remove("WEFT_SWEEP_SEEDS")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| io("starting weft", e))?;
    node.child = Some(child);
    node.state = State::Up;
    node.ready = false;
    Ok(())
}

/// Waits for a log line of `node` whose `fields.addr` contains `needle` (an error at once if
/// the node exits first).
pub(super) async fn logged_addr(node: &mut Node, needle: &str, timeout: Duration) -> Result<String, RunError> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(Ok(Some(exit))) = node.child.as_mut().map(|c| c.try_wait()) {
            return Err(node.died(exit.to_string()));
        }
        if let Ok(text) = std::fs::read_to_string(node.log()) {
            for line in text.lines().rev() {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
                if let Some(addr) = v["fields"]["addr"].as_str().filter(|a| a.contains(needle)) {
                    return Ok(addr.to_string());
                }
            }
        }
        if Instant::now() > deadline {
            return Err(RunError::NodeStuck { node: node.n, what: "listen", secs: timeout.as_secs(), log: node.log() });
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// (VmRSS, VmHWM) of a process, in KiB.
pub(super) fn memory(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// A node still up when the crawl ends: its number and API address.
#[derive(Debug, Clone, Copy)]
pub struct LiveNode {
    pub node: usize,
    pub api: std::net::SocketAddr,
}
