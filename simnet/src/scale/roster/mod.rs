//! The roster design at scale (`weft_p2p::roster`): members pass on only what changes — a
//! sponsored join after a newcomer's probation, a member's own departure, a death two of its
//! monitors sign — by anti-entropy with the members of a small random view, and hold
//! connections only to that view, their monitors and their relays.
//!
//! The *observers* — members of the always-on core — each run the real state machine,
//! `weft_p2p::roster::Roster`: every event is built and signed with the member's real key, an
//! observer takes it through `Roster::apply` (signatures checked, sponsors and accusers judged
//! on its own roster) when anti-entropy brings it there, and its ring is the one compared.
//!
//! The other members cannot each hold a roster of 10,000 entries, so what each member holds is
//! kept compactly: every event not yet held by every member online has a *slot*, and each
//! member a bit per slot. An exchange between two members gives both the union of their bits
//! and costs what the real exchange would: the digest, the keys of each bucket their rosters
//! differ in (the entries changed in that bucket's span), the events one lacks, and the keys it
//! asks for, each from the real encodings. Once every member online holds an event its slot
//! is freed. A newcomer pulls the roster page by page ([`SNAPSHOT_RATE`]) before it compares
//! digests; a member back within the digest's time buckets catches up by digest.
//!
//! The parts: [`sizes`] the messages' real sizes, [`inflight`] the compact holdings, [`real`]
//! the real exchanges between two rosters (`Scenario::real_everywhere` runs them on every
//! member), [`links`] the connections a member keeps, `anti_entropy.rs` a member's round of
//! comparing rosters.

mod churn;
pub mod cost;
pub mod inflight;
pub mod keys;
pub mod links;
pub mod log;
pub mod measure;
pub mod monitors;
pub mod real;
pub mod sizes;
pub mod strands;

mod anti_entropy;
use super::member::{draw_public, Node, Shared, IDLE_SECS};
use super::sessions::{Kind, SessionModel};
use super::{Figures, Scenario};
use crate::rng::Rng;
use inflight::InFlight;
use keys::Keys;
use libp2p::PeerId;
use links::Net;
use log::{Change, Happened, Log};
use measure::Spread;
use monitors::MonitorRing;
use real::MESSAGE_BYTES;
use sizes::Sizes;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use strands::Strands;
use weft_p2p::roster::event::Event;
use weft_p2p::roster::{Refused, Roster, Trust, ANSWER_BYTES, MONITORS, PROBATION};

/// A round's exchanges are spread over this many slices (members start their rounds at
/// different times).
const SLICES: u32 = 20;
/// Bytes a second a newcomer pulls the roster at (one page of `ANSWER_BYTES` at a time).
pub const SNAPSHOT_RATE: f64 = 16_000.0;
/// A monitor finds a member that left without a word gone after this long (its connection
/// closes at once when the process dies; a ping times out when the machine or link does).
const DETECT_SECS: (f64, f64) = (5.0, 30.0);
/// A member back within this long catches up by digest (the time buckets cover it).
const CATCH_UP_WITHIN: f64 = 500.0;
/// A member looks after its monitors' links every this many rounds.
const LINKS_EVERY: u64 = 10;
/// A member with a full view swaps one of it for a random member every this many rounds, as
/// HyParView's shuffles do: views stay random as the network changes, and the two sides of a
/// partition that healed meet again.
const SHUFFLE_EVERY: u64 = 60;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Offline,
    /// Pulling the roster: bytes left.
    Syncing(f64),
    /// Has the roster; may be sponsored from this time.
    Probation(f64),
    Member,
}

/// A member's roster state beside its links ([`Node`]).
struct State {
    status: Status,
    /// Bytes of events it missed while away, to catch up by digest.
    backlog: f64,
    /// The next page of the roster it pulls (run with every member's real roster).
    cursor: Option<u64>,
    arrived: f64,
    left_at: f64,
    /// Index of the first event it had not seen when it went away.
    seen_until: usize,
    since: u64,
    /// Its latest event (what the network holds of it).
    latest: Option<usize>,
    real: Option<Box<Roster>>,
    /// Events its real roster refused for now (a sponsor or accuser it has not heard of).
    pending: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Slice(u32),
    Up(u32),
    Down(u32, u32),
    Detect(u32, u32),
    Sample,
    Partition(bool),
}

pub struct Sim {
    scenario: Scenario,
    sessions: SessionModel,
    net: Net,
    states: Vec<State>,
    keys: Keys,
    index: HashMap<PeerId, u32>,
    observers: Vec<u32>,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    now: f64,
    unix0: u64,
    sizes: Sizes,
    shared: Shared,
    online: usize,
    /// Of them, those still pulling the roster: they hold no event in flight and get them all
    /// with the roster they pull, so an event is settled once every other member online holds it.
    syncing: usize,
    /// Members (the roster as the network's latest events have it), by position.
    members: MonitorRing,
    changes: Log,
    flight: InFlight,
    /// Members by the slice of the round their exchanges start in.
    by_phase: Vec<Vec<u32>>,
    hosts: Vec<String>,
    last_change: f64,
    churn_until: f64,
    /// Events on their way to every observer's roster.
    spread: Spread,
    /// The ring of the members as the network's latest events have them.
    truth: weft_p2p::Ring,
    /// The crawl backlog crashed members hold on their disks.
    strands: Strands,
    pub figures: Figures,
}

fn ms(secs: f64) -> u64 {
    (secs.max(0.0) * 1000.0) as u64
}

impl Sim {
    pub fn new(scenario: &Scenario) -> Sim {
        let mut rng = Rng(scenario.seed);
        let sessions = scenario.sessions.clone();
        let kinds = sessions.kinds(scenario.members);
        let mut nodes = Vec::new();
        let mut states = Vec::new();
        let mut by_phase = vec![Vec::new(); SLICES as usize];
        for (i, kind) in kinds.into_iter().enumerate() {
            let public = draw_public(kind, scenario.nat_share, &mut rng);
            nodes.push(Node::new(scenario.seed, i, kind, public));
            let phase = rng.below(SLICES as usize) as u32;
            by_phase[phase as usize].push(i as u32);
            states.push(State {
                status: Status::Offline,
                backlog: 0.0,
                cursor: None,
                arrived: 0.0,
                left_at: f64::NEG_INFINITY,
                seen_until: 0,
                since: 0,
                latest: None,
                real: None,
                pending: Vec::new(),
            });
        }
        let index = nodes.iter().enumerate().map(|(i, n)| (n.id, i as u32)).collect();
        let hosts = (0..scenario.hosts).map(|i| format!("host-{i}.example")).collect();
        // Newcomers that arrived before churn stops are admitted up to a probation later: the
        // quiet span starts after that.
        let churn_until = scenario.minutes * 60.0 - scenario.quiet_minutes * 60.0 - PROBATION as f64;
        let keys = Keys::new(scenario.seed, nodes.len());
        let ids: Vec<PeerId> = nodes.iter().map(|n| n.id).collect();
        let n_members = nodes.len();
        Sim {
            scenario: scenario.clone(),
            sessions,
            net: {
                let mut net = Net::new(nodes, rng, scenario.punch, scenario.seed, scenario.partition);
                if !scenario.random_views && scenario.members > weft_p2p::grid::FROM_MEMBERS {
                    let shape = weft_p2p::grid::Shape::network(scenario.members);
                    net.grid =
                        Some(weft_p2p::grid::Grid::new(shape, ids.iter().enumerate().map(|(i, p)| (i as u32, p))));
                }
                net
            },
            states,
            keys,
            index,
            observers: Vec::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            now: 0.0,
            unix0: 1_780_000_000,
            sizes: Sizes::real(),
            shared: Shared::default(),
            online: 0,
            syncing: 0,
            members: MonitorRing::new(&ids),
            changes: Log::default(),
            flight: InFlight::new(n_members),
            by_phase,
            hosts,
            last_change: 0.0,
            churn_until,
            spread: Spread::default(),
            truth: weft_p2p::Ring::new(std::iter::empty(), weft_p2p::DEFAULT_VNODES),
            strands: Strands::default(),
            figures: Figures::default(),
        }
    }

    fn round(&self) -> f64 {
        self.scenario.round_secs
    }

    fn unix(&self) -> u64 {
        self.unix0 + self.now as u64
    }

    fn at(&mut self, secs: f64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((ms(secs), self.seq, ev)));
    }

    fn measuring(&self) -> bool {
        self.now >= self.scenario.warmup_minutes * 60.0
    }

    /// Runs the scenario to its end and returns what it measured.
    pub fn run(mut self) -> Figures {
        let started = std::time::Instant::now();
        let observers = self.scenario.observers.min(self.net.nodes.iter().filter(|n| n.kind == Kind::Core).count());
        for i in 0..observers {
            self.net.nodes[i].public = true;
            self.net.nodes[i].observer = Some(i);
            self.observers.push(i as u32);
        }
        // The starting state: a network that has run for a while. Those online at the start
        // are members admitted hours ago; the others arrive when their time away ends.
        let mut founders = Vec::new();
        for i in 0..self.net.nodes.len() {
            let kind = self.net.nodes[i].kind;
            if self.scenario.stable {
                if i < self.scenario.members {
                    founders.push(i as u32);
                    self.net.nodes[i].ending = true;
                }
                continue;
            }
            if kind == Kind::Newcomer {
                continue;
            }
            let (up, left) =
                if i < observers { (true, f64::INFINITY) } else { self.sessions.start_state(kind, &mut self.net.rng) };
            if up {
                founders.push(i as u32);
                if left.is_finite() {
                    self.pending_down(i as u32, left);
                }
            } else {
                self.at(left, Ev::Up(i as u32));
            }
        }
        self.found(&founders);
        let newcomers = self.net.nodes.iter().position(|n| n.kind == Kind::Newcomer).unwrap_or(self.net.nodes.len());
        if !self.scenario.stable {
            let arrivals = self.sessions.bursts(self.scenario.members, self.churn_until, &mut self.net.rng);
            for (k, at) in arrivals.into_iter().enumerate().take(self.net.nodes.len() - newcomers) {
                self.at(at, Ev::Up((newcomers + k) as u32));
            }
        }
        self.at(0.0, Ev::Slice(0));
        self.at(60.0, Ev::Sample);
        if let Some(p) = self.scenario.partition {
            self.at(p.from_minute * 60.0, Ev::Partition(true));
            self.at((p.from_minute + p.minutes) * 60.0, Ev::Partition(false));
        }
        let end = self.scenario.minutes * 60.0;
        while let Some(Reverse((t, _, ev))) = self.queue.pop() {
            self.now = t as f64 / 1000.0;
            if self.now > end {
                break;
            }
            (self.net.now, self.net.measuring) = (self.now, self.measuring());
            match ev {
                Ev::Slice(s) => self.slice(s),
                Ev::Up(i) => self.up(i),
                Ev::Down(i, s) => self.down(i, s),
                Ev::Detect(i, s) => self.detect(i, s),
                Ev::Sample => self.sample(),
                Ev::Partition(on) => self.partition(on),
            }
        }
        let from = self.scenario.warmup_minutes * 60.0;
        self.figures.backlog = Some(self.strands.measure(from, end, self.figures.received.member_secs));
        self.figures.wall_secs = started.elapsed().as_secs_f64();
        self.figures.received.handshakes = self.net.handshakes;
        self.figures.dials = self.net.nodes.iter().map(|n| n.dials).sum();
        self.figures.refused_dials = self.net.nodes.iter().map(|n| n.refused).sum();
        self.figures.identities = self.net.nodes.len();
        self.figures.heartbeat_bytes = self.sizes.joined as usize;
        self.figures.summary_bytes = self.sizes.digest as usize;
        self.figures
    }

    /// The members online at the start: in every roster (observers' real ones included),
    /// admitted three hours before, each sponsored by two founders before it.
    fn found(&mut self, founders: &[u32]) {
        let t0 = self.unix0 - 3 * 3600;
        let mut base = Roster::new(weft_p2p::DEFAULT_VNODES);
        for (k, i) in founders.iter().enumerate() {
            let since = t0 + k as u64 % 600;
            let e = self.keys.joined(*i, since, since, &founders[k.saturating_sub(2)..k]);
            let applied = base.apply(e, self.unix0, Trust::Syncing);
            debug_assert!(applied.is_ok(), "{applied:?}");
            let st = &mut self.states[*i as usize];
            st.status = Status::Member;
            st.since = since;
            self.members.insert(*i);
            self.net.nodes[*i as usize].come_online(self.unix0, self.shared);
            self.online += 1;
        }
        for i in founders.to_vec() {
            if self.net.nodes[i as usize].observer.is_some() || self.scenario.real_everywhere {
                self.states[i as usize].real = Some(Box::new(base.clone()));
            }
        }
        for i in founders.to_vec() {
            self.links(i, true);
        }
    }

    // --- Events and slots -------------------------------------------------------------------

    /// A new roster event of `node`, held first by `holders` (online members).
    fn change(&mut self, node: u32, what: Happened, real: Event, holders: &[u32]) -> usize {
        let bytes = match what {
            Happened::Joined => self.sizes.joined,
            Happened::Refuted => self.sizes.refute,
            Happened::Left => self.sizes.left,
            Happened::Dead => self.sizes.dead,
        };
        let id = self.changes.record(Change { node, at: self.now, what, bytes, real }, self.unix());
        let slot = self.flight.open(id);
        self.states[node as usize].latest = Some(id);
        self.last_change = self.now;
        self.figures.ring_changes += 1;
        if self.observers.iter().any(|o| self.net.nodes[*o as usize].online) {
            let have: Vec<bool> = self.observers.iter().map(|o| !self.net.nodes[*o as usize].online).collect();
            let arrived = self.states[node as usize].arrived;
            self.spread.made(id, arrived, self.now, have);
        }
        for h in holders.to_vec() {
            self.hold(h, slot);
            if self.scenario.real_everywhere && self.net.nodes[h as usize].observer.is_none() {
                let (unix, real) = (self.unix(), self.changes[id].real.clone());
                if let Some(r) = self.states[h as usize].real.as_mut() {
                    let _ = r.apply(real, unix, Trust::Member);
                }
            }
        }
        self.free(slot);
        id
    }

    /// `i` now holds the event in `slot`: its observer's roster takes it; a member that reads
    /// its own death refutes it.
    fn hold(&mut self, i: u32, slot: usize) {
        if !self.net.nodes[i as usize].online || !self.flight.take(i, slot) {
            return;
        }
        let Some(id) = self.flight.event(slot) else { return };
        if self.net.nodes[i as usize].observer.is_some() {
            self.observe(i, id);
        }
        let c = &self.changes[id];
        let real = self.scenario.real_everywhere;
        if c.what == Happened::Dead && c.node == i && self.states[i as usize].latest == Some(id) && !real {
            self.refute(i);
        }
    }

    /// Frees `slot` if every member online holds its event.
    fn free(&mut self, slot: usize) {
        self.flight.settle(slot, self.online - self.syncing);
    }

    /// Observer `o`'s real roster takes event `id`. One it refuses for want of a sponsor or an
    /// accuser it has not read yet waits inside the roster, which takes it once that comes
    /// (`Roster::apply`); it is counted as reached then, found by looking, not by applying it
    /// again (each application checks every signature).
    fn observe(&mut self, o: u32, id: usize) {
        let now = self.unix();
        let k = self.net.nodes[o as usize].observer.expect("an observer");
        let real = self.changes[id].real.clone();
        let st = &mut self.states[o as usize];
        let roster = st.real.as_mut().expect("a real roster");
        let reached = match roster.apply(real, now, Trust::Member) {
            Ok(_) => vec![id],
            Err(Refused::Sponsors { .. } | Refused::Accusers { .. }) => {
                st.pending.push(id);
                return;
            }
            Err(e) => {
                self.figures.refused_events += 1;
                if self.figures.refused_events < 5 {
                    eprintln!("observer {k} refused {:?} of {}: {e}", self.changes[id].what, self.changes[id].node);
                }
                return;
            }
        };
        let mut reached = reached;
        if !st.pending.is_empty() {
            let changes = &self.changes;
            let held = |p: usize| {
                let e = &changes[p].real;
                e.peer_id().ok().and_then(|peer| roster.event_of(&peer)).is_some_and(|h| h.version() >= e.version())
            };
            let (now_held, waiting): (Vec<usize>, Vec<usize>) = st.pending.iter().partition(|p| held(**p));
            st.pending = waiting;
            reached.extend(now_held);
        }
        for id in reached {
            if let Some((spread, since_arrival)) = self.spread.reached(id, k, self.now) {
                if self.measuring() {
                    self.figures.spread_secs.push(spread);
                    if self.changes[id].what == Happened::Joined {
                        self.figures.join_secs.push(since_arrival);
                    }
                }
            }
        }
    }

    // --- Rounds ------------------------------------------------------------------------------

    fn slice(&mut self, s: u32) {
        let next = (s + 1) % SLICES;
        self.at(self.now + self.round() / f64::from(SLICES), Ev::Slice(next));
        let members = self.by_phase[s as usize].clone();
        for i in members {
            if self.net.nodes[i as usize].online {
                self.tick(i);
            }
        }
    }

    /// One round of member `i`: its view and links, its roster's exchange, its admission.
    fn tick(&mut self, i: u32) {
        let iu = i as usize;
        // Monitors and idle links are looked after every `LINKS_EVERY` rounds.
        let round = (self.now / self.round()) as u64;
        if (round + u64::from(i)) % SHUFFLE_EVERY == 0 {
            self.net.shuffle(i);
        }
        self.links(i, (round + u64::from(i)) % LINKS_EVERY == 0);
        match self.states[iu].status {
            Status::Syncing(_) if self.scenario.real_everywhere => self.pull_real(i),
            Status::Syncing(left) => {
                let Some(from) = self.partner(i) else { return };
                let sent = left.min(SNAPSHOT_RATE * self.round());
                let pages = (sent / ANSWER_BYTES as f64).ceil().max(1.0);
                self.net.send(i, from, pages * (MESSAGE_BYTES + 12.0));
                self.net.send(from, i, sent + pages * MESSAGE_BYTES);
                if self.measuring() {
                    self.figures.received.snapshots += sent;
                }
                // A lost page is asked for again next round.
                let pulled = if self.lost() { 0.0 } else { sent };
                if left - pulled <= 0.0 {
                    // Synced: it holds what its last page's sender held.
                    for s in self.flight.held_by(from) {
                        self.hold(i, s);
                    }
                    let until = self.states[iu].arrived + PROBATION as f64;
                    self.states[iu].status = Status::Probation(until);
                    self.syncing -= 1;
                } else {
                    self.states[iu].status = Status::Syncing(left - pulled);
                }
            }
            Status::Probation(until) => {
                self.exchange(i);
                if self.now >= until {
                    self.admit(i);
                }
            }
            Status::Member => self.exchange(i),
            Status::Offline => {}
        }
        if self.scenario.partition.is_some() {
            self.flight.settle_all(self.online - self.syncing);
        }
    }

    // --- Links -------------------------------------------------------------------------------

    /// Keeps `i`'s links: refills its view and reserves relays behind NAT; with `all`, dials
    /// its monitors too and lets go of connections neither side wants any more.
    fn links(&mut self, i: u32, all: bool) {
        let iu = i as usize;
        self.net.refill_view(i, self.online);
        if !all {
            return;
        }
        for j in self.wanted(i) {
            if !self.net.nodes[iu].conns.contains_key(&j) && !self.net.cut(i, j) {
                self.net.dial(i, j);
            }
        }
        let held: Vec<u32> = self.net.nodes[iu].conns.keys().copied().collect();
        let mine = self.wanted(i);
        for j in held {
            let opened = self.net.nodes[iu].conns[&j].opened;
            // The other side wants it as its view or relay (a monitor link is wanted both ways).
            let theirs = &self.net.nodes[j as usize];
            if mine.contains(&j)
                || self.now - opened < IDLE_SECS / 10.0
                || theirs.mesh.contains(&i)
                || theirs.relays.contains(&i)
            {
                continue;
            }
            self.net.disconnect(i, j);
        }
    }

    // --- Partitions --------------------------------------------------------------------------

    /// The partition begins (connections across it close, and each side's monitors declare
    /// dead the members they lost) or heals.
    fn partition(&mut self, on: bool) {
        self.net.partitioned = on;
        if !on {
            return;
        }
        self.net.close_across();
        // A member two of whose three monitors are across the cut is declared dead there.
        let members: Vec<u32> = self.members.members().collect();
        for m in members {
            if !self.net.nodes[m as usize].online {
                continue;
            }
            let net = &self.net;
            let monitors = self.members.after(m, MONITORS, |j| net.nodes[j as usize].online);
            let across = monitors.iter().filter(|j| self.net.side(**j) != self.net.side(m)).count();
            if across >= 2 {
                self.accuse(m, Some(!self.net.side(m)));
            }
        }
    }

    // --- Measuring ---------------------------------------------------------------------------

    fn sample(&mut self) {
        self.at(self.now + 60.0, Ev::Sample);
        let measuring = self.measuring();
        measure::traffic(&mut self.net.nodes, measuring, &mut self.figures);
        if measuring {
            self.figures.received.member_secs += 60.0 * self.online as f64;
            self.figures.online.push(self.online as f64);
            self.figures.in_flight.push(self.flight.in_flight() as f64);
        }
        let unix = self.unix();
        for o in self.observers.clone() {
            if let (true, Some(roster)) = (self.net.nodes[o as usize].online, self.states[o as usize].real.as_mut()) {
                roster.ring(unix);
            }
        }
        // The ring every roster would build had it every event: URLs a member sends by its own
        // ring to another owner go to a member that no longer (or not yet) owns the host.
        let sinces: Vec<(PeerId, u64)> =
            self.members.members().map(|j| (self.net.nodes[j as usize].id, self.states[j as usize].since)).collect();
        let (weights, _) = weft_p2p::roster::admitted(&sinces, weft_p2p::DEFAULT_VNODES, unix);
        self.truth = self.truth.rebuilt(weights);
        let rosters: Vec<&Roster> = (self.observers.iter())
            .filter(|o| self.net.nodes[**o as usize].online)
            .filter_map(|o| self.states[*o as usize].real.as_deref())
            .collect();
        let (nodes, index) = (&self.net.nodes, &self.index);
        let online = |p: &PeerId| index.get(p).is_some_and(|j| nodes[*j as usize].online);
        let Some(m) = measure::rings(&rosters, &self.truth, &self.hosts, online, self.online) else { return };
        if measuring {
            self.figures.misrouted.push(m.misrouted);
            self.figures.disagreement.push(m.disagreement);
            self.figures.owner_gone.push(m.owner_gone);
            self.figures.view.push(m.view);
        }
        let quiet = self.now - self.last_change;
        if self.now >= self.churn_until && quiet >= 59.0 {
            self.figures.quiet_disagreement.push((quiet, m.disagreement));
        }
    }
}
