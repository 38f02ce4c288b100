//! The command line: every command, its flags and their help (clap).

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "weft", version, about = "A peer-to-peer crawling and semantic-search node")]
pub(super) struct Cli {
    /// Log output format (the filter comes from RUST_LOG, default "info").
    #[arg(long, global = true, value_enum)]
    pub(super) log_format: Option<LogFormatArg>,
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub(super) enum LogFormatArg {
    Text,
    Json,
}

#[derive(Args, Clone, Default)]
pub(super) struct ConfigArgs {
    /// Data directory (default .weft; env WEFT_DATA_DIR).
    #[arg(long, global = true)]
    pub(super) data_dir: Option<PathBuf>,
    /// TOML config file (default: <data-dir>/weft.toml if it exists; the Debian package's
    /// `weft` sets WEFT_CONFIG=/etc/weft/weft.toml).
    #[arg(long, global = true, env = "WEFT_CONFIG")]
    pub(super) config: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(super) enum Command {
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
        /// Where site owners can reach you: an https:// page or a mailto: address, sent in the
        /// User-Agent (fetch.contact_url). Required to crawl the public web.
        #[arg(long, value_name = "URL")]
        contact: Option<String>,
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
        what: weft_content::export::What,
        #[arg(long, value_enum, default_value = "jsonl")]
        format: weft_content::export::Format,
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
        /// Also the copies this node holds for other members' documents (after its own), each
        /// marked `held: replica` with the peer that crawled it; its own are `held: primary`.
        #[arg(long)]
        copies: bool,
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
    /// Join a network, as a service: writes the members to join through (and --contact) into
    /// the config file, keeping its comments; checks that a member answers; enables and starts
    /// the systemd service; waits for the network's verdict on how it reaches this node and
    /// prints the dashboard's address. The file is unchanged when a check fails.
    Join {
        #[command(flatten)]
        cfg: ConfigArgs,
        /// A member's address, a multiaddr ending in /p2p/<peer id> as its log prints it
        /// (repeatable); replaces p2p.bootstrap.
        #[arg(required = true)]
        bootstrap: Vec<String>,
        /// Where site owners can reach you: an https:// page or a mailto: address
        /// (fetch.contact_url). Required unless the config has one.
        #[arg(long)]
        contact: Option<String>,
        /// The systemd unit to enable and start.
        #[arg(long, default_value = "weft")]
        service: String,
        /// Write and check the config only; leave the service alone.
        #[arg(long)]
        no_start: bool,
        /// Seconds to wait for the network's verdict on the started node.
        #[arg(long, default_value_t = 90)]
        wait_secs: u64,
    },
    /// Inspect configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Write weft's man pages (weft.1 and one per command) into a directory: the Debian
    /// package ships them.
    #[command(hide = true)]
    Manpages { dir: PathBuf },
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
pub(super) enum TemplatesCommand {
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
pub(super) enum ConfigCommand {
    /// Print the effective configuration (defaults < file < env < flags) as TOML.
    Show {
        #[command(flatten)]
        cfg: ConfigArgs,
    },
    /// Validate one TOML file.
    Check { file: PathBuf },
}
