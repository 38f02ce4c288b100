//! `weft`: the command-line interface of a Weft node.

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weft_config::{LogFormat, Overrides, Sources};
use weft_node::api::{ApiHit, Scope, SearchResponse};
use weft_node::{Node, RunOptions, Status};

#[derive(Parser)]
#[command(name = "weft", version, about = "A peer-to-peer crawling and semantic-search node")]
struct Cli {
    /// Log output format (the filter comes from RUST_LOG, default "info").
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormatArg>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormatArg {
    Text,
    Json,
}

#[derive(Args, Clone, Default)]
struct ConfigArgs {
    /// Data directory (default .weft; env WEFT_DATA_DIR).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// TOML config file (default: <data-dir>/weft.toml if it exists).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Start a node: crawl the seeds (and whatever is already queued) and serve the local API.
    Start {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Seed URL (repeatable); replaces crawl.seeds.
        #[arg(long = "seed", value_name = "URL")]
        seeds: Vec<String>,
        /// Address of the local API (default 127.0.0.1:7700).
        #[arg(long, value_name = "ADDR")]
        api_listen: Option<SocketAddr>,
        /// Join the network through this peer (repeatable): a multiaddr ending in
        /// /p2p/<peer id>, as a running node logs it. Implies --p2p.
        #[arg(long, value_name = "MULTIADDR")]
        bootstrap: Vec<String>,
        /// Join a network, as its first node when no --bootstrap is given (p2p.enabled).
        #[arg(long)]
        p2p: bool,
        /// Exit once nothing is queued or in flight.
        #[arg(long)]
        exit_when_idle: bool,
    },
    /// Show a running node's progress (reads its local API).
    Status {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// API address to ask instead of the configured api.listen.
        #[arg(long, value_name = "ADDR")]
        api: Option<SocketAddr>,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search by meaning: asks the running node's API — the whole network when the node is in
    /// one (`--local` for this node only) — or, when no node answers, opens the data dir itself.
    Search {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// What to look for, in plain words.
        #[arg(required = true, value_name = "QUERY")]
        query: Vec<String>,
        /// How many documents to return (1 ..= 100).
        #[arg(short, default_value_t = 10)]
        k: usize,
        /// This node's index only, not the network's.
        #[arg(long)]
        local: bool,
        /// API address to ask instead of the configured api.listen.
        #[arg(long, value_name = "ADDR")]
        api: Option<SocketAddr>,
        /// Print the raw JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export the documents (metadata and main text) or chunks this node holds, with their
    /// provenance, or every URL's latest crawl outcome, as JSON lines or Parquet: from the
    /// running node's API, or from the data dir when no node runs on it. Resumable with --cursor.
    Export {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// One record per document, per chunk, or per URL met (its latest crawl outcome).
        #[arg(long, value_enum, default_value = "documents")]
        what: weft_node::export::What,
        #[arg(long, value_enum, default_value = "jsonl")]
        format: weft_node::export::Format,
        /// Where to write (`-`: standard output; Parquet needs a file).
        #[arg(short, long, default_value = "-", value_name = "FILE")]
        output: PathBuf,
        /// Start after this document id, or URL with --what urls (an interrupted export prints it).
        #[arg(long, value_name = "ID")]
        cursor: Option<String>,
        /// Only this host (name or name:port).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Only documents fetched (or URL outcomes recorded) since then (RFC 3339 or Unix seconds).
        #[arg(long, value_name = "WHEN")]
        since: Option<String>,
        /// API address to ask instead of the configured api.listen.
        #[arg(long, value_name = "ADDR")]
        api: Option<SocketAddr>,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Serve the Model Context Protocol on stdin/stdout for LLM tools: `search`, `get_document`
    /// and `crawl_status`, answered by the running node's API.
    Mcp {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// API address of the node to use instead of the configured api.listen.
        #[arg(long, value_name = "ADDR")]
        api: Option<SocketAddr>,
    },
    /// Extract main text, metadata, links, page type and JS score from HTML files.
    Extract {
        /// The page's URL: links resolve against it (default: the file's file:// URL).
        #[arg(long, value_name = "URL")]
        url: Option<url::Url>,
        #[arg(long, value_enum, default_value = "jsonl")]
        format: weft_node::extract_cli::Format,
        /// Files or directories; .gz files are decompressed.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// What the node learned about the layouts of the hosts it crawls: templates, signatures,
    /// recorded changes, which hosts are rendered in the browser.
    Templates {
        #[command(subcommand)]
        what: TemplatesCommand,
        #[command(flatten)]
        cfg: ConfigArgs,
        /// API address to ask instead of the configured api.listen.
        #[arg(long, value_name = "ADDR", global = true)]
        api: Option<SocketAddr>,
        /// Print the raw JSON.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Check what a node needs — data dir, disk, model files and ONNX Runtime, Chromium, listen
    /// ports, bootstrap peers — and say how to fix each problem. Exits 1 if any check fails.
    Doctor {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Inspect configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Three nodes on loopback crawl a synthetic web built from the PostgreSQL manual for
    /// about a minute, then answer searches. Runs `weft-simnet demo` (installed beside
    /// `weft`); the simulator is a separate program so the node never depends on it.
    Demo {
        /// Further arguments for `weft-simnet demo` (see `weft-simnet demo --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Subcommand)]
enum TemplatesCommand {
    /// Every host: templates, signatures, pages extracted by template, changes, rendering.
    List,
    /// One host's templates (selectors, confidence, the teacher's evidence) and signatures.
    Show { host: String },
    /// The layout and URL-scheme changes recorded for a host, oldest first.
    Changes { host: String },
    /// Forget what was learned of a host — templates, signature counts, the "needs
    /// JavaScript" decision, URL patterns — so its layouts are learned again from its next
    /// pages (the change log stays). Asks the running node (with the API token in the data
    /// dir), or changes the data dir when no node runs.
    Relearn { host: String },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the effective configuration (defaults < file < env < flags) as TOML.
    Show {
        #[command(flatten)]
        cfg: ConfigArgs,
    },
    /// Validate one TOML file.
    Check { file: PathBuf },
}

fn sources(cfg: &ConfigArgs, overrides: Overrides) -> Sources {
    Sources {
        config_file: cfg.config.clone(),
        read_env: true,
        overrides: Overrides { data_dir: cfg.data_dir.clone(), ..overrides },
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    use std::io::IsTerminal;
    // A log pipe that goes away (a supervisor restarted, a terminal closed) must not take the
    // node with it: by default the subscriber reports a failed write with `eprintln!`, which
    // panics on a closed stderr — in whatever thread logged (the signal thread, the crawl
    // loop). Lines that cannot be written are dropped instead.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let log_format = cli.log_format.map(|f| match f {
        LogFormatArg::Text => LogFormat::Text,
        LogFormatArg::Json => LogFormat::Json,
    });
    match run(cli.command, log_format) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// For the commands that print and exit: a closed stdout (`weft search ... | head`) ends the
/// process quietly, as for any Unix filter, instead of a panic in `println!`. Not for `weft
/// start`: a long-running server must get EPIPE on a dead socket, not be killed by the signal.
fn die_quietly_on_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn run(command: Command, log_format: Option<LogFormat>) -> anyhow::Result<ExitCode> {
    if !matches!(command, Command::Start { .. }) {
        die_quietly_on_broken_pipe();
    }
    match command {
        Command::Start { cfg, seeds, api_listen, bootstrap, p2p, exit_when_idle } => {
            let overrides = Overrides { seeds, api_listen, log_format, bootstrap, p2p, ..Default::default() };
            let config = weft_config::load(&sources(&cfg, overrides))?;
            init_logging(config.log.format);
            block_signals();
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let result = runtime.block_on(start(config, exit_when_idle));
            // Threads of the blocking pool (a slow disk) must not keep a stopped node alive.
            runtime.shutdown_timeout(Duration::from_secs(5));
            result?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Status { cfg, api, json } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let addr = api.unwrap_or(config.api.listen);
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let status = runtime.block_on(fetch_status(addr))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&status)?);
            } else {
                print_status(&status);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Search { cfg, query, k, local, api, json } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let addr = api.unwrap_or(config.api.listen);
            let query = query.join(" ");
            let k = k.clamp(1, weft_node::api::MAX_K);
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            let scope = if local { Scope::Local } else { Scope::Network };
            let answer = match runtime.block_on(search_api(addr, &query, k, scope)) {
                Ok(answer) => answer,
                Err(SearchVia::NoNode(e)) => {
                    tracing::debug!("no node at {addr} ({e}); opening the data dir");
                    search_offline(&config, &query, k).with_context(|| {
                        format!("no weft node answers at {addr}, and the data dir could not be searched")
                    })?
                }
                Err(SearchVia::Failed(e)) => return Err(e),
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&answer)?);
            } else {
                print_hits(&answer);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Export { cfg, what, format, output, cursor, host, since, api, quiet } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let request = weft_node::export::Request {
                what,
                format,
                output,
                cursor,
                host,
                since,
                api: api.unwrap_or(config.api.listen),
                progress: !quiet,
            };
            let done = weft_node::export::command(&config, request)?;
            let resume =
                done.cursor.map(|c| format!("; the last was {c} (--cursor resumes after it)")).unwrap_or_default();
            if what == weft_node::export::What::Urls {
                eprintln!("exported {} URL outcomes{resume}", done.urls);
            } else {
                eprintln!("exported {} documents ({} chunks){resume}", done.documents, done.chunks);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { cfg, api } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            runtime.block_on(weft_node::mcp::serve(api.unwrap_or(config.api.listen)))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Doctor { cfg, json } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            let checks = runtime.block_on(weft_node::doctor::run(&config));
            let ok = if json {
                println!("{}", serde_json::to_string_pretty(&checks)?);
                !checks.iter().any(|c| c.verdict == weft_node::doctor::Verdict::Fail)
            } else {
                weft_node::doctor::print(&checks, &mut std::io::stdout())?
            };
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Templates { what, cfg, api, json } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let addr = api.unwrap_or(config.api.listen);
            let what = match what {
                TemplatesCommand::List => weft_node::templates_cli::What::List,
                TemplatesCommand::Show { host } => weft_node::templates_cli::What::Show(host),
                TemplatesCommand::Changes { host } => weft_node::templates_cli::What::Changes(host),
                TemplatesCommand::Relearn { host } => weft_node::templates_cli::What::Relearn(host),
            };
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(weft_node::templates_cli::run(&config, addr, what, json, &mut std::io::stdout()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Extract { url, format, paths } => {
            let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
            let mut out = std::io::BufWriter::new(stdout.lock());
            let ok = weft_node::extract_cli::run(&paths, url.as_ref(), format, &mut out, &mut stderr.lock());
            use std::io::Write;
            out.flush()?;
            Ok(if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Config(ConfigCommand::Show { cfg }) => {
            let config = weft_config::load(&sources(&cfg, Overrides { log_format, ..Default::default() }))?;
            print!("{}", config.to_toml());
            Ok(ExitCode::SUCCESS)
        }
        Command::Demo { args } => {
            let me = std::env::current_exe()?;
            let simnet = me.with_file_name("weft-simnet");
            if !simnet.is_file() {
                anyhow::bail!(
                    "`weft demo` runs {}, which is not there; build it with `cargo build --release -p weft-simnet`",
                    simnet.display()
                );
            }
            let status = std::process::Command::new(&simnet)
                .arg("demo")
                .arg("--weft")
                .arg(&me)
                .args(&args)
                .status()
                .with_context(|| format!("running {}", simnet.display()))?;
            Ok(if status.success() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Config(ConfigCommand::Check { file }) => match weft_config::load_file(&file) {
            Ok(_) => {
                println!("{}: ok", file.display());
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                Ok(ExitCode::FAILURE)
            }
        },
    }
}

/// Exit code of a node stopped by a storage fault (`EX_IOERR`).
const EXIT_STORAGE: i32 = 74;
/// Exit code of a node whose graceful stop outlasted its bound, or that was stopped by a
/// second signal.
const EXIT_FORCED: i32 = 130;

async fn start(config: weft_config::Config, exit_when_idle: bool) -> anyhow::Result<()> {
    tracing::info!(data_dir = %config.data_dir.display(), "starting weft node");
    // Every stage of a graceful stop has its own bound — requests in flight
    // (`crawl.shutdown_grace_secs`), pages already fetched (`PROCESSING_GRACE`), the hand-off
    // (`p2p.leave_timeout_secs`) — and the process's bound is their sum and 15 s more: a
    // smaller one cut a leave on a loaded machine before it handed anything over.
    let stop_bound = Duration::from_secs(config.crawl.shutdown_grace_secs + config.p2p.leave_timeout_secs + 15)
        + weft_node::PROCESSING_GRACE;
    let node = Node::open(config)?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    let storage = node.crawler().storage().clone();
    watch_signals(tx, stop_bound);
    watch_storage(storage.clone());
    match node.run(RunOptions { exit_when_idle }, rx, |_| {}).await {
        Ok(()) => {
            tracing::info!("stopped");
            Ok(())
        }
        Err(e) if storage.fault().is_some() => {
            // The runtime may hold threads stuck in the failed storage: leave now.
            say(&format!("error: {e:#}"));
            std::process::exit(EXIT_STORAGE);
        }
        Err(e) => Err(e),
    }
}

/// SIGTERM and SIGINT are taken by a thread of their own (blocked everywhere else), so they
/// are answered even when every runtime thread is busy: the first asks for a graceful stop and
/// arms a deadline (the sum of the stop's stages, see `start`), after which the process exits; a second
/// signal exits at once. Unfinished URLs stay queued either way.
fn watch_signals(shutdown: tokio::sync::watch::Sender<bool>, bound: Duration) {
    // SAFETY: sigset manipulation and sigwait on a set every thread blocks (see `block_signals`).
    let set = signal_set();
    std::thread::Builder::new()
        .name("weft-signals".into())
        .spawn(move || {
            let wait = || {
                let mut sig: libc::c_int = 0;
                // SAFETY: `set` is a valid, initialised signal set.
                unsafe { libc::sigwait(&set, &mut sig) };
                sig
            };
            wait();
            tracing::info!(
                bound_secs = bound.as_secs(),
                "shutdown requested; finishing in-flight work (signal again to force)"
            );
            let _ = shutdown.send(true);
            std::thread::spawn(move || {
                std::thread::sleep(bound);
                eprintln!(
                    "error: the node did not stop within {} s; exiting (unfinished URLs stay queued)",
                    bound.as_secs()
                );
                std::process::exit(EXIT_FORCED);
            });
            wait();
            say("forced exit; unfinished URLs stay queued");
            std::process::exit(EXIT_FORCED);
        })
        .expect("the signal thread starts");
}

/// A line on stderr that cannot panic (`eprintln!` does when stderr is closed).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: initialising a sigset_t on the stack with the libc calls made for it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}

/// Blocks SIGTERM and SIGINT in this thread and every thread it starts from now on (call it
/// before the runtime exists): they are delivered to the signal thread's `sigwait` only.
fn block_signals() {
    let set = signal_set();
    // SAFETY: changes this thread's signal mask only.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// After a storage fault the node stops by itself; if anything keeps it from finishing (a
/// thread stuck in the failed storage), this exits the process a few seconds later.
fn watch_storage(storage: weft_node::storage::Storage) {
    std::thread::Builder::new()
        .name("weft-storage-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(200));
            if let Some(fault) = storage.fault() {
                std::thread::sleep(Duration::from_secs(5));
                say(&format!("error: {fault}; exiting"));
                std::process::exit(EXIT_STORAGE);
            }
        })
        .expect("the storage watchdog starts");
}

async fn fetch_status(addr: SocketAddr) -> anyhow::Result<Status> {
    let url = format!("http://{addr}/status");
    let client = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(5)).build()?;
    let resp = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("no weft node answers at {url} (is it running? see api.listen)"))?;
    let body = resp.error_for_status()?.bytes().await?;
    Ok(serde_json::from_slice(&body)?)
}

enum SearchVia {
    /// Nothing listens: search the data dir directly.
    NoNode(reqwest::Error),
    /// A node answered with an error.
    Failed(anyhow::Error),
}

async fn search_api(addr: SocketAddr, query: &str, k: usize, scope: Scope) -> Result<SearchResponse, SearchVia> {
    let url = format!("http://{addr}/search");
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| SearchVia::Failed(e.into()))?;
    let scope = match scope {
        Scope::Local => "local",
        Scope::Network => "network",
    };
    let resp =
        client.get(&url).query(&[("q", query), ("k", &k.to_string()), ("scope", scope)]).send().await.map_err(|e| {
            if e.is_connect() {
                SearchVia::NoNode(e)
            } else {
                SearchVia::Failed(anyhow::Error::new(e).context(format!("asking {url}")))
            }
        })?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| SearchVia::Failed(e.into()))?;
    if !status.is_success() {
        let message = weft_node::api::error_message(&body);
        return Err(SearchVia::Failed(anyhow::anyhow!("the node at {addr} answered {status}: {message}")));
    }
    serde_json::from_slice(&body).map_err(|e| SearchVia::Failed(e.into()))
}

/// Searches the data dir without a running node (sled allows one process per database).
fn search_offline(config: &weft_config::Config, query: &str, k: usize) -> anyhow::Result<SearchResponse> {
    let started = std::time::Instant::now();
    let db_path = config.data_dir.join("db");
    anyhow::ensure!(db_path.exists(), "no index at {} (start a node first)", config.data_dir.display());
    let db = weft_frontier::open_db(&db_path, 16 << 20)
        .with_context(|| format!("cannot open {} (is a node running with its API off?)", db_path.display()))?;
    let index = weft_index::LocalIndex::open(&db, &config.data_dir, config.embed.dims, &config.index)?;
    let mut embedder = weft_index::Embedder::open(&config.embed, 1)?;
    let vector = embedder.embed(&[query])?.pop().unwrap_or_default();
    let hits = if config.index.hybrid { index.search_hybrid(query, &vector, k)? } else { index.search(&vector, k)? };
    let hits = hits.into_iter().map(|hit| ApiHit::new(hit, None)).collect();
    Ok(SearchResponse {
        query: query.to_string(),
        k,
        took_ms: started.elapsed().as_secs_f64() * 1e3,
        scope: Scope::Local,
        partial: false,
        hits,
        network: None,
    })
}

fn print_hits(answer: &SearchResponse) {
    if answer.hits.is_empty() {
        println!("no results for {:?}", answer.query);
        return;
    }
    let me = answer.network.as_ref().map(|n| n.peer_id.as_str());
    for (i, api_hit) in answer.hits.iter().enumerate() {
        let hit = &api_hit.hit;
        let title = if hit.title.is_empty() { "(untitled)" } else { hit.title.as_str() };
        println!("{:>2}. {:.3}  {title}", i + 1, hit.score);
        println!("    {}", hit.url);
        let snippet: String = hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        println!("    {snippet}");
        if !hit.aliases.is_empty() {
            println!("    also at: {}", hit.aliases.join(", "));
        }
        match api_hit.peer.as_deref() {
            Some(p) if Some(p) == me => println!("    from this node"),
            Some(p) if me.is_some() => println!("    from peer {}", short_peer(p)),
            _ => {}
        }
    }
    match &answer.network {
        Some(n) => {
            println!(
                "({} results in {:.0} ms from this node and {} of {} peers asked; {} members{})",
                answer.hits.len(),
                answer.took_ms,
                n.answered.len(),
                n.contacted.len(),
                n.members,
                if answer.partial { "; partial: some peers did not answer" } else { "" }
            );
            for (peer, why) in &n.failed {
                println!("  no answer from {}: {why}", short_peer(peer));
            }
        }
        None => println!("({} results in {:.0} ms, this node's index)", answer.hits.len(), answer.took_ms),
    }
}

/// The last characters of a peer id: enough to tell members apart.
fn short_peer(p: &str) -> &str {
    &p[p.len().saturating_sub(8)..]
}

fn print_status(status: &Status) {
    let s = &status.crawl;
    println!("state          {}", s.state);
    println!("uptime         {:.0} s", s.uptime_secs);
    println!("pages fetched  {} ({:.2}/s)", s.pages_fetched, s.pages_per_sec);
    println!(
        "requests       {} ({} robots.txt, {} sitemaps, {} redirects)",
        s.requests, s.robots_fetched, s.sitemaps_fetched, s.redirects
    );
    println!("bytes          {}", s.bytes);
    println!(
        "queued         {} ({} in flight) over {} hosts ({} known, {} in memory)",
        s.queued, s.in_flight, s.hosts_with_queue, s.hosts, s.hosts_in_memory
    );
    println!("seen URLs      {} ({} KiB filter)", s.seen_urls, s.seen_bytes / 1024);
    println!(
        "disallowed     {}   rate-limited {}   retries {}   gave up {}",
        s.robots_disallowed, s.rate_limited, s.retries, s.gave_up
    );
    if let Some(stall) = &s.stalled {
        println!("stalled        {}", stall.reason);
    }
    println!(
        "adaptive       {} hub revisits ({} not modified), {} URL-scheme changes, {} URLs found when hosts ran dry",
        s.revisits, s.not_modified, s.scheme_changes, s.found_when_idle
    );
    for b in &s.blocked_by_hosts {
        println!("refusing us    {}: {}", b.host, b.blocked.reason);
        for e in &b.blocked.evidence {
            println!("  · {e}");
        }
    }
    let x = |k: &str| s.extraction.get(k).copied().unwrap_or(0);
    println!(
        "extracted      {} articles, {} hubs, {} other; JS needed {}, worth trying {}",
        x("page_type:article"),
        x("page_type:hub"),
        x("page_type:other"),
        x("js:js_required"),
        x("js:try_static_first")
    );
    if let Some(i) = &status.index {
        println!(
            "index          {} documents, {} chunks, {} aliases, {} failed; {} KiB of vectors",
            i.stored.documents,
            i.stored.chunks,
            i.stored.aliases,
            i.stored.failed,
            i.stored.vector_memory_bytes / 1024
        );
        println!(
            "  this run     {} pages indexed ({} replaced), {} aliased, {} failed; {} chunks at {:.1}/s; {} waiting",
            i.pages_indexed,
            i.pages_replaced,
            i.pages_aliased,
            i.pages_failed,
            i.chunks_embedded,
            i.chunks_per_sec,
            i.queue
        );
        for (url, reason) in &i.stored.recent_failures {
            println!("  failed       {url}: {reason}");
        }
    }
    if let Some(n) = &status.network {
        let joining = match &n.joining {
            weft_p2p::Joining::First => "first node (others bootstrap from it)".to_string(),
            weft_p2p::Joining::Connecting => "connecting to bootstrap peers".to_string(),
            weft_p2p::Joining::Joined => "joined".to_string(),
            weft_p2p::Joining::Retrying { attempt, next_in_secs, last_error } => {
                format!("no bootstrap peer answers (attempt {attempt}, next in {next_in_secs} s): {last_error}")
            }
        };
        println!("network        {joining}; peer id {}", n.peer_id);
        println!(
            "  peers        {} connected, {} members; this node owns {:.1}% of the ring{}",
            n.connected_peers,
            n.members.len(),
            n.ring_share * 100.0,
            if n.admitted < 1.0 {
                format!(
                    " (admitted to {:.0}% of its points: a newcomer's share grows over 90 minutes)",
                    n.admitted * 100.0
                )
            } else {
                String::new()
            }
        );
        for addr in &n.listen_addrs {
            println!("  listening    {addr}");
        }
        let r = &n.reachability;
        println!(
            "  reachable    {} ({} peers direct, {} relayed only; {} hole punches, {} failed)",
            r.summary, r.direct_peers, r.relayed_peers, r.hole_punches, r.hole_punch_failures
        );
        for addr in &r.advertised {
            println!("  advertised   {addr}");
        }
        if r.relay_reservations + r.relay_circuits > 0 || r.relay_circuits_served > 0 {
            println!(
                "  relay        holding {} slots for nodes behind NAT, {} circuits open, {} served",
                r.relay_reservations, r.relay_circuits, r.relay_circuits_served
            );
        }
        let q = &n.search;
        println!(
            "  search       {} summaries known, {} buckets provided; {} queries sent (p50 {:.0} ms, p95 {:.0} ms, {} partial), {} answered, {} busy, {} bad answers",
            q.summaries_known, q.buckets_provided, q.queries, q.ms_p50, q.ms_p95, q.partial, q.answered, q.busy, q.bad_replies
        );
    }
    println!("errors         {}", s.errors_total);
    for (kind, n) in &s.errors {
        println!("  {kind:<20} {n}");
    }
}
