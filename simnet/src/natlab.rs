//! A NAT lab on this machine: Linux network namespaces for a small "internet" and two home
//! networks behind routers that masquerade, one like a typical home router (port-preserving,
//! endpoint-dependent filtering: hole punching works) and one with a symmetric NAT (a random
//! source port per connection: hole punching cannot work, traffic must stay relayed).
//!
//! ```text
//!   inet (bridge br0, 198.51.100.1: the lab's web server)
//!    ├── pub   198.51.100.10                   a public node
//!    ├── r1    wan 198.51.100.21 │ lan 10.1.0.1  ── h1 10.1.0.2  (cone NAT)
//!    └── r2    wan 198.51.100.22 │ lan 10.2.0.1  ── h2 10.2.0.2  (symmetric NAT)
//! ```
//!
//! The addresses exist only inside the namespaces the lab creates (198.51.100.0/24 is a
//! documentation range; nothing leaves the machine). Needs root, `ip` (iproute2) and `nft`
//! (nftables); both come with `scripts/setup.sh`. The namespaces are removed when the [`Lab`]
//! is dropped — a panicking test included — and namespaces left by a lab whose process died
//! (SIGKILL) are removed by the next [`Lab::build`].

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::process::Command;
use std::time::Duration;

/// The lab's web server, on the internet bridge.
pub const WEB: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
/// The public node.
pub const PUBLIC: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
/// Home node `i` (from 1) sits at 10.`i`.0.2 behind router `r{i}` (WAN 198.51.100.`20+i`).
pub fn home_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, i as u8, 0, 2)
}

/// Namespace names start with this, then the owning process id.
const PREFIX: &str = "wlab";

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the NAT lab needs root (network namespaces and nftables)")]
    NotRoot,
    #[error("the NAT lab needs `{0}` (run scripts/setup.sh)")]
    Missing(&'static str),
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// How a home router translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nat {
    /// Masquerade keeping source ports where it can; only replies come in.
    Cone,
    /// Masquerade with a random source port for every connection.
    Symmetric,
}

/// A built lab; removed on drop.
pub struct Lab {
    prefix: String,
    created: Vec<String>,
}

fn run(args: &[&str]) -> Result<String, LabError> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound if args[0] == "ip" => LabError::Missing("ip"),
        std::io::ErrorKind::NotFound if args[0] == "nft" => LabError::Missing("nft"),
        _ => LabError::Io(e),
    })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_stdin(args: &[&str], input: &str) -> Result<(), LabError> {
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    child.stdin.take().expect("piped").write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Removes namespaces of labs whose process is gone.
fn remove_stale() {
    let Ok(list) = run(&["ip", "netns", "list"]) else { return };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(PREFIX) else { continue };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if pid.parse::<u32>().is_ok_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()) {
            let _ = run(&["ip", "netns", "del", name]);
        }
    }
}

impl Lab {
    /// Builds the lab of the test: a cone NAT (`h1`) and a symmetric NAT (`h2`).
    pub fn build() -> Result<Lab, LabError> {
        Lab::build_with(&[Nat::Cone, Nat::Symmetric])
    }

    /// Builds a lab with one home network per entry of `homes` (`r1`/`h1`, `r2`/`h2`, …; at
    /// most 8); says why not when this machine cannot (not root, tools missing).
    pub fn build_with(homes: &[Nat]) -> Result<Lab, LabError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LabError::NotRoot);
        }
        run(&["ip", "-V"])?;
        run(&["nft", "--version"])?;
        remove_stale();
        let mut lab = Lab { prefix: format!("{PREFIX}{}-", std::process::id()), created: Vec::new() };
        lab.make(&homes[..homes.len().min(8)])?;
        Ok(lab)
    }

    /// The full name of lab namespace `short` (`inet`, `pub`, `r1`, `r2`, `h1`, `h2`).
    pub fn ns(&self, short: &str) -> String {
        format!("{}{short}", self.prefix)
    }

    fn ip(&self, short: &str, args: &[&str]) -> Result<String, LabError> {
        let ns = self.ns(short);
        let mut all = vec!["ip", "-n", ns.as_str()];
        all.extend_from_slice(args);
        run(&all)
    }

    fn make(&mut self, homes: &[Nat]) -> Result<(), LabError> {
        let mut names = vec!["inet".to_string(), "pub".to_string()];
        for i in 1..=homes.len() {
            names.push(format!("r{i}"));
            names.push(format!("h{i}"));
        }
        for short in &names {
            let ns = self.ns(short);
            run(&["ip", "netns", "add", &ns])?;
            self.created.push(ns);
            self.ip(short, &["link", "set", "lo", "up"])?;
        }
        self.ip("inet", &["link", "add", "br0", "type", "bridge"])?;
        self.ip("inet", &["addr", "add", &format!("{WEB}/24"), "dev", "br0"])?;
        self.ip("inet", &["link", "set", "br0", "up"])?;
        // The public node and the routers' WAN sides on the internet bridge.
        let mut wan = vec![("pub".to_string(), "eth0", PUBLIC)];
        for i in 1..=homes.len() {
            wan.push((format!("r{i}"), "wan", Ipv4Addr::new(198, 51, 100, 20 + i as u8)));
        }
        for (short, ifname, addr) in wan {
            let short = short.as_str();
            let port = format!("v{short}");
            let peer_ns = self.ns(short);
            self.ip("inet", &["link", "add", &port, "type", "veth", "peer", "name", ifname, "netns", &peer_ns])?;
            self.ip("inet", &["link", "set", &port, "master", "br0", "up"])?;
            self.ip(short, &["addr", "add", &format!("{addr}/24"), "dev", ifname])?;
            self.ip(short, &["link", "set", ifname, "up"])?;
        }
        // The home networks.
        for (i, nat) in homes.iter().copied().enumerate() {
            let lan = i + 1;
            let (router, home) = (format!("r{lan}"), format!("h{lan}"));
            let (router, home) = (router.as_str(), home.as_str());
            let host = home_ip(lan);
            let home_ns = self.ns(home);
            self.ip(router, &["link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", &home_ns])?;
            self.ip(router, &["addr", "add", &format!("10.{lan}.0.1/24"), "dev", "lan"])?;
            self.ip(router, &["link", "set", "lan", "up"])?;
            self.ip(home, &["addr", "add", &format!("{host}/24"), "dev", "eth0"])?;
            self.ip(home, &["link", "set", "eth0", "up"])?;
            self.ip(home, &["route", "add", "default", "via", &format!("10.{lan}.0.1")])?;
            let router_ns = self.ns(router);
            run(&["ip", "netns", "exec", &router_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
            let masquerade = match nat {
                Nat::Cone => "masquerade",
                Nat::Symmetric => "masquerade random",
            };
            // Only replies come in: new connections from the internet are dropped on their way
            // to the home network, and new UDP to the router itself too (as home routers do;
            // a TCP SYN to a closed port of the router gets its reset).
            let rules = format!(
                "table ip nat {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n    oifname \"wan\" {masquerade}\n  }}\n}}\n\
                 table ip filter {{\n  chain forward {{\n    type filter hook forward priority filter; policy accept;\n    iifname \"wan\" ct state new drop\n  }}\n\
                 \x20 chain input {{\n    type filter hook input priority filter; policy accept;\n    iifname \"wan\" ct state new meta l4proto udp drop\n  }}\n}}\n"
            );
            run_stdin(&["ip", "netns", "exec", &router_ns, "nft", "-f", "-"], &rules)?;
        }
        Ok(())
    }

    /// Runs `f` on a thread inside namespace `short`: sockets made there belong to it.
    pub fn within<T: Send + 'static>(&self, short: &str, f: impl FnOnce() -> T + Send + 'static) -> std::io::Result<T> {
        let path = format!("/var/run/netns/{}", self.ns(short));
        std::thread::spawn(move || -> std::io::Result<T> {
            let file = std::fs::File::open(&path)?;
            use std::os::fd::AsRawFd;
            // SAFETY: a valid namespace fd; setns changes only this thread's network namespace.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .map_err(|_| std::io::Error::other("lab thread panicked"))?
    }

    /// A TCP listener inside namespace `short`.
    pub fn listen(&self, short: &str, addr: SocketAddrV4) -> std::io::Result<std::net::TcpListener> {
        self.within(short, move || std::net::TcpListener::bind(addr))?
    }

    /// `GET path` (HTTP/1.0) from inside namespace `short`: the status and the body.
    pub fn get(&self, short: &str, addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
        self.http(short, addr, format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n"))
    }

    /// `POST path` with a JSON body and a bearer token, from inside namespace `short`.
    pub fn post(
        &self,
        short: &str,
        addr: SocketAddr,
        path: &str,
        token: &str,
        json: &str,
    ) -> std::io::Result<(u16, String)> {
        self.http(
            short,
            addr,
            format!(
                "POST {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
                json.len()
            ),
        )
    }

    fn http(&self, short: &str, addr: SocketAddr, request: String) -> std::io::Result<(u16, String)> {
        self.within(short, move || -> std::io::Result<(u16, String)> {
            let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
            stream.set_read_timeout(Some(Duration::from_secs(20)))?;
            stream.write_all(request.as_bytes())?;
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw)?;
            let text = String::from_utf8_lossy(&raw);
            let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
            let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            Ok((status, body.to_string()))
        })?
    }

    /// A command run inside namespace `short` (`ip netns exec`, which execs the program: the
    /// child's pid is the program's).
    pub fn command(&self, short: &str, program: &std::path::Path) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("ip");
        c.arg("netns").arg("exec").arg(self.ns(short)).arg(program);
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in self.created.iter().rev() {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}

/// What to run in the lab: a public node and one node per home network, crawling a web served
/// on the lab's internet with the default configuration (index, layouts and Chromium on;
/// a shorter crawl delay so a run takes a minute or two).
#[derive(Debug, Clone)]
pub struct LabSpec {
    pub weft: std::path::PathBuf,
    pub models: std::path::PathBuf,
    pub docs: std::path::PathBuf,
    pub work_dir: std::path::PathBuf,
    /// One home network per entry (at most 8).
    pub homes: Vec<Nat>,
    pub web: crate::docs::WebSpec,
    /// Gives up waiting for full coverage and empty outboxes after this long.
    pub timeout: Duration,
    /// Network searches each node makes at the end.
    pub searches: usize,
    /// URLs the first home node sends to each other node for the URL-exchange figures (0:
    /// none); at most 1000.
    pub exchange_urls: usize,
}

/// One node of a lab run, as its `/status` told at the end.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LabNode {
    /// `pub`, `h1`, `h2`, …
    pub name: String,
    pub nat: Option<String>,
    pub peer_id: String,
    /// `network.reachability` of its status.
    pub reachability: serde_json::Value,
    pub urls_sent: u64,
    pub urls_received: u64,
    pub urls_waiting: u64,
    pub urls_in_flight: u64,
    pub members: usize,
    /// `network.ring_share` of its status: the part of the hosts it owns.
    pub ring_share: f64,
    pub fetched: u64,
    /// `weft doctor --json`'s reachability check, run in the node's namespace while it runs.
    pub doctor: serde_json::Value,
}

/// One network search and who answered it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LabSearch {
    pub from: String,
    pub query: String,
    /// (node name, milliseconds) of the peers that answered.
    pub answered: Vec<(String, f64)>,
    pub failed: Vec<(String, String)>,
    pub took_ms: f64,
}

/// URLs one node sent another through the exchange: how long until all were acknowledged.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LabExchange {
    pub from: String,
    pub to: String,
    /// Whether `from` reached `to` only through a relay then.
    pub relayed: bool,
    pub urls: usize,
    pub secs: f64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LabReport {
    pub exchanges: Vec<LabExchange>,
    pub web: crate::report::Report,
    pub nodes: Vec<LabNode>,
    pub searches: Vec<LabSearch>,
    /// Seconds from the start until every reachable page was fetched and every outbox empty
    /// (`None`: not by the timeout).
    pub settled_secs: Option<f64>,
    pub elapsed_secs: f64,
}

const API_PORT: u16 = 7700;
const P2P_PORT: u16 = 7701;

fn api(ns_ip: Ipv4Addr) -> SocketAddr {
    let _ = ns_ip;
    SocketAddr::from(([127, 0, 0, 1], API_PORT))
}

/// A node's status, or `None` while its API does not answer.
fn status(lab: &Lab, short: &str) -> Option<serde_json::Value> {
    match lab.get(short, api(WEB), "/status") {
        Ok((200, body)) => serde_json::from_str(&body).ok(),
        _ => None,
    }
}

/// Every node answers and has no URL waiting or in flight to another.
fn outboxes_empty(lab: &Lab, names: &[String]) -> bool {
    names.iter().all(|n| {
        status(lab, n).is_some_and(|s| {
            s.pointer("/network/urls_waiting").and_then(|v| v.as_u64()) == Some(0)
                && s.pointer("/network/urls_in_flight").and_then(|v| v.as_u64()) == Some(0)
        })
    })
}

fn lab_config(spec: &LabSpec, web: &crate::docs::DocsWeb, n: usize, dir: &std::path::Path) -> weft_config::Config {
    let mut c = weft_config::Config { data_dir: dir.join("data"), ..Default::default() };
    // The lab's web server sits at a documentation-range address.
    c.fetch.allow_private_networks = true;
    c.fetch.resolve = web.hosts.iter().map(|h| (h.clone(), std::net::IpAddr::V4(WEB))).collect();
    c.fetch.user_agent = crate::runner::user_agent(n);
    c.crawl.follow_external_links = true;
    c.politeness.default_delay_ms = 250;
    c.api.listen = SocketAddr::from(([127, 0, 0, 1], API_PORT));
    c.p2p.enabled = true;
    c.p2p.leave_timeout_secs = 10;
    c.embed.threads = 1;
    c.embed.model = spec.models.join("all-MiniLM-L6-v2-int8/model.onnx");
    c.embed.tokenizer = spec.models.join("all-MiniLM-L6-v2-int8/tokenizer.json");
    c.embed.ort_library = spec.models.join("onnxruntime-1.31.1/libonnxruntime.so");
    c
}

/// Runs the lab scenario: the public node first, then the home nodes bootstrapping from it;
/// once every node is a member, the seeds given to the first home node (behind NAT: every URL
/// it finds for another node's hosts must travel to it); waits for full coverage and empty outboxes, then every node
/// searches the network.
pub async fn run_lab(spec: &LabSpec) -> Result<LabReport, LabError> {
    let lab = Lab::build_with(&spec.homes)?;
    let started = std::time::Instant::now();
    let pages = crate::docs::load(&spec.docs).map_err(|e| std::io::Error::other(e.to_string()))?;
    let listener = lab.listen("inet", SocketAddrV4::new(WEB, 0))?;
    let mut built = None;
    let server = crate::web::WebServer::start_on(listener, |port| match crate::docs::build(&pages, &spec.web, port) {
        Ok(web) => {
            let sites = web.sites.clone();
            built = Some(web);
            sites
        }
        Err(_) => Vec::new(),
    })?;
    let web = built.ok_or_else(|| std::io::Error::other("the lab's web could not be built"))?;
    std::fs::create_dir_all(&spec.work_dir)?;
    let names: Vec<String> =
        std::iter::once("pub".to_string()).chain((1..=spec.homes.len()).map(|i| format!("h{i}"))).collect();
    let mut children = Vec::new();
    let mut bootstrap: Option<Vec<String>> = None;
    for (n, name) in names.iter().enumerate() {
        let dir = spec.work_dir.join(name);
        std::fs::create_dir_all(&dir)?;
        let mut config = lab_config(spec, &web, n, &dir);
        if let Some(b) = &bootstrap {
            config.p2p.bootstrap = b.clone();
        }
        let path = dir.join("weft.toml");
        std::fs::write(&path, config.to_toml())?;
        let log = std::fs::File::create(dir.join("weft.log"))?;
        let child = lab
            .command(name, &spec.weft)
            .args(["--log-format", "json", "start", "--config"])
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        children.push(child);
        // Wait for its API (and, for the public node, its peer id to bootstrap from).
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        let status = loop {
            if let Some(s) = status(&lab, name) {
                break s;
            }
            if let Ok(Some(exit)) = children.last_mut().expect("just spawned").try_wait() {
                let log = std::fs::read_to_string(dir.join("weft.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(3).collect();
                return Err(LabError::Command {
                    command: format!("weft start in {name} ({exit})"),
                    stderr: tail.join("\n"),
                });
            }
            if std::time::Instant::now() > deadline {
                return Err(LabError::Command {
                    command: format!("weft start in {name}"),
                    stderr: format!("no API within 90 s; see {}", dir.join("weft.log").display()),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        if n == 0 {
            let peer = status.pointer("/network/peer_id").and_then(|p| p.as_str()).unwrap_or_default();
            // Both addresses the public node logs, as a volunteer would copy them: over QUIC the
            // home routers keep the port, which hole punching needs.
            bootstrap = Some(vec![
                format!("/ip4/{PUBLIC}/tcp/{P2P_PORT}/p2p/{peer}"),
                format!("/ip4/{PUBLIC}/udp/{P2P_PORT}/quic-v1/p2p/{peer}"),
            ]);
        }
    }

    // The crawl starts once every node is a member (a home node is admitted after a probation as
    // long as the network is old): the lab judges NAT traversal, and a node admitted after the
    // small web was crawled would have nothing to fetch.
    let members = names.len();
    let deadline = std::time::Instant::now() + Duration::from_secs(weft_p2p::roster::PROBATION + 60);
    let counts = || {
        let count = |n: &String| status(&lab, n).and_then(|s| s.pointer("/network/members")?.as_array().map(Vec::len));
        names.iter().map(count).collect::<Vec<_>>()
    };
    while counts().iter().any(|c| *c != Some(members)) {
        if std::time::Instant::now() > deadline {
            return Err(LabError::Command {
                command: "joining the roster".into(),
                stderr: format!("members each node counts: {:?} of {members}", counts()),
            });
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let token = std::fs::read_to_string(spec.work_dir.join(&names[1]).join("data/api.token"))?;
    let body = serde_json::json!({ "urls": web.seeds }).to_string();
    if !matches!(lab.post(&names[1], api(WEB), "/seeds", token.trim(), &body), Ok((200, _))) {
        return Err(LabError::Command { command: format!("POST /seeds to {}", names[1]), stderr: String::new() });
    }

    let expect_judge = |log: &[crate::web::Request]| {
        crate::report::judge(
            log,
            &crate::report::Expectations {
                reachable: &web.reachable,
                gaps: &web.gaps,
                default_gap: Duration::from_millis(250),
                disallowed: &web.disallowed,
                retry_after: Duration::from_secs(crate::docs::RETRY_AFTER_SECS),
                start: Some(started),
                kills: &[],
                leaves: &[],
                held_at_kill: &std::collections::HashSet::new(),
            },
        )
    };
    let mut settled_secs = None;
    while started.elapsed() < spec.timeout {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let report = expect_judge(&server.requests());
        if report.covered < report.reachable {
            continue;
        }
        if outboxes_empty(&lab, &names) {
            settled_secs = Some(started.elapsed().as_secs_f64());
            break;
        }
    }

    // Searches: titles of pages served, asked of the whole network from every node.
    let titles: Vec<&String> = web.titles.values().collect();
    let mut peer_names = std::collections::HashMap::new();
    for name in &names {
        if let Some(id) =
            status(&lab, name).and_then(|s| s.pointer("/network/peer_id").and_then(|p| p.as_str().map(String::from)))
        {
            peer_names.insert(id, name.clone());
        }
    }
    let mut searches = Vec::new();
    for (i, name) in names.iter().enumerate() {
        for j in 0..spec.searches {
            let query = titles[(i * 31 + j * 7) % titles.len().max(1)].clone();
            let path = format!("/search?scope=network&k=5&q={}", encode(&query));
            let Ok((200, body)) = lab.get(name, api(WEB), &path) else { continue };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) else { continue };
            let label = |id: &str| peer_names.get(id).cloned().unwrap_or_else(|| id.to_string());
            let answered = v
                .pointer("/network/answered")
                .and_then(|a| a.as_array())
                .map(|a| a.iter().filter_map(|x| Some((label(x.get(0)?.as_str()?), x.get(2)?.as_f64()?))).collect())
                .unwrap_or_default();
            let failed = v
                .pointer("/network/failed")
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|x| Some((label(x.get(0)?.as_str()?), x.get(1)?.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default();
            let took_ms = v.get("took_ms").and_then(|t| t.as_f64()).unwrap_or(0.0);
            searches.push(LabSearch { from: name.clone(), query, answered, failed, took_ms });
        }
    }

    let exchanges = if spec.exchange_urls > 0 && names.len() > 2 {
        exchange_figures(&lab, spec, &names, &server.requests(), &web.seeds).await
    } else {
        Vec::new()
    };

    // Pages fetched before the settling moment may still be in the pipeline (a render, an
    // index batch) and send the links they hold after it: a URL in an outbox now is stuck only
    // if it is still there after a bound.
    let drain_until = std::time::Instant::now() + Duration::from_secs(60);
    while std::time::Instant::now() < drain_until && !outboxes_empty(&lab, &names) {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    let mut nodes = Vec::new();
    for (n, name) in names.iter().enumerate() {
        let config = spec.work_dir.join(name).join("weft.toml");
        let doctor =
            match lab.command(name, &spec.weft).args(["doctor", "--json", "--config"]).arg(&config).output().await {
                Ok(out) => serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout)
                    .ok()
                    .and_then(|checks| checks.into_iter().find(|c| c["name"] == "reachability"))
                    .unwrap_or_default(),
                Err(_) => serde_json::Value::Null,
            };
        let s = status(&lab, name).unwrap_or_default();
        let num = |p: &str| s.pointer(p).and_then(|v| v.as_u64()).unwrap_or(0);
        nodes.push(LabNode {
            name: name.clone(),
            nat: (n > 0).then(|| format!("{:?}", spec.homes[n - 1]).to_lowercase()),
            peer_id: s.pointer("/network/peer_id").and_then(|p| p.as_str()).unwrap_or_default().to_string(),
            reachability: s.pointer("/network/reachability").cloned().unwrap_or_default(),
            urls_sent: num("/network/urls_sent"),
            urls_received: num("/network/urls_received"),
            urls_waiting: num("/network/urls_waiting"),
            urls_in_flight: num("/network/urls_in_flight"),
            members: s.pointer("/network/members").and_then(|m| m.as_array()).map_or(0, Vec::len),
            ring_share: s.pointer("/network/ring_share").and_then(|v| v.as_f64()).unwrap_or(0.0),
            fetched: num("/pages_fetched"),
            doctor,
        });
    }
    let web_report = expect_judge(&server.requests());
    crate::runner::write_log(&spec.work_dir.join("requests.tsv"), &server.requests(), started)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    for mut child in children {
        let _ = child.start_kill();
        let _ = child.wait().await;
    }
    Ok(LabReport {
        exchanges,
        web: web_report,
        nodes,
        searches,
        settled_secs,
        elapsed_secs: started.elapsed().as_secs_f64(),
    })
}

/// From the first home node, `spec.exchange_urls` new URLs on a host each other node owns
/// (the one whose pages it fetched, from the server's log), timed until every one was
/// acknowledged — the URL exchange direct (to the public node) and through a relay or a
/// punched hole (to the other home nodes).
async fn exchange_figures(
    lab: &Lab,
    spec: &LabSpec,
    names: &[String],
    log: &[crate::web::Request],
    seeds: &[String],
) -> Vec<LabExchange> {
    let from = &names[1];
    let token = std::fs::read_to_string(spec.work_dir.join(from).join("data/api.token")).unwrap_or_default();
    let mut out = Vec::new();
    for (n, to) in names.iter().enumerate() {
        if to == from {
            continue;
        }
        let agent = crate::runner::user_agent(n);
        let Some(host) =
            log.iter().find(|r| r.user_agent.starts_with(&agent) && r.status == 200).map(|r| r.host.clone())
        else {
            continue;
        };
        let Some(base) = seeds.iter().find(|s| s.contains(&format!("//{host}:"))) else { continue };
        let base = base.trim_end_matches('/');
        let to_id =
            status(lab, to).and_then(|s| s.pointer("/network/peer_id").and_then(|v| v.as_str().map(String::from)));
        let urls: Vec<String> =
            (0..spec.exchange_urls.min(1000)).map(|i| format!("{base}/exchange-bench/{from}/{i}")).collect();
        let before =
            status(lab, from).and_then(|s| s.pointer("/network/urls_sent").and_then(|v| v.as_u64())).unwrap_or(0);
        // Relayed: `from` reaches `to` only through a relay once the URLs went (the connection
        // they took is open then).
        let relayed = || {
            status(lab, from)
                .and_then(|s| s.pointer("/network/reachability/relayed_only").cloned())
                .and_then(|v| v.as_array().cloned())
                .is_some_and(|peers| peers.iter().any(|p| p.as_str() == to_id.as_deref()))
        };
        let body = serde_json::json!({ "urls": urls }).to_string();
        let t0 = std::time::Instant::now();
        if !matches!(lab.post(from, api(WEB), "/seeds", token.trim(), &body), Ok((200, _))) {
            continue;
        }
        let deadline = t0 + Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            let sent =
                status(lab, from).and_then(|s| s.pointer("/network/urls_sent").and_then(|v| v.as_u64())).unwrap_or(0);
            if sent >= before + urls.len() as u64 {
                let secs = t0.elapsed().as_secs_f64();
                out.push(LabExchange {
                    from: from.clone(),
                    to: to.clone(),
                    relayed: relayed(),
                    urls: urls.len(),
                    secs,
                });
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    out
}

/// Percent-encodes a query string value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
