//! What the network tells `/status`: how joining stands ([`Joining`]) and everything the event
//! loop counts ([`NetworkStatus`]), published on a watch channel after each event.

use super::documents::DocsStatus;
use super::postings::PostingsStatus;
use super::querying::SearchStatus;
use super::roster::RosterStatus;
use super::EventLoop;
use crate::reachability::ReachabilityStatus;
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use weft_page::PeerName;

/// Where joining the network stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Joining {
    /// No bootstrap peers configured: this node is the first (others join through it).
    #[default]
    First,
    Connecting,
    /// Connected to at least one bootstrap peer.
    Joined,
    /// No bootstrap peer answered; dialling again after a backoff.
    Retrying {
        attempt: u32,
        next_in_secs: u64,
        last_error: String,
    },
}

/// `/status`'s view of the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct NetworkStatus {
    pub peer_id: PeerName,
    /// Full addresses, `/p2p/<peer id>` included: what another volunteer bootstraps from.
    pub listen_addrs: Vec<String>,
    pub connected_peers: usize,
    /// Members (the roster's), this node included once admitted, sorted by peer id.
    pub members: Vec<String>,
    /// This node's share of the ring's hash space (≈ of all hosts).
    pub ring_share: f64,
    /// The part of its full ring points this node holds: a newcomer to an older network
    /// starts at a quarter and grows to all of them (see [`crate::membership::ADMISSION_STEP`]);
    /// 0 until it is admitted.
    pub admitted: f64,
    pub joining: Joining,
    /// URLs other members acknowledged from this node.
    pub urls_sent: u64,
    /// URLs received for this node's hosts and queued (or already seen).
    pub urls_received: u64,
    /// URLs received for another member's hosts and passed on.
    pub urls_forwarded: u64,
    /// URLs received and dropped (bad scheme, too long, private address, hop limit).
    pub urls_rejected: u64,
    /// URLs waiting to be sent or retried.
    pub urls_waiting: u64,
    /// URLs sent and not yet acknowledged.
    pub urls_in_flight: u64,
    /// Batches refused outright (malformed, oversized, too many URLs); each bans its sender.
    pub batches_refused: u64,
    /// Batches answered `Busy` because their sender was over its rate.
    pub batches_rate_limited: u64,
    /// Bytes held now by requests (URL batches, search requests) still being read.
    pub requests_buffered_bytes: u64,
    /// Requests dropped while being read because those being read held their budget.
    pub requests_cut: u64,
    /// Batches answered `NotMember`: their sender is not a member here (a stranger, or a
    /// newcomer still in its probation, or one whose admission has not reached this node's
    /// roster yet; it retries).
    pub batches_not_member: u64,
    /// Page URLs taken from newcomers on their probation that this member will monitor (their
    /// users' seeds; see `crate::exchange::NewcomerAllowance`).
    #[serde(default)]
    pub urls_from_newcomers: u64,
    /// URLs sent as done by a peer that did not own their host, now or before the last
    /// membership changes: refused, so a peer cannot keep pages from being fetched.
    pub done_refused: u64,
    /// Second copies taken from the owners of the hosts this node is second holder of (URLs
    /// kept aside, and URLs done there), see `crate::exchange::UrlBatch::second`.
    #[serde(default)]
    pub second_copies_received: u64,
    pub banned_peers: usize,
    /// Peers refused for speaking another version of the protocol, with the version each
    /// announced (see `crate::versions`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other_versions: BTreeMap<String, String>,
    /// Near-duplicate lookups (one request to an owner of each of a fingerprint's four keys,
    /// see `crate::records`), and how many found one.
    pub dht_lookups: u64,
    pub dht_duplicates_found: u64,
    /// Fingerprints published (sent to the owners of their four keys).
    pub dht_published: u64,
    /// Record requests from other peers this node refused: malformed, forged, over the
    /// sender's rate, from a stranger, or for keys it does not own.
    pub dht_refused: u64,
    /// Near-duplicate records this node holds for the keys it owns.
    #[serde(default)]
    pub dht_records: u64,
    /// Record requests for other members this node handed on over the grid.
    #[serde(default)]
    pub dht_forwarded: u64,
    /// Latency of the recent lookups, milliseconds.
    pub dht_lookup_ms_p50: f64,
    pub dht_lookup_ms_p99: f64,
    pub search: SearchStatus,
    /// Semantic placement: cells owned, postings published, held and refused, the backlog.
    pub postings: PostingsStatus,
    /// Documents read from other members, and their reads answered.
    #[serde(default)]
    pub documents: DocsStatus,
    /// Public, behind NAT or relayed; what is advertised; direct and relayed peers.
    pub reachability: ReachabilityStatus,
    /// The roster the member set comes from: this node's stage in it, members, entries.
    #[serde(default)]
    pub roster: RosterStatus,
    /// The grid URL batches go over (see `crate::grid`); absent while they go straight (at
    /// [`crate::grid::FROM_MEMBERS`] members or fewer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<GridStatus>,
}

/// The grid's shape and this node's links on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GridStatus {
    pub dims: u32,
    pub side: u32,
    /// The members this node keeps connections to for the grid.
    pub links: usize,
}

/// Recent latencies (milliseconds) and their percentiles for the status.
///
/// The status is built after every event the loop handles — thousands a second on a busy
/// node — while latencies arrive a few times a second: the sorted copy is kept until the next
/// latency comes, rather than sorted again for each status.
#[derive(Debug, Default)]
pub(super) struct Latencies {
    recent: std::collections::VecDeque<f64>,
    sorted: std::cell::OnceCell<Vec<f64>>,
}

impl Latencies {
    /// How many recent latencies are kept.
    const KEPT: usize = 1000;

    pub(super) fn push(&mut self, ms: f64) {
        if self.recent.len() == Self::KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(ms);
        self.sorted = std::cell::OnceCell::new();
    }

    /// The `p` quantile of the recent latencies (0 when there are none).
    pub(super) fn quantile(&self, p: f64) -> f64 {
        let v = self.sorted.get_or_init(|| {
            let mut v: Vec<f64> = self.recent.iter().copied().collect();
            v.sort_by(f64::total_cmp);
            v
        });
        if v.is_empty() {
            return 0.0;
        }
        v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
    }
}

/// The parts of the status that cost most to build, kept until what they show changes. The
/// status is built after every event the loop handles, thousands a second on a busy node; at
/// fifty members, base58 of every member's id, the walk over the ring's points and the
/// reachability over every connection's address, rebuilt each time, are most of an idle node's
/// event loop.
#[derive(Debug, Default)]
pub(super) struct Shown {
    ring: Option<u64>,
    members: Vec<String>,
    share: f64,
    admitted: f64,
    /// The reachability's generation (listen addresses change through it too) and the relay's
    /// counts.
    reach: Option<(u64, usize, usize, u64)>,
    reachability: ReachabilityStatus,
    listen: Vec<String>,
}

impl EventLoop {
    /// Brings [`Shown`] up to date with what changed since the last status.
    fn update_shown(&mut self) {
        let local = *self.swarm.local_peer_id();
        let shown = &mut self.shown;
        if shown.ring != Some(self.members.generation()) {
            shown.ring = Some(self.members.generation());
            shown.members = self.members.peers().iter().map(PeerId::to_string).collect();
            shown.share = self.members.ring().share(&local);
            shown.admitted = self.members.points_of(&local) as f64 / self.members.ring().vnodes().max(1) as f64;
        }
        let served = &self.relaying.served;
        let reach = (self.reach.generation(), served.reservations.len(), served.circuits, served.circuits_served);
        if shown.reach != Some(reach) {
            shown.reach = Some(reach);
            shown.reachability = self.reach.status(reach.1, reach.2, reach.3);
            shown.listen =
                self.listen.iter().map(|a| a.clone().with_p2p(local).unwrap_or_else(|a| a).to_string()).collect();
        }
    }

    pub(super) fn publish_status(&mut self) {
        let local = *self.swarm.local_peer_id();
        self.update_shown();
        let shown = &self.shown;
        let search = self.querying.status();
        let status = NetworkStatus {
            peer_id: PeerName::from(local.to_string()),
            listen_addrs: shown.listen.clone(),
            connected_peers: self.connected.len(),
            members: shown.members.clone(),
            ring_share: shown.share,
            admitted: shown.admitted,
            joining: self.bootstrap.joining().clone(),
            urls_sent: self.urls.counts.sent,
            urls_received: self.urls.counts.received,
            urls_forwarded: self.urls.counts.forwarded,
            urls_rejected: self.urls.counts.rejected,
            urls_waiting: self.urls.outbox.waiting() as u64,
            urls_in_flight: self.urls.in_flight.values().map(|f| f.batch.urls.len() as u64).sum(),
            batches_refused: self.urls.counts.refused,
            batches_rate_limited: self.urls.counts.rate_limited,
            batches_not_member: self.urls.counts.not_member,
            urls_from_newcomers: self.urls.counts.from_newcomers,
            second_copies_received: self.urls.counts.second_copies,
            requests_buffered_bytes: self.budgets.all().iter().map(|b| b.held()).sum(),
            requests_cut: self.budgets.all().iter().map(|b| b.cut()).sum(),
            done_refused: self.urls.counts.done_refused,
            banned_peers: self.conduct.banned_count(),
            other_versions: self.conduct.other_versions().status(),
            dht_lookups: self.dht.counts.lookups,
            dht_duplicates_found: self.dht.counts.found,
            dht_published: self.dht.counts.published,
            dht_refused: self.dht.counts.refused,
            dht_records: self.dht.held() as u64,
            dht_forwarded: self.dht.counts.forwarded,
            dht_lookup_ms_p50: self.dht.latencies.quantile(0.5),
            dht_lookup_ms_p99: self.dht.latencies.quantile(0.99),
            search,
            postings: self.postings.status(&self.ring.borrow().clone(), &local),
            documents: self.documents.counts.clone(),
            roster: self.roster.status(),
            reachability: shown.reachability.clone(),
            grid: self.overlay.shape().map(|s| GridStatus {
                dims: s.dims,
                side: s.side,
                links: self.overlay.neighbours().len(),
            }),
        };
        self.status.send_if_modified(|s| {
            if *s == status {
                false
            } else {
                *s = status;
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::Latencies;

    #[test]
    fn quantiles_follow_the_latencies_pushed_after_they_were_read() {
        let mut l = Latencies::default();
        assert_eq!(l.quantile(0.5), 0.0);
        for ms in [30.0, 10.0, 20.0] {
            l.push(ms);
        }
        assert_eq!(l.quantile(0.5), 20.0);
        assert_eq!(l.quantile(0.99), 30.0);
        // Read, then pushed: the kept sorted copy must not answer for the new ones.
        l.push(100.0);
        l.push(90.0);
        assert_eq!(l.quantile(0.99), 100.0);
        assert_eq!(l.quantile(0.5), 30.0);
        for _ in 0..2000 {
            l.push(1.0);
        }
        assert_eq!(l.quantile(0.99), 1.0, "only the last thousand are kept");
    }
}
