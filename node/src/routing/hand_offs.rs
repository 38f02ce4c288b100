//! Hosts changing hands when the member set changes: this node's queued and done URLs of the
//! hosts it no longer owns go to their new owners ([`hand_off_on_changes`]), and the hosts it
//! gains wait for their previous owners' hand-over ([`Handover`]) before they are crawled here.

use super::{owner, wire, Journal};
use crate::second_copies::holds_second;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_crawl::Crawler;
use weft_frontier::SecondCopy;
use weft_p2p::{NetworkHandle, PeerId, WireUrl};
use weft_url::HostKey;

/// Hands the hosts `keep` rejects to their owners: the queued URLs, and the URLs this node is
/// done with (so the new owners do not fetch them again), journaled before they leave the
/// frontier and sent at once. The queued URLs of the hosts `second_here` picks (this node is
/// their new owner's second holder) are also kept here as second copies: until the new owner's
/// own notes arrive, this node's copy is the only other one, and a new owner that crashed
/// before it sent them would otherwise take the queue with it. Returns how many queued URLs
/// went.
pub(super) async fn give_away(
    crawler: &Crawler,
    network: &NetworkHandle,
    journal: &Journal,
    keep: impl FnMut(&str) -> bool,
    second_here: impl Fn(&str) -> bool,
    joined: Vec<PeerId>,
) -> usize {
    let to_wire = |given: &weft_frontier::HandOff| -> Vec<WireUrl> {
        // Hosts that asked this node to back off: their new owners wait as long.
        let now = weft_clock::now_secs();
        let waits: HashMap<&str, u64> =
            given.waits.iter().map(|(host, wait)| (host.as_str(), now + wait.as_secs_f64().ceil() as u64)).collect();
        let wait_of = |url: &str| {
            let host = url::Url::parse(url).ok().map(|u| HostKey::of(&u).into_string())?;
            waits.get(host.as_str()).copied()
        };
        let done = given.done.iter().map(|url| {
            let wait = if waits.is_empty() { None } else { wait_of(url) };
            WireUrl::new(url.clone(), 0, weft_p2p::UrlKind::Done).with_host_wait(wait)
        });
        let queued = given.queued.iter().map(|q| wire(q).with_host_wait(waits.get(q.host.as_str()).copied()));
        queued.chain(done).collect()
    };
    let mut urls = Vec::new();
    let given = crawler
        .hand_off(keep, |given| {
            urls = to_wire(given);
            journal.insert(&urls)
        })
        .await;
    // `urls` is what was journaled; a failed hand-off left everything queued and sends nothing
    // but the markers (the members that joined then wait out their bound).
    if given.is_empty() {
        urls.clear();
    }
    // Kept before the URLs go: the copy is here by the time the new owner has the queue.
    let kept: Vec<SecondCopy> = given
        .queued
        .iter()
        .filter(|q| second_here(&q.host))
        .map(|q| SecondCopy::Keep { host: q.host.clone(), url: q.url.clone(), depth: q.depth, kind: q.kind })
        .collect();
    // Refused (logged by the crawler) or a storage fault (which stops the node): the new
    // owner's notes still come.
    if !kept.is_empty() && crawler.keep_second_copies(kept).await.unwrap_or(false) {
        tracing::debug!("kept the hand-over as the new owners' second holder");
    }
    network.hand_off(urls, joined);
    given.queued.len()
}

/// Whenever the member set changes, moves the queued and done URLs of hosts this node no longer
/// owns to their new owners, so that politeness and the robots.txt cache of a host stay on one
/// node, and holds back the hosts it gained for `grace`. A fetch in flight finishes here. Runs
/// until the network stops.
pub async fn hand_off_on_changes(
    crawler: Crawler,
    network: NetworkHandle,
    journal: Journal,
    handover: Handover,
    waits: HandoverWaits,
) {
    let HandoverWaits { grace, bound, renders } = waits;
    let me = network.peer_id();
    let mut rings = network.ring_changes();
    let mut previous = rings.borrow_and_update().clone();
    // The frontier was filled under an older ring (before a restart): the hosts it holds that
    // another member owns on the ring known now go to it at once. No change would show them
    // when the member set was already complete at this task's start, and two nodes would
    // crawl one host.
    let ring = previous.clone();
    let keep = |host: &str| owner(&ring, host).map(|o| *o == me).unwrap_or(true);
    let second_here = |host: &str| holds_second(&ring, host, &me);
    let urls = give_away(&crawler, &network, &journal, keep, second_here, Vec::new()).await;
    if urls > 0 {
        tracing::info!(urls, members = ring.members().len(), "handed hosts the restored queue held to their owners");
    }
    while rings.changed().await.is_ok() {
        let ring = rings.borrow_and_update().clone();
        if crawler.stopping() {
            // Leaving: `leave_early` and `leave` hand the hosts over, keeping those with a
            // request in flight until it ends; this would give those away at once.
            previous = ring;
            continue;
        }
        // This node is on the ring again, or for the first time (admitted after its probation,
        // or back after it was declared dead): the others learn it a few digest rounds later,
        // and until then go on crawling its hosts. Every host waits for the hand-over of the
        // member that held it, as at the start (bounded).
        if ring.contains(&me) && !previous.contains(&me) && !previous.members().is_empty() {
            handover.start(&me, &ring, grace, bound, &crawler);
        }
        // Hosts that became this node's: their previous owner may be asking them right now.
        let gained = |host: &str| {
            owner(&ring, host).is_some_and(|o| *o == me) && owner(&previous, host).is_some_and(|o| *o != me)
        };
        let held = crawler.hold_hosts(gained, grace);
        if held > 0 {
            tracing::debug!(hosts = held, "hosts gained from another member wait the hand-over grace");
        }
        // Members that just joined gained hosts from this node: they wait for its word.
        let joined: Vec<PeerId> =
            ring.members().iter().filter(|m| **m != me && !previous.contains(m)).copied().collect();
        previous = ring.clone();
        let mut given: HashSet<String> = HashSet::new();
        let keep = |host: &str| {
            let keep = owner(&ring, host).map(|o| *o == me).unwrap_or(true);
            if !keep {
                given.insert(host.to_string());
            }
            keep
        };
        let second_here = |host: &str| holds_second(&ring, host, &me);
        let urls = give_away(&crawler, &network, &journal, keep, second_here, Vec::new()).await;
        if !given.is_empty() {
            tracing::info!(
                urls,
                hosts = given.len(),
                members = ring.members().len(),
                "handed hosts to their new owners"
            );
        }
        tell_joined_after_renders(&crawler, &network, given, joined, renders);
    }
}

/// How long hosts gained wait: at least `grace` (their previous owner may be asking them), at
/// most `bound` for the previous owner's hand-over, and up to `renders` for this node's own
/// renders on hosts it gave away.
#[derive(Debug, Clone, Copy)]
pub struct HandoverWaits {
    pub grace: Duration,
    pub bound: Duration,
    pub renders: Duration,
}

/// Tells the members that joined that this node's hand-over is complete (their marker), once
/// the requests in flight and the browser's renders on hosts just given away have ended — for
/// at most `bound`. A joiner starts on its hosts when the marker arrives (and the grace has passed): a
/// render still running here would go on asking the host's scripts and styles after the joiner's
/// first request, closer than the host's delay. The URLs went out already; only
/// the word that they are complete waits.
fn tell_joined_after_renders(
    crawler: &Crawler,
    network: &NetworkHandle,
    given: HashSet<String>,
    joined: Vec<PeerId>,
    bound: Duration,
) {
    if joined.is_empty() {
        return;
    }
    let rendering_given = move |crawler: &Crawler| crawler.busy_hosts().iter().any(|h| given.contains(h));
    if !rendering_given(crawler) {
        network.hand_off(Vec::new(), joined);
        return;
    }
    let (crawler, network) = (crawler.clone(), network.clone());
    tokio::spawn(async move {
        let until = Instant::now() + bound;
        while rendering_given(&crawler) && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        network.hand_off(Vec::new(), joined);
    });
}

/// When this node (re)joins, the members that held its hosts meanwhile hand them over: what
/// they queued, and what they fetched. Until a member's hand-over (its marker, see
/// `UrlBatch::handoff`) has arrived, the hosts it held wait — or a page it fetched would be
/// fetched again from this node's queue, or from a link that got here first. Bounded: a member
/// that never answers delays its hosts by the bound, no more. Hosts are released no sooner
/// than the hand-over grace after the join (a member's last request may still be in flight).
#[derive(Clone, Default)]
pub struct Handover {
    /// Members whose marker arrived since the start (markers can come before the wait starts).
    arrived: Arc<Mutex<HashSet<PeerId>>>,
    waiting: Arc<Mutex<Option<Waiting>>>,
}

#[derive(Clone)]
struct Waiting {
    /// The ring as the others used it while this node was away.
    away: Arc<weft_p2p::Ring>,
    /// Members not heard from yet (also read under the frontier's lock: never held across a
    /// call into the crawler).
    pending: Arc<Mutex<HashSet<PeerId>>>,
    /// Hosts are released no sooner than this.
    not_before: Instant,
}

/// Does `host` belong to `member` on `ring`?
fn held_by(ring: &weft_p2p::Ring, host: &str, member: &PeerId) -> bool {
    owner(ring, host).is_some_and(|o| o == member)
}

impl Handover {
    /// Starts waiting for the hand-over of the other members of `ring` (this node is `me`):
    /// every host waits until the member that held it has handed it over, at most `bound`,
    /// and at least `grace`.
    pub fn start(&self, me: &PeerId, ring: &weft_p2p::Ring, grace: Duration, bound: Duration, crawler: &Crawler) {
        let now = Instant::now();
        let away = Arc::new(ring.without(me));
        let heard: HashSet<PeerId> = self.arrived.lock().clone();
        let pending: HashSet<PeerId> =
            ring.members().iter().filter(|m| *m != me && !heard.contains(*m)).copied().collect();
        let not_before = now + grace;
        crawler.hold_hosts(|_| true, bound.max(grace));
        crawler.release_hosts(|host| heard.iter().any(|m| held_by(&away, host, m)), not_before);
        if pending.is_empty() {
            crawler.release_hosts(|_| true, not_before);
            return;
        }
        tracing::info!(members = pending.len(), "waiting for the members' hand-over of this node's hosts");
        let pending = Arc::new(Mutex::new(pending));
        let (p, a) = (pending.clone(), away.clone());
        let filter: weft_frontier::HostFilter =
            Box::new(move |host: &str| owner(&a, host).is_some_and(|o| p.lock().contains(o)));
        crawler.hold_new_hosts(Some((now + bound.max(grace), filter)));
        *self.waiting.lock() = Some(Waiting { away, pending, not_before });
    }

    /// `peer`'s hand-over marker arrived (its URLs are queued): the hosts it held may go.
    pub fn arrived(&self, peer: PeerId, crawler: &Crawler) {
        self.arrived.lock().insert(peer);
        let Some(w) = self.waiting.lock().clone() else { return };
        if !w.pending.lock().remove(&peer) {
            return;
        }
        let released = crawler.release_hosts(|host| held_by(&w.away, host, &peer), w.not_before);
        tracing::debug!(%peer, hosts = released, "hand-over received");
        if w.pending.lock().is_empty() {
            crawler.hold_new_hosts(None);
            *self.waiting.lock() = None;
            tracing::info!("every member handed this node's hosts over");
        }
    }
}
