//! The ring the member set makes, and the rings it made before: who owns a host or a point now
//! or owned it lately (a URL sent to a recent owner is not a stranger's).

use super::{Members, FORMER_RINGS};
use libp2p::PeerId;
use std::time::Instant;
use weft_p2p::membership::FORMER_RINGS_FOR;
use weft_p2p::ring::Ring;

impl Members {
    pub(super) fn rebuild(&mut self, now: Instant) {
        self.seen_time(now);
        let points = self.points(self.latest);
        let apart = points.iter().filter(|(p, _)| *p != self.me_id).copied().collect::<Vec<_>>();
        let ring = self.ring.rebuilt(points);
        let old = std::mem::replace(&mut self.ring, ring);
        self.generation += 1;
        self.apart = self.apart.rebuilt(apart);
        let now = self.latest;
        while self.former.len() >= FORMER_RINGS
            || self.former.front().is_some_and(|(at, _)| now.saturating_duration_since(*at) > FORMER_RINGS_FOR)
        {
            self.former.pop_front();
        }
        self.former.push_back((now, old));
        if !self.leavers.is_empty() {
            self.refresh_leavers(now, true);
        }
    }

    /// Rings current within [`FORMER_RINGS_FOR`] of `now`, the current one first.
    pub(super) fn recent_rings(&self, now: Instant) -> impl Iterator<Item = &Ring> {
        let former = self
            .former
            .iter()
            .rev()
            .take_while(move |(at, _)| now.saturating_duration_since(*at) <= FORMER_RINGS_FOR)
            .map(|(_, r)| r);
        std::iter::once(&self.ring).chain(former)
    }

    /// Whether `peer` owns `host` (a ring host name) now or did within [`FORMER_RINGS_FOR`],
    /// or — in this node's first [`FORMER_RINGS_FOR`] — does on the ring without this node (it
    /// held this node's hosts before it joined, or while it was away): only the owner, or the
    /// owner before a membership change, can say it is done with a URL of the host. A leaver
    /// this node only heard of owned what it would own among the current members.
    pub fn owned_recently(&self, peer: &PeerId, host: &str, now: Instant) -> bool {
        let starting = now.saturating_duration_since(self.started) <= FORMER_RINGS_FOR;
        (starting && self.apart.owner(host) == Some(peer))
            || self.recent_rings(now).any(|r| r.owner(host) == Some(peer))
            || self.leavers.get(peer).is_some_and(|rings| rings.iter().any(|r| r.owner(host) == Some(peer)))
    }

    /// Whether `peer` is among the first `k` members clockwise from `host` on the current
    /// ring: it would own the host on a ring that lacks the members before it. A member that
    /// has not yet heard of some members (a loaded network learns a newcomer in minutes, not
    /// seconds) owns such hosts by its own ring and crawls them in good faith: what it then
    /// says about them is refused, but it is no offender (see `network::postings`).
    pub fn near_owner(&self, peer: &PeerId, host: &str, k: usize) -> bool {
        self.ring.owners_of_point(weft_p2p::ring::host_point(host), k).contains(peer)
    }

    /// Whether `peer` was among the first `replicas` members clockwise from `point` (a cell's
    /// point: see `crate::placement`) now or within [`FORMER_RINGS_FOR`]: a cell's owner
    /// before a membership change hands its postings to the cell's new owners.
    pub fn owned_point_recently(&self, peer: &PeerId, point: u64, replicas: usize, now: Instant) -> bool {
        self.recent_rings(now).any(|r| r.owners_of_point(point, replicas).contains(peer))
    }
}
