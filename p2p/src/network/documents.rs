//! The event loop's part of `/weft/doc/1`: reading one document from a member that holds it
//! (its crawler, or a holder of a copy — see [`crate::replicas`]), and answering others'
//! reads from this node's stores. Members only, at a bounded rate per peer; the node looks the
//! document up ([`DocInbound`]) and the answer goes out signed by its publisher — a document
//! this node crawled itself is signed here as it leaves.
//!
//! The asking side is [`NetworkHandle::get_document`]: the holders in order, hedged, until a
//! copy whose signature and id check out arrives or the deadline passes.

use super::*;
use crate::replicas::{self, DocReply, DocRequest, Replica};
use std::time::Instant;

/// Documents one peer may ask for per second (bursts of twice that).
const READS_PER_SEC: f64 = 20.0;
/// Reads waiting for the node's stores, at most; more are answered busy.
pub(super) const INBOUND_READS: usize = 32;
/// A read the node has not answered by then is answered busy.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// Another member asks for document `doc`: send the copy this node holds (or its own
/// document), `None` when it has none.
#[derive(Debug)]
pub struct DocInbound {
    pub from: PeerId,
    pub doc: String,
    pub reply: oneshot::Sender<Option<Replica>>,
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
}

type PendingRead = BoxFuture<'static, (ResponseChannel<DocReply>, Option<Replica>)>;

pub(super) struct State {
    inbound: mpsc::Sender<DocInbound>,
    pub(super) replies: FuturesUnordered<PendingRead>,
    asks: HashMap<OutboundRequestId, oneshot::Sender<Result<DocReply, String>>>,
    rate: RateLimit,
    pub(super) counts: DocsStatus,
}

impl State {
    pub(super) fn new(inbound: mpsc::Sender<DocInbound>) -> State {
        State {
            inbound,
            replies: FuturesUnordered::new(),
            asks: HashMap::new(),
            rate: RateLimit::new(READS_PER_SEC),
            counts: DocsStatus::default(),
        }
    }
}

impl EventLoop {
    /// Asks `peer` for document `doc`; the reply (or why there is none) goes to `reply`.
    pub(super) fn ask_document(&mut self, peer: PeerId, doc: String, reply: oneshot::Sender<Result<DocReply, String>>) {
        if peer == *self.swarm.local_peer_id() {
            let _ = reply.send(Err("this node".into()));
            return;
        }
        self.documents.counts.asked += 1;
        let id = self.swarm.behaviour_mut().docs.send_request(&peer, Frame::Request(DocRequest { doc }));
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
                    self.ban(peer, &why.to_string());
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

    fn answer_read(&mut self, peer: PeerId, request: DocRequest, channel: ResponseChannel<DocReply>) {
        let now = std::time::Instant::now();
        let busy = !self.members.knows(&peer, now)
            || !self.documents.rate.allow(&peer.to_string(), now)
            || replicas::doc_point(&request.doc).is_none();
        if busy {
            self.documents.counts.busy += 1;
            let _ = self.swarm.behaviour_mut().docs.send_response(channel, DocReply::Busy);
            return;
        }
        let (reply, answer) = oneshot::channel();
        match self.documents.inbound.try_send(DocInbound { from: peer, doc: request.doc, reply }) {
            Ok(()) => self.documents.replies.push(Box::pin(async move {
                let found = tokio::time::timeout(ANSWER_TIMEOUT, answer).await.ok().and_then(Result::ok).flatten();
                (channel, found)
            })),
            Err(_) => {
                self.documents.counts.busy += 1;
                let _ = self.swarm.behaviour_mut().docs.send_response(channel, DocReply::Busy);
            }
        }
    }

    /// The node looked a read up: the copy goes out (signed here when it is this node's own).
    pub(super) fn on_read_answered(&mut self, channel: ResponseChannel<DocReply>, found: Option<Replica>) {
        let reply = match found {
            Some(mut r) => {
                if r.signature.is_empty() {
                    self.sign_replica(&mut r);
                }
                self.documents.counts.served += 1;
                DocReply::Found(Box::new(r))
            }
            None => {
                self.documents.counts.missing += 1;
                DocReply::Missing
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
            let sent = self.commands.send(Command::AskDocument { peer, doc: doc.to_string(), reply }).is_ok();
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
}
