//! Where discovered URLs go in a network: to this node's frontier when it owns their host on
//! the ring, else to the owner through the URL exchange; and URLs other members send here go
//! into the frontier, acknowledged once they are durable.
//!
//! URLs on their way to another member are kept in the [`Journal`] (a sled tree) until their
//! owner acknowledges them, and sent again after a restart: a crash of the sending node repeats
//! a URL at worst, never loses it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use weft_crawl::{Crawler, Route};
use weft_fetch::page::HeldCopy;
use weft_frontier::{Candidate, UrlKind};
use weft_index::cells::CellStore;
use weft_p2p::{Inbound, NetworkHandle, PeerId, WireUrl};
use weft_url::{normalize_url, HostKey};

mod hand_offs;
mod leaving;

pub use hand_offs::{hand_off_on_changes, Handover, HandoverWaits};
pub use leaving::{leave, leave_early};

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
        weft_crawl::storage::blocking(|| journal.remove(urls.iter().map(String::as_str)));
    }
}

/// The member that owns a frontier host (frontier hosts carry their port, the ring knows
/// names: [`HostKey::name`]).
fn owner<'r>(ring: &'r weft_p2p::Ring, host: &str) -> Option<&'r PeerId> {
    ring.owner(HostKey::from_stored(host).name())
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
        if let Err(e) = weft_crawl::storage::blocking(|| journal.insert(&forward)) {
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
                weft_crawl::storage::blocking(|| journal.remove(forward.iter().map(|u| u.url.as_str())));
                continue;
            }
        };
        crawler.defer_hosts(waits);
        // Those sent on to their owner stay journaled until it acknowledges them.
        let sent_on: HashSet<&str> = sent_on.iter().map(String::as_str).collect();
        weft_crawl::storage::blocking(|| {
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
