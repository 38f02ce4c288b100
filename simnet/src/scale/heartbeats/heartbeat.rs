//! A member's heartbeat: its announcement of itself on the membership topic, signed, bounded
//! and read leniently.

use super::departures::{self, Departure};
use libp2p::PeerId;
use serde::{Deserialize, Serialize};

/// The gossipsub topic of membership heartbeats.
pub const TOPIC: &str = "/weft/members/2";

/// Largest heartbeat accepted (a peer id, a few addresses, two numbers).
pub const MAX_HEARTBEAT_BYTES: usize = 4096;

/// A member's announcement of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Base58 peer id; must be the sealed message's author (`crate::sealed`).
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
    /// Unix seconds since it has been a member without a break, as it says (see the module
    /// doc: those that saw it arrive hold it to when they did). Its ring points grow with it.
    #[serde(default)]
    pub joined: u64,
    /// Members it saw leave lately: a node that was away then takes their hand-offs once
    /// enough members say so (see [`departures`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left: Vec<Departure>,
    /// Seconds between its heartbeats (see [`Members::period`]): a member that hears fewer
    /// members than this one keeps a shorter period and would otherwise drop it early. 0 from a
    /// node that does not say.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub every: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
        if hb.left.len() > departures::MAX_TOLD {
            return Err(HeartbeatError::Decode(format!("{} departures told", hb.left.len())));
        }
        Ok(hb)
    }
}
