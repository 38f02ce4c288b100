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

use super::member::{
    Conn, Node, Shared, HANDSHAKE_BYTES, IDLE_SECS, MAX_CIRCUITS, MAX_RESERVATIONS, PING_BYTES_PER_SEC, RELAYS,
};
use super::rings;
use super::sessions::{Kind, SessionModel};
use super::{Figures, Scenario};
use crate::rng::Rng;
use libp2p::identity::Keypair;
use libp2p::PeerId;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use weft_p2p::roster::digest::{BucketKeys, Cuts, Digest, BUCKETS, RECENT};
use weft_p2p::roster::event::{position, Event, What};
use weft_p2p::roster::{Answer, Refused, Roster, Trust, ANSWER_BYTES, MONITORS, PROBATION, REFUTE_FOR};

/// A member's random view: it dials this many members and takes at most `VIEW_MAX` in.
pub const VIEW: usize = 8;
pub const VIEW_MAX: usize = 12;
/// A round's exchanges are spread over this many slices (members start their rounds at
/// different times).
const SLICES: u32 = 20;
/// Bytes a second a newcomer pulls the roster at (one page of `ANSWER_BYTES` at a time).
pub const SNAPSHOT_RATE: f64 = 16_000.0;
/// Bytes each message of a request-response costs on top of its body, each way: a yamux
/// stream's frames and multistream-select naming `/weft/roster/1`. Estimated, not captured.
pub const MESSAGE_BYTES: f64 = 100.0;
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

/// The sizes of the roster's messages, from their real encodings.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub joined: f64,
    pub refute: f64,
    pub left: f64,
    pub dead: f64,
    pub digest: f64,
    pub empty_answer: f64,
    pub key: f64,
    pub want: f64,
}

impl Sizes {
    pub fn real() -> Sizes {
        let k: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
        let peer = k[0].public().to_peer_id();
        let at = 1_780_000_000;
        let joined = |n: usize| {
            let e = Event::new(&peer, at, What::Joined { vnodes: 150, since: at, block: 0x1234_5678_9abc_def0 });
            k[..n].iter().fold(e, |e, key| e.signed_by(key)).encode().len() as f64
        };
        let dead = Event::new(&peer, at, What::Dead).signed_by(&k[1]).signed_by(&k[2]).encode().len() as f64;
        let left = Event::new(&peer, at, What::Left).signed_by(&k[0]).encode().len() as f64;
        let digest =
            Digest { now: at, hashes: (0..BUCKETS as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect() };
        let cbor = |v: &dyn erased::Encode| v.len() as f64;
        let one_key =
            Answer { keys: vec![BucketKeys { bucket: 3, keys: vec![(u64::MAX / 3, at * 4)] }], events: vec![] };
        let two_keys = Answer {
            keys: vec![BucketKeys { bucket: 3, keys: vec![(u64::MAX / 3, at * 4), (u64::MAX / 5, at * 4 + 1)] }],
            events: vec![],
        };
        Sizes {
            joined: joined(3),
            refute: joined(1),
            left,
            dead,
            digest: cbor(&digest),
            empty_answer: cbor(&Answer::default()),
            key: cbor(&two_keys) - cbor(&one_key),
            want: 9.0,
        }
    }
}

/// CBOR lengths of the messages above.
mod erased {
    pub trait Encode {
        fn len(&self) -> usize;
    }
    impl<T: serde::Serialize> Encode for T {
        fn len(&self) -> usize {
            cbor4ii::serde::to_vec(Vec::new(), self).map(|v| v.len()).unwrap_or(0)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Happened {
    Joined,
    Refuted,
    Left,
    Dead,
}

/// One roster event in flight or done.
struct Change {
    node: u32,
    at: f64,
    what: Happened,
    bytes: f64,
    /// Its slot while some member online lacks it.
    slot: Option<usize>,
    holders: usize,
    real: Event,
}

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
    bits: Vec<u64>,
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
    rng: Rng,
    nodes: Vec<Node>,
    states: Vec<State>,
    keys: Vec<Option<Keypair>>,
    index: HashMap<PeerId, u32>,
    observers: Vec<u32>,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    now: f64,
    unix0: u64,
    sizes: Sizes,
    shared: Shared,
    online: usize,
    /// Members (the roster as the network's latest events have it), by position.
    members: BTreeMap<u64, u32>,
    changes: Vec<Change>,
    slots: Vec<Option<usize>>,
    words: usize,
    /// Roster changes so far at each second with a change, for the key lists of a bucket (the
    /// last 20 minutes).
    per_second: VecDeque<(u64, u32)>,
    by_phase: Vec<Vec<u32>>,
    hosts: Vec<String>,
    last_change: f64,
    churn_until: f64,
    partitioned: bool,
    /// Events waiting to be on every observer's roster: event → (its member's arrival, when it
    /// was made, observers that have it).
    joining: HashMap<usize, (f64, f64, Vec<bool>)>,
    /// The ring of the members as the network's latest events have them.
    truth: weft_p2p::Ring,
    pub figures: Figures,
}

fn ms(secs: f64) -> u64 {
    (secs.max(0.0) * 1000.0) as u64
}

impl Sim {
    pub fn new(scenario: &Scenario) -> Sim {
        let mut rng = Rng(scenario.seed);
        let sessions = scenario.sessions.clone();
        let (core, regular) = sessions.population(scenario.members);
        let bursts = (scenario.members as f64 * sessions.burst_share).round() as usize * sessions.bursts_at.len();
        let kinds = std::iter::repeat_n(Kind::Core, core)
            .chain(std::iter::repeat_n(Kind::Regular, regular))
            .chain(std::iter::repeat_n(Kind::Newcomer, bursts));
        let mut nodes = Vec::new();
        let mut states = Vec::new();
        let mut by_phase = vec![Vec::new(); SLICES as usize];
        for (i, kind) in kinds.enumerate() {
            let public = kind == Kind::Core || rng.below(1000) as f64 >= scenario.nat_share * 1000.0;
            nodes.push(Node::new(scenario.seed, i, kind, public));
            let phase = rng.below(SLICES as usize) as u32;
            by_phase[phase as usize].push(i as u32);
            states.push(State {
                status: Status::Offline,
                bits: vec![0; 1],
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
        let keys = vec![None; nodes.len()];
        Sim {
            scenario: scenario.clone(),
            sessions,
            rng,
            nodes,
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
            members: BTreeMap::new(),
            changes: Vec::new(),
            slots: Vec::new(),
            words: 1,
            per_second: VecDeque::new(),
            by_phase,
            hosts,
            last_change: 0.0,
            churn_until,
            partitioned: false,
            joining: HashMap::new(),
            truth: weft_p2p::Ring::new(std::iter::empty(), weft_p2p::DEFAULT_VNODES),
            figures: Figures::default(),
        }
    }

    fn round(&self) -> f64 {
        self.scenario.round_secs
    }

    fn unix(&self) -> u64 {
        self.unix0 + self.now as u64
    }

    fn key(&mut self, i: u32) -> Keypair {
        let seed = self.scenario.seed;
        self.keys[i as usize].get_or_insert_with(|| Node::key(seed, i as usize)).clone()
    }

    fn at(&mut self, secs: f64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((ms(secs), self.seq, ev)));
    }

    fn measuring(&self) -> bool {
        self.now >= self.scenario.warmup_minutes * 60.0
    }

    fn cut(&self, a: u32, b: u32) -> bool {
        let side = |i: u32| self.scenario.partition.is_some_and(|p| p.holds(self.scenario.seed, i));
        self.partitioned && side(a) != side(b)
    }

    /// Runs the scenario to its end and returns what it measured.
    pub fn run(mut self) -> Figures {
        let started = std::time::Instant::now();
        let observers = self.scenario.observers.min(self.nodes.iter().filter(|n| n.kind == Kind::Core).count());
        for i in 0..observers {
            self.nodes[i].public = true;
            self.nodes[i].observer = Some(i);
            self.observers.push(i as u32);
        }
        // The starting state: a network that has run for a while. Those online at the start
        // are members admitted hours ago; the others arrive when their time away ends.
        let mut founders = Vec::new();
        for i in 0..self.nodes.len() {
            let kind = self.nodes[i].kind;
            if self.scenario.stable {
                if i < self.scenario.members {
                    founders.push(i as u32);
                    self.nodes[i].ending = true;
                }
                continue;
            }
            if kind == Kind::Newcomer {
                continue;
            }
            let (up, left) =
                if i < observers { (true, f64::INFINITY) } else { self.sessions.start_state(kind, &mut self.rng) };
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
        let newcomers = self.nodes.iter().position(|n| n.kind == Kind::Newcomer).unwrap_or(self.nodes.len());
        if !self.scenario.stable {
            let arrivals = self.sessions.bursts(self.scenario.members, self.churn_until, &mut self.rng);
            for (k, at) in arrivals.into_iter().enumerate().take(self.nodes.len() - newcomers) {
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
            match ev {
                Ev::Slice(s) => self.slice(s),
                Ev::Up(i) => self.up(i),
                Ev::Down(i, s) => self.down(i, s),
                Ev::Detect(i, s) => self.detect(i, s),
                Ev::Sample => self.sample(),
                Ev::Partition(on) => self.partition(on),
            }
        }
        self.figures.wall_secs = started.elapsed().as_secs_f64();
        self.figures.dials = self.nodes.iter().map(|n| n.dials).sum();
        self.figures.refused_dials = self.nodes.iter().map(|n| n.refused).sum();
        self.figures.identities = self.nodes.len();
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
            let key = self.key(*i);
            let mut e = Event::new(&key.public().to_peer_id(), since, What::Joined { vnodes: 150, since, block: 0 })
                .signed_by(&key);
            for s in founders[k.saturating_sub(2)..k].to_vec() {
                e = e.signed_by(&self.key(s));
            }
            let applied = base.apply(e, self.unix0, Trust::Syncing);
            debug_assert!(applied.is_ok(), "{applied:?}");
            let st = &mut self.states[*i as usize];
            st.status = Status::Member;
            st.since = since;
            self.members.insert(position(&self.nodes[*i as usize].id), *i);
            self.nodes[*i as usize].come_online(self.unix0, self.shared);
            self.online += 1;
        }
        for i in founders.to_vec() {
            if self.nodes[i as usize].observer.is_some() || self.scenario.real_everywhere {
                self.states[i as usize].real = Some(Box::new(base.clone()));
            }
        }
        for i in founders.to_vec() {
            self.links(i, true);
        }
    }

    fn pending_down(&mut self, i: u32, at: f64) {
        self.nodes[i as usize].ending = true;
        if at < self.churn_until {
            let s = self.nodes[i as usize].session + 1;
            self.at(at, Ev::Down(i, s.max(1)));
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
        let id = self.changes.len();
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        self.slots[slot] = Some(id);
        let words = slot / 64 + 1;
        if words > self.words {
            self.words = words;
            for st in &mut self.states {
                st.bits.resize(words, 0);
            }
        }
        self.changes.push(Change { node, at: self.now, what, bytes, slot: Some(slot), holders: 0, real });
        self.states[node as usize].latest = Some(id);
        let sec = self.unix();
        let total = self.per_second.back().map_or(0, |(_, n)| *n) + 1;
        match self.per_second.back_mut() {
            Some((s, n)) if *s == sec => *n = total,
            _ => self.per_second.push_back((sec, total)),
        }
        while self.per_second.front().is_some_and(|(s, _)| *s + 1200 < sec) {
            self.per_second.pop_front();
        }
        self.last_change = self.now;
        self.figures.ring_changes += 1;
        if self.observers.iter().any(|o| self.nodes[*o as usize].online) {
            let have: Vec<bool> = self.observers.iter().map(|o| !self.nodes[*o as usize].online).collect();
            let arrived = self.states[node as usize].arrived;
            self.joining.insert(id, (arrived, self.now, have));
        }
        for h in holders.to_vec() {
            self.hold(h, slot);
            if self.scenario.real_everywhere && self.nodes[h as usize].observer.is_none() {
                let (unix, real) = (self.unix(), self.changes[id].real.clone());
                if let Some(r) = self.states[h as usize].real.as_mut() {
                    let _ = r.apply(real, unix, Trust::Member);
                }
            }
        }
        self.free(slot);
        id
    }

    fn holds(&self, i: u32, slot: usize) -> bool {
        self.states[i as usize].bits[slot / 64] & (1 << (slot % 64)) != 0
    }

    /// `i` now holds the event in `slot`: its observer's roster takes it; a member that reads
    /// its own death refutes it.
    fn hold(&mut self, i: u32, slot: usize) {
        if self.holds(i, slot) || !self.nodes[i as usize].online {
            return;
        }
        self.states[i as usize].bits[slot / 64] |= 1 << (slot % 64);
        let Some(id) = self.slots[slot] else { return };
        self.changes[id].holders += 1;
        if self.nodes[i as usize].observer.is_some() {
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
        let Some(id) = self.slots[slot] else { return };
        if self.changes[id].holders < self.online {
            return;
        }
        self.slots[slot] = None;
        self.changes[id].slot = None;
        let (w, bit) = (slot / 64, 1u64 << (slot % 64));
        for st in &mut self.states {
            st.bits[w] &= !bit;
        }
    }

    /// Observer `o`'s real roster takes event `id` (and any it refused for want of it).
    fn observe(&mut self, o: u32, id: usize) {
        let now = self.unix();
        let k = self.nodes[o as usize].observer.expect("an observer");
        let mut todo = vec![id];
        let mut took_any = false;
        while let Some(id) = todo.pop() {
            let real = self.changes[id].real.clone();
            let st = &mut self.states[o as usize];
            let roster = st.real.as_mut().expect("a real roster");
            match roster.apply(real, now, Trust::Member) {
                Ok(_) => {
                    took_any = true;
                    if let Some((arrived, made, have)) = self.joining.get_mut(&id) {
                        have[k] = true;
                        if have.iter().all(|h| *h) {
                            let (arrived, made) = (*arrived, *made);
                            self.joining.remove(&id);
                            if self.now >= self.scenario.warmup_minutes * 60.0 {
                                self.figures.spread_secs.push(self.now - made);
                                if self.changes[id].what == Happened::Joined {
                                    self.figures.join_secs.push(self.now - arrived);
                                }
                            }
                        }
                    }
                }
                Err(Refused::Sponsors { .. } | Refused::Accusers { .. }) => {
                    if !st.pending.contains(&id) {
                        st.pending.push(id);
                    }
                }
                Err(e) => {
                    self.figures.refused_events += 1;
                    if self.figures.refused_events < 5 {
                        eprintln!("observer {k} refused {:?} of {}: {e}", self.changes[id].what, self.changes[id].node);
                    }
                }
            }
            if took_any && todo.is_empty() {
                took_any = false;
                let st = &mut self.states[o as usize];
                todo = std::mem::take(&mut st.pending);
            }
        }
    }

    // --- Arrivals and departures ------------------------------------------------------------

    fn up(&mut self, i: u32) {
        let now = self.now;
        if (now >= self.churn_until && now > 61.0) || self.nodes[i as usize].online {
            return;
        }
        self.online += 1;
        let unix = self.unix();
        self.nodes[i as usize].come_online(unix, self.shared);
        let away = now - self.states[i as usize].left_at;
        let missed: f64 = if away <= CATCH_UP_WITHIN {
            self.changes[self.states[i as usize].seen_until..].iter().map(|c| c.bytes).sum()
        } else {
            0.0
        };
        let latest = self.states[i as usize].latest.map(|l| (self.changes[l].what, self.changes[l].at));
        let snapshot = self.snapshot_bytes();
        let st = &mut self.states[i as usize];
        st.arrived = now;
        st.bits.iter_mut().for_each(|w| *w = 0);
        if away <= CATCH_UP_WITHIN && st.since > 0 {
            // With real rosters everywhere, the real digests catch it up.
            st.backlog = if self.scenario.real_everywhere { 0.0 } else { missed };
            st.status = match latest {
                Some((Happened::Joined | Happened::Refuted, _)) => Status::Member,
                Some((Happened::Dead, at)) if now - at < REFUTE_FOR as f64 => Status::Member,
                _ => Status::Probation(now + PROBATION as f64),
            };
        } else {
            st.status = Status::Syncing(snapshot);
            st.cursor = None;
            if self.scenario.real_everywhere {
                st.real = Some(Box::new(Roster::new(weft_p2p::DEFAULT_VNODES)));
            }
        }
        if let Some(Happened::Dead) = latest.map(|l| l.0) {
            if self.states[i as usize].status == Status::Member {
                self.refute(i);
            }
        }
        self.links(i, true);
        if self.nodes[i as usize].observer.is_none() && !self.nodes[i as usize].ending {
            let kind = self.nodes[i as usize].kind;
            let length = self.sessions.session_secs(kind, &mut self.rng);
            self.pending_down(i, now + length);
        }
    }

    /// What a newcomer pulls: the entries of the members and of the last hour's departures.
    fn snapshot_bytes(&self) -> f64 {
        let members = self.members.len() as f64 * self.sizes.joined;
        let hour = self.now - 3600.0;
        let gone: f64 = (self.changes.iter().rev())
            .take_while(|c| c.at >= hour)
            .filter(|c| matches!(c.what, Happened::Left | Happened::Dead))
            .map(|c| c.bytes)
            .sum();
        members + gone
    }

    fn down(&mut self, i: u32, session: u32) {
        let iu = i as usize;
        if !self.nodes[iu].online || self.nodes[iu].session != session {
            return;
        }
        let now = self.now;
        let member = self.states[iu].status == Status::Member;
        let graceful = (self.rng.below(1000) as f64) < self.sessions.graceful * 1000.0;
        if member && graceful {
            // It tells two members of its view, and goes.
            let told: Vec<u32> = self.nodes[iu].mesh.iter().copied().filter(|j| !self.cut(i, *j)).take(2).collect();
            let key = self.key(i);
            let real = Event::new(&self.nodes[iu].id, self.unix(), What::Left).signed_by(&key);
            let mut to = Vec::new();
            for j in told {
                self.send(i, j, self.sizes.left + MESSAGE_BYTES);
                if !self.lost() {
                    to.push(j);
                }
            }
            if to.is_empty() {
                // Its last word lost, its monitors find it gone.
                let detect = DETECT_SECS.0 + self.rng.below(1000) as f64 / 1000.0 * (DETECT_SECS.1 - DETECT_SECS.0);
                self.at(now + detect, Ev::Detect(i, session));
                self.offline(i);
                self.after_down(i, now);
                return;
            }
            self.members.remove(&position(&self.nodes[iu].id));
            self.change(i, Happened::Left, real, &to);
        } else if member {
            let detect = DETECT_SECS.0 + self.rng.below(1000) as f64 / 1000.0 * (DETECT_SECS.1 - DETECT_SECS.0);
            self.at(now + detect, Ev::Detect(i, session));
        }
        self.offline(i);
        self.after_down(i, now);
    }

    /// When a member that went down at `now` comes back, and whether its roster is kept.
    fn after_down(&mut self, i: u32, now: f64) {
        let iu = i as usize;
        let kind = self.nodes[iu].kind;
        let back =
            if kind != Kind::Newcomer { now + self.sessions.downtime_secs(kind, &mut self.rng) } else { f64::INFINITY };
        if back < self.churn_until {
            self.at(back, Ev::Up(i));
        }
        // A roster it will not catch up by digest is not kept meanwhile.
        if back - now > CATCH_UP_WITHIN && self.nodes[iu].observer.is_none() {
            self.states[iu].real = None;
        }
    }

    fn offline(&mut self, i: u32) {
        let iu = i as usize;
        let peers: Vec<u32> = self.nodes[iu].conns.keys().copied().collect();
        for j in peers {
            self.disconnect(i, j);
        }
        for node in &mut self.nodes {
            node.relays.retain(|r| *r != i);
        }
        self.nodes[iu].go_offline(self.scenario.stable);
        self.online -= 1;
        let held: Vec<usize> = (0..self.slots.len()).filter(|s| self.holds(i, *s)).collect();
        for s in held {
            if let Some(id) = self.slots[s] {
                self.changes[id].holders -= 1;
            }
        }
        let st = &mut self.states[iu];
        st.bits.iter_mut().for_each(|w| *w = 0);
        st.status = Status::Offline;
        st.left_at = self.now;
        st.seen_until = self.changes.len();
        for s in 0..self.slots.len() {
            self.free(s);
        }
    }

    /// Its monitors find member `i` gone: the first two online sign its death.
    fn detect(&mut self, i: u32, session: u32) {
        let iu = i as usize;
        let still_gone = !self.nodes[iu].online || self.nodes[iu].session != session;
        let latest_joined =
            self.states[iu].latest.is_none_or(|l| matches!(self.changes[l].what, Happened::Joined | Happened::Refuted));
        if !still_gone || !latest_joined || !self.members.contains_key(&position(&self.nodes[iu].id)) {
            return;
        }
        self.accuse(i, None);
    }

    /// Member `i` is declared dead by two of its monitors (on `side` of a partition, if any).
    fn accuse(&mut self, i: u32, side: Option<bool>) {
        let pos = position(&self.nodes[i as usize].id);
        let on_side = |j: u32, s: &Sim| side.is_none_or(|side| s.side(j) == side);
        let accusers: Vec<u32> = (self.members.range(pos.wrapping_add(1)..).chain(self.members.range(..pos)))
            .map(|(_, j)| *j)
            .filter(|j| *j != i && self.nodes[*j as usize].online && on_side(*j, self))
            .take(2)
            .collect();
        if accusers.len() < 2 {
            return;
        }
        let real = accusers.iter().fold(Event::new(&self.nodes[i as usize].id, self.unix(), What::Dead), |e, a| {
            let key = self.key(*a);
            e.signed_by(&key)
        });
        self.send(accusers[0], accusers[1], self.sizes.dead + MESSAGE_BYTES);
        self.members.remove(&pos);
        self.change(i, Happened::Dead, real, &accusers);
    }

    /// Member `i` reads its own death while alive: it signs a join of its own.
    fn refute(&mut self, i: u32) {
        let key = self.key(i);
        let since = self.states[i as usize].since;
        let real = Event::new(&self.nodes[i as usize].id, self.unix(), What::Joined { vnodes: 150, since, block: 0 })
            .signed_by(&key);
        self.members.insert(position(&self.nodes[i as usize].id), i);
        self.states[i as usize].status = Status::Member;
        self.change(i, Happened::Refuted, real, &[i]);
    }

    /// A newcomer past its probation, synced, is sponsored by its two would-be monitors.
    fn admit(&mut self, i: u32) {
        let id = self.nodes[i as usize].id;
        let pos = position(&id);
        let sponsors: Vec<u32> = (self.members.range(pos.wrapping_add(1)..).chain(self.members.range(..pos)))
            .map(|(_, j)| *j)
            .filter(|j| self.nodes[*j as usize].online && !self.cut(i, *j))
            .take(2)
            .collect();
        if sponsors.len() < 2.min(self.members.len()) {
            return;
        }
        let at = self.unix();
        let key = self.key(i);
        let mut real = Event::new(&id, at, What::Joined { vnodes: 150, since: at, block: 0 }).signed_by(&key);
        for s in &sponsors {
            let k = self.key(*s);
            real = real.signed_by(&k);
            // The request and its signature back.
            self.send(i, *s, self.sizes.refute + MESSAGE_BYTES);
            self.send(*s, i, 64.0 + MESSAGE_BYTES);
        }
        self.states[i as usize].since = at;
        self.states[i as usize].status = Status::Member;
        self.members.insert(pos, i);
        let mut holders = sponsors.clone();
        holders.push(i);
        self.change(i, Happened::Joined, real, &holders);
    }

    // --- Rounds ------------------------------------------------------------------------------

    fn slice(&mut self, s: u32) {
        let next = (s + 1) % SLICES;
        self.at(self.now + self.round() / f64::from(SLICES), Ev::Slice(next));
        let members = self.by_phase[s as usize].clone();
        for i in members {
            if self.nodes[i as usize].online {
                self.tick(i);
            }
        }
    }

    /// One round of member `i`: its view and links, its roster's exchange, its admission.
    fn tick(&mut self, i: u32) {
        let iu = i as usize;
        // Monitors and idle links are looked after every `LINKS_EVERY` rounds.
        let round = (self.now / self.round()) as u64;
        if (round + u64::from(i)) % SHUFFLE_EVERY == 0 && self.nodes[iu].mesh.len() >= VIEW {
            let out = self.nodes[iu].mesh[self.rng.below(VIEW)];
            self.nodes[iu].mesh.retain(|j| *j != out);
            self.nodes[out as usize].mesh.retain(|j| *j != i);
        }
        self.links(i, (round + u64::from(i)) % LINKS_EVERY == 0);
        match self.states[iu].status {
            Status::Syncing(_) if self.scenario.real_everywhere => self.pull_real(i),
            Status::Syncing(left) => {
                let Some(from) = self.partner(i) else { return };
                let sent = left.min(SNAPSHOT_RATE * self.round());
                let pages = (sent / ANSWER_BYTES as f64).ceil().max(1.0);
                self.send(i, from, pages * (MESSAGE_BYTES + 12.0));
                self.send(from, i, sent + pages * MESSAGE_BYTES);
                if self.measuring() {
                    self.figures.received.snapshots += sent;
                }
                // A lost page is asked for again next round.
                let pulled = if self.lost() { 0.0 } else { sent };
                if left - pulled <= 0.0 {
                    // Synced: it holds what its last page's sender held.
                    for s in 0..self.slots.len() {
                        if self.holds(from, s) {
                            self.hold(i, s);
                        }
                    }
                    let until = self.states[iu].arrived + PROBATION as f64;
                    self.states[iu].status = Status::Probation(until);
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
            for s in 0..self.slots.len() {
                self.free(s);
            }
        }
    }

    /// Whether a message is lost (`Scenario::loss`).
    fn lost(&mut self) -> bool {
        self.scenario.loss > 0.0 && (self.rng.below(1_000_000) as f64) < self.scenario.loss * 1e6
    }

    /// A random member of `i`'s view that has the roster.
    fn partner(&mut self, i: u32) -> Option<u32> {
        let n = self.nodes[i as usize].mesh.len();
        let ready = |j: u32, s: &Sim| !matches!(s.states[j as usize].status, Status::Syncing(_) | Status::Offline);
        if n == 0 {
            return None;
        }
        let start = self.rng.below(n);
        (0..n).map(|k| self.nodes[i as usize].mesh[(start + k) % n]).find(|j| ready(*j, self))
    }

    /// `i` compares rosters with a member of its view: digest, keys of the buckets that differ,
    /// the events each lacks.
    fn exchange(&mut self, i: u32) {
        let Some(j) = self.partner(i) else { return };
        if self.cut(i, j) {
            return;
        }
        // The digest went out; the rest of the exchange is lost with the scenario's odds.
        if self.lost() {
            self.send(i, j, self.sizes.digest + MESSAGE_BYTES);
            self.figures.lost_exchanges += 1;
            return;
        }
        if self.scenario.real_everywhere {
            self.exchange_real(i, j);
        }
        let sz = self.sizes;
        // With real rosters everywhere the real exchange above moved the events and counted
        // the bytes; the bits follow for the bookkeeping (deaths read, spread measured).
        let counted = !self.scenario.real_everywhere;
        if counted {
            self.send(i, j, sz.digest + MESSAGE_BYTES);
        }
        let (a, b) = (&self.states[i as usize], &self.states[j as usize]);
        let mut only_a = Vec::new();
        let mut only_b = Vec::new();
        let words = (self.slots.len() / 64 + 1).min(self.words);
        for w in 0..words {
            let (x, y) = (a.bits[w], b.bits[w]);
            let mut d = x ^ y;
            while d != 0 {
                let bit = d.trailing_zeros() as usize;
                d &= d - 1;
                let s = w * 64 + bit;
                if x & (1 << bit) != 0 {
                    only_a.push(s);
                } else {
                    only_b.push(s);
                }
            }
        }
        let backlog = self.states[i as usize].backlog;
        if only_a.is_empty() && only_b.is_empty() && backlog <= 0.0 {
            if !counted {
                return;
            }
            self.send(j, i, sz.empty_answer + MESSAGE_BYTES);
            if self.measuring() {
                self.figures.received.digests += sz.digest + sz.empty_answer + 2.0 * MESSAGE_BYTES;
            }
            return;
        }
        // The buckets that differ, and the entries each holds of them.
        let cuts = Cuts::at(self.unix());
        let mut buckets: Vec<usize> = (only_a.iter().chain(&only_b))
            .filter_map(|s| self.slots[*s])
            .map(|id| {
                cuts.bucket(
                    self.unix0 + self.changes[id].at as u64,
                    position(&self.nodes[self.changes[id].node as usize].id),
                )
            })
            .collect();
        if backlog > 0.0 {
            buckets.push(RECENT + 4);
        }
        buckets.sort_unstable();
        buckets.dedup();
        let keys: f64 = buckets.iter().map(|b| self.entries_in(&cuts, *b)).sum::<f64>() * sz.key;
        let bytes =
            |v: &[usize], s: &Sim| v.iter().filter_map(|x| s.slots[*x]).map(|id| s.changes[id].bytes).sum::<f64>();
        let (push, pull) = (bytes(&only_a, self), bytes(&only_b, self));
        let caught = backlog.min(2.0 * ANSWER_BYTES as f64);
        self.states[i as usize].backlog -= caught;
        if counted {
            self.send(j, i, keys + MESSAGE_BYTES);
            self.send(i, j, push + only_b.len() as f64 * sz.want + MESSAGE_BYTES);
            self.send(j, i, pull + caught + MESSAGE_BYTES);
        }
        if counted && self.measuring() {
            self.figures.received.digests += sz.digest + keys + 3.0 * MESSAGE_BYTES;
            self.figures.received.events += push + pull + caught;
        }
        for s in only_a {
            self.hold(j, s);
            self.free(s);
        }
        for s in only_b {
            self.hold(i, s);
            self.free(s);
        }
    }

    /// The real exchange between `i`'s and `j`'s rosters, `weft_p2p::roster` end to end: the
    /// digest, the answer, the follow-up and the events asked for, each counted at its encoded
    /// size.
    fn exchange_real(&mut self, i: u32, j: u32) {
        if self.states[i as usize].real.is_none() || self.states[j as usize].real.is_none() {
            return;
        }
        let (Some(mut a), Some(mut b)) = (self.states[i as usize].real.take(), self.states[j as usize].real.take())
        else {
            return;
        };
        let now = self.unix();
        let size = |v: &dyn erased::Encode| v.len() as f64 + MESSAGE_BYTES;
        let digest = a.digest(now);
        let answer = b.answer(&digest);
        let (asked, answered) = (size(&digest), size(&answer));
        self.send(i, j, asked);
        self.send(j, i, answered);
        let (keys, mut events) = (asked + answered, 0.0);
        if !answer.keys.is_empty() || !answer.events.is_empty() {
            for e in answer.events.iter().cloned() {
                let _ = a.apply(e, now, Trust::Member);
            }
            let up = a.follow_up(&answer, now);
            for e in up.events.iter().cloned() {
                let _ = b.apply(e, now, Trust::Member);
            }
            let back = b.events_for(&up.want);
            for e in back.iter().cloned() {
                let _ = a.apply(e, now, Trust::Member);
            }
            let (up, back) = (size(&up), size(&back));
            self.send(i, j, up);
            self.send(j, i, back);
            events += up + back;
        }
        if self.measuring() {
            self.figures.received.digests += keys;
            self.figures.received.events += events;
        }
        // A member that reads its own death while alive refutes it.
        let dead_here = |x: u32, r: &Roster, s: &Sim| {
            r.event_of(&s.nodes[x as usize].id).is_some_and(|e| e.what == What::Dead)
                && s.states[x as usize].latest.is_some_and(|l| s.changes[l].what == Happened::Dead)
        };
        let refute: Vec<u32> =
            [(i, &a), (j, &b)].into_iter().filter(|(x, r)| dead_here(*x, r, self)).map(|(x, _)| x).collect();
        self.states[i as usize].real = Some(a);
        self.states[j as usize].real = Some(b);
        for x in refute {
            self.refute(x);
        }
    }

    /// A newcomer pulls pages of the real roster of a member of its view, [`SNAPSHOT_RATE`]
    /// bytes a second.
    fn pull_real(&mut self, i: u32) {
        let Some(from) = self.partner(i) else { return };
        if self.states[i as usize].real.is_none() || self.states[from as usize].real.is_none() {
            return;
        }
        let (Some(mut mine), Some(theirs)) =
            (self.states[i as usize].real.take(), self.states[from as usize].real.take())
        else {
            return;
        };
        let now = self.unix();
        let mut budget = SNAPSHOT_RATE * self.round();
        let mut done = false;
        while budget > 0.0 {
            let after = self.states[i as usize].cursor;
            let page = theirs.snapshot(after, now);
            let bytes = erased::Encode::len(&page) as f64;
            self.send(i, from, MESSAGE_BYTES + 12.0);
            self.send(from, i, bytes + MESSAGE_BYTES);
            if self.measuring() {
                self.figures.received.snapshots += bytes;
            }
            budget -= bytes;
            if self.lost() {
                continue;
            }
            for e in page.events {
                let _ = mine.apply(e, now, Trust::Syncing);
            }
            match page.next {
                Some(next) => self.states[i as usize].cursor = Some(next),
                None => {
                    done = true;
                    break;
                }
            }
        }
        self.states[i as usize].real = Some(mine);
        self.states[from as usize].real = Some(theirs);
        if done {
            for s in 0..self.slots.len() {
                if self.holds(from, s) {
                    self.hold(i, s);
                }
            }
            let until = self.states[i as usize].arrived + PROBATION as f64;
            self.states[i as usize].status = Status::Probation(until);
        }
    }

    /// Entries of bucket `b`: the roster changes in its span (a share of the roster when old).
    fn entries_in(&self, cuts: &Cuts, b: usize) -> f64 {
        if b >= RECENT + weft_p2p::roster::digest::MID {
            return (self.members.len() as f64 / 16.0).ceil();
        }
        let (from, until) = cuts.span(b);
        // Changes up to a second: the running count of the last second before it.
        let upto = |sec: u64| {
            let k = self.per_second.partition_point(|(s, _)| *s < sec);
            if k == 0 {
                0
            } else {
                self.per_second[k - 1].1
            }
        };
        f64::from(upto(until) - upto(from))
    }

    fn send(&mut self, from: u32, to: u32, bytes: f64) {
        self.nodes[from as usize].up += bytes;
        self.nodes[from as usize].msgs += 1.0;
        self.nodes[to as usize].down += bytes;
        self.nodes[to as usize].msgs += 1.0;
    }

    // --- Links -------------------------------------------------------------------------------

    /// The members `i` keeps connections with: its view, its monitors and those it monitors
    /// (or, before it is a member, its would-be sponsors), its relays.
    fn wanted(&self, i: u32) -> Vec<u32> {
        let node = &self.nodes[i as usize];
        let mut want: Vec<u32> = node.mesh.iter().chain(&node.relays).copied().collect();
        if !matches!(self.states[i as usize].status, Status::Syncing(_) | Status::Offline) {
            let pos = position(&node.id);
            let after = self.members.range(pos.wrapping_add(1)..).chain(self.members.range(..pos));
            want.extend(after.map(|(_, j)| *j).filter(|j| *j != i && self.nodes[*j as usize].online).take(MONITORS));
            if self.states[i as usize].status == Status::Member {
                let before = self.members.range(..pos).rev().chain(self.members.range(pos.wrapping_add(1)..).rev());
                want.extend(
                    before.map(|(_, j)| *j).filter(|j| *j != i && self.nodes[*j as usize].online).take(MONITORS),
                );
            }
        }
        want.sort_unstable();
        want.dedup();
        want
    }

    /// Keeps `i`'s links: refills its view and reserves relays behind NAT; with `all`, dials
    /// its monitors too and lets go of connections neither side wants any more.
    fn links(&mut self, i: u32, all: bool) {
        let iu = i as usize;
        let gone: Vec<u32> = self.nodes[iu].mesh.iter().copied().filter(|j| !self.nodes[*j as usize].online).collect();
        self.nodes[iu].mesh.retain(|j| !gone.contains(j) && *j != i);
        let mut tries = 0;
        while self.nodes[iu].mesh.len() < VIEW && tries < 3 * VIEW && self.online > 1 {
            tries += 1;
            let j = self.rng.below(self.nodes.len()) as u32;
            let ok = j != i
                && self.nodes[j as usize].online
                && !self.nodes[iu].mesh.contains(&j)
                && self.nodes[j as usize].mesh.len() < VIEW_MAX
                && !self.cut(i, j);
            if ok && self.dial(i, j) {
                self.nodes[iu].mesh.push(j);
                self.nodes[j as usize].mesh.push(i);
            }
        }
        if !self.nodes[iu].public && self.nodes[iu].relays.len() < RELAYS {
            self.reserve_relays(i);
        }
        if !all {
            return;
        }
        for j in self.wanted(i) {
            if !self.nodes[iu].conns.contains_key(&j) && !self.cut(i, j) {
                self.dial(i, j);
            }
        }
        let held: Vec<u32> = self.nodes[iu].conns.keys().copied().collect();
        let mine = self.wanted(i);
        for j in held {
            let opened = self.nodes[iu].conns[&j].opened;
            // The other side wants it as its view or relay (a monitor link is wanted both ways).
            let theirs = &self.nodes[j as usize];
            if mine.contains(&j)
                || self.now - opened < IDLE_SECS / 10.0
                || theirs.mesh.contains(&i)
                || theirs.relays.contains(&i)
            {
                continue;
            }
            self.disconnect(i, j);
        }
    }

    fn reserve_relays(&mut self, i: u32) {
        let n = self.nodes.len();
        let mut tries = 0;
        while self.nodes[i as usize].relays.len() < RELAYS && tries < 20 {
            tries += 1;
            let r = self.rng.below(n) as u32;
            let relay = &self.nodes[r as usize];
            if r == i
                || !relay.online
                || !relay.public
                || relay.reservations >= MAX_RESERVATIONS
                || self.nodes[i as usize].relays.contains(&r)
            {
                continue;
            }
            if self.dial(i, r) {
                self.nodes[r as usize].reservations += 1;
                self.nodes[i as usize].relays.push(r);
            }
        }
    }

    /// `i` dials `j` (through a relay of `j`'s when it is behind NAT).
    fn dial(&mut self, i: u32, j: u32) -> bool {
        let counted = u64::from(self.measuring());
        self.nodes[i as usize].dials += counted;
        if !self.nodes[j as usize].online || self.cut(i, j) {
            self.nodes[i as usize].refused += counted;
            return false;
        }
        if self.nodes[i as usize].conns.contains_key(&j) {
            return true;
        }
        let relay = if self.nodes[j as usize].public {
            None
        } else {
            let relays = self.nodes[j as usize].relays.clone();
            match relays
                .into_iter()
                .find(|r| self.nodes[*r as usize].online && self.nodes[*r as usize].circuits < MAX_CIRCUITS)
            {
                Some(r) => Some(r),
                None => {
                    self.nodes[i as usize].refused += counted;
                    return false;
                }
            }
        };
        for k in [i, j] {
            self.nodes[k as usize].up += HANDSHAKE_BYTES;
            self.nodes[k as usize].down += HANDSHAKE_BYTES;
            self.nodes[k as usize].msgs += 8.0;
        }
        if let Some(r) = relay {
            self.nodes[r as usize].up += 2.0 * HANDSHAKE_BYTES;
            self.nodes[r as usize].down += 2.0 * HANDSHAKE_BYTES;
        }
        if counted == 1 {
            self.figures.received.handshakes += if relay.is_some() { 4.0 } else { 2.0 } * HANDSHAKE_BYTES;
        }
        let punched = relay.is_none() || (self.rng.below(1000) as f64) < self.scenario.punch * 1000.0;
        let relay = if punched { None } else { relay };
        if let Some(r) = relay {
            self.nodes[r as usize].circuits += 1;
        }
        let conn = Conn { dialer: i, kept: true, relay, opened: self.now };
        self.nodes[i as usize].conns.insert(j, conn);
        self.nodes[j as usize].conns.insert(i, conn);
        self.nodes[j as usize].inbound += 1;
        true
    }

    fn disconnect(&mut self, a: u32, b: u32) {
        let Some(c) = self.nodes[a as usize].conns.remove(&b) else { return };
        self.nodes[b as usize].conns.remove(&a);
        let inbound_side = if c.dialer == a { b } else { a };
        let n = &mut self.nodes[inbound_side as usize];
        n.inbound = n.inbound.saturating_sub(1);
        if let Some(r) = c.relay {
            let relay = &mut self.nodes[r as usize];
            relay.circuits = relay.circuits.saturating_sub(1);
        }
        for (x, y) in [(a, b), (b, a)] {
            let node = &mut self.nodes[x as usize];
            node.mesh.retain(|m| *m != y);
            if node.relays.contains(&y) {
                node.relays.retain(|m| *m != y);
                let r = &mut self.nodes[y as usize];
                r.reservations = r.reservations.saturating_sub(1);
            }
        }
    }

    // --- Partitions --------------------------------------------------------------------------

    fn side(&self, i: u32) -> bool {
        self.scenario.partition.is_some_and(|p| p.holds(self.scenario.seed, i))
    }

    /// The partition begins (connections across it close, and each side's monitors declare
    /// dead the members they lost) or heals.
    fn partition(&mut self, on: bool) {
        self.partitioned = on;
        if !on {
            return;
        }
        for a in 0..self.nodes.len() as u32 {
            let across: Vec<u32> = self.nodes[a as usize].conns.keys().copied().filter(|b| self.cut(a, *b)).collect();
            for b in across {
                self.disconnect(a, b);
            }
        }
        // A member two of whose three monitors are across the cut is declared dead there.
        let members: Vec<(u64, u32)> = self.members.iter().map(|(p, j)| (*p, *j)).collect();
        for (pos, m) in members {
            if !self.nodes[m as usize].online {
                continue;
            }
            let monitors: Vec<u32> = (self.members.range(pos.wrapping_add(1)..).chain(self.members.range(..pos)))
                .map(|(_, j)| *j)
                .filter(|j| *j != m && self.nodes[*j as usize].online)
                .take(MONITORS)
                .collect();
            let across = monitors.iter().filter(|j| self.side(**j) != self.side(m)).count();
            if across >= 2 {
                self.accuse(m, Some(!self.side(m)));
            }
        }
    }

    // --- Measuring ---------------------------------------------------------------------------

    fn sample(&mut self) {
        let now = self.now;
        self.at(now + 60.0, Ev::Sample);
        let measuring = self.measuring();
        let (mut ups, mut downs, mut msgs, mut conns) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for node in self.nodes.iter_mut() {
            if !node.online {
                (node.up, node.down, node.msgs) = (0.0, 0.0, 0.0);
                continue;
            }
            let pings = node.conns.len() as f64 * PING_BYTES_PER_SEC * 60.0;
            if measuring {
                self.figures.received.pings += pings;
            }
            node.up += pings;
            node.down += pings;
            node.msgs += node.conns.len() as f64 * 8.0;
            conns.push(node.conns.len() as f64);
            if let Some(at_join) = node.joined_shared {
                let whole = at_join.up == 0.0 && at_join.down == 0.0 && at_join.msgs == 0.0;
                if measuring && whole {
                    ups.push(node.up / 60.0);
                    downs.push(node.down / 60.0);
                    msgs.push(node.msgs / 60.0);
                }
            }
            node.joined_shared = Some(Shared::default());
            (node.up, node.down, node.msgs) = (0.0, 0.0, 0.0);
        }
        if measuring {
            self.figures.received.member_secs += 60.0 * self.online as f64;
            self.figures.up.extend(ups);
            self.figures.down.extend(downs);
            self.figures.msgs.extend(msgs);
            self.figures.connections.extend(conns);
            self.figures.online.push(self.online as f64);
            self.figures.in_flight.push(self.slots.iter().filter(|s| s.is_some()).count() as f64);
        }
        self.measure_rings(measuring);
    }

    fn measure_rings(&mut self, measuring: bool) {
        let unix = self.unix();
        for o in self.observers.clone() {
            if let (true, Some(roster)) = (self.nodes[o as usize].online, self.states[o as usize].real.as_mut()) {
                roster.ring(unix);
            }
        }
        let rosters: Vec<&Roster> = (self.observers.iter())
            .filter(|o| self.nodes[**o as usize].online)
            .filter_map(|o| self.states[*o as usize].real.as_deref())
            .collect();
        let sizes: Vec<f64> = rosters.iter().map(|r| r.len() as f64).collect();
        let rings: Vec<&weft_p2p::Ring> = rosters.iter().map(|r| r.built_ring()).collect();
        let (nodes, index) = (&self.nodes, &self.index);
        let online = |p: &PeerId| index.get(p).is_some_and(|j| nodes[*j as usize].online);
        // The ring every roster would build had it every event: URLs a member sends by its own
        // ring to another owner go to a member that no longer (or not yet) owns the host.
        let sinces: Vec<(PeerId, u64)> =
            self.members.values().map(|j| (self.nodes[*j as usize].id, self.states[*j as usize].since)).collect();
        let (weights, _) = weft_p2p::roster::admitted(&sinces, weft_p2p::DEFAULT_VNODES, unix);
        let truth = self.truth.rebuilt(weights);
        let misrouted =
            rings.iter().map(|r| rings::misrouted(r, &truth, &self.hosts)).sum::<f64>() / rings.len().max(1) as f64;
        let Some(compared) = rings::compare(&rings, &self.hosts, online) else {
            self.truth = truth;
            return;
        };
        let view = sizes.iter().sum::<f64>() / sizes.len().max(1) as f64 / self.online.max(1) as f64;
        let quiet = self.now - self.last_change;
        if measuring {
            self.figures.misrouted.push(misrouted);
            self.figures.disagreement.push(compared.disagreement);
            self.figures.owner_gone.push(compared.owner_gone);
            self.figures.view.push(view);
        }
        if self.now >= self.churn_until && quiet >= 59.0 {
            self.figures.quiet_disagreement.push((quiet, compared.disagreement));
        }
        self.truth = truth;
    }
}

#[cfg(test)]
mod tests {
    use super::Sizes;

    #[test]
    fn messages_are_the_sizes_of_their_real_encodings() {
        let s = Sizes::real();
        assert!((300.0..450.0).contains(&s.joined), "{s:?}");
        assert!(s.refute < s.joined && s.left < 160.0 && s.dead < s.joined, "{s:?}");
        assert!((250.0..400.0).contains(&s.digest), "{s:?}");
        assert!((10.0..25.0).contains(&s.key), "{s:?}");
    }
}
