//! Other members' `/weft/doc/1` requests answered, and this node comparing the copies it holds
//! with its co-holders' (anti-entropy: the rules are `weft_p2p::copy_sync`'s).
//!
//! Every `index.compare_copies_secs` (and a minute after the member set changes, once the
//! push repair has had its go) this node takes the next two of its co-holders — the members
//! that hold copies of some of the same ids — and asks each for its digests of what this node
//! should hold. Where a bucket differs it lists the bucket, and asks for the copies it lacks or
//! holds an older fetch of; the co-holder sends them as a hand-over, and they arrive like any
//! other copy (checked, signed, counted against their publisher's quota). Bounded both ways: a
//! co-holder answers one comparison request a second per peer and sends at most
//! [`MAX_SEND`] copies per request, and this node asks one co-holder for at most
//! [`MAX_PULL_PER_PEER`] copies a round; what is left comes next round (nothing is remembered:
//! a round cut short by a restart resumes by running again).

use crate::blocking::{bounded, STORE_BOUND};
use crate::replicas::{look_up, Repairs};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_index::cells::CellStore;
use weft_index::{DocId, DocState, IndexError, LocalIndex};
use weft_p2p::copy_sync::{self, Holdings, MAX_SEND};
use weft_p2p::doc_wire::{DocReply, DocRequest};
use weft_p2p::{DocInbound, NetworkHandle, PeerId};

/// Co-holders compared with per round (in turn: all of them come round).
const PEERS_PER_ROUND: usize = 2;
/// A round after the member set changes waits this long first: the push repair goes first.
const AFTER_CHANGE: Duration = Duration::from_secs(60);
/// How long one read of the holdings answers co-holders' requests before it is read again.
const HOLDINGS_FRESH: Duration = Duration::from_secs(30);
/// Copies one round asks one co-holder for, at most.
pub const MAX_PULL_PER_PEER: usize = 4 * MAX_SEND;
/// Past this many postings and copies waiting to be sent, a request to send more is answered
/// busy (the asker asks again next round).
const SEND_BACKLOG: u64 = 2_000;
/// Between two requests to one co-holder (it answers one a second, bursts of two).
const PACE: Duration = Duration::from_millis(1_100);

/// What this node holds, as a co-holder compares it: its own indexed documents and the copies
/// it keeps for others. Blocking.
pub fn holdings_of(index: &LocalIndex, cells: &CellStore, me: PeerId) -> Result<Holdings, IndexError> {
    let mut held = Vec::new();
    for entry in index.store().docs_after(None) {
        let (id, record) = entry?;
        if record.state == DocState::Indexed {
            held.push((id.hex(), record.fetched_at, me));
        }
    }
    for (id, head) in cells.replicas().heads()? {
        if let Ok(publisher) = head.publisher.parse() {
            held.push((id.hex(), head.fetched_at, publisher));
        }
    }
    Ok(Holdings::new(held))
}

/// What one comparison with a co-holder found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compared {
    /// Buckets whose digests differed.
    pub buckets: usize,
    /// Copies this node lacked (or held older) and asked for.
    pub asked: usize,
    /// Of those, the ones the co-holder said it is sending.
    pub sending: usize,
}

/// See the module doc.
pub struct CopySync {
    index: Arc<LocalIndex>,
    cells: Arc<CellStore>,
    network: NetworkHandle,
    /// Holders of each document (`index.replicas`).
    r: usize,
    cached: tokio::sync::Mutex<Option<(Instant, Arc<Holdings>)>>,
    tally: Arc<Repairs>,
}

impl CopySync {
    pub fn new(
        index: Arc<LocalIndex>,
        cells: Arc<CellStore>,
        network: NetworkHandle,
        r: usize,
        tally: Arc<Repairs>,
    ) -> Arc<CopySync> {
        Arc::new(CopySync { index, cells, network, r, cached: tokio::sync::Mutex::new(None), tally })
    }

    /// The holdings, read again when `fresh` or when the last read is older than
    /// [`HOLDINGS_FRESH`].
    async fn holdings(&self, fresh: bool) -> Option<Arc<Holdings>> {
        let mut cached = self.cached.lock().await;
        if let Some((at, h)) = cached.as_ref() {
            if !fresh && at.elapsed() < HOLDINGS_FRESH {
                return Some(h.clone());
            }
        }
        let (index, cells, me) = (self.index.clone(), self.cells.clone(), self.network.peer_id());
        let h = Arc::new(
            bounded("reading the copies held", STORE_BOUND * 4, move || holdings_of(&index, &cells, me)).await?,
        );
        *cached = Some((Instant::now(), h.clone()));
        Some(h)
    }

    /// Answers a co-holder's comparison request (a read is [`serve`]'s).
    pub async fn answer(&self, from: PeerId, ask: DocRequest) -> DocReply {
        let ring = self.network.ring();
        let Some(held) = self.holdings(false).await else { return DocReply::Busy };
        match ask {
            DocRequest::Digests => DocReply::Digests(held.digests(&ring, self.r, &from)),
            DocRequest::List { bucket, after } => {
                DocReply::Listed(held.list(&ring, self.r, &from, bucket, after.as_deref()))
            }
            DocRequest::Send { docs } => {
                if self.network.status().postings.backlog > SEND_BACKLOG {
                    return DocReply::Busy;
                }
                let docs = held.sendable(&ring, self.r, &from, &docs);
                let (index, cells) = (self.index.clone(), self.cells.clone());
                let load = move || -> Result<Vec<weft_p2p::replicas::Replica>, IndexError> {
                    let mut copies = Vec::with_capacity(docs.len());
                    for doc in &docs {
                        copies.extend(look_up(&index, &cells, doc)?);
                    }
                    Ok(copies)
                };
                let Some(copies) = bounded("copies a co-holder asked for", STORE_BOUND, load).await else {
                    return DocReply::Busy;
                };
                let n = copies.len() as u32;
                self.tally.update(|t| t.copies_sent_on_request += u64::from(n));
                if n > 0 {
                    tracing::debug!(%from, copies = n, "sending the copies a co-holder lacks");
                    self.network.hand_over_replicas(from, copies);
                }
                DocReply::Sending(n)
            }
            DocRequest::Read { .. } => DocReply::Busy,
        }
    }

    /// Compares what this node holds with co-holder `peer` and asks for what it lacks, but for
    /// the ids in `asked` (asked of another co-holder this round: on their way); adds what it
    /// asks for to them.
    pub async fn compare_with(
        &self,
        peer: PeerId,
        asked: &mut std::collections::HashSet<String>,
    ) -> Result<Compared, String> {
        let me = self.network.peer_id();
        let mut out = Compared::default();
        let theirs = match self.network.ask_documents(peer, DocRequest::Digests).await? {
            DocReply::Digests(d) => d,
            DocReply::Busy => return Err("busy".into()),
            other => return Err(format!("answered {other:?} to digests")),
        };
        copy_sync::check_digests(&theirs).map_err(|e| e.to_string())?;
        let held = self.holdings(true).await.ok_or("the stores did not answer")?;
        let ring = self.network.ring();
        let buckets = copy_sync::differing(&held.digests(&ring, self.r, &me), &theirs);
        out.buckets = buckets.len();
        let fetched = held.fetched();
        let mut want: Vec<String> = Vec::new();
        'buckets: for bucket in buckets {
            let mut after: Option<String> = None;
            loop {
                tokio::time::sleep(PACE).await;
                let ask = DocRequest::List { bucket, after: after.clone() };
                let page = match self.network.ask_documents(peer, ask).await? {
                    DocReply::Listed(page) => page,
                    DocReply::Busy => break 'buckets,
                    other => return Err(format!("answered {other:?} to a listing")),
                };
                copy_sync::check_listed(bucket, after.as_deref(), &page).map_err(|e| e.to_string())?;
                // Not what this node's store refused lately (for its bound or the publisher's
                // quota): asked for again, it would be refused again, every round.
                let refused = |(doc, at): &(String, u64)| {
                    DocId::parse_hex(doc).is_ok_and(|id| self.cells.replicas().was_refused(&id, *at))
                };
                let entries: Vec<(String, u64)> =
                    page.entries.iter().filter(|e| !refused(e) && !asked.contains(&e.0)).cloned().collect();
                want.extend(copy_sync::wanted(&fetched, &entries));
                if want.len() >= MAX_PULL_PER_PEER {
                    want.truncate(MAX_PULL_PER_PEER);
                    break 'buckets;
                }
                match page.entries.last() {
                    Some((last, _)) if page.more => after = Some(last.clone()),
                    _ => break,
                }
            }
        }
        out.asked = want.len();
        asked.extend(want.iter().cloned());
        self.tally.update(|t| {
            t.compared_with += 1;
            t.buckets_differing += out.buckets as u64;
            t.copies_asked += out.asked as u64;
        });
        for docs in want.chunks(MAX_SEND) {
            tokio::time::sleep(PACE).await;
            match self.network.ask_documents(peer, DocRequest::Send { docs: docs.to_vec() }).await? {
                DocReply::Sending(n) => out.sending += (n as usize).min(docs.len()),
                DocReply::Busy => break,
                other => return Err(format!("answered {other:?} to a request to send")),
            }
        }
        Ok(out)
    }

    /// Compares with two co-holders in turn every `every`, and a minute after each change of
    /// the member set. Runs until the network stops.
    pub async fn run(self: Arc<Self>, every: Duration) {
        let me = self.network.peer_id();
        let mut rings = self.network.ring_changes();
        rings.borrow_and_update();
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut turn = 0usize;
        // A round due a while after the last change of the member set (each change puts it
        // off: while members come and go, the push repair is still moving copies).
        let mut after_change: Option<tokio::time::Instant> = None;
        loop {
            let due = after_change.unwrap_or_else(|| tokio::time::Instant::now() + every);
            tokio::select! {
                _ = tick.tick() => {}
                changed = rings.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    rings.borrow_and_update();
                    after_change = Some(tokio::time::Instant::now() + AFTER_CHANGE);
                    continue;
                }
                _ = tokio::time::sleep_until(due), if after_change.is_some() => after_change = None,
            }
            let co = self.network.ring().co_owners(&me, self.r + 1);
            if co.is_empty() {
                continue;
            }
            let started = Instant::now();
            let mut asked = std::collections::HashSet::new();
            for k in 0..PEERS_PER_ROUND.min(co.len()) {
                let peer = co[(turn + k) % co.len()];
                match self.compare_with(peer, &mut asked).await {
                    Ok(c) => {
                        if c.asked > 0 {
                            tracing::info!(%peer, buckets = c.buckets, asked = c.asked, sending = c.sending, "asked a co-holder for the copies this node lacks");
                        }
                    }
                    Err(e) => tracing::debug!(%peer, "comparing copies: {e}"),
                }
            }
            turn = (turn + PEERS_PER_ROUND) % co.len();
            self.tally.update(|t| {
                t.compare_rounds += 1;
                t.last_compare_ms = started.elapsed().as_millis() as u64;
            });
        }
    }
}

/// Answers other members' `/weft/doc/1` requests until the network stops: reads from the
/// local index (this node's own, signed by the network as it leaves), else from the copies
/// held; comparisons by `sync` (one at a time, beside the reads: a read never waits for a
/// comparison to read the holdings).
pub async fn serve(
    index: Arc<LocalIndex>,
    cells: Arc<CellStore>,
    sync: Option<Arc<CopySync>>,
    mut requests: tokio::sync::mpsc::Receiver<DocInbound>,
) {
    let (compare_tx, mut compare_rx) = tokio::sync::mpsc::channel::<DocInbound>(8);
    let comparing = sync.map(|sync| {
        tokio::spawn(async move {
            while let Some(DocInbound { from, ask, reply }) = compare_rx.recv().await {
                let _ = reply.send(sync.answer(from, ask).await);
            }
        })
    });
    while let Some(request) = requests.recv().await {
        let doc = match &request.ask {
            DocRequest::Read { doc } => doc.clone(),
            _ => {
                if comparing.is_none() {
                    let _ = request.reply.send(DocReply::Busy);
                } else if let Err(e) = compare_tx.try_send(request) {
                    let _ = e.into_inner().reply.send(DocReply::Busy);
                }
                continue;
            }
        };
        let (index, cells) = (index.clone(), cells.clone());
        let found = bounded("document read", STORE_BOUND, move || look_up(&index, &cells, &doc)).await.flatten();
        let _ = request.reply.send(found.map_or(DocReply::Missing, |r| DocReply::Found(Box::new(r))));
    }
    if let Some(task) = comparing {
        task.abort();
    }
}
