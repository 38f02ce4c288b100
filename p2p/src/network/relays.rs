//! The event loop's part of reachability: what the relay this node offers is doing, what it
//! advertises as it learns whether others can reach it, and the relay slots it holds behind NAT.

use super::EventLoop;
use crate::behaviour::BehaviourEvent;
use crate::reachability;
use libp2p::core::transport::ListenerId;
use libp2p::multiaddr::Protocol;
use libp2p::swarm::SwarmEvent;
use libp2p::{autonat, dcutr, relay, upnp, Multiaddr, PeerId};
use std::collections::{HashMap, HashSet};

/// Relays, both ways: the slots this node holds on others' relays behind NAT, what the relay it
/// offers is doing, and what reachability decided when last applied.
#[derive(Debug, Default)]
pub(super) struct Relaying {
    /// Relay → the `/p2p-circuit` listener reserving a slot on it.
    pub(super) listeners: HashMap<PeerId, ListenerId>,
    pub(super) served: RelayServed,
    /// The addresses advertised and whether a relay is offered, as last applied.
    pub(super) applied: Option<(Vec<Multiaddr>, bool)>,
}

/// What the relay this node offers is doing.
#[derive(Debug, Default)]
pub(super) struct RelayServed {
    pub(super) reservations: HashSet<PeerId>,
    pub(super) circuits: usize,
    pub(super) circuits_served: u64,
}

impl EventLoop {
    /// What the swarm says of this node's reachability: its listen and external addresses,
    /// AutoNAT's probes, relay slots reserved, hole punches, UPnP mappings. Other events are
    /// of no concern here.
    pub(super) fn on_reachability_event(&mut self, event: SwarmEvent<BehaviourEvent>) {
        let now = std::time::Instant::now();
        match event {
            SwarmEvent::NewListenAddr { address, .. } if reachability::is_relayed(&address) => {
                tracing::info!(addr = %address, "reachable through a relay");
            }
            SwarmEvent::NewListenAddr { address, .. } => {
                let full = address.clone().with_p2p(*self.swarm.local_peer_id()).unwrap_or(address.clone());
                tracing::info!(addr = %full, "p2p listening (bootstrap other nodes from this address)");
                self.listen.insert(address.clone());
                self.reach.listen_addr(address, true);
            }
            SwarmEvent::ExpiredListenAddr { address, .. } => {
                self.listen.remove(&address);
                self.reach.listen_addr(address, false);
            }
            SwarmEvent::ListenerClosed { listener_id, reason, .. } => {
                let relay = self.relaying.listeners.iter().find(|(_, l)| **l == listener_id).map(|(p, _)| *p);
                if let Some(relay) = relay {
                    tracing::info!(%relay, "relay slot closed: {reason:?}");
                    self.relaying.listeners.remove(&relay);
                    self.reach.reservation(relay, false, now);
                }
            }
            SwarmEvent::ExternalAddrConfirmed { address } => {
                tracing::info!(addr = %address, "external address confirmed");
                self.reach.external(address, true, now);
            }
            SwarmEvent::ExternalAddrExpired { address } => self.reach.external(address, false, now),
            SwarmEvent::Behaviour(BehaviourEvent::Autonat(autonat::v2::client::Event {
                tested_addr,
                server,
                result,
                ..
            })) => {
                match &result {
                    Ok(()) => tracing::info!(addr = %tested_addr, %server, "AutoNAT: reachable at this address"),
                    Err(e) => {
                        tracing::info!(addr = %tested_addr, %server, "AutoNAT: not reachable at this address: {e}")
                    }
                }
                self.reach.probe(result.is_ok());
            }
            SwarmEvent::Behaviour(BehaviourEvent::RelayClient(relay::client::Event::ReservationReqAccepted {
                relay_peer_id,
                renewal,
                ..
            })) => {
                if !renewal {
                    tracing::info!(relay = %relay_peer_id, "relay slot reserved");
                }
                self.reach.reservation(relay_peer_id, true, now);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Dcutr(dcutr::Event { remote_peer_id, result })) => {
                match &result {
                    Ok(_) => tracing::info!(peer = %remote_peer_id, "hole punched: direct connection"),
                    Err(e) => tracing::info!(peer = %remote_peer_id, "hole punching failed, staying relayed: {e}"),
                }
                self.reach.hole_punch(remote_peer_id, result.is_ok(), now);
            }
            SwarmEvent::Behaviour(BehaviourEvent::Upnp(event)) => {
                let state = match event {
                    upnp::Event::NewExternalAddr { external_addr, .. } => {
                        tracing::info!(addr = %external_addr, "UPnP: the router maps a port to this node");
                        "mapped"
                    }
                    upnp::Event::ExpiredExternalAddr { .. } => "expired",
                    upnp::Event::GatewayNotFound => "no gateway",
                    upnp::Event::NonRoutableGateway => "gateway not public",
                };
                self.reach.upnp(state);
            }
            _ => {}
        }
    }

    pub(super) fn on_relay_served(&mut self, event: relay::Event) {
        let served = &mut self.relaying.served;
        match event {
            relay::Event::ReservationReqAccepted { src_peer_id, renewed, .. } => {
                if !renewed {
                    tracing::info!(peer = %src_peer_id, "relay: slot reserved for a member behind NAT");
                }
                served.reservations.insert(src_peer_id);
            }
            relay::Event::ReservationClosed { src_peer_id } | relay::Event::ReservationTimedOut { src_peer_id } => {
                served.reservations.remove(&src_peer_id);
            }
            relay::Event::CircuitReqAccepted { src_peer_id, dst_peer_id } => {
                tracing::debug!(src = %src_peer_id, dst = %dst_peer_id, "relay: circuit opened");
                served.circuits += 1;
                served.circuits_served += 1;
            }
            relay::Event::CircuitClosed { .. } => served.circuits = served.circuits.saturating_sub(1),
            _ => {}
        }
    }

    /// Applies what reachability decided: the relay offered, what this node advertises in
    /// identify and the relay slots it holds. Cheap when nothing changed.
    pub(super) fn apply_reachability(&mut self) {
        let advertised = self.reach.advertised();
        let relay_server = self.reach.relay_server();
        let applied = (advertised.clone(), relay_server);
        if self.relaying.applied.as_ref() == Some(&applied) {
            return;
        }
        if self.relaying.applied.as_ref().map(|a| a.1) != Some(relay_server) {
            tracing::info!(kind = ?self.reach.kind(), "reachability: relay {}", if relay_server { "offered" } else { "not offered" });
        }
        let status = if relay_server { relay::Status::Enable } else { relay::Status::Disable };
        self.swarm.behaviour_mut().relay.set_status(Some(status));
        // Identify announces the swarm's external addresses only: private ones are added
        // there while this node is on a private network, and taken back after.
        let external: Vec<Multiaddr> = self.swarm.external_addresses().cloned().collect();
        for a in &advertised {
            if !external.contains(a) {
                self.swarm.add_external_address(a.clone());
            }
        }
        for a in external.iter().filter(|a| reachability::is_private(a) && !advertised.contains(a)) {
            self.swarm.remove_external_address(a);
        }
        // The peers connected hear the new addresses now: identify pushes a change of protocols
        // (the relay on or off) by itself, not one of external addresses, and a member behind
        // NAT is found only at the circuits the peers it met heard of.
        if self.relaying.applied.as_ref().map(|a| &a.0) != Some(&applied.0) {
            let peers: Vec<PeerId> = self.connected.iter().copied().collect();
            self.swarm.behaviour_mut().identify.push(peers);
        }
        self.relaying.applied = Some(applied);
        self.manage_relays();
    }

    /// Behind NAT: holds slots on up to `p2p.relays` members' relays (chosen by
    /// [`reachability::pick_relays`] among the members identify said offer one); otherwise
    /// holds none.
    pub(super) fn manage_relays(&mut self) {
        let me = *self.swarm.local_peer_id();
        let wanted: Vec<PeerId> = if self.reach.needs_relay() && self.config.relays > 0 {
            let candidates = self.peers.relays(|p| self.members.is_member(p) || self.is_bootstrap(p));
            reachability::pick_relays(&me, &candidates, self.config.relays)
        } else {
            Vec::new()
        };
        let gone: Vec<PeerId> = self.relaying.listeners.keys().filter(|p| !wanted.contains(p)).copied().collect();
        for relay in gone {
            if let Some(id) = self.relaying.listeners.remove(&relay) {
                self.swarm.remove_listener(id);
                self.reach.reservation(relay, false, std::time::Instant::now());
            }
        }
        for relay in wanted {
            if self.relaying.listeners.contains_key(&relay) {
                continue;
            }
            let Some(addr) = (self.peers.addrs(&relay).iter())
                .cloned()
                .find(|a| !reachability::is_relayed(a) && reachability::usable(a, None, self.config.private_addrs))
            else {
                continue;
            };
            let circuit = addr.with_p2p(relay).unwrap_or_else(|a| a).with(Protocol::P2pCircuit);
            match self.swarm.listen_on(circuit.clone()) {
                Ok(id) => {
                    tracing::info!(%relay, addr = %circuit, "behind NAT: reserving a relay slot");
                    self.relaying.listeners.insert(relay, id);
                }
                Err(e) => tracing::warn!(%relay, "cannot reserve a relay slot: {e}"),
            }
        }
    }
}
