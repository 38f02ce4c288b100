//! What the event loop holds against peers: bans for invalid data (lifted after [`BAN`]),
//! stalls counted toward one, and the peers refused for speaking another version of the
//! protocol. Pure bookkeeping: the event loop blocks and unblocks the peers it names.

use crate::versions::{self, OtherVersion};
use libp2p::PeerId;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// How long a peer that sent invalid data stays banned.
pub const BAN: Duration = Duration::from_secs(600);
/// A peer whose requests stalled mid-way this many times within [`BAN`] is banned. One stall
/// is not enough: on a loaded box an honest member's large posting batch stalls too, and
/// banning it at once took it off the ring. A peer holding streams open on purpose stalls
/// many at a time (sixteen fit on a connection) and is banned as soon.
pub(super) const MAX_STALLS: u32 = 3;
/// Peers whose stalls are remembered, at most.
pub(super) const MAX_STALLERS: usize = 1024;

/// What a stall comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stall {
    /// Counted: the peer's `n`th within [`BAN`].
    Counted(u32),
    /// The peer is to be banned: its [`MAX_STALLS`]th, or too many peers stall at once.
    Ban,
}

#[derive(Debug, Default)]
pub(super) struct Conduct {
    /// Banned peers, until when.
    banned: HashMap<PeerId, Instant>,
    /// Peers refused for speaking another version of the protocol (see `crate::versions`).
    other_versions: versions::Refused,
    /// Requests that stalled, per peer: how many, and when the count started.
    stalls: HashMap<PeerId, (u32, Instant)>,
}

impl Conduct {
    /// Counts a stalled request of `peer`'s.
    pub(super) fn stalled(&mut self, peer: PeerId, now: Instant) -> Stall {
        if self.stalls.len() >= MAX_STALLERS && !self.stalls.contains_key(&peer) {
            self.stalls.retain(|_, (_, since)| now.saturating_duration_since(*since) < BAN);
            if self.stalls.len() >= MAX_STALLERS {
                return Stall::Ban;
            }
        }
        let entry = self.stalls.entry(peer).or_insert((0, now));
        if now.saturating_duration_since(entry.1) >= BAN {
            *entry = (0, now);
        }
        entry.0 += 1;
        if entry.0 < MAX_STALLS {
            return Stall::Counted(entry.0);
        }
        self.stalls.remove(&peer);
        Stall::Ban
    }

    /// Bans `peer` from `now` for [`BAN`].
    pub(super) fn ban(&mut self, peer: PeerId, now: Instant) {
        self.banned.insert(peer, now + BAN);
    }

    pub(super) fn is_banned(&self, peer: &PeerId) -> bool {
        self.banned.contains_key(peer)
    }

    pub(super) fn banned_count(&self) -> usize {
        self.banned.len()
    }

    /// Refuses `peer` for speaking another version; whether it is news.
    pub(super) fn refuse_version(&mut self, peer: PeerId, other: OtherVersion, now: Instant) -> bool {
        self.other_versions.refuse(peer, other, now)
    }

    /// The version `peer` was refused for, if it was.
    pub(super) fn other_version(&self, peer: &PeerId) -> Option<&OtherVersion> {
        self.other_versions.get(peer)
    }

    pub(super) fn other_versions(&self) -> &versions::Refused {
        &self.other_versions
    }

    /// Lifts the bans and version refusals over at `now`; returns the peers to unblock (a
    /// refusal lifted from a peer still banned leaves it blocked).
    pub(super) fn lift(&mut self, now: Instant) -> Vec<PeerId> {
        let expired: Vec<PeerId> = self.banned.iter().filter(|(_, until)| **until <= now).map(|(p, _)| *p).collect();
        for peer in &expired {
            self.banned.remove(peer);
        }
        let mut unblock = expired;
        for peer in self.other_versions.lifted(now) {
            if !self.banned.contains_key(&peer) && !unblock.contains(&peer) {
                unblock.push(peer);
            }
        }
        unblock
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_banned_at_its_third_stall_within_the_ban_and_unblocked_after_it() {
        let (mut c, peer, t0) = (Conduct::default(), PeerId::random(), Instant::now());
        assert_eq!(c.stalled(peer, t0), Stall::Counted(1));
        // A stall a ban's length later starts the count again.
        assert_eq!(c.stalled(peer, t0 + BAN), Stall::Counted(1));
        assert_eq!(c.stalled(peer, t0 + BAN), Stall::Counted(2));
        assert_eq!(c.stalled(peer, t0 + BAN), Stall::Ban);
        c.ban(peer, t0 + BAN);
        assert!(c.is_banned(&peer) && c.banned_count() == 1);
        assert!(c.lift(t0 + BAN + BAN / 2).is_empty(), "not yet");
        assert_eq!(c.lift(t0 + BAN * 2), vec![peer]);
        assert!(!c.is_banned(&peer));
    }

    #[test]
    fn too_many_stalling_peers_at_once_get_the_newcomer_banned() {
        let (mut c, t0) = (Conduct::default(), Instant::now());
        for _ in 0..MAX_STALLERS {
            assert_eq!(c.stalled(PeerId::random(), t0), Stall::Counted(1));
        }
        assert_eq!(c.stalled(PeerId::random(), t0), Stall::Ban, "the table is full of fresh stalls");
        // Once they are old, a new one is counted (the old ones are forgotten).
        assert_eq!(c.stalled(PeerId::random(), t0 + BAN), Stall::Counted(1));
    }
}
