//! The roster's messages' sizes, from their real encodings: what the compact model counts for
//! an event, a digest and a key, and what the real exchanges count for every message.

use libp2p::identity::Keypair;
use weft_p2p::roster::digest::{BucketKeys, Digest, BUCKETS};
use weft_p2p::roster::event::{Event, What};
use weft_p2p::roster::Answer;

/// The sizes of the roster's messages, from their real encodings.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub joined: f64,
    pub refute: f64,
    pub left: f64,
    pub dead: f64,
    pub digest: f64,
    pub empty_answer: f64,
    pub key: f64,
    pub want: f64,
}

impl Sizes {
    pub fn real() -> Sizes {
        let k: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
        let peer = k[0].public().to_peer_id();
        let at = 1_780_000_000;
        let joined = |n: usize| {
            let e = Event::new(&peer, at, What::Joined { vnodes: 150, since: at, block: 0x1234_5678_9abc_def0 });
            k[..n].iter().fold(e, |e, key| e.signed_by(key)).encode().len() as f64
        };
        let dead = Event::new(&peer, at, What::Dead).signed_by(&k[1]).signed_by(&k[2]).encode().len() as f64;
        let left = Event::new(&peer, at, What::Left).signed_by(&k[0]).encode().len() as f64;
        let digest =
            Digest { now: at, hashes: (0..BUCKETS as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect() };
        let cbor = |v: &dyn Encode| v.len() as f64;
        let one_key =
            Answer { keys: vec![BucketKeys { bucket: 3, keys: vec![(u64::MAX / 3, at * 4)] }], events: vec![] };
        let two_keys = Answer {
            keys: vec![BucketKeys { bucket: 3, keys: vec![(u64::MAX / 3, at * 4), (u64::MAX / 5, at * 4 + 1)] }],
            events: vec![],
        };
        Sizes {
            joined: joined(3),
            refute: joined(1),
            left,
            dead,
            digest: cbor(&digest),
            empty_answer: cbor(&Answer::default()),
            key: cbor(&two_keys) - cbor(&one_key),
            want: 9.0,
        }
    }
}

/// A message's encoded length (CBOR, as `/weft/roster/1` sends it).
pub trait Encode {
    fn len(&self) -> usize;
}

impl<T: serde::Serialize> Encode for T {
    fn len(&self) -> usize {
        cbor4ii::serde::to_vec(Vec::new(), self).map(|v| v.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::Sizes;

    #[test]
    fn messages_are_the_sizes_of_their_real_encodings() {
        let s = Sizes::real();
        assert!((300.0..450.0).contains(&s.joined), "{s:?}");
        assert!(s.refute < s.joined && s.left < 160.0 && s.dead < s.joined, "{s:?}");
        assert!((250.0..400.0).contains(&s.digest), "{s:?}");
        assert!((10.0..25.0).contains(&s.key), "{s:?}");
    }
}
