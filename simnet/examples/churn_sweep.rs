//! Churn as a property (issue 32): many seeds, each a real five-node run under its own random
//! churn schedule (kills with their restarts, graceful leaves, joins, always a node killed,
//! restarted and then leaving), the default node configuration, judged from the web server's
//! log: every reachable page fetched, no politeness violation, no repeat a kill does not
//! explain. Prints a line per seed as it ends, then the totals and the seeds that failed with
//! the command that replays each. The CI test (`node/tests/it/simnet_churn.rs`) runs three (1, 2, 29).
//!
//! `cargo build --release -p weft-node -p weft-simnet && cargo run --release -p weft-simnet --example churn_sweep -- [--seeds 30] [--first 1]`

use std::path::PathBuf;
use weft_simnet::sweep::{line, standard, sweep};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let (first, seeds) = (arg("--first", 1), arg("--seeds", 30));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let weft = root.join("target/release/weft");
    assert!(weft.exists(), "build it first: cargo build --release -p weft-node");
    let work = tempfile::Builder::new().prefix("weft-sweep-").tempdir().unwrap().keep();
    let (base, window) = standard(weft, work.clone(), root.join("models"));
    eprintln!("{seeds} seeds from {first}; nodes' logs and data under {}", work.display());
    let runs = match sweep(&base, first..first + seeds, window, |r| println!("{}", line(r))).await {
        Ok(r) => r,
        Err((seed, e)) => panic!("seed {seed} could not run: {e}"),
    };
    let failed: Vec<_> = runs.iter().filter(|r| !r.broken.is_empty()).collect();
    let secs: Vec<f64> = runs.iter().map(|r| r.secs).collect();
    let mut sorted = secs.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{} seeds: {} at 100% coverage, {} held the whole invariant; {} repeats after kills in all, {} unexplained, {} politeness violations; median run {:.0} s",
        runs.len(),
        runs.iter().filter(|r| r.covered == r.reachable).count(),
        runs.len() - failed.len(),
        runs.iter().map(|r| r.repeats_after_kill).sum::<usize>(),
        runs.iter().map(|r| r.repeats_unexplained).sum::<usize>(),
        runs.iter().map(|r| r.politeness_violations).sum::<usize>(),
        sorted.get(sorted.len() / 2).copied().unwrap_or(0.0),
    );
    for r in failed {
        println!("seed {} FAILED: {}", r.seed, r.broken.join("; "));
        println!(
            "  replay: weft-simnet run --nodes 5 --hosts 10 --pages 150 --news-sites 2 --news-articles 12 --duration 400s --until-covered --keep --churn '{}'",
            r.churn
        );
    }
}
