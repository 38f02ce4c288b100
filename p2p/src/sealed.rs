//! Gossip signed by its author and checked once per message, not once per copy.
//!
//! Why: gossipsub's own signed mode verifies the signature of every copy a node receives, in
//! the connection's codec, before it can tell the copy is a duplicate. A message reaches each
//! node about as many times as the mesh is wide (six), so an idle node at fifty members spent
//! 16% of its CPU in ed25519 verification of copies it then dropped (system-wide profile of
//! fifty idle nodes, 2026-12-02). Here gossipsub carries anonymous messages whose id is the
//! hash of their bytes; gossipsub drops duplicates by that id, and the event loop opens (checks)
//! each message once and tells gossipsub whether to forward it — so a forgery is not spread
//! by honest nodes, as before.
//!
//! A sealed message says its author's public key, a sequence number and the topic it was
//! signed for: the author is the key's peer id, a copy replayed on another topic fails the
//! signature, and [`Fresh`] refuses a sequence number not above the last one taken from the
//! same author on the same topic (a replayed old summary).
//!
//! Layout: `WG1` · key length (1 byte) · protobuf-encoded public key · sequence (8 bytes, big
//! endian) · signature length (1 byte) · signature · payload. The signature covers the tag
//! `weft-gossip/1`, the topic, the sequence and the payload, each length-prefixed
//! ([`SignedBytes`], as postings are signed).

use crate::signing::SignedBytes;
use libp2p::identity::{Keypair, PublicKey};
use libp2p::PeerId;
use std::collections::HashMap;

const MAGIC: &[u8] = b"WG1";
const TAG: &str = "weft-gossip/1";

/// What the seal adds to a payload, at most (an ed25519 key is 36 bytes, its signature 64).
pub const MAX_OVERHEAD: usize = MAGIC.len() + 1 + 255 + 8 + 1 + 255;

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("not a sealed message (no `WG1` or cut short)")]
    Malformed,
    #[error("the author's key does not decode")]
    Key,
    #[error("the signature does not verify for this topic")]
    Signature,
}

/// A message whose signature verified: its author, sequence number and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened<'a> {
    pub author: PeerId,
    pub seq: u64,
    pub payload: &'a [u8],
}

fn signed_bytes(topic: &str, seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut m = SignedBytes::new(TAG, topic.len() + payload.len() + 16);
    m.field(topic.as_bytes()).field(&seq.to_be_bytes()).field(payload);
    m.into_bytes()
}

/// `payload` signed by `key` for `topic`, numbered `seq` (strictly increasing per author and
/// topic: see [`Sequence`]).
pub fn seal(key: &Keypair, topic: &str, seq: u64, payload: &[u8]) -> Result<Vec<u8>, String> {
    let public = key.public().encode_protobuf();
    let signature = key.sign(&signed_bytes(topic, seq, payload)).map_err(|e| e.to_string())?;
    let (Ok(key_len), Ok(sig_len)) = (u8::try_from(public.len()), u8::try_from(signature.len())) else {
        return Err("key or signature longer than 255 bytes".into());
    };
    let mut out = Vec::with_capacity(MAX_OVERHEAD + payload.len());
    out.extend_from_slice(MAGIC);
    out.push(key_len);
    out.extend_from_slice(&public);
    out.extend_from_slice(&seq.to_be_bytes());
    out.push(sig_len);
    out.extend_from_slice(&signature);
    out.extend_from_slice(payload);
    Ok(out)
}

/// Checks a sealed message received on `topic`; never panics on any input.
pub fn open<'a>(topic: &str, bytes: &'a [u8]) -> Result<Opened<'a>, SealError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(SealError::Malformed)?;
    let (&key_len, rest) = rest.split_first().ok_or(SealError::Malformed)?;
    let (key, rest) = rest.split_at_checked(key_len.into()).ok_or(SealError::Malformed)?;
    let (seq, rest) = rest.split_first_chunk::<8>().ok_or(SealError::Malformed)?;
    let (&sig_len, rest) = rest.split_first().ok_or(SealError::Malformed)?;
    let (signature, payload) = rest.split_at_checked(sig_len.into()).ok_or(SealError::Malformed)?;
    let key = PublicKey::try_decode_protobuf(key).map_err(|_| SealError::Key)?;
    let seq = u64::from_be_bytes(*seq);
    if !key.verify(&signed_bytes(topic, seq, payload), signature) {
        return Err(SealError::Signature);
    }
    Ok(Opened { author: key.to_peer_id(), seq, payload })
}

/// A gossip message's id: the hash of its bytes (gossipsub's default, author and sequence
/// number, needs its signed mode). Copies share it, so gossipsub drops them unopened.
pub fn message_id(message: &libp2p::gossipsub::Message) -> libp2p::gossipsub::MessageId {
    libp2p::gossipsub::MessageId::from(&blake3::hash(&message.data).as_bytes()[..20])
}

/// This node's sequence numbers: milliseconds since the Unix epoch, and always above the last
/// one (a clock stepped back, or two messages in one millisecond). Restarting later starts
/// above what was sent before, so the others' [`Fresh`] take it.
#[derive(Debug, Default)]
pub struct Sequence {
    last: u64,
}

impl Sequence {
    pub fn next(&mut self, unix_ms: u64) -> u64 {
        self.last = unix_ms.max(self.last + 1);
        self.last
    }
}

/// The last sequence number taken from each author on each topic: a message must be newer.
/// Bounded: past `cap` authors, the one heard from longest ago is forgotten.
#[derive(Debug)]
pub struct Fresh {
    last: HashMap<(PeerId, String), (u64, u64)>,
    taken: u64,
    cap: usize,
}

impl Fresh {
    pub fn new(cap: usize) -> Fresh {
        Fresh { last: HashMap::new(), taken: 0, cap: cap.max(1) }
    }

    /// Whether `seq` from `author` on `topic` is newer than any taken before (and takes it).
    pub fn take(&mut self, author: PeerId, topic: &str, seq: u64) -> bool {
        self.taken += 1;
        let key = (author, topic.to_string());
        if let Some((last, at)) = self.last.get_mut(&key) {
            if seq <= *last {
                return false;
            }
            (*last, *at) = (seq, self.taken);
            return true;
        }
        if self.last.len() >= self.cap {
            if let Some(oldest) = self.last.iter().min_by_key(|(_, (_, at))| *at).map(|(k, _)| k.clone()) {
                self.last.remove(&oldest);
            }
        }
        self.last.insert(key, (seq, self.taken));
        true
    }

    pub fn len(&self) -> usize {
        self.last.len()
    }

    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

/// (author, topic) pairs whose last sequence number is kept: two topics of 2,048 members.
pub const FRESH_KEPT: usize = 4_096;

/// Why a received message was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error(transparent)]
    Seal(#[from] SealError),
    #[error("sequence number {seq} is not above the last taken from its author on this topic")]
    Stale { seq: u64 },
}

/// This node's side of sealed gossip: its key and numbering for what it publishes, the
/// freshness of what it takes.
#[derive(Debug)]
pub struct Sealer {
    key: Keypair,
    seq: Sequence,
    fresh: Fresh,
}

impl Sealer {
    pub fn new(key: Keypair) -> Sealer {
        Sealer { key, seq: Sequence::default(), fresh: Fresh::new(FRESH_KEPT) }
    }

    /// `payload` sealed for `topic` with this node's next sequence number.
    pub fn seal(&mut self, topic: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        let unix_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        seal(&self.key, topic, self.seq.next(unix_ms), payload)
    }

    /// Opens a message received on `topic` and takes it if it is newer than the last from its
    /// author there.
    pub fn open<'a>(&mut self, topic: &str, bytes: &'a [u8]) -> Result<Opened<'a>, Refused> {
        let opened = open(topic, bytes)?;
        if !self.fresh.take(opened.author, topic, opened.seq) {
            return Err(Refused::Stale { seq: opened.seq });
        }
        Ok(opened)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_message_opens_to_its_author_and_payload() {
        let key = Keypair::generate_ed25519();
        let bytes = seal(&key, "/t/1", 7, b"hello").unwrap();
        let opened = open("/t/1", &bytes).unwrap();
        assert_eq!(opened, Opened { author: key.public().to_peer_id(), seq: 7, payload: b"hello" });
        assert!(bytes.len() <= MAX_OVERHEAD + 5);
    }

    #[test]
    fn forged_replayed_or_broken_messages_are_refused_without_panicking() {
        let key = Keypair::generate_ed25519();
        let bytes = seal(&key, "/t/1", 7, b"hello").unwrap();
        // Another topic: the signature covers it.
        assert_eq!(open("/t/2", &bytes), Err(SealError::Signature));
        // A payload changed under the signature.
        let mut changed = bytes.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert_eq!(open("/t/1", &changed), Err(SealError::Signature));
        // The sequence number changed.
        let seq_at = MAGIC.len() + 1 + bytes[MAGIC.len()] as usize;
        let mut renumbered = bytes.clone();
        renumbered[seq_at + 7] ^= 1;
        assert_eq!(open("/t/1", &renumbered), Err(SealError::Signature));
        // Another's key put in front of this signature.
        let other = Keypair::generate_ed25519().public().encode_protobuf();
        let mut swapped = bytes.clone();
        swapped.splice(MAGIC.len() + 1..seq_at, other);
        assert_eq!(open("/t/1", &swapped), Err(SealError::Signature));
        // Every cut of the message, and garbage.
        for n in 0..bytes.len() {
            assert!(open("/t/1", &bytes[..n]).is_err(), "cut at {n}");
        }
        assert_eq!(open("/t/1", b"WG1\xff"), Err(SealError::Malformed));
        assert_eq!(open("/t/1", b"{\"peer\":1}"), Err(SealError::Malformed));
        let mut bad_key = b"WG1\x03abc".to_vec();
        bad_key.extend_from_slice(&[0; 9]);
        assert_eq!(open("/t/1", &bad_key), Err(SealError::Key));
    }

    #[test]
    fn sequence_numbers_only_go_up_and_stale_ones_are_refused() {
        let mut s = Sequence::default();
        assert_eq!(s.next(1_000), 1_000);
        assert_eq!(s.next(1_000), 1_001, "two in one millisecond");
        assert_eq!(s.next(900), 1_002, "a clock stepped back");
        assert_eq!(s.next(5_000), 5_000);

        let (a, b) = (PeerId::random(), PeerId::random());
        let mut fresh = Fresh::new(2);
        assert!(fresh.take(a, "/t/1", 10));
        assert!(!fresh.take(a, "/t/1", 10), "the same again (a replay)");
        assert!(!fresh.take(a, "/t/1", 9), "an older one");
        assert!(fresh.take(a, "/t/2", 9), "topics are numbered apart");
        assert!(fresh.take(a, "/t/1", 11));
        // Bounded: a third (author, topic) forgets the one heard from longest ago.
        assert!(fresh.take(b, "/t/1", 1));
        assert_eq!(fresh.len(), 2);
        assert!(fresh.take(a, "/t/2", 5), "forgotten, so taken again");
    }

    #[test]
    fn a_sealer_takes_each_message_once_and_in_order() {
        let (mut alice, mut bob) = (Sealer::new(Keypair::generate_ed25519()), Sealer::new(Keypair::generate_ed25519()));
        let first = alice.seal("/t/1", b"one").unwrap();
        let second = alice.seal("/t/1", b"two").unwrap();
        assert_eq!(bob.open("/t/1", &second).unwrap().payload, b"two");
        assert!(matches!(bob.open("/t/1", &first), Err(Refused::Stale { .. })), "older than the last taken");
        assert!(matches!(bob.open("/t/1", &second), Err(Refused::Stale { .. })), "a replay");
        assert_eq!(bob.open("/t/2", &second), Err(Refused::Seal(SealError::Signature)));
    }
}
