//! Churn schedules drawn at random from a seed: churn as a property, not an example. A
//! hand-written schedule tests the moments its author thought of; the loss issue 32 found
//! needed a node killed, restarted, and leaving later in the crawl than any scenario had it.
//!
//! [`draw`] makes a schedule of kills (each followed by a restart: a node killed for good
//! takes its unacknowledged queue with it, by design), graceful leaves and joins at random
//! times across `span` — always including one node that is killed, restarted and then leaves
//! — with at least two nodes up at every moment. The same seed gives the same schedule, and
//! [`spec`] writes it in the `--churn` syntax, so a failing seed can be replayed by hand.
//! [`verdict`] is the invariant every schedule must keep.

use crate::churn::{self, Action, Event};
use crate::report::Report;
use crate::rng::Rng;
use std::time::Duration;

/// Draws of a schedule.
impl Rng {
    /// Uniform in `lo..=hi` (seconds).
    fn secs(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below_u64(hi.saturating_sub(lo) + 1)
    }

    /// A node that may churn: any but node 0, every other node's bootstrap peer (the
    /// simulator gives them no other; a network whose only bootstrap address is gone is a
    /// test of that, not of churn).
    fn node(&mut self, nodes: usize) -> usize {
        1 + self.below(nodes - 1)
    }

    fn pick(&mut self, n: usize) -> usize {
        self.below(n)
    }
}

/// A random schedule for `nodes` initial nodes whose events start in `from..=span` (a restart
/// or leave may follow its kill up to 90 s later). `nodes` must be at least 3 (two stay up
/// while a third churns).
pub fn draw(seed: u64, nodes: usize, from: Duration, span: Duration) -> Vec<Event> {
    assert!(nodes >= 3, "a churn schedule needs three nodes at least");
    let mut rng = Rng(seed ^ 0x5745_4654); // "WEFT": seed 0 is not all zeros
    let (lo, hi) = (from.as_secs(), span.as_secs().max(from.as_secs() + 30));
    loop {
        let mut events = Vec::new();
        let at = |s: u64, action| Event { at: Duration::from_secs(s), action };
        // The case that lost pages: killed, restarted, and gone for good later.
        let n = rng.node(nodes);
        let kill = rng.secs(lo, lo + (hi - lo) / 2);
        let restart = kill + rng.secs(5, 30);
        let leave = restart + rng.secs(10, 60);
        events.extend([at(kill, Action::Kill(n)), at(restart, Action::Restart(n)), at(leave, Action::Leave(n))]);
        // One to three more: a crash and return, a leave, a join.
        for _ in 0..1 + rng.pick(3) {
            let t = rng.secs(lo, hi);
            match rng.pick(3) {
                0 => {
                    let n = rng.node(nodes);
                    events.push(at(t, Action::Kill(n)));
                    events.push(at(t + rng.secs(5, 30), Action::Restart(n)));
                }
                1 => events.push(at(t, Action::Leave(rng.node(nodes)))),
                _ => events.push(at(t, Action::Join(1))),
            }
        }
        events.sort_by_key(|e| e.at);
        // Drawn blind: keep only what the parser accepts (no node killed twice, none back
        // after leaving) and what leaves two nodes up throughout.
        if churn::parse(&spec(&events), nodes).is_ok_and(|parsed| min_up(&parsed, nodes) >= 2) {
            return churn::parse(&spec(&events), nodes).expect("checked");
        }
    }
}

/// The fewest nodes up at any moment of a (valid, sorted) schedule.
fn min_up(events: &[Event], nodes: usize) -> usize {
    let mut up = nodes as i64;
    let mut least = up;
    for e in events {
        up += match e.action {
            Action::Kill(_) | Action::Leave(_) => -1,
            Action::Restart(_) => 1,
            Action::Join(k) => k as i64,
        };
        least = least.min(up);
    }
    least.max(0) as usize
}

/// A schedule in the `--churn` syntax.
pub fn spec(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| {
            let (name, n) = match e.action {
                Action::Kill(n) => ("kill", n),
                Action::Restart(n) => ("restart", n),
                Action::Join(k) => ("join", k),
                Action::Leave(n) => ("leave", n),
            };
            format!("{name}:{n}@{}s", e.at.as_secs())
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Where a run broke the invariant: every reachable page fetched, no politeness violation, no
/// page fetched twice unless a SIGKILL explains it (the earlier fetch was made by a node
/// killed before the repeat: it died before acknowledging it). Empty: it held.
pub fn verdict(w: &Report) -> Vec<String> {
    let mut broken = Vec::new();
    if w.covered != w.reachable {
        let lost: Vec<&str> = w.lost.iter().take(10).map(String::as_str).collect();
        broken.push(format!("coverage {}/{}: lost {lost:?}", w.covered, w.reachable));
    }
    if !w.politeness_violations.is_empty() {
        broken.push(format!("politeness: {:?}", w.politeness_violations));
    }
    if w.duplicate_fetches > 0 {
        broken.push(format!("fetched twice with no kill to explain it: {:?}", w.unexplained));
    }
    broken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_one_valid_schedule_with_a_kill_restart_and_leave() {
        for seed in 0..500 {
            let a = draw(seed, 5, Duration::from_secs(10), Duration::from_secs(120));
            assert_eq!(a, draw(seed, 5, Duration::from_secs(10), Duration::from_secs(120)), "seed {seed}");
            assert_eq!(churn::parse(&spec(&a), 5).unwrap(), a, "seed {seed}: {}", spec(&a));
            assert!(min_up(&a, 5) >= 2, "seed {seed}: {}", spec(&a));
            assert!(a.iter().all(|e| e.at >= Duration::from_secs(10)), "seed {seed}: {}", spec(&a));
            let churned = |e: &Event| matches!(e.action, Action::Kill(0) | Action::Restart(0) | Action::Leave(0));
            assert!(!a.iter().any(churned), "node 0, the bootstrap peer, stays: {}", spec(&a));
            // Some node is killed, restarted and then leaves.
            let krl = (0..5).any(|n| {
                let pos = |act: Action| a.iter().position(|e| e.action == act);
                matches!(
                    (pos(Action::Kill(n)), pos(Action::Restart(n)), pos(Action::Leave(n))),
                    (Some(k), Some(r), Some(l)) if k < r && r < l
                )
            });
            assert!(krl, "seed {seed}: {}", spec(&a));
            // Every kill is followed by its restart.
            for (i, e) in a.iter().enumerate() {
                if let Action::Kill(n) = e.action {
                    assert!(a[i..].iter().any(|e| e.action == Action::Restart(n)), "seed {seed}: {}", spec(&a));
                }
            }
        }
        let spread: std::collections::HashSet<String> =
            (0..30).map(|s| spec(&draw(s, 5, Duration::from_secs(10), Duration::from_secs(120)))).collect();
        assert!(spread.len() >= 29, "seeds give different schedules");
    }

    #[test]
    fn the_invariant_names_what_broke() {
        let ok = Report {
            reachable: 3,
            covered: 3,
            coverage: 1.0,
            duplicate_fetches: 0,
            duplicate_rate: 0.0,
            duplicates_after_kill: 2,
            repeats_with_a_copy: vec![],
            repeated_pages: Default::default(),
            unexplained: vec![],
            robots_requests: 0,
            sitemap_requests: 0,
            subresource_requests: 0,
            subresource_repeats_by_a_node: 0,
            subresource_max_requests: 0,
            lost: vec![],
            politeness_violations: vec![],
            requests: 3,
            ok_responses: 3,
            coverage_over_time: vec![],
        };
        assert!(verdict(&ok).is_empty(), "repeats a kill explains are allowed");
        let lost = Report { covered: 2, lost: vec!["h.test/c".into()], ..ok.clone() };
        assert!(verdict(&lost)[0].contains("h.test/c"));
        let twice = Report { duplicate_fetches: 1, unexplained: vec!["h.test/a: x, y".into()], ..ok.clone() };
        assert!(verdict(&twice)[0].contains("h.test/a"));
        let rude = Report { politeness_violations: vec!["h.test: /b 3 ms after /a".into()], ..ok };
        assert_eq!(verdict(&rude).len(), 1);
    }
}
