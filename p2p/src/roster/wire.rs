//! `/weft/roster/1` on the wire: the requests two members compare rosters with, a newcomer
//! pulls the roster and asks for sponsors with, and a monitor asks another to co-sign a death
//! with. Pure: the types and their bounds; the event loop does the I/O.

use super::digest::{Digest, BUCKETS, MAX_KEYS};
use super::event::{Event, Proof, MAX_EVENT_BYTES};
use super::{Answer, FollowUp, Snapshot, ANSWER_BYTES};
use serde::{Deserialize, Serialize};

/// A `/weft/roster/1` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RosterRequest {
    /// The asker's digest; answered with [`RosterReply::Answer`].
    Digest(Digest),
    /// What the asker sends back on an answer: entries the other lacks, keys it wants;
    /// answered with [`RosterReply::Events`].
    FollowUp(FollowUp),
    /// A page of the roster after a key; answered with [`RosterReply::Page`].
    Page { after: Option<u64> },
    /// A newcomer's Joined, signed by itself, for the asked member to sponsor.
    Sponsor(Event),
    /// A Dead signed by one monitor, for another monitor to co-sign.
    Accuse(Event),
    /// Where the asker may reach these members (base58 peer ids, at most [`MAX_WHERE`]): the
    /// roster says who the members are, not where; a member behind NAT is reachable only at
    /// its relays' circuits, which the members it met heard of. Answered with
    /// [`RosterReply::Addresses`].
    Where(Vec<String>),
}

/// Members one [`RosterRequest::Where`] may ask about, and addresses given for each.
pub const MAX_WHERE: usize = 16;
pub const MAX_ADDRS_EACH: usize = 4;

/// A `/weft/roster/1` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum RosterReply {
    Answer(Answer),
    Events(Vec<Event>),
    Page(Snapshot),
    /// The asked member's signature on the event it was asked to sponsor or co-sign.
    Signed(Proof),
    /// Not signed, and why (for the asker's log).
    Declined(String),
    /// The addresses the answerer knows of the members asked about (multiaddrs as text).
    Addresses(Vec<(String, Vec<String>)>),
}

/// `/weft/roster/1` on the wire (see [`crate::codec`]).
pub struct RosterWire;

/// Events a follow-up or an answer may carry over its byte budget: one more than fits.
const EVENT_SLACK: u64 = MAX_EVENT_BYTES as u64;

impl crate::codec::Wire for RosterWire {
    type Request = RosterRequest;
    type Response = RosterReply;
    const NAME: &'static str = "roster request";
    /// A follow-up: its events and the keys it wants.
    const MAX_REQUEST_BYTES: u64 = ANSWER_BYTES as u64 + EVENT_SLACK + 10 * MAX_KEYS as u64 + 1024;
    /// An answer: the key lists of every bucket, or its events.
    const MAX_RESPONSE_BYTES: u64 = (BUCKETS * MAX_KEYS * 20) as u64 + ANSWER_BYTES as u64 + EVENT_SLACK;
    const MAX_BUFFERED_BYTES: u64 = 8 * Self::MAX_REQUEST_BYTES;
}

#[cfg(test)]
mod tests {
    use super::{RosterReply, RosterRequest, RosterWire, MAX_ADDRS_EACH, MAX_WHERE};
    use crate::codec::Wire;
    use crate::roster::digest::{BucketKeys, Digest, BUCKETS, MAX_KEYS};
    use crate::roster::event::{Event, What};
    use crate::roster::{Answer, FollowUp, Snapshot, ANSWER_BYTES};
    use libp2p::identity::Keypair;

    fn size<T: serde::Serialize>(v: &T) -> u64 {
        cbor4ii::serde::to_vec(Vec::new(), v).unwrap().len() as u64
    }

    #[test]
    fn the_largest_of_each_kind_fits_its_bound() {
        let keys: Vec<Keypair> = (0..3).map(|_| Keypair::generate_ed25519()).collect();
        let peer = keys[0].public().to_peer_id();
        let joined =
            Event::new(&peer, u64::MAX / 8, What::Joined { vnodes: u16::MAX, since: u64::MAX / 8, block: u64::MAX })
                .signed_by(&keys[0])
                .signed_by(&keys[1])
                .signed_by(&keys[2]);
        let per = size(&joined) as usize;
        let events = vec![joined.clone(); ANSWER_BYTES / per + 1];
        let follow = RosterRequest::FollowUp(FollowUp { events: events.clone(), want: vec![u64::MAX; MAX_KEYS] });
        assert!(size(&follow) <= RosterWire::MAX_REQUEST_BYTES, "{}", size(&follow));
        let digest = RosterRequest::Digest(Digest { now: u64::MAX, hashes: vec![u64::MAX; BUCKETS] });
        assert!(size(&digest) < 400);
        let lists = (0..BUCKETS as u8).map(|b| BucketKeys { bucket: b, keys: vec![(u64::MAX, u64::MAX); MAX_KEYS] });
        let answer = RosterReply::Answer(Answer { keys: lists.collect(), events: events.clone() });
        assert!(size(&answer) <= RosterWire::MAX_RESPONSE_BYTES, "{}", size(&answer));
        let page = RosterReply::Page(Snapshot { events, last: u64::MAX, next: Some(u64::MAX) });
        assert!(size(&page) <= RosterWire::MAX_RESPONSE_BYTES);
        let peer_text = peer.to_string();
        let long_addr = format!("/ip4/255.255.255.255/tcp/65535/p2p/{peer_text}/p2p-circuit/p2p/{peer_text}");
        let wheres = RosterReply::Addresses(vec![(peer_text.clone(), vec![long_addr; MAX_ADDRS_EACH]); MAX_WHERE]);
        assert!(size(&wheres) <= RosterWire::MAX_RESPONSE_BYTES, "{}", size(&wheres));
        for r in [
            RosterRequest::Where(vec![peer_text.clone(); MAX_WHERE]),
            RosterRequest::Page { after: Some(3) },
            RosterRequest::Sponsor(joined.clone()),
            RosterRequest::Accuse(joined),
        ] {
            let bytes = cbor4ii::serde::to_vec(Vec::new(), &r).unwrap();
            assert_eq!(cbor4ii::serde::from_slice::<RosterRequest>(&bytes).unwrap(), r);
        }
    }
}
