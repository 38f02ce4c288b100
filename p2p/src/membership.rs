//! The rings this node routes by, and what it remembers of the rings before.
//!
//! The member set is the roster's (`crate::roster`): members are in it by signed events that
//! every member ends up holding alike, so every member builds the same ring — each member with
//! the share of points its admission has reached ([`ADMISSION_STAGES`] steps of
//! [`ADMISSION_STEP`] from when its sponsors admitted it). This module follows that ring and
//! keeps what deciding *who may say what* needs besides the current owners:
//!
//! - the rings replaced within [`FORMER_RINGS_FOR`]: a member that left, or lost a host to a
//!   newcomer, is still handing that host's URLs over for a while, and only a host's owner, or
//!   its owner before a change, may say it is done with a URL of it;
//! - the ring without this node: whom its hosts belonged to before it joined or came back (they
//!   hand them over in its first minutes);
//! - the members that left within [`FORMER_RINGS_FOR`] that none of this node's recent rings
//!   held (it was away, or had just joined): their departures are in the roster, signed, so
//!   their hand-offs are taken as a former member's.
//!
//! Pure: the network feeds it the roster's ring and departures ([`Members::follow`]) and the
//! signs of life it sees.

use crate::ring::Ring;
use libp2p::PeerId;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How long a replaced ring is remembered: a member that just left (or lost a host to a
/// newcomer) is still handing its URLs over for this long.
pub const FORMER_RINGS_FOR: Duration = Duration::from_secs(600);
/// At most this many replaced rings are remembered (a flapping network must not grow it:
/// 16 rings of 100 members are ~4 MB).
const FORMER_RINGS: usize = 16;
/// Members from one public IPv4 /24 or IPv6 /48 (see `crate::reachability::address_block`).
/// Private, loopback and relayed addresses are not counted (a homelab's LAN; a relay limits its
/// own reservations).
pub const MAX_MEMBERS_PER_PREFIX: usize = 8;
/// A member's points grow by a step after each of these since it was admitted ...
pub const ADMISSION_STEP: Duration = Duration::from_secs(30 * 60);
/// ... in this many stages: a quarter, half, three quarters, all of its points. A crowd of real
/// nodes arriving together (rented for an hour to swallow URLs) holds a small part of the ring
/// while it lasts.
pub const ADMISSION_STAGES: u64 = 4;

/// How the member set changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Joined(PeerId),
    Left(PeerId),
    /// Its ring points grew with its age.
    Grew(PeerId),
}

/// The rings of one node.
#[derive(Debug)]
pub struct Members {
    me: PeerId,
    vnodes: usize,
    /// The roster's ring (without this node once it leaves).
    ring: Ring,
    /// The ring of the other members: whom this node's hosts belonged to before it joined
    /// (or came back), and will belong to when it leaves.
    apart: Ring,
    /// Rings replaced within [`FORMER_RINGS_FOR`], newest last, with when they were replaced.
    former: VecDeque<(Instant, Ring)>,
    /// When this table was made (the node started): the members that held its hosts while it
    /// was away hand them over in the first [`FORMER_RINGS_FOR`].
    started: Instant,
    /// Counts the ring's changes: what is derived from the ring can be kept until it changes.
    generation: u64,
    /// This node is leaving: it is on no ring of its own any more.
    leaving: bool,
    /// The roster's recent departures as last given, and of those the ones no recent ring
    /// held, each with the rings it would have owned its hosts on: the current members and
    /// it, with and without this node.
    departed: Vec<PeerId>,
    leavers: BTreeMap<PeerId, [Ring; 2]>,
    /// Members this node could not reach, since when (cleared by a sign of life).
    unreached: HashMap<PeerId, Instant>,
}

impl Members {
    /// An empty table of node `me`, started at `started`: no ring until the roster gives one.
    pub fn new(me: PeerId, vnodes: usize, started: Instant) -> Members {
        Members {
            me,
            vnodes,
            ring: Ring::new([], vnodes),
            apart: Ring::new([], vnodes),
            former: VecDeque::new(),
            started,
            generation: 0,
            leaving: false,
            departed: Vec::new(),
            leavers: BTreeMap::new(),
            unreached: HashMap::new(),
        }
    }

    /// Follows the roster: `ring` is its ring now, `departed` its members whose departure is
    /// dated within [`FORMER_RINGS_FOR`]. Returns how the member set changed (nothing when the
    /// ring is the one held).
    pub fn follow(&mut self, ring: &Ring, departed: &[PeerId], now: Instant) -> Vec<Change> {
        let mut changes = Vec::new();
        let same = if self.leaving { ring.without(&self.me) == self.ring } else { *ring == self.ring };
        if !same {
            let next = if self.leaving { ring.without(&self.me) } else { ring.clone() };
            let (old, new) = (self.ring.members(), next.members());
            changes.extend(new.iter().filter(|p| !old.contains(p)).map(|p| Change::Joined(*p)));
            changes.extend(old.iter().filter(|p| !new.contains(p)).map(|p| Change::Left(*p)));
            changes.extend(
                new.iter()
                    .filter(|p| old.contains(p) && self.ring.points_of(p) != next.points_of(p))
                    .map(|p| Change::Grew(*p)),
            );
            self.replace(next, now);
        }
        let ring_changed = !changes.is_empty();
        if ring_changed || departed != self.departed.as_slice() {
            self.departed = departed.to_vec();
            self.refresh_leavers(now);
        }
        self.unreached.retain(|p, _| self.ring.contains(p));
        changes
    }

    fn replace(&mut self, ring: Ring, now: Instant) {
        let old = std::mem::replace(&mut self.ring, ring);
        self.apart = self.ring.without(&self.me);
        self.generation += 1;
        while self.former.len() >= FORMER_RINGS
            || self.former.front().is_some_and(|(at, _)| now.saturating_duration_since(*at) > FORMER_RINGS_FOR)
        {
            self.former.pop_front();
        }
        self.former.push_back((now, old));
    }

    /// The rings of the recent leavers that none of this node's recent rings held.
    fn refresh_leavers(&mut self, now: Instant) {
        let unknown: Vec<PeerId> = (self.departed.iter())
            .filter(|leaver| **leaver != self.me && !self.recent_rings(now).any(|r| r.contains(leaver)))
            .copied()
            .collect();
        let points: Vec<(PeerId, usize)> = self.ring.members().iter().map(|p| (*p, self.ring.points_of(p))).collect();
        let mut leavers = BTreeMap::new();
        for leaver in unknown {
            let with = |me: bool| {
                let ps = points.iter().filter(|(p, _)| me || *p != self.me).copied();
                Ring::weighted(ps.chain([(leaver, self.vnodes)]), self.vnodes)
            };
            leavers.insert(leaver, [with(true), with(false)]);
        }
        self.leavers = leavers;
    }

    /// This node leaves: the ring no longer holds it, so every host it owned has another owner
    /// (none if it was alone).
    pub fn leave(&mut self, now: Instant) {
        self.leaving = true;
        if self.ring.contains(&self.me) {
            let ring = self.ring.without(&self.me);
            self.replace(ring, now);
        }
    }

    /// A sign of life from `peer` over a direct, authenticated connection (a connection, a
    /// ping, a message).
    pub fn alive(&mut self, peer: &PeerId) {
        self.unreached.remove(peer);
    }

    /// This node could not reach member `peer` at `now`.
    pub fn unreached(&mut self, peer: &PeerId, now: Instant) {
        if self.is_member(peer) {
            self.unreached.entry(*peer).or_insert(now);
        }
    }

    /// Whether `peer` is a member this node could not reach, with no sign of life since: it may
    /// be gone (its monitors declare it dead within half a minute).
    pub fn silent(&self, peer: &PeerId) -> bool {
        self.unreached.contains_key(peer)
    }

    /// Rings current within [`FORMER_RINGS_FOR`] of `now`, the current one first.
    fn recent_rings(&self, now: Instant) -> impl Iterator<Item = &Ring> {
        let former = (self.former.iter().rev())
            .take_while(move |(at, _)| now.saturating_duration_since(*at) <= FORMER_RINGS_FOR)
            .map(|(_, r)| r);
        std::iter::once(&self.ring).chain(former)
    }

    /// Whether `peer` is a member now (not this node).
    pub fn is_member(&self, peer: &PeerId) -> bool {
        *peer != self.me && self.ring.contains(peer)
    }

    /// Whether `peer` is a member, or was one within [`FORMER_RINGS_FOR`] (a member that left
    /// hands its URLs over after it is gone), or left within it while this node was away: who
    /// may send this node URL batches. A newcomer still in its probation is not yet: it is told
    /// so and retries.
    pub fn knows(&self, peer: &PeerId, now: Instant) -> bool {
        self.recent_rings(now).any(|r| r.contains(peer)) || self.leavers.contains_key(peer)
    }

    /// Whether `peer` owns `host` (a ring host name) now or did within [`FORMER_RINGS_FOR`],
    /// or — in this node's first [`FORMER_RINGS_FOR`] — does on the ring without this node (it
    /// held this node's hosts before it joined, or while it was away): only the owner, or the
    /// owner before a membership change, can say it is done with a URL of the host. A leaver
    /// this node never had on a ring owned what it would own among the current members.
    pub fn owned_recently(&self, peer: &PeerId, host: &str, now: Instant) -> bool {
        let starting = now.saturating_duration_since(self.started) <= FORMER_RINGS_FOR;
        (starting && self.apart.owner(host) == Some(peer))
            || self.recent_rings(now).any(|r| r.owner(host) == Some(peer))
            || self.leavers.get(peer).is_some_and(|rings| rings.iter().any(|r| r.owner(host) == Some(peer)))
    }

    /// Whether `peer` is among the first `k` members clockwise from `host` on the current
    /// ring: it would own the host on a ring that lacks the members before it. A member whose
    /// roster has not yet taken the latest joins owns such hosts by its own ring and crawls
    /// them in good faith: what it then says about them is refused, but it is no offender (see
    /// `network::postings`).
    pub fn near_owner(&self, peer: &PeerId, host: &str, k: usize) -> bool {
        self.ring.owners_of_point(crate::ring::host_point(host), k).contains(peer)
    }

    /// Whether `peer` was among the first `replicas` members clockwise from `point` (a cell's
    /// point: see `crate::placement`) now or within [`FORMER_RINGS_FOR`]: a cell's owner
    /// before a membership change hands its postings to the cell's new owners.
    pub fn owned_point_recently(&self, peer: &PeerId, point: u64, replicas: usize, now: Instant) -> bool {
        self.recent_rings(now).any(|r| r.owners_of_point(point, replicas).contains(peer))
    }

    /// The ring of the current member set.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Changes whenever the ring does (see [`Members::ring`]).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Peer ids of every member, this node included once admitted (until it leaves), sorted.
    pub fn peers(&self) -> Vec<PeerId> {
        self.ring.members().to_vec()
    }

    /// The points `peer` holds on the ring now (0 if it is not a member).
    pub fn points_of(&self, peer: &PeerId) -> usize {
        self.ring.points_of(peer)
    }

    /// Members, this node included once admitted.
    pub fn len(&self) -> usize {
        self.ring.members().len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(n: usize) -> Vec<PeerId> {
        let mut v: Vec<PeerId> = (0..n).map(|_| PeerId::random()).collect();
        v.sort();
        v
    }

    /// A host `owner` owns on `ring`.
    fn host_of(ring: &Ring, owner: &PeerId) -> String {
        (0..100_000).map(|i| format!("h{i}.example")).find(|h| ring.owner(h) == Some(owner)).expect("a host")
    }

    #[test]
    fn following_the_roster_reports_joins_leaves_and_growth_and_remembers_former_rings() {
        let p = peers(4);
        let t0 = Instant::now();
        let mut m = Members::new(p[0], 16, t0);
        assert!(m.is_empty() && m.follow(&Ring::new([], 16), &[], t0).is_empty());
        let three = Ring::weighted([(p[0], 16), (p[1], 16), (p[2], 4)], 16);
        let changes = m.follow(&three, &[], t0);
        assert_eq!(changes.len(), 3, "{changes:?}");
        assert_eq!((m.len(), m.generation()), (3, 1));
        assert!(m.follow(&three, &[], t0).is_empty(), "the same ring is no change");
        let host = host_of(&three, &p[2]);
        let grown = Ring::weighted([(p[0], 16), (p[1], 16), (p[2], 8)], 16);
        assert_eq!(m.follow(&grown, &[], t0), vec![Change::Grew(p[2])]);
        // p[2] leaves: it no longer owns its host, but did within the former rings' time.
        let t1 = t0 + Duration::from_secs(60);
        let two = Ring::new([p[0], p[1]], 16);
        assert_eq!(m.follow(&two, &[p[2]], t1), vec![Change::Left(p[2])]);
        assert!(!m.is_member(&p[2]) && m.knows(&p[2], t1));
        assert!(m.owned_recently(&p[2], &host, t1));
        let later = t1 + FORMER_RINGS_FOR + Duration::from_secs(1);
        assert!(!m.knows(&p[2], later) && !m.owned_recently(&p[2], &host, later));
        assert!(!m.knows(&p[3], t1), "never a member");
    }

    /// A node back from a crash never had on a ring a member
    /// that left while it was down, and takes its hand-off because the roster holds the
    /// departure — only for the hosts the leaver would have owned.
    #[test]
    fn a_leaver_this_node_never_had_on_a_ring_hands_over_its_hosts_only() {
        let p = peers(4);
        let t0 = Instant::now();
        let mut m = Members::new(p[0], 32, t0);
        let ring = Ring::new([p[0], p[1], p[2]], 32);
        m.follow(&ring, &[p[3]], t0);
        assert!(m.knows(&p[3], t0), "a recent departure in the roster");
        let with = Ring::new([p[0], p[1], p[2], p[3]], 32);
        let its = host_of(&with, &p[3]);
        let not_its = host_of(&with, &p[1]);
        assert!(m.owned_recently(&p[3], &its, t0));
        assert!(!m.owned_recently(&p[3], &not_its, t0));
        // Once the departure is older than the former rings' time, the roster no longer lists it.
        m.follow(&ring, &[], t0 + Duration::from_secs(1));
        assert!(!m.knows(&p[3], t0 + Duration::from_secs(1)));
    }

    #[test]
    fn a_leaving_node_is_on_no_ring_of_its_own_and_the_others_own_its_hosts() {
        let p = peers(3);
        let t0 = Instant::now();
        let mut m = Members::new(p[0], 32, t0);
        let ring = Ring::new(p.clone(), 32);
        m.follow(&ring, &[], t0);
        let mine = host_of(&ring, &p[0]);
        m.leave(t0);
        assert!(!m.ring().contains(&p[0]));
        assert!(m.ring().owner(&mine).is_some_and(|o| *o != p[0]));
        assert!(m.follow(&ring, &[], t0).is_empty(), "the roster still lists it: no change here");
        // In its first minutes a node takes the word of whoever held its hosts before it.
        assert!(m.owned_recently(m.ring().owner(&mine).unwrap(), &mine, t0));
    }

    #[test]
    fn a_member_is_silent_from_a_failed_dial_until_a_sign_of_life() {
        let p = peers(3);
        let t0 = Instant::now();
        let mut m = Members::new(p[0], 8, t0);
        m.follow(&Ring::new([p[0], p[1]], 8), &[], t0);
        assert!(!m.silent(&p[1]));
        m.unreached(&p[1], t0);
        m.unreached(&p[2], t0);
        m.unreached(&p[0], t0);
        assert!(m.silent(&p[1]) && !m.silent(&p[2]) && !m.silent(&p[0]), "members only, never itself");
        m.alive(&p[1]);
        assert!(!m.silent(&p[1]));
        m.unreached(&p[1], t0);
        m.follow(&Ring::new([p[0]], 8), &[p[1]], t0);
        assert!(!m.silent(&p[1]), "gone: forgotten");
    }
}
