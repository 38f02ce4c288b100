//! Today's membership at scale: every member heartbeats on one gossipsub topic and must have
//! had a connection with every other member within `PRESENCE_FOR` to count it; every member
//! gossips its routing summary to all.
//!
//! The *observers* — members of the always-on core, public, spread over the plane — each run
//! the real state machine, `heartbeats::Members` (the code the live network ran before the roster), on virtual time: the heartbeats
//! they hear (when gossip would bring them), the connections they have (when the limits let
//! them), their ticks, expiries and dials, and the ring they build. Ring disagreement, a join's
//! time to every ring, and the owners that are gone are measured on their rings.
//!
//! The other members cost too much to hold that way (a table of 1,000 members holds ~40 MB
//! of rings: the ring, the ring without itself and up to 16 replaced ones), so they follow the
//! same rules in a compact table of their own ([`Compact`]). They publish, dial and hold
//! connections as the observers do, so every member's traffic and connections are counted
//! alike.
//!
//! Connections follow rust-libp2p's and Weft's settings: at most `p2p.max_connections` (256)
//! established, of which at most 224 inbound; an idle connection closes after 5 minutes unless
//! gossipsub holds its peer in the mesh; a member behind NAT is reached through one of its two
//! relays (64 circuits each) and hole punching makes the connection direct or not. Gossip's
//! bytes are counted per message from [`super::gossip`]'s sizes and flood measurements; pings
//! (every 15 s on every connection), IHAVE gossip and connection handshakes on top.
//!
//! `connections.rs` holds the dials and closes under those limits, `sampling.rs` the minute's
//! figures.

mod connections;
mod sampling;
use super::compact::Compact;
use super::gossip::{self, Flood, Sizes};
use super::heartbeats::{Change, Members};
use super::member::{draw_public, Node, Relaying, Shared, Table, RELAYS};
use super::sessions::{Kind, SessionModel};
use super::{Figures, Scenario};
use crate::rng::Rng;
use libp2p::{Multiaddr, PeerId};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::{Duration, Instant};

/// A summary is gossiped every minute, and 10 s after a member joined (`network::querying`).
const SUMMARY_EVERY: f64 = 60.0;
const SUMMARY_AFTER_JOIN: f64 = 10.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    Tick(u32, u32),
    Up(u32),
    Down(u32, u32),
    Deliver {
        to: u32,
        from: u32,
        session: u32,
        leaving: bool,
    },
    Close {
        a: u32,
        b: u32,
        opened_ms: u64,
    },
    Sample,
    /// The partition begins (true) or heals (false).
    Partition(bool),
}

pub struct Sim {
    scenario: Scenario,
    sessions: SessionModel,
    rng: Rng,
    nodes: Vec<Node>,
    index: HashMap<PeerId, u32>,
    observers: Vec<u32>,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    now: f64,
    base: Instant,
    unix0: u64,
    sizes: Sizes,
    small: Flood,
    large: Flood,
    shared: Shared,
    /// Messages published this minute on each topic (for IHAVE's sizes).
    published: [f64; 2],
    online: usize,
    /// Joins waiting to be on every observer's ring: (when, observers that have it).
    joining: HashMap<u32, (f64, Vec<bool>)>,
    hosts: Vec<String>,
    /// When membership last changed (a join or a leave).
    last_change: f64,
    churn_until: f64,
    /// The partition is in force (see [`Scenario::partition`]).
    partitioned: bool,
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
        for (i, kind) in kinds.into_iter().enumerate() {
            let public = draw_public(kind, scenario.nat_share, &mut rng);
            nodes.push(Node::new(scenario.seed, i, kind, public));
        }
        let index = nodes.iter().enumerate().map(|(i, n)| (n.id, i as u32)).collect();
        // Calibration floods over a mesh of up to 2,000 members (copies per member settle long
        // before that size).
        let n = scenario.members.clamp(10, 2000);
        let mesh = gossip::random_mesh(n, &mut rng);
        let pos: Vec<(f64, f64)> =
            (0..n).map(|_| (rng.below(10_000) as f64 / 1e4, rng.below(10_000) as f64 / 1e4)).collect();
        let sizes = Sizes::real(32, 384);
        let small = gossip::flood(&mesh, &pos, sizes.heartbeat, 20, &mut rng);
        let large = gossip::flood(&mesh, &pos, sizes.summary, 20, &mut rng);
        let hosts = (0..scenario.hosts).map(|i| format!("host-{i}.example")).collect();
        let churn_until = scenario.minutes * 60.0 - scenario.quiet_minutes * 60.0;
        Sim {
            scenario: scenario.clone(),
            sessions,
            rng,
            nodes,
            index,
            observers: Vec::new(),
            queue: BinaryHeap::new(),
            seq: 0,
            now: 0.0,
            base: Instant::now(),
            unix0: 1_780_000_000,
            sizes,
            small,
            large,
            shared: Shared::default(),
            published: [0.0; 2],
            online: 0,
            joining: HashMap::new(),
            hosts,
            last_change: 0.0,
            churn_until,
            partitioned: false,
            figures: Figures::default(),
        }
    }

    /// Whether `a` and `b` cannot reach each other now.
    fn cut(&self, a: u32, b: u32) -> bool {
        let side = |i: u32| self.scenario.partition.is_some_and(|p| p.holds(self.scenario.seed, i));
        self.partitioned && side(a) != side(b)
    }

    /// The partition begins: connections across it close, and nothing crosses it until it
    /// heals.
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
    }

    fn measuring(&self) -> bool {
        self.now >= self.scenario.warmup_minutes * 60.0
    }

    fn at(&mut self, secs: f64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((ms(secs), self.seq, ev)));
    }

    fn instant(&self) -> Instant {
        self.base + Duration::from_secs_f64(self.now)
    }

    /// Runs the scenario to its end and returns what it measured.
    pub fn run(mut self) -> Figures {
        let started = std::time::Instant::now();
        // Observers: the first core members, always on.
        let observers = self.scenario.observers.min(self.nodes.iter().filter(|n| n.kind == Kind::Core).count());
        for i in 0..observers {
            self.nodes[i].public = true;
            self.nodes[i].observer = Some(i);
            self.observers.push(i as u32);
        }
        // The starting state: who is online, and when each changes. Those online join over the
        // first minute (a network that formed), observers first.
        for i in 0..self.nodes.len() {
            let kind = self.nodes[i].kind;
            if self.scenario.stable {
                // Members arrive over the first minute and stay.
                if i < self.scenario.members {
                    let at = if i < observers { i as f64 * 0.01 } else { 1.0 + self.rng.below(60_000) as f64 / 1000.0 };
                    self.at(at, Ev::Up(i as u32));
                    self.nodes[i].ending = true;
                }
                continue;
            }
            if kind == Kind::Newcomer {
                continue;
            }
            let start =
                if i < observers { (i as f64 * 0.01, None) } else { self.sessions.first_arrival(kind, &mut self.rng) };
            self.at(start.0, Ev::Up(i as u32));
            if let Some(ends) = start.1 {
                self.pending_down(i as u32, ends);
            }
        }
        let newcomers = self.nodes.iter().position(|n| n.kind == Kind::Newcomer).unwrap_or(self.nodes.len());
        if !self.scenario.stable {
            let arrivals = self.sessions.bursts(self.scenario.members, self.churn_until, &mut self.rng);
            for (k, at) in arrivals.into_iter().enumerate().take(self.nodes.len() - newcomers) {
                self.at(at, Ev::Up((newcomers + k) as u32));
            }
        }
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
                Ev::Tick(i, s) => self.tick(i, s),
                Ev::Up(i) => self.up(i),
                Ev::Down(i, s) => self.down(i, s),
                Ev::Deliver { to, from, session, leaving } => self.deliver(to, from, session, leaving),
                Ev::Close { a, b, opened_ms } => self.close_idle(a, b, opened_ms),
                Ev::Sample => self.sample(),
                Ev::Partition(on) => self.partition(on),
            }
        }
        self.figures.wall_secs = started.elapsed().as_secs_f64();
        self.figures.dials = self.nodes.iter().map(|n| n.dials).sum();
        self.figures.refused_dials = self.nodes.iter().map(|n| n.refused).sum();
        self.figures.identities = self.nodes.len();
        self.figures.heartbeat_bytes = self.sizes.heartbeat;
        self.figures.summary_bytes = self.sizes.summary;
        self.figures.copies_small = self.small.copies;
        self.figures.copies_large = self.large.copies;
        self.figures
    }

    /// Schedules a session's end; churn stops for the quiet span at the end (sessions due then
    /// end after the run).
    fn pending_down(&mut self, i: u32, at: f64) {
        self.nodes[i as usize].ending = true;
        if at < self.churn_until {
            // The session running, or (before it starts) the next one.
            let node = &self.nodes[i as usize];
            let s = if node.online { node.session } else { node.session + 1 };
            self.at(at, Ev::Down(i, s));
        }
    }

    fn up(&mut self, i: u32) {
        let now = self.now;
        if now >= self.churn_until && now > 61.0 {
            return;
        }
        let iu = i as usize;
        if self.nodes[iu].online {
            return;
        }
        self.online += 1;
        self.last_change = now;
        let unix = self.unix0 + now as u64;
        let tick = self.scenario.heartbeat_secs;
        let (instant, ttl) = (
            self.instant(),
            Duration::from_secs_f64(self.scenario.heartbeat_secs * f64::from(self.scenario.missed_heartbeats)),
        );
        {
            let node = &mut self.nodes[iu];
            node.come_online(unix, self.shared);
            node.table = match node.observer {
                Some(_) => {
                    let me = node.heartbeat(false, tick as u32);
                    Table::Real(Box::new(
                        Members::started_at(node.id, me, ttl, weft_p2p::DEFAULT_VNODES, instant, unix)
                            .beating_every(Duration::from_secs_f64(tick)),
                    ))
                }
                None => Table::Compact(Compact::default()),
            };
        }
        // Everyone online hears of it (the observers by its heartbeats, as they come); it hears
        // of everyone within their periods.
        let session = self.nodes[iu].session;
        let period_new = tick;
        let mut heard: Vec<(u32, u32, f64)> = Vec::new();
        for j in 0..self.nodes.len() {
            if j == iu || !self.nodes[j].online {
                continue;
            }
            let period_j = self.period(j);
            let delay = self.rng.below(ms(period_new) as usize) as f64 / 1000.0;
            let session_j = self.nodes[j].session;
            let at_j = now + self.rng.below(ms(period_j) as usize) as f64 / 1000.0;
            heard.push((j as u32, session_j, at_j));
            let node = &mut self.nodes[j];
            node.republish = true;
            if let Table::Compact(table) = &mut node.table {
                table.hear(i, session, now + delay);
            }
        }
        if let Table::Compact(table) = &mut self.nodes[iu].table {
            for (peer, session, at) in heard {
                table.hear(peer, session, at);
            }
        }
        // Its first heartbeat goes out at its first tick, a moment from now.
        self.at(now + 0.05, Ev::Tick(i, session));
        // The mesh: gossipsub grafts peers among the members it connects to first.
        let online: Vec<u32> =
            (0..self.nodes.len() as u32).filter(|j| *j != i && self.nodes[*j as usize].online).collect();
        for _ in 0..gossip::MESH_N * 3 {
            if self.nodes[iu].mesh.len() >= gossip::MESH_N || online.is_empty() {
                break;
            }
            let j = online[self.rng.below(online.len())];
            if self.nodes[j as usize].mesh.len() < gossip::MESH_N_HIGH
                && !self.nodes[iu].mesh.contains(&j)
                && self.dial(i, j, true)
            {
                self.nodes[iu].mesh.push(j);
                self.nodes[j as usize].mesh.push(i);
            }
        }
        if !self.nodes[iu].public {
            self.reserve_relays(i);
        }
        if self.nodes[iu].observer.is_none() {
            let mut have = vec![false; self.observers.len()];
            for (k, o) in self.observers.iter().enumerate() {
                let node = &self.nodes[*o as usize];
                have[k] = !node.online || matches!(&node.table, Table::Real(m) if m.is_member(&self.nodes[iu].id));
            }
            self.joining.insert(i, (now, have));
        }
        // Its session's end (the starting members' ends were drawn with their state).
        if self.nodes[iu].observer.is_none() && !self.nodes[iu].ending {
            let kind = self.nodes[iu].kind;
            let length = self.sessions.session_secs(kind, &mut self.rng);
            self.pending_down(i, now + length);
        }
    }

    fn down(&mut self, i: u32, session: u32) {
        let iu = i as usize;
        if !self.nodes[iu].online || self.nodes[iu].session != session {
            return;
        }
        let now = self.now;
        self.last_change = now;
        let graceful = (self.rng.below(1000) as f64) < self.sessions.graceful * 1000.0;
        if graceful {
            self.publish(i, 0, true);
        }
        let peers: Vec<u32> = self.nodes[iu].conns.keys().copied().collect();
        for j in peers {
            self.disconnect(i, j);
        }
        // Circuits through it close; members that reserved on it reserve elsewhere at their tick.
        for node in &mut self.nodes {
            node.relays.retain(|r| *r != i);
        }
        let node = &mut self.nodes[iu];
        node.go_offline(self.scenario.stable);
        self.online -= 1;
        self.joining.remove(&i);
        let kind = node.kind;
        if kind != Kind::Newcomer {
            let back = now + self.sessions.downtime_secs(kind, &mut self.rng);
            if back < self.churn_until {
                self.at(back, Ev::Up(i));
            }
        }
    }

    /// `i`'s heartbeat period as `Members::period` computes it from the members it counts.
    fn period(&self, i: usize) -> f64 {
        self.nodes[i].period(self.scenario.heartbeat_secs)
    }

    /// Gossips `i`'s heartbeat (topic 0) or summary (topic 1): its own flood to every
    /// connected peer, the mesh's forwards shared by every member, and the observers' copies.
    fn publish(&mut self, i: u32, topic: usize, leaving: bool) {
        let (size, flood) =
            if topic == 0 { (self.sizes.heartbeat, &self.small) } else { (self.sizes.summary, &self.large) };
        let bytes = (size + gossip::FRAMING) as f64;
        let fanout = self.nodes[i as usize].conns.len() as f64;
        let online = self.online.max(1) as f64;
        self.published[topic] += 1.0;
        let node = &mut self.nodes[i as usize];
        node.up += fanout * bytes;
        node.msgs += fanout;
        self.shared.down += fanout * bytes / online;
        self.shared.up += flood.copies * bytes;
        self.shared.down += flood.copies * bytes;
        self.shared.msgs += fanout / online + 2.0 * flood.copies;
        if self.measuring() {
            let total = fanout * bytes + online * flood.copies * bytes;
            if topic == 0 {
                self.figures.received.heartbeats += total;
            } else {
                self.figures.received.summaries += total;
            }
        }
        if topic != 0 {
            return;
        }
        let session = self.nodes[i as usize].session;
        for k in 0..self.observers.len() {
            let o = self.observers[k];
            if o == i || !self.nodes[o as usize].online {
                continue;
            }
            let delays = &self.small.delays;
            let delay = if delays.is_empty() { 0.05 } else { delays[self.rng.below(delays.len())] };
            self.at(self.now + delay, Ev::Deliver { to: o, from: i, session, leaving });
        }
    }

    fn tick(&mut self, i: u32, session: u32) {
        let iu = i as usize;
        if !self.nodes[iu].online || self.nodes[iu].session != session {
            return;
        }
        let now = self.now;
        let tick = self.scenario.heartbeat_secs;
        self.at(now + tick, Ev::Tick(i, session));
        let period = self.period(iu);
        if now - self.nodes[iu].beat_at >= period - tick / 2.0 {
            self.nodes[iu].beat_at = now;
            self.publish(i, 0, false);
        }
        let since = now - self.nodes[iu].summary_at;
        let due = since >= SUMMARY_EVERY || (self.nodes[iu].republish && since >= SUMMARY_AFTER_JOIN);
        if self.scenario.summaries && due {
            self.nodes[iu].summary_at = now;
            self.nodes[iu].republish = false;
            self.publish(i, 1, false);
        }
        let to_dial = match self.nodes[iu].observer {
            Some(_) => self.tick_real(i),
            None => self.tick_compact(i),
        };
        for j in to_dial {
            self.dial(i, j, false);
        }
        // gossipsub grafts below `mesh_n_low`, among the members it is connected to.
        if self.nodes[iu].mesh.len() < gossip::MESH_N_LOW {
            let candidates: Vec<u32> = (self.nodes[iu].conns.iter())
                .filter(|(j, _)| {
                    !self.nodes[iu].mesh.contains(j) && self.nodes[**j as usize].mesh.len() < gossip::MESH_N_HIGH
                })
                .map(|(j, _)| *j)
                .collect();
            for j in candidates.into_iter().take(gossip::MESH_N - self.nodes[iu].mesh.len()) {
                self.nodes[iu].mesh.push(j);
                self.nodes[j as usize].mesh.push(i);
                for (a, b) in [(i, j), (j, i)] {
                    if let Some(c) = self.nodes[a as usize].conns.get_mut(&b) {
                        c.kept = true;
                    }
                }
            }
        }
        if !self.nodes[iu].public && self.nodes[iu].relays.len() < RELAYS {
            self.reserve_relays(i);
        }
    }

    /// An observer's tick, as `network::heartbeats::on_heartbeat` runs it: members it is
    /// connected to are present, the table expires what it must, and says whom to dial.
    fn tick_real(&mut self, i: u32) -> Vec<u32> {
        let now = self.instant();
        let connected: Vec<(PeerId, Multiaddr)> = self.nodes[i as usize]
            .conns
            .keys()
            .map(|j| (self.nodes[*j as usize].id, self.nodes[*j as usize].addr.clone()))
            .collect();
        let Table::Real(members) = &mut self.nodes[i as usize].table else { return Vec::new() };
        let mut changes = Vec::new();
        for (peer, addr) in &connected {
            changes.extend(members.present(peer, addr, now));
        }
        changes.extend(members.expire(now));
        let dial: Vec<PeerId> = members.to_dial(now).into_iter().map(|(p, _)| p).collect();
        self.changes(i, changes);
        dial.iter().filter_map(|p| self.index.get(p).copied()).collect()
    }

    /// A compact member's tick (see [`Compact::tick`]).
    fn tick_compact(&mut self, i: u32) -> Vec<u32> {
        let (now, period) = (self.now, self.period(i as usize));
        let Table::Compact(table) = &mut self.nodes[i as usize].table else { return Vec::new() };
        let mut table = std::mem::take(table);
        let (nodes, rng) = (&self.nodes, &mut self.rng);
        let present = |peer: u32, session: u32| nodes[peer as usize].online && nodes[peer as usize].session == session;
        let connected = |peer: u32| nodes[i as usize].conns.contains_key(&peer);
        let dial = table.tick(now, period, present, connected, rng);
        self.nodes[i as usize].table = Table::Compact(table);
        dial
    }

    /// A heartbeat reaches observer `to`, as `network::heartbeats::on_gossip` takes it.
    fn deliver(&mut self, to: u32, from: u32, session: u32, leaving: bool) {
        let (tu, fu) = (to as usize, from as usize);
        if self.cut(to, from) {
            return;
        }
        if !self.nodes[tu].online || (self.nodes[fu].session != session) || (!leaving && !self.nodes[fu].online) {
            return;
        }
        let now = self.instant();
        let via = match self.nodes[tu].mesh.first() {
            Some(m) => self.nodes[*m as usize].id,
            None => self.nodes[fu].id,
        };
        let every = self.period(fu).round() as u32;
        let hb = self.nodes[fu].heartbeat(leaving, every);
        let remote = self.nodes[tu].conns.contains_key(&from).then(|| self.nodes[fu].addr.clone());
        let Table::Real(m) = &mut self.nodes[tu].table else { return };
        m.alive(&via, now);
        let before = m.candidates();
        let change = m.observe(hb, via, remote.as_ref(), now);
        let dial: Vec<PeerId> =
            if m.candidates() > before { m.to_dial(now).into_iter().map(|(p, _)| p).collect() } else { Vec::new() };
        self.changes(to, change.into_iter().collect());
        for p in dial {
            if let Some(j) = self.index.get(&p).copied() {
                self.dial(to, j, false);
            }
        }
    }

    /// Follows observer `o`'s member changes: a join reaching every observer's ring.
    fn changes(&mut self, o: u32, changes: Vec<Change>) {
        let Some(k) = self.nodes[o as usize].observer else { return };
        for change in changes {
            self.figures.ring_changes += 1;
            if let Change::Joined(peer) = change {
                let Some(j) = self.index.get(&peer).copied() else { continue };
                let now = self.now;
                let online = |x: &u32| self.nodes[*x as usize].online;
                let waiting: Vec<bool> = self.observers.iter().map(|x| !online(x)).collect();
                if let Some((since, have)) = self.joining.get_mut(&j) {
                    have[k] = true;
                    for (h, w) in have.iter_mut().zip(waiting) {
                        *h |= w;
                    }
                    if have.iter().all(|h| *h) {
                        let delay = now - *since;
                        self.joining.remove(&j);
                        if now >= self.scenario.warmup_minutes * 60.0 {
                            self.figures.join_secs.push(delay);
                        }
                    }
                }
            }
        }
    }
}

impl Relaying for Sim {
    fn members(&mut self) -> &mut [Node] {
        &mut self.nodes
    }

    fn draw(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn dial_relay(&mut self, i: u32, r: u32) -> bool {
        self.dial(i, r, true)
    }
}
