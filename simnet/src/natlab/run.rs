//! A run in the lab: a public node and one node per home network crawl a web served on the
//! lab's internet, then ask the network questions; the report says what each node saw of its
//! reachability, what the URL exchange took, and whether the crawl was polite and complete.

use super::{Lab, LabError, Nat, PUBLIC, WEB};
use crate::docs::DocsWeb;
use crate::web::{Request, WebServer};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;
use tokio::process::Child;

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
    let (server, web) = serve(&lab, spec)?;
    std::fs::create_dir_all(&spec.work_dir)?;
    let names: Vec<String> =
        std::iter::once("pub".to_string()).chain((1..=spec.homes.len()).map(|i| format!("h{i}"))).collect();
    let children = start_nodes(&lab, spec, &web, &names).await?;
    // The crawl starts once every node is a member (a home node is admitted after a probation as
    // long as the network is old): the lab judges NAT traversal, and a node admitted after the
    // small web was crawled would have nothing to fetch.
    wait_for_members(&lab, &names).await?;
    let token = std::fs::read_to_string(spec.work_dir.join(&names[1]).join("data/api.token"))?;
    let body = serde_json::json!({ "urls": web.seeds }).to_string();
    if !matches!(lab.post(&names[1], api(WEB), "/seeds", token.trim(), &body), Ok((200, _))) {
        return Err(LabError::Command { command: format!("POST /seeds to {}", names[1]), stderr: String::new() });
    }
    let judge = |log: &[Request]| judge(&web, log, started);
    let mut settled_secs = None;
    while started.elapsed() < spec.timeout {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let report = judge(&server.requests());
        if report.covered < report.reachable {
            continue;
        }
        if outboxes_empty(&lab, &names) {
            settled_secs = Some(started.elapsed().as_secs_f64());
            break;
        }
    }
    let searches = ask(&lab, spec, &web, &names);
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
    let nodes = lab_nodes(&lab, spec, &names).await;
    let web_report = judge(&server.requests());
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

/// The lab's web, built from the docs and served on the lab's internet.
fn serve(lab: &Lab, spec: &LabSpec) -> Result<(WebServer, DocsWeb), LabError> {
    let pages = crate::docs::load(&spec.docs).map_err(|e| std::io::Error::other(e.to_string()))?;
    let listener = lab.listen("inet", SocketAddrV4::new(WEB, 0))?;
    let mut built = None;
    let server = WebServer::start_on(listener, |port| match crate::docs::build(&pages, &spec.web, port) {
        Ok(web) => {
            let sites = web.sites.clone();
            built = Some(web);
            sites
        }
        Err(_) => Vec::new(),
    })?;
    let web = built.ok_or_else(|| std::io::Error::other("the lab's web could not be built"))?;
    Ok((server, web))
}

/// Starts a node in each of `names`' namespaces, the public one first, each once the one
/// before answers; the home nodes bootstrap from the public one.
async fn start_nodes(lab: &Lab, spec: &LabSpec, web: &DocsWeb, names: &[String]) -> Result<Vec<Child>, LabError> {
    let mut children = Vec::new();
    let mut bootstrap: Option<Vec<String>> = None;
    for (n, name) in names.iter().enumerate() {
        let dir = spec.work_dir.join(name);
        std::fs::create_dir_all(&dir)?;
        let mut config = lab_config(spec, web, n, &dir);
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
            if let Some(s) = status(lab, name) {
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

    Ok(children)
}

/// Waits until every node counts every node a member.
async fn wait_for_members(lab: &Lab, names: &[String]) -> Result<(), LabError> {
    let members = names.len();
    let deadline = std::time::Instant::now() + Duration::from_secs(weft_p2p::roster::PROBATION + 60);
    let counts = || {
        let count = |n: &String| status(lab, n).and_then(|s| s.pointer("/network/members")?.as_array().map(Vec::len));
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
    Ok(())
}

/// The server's log judged against the lab's web (no churn).
fn judge(web: &DocsWeb, log: &[Request], started: std::time::Instant) -> crate::report::Report {
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
}

/// Searches: titles of pages served, asked of the whole network from every node.
fn ask(lab: &Lab, spec: &LabSpec, web: &DocsWeb, names: &[String]) -> Vec<LabSearch> {
    let titles: Vec<&String> = web.titles.values().collect();
    let mut peer_names = std::collections::HashMap::new();
    for name in names {
        if let Some(id) =
            status(lab, name).and_then(|s| s.pointer("/network/peer_id").and_then(|p| p.as_str().map(String::from)))
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

    searches
}

/// Each node as its `/status` and `weft doctor`'s reachability check tell at the end.
async fn lab_nodes(lab: &Lab, spec: &LabSpec, names: &[String]) -> Vec<LabNode> {
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
        let s = status(lab, name).unwrap_or_default();
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
    nodes
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
