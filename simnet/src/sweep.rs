//! The churn sweep: one real run per seed, each under its own random schedule
//! ([`crate::schedule::draw`]), each judged by the invariant ([`crate::schedule::verdict`]).
//! `weft-simnet sweep`, the `churn_sweep` example and the CI test all run this.

use crate::docs::WebSpec;
use crate::runner::{self, RunError, RunSpec};
use crate::schedule;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// What one seed's run showed.
#[derive(Debug, Clone, Serialize)]
pub struct SeedRun {
    pub seed: u64,
    /// The schedule, as `--churn` takes it (replay: `weft-simnet run --churn '…'` with the
    /// same web and nodes).
    pub churn: String,
    pub covered: usize,
    pub reachable: usize,
    /// Repeats a kill explains (allowed), and those it does not (must be 0).
    pub repeats_after_kill: usize,
    pub repeats_unexplained: usize,
    pub politeness_violations: usize,
    pub secs: f64,
    /// How long the first members took to form a network, before the schedule's clock started.
    pub formed_secs: f64,
    /// What broke the invariant; empty when it held.
    pub broken: Vec<String>,
    /// The roster as the nodes reported it (see `runner::roster_line`): a broken seed's first
    /// clue, since two members crawl one host only while their rings differ.
    pub roster: String,
}

/// The schedules' events start `from` into the run and end by `span`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub from: Duration,
    pub span: Duration,
}

/// The sweep as shipped: five nodes, ten manual hosts (every pathology but the mirrors'
/// second half) and two news sites (196 reachable pages; the churn, not the size, is the
/// question), the default node configuration, 400 s at most per run (a bound: a run ends once
/// everything is fetched); schedules within 10–60 s of the crawl's start.
pub fn standard(weft: PathBuf, work_dir: PathBuf, models: PathBuf) -> (RunSpec, Window) {
    let spec = RunSpec {
        weft,
        work_dir,
        nodes: 5,
        web: WebSpec { hosts: 10, pages: 150, seed: 1, news_sites: 2, news_articles: 12, ..WebSpec::default() },
        docs: crate::docs::docs_dir(),
        duration: Duration::from_secs(400),
        churn: Vec::new(),
        delay_ms: 250,
        index: true,
        models,
        until_covered: true,
        search: None,
    };
    (spec, Window { from: Duration::from_secs(10), span: Duration::from_secs(60) })
}

/// Runs `base` (web, nodes, defaults) once per seed, each in `base.work_dir/seed-N` under the
/// seed's schedule, calling `done` after each. A run that could not be carried out (a node
/// that would not start) counts as a failed seed with its error; only a work dir that cannot
/// be made ends the sweep.
pub async fn sweep(
    base: &RunSpec,
    seeds: impl IntoIterator<Item = u64>,
    window: Window,
    mut done: impl FnMut(&SeedRun),
) -> Result<Vec<SeedRun>, (u64, RunError)> {
    let mut runs = Vec::new();
    for seed in seeds {
        let events = schedule::draw(seed, base.nodes, window.from, window.span);
        let spec = RunSpec {
            work_dir: base.work_dir.join(format!("seed-{seed}")),
            churn: events.clone(),
            until_covered: true,
            ..base.clone()
        };
        std::fs::create_dir_all(&spec.work_dir).map_err(|e| (seed, RunError::Io(e.to_string())))?;
        let report = match runner::run(&spec, |_| {}).await {
            Ok(r) => r,
            // A run the harness could not carry out (a node that would not start) fails its
            // seed, named, and the sweep goes on with the next.
            Err(e) => {
                let run = SeedRun {
                    seed,
                    churn: schedule::spec(&events),
                    covered: 0,
                    reachable: 0,
                    repeats_after_kill: 0,
                    repeats_unexplained: 0,
                    politeness_violations: 0,
                    secs: 0.0,
                    formed_secs: 0.0,
                    broken: vec![format!("the run could not be carried out: {e}")],
                    roster: String::new(),
                };
                done(&run);
                runs.push(run);
                continue;
            }
        };
        let w = &report.web;
        let run = SeedRun {
            seed,
            churn: schedule::spec(&events),
            covered: w.covered,
            reachable: w.reachable,
            repeats_after_kill: w.duplicates_after_kill,
            repeats_unexplained: w.duplicate_fetches,
            politeness_violations: w.politeness_violations.len(),
            secs: report.elapsed_secs,
            formed_secs: report.formed_secs,
            broken: schedule::verdict(w),
            roster: runner::roster_line(&report.roster),
        };
        done(&run);
        runs.push(run);
    }
    Ok(runs)
}

/// One line per seed, for a terminal or a log.
pub fn line(r: &SeedRun) -> String {
    format!(
        "seed {:>3}  {}  {}/{} pages  {} repeats after kills, {} unexplained  {} politeness  {:.0} s (formed in {:.0})  [{}]",
        r.seed,
        if r.broken.is_empty() { "ok  " } else { "FAIL" },
        r.covered,
        r.reachable,
        r.repeats_after_kill,
        r.repeats_unexplained,
        r.politeness_violations,
        r.secs,
        r.formed_secs,
        r.churn
    )
}
