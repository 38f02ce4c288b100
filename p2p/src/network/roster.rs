//! The event loop's part of the roster (`crate::roster`): connections in, requests and replies
//! through [`RosterNode`], the members it watches dialled, and the ring followed
//! (`crate::membership::Members::follow`) whenever the roster changes.

use super::EventLoop;
use crate::codec::Frame;
use crate::exchange::RateLimit;
use crate::keep_alive;
use crate::membership::FORMER_RINGS_FOR;
use crate::reachability::address_block;
use crate::roster::event::{block_hash, position};
use crate::roster::node::{Asked, RosterNode, Send};
use crate::roster::wire::{RosterReply, RosterRequest, MAX_ADDRS_EACH, MAX_WHERE};
use libp2p::identity::Keypair;
use libp2p::request_response::{self, OutboundRequestId};
use libp2p::swarm::dial_opts::{DialOpts, PeerCondition};
use libp2p::{Multiaddr, PeerId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::Duration;

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
    /// The last sponsorship or accusation of this node a member declined, and why.
    #[serde(default)]
    pub last_declined: Option<String>,
    /// Requests answered, requests sent, and requests from peers over their rate.
    pub answered: u64,
    pub sent: u64,
    pub rate_limited: u64,
}

/// Members waiting to be asked where they are, at most.
const UNREACHED_KEPT: usize = 256;

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
    /// Questions of where members are, in flight, with the members asked about.
    wheres: HashMap<OutboundRequestId, Vec<PeerId>>,
    /// Members a dial found no address for (or none that answered), to ask where they are at
    /// the next tick, together (see `EventLoop::unreached`).
    unreached: BTreeSet<PeerId>,
    /// Where the members connected are written down (see `super::saved`), and when last.
    saved_to: Option<PathBuf>,
    saved_at: Option<std::time::Instant>,
}

impl State {
    /// The roster is asked of `bootstrap` first (configured, then saved); `may_found`: with no
    /// bootstrap peer configured, the node founds a network if no one gives it a roster.
    pub(super) fn new(
        key: Keypair,
        vnodes: usize,
        bootstrap: Vec<PeerId>,
        may_found: bool,
        saved_to: Option<PathBuf>,
    ) -> State {
        let vnodes = u16::try_from(vnodes).unwrap_or(u16::MAX);
        let mut node = RosterNode::new(key, vnodes, may_found, unix_now());
        node.set_bootstrap(bootstrap);
        State {
            node,
            asked: HashMap::new(),
            rate: RateLimit::new(ROSTER_REQUESTS_PER_SEC),
            answered: 0,
            sent: 0,
            rate_limited: 0,
            fingerprint: 0,
            wheres: HashMap::new(),
            unreached: BTreeSet::new(),
            saved_to,
            saved_at: None,
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
            last_declined: self.node.declined().map(str::to_string),
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
        // At scale the view is drawn among the grid's links (see `network/overlay.rs`).
        let grid = self.overlay.neighbours().to_vec();
        self.roster.node.set_links(&grid);
        let sends = self.roster.node.tick(now);
        self.send_roster(sends);
        let instant = std::time::Instant::now();
        let mut unknown = Vec::new();
        // The roster's peers and the grid's links; the others' connections linger on a small
        // network only (see `crate::keep_alive`).
        let linger = if self.overlay.shape().is_some() { Duration::ZERO } else { keep_alive::LINGER };
        self.swarm.behaviour().keep_alive.set(self.roster.node.kept().into_iter().chain(grid.iter().copied()), linger);
        let mut wanted = self.roster.node.wanted();
        for peer in grid {
            if !wanted.contains(&peer) {
                wanted.push(peer);
            }
        }
        for peer in wanted {
            if self.connected.contains(&peer) || self.conduct.is_banned(&peer) {
                continue;
            }
            // Addresses from identify, if this node met it before; those of a member never met
            // (behind NAT, reachable through its relays only), or last dialled in vain, are
            // asked of a peer that met it.
            let addrs = self.peers.addrs(&peer).to_vec();
            if self.peers.wants_addrs(&peer) && unknown.len() < MAX_WHERE && self.peers.may_ask(peer, instant) {
                unknown.push(peer);
            }
            self.roster.unreached.remove(&peer);
            let opts =
                DialOpts::peer_id(peer).addresses(addrs).condition(PeerCondition::DisconnectedAndNotDialing).build();
            if let Err(e) = self.swarm.dial(opts) {
                tracing::debug!(%peer, "dialling a member the roster watches: {e}");
                self.roster.node.disconnected(&peer, now);
            }
        }
        // Members other requests could not dial, asked about in the same question.
        while unknown.len() < MAX_WHERE {
            let Some(peer) = self.roster.unreached.pop_first() else { break };
            if !unknown.contains(&peer)
                && self.roster.node.roster().is_member(&peer)
                && self.peers.may_ask(peer, instant)
            {
                unknown.push(peer);
            }
        }
        self.ask_where(unknown);
        self.roster.fingerprint = self.roster.node.roster().members().fold(0, |h, p| h ^ position(p));
        self.follow_roster();
    }

    /// Dials the members saved at the last run (see `super::saved`).
    pub(super) fn dial_saved(&mut self, saved: Vec<(PeerId, Vec<Multiaddr>)>) {
        if !saved.is_empty() {
            tracing::info!(members = saved.len(), "dialling the members saved at the last run");
        }
        for (peer, addrs) in saved {
            self.peers.found(peer, &addrs);
            for addr in &addrs {
                self.swarm.behaviour_mut().addresses.add(peer, addr.clone());
            }
            let opts =
                DialOpts::peer_id(peer).addresses(addrs).condition(PeerCondition::DisconnectedAndNotDialing).build();
            if let Err(e) = self.swarm.dial(opts) {
                tracing::debug!(%peer, "dialling a saved member: {e}");
            }
        }
    }

    /// Every [`super::saved::SAVE_EVERY`]: the members connected, written down.
    pub(super) fn save_members_when_due(&mut self) {
        let due = self.roster.saved_at.is_none_or(|at| at.elapsed() >= super::saved::SAVE_EVERY);
        if due {
            self.save_members();
        }
    }

    /// Writes down the members this node is connected to (those it is not, after them, up to
    /// the file's bound), with the addresses identify gave; nothing when it knows none (a
    /// restarted node that has not found its network yet keeps the file it started with).
    pub(super) fn save_members(&mut self) {
        let Some(path) = self.roster.saved_to.clone() else { return };
        self.roster.saved_at = Some(std::time::Instant::now());
        let me = *self.swarm.local_peer_id();
        let roster = self.roster.node.roster();
        let mut members: Vec<PeerId> = roster.members().copied().filter(|p| *p != me).collect();
        members.sort_by_key(|p| !self.connected.contains(p));
        let peers: Vec<(PeerId, Vec<Multiaddr>)> = (members.into_iter())
            .map(|p| (p, self.peers.addrs(&p).to_vec()))
            .filter(|(_, addrs)| !addrs.is_empty())
            .take(super::saved::MAX_SAVED)
            .collect();
        if peers.is_empty() {
            return;
        }
        if let Err(e) = super::saved::save(&path, &peers) {
            tracing::warn!(path = %path.display(), "members not saved: {e}");
        }
    }

    /// Asks a connected peer — a bootstrap peer first, else any — where `members` are.
    fn ask_where(&mut self, members: Vec<PeerId>) {
        if members.is_empty() {
            return;
        }
        let boot = self.config.bootstrap.iter().map(|(p, _)| *p).find(|p| self.connected.contains(p));
        let Some(to) = boot.or_else(|| self.connected.iter().find(|p| !members.contains(p)).copied()) else { return };
        let request = RosterRequest::Where(members.iter().map(PeerId::to_string).collect());
        let id = self.swarm.behaviour_mut().roster.send_request(&to, Frame::Request(request));
        self.roster.wheres.insert(id, members);
        self.roster.sent += 1;
    }

    /// A dial to `peer` found no address, or none that answered (a URL batch, a posting, a
    /// record for a member this node never met): its addresses are asked for at the next tick,
    /// with the others' (one question a second, not one per failed dial: the join's burst of
    /// dials would flood the bootstrap peer).
    pub(super) fn unreached(&mut self, peer: PeerId) {
        self.peers.unreached(&peer);
        if self.roster.unreached.len() < UNREACHED_KEPT {
            self.roster.unreached.insert(peer);
        }
    }

    /// The addresses this node knows of the members `from` asks about (see
    /// [`RosterRequest::Where`]).
    fn answer_where(&self, asked: &[String]) -> RosterReply {
        let known = (asked.iter().take(MAX_WHERE))
            .filter_map(|p| p.parse::<PeerId>().ok())
            .map(|p| (p, self.peers.addrs(&p)))
            .filter(|(_, addrs)| !addrs.is_empty())
            .map(|(p, addrs)| (p.to_string(), addrs.iter().take(MAX_ADDRS_EACH).map(ToString::to_string).collect()))
            .collect();
        RosterReply::Addresses(known)
    }

    /// Addresses another peer gave for members this node asked about: kept for the next dial
    /// (a wrong one costs a failed dial: the connection proves the peer id).
    fn on_addresses(&mut self, given: Vec<(String, Vec<String>)>) {
        for (peer, addrs) in given.into_iter().take(MAX_WHERE) {
            let Ok(peer) = peer.parse::<PeerId>() else { continue };
            let addrs: Vec<Multiaddr> =
                addrs.iter().take(MAX_ADDRS_EACH).filter(|a| a.len() <= 512).filter_map(|a| a.parse().ok()).collect();
            for addr in &addrs {
                self.swarm.behaviour_mut().addresses.add(peer, addr.clone());
            }
            self.peers.found(peer, &addrs);
        }
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
                    let reply = if let RosterRequest::Where(asked) = &request {
                        self.answer_where(asked)
                    } else {
                        let remote = self.reach.remote_of(&peer);
                        let block = block_hash(remote.as_ref().and_then(address_block).as_deref());
                        self.roster.node.on_request(peer, request, block, now)
                    };
                    self.roster.answered += 1;
                    let _ = self.swarm.behaviour_mut().roster.send_response(channel, reply);
                    self.follow_roster();
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    if self.roster.wheres.remove(&request_id).is_some() {
                        if let RosterReply::Addresses(given) = response {
                            self.on_addresses(given);
                        }
                    } else if let Some(asked) = self.roster.asked.remove(&request_id) {
                        let sends = self.roster.node.on_reply(peer, asked, response, now);
                        self.send_roster(sends);
                        self.follow_roster();
                    }
                }
            },
            request_response::Event::OutboundFailure { peer, request_id, error, .. } => {
                // Those asked about may be asked again at once (of another peer, or later).
                for member in self.roster.wheres.remove(&request_id).unwrap_or_default() {
                    self.peers.ask_failed(&member);
                }
                if let Some(asked) = self.roster.asked.remove(&request_id) {
                    tracing::debug!(%peer, "roster request {asked:?} failed: {error}");
                    self.roster.node.on_failure(peer, asked, now);
                }
            }
            _ => {}
        }
    }
}
