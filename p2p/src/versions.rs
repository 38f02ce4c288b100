//! Which version of Weft's protocol a peer speaks, and the peers refused for speaking another.
//!
//! Members of two versions must not share a network: a member computes every host's owner from
//! the member set by its own version's rules, so one that reads the membership differently would
//! send URLs to members that do not think they own them, and take hosts no one else gives it.
//! A peer announces its version in identify (`behaviour::PROTOCOL_VERSION`); a node refuses a
//! peer of another version as soon as it reads it — disconnects, keeps it out of its member set
//! and blocks it for [`REFUSED_FOR`] — and says so: in its log, in `/status`, and, when the peer
//! was the bootstrap peer it joins through, as the reason it is not joining.

use libp2p::PeerId;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// What identify announces: the version of the protocol this node speaks. A member speaking
/// another reads or routes something differently (records addressed over the grid since 0.5.0,
/// URL batches over it since 0.4.0, the codebook's ladder since 0.3.0, the roster since 0.2.0),
/// so it is refused rather than mis-ringed; what each version changed is in the book's network
/// chapter.
pub const PROTOCOL_VERSION: &str = "/weft/0.5.0";
/// A refused peer is not dialled or accepted again for this long (it may have been upgraded).
pub const REFUSED_FOR: Duration = Duration::from_secs(600);
/// Refused peers remembered at once (the oldest go first): a flood of strangers announcing
/// made-up versions cannot grow it.
const MAX_REFUSED: usize = 64;
/// Longest version string kept or shown: a peer chooses it.
const MAX_VERSION_CHARS: usize = 64;

/// A peer announced another version than this node's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("it speaks {theirs} and this node {ours}: members of two versions cannot share a network; upgrade whichever is older")]
pub struct OtherVersion {
    pub theirs: String,
    pub ours: String,
}

/// Whether a peer announcing `theirs` speaks this node's version.
pub fn check(theirs: &str) -> Result<(), OtherVersion> {
    if theirs == PROTOCOL_VERSION {
        return Ok(());
    }
    let theirs: String = theirs.chars().take(MAX_VERSION_CHARS).collect();
    let theirs = if theirs.is_empty() { "no version".to_string() } else { format!("{theirs:?}") };
    Err(OtherVersion { theirs, ours: PROTOCOL_VERSION.to_string() })
}

/// The peers refused for their version, until when, and what they said.
#[derive(Debug, Default)]
pub struct Refused {
    peers: BTreeMap<PeerId, (OtherVersion, Instant)>,
}

impl Refused {
    /// Records `peer` as refused at `now`; whether it is news (not refused already).
    pub fn refuse(&mut self, peer: PeerId, why: OtherVersion, now: Instant) -> bool {
        if self.peers.len() >= MAX_REFUSED && !self.peers.contains_key(&peer) {
            if let Some(oldest) = self.peers.iter().min_by_key(|(_, (_, until))| *until).map(|(p, _)| *p) {
                self.peers.remove(&oldest);
            }
        }
        self.peers.insert(peer, (why, now + REFUSED_FOR)).is_none()
    }

    /// Peers whose refusal ran out by `now`: forgotten here, to be unblocked by the caller.
    pub fn lifted(&mut self, now: Instant) -> Vec<PeerId> {
        let over: Vec<PeerId> = self.peers.iter().filter(|(_, (_, until))| *until <= now).map(|(p, _)| *p).collect();
        for p in &over {
            self.peers.remove(p);
        }
        over
    }

    /// Why `peer` is refused, if it is.
    pub fn get(&self, peer: &PeerId) -> Option<&OtherVersion> {
        self.peers.get(peer).map(|(why, _)| why)
    }

    pub fn contains(&self, peer: &PeerId) -> bool {
        self.peers.contains_key(peer)
    }

    /// Each refused peer with the version it announced, for `/status`.
    pub fn status(&self) -> BTreeMap<String, String> {
        self.peers.iter().map(|(p, (why, _))| (p.to_string(), why.theirs.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_version_is_refused_with_both_versions_named() {
        assert_eq!(check(PROTOCOL_VERSION), Ok(()));
        // The version before the ladder: its members refuse a large network's postings.
        assert!(check("/weft/0.2.0").is_err());
        // The version before the roster: its members heartbeat and count members otherwise.
        let e = check("/weft/0.1.0").unwrap_err();
        assert_eq!(e.theirs, "\"/weft/0.1.0\"");
        let message = e.to_string();
        assert!(message.contains("/weft/0.1.0") && message.contains(PROTOCOL_VERSION) && message.contains("upgrade"));
        assert_eq!(check("").unwrap_err().theirs, "no version");
        // A peer chooses the string: it is cut short, and quoted (no control characters reach
        // the log as they are).
        let long = check(&format!("/weft/\n{}", "9".repeat(500))).unwrap_err();
        assert!(long.theirs.len() < 80 && long.theirs.contains("\\n"), "{}", long.theirs);
    }

    #[test]
    fn a_refusal_lasts_its_time_and_the_list_is_bounded() {
        let t0 = Instant::now();
        let mut refused = Refused::default();
        let peer = PeerId::random();
        let why = check("/weft/0.1.0").unwrap_err();
        assert!(refused.refuse(peer, why.clone(), t0));
        assert!(!refused.refuse(peer, why.clone(), t0), "refused already");
        assert_eq!(refused.get(&peer), Some(&why));
        assert!(refused.lifted(t0 + REFUSED_FOR / 2).is_empty());
        assert_eq!(refused.lifted(t0 + REFUSED_FOR), vec![peer]);
        assert!(!refused.contains(&peer));
        for i in 0..200u64 {
            refused.refuse(PeerId::random(), why.clone(), t0 + Duration::from_millis(i));
        }
        assert_eq!(refused.status().len(), MAX_REFUSED);
    }
}
