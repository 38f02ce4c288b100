//! The event loop's housekeeping: the periodic tick (reachability, relays, saved members,
//! bans lifted), and member changes published as the new ring.

use super::EventLoop;
use crate::membership::Change;
use std::sync::Arc;

impl EventLoop {
    /// The housekeeping tick: reachability applied, relay slots, members saved when due, bans
    /// lifted.
    pub(super) fn on_tick(&mut self) {
        self.reach.give_up_waiting(self.config.autonat_timeout, std::time::Instant::now());
        self.apply_reachability();
        self.manage_relays();
        self.save_members_when_due();
        let now = std::time::Instant::now();
        for peer in self.conduct.lift(now) {
            self.swarm.behaviour_mut().blocked.unblock_peer(peer);
            tracing::info!(%peer, "ban or version refusal lifted");
        }
    }

    /// The member set changed: logged, the new ring published.
    pub(super) fn on_changes(&mut self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        for change in &changes {
            self.log_change(change);
        }
        self.ring.send_replace(Arc::new(self.members.ring().clone()));
        self.overlay.follow(self.members.ring());
    }

    fn log_change(&mut self, change: &Change) {
        match change {
            Change::Joined(peer) => tracing::info!(%peer, members = self.members.len(), "member joined"),
            Change::Left(peer) => tracing::info!(%peer, members = self.members.len(), "member left"),
            Change::Grew(peer) => {
                tracing::info!(%peer, points = self.members.points_of(peer), "a member's ring points changed with its age")
            }
        }
    }
}
