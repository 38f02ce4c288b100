//! The event loop's part of URL exchange: batches out to their hosts' owners (retried, re-routed
//! on refusal) and batches in (rate-limited, checked, a stranger's refused, "done" only from a
//! host's owner, the rest forwarded), acknowledged once the node has queued them and stored
//! those it passes on.

use super::handle::Inbound;
use super::EventLoop;
use crate::codec::Frame;
use crate::exchange::{
    check_batch, check_url, BatchReply, InFlight, NewcomerAllowance, Outbox, RateLimit, UrlBatch, UrlKind, WireUrl,
    BUSY_DELAY, MAX_HOPS, NOT_MEMBER_DELAY,
};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use libp2p::request_response::{self, OutboundRequestId, ResponseChannel};
use libp2p::PeerId;
use std::collections::HashMap;
use tokio::sync::{mpsc, oneshot};

/// The URL exchange's part of the event loop: batches on their way to their hosts' owners and
/// the answers awaited, received batches waiting for the node to queue them, and the limits on
/// what others send.
pub(super) struct State {
    pub(super) outbox: Outbox,
    pub(super) in_flight: HashMap<OutboundRequestId, InFlight>,
    /// Second copies sent, and who waits to hear whether they arrived.
    pub(super) second_in_flight: HashMap<OutboundRequestId, oneshot::Sender<bool>>,
    /// Received batches the node is queueing: each is answered when it has.
    pub(super) replies: FuturesUnordered<BoxFuture<'static, Taken>>,
    /// To the node: the URLs to queue.
    pub(super) inbound: mpsc::Sender<Inbound>,
    /// To the node: the URLs other members acknowledged (it forgets them).
    pub(super) acked: mpsc::UnboundedSender<Vec<String>>,
    pub(super) rate: RateLimit,
    /// Page URLs this member takes from newcomers on their probation, all together.
    pub(super) newcomers: NewcomerAllowance,
    pub(super) counts: Counts,
}

impl State {
    pub(super) fn new(inbound: mpsc::Sender<Inbound>, acked: mpsc::UnboundedSender<Vec<String>>) -> State {
        State {
            outbox: Outbox::default(),
            in_flight: HashMap::new(),
            second_in_flight: HashMap::new(),
            replies: FuturesUnordered::new(),
            inbound,
            acked,
            rate: RateLimit::default(),
            newcomers: NewcomerAllowance::new(std::time::Instant::now()),
            counts: Counts::default(),
        }
    }
}

/// Counters for the status.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) sent: u64,
    pub(super) received: u64,
    pub(super) forwarded: u64,
    pub(super) rejected: u64,
    pub(super) refused: u64,
    pub(super) rate_limited: u64,
    pub(super) not_member: u64,
    pub(super) from_newcomers: u64,
    pub(super) done_refused: u64,
    pub(super) second_copies: u64,
}

/// A batch from another member, or handed over by one, that the node is queueing.
pub(super) struct Received {
    peer: PeerId,
    channel: ResponseChannel<BatchReply>,
    /// URLs whose hosts other members own: stored by the node, then sent on with `hops`.
    forward: Vec<WireUrl>,
    hops: u8,
    rejected: u32,
    /// Second copies for this node to keep ([`UrlBatch::second`]), not URLs to queue.
    second: bool,
}

/// A received batch the node has answered for: `queued` is how many URLs it took (None: it
/// could not store them, and the sender tries again).
pub(super) struct Taken {
    received: Received,
    queued: Option<u32>,
}

/// Whether a batch may go over the grid (see `network/overlay.rs`): a hand-over and a "done"
/// go straight, since only a host's owner may say so (a member passing them on may not).
fn over_grid(batch: &UrlBatch) -> bool {
    !batch.handoff && batch.urls.iter().all(|u| u.kind != UrlKind::Done)
}

impl EventLoop {
    /// Hands URLs to the node: `mine` to queue and, for a received batch, `forward` to store
    /// before the batch is answered (see [`Inbound::forward`]).
    pub(super) fn deliver(&mut self, urls: Vec<WireUrl>, from: Option<Received>, handoff: bool) {
        let Some(received) = from else {
            if !urls.is_empty() {
                let inbound = Inbound { urls, forward: Vec::new(), from: None, reply: None, handoff, second: false };
                if let Err(e) = self.urls.inbound.try_send(inbound) {
                    tracing::debug!("URLs not delivered to the node: {e}");
                }
            }
            return;
        };
        if urls.is_empty() && received.forward.is_empty() && !handoff {
            let ack = BatchReply::Ack { accepted: 0, forwarded: 0, rejected: received.rejected };
            let _ = self.swarm.behaviour_mut().urls.send_response(received.channel, ack);
            return;
        }
        let (reply_tx, reply_rx) = oneshot::channel();
        let inbound = Inbound {
            urls,
            forward: received.forward.clone(),
            from: Some(received.peer),
            reply: Some(reply_tx),
            handoff,
            second: received.second,
        };
        match self.urls.inbound.try_send(inbound) {
            Ok(()) => self.urls.replies.push(Box::pin(async move { Taken { received, queued: reply_rx.await.ok() } })),
            Err(e) => {
                // The node is behind (or gone): the sender keeps the batch and retries.
                tracing::debug!("URLs not delivered to the node: {e}");
                let _ = self.swarm.behaviour_mut().urls.send_response(received.channel, BatchReply::Busy);
            }
        }
    }

    /// Answers a received batch once the node has it: the URLs for other members' hosts, now
    /// stored, go on to their owners.
    pub(super) fn answer(&mut self, taken: Taken) {
        let Taken { received, queued } = taken;
        let reply = match queued {
            Some(accepted) => {
                // Second copies are counted as they arrive (`second_copies`), not as URLs received.
                if !received.second {
                    self.urls.counts.received += u64::from(accepted);
                }
                let forwarded = received.forward.len() as u32;
                if forwarded > 0 {
                    tracing::debug!(from = %received.peer, urls = forwarded, "stored; passing URLs on to their hosts' owners");
                    let me = *self.swarm.local_peer_id();
                    let now = std::time::Instant::now();
                    let back = self.urls.outbox.pass_on(received.forward, received.hops, self.members.ring(), &me, now);
                    // Owned here by now (the ring changed meanwhile): queued like a batch's own.
                    self.deliver(back, None, false);
                    self.flush(false);
                }
                BatchReply::Ack { accepted, forwarded, rejected: received.rejected }
            }
            None => BatchReply::Busy,
        };
        let _ = self.swarm.behaviour_mut().urls.send_response(received.channel, reply);
    }

    /// Sends the batches that are due.
    pub(super) fn flush(&mut self, all: bool) {
        let me = *self.swarm.local_peer_id();
        let due = self.urls.outbox.due(self.members.ring(), &me, std::time::Instant::now(), all);
        self.deliver(due.mine, None, false);
        // On its way in this node is no member of the owners' rosters: its URLs go to a
        // would-be monitor, which takes a newcomer's (see `RosterNode::watching_newcomer`).
        let via = self.roster.node.newcomer_via();
        for mut f in due.batches {
            if let Some(via) = via {
                // It owns no host to hand over: a hand-over marker alone says nothing.
                if f.batch.urls.is_empty() {
                    continue;
                }
                f.owner = via;
                f.batch.handoff = false;
            } else if over_grid(&f.batch) {
                f.owner = self.overlay.next_hop(f.owner, f.batch.hops);
            }
            let id = self.swarm.behaviour_mut().urls.send_request(&f.owner, Frame::Request(f.batch.clone()));
            self.urls.in_flight.insert(id, f);
        }
    }

    pub(super) fn on_urls(&mut self, event: request_response::Event<Frame<UrlBatch>, BatchReply>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(batch), channel, .. } => {
                    self.on_batch(peer, batch, channel)
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    self.urls.counts.refused += 1;
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    if let Some(reply) = self.urls.second_in_flight.remove(&request_id) {
                        let _ = reply.send(matches!(response, BatchReply::Ack { .. }));
                        return;
                    }
                    let Some(f) = self.urls.in_flight.remove(&request_id) else { return };
                    match response {
                        BatchReply::Ack { accepted, forwarded, .. } => {
                            self.urls.counts.sent += u64::from(accepted + forwarded);
                            let _ = self.urls.acked.send(f.batch.urls.into_iter().map(|u| u.url).collect());
                        }
                        BatchReply::Busy => self.urls.outbox.retry_later(f, BUSY_DELAY, std::time::Instant::now()),
                        // This node's admission has not reached the owner's roster yet (or it is
                        // still in its probation): the batch waits.
                        BatchReply::NotMember => {
                            self.urls.outbox.retry_later(f, NOT_MEMBER_DELAY, std::time::Instant::now())
                        }
                    }
                }
            },
            request_response::Event::OutboundFailure { request_id, error, peer, .. } => {
                if let Some(reply) = self.urls.second_in_flight.remove(&request_id) {
                    tracing::debug!(%peer, "second copies not delivered ({error})");
                    let _ = reply.send(false);
                }
                if let Some(f) = self.urls.in_flight.remove(&request_id) {
                    tracing::debug!(%peer, "URL batch not delivered ({error}); retrying");
                    self.urls.outbox.retry(f, std::time::Instant::now());
                }
            }
            _ => {}
        }
    }

    pub(super) fn on_batch(&mut self, peer: PeerId, mut batch: UrlBatch, channel: ResponseChannel<BatchReply>) {
        if !self.urls.rate.allow(&peer.to_string(), std::time::Instant::now()) {
            self.urls.counts.rate_limited += 1;
            let _ = self.swarm.behaviour_mut().urls.send_response(channel, BatchReply::Busy);
            return;
        }
        if let Err(e) = check_batch(&batch) {
            self.urls.counts.refused += 1;
            drop(channel);
            self.ban(peer, &e.to_string());
            return;
        }
        let now = std::time::Instant::now();
        if batch.second {
            self.on_second_copies(peer, batch, channel, now);
            return;
        }
        // Only members queue URLs here (or members that just left, handing their hosts over):
        // a stranger's batch would steer this node's crawl. The one exception is a newcomer on
        // its probation that this member will monitor, within the allowance all newcomers
        // share: its page URLs (its user's seeds) are routed as this member's own, and it may
        // neither say a page is done nor hand hosts over, owning none.
        if !self.members.knows(&peer, now) {
            let newcomer = self.roster.node.watching_newcomer(&peer, super::roster::unix_now());
            if !newcomer || !self.urls.newcomers.take(batch.urls.len(), now) {
                self.urls.counts.not_member += 1;
                let _ = self.swarm.behaviour_mut().urls.send_response(channel, BatchReply::NotMember);
                return;
            }
            batch.handoff = false;
            self.urls.counts.from_newcomers += batch.urls.len() as u64;
            tracing::debug!(%peer, urls = batch.urls.len(), "took a newcomer's URLs");
        }
        let mut valid = Vec::with_capacity(batch.urls.len());
        let mut rejected = 0u32;
        for mut u in batch.urls {
            if check_url(&mut u, self.config.allow_private).is_err() {
                rejected += 1;
                continue;
            }
            // "Done" keeps a page from being fetched: only its host's owner, or its owner
            // before the latest membership changes (handing the host over), may say so.
            if u.kind == UrlKind::Done && !u.ring_host().is_some_and(|h| self.members.owned_recently(&peer, &h, now)) {
                self.urls.counts.done_refused += 1;
                rejected += 1;
                continue;
            }
            valid.push(u);
        }
        // Hosts this node does not own (the sender's ring was stale) go on, within the hop limit.
        let me = *self.swarm.local_peer_id();
        let (mine, others): (Vec<WireUrl>, Vec<WireUrl>) = valid.into_iter().partition(|u| {
            u.ring_host().and_then(|h| self.members.ring().owner(&h).map(|o| *o == me)).unwrap_or(false)
        });
        let forward = if batch.hops < MAX_HOPS {
            others
        } else {
            rejected += others.len() as u32;
            Vec::new()
        };
        self.urls.counts.forwarded += forward.len() as u64;
        self.urls.counts.rejected += u64::from(rejected);
        let received = Received { peer, channel, forward, hops: batch.hops.saturating_add(1), rejected, second: false };
        self.deliver(mine, Some(received), batch.handoff);
    }

    /// Sends second copies to `peer`, the second holder of their hosts; `reply` says whether
    /// it took them (see [`UrlBatch::second`]). Not retried here: the notes stay in the
    /// frontier until a send succeeds.
    pub(super) fn send_second_copies(&mut self, peer: PeerId, urls: Vec<WireUrl>, reply: oneshot::Sender<bool>) {
        let batch = UrlBatch { urls, hops: 0, handoff: false, second: true };
        let id = self.swarm.behaviour_mut().urls.send_request(&peer, Frame::Request(batch));
        self.urls.second_in_flight.insert(id, reply);
    }

    /// Second copies from a member: each is kept when the sender owns its host (or did
    /// lately) and this node is among the host's first
    /// [`crate::exchange::SECOND_HOLDER_WITHIN`] members on its ring (its second holder, or
    /// about to be). Only a host's owner says what is queued there, and only for members that
    /// would take the host over. The rest are dropped and the batch is acknowledged all the
    /// same: such a note is of no use sent again.
    fn on_second_copies(
        &mut self,
        peer: PeerId,
        batch: UrlBatch,
        channel: ResponseChannel<BatchReply>,
        now: std::time::Instant,
    ) {
        if !self.members.knows(&peer, now) {
            self.urls.counts.not_member += 1;
            let _ = self.swarm.behaviour_mut().urls.send_response(channel, BatchReply::NotMember);
            return;
        }
        let me = *self.swarm.local_peer_id();
        let mut valid = Vec::with_capacity(batch.urls.len());
        let mut rejected = 0u32;
        for mut u in batch.urls {
            let theirs = check_url(&mut u, self.config.allow_private).is_ok()
                && u.ring_host().is_some_and(|h| {
                    self.members.owned_recently(&peer, &h, now)
                        && self.members.near_owner(&me, &h, crate::exchange::SECOND_HOLDER_WITHIN)
                });
            if theirs {
                valid.push(u);
            } else {
                rejected += 1;
            }
        }
        self.urls.counts.second_copies += valid.len() as u64;
        self.urls.counts.rejected += u64::from(rejected);
        let received = Received { peer, channel, forward: Vec::new(), hops: 0, rejected, second: true };
        self.deliver(valid, Some(received), false);
    }
}
