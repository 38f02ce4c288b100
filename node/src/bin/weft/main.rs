//! `weft`: the command-line interface of a Weft node.

use anyhow::Context;
use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weft_config::{LogFormat, Overrides, Sources};
use weft_node::api::Scope;

mod cli;
mod search;
mod start;
mod status;

use cli::*;
use search::*;
use start::*;
use status::*;

fn sources(cfg: &ConfigArgs, overrides: Overrides) -> Sources {
    Sources {
        config_file: cfg.config.clone(),
        read_env: true,
        overrides: Overrides { data_dir: cfg.data_dir.clone(), ..overrides },
        install_dirs: install_dirs(),
    }
}

/// The binary's directory and the two above it, where relative model paths are looked for
/// (`Sources::install_dirs`): `/usr/lib/weft/weft` finds the package's `/usr/lib/weft/models`,
/// `target/release/weft` the checkout's `models/`. Symbolic links (`/usr/bin/weft`) are
/// followed to the real binary. Last, the checkout the binary was built from, for a build whose
/// target dir lives elsewhere (`CARGO_TARGET_DIR=/tmp/...`); on any other machine that path is
/// not there and is passed over.
fn install_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match std::env::current_exe().and_then(std::fs::canonicalize) {
        Ok(exe) => exe.ancestors().skip(1).take(3).map(PathBuf::from).collect(),
        Err(_) => Vec::new(),
    };
    dirs.push(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    dirs
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
    weft_node::tune_malloc();
    let cli = Cli::parse();
    // A long-running node (and only it) drops glibc's per-thread caches: see the function.
    // Parsing starts no thread, so this is still before any.
    if matches!(cli.command, Command::Start { .. }) {
        weft_node::drop_thread_caches();
    }
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
        Command::Start { cfg, seeds, api_listen, bootstrap, p2p, contact, exit_when_idle } => {
            let overrides = Overrides { seeds, api_listen, log_format, bootstrap, p2p, contact, ..Default::default() };
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
        Command::Search { cfg, query, k, local, api, json } => search_command(cfg, query, k, local, api, json),
        Command::Export { cfg, what, format, output, cursor, host, since, api, copies, quiet } => {
            export_command(cfg, what, format, output, cursor, host, since, api, copies, quiet)
        }
        Command::Mcp { cfg, api } => {
            let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
            let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
            runtime.block_on(weft_content::mcp::serve(api.unwrap_or(config.api.listen)))?;
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
        Command::Demo { args } => demo(args),
        Command::Join { cfg, bootstrap, contact, service, no_start, wait_secs } => {
            let sources = sources(&cfg, Overrides::default());
            // The file the node reads: --config (or WEFT_CONFIG), else <data dir>/weft.toml.
            let file = match &cfg.config {
                Some(file) => file.clone(),
                None => weft_config::load(&sources)?.data_dir.join("weft.toml"),
            };
            let request = weft_node::join::Request {
                file,
                bootstrap,
                contact,
                service: (!no_start).then_some(service),
                wait: Duration::from_secs(wait_secs),
                sources,
            };
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(weft_node::join::run(request, &mut std::io::stdout()))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Manpages { dir } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            clap_mangen::generate_to(<Cli as clap::CommandFactory>::command(), &dir)
                .with_context(|| format!("writing the man pages into {}", dir.display()))?;
            Ok(ExitCode::SUCCESS)
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

/// `weft search`: the running node's API, else the data dir searched offline.
fn search_command(
    cfg: ConfigArgs,
    query: Vec<String>,
    k: usize,
    local: bool,
    api: Option<std::net::SocketAddr>,
    json: bool,
) -> anyhow::Result<ExitCode> {
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
            search_offline(&config, &query, k)
                .with_context(|| format!("no weft node answers at {addr}, and the data dir could not be searched"))?
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

/// `weft export`, and what it says it wrote.
#[allow(clippy::too_many_arguments)]
fn export_command(
    cfg: ConfigArgs,
    what: weft_content::export::What,
    format: weft_content::export::Format,
    output: std::path::PathBuf,
    cursor: Option<String>,
    host: Option<String>,
    since: Option<String>,
    api: Option<std::net::SocketAddr>,
    copies: bool,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    let config = weft_config::load(&sources(&cfg, Overrides::default()))?;
    let request = weft_content::export::Request {
        what,
        format,
        output,
        cursor,
        host,
        since,
        api: api.unwrap_or(config.api.listen),
        progress: !quiet,
        copies,
    };
    let done = weft_content::export::command(&config, request)?;
    let resume = done.cursor.map(|c| format!("; the last was {c} (--cursor resumes after it)")).unwrap_or_default();
    if matches!(format, weft_content::export::Format::Warc) {
        eprintln!(
            "exported {} documents as WARC; {} had no kept response (crawl.keep_responses){resume}",
            done.documents, done.urls
        );
    } else if what == weft_content::export::What::Urls {
        eprintln!("exported {} URL outcomes{resume}", done.urls);
    } else {
        let copies =
            if done.copies > 0 { format!(", {} of them copies held for others", done.copies) } else { String::new() };
        eprintln!("exported {} documents ({} chunks){copies}{resume}", done.documents, done.chunks);
    }
    Ok(ExitCode::SUCCESS)
}

/// `weft demo`: runs the `weft-simnet` program built beside this binary.
fn demo(args: Vec<String>) -> anyhow::Result<ExitCode> {
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
