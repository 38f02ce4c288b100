//! The event loop's part of `/weft/doc/1`: reading one document from a member that holds it
//! (its crawler, or a holder of a copy — see [`crate::replicas`]), comparing copies with a
//! co-holder (see [`crate::copy_sync`]), and answering others' requests from this node's
//! stores. Members only, at a bounded rate per peer (reads and comparisons each their own);
//! the node answers ([`DocInbound`]) and a document goes out signed by its publisher — one this
//! node crawled itself is signed here as it leaves.
//!
//! The asking side is [`NetworkHandle::get_document`]: the holders in order, hedged, until a
//! copy whose signature and id check out arrives or the deadline passes; and
//! [`NetworkHandle::ask_documents`] for one request of a comparison.

use super::handle::{Command, NetworkHandle};
use super::EventLoop;
use crate::codec::Frame;
use crate::copy_sync::{self, BUCKETS, MAX_SEND};
use crate::doc_wire::{DocReply, DocRequest};
use crate::exchange::RateLimit;
use crate::replicas::{self, Replica};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use libp2p::request_response::{OutboundRequestId, ResponseChannel};
use libp2p::{request_response, PeerId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Documents one peer may ask for per second (bursts of twice that).
const READS_PER_SEC: f64 = 20.0;
/// Comparison requests (digests, a page of a listing, a request to send) one peer may make per
/// second: each reads this node's whole holdings or sends up to [`MAX_SEND`] copies.
const COMPARISONS_PER_SEC: f64 = 1.0;
/// Requests waiting for the node's stores, at most; more are answered busy.
pub(super) const INBOUND_READS: usize = 32;
/// A request the node has not answered by then is answered busy.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Another member's `/weft/doc/1` request, for the node to answer: a read of document `doc`
/// (answered [`DocReply::Found`], unsigned when it is this node's own, or
/// [`DocReply::Missing`]), or a step of comparing copies (answered as
/// [`crate::copy_sync`] says; a request to send hands the copies over, then says how many).
#[derive(Debug)]
pub struct DocInbound {
    pub from: PeerId,
    pub ask: DocRequest,
    pub reply: oneshot::Sender<DocReply>,
}

/// `/status`'s view of document reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DocsStatus {
    /// Reads answered with a document, answered without one, answered busy.
    pub served: u64,
    pub missing: u64,
    pub busy: u64,
    /// Reads this node sent to other members.
    pub asked: u64,
    /// Comparison requests (digests, listings, requests to send) answered for co-holders.
    #[serde(default)]
    pub compared: u64,
}

type PendingRead = BoxFuture<'static, (ResponseChannel<DocReply>, DocReply)>;

pub(super) struct State {
    inbound: mpsc::Sender<DocInbound>,
    pub(super) replies: FuturesUnordered<PendingRead>,
    asks: HashMap<OutboundRequestId, oneshot::Sender<Result<DocReply, String>>>,
    rate: RateLimit,
    comparisons: RateLimit,
    pub(super) counts: DocsStatus,
}

impl State {
    pub(super) fn new(inbound: mpsc::Sender<DocInbound>) -> State {
        State {
            inbound,
            replies: FuturesUnordered::new(),
            asks: HashMap::new(),
            rate: RateLimit::new(READS_PER_SEC),
            comparisons: RateLimit::new(COMPARISONS_PER_SEC),
            counts: DocsStatus::default(),
        }
    }
}

/// Whether a request is well formed: an id that is one, a bucket in range, no more ids to send
/// than [`MAX_SEND`] (`Err`: over a bound no honest peer crosses).
fn well_formed(ask: &DocRequest) -> Result<bool, String> {
    Ok(match ask {
        DocRequest::Read { doc } => replicas::doc_point(doc).is_some(),
        DocRequest::Digests => true,
        DocRequest::List { bucket, after } => {
            *bucket < BUCKETS && after.as_deref().is_none_or(|a| copy_sync::bucket_of(a).is_some())
        }
        DocRequest::Send { docs } if docs.len() > MAX_SEND => {
            return Err(format!("a request to send {} copies", docs.len()))
        }
        DocRequest::Send { .. } => true,
    })
}

impl EventLoop {
    /// Asks `peer` a `/weft/doc/1` request; the reply (or why there is none) goes to `reply`.
    pub(super) fn ask_document(
        &mut self,
        peer: PeerId,
        ask: DocRequest,
        reply: oneshot::Sender<Result<DocReply, String>>,
    ) {
        if peer == *self.swarm.local_peer_id() {
            let _ = reply.send(Err("this node".into()));
            return;
        }
        if matches!(ask, DocRequest::Read { .. }) {
            self.documents.counts.asked += 1;
        }
        let id = self.swarm.behaviour_mut().docs.send_request(&peer, Frame::Request(ask));
        self.documents.asks.insert(id, reply);
    }

    pub(super) fn on_docs(&mut self, event: request_response::Event<Frame<DocRequest>, DocReply>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(request), channel, .. } => {
                    self.answer_read(peer, request, channel)
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    if let Some(reply) = self.documents.asks.remove(&request_id) {
                        let _ = reply.send(Ok(response));
                    }
                }
            },
            request_response::Event::OutboundFailure { request_id, error, .. } => {
                if let Some(reply) = self.documents.asks.remove(&request_id) {
                    let _ = reply.send(Err(error.to_string()));
                }
            }
            _ => {}
        }
    }

    fn answer_read(&mut self, peer: PeerId, ask: DocRequest, channel: ResponseChannel<DocReply>) {
        let now = std::time::Instant::now();
        let formed = match well_formed(&ask) {
            Ok(formed) => formed,
            Err(why) => {
                drop(channel);
                self.ban(peer, &why);
                return;
            }
        };
        let rate = match ask {
            DocRequest::Read { .. } => &mut self.documents.rate,
            _ => &mut self.documents.comparisons,
        };
        let busy = !formed || !self.members.knows(&peer, now) || !rate.allow(&peer.to_string(), now);
        if busy {
            self.documents.counts.busy += 1;
            let _ = self.swarm.behaviour_mut().docs.send_response(channel, DocReply::Busy);
            return;
        }
        let (reply, answer) = oneshot::channel();
        match self.documents.inbound.try_send(DocInbound { from: peer, ask, reply }) {
            Ok(()) => self.documents.replies.push(Box::pin(async move {
                let answered = tokio::time::timeout(ANSWER_TIMEOUT, answer).await.ok().and_then(Result::ok);
                (channel, answered.unwrap_or(DocReply::Busy))
            })),
            Err(_) => {
                self.documents.counts.busy += 1;
                let _ = self.swarm.behaviour_mut().docs.send_response(channel, DocReply::Busy);
            }
        }
    }

    /// The node answered a request: a document goes out (signed here when it is this node's own).
    pub(super) fn on_read_answered(&mut self, channel: ResponseChannel<DocReply>, answered: DocReply) {
        let reply = match answered {
            DocReply::Found(mut r) => {
                if r.signature.is_empty() {
                    self.sign_replica(&mut r);
                }
                self.documents.counts.served += 1;
                DocReply::Found(r)
            }
            DocReply::Missing => {
                self.documents.counts.missing += 1;
                DocReply::Missing
            }
            DocReply::Busy => {
                self.documents.counts.busy += 1;
                DocReply::Busy
            }
            other => {
                self.documents.counts.compared += 1;
                other
            }
        };
        let _ = self.swarm.behaviour_mut().docs.send_response(channel, reply);
    }
}

/// What [`NetworkHandle::get_document`] found.
#[derive(Debug, Clone, Default)]
pub struct DocAnswer {
    /// The holder that answered, and the document as its publisher signed it.
    pub found: Option<(PeerId, Replica)>,
    /// The members asked, and what each answered (`found`, `missing`, `busy`, or an error).
    pub asked: Vec<(PeerId, String)>,
    /// How long it took, milliseconds.
    pub ms: f64,
}

impl NetworkHandle {
    /// Reads document `doc` from the members that hold it: `first` (e.g. the peer a search hit
    /// named), then the first `owners` owners of its id on the current ring (its holders are
    /// among the first `index.replicas + 1`; past them, members that held it before the ring
    /// changed may). One is asked at a time; another joins when the last stays silent for
    /// `hedge` (so with no hedge all are asked at once) or answers without it, until a copy
    /// whose id and signature check out arrives or `deadline` passes.
    pub async fn get_document(
        &self,
        doc: &str,
        first: &[PeerId],
        owners: usize,
        hedge: Duration,
        deadline: Duration,
    ) -> DocAnswer {
        let started = Instant::now();
        let me = self.peer_id;
        let ring = self.ring();
        let mut holders: Vec<PeerId> = first.to_vec();
        for p in replicas::doc_owners(&ring, doc, owners) {
            if !holders.contains(&p) {
                holders.push(p);
            }
        }
        holders.retain(|p| *p != me);
        let mut answer = DocAnswer::default();
        let mut pending = FuturesUnordered::new();
        let mut next = holders.into_iter().peekable();
        let end = tokio::time::Instant::now() + deadline;
        let ask = |peer: PeerId| {
            let (reply, rx) = oneshot::channel();
            let sent = self.commands.send(Command::AskDocument { peer, ask: DocRequest::read(doc), reply }).is_ok();
            async move {
                let outcome =
                    if sent { rx.await.unwrap_or_else(|_| Err("stopped".into())) } else { Err("stopped".into()) };
                (peer, outcome)
            }
        };
        loop {
            if pending.is_empty() {
                match next.next() {
                    Some(p) => pending.push(ask(p)),
                    None => break,
                }
            }
            // Another holder joins after `hedge` (at once with no hedge), while there is one.
            let more = next.peek().is_some();
            let wait = tokio::time::sleep(hedge);
            tokio::select! {
                Some((peer, outcome)) = pending.next() => {
                    let said = match outcome {
                        Ok(DocReply::Found(r)) => match replicas::check_content(&r) {
                            Ok(_) if r.doc == doc => {
                                answer.asked.push((peer, "found".into()));
                                answer.found = Some((peer, *r));
                                break;
                            }
                            Ok(_) => "another document".to_string(),
                            Err(e) => format!("bad copy: {e}"),
                        },
                        Ok(DocReply::Missing) => "missing".into(),
                        Ok(DocReply::Busy) => "busy".into(),
                        Ok(_) => "an answer to another request".into(),
                        Err(e) => e,
                    };
                    answer.asked.push((peer, said));
                }
                _ = wait, if more => {
                    if let Some(p) = next.next() {
                        pending.push(ask(p));
                    }
                }
                _ = tokio::time::sleep_until(end) => break,
            }
        }
        answer.ms = started.elapsed().as_secs_f64() * 1e3;
        answer
    }

    /// Asks member `peer` one `/weft/doc/1` request (a step of comparing copies: see
    /// [`crate::copy_sync`]) and waits for its reply, or why there is none.
    pub async fn ask_documents(&self, peer: PeerId, ask: DocRequest) -> Result<DocReply, String> {
        let (reply, rx) = oneshot::channel();
        self.commands.send(Command::AskDocument { peer, ask, reply }).map_err(|_| "stopped".to_string())?;
        rx.await.unwrap_or_else(|_| Err("stopped".into()))
    }
}
