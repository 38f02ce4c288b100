//! `weft-simnet`: the synthetic web and the network simulator.
//!
//! - `serve`: the small generated web on loopback, for manual crawls;
//! - `run`: many real `weft` nodes crawling the PostgreSQL-manual web under churn, judged from
//!   the server's log, with a JSON report and an SVG chart;
//! - `demo`: three nodes, a minute of crawling with a progress bar, then searches (what
//!   `weft demo` and the README's main command run).

//! - `scale`, `scale-plot`, `data-plane`: the network at sizes this machine cannot run, on
//!   virtual time.
//!
//! `crawl.rs` runs the crawling commands (real nodes on the synthetic web), `scale.rs` the
//! simulations at scale.

mod crawl;
mod scale;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "weft-simnet", about = "Weft's synthetic web and network simulator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
pub(crate) struct Common {
    /// The weft binary; default: `weft` beside this program.
    #[arg(long)]
    pub(crate) weft: Option<PathBuf>,
    /// Where node data dirs, configs and logs go; default: a fresh temporary directory
    /// (removed afterwards unless --keep).
    #[arg(long)]
    pub(crate) work_dir: Option<PathBuf>,
    /// Keep the work dir (node logs, data) after the run.
    #[arg(long)]
    pub(crate) keep: bool,
    /// The documentation HTML the web is built from (env WEFT_SIMNET_DOCS).
    #[arg(long)]
    pub(crate) docs: Option<PathBuf>,
    /// The directory scripts/setup.sh filled with the model files.
    #[arg(long, default_value = "models")]
    pub(crate) models: PathBuf,
    /// The web's seed: which pages are served and how they link.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Each node's politeness delay between requests to one host.
    #[arg(long, default_value_t = 250)]
    pub(crate) delay_ms: u64,
}

#[derive(Subcommand)]
enum Command {
    /// Serve generated sites `site0.test` … (and, with --topics, `topics.test`) on 127.0.0.1
    /// (virtual hosts by Host header) until interrupted. Prints `<host> <seed URL>` per host.
    Serve(crawl::ServeArgs),
    /// Run N weft nodes against the synthetic web with churn, and report.
    Run(crawl::RunArgs),
    /// Churn as a property: one run per seed, each under a random schedule drawn from the
    /// seed (kills with their restarts, leaves, joins, and always a node killed, restarted and
    /// then leaving), each judged by the invariant: every reachable page fetched, no
    /// politeness violation, no repeat a kill does not explain. Prints the seeds that fail
    /// and how to replay them; exits 1 if any did.
    Sweep(crawl::SweepArgs),
    /// Three nodes on loopback crawl the synthetic web for about a minute, then answer searches.
    Demo(crawl::DemoArgs),
    /// The data plane at scale: the peers each member is connected to for URLs, postings,
    /// records and copies, from one window of every member's traffic on the real ring and the
    /// real placement (no sockets). Prints a Markdown table; writes the figures as JSON with --out.
    DataPlane(scale::DataPlaneArgs),
    /// Draws `scale.svg` and prints the tables from the JSON of earlier `scale` runs.
    ScalePlot(scale::ScalePlotArgs),
    /// The network at scale, simulated on virtual time (no sockets): today's membership design
    /// and the roster's at each size, measured per member. Prints a Markdown table; writes every
    /// run's figures as JSON and a plot with --out.
    Scale(scale::ScaleArgs),
}

fn main() {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    let result = rt.block_on(async {
        match cli.command {
            Command::Serve(args) => crawl::serve(args).await,
            Command::Run(args) => crawl::run(args).await,
            Command::Sweep(args) => crawl::sweep(args).await,
            Command::Demo(args) => crawl::demo(args).await,
            Command::Scale(args) => scale::scale(args),
            Command::ScalePlot(args) => scale::scale_plot(&args.from, &args.out),
            Command::DataPlane(args) => scale::data_plane(args),
        }
    });
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
