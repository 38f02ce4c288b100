//! The event loop's connections: a peer connected (proof of reachability when it came in from
//! outside, a member alive, the bootstrap joined), disconnected (the bootstrap lost, dials
//! retried), a dial that failed, and what a peer told of itself (identify: its protocol
//! version, where it listens, whether it offers a relay).

use super::EventLoop;
use crate::reachability;
use crate::versions;
use libp2p::core::ConnectedPoint;
use libp2p::swarm::ConnectionId;
use libp2p::{identify, relay, PeerId};

impl EventLoop {
    pub(super) fn on_connected(&mut self, peer_id: PeerId, endpoint: &ConnectedPoint, connection_id: ConnectionId) {
        self.reach.connected(connection_id, peer_id, endpoint.get_remote_address().clone());
        // A connection accepted from outside on a public address of this node proves it
        // reachable there (AutoNAT v2 only probes over connections this node dialled, and a
        // public node that others join through may dial nobody).
        if let ConnectedPoint::Listener { local_addr, send_back_addr } = endpoint {
            if reachability::proves_reachable(local_addr, send_back_addr)
                && !self.swarm.external_addresses().any(|a| a == local_addr)
            {
                tracing::info!(addr = %local_addr, from = %send_back_addr, "reachable: a peer connected in from outside");
                // (The swarm tells the behaviours, not this loop.)
                self.swarm.add_external_address(local_addr.clone());
                self.reach.external(local_addr.clone(), true, std::time::Instant::now());
            }
        }
        self.connected.insert(peer_id);
        self.roster.node.connected(peer_id, super::roster::unix_now());
        self.members.alive(&peer_id);
        // A URL batch waiting for this peer can go now.
        if self.urls.outbox.next_due().is_some() {
            self.flush(false);
        }
        if self.is_bootstrap(&peer_id) && self.bootstrap.joined() {
            tracing::info!(peer = %peer_id, addr = %endpoint.get_remote_address(), "joined the network");
        }
    }

    pub(super) fn on_disconnected(
        &mut self,
        peer_id: PeerId,
        num_established: u32,
        connection_id: ConnectionId,
        cause: Option<String>,
    ) {
        self.reach.disconnected(connection_id);
        if self.members.is_member(&peer_id) {
            tracing::debug!(peer = %peer_id, remaining = num_established, "a member's connection closed: {cause:?}");
        }
        if num_established > 0 {
            return;
        }
        self.connected.remove(&peer_id);
        self.roster.node.disconnected(&peer_id, super::roster::unix_now());
        if self.connected.is_empty() && !self.config.bootstrap.is_empty() {
            self.bootstrap.cut_off();
            let why = match self.conduct.other_version(&peer_id) {
                Some(other) => format!("bootstrap peer {peer_id} refused: {other}"),
                None => "every connection closed".into(),
            };
            self.schedule_retry(why);
        }
    }

    pub(super) fn on_dial_failed(&mut self, peer: PeerId, error: String) {
        if !self.connected.contains(&peer) {
            self.roster.node.disconnected(&peer, super::roster::unix_now());
            self.members.unreached(&peer, std::time::Instant::now());
            self.peers.unreached(&peer);
        }
        if self.is_bootstrap(&peer) {
            self.schedule_retry(error);
        }
    }

    pub(super) fn on_identified(&mut self, peer_id: PeerId, info: identify::Info) {
        if let Err(other) = versions::check(&info.protocol_version) {
            self.refuse_version(peer_id, other);
            return;
        }
        // What a peer says it can be reached at goes into the address book, so requests to it
        // can dial it (private addresses only from the same network).
        let relay = info.protocols.contains(&relay::HOP_PROTOCOL_NAME);
        self.peers.identified(peer_id, &info.listen_addrs, relay);
        for addr in info.listen_addrs.into_iter().take(16) {
            self.add_peer_address(peer_id, addr);
        }
    }
}
