//! Semantic placement, the node's side: every chunk this node indexes is published to the
//! owners of its best cells of the network's codebook (two, or three in a large network:
//! `weft_p2p::placement`), and the postings of the cells this node owns are kept in its cell
//! store (`weft_index::cells`) and searched with its own index — so a question reaches a chunk through its cells' owners,
//! whoever crawled it and whether its crawler is up. Keeping the store current over months —
//! dropping cells no longer owned, announcing again, expiring — is `cell_upkeep.rs`.

use crate::blocking::{bounded, STORE_BOUND};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;
use weft_index::cells::{CellChunk, CellDoc, CellStore, CellStoreError, Limits};
use weft_index::{DocId, DocState, Hit, IndexError, LocalIndex};
use weft_p2p::placement::Ladder;
use weft_p2p::postings::{Posting, Tombstone, MAX_CELLS_PER_CHUNK};
use weft_p2p::publishing::Withdrawal;
use weft_p2p::PostingsInbound;

/// Chunks the cell store holds at most (f16 vectors and their graph: ~1 KB each in memory).
pub const MAX_CELL_CHUNKS: usize = 500_000;
/// How often what was stored becomes searchable by its words.
const SYNC_EVERY: Duration = Duration::from_secs(2);

/// Opens the cell store under `cells/` in the data dir.
pub fn open(
    data_dir: &std::path::Path,
    dims: usize,
    config: &weft_config::IndexConfig,
) -> Result<CellStore, IndexError> {
    CellStore::open(&data_dir.join("cells"), dims, config, Limits::of(MAX_CELL_CHUNKS))
}

/// How a document's postings are made: the network's ladder of codebooks and the levels of it
/// chunks go to now (one, or two near a level's step: `NetworkHandle::posted_levels`), the
/// model's id, and how many cells each chunk goes to at a level (its best two, or three spread
/// ones in a large network: `NetworkHandle::cells_per_chunk` says which, and why).
#[derive(Debug, Clone)]
pub struct Placing<'a> {
    pub ladder: &'a Ladder,
    pub levels: RangeInclusive<usize>,
    pub model: &'a str,
    pub cells: usize,
}

/// The postings of the document stored under `url` in `index`, each chunk to as many cells as
/// `placing` says at each of its levels ([`Ladder::placed`]). Nothing for a document not
/// indexed.
pub fn postings_of(index: &LocalIndex, url: &str, placing: Placing<'_>) -> Result<Vec<Posting>, IndexError> {
    let Placing { ladder, levels, model, cells } = placing;
    let cells = cells.clamp(1, MAX_CELLS_PER_CHUNK);
    let id = DocId::of_url(url);
    let Some(record) = index.store().doc(&id)? else { return Ok(Vec::new()) };
    if record.state != DocState::Indexed {
        return Ok(Vec::new());
    }
    let mut chunks = Vec::new();
    for key in &record.chunks {
        let (Some(chunk), Some(vector)) = (index.store().chunk(*key)?, index.store().vector(*key)?) else { continue };
        let text = chunk.text()?;
        for cell in ladder.placed(&vector, levels.clone(), cells) {
            // Signed by the network layer as it publishes them.
            let signature = Vec::new();
            chunks.push(CellChunk {
                cell,
                position: chunk.position,
                text: text.clone(),
                vector: vector.clone(),
                signature,
            });
        }
    }
    let page = record.page();
    let (language, simhash, fetched_at) = (record.language, record.simhash, record.fetched_at);
    let publisher = weft_index::PeerName::this_node();
    let doc = CellDoc { id, page, language, simhash, fetched_at, publisher, publisher_key: Vec::new(), chunks };
    Ok(postings(doc, ladder, model))
}

/// A document's chunks as postings, one per (chunk, cell): what is published (signed then),
/// and what a cell's former owner hands to its new one (as their publisher signed them).
pub fn postings(doc: CellDoc, ladder: &Ladder, model: &str) -> Vec<Posting> {
    let doc_hex = doc.id.hex();
    doc.chunks
        .into_iter()
        .map(|c| Posting {
            codebook: ladder.level(0).id().to_string(),
            cell: c.cell,
            model: model.to_string(),
            doc: doc_hex.clone(),
            position: c.position,
            page: doc.page.clone(),
            text: c.text,
            vector: Posting::encode_vector(&c.vector),
            simhash: doc.simhash,
            language: doc.language.clone(),
            fetched_at: doc.fetched_at,
            publisher: doc.publisher_key.clone(),
            signature: c.signature,
        })
        .collect()
}

/// The cells the document stored under `url` may have been posted to at `levels` (each chunk's
/// best [`MAX_CELLS_PER_CHUNK`] and its spread ones at each: which, and at which levels,
/// depended on the network's size when it was published), and its fetch time: what a
/// withdrawal of it names. A withdrawal reaching an
/// owner that never had the document drops nothing there; one reaching an owner that holds it
/// through a cell the new version still reaches drops the old version only, which the new
/// postings, sent with it, replace (see [`withdrawal`]). `None` for a document not indexed
/// here.
pub fn posted(
    index: &LocalIndex,
    url: &str,
    ladder: &Ladder,
    levels: RangeInclusive<usize>,
) -> Result<Option<(Vec<u32>, u64)>, IndexError> {
    let Some(record) = index.store().doc(&DocId::of_url(url))? else { return Ok(None) };
    if record.state != DocState::Indexed {
        return Ok(None);
    }
    let mut cells = Vec::new();
    for key in &record.chunks {
        if let Some(vector) = index.store().vector(*key)? {
            // Its spread cells (a large network's) and its best ones (a small network's).
            cells.extend(ladder.cells_near(&vector, levels.clone()));
        }
    }
    cells.sort_unstable();
    cells.dedup();
    Ok(Some((cells, record.fetched_at)))
}

/// The withdrawal of what a document posted before (`before`: its cells and fetch time) from
/// the cells its new postings (`now`) no longer reach; `None` when there are none.
///
/// An owner keeps a document, not a (document, cell): a withdrawal drops the document there
/// if it was fetched at or before the tombstone's time, whichever of its cells brought it. So
/// none goes when the new version was fetched in the same second as the old (a second index
/// of the same fetch): it would drop the new version from an owner that also holds one of
/// the cells it still reaches. What it left behind there expires with its TTL.
pub fn withdrawal(url: &str, before: Option<(Vec<u32>, u64)>, now: &[Posting]) -> Option<Withdrawal> {
    let (cells, at) = before?;
    if now.iter().any(|p| p.fetched_at <= at) {
        return None;
    }
    let gone: Vec<u32> = cells.into_iter().filter(|c| !now.iter().any(|p| p.cell == *c)).collect();
    (!gone.is_empty()).then(|| Withdrawal {
        tombstone: Tombstone { doc: DocId::of_url(url).hex(), url: url.to_string(), at },
        cells: gone,
    })
}

/// Stores one batch of postings (grouped by document) and withdrawals; returns how many
/// postings and withdrawals it took. Blocking.
pub fn store_batch(
    store: &CellStore,
    inbound: &PostingsInbound,
    rank: &dyn Fn(&DocId) -> u32,
) -> Result<u32, CellStoreError> {
    let mut docs: BTreeMap<String, CellDoc> = BTreeMap::new();
    for p in &inbound.batch.postings {
        let Ok(id) = DocId::parse_hex(&p.doc) else { continue };
        // The publisher that signed it (the network checked the signature): for a cell's
        // hand-over, not the member that handed it on.
        let publisher = crate::replicas::publisher_name(inbound.from, p.publisher_id());
        let doc = docs.entry(p.doc.clone()).or_insert_with(|| CellDoc {
            id,
            page: p.page.clone(),
            language: p.language.clone(),
            simhash: p.simhash,
            fetched_at: p.fetched_at,
            publisher,
            publisher_key: p.publisher.clone(),
            chunks: Vec::new(),
        });
        let (text, vector, signature) = (p.text.clone(), p.vector(), p.signature.clone());
        doc.chunks.push(CellChunk { cell: p.cell, position: p.position, text, vector, signature });
    }
    let mut taken = 0u32;
    for (_, doc) in docs {
        // One chunk per posting (a chunk posted to two cells comes twice; stored once).
        let postings = doc.chunks.len() as u32;
        match store.put(doc) {
            Ok(_) => taken += postings,
            // Refused for good (the store counts it): acknowledged as not taken, so that the
            // publisher does not send it again and again.
            Err(CellStoreError::Quota { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    for t in &inbound.batch.tombstones {
        if let Ok(id) = DocId::parse_hex(&t.doc) {
            store.withdraw(id, t.at)?;
            taken += 1;
        }
    }
    taken += crate::replicas::store(store, &inbound.batch.replicas, inbound.from, rank)?;
    Ok(taken)
}

/// Stores the postings the network delivers for this node's cells until it stops; each
/// received batch is acknowledged once stored (or answered busy, and sent again).
/// `network` and `doc_replicas` (`index.replicas`) rank the copies a full replica store may
/// evict.
pub async fn store_postings(
    store: Arc<CellStore>,
    network: weft_p2p::NetworkHandle,
    doc_replicas: usize,
    mut inbound: tokio::sync::mpsc::Receiver<PostingsInbound>,
) {
    // The words' index (tantivy, a cache of sled) is committed every SYNC_EVERY, not per
    // batch: a commit per batch of a few postings cost twenty nodes on two cores most of their
    // CPU. What is acknowledged is in sled already.
    let mut sync = tokio::time::interval(SYNC_EVERY);
    sync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut dirty = false;
    loop {
        let mut batch = tokio::select! {
            batch = inbound.recv() => match batch {
                Some(b) => b,
                None => break,
            },
            _ = sync.tick() => {
                if std::mem::take(&mut dirty) {
                    let s = store.clone();
                    match tokio::task::spawn_blocking(move || s.sync()).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::warn!("cell store: {e}"),
                        Err(e) => tracing::warn!("cell store: {e}"),
                    }
                }
                continue;
            }
        };
        dirty = true;
        let reply = batch.reply.take();
        let s = store.clone();
        let rank = crate::replicas::nearness(network.ring(), network.peer_id(), doc_replicas);
        let taken = bounded("postings not stored", STORE_BOUND, move || store_batch(&s, &batch, &rank)).await;
        if let Some(reply) = reply {
            let _ = reply.send(taken);
        }
    }
    let _ = tokio::task::spawn_blocking(move || store.sync()).await;
}

/// Hands the postings this node holds for its cells to the cells' new owners whenever the
/// member set changes, so that a cell keeps its postings while its owners come and go. Of a
/// cell's former owners still members, the first sends (one copy for each new owner). When the
/// change brings a level of the codebook's ladder into the posted levels, the postings held
/// are placed at that level too (`cell_levels`). Runs until the network stops.
pub async fn hand_over_on_changes(
    store: Arc<CellStore>,
    network: weft_p2p::NetworkHandle,
    replicas: usize,
    model: String,
) {
    let me = network.peer_id();
    let ladder = weft_p2p::placement::shipped_ladder();
    let mut rings = network.ring_changes();
    let mut previous = rings.borrow_and_update().clone();
    while rings.changed().await.is_ok() {
        let ring = rings.borrow_and_update().clone();
        let levels = ladder.accepted_levels(ring.members().len(), replicas);
        let gained = gained_owners(&previous, &ring, ladder, levels, replicas, &me);
        let climbs = ladder.climbs(previous.members().len(), ring.members().len(), replicas);
        let placing: Vec<(weft_p2p::placement::ladder::Climb, BTreeSet<u32>)> = climbs
            .into_iter()
            .map(|c| (c, crate::cell_levels::placing_cells(ladder, &c, &previous, &ring, replicas, &me)))
            .collect();
        let before = std::mem::replace(&mut previous, ring.clone());
        let mut cells: BTreeSet<u32> = gained.keys().copied().collect();
        cells.extend(placing.iter().flat_map(|(_, cells)| cells.iter().copied()));
        if cells.is_empty() {
            continue;
        }
        // A piece at a time (see `hand_over`): the store may hold far more than memory should.
        let mut after = None;
        let mut sent: BTreeMap<weft_p2p::PeerId, usize> = BTreeMap::new();
        loop {
            let (s, c) = (store.clone(), cells.clone());
            let (held, next) = match tokio::task::spawn_blocking(move || {
                s.held_in_page(&c, after, crate::hand_over::PIECE_DOCS)
            })
            .await
            {
                Ok(Ok(page)) => page,
                Ok(Err(e)) => {
                    tracing::warn!("cell hand-over: {e}");
                    break;
                }
                Err(e) => {
                    tracing::warn!("cell hand-over: {e}");
                    break;
                }
            };
            let mut to: BTreeMap<weft_p2p::PeerId, Vec<Posting>> = BTreeMap::new();
            let mut mine = Vec::new();
            for doc in &held {
                for (climb, _) in &placing {
                    let (others, own) =
                        crate::cell_levels::placed_anew(doc, ladder, climb, (&before, &ring), replicas, &me);
                    for (owner, chunks) in others {
                        let placed = CellDoc { chunks, ..doc.clone() };
                        to.entry(owner).or_default().extend(postings(placed, ladder, &model));
                    }
                    if !own.is_empty() {
                        mine.push(CellDoc { chunks: own, ..doc.clone() });
                    }
                }
            }
            for posting in held.into_iter().flat_map(|doc| postings(doc, ladder, &model)) {
                for owner in gained.get(&posting.cell).into_iter().flatten() {
                    to.entry(*owner).or_default().push(posting.clone());
                }
            }
            if !mine.is_empty() {
                let s = store.clone();
                let put = move || mine.into_iter().try_for_each(|doc| s.put(doc).map(|_| ()));
                // Logged and given up on failure: the publishers' re-announce places them too.
                let _ = bounded("cells placed at a new level", STORE_BOUND, put).await;
            }
            for (owner, postings) in to {
                *sent.entry(owner).or_default() += postings.len();
                network.hand_over_postings(owner, postings);
            }
            match next {
                Some(next) => after = Some(next),
                None => break,
            }
            crate::hand_over::room(&network).await;
        }
        for (owner, postings) in sent {
            tracing::info!(%owner, postings, "handed cells' postings to their new owner");
        }
    }
}

/// For each cell of `levels` this node must hand over after the ring went from `before` to
/// `after`: the cell's owners on `after` that were not owners on `before`. A cell is this
/// node's to hand over when it is the first of the cell's owners on `before` that is still a
/// member.
pub fn gained_owners(
    before: &weft_p2p::Ring,
    after: &weft_p2p::Ring,
    ladder: &Ladder,
    levels: RangeInclusive<usize>,
    replicas: usize,
    me: &weft_p2p::PeerId,
) -> BTreeMap<u32, Vec<weft_p2p::PeerId>> {
    let mut out = BTreeMap::new();
    for cell in ladder.cells_of_levels(levels) {
        let old = ladder.owners(before, cell, replicas);
        if old.iter().find(|o| after.contains(o)) != Some(me) {
            continue;
        }
        let new: Vec<weft_p2p::PeerId> =
            ladder.owners(after, cell, replicas).into_iter().filter(|o| !old.contains(o) && o != me).collect();
        if !new.is_empty() {
            out.insert(cell, new);
        }
    }
    out
}

/// This node's answer to a question: its own index's hits and its cell store's, one hit per
/// page (the better score and the better words' rank), best first.
pub fn merge(mut local: Vec<Hit>, cells: Vec<Hit>, k: usize) -> Vec<Hit> {
    for hit in cells {
        match local.iter_mut().find(|h| h.page.url == hit.page.url) {
            Some(h) => {
                if hit.score > h.score {
                    h.score = hit.score;
                    h.snippet = hit.snippet;
                    h.chunk = hit.chunk;
                }
                h.lexical_rank = match (h.lexical_rank, hit.lexical_rank) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            None => local.push(hit),
        }
    }
    let mut fused = weft_index::fuse(local, weft_index::Fusion::DEFAULT, |h| h.score, |h| h.lexical_rank);
    fused.truncate(k);
    fused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str, score: f32, rank: Option<u32>) -> Hit {
        Hit {
            page: weft_index::PageMeta { url: url.into(), title: url.into(), ..Default::default() },
            snippet: format!("{url} {score}"),
            score,
            chunk: 0,
            aliases: Vec::new(),
            simhash: None,
            lexical_rank: rank,
            cell: None,
            crawled_by: None,
        }
    }

    #[test]
    fn a_replaced_document_is_withdrawn_from_the_cells_it_left() {
        let posting = |cell: u32| Posting {
            codebook: "cb".into(),
            cell,
            model: "m".into(),
            doc: DocId::of_url("http://a.test/p").hex(),
            position: 0,
            page: weft_index::PageMeta { url: "http://a.test/p".into(), ..Default::default() },
            text: String::new(),
            vector: Vec::new(),
            simhash: None,
            language: None,
            fetched_at: 20,
            publisher: Vec::new(),
            signature: Vec::new(),
        };
        let w = withdrawal("http://a.test/p", Some((vec![1, 2, 3], 10)), &[posting(2), posting(4)]).unwrap();
        assert_eq!(w.cells, vec![1, 3]);
        assert_eq!((w.tombstone.at, w.tombstone.doc.as_str()), (10, DocId::of_url("http://a.test/p").hex().as_str()));
        assert!(withdrawal("http://a.test/p", Some((vec![2], 10)), &[posting(2)]).is_none(), "no cell left");
        assert!(withdrawal("http://a.test/p", None, &[posting(2)]).is_none(), "nothing posted before");
        // Evicted: every cell it was posted to.
        assert_eq!(withdrawal("http://a.test/p", Some((vec![5, 6], 10)), &[]).unwrap().cells, vec![5, 6]);
        // Indexed again from the same fetch: a tombstone of that second would drop the new
        // version too, wherever it lands beside one of the cells kept.
        assert!(withdrawal("http://a.test/p", Some((vec![1, 2, 3], 20)), &[posting(2)]).is_none());
    }

    #[test]
    fn the_first_former_owner_still_there_hands_a_cell_to_each_new_owner() {
        let ladder = weft_p2p::placement::shipped_ladder();
        let book = ladder.level(0);
        let members: Vec<weft_p2p::PeerId> = (0..6).map(|_| weft_p2p::PeerId::random()).collect();
        let before = weft_p2p::Ring::new(members[..5].to_vec(), 50);
        let after = weft_p2p::Ring::new(members.to_vec(), 50); // members[5] joined
        let joined = members[5];
        let mut handed: BTreeMap<u32, Vec<weft_p2p::PeerId>> = BTreeMap::new();
        for me in &members[..5] {
            for (cell, owners) in gained_owners(&before, &after, ladder, 0..=0, 3, me) {
                assert!(handed.insert(cell, owners.clone()).is_none(), "cell {cell} handed over twice");
                assert_eq!(owners, vec![joined], "only the newcomer gained cells");
            }
        }
        // Every cell the newcomer owns now is handed to it, by exactly one former owner.
        let owned: Vec<u32> = (0..book.len() as u32)
            .filter(|c| weft_p2p::placement::cell_owners(&after, book.id(), *c, 3).contains(&joined))
            .collect();
        assert!(!owned.is_empty());
        assert_eq!(handed.keys().copied().collect::<Vec<_>>(), owned);
        // A member leaves: the cells it held gain an owner each, handed by a surviving owner.
        let gone = weft_p2p::Ring::new(members[1..].to_vec(), 50);
        let mut total = 0;
        for me in &members[1..] {
            total += gained_owners(&after, &gone, ladder, 0..=0, 3, me).len();
        }
        let held = (0..book.len() as u32)
            .filter(|c| weft_p2p::placement::cell_owners(&after, book.id(), *c, 3).contains(&members[0]))
            .count();
        assert_eq!(total, held);
    }

    #[test]
    fn a_page_in_both_stores_is_one_hit_with_the_better_of_each() {
        let local = vec![hit("http://a.test/1", 0.5, Some(3)), hit("http://a.test/2", 0.4, None)];
        let cells = vec![hit("http://a.test/1", 0.7, Some(5)), hit("http://b.test/9", 0.9, Some(1))];
        let merged = merge(local, cells, 10);
        assert_eq!(merged.len(), 3);
        let one = merged.iter().find(|h| h.page.url == "http://a.test/1").unwrap();
        assert_eq!((one.score, one.lexical_rank), (0.7, Some(3)));
        assert_eq!(merged[0].page.url, "http://b.test/9", "best by meaning and words");
        assert_eq!(merge(merged, Vec::new(), 2).len(), 2);
    }
}
