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

use crate::ring::Ring;
use libp2p::multiaddr::Protocol;
use libp2p::{Multiaddr, PeerId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How long a replaced ring is remembered: a member that just left (or lost a host to a
/// newcomer) is still handing its URLs over for this long.
pub const FORMER_RINGS_FOR: Duration = Duration::from_secs(600);
/// At most this many replaced rings are remembered (a flapping network must not grow it:
/// 16 rings of 100 members are ~4 MB).
const FORMER_RINGS: usize = 16;

/// A member counts while this node had a connection with it within this long (idle
/// connections close after a few minutes; the network dials a member again before this ends).
pub const PRESENCE_FOR: Duration = Duration::from_secs(600);
/// Peers heard of but not yet reached, in all ...
pub const MAX_CANDIDATES: usize = 256;
/// ... and relayed by one peer: a newcomer hears the whole network through its bootstrap peer
/// at first, and takes it in over a few heartbeats; a peer relaying made-up identities fills
/// its own share and no more.
pub const MAX_CANDIDATES_PER_SOURCE: usize = 16;
/// A candidate not reached within this long is ignored for [`UNREACHED_FOR`].
pub const REACH_WITHIN: Duration = Duration::from_secs(30);
pub const UNREACHED_FOR: Duration = Duration::from_secs(600);
/// At most this many unreachable candidates are remembered (the oldest go first).
const MAX_UNREACHED: usize = 4096;
/// Members reached from one public IPv4 /24 or IPv6 /48. Private, loopback and relayed
/// connections are not counted (a homelab's LAN; a relay limits its own reservations).
pub const MAX_MEMBERS_PER_PREFIX: usize = 8;
/// A candidate is dialled again after this long without an answer.
const REDIAL_AFTER: Duration = Duration::from_secs(5);

/// The gossipsub topic of membership heartbeats.
pub const TOPIC: &str = "/weft/members/1";

/// Largest heartbeat accepted (a peer id, a few addresses, two numbers).
pub const MAX_HEARTBEAT_BYTES: usize = 4096;

/// A member's announcement of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Base58 peer id; must be the gossipsub message's signed source.
    pub peer: String,
    /// Multiaddrs it can be reached at.
    pub addrs: Vec<String>,
    /// Pages per second it offers to crawl.
    pub capacity: u32,
    /// Its last word: it is leaving for good, so drop it now rather than after missed
    /// heartbeats (its queued URLs are on their way to their new owners).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leaving: bool,
    /// It is publicly reachable and offers a Circuit Relay v2: members behind NAT may reserve a
    /// slot on it (see `crate::reachability`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub relay: bool,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum HeartbeatError {
    #[error("heartbeat of {0} bytes is over the {MAX_HEARTBEAT_BYTES}-byte cap")]
    TooLarge(usize),
    #[error("undecodable heartbeat: {0}")]
    Decode(String),
    #[error("heartbeat for {claimed} was signed by {source_peer}")]
    Impostor { claimed: String, source_peer: String },
}

impl Heartbeat {
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("heartbeats serialize")
    }

    /// Decodes a heartbeat and checks that `source` (the signed author) is the member it names.
    pub fn decode(bytes: &[u8], source: &str) -> Result<Heartbeat, HeartbeatError> {
        if bytes.len() > MAX_HEARTBEAT_BYTES {
            return Err(HeartbeatError::TooLarge(bytes.len()));
        }
        let hb: Heartbeat = serde_json::from_slice(bytes).map_err(|e| HeartbeatError::Decode(e.to_string()))?;
        if hb.peer != source {
            return Err(HeartbeatError::Impostor { claimed: hb.peer, source_peer: source.to_string() });
        }
        if hb.peer.parse::<PeerId>().is_err() {
            return Err(HeartbeatError::Decode(format!("{:?} is not a peer id", hb.peer)));
        }
        if hb.addrs.len() > 32 || hb.addrs.iter().any(|a| a.len() > 256) {
            return Err(HeartbeatError::Decode("too many or too long addresses".into()));
        }
        Ok(hb)
    }
}

#[derive(Debug, Clone)]
struct Member {
    heartbeat: Heartbeat,
    last_seen: Instant,
    /// When this node last had a connection with it.
    present_at: Instant,
    /// Its public address block, if it was reached on one (see [`prefix`]).
    prefix: Option<String>,
    /// When it was last dialled to prove it is still there.
    dialled: Option<Instant>,
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
    /// Candidates that were not reached, until when they are ignored.
    unreached: HashMap<PeerId, Instant>,
    ttl: Duration,
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
}

/// What a heartbeat or an expiry did to the member set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Joined(PeerId),
    Left(PeerId),
}

/// The public address block a connection came from: an IPv4 /24 or an IPv6 /48, or `None`
/// for private, loopback and other non-public addresses and for relayed connections.
pub fn prefix(remote: &Multiaddr) -> Option<String> {
    if remote.iter().any(|p| matches!(p, Protocol::P2pCircuit)) {
        return None;
    }
    let ip: std::net::IpAddr = remote.iter().find_map(|p| match p {
        Protocol::Ip4(a) => Some(a.into()),
        Protocol::Ip6(a) => Some(a.into()),
        _ => None,
    })?;
    if weft_frontier::address::non_public_reason(ip).is_some() {
        return None;
    }
    Some(match ip {
        std::net::IpAddr::V4(a) => {
            let [x, y, z, _] = a.octets();
            format!("{x}.{y}.{z}.0/24")
        }
        std::net::IpAddr::V6(a) => {
            let s = a.segments();
            format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
        }
    })
}

impl Members {
    /// A table with only this node (`me_id`, announcing `me`) in it; members expire after
    /// `ttl` without a heartbeat.
    pub fn new(me_id: PeerId, me: Heartbeat, ttl: Duration, vnodes: usize) -> Members {
        let ring = Ring::new([me_id], vnodes);
        let apart = Ring::new([], vnodes);
        let (others, former, started) = (BTreeMap::new(), VecDeque::new(), Instant::now());
        let (candidates, unreached) = (BTreeMap::new(), HashMap::new());
        Members { me, me_id, others, candidates, unreached, ttl, vnodes, ring, apart, former, started }
    }

    pub fn me(&self) -> &Heartbeat {
        &self.me
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
        let peer: PeerId = hb.peer.parse().ok()?;
        if peer == self.me_id {
            return None;
        }
        if hb.leaving {
            self.candidates.remove(&peer);
            return self.remove(&peer);
        }
        if let Some(m) = self.others.get_mut(&peer) {
            m.heartbeat = hb;
            m.last_seen = now;
            if remote.is_some() {
                m.present_at = now;
            }
            return None;
        }
        if self.unreached.get(&peer).is_some_and(|until| *until > now) {
            return None;
        }
        if let Some(remote) = remote {
            self.candidates.remove(&peer);
            return self.admit(peer, hb, remote, now);
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
        if let Some(m) = self.others.get_mut(peer) {
            m.present_at = now;
            return None;
        }
        let c = self.candidates.remove(peer)?;
        if now.saturating_duration_since(c.last_seen) > self.ttl {
            return None;
        }
        self.admit(*peer, c.heartbeat, remote, now)
    }

    fn admit(&mut self, peer: PeerId, heartbeat: Heartbeat, remote: &Multiaddr, now: Instant) -> Option<Change> {
        let prefix = prefix(remote);
        if let Some(p) = &prefix {
            if self.others.values().filter(|m| m.prefix.as_ref() == Some(p)).count() >= MAX_MEMBERS_PER_PREFIX {
                tracing::debug!(%peer, prefix = p, "not a member: its address block has enough members");
                self.refuse(peer, now);
                return None;
            }
        }
        let member = Member { heartbeat, last_seen: now, present_at: now, prefix, dialled: None };
        self.others.insert(peer, member);
        self.rebuild();
        Some(Change::Joined(peer))
    }

    fn refuse(&mut self, peer: PeerId, now: Instant) {
        if self.unreached.len() >= MAX_UNREACHED {
            self.unreached.retain(|_, until| *until > now);
            if self.unreached.len() >= MAX_UNREACHED {
                let oldest = self.unreached.iter().min_by_key(|(_, until)| **until).map(|(p, _)| *p);
                if let Some(p) = oldest {
                    self.unreached.remove(&p);
                }
            }
        }
        self.unreached.insert(peer, now + UNREACHED_FOR);
    }

    /// Peers to dial now: candidates (again every few seconds until [`REACH_WITHIN`]), and
    /// members not met within half of [`PRESENCE_FOR`], with the addresses they announce.
    /// Candidates past their time are given up here.
    pub fn to_dial(&mut self, now: Instant) -> Vec<(PeerId, Vec<String>)> {
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
            self.rebuild();
            Change::Left(*peer)
        })
    }

    /// Drops members not heard from within the ttl, or not met within [`PRESENCE_FOR`].
    pub fn expire(&mut self, now: Instant) -> Vec<Change> {
        let gone: Vec<PeerId> = self
            .others
            .iter()
            .filter(|(_, m)| {
                now.saturating_duration_since(m.last_seen) > self.ttl
                    || now.saturating_duration_since(m.present_at) > PRESENCE_FOR
            })
            .map(|(p, _)| *p)
            .collect();
        for p in &gone {
            self.others.remove(p);
        }
        if !gone.is_empty() {
            self.rebuild();
        }
        self.candidates.retain(|_, c| now.saturating_duration_since(c.last_seen) <= self.ttl);
        gone.into_iter().map(Change::Left).collect()
    }

    /// This node leaves: its heartbeat says so from now on and the ring no longer holds it,
    /// so every host it owned has another owner (none if it was alone).
    pub fn leave(&mut self) {
        self.me.leaving = true;
        self.rebuild();
    }

    fn rebuild(&mut self) {
        let me = (!self.me.leaving).then_some(self.me_id);
        let peers = me.into_iter().chain(self.others.keys().copied());
        let old = std::mem::replace(&mut self.ring, Ring::new(peers, self.vnodes));
        self.apart = Ring::new(self.others.keys().copied(), self.vnodes);
        let now = Instant::now();
        while self.former.len() >= FORMER_RINGS
            || self.former.front().is_some_and(|(at, _)| now.saturating_duration_since(*at) > FORMER_RINGS_FOR)
        {
            self.former.pop_front();
        }
        self.former.push_back((now, old));
    }

    /// Rings current within [`FORMER_RINGS_FOR`] of `now`, the current one first.
    fn recent_rings(&self, now: Instant) -> impl Iterator<Item = &Ring> {
        let former = self
            .former
            .iter()
            .rev()
            .take_while(move |(at, _)| now.saturating_duration_since(*at) <= FORMER_RINGS_FOR)
            .map(|(_, r)| r);
        std::iter::once(&self.ring).chain(former)
    }

    /// Whether `peer` is a member, or was one within [`FORMER_RINGS_FOR`] (a member that left
    /// hands its URLs over after it is gone): who may send this node URL batches. A member
    /// this node has not heard yet (it just started) is told so, announces itself and retries.
    pub fn knows(&self, peer: &PeerId, now: Instant) -> bool {
        self.recent_rings(now).any(|r| r.contains(peer))
    }

    /// Whether `peer` owns `host` (a ring host name) now or did within [`FORMER_RINGS_FOR`],
    /// or — in this node's first [`FORMER_RINGS_FOR`] — does on the ring without this node (it
    /// held this node's hosts before it joined, or while it was away): only the owner, or the
    /// owner before a membership change, can say it is done with a URL of the host.
    pub fn owned_recently(&self, peer: &PeerId, host: &str, now: Instant) -> bool {
        let starting = now.saturating_duration_since(self.started) <= FORMER_RINGS_FOR;
        (starting && self.apart.owner(host) == Some(peer))
            || self.recent_rings(now).any(|r| r.owner(host) == Some(peer))
    }

    /// The ring of the current member set, this node included.
    pub fn ring(&self) -> &Ring {
        &self.ring
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Three peers, `me` < `b` < `c` in the ring's order.
    fn peers() -> (PeerId, PeerId, PeerId) {
        let mut p: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        p.sort();
        (p[0], p[1], p[2])
    }

    /// Where a member is connected from in these tests.
    fn lo() -> Multiaddr {
        "/ip4/127.0.0.1/tcp/4001".parse().unwrap()
    }

    fn hb(peer: &PeerId) -> Heartbeat {
        Heartbeat {
            peer: peer.to_string(),
            addrs: vec!["/ip4/127.0.0.1/tcp/1".into()],
            capacity: 10,
            leaving: false,
            relay: false,
        }
    }

    #[test]
    fn a_leaving_member_is_dropped_at_once_and_a_leaver_owns_nothing() {
        let (me, b, c) = peers();
        let t0 = Instant::now();
        let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
        m.observe(hb(&b), b, Some(&lo()), t0);
        m.observe(hb(&c), c, Some(&lo()), t0);
        let bye = Heartbeat { leaving: true, ..hb(&b) };
        assert_eq!(Heartbeat::decode(&bye.encode(), &b.to_string()).unwrap(), bye);
        assert_eq!(m.observe(bye, b, Some(&lo()), t0), Some(Change::Left(b)));
        assert_eq!(m.peers(), [me, c]);
        m.leave();
        assert_eq!(m.peers(), [c], "the leaver's ring gives its hosts to the others");
        assert!(m.me().leaving);
        assert_eq!(m.ring().owner("any.test"), Some(&c));
    }

    #[test]
    fn members_join_expire_and_the_ring_follows() {
        let (me, b, c) = peers();
        let t0 = Instant::now();
        let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
        assert_eq!(m.ring().members(), [me]);
        assert_eq!(m.observe(hb(&b), b, Some(&lo()), t0), Some(Change::Joined(b)));
        assert_eq!(m.observe(hb(&b), b, Some(&lo()), t0), None, "a repeated heartbeat is no change");
        assert_eq!(m.observe(hb(&me), me, Some(&lo()), t0), None, "our own heartbeat echoes are ignored");
        m.observe(hb(&c), c, Some(&lo()), t0 + Duration::from_secs(15));
        assert_eq!(m.peers(), [me, b, c]);
        assert_eq!(m.expire(t0 + Duration::from_secs(21)), vec![Change::Left(b)]);
        assert_eq!(m.ring().members(), [me, c]);
        assert_eq!(m.remove(&c), Some(Change::Left(c)));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn a_member_that_left_is_known_for_a_while_with_the_hosts_it_owned_and_a_stranger_never() {
        let (me, b, c) = peers();
        let stranger = PeerId::random();
        let t0 = Instant::now();
        let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
        m.observe(hb(&b), b, Some(&lo()), t0);
        m.observe(hb(&c), c, Some(&lo()), t0);
        let of_b: Vec<String> =
            (0..200).map(|i| format!("h{i}.test")).filter(|h| m.ring().owner(h) == Some(&b)).collect();
        assert!(!of_b.is_empty());
        m.observe(Heartbeat { leaving: true, ..hb(&b) }, b, Some(&lo()), t0);
        let now = Instant::now();
        assert!(m.knows(&b, now) && m.knows(&c, now) && m.knows(&me, now));
        assert!(!m.knows(&stranger, now), "a peer never a member");
        assert!(of_b.iter().all(|h| m.owned_recently(&b, h, now)), "b owned these before it left");
        assert!(of_b.iter().all(|h| !m.owned_recently(&stranger, h, now)), "a stranger owned nothing");
        let later = now + FORMER_RINGS_FOR + Duration::from_secs(1);
        assert!(!m.knows(&b, later) && !m.owned_recently(&b, &of_b[0], later), "forgotten after a while");
        assert!(m.knows(&c, later), "a current member stays known");
        // A flapping member does not grow the memory without bound.
        for _ in 0..100 {
            m.observe(hb(&stranger), stranger, Some(&lo()), t0);
            m.remove(&stranger);
        }
        assert!(m.former.len() <= FORMER_RINGS);
    }

    #[test]
    fn heartbeats_are_capped_validated_and_bound_to_their_signer() {
        let (a, b, _) = peers();
        let (a_s, b_s) = (a.to_string(), b.to_string());
        let bytes = hb(&a).encode();
        assert_eq!(Heartbeat::decode(&bytes, &a_s).unwrap(), hb(&a));
        assert!(matches!(Heartbeat::decode(&bytes, &b_s), Err(HeartbeatError::Impostor { .. })));
        assert!(matches!(Heartbeat::decode(b"\xff\x00{", &a_s), Err(HeartbeatError::Decode(_))));
        let big = vec![b' '; MAX_HEARTBEAT_BYTES + 1];
        assert!(matches!(Heartbeat::decode(&big, &a_s), Err(HeartbeatError::TooLarge(_))));
        let many = Heartbeat { addrs: vec!["/ip4/1.2.3.4/tcp/1".into(); 100], ..hb(&a) };
        assert!(Heartbeat::decode(&many.encode(), &a_s).is_err());
        let not_a_peer = Heartbeat { peer: "peer-a".into(), ..hb(&a) };
        assert!(matches!(Heartbeat::decode(&not_a_peer.encode(), "peer-a"), Err(HeartbeatError::Decode(_))));
    }

    #[test]
    fn a_hundred_identities_behind_one_connection_stay_candidates_and_are_given_up() {
        let (me, honest, _) = peers();
        let gateway = PeerId::random();
        let t0 = Instant::now();
        let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
        let sybils: Vec<PeerId> = (0..100).map(|_| PeerId::random()).collect();
        for s in &sybils {
            assert_eq!(m.observe(hb(s), gateway, None, t0), None);
        }
        assert_eq!(m.len(), 1, "nobody reached, nobody counted");
        assert_eq!(m.candidates(), MAX_CANDIDATES_PER_SOURCE, "one relaying peer fills its own share");
        let dial = m.to_dial(t0);
        assert_eq!(dial.len(), MAX_CANDIDATES_PER_SOURCE);
        assert!(m.to_dial(t0 + Duration::from_secs(1)).is_empty(), "not dialled again at once");
        assert_eq!(m.to_dial(t0 + REDIAL_AFTER).len(), MAX_CANDIDATES_PER_SOURCE, "dialled again");
        // An honest peer heard over the same connection and reached joins.
        m.observe(hb(&honest), gateway, None, t0);
        assert_eq!(m.candidates(), MAX_CANDIDATES_PER_SOURCE, "the gateway's share is full");
        assert_eq!(m.observe(hb(&honest), honest, Some(&lo()), t0), Some(Change::Joined(honest)));
        // The unreached are given up and ignored for a while, making room for others.
        let later = t0 + REACH_WITHIN + Duration::from_secs(1);
        for s in &sybils {
            m.observe(hb(s), gateway, None, later);
        }
        m.to_dial(later);
        assert_eq!(m.candidates(), 0, "the unreached are given up");
        for s in &sybils[..MAX_CANDIDATES_PER_SOURCE] {
            m.observe(hb(s), gateway, None, later);
        }
        assert_eq!(m.candidates(), 0, "and ignored when heard of again");
        m.observe(hb(&sybils[50]), gateway, None, later);
        assert_eq!(m.candidates(), 1, "one not tried yet takes a free place");
        assert_eq!(m.peers().len(), 2);
        // Reached later (it was real after all): a member.
        assert_eq!(m.present(&sybils[50], &lo(), later), Some(Change::Joined(sybils[50])));
        assert!(m.present(&sybils[0], &lo(), later).is_none(), "a given-up peer must be heard again");
    }

    #[test]
    fn a_member_counts_while_it_is_met_and_is_dialled_before_its_presence_runs_out() {
        let (me, b, _) = peers();
        let t0 = Instant::now();
        let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
        m.observe(hb(&b), me, None, t0);
        assert_eq!(m.len(), 1);
        assert_eq!(m.present(&b, &lo(), t0), Some(Change::Joined(b)), "reached: a member");
        // Heartbeats keep coming through others, but the connection is gone.
        let mut t = t0;
        while t < t0 + PRESENCE_FOR / 2 {
            t += Duration::from_secs(10);
            m.observe(hb(&b), me, None, t);
            assert!(m.expire(t).is_empty());
        }
        t += Duration::from_secs(10);
        m.observe(hb(&b), me, None, t);
        assert_eq!(m.to_dial(t).iter().map(|(p, _)| *p).collect::<Vec<_>>(), [b], "time to meet it again");
        let end = t0 + PRESENCE_FOR + Duration::from_secs(1);
        m.observe(hb(&b), me, None, end);
        assert_eq!(m.expire(end), vec![Change::Left(b)], "not met within PRESENCE_FOR: dropped");
    }

    #[test]
    fn one_public_address_block_brings_at_most_a_few_members() {
        let t0 = Instant::now();
        let me = PeerId::random();
        let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
        let at = |a: &str| -> Multiaddr { a.parse().unwrap() };
        let joined = (0..MAX_MEMBERS_PER_PREFIX + 3)
            .filter(|i| {
                let p = PeerId::random();
                m.observe(hb(&p), p, Some(&at(&format!("/ip4/8.8.4.{i}/tcp/4001"))), t0).is_some()
            })
            .count();
        assert_eq!(joined, MAX_MEMBERS_PER_PREFIX);
        let p = PeerId::random();
        assert!(m.observe(hb(&p), p, Some(&at("/ip4/8.8.5.1/tcp/4001")), t0).is_some(), "another block");
        for i in 0..20 {
            let p = PeerId::random();
            assert!(m.observe(hb(&p), p, Some(&at(&format!("/ip4/192.168.1.{i}/tcp/4001"))), t0).is_some());
        }
        let relayed =
            at("/ip4/8.8.4.200/tcp/4001/p2p/12D3KooWGzBXD7mGH3XUAtBGLjZP3P7eR7yXH7mfh3hLqv1UkQnm/p2p-circuit");
        let p = PeerId::random();
        assert!(m.observe(hb(&p), p, Some(&relayed), t0).is_some(), "relayed: the relay limits its slots");
        assert_eq!(m.len(), 1 + MAX_MEMBERS_PER_PREFIX + 1 + 20 + 1);
    }

    #[test]
    fn address_blocks_are_public_slash_24_and_slash_48() {
        let p = |a: &str| prefix(&a.parse().unwrap());
        assert_eq!(p("/ip4/8.8.4.4/tcp/1").as_deref(), Some("8.8.4.0/24"));
        assert_eq!(p("/ip6/2a01:4f8:1c1c:42::1/udp/1/quic-v1").as_deref(), Some("2a01:4f8:1c1c::/48"));
        for private in ["/ip4/127.0.0.1/tcp/1", "/ip4/10.1.2.3/tcp/1", "/ip6/::1/tcp/1", "/ip6/fd00::1/tcp/1"] {
            assert_eq!(p(private), None, "{private}");
        }
        assert_eq!(p("/dns4/example.com/tcp/1"), None);
    }
}
