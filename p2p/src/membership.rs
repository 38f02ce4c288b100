//! Who is in the network: members announce themselves with a heartbeat on a gossipsub topic
//! and are dropped after missing a few. The member set — this node included — is what the
//! hash ring is built from, so two nodes that heard the same heartbeats assign every host to
//! the same member.

use crate::ring::Ring;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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
    others: BTreeMap<String, Member>,
    ttl: Duration,
    vnodes: usize,
    ring: Ring,
}

/// What a heartbeat or an expiry did to the member set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Joined(String),
    Left(String),
}

impl Members {
    /// A table with only this node in it; members expire after `ttl` without a heartbeat.
    pub fn new(me: Heartbeat, ttl: Duration, vnodes: usize) -> Members {
        let ring = Ring::new([me.peer.clone()], vnodes);
        Members { me, others: BTreeMap::new(), ttl, vnodes, ring }
    }

    pub fn me(&self) -> &Heartbeat {
        &self.me
    }

    /// Updates this node's own announcement (its addresses change as it learns them).
    pub fn set_me(&mut self, me: Heartbeat) {
        self.me = me;
    }

    /// Records a heartbeat seen at `now`.
    pub fn observe(&mut self, hb: Heartbeat, now: Instant) -> Option<Change> {
        if hb.peer == self.me.peer {
            return None;
        }
        if hb.leaving {
            return self.remove(&hb.peer);
        }
        let peer = hb.peer.clone();
        let joined = self.others.insert(peer.clone(), Member { heartbeat: hb, last_seen: now }).is_none();
        joined.then(|| {
            self.rebuild();
            Change::Joined(peer)
        })
    }

    /// Drops a member at once (its connection closed for good, or it was banned).
    pub fn remove(&mut self, peer: &str) -> Option<Change> {
        self.others.remove(peer).map(|_| {
            self.rebuild();
            Change::Left(peer.to_string())
        })
    }

    /// Drops members not heard from within the ttl.
    pub fn expire(&mut self, now: Instant) -> Vec<Change> {
        let gone: Vec<String> = self
            .others
            .iter()
            .filter(|(_, m)| now.saturating_duration_since(m.last_seen) > self.ttl)
            .map(|(p, _)| p.clone())
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
        let me = (!self.me.leaving).then(|| self.me.peer.clone());
        let peers = me.into_iter().chain(self.others.keys().cloned());
        self.ring = Ring::new(peers, self.vnodes);
    }

    /// The ring of the current member set, this node included.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// Peer ids of every member, this node included (until it leaves), sorted.
    pub fn peers(&self) -> Vec<String> {
        self.ring.members().to_vec()
    }

    /// The heartbeat last heard from `peer`.
    pub fn get(&self, peer: &str) -> Option<&Heartbeat> {
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

    fn hb(peer: &str) -> Heartbeat {
        Heartbeat {
            peer: peer.into(),
            addrs: vec!["/ip4/127.0.0.1/tcp/1".into()],
            capacity: 10,
            leaving: false,
            relay: false,
        }
    }

    #[test]
    fn a_leaving_member_is_dropped_at_once_and_a_leaver_owns_nothing() {
        let t0 = Instant::now();
        let mut m = Members::new(hb("me"), Duration::from_secs(20), 150);
        m.observe(hb("b"), t0);
        m.observe(hb("c"), t0);
        let bye = Heartbeat { leaving: true, ..hb("b") };
        assert_eq!(Heartbeat::decode(&bye.encode(), "b").unwrap(), bye);
        assert_eq!(m.observe(bye, t0), Some(Change::Left("b".into())));
        assert_eq!(m.peers(), ["c", "me"]);
        m.leave();
        assert_eq!(m.peers(), ["c"], "the leaver's ring gives its hosts to the others");
        assert!(m.me().leaving);
        assert_eq!(m.ring().owner("any.test"), Some("c"));
    }

    #[test]
    fn members_join_expire_and_the_ring_follows() {
        let t0 = Instant::now();
        let mut m = Members::new(hb("me"), Duration::from_secs(20), 150);
        assert_eq!(m.ring().members(), ["me"]);
        assert_eq!(m.observe(hb("b"), t0), Some(Change::Joined("b".into())));
        assert_eq!(m.observe(hb("b"), t0), None, "a repeated heartbeat is no change");
        assert_eq!(m.observe(hb("me"), t0), None, "our own heartbeat echoes are ignored");
        m.observe(hb("c"), t0 + Duration::from_secs(15));
        assert_eq!(m.peers(), ["b", "c", "me"]);
        assert_eq!(m.expire(t0 + Duration::from_secs(21)), vec![Change::Left("b".into())]);
        assert_eq!(m.ring().members(), ["c", "me"]);
        assert_eq!(m.remove("c"), Some(Change::Left("c".into())));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn heartbeats_are_capped_validated_and_bound_to_their_signer() {
        let bytes = hb("peer-a").encode();
        assert_eq!(Heartbeat::decode(&bytes, "peer-a").unwrap(), hb("peer-a"));
        assert!(matches!(Heartbeat::decode(&bytes, "peer-b"), Err(HeartbeatError::Impostor { .. })));
        assert!(matches!(Heartbeat::decode(b"\xff\x00{", "peer-a"), Err(HeartbeatError::Decode(_))));
        let big = vec![b' '; MAX_HEARTBEAT_BYTES + 1];
        assert!(matches!(Heartbeat::decode(&big, "peer-a"), Err(HeartbeatError::TooLarge(_))));
        let many = Heartbeat { addrs: vec!["/ip4/1.2.3.4/tcp/1".into(); 100], ..hb("peer-a") };
        assert!(Heartbeat::decode(&many.encode(), "peer-a").is_err());
    }
}
