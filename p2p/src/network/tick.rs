//! The event loop's housekeeping: gossip in (routing summaries, sealed by their authors), the
//! periodic tick (reachability, relays, bans lifted), and member changes published as the new
//! ring.

use super::*;
use crate::sealed::Refused;

impl EventLoop {
    /// A gossip message, once per message (gossipsub drops the copies by their hash first):
    /// opened and checked here, then handled. What is returned tells gossipsub whether to
    /// forward it: a forgery or a malformed message goes no further than this node.
    pub(super) fn on_gossip(&mut self, message: gossipsub::Message, via: PeerId) -> gossipsub::MessageAcceptance {
        use gossipsub::MessageAcceptance::{Accept, Ignore, Reject};
        // Whoever forwarded it is alive, whatever it forwarded (see `Members::silent`).
        self.members.alive(&via);
        if message.topic != self.querying.topic.hash() {
            return Ignore;
        }
        let opened = match self.sealer.open(message.topic.as_str(), &message.data) {
            Ok(opened) => opened,
            // A copy older than the last taken (it came the long way round) or a replay.
            Err(Refused::Stale { .. }) => return Ignore,
            Err(e) => {
                self.rejected += 1;
                tracing::debug!(via = %via, "gossip refused: {e}");
                return Reject;
            }
        };
        if self.on_summary(opened.author, opened.payload) {
            Accept
        } else {
            Reject
        }
    }

    /// Seals `payload` with this node's key and gossips it on `topic`: what others take (see
    /// [`EventLoop::on_gossip`]).
    pub(super) fn publish_sealed(&mut self, topic: gossipsub::IdentTopic, payload: &[u8]) -> Result<(), String> {
        let sealed =
            self.sealer.seal(topic.hash().as_str(), payload).inspect_err(|e| tracing::warn!("not sealed: {e}"))?;
        self.swarm.behaviour_mut().gossipsub.publish(topic, sealed).map(|_| ()).map_err(|e| e.to_string())
    }

    /// The housekeeping tick: reachability applied, relay slots, the routing summary again when
    /// due, bans lifted.
    pub(super) fn on_tick(&mut self) {
        self.reach.give_up_waiting(self.config.autonat_timeout, std::time::Instant::now());
        self.apply_reachability();
        self.manage_relays();
        self.republish_summary();
        self.save_members_when_due();
        let now = std::time::Instant::now();
        let expired: Vec<PeerId> = self.banned.iter().filter(|(_, until)| **until <= now).map(|(p, _)| *p).collect();
        for peer in expired {
            self.banned.remove(&peer);
            self.swarm.behaviour_mut().blocked.unblock_peer(peer);
            tracing::info!(%peer, "ban lifted");
        }
        for peer in self.other_versions.lifted(now) {
            if !self.banned.contains_key(&peer) {
                self.swarm.behaviour_mut().blocked.unblock_peer(peer);
            }
        }
    }

    /// The member set changed: logged, summaries of members gone dropped, the new ring published.
    pub(super) fn on_changes(&mut self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        for change in &changes {
            self.log_change(change);
        }
        let members: Vec<String> = self.members.peers().iter().map(PeerId::to_string).collect();
        self.querying.summaries.retain(|p| members.iter().any(|m| m == p));
        self.ring.send_replace(Arc::new(self.members.ring().clone()));
    }

    fn log_change(&mut self, change: &Change) {
        match change {
            Change::Joined(peer) => {
                tracing::info!(%peer, members = self.members.len(), "member joined");
                // The newcomer has not heard this node's summary: send it again soon.
                self.querying.member_joined();
            }
            Change::Left(peer) => tracing::info!(%peer, members = self.members.len(), "member left"),
            Change::Grew(peer) => {
                tracing::info!(%peer, points = self.members.points_of(peer), "a member's ring points changed with its age")
            }
        }
    }
}
