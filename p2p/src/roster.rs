//! Who is in the network, at any size: the roster is the set of members, kept alike on every
//! member by passing on only what *changes* — signed events, one per join or departure — and
//! by members comparing their rosters with a few others from time to time.
//!
//! The ring needs every member to know every member (that is what lets any member compute any
//! host's owner), but not to *hear from* every member. The membership before it (protocol
//! `/weft/0.1.0`, now in the simulator as `scale/heartbeats`) had every member heartbeat to all
//! and connect to all, which costs each member O(N) messages and connections; the roster costs
//! each member what the network's churn costs, whatever N:
//!
//! - **Events, not heartbeats** ([`event`]): a member is in the roster from a *Joined* signed by
//!   itself and by [`event::SPONSORS`] members, until a *Left* it signs or a *Dead* that
//!   [`event::ACCUSERS`] of its monitors sign. Each member's latest event wins (later time; a
//!   departure over a join at a tie), so rosters that saw the same events agree, whatever the
//!   order — the roster is a last-writer-wins set.
//! - **Anti-entropy** ([`digest`]): every few seconds a member sends one of its view's members a
//!   [`Digest`] of its roster (32 bucket hashes); the other answers with the keys of the buckets
//!   that differ, and each sends the other the entries it lacks. An event reaches every member
//!   in O(log N) rounds and every member receives it about once.
//! - **Monitors**: each member is watched by the next [`MONITORS`] members after it on the
//!   monitor ring (members sorted by [`event::position`]). A monitor that loses it asks the
//!   others; two that cannot reach it sign its Dead. A member declared dead that is alive signs
//!   a Joined of its own within [`REFUTE_FOR`] and keeps its place.
//! - **Admission**: a newcomer pulls the roster, and after [`PROBATION`] connected to its
//!   would-be monitors asks them to sponsor it; they sign if its address block holds fewer than
//!   [`MAX_MEMBERS_PER_PREFIX`] members and each has sponsored fewer than [`SPONSORED_PER_HOUR`]
//!   joins in the last hour. Its points then grow in stages from its Joined's time, which its
//!   sponsors vouched for. A network younger
//!   than [`PROBATION`] (its first admission is signed, so no one can make it look younger)
//!   waits only as long as it is old, needs only as many sponsors as members were admitted
//!   before ([`Roster::sponsors_needed`]) and counts no sponsor's hourly joins: nodes that start
//!   together are members within seconds.
//!
//! Departures are kept as tombstones for [`TOMBSTONE_FOR`] (so a stale Joined cannot come back),
//! and a member away for longer starts from an empty roster.
//!
//! The parts: [`event`] the signed events, [`digest`] the buckets two rosters compare and
//! `compare.rs` the comparing,
//! [`admission`] a newcomer's way in and a sponsor's checks, [`watch`] the monitors' side,
//! [`wire`] `/weft/roster/1`'s messages, [`node`] one node's decisions (what to send when, what
//! to answer). All pure: the live network carries them (`network/roster.rs`) and builds its ring
//! from the roster's (`crate::membership` follows it); the simulator runs them at sizes this
//! machine cannot (`weft-simnet scale --design roster`).

pub mod admission;
mod compare;
pub mod digest;
pub mod event;
pub mod node;
pub mod watch;
pub mod wire;

pub use compare::{Answer, FollowUp, Snapshot};

use crate::membership::{ADMISSION_STAGES, ADMISSION_STEP, MAX_MEMBERS_PER_PREFIX};
use crate::ring::Ring;
use digest::{entry_hash, old_bucket, OLD};
use event::{position, Event, EventError, What, ACCUSERS, SPONSORS};
use libp2p::PeerId;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// Monitors of each member.
pub const MONITORS: usize = 3;
/// An accuser sits within this many members' average spacing after the accused (its third
/// monitor is farther only with odds of about 1 in 60,000).
const NEAR: u64 = 16;
/// How far ahead of this node's clock an event may be.
pub const MAX_SKEW: u64 = 120;
/// A departure is remembered this long ...
pub const TOMBSTONE_FOR: u64 = 3600;
/// ... and dropped this long after it stops counting in digests.
const TOMBSTONE_GRACE: u64 = 300;
/// A member declared dead may refute it alone within this long.
pub const REFUTE_FOR: u64 = 600;
/// A newcomer is sponsored after this long connected to its sponsors — or, in a network younger
/// than that, after as long as the network is old (see [`Roster::probation`]).
pub const PROBATION: u64 = 300;
/// Joins one member may sponsor in an hour.
pub const SPONSORED_PER_HOUR: usize = 12;
/// Events kept until their sponsors or accusers are read, at most.
pub const MAX_PENDING: usize = 1024;
/// Encoded events an answer carries, at most (a newcomer's roster comes over several rounds).
pub const ANSWER_BYTES: usize = 24 * 1024;

/// How far an event is checked: see [`Roster::apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    Member,
    Syncing,
}

/// How the roster changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Joined(PeerId),
    Gone(PeerId),
}

/// Why an event was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error("roster event of {0} is dated {1}s ahead of this node's clock")]
    Future(PeerId, u64),
    #[error("a departure of {0} older than the tombstones")]
    Expired(PeerId),
    #[error("{peer} did not sign its own {what}")]
    NotByItself { peer: PeerId, what: &'static str },
    #[error("the join of {peer} has {got} sponsors who are members, needs {needed}")]
    Sponsors { peer: PeerId, got: usize, needed: usize },
    #[error("the join of {0} is dated otherwise than its admission")]
    Since(PeerId),
    #[error("{sponsor} sponsored {SPONSORED_PER_HOUR} joins in the last hour already")]
    SponsorRate { sponsor: PeerId },
    #[error("{MAX_MEMBERS_PER_PREFIX} members come from the address block of {0} already")]
    Block(PeerId),
    #[error("{peer} refutes no recent accusation")]
    NoAccusation { peer: PeerId },
    #[error("{peer} is accused by {got} of its monitors, needs {needed}")]
    Accusers { peer: PeerId, got: usize, needed: usize },
    #[error("{0} shares its roster key with another member")]
    Collision(PeerId),
}

#[derive(Debug, Clone)]
struct Entry {
    peer: PeerId,
    event: Arc<Event>,
    /// When it was first admitted (carried through a refutation and a departure; 0 when its
    /// departure came without its join).
    since: u64,
    /// It was a member, as a sponsor or an accuser must have been: admitted with sponsors,
    /// or accused by monitors, or gone from such an entry.
    vouched: bool,
}

impl Entry {
    fn version(&self) -> u64 {
        self.event.version()
    }

    fn gone(&self) -> bool {
        !self.event.what.is_joined()
    }
}

/// The roster: every member's latest event, the indexes digests are cut from, and the ring.
#[derive(Debug, Clone)]
pub struct Roster {
    vnodes: usize,
    /// By key ([`event::position`]).
    entries: BTreeMap<u64, Entry>,
    /// (time, key) of every entry, and of departures.
    by_time: BTreeSet<(u64, u64)>,
    tombstones: BTreeSet<(u64, u64)>,
    /// XOR of every entry's hash, by old bucket.
    xor: [u64; OLD],
    /// Members in (key order: the monitor ring), and how many from each address block.
    alive: BTreeMap<u64, PeerId>,
    blocks: HashMap<u64, usize>,
    /// Joins each sponsor vouched for, by time.
    sponsored: HashMap<PeerId, Vec<u64>>,
    /// Events waiting for a sponsor or an accuser, under the signer they wait for.
    pending: HashMap<PeerId, Vec<Event>>,
    pending_count: usize,
    ring: Ring,
    /// The ring must be built again (a change), or at this time (a member's next stage).
    stale: bool,
    rebuild_at: u64,
}

impl Roster {
    pub fn new(vnodes: usize) -> Roster {
        Roster {
            vnodes,
            entries: BTreeMap::new(),
            by_time: BTreeSet::new(),
            tombstones: BTreeSet::new(),
            xor: [0; OLD],
            alive: BTreeMap::new(),
            blocks: HashMap::new(),
            sponsored: HashMap::new(),
            pending: HashMap::new(),
            pending_count: 0,
            ring: Ring::new(std::iter::empty(), vnodes),
            stale: false,
            rebuild_at: u64::MAX,
        }
    }

    /// Members in the roster.
    pub fn len(&self) -> usize {
        self.alive.len()
    }

    pub fn is_empty(&self) -> bool {
        self.alive.is_empty()
    }

    /// Entries, departures included.
    pub fn entries(&self) -> usize {
        self.entries.len()
    }

    pub fn is_member(&self, peer: &PeerId) -> bool {
        self.alive.get(&position(peer)) == Some(peer)
    }

    /// When `peer` was first admitted, as its entry says (a departure keeps it).
    pub fn since_of(&self, peer: &PeerId) -> Option<u64> {
        self.entries.get(&position(peer)).filter(|e| e.peer == *peer && e.since != 0).map(|e| e.since)
    }

    /// Whether `peer`'s admission holds fewer sponsors than this roster now asks of a join
    /// admitted when it was: two newcomers to a young network that each pulled it before the
    /// other was admitted. A roster that took such a join before it knew the earlier one holds
    /// it; one that knew refuses it. The member asks again, and its sponsors sign again, so
    /// that every roster ends up holding the same join (see `node::RosterNode::check_self`).
    pub fn short_of_sponsors(&self, peer: &PeerId) -> bool {
        self.event_of(peer).is_some_and(|e| match e.what {
            What::Joined { since, .. } => {
                e.at == since && e.proofs.len().saturating_sub(1) < self.sponsors_needed(since)
            }
            _ => false,
        })
    }

    /// The members, in key order (the monitor ring).
    pub fn members(&self) -> impl Iterator<Item = &PeerId> {
        self.alive.values()
    }

    /// The probation of a newcomer that arrived at `at`: [`PROBATION`], or the network's age
    /// then if it is younger (the oldest member's admission is in every roster, signed by its
    /// sponsors, so no one can make a network look younger than it is). A network whose members
    /// start within a minute of each other is whole within that minute; a crowd arriving later
    /// waits the full time.
    pub fn probation(&self, at: u64) -> u64 {
        PROBATION.min(self.age_at(at))
    }

    /// How old the network was at `at`: since the earliest admission this roster holds
    /// (departures included, so a founder that left does not make the network look younger).
    fn age_at(&self, at: u64) -> u64 {
        let oldest = self.entries.values().map(|e| e.since).filter(|s| *s != 0).min();
        at.saturating_sub(oldest.unwrap_or(at))
    }

    /// Whether a join at `at` comes while the network is younger than [`PROBATION`]: its first
    /// members are sponsored by the few there are, so no sponsor's hourly count applies yet.
    fn young_at(&self, at: u64) -> bool {
        self.age_at(at) < PROBATION
    }

    /// The members whose departure (a Left or a Dead) is dated at or after `at`, oldest first:
    /// those a node that was away still takes hand-offs from (see `crate::membership`).
    pub fn departed_since(&self, at: u64) -> Vec<PeerId> {
        self.tombstones.range((at, 0)..).filter_map(|(_, k)| self.entries.get(k)).map(|e| e.peer).collect()
    }

    /// The latest event of `peer`.
    pub fn event_of(&self, peer: &PeerId) -> Option<&Event> {
        self.entries.get(&position(peer)).filter(|e| e.peer == *peer).map(|e| e.event.as_ref())
    }

    /// The members after `peer` on the monitor ring, `n` of them at most (`peer` not among them).
    pub fn successors(&self, peer: &PeerId, n: usize) -> Vec<PeerId> {
        let key = position(peer);
        let after = self.alive.range(key.wrapping_add(1)..).chain(self.alive.range(..key));
        after.map(|(_, p)| *p).filter(|p| p != peer).take(n).collect()
    }

    /// The members that watch `peer`.
    pub fn monitors_of(&self, peer: &PeerId) -> Vec<PeerId> {
        self.successors(peer, MONITORS)
    }

    /// The members `me` watches: those it is among the monitors of.
    pub fn watched_by(&self, me: &PeerId) -> Vec<PeerId> {
        let key = position(me);
        let before = self.alive.range(..key).rev().chain(self.alive.range(key.wrapping_add(1)..).rev());
        before.map(|(_, p)| *p).filter(|p| p != me).take(MONITORS).collect()
    }

    /// Whether `sponsor` may vouch for `newcomer` now: a member, under its hourly count, and
    /// the newcomer's block under its cap. (The sponsor also checks the probation itself.)
    pub fn may_sponsor(&self, sponsor: &PeerId, newcomer: &PeerId, block: u64, now: u64) -> Result<(), Refused> {
        if !self.is_member(sponsor) {
            return Err(Refused::Sponsors { peer: *newcomer, got: 0, needed: 1 });
        }
        if !self.young_at(now) && self.sponsored_recently(sponsor, now) >= SPONSORED_PER_HOUR {
            return Err(Refused::SponsorRate { sponsor: *sponsor });
        }
        if block != 0 && self.blocks.get(&block).copied().unwrap_or(0) >= MAX_MEMBERS_PER_PREFIX {
            return Err(Refused::Block(*newcomer));
        }
        Ok(())
    }

    fn sponsored_recently(&self, sponsor: &PeerId, now: u64) -> usize {
        self.sponsored.get(sponsor).map_or(0, |times| times.iter().filter(|t| **t + 3600 > now).count())
    }

    /// Checks `event` against this roster and takes it if it is newer than what the roster
    /// holds of its member. `Ok(None)`: nothing changed (already known, or older).
    ///
    /// A member checks everything ([`Trust::Member`]). A node pulling the roster for the first
    /// time ([`Trust::Syncing`]) cannot check who vouched for members admitted long ago — their
    /// sponsors may be gone — so it takes entries older than [`TOMBSTONE_FOR`] on their own
    /// signatures and the number of them; the network layer takes the roster from more than
    /// one member and compares their digests.
    ///
    /// An event refused for a sponsor or an accuser this roster has not read yet is kept (at
    /// most [`MAX_PENDING`]) and taken once they come: the roster arrives in any order.
    pub fn apply(&mut self, event: Event, now: u64, trust: Trust) -> Result<Option<Change>, Refused> {
        let peer = event.peer_id()?;
        let before = self.entries.get(&position(&peer)).map(Entry::version);
        let result = self.apply_one(event.clone(), now, trust);
        match &result {
            Err(Refused::Sponsors { .. } | Refused::Accusers { .. }) => {
                // Kept under each signer this roster cannot vouch for yet.
                let missing: Vec<PeerId> = (event.proofs.iter())
                    .filter_map(|p| PeerId::from_bytes(&p.signer).ok())
                    .filter(|s| !self.known(s))
                    .collect();
                for m in missing {
                    let waiting = self.pending.entry(m).or_default();
                    if self.pending_count < MAX_PENDING && !waiting.contains(&event) {
                        waiting.push(event.clone());
                        self.pending_count += 1;
                    }
                }
            }
            Ok(_) if self.entries.get(&position(&peer)).map(Entry::version) != before => {
                // A new entry may be the sponsor or accuser others wait for.
                for e in self.pending.remove(&peer).unwrap_or_default() {
                    self.pending_count -= 1;
                    let _ = self.apply(e, now, trust);
                }
            }
            _ => {}
        }
        result
    }

    fn apply_one(&mut self, event: Event, now: u64, trust: Trust) -> Result<Option<Change>, Refused> {
        // What this roster holds as new or newer is ignored before any signature is checked:
        // anti-entropy brings most events more than once.
        let key = position(&event.peer_id()?);
        if self.entries.get(&key).is_some_and(|e| e.peer.to_bytes() == event.peer && event.version() <= e.version()) {
            return Ok(None);
        }
        let (peer, signers) = event.signers()?;
        if event.at > now + MAX_SKEW {
            return Err(Refused::Future(peer, event.at - now));
        }
        let previous = self.entries.get(&key);
        if previous.is_some_and(|e| e.peer != peer) {
            return Err(Refused::Collision(peer));
        }
        let history = trust == Trust::Syncing && event.at + TOMBSTONE_FOR <= now;
        let by_itself = signers.contains(&peer);
        let others: Vec<PeerId> = signers.iter().copied().filter(|s| *s != peer).collect();
        let (since, vouched) = match event.what {
            What::Joined { since, block, .. } => {
                if !by_itself {
                    return Err(Refused::NotByItself { peer, what: "join" });
                }
                // A refutation: of a recent death, or of one this roster has not heard of (it
                // still holds the member's join, with the same admission).
                let refutes = previous.filter(|e| {
                    (e.event.what == What::Dead && e.event.at + REFUTE_FOR >= event.at)
                        || (e.event.what.is_joined() && e.since == since)
                });
                if let Some(e) = refutes.filter(|_| others.is_empty()) {
                    // A death heard of before the join it ended does not know the admission.
                    if e.since != 0 && since != e.since {
                        return Err(Refused::Since(peer));
                    }
                } else if trust == Trust::Syncing && others.is_empty() && since < event.at {
                    // A refutation whose death is gone from the roster it pulls: the member
                    // that sent the page took it.
                } else if history {
                    // As many as it needed then, as far as this roster knows so far.
                    let needed = self.sponsors_needed(since);
                    if others.len() < needed {
                        return Err(Refused::Sponsors { peer, got: others.len(), needed });
                    }
                } else {
                    self.check_sponsors(&peer, &others, since, block, &event, now, trust)?;
                }
                (since, true)
            }
            What::Left => {
                if !by_itself {
                    return Err(Refused::NotByItself { peer, what: "departure" });
                }
                // Any key can sign its own departure: one over nothing vouches for no one,
                // unless it comes with the roster a node pulls (its sponsorships are history).
                (previous.map_or(0, |e| e.since), previous.map_or(trust == Trust::Syncing, |e| e.vouched))
            }
            What::Dead => {
                if !history {
                    self.check_accusers(&peer, &others)?;
                }
                (previous.map_or(0, |e| e.since), true)
            }
        };
        if !event.what.is_joined() && event.at + TOMBSTONE_FOR <= now {
            return Err(Refused::Expired(peer));
        }
        if let (What::Joined { .. }, false) = (event.what, others.is_empty()) {
            for s in &others {
                self.sponsored.entry(*s).or_default().push(event.at);
            }
        }
        let was_alive = self.alive.contains_key(&key);
        self.remove(key);
        self.insert(key, Entry { peer, event: Arc::new(event), since, vouched });
        let alive = self.alive.contains_key(&key);
        Ok(match (was_alive, alive) {
            (false, true) => Some(Change::Joined(peer)),
            (true, false) => Some(Change::Gone(peer)),
            _ => None,
        })
    }

    /// Whether `peer` is or was a member, as far as this roster knows (a departure is known
    /// for [`TOMBSTONE_FOR`]). Not *when*: a member that left and came back has a later
    /// admission than a join it sponsored before, and honest sponsors and accusers sign only
    /// what is dated about now.
    fn known(&self, peer: &PeerId) -> bool {
        self.entries.get(&position(peer)).is_some_and(|e| e.peer == *peer && e.vouched)
    }

    /// Sponsors a join admitted at `since` needs: [`SPONSORS`], or as many members as were
    /// admitted before it when a network's first members are fewer. Counted from the entries
    /// (departures included), so rosters holding the same events judge a join alike whatever
    /// order they took them in — two newcomers to a young network may each have pulled it
    /// before the other was admitted (see `node::RosterNode`, which asks again when its own
    /// join turns out short).
    pub fn sponsors_needed(&self, since: u64) -> usize {
        self.entries.values().filter(|e| e.since != 0 && e.since < since).take(SPONSORS).count()
    }

    #[allow(clippy::too_many_arguments)]
    fn check_sponsors(
        &self,
        peer: &PeerId,
        sponsors: &[PeerId],
        since: u64,
        block: u64,
        event: &Event,
        now: u64,
        trust: Trust,
    ) -> Result<(), Refused> {
        // A network's first members need fewer sponsors; a join dated no later than every entry
        // this member holds would be such a first member, backdated: a member holds the
        // network's first join from its own start (it pulled it), so one that claims to come
        // before it needs the full count. (A node pulling the roster reads entries in any order.)
        let earliest = self.entries.values().filter(|e| e.peer != *peer && e.since != 0).map(|e| e.since).min();
        let backdated = trust == Trust::Member && earliest.is_some_and(|first| since <= first);
        let needed = if backdated { SPONSORS } else { self.sponsors_needed(since) };
        let got = sponsors.iter().filter(|s| self.known(s)).count();
        if got < needed {
            return Err(Refused::Sponsors { peer: *peer, got, needed });
        }
        if since != event.at {
            return Err(Refused::Since(*peer));
        }
        let young = self.young_at(since);
        if let Some(s) = sponsors.iter().find(|s| !young && self.sponsored_recently(s, now) >= SPONSORED_PER_HOUR) {
            return Err(Refused::SponsorRate { sponsor: *s });
        }
        if block != 0 && self.blocks.get(&block).copied().unwrap_or(0) >= MAX_MEMBERS_PER_PREFIX {
            return Err(Refused::Block(*peer));
        }
        Ok(())
    }

    /// Accusers must have been members when they accused and sit just after the accused on
    /// the monitor ring: within [`NEAR`] members' average spacing, which every roster that
    /// differs by a few members judges alike (a monitor is among the first three).
    fn check_accusers(&self, peer: &PeerId, accusers: &[PeerId]) -> Result<(), Refused> {
        let spacing = u64::MAX / (self.alive.len().max(1) as u64);
        let from = position(peer);
        let near = |a: &PeerId| position(a).wrapping_sub(from) <= spacing.saturating_mul(NEAR);
        let got = accusers.iter().filter(|a| near(a) && self.known(a)).count();
        let needed = ACCUSERS.min(self.alive.len().saturating_sub(1));
        if got < needed {
            return Err(Refused::Accusers { peer: *peer, got, needed });
        }
        Ok(())
    }

    fn remove(&mut self, key: u64) {
        let Some(e) = self.entries.remove(&key) else { return };
        self.by_time.remove(&(e.event.at, key));
        self.tombstones.remove(&(e.event.at, key));
        self.xor[old_bucket(key)] ^= entry_hash(key, e.version());
        if self.alive.remove(&key).is_some() {
            self.stale = true;
            if let What::Joined { block, .. } = e.event.what {
                if let Some(n) = self.blocks.get_mut(&block) {
                    *n = n.saturating_sub(1);
                }
            }
        }
    }

    fn insert(&mut self, key: u64, e: Entry) {
        self.by_time.insert((e.event.at, key));
        if e.gone() {
            self.tombstones.insert((e.event.at, key));
        } else {
            self.alive.insert(key, e.peer);
            self.stale = true;
            if let What::Joined { block, .. } = e.event.what {
                if block != 0 {
                    *self.blocks.entry(block).or_default() += 1;
                }
            }
        }
        self.xor[old_bucket(key)] ^= entry_hash(key, e.version());
        self.entries.insert(key, e);
    }

    /// Drops departures past their time, and sponsors' counts older than an hour.
    pub fn expire(&mut self, now: u64) {
        let until = now.saturating_sub(TOMBSTONE_FOR + TOMBSTONE_GRACE);
        let old: Vec<u64> = self.tombstones.range(..(until, 0)).map(|(_, k)| *k).collect();
        for key in old {
            self.remove(key);
        }
        let mut dropped = 0;
        self.pending.retain(|_, events| {
            let before = events.len();
            events.retain(|e| e.at + TOMBSTONE_FOR > now);
            dropped += before - events.len();
            !events.is_empty()
        });
        self.pending_count -= dropped;
        self.sponsored.retain(|_, times| {
            times.retain(|t| t + 3600 > now);
            !times.is_empty()
        });
    }

    /// The ring as [`Roster::ring`] last built it.
    pub fn built_ring(&self) -> &Ring {
        &self.ring
    }

    /// The ring at `now`: each member with its admitted share of points (a quarter, half,
    /// three quarters, all, a stage per `ADMISSION_STEP` after its admission, counted from the
    /// oldest member's stage so that a network that started together has the plain ring).
    pub fn ring(&mut self, now: u64) -> &Ring {
        if self.stale || now >= self.rebuild_at {
            let sinces: Vec<(PeerId, u64)> =
                self.alive.keys().map(|k| (self.entries[k].peer, self.entries[k].since)).collect();
            let (weights, next) = admitted(&sinces, self.vnodes, now);
            self.ring = self.ring.rebuilt(weights);
            self.rebuild_at = next;
            self.stale = false;
        }
        &self.ring
    }
}

/// Each member's points at `now` from when it was admitted: a quarter, half, three quarters,
/// all, a stage per `ADMISSION_STEP`, counted from the oldest member's stage so that a network
/// that started together has the plain ring; and when the next member grows.
pub fn admitted(sinces: &[(PeerId, u64)], vnodes: usize, now: u64) -> (Vec<(PeerId, usize)>, u64) {
    let step = ADMISSION_STEP.as_secs().max(1);
    let stage = |since: u64| (now.saturating_sub(since) / step + 1).min(ADMISSION_STAGES);
    let top = sinces.iter().map(|(_, s)| stage(*s)).max().unwrap_or(ADMISSION_STAGES);
    let vnodes = vnodes as u64;
    let weights = sinces
        .iter()
        .map(|(p, s)| {
            let stages = (stage(*s) + ADMISSION_STAGES - top).clamp(1, ADMISSION_STAGES);
            (*p, ((vnodes * stages).div_ceil(ADMISSION_STAGES)) as usize)
        })
        .collect();
    let next = (sinces.iter())
        .filter(|(_, s)| stage(*s) < ADMISSION_STAGES)
        .map(|(_, s)| s + (now.saturating_sub(*s) / step + 1) * step)
        .min()
        .unwrap_or(u64::MAX);
    (weights, next)
}

#[cfg(test)]
mod tests;
