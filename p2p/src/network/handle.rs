//! How the node talks to the network task: the handle, its commands, what `start` returns.

use super::postings::PostingsInbound;
use super::querying::{NetworkAnswer, SearchInbound};
use super::status::NetworkStatus;
use crate::exchange::WireUrl;
use crate::postings::Posting;
use crate::records::DupEntry;
use crate::ring::Ring;
use crate::search::SearchRequest;
use libp2p::PeerId;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};

/// Requests to the network task besides URLs.
pub(super) enum Command {
    FindDuplicate {
        hash: u64,
        max_distance: u32,
        url: String,
        reply: std::sync::mpsc::SyncSender<Option<(DupEntry, u32)>>,
    },
    Publish {
        simhash: u64,
        url: String,
        time: u64,
    },
    Leave,
    /// Ask the owners of the query's best cells.
    Search {
        request: SearchRequest,
        fanout: usize,
        reply: oneshot::Sender<NetworkAnswer>,
    },
    /// Postings of chunks this node indexed, and withdrawals, for their cells' owners.
    PublishPostings {
        postings: Vec<Posting>,
        withdrawals: Vec<crate::publishing::Withdrawal>,
        replicas: Vec<crate::replicas::Replica>,
    },
    /// Ask `peer` a `/weft/doc/1` request (a read, or a step of comparing copies).
    AskDocument {
        peer: PeerId,
        ask: crate::doc_wire::DocRequest,
        reply: oneshot::Sender<Result<crate::doc_wire::DocReply, String>>,
    },
    /// Document copies this node holds (or published) for `to`, an owner of their ids.
    HandOverReplicas {
        to: PeerId,
        replicas: Vec<crate::replicas::Replica>,
    },
    /// Postings this node holds for cells `to` now owns too.
    HandOverPostings {
        to: PeerId,
        postings: Vec<Posting>,
    },
    /// Whether `peer` left with a signed Left (not a Dead: it crashed, or is still a member).
    LeftWithLastWord {
        peer: PeerId,
        reply: oneshot::Sender<bool>,
    },
    /// Second copies for `peer`, the second holder of their hosts.
    SendSecondCopies {
        peer: PeerId,
        urls: Vec<WireUrl>,
        reply: oneshot::Sender<bool>,
    },
}

/// URLs for this node to queue: from another member (with a reply to acknowledge them once
/// queued) or handed back by this node's own outbox after a ring change.
#[derive(Debug)]
pub struct Inbound {
    pub urls: Vec<WireUrl>,
    /// URLs of the same batch whose hosts other members own (the sender's ring was stale, or a
    /// newcomer's seeds taken by its would-be monitor): the node stores them durably (its
    /// outbox journal) before it replies, and the network sends them on once it has, reporting
    /// them acknowledged like the node's own. Acknowledged to the sender while only in memory,
    /// they were lost with a node killed before it reached their owner.
    pub forward: Vec<WireUrl>,
    pub from: Option<PeerId>,
    /// Send how many were queued; the sender's batch is acknowledged then.
    pub reply: Option<oneshot::Sender<u32>>,
    /// The sender's hand-over marker ([`crate::exchange::UrlBatch::handoff`]): with these
    /// URLs, it has said what it had for this node's hosts.
    pub handoff: bool,
    /// These are second copies from the owner of their hosts, for this node to keep aside
    /// ([`crate::exchange::UrlBatch::second`]), not to queue.
    pub second: bool,
}

/// Talks to the running network task.
#[derive(Clone)]
pub struct NetworkHandle {
    pub(super) peer_id: PeerId,
    pub(super) status: watch::Receiver<NetworkStatus>,
    pub(super) ring: watch::Receiver<Arc<Ring>>,
    pub(super) stop: Arc<watch::Sender<bool>>,
    pub(super) urls: mpsc::UnboundedSender<(Vec<WireUrl>, bool, Vec<PeerId>)>,
    pub(super) commands: mpsc::UnboundedSender<Command>,
    /// Members that own each cell (`search.replicas`).
    pub(super) cell_replicas: usize,
}

impl NetworkHandle {
    /// Sends `request` to at most `fanout` peers, the owners of its best cells on this node's
    /// ring (more only to replace peers that fail or stay silent), and returns what they
    /// answered by the deadline (`search.deadline_ms`).
    pub async fn search(&self, request: SearchRequest, fanout: usize) -> NetworkAnswer {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command::Search { request, fanout, reply }).is_err() {
            return NetworkAnswer { partial: true, ..Default::default() };
        }
        answer.await.unwrap_or(NetworkAnswer { partial: true, ..Default::default() })
    }

    pub fn peer_id(&self) -> PeerId {
        self.peer_id
    }

    pub fn status(&self) -> NetworkStatus {
        self.status.borrow().clone()
    }

    /// The estimated bytes waiting in the postings outbox (what a hand-over paces itself by:
    /// [`crate::publishing::HAND_OVER_ROOM`]), without copying the whole status.
    pub fn postings_backlog_bytes(&self) -> u64 {
        self.status.borrow().postings.backlog_bytes
    }

    /// The ring of the current member set.
    pub fn ring(&self) -> Arc<Ring> {
        self.ring.borrow().clone()
    }

    /// How many cells each chunk this node indexes is posted to now, at each level it is
    /// posted at: its best two, or three in a network where a cell's owners hold few cells each
    /// ([`crate::placement::cells_per_chunk`] of the current ring, at the level asked).
    pub fn cells_per_chunk(&self) -> usize {
        let members = self.ring.borrow().members().len();
        let ladder = crate::placement::shipped_ladder();
        let level = ladder.level(ladder.asked_level(members, self.cell_replicas));
        crate::placement::cells_per_chunk(members, level.len(), self.cell_replicas)
    }

    /// The levels of the codebook's ladder a chunk is posted at now
    /// ([`crate::placement::Ladder::posted_levels`] of the current ring): one, or two near a
    /// level's step.
    pub fn posted_levels(&self) -> std::ops::RangeInclusive<usize> {
        let members = self.ring.borrow().members().len();
        crate::placement::shipped_ladder().posted_levels(members, self.cell_replicas)
    }

    /// A receiver that sees every new ring (a member joined or left).
    pub fn ring_changes(&self) -> watch::Receiver<Arc<Ring>> {
        self.ring.clone()
    }

    /// Waits until `check` holds for the status (or the network stops).
    pub async fn wait_for(&self, mut check: impl FnMut(&NetworkStatus) -> bool) {
        let mut rx = self.status.clone();
        let _ = rx.wait_for(|s| check(s)).await;
    }

    /// Whether `peer` left the network with a last word (its signed Left is in this node's
    /// roster): it handed its hosts over as it went. False for a member that crashed (its
    /// death signed by its monitors), for one still a member, and for one this node never knew.
    pub async fn left_with_last_word(&self, peer: PeerId) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command::LeftWithLastWord { peer, reply }).is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// Sends second copies (notes about URLs of hosts this node owns) to `peer`, the hosts'
    /// second holder on this node's ring; true once it has them durably. Not retried: the
    /// caller keeps its notes until this says true.
    pub async fn send_second_copies(&self, peer: PeerId, urls: Vec<WireUrl>) -> bool {
        let (reply, answer) = oneshot::channel();
        if self.commands.send(Command::SendSecondCopies { peer, urls, reply }).is_err() {
            return false;
        }
        answer.await.unwrap_or(false)
    }

    /// Sends URLs of hosts other members own to them (batched, retried, re-routed). Call it
    /// with the URLs this node does not own on [`NetworkHandle::ring`].
    pub fn send_urls(&self, urls: Vec<WireUrl>) {
        if !urls.is_empty() {
            let _ = self.urls.send((urls, false, Vec::new()));
        }
    }

    /// Like [`NetworkHandle::send_urls`], without waiting to fill batches: for hosts changing
    /// hands, whose new owners should know at once what is queued and what is done. `joined`
    /// (members that just joined, and gained hosts from this node) get a hand-over marker with
    /// it, or alone when this node had nothing for them.
    pub fn hand_off(&self, urls: Vec<WireUrl>, joined: Vec<PeerId>) {
        if !urls.is_empty() || !joined.is_empty() {
            let _ = self.urls.send((urls, true, joined));
        }
    }

    /// Asks the DHT for an indexed document within `max_distance` bits of `hash` (other than
    /// `url`); blocking, for the indexing thread. `None` when there is none, or no answer within
    /// `timeout`.
    pub fn find_duplicate_blocking(
        &self,
        hash: u64,
        max_distance: u32,
        url: &str,
        timeout: Duration,
    ) -> Option<(DupEntry, u32)> {
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let command = Command::FindDuplicate { hash, max_distance, url: url.to_string(), reply };
        self.commands.send(command).ok()?;
        answer.recv_timeout(timeout).ok().flatten()
    }

    /// Publishes postings of chunks this node indexed to the owners of their cells (batched,
    /// acknowledged, retried; see [`crate::publishing`]), withdrawals of documents it
    /// replaced or dropped, and copies of its documents for the owners of their ids (signed
    /// here). The postings of cells this node owns, and the copies of ids it owns, come back on
    /// [`Started::postings`].
    pub fn publish_postings(
        &self,
        postings: Vec<Posting>,
        withdrawals: Vec<crate::publishing::Withdrawal>,
        replicas: Vec<crate::replicas::Replica>,
    ) {
        if !postings.is_empty() || !withdrawals.is_empty() || !replicas.is_empty() {
            let _ = self.commands.send(Command::PublishPostings { postings, withdrawals, replicas });
        }
    }

    /// Hands document copies to `to`, which owns their ids now (after a membership change) and
    /// may lack them; copies this node published go signed by it. Batched as a hand-over.
    pub fn hand_over_replicas(&self, to: PeerId, replicas: Vec<crate::replicas::Replica>) {
        if !replicas.is_empty() {
            let _ = self.commands.send(Command::HandOverReplicas { to, replicas });
        }
    }

    /// Hands postings this node holds for its cells to `to`, a new owner of those cells (after a
    /// membership change), in batches marked as a hand-over.
    pub fn hand_over_postings(&self, to: PeerId, postings: Vec<Posting>) {
        if !postings.is_empty() {
            let _ = self.commands.send(Command::HandOverPostings { to, postings });
        }
    }

    /// Publishes the fingerprint of a document this node indexed (`url`, fetched at `time`, Unix
    /// seconds) under its four block keys, signed by this node.
    pub fn publish_fingerprint(&self, simhash: u64, url: String, time: u64) {
        let _ = self.commands.send(Command::Publish { simhash, url, time });
    }

    /// Leaves the network for good: signs its departure and tells members at once (every
    /// roster has it within seconds, without waiting for monitors) and takes this node off its own ring, so every URL sent
    /// from now on — the node's handed-off queue, batches still arriving — goes to the new
    /// owners. Keep the network running until [`NetworkStatus::urls_waiting`] and
    /// [`NetworkStatus::urls_in_flight`] are zero, then [`NetworkHandle::stop`].
    pub fn leave(&self) {
        let _ = self.commands.send(Command::Leave);
    }

    /// Stops the network task.
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }
}

/// A started network: the handle, the task that owns the swarm, and the URLs for this node.
pub struct Started {
    pub handle: NetworkHandle,
    pub task: tokio::task::JoinHandle<()>,
    pub inbound: mpsc::Receiver<Inbound>,
    /// URLs their owner acknowledged: the node may forget them (see its outbox journal).
    pub acked: mpsc::UnboundedReceiver<Vec<String>>,
    /// Queries from other nodes for this node's index.
    pub queries: mpsc::Receiver<SearchInbound>,
    /// Postings for the cells this node owns, to store (see [`PostingsInbound`]).
    pub postings: mpsc::Receiver<PostingsInbound>,
    /// Other members' reads of documents, to look up (see [`super::DocInbound`]).
    pub documents: mpsc::Receiver<super::DocInbound>,
}
