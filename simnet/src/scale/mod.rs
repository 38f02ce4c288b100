//! The network at sizes no single machine can run live: thousands of members, their churn and
//! their links simulated on virtual time, with Weft's real membership state machine where it
//! is measured.
//!
//! A run is one [`Scenario`] — how many members are online on average, for how long, the churn
//! ([`sessions`]), the share behind NAT — deterministic from its seed. [`today`] simulates the
//! design the live network runs now; what it measures comes back as [`Figures`] and is
//! summarised per run as a [`Summary`], the rows of the book's tables.
//!
//! ```sh
//! cargo run --release -p weft-simnet -- scale --members 100,1000,3000 --minutes 30
//! ```

pub mod compact;
pub mod data_plane;
pub mod gossip;
pub mod heartbeats;
mod member;
pub mod rings;
pub mod roster;
pub mod sessions;
pub mod today;

use serde::{Deserialize, Serialize};
use sessions::SessionModel;

/// One simulated network.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Members online at any time, on average.
    pub members: usize,
    /// Simulated minutes, of which the first `warmup_minutes` are not measured and the last
    /// `quiet_minutes` have no joins or leaves (ring disagreement after the last change).
    pub minutes: f64,
    pub warmup_minutes: f64,
    pub quiet_minutes: f64,
    pub seed: u64,
    /// Members running the real `Members` table (of the always-on core).
    pub observers: usize,
    /// The share of members behind NAT (the always-on core is public).
    pub nat_share: f64,
    /// The share of hole punches that make a relayed connection direct.
    pub punch: f64,
    /// Hosts whose owners the observers' rings are compared on.
    pub hosts: usize,
    pub sessions: SessionModel,
    /// No churn: the members arrive over the first minute and stay (to compare with a live
    /// run of the same size).
    pub stable: bool,
    /// Members gossip routing summaries (a member with an index does; `weft-simnet run
    /// --no-index` has none).
    pub summaries: bool,
    /// `p2p.heartbeat_secs` (the event loop's tick too) and `p2p.missed_heartbeats`.
    pub heartbeat_secs: f64,
    pub missed_heartbeats: u32,
    /// A share of the members cut off from the rest for a while.
    pub partition: Option<Partition>,
    /// The roster design's anti-entropy round: each member compares with one of its view.
    pub round_secs: f64,
    /// The roster design with every member's real roster and the real exchanges (up to a
    /// thousand members or so: 10,000 rosters of 10,000 entries do not fit).
    pub real_everywhere: bool,
    /// The odds that a request-response exchange of the roster's is lost after its first
    /// message (and that a leaving member's last word to a view member is).
    pub loss: f64,
    /// The roster design's views drawn at random, as the roster alone draws them, instead of
    /// among the data plane's grid links (what a network past
    /// `weft_p2p::grid::FROM_MEMBERS` members does).
    pub random_views: bool,
}

/// A partition: `share` of the members (observers among them) cannot reach the others from
/// `from_minute` for `minutes`; connections across it close when it begins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Partition {
    pub share: f64,
    pub from_minute: f64,
    pub minutes: f64,
}

impl Partition {
    /// Whether member `i` of a run under `seed` is on the cut-off side: a share of the members
    /// by a hash of their index (observers among them).
    pub fn holds(&self, seed: u64, i: u32) -> bool {
        let h = blake3::hash(&(u64::from(i) ^ seed.rotate_left(17)).to_le_bytes());
        (u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes")) as f64 / u64::MAX as f64) < self.share
    }
}

impl std::str::FromStr for Partition {
    type Err = String;

    /// `SHARE@FROM+MINUTES`, e.g. `0.3@10+5`.
    fn from_str(s: &str) -> Result<Partition, String> {
        let bad = || format!("{s:?}: a partition is SHARE@FROM_MINUTE+MINUTES, e.g. 0.3@10+5");
        let (share, rest) = s.split_once('@').ok_or_else(bad)?;
        let (from, minutes) = rest.split_once('+').ok_or_else(bad)?;
        let number = |x: &str| x.trim().parse::<f64>().map_err(|_| bad());
        let p = Partition { share: number(share)?, from_minute: number(from)?, minutes: number(minutes)? };
        if !(0.0..=1.0).contains(&p.share) || p.from_minute < 0.0 || p.minutes <= 0.0 {
            return Err(bad());
        }
        Ok(p)
    }
}

impl Scenario {
    pub fn new(members: usize, minutes: f64, seed: u64) -> Scenario {
        Scenario {
            members,
            minutes,
            warmup_minutes: (minutes / 4.0).clamp(1.0, 30.0),
            quiet_minutes: 3.0_f64.min(minutes / 4.0),
            seed,
            observers: 16,
            nat_share: 0.6,
            punch: 0.7,
            hosts: 2000,
            sessions: SessionModel::default(),
            stable: false,
            summaries: true,
            heartbeat_secs: 5.0,
            missed_heartbeats: 4,
            partition: None,
            round_secs: 2.0,
            real_everywhere: false,
            loss: 0.0,
            random_views: false,
        }
    }
}

/// What a run measured: per member-minute rates, per-minute ring comparisons, per-join times.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    /// Bytes a second up and down, and messages a second, of each member online for a whole
    /// measured minute.
    pub up: Vec<f64>,
    pub down: Vec<f64>,
    pub msgs: Vec<f64>,
    /// Connections each online member held at each minute's end.
    pub connections: Vec<f64>,
    /// Members online at each minute's end.
    pub online: Vec<f64>,
    /// Share of hosts two observers give different owners, each minute (over all pairs).
    pub disagreement: Vec<f64>,
    /// Share of hosts whose owner on an observer's ring is not online.
    pub owner_gone: Vec<f64>,
    /// Share of hosts whose owner on an observer's ring is not their owner on the ring of every
    /// event made so far (the roster design): URLs it sends there go to a former or not-yet
    /// owner, who hands them on.
    pub misrouted: Vec<f64>,
    /// Roster exchanges lost after their digest.
    pub lost_exchanges: u64,
    /// An observer's member count over the members online.
    pub view: Vec<f64>,
    /// In the quiet span at the end: (seconds since the last join or leave, disagreement).
    pub quiet_disagreement: Vec<(f64, f64)>,
    /// Seconds from a member's arrival until it was on every observer's ring.
    pub join_secs: Vec<f64>,
    /// Seconds from a roster event's making until every observer's roster had it (the roster).
    pub spread_secs: Vec<f64>,
    /// Member changes the observers' tables made (today), roster events made (the roster).
    pub ring_changes: u64,
    /// Roster events an observer's real roster refused for good (none if the rules hold).
    pub refused_events: u64,
    /// Roster events not yet held by every member online, each minute.
    pub in_flight: Vec<f64>,
    pub identities: usize,
    pub heartbeat_bytes: usize,
    pub summary_bytes: usize,
    /// Copies of a heartbeat and of a summary each member receives from the mesh.
    pub copies_small: f64,
    pub copies_large: f64,
    pub dials: u64,
    pub refused_dials: u64,
    /// Bytes all members received while measured, by what carried them.
    pub received: Received,
    /// The crawl backlog crashes stranded (the roster design).
    pub backlog: Option<roster::strands::Backlog>,
    pub wall_secs: f64,
}

/// Bytes received network-wide by kind, and the member-seconds they were received over.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Received {
    pub heartbeats: f64,
    pub summaries: f64,
    pub ihave: f64,
    pub handshakes: f64,
    pub pings: f64,
    /// The roster design's digests and key lists, events, and newcomers' roster pages.
    pub digests: f64,
    pub events: f64,
    pub snapshots: f64,
    pub member_secs: f64,
}

impl Received {
    /// Bytes a second a member received of each kind, on average, with the kinds' names.
    pub fn per_member(&self) -> Vec<(String, f64)> {
        let secs = self.member_secs.max(1.0);
        let kinds = [
            ("heartbeats", self.heartbeats),
            ("summaries", self.summaries),
            ("IHAVE", self.ihave),
            ("handshakes", self.handshakes),
            ("pings", self.pings),
            ("digests", self.digests),
            ("events", self.events),
            ("snapshots", self.snapshots),
        ];
        kinds.into_iter().map(|(kind, bytes)| (kind.to_string(), bytes / secs)).collect()
    }
}

/// One run's row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub design: String,
    pub members: usize,
    pub minutes: f64,
    pub online_mean: f64,
    pub up_mean: f64,
    pub up_p99: f64,
    pub down_mean: f64,
    pub down_p99: f64,
    pub msgs_mean: f64,
    pub connections_mean: f64,
    pub connections_p99: f64,
    pub disagreement_mean: f64,
    pub disagreement_max: f64,
    /// Disagreement at least a minute after the last join or leave (the quiet span's first
    /// sample), if the run had one.
    pub disagreement_quiet: Option<f64>,
    pub owner_gone_mean: f64,
    #[serde(default)]
    pub misrouted_mean: Option<f64>,
    pub view_mean: f64,
    pub join_p50_secs: Option<f64>,
    pub join_p95_secs: Option<f64>,
    pub joins_measured: usize,
    /// A roster event's time to every observer (the roster design), p50 and p95.
    #[serde(default)]
    pub spread_p50_secs: Option<f64>,
    #[serde(default)]
    pub spread_p95_secs: Option<f64>,
    /// Roster events an observer refused for good (the roster design).
    #[serde(default)]
    pub refused_events: u64,
    pub refused_dial_share: f64,
    pub dials_per_member_sec: f64,
    pub heartbeat_bytes: usize,
    pub summary_bytes: usize,
    /// What a member received a second, on average, by kind (bytes).
    pub received: Vec<(String, f64)>,
    /// The crawl backlog crashes stranded (the roster design).
    #[serde(default)]
    pub backlog: Option<roster::strands::Backlog>,
    pub wall_secs: f64,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The key of member `i` in a run seeded `seed`: the same members in every run of a seed (the
/// placement benchmark's churn draws its members so too).
pub fn member_key(seed: u64, i: usize) -> libp2p::identity::Keypair {
    member::Node::key(seed, i)
}

/// The `q` quantile (nearest rank), `None` when there is nothing.
pub fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    Some(s[((q * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1])
}

impl Summary {
    pub fn of(design: &str, scenario: &Scenario, f: &Figures) -> Summary {
        let measured_secs = (scenario.minutes - scenario.warmup_minutes).max(1.0) * 60.0;
        Summary {
            design: design.into(),
            members: scenario.members,
            minutes: scenario.minutes,
            online_mean: mean(&f.online),
            up_mean: mean(&f.up),
            up_p99: quantile(&f.up, 0.99).unwrap_or(0.0),
            down_mean: mean(&f.down),
            down_p99: quantile(&f.down, 0.99).unwrap_or(0.0),
            msgs_mean: mean(&f.msgs),
            connections_mean: mean(&f.connections),
            connections_p99: quantile(&f.connections, 0.99).unwrap_or(0.0),
            disagreement_mean: mean(&f.disagreement),
            disagreement_max: f.disagreement.iter().copied().fold(0.0, f64::max),
            disagreement_quiet: f.quiet_disagreement.first().map(|(_, d)| *d),
            owner_gone_mean: mean(&f.owner_gone),
            misrouted_mean: (!f.misrouted.is_empty()).then(|| mean(&f.misrouted)),
            view_mean: mean(&f.view),
            join_p50_secs: quantile(&f.join_secs, 0.5),
            join_p95_secs: quantile(&f.join_secs, 0.95),
            joins_measured: f.join_secs.len(),
            spread_p50_secs: quantile(&f.spread_secs, 0.5),
            spread_p95_secs: quantile(&f.spread_secs, 0.95),
            refused_events: f.refused_events,
            refused_dial_share: f.refused_dials as f64 / f.dials.max(1) as f64,
            dials_per_member_sec: f.dials as f64 / (mean(&f.online).max(1.0) * measured_secs.max(60.0)),
            heartbeat_bytes: f.heartbeat_bytes,
            summary_bytes: f.summary_bytes,
            received: f.received.per_member(),
            backlog: f.backlog,
            wall_secs: f.wall_secs,
        }
    }

    /// The table's header and one row per run, in Markdown.
    pub fn table(rows: &[Summary]) -> String {
        let mut out = String::from(
            "| design | members | online | up KB/s mean / p99 | down KB/s mean / p99 | msgs/s | connections mean / p99 | refused dials | ring disagreement mean / max / quiet | owner gone | misrouted | view | join to every ring p50 / p95 s | roster event to every ring p50 / p95 s | wall s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        let opt = |v: Option<f64>, scale: f64| v.map_or("–".to_string(), |v| format!("{:.1}", v * scale));
        for r in rows {
            out.push_str(&format!(
                "| {} | {} | {:.0} | {:.1} / {:.1} | {:.1} / {:.1} | {:.0} | {:.0} / {:.0} | {:.0}% | {:.2}% / {:.2}% / {}% | {:.2}% | {}% | {:.2} | {} / {} ({}) | {} / {} | {:.0} |\n",
                r.design,
                r.members,
                r.online_mean,
                r.up_mean / 1e3,
                r.up_p99 / 1e3,
                r.down_mean / 1e3,
                r.down_p99 / 1e3,
                r.msgs_mean,
                r.connections_mean,
                r.connections_p99,
                100.0 * r.refused_dial_share,
                100.0 * r.disagreement_mean,
                100.0 * r.disagreement_max,
                opt(r.disagreement_quiet, 100.0),
                100.0 * r.owner_gone_mean,
                r.misrouted_mean.map_or("–".to_string(), |m| format!("{:.2}", 100.0 * m)),
                r.view_mean,
                opt(r.join_p50_secs, 1.0),
                opt(r.join_p95_secs, 1.0),
                r.joins_measured,
                opt(r.spread_p50_secs, 1.0),
                opt(r.spread_p95_secs, 1.0),
                r.wall_secs,
            ));
        }
        out
    }

    /// What a member receives a second by kind, one row per run, in Markdown.
    pub fn received_table(rows: &[Summary]) -> String {
        let Some(first) = rows.first() else { return String::new() };
        let mut out = String::from("| design | members |");
        for (kind, _) in &first.received {
            out.push_str(&format!(" {kind} KB/s |"));
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---|".repeat(first.received.len()));
        out.push('\n');
        for r in rows {
            out.push_str(&format!("| {} | {} |", r.design, r.members));
            for (_, v) in &r.received {
                out.push_str(&format!(" {:.2} |", v / 1e3));
            }
            out.push('\n');
        }
        out
    }

    /// The crawl backlog crashes stranded, one row per run that measured it.
    pub fn backlog_table(rows: &[Summary]) -> String {
        let mut out = String::from(
            "| design | members | crashes a member-hour | backlog stranded: owner alone | kept twice (the node's) | back after p50 / p90 min | lost in the run (owner alone) |\n|---|---|---|---|---|---|---|\n",
        );
        for r in rows {
            let Some(b) = r.backlog else { continue };
            out.push_str(&format!(
                "| {} | {} | {:.3} | {:.2}% | {:.3}% | {:.0} / {:.0} | {:.2}% |\n",
                r.design,
                r.members,
                b.crashes_per_member_hour,
                100.0 * b.stranded,
                100.0 * b.stranded_kept_twice,
                b.back_p50_min,
                b.back_p90_min,
                100.0 * b.lost
            ));
        }
        out
    }
}

/// Runs the roster design on `scenario`.
pub fn run_roster(scenario: &Scenario) -> (Summary, Figures) {
    let figures = roster::Sim::new(scenario).run();
    (Summary::of("roster", scenario, &figures), figures)
}

/// Runs today's design on `scenario`.
pub fn run_today(scenario: &Scenario) -> (Summary, Figures) {
    let figures = today::Sim::new(scenario).run();
    (Summary::of("today", scenario, &figures), figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_network_agrees_on_its_ring_and_a_seed_repeats_its_run() {
        let mut scenario = Scenario::new(40, 12.0, 5);
        scenario.observers = 6;
        scenario.hosts = 300;
        let (a, fa) = run_today(&scenario);
        let (b, _) = run_today(&scenario);
        assert_eq!(
            (a.up_mean, a.connections_mean, a.disagreement_mean, a.joins_measured),
            (b.up_mean, b.connections_mean, b.disagreement_mean, b.joins_measured),
            "the same seed, the same run"
        );
        assert!((30.0..50.0).contains(&a.online_mean), "{a:?}");
        // Forty members fit in every member's connections: the observers' rings agree once
        // churn stops.
        assert!(a.disagreement_quiet.is_some_and(|d| d < 0.001), "{a:?}");
        assert!(a.joins_measured > 0 && a.join_p95_secs.is_some_and(|s| s < 120.0), "{a:?}");
        assert!(a.connections_p99 < 60.0 && a.up_mean > 0.0 && !fa.up.is_empty(), "{a:?}");
    }

    #[test]
    fn the_roster_agrees_on_its_ring_with_few_connections_and_its_rules_refuse_no_honest_event() {
        let mut scenario = Scenario::new(60, 20.0, 9);
        (scenario.observers, scenario.hosts) = (6, 300);
        let (a, fa) = run_roster(&scenario);
        let (b, _) = run_roster(&scenario);
        assert_eq!(
            (a.up_mean, a.connections_mean, a.disagreement_mean, a.joins_measured),
            (b.up_mean, b.connections_mean, b.disagreement_mean, b.joins_measured),
            "the same seed, the same run"
        );
        assert_eq!(a.refused_events, 0, "{a:?}");
        assert!(a.disagreement_quiet.is_some_and(|d| d < 0.001), "{a:?}");
        assert!(a.spread_p95_secs.is_some_and(|s| s < 60.0), "{a:?}");
        // A join waits out its probation before it is on any ring.
        assert!(a.join_p50_secs.is_some_and(|s| s >= weft_p2p::roster::PROBATION as f64), "{a:?}");
        assert!(a.connections_p99 <= 30.0 && a.down_mean < 2_000.0 && !fa.down.is_empty(), "{a:?}");
    }

    #[test]
    fn crashes_strand_the_backlog_until_their_members_return_and_kept_twice_until_their_deaths() {
        let mut scenario = Scenario::new(200, 40.0, 5);
        (scenario.observers, scenario.hosts) = (4, 100);
        let (a, _) = run_roster(&scenario);
        let b = a.backlog.expect("the roster design measures it");
        assert!(b.crashes_per_member_hour > 0.01 && b.back_p50_min > 0.0, "{b:?}");
        assert!(b.stranded > 10.0 * b.stranded_kept_twice && b.stranded_kept_twice > 0.0, "{b:?}");
        assert_eq!(Some(b), run_roster(&scenario).0.backlog, "the same seed, the same crashes");
    }

    #[test]
    fn with_every_members_real_roster_the_real_exchanges_agree_with_the_compact_ones() {
        let mut scenario = Scenario::new(60, 20.0, 9);
        (scenario.observers, scenario.hosts) = (6, 300);
        let (compact, _) = run_roster(&scenario);
        scenario.real_everywhere = true;
        let (real, _) = run_roster(&scenario);
        assert_eq!(real.refused_events, 0, "{real:?}");
        assert!(real.disagreement_quiet.is_some_and(|d| d < 0.001), "{real:?}");
        // The same churn: the same joins, spread about as fast, at about the same cost.
        assert_eq!(real.joins_measured, compact.joins_measured);
        let (a, b) = (real.spread_p50_secs.unwrap(), compact.spread_p50_secs.unwrap());
        assert!((a - b).abs() < 0.5 * b.max(1.0), "spread {a} real, {b} compact");
        assert!(
            (real.down_mean / compact.down_mean - 1.0).abs() < 0.5,
            "{} real, {} compact",
            real.down_mean,
            compact.down_mean
        );
    }

    #[test]
    fn a_partition_parts_the_rosters_and_the_members_declared_dead_refute_it_once_it_heals() {
        let mut scenario = Scenario::new(60, 30.0, 5);
        (scenario.observers, scenario.hosts, scenario.warmup_minutes) = (8, 300, 2.0);
        scenario.partition = Some("0.4@8+6".parse().unwrap());
        let (s, f) = run_roster(&scenario);
        let during = f.disagreement[7..11].iter().copied().fold(0.0, f64::max);
        assert!(during > 0.05, "the two sides' rings differ while it lasts: {:?}", f.disagreement);
        let after = f.disagreement[14..].iter().copied().fold(0.0, f64::max);
        assert!(after < 0.01, "{:?}", f.disagreement);
        assert!(s.disagreement_quiet.is_some_and(|d| d < 0.001), "{:?} {s:?}", f.disagreement);
        assert_eq!(s.refused_events, 0);
    }

    #[test]
    fn a_partition_parts_the_rings_and_they_agree_again_once_it_heals() {
        let mut scenario = Scenario::new(40, 30.0, 5);
        (scenario.observers, scenario.hosts, scenario.warmup_minutes) = (8, 300, 2.0);
        scenario.partition = Some("0.4@8+6".parse().unwrap());
        assert!("0.4@8".parse::<Partition>().is_err() && "2@1+1".parse::<Partition>().is_err());
        let (s, f) = run_today(&scenario);
        // Minute samples from minute 3 on: the partition holds minutes 8 to 14.
        let during = f.disagreement[7..11].iter().copied().fold(0.0, f64::max);
        assert!(during > 0.1, "the two sides' rings differ while it lasts: {:?}", f.disagreement);
        assert!(s.disagreement_quiet.is_some_and(|d| d < 0.001), "{:?} {s:?}", f.disagreement);
    }
}
