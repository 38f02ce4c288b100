//! The event loop's part of network search: queries this node sends (whom to ask, fan-out,
//! hedging, deadline) and queries it answers.
//!
//! A query goes through two steps, with nothing to discover first: the owners of the
//! question's best cells are on this node's ring, so no question waits for the DHT.
//!
//! 1. **rank and send** — the owners of the best cells ([`crate::placement::plan`]) first, then
//!    their cells' other owners. The first `fanout` get the query — one fewer when that would
//!    take every peer a question may ask ([`first_wave`]);
//! 2. **collect** — answers are checked; a peer that fails, is busy, or has not answered after
//!    `search.hedge_ms` is replaced by the next candidate, while the question has asked fewer
//!    than `search.fanout` peers in all, hedges included;
//!    at `search.deadline_ms` whatever arrived is returned, marked partial if a peer is missing.
//!
//! A peer whose answer does not pass [`crate::search::check_reply`] (or cannot be decoded) is
//! penalised: left out of rankings for [`PENALTY`], banned after [`MAX_STRIKES`].

use super::{EventLoop, Latencies};
use crate::codec::Frame;
use crate::exchange::RateLimit;
use crate::placement::plan;
use crate::search::{check_reply, RemoteHit, SearchReply, SearchRequest};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use libp2p::request_response::{self, OutboundFailure, OutboundRequestId, ResponseChannel};
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use weft_page::PeerName;

/// Queries from other nodes waiting for this node's index.
pub(super) const INBOUND_QUERIES: usize = 64;

/// Peers of a question's first wave left free for hedges when the wave would otherwise take
/// every peer the question may ask (`search.fanout`, hedges included).
const HEDGE_RESERVE: usize = 1;

/// The first wave of a question sent to `fanout` peers that may ask `cap` in all: `fanout`,
/// but one fewer when that would leave no hedge. At fifty nodes a question asked eight owners
/// and then up to eight more in place of slow ones (16 peers; past 8 for 2 of 100 questions in
/// one run, 23 of 100 in another, on a loaded box); now it asks seven and may replace one
/// (replayed: recall@10 0.972 with seven against 0.977 with eight). In smaller networks the
/// fan-out is below the cap and the hedges fill the rest.
fn first_wave(fanout: usize, cap: usize) -> usize {
    fanout.min(cap.saturating_sub(HEDGE_RESERVE).max(1))
}

/// How long this node's own answer to another's query may take before it says busy.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// A peer that answered garbage is not asked again for this long...
const PENALTY: Duration = Duration::from_secs(600);
/// ... and banned at this many strikes.
const MAX_STRIKES: u32 = 3;

/// A query from another node, for the node to answer from its index.
#[derive(Debug)]
pub struct SearchInbound {
    pub from: PeerId,
    pub request: SearchRequest,
    /// The answer; dropping it answers [`SearchReply::Busy`].
    pub reply: oneshot::Sender<SearchReply>,
}

/// One peer's answer to a query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerAnswer {
    pub peer: PeerName,
    pub hits: Vec<RemoteHit>,
    pub ms: f64,
}

/// What the network answered a query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetworkAnswer {
    pub answers: Vec<PeerAnswer>,
    /// Peers the query was sent to, in order.
    pub contacted: Vec<PeerName>,
    /// Peers that failed, were busy, refused, answered garbage, or were still silent at the
    /// deadline — and why.
    pub failed: Vec<(PeerName, String)>,
    /// Some peer that was asked did not contribute.
    pub partial: bool,
    /// Peers that were worth asking: the owners of the question's best cells.
    pub candidates: usize,
    /// Peers chosen as owners of the question's best cells (semantic placement), each with
    /// the cells it was chosen for, in the order asked; the cells' other owners follow them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_cell: Vec<(PeerName, Vec<u32>)>,
    /// Peers chosen for cells that were still silent past the hedge when every one of their
    /// cells had been answered by another owner: the answer did not wait for them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<PeerName>,
    pub ms: f64,
}

/// Network search in `/status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchStatus {
    /// Network queries this node sent, and peers asked in total.
    pub queries: u64,
    pub peers_contacted: u64,
    pub partial: u64,
    /// Peers this node stopped waiting for because other owners had answered for their cells
    /// (see `NetworkAnswer::superseded`).
    #[serde(default)]
    pub superseded: u64,
    /// Queries from others answered, and refused as busy (rate or queue).
    pub answered: u64,
    pub busy: u64,
    /// Answers that failed the checks; peers currently penalised for them.
    pub bad_replies: u64,
    pub penalised_peers: usize,
    pub ms_p50: f64,
    pub ms_p95: f64,
}

/// A query this node is running.
struct Query {
    request: SearchRequest,
    /// Peers asked at first ([`first_wave`]).
    fanout: usize,
    /// Peers asked at most, hedges included.
    cap: usize,
    /// A silent peer is replaced after this long.
    hedge: Duration,
    reply: Option<oneshot::Sender<NetworkAnswer>>,
    started: Instant,
    deadline: Instant,
    /// The peers to ask, in order (their base58 ids, as the answer names them).
    ranked: Vec<String>,
    next: usize,
    /// For a peer asked as the owner of some of the question's best cells: the cells' other
    /// owners, in the cells' order — the peer that replaces it when it fails or is silent, so
    /// that its cells are still asked (a killed owner's cells were lost to the query: live at
    /// N = 10 with a node down, recall@10 fell from 0.999 to 0.853).
    replicas: HashMap<PeerId, Vec<String>>,
    /// The question's best cells and their owners, and those of them that an owner answered
    /// for (see [`crate::placement::unanswered`]).
    cells: Vec<(u32, Vec<PeerId>)>,
    answered: HashSet<u32>,
    pending: HashMap<OutboundRequestId, (PeerId, Instant, bool)>,
    answer: NetworkAnswer,
}

type Answering = BoxFuture<'static, (ResponseChannel<SearchReply>, SearchReply)>;

/// Network-search state of the event loop.
pub(super) struct State {
    pub(super) replies: FuturesUnordered<Answering>,
    inbound: mpsc::Sender<SearchInbound>,
    rate: RateLimit,
    queries: HashMap<u64, Query>,
    next_query: u64,
    requests: HashMap<OutboundRequestId, u64>,
    strikes: HashMap<PeerId, (u32, Instant)>,
    counts: SearchStatus,
    latencies: Latencies,
}

impl State {
    pub(super) fn new(inbound: mpsc::Sender<SearchInbound>, rate: RateLimit) -> State {
        State {
            replies: FuturesUnordered::new(),
            inbound,
            rate,
            queries: HashMap::new(),
            next_query: 0,
            requests: HashMap::new(),
            strikes: HashMap::new(),
            counts: SearchStatus::default(),
            latencies: Latencies::default(),
        }
    }

    /// When the event loop must wake up for a query (hedge, deadline).
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.queries.values().map(Query::next_due).min()
    }

    fn penalised(&self, peer: &str, now: Instant) -> bool {
        peer.parse::<PeerId>().ok().and_then(|p| self.strikes.get(&p)).is_some_and(|(_, until)| *until > now)
    }

    pub(super) fn status(&self) -> SearchStatus {
        let now = Instant::now();
        SearchStatus {
            penalised_peers: self.strikes.values().filter(|(_, until)| *until > now).count(),
            ms_p50: self.latencies.quantile(0.5),
            ms_p95: self.latencies.quantile(0.95),
            ..self.counts.clone()
        }
    }
}

impl Query {
    fn next_due(&self) -> Instant {
        let mut due = self.deadline;
        for (_, sent, hedged) in self.pending.values() {
            if !hedged {
                due = due.min(*sent + self.hedge);
            }
        }
        due
    }
}

impl EventLoop {
    pub(super) fn start_search(
        &mut self,
        request: SearchRequest,
        fanout: usize,
        reply: oneshot::Sender<NetworkAnswer>,
    ) {
        let now = Instant::now();
        let id = self.querying.next_query;
        self.querying.next_query += 1;
        self.querying.counts.queries += 1;
        let cap = self.config.search.fanout.max(fanout);
        let query = Query {
            request,
            fanout: first_wave(fanout, cap),
            cap,
            hedge: Duration::from_millis(self.config.search.hedge_ms),
            reply: Some(reply),
            started: now,
            deadline: now + Duration::from_millis(self.config.search.deadline_ms),
            ranked: Vec::new(),
            replicas: HashMap::new(),
            next: 0,
            cells: Vec::new(),
            answered: HashSet::new(),
            pending: HashMap::new(),
            answer: NetworkAnswer::default(),
        };
        self.querying.queries.insert(id, query);
        self.dispatch(id);
    }

    /// Ranks the candidates — the owners of the question's best cells — and sends the query
    /// to the first `fanout`. (A vector of another dimension than the codebook's has no cells
    /// and asks nobody: this node's own index answers it.)
    fn dispatch(&mut self, id: u64) {
        let now = Instant::now();
        let Some(q) = self.querying.queries.get(&id) else { return };
        let (by_cell, ranked, replicas, cells) = self.by_cell(&q.request.vector, q.fanout, now);
        let q = self.querying.queries.get_mut(&id).expect("query present");
        q.answer.candidates = ranked.len();
        q.answer.by_cell = by_cell.into_iter().map(|(p, cells)| (PeerName::from(p), cells)).collect();
        q.ranked = ranked;
        q.replicas = replicas;
        q.cells = cells;
        for _ in 0..q.fanout {
            if !self.send_next(id) {
                break;
            }
        }
        self.finish_if_done(id);
    }

    /// Puts the owners of the question's best cells first (see [`crate::placement::plan`]):
    /// for each cell not yet covered, the owner covering most of the cells left, up to
    /// `fanout` peers; then the cells' other owners. Returns the peers chosen by cell with
    /// their cells, the whole order, each chosen peer's stand-ins, and the cells with their
    /// owners.
    fn by_cell(
        &self,
        vector: &[f32],
        fanout: usize,
        now: Instant,
    ) -> (Vec<(String, Vec<u32>)>, Vec<String>, HashMap<PeerId, Vec<String>>, Vec<(u32, Vec<PeerId>)>) {
        let ladder = crate::placement::shipped_ladder();
        let (replicas, nprobe) = (self.config.search.replicas, self.config.search.nprobe);
        let ring = self.members.ring();
        // The level the network's size calls for (its postings are there: see `ladder`).
        let level = ladder.asked_level(ring.members().len(), replicas);
        let cells = ladder.nearest(level, vector, nprobe);
        let me = *self.swarm.local_peer_id();
        let owners: Vec<(u32, Vec<PeerId>)> =
            cells.iter().map(|(c, _)| (*c, ladder.owners(ring, *c, replicas))).collect();
        let up = |p: &PeerId| *p != me && !self.querying.penalised(&p.to_string(), now);
        let chosen = plan(owners.iter().map(|(c, o)| (*c, o.as_slice())), &me, fanout, up);
        let mut order: Vec<String> = chosen.iter().map(|(p, _)| p.to_string()).collect();
        let mut listed: HashSet<String> = order.iter().cloned().collect();
        for (_, os) in &owners {
            for o in os.iter().filter(|o| up(o)) {
                if listed.insert(o.to_string()) {
                    order.push(o.to_string());
                }
            }
        }
        let mut alternates: HashMap<PeerId, Vec<String>> = HashMap::new();
        for (peer, cells) in &chosen {
            let mut alts: Vec<String> = Vec::new();
            for (_, os) in owners.iter().filter(|o| cells.contains(&o.0)) {
                for o in os.iter().filter(|o| *o != peer && up(o)) {
                    if !alts.contains(&o.to_string()) {
                        alts.push(o.to_string());
                    }
                }
            }
            alternates.insert(*peer, alts);
        }
        (chosen.into_iter().map(|(p, cells)| (p.to_string(), cells)).collect(), order, alternates, owners)
    }

    /// Sends the query to its next candidate not asked yet; false when there is none.
    fn send_next(&mut self, id: u64) -> bool {
        let Some(q) = self.querying.queries.get_mut(&id) else { return false };
        while q.ranked.get(q.next).is_some_and(|c| q.answer.contacted.iter().any(|x| x == c)) {
            q.next += 1;
        }
        let Some(candidate) = q.ranked.get(q.next) else { return false };
        q.next += 1;
        let peer = candidate.clone();
        self.send_to(id, &peer)
    }

    /// Sends the query to `peer`.
    fn send_to(&mut self, id: u64, peer: &str) -> bool {
        let Some(q) = self.querying.queries.get_mut(&id) else { return false };
        let Ok(peer) = peer.parse::<PeerId>() else { return false };
        let request = Frame::Request(q.request.clone());
        q.answer.contacted.push(PeerName::from(peer.to_string()));
        let rid = self.swarm.behaviour_mut().search.send_request(&peer, request);
        let q = self.querying.queries.get_mut(&id).expect("query present");
        q.pending.insert(rid, (peer, Instant::now(), false));
        self.querying.requests.insert(rid, id);
        self.querying.counts.peers_contacted += 1;
        true
    }

    /// Replaces `peer`, which did not answer usefully, while the question has asked fewer
    /// than its cap of peers: by another owner of the cells it was asked for, if any is left,
    /// else by the next candidate.
    fn hedge(&mut self, id: u64, peer: PeerId) {
        let Some(q) = self.querying.queries.get_mut(&id) else { return };
        if q.answer.contacted.len() >= q.cap {
            return;
        }
        let mut alternates = q.replicas.remove(&peer).unwrap_or_default();
        let at = alternates.iter().position(|a| !q.answer.contacted.iter().any(|x| x == a));
        if let Some(at) = at {
            let next = alternates.remove(at);
            // Should it fail too, the cells' owners left take its place.
            if let Ok(next_id) = next.parse::<PeerId>() {
                q.replicas.insert(next_id, alternates.split_off(at));
            }
            self.send_to(id, &next);
            return;
        }
        let more = q.next < q.ranked.len();
        if more {
            self.send_next(id);
        }
    }

    fn strike(&mut self, peer: PeerId, why: &str) {
        self.querying.counts.bad_replies += 1;
        let entry = self.querying.strikes.entry(peer).or_insert((0, Instant::now()));
        entry.0 += 1;
        entry.1 = Instant::now() + PENALTY;
        tracing::warn!(%peer, strikes = entry.0, "bad search answer, peer penalised: {why}");
        if entry.0 >= MAX_STRIKES {
            self.ban(peer, "repeated bad search answers");
        }
    }

    pub(super) fn on_search(&mut self, event: request_response::Event<Frame<SearchRequest>, SearchReply>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(request), channel, .. } => {
                    self.answer_query(peer, request, channel)
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    let outcome = match response {
                        SearchReply::Hits(hits) => Ok(hits),
                        SearchReply::Busy => Err("busy".to_string()),
                        SearchReply::Refused(why) => Err(format!("refused: {why}")),
                    };
                    self.on_answer(request_id, outcome);
                }
            },
            request_response::Event::OutboundFailure { request_id, error, .. } => {
                let garbage = matches!(&error, OutboundFailure::Io(e) if e.kind() == std::io::ErrorKind::InvalidData);
                self.on_answer(request_id, Err(if garbage { format!("garbage: {error}") } else { error.to_string() }));
            }
            _ => {}
        }
    }

    fn on_answer(&mut self, rid: OutboundRequestId, outcome: Result<Vec<RemoteHit>, String>) {
        let Some(id) = self.querying.requests.remove(&rid) else { return };
        let Some(q) = self.querying.queries.get_mut(&id) else { return };
        let Some((peer, sent, _)) = q.pending.remove(&rid) else { return };
        let k = q.request.k;
        let outcome = outcome.and_then(|hits| match check_reply(&hits, k) {
            Ok(()) => Ok(hits),
            Err(e) => Err(format!("garbage: {e}")),
        });
        match outcome {
            Ok(hits) => {
                let ms = sent.elapsed().as_secs_f64() * 1e3;
                q.answer.answers.push(PeerAnswer { peer: PeerName::from(peer.to_string()), hits, ms });
                q.answered.extend(q.cells.iter().filter(|(_, os)| os.contains(&peer)).map(|(c, _)| *c));
                self.drop_superseded(id);
            }
            Err(why) => {
                q.answer.failed.push((PeerName::from(peer.to_string()), why.clone()));
                if why.starts_with("garbage") {
                    self.strike(peer, &why);
                }
                self.hedge(id, peer);
            }
        }
        self.finish_if_done(id);
    }

    pub(super) fn on_search_timer(&mut self) {
        let now = Instant::now();
        let ids: Vec<u64> = self.querying.queries.keys().copied().collect();
        for id in ids {
            let Some(q) = self.querying.queries.get_mut(&id) else { continue };
            if now >= q.deadline {
                self.finish(id);
                continue;
            }
            let slow: Vec<PeerId> = q
                .pending
                .values_mut()
                .filter(|(_, sent, hedged)| !*hedged && now >= *sent + q.hedge)
                .map(|(peer, _, hedged)| {
                    *hedged = true;
                    *peer
                })
                .collect();
            let any = !slow.is_empty();
            for peer in slow {
                self.hedge(id, peer);
            }
            // A peer past the hedge whose cells other owners answered already is not waited for
            // (nothing else may arrive to prompt it: the hedge may have had no peer left to ask).
            if any {
                self.drop_superseded(id);
                self.finish_if_done(id);
            }
        }
    }

    /// Stops waiting for the peers chosen for cells that are silent past the hedge (and so
    /// were replaced) once every cell they were chosen for has been answered by another owner:
    /// their answers could add nothing the question asked them for. Without this the question
    /// waited for the slowest of them up to its deadline, after its stand-in had answered.
    fn drop_superseded(&mut self, id: u64) {
        let Some(q) = self.querying.queries.get_mut(&id) else { return };
        let done = |peer: &PeerId| {
            let peer = peer.to_string();
            (q.answer.by_cell.iter())
                .any(|(p, cells)| *p == peer && crate::placement::unanswered(cells, &q.answered).is_none())
        };
        let late: Vec<OutboundRequestId> =
            (q.pending.iter()).filter(|(_, (peer, _, hedged))| *hedged && done(peer)).map(|(rid, _)| *rid).collect();
        for rid in late {
            if let Some((peer, _, _)) = q.pending.remove(&rid) {
                self.querying.requests.remove(&rid);
                q.answer.superseded.push(PeerName::from(peer.to_string()));
                self.querying.counts.superseded += 1;
            }
        }
    }

    fn finish_if_done(&mut self, id: u64) {
        if self.querying.queries.get(&id).is_some_and(|q| q.pending.is_empty()) {
            self.finish(id);
        }
    }

    fn finish(&mut self, id: u64) {
        let Some(mut q) = self.querying.queries.remove(&id) else { return };
        for (rid, (peer, _, _)) in q.pending.drain() {
            self.querying.requests.remove(&rid);
            q.answer.failed.push((PeerName::from(peer.to_string()), "no answer by the deadline".into()));
        }
        q.answer.partial = !q.answer.failed.is_empty();
        q.answer.ms = q.started.elapsed().as_secs_f64() * 1e3;
        if q.answer.partial {
            self.querying.counts.partial += 1;
        }
        self.querying.latencies.push(q.answer.ms);
        if let Some(reply) = q.reply.take() {
            let _ = reply.send(q.answer);
        }
    }

    /// Another node's query: rate-limited, then handed to the node, answered when it has.
    fn answer_query(&mut self, peer: PeerId, request: SearchRequest, channel: ResponseChannel<SearchReply>) {
        if !self.querying.rate.allow(&peer.to_string(), std::time::Instant::now()) {
            self.querying.counts.busy += 1;
            let _ = self.swarm.behaviour_mut().search.send_response(channel, SearchReply::Busy);
            return;
        }
        let (reply, answer) = oneshot::channel();
        match self.querying.inbound.try_send(SearchInbound { from: peer, request, reply }) {
            Ok(()) => {
                self.querying.counts.answered += 1;
                self.querying.replies.push(Box::pin(async move {
                    let reply = tokio::time::timeout(ANSWER_TIMEOUT, answer).await;
                    (channel, reply.ok().and_then(Result::ok).unwrap_or(SearchReply::Busy))
                }));
            }
            Err(_) => {
                self.querying.counts.busy += 1;
                let _ = self.swarm.behaviour_mut().search.send_response(channel, SearchReply::Busy);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::first_wave;

    #[test]
    fn the_first_wave_leaves_a_hedge_only_when_it_would_take_every_peer_a_question_may_ask() {
        // Fifty nodes: eight by the share, eight at most: seven first, one hedge.
        assert_eq!(first_wave(8, 8), 7);
        // Twenty nodes: four first, four hedges.
        assert_eq!(first_wave(4, 8), 4);
        assert_eq!(first_wave(7, 8), 7);
        // An explicit fan-out past the configured cap is its own cap.
        assert_eq!(first_wave(10, 10), 9);
        // A cap of one cannot spare a hedge.
        assert_eq!(first_wave(1, 1), 1);
    }
}
