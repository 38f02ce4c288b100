//! Where discovered URLs go in a network: to this node's frontier when it owns their host on
//! the ring, else to the owner through the URL exchange; and URLs other members send here go
//! into the frontier, acknowledged once they are durable.
//!
//! URLs on their way to another member are kept in the [`Journal`] (a sled tree) until their
//! owner acknowledges them, and sent again after a restart: a crash of the sending node repeats
//! a URL at worst, never loses it.

use crate::crawl::{Crawler, Route};
use crate::page::HeldCopy;
use crate::second_copies::holds_second;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_frontier::{Candidate, SecondCopy, UrlKind};
use weft_index::cells::CellStore;
use weft_p2p::{Inbound, NetworkHandle, PeerId, WireUrl};
use weft_url::{normalize_url, HostKey};

/// URLs sent to other members and not acknowledged yet: url → (depth, kind).
#[derive(Clone)]
pub struct Journal {
    tree: sled::Tree,
}

impl Journal {
    pub fn open(db: &sled::Db) -> Result<Journal, sled::Error> {
        Ok(Journal { tree: db.open_tree("p2p.outbox")? })
    }

    /// Records URLs about to be sent. Durable with the next flush of the database (the crawl
    /// flushes after every page, the handoff right away).
    pub fn insert(&self, urls: &[WireUrl]) -> Result<(), sled::Error> {
        let mut batch = sled::Batch::default();
        for u in urls {
            let kind = match u.kind {
                weft_p2p::UrlKind::Page => 0u8,
                weft_p2p::UrlKind::Sitemap => 1u8,
                weft_p2p::UrlKind::Done => 2u8,
            };
            let mut value = u.depth.to_be_bytes().to_vec();
            value.push(kind);
            // A hand-over's wait for the host, when it has one (entries written before it
            // existed end after the kind).
            if let Some(until) = u.host_wait_until {
                value.extend_from_slice(&until.to_be_bytes());
            }
            batch.insert(u.url.as_bytes(), value);
        }
        self.tree.apply_batch(batch)
    }

    /// Forgets URLs their owner (or this node) has queued.
    pub fn remove<'a>(&self, urls: impl IntoIterator<Item = &'a str>) {
        let mut batch = sled::Batch::default();
        for u in urls {
            batch.remove(u.as_bytes());
        }
        if let Err(e) = self.tree.apply_batch(batch) {
            tracing::error!("outbox journal: {e}");
        }
    }

    /// Everything still unacknowledged (sent again after a restart).
    pub fn all(&self) -> Vec<WireUrl> {
        self.tree
            .iter()
            .filter_map(Result::ok)
            .filter_map(|(k, v)| {
                let url = String::from_utf8(k.to_vec()).ok()?;
                let depth = u32::from_be_bytes(v.get(..4)?.try_into().ok()?);
                let kind = match v.get(4) {
                    Some(1) => weft_p2p::UrlKind::Sitemap,
                    Some(2) => weft_p2p::UrlKind::Done,
                    _ => weft_p2p::UrlKind::Page,
                };
                let wait = v.get(5..13).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes);
                Some(WireUrl::new(url, depth, kind).with_host_wait(wait))
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }
}

fn to_wire(kind: UrlKind) -> weft_p2p::UrlKind {
    match kind {
        UrlKind::Page => weft_p2p::UrlKind::Page,
        UrlKind::Sitemap => weft_p2p::UrlKind::Sitemap,
        // A revisit belongs to its host's owner, which decides for itself whether to fetch it.
        UrlKind::Revisit => weft_p2p::UrlKind::Page,
    }
}

/// The frontier's kind of a URL to queue; `None` for one the previous owner is done with.
fn from_wire(kind: weft_p2p::UrlKind) -> Option<UrlKind> {
    match kind {
        weft_p2p::UrlKind::Page => Some(UrlKind::Page),
        weft_p2p::UrlKind::Sitemap => Some(UrlKind::Sitemap),
        weft_p2p::UrlKind::Done => None,
    }
}

fn wire(q: &weft_frontier::QueuedUrl) -> WireUrl {
    WireUrl::new(q.url.clone(), q.depth, to_wire(q.kind))
}

/// Hands the hosts `keep` rejects to their owners: the queued URLs, and the URLs this node is
/// done with (so the new owners do not fetch them again), journaled before they leave the
/// frontier and sent at once. The queued URLs of the hosts `second_here` picks (this node is
/// their new owner's second holder) are also kept here as second copies: until the new owner's
/// own notes arrive, this node's copy is the only other one, and a new owner that crashed
/// before it sent them would otherwise take the queue with it. Returns how many queued URLs
/// went.
async fn give_away(
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

/// A copy fetched longer ago than this is not taken instead of the page: the page is fetched.
pub const ADOPT_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// How long a page's holders are asked for a copy before it is fetched after all. They are
/// asked all at once (no hedging delay): a fresh crawl's pages have no copy, and the page's
/// host stays leased while its holders answer, so the lookup costs one round trip, not one per
/// holder.
const COPY_DEADLINE: Duration = Duration::from_millis(1500);
const COPY_HEDGE: Duration = Duration::ZERO;

/// Sends the URLs this node does not own to their owners, and finds the copies held of the
/// pages this node is about to fetch: its own first, then other members'.
#[derive(Clone)]
pub struct Router {
    network: NetworkHandle,
    journal: Journal,
    me: PeerId,
    /// `index.replicas` (0: copies are not looked for).
    replicas: usize,
    /// The copies this node holds of other members' pages, when it indexes.
    held: Option<Arc<CellStore>>,
}

impl Router {
    pub fn new(network: NetworkHandle, journal: Journal, replicas: usize, held: Option<Arc<CellStore>>) -> Router {
        let me = network.peer_id();
        Router { network, journal, me, replicas, held }
    }
}

/// The copy as the crawl indexes it, if it is of the page at `url` and fetched within
/// [`ADOPT_MAX_AGE`] of `now` (Unix seconds).
pub fn adoptable(copy: weft_p2p::replicas::Replica, url: &url::Url, holder: &PeerId, now: u64) -> Option<HeldCopy> {
    if copy.page.url != url.as_str() || copy.fetched_at + ADOPT_MAX_AGE.as_secs() < now {
        return None;
    }
    let links = copy.links.iter().filter_map(|l| url::Url::parse(l).ok()).collect();
    let document = weft_index::Document {
        url: copy.page.url,
        title: copy.page.title,
        text: copy.text,
        description: copy.facts.description,
        language: copy.facts.language,
        site_name: copy.facts.site,
        published: copy.page.published,
        modified: copy.page.modified,
        author: copy.page.author,
        canonical: copy.page.canonical,
        page_type: copy.facts.page_type,
        fetched_at: copy.fetched_at,
        simhash: copy.simhash,
    };
    Some(HeldCopy { document, links, holder: holder.to_string() })
}

/// The copy of the page at `url` this node holds itself (`me`: the holder), if fresh enough
/// to be taken instead of the page (see [`adoptable`]). Blocking.
fn own_copy(cells: &CellStore, url: &url::Url, me: &PeerId, now: u64) -> Option<HeldCopy> {
    let id = weft_index::DocId::of_url(url.as_str());
    match weft_content::copies::held(cells, &id) {
        Ok(copy) => adoptable(copy?, url, me, now),
        Err(e) => {
            tracing::warn!(url = %url, "a copy held here could not be read: {e}");
            None
        }
    }
}

impl Route for Router {
    /// Keeps the candidates whose host this node owns and sends the rest to their owners.
    fn route(&self, candidates: Vec<Candidate>) -> Vec<Candidate> {
        let ring = self.network.ring();
        let mut mine = Vec::with_capacity(candidates.len());
        let mut theirs = Vec::new();
        for c in candidates {
            match ring.owner(HostKey::of(&c.url).name()) {
                Some(owner) if *owner != self.me => theirs.push(WireUrl::parsed(c.url, c.depth, to_wire(c.kind))),
                _ => mine.push(c),
            }
        }
        if !theirs.is_empty() {
            if let Err(e) = self.journal.insert(&theirs) {
                tracing::error!("outbox journal: {e}");
            }
            self.network.send_urls(theirs);
        }
        mine
    }

    /// A URL this node is done with, on a host it no longer owns (it was leased when the host
    /// changed hands, so the hand-off could not list it as done): its new owner is told, so
    /// it does not fetch the page again. Nothing to do for a host still this node's.
    fn owner(&self, host: &str) -> Option<String> {
        let ring = self.network.ring();
        owner(&ring, host).filter(|o| **o != self.me).map(|o| o.to_string())
    }

    fn copy_of(&self, url: &url::Url) -> futures::future::BoxFuture<'static, Option<HeldCopy>> {
        let (network, replicas, url) = (self.network.clone(), self.replicas, url.clone());
        let (held, me) = (self.held.clone(), self.me);
        Box::pin(async move {
            if replicas == 0 {
                return None;
            }
            // This node's own copy first: the pages of a crawler gone for good are queued again
            // by the first of their holders still a member (`replicas::orphaned`), often the
            // host's new owner, whose copy the network lookup below does not ask for.
            if let Some(cells) = held {
                let page = url.clone();
                let own = tokio::task::spawn_blocking(move || own_copy(&cells, &page, &me, weft_clock::now_secs()));
                if let Ok(Some(copy)) = own.await {
                    return Some(copy);
                }
            }
            if network.ring().members().len() < 2 {
                return None;
            }
            let doc = weft_index::DocId::of_url(url.as_str()).hex();
            // The holders are among the id's first `replicas + 1` owners (its crawler is not
            // one of them).
            let answer = network.get_document(&doc, &[], replicas + 1, COPY_HEDGE, COPY_DEADLINE).await;
            let (holder, copy) = answer.found?;
            adoptable(copy, &url, &holder, weft_clock::now_secs())
        })
    }

    fn forward_done(&self, url: &url::Url) {
        let ring = self.network.ring();
        if ring.owner(HostKey::of(url).name()).is_some_and(|o| *o != self.me) {
            let done = vec![WireUrl::parsed(url.clone(), 0, weft_p2p::UrlKind::Done)];
            if let Err(e) = self.journal.insert(&done) {
                tracing::error!("outbox journal: {e}");
            }
            self.network.send_urls(done);
        }
    }
}

/// Forgets the URLs their owners acknowledged. Runs until the network stops.
pub async fn forget_acknowledged(journal: Journal, mut acked: tokio::sync::mpsc::UnboundedReceiver<Vec<String>>) {
    while let Some(urls) = acked.recv().await {
        crate::storage::blocking(|| journal.remove(urls.iter().map(String::as_str)));
    }
}

/// The member that owns a frontier host (frontier hosts carry their port, the ring knows
/// names: [`HostKey::name`]).
fn owner<'r>(ring: &'r weft_p2p::Ring, host: &str) -> Option<&'r PeerId> {
    ring.owner(HostKey::from_stored(host).name())
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
    // another member owns on the ring known now go to it at once. Waiting for a change missed
    // them when the whole member set was known before this task started — a node restarted as
    // another joined kept crawling a host the newcomer owned (the churn sweep caught it: two
    // nodes on one host for thirty seconds).
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
/// render still running here went on asking the host's scripts and styles after the joiner's
/// first request (the churn sweep's seed 3: 125 ms apart). The URLs went out already; only
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

/// The first step of leaving, taken as soon as the crawl stops starting requests — not after
/// its in-flight work ends: on a loaded machine that work outlasted the whole stop bound once,
/// and the node exited having handed nothing over (CI's churn scenario here: 29 pages never
/// fetched, 20 fetched twice by the hosts' next owners). The browser takes no further page
/// and the pages it is rendering end (for up to `renders`), this node leaves the ring, and
/// every host it is not requesting right now goes to its new owner (journaled first, like any
/// hand-off). Hosts with a request in flight follow in [`leave`]. Alone, nothing happens.
pub async fn leave_early(crawler: &Crawler, network: &NetworkHandle, journal: &Journal, renders: Duration) {
    if others(network) == 0 {
        return;
    }
    // The crawl loop answers the stop at once; from then on it leases nothing.
    let until = Instant::now() + Duration::from_secs(5);
    while !crawler.stopping() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    crawler.close_renders();
    // While this node still owns their hosts: a render's many requests (scripts, styles) are
    // not to meet the host's next owner's. The links they find are routed as usual.
    let until = Instant::now() + renders;
    while !crawler.hosts_rendering().is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !off_the_ring(network).await {
        return;
    }
    let busy = crawler.busy_hosts();
    let urls = give_away(crawler, network, journal, |host| busy.contains(host), |_| false, Vec::new()).await;
    // The busy hosts' next owners learn now what is done on them: links other members find
    // meanwhile reach them, and without it a page fetched here was fetched again (the sweep's
    // seed 15). Their queues follow in `leave`; pages completed meanwhile are reported done as
    // they complete (their hosts are another member's on the ring now).
    let done: Vec<WireUrl> =
        crawler.done_of(&busy).into_iter().map(|url| WireUrl::new(url, 0, weft_p2p::UrlKind::Done)).collect();
    let told = done.len();
    if !done.is_empty() {
        match crate::storage::blocking(|| journal.insert(&done)) {
            Ok(()) => network.hand_off(done, Vec::new()),
            Err(e) => tracing::error!("outbox journal: {e}"),
        }
    }
    tracing::info!(
        urls,
        busy = busy.len(),
        done_told = told,
        "left the ring; handed the queue to the remaining members"
    );
}

/// Members other than this node.
fn others(network: &NetworkHandle) -> usize {
    let me = network.peer_id();
    network.ring().members().iter().filter(|m| **m != me).count()
}

/// Announces the leave and waits until this node is off its own ring (at most 5 s): handed
/// off before, URLs would be routed back to it.
async fn off_the_ring(network: &NetworkHandle) -> bool {
    network.leave();
    let me = network.peer_id();
    let mut rings = network.ring_changes();
    let off = rings.wait_for(|ring| !ring.contains(&me));
    if tokio::time::timeout(Duration::from_secs(5), off).await.is_err() {
        tracing::warn!("the network task did not take this node off the ring; staying");
        return false;
    }
    true
}

/// Leaves the network after the crawl stopped ([`leave_early`] did most of it): hands every
/// URL still queued here — requests the stop cut, hosts that were busy, pages still waiting
/// for the browser — to the members that own its host without this node (journaled first),
/// and waits up to `wait` until every hand-off and every batch forwarded meanwhile is
/// acknowledged, the postings and document copies of its last pages are delivered, and the
/// renders in flight are done. Alone, the node keeps its queue: there is
/// nobody to give it to.
pub async fn leave(crawler: &Crawler, network: &NetworkHandle, journal: &Journal, wait: Duration) {
    if others(network) == 0 {
        return;
    }
    crawler.close_renders();
    if !off_the_ring(network).await {
        return;
    }
    let urls = give_away(crawler, network, journal, |_| false, |_| false, Vec::new()).await;
    tracing::info!(urls, "handing the rest of the queue to the remaining members");
    let done = async {
        loop {
            let s = network.status();
            // The postings and document copies of the pages indexed last go out too: a page
            // handed over as done whose copies never left would be lost with this node.
            let sent = crate::storage::blocking(|| journal.is_empty())
                && s.urls_waiting == 0
                && s.urls_in_flight == 0
                && s.postings.backlog == 0;
            // A render that was running when the queue closed: its page and links are this
            // node's to finish (the links then go out like any other).
            if sent && crawler.rendering() == 0 {
                break true;
            }
            if network.ring().is_empty() {
                // Every other member left too (a whole network stopping): nobody to wait for.
                break false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    match tokio::time::timeout(wait, done).await {
        Ok(true) => tracing::info!("left the network; every handed-off URL was acknowledged"),
        Ok(false) | Err(_) => tracing::warn!(
            unacknowledged = crate::storage::blocking(|| journal.len()),
            "left the network with URLs unacknowledged; they stay journaled and go out at the next start"
        ),
    }
}

/// Queues URLs other members sent (their hosts are this node's) and acknowledges them once
/// the frontier has them on disk. Runs until the network stops.
pub async fn receive(
    crawler: Crawler,
    journal: Journal,
    handover: Handover,
    mut inbound: tokio::sync::mpsc::Receiver<Inbound>,
) {
    while let Some(Inbound { urls, forward, reply, from, handoff, second }) = inbound.recv().await {
        if second {
            // Notes from the owner of their hosts, kept aside (see `second_copies`).
            let max_depth = crawler.max_depth();
            let notes: Vec<_> =
                urls.into_iter().filter_map(|u| crate::second_copies::from_wire(u, max_depth)).collect();
            let n = notes.len() as u32;
            // Not on disk: no acknowledgement (the owner keeps its notes and sends them again).
            if let (Ok(true), Some(reply)) = (crawler.keep_second_copies(notes).await, reply) {
                let _ = reply.send(n);
            }
            continue;
        }
        // URLs of this node's own outbox that came back (the ring changed) are queued here now.
        let returned: Vec<String> = urls.iter().map(|u| u.url.clone()).collect();
        let mut done = Vec::new();
        let mut candidates = Vec::new();
        // Hosts the sender handed over while they asked it to back off (see `give_away`).
        let mut waits: HashMap<String, u64> = HashMap::new();
        let mut invalid = 0;
        let max_depth = crawler.max_depth();
        for u in urls {
            // The sender's depth orders the queue but cannot keep a page out of it: a peer
            // saying 4294967295 gets the deepest depth queued, not a refusal.
            let (depth, kind, wait) = (u.depth.min(max_depth), u.kind, u.host_wait_until);
            // Parsed once, by the network's check; normalized here (the sender is not trusted
            // to have done it).
            let normalized = match u.into_url() {
                Some(url) => normalize_url(url),
                None => {
                    invalid += 1;
                    continue;
                }
            };
            let Ok(url) = normalized else {
                invalid += 1;
                continue;
            };
            if let Some(until) = wait {
                let w = waits.entry(HostKey::of(&url).into_string()).or_default();
                *w = (*w).max(until);
            }
            match from_wire(kind) {
                Some(kind) => candidates.push(Candidate::of(url, kind, depth)),
                None => done.push(url),
            }
        }
        if invalid > 0 {
            crawler.count_received_invalid(invalid);
        }
        // The batch's URLs for other members' hosts: the network sends them on once they are
        // on disk here (the queue's flush below covers the journal), for once the batch is
        // acknowledged they are this node's to deliver.
        if let Err(e) = crate::storage::blocking(|| journal.insert(&forward)) {
            tracing::error!("outbox journal: {e}");
            continue;
        }
        let waits: Vec<(String, u64)> = waits.into_iter().collect();
        let (accepted, sent_on) = match (crawler.mark_done(done).await, crawler.add_owned(candidates).await) {
            (Ok((d, mut done_on)), Ok((q, sent_on))) => {
                done_on.extend(sent_on);
                (d + q, done_on)
            }
            // Not on disk: no acknowledgement (the sender keeps the URLs and sends them again).
            _ => {
                crate::storage::blocking(|| journal.remove(forward.iter().map(|u| u.url.as_str())));
                continue;
            }
        };
        crawler.defer_hosts(waits);
        // Those sent on to their owner stay journaled until it acknowledges them.
        let sent_on: HashSet<&str> = sent_on.iter().map(String::as_str).collect();
        crate::storage::blocking(|| {
            journal.remove(returned.iter().map(String::as_str).filter(|u| !sent_on.contains(u)))
        });
        if let Some(reply) = reply {
            let _ = reply.send(accepted);
        }
        if let (true, Some(peer)) = (handoff, from) {
            handover.arrived(peer, &crawler);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_journal_keeps_unacknowledged_urls_across_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let url = |u: &str, kind| WireUrl::new(u, 3, kind);
        {
            let db = weft_frontier::open_db(dir.path(), 8 << 20).unwrap();
            let j = Journal::open(&db).unwrap();
            j.insert(&[
                url("http://a.test/1", weft_p2p::UrlKind::Page),
                url("http://a.test/map.xml", weft_p2p::UrlKind::Sitemap),
            ])
            .unwrap();
            j.insert(&[url("http://b.test/2", weft_p2p::UrlKind::Page)]).unwrap();
            j.remove(["http://b.test/2"]);
            db.flush().unwrap();
        }
        let db = weft_frontier::open_db(dir.path(), 8 << 20).unwrap();
        let j = Journal::open(&db).unwrap();
        let mut all = j.all();
        all.sort_by(|a, b| a.url.cmp(&b.url));
        assert_eq!(
            all,
            vec![
                url("http://a.test/1", weft_p2p::UrlKind::Page),
                url("http://a.test/map.xml", weft_p2p::UrlKind::Sitemap)
            ]
        );
        j.remove(all.iter().map(|u| u.url.as_str()));
        assert!(j.is_empty());
    }

    #[test]
    fn the_journal_keeps_a_host_s_wait_and_reads_entries_written_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = weft_frontier::open_db(dir.path(), 8 << 20).unwrap();
        let j = Journal::open(&db).unwrap();
        let waiting =
            WireUrl::new("http://slow.test/1", 0, weft_p2p::UrlKind::Done).with_host_wait(Some(1_800_000_300));
        j.insert(&[waiting, WireUrl::new("http://calm.test/1", 2, weft_p2p::UrlKind::Page)]).unwrap();
        let mut all = j.all();
        all.sort_by(|a, b| a.url.cmp(&b.url));
        assert_eq!(all.iter().map(|u| u.host_wait_until).collect::<Vec<_>>(), vec![None, Some(1_800_000_300)]);
        assert_eq!(all[1].kind, weft_p2p::UrlKind::Done);
        // What the journal held before the wait existed: depth and kind.
        let tree = db.open_tree("p2p.outbox").unwrap();
        tree.insert("http://old.test/1", [0, 0, 0, 4, 1].to_vec()).unwrap();
        let old = j.all().into_iter().find(|u| u.url == "http://old.test/1").unwrap();
        assert_eq!((old.depth, old.kind, old.host_wait_until), (4, weft_p2p::UrlKind::Sitemap, None));
    }

    #[test]
    fn a_copy_is_taken_for_its_own_page_while_fresh() {
        let url = url::Url::parse("http://a.test/p").unwrap();
        let holder = PeerId::random();
        let copy = weft_p2p::replicas::Replica {
            doc: weft_p2p::replicas::doc_id(url.as_str()),
            page: weft_index::PageMeta { url: url.to_string(), title: "P".into(), ..Default::default() },
            facts: weft_index::PageFacts {
                language: Some("en".into()),
                page_type: Some("article".into()),
                ..Default::default()
            },
            word_count: 3,
            simhash: Some(9),
            text: "three words here".into(),
            chunks: Vec::new(),
            fetched_at: 1_000_000,
            links: vec!["http://a.test/next".into(), "not a url".into()],
            publisher: Vec::new(),
            signature: Vec::new(),
        };
        let now = 1_000_000 + 3600;
        let held = adoptable(copy.clone(), &url, &holder, now).expect("fresh");
        assert_eq!((held.document.text.as_str(), held.document.fetched_at), ("three words here", 1_000_000));
        assert_eq!((held.document.simhash, held.holder.as_str()), (Some(9), holder.to_string().as_str()));
        assert_eq!(held.links, vec![url::Url::parse("http://a.test/next").unwrap()]);
        let stale = 1_000_000 + ADOPT_MAX_AGE.as_secs() + 1;
        assert!(adoptable(copy.clone(), &url, &holder, stale).is_none(), "too old: fetched again");
        let other = url::Url::parse("http://a.test/q").unwrap();
        assert!(adoptable(copy, &other, &holder, now).is_none(), "another page's copy");
    }

    #[test]
    fn a_copy_this_node_holds_is_found_in_its_own_store() {
        let dir = tempfile::tempdir().unwrap();
        let cells = crate::cells::open(dir.path(), 384, &weft_config::IndexConfig::default()).unwrap();
        let (url, me) = (url::Url::parse("http://a.test/p").unwrap(), PeerId::random());
        assert!(own_copy(&cells, &url, &me, 2_000_000).is_none(), "nothing held yet");
        let mut copy = weft_p2p::replicas::Replica {
            doc: weft_p2p::replicas::doc_id(url.as_str()),
            page: weft_index::PageMeta { url: url.to_string(), title: "P".into(), ..Default::default() },
            facts: weft_index::PageFacts::default(),
            word_count: 3,
            simhash: None,
            text: "three words here".into(),
            chunks: Vec::new(),
            fetched_at: 1_000_000,
            links: Vec::new(),
            publisher: Vec::new(),
            signature: Vec::new(),
        };
        copy.sign(&weft_p2p::identity::Keypair::generate_ed25519());
        assert_eq!(crate::replicas::store(&cells, &[copy], None, &|_| 0).unwrap(), 1);
        let found = own_copy(&cells, &url, &me, 1_000_000 + 3600).expect("held here");
        assert_eq!((found.document.text.as_str(), found.holder), ("three words here", me.to_string()));
        let stale = 1_000_000 + ADOPT_MAX_AGE.as_secs() + 1;
        assert!(own_copy(&cells, &url, &me, stale).is_none(), "too old: the page is fetched");
        let other = url::Url::parse("http://a.test/q").unwrap();
        assert!(own_copy(&cells, &other, &me, 1_000_000).is_none());
    }
}
