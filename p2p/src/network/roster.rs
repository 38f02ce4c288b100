//! The event loop's part of the roster (`crate::roster`): connections in, requests and replies
//! through [`RosterNode`], the members it watches dialled, and the ring followed
//! (`crate::membership::Members::follow`) whenever the roster changes.

use super::EventLoop;
use crate::codec::Frame;
use crate::exchange::RateLimit;
use crate::membership::FORMER_RINGS_FOR;
use crate::reachability::address_block;
use crate::roster::event::{block_hash, position};
use crate::roster::node::{Asked, RosterNode, Send};
use crate::roster::wire::{RosterReply, RosterRequest};
use libp2p::identity::Keypair;
use libp2p::request_response::{self, OutboundRequestId};
use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Roster requests one peer may make per second on average (burst of twice that): a member
/// sends one digest round every two seconds, and a newcomer a page at a time.
pub(super) const ROSTER_REQUESTS_PER_SEC: f64 = 10.0;

/// The roster as `/status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RosterStatus {
    /// Pulling, probation, asking, member.
    pub stage: String,
    /// Members in the roster, and entries (departures included).
    pub members: usize,
    pub entries: usize,
    /// The roster's member set in a word (XOR of the members' roster keys, hex): two nodes whose
    /// rosters hold the same members show the same.
    pub fingerprint: String,
    /// Events refused (forged, malformed, against the rules), and the last reason.
    pub refused_events: u64,
    pub last_refusal: Option<String>,
    /// Requests answered, requests sent, and requests from peers over their rate.
    pub answered: u64,
    pub sent: u64,
    pub rate_limited: u64,
}

/// The roster's part of the event loop's state.
pub(super) struct State {
    pub(super) node: RosterNode,
    asked: HashMap<OutboundRequestId, Asked>,
    rate: RateLimit,
    answered: u64,
    sent: u64,
    rate_limited: u64,
    /// The roster's fingerprint at the last tick.
    fingerprint: u64,
    /// DHT lookups of members' addresses in flight.
    pub(super) lookups: HashMap<libp2p::kad::QueryId, PeerId>,
}

impl State {
    /// With no `bootstrap` peer, the node founds a network if no one answers.
    pub(super) fn new(key: Keypair, vnodes: usize, bootstrap: Vec<PeerId>) -> State {
        let vnodes = u16::try_from(vnodes).unwrap_or(u16::MAX);
        let mut node = RosterNode::new(key, vnodes, bootstrap.is_empty(), unix_now());
        node.set_bootstrap(bootstrap);
        State {
            node,
            asked: HashMap::new(),
            rate: RateLimit::new(ROSTER_REQUESTS_PER_SEC),
            answered: 0,
            sent: 0,
            rate_limited: 0,
            fingerprint: 0,
            lookups: HashMap::new(),
        }
    }

    pub(super) fn status(&self) -> RosterStatus {
        let (refused_events, last_refusal) = self.node.refused();
        RosterStatus {
            stage: self.node.stage().name().to_string(),
            members: self.node.roster().len(),
            entries: self.node.roster().entries(),
            fingerprint: format!("{:016x}", self.fingerprint),
            refused_events,
            last_refusal: last_refusal.map(str::to_string),
            answered: self.answered,
            sent: self.sent,
            rate_limited: self.rate_limited,
        }
    }
}

/// Unix seconds now: roster events are dated by their signers' clocks.
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl EventLoop {
    /// Once a second: what the roster sends, the connections it wants, the ring it makes.
    pub(super) fn roster_tick(&mut self) {
        let now = unix_now();
        let own = self.swarm.external_addresses().find_map(address_block);
        self.roster.node.set_block(block_hash(own.as_deref()));
        let sends = self.roster.node.tick(now);
        self.send_roster(sends);
        let instant = std::time::Instant::now();
        for peer in self.roster.node.wanted() {
            if self.connected.contains(&peer) || self.banned.contains_key(&peer) {
                continue;
            }
            // Addresses from identify, if this node met it before; a member never met (behind
            // NAT, reachable through its relays only) is looked up in the DHT.
            let addrs = self.peers.addrs(&peer).to_vec();
            if addrs.is_empty() && self.peers.may_look_up(peer, instant) {
                let query = self.swarm.behaviour_mut().kad.get_closest_peers(peer);
                self.roster.lookups.insert(query, peer);
            }
            let opts =
                DialOpts::peer_id(peer).addresses(addrs).condition(PeerCondition::DisconnectedAndNotDialing).build();
            if let Err(e) = self.swarm.dial(opts) {
                tracing::debug!(%peer, "dialling a member the roster watches: {e}");
                self.roster.node.disconnected(&peer, now);
            }
        }
        self.roster.fingerprint = self.roster.node.roster().members().fold(0, |h, p| h ^ position(p));
        self.follow_roster();
    }

    /// Takes the roster's member set as the ring's (a change, or a member's next admission
    /// stage), with its recent departures.
    pub(super) fn follow_roster(&mut self) {
        let now = unix_now();
        for change in self.roster.node.take_changes() {
            tracing::debug!(?change, members = self.roster.node.roster().len(), "roster changed");
        }
        let departed = self.roster.node.roster().departed_since(now.saturating_sub(FORMER_RINGS_FOR.as_secs()));
        let ring = self.roster.node.roster_mut().ring(now);
        let changes = self.members.follow(ring, &departed, std::time::Instant::now());
        self.on_changes(changes);
    }

    /// A lookup of a member's addresses progressed: what it found goes to the directory (and
    /// the routing table), for the next dial.
    pub(super) fn on_member_lookup(&mut self, id: libp2p::kad::QueryId, found: Vec<libp2p::kad::PeerInfo>, last: bool) {
        let Some(wanted) = self.roster.lookups.get(&id).copied() else { return };
        for info in found.into_iter().filter(|i| i.peer_id == wanted) {
            self.peers.found(info.peer_id, &info.addrs);
            for addr in info.addrs.into_iter().take(8) {
                self.add_peer_address(info.peer_id, addr);
            }
        }
        if last {
            self.roster.lookups.remove(&id);
        }
    }

    /// This node leaves: its departure goes to the members it is connected to.
    pub(super) fn roster_leave(&mut self) {
        let sends = self.roster.node.leave(unix_now());
        self.send_roster(sends);
        self.follow_roster();
    }

    fn send_roster(&mut self, sends: Vec<Send>) {
        for send in sends {
            let id = self.swarm.behaviour_mut().roster.send_request(&send.to, Frame::Request(send.request));
            self.roster.asked.insert(id, send.asked);
            self.roster.sent += 1;
        }
    }

    pub(super) fn on_roster(&mut self, event: request_response::Event<Frame<RosterRequest>, RosterReply>) {
        let now = unix_now();
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(request), channel, .. } => {
                    if !self.roster.rate.allow(&peer.to_string(), std::time::Instant::now()) {
                        self.roster.rate_limited += 1;
                        drop(channel);
                        return;
                    }
                    let remote = self.reach.remote_of(&peer);
                    let block = block_hash(remote.as_ref().and_then(address_block).as_deref());
                    let reply = self.roster.node.on_request(peer, request, block, now);
                    self.roster.answered += 1;
                    let _ = self.swarm.behaviour_mut().roster.send_response(channel, reply);
                    self.follow_roster();
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    if let Some(asked) = self.roster.asked.remove(&request_id) {
                        let sends = self.roster.node.on_reply(peer, asked, response, now);
                        self.send_roster(sends);
                        self.follow_roster();
                    }
                }
            },
            request_response::Event::OutboundFailure { peer, request_id, error, .. } => {
                if let Some(asked) = self.roster.asked.remove(&request_id) {
                    tracing::debug!(%peer, "roster request {asked:?} failed: {error}");
                    self.roster.node.on_failure(peer, asked, now);
                }
            }
            _ => {}
        }
    }
}
