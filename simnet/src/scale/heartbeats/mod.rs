//! The membership the roster (`weft_p2p::roster`) replaced, kept here so that the simulator
//! measures the two designs side by side (`weft-simnet scale --design today`): it is the code
//! the live network ran until protocol `/weft/0.2.0`, moved, not rewritten.
//!
//! Who is in the network: members announce themselves with a heartbeat on a gossipsub topic
//! and are dropped after missing a few. The member set — this node included — is what the
//! hash ring is built from, so two nodes that heard the same heartbeats assign every host to
//! the same member.
//!
//! A heartbeat alone does not make a member: it is signed, but keys cost nothing, and one
//! connection can relay the heartbeats of a hundred made-up identities (which then own most of
//! the ring, and every URL sent to them is lost). A peer heard of becomes a *candidate*; it is
//! counted only once this node has had an authenticated connection with it (the network dials
//! it at the addresses it announces), and stays counted only while that happens again within
//! [`PRESENCE_FOR`]. Candidates are capped in all and per peer that relayed them, a candidate
//! that cannot be reached is ignored for a while, and at most [`MAX_MEMBERS_PER_PREFIX`]
//! members may come from one public address block.
//!
//! A member is also *admitted gradually*: a newcomer holds a quarter of its ring points at
//! first and its full share after [`ADMISSION_STAGES`] steps of [`ADMISSION_STEP`], so that a
//! crowd of real nodes arriving together (rented for an hour to swallow URLs) takes a small
//! part of the ring while it lasts. Every node must compute the same ring, so a member's age
//! cannot come from when each node happened to hear of it: it comes from the member's own
//! claim, [`Heartbeat::joined`], which every node reads alike. A claim can be forged to look
//! old, so a node that *saw* a member arrive holds it to that: the claim counts back at most
//! [`CLAIM_TOLERANCE`] before this node first met it. Only nodes that started after a forger
//! arrived believe it, and only until it is as old as it said. Points are relative to the
//! oldest member's stage, so a network whose members all started together (a fresh network,
//! a test) has the plain ring from the first second.

mod heartbeat;

pub use heartbeat::{Heartbeat, HeartbeatError, MAX_HEARTBEAT_BYTES, TOPIC};
mod rings;
use departures::{quorum, Departures};
use libp2p::{Multiaddr, PeerId};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};
use weft_p2p::membership::{ADMISSION_STAGES, ADMISSION_STEP, FORMER_RINGS_FOR, MAX_MEMBERS_PER_PREFIX};
use weft_p2p::reachability::address_block;
use weft_p2p::ring::Ring;

/// At most this many replaced rings are remembered (a flapping network must not grow it:
/// 16 rings of 100 members are ~4 MB).
const FORMER_RINGS: usize = 16;

/// A member counts while this node had a connection with it within this long (idle
/// connections close after a few minutes; the network dials a member again before this ends).
pub const PRESENCE_FOR: Duration = Duration::from_secs(600);
/// A member this node is connected to is dropped only after this many times the ttl without
/// a sign of life; one it is not connected to, after the ttl. At 50 nodes on two cores every
/// node was starved of CPU for seconds at a time: heartbeats queued for it were dropped, pings
/// timed out while their streams were negotiated, and members whose connections stood were
/// dropped ~1,000 times in two minutes, each drop moving hosts and cells. A process that
/// exits closes its connections, so only a member hung with its connections open waits the
/// longer time.
pub const CONNECTED_GRACE: u32 = 4;
/// Peers heard of but not yet reached, in all ...
pub const MAX_CANDIDATES: usize = 256;
/// ... and relayed by one peer: a newcomer hears the whole network through its bootstrap peer
/// at first, and takes it in over a few heartbeats; a peer relaying made-up identities fills
/// its own share and no more.
pub const MAX_CANDIDATES_PER_SOURCE: usize = 16;
/// A candidate not reached within this long is ignored for [`UNREACHED_FIRST`], twice as
/// long each time it fails again, at most [`UNREACHED_FOR`] — unless its heartbeat comes over
/// a connection with it (it was reachable after all). Ignoring it for the full time at once
/// kept four honest members of fifty out of a third of the nodes' rings for ten minutes: on a
/// box loaded to 170 at the start, their dials took longer than [`REACH_WITHIN`].
pub const REACH_WITHIN: Duration = Duration::from_secs(30);
pub const UNREACHED_FIRST: Duration = Duration::from_secs(60);
pub const UNREACHED_FOR: Duration = Duration::from_secs(600);
/// At most this many unreachable candidates are remembered (the oldest go first).
const MAX_UNREACHED: usize = 4096;
/// A candidate is dialled again after this long without an answer.
const REDIAL_AFTER: Duration = Duration::from_secs(5);
/// How far before this node first met a member its claim to have joined may go: the time a
/// member can take to be reached by everyone (a candidate that failed is tried again after
/// [`UNREACHED_FOR`]), and clocks that are a little off.
pub const CLAIM_TOLERANCE: Duration = Duration::from_secs(15 * 60);
/// Members met in this node's first minutes were there before it: their claims are taken as
/// they are.
pub const SETTLE: Duration = Duration::from_secs(120);
/// When this node first met each peer is kept this long after it was last a member ...
const FIRST_MET_FOR: Duration = Duration::from_secs(24 * 3600);
/// ... for at most this many peers.
const MAX_FIRST_MET: usize = 4096;

/// Up to this many members, each heartbeats at the configured period; beyond it the period
/// stretches in proportion, so a node hears at most this many heartbeats a period however large
/// the network. Every member hears every heartbeat, several copies of it through gossipsub's
/// mesh, and each copy wakes a connection, decrypts, decodes and checks a signature: at 20
/// members, heartbeats every second instead of every five more than double an idle node's CPU,
/// and that cost grows with the network's size.
pub const FULL_RATE_MEMBERS: usize = 20;
/// The longest a stretched period gets (at 240 members with the default five seconds).
pub const MAX_PERIOD: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
struct Member {
    heartbeat: Heartbeat,
    last_seen: Instant,
    /// When this node last had a connection with it.
    present_at: Instant,
    /// Its public address block, if it was reached on one (see [`address_block`]).
    prefix: Option<String>,
    /// When it was last dialled to prove it is still there.
    dialled: Option<Instant>,
    /// This node has a connection with it now (see [`CONNECTED_GRACE`]).
    connected: bool,
}

/// A peer heard of, not yet reached.
#[derive(Debug, Clone)]
struct Candidate {
    heartbeat: Heartbeat,
    last_seen: Instant,
    since: Instant,
    /// The peer whose connection its heartbeat came over.
    via: PeerId,
    dialled: Option<Instant>,
}

/// The member table of one node.
#[derive(Debug)]
pub struct Members {
    me: Heartbeat,
    me_id: PeerId,
    others: BTreeMap<PeerId, Member>,
    candidates: BTreeMap<PeerId, Candidate>,
    /// Candidates that were not reached: until when they are ignored, and how many times
    /// they were given up.
    unreached: HashMap<PeerId, (Instant, u32)>,
    ttl: Duration,
    /// The configured heartbeat period, of which `ttl` is a number of periods.
    period: Duration,
    vnodes: usize,
    ring: Ring,
    /// The ring of the other members: whom this node's hosts belonged to before it joined
    /// (or came back), and will belong to when it leaves.
    apart: Ring,
    /// Rings replaced within [`FORMER_RINGS_FOR`], newest last, with when they were replaced.
    former: VecDeque<(Instant, Ring)>,
    /// When this table was made (the node started): the members that held its hosts while it
    /// was away hand them over in the first [`FORMER_RINGS_FOR`].
    started: Instant,
    /// `started` in Unix seconds: claims of having joined are wall-clock times.
    started_unix: u64,
    /// The latest `now` this table was given (the ring's stages are computed at it).
    latest: Instant,
    /// Counts the ring's rebuilds: what is derived from the ring can be kept until it changes.
    generation: u64,
    /// Unix seconds this node first met each peer as a member (or, in its first [`SETTLE`],
    /// the peer's claim), and when it last was one.
    first_met: HashMap<PeerId, (u64, Instant)>,
    /// See [`Members::settling_for`].
    settle: Duration,
    /// Members seen leaving, and leavers other members vouch for.
    departures: Departures,
    /// The believed leavers this node never had on a ring, each with the rings it would have
    /// owned its hosts on: the current members and it, with and without this node.
    leavers: BTreeMap<PeerId, [Ring; 2]>,
}

/// What a heartbeat or an expiry did to the member set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Joined(PeerId),
    Left(PeerId),
    /// Its ring points grew (or, rarely, shrank: it claimed a later join) with its age.
    Grew(PeerId),
}

impl Members {
    /// A table with only this node (`me_id`, announcing `me`) in it; members expire after
    /// `ttl` without a heartbeat.
    pub fn new(me_id: PeerId, me: Heartbeat, ttl: Duration, vnodes: usize) -> Members {
        Members::started_at(me_id, me, ttl, vnodes, Instant::now(), weft_clock::now_secs())
    }

    /// [`Members::new`] on a clock of the caller's: the table starts at `started`, which is
    /// `started_unix` in Unix seconds. The table reads no clock of its own — every later time
    /// is a `now` its caller gives — so a simulator can run many tables on virtual time.
    pub fn started_at(
        me_id: PeerId,
        me: Heartbeat,
        ttl: Duration,
        vnodes: usize,
        started: Instant,
        started_unix: u64,
    ) -> Members {
        let ring = Ring::new([me_id], vnodes);
        let apart = Ring::new([], vnodes);
        let (others, former) = (BTreeMap::new(), VecDeque::new());
        let (candidates, unreached, first_met) = (BTreeMap::new(), HashMap::new(), HashMap::new());
        let (latest, settle) = (started, SETTLE);
        Members {
            me,
            me_id,
            others,
            candidates,
            unreached,
            ttl,
            period: ttl,
            vnodes,
            ring,
            apart,
            former,
            started,
            started_unix,
            latest,
            generation: 0,
            first_met,
            settle,
            departures: Departures::new(FORMER_RINGS_FOR),
            leavers: BTreeMap::new(),
        }
    }

    /// Heartbeats every `period` (of which the ttl is a number) while the network is small; see
    /// [`Members::period`]. Without it the ttl is taken as the period.
    pub fn beating_every(mut self, period: Duration) -> Members {
        self.period = period.max(Duration::from_millis(1)).min(self.ttl);
        self
    }

    /// How often this node heartbeats: the configured period up to [`FULL_RATE_MEMBERS`]
    /// members, longer in proportion beyond (at most [`MAX_PERIOD`]).
    pub fn period(&self) -> Duration {
        let stretch = self.len().max(FULL_RATE_MEMBERS) as f64 / FULL_RATE_MEMBERS as f64;
        self.period.mul_f64(stretch).min(MAX_PERIOD.max(self.period))
    }

    /// The silence after which a member (or candidate) announcing `every` seconds between its
    /// heartbeats is dropped: the ttl's number of periods, of this node's period or the one it
    /// says it keeps, whichever is longer (the latter at most [`MAX_PERIOD`]).
    fn ttl_for(&self, every: u32) -> Duration {
        let period = self.period().max(Duration::from_secs(every.into()).min(MAX_PERIOD));
        self.ttl.mul_f64(period.as_secs_f64() / self.period.as_secs_f64())
    }

    /// Takes the members met in the first `settle` at their word (default [`SETTLE`]).
    pub fn settling_for(mut self, settle: Duration) -> Members {
        self.settle = settle;
        self
    }

    /// `now` in Unix seconds (on this table's clock: tests move it with the `Instant`s they give).
    fn unix(&self, now: Instant) -> u64 {
        self.started_unix + now.saturating_duration_since(self.started).as_secs()
    }

    /// When `peer`, claiming to have joined at `claim`, counts as having joined: its claim, but
    /// no earlier than [`CLAIM_TOLERANCE`] before this node first met it.
    fn joined_at(&self, peer: &PeerId, claim: u64) -> u64 {
        match self.first_met.get(peer) {
            Some((first, _)) => claim.max(first.saturating_sub(CLAIM_TOLERANCE.as_secs())),
            None => claim,
        }
    }

    /// The admission stage of a member that joined at `joined` (0 ..= stages − 1).
    fn stage(&self, joined: u64, now: Instant) -> u64 {
        (self.unix(now).saturating_sub(joined) / ADMISSION_STEP.as_secs()).min(ADMISSION_STAGES - 1)
    }

    /// Ring points of each member at `now`: a share of `vnodes` by its stage, relative to the
    /// oldest member's.
    fn points(&self, now: Instant) -> Vec<(PeerId, usize)> {
        let me = (!self.me.leaving).then(|| (self.me_id, self.stage(self.me.joined, now)));
        let others = self.others.iter().map(|(p, m)| (*p, self.stage(self.joined_at(p, m.heartbeat.joined), now)));
        let staged: Vec<(PeerId, u64)> = me.into_iter().chain(others).collect();
        let top = staged.iter().map(|(_, s)| *s).max().unwrap_or(0) + 1;
        let share = |s: u64| (self.vnodes as u64 * (s + 1)).div_ceil(top) as usize;
        staged.into_iter().map(|(p, s)| (p, share(s))).collect()
    }

    /// The points `peer` holds on the ring now (0 if it is not a member).
    pub fn points_of(&self, peer: &PeerId) -> usize {
        self.ring.points_of(peer)
    }

    pub fn me(&self) -> &Heartbeat {
        &self.me
    }

    /// The heartbeat to publish at `now`: this node's announcement with the members it saw
    /// leave lately.
    pub fn heartbeat(&self, now: Instant) -> Heartbeat {
        let every = self.period().as_secs_f64().round() as u32;
        Heartbeat { left: self.departures.told(now), every, ..self.me.clone() }
    }

    /// Updates this node's own announcement (its addresses change as it learns them).
    pub fn set_me(&mut self, me: Heartbeat) {
        self.me = me;
    }

    /// Records a heartbeat seen at `now`, relayed by `via`. `remote` is where this node is
    /// connected to its author, if it is: a peer never reached becomes a candidate, not a
    /// member (see the module doc). A heartbeat that does not name a peer id is ignored
    /// ([`Heartbeat::decode`] refuses those).
    pub fn observe(&mut self, hb: Heartbeat, via: PeerId, remote: Option<&Multiaddr>, now: Instant) -> Option<Change> {
        self.seen_time(now);
        let peer: PeerId = hb.peer.parse().ok()?;
        if peer == self.me_id {
            return None;
        }
        if hb.leaving {
            self.candidates.remove(&peer);
            let change = self.remove(&peer);
            if change.is_some() {
                self.departures.saw(peer, self.unix(now), now);
            }
            return change;
        }
        if let Some(m) = self.others.get_mut(&peer) {
            m.heartbeat = hb;
            m.last_seen = now;
            if remote.is_some() {
                m.present_at = now;
                m.connected = true;
            }
            self.hear_departures(peer, now);
            return None;
        }
        if let Some(remote) = remote {
            // Connected with its author: reached, whatever an earlier dial found.
            self.candidates.remove(&peer);
            return self.admit(peer, hb, remote, now);
        }
        if self.unreached.get(&peer).is_some_and(|(until, _)| *until > now) {
            return None;
        }
        if let Some(c) = self.candidates.get_mut(&peer) {
            c.heartbeat = hb;
            c.last_seen = now;
            return None;
        }
        let from_via = self.candidates.values().filter(|c| c.via == via).count();
        if self.candidates.len() < MAX_CANDIDATES && from_via < MAX_CANDIDATES_PER_SOURCE {
            self.candidates.insert(peer, Candidate { heartbeat: hb, last_seen: now, since: now, via, dialled: None });
        }
        None
    }

    /// This node has a connection with `peer`, from `remote`: a candidate it was becomes a
    /// member, a member is present.
    pub fn present(&mut self, peer: &PeerId, remote: &Multiaddr, now: Instant) -> Option<Change> {
        self.seen_time(now);
        if let Some(m) = self.others.get_mut(peer) {
            m.present_at = now;
            m.connected = true;
            return None;
        }
        let c = self.candidates.remove(peer)?;
        if now.saturating_duration_since(c.last_seen) > self.ttl_for(c.heartbeat.every) {
            return None;
        }
        self.admit(*peer, c.heartbeat, remote, now)
    }

    fn admit(&mut self, peer: PeerId, heartbeat: Heartbeat, remote: &Multiaddr, now: Instant) -> Option<Change> {
        let prefix = address_block(remote);
        if let Some(p) = &prefix {
            if self.others.values().filter(|m| m.prefix.as_ref() == Some(p)).count() >= MAX_MEMBERS_PER_PREFIX {
                tracing::debug!(%peer, prefix = p, "not a member: its address block has enough members");
                self.refuse(peer, now);
                return None;
            }
        }
        self.meet(peer, heartbeat.joined, now);
        let member = Member { heartbeat, last_seen: now, present_at: now, prefix, dialled: None, connected: true };
        self.others.insert(peer, member);
        self.unreached.remove(&peer);
        self.departures.forget(&peer);
        self.rebuild(now);
        self.hear_departures(peer, now);
        Some(Change::Joined(peer))
    }

    /// Takes the departures member `peer`'s last heartbeat told, and works out the rings of
    /// the leavers this node believes now.
    fn hear_departures(&mut self, peer: PeerId, now: Instant) {
        let Some(m) = self.others.get(&peer) else { return };
        if m.heartbeat.left.is_empty() {
            return;
        }
        let told = m.heartbeat.left.clone();
        let unix = self.unix(now);
        let (others, me) = (&self.others, self.me_id);
        let known = |p: &PeerId| *p == me || others.contains_key(p);
        self.departures.hear(peer, &told, unix, now, known);
        self.refresh_leavers(now, false);
    }

    /// The rings of the believed leavers that were never on one of this node's rings.
    /// `members_changed`: the rings are rebuilt even if the believed leavers are the same (their
    /// rings hold the current members); otherwise only when those leavers changed — most
    /// heartbeats repeat what their sender told before.
    fn refresh_leavers(&mut self, now: Instant, members_changed: bool) {
        let others = &self.others;
        let believed: Vec<PeerId> = self
            .departures
            .believed(now, |p| others.contains_key(p), quorum(others.len()))
            .into_iter()
            .filter(|leaver| !self.recent_rings(now).any(|r| r.contains(leaver)))
            .collect();
        if !members_changed && believed.iter().eq(self.leavers.keys()) {
            return;
        }
        let points = self.points(self.latest);
        let mut leavers = BTreeMap::new();
        for leaver in believed {
            let with = |me: bool| {
                let ps = points.iter().filter(|(p, _)| me || *p != self.me_id).copied();
                Ring::weighted(ps.chain([(leaver, self.vnodes)]), self.vnodes)
            };
            if !self.leavers.contains_key(&leaver) {
                tracing::info!(peer = %leaver, "a member that left while this node was away: its hand-off is taken, as members vouch for it");
            }
            leavers.insert(leaver, [with(true), with(false)]);
        }
        self.leavers = leavers;
    }

    /// Records when this node met `peer` (claiming `claim`) as a member, the first time.
    fn meet(&mut self, peer: PeerId, claim: u64, now: Instant) {
        let settled = now.saturating_duration_since(self.started) > self.settle;
        let at = if settled { self.unix(now) } else { claim.min(self.unix(now)) };
        if !self.first_met.contains_key(&peer) && self.first_met.len() >= MAX_FIRST_MET {
            let forgotten = self.first_met.iter().filter(|(p, _)| !self.others.contains_key(*p));
            if let Some(oldest) = forgotten.min_by_key(|(_, (_, last))| *last).map(|(p, _)| *p) {
                self.first_met.remove(&oldest);
            }
        }
        self.first_met.entry(peer).or_insert((at, now)).1 = now;
    }

    fn refuse(&mut self, peer: PeerId, now: Instant) {
        if self.unreached.len() >= MAX_UNREACHED && !self.unreached.contains_key(&peer) {
            self.unreached.retain(|_, (until, _)| *until > now);
            if self.unreached.len() >= MAX_UNREACHED {
                let oldest = self.unreached.iter().min_by_key(|(_, (until, _))| *until).map(|(p, _)| *p);
                if let Some(p) = oldest {
                    self.unreached.remove(&p);
                }
            }
        }
        let times = self.unreached.get(&peer).map_or(0, |(_, times)| *times);
        let ignored = UNREACHED_FIRST.saturating_mul(1 << times.min(16)).min(UNREACHED_FOR);
        self.unreached.insert(peer, (now + ignored, times.saturating_add(1)));
    }

    /// Peers to dial now: candidates (again every few seconds until [`REACH_WITHIN`]), and
    /// members not met within half of [`PRESENCE_FOR`], with the addresses they announce.
    /// Candidates past their time are given up here.
    pub fn to_dial(&mut self, now: Instant) -> Vec<(PeerId, Vec<String>)> {
        self.seen_time(now);
        let late: Vec<PeerId> = self
            .candidates
            .iter()
            .filter(|(_, c)| now.saturating_duration_since(c.since) > REACH_WITHIN)
            .map(|(p, _)| *p)
            .collect();
        for p in late {
            self.candidates.remove(&p);
            tracing::debug!(peer = %p, "a peer heard of was not reached: not a member");
            self.refuse(p, now);
        }
        let due = |dialled: Option<Instant>| dialled.is_none_or(|d| now.saturating_duration_since(d) >= REDIAL_AFTER);
        let mut dial = Vec::new();
        for (p, c) in self.candidates.iter_mut().filter(|(_, c)| due(c.dialled)) {
            c.dialled = Some(now);
            dial.push((*p, c.heartbeat.addrs.clone()));
        }
        for (p, m) in self.others.iter_mut() {
            if now.saturating_duration_since(m.present_at) > PRESENCE_FOR / 2 && due(m.dialled) {
                m.dialled = Some(now);
                dial.push((*p, m.heartbeat.addrs.clone()));
            }
        }
        dial
    }

    /// Candidates waiting to be reached.
    pub fn candidates(&self) -> usize {
        self.candidates.len()
    }

    /// Drops a member at once (its connection closed for good, or it was banned).
    pub fn remove(&mut self, peer: &PeerId) -> Option<Change> {
        self.candidates.remove(peer);
        self.others.remove(peer).map(|_| {
            self.rebuild(self.latest);
            Change::Left(*peer)
        })
    }

    /// A sign of life from member `peer` over a direct, authenticated connection: a ping it
    /// answered, a gossip message it forwarded. It counts as a heartbeat: under load gossipsub
    /// drops the messages queued for a slow peer, heartbeats among them.
    pub fn alive(&mut self, peer: &PeerId, now: Instant) {
        self.seen_time(now);
        if let Some(m) = self.others.get_mut(peer) {
            m.last_seen = m.last_seen.max(now);
            m.present_at = m.present_at.max(now);
        }
    }

    /// This node could not listen for `deaf` until `now` (its event loop did not run: a loaded
    /// box, a suspended process). Heartbeats sent meanwhile wait unread in its connections, so
    /// the time does not count against the members: their last heartbeat and presence move
    /// forward by it (never past `now`). Without this, a node whose loop stalled for the ttl
    /// dropped every member at its next tick, before reading their waiting heartbeats.
    pub fn deaf_for(&mut self, deaf: Duration, now: Instant) {
        for m in self.others.values_mut() {
            m.last_seen = (m.last_seen + deaf).min(now);
            m.present_at = (m.present_at + deaf).min(now);
        }
        for c in self.candidates.values_mut() {
            c.last_seen = (c.last_seen + deaf).min(now);
        }
    }

    /// Drops members not heard from within the ttl (or [`CONNECTED_GRACE`] times that while
    /// this node is connected to them), or not met within [`PRESENCE_FOR`], and
    /// rebuilds the ring when a member's points changed with its age.
    pub fn expire(&mut self, now: Instant) -> Vec<Change> {
        self.seen_time(now);
        let gone: Vec<PeerId> = self
            .others
            .iter()
            .filter(|(_, m)| {
                let ttl = self.ttl_for(m.heartbeat.every);
                let ttl = if m.connected { ttl * CONNECTED_GRACE } else { ttl };
                now.saturating_duration_since(m.last_seen) > ttl
                    || now.saturating_duration_since(m.present_at) > PRESENCE_FOR
            })
            .map(|(p, _)| *p)
            .collect();
        for p in &gone {
            if let Some(m) = self.others.remove(p) {
                let heard_s = now.saturating_duration_since(m.last_seen).as_secs();
                let met_s = now.saturating_duration_since(m.present_at).as_secs();
                tracing::info!(peer = %p, heard_s, met_s, "a member expired: not heard from, or not met, for too long");
            }
        }
        let grown: Vec<PeerId> = self
            .points(now)
            .into_iter()
            .filter(|(p, points)| !gone.contains(p) && self.ring.points_of(p) != *points)
            .map(|(p, _)| p)
            .collect();
        if !gone.is_empty() || !grown.is_empty() {
            self.rebuild(now);
        }
        let stale: Vec<PeerId> = (self.candidates.iter())
            .filter(|(_, c)| now.saturating_duration_since(c.last_seen) > self.ttl_for(c.heartbeat.every))
            .map(|(p, _)| *p)
            .collect();
        for p in stale {
            self.candidates.remove(&p);
        }
        for (p, (_, last)) in self.first_met.iter_mut() {
            if self.others.contains_key(p) {
                *last = now;
            }
        }
        self.first_met.retain(|_, (_, last)| now.saturating_duration_since(*last) <= FIRST_MET_FOR);
        self.departures.expire(now);
        if !self.leavers.is_empty() {
            self.refresh_leavers(now, false);
        }
        gone.into_iter().map(Change::Left).chain(grown.into_iter().map(Change::Grew)).collect()
    }

    /// This node leaves: its heartbeat says so from now on and the ring no longer holds it,
    /// so every host it owned has another owner (none if it was alone).
    pub fn leave(&mut self) {
        self.me.leaving = true;
        self.rebuild(self.latest);
    }

    /// Takes `now` as the latest time this table has been given: what it stamps a replaced
    /// ring with when a member is removed between ticks.
    fn seen_time(&mut self, now: Instant) {
        self.latest = self.latest.max(now);
    }

    /// This node's last connection with `peer` closed: from now on the member needs its
    /// heartbeats within the ttl (see [`CONNECTED_GRACE`]).
    pub fn disconnected(&mut self, peer: &PeerId) {
        if let Some(m) = self.others.get_mut(peer) {
            m.connected = false;
        }
    }

    /// Whether `peer` is a member now (not this node).
    pub fn is_member(&self, peer: &PeerId) -> bool {
        self.others.contains_key(peer)
    }

    /// Whether `peer` is a member, or was one within [`FORMER_RINGS_FOR`] (a member that left
    /// hands its URLs over after it is gone), or left within it while this node was away and
    /// members vouch for it (see [`departures`]): who may send this node URL batches. A
    /// member this node has not heard yet (it just started) is told so, announces itself and
    /// retries.
    pub fn knows(&self, peer: &PeerId, now: Instant) -> bool {
        self.recent_rings(now).any(|r| r.contains(peer)) || self.leavers.contains_key(peer)
    }

    /// Whether `peer` is a member (not this node) not heard from for longer than `quiet`: it
    /// may be gone — its expiry comes only after the TTL.
    pub fn silent(&self, peer: &PeerId, quiet: Duration, now: Instant) -> bool {
        self.others.get(peer).is_some_and(|m| now.saturating_duration_since(m.last_seen) > quiet)
    }

    /// The ring of the current member set, this node included.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Changes whenever the ring is rebuilt (see [`Members::ring`]).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Peer ids of every member, this node included (until it leaves), sorted.
    pub fn peers(&self) -> Vec<PeerId> {
        self.ring.members().to_vec()
    }

    /// The heartbeat last heard from `peer`.
    pub fn get(&self, peer: &PeerId) -> Option<&Heartbeat> {
        self.others.get(peer).map(|m| &m.heartbeat)
    }

    /// The other members that offer a relay, with the addresses they advertise.
    pub fn relays(&self) -> impl Iterator<Item = &Heartbeat> {
        self.others.values().map(|m| &m.heartbeat).filter(|hb| hb.relay && !hb.leaving)
    }

    pub fn len(&self) -> usize {
        self.ring.members().len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }
}

pub mod departures;
#[cfg(test)]
mod tests;
