//! Who is behind NAT in a model run, whose hole punches succeed, and which relay carries a pair
//! whose punch failed; and the pair keys and seeded draws they are decided by.

use super::traffic::Traffic;

/// Who is behind NAT, whose punches succeed, and which relay a member's reservation is with.
pub(super) struct Nat {
    pub(super) behind: Vec<bool>,
    /// The public members, one of which holds each member's reservation.
    public: Vec<u32>,
    success: f64,
    seed: u64,
}

impl Nat {
    /// Draws each member's side: behind NAT with odds `traffic.nat_share`, from `seed` alone.
    pub(super) fn draw(members: usize, traffic: &Traffic, seed: u64) -> Nat {
        let behind: Vec<bool> =
            (0..members as u64).map(|i| hashed(i, seed.rotate_left(29)) < traffic.nat_share).collect();
        let public = (0..members as u32).filter(|i| !behind[*i as usize]).collect();
        Nat { behind, public, success: traffic.punch_success, seed }
    }

    /// Whether the hole punch between the two members of `pair` succeeds (drawn once a pair:
    /// what decides it is the two networks' NATs, not the attempt).
    pub(super) fn punches(&self, pair: u64) -> bool {
        hashed(pair, self.seed.rotate_left(43)) < self.success
    }

    /// The relay that carries what `from` and `to` send each other: one holding a reservation
    /// of one of them (the one dialled; both directions share the connection), when both are
    /// behind NAT and their punch fails; `None` when they talk straight.
    pub(super) fn relay_between(&self, from: u32, to: u32) -> Option<u32> {
        let both_behind = self.behind[from as usize] && self.behind[to as usize];
        if !both_behind || self.punches(pair(from, to)) || self.public.is_empty() {
            return None;
        }
        self.relay_of(from.max(to))
    }

    /// The public member holding `member`'s reservation (the one dialled of a pair is reached
    /// through its relay); `None` in a network with no public member.
    pub(super) fn relay_of(&self, member: u32) -> Option<u32> {
        let at = (hashed(u64::from(member), self.seed.rotate_left(7)) * self.public.len() as f64) as usize;
        self.public.get(at.min(self.public.len().saturating_sub(1))).copied()
    }
}

/// Two members as one key, the same either way round.
pub(super) fn pair(a: u32, b: u32) -> u64 {
    let (low, high) = (a.min(b), a.max(b));
    (u64::from(low) << 32) | u64::from(high)
}

/// A uniform draw in [0, 1) from `value` and `salt`, the same every run.
pub(super) fn hashed(value: u64, salt: u64) -> f64 {
    let h = blake3::hash(&(value ^ salt).to_le_bytes());
    crate::rng::unit(u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes")))
}
