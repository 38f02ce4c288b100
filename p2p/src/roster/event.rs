//! A change of the roster on the wire: a member joined, left, or was found dead — signed by
//! whoever may say so, so that no peer can add or remove anyone but itself.
//!
//! - **Joined**: the newcomer signs, and so do [`SPONSORS`] members that watched it through its
//!   probation (see `crate::roster`). A member declared dead that is in fact alive signs a
//!   Joined of its own alone, later than the accusation (a *refutation*).
//! - **Left**: the member itself, when it leaves gracefully.
//! - **Dead**: [`ACCUSERS`] of the member's monitors, each of which lost it.
//!
//! Every signer signs the same bytes: the tag, the member, the time, and what happened.

use crate::signing::SignedBytes;
use libp2p::identity::{Keypair, PublicKey};
use libp2p::PeerId;
use serde::{Deserialize, Serialize};

/// Sponsors a newcomer's Joined needs besides its own signature.
pub const SPONSORS: usize = 2;
/// Monitors that must accuse a member for it to be dead.
pub const ACCUSERS: usize = 2;
/// Signatures an event may carry.
pub const MAX_PROOFS: usize = 4;
/// An event's encoded size, at most.
pub const MAX_EVENT_BYTES: usize = 1024;

const TAG: &str = "weft-roster/1";

/// What happened to a member.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// It is a member with `vnodes` points when fully admitted, admitted at `since` (unix
    /// seconds: the event's own time, or the first admission's in a refutation), from the
    /// public address block whose hash is `block` (0: private or relayed, not counted).
    #[serde(rename = "j")]
    Joined {
        #[serde(rename = "v")]
        vnodes: u16,
        #[serde(rename = "s")]
        since: u64,
        #[serde(rename = "b")]
        block: u64,
    },
    #[serde(rename = "l")]
    Left,
    #[serde(rename = "d")]
    Dead,
}

impl What {
    /// Of two events of one member at the same second, the higher rank wins: a departure
    /// over a join.
    pub fn rank(&self) -> u8 {
        match self {
            What::Joined { .. } => 0,
            What::Left => 1,
            What::Dead => 2,
        }
    }

    pub fn is_joined(&self) -> bool {
        matches!(self, What::Joined { .. })
    }
}

/// One signature: by `signer`, or by the member itself when `signer` is empty.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    #[serde(rename = "k", with = "serde_bytes")]
    pub signer: Vec<u8>,
    #[serde(rename = "g", with = "serde_bytes")]
    pub signature: Vec<u8>,
}

/// A change of one member, as it travels.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Event {
    #[serde(rename = "p", with = "serde_bytes")]
    pub peer: Vec<u8>,
    /// When it happened (unix seconds, the signers' clocks).
    #[serde(rename = "t")]
    pub at: u64,
    #[serde(rename = "w")]
    pub what: What,
    #[serde(rename = "s")]
    pub proofs: Vec<Proof>,
}

/// Why an event was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    #[error("roster event of {0} bytes is over the {MAX_EVENT_BYTES}-byte cap")]
    TooLarge(usize),
    #[error("undecodable roster event: {0}")]
    Decode(String),
    #[error("roster event names no peer")]
    NotAPeer,
    #[error("roster event carries {0} signatures, over {MAX_PROOFS}")]
    TooManyProofs(usize),
    #[error("a signature on the roster event of {0} does not hold")]
    BadSignature(PeerId),
    #[error("a roster event of {peer} signed twice by {signer}")]
    SignedTwice { peer: PeerId, signer: PeerId },
}

/// The public key a peer id carries (ed25519 ids carry theirs).
pub fn key_of(peer: &PeerId) -> Option<PublicKey> {
    let hash: &libp2p::multihash::Multihash<64> = peer.as_ref();
    (hash.code() == 0).then(|| PublicKey::try_decode_protobuf(hash.digest()).ok()).flatten()
}

/// A sortable key of a peer: where it sits on the monitor ring, and the key digests name it by.
pub fn position(peer: &PeerId) -> u64 {
    let hash = blake3::hash(&peer.to_bytes());
    u64::from_be_bytes(hash.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// The hash of a public address block (`crate::reachability::address_block`), 0 for none.
pub fn block_hash(block: Option<&str>) -> u64 {
    block.map_or(0, |b| u64::from_be_bytes(blake3::hash(b.as_bytes()).as_bytes()[..8].try_into().expect("8")).max(1))
}

impl Event {
    /// An unsigned event (sign it with [`Event::signed_by`]).
    pub fn new(peer: &PeerId, at: u64, what: What) -> Event {
        Event { peer: peer.to_bytes(), at, what, proofs: Vec::new() }
    }

    /// The bytes every signer signs.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut s = SignedBytes::new(TAG, 96);
        s.field(&self.peer).field(&self.at.to_le_bytes());
        match self.what {
            What::Joined { vnodes, since, block } => {
                s.field(b"joined").field(&vnodes.to_le_bytes()).field(&since.to_le_bytes()).field(&block.to_le_bytes())
            }
            What::Left => s.field(b"left"),
            What::Dead => s.field(b"dead"),
        };
        s.into_bytes()
    }

    /// Adds `key`'s signature (the member's own when `key` is the member's).
    pub fn signed_by(mut self, key: &Keypair) -> Event {
        let signature = key.sign(&self.signed_bytes()).unwrap_or_default();
        let signer = key.public().to_peer_id();
        let signer = if signer.to_bytes() == self.peer { Vec::new() } else { signer.to_bytes() };
        self.proofs.push(Proof { signer, signature });
        self
    }

    pub fn peer_id(&self) -> Result<PeerId, EventError> {
        PeerId::from_bytes(&self.peer).map_err(|_| EventError::NotAPeer)
    }

    /// Which way two events of one member order: the later wins, a departure at a tie.
    pub fn version(&self) -> u64 {
        self.at.saturating_mul(4) + u64::from(self.what.rank())
    }

    pub fn encode(&self) -> Vec<u8> {
        cbor4ii::serde::to_vec(Vec::new(), self).expect("roster events serialize")
    }

    pub fn decode(bytes: &[u8]) -> Result<Event, EventError> {
        if bytes.len() > MAX_EVENT_BYTES {
            return Err(EventError::TooLarge(bytes.len()));
        }
        cbor4ii::serde::from_slice(bytes).map_err(|e| EventError::Decode(e.to_string()))
    }

    /// Checks every signature and returns the member and its signers (the member itself
    /// included when it signed), each once.
    pub fn signers(&self) -> Result<(PeerId, Vec<PeerId>), EventError> {
        let peer = self.peer_id()?;
        if self.proofs.len() > MAX_PROOFS {
            return Err(EventError::TooManyProofs(self.proofs.len()));
        }
        let bytes = self.signed_bytes();
        let mut signers = Vec::with_capacity(self.proofs.len());
        for proof in &self.proofs {
            let signer = if proof.signer.is_empty() {
                peer
            } else {
                PeerId::from_bytes(&proof.signer).map_err(|_| EventError::BadSignature(peer))?
            };
            let key = key_of(&signer).ok_or(EventError::BadSignature(peer))?;
            if proof.signature.len() > 128 || !key.verify(&bytes, &proof.signature) {
                return Err(EventError::BadSignature(peer));
            }
            if signers.contains(&signer) {
                return Err(EventError::SignedTwice { peer, signer });
            }
            signers.push(signer);
        }
        Ok((peer, signers))
    }
}

#[cfg(test)]
mod tests {
    use super::{block_hash, Event, EventError, What, MAX_EVENT_BYTES};
    use libp2p::identity::Keypair;

    #[test]
    fn signatures_hold_for_their_event_only_and_sizes_stay_small() {
        let (member, a, b) = (Keypair::generate_ed25519(), Keypair::generate_ed25519(), Keypair::generate_ed25519());
        let peer = member.public().to_peer_id();
        let what = What::Joined { vnodes: 150, since: 1_780_000_000, block: block_hash(Some("1.2.3.0/24")) };
        let joined = Event::new(&peer, 1_780_000_000, what).signed_by(&member).signed_by(&a).signed_by(&b);
        let (who, signers) = joined.signers().unwrap();
        assert_eq!(who, peer);
        assert_eq!(signers, vec![peer, a.public().to_peer_id(), b.public().to_peer_id()]);
        let bytes = joined.encode();
        assert!(bytes.len() < 420, "a sponsored join is {} bytes", bytes.len());
        assert_eq!(Event::decode(&bytes).unwrap(), joined);
        // Moved in time, or made a departure, the signatures no longer hold.
        let mut later = joined.clone();
        later.at += 1;
        assert_eq!(later.signers(), Err(EventError::BadSignature(peer)));
        let mut left = joined.clone();
        left.what = What::Left;
        assert_eq!(left.signers(), Err(EventError::BadSignature(peer)));
        // One signer twice is one signer.
        let twice = Event::new(&peer, 5, What::Dead).signed_by(&a).signed_by(&a);
        assert!(matches!(twice.signers(), Err(EventError::SignedTwice { .. })));
        assert!(matches!(Event::decode(&[0xff; 8]), Err(EventError::Decode(_))));
        assert!(matches!(Event::decode(&vec![0; MAX_EVENT_BYTES + 1]), Err(EventError::TooLarge(_))));
        let left = Event::new(&peer, 9, What::Left).signed_by(&member);
        assert!(left.encode().len() < 150, "a departure is {} bytes", left.encode().len());
    }
}
