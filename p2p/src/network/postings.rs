//! The event loop's part of semantic placement: postings out to their cells' owners (the
//! outbox in [`crate::publishing`]), and postings in — from members only, at a bounded rate,
//! each checked (codebook, model, cell, sizes, the vector and the publisher's signature on a
//! blocking thread — [`crate::postings::check_content`], ~130 µs a posting — then, back on
//! the event loop, the publisher's ownership of the page's host on a recent ring),
//! acknowledged once the node has stored them. A peer whose batches are refused whole three
//! times is banned.

use super::EventLoop;
use crate::codec::Frame;
use crate::exchange::RateLimit;
use crate::placement::Ladder;
use crate::postings::{check_content, check_tombstone, BadPosting, Posting, PostingBatch, PostingReply, Tombstone};
use crate::publishing::{Flight, Publisher, Withdrawal, MAX_WAITING_BYTES};
use crate::replicas::{self, BadReplica, Replica};
use crate::ring::Ring;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use libp2p::request_response::{OutboundRequestId, ResponseChannel};
use libp2p::{request_response, PeerId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Posting batches one peer may send per second (bursts of twice that): 256 postings each.
const BATCHES_PER_SEC: f64 = 4.0;
/// Items queued for other owners at most (see [`Publisher`]).
const MAX_WAITING: usize = 200_000;
/// Received batches waiting for the node's store.
pub(super) const INBOUND_POSTINGS: usize = 16;
/// A batch answered busy is tried again after this long.
const BUSY_DELAY: Duration = Duration::from_secs(5);
/// Batches refused whole in a row before the sender is banned. A batch of which anything is
/// taken clears the count: a member whose ring lags or leads this node's (an event has not
/// reached its roster yet) sends a run of pages this node gives to another, and banning it
/// would take it off this node's ring and make the rings disagree more. For the same reason a
/// batch refused only for hosts its sender would own on a ring lacking a few of the members
/// before it ([`disputed_owners`]) is no strike: it is refused and counted as disputed. A
/// publisher that sends nothing but pages of others' hosts is still banned on its third batch.
const MAX_STRIKES: u32 = 3;
/// How far down a host's owners a publisher may stand and still be taken to own the host by
/// its own ring (one that lacks the members before it): the owner and a tenth of the members
/// after it, at most 16. Its pages are refused all the same; this only spares it the strike.
fn disputed_owners(members: usize) -> usize {
    (1 + members.div_ceil(10)).min(16)
}

/// Received batches being checked away from the event loop at once, at most; more are
/// answered busy.
const CHECKING: usize = 8;

/// Postings (and withdrawals) for this node to store: from another member, acknowledged once
/// stored, or this node's own (`from` is `None`).
#[derive(Debug)]
pub struct PostingsInbound {
    pub batch: PostingBatch,
    pub from: Option<PeerId>,
    /// Send how many were stored (`None`: could not store now; the sender retries).
    pub reply: Option<oneshot::Sender<Option<u32>>>,
}

/// `/status`'s view of publishing and holding postings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PostingsStatus {
    /// The network's codebook (the first level of its ladder) and how many replicas each cell
    /// has.
    pub codebook: String,
    pub replicas: usize,
    /// The ladder's level questions ask at on the current ring (0: the shipped 256 cells; see
    /// [`crate::placement::ladder`]).
    #[serde(default)]
    pub level: usize,
    /// Cells of that level this node is an owner of on the current ring.
    pub cells_owned: usize,
    /// Cells each chunk this node indexes is posted to on the current ring (two, or three in a
    /// large network: [`crate::placement::cells_per_chunk`]).
    #[serde(default)]
    pub cells_per_chunk: usize,
    /// Postings and withdrawals acknowledged by their cells' owners.
    pub published: u64,
    /// Waiting to be sent, or sent and not acknowledged yet: the publish backlog.
    pub backlog: u64,
    /// The backlog's estimated bytes (bounded by [`crate::publishing::MAX_WAITING_BYTES`]).
    #[serde(default)]
    pub backlog_bytes: u64,
    /// Dropped because the backlog was full.
    pub dropped: u64,
    /// Received from other members and stored.
    pub received: u64,
    /// Received and refused (bad, a stranger's page, a cell this node does not own).
    pub refused: u64,
    /// Of those refused, pages of a host their publisher would own were a few members before
    /// it unknown to it (the rings disagree): refused without a strike.
    #[serde(default)]
    pub disputed: u64,
    /// Batches answered busy (the sender over its rate, or the store behind).
    pub busy: u64,
    /// Members holding a copy of each document this node indexes (`index.replicas`).
    pub doc_replicas: usize,
    /// Document copies received from other members and passed on to the store.
    pub replicas_received: u64,
    /// Document copies refused (bad, a stranger's page, an id this node does not own).
    pub replicas_refused: u64,
}

type PendingStore = BoxFuture<'static, (ResponseChannel<PostingReply>, u32, Option<u32>)>;

/// A received batch whose postings were checked on a blocking thread (content and signature,
/// see [`check_content`]); the membership's part is done back on the event loop.
pub(super) struct Checked {
    peer: PeerId,
    batch: PostingBatch,
    verdicts: Vec<Result<(PeerId, String), BadPosting>>,
    /// For a hand-over while more than one level is taken, each posting's cells at those levels
    /// ([`Ladder::cells_near`]): a holder of any of them may hand it on.
    near: Vec<Vec<u32>>,
    replica_verdicts: Vec<Result<(PeerId, String), BadReplica>>,
    channel: ResponseChannel<PostingReply>,
}

/// Who sent a batch being judged, and what the judging takes from the moment.
struct Sender {
    peer: PeerId,
    /// A hand-over: a former owner passing on what others signed.
    handover: bool,
    now: Instant,
    me: PeerId,
    /// A sender this near a host's owner on this node's ring disputes the owner, no offence.
    near: usize,
}

/// What a batch's checks came to: refusals (and the first reason), copies refused, disputed
/// owners, whether any refusal was an offence, whether this node's ring may lag the sender's.
#[derive(Debug, Default)]
struct Tally {
    refused: u32,
    replicas_refused: u64,
    disputed: u64,
    why: Option<String>,
    offence: bool,
    lagging: bool,
}

impl Tally {
    fn refuse(&mut self, why: Option<String>) {
        self.refused += 1;
        if let Some(why) = why {
            self.why.get_or_insert(why);
        }
    }
}

pub(super) struct State {
    /// This node's key: it signs the postings it publishes.
    key: libp2p::identity::Keypair,
    ladder: &'static Ladder,
    /// The embedding model's id; `None`: this node keeps no index, and holds no postings.
    model: Option<String>,
    publisher: Publisher,
    in_flight: HashMap<OutboundRequestId, Flight>,
    pub(super) replies: FuturesUnordered<PendingStore>,
    /// Received batches being checked (at most [`CHECKING`]).
    pub(super) checking: FuturesUnordered<BoxFuture<'static, Option<Checked>>>,
    inbound: mpsc::Sender<PostingsInbound>,
    rate: RateLimit,
    strikes: HashMap<PeerId, u32>,
    counts: PostingsStatus,
    /// The level asked at and the cells of it owned on the ring last counted, and that ring
    /// (the status is published after every event; the ring changes seldom).
    owned: Option<(Arc<Ring>, usize, usize)>,
}

impl State {
    pub(super) fn new(
        key: libp2p::identity::Keypair,
        model: Option<String>,
        replicas: usize,
        doc_replicas: usize,
        inbound: mpsc::Sender<PostingsInbound>,
    ) -> State {
        let ladder = crate::placement::shipped_ladder();
        State {
            key,
            ladder,
            model,
            publisher: Publisher::new(ladder, replicas, doc_replicas, MAX_WAITING, MAX_WAITING_BYTES),
            in_flight: HashMap::new(),
            replies: FuturesUnordered::new(),
            checking: FuturesUnordered::new(),
            inbound,
            rate: RateLimit::new(BATCHES_PER_SEC),
            strikes: HashMap::new(),
            counts: PostingsStatus {
                codebook: ladder.level(0).id().to_string(),
                replicas: replicas.max(1),
                doc_replicas,
                ..Default::default()
            },
            owned: None,
        }
    }

    /// When the outbox next has something to send.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.publisher.next_due()
    }

    pub(super) fn status(&mut self, ring: &Arc<Ring>, me: &PeerId) -> PostingsStatus {
        let replicas = self.counts.replicas;
        let (level, cells_owned) = match &self.owned {
            Some((counted, level, n)) if Arc::ptr_eq(counted, ring) => (*level, *n),
            _ => {
                let level = self.ladder.asked_level(ring.members().len(), replicas);
                let n = self
                    .ladder
                    .cells_of_levels(level..=level)
                    .filter(|c| self.ladder.owners(ring, *c, replicas).contains(me))
                    .count();
                self.owned = Some((ring.clone(), level, n));
                (level, n)
            }
        };
        PostingsStatus {
            level,
            cells_owned,
            cells_per_chunk: crate::placement::cells_per_chunk(
                ring.members().len(),
                self.ladder.level(level).len(),
                replicas,
            ),
            published: self.publisher.delivered,
            backlog: self.publisher.waiting() as u64,
            backlog_bytes: self.publisher.waiting_bytes() as u64,
            dropped: self.publisher.dropped,
            ..self.counts.clone()
        }
    }
}

impl EventLoop {
    /// Queues this node's postings, withdrawals and document copies; what this node owns itself
    /// goes to its store at once.
    pub(super) fn publish_postings(
        &mut self,
        mut postings: Vec<Posting>,
        withdrawals: Vec<Withdrawal>,
        mut replicas: Vec<Replica>,
    ) {
        let me = *self.swarm.local_peer_id();
        for p in &mut postings {
            p.sign(&self.postings.key);
        }
        for r in &mut replicas {
            r.sign(&self.postings.key);
        }
        let mine = self.postings.publisher.publish(postings, withdrawals, replicas, self.members.ring(), &me);
        if !mine.is_empty() {
            let _ = self.postings.inbound.try_send(PostingsInbound { batch: mine, from: None, reply: None });
        }
        self.flush_postings();
    }

    /// Queues postings this node holds for a cell to `owner`, one of the cell's new owners.
    pub(super) fn hand_over_postings(&mut self, owner: PeerId, postings: Vec<Posting>) {
        self.postings.publisher.hand_over(owner, postings);
        self.flush_postings();
    }

    /// Queues document copies this node holds (or published) to `owner`, which owns their ids
    /// now and may lack them.
    pub(super) fn hand_over_replicas(&mut self, owner: PeerId, mut replicas: Vec<Replica>) {
        for r in replicas.iter_mut().filter(|r| r.signature.is_empty()) {
            r.sign(&self.postings.key);
        }
        self.postings.publisher.hand_over_replicas(owner, replicas);
        self.flush_postings();
    }

    /// Signs a copy of a document this node published (as `/weft/doc/1` serves it).
    pub(super) fn sign_replica(&self, replica: &mut Replica) {
        replica.sign(&self.postings.key);
    }

    /// Sends the posting batches that are due.
    pub(super) fn flush_postings(&mut self) {
        let me = *self.swarm.local_peer_id();
        let due = self.postings.publisher.due(self.members.ring(), &me, Instant::now());
        for f in due {
            let id = self.swarm.behaviour_mut().postings.send_request(&f.owner, Frame::Request(f.batch.clone()));
            self.postings.in_flight.insert(id, f);
        }
    }

    pub(super) fn on_postings(&mut self, event: request_response::Event<Frame<PostingBatch>, PostingReply>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request { request: Frame::Request(batch), channel, .. } => {
                    self.on_posting_batch(peer, batch, channel)
                }
                request_response::Message::Request { request: Frame::Refused(why), channel, .. } => {
                    self.postings.counts.refused += 1;
                    drop(channel);
                    self.refused(peer, &why);
                }
                request_response::Message::Response { request_id, response } => {
                    let Some(f) = self.postings.in_flight.remove(&request_id) else { return };
                    let now = Instant::now();
                    match response {
                        PostingReply::Ack { .. } => self.postings.publisher.acked(f),
                        PostingReply::Busy => self.postings.publisher.later(f, BUSY_DELAY, now),
                        PostingReply::NotMember => self.postings.publisher.later(f, BUSY_DELAY, now),
                    }
                }
            },
            request_response::Event::OutboundFailure { request_id, error, peer, .. } => {
                if let Some(f) = self.postings.in_flight.remove(&request_id) {
                    tracing::debug!(%peer, "posting batch not delivered ({error}); retrying");
                    self.postings.publisher.failed(f, Instant::now());
                }
            }
            _ => {}
        }
    }

    fn on_posting_batch(&mut self, peer: PeerId, batch: PostingBatch, channel: ResponseChannel<PostingReply>) {
        let now = Instant::now();
        if !self.members.knows(&peer, now) {
            return self.respond(channel, PostingReply::NotMember);
        }
        let Some(model) = self.postings.model.clone() else { return self.respond(channel, PostingReply::Busy) };
        if !self.postings.rate.allow(&peer.to_string(), now) {
            self.postings.counts.busy += 1;
            return self.respond(channel, PostingReply::Busy);
        }
        if batch.len() > crate::postings::MAX_BATCH_ITEMS {
            self.postings.counts.refused += batch.len() as u64;
            drop(channel);
            self.ban(peer, "a posting batch over the item limit");
            return;
        }
        if self.postings.checking.len() >= CHECKING {
            self.postings.counts.busy += 1;
            return self.respond(channel, PostingReply::Busy);
        }
        let ladder = self.postings.ladder;
        let levels = ladder.accepted_levels(self.members.ring().members().len(), self.postings.counts.replicas);
        self.postings.checking.push(Box::pin(async move {
            let checked = tokio::task::spawn_blocking(move || {
                let verdicts: Vec<_> =
                    batch.postings.iter().map(|p| check_content(p, ladder, levels.clone(), &model)).collect();
                // A handed-over posting may come from another level this node takes: the
                // network climbed, and a holder of the chunk at that level placed it anew
                // (`Ladder::placer`: that level was posted at by a member counting within the
                // margin, so this node takes it). At one level, as nearly always, there is none.
                let near: Vec<Vec<u32>> = match batch.handover && levels.start() != levels.end() {
                    true => batch.postings.iter().map(|p| ladder.cells_near(&p.vector(), levels.clone())).collect(),
                    false => Vec::new(),
                };
                let replica_verdicts = batch.replicas.iter().map(replicas::check_content).collect();
                (batch, verdicts, near, replica_verdicts)
            });
            // A panic in a check drops the request: its sender retries, and is not believed.
            let (batch, verdicts, near, replica_verdicts) = checked.await.ok()?;
            Some(Checked { peer, batch, verdicts, near, replica_verdicts, channel })
        }));
    }

    /// A received batch's postings were checked: the publishers' right to their hosts (or the
    /// sender's to the cells it hands over) is decided here, then what passed goes to the
    /// node's store and the sender hears how much was taken.
    pub(super) fn on_posting_checked(&mut self, checked: Checked) {
        let Checked { peer, batch, verdicts, near: near_cells, replica_verdicts, channel } = checked;
        if self.conduct.is_banned(&peer) {
            return; // banned while its batch was being checked
        }
        let from = Sender {
            peer,
            handover: batch.handover,
            now: Instant::now(),
            me: *self.swarm.local_peer_id(),
            near: disputed_owners(self.members.peers().len()),
        };
        let total = batch.len() as u32;
        let mut tally = Tally::default();
        let kept = PostingBatch {
            postings: self.postings_kept(&from, batch.postings, verdicts, &near_cells, &mut tally),
            tombstones: self.tombstones_kept(&from, batch.tombstones, &mut tally),
            replicas: self.replicas_kept(&from, batch.replicas, replica_verdicts, &mut tally),
            // What is kept is this node's now, whoever handed it on.
            handover: false,
        };
        self.settle(peer, channel, kept, tally, total);
    }

    /// A refusal for a host `from` does not own on this node's ring: `lagging` when its owner
    /// here is silent, a dispute when `from` stands near the owner, else an offence.
    fn judge_not_owner(&self, from: &Sender, host: &str, tally: &mut Tally) {
        let (silent, near_owner) = self.not_owner(&from.peer, host, from.handover, from.near);
        tally.lagging |= silent;
        if near_owner {
            tally.disputed += 1;
        } else {
            tally.offence = true;
        }
    }

    /// The postings of a batch this node keeps: a publisher speaks for the pages of its hosts,
    /// and sends its postings itself; a cell's former owner, handing the cell over, passes on
    /// the postings of its cells as their publishers signed them.
    fn postings_kept(
        &self,
        from: &Sender,
        postings: Vec<Posting>,
        verdicts: Vec<Result<(PeerId, String), BadPosting>>,
        near_cells: &[Vec<u32>],
        tally: &mut Tally,
    ) -> Vec<Posting> {
        let (ladder, replicas) = (self.postings.ladder, self.postings.counts.replicas);
        let (peer, now) = (&from.peer, from.now);
        let cell_held = |cell: u32| {
            ladder.point(cell).is_some_and(|point| self.members.owned_point_recently(peer, point, replicas, now))
        };
        let mut kept = Vec::with_capacity(postings.len());
        for (i, (p, verdict)) in postings.into_iter().zip(verdicts).enumerate() {
            let owned = |publisher: &PeerId, host: &str| {
                let own_host = || self.members.owned_recently(peer, host, now);
                if from.handover {
                    // Its own postings it hands on only for hosts it owned, as it publishes.
                    let held = || near_cells.get(i).is_some_and(|cells| cells.iter().any(|c| cell_held(*c)));
                    (cell_held(p.cell) || held()) && (publisher != peer || own_host())
                } else {
                    publisher == peer && own_host()
                }
            };
            let verdict =
                verdict.and_then(
                    |(publisher, host)| {
                        if owned(&publisher, &host) {
                            Ok(())
                        } else {
                            Err(BadPosting::NotOwner(host))
                        }
                    },
                );
            match &verdict {
                Err(BadPosting::NotOwner(host)) => self.judge_not_owner(from, host, tally),
                // The sender counts the network across a level's step from this node: no offence.
                Err(BadPosting::OtherLevel(..)) => {}
                Err(_) => tally.offence = true,
                Ok(()) => {}
            }
            if let Err(e) = verdict {
                tally.refuse(Some(e.to_string()));
                continue;
            }
            // A cell this node does not hold (the sender's ring is another): not an offence,
            // not kept. One owner more than the replicas is tolerated while rings settle.
            if !ladder.owners(self.members.ring(), p.cell, replicas + 1).contains(&from.me) {
                tally.refuse(None);
                continue;
            }
            kept.push(p);
        }
        kept
    }

    /// The withdrawals of a batch this node keeps: only for the sender's own hosts.
    fn tombstones_kept(&self, from: &Sender, tombstones: Vec<Tombstone>, tally: &mut Tally) -> Vec<Tombstone> {
        let mut kept = Vec::with_capacity(tombstones.len());
        for t in tombstones {
            if let Err(e) = check_tombstone(&t, |host| self.members.owned_recently(&from.peer, host, from.now)) {
                match &e {
                    BadPosting::NotOwner(host)
                        if !from.handover && self.members.near_owner(&from.peer, host, from.near) =>
                    {
                        tally.disputed += 1
                    }
                    _ => tally.offence = true,
                }
                tally.refuse(Some(e.to_string()));
                continue;
            }
            kept.push(t);
        }
        kept
    }

    /// The document copies of a batch this node keeps. As for postings: a publisher sends
    /// copies of its hosts' pages itself; a holder of the document's id (or its publisher, for
    /// its hosts) hands them on as signed.
    fn replicas_kept(
        &self,
        from: &Sender,
        copies: Vec<Replica>,
        verdicts: Vec<Result<(PeerId, String), BadReplica>>,
        tally: &mut Tally,
    ) -> Vec<Replica> {
        let doc_replicas = self.postings.counts.doc_replicas;
        let (peer, now) = (&from.peer, from.now);
        let mut kept = Vec::with_capacity(copies.len());
        for (r, verdict) in copies.into_iter().zip(verdicts) {
            let point = replicas::doc_point(&r.doc).unwrap_or(0);
            let verdict = verdict.and_then(|(publisher, host)| {
                let own_host = self.members.owned_recently(peer, &host, now);
                let allowed = if from.handover {
                    // A holder passes on what a publisher signed; its own pages only for the
                    // hosts it owned, as it publishes them.
                    let held = self.members.owned_point_recently(peer, point, doc_replicas + 1, now);
                    (held && publisher != *peer) || (publisher == *peer && own_host)
                } else {
                    publisher == *peer && own_host
                };
                if allowed {
                    Ok(())
                } else {
                    Err(BadReplica::NotOwner(host))
                }
            });
            match &verdict {
                Err(BadReplica::NotOwner(host)) => self.judge_not_owner(from, host, tally),
                Err(_) => tally.offence = true,
                Ok(()) => {}
            }
            if let Err(e) = verdict {
                tally.replicas_refused += 1;
                tally.refuse(Some(e.to_string()));
                continue;
            }
            // An id this node does not own (the sender's ring is another): not an offence. The
            // holders are the id's first owners but its publisher, and one more is tolerated
            // while rings settle.
            if doc_replicas == 0
                || !replicas::doc_owners(self.members.ring(), &r.doc, doc_replicas + 2).contains(&from.me)
            {
                tally.replicas_refused += 1;
                tally.refuse(None);
                continue;
            }
            kept.push(r);
        }
        kept
    }

    /// Answers a checked batch: busy when this node's ring may lag the sender's (a page of a
    /// host whose owner here is a member gone silent: the owner died and its expiry comes
    /// later — refused, the batch would be lost), a strike toward a ban when the whole batch
    /// was an offence, else what is kept goes to the node and the answer waits for it.
    fn settle(
        &mut self,
        peer: PeerId,
        channel: ResponseChannel<PostingReply>,
        kept: PostingBatch,
        tally: Tally,
        total: u32,
    ) {
        let Tally { refused, replicas_refused, disputed, why, offence, lagging } = tally;
        if lagging {
            self.postings.counts.busy += 1;
            tracing::debug!(%peer, "a posting batch names a host whose owner here is silent: answered busy");
            return self.respond(channel, PostingReply::Busy);
        }
        self.postings.counts.replicas_received += kept.replicas.len() as u64;
        self.postings.counts.replicas_refused += replicas_refused;
        self.postings.counts.refused += u64::from(refused);
        self.postings.counts.disputed += disputed;
        if !kept.is_empty() {
            self.postings.strikes.remove(&peer);
        }
        if total > 0 && refused == total && why.is_some() && !offence {
            tracing::info!(%peer, disputed, "a posting batch refused: its pages' hosts are another's on this node's ring");
        }
        if total > 0 && refused == total && why.is_some() && offence {
            let strikes = self.postings.strikes.entry(peer).or_default();
            *strikes += 1;
            let why = why.unwrap_or_default();
            tracing::warn!(%peer, strikes = *strikes, "a posting batch refused whole: {why}");
            if *strikes >= MAX_STRIKES {
                self.ban(peer, &format!("repeated bad postings ({why})"));
                return;
            }
        }
        if kept.is_empty() {
            return self.respond(channel, PostingReply::Ack { taken: 0, refused });
        }
        let (tx, rx) = oneshot::channel();
        match self.postings.inbound.try_send(PostingsInbound { batch: kept, from: Some(peer), reply: Some(tx) }) {
            Ok(()) => self.postings.replies.push(Box::pin(async move { (channel, refused, rx.await.ok().flatten()) })),
            Err(_) => {
                self.postings.counts.busy += 1;
                self.respond(channel, PostingReply::Busy)
            }
        }
    }

    /// A page `sender` sent is of a host it does not own here: whether the host's owner here is
    /// silent (this node's ring may lag), and whether `sender` stands among its first `near`
    /// owners (the rings disagree: no offence). A hand-over is neither.
    fn not_owner(&self, sender: &PeerId, host: &str, handover: bool, near: usize) -> (bool, bool) {
        if handover {
            return (false, false);
        }
        (self.owner_silent(host, sender), self.members.near_owner(sender, host, near))
    }

    /// Whether `host`'s owner on this node's ring is a member other than `sender` this node
    /// could not reach lately: it may be gone, its death not yet in the roster.
    fn owner_silent(&self, host: &str, sender: &PeerId) -> bool {
        self.members.ring().owner(host).is_some_and(|o| o != sender && self.members.silent(o))
    }

    fn respond(&mut self, channel: ResponseChannel<PostingReply>, reply: PostingReply) {
        let _ = self.swarm.behaviour_mut().postings.send_response(channel, reply);
    }

    /// The node stored a received batch (or could not): the sender hears it now.
    pub(super) fn on_postings_stored(
        &mut self,
        channel: ResponseChannel<PostingReply>,
        refused: u32,
        taken: Option<u32>,
    ) {
        let reply = match taken {
            Some(taken) => {
                self.postings.counts.received += u64::from(taken);
                PostingReply::Ack { taken, refused }
            }
            None => {
                self.postings.counts.busy += 1;
                PostingReply::Busy
            }
        };
        let _ = self.swarm.behaviour_mut().postings.send_response(channel, reply);
    }
}
