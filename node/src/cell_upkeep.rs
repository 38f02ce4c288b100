//! The cell store's upkeep over months: cells this node no longer owns are dropped once the
//! member set has settled, this node announces its own documents again (so a posting lost with
//! all of its cell's owners comes back, and a copy that never reached a holder, or was lost
//! with all of them, is sent again) and sends the copies of departed crawlers it speaks for to
//! their other holders again, and what nobody announced within the TTL expires.

use crate::blocking::{bounded, STORE_BOUND};
use crate::cells::{postings_of, Placing};
use std::sync::Arc;
use std::time::Duration;
use weft_index::cells::CellStore;
use weft_index::{DocId, IndexError, LocalIndex};
use weft_p2p::placement::Ladder;
use weft_p2p::postings::Posting;

/// A cell's owner drops a document not announced again for this long (see
/// [`CellStore::expire`]): four re-announce rounds missed.
pub const POSTING_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// Each document this node indexed is announced again about this often.
const REANNOUNCE_EVERY: Duration = Duration::from_secs(7 * 24 * 3600);
/// The re-announce goes in steps this far apart, each a slice of the index.
const REANNOUNCE_STEP: Duration = Duration::from_secs(10 * 60);
/// A step is skipped while this many postings wait to be sent already.
const REANNOUNCE_BACKLOG: u64 = 10_000;
/// How often the cell store looks for expired documents.
const EXPIRE_CHECK: Duration = Duration::from_secs(3600);

/// Drops what the cell store holds that was not announced within [`POSTING_TTL`], hourly.
pub async fn expire_postings(store: Arc<CellStore>) {
    let mut tick = tokio::time::interval(EXPIRE_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let s = store.clone();
        let expire = move || s.expire(weft_clock::now_secs(), POSTING_TTL.as_secs());
        match bounded("cell store: expiring postings", STORE_BOUND * 4, expire).await {
            None | Some(0) => {}
            Some(docs) => tracing::info!(docs, "dropped postings not announced again within their TTL"),
        }
    }
}

/// The weekly round the re-sends go in: a step every [`REANNOUNCE_STEP`], each a slice of
/// `steps`, skipped while the postings backlog is long already.
struct Round {
    tick: tokio::time::Interval,
    steps: usize,
}

impl Round {
    fn new() -> Round {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + REANNOUNCE_STEP, REANNOUNCE_STEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Round { tick, steps: (REANNOUNCE_EVERY.as_secs() / REANNOUNCE_STEP.as_secs()).max(1) as usize }
    }

    /// Waits for the next step that may go.
    async fn step(&mut self, network: &weft_p2p::NetworkHandle) {
        loop {
            self.tick.tick().await;
            if network.status().postings.backlog <= REANNOUNCE_BACKLOG {
                return;
            }
        }
    }
}

/// Announces this node's documents to their cells' owners again, a slice every
/// [`REANNOUNCE_STEP`] so that the whole index goes round every [`REANNOUNCE_EVERY`]: a posting
/// lost with all of its cell's owners at once comes back, and what is still here outlives the
/// owners' TTL. Only documents of hosts this node owns now (the owners take a page's postings
/// from its host's owner only). Runs until the network stops.
pub async fn reannounce(index: Arc<LocalIndex>, network: weft_p2p::NetworkHandle, model: String, copies: bool) {
    let me = network.peer_id();
    let ladder = weft_p2p::placement::shipped_ladder();
    let mut round = Round::new();
    let steps = round.steps;
    let mut cursor: Option<DocId> = None;
    loop {
        round.step(&network).await;
        let ring = network.ring();
        // Two cells a chunk, or three once the network is large: a network that grew past the
        // line has its older postings reach their third cell within a round; one that shrank
        // below it lets them expire there.
        let (cells, levels) = (network.cells_per_chunk(), network.posted_levels());
        let (index, model, after) = (index.clone(), model.clone(), cursor);
        let slice = move || {
            let take = index.store().doc_count().div_ceil(steps).max(1);
            let owned = |host: &str| ring.owner(host) == Some(&me);
            let placing = Placing { ladder, levels, model: &model, cells };
            announce_slice(&index, after.as_ref(), take, owned, placing, copies)
        };
        if let Some(Announced { postings, copies, last }) = bounded("re-announce", STORE_BOUND * 4, slice).await {
            cursor = last;
            if !postings.is_empty() || !copies.is_empty() {
                tracing::debug!(postings = postings.len(), copies = copies.len(), "announcing documents again");
                network.publish_postings(postings, Vec::new(), copies);
            }
        }
    }
}

/// Sends the copies this node speaks for — their crawler gone for good, this node their
/// first holder — to their other holders again, a slice every [`REANNOUNCE_STEP`] so that all
/// go round every [`REANNOUNCE_EVERY`] (see [`crate::replicas::orphan_resends`]). Runs until
/// the network stops.
pub async fn resend_orphans(store: Arc<CellStore>, network: weft_p2p::NetworkHandle, doc_replicas: usize) {
    let me = network.peer_id();
    let mut round = Round::new();
    let steps = round.steps;
    let mut cursor: Option<DocId> = None;
    loop {
        round.step(&network).await;
        let (ring, s, after) = (network.ring(), store.clone(), cursor);
        let slice = move || -> Result<_, IndexError> {
            let take = s.replicas().counts().0.div_ceil(steps).max(1);
            let page = s.replicas().page(after.as_ref(), take)?;
            let last = (page.len() == take).then(|| page.last().map(|(id, _)| *id)).flatten();
            let mut heads = Vec::with_capacity(page.len());
            let mut bodies = std::collections::HashMap::new();
            for (id, body) in page {
                let Ok(copy) = weft_p2p::replicas::Replica::decode(&body) else { continue };
                if let Some(crawler) = copy.publisher_id() {
                    heads.push((id, crawler));
                    bodies.insert(id, copy);
                }
            }
            let sends: Vec<(weft_p2p::PeerId, Vec<weft_p2p::replicas::Replica>)> =
                crate::replicas::orphan_resends(&ring, &me, doc_replicas, &heads)
                    .into_iter()
                    .map(|(to, ids)| (to, ids.iter().filter_map(|id| bodies.get(id).cloned()).collect()))
                    .collect();
            Ok((sends, last))
        };
        if let Some((sends, last)) = bounded("re-sending orphaned copies", STORE_BOUND * 4, slice).await {
            cursor = last;
            for (to, copies) in sends {
                tracing::debug!(%to, copies = copies.len(), "sending the copies of a departed crawler again");
                network.hand_over_replicas(to, copies);
            }
        }
    }
}

/// One slice of the re-announce.
pub struct Announced {
    pub postings: Vec<Posting>,
    /// The documents' copies, for their holders (when this node makes copies).
    pub copies: Vec<weft_p2p::replicas::Replica>,
    /// The last document looked at (`None` past the end: the next slice starts over).
    pub last: Option<DocId>,
}

/// The postings (and, with `copies`, the copies) of the `take` documents after `after` in
/// `index` whose host `owned` says is this node's (a ring host name).
pub fn announce_slice(
    index: &LocalIndex,
    after: Option<&DocId>,
    take: usize,
    owned: impl Fn(&str) -> bool,
    placing: Placing<'_>,
    copies: bool,
) -> Result<Announced, IndexError> {
    let mut out = Announced { postings: Vec::new(), copies: Vec::new(), last: None };
    for entry in index.store().docs_after(after).take(take) {
        let (id, record) = entry?;
        out.last = Some(id);
        let host = url::Url::parse(&record.url).ok().map(|u| weft_url::HostKey::of(&u).name().to_string());
        if host.is_some_and(|h| owned(&h)) {
            out.postings.extend(postings_of(index, &record.url, placing.clone())?);
            if copies {
                out.copies.extend(weft_content::copies::replica_of(index, &id)?);
            }
        }
    }
    Ok(out)
}

/// How long a cell or a copy must have been another's for this node to drop it: its new
/// owners were handed it at the change, and a member that comes back soon (a restart) takes
/// it back from here.
const DROP_AFTER: Duration = Duration::from_secs(10 * 60);
/// How often the ring is looked at for that.
const DROP_CHECK: Duration = Duration::from_secs(30);

/// What this node has not kept since when — cells, or the ids of document copies: each is
/// dropped once it has been another's for [`DROP_AFTER`] without a break. Counted per cell and
/// per id, not from the last change of the member set: a large network changes every few
/// seconds and never stands still for ten minutes, and a store that waited for that would keep
/// everything it ever owned.
#[derive(Debug, Clone)]
pub struct Unowned<K> {
    since: std::collections::BTreeMap<K, tokio::time::Instant>,
}

impl<K> Default for Unowned<K> {
    fn default() -> Self {
        Unowned { since: std::collections::BTreeMap::new() }
    }
}

impl<K: Ord + Clone> Unowned<K> {
    /// Records which of `held` (everything held now: what is not among them is forgotten) this
    /// node keeps now; returns whether any has been another's for [`DROP_AFTER`].
    pub fn observe(&mut self, held: impl Iterator<Item = (K, bool)>, now: tokio::time::Instant) -> bool {
        let mut since = std::collections::BTreeMap::new();
        for (key, kept) in held {
            if !kept {
                let t = self.since.get(&key).copied().unwrap_or(now);
                since.insert(key, t);
            }
        }
        self.since = since;
        self.any_due(now)
    }

    /// Whether anything has been another's for [`DROP_AFTER`] at `now`.
    pub fn any_due(&self, now: tokio::time::Instant) -> bool {
        self.since.values().any(|t| now.duration_since(*t) >= DROP_AFTER)
    }

    /// Whether this node still keeps `key` at `now`.
    pub fn keeps(&self, key: &K, now: tokio::time::Instant) -> bool {
        self.since.get(key).is_none_or(|t| now.duration_since(*t) < DROP_AFTER)
    }
}

/// When a store may drop what has been another's for [`DROP_AFTER`]: some has, nothing waits
/// to be handed over, and it has not dropped within [`DROP_AFTER`] (each drop scans it whole).
#[derive(Debug, Default)]
struct DropPace {
    last: Option<tokio::time::Instant>,
}

impl DropPace {
    fn due(&mut self, any: bool, idle: bool, now: tokio::time::Instant) -> bool {
        let due = any && idle && self.last.is_none_or(|t| now.duration_since(t) >= DROP_AFTER);
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// Drops what this node has not kept for [`DROP_AFTER`] ([`Unowned`]): the postings of the
/// cells of the levels taken it is not among the first `replicas + 1` owners of, as a receiver
/// keeps them while rings settle ([`kept_cells`]), and the copies of documents whose ids it is
/// not among the first `doc_replicas + 1` holders of; each store at most once every
/// [`DROP_AFTER`], and only while nothing waits to be handed over. Without it, a node's stores
/// only grew as members joined: everything it ever owned stayed. Runs until the network stops.
pub async fn drop_unowned(
    store: Arc<CellStore>,
    network: weft_p2p::NetworkHandle,
    replicas: usize,
    doc_replicas: usize,
) {
    let me = network.peer_id();
    let ladder = weft_p2p::placement::shipped_ladder();
    let mut cells = Unowned::default();
    let mut cells_pace = DropPace::default();
    let mut copies: Unowned<DocId> = Unowned::default();
    let mut copies_pace = DropPace::default();
    // The members the copies were last looked at for, and when: an id's holders change only
    // with the ring, so the store is read again at a change (or every `DROP_AFTER`, for
    // copies that came in meanwhile).
    let mut copies_seen: Option<(Vec<weft_p2p::PeerId>, tokio::time::Instant)> = None;
    let mut tick = tokio::time::interval(DROP_CHECK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let ring = network.ring();
        if ring.is_empty() {
            continue;
        }
        let now = tokio::time::Instant::now();
        let idle = network.status().postings.backlog == 0;
        let levels = ladder.accepted_levels(ring.members().len(), replicas);
        let keep = kept_cells(&ring, ladder, levels, replicas, &me);
        let all = || ladder.cells_of_levels(0..=ladder.depth());
        let any = cells.observe(all().map(|c| (c, keep.contains(&c))), now);
        if cells_pace.due(any, idle, now) {
            let keeps: std::collections::BTreeSet<u32> = all().filter(|c| cells.keeps(c, now)).collect();
            let s = store.clone();
            let drop = move || s.keep_cells(|c| keeps.contains(&c));
            match bounded("cell store: dropping cells no longer owned", STORE_BOUND * 4, drop).await {
                None | Some((0, 0)) => {}
                Some((docs, chunks)) => {
                    tracing::info!(docs, chunks, "dropped the postings of cells this node no longer owns")
                }
            }
        }

        let stale = copies_seen
            .as_ref()
            .is_none_or(|(m, at)| m.as_slice() != ring.members() || now.duration_since(*at) >= DROP_AFTER);
        if stale {
            let (s, r) = (store.clone(), ring.clone());
            let look = move || -> Result<Vec<(DocId, bool)>, IndexError> {
                let held = s.replicas().heads()?;
                Ok(held.into_iter().map(|(id, _)| (id, holds_copy(&r, &id, doc_replicas, &me))).collect())
            };
            match bounded("replica store: looking at the ids held", STORE_BOUND * 4, look).await {
                Some(held) => {
                    copies.observe(held.into_iter(), now);
                    copies_seen = Some((ring.members().to_vec(), now));
                }
                None => continue,
            }
        }
        if copies_pace.due(copies.any_due(now), idle, now) {
            let (s, kept) = (store.clone(), copies.clone());
            let keep = move |id: &DocId| kept.keeps(id, now);
            let drop = move || s.replicas().keep(keep);
            if let Some(n @ 1..) = bounded("replica store: dropping ids no longer owned", STORE_BOUND * 4, drop).await {
                tracing::info!(copies = n, "dropped the document copies of ids this node no longer owns");
            }
        }
    }
}

/// Whether this node keeps the copy of document `id` on `ring`: it is among the first
/// `doc_replicas + 1` holders of the id (one more than hold it, as for cells: a receiver keeps
/// what it may own again as rings settle).
pub fn holds_copy(ring: &weft_p2p::Ring, id: &DocId, doc_replicas: usize, me: &weft_p2p::PeerId) -> bool {
    weft_p2p::replicas::doc_owners(ring, &id.hex(), doc_replicas + 1).contains(me)
}

/// The cells of `levels` (those postings are taken at now) this node keeps on `ring`: those it
/// is among the first `replicas + 1` owners of. A level the network has left is dropped whole:
/// its postings were placed at the level it went to as it came in (`cell_levels`).
pub fn kept_cells(
    ring: &weft_p2p::Ring,
    ladder: &Ladder,
    levels: std::ops::RangeInclusive<usize>,
    replicas: usize,
    me: &weft_p2p::PeerId,
) -> std::collections::BTreeSet<u32> {
    ladder.cells_of_levels(levels).filter(|c| ladder.owners(ring, *c, replicas + 1).contains(me)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_p2p::placement::spread;
    use weft_p2p::postings::MAX_CELLS_PER_CHUNK;

    #[test]
    fn the_index_is_announced_again_slice_by_slice_for_the_hosts_this_node_owns() {
        use weft_index::store::{ChunkRecord, NewChunk};
        let ladder = weft_p2p::placement::shipped_ladder();
        let book = ladder.level(0);
        let dir = tempfile::tempdir().unwrap();
        let (_db, index) = weft_index::testing::open_index(dir.path());
        for i in 0..5u32 {
            let url = format!("http://h{}.test/{i}", i % 2);
            let id = DocId::of_url(&url);
            let text = format!("the chunk of page {i}");
            let chunk = NewChunk {
                key: id.chunk_key(0),
                record: ChunkRecord::new(id, 0, 0, text.len(), 5, &text),
                vector: book.cell(i * 10).to_vec(),
            };
            let mut record =
                weft_index::testing::indexed_record(&url, &format!("Page {i}"), 100 + u64::from(i), 5, vec![chunk.key]);
            record.language = Some("en".into());
            index.commit(id, &record, vec![chunk]).unwrap();
        }
        // h0.test is this node's (pages 0, 2 and 4); three documents a slice.
        let owned = |h: &str| h == "h0.test";
        let placing = Placing { ladder, levels: 0..=0, model: "m", cells: 2 };
        let slice = |after: Option<&DocId>| announce_slice(&index, after, 3, owned, placing.clone(), true).unwrap();
        let a = slice(None);
        let b = slice(a.last.as_ref());
        let c = slice(b.last.as_ref());
        assert!(c.postings.is_empty() && c.copies.is_empty() && c.last.is_none(), "past the end: starts over");
        // A copy of each of its documents too, for their holders.
        let copied: std::collections::BTreeSet<&str> =
            a.copies.iter().chain(&b.copies).map(|r| r.page.url.as_str()).collect();
        assert_eq!(copied, ["http://h0.test/0", "http://h0.test/2", "http://h0.test/4"].into_iter().collect());
        let (first, second) = (a.postings, b.postings);
        let urls: std::collections::BTreeSet<&str> = first.iter().chain(&second).map(|p| p.page.url.as_str()).collect();
        assert_eq!(urls, ["http://h0.test/0", "http://h0.test/2", "http://h0.test/4"].into_iter().collect());
        // Each chunk to its best two cells, as when it was indexed.
        assert_eq!(first.len() + second.len(), 3 * 2);
        assert!(first.iter().chain(&second).all(|p| book.nearest(&p.vector(), 2).iter().any(|c| c.0 == p.cell)));
        // In a large network, to its three spread cells.
        let large = Placing { cells: 3, ..placing.clone() };
        let third = announce_slice(&index, None, 5, owned, large, false).unwrap().postings;
        assert_eq!(third.len(), 3 * MAX_CELLS_PER_CHUNK);
        assert!(third.iter().all(|p| spread(book, &p.vector(), 3).iter().any(|c| c.0 == p.cell)));
    }

    #[test]
    fn a_cell_is_dropped_once_it_has_been_anothers_for_ten_minutes_without_a_break() {
        let t0 = tokio::time::Instant::now();
        let mut unowned = Unowned::default();
        let keep = |cells: &[u32]| (0..4).map(|c| (c, cells.contains(&c))).collect::<Vec<_>>().into_iter();
        // Cells 0..4; this node keeps 0 and 1.
        assert!(!unowned.observe(keep(&[0, 1]), t0));
        assert!(!unowned.observe(keep(&[0, 1]), t0 + DROP_AFTER / 2));
        // Cell 2 comes back for a while (a restart): its time starts again.
        assert!(!unowned.observe(keep(&[0, 1, 2]), t0 + DROP_AFTER * 3 / 4));
        assert!(unowned.observe(keep(&[0, 1]), t0 + DROP_AFTER), "cell 3, ten minutes another's");
        let now = t0 + DROP_AFTER;
        assert_eq!((0..4).filter(|c| unowned.keeps(c, now)).collect::<Vec<_>>(), [0, 1, 2]);
        // However often the members change: counted per cell.
        assert!(unowned.keeps(&2, t0 + DROP_AFTER * 2 - Duration::from_secs(1)));
        assert!(!unowned.keeps(&2, t0 + DROP_AFTER * 2));
    }

    #[test]
    fn a_copy_is_dropped_per_id_while_the_members_never_stand_still() {
        // Twelve members on the ring, one replaced every 30 s for an hour: the member set never
        // stands still for ten minutes, as in a large network. A node keeps a copy while it is
        // among an id's first `doc_replicas + 1` holders; an id that stopped being its for ten
        // minutes without a break is dropped, one it owns is never.
        let members: Vec<weft_p2p::PeerId> = (0..40).map(|_| weft_p2p::PeerId::random()).collect();
        let me = members[0];
        let ids: Vec<DocId> = (0..300).map(|i| DocId::of_url(&format!("http://h{i}.test/"))).collect();
        let ring_at = |step: usize| {
            // `me` and eleven others in a window sliding one member a step.
            let mut on = vec![me];
            on.extend((0..11).map(|k| members[1 + (step + k) % 39]));
            weft_p2p::Ring::new(on, 50)
        };
        let t0 = tokio::time::Instant::now();
        let mut unowned = Unowned::default();
        let mut held: std::collections::BTreeSet<DocId> = ids.iter().copied().collect();
        let mut not_mine_since: std::collections::BTreeMap<DocId, tokio::time::Instant> = Default::default();
        let mut dropped = 0;
        for step in 0..120 {
            let now = t0 + DROP_CHECK * step as u32;
            let ring = ring_at(step);
            unowned.observe(held.iter().map(|id| (*id, holds_copy(&ring, id, 3, &me))), now);
            for id in &ids {
                if holds_copy(&ring, id, 3, &me) {
                    not_mine_since.remove(id);
                } else {
                    not_mine_since.entry(*id).or_insert(now);
                }
            }
            let before: Vec<DocId> = held.iter().copied().collect();
            held.retain(|id| unowned.keeps(id, now));
            let long = |id: &DocId| not_mine_since.get(id).is_some_and(|t| now.duration_since(*t) >= DROP_AFTER);
            for id in before.iter().filter(|id| !held.contains(id)) {
                assert!(long(id), "step {step}: {id:?} dropped before it was another's for ten minutes");
                dropped += 1;
            }
            assert!(held.iter().all(|id| !long(id)), "step {step}: a copy another's for ten minutes is kept");
        }
        assert!(dropped > 0, "some ids stopped being this node's for ten minutes");
    }

    #[test]
    fn a_member_keeps_what_it_owns_and_one_owner_more_and_drops_the_rest() {
        let ladder = weft_p2p::placement::shipped_ladder();
        let book = ladder.level(0);
        let members: Vec<weft_p2p::PeerId> = (0..8).map(|_| weft_p2p::PeerId::random()).collect();
        let ring = weft_p2p::Ring::new(members.clone(), 50);
        let kept: Vec<_> = members.iter().map(|m| kept_cells(&ring, ladder, 0..=0, 3, m)).collect();
        for cell in 0..book.len() as u32 {
            let owners = weft_p2p::placement::cell_owners(&ring, book.id(), cell, 3);
            // Every owner keeps the cell, and so does one member more: four keep it.
            assert!(owners.iter().all(|o| kept[members.iter().position(|m| m == o).unwrap()].contains(&cell)));
            assert_eq!(kept.iter().filter(|k| k.contains(&cell)).count(), 4, "cell {cell}");
        }
        // Alone, a node keeps every cell.
        let alone = weft_p2p::Ring::new([members[0]], 50);
        assert_eq!(kept_cells(&alone, ladder, 0..=0, 3, &members[0]).len(), book.len());
    }
}
