//! How a newcomer becomes a member: it pulls the roster page by page, waits out its probation
//! connected to the members that will monitor it, and asks them to sponsor it; and what a
//! member checks before it signs.
//!
//! Probation is what keeps short sessions (a third of them last under five minutes) out of
//! every member's roster, and what makes a crowd of identities rented for an hour cost their
//! sponsors' attention for five minutes each before they touch the ring.

use crate::roster::event::{Event, Proof, What};
use crate::roster::{Refused, Roster, Snapshot, Trust, MONITORS, SPONSORED_PER_HOUR};
use libp2p::identity::Keypair;
use libp2p::PeerId;
use std::collections::HashMap;

/// How far a Joined's time may be from the sponsor's clock.
pub const JOIN_SKEW: u64 = 60;
/// Newcomers a member remembers meeting, at most.
const MAX_MET: usize = 4096;

/// Where a newcomer is on its way in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Pulling the roster: the next page starts after this key.
    Pulling {
        after: Option<u64>,
    },
    /// Has the roster; may ask for sponsors from `until`.
    Probation {
        until: u64,
    },
    /// Asked its sponsors for their signatures on `joined`; those that signed so far.
    Asking {
        joined: Event,
        signed: Vec<PeerId>,
    },
    Member,
}

impl Stage {
    /// The stage in a word, for `/status`.
    pub fn name(&self) -> &'static str {
        match self {
            Stage::Pulling { .. } => "pulling",
            Stage::Probation { .. } => "probation",
            Stage::Asking { .. } => "asking",
            Stage::Member => "member",
        }
    }
}

/// A newcomer's way in.
#[derive(Debug, Clone)]
pub struct Admission {
    arrived: u64,
    stage: Stage,
}

impl Admission {
    /// A node that starts with an empty roster at `now`.
    pub fn new(now: u64) -> Admission {
        Admission { arrived: now, stage: Stage::Pulling { after: None } }
    }

    /// A node that is a member already (it founded the network, or refuted its death).
    pub fn member(now: u64) -> Admission {
        Admission { arrived: now, stage: Stage::Member }
    }

    /// A node that was a member and is not any more (it left, or was declared dead too long
    /// ago to refute it): it has the roster, and waits out a probation from `now`.
    pub fn rejoin(roster: &Roster, now: u64) -> Admission {
        Admission { arrived: now, stage: Stage::Probation { until: now + roster.probation(now) } }
    }

    /// A member whose own join turned out short of sponsors (it pulled a young roster before
    /// another newcomer was admitted ahead of it): it has served its probation, so it asks
    /// again at once — its sponsors judge the probation from their own meeting with it.
    pub fn ask_again(now: u64) -> Admission {
        Admission { arrived: now, stage: Stage::Probation { until: now } }
    }

    pub fn stage(&self) -> &Stage {
        &self.stage
    }

    /// The page to ask for next, while pulling.
    pub fn next_page(&self) -> Option<Option<u64>> {
        match self.stage {
            Stage::Pulling { after } => Some(after),
            _ => None,
        }
    }

    /// Takes a page into `roster`; after the last, probation runs until its end.
    pub fn page(&mut self, page: Snapshot, roster: &mut Roster, now: u64) {
        if !matches!(self.stage, Stage::Pulling { .. }) {
            return;
        }
        for e in page.events {
            // What it refuses now (a sponsor it has not read yet) comes again with the digests.
            let _ = roster.apply(e, now, Trust::Syncing);
        }
        self.stage = match page.next {
            Some(next) => Stage::Pulling { after: Some(next) },
            None => Stage::Probation { until: self.arrived + roster.probation(self.arrived) },
        };
    }

    /// Past its probation: the Joined it asks its sponsors to sign, and whom to ask (its would-be
    /// monitors). `None` before then, or when it is asking already.
    pub fn ask(
        &mut self,
        key: &Keypair,
        roster: &Roster,
        vnodes: u16,
        block: u64,
        now: u64,
    ) -> Option<(Event, Vec<PeerId>)> {
        let Stage::Probation { until } = self.stage else { return None };
        if now < until {
            return None;
        }
        let me = key.public().to_peer_id();
        let joined = Event::new(&me, now, What::Joined { vnodes, since: now, block }).signed_by(key);
        let sponsors = roster.successors(&me, MONITORS);
        self.stage = Stage::Asking { joined: joined.clone(), signed: Vec::new() };
        Some((joined, sponsors))
    }

    /// A sponsor's signature came back. When enough have, the Joined goes into `roster` (and
    /// from there to the network with the next digests) and the node is a member.
    pub fn signed(&mut self, sponsor: PeerId, proof: Proof, roster: &mut Roster, now: u64) -> Result<bool, Refused> {
        let Stage::Asking { joined, signed } = &mut self.stage else { return Ok(false) };
        if signed.contains(&sponsor) || proof.signer != sponsor.to_bytes() {
            return Ok(false);
        }
        joined.proofs.push(proof);
        signed.push(sponsor);
        let What::Joined { since, .. } = joined.what else { return Ok(false) };
        if signed.len() < roster.sponsors_needed(since) {
            return Ok(false);
        }
        match roster.apply(joined.clone(), now, Trust::Member) {
            Ok(_) => {
                self.stage = Stage::Member;
                Ok(true)
            }
            Err(e) => {
                // A signature that does not hold is dropped; the others may still do.
                joined.proofs.pop();
                signed.pop();
                Err(e)
            }
        }
    }

    /// Its sponsors did not all answer: ask again (after a while, the caller decides).
    pub fn retry(&mut self) {
        if let Stage::Asking { joined, .. } = &self.stage {
            let at = joined.at;
            self.stage = Stage::Probation { until: at };
        }
    }
}

/// A member's side: the newcomers it has been connected to, and since when; and the joins it
/// signed in the last hour.
#[derive(Debug, Clone, Default)]
pub struct Sponsoring {
    met: HashMap<PeerId, u64>,
    /// Whom it signed a join for, and when. Its roster counts only the joins that have come
    /// back to it, and a newcomer publishes its join after it has every signature: without its
    /// own count a member asked by a burst of newcomers could sign more than the hourly
    /// [`SPONSORED_PER_HOUR`] before the first of their joins came back, and members that took
    /// those joins in different orders would each refuse a different one.
    signed: Vec<(PeerId, u64)>,
}

impl Sponsoring {
    /// A connection with `peer` stands (from `now` if it is new).
    pub fn connected(&mut self, peer: PeerId, now: u64) {
        if self.met.len() >= MAX_MET && !self.met.contains_key(&peer) {
            // The oldest are those that should have asked long ago.
            if let Some(oldest) = self.met.iter().min_by_key(|(_, t)| **t).map(|(p, _)| *p) {
                self.met.remove(&oldest);
            }
        }
        self.met.entry(peer).or_insert(now);
    }

    /// Its last connection closed: its probation starts again when it comes back.
    pub fn disconnected(&mut self, peer: &PeerId) {
        self.met.remove(peer);
    }

    /// The peers a connection stands with that it counts a probation for.
    pub fn met(&self) -> impl Iterator<Item = &PeerId> {
        self.met.keys()
    }

    /// Since when a connection with `peer` has stood, if one does.
    pub fn met_since(&self, peer: &PeerId) -> Option<u64> {
        self.met.get(peer).copied()
    }

    /// Whether `me` signs `joined`, sent by `from` from address block `block` (0: private or
    /// relayed): its own Joined, dated now, after a probation connected to `me`, `me` one of
    /// its would-be monitors, the Sybil limits kept.
    pub fn sponsor(
        &mut self,
        key: &Keypair,
        roster: &Roster,
        from: &PeerId,
        joined: &Event,
        block: u64,
        now: u64,
    ) -> Result<Proof, String> {
        let me = key.public().to_peer_id();
        let (peer, signers) = joined.signers().map_err(|e| e.to_string())?;
        let What::Joined { since, block: claimed, .. } = joined.what else { return Err("not a join".into()) };
        if peer != *from || signers != [peer] {
            return Err(format!("a join of {peer} sent by {from}, signed by {} signers", signers.len()));
        }
        // A member whose join is short of sponsors (see `Roster::short_of_sponsors`) asks
        // again; its sponsors sign again, whether or not their roster took the short join.
        if roster.is_member(&peer) && !roster.short_of_sponsors(&peer) {
            return Err(format!("{peer} is a member already"));
        }
        if since != joined.at || joined.at.abs_diff(now) > JOIN_SKEW {
            return Err(format!("a join dated {}s from this node's clock", joined.at.abs_diff(now)));
        }
        if claimed != block {
            return Err("the join names another address block than its connection's".into());
        }
        let met = self.met.get(&peer).copied().ok_or("not connected to this member")?;
        let probation = roster.probation(met);
        if now < met + probation {
            return Err(format!("on probation for {}s more", met + probation - now));
        }
        if !roster.successors(&peer, MONITORS).contains(&me) {
            return Err("this member is not among its monitors".into());
        }
        roster.may_sponsor(&me, &peer, block, now).map_err(|e| e.to_string())?;
        self.signed.retain(|(_, at)| at + 3600 > now);
        let again = self.signed.iter().any(|(p, _)| *p == peer);
        if !again && !roster.young_at(now) && self.signed.len() >= SPONSORED_PER_HOUR {
            return Err(format!("signed {SPONSORED_PER_HOUR} joins in the last hour already"));
        }
        let signed = joined.clone().signed_by(key);
        let proof = signed.proofs.last().cloned().ok_or("no signature")?;
        if !again {
            self.signed.push((peer, now));
        }
        Ok(proof)
    }
}

#[cfg(test)]
mod tests {
    use super::{Admission, Sponsoring, Stage};
    use crate::roster::event::{Event, What};
    use crate::roster::{Roster, Trust, MONITORS, PROBATION, SPONSORED_PER_HOUR};
    use libp2p::identity::Keypair;

    const T0: u64 = 1_780_000_000;

    #[test]
    fn a_newcomer_pulls_waits_out_its_probation_and_its_monitors_sponsor_it() {
        let keys: Vec<Keypair> = (0..12).map(|_| Keypair::generate_ed25519()).collect();
        let mut full = Roster::new(8);
        for (i, k) in keys.iter().enumerate() {
            let at = T0 + i as u64;
            let e = keys[i.saturating_sub(2)..i].iter().fold(
                Event::new(&k.public().to_peer_id(), at, What::Joined { vnodes: 8, since: at, block: 0 }).signed_by(k),
                |e, s| e.signed_by(s),
            );
            full.apply(e, at, Trust::Member).unwrap();
        }
        let newcomer = Keypair::generate_ed25519();
        let me = newcomer.public().to_peer_id();
        let mut now = T0 + 5000;
        let (mut mine, mut admission) = (Roster::new(8), Admission::new(now));
        while let Some(after) = admission.next_page() {
            let page = full.snapshot(after, now);
            admission.page(page, &mut mine, now);
        }
        assert_eq!(mine.len(), 12);
        assert_eq!(admission.ask(&newcomer, &mine, 8, 0, now), None, "on probation");
        // Its would-be monitors met it when it arrived.
        let monitors = mine.successors(&me, 3);
        let key_of = |p| keys.iter().find(|k| k.public().to_peer_id() == p).unwrap();
        let mut sponsoring: Vec<Sponsoring> = monitors.iter().map(|_| Sponsoring::default()).collect();
        for s in &mut sponsoring {
            s.connected(me, T0 + 5000);
        }
        now += PROBATION;
        let (joined, asked) = admission.ask(&newcomer, &mine, 8, 0, now).unwrap();
        assert_eq!(asked, monitors);
        // A member that is not its monitor declines; one that never met it declines.
        let stranger = keys.iter().find(|k| !monitors.contains(&k.public().to_peer_id())).unwrap();
        let mut met = Sponsoring::default();
        met.connected(me, T0);
        assert!(met.sponsor(stranger, &full, &me, &joined, 0, now).unwrap_err().contains("not among its monitors"));
        let mut fresh = Sponsoring::default();
        assert!(fresh.sponsor(key_of(monitors[0]), &full, &me, &joined, 0, now).is_err());
        // Sent by another peer, or naming another block, it is declined too.
        assert!(sponsoring[0].sponsor(key_of(monitors[0]), &full, &monitors[1], &joined, 0, now).is_err());
        assert!(sponsoring[0].sponsor(key_of(monitors[0]), &full, &me, &joined, 77, now).is_err());
        // A probation cut short by a disconnection starts again.
        let mut rejoined = sponsoring[2].clone();
        rejoined.disconnected(&me);
        rejoined.connected(me, now);
        assert!(rejoined.sponsor(key_of(monitors[2]), &full, &me, &joined, 0, now).unwrap_err().contains("probation"));
        let mut became = false;
        for (s, m) in sponsoring.iter_mut().zip(&monitors).take(2) {
            let proof = s.sponsor(key_of(*m), &full, &me, &joined, 0, now).unwrap();
            became = admission.signed(*m, proof, &mut mine, now).unwrap();
        }
        assert!(became && admission.stage() == &Stage::Member && mine.is_member(&me));
        // Every member takes the sponsored join.
        let event = mine.event_of(&me).unwrap().clone();
        assert!(full.apply(event, now, Trust::Member).unwrap().is_some());
    }

    #[test]
    fn a_member_signs_no_more_joins_an_hour_than_the_count_before_any_comes_back() {
        // Four members in a network older than a probation.
        let keys: Vec<Keypair> = (0..4).map(|_| Keypair::generate_ed25519()).collect();
        let (roster, _) = crate::roster::tests::founded(&keys, T0);
        let sponsor = &keys[0];
        let me = sponsor.public().to_peer_id();
        // Newcomers it would monitor, each met a probation ago; none of their joins comes back
        // to its roster (they are still collecting signatures).
        let mut now = T0 + 10 * PROBATION;
        let newcomers: Vec<Keypair> = std::iter::repeat_with(Keypair::generate_ed25519)
            .filter(|k| roster.successors(&k.public().to_peer_id(), MONITORS).contains(&me))
            .take(SPONSORED_PER_HOUR + 1)
            .collect();
        let mut sponsoring = Sponsoring::default();
        for k in &newcomers {
            sponsoring.connected(k.public().to_peer_id(), now - PROBATION);
        }
        let join = |k: &Keypair, at: u64| {
            let peer = k.public().to_peer_id();
            Event::new(&peer, at, What::Joined { vnodes: 8, since: at, block: 0 }).signed_by(k)
        };
        let ask = |s: &mut Sponsoring, k: &Keypair, now: u64| {
            s.sponsor(sponsor, &roster, &k.public().to_peer_id(), &join(k, now), 0, now)
        };
        for k in &newcomers[..SPONSORED_PER_HOUR] {
            assert!(ask(&mut sponsoring, k, now).is_ok());
            now += 60;
        }
        let last = &newcomers[SPONSORED_PER_HOUR];
        assert!(ask(&mut sponsoring, last, now).unwrap_err().contains("in the last hour"));
        // One it signed for asks again (its sponsors did not all answer): signed again.
        assert!(ask(&mut sponsoring, &newcomers[0], now).is_ok());
        // An hour after the first signature, there is room for one more.
        now = T0 + 10 * PROBATION + 3600;
        assert!(ask(&mut sponsoring, last, now).is_ok());
    }
}
