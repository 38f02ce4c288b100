//! How a member's monitors find it gone: each keeps a connection with the members it watches
//! (the three before it on the monitor ring); when one has been unreachable for
//! [`SUSPECT_AFTER`], the monitor signs its Dead and asks the member's other monitors to
//! co-sign. A monitor co-signs only a member it cannot reach itself, so one monitor alone —
//! faulty, partitioned off or hostile — cannot remove anyone.

use crate::roster::event::{Event, Proof, What};
use crate::roster::{Roster, MONITORS};
use libp2p::identity::Keypair;
use libp2p::PeerId;
use std::collections::HashMap;

/// A watched member unreachable this long is accused.
pub const SUSPECT_AFTER: u64 = 20;
/// An accusation may be this far from the co-signer's clock.
const ACCUSE_SKEW: u64 = 60;

/// What one member knows of those it watches.
#[derive(Debug, Clone, Default)]
pub struct Watch {
    /// Watched members not reachable now, since when.
    lost: HashMap<PeerId, u64>,
    /// Members accused already (not accused again until they are back).
    accused: HashMap<PeerId, u64>,
}

impl Watch {
    /// A connection with `peer` stands, or it answered a ping.
    pub fn reached(&mut self, peer: &PeerId) {
        self.lost.remove(peer);
        self.accused.remove(peer);
    }

    /// The last connection with `peer` closed, or a dial to it failed, at `now`.
    pub fn unreachable(&mut self, peer: PeerId, now: u64) {
        self.lost.entry(peer).or_insert(now);
    }

    /// Whether `peer` has been unreachable for at least `secs`.
    pub fn lost_for(&self, peer: &PeerId, secs: u64, now: u64) -> bool {
        self.lost.get(peer).is_some_and(|since| now >= since + secs)
    }

    /// The members `me` watches that are due to be accused now, each with its Dead signed by
    /// `key`, and the other monitors to ask to co-sign it.
    pub fn due(&mut self, key: &Keypair, roster: &Roster, now: u64) -> Vec<(Event, Vec<PeerId>)> {
        let me = key.public().to_peer_id();
        let watched = roster.watched_by(&me);
        self.lost.retain(|p, _| watched.contains(p));
        let mut out = Vec::new();
        for peer in watched {
            if !self.lost_for(&peer, SUSPECT_AFTER, now) || self.accused.contains_key(&peer) {
                continue;
            }
            self.accused.insert(peer, now);
            let dead = Event::new(&peer, now, What::Dead).signed_by(key);
            let others = roster.monitors_of(&peer).into_iter().filter(|m| *m != me).collect();
            out.push((dead, others));
        }
        out
    }

    /// Whether `me` co-signs `dead`, sent by `from`: a Dead of a member `me` watches too,
    /// signed by `from` alone, dated about now — and `me` cannot reach the member either.
    pub fn cosign(
        &self,
        key: &Keypair,
        roster: &Roster,
        from: &PeerId,
        dead: &Event,
        now: u64,
    ) -> Result<Proof, String> {
        let me = key.public().to_peer_id();
        let (peer, signers) = dead.signers().map_err(|e| e.to_string())?;
        if dead.what != What::Dead || signers != [*from] {
            return Err("not a death signed by its sender alone".into());
        }
        if dead.at.abs_diff(now) > ACCUSE_SKEW {
            return Err(format!("an accusation dated {}s from this node's clock", dead.at.abs_diff(now)));
        }
        let monitors = roster.successors(&peer, MONITORS + 1);
        if !monitors.contains(&me) {
            return Err(format!("this member does not watch {peer}"));
        }
        if !self.lost_for(&peer, SUSPECT_AFTER / 2, now) {
            return Err(format!("{peer} is reachable from here"));
        }
        let signed = dead.clone().signed_by(key);
        signed.proofs.last().cloned().ok_or_else(|| "no signature".into())
    }
}

#[cfg(test)]
mod tests {
    use super::{Watch, SUSPECT_AFTER};
    use crate::roster::event::{Event, What};
    use crate::roster::{Change, Roster, Trust};
    use libp2p::identity::Keypair;
    use libp2p::PeerId;

    const T0: u64 = 1_780_000_000;

    #[test]
    fn two_monitors_that_lost_a_member_remove_it_and_one_alone_cannot() {
        let keys: Vec<Keypair> = (0..10).map(|_| Keypair::generate_ed25519()).collect();
        let mut roster = Roster::new(8);
        for (i, k) in keys.iter().enumerate() {
            let at = T0 + i as u64;
            let e = keys[i.saturating_sub(2)..i].iter().fold(
                Event::new(&k.public().to_peer_id(), at, What::Joined { vnodes: 8, since: at, block: 0 }).signed_by(k),
                |e, s| e.signed_by(s),
            );
            roster.apply(e, at, Trust::Member).unwrap();
        }
        let victim = keys[4].public().to_peer_id();
        let monitors = roster.monitors_of(&victim);
        let key_of = |p: PeerId| keys.iter().find(|k| k.public().to_peer_id() == p).unwrap();
        let (a, b) = (key_of(monitors[0]), key_of(monitors[1]));
        let (mut wa, mut wb) = (Watch::default(), Watch::default());
        let now = T0 + 1000;
        wa.unreachable(victim, now);
        assert!(wa.due(a, &roster, now + SUSPECT_AFTER - 1).is_empty(), "not yet");
        let due = wa.due(a, &roster, now + SUSPECT_AFTER);
        assert_eq!(due.len(), 1);
        let (dead, ask) = due[0].clone();
        assert!(ask.contains(&monitors[1]) && !ask.contains(&monitors[0]));
        assert!(wa.due(a, &roster, now + SUSPECT_AFTER + 5).is_empty(), "accused once");
        // Alone, the accusation does not hold.
        assert!(roster.clone().apply(dead.clone(), now + SUSPECT_AFTER, Trust::Member).is_err());
        // The other monitor still reaches it: no.
        let at = now + SUSPECT_AFTER;
        assert!(wb.cosign(b, &roster, &monitors[0], &dead, at).unwrap_err().contains("reachable"));
        // It lost it too: yes, and the death holds.
        wb.unreachable(victim, now + 5);
        let proof = wb.cosign(b, &roster, &monitors[0], &dead, at).unwrap();
        let mut both = dead.clone();
        both.proofs.push(proof);
        assert_eq!(roster.clone().apply(both, at, Trust::Member), Ok(Some(Change::Gone(victim))));
        // A member that does not watch it never co-signs.
        let stranger = keys
            .iter()
            .find(|k| {
                !roster.successors(&victim, 4).contains(&k.public().to_peer_id()) && k.public().to_peer_id() != victim
            })
            .unwrap();
        let mut ws = Watch::default();
        ws.unreachable(victim, now);
        assert!(ws.cosign(stranger, &roster, &monitors[0], &dead, at).is_err());
        // Back, it is watched afresh.
        wa.reached(&victim);
        assert!(!wa.lost_for(&victim, 0, at));
    }
}
