//! Who is in the network: members announce themselves with a heartbeat on a gossipsub topic
//! and are dropped after missing a few. The member set — this node included — is what the
//! hash ring is built from, so two nodes that heard the same heartbeats assign every host to
//! the same member.

use crate::ring::Ring;
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// How long a replaced ring is remembered: a member that just left (or lost a host to a
/// newcomer) is still handing its URLs over for this long.
pub const FORMER_RINGS_FOR: Duration = Duration::from_secs(600);
/// At most this many replaced rings are remembered (a flapping network must not grow it:
/// 16 rings of 100 members are ~4 MB).
const FORMER_RINGS: usize = 16;

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
}

/// The member table of one node.
#[derive(Debug)]
pub struct Members {
    me: Heartbeat,
    me_id: PeerId,
    others: BTreeMap<PeerId, Member>,
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

impl Members {
    /// A table with only this node (`me_id`, announcing `me`) in it; members expire after
    /// `ttl` without a heartbeat.
    pub fn new(me_id: PeerId, me: Heartbeat, ttl: Duration, vnodes: usize) -> Members {
        let ring = Ring::new([me_id], vnodes);
        let apart = Ring::new([], vnodes);
        let (others, former, started) = (BTreeMap::new(), VecDeque::new(), Instant::now());
        Members { me, me_id, others, ttl, vnodes, ring, apart, former, started }
    }

    pub fn me(&self) -> &Heartbeat {
        &self.me
    }

    /// Updates this node's own announcement (its addresses change as it learns them).
    pub fn set_me(&mut self, me: Heartbeat) {
        self.me = me;
    }

    /// Records a heartbeat seen at `now` (one that does not name a peer id is ignored:
    /// [`Heartbeat::decode`] refuses those).
    pub fn observe(&mut self, hb: Heartbeat, now: Instant) -> Option<Change> {
        let peer: PeerId = hb.peer.parse().ok()?;
        if peer == self.me_id {
            return None;
        }
        if hb.leaving {
            return self.remove(&peer);
        }
        let joined = self.others.insert(peer, Member { heartbeat: hb, last_seen: now }).is_none();
        joined.then(|| {
            self.rebuild();
            Change::Joined(peer)
        })
    }

    /// Drops a member at once (its connection closed for good, or it was banned).
    pub fn remove(&mut self, peer: &PeerId) -> Option<Change> {
        self.others.remove(peer).map(|_| {
            self.rebuild();
            Change::Left(*peer)
        })
    }

    /// Drops members not heard from within the ttl.
    pub fn expire(&mut self, now: Instant) -> Vec<Change> {
        let gone: Vec<PeerId> = self
            .others
            .iter()
            .filter(|(_, m)| now.saturating_duration_since(m.last_seen) > self.ttl)
            .map(|(p, _)| *p)
            .collect();
        for p in &gone {
            self.others.remove(p);
        }
        if !gone.is_empty() {
            self.rebuild();
        }
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
    /// hands its URLs over after it is gone). Not yet used to refuse URL batches: a restarted
    /// or joining node has not heard every member at first (see the closing note of issue 24).
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
        m.observe(hb(&b), t0);
        m.observe(hb(&c), t0);
        let bye = Heartbeat { leaving: true, ..hb(&b) };
        assert_eq!(Heartbeat::decode(&bye.encode(), &b.to_string()).unwrap(), bye);
        assert_eq!(m.observe(bye, t0), Some(Change::Left(b)));
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
        assert_eq!(m.observe(hb(&b), t0), Some(Change::Joined(b)));
        assert_eq!(m.observe(hb(&b), t0), None, "a repeated heartbeat is no change");
        assert_eq!(m.observe(hb(&me), t0), None, "our own heartbeat echoes are ignored");
        m.observe(hb(&c), t0 + Duration::from_secs(15));
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
        m.observe(hb(&b), t0);
        m.observe(hb(&c), t0);
        let of_b: Vec<String> =
            (0..200).map(|i| format!("h{i}.test")).filter(|h| m.ring().owner(h) == Some(&b)).collect();
        assert!(!of_b.is_empty());
        m.observe(Heartbeat { leaving: true, ..hb(&b) }, t0);
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
            m.observe(hb(&stranger), t0);
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
}
