//! The crawl backlog a crash strands. A member that leaves with a last word hands its hosts'
//! queued URLs to their next owners first (`weft stop`); one that vanishes (a crash, a power
//! cut) keeps them on its disk, and its hosts' next owners start without them. Its queue comes
//! back with it — the restarted node hands the hosts it no longer owns to their owners — or
//! never, when the volunteer does not return. Links found later bring many of those URLs back;
//! this counts what the design itself keeps or loses.
//!
//! Each crashed member holds its share of the network's backlog: one member's share of the
//! hosts, 1 / the members at the time. Two designs are measured on the same crashes: a queue
//! held by its owner alone, stranded until its member comes back (lost if it never does), and
//! the frontier the node runs, each host's queue also kept by its next owner on the ring (its
//! second holder: `weft_frontier::SecondCopy`), where it is stranded only until two monitors
//! sign the death and the second holder, holding the queue already, takes the hosts.

use std::collections::HashMap;

/// One crash of a member that owned hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Strand {
    /// The member's share of the hosts when it crashed.
    share: f64,
    crashed: f64,
    /// When its death was signed (its hosts went to their next owners on every ring).
    declared: Option<f64>,
    /// When it came back (and handed its queue on).
    back: Option<f64>,
    /// Whether it comes back at all (a newcomer of a burst does not).
    returns: bool,
}

/// The crashes of a run.
#[derive(Debug, Default)]
pub struct Strands {
    list: Vec<Strand>,
    open: HashMap<u32, usize>,
}

/// What the crashes stranded over a measured span.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Backlog {
    /// Crashes of members a member-hour.
    pub crashes_per_member_hour: f64,
    /// The share of the network's backlog stranded on a disk offline, on average over the
    /// span: with each queue held by its owner alone, and also kept by a second member (the
    /// node's design).
    pub stranded: f64,
    pub stranded_kept_twice: f64,
    /// Over the crashed members that came back within the run: how long their backlog waited,
    /// median and 90th percentile, in minutes.
    pub back_p50_min: f64,
    pub back_p90_min: f64,
    /// The share of the network's backlog lost over the span: on members that crashed and never
    /// come back (newcomers of a burst; the run has one, halfway), held by the owner alone. Kept
    /// twice, a queue is lost
    /// only when both its holders vanish before the death of the first is signed, which this
    /// does not count.
    pub lost: f64,
}

impl Strands {
    /// Member `i`, owning `share` of the hosts, vanished at `now`.
    pub fn crashed(&mut self, i: u32, share: f64, now: f64, returns: bool) {
        self.open.insert(i, self.list.len());
        self.list.push(Strand { share, crashed: now, declared: None, back: None, returns });
    }

    /// The death of member `i` was signed at `now`.
    pub fn declared(&mut self, i: u32, now: f64) {
        if let Some(s) = self.open.get(&i).map(|k| &mut self.list[*k]) {
            s.declared.get_or_insert(now);
        }
    }

    /// Member `i` came back at `now`: its queue goes on to its hosts' owners.
    pub fn back(&mut self, i: u32, now: f64) {
        if let Some(k) = self.open.remove(&i) {
            self.list[k].back = Some(now);
        }
    }

    /// The figures over `[from, until)` (seconds).
    pub fn measure(&self, from: f64, until: f64, member_secs: f64) -> Backlog {
        let span = (until - from).max(1.0);
        let overlap = |a: f64, b: f64| (b.min(until) - a.max(from)).max(0.0);
        let within: Vec<&Strand> = self.list.iter().filter(|s| s.crashed >= from && s.crashed < until).collect();
        let stranded =
            self.list.iter().map(|s| s.share * overlap(s.crashed, s.back.unwrap_or(until))).sum::<f64>() / span;
        let kept_twice = self
            .list
            .iter()
            .map(|s| {
                let end = [s.declared, s.back].into_iter().flatten().fold(until, f64::min);
                s.share * overlap(s.crashed, end)
            })
            .sum::<f64>()
            / span;
        let mut waits: Vec<f64> = within.iter().filter_map(|s| s.back.map(|b| (b - s.crashed) / 60.0)).collect();
        waits.sort_by(f64::total_cmp);
        let lost: f64 = within.iter().filter(|s| !s.returns).map(|s| s.share).sum();
        Backlog {
            crashes_per_member_hour: within.len() as f64 / (member_secs / 3600.0).max(1e-9),
            stranded,
            stranded_kept_twice: kept_twice,
            back_p50_min: crate::scale::quantile(&waits, 0.5).unwrap_or(0.0),
            back_p90_min: crate::scale::quantile(&waits, 0.9).unwrap_or(0.0),
            lost,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Strands;

    #[test]
    fn a_crash_strands_its_share_until_it_comes_back_or_its_death_is_signed_when_kept_twice() {
        let mut s = Strands::default();
        // A hundredth of the hosts, from 100 s to 700 s; its death signed at 120 s.
        s.crashed(7, 0.01, 100.0, true);
        s.declared(7, 120.0);
        s.back(7, 700.0);
        // A newcomer's fiftieth, from 500 s, never back, its death signed at 530 s.
        s.crashed(9, 0.02, 500.0, false);
        s.declared(9, 530.0);
        let b = s.measure(0.0, 1000.0, 100.0 * 1000.0);
        let stranded = (0.01 * 600.0 + 0.02 * 500.0) / 1000.0;
        assert!((b.stranded - stranded).abs() < 1e-12, "{b:?}");
        let twice = (0.01 * 20.0 + 0.02 * 30.0) / 1000.0;
        assert!((b.stranded_kept_twice - twice).abs() < 1e-12, "{b:?}");
        assert!((b.back_p50_min - 10.0).abs() < 1e-12);
        assert!((b.lost - 0.02).abs() < 1e-12, "{b:?}");
        assert!((b.crashes_per_member_hour - 2.0 / (100_000.0 / 3600.0)).abs() < 1e-9);
    }

    #[test]
    fn only_the_span_measured_counts() {
        let mut s = Strands::default();
        s.crashed(1, 0.1, 0.0, true);
        s.back(1, 200.0);
        let b = s.measure(100.0, 300.0, 1.0);
        // Stranded from 100 s to 200 s of a 200 s span; the crash itself before the span.
        assert!((b.stranded - 0.1 * 0.5).abs() < 1e-12);
        assert_eq!((b.crashes_per_member_hour, b.back_p50_min), (0.0, 0.0));
    }
}
