//! The event loop's part of membership: heartbeats out and in, the periodic tick (presence,
//! expiry, bans lifted), member changes published as the new ring.

use super::*;
use crate::sealed::Refused;

impl EventLoop {
    /// A gossip message, once per message (gossipsub drops the copies by their hash first):
    /// opened and checked here, then handled. What is returned tells gossipsub whether to
    /// forward it: a forgery or a malformed message goes no further than this node.
    pub(super) fn on_gossip(&mut self, message: gossipsub::Message, via: PeerId) -> gossipsub::MessageAcceptance {
        use gossipsub::MessageAcceptance::{Accept, Ignore, Reject};
        // Whoever forwarded it is alive, whatever it forwarded (see `Members::alive`).
        self.members.alive(&via, std::time::Instant::now());
        let summary = message.topic == self.querying.topic.hash();
        if !summary && message.topic != self.topic.hash() {
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
        let source = opened.author;
        if summary {
            return if self.on_summary(source, opened.payload) { Accept } else { Reject };
        }
        match Heartbeat::decode(opened.payload, &source.to_string()) {
            Ok(hb) => {
                // Members must be reachable for URL batches: their addresses go to Kademlia.
                for addr in hb.addrs.iter().take(8).filter_map(|a| a.parse::<Multiaddr>().ok()) {
                    self.add_peer_address(source, addr);
                }
                // A member only once this node has met it (see `membership`).
                let remote = if self.connected.contains(&source) { self.reach.remote_of(&source) } else { None };
                let candidates = self.members.candidates();
                if let Some(change) = self.members.observe(hb, via, remote.as_ref(), std::time::Instant::now()) {
                    self.on_change(change);
                }
                // A new candidate is dialled at once; the rest wait for the next heartbeat tick.
                if self.members.candidates() > candidates {
                    self.dial_members();
                }
                Accept
            }
            Err(e) => {
                self.rejected += 1;
                tracing::debug!(peer = %source, "heartbeat rejected: {e}");
                Reject
            }
        }
    }

    /// Seals `payload` with this node's key and gossips it on `topic`: what others take (see
    /// [`EventLoop::on_gossip`]).
    pub(super) fn publish_sealed(&mut self, topic: gossipsub::IdentTopic, payload: &[u8]) -> Result<(), String> {
        let sealed =
            self.sealer.seal(topic.hash().as_str(), payload).inspect_err(|e| tracing::warn!("not sealed: {e}"))?;
        self.swarm.behaviour_mut().gossipsub.publish(topic, sealed).map(|_| ()).map_err(|e| e.to_string())
    }

    pub(super) fn on_heartbeat(&mut self) {
        self.reach.give_up_waiting(self.config.autonat_timeout, std::time::Instant::now());
        self.apply_reachability();
        self.manage_relays();
        // The tick runs at the configured period; the heartbeat goes out at the members'
        // period, longer in a large network (see `Members::period`). Half a tick early is on
        // time, or a period of whole ticks would slip by one each beat.
        let now = std::time::Instant::now();
        let due = self.members.period().saturating_sub(self.config.heartbeat / 2);
        if self.beat_at.is_none_or(|at| now.saturating_duration_since(at) >= due) {
            self.publish_heartbeat();
        }
        // Members this node is connected to are present; candidates it is connected to join.
        // A tick more than a period late: this node's loop could not run (a loaded box), so it
        // heard no heartbeats either. The members are not blamed for that time.
        let period = self.config.heartbeat;
        if let Some(gap) = self.last_tick.map(|t| now.saturating_duration_since(t)) {
            if gap > period * 2 {
                tracing::debug!(late_ms = (gap - period).as_millis() as u64, "the heartbeat tick was late");
                self.members.deaf_for(gap - period, now);
            }
        }
        self.last_tick = Some(now);
        let connected: Vec<PeerId> = self.connected.iter().copied().collect();
        for peer in connected {
            if let Some(remote) = self.reach.remote_of(&peer) {
                if let Some(change) = self.members.present(&peer, &remote, now) {
                    self.on_change(change);
                }
            }
        }
        for change in self.members.expire(now) {
            self.on_change(change);
        }
        self.dial_members();
        self.republish_summary();
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

    pub(super) fn publish_heartbeat(&mut self) {
        let now = std::time::Instant::now();
        self.beat_at = Some(now);
        let me = self.members.heartbeat(now).encode();
        if let Err(e) = self.publish_sealed(self.topic.clone(), &me) {
            // Alone in the network (InsufficientPeers) is normal for the first node.
            tracing::trace!("heartbeat not published: {e}");
        }
    }

    /// Publishes this node's heartbeat out of turn, at most once per [`NOT_MEMBER_DELAY`].
    pub(super) fn announce(&mut self) {
        let now = std::time::Instant::now();
        if self.announced_at.is_none_or(|at| now.saturating_duration_since(at) >= NOT_MEMBER_DELAY) {
            self.announced_at = Some(now);
            self.publish_heartbeat();
        }
    }

    pub(super) fn on_change(&mut self, change: Change) {
        match &change {
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
        let members: Vec<String> = self.members.peers().iter().map(PeerId::to_string).collect();
        self.querying.summaries.retain(|p| members.iter().any(|m| m == p));
        self.ring.send_replace(Arc::new(self.members.ring().clone()));
    }

    /// Puts a peer's address in the routing table if it is of use from here (see
    /// [`reachability::usable`]).
    /// Dials the peers heard of that this node has not met, and the members it has not met for
    /// a while (see [`Members::to_dial`]): a connection is their proof of presence.
    pub(super) fn dial_members(&mut self) {
        use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
        for (peer, addrs) in self.members.to_dial(std::time::Instant::now()) {
            if self.connected.contains(&peer) || self.banned.contains_key(&peer) {
                continue;
            }
            let addrs: Vec<Multiaddr> = addrs.iter().take(8).filter_map(|a| a.parse().ok()).collect();
            let opts = DialOpts::peer_id(peer).addresses(addrs).condition(PeerCondition::DisconnectedAndNotDialing);
            if let Err(e) = self.swarm.dial(opts.build()) {
                tracing::debug!(%peer, "dialling a member: {e}");
            }
        }
    }
}
