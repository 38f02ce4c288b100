//! The roster as the live nodes report it, sampled at each look at their statuses: do the nodes
//! up hold the same roster, does each node's ring hold its roster's members, and how soon was
//! every node a member of it.

use serde::Serialize;
use std::time::Instant;

/// What the samples add up to.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct RosterReport {
    /// Looks at the statuses with at least the run's starting number of nodes up, and of them
    /// those where every node up was a roster member.
    pub samples: u64,
    pub all_members: u64,
    /// Of those, the share where every node up held the same roster ...
    pub same_roster: f64,
    /// ... and the share where every node's ring held its roster's members.
    pub ring_follows: f64,
    /// Seconds from the first node's start until every node up was first a roster member, with
    /// the run's starting number of nodes up.
    pub all_members_after_secs: Option<f64>,
    /// Nodes up that were not roster members at the last look, and their stages.
    pub not_members_at_end: Vec<String>,
    /// Roster events the nodes refused, in all (at the last look at each).
    pub refused_events: u64,
    /// The longest stretch of looks at which the nodes up that are members held unlike
    /// rosters: seconds from the first node's start to its first look, and its length (a
    /// stretch that ends the run counts to its last look). A ring disagreement the crawl pays
    /// for in hosts crawled by two members at once. (Nodes outside the roster, such as one
    /// back from a crash on its probation, are left out of the comparison, not the look.)
    pub longest_apart: Option<(f64, f64)>,
}

#[derive(Debug)]
pub struct RosterWatch {
    started: Instant,
    report: RosterReport,
    same: u64,
    matched: u64,
    /// When the current stretch of unlike rosters began (seconds from the start).
    apart_since: Option<f64>,
}

impl RosterWatch {
    pub fn new(started: Instant) -> RosterWatch {
        RosterWatch { started, report: RosterReport::default(), same: 0, matched: 0, apart_since: None }
    }

    /// One look at the statuses of the nodes up; `expected`: how many the run starts with.
    pub fn sample(&mut self, statuses: &[&serde_json::Value], expected: usize) {
        let roster = |s: &serde_json::Value| s["network"]["roster"].clone();
        let rosters: Vec<serde_json::Value> = statuses.iter().map(|s| roster(s)).collect();
        self.report.refused_events = rosters.iter().map(|r| r["refused_events"].as_u64().unwrap_or(0)).sum();
        self.report.not_members_at_end = (statuses.iter().zip(&rosters))
            .filter(|(_, r)| r["stage"] != "member")
            .map(|(s, r)| {
                let stage = r["stage"].as_str().unwrap_or("?");
                format!("{} {stage}", s["network"]["peer_id"].as_str().unwrap_or("?"))
            })
            .collect();
        let at = self.started.elapsed().as_secs_f64();
        let members: Vec<&serde_json::Value> = rosters.iter().filter(|r| r["stage"] == "member").collect();
        if members.iter().all(|r| r["fingerprint"] == members[0]["fingerprint"]) {
            self.apart_since = None;
        } else {
            let from = *self.apart_since.get_or_insert(at);
            if self.report.longest_apart.is_none_or(|(_, secs)| at - from > secs) {
                self.report.longest_apart = Some((from, at - from));
            }
        }
        if statuses.len() < expected.max(1) {
            return;
        }
        self.report.samples += 1;
        if !rosters.iter().all(|r| r["stage"] == "member") {
            return;
        }
        self.report.all_members += 1;
        if self.report.all_members_after_secs.is_none() {
            self.report.all_members_after_secs = Some(at);
        }
        if rosters.iter().all(|r| r["fingerprint"] == rosters[0]["fingerprint"]) {
            self.same += 1;
        }
        let on_ring = |s: &serde_json::Value| s["network"]["members"].as_array().map_or(0, Vec::len) as u64;
        if statuses.iter().zip(&rosters).all(|(s, r)| r["members"].as_u64() == Some(on_ring(s))) {
            self.matched += 1;
        }
        let n = self.report.all_members as f64;
        (self.report.same_roster, self.report.ring_follows) = (self.same as f64 / n, self.matched as f64 / n);
    }

    pub fn report(&self) -> RosterReport {
        self.report.clone()
    }
}

/// The report in a line.
pub fn roster_line(r: &RosterReport) -> String {
    let after = r.all_members_after_secs.map_or("never".into(), |s| format!("after {s:.0} s"));
    let apart = r.longest_apart.map_or("never".into(), |(from, secs)| format!("{secs:.0} s from {from:.0} s"));
    format!(
        "every node a roster member {after}; {} of {} looks with every node up a member, of which {:.1}% with every node's roster alike and {:.1}% with each ring holding its roster's members; {} roster events refused; the members' rosters longest unlike: {apart}; not members at the end: {}",
        r.all_members,
        r.samples,
        100.0 * r.same_roster,
        100.0 * r.ring_follows,
        r.refused_events,
        if r.not_members_at_end.is_empty() { "none".to_string() } else { r.not_members_at_end.join(", ") }
    )
}

#[cfg(test)]
mod tests {
    use super::RosterWatch;
    use serde_json::json;

    /// A node's status: its roster of three members (its ring lacks `missing` of them).
    fn status(peer: &str, stage: &str, print: &str, missing: usize) -> serde_json::Value {
        let ring: Vec<&str> = ["a", "b", "c"][..3 - missing].to_vec();
        json!({"network": {"peer_id": peer, "members": ring, "roster": {
            "stage": stage, "fingerprint": print, "members": 3, "refused_events": 1
        }}})
    }

    #[test]
    fn looks_count_from_when_every_starting_node_is_up_and_name_the_nodes_outside() {
        let mut watch = RosterWatch::new(std::time::Instant::now());
        let a = status("a", "member", "f1", 0);
        watch.sample(&[&a], 3);
        assert_eq!(watch.report().samples, 0, "one node of three up");
        let (b, c) = (status("b", "member", "f1", 0), status("c", "probation", "f2", 1));
        watch.sample(&[&a, &b, &c], 3);
        let r = watch.report();
        assert_eq!((r.samples, r.all_members, r.refused_events), (1, 0, 3));
        assert_eq!(r.not_members_at_end, vec!["c probation".to_string()]);
        assert_eq!(r.longest_apart, None, "a node outside the roster holds a roster of its own");
        let c = status("c", "member", "f1", 0);
        watch.sample(&[&a, &b, &c], 3);
        let c2 = status("c", "member", "f2", 1);
        watch.sample(&[&a, &b, &c2], 3);
        let r = watch.report();
        assert_eq!((r.samples, r.all_members, r.same_roster, r.ring_follows), (3, 2, 0.5, 0.5));
        assert_eq!(r.longest_apart.map(|(_, secs)| secs), Some(0.0), "one look apart");
        std::thread::sleep(std::time::Duration::from_millis(20));
        watch.sample(&[&a, &b, &c2], 3);
        let (from, secs) = watch.report().longest_apart.unwrap();
        assert!(secs >= 0.02 && from < 1.0, "two looks apart: {secs} s");
        watch.sample(&[&a, &b, &c], 3);
        watch.sample(&[&a, &b, &c2], 3);
        assert_eq!(watch.report().longest_apart.unwrap(), (from, secs), "a shorter stretch after");
        assert!(r.all_members_after_secs.is_some() && r.not_members_at_end.is_empty());
    }
}
