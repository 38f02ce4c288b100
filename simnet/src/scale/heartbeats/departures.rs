//! Members that left on purpose, as this node saw them go and as other members vouch for them.
//!
//! A member that leaves hands its queue and its done lists to its hosts' next owners, and they
//! take its batches because they remember it (`Members::knows`: it was on one of their recent
//! rings). A node that was away when the leaver left — killed and restarted, or just joined —
//! never had it on a ring: it answered the leaver's hand-off "not a member" until the leaver
//! gave up, and the leaver's queue was lost and its done pages fetched again (the churn sweep's
//! seeds 25 and 29: a leave 1–7 s around another member's restart).
//!
//! So every member tells, in its heartbeat, which members it saw leave within
//! [`FORMER_RINGS_FOR`](weft_p2p::membership::FORMER_RINGS_FOR) ([`Departure`]), and a node takes
//! a leaver it never knew as a former member once [`quorum`] of its current members said so.
//! One member's word is not enough where there are two to ask: a member cannot make up
//! leavers that then mark pages done. What a believed leaver may say is bounded like any
//! former member's: it is done only with hosts it owned (see `Members::owned_recently`).

use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

/// At most this many departures in one heartbeat (each ~70 bytes of JSON) ...
pub const MAX_TOLD: usize = 8;
/// ... and at most this many vouched-for leavers remembered (a member telling made-up ones
/// fills its share, and the least-vouched go first).
const MAX_VOUCHED: usize = 32;

/// One member that left, as a member tells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Departure {
    /// Base58 peer id of the member that left.
    pub peer: String,
    /// Unix seconds when the teller saw it leave.
    pub at: u64,
}

/// Members vouching for one leaver.
#[derive(Debug, Clone)]
struct Vouch {
    by: BTreeSet<PeerId>,
    /// When it was last told (a leaver is forgotten `remember` after it).
    told: Instant,
}

/// How many current members must vouch for a leaver before this node believes it: two, or
/// every other member when there are fewer.
pub fn quorum(other_members: usize) -> usize {
    other_members.clamp(1, 2)
}

/// The departures this node saw and those it was told of.
#[derive(Debug)]
pub struct Departures {
    /// How long a departure is told and remembered.
    remember: Duration,
    /// Members seen leaving, newest last, with when (Unix seconds; and on this node's clock).
    seen: VecDeque<(PeerId, u64, Instant)>,
    vouched: BTreeMap<PeerId, Vouch>,
}

impl Departures {
    pub fn new(remember: Duration) -> Departures {
        Departures { remember, seen: VecDeque::new(), vouched: BTreeMap::new() }
    }

    /// This node saw `peer`, a member, leave (its heartbeat said so) at `unix` / `now`.
    pub fn saw(&mut self, peer: PeerId, unix: u64, now: Instant) {
        self.seen.retain(|(p, _, _)| *p != peer);
        if self.seen.len() >= MAX_TOLD {
            self.seen.pop_front();
        }
        self.seen.push_back((peer, unix, now));
    }

    /// What this node tells others in its heartbeat: the members it saw leave lately.
    pub fn told(&self, now: Instant) -> Vec<Departure> {
        self.seen
            .iter()
            .filter(|(_, _, at)| now.saturating_duration_since(*at) <= self.remember)
            .map(|(p, unix, _)| Departure { peer: p.to_string(), at: *unix })
            .collect()
    }

    /// Takes what member `from` told (at most [`MAX_TOLD`] entries are read); departures older
    /// than `remember` by `unix_now`, unreadable peer ids and those `skip` names (this node,
    /// current members) are ignored. Whether `from` is a member is the caller's to check.
    pub fn hear(
        &mut self,
        from: PeerId,
        told: &[Departure],
        unix_now: u64,
        now: Instant,
        skip: impl Fn(&PeerId) -> bool,
    ) {
        for d in told.iter().take(MAX_TOLD) {
            if unix_now.saturating_sub(d.at) > self.remember.as_secs() {
                continue;
            }
            let Ok(peer) = d.peer.parse::<PeerId>() else { continue };
            if peer == from || skip(&peer) {
                continue;
            }
            if !self.vouched.contains_key(&peer) && self.vouched.len() >= MAX_VOUCHED {
                let weakest = self.vouched.iter().min_by_key(|(_, v)| (v.by.len(), v.told)).map(|(p, _)| *p);
                if let Some(p) = weakest {
                    self.vouched.remove(&p);
                }
            }
            let v = self.vouched.entry(peer).or_insert_with(|| Vouch { by: BTreeSet::new(), told: now });
            v.by.insert(from);
            v.told = now;
        }
    }

    /// Leavers this node believes: told within `remember` by at least `quorum` of the peers
    /// `is_member` accepts (a voucher that left since no longer counts).
    pub fn believed(&self, now: Instant, is_member: impl Fn(&PeerId) -> bool, quorum: usize) -> Vec<PeerId> {
        self.vouched
            .iter()
            .filter(|(_, v)| now.saturating_duration_since(v.told) <= self.remember)
            .filter(|(_, v)| v.by.iter().filter(|p| is_member(p)).count() >= quorum)
            .map(|(p, _)| *p)
            .collect()
    }

    /// `peer` is a member again (it came back): it is no leaver.
    pub fn forget(&mut self, peer: &PeerId) {
        self.vouched.remove(peer);
        self.seen.retain(|(p, _, _)| p != peer);
    }

    /// Drops what is older than `remember`.
    pub fn expire(&mut self, now: Instant) {
        let keep = |at: Instant| now.saturating_duration_since(at) <= self.remember;
        self.seen.retain(|(_, _, at)| keep(*at));
        self.vouched.retain(|_, v| keep(v.told));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOR: Duration = Duration::from_secs(600);

    fn told(peers: &[PeerId], at: u64) -> Vec<Departure> {
        peers.iter().map(|p| Departure { peer: p.to_string(), at }).collect()
    }

    #[test]
    fn a_member_tells_the_leavers_it_saw_lately_and_no_more_than_fit_a_heartbeat() {
        let t0 = Instant::now();
        let mut d = Departures::new(FOR);
        let leavers: Vec<PeerId> = (0..MAX_TOLD + 3).map(|_| PeerId::random()).collect();
        for p in &leavers {
            d.saw(*p, 1_000, t0);
        }
        let now_told = d.told(t0);
        assert_eq!(now_told.len(), MAX_TOLD, "the newest fit");
        assert_eq!(now_told.last().unwrap().peer, leavers.last().unwrap().to_string());
        assert!(d.told(t0 + FOR + Duration::from_secs(1)).is_empty(), "told for a while only");
        d.expire(t0 + FOR + Duration::from_secs(1));
        assert!(d.seen.is_empty());
    }

    #[test]
    fn a_leaver_is_believed_once_two_members_vouch_for_it_and_one_is_enough_only_when_alone() {
        let t0 = Instant::now();
        let (a, b, leaver, stranger) = (PeerId::random(), PeerId::random(), PeerId::random(), PeerId::random());
        let members = [a, b];
        let is_member = |p: &PeerId| members.contains(p);
        let mut d = Departures::new(FOR);
        d.hear(a, &told(&[leaver], 1_000), 1_010, t0, |_| false);
        assert!(d.believed(t0, is_member, quorum(2)).is_empty(), "one of two members said so");
        assert_eq!(d.believed(t0, is_member, quorum(1)), [leaver], "the only other member said so");
        // The same member twice is one voucher; a stranger vouching counts for nothing.
        d.hear(a, &told(&[leaver], 1_000), 1_011, t0, |_| false);
        d.hear(stranger, &told(&[leaver], 1_000), 1_011, t0, |_| false);
        assert!(d.believed(t0, is_member, quorum(2)).is_empty());
        d.hear(b, &told(&[leaver], 1_001), 1_012, t0, |_| false);
        assert_eq!(d.believed(t0, is_member, quorum(2)), [leaver]);
        // Forgotten after a while, and at once when it comes back.
        assert!(d.believed(t0 + FOR + Duration::from_secs(1), is_member, 2).is_empty());
        d.forget(&leaver);
        assert!(d.believed(t0, is_member, 2).is_empty());
    }

    #[test]
    fn old_departures_members_themselves_and_unreadable_ids_are_not_taken() {
        let t0 = Instant::now();
        let (a, b, leaver) = (PeerId::random(), PeerId::random(), PeerId::random());
        let mut d = Departures::new(FOR);
        let mut bad = told(&[leaver], 1_000);
        bad.push(Departure { peer: "not-a-peer".into(), at: 1_000 });
        bad.push(Departure { peer: a.to_string(), at: 1_000 }); // the teller itself
        bad.push(Departure { peer: b.to_string(), at: 1_000 }); // a current member
        d.hear(a, &bad, 1_000 + FOR.as_secs() + 1, t0, |p| *p == b);
        assert!(d.vouched.is_empty(), "the leaver's departure was too old; the rest are not leavers");
        d.hear(a, &bad, 1_005, t0, |p| *p == b);
        assert_eq!(d.vouched.keys().collect::<Vec<_>>(), [&leaver]);
    }

    #[test]
    fn made_up_leavers_fill_a_bounded_table_and_push_out_the_least_vouched_first() {
        let t0 = Instant::now();
        let (a, b, liar, real) = (PeerId::random(), PeerId::random(), PeerId::random(), PeerId::random());
        let mut d = Departures::new(FOR);
        d.hear(a, &told(&[real], 1_000), 1_000, t0, |_| false);
        d.hear(b, &told(&[real], 1_000), 1_000, t0, |_| false);
        for _ in 0..100 {
            let made_up: Vec<PeerId> = (0..MAX_TOLD * 2).map(|_| PeerId::random()).collect();
            d.hear(liar, &told(&made_up, 1_000), 1_000, t0, |_| false);
        }
        assert!(d.vouched.len() <= MAX_VOUCHED);
        assert!(d.vouched.contains_key(&real), "two vouchers outweigh one");
        let members = [a, b, liar];
        assert_eq!(d.believed(t0, |p| members.contains(p), quorum(3)), [real]);
    }
}
