//! The event loop's part of the near-duplicate records (see `crate::records`): a lookup asks the
//! first owner of each of a fingerprint's four keys on this node's ring (the next owner when one
//! fails), a publication sends the entry to every owner of its keys, and the records this node
//! owns are kept and served under a per-peer rate. Requests go over the grid when it is in use
//! (`network/overlay.rs`); this node hands on those for other members, a put at once, a lookup
//! held until the next hop answers.

use super::{EventLoop, Latencies};
use crate::codec::Frame;
use crate::exchange::RateLimit;
use crate::grid::MAX_HOPS;
use crate::records::{self, Addressed, DupEntry, RecordReply, RecordRequest, Store, RECORD_OWNERS};
use crate::ring::Ring;
use libp2p::identity::Keypair;
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::PeerId;
use std::collections::{BTreeMap, HashMap};

/// Record requests (lookups and entries) one peer may make per second on average (burst of
/// twice that): a node asks at most four and sends at most twelve per page it indexes.
pub const DHT_STORES_PER_SEC: f64 = 100.0;
/// Requests over the rate that get a peer banned.
pub const DHT_FLOOD: u32 = 1000;

/// A lookup waiting for owners' answers.
struct Lookup {
    hash: u64,
    max_distance: u32,
    url: String,
    /// The owners of each key, and which of them is asked now.
    owners: [Vec<PeerId>; 4],
    tried: [usize; 4],
    /// Requests not yet answered.
    waiting: usize,
    entries: Vec<DupEntry>,
    reply: std::sync::mpsc::SyncSender<Option<(DupEntry, u32)>>,
    started: std::time::Instant,
}

/// What the status shows of the records.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Counts {
    pub lookups: u64,
    pub found: u64,
    pub published: u64,
    /// Requests refused: malformed, forged, over the rate, from strangers, or for keys this
    /// node does not own.
    pub refused: u64,
    /// Requests for other members handed on.
    pub forwarded: u64,
}

/// The records this node holds and the lookups it waits on.
pub(super) struct State {
    /// Signs the entries this node publishes.
    signer: Keypair,
    store: Store,
    lookups: HashMap<u64, Lookup>,
    /// Request → (lookup, the keys it asks for).
    asked: HashMap<OutboundRequestId, (u64, Vec<usize>)>,
    /// Lookups for other members handed on: the asker waits on the channel.
    forwarded: HashMap<OutboundRequestId, ResponseChannel<RecordReply>>,
    next: u64,
    rate: RateLimit,
    /// Requests refused per peer for being over its rate (a flood is banned).
    over: HashMap<PeerId, u32>,
    pub counts: Counts,
    pub latencies: Latencies,
}

impl State {
    pub(super) fn new(signer: Keypair) -> State {
        State {
            signer,
            store: Store::default(),
            lookups: HashMap::new(),
            asked: HashMap::new(),
            forwarded: HashMap::new(),
            next: 0,
            rate: RateLimit::new(DHT_STORES_PER_SEC),
            over: HashMap::new(),
            counts: Counts::default(),
            latencies: Latencies::default(),
        }
    }

    /// Records held.
    pub(super) fn held(&self) -> usize {
        self.store.len()
    }
}

/// The owners of each of `hash`'s keys on `ring`.
fn owners_of(ring: &Ring, hash: u64) -> [Vec<PeerId>; 4] {
    records::keys(hash).map(|k| ring.owners_of_point(k.point(), RECORD_OWNERS))
}

impl EventLoop {
    /// Sends `request` for `to`, `hops` members along with this one: to the first hop of a
    /// path over the grid (see [`Overlay::next_hop`](super::overlay::Overlay::next_hop)).
    fn send_record(&mut self, to: PeerId, hops: u8, request: RecordRequest) -> OutboundRequestId {
        let next = self.overlay.next_hop(to, hops);
        let addressed = Addressed { to: to.to_string(), hops, request };
        self.swarm.behaviour_mut().records.send_request(&next, Frame::Request(addressed))
    }

    /// Asks the owners of `hash`'s keys for the entries near it.
    pub(super) fn find_duplicate(
        &mut self,
        hash: u64,
        max_distance: u32,
        url: String,
        reply: std::sync::mpsc::SyncSender<Option<(DupEntry, u32)>>,
    ) {
        let dht = &mut self.dht;
        dht.counts.lookups += 1;
        let id = dht.next;
        dht.next += 1;
        let owners = owners_of(self.members.ring(), hash);
        let started = std::time::Instant::now();
        let lookup =
            Lookup { hash, max_distance, url, owners, tried: [0; 4], waiting: 0, entries: Vec::new(), reply, started };
        self.dht.lookups.insert(id, lookup);
        self.ask_owners(id, &[0, 1, 2, 3]);
    }

    /// Asks for `keys` of lookup `id` the owner each is at (this node answers from its store),
    /// one request per owner; finishes the lookup when nothing is left to wait for.
    fn ask_owners(&mut self, id: u64, keys: &[usize]) {
        let me = *self.swarm.local_peer_id();
        let Some(lookup) = self.dht.lookups.get_mut(&id) else { return };
        let mut by_owner: BTreeMap<PeerId, Vec<usize>> = BTreeMap::new();
        for &k in keys {
            match lookup.owners[k].get(lookup.tried[k]) {
                Some(owner) if *owner == me => {
                    let key = records::keys(lookup.hash)[k];
                    lookup.entries.extend(self.dht.store.get(&key).iter().cloned());
                }
                Some(owner) => by_owner.entry(*owner).or_default().push(k),
                None => {}
            }
        }
        // Without members (or without a ring yet) this node's own store is all there is.
        if self.members.ring().is_empty() {
            lookup.entries.extend(self.dht.store.found(lookup.hash));
        }
        let hash = lookup.hash;
        lookup.waiting += by_owner.len();
        for (owner, keys) in by_owner {
            let r = self.send_record(owner, 1, RecordRequest::Get { hash });
            self.dht.asked.insert(r, (id, keys));
        }
        self.finish_if_answered(id);
    }

    fn finish_if_answered(&mut self, id: u64) {
        if self.dht.lookups.get(&id).is_none_or(|l| l.waiting > 0) {
            return;
        }
        let l = self.dht.lookups.remove(&id).expect("lookup present");
        let best = records::nearest(&l.entries, l.hash, l.max_distance, &l.url);
        if best.is_some() {
            self.dht.counts.found += 1;
        }
        self.dht.latencies.push(l.started.elapsed().as_secs_f64() * 1e3);
        let _ = l.reply.send(best);
    }

    /// An owner did not answer a lookup's request: its keys go to their next owners.
    fn ask_next(&mut self, request: OutboundRequestId) {
        let Some((id, keys)) = self.dht.asked.remove(&request) else { return };
        if let Some(lookup) = self.dht.lookups.get_mut(&id) {
            lookup.waiting -= 1;
            for &k in &keys {
                lookup.tried[k] += 1;
            }
            self.ask_owners(id, &keys);
        }
    }

    /// Signs the entry of a document this node indexed and sends it to every owner of its keys;
    /// keeps it under the keys this node owns.
    pub(super) fn publish_record(&mut self, simhash: u64, url: String, time: u64) {
        let entry = DupEntry::signed(&self.dht.signer, simhash, url, time);
        self.dht.counts.published += 1;
        let me = *self.swarm.local_peer_id();
        let mut to: Vec<PeerId> = Vec::new();
        for (key, owners) in records::keys(entry.simhash).into_iter().zip(owners_of(self.members.ring(), entry.simhash))
        {
            if owners.contains(&me) || owners.is_empty() {
                self.dht.store.put(key, entry.clone());
            }
            to.extend(owners.into_iter().filter(|o| *o != me));
        }
        to.sort();
        to.dedup();
        for owner in to {
            self.send_record(owner, 1, RecordRequest::Put { entry: entry.clone() });
        }
    }

    pub(super) fn on_records(&mut self, event: request_response::Event<Frame<Addressed>, RecordReply>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(request), channel, .. } => {
                    self.on_record_request(peer, request, channel)
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    self.dht.counts.refused += 1;
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    // A lookup handed on: its answer goes back as it came (the codec bounded it;
                    // the asker sanitizes and checks it).
                    if let Some(channel) = self.dht.forwarded.remove(&request_id) {
                        return self.answer_record(channel, response);
                    }
                    self.on_record_reply(peer, request_id, response)
                }
            },
            request_response::Event::OutboundFailure { request_id, peer, error, .. } => {
                tracing::debug!(%peer, "record request failed: {error}");
                match self.dht.forwarded.remove(&request_id) {
                    Some(channel) => self.answer_record(channel, RecordReply::Unreached),
                    None => self.ask_next(request_id),
                }
            }
            _ => {}
        }
    }

    /// An owner's (or its last hop's) answer to this node's own request.
    fn on_record_reply(&mut self, peer: PeerId, request_id: OutboundRequestId, response: RecordReply) {
        match response {
            RecordReply::Found { entries } => {
                let Some((id, _)) = self.dht.asked.remove(&request_id) else { return };
                if let Some(lookup) = self.dht.lookups.get_mut(&id) {
                    lookup.entries.extend(records::sanitize(entries));
                    lookup.waiting -= 1;
                }
                self.finish_if_answered(id);
            }
            RecordReply::Stored => {}
            other => {
                tracing::debug!(%peer, "record request answered {other:?}");
                self.ask_next(request_id);
            }
        }
    }

    /// A peer asks for the entries near a fingerprint, or sends one to keep, for this node or
    /// for a member further on: at most [`DHT_STORES_PER_SEC`] a second from one peer (a flood
    /// bans), from members only; a request must name a peer within the hop limit and an entry
    /// be of bounded size and signed by the peer it names (anything else bans: an honest node
    /// never sends it, nor hands it on). An entry is kept only under the keys this node owns on
    /// its ring.
    fn on_record_request(&mut self, peer: PeerId, request: Addressed, channel: ResponseChannel<RecordReply>) {
        let now = std::time::Instant::now();
        if !self.dht.rate.allow(&peer.to_string(), now) {
            self.dht.counts.refused += 1;
            let over = self.dht.over.entry(peer).or_insert(0);
            *over += 1;
            if *over >= DHT_FLOOD {
                self.dht.over.remove(&peer);
                drop(channel);
                self.ban(peer, "record request flood");
                return;
            }
            return self.answer_record(channel, RecordReply::Busy);
        }
        let to = match records::check_request(&request) {
            Ok(to) => to,
            Err(why) => {
                self.dht.counts.refused += 1;
                drop(channel);
                self.ban(peer, &format!("record refused: {why}"));
                return;
            }
        };
        if !self.members.knows(&peer, now) {
            self.dht.counts.refused += 1;
            return self.answer_record(channel, RecordReply::NotMember);
        }
        if to != *self.swarm.local_peer_id() {
            return self.hand_on(to, request, channel);
        }
        let reply = match request.request {
            RecordRequest::Get { hash } => {
                let mut entries = self.dht.store.found(hash);
                entries.truncate(records::MAX_FOUND);
                RecordReply::Found { entries }
            }
            RecordRequest::Put { entry } => {
                let me = *self.swarm.local_peer_id();
                let ring = self.members.ring();
                let mine: Vec<_> = (records::keys(entry.simhash).into_iter())
                    .filter(|k| ring.owners_of_point(k.point(), RECORD_OWNERS).contains(&me))
                    .collect();
                if mine.is_empty() {
                    self.dht.counts.refused += 1;
                    RecordReply::NotOwner
                } else {
                    for key in mine {
                        self.dht.store.put(key, entry.clone());
                    }
                    RecordReply::Stored
                }
            }
        };
        self.answer_record(channel, reply);
    }

    /// A request for member `to` reached this node over the grid: hands it on one hop nearer,
    /// a put answered at once (nobody waits on a put's answer), a lookup once the next hop
    /// answers. A request past the hop limit, or for a peer that is not on this node's ring,
    /// is answered [`RecordReply::Unreached`] (the asker tries another owner).
    fn hand_on(&mut self, to: PeerId, request: Addressed, channel: ResponseChannel<RecordReply>) {
        if request.hops >= MAX_HOPS || !self.members.is_member(&to) {
            return self.answer_record(channel, RecordReply::Unreached);
        }
        self.dht.counts.forwarded += 1;
        let get = matches!(request.request, RecordRequest::Get { .. });
        let id = self.send_record(to, request.hops + 1, request.request);
        if get {
            self.dht.forwarded.insert(id, channel);
        } else {
            self.answer_record(channel, RecordReply::Stored);
        }
    }

    fn answer_record(&mut self, channel: ResponseChannel<RecordReply>, reply: RecordReply) {
        let _ = self.swarm.behaviour_mut().records.send_response(channel, reply);
    }
}
