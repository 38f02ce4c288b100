//! Semantic placement, the node's side: every chunk this node indexes is published to the
//! owners of its two best cells of the network's codebook (`weft_p2p::placement`), and the
//! postings of the cells this node owns are kept in its cell store (`weft_index::cells`) and
//! searched with its own index — so a question reaches a chunk through its cells' owners,
//! whoever crawled it and whether its crawler is up.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use weft_index::cells::{CellChunk, CellDoc, CellStore, CellStoreError};
use weft_index::{DocId, DocState, Hit, IndexError, LocalIndex};
use weft_p2p::placement::Codebook;
use weft_p2p::postings::{Posting, MAX_CELLS_PER_CHUNK};
use weft_p2p::PostingsInbound;

/// Chunks the cell store holds at most (f16 vectors and their graph: ~1 KB each in memory).
pub const MAX_CELL_CHUNKS: usize = 500_000;
/// A received batch that takes longer than this to store is answered busy (sled can hang
/// when its files fail under it).
const STORE_BOUND: Duration = Duration::from_secs(30);

/// Opens the cell store under `cells/` in the data dir.
pub fn open(
    data_dir: &std::path::Path,
    dims: usize,
    config: &weft_config::IndexConfig,
) -> Result<CellStore, IndexError> {
    CellStore::open(&data_dir.join("cells"), dims, config, MAX_CELL_CHUNKS)
}

/// The postings of the document stored under `url` in `index`: each chunk to its best
/// [`MAX_CELLS_PER_CHUNK`] cells of `book` (measured: posting to the best two cells is what
/// keeps a question's neighbours within its 8 peers). Nothing for a document not indexed.
pub fn postings_of(index: &LocalIndex, url: &str, book: &Codebook, model: &str) -> Result<Vec<Posting>, IndexError> {
    let id = DocId::of_url(url);
    let Some(record) = index.store().doc(&id)? else { return Ok(Vec::new()) };
    if record.state != DocState::Indexed {
        return Ok(Vec::new());
    }
    let page = record.page();
    let mut out = Vec::new();
    for key in &record.chunks {
        let (Some(chunk), Some(vector)) = (index.store().chunk(*key)?, index.store().vector(*key)?) else { continue };
        let text = chunk.text()?;
        let encoded = Posting::encode_vector(&vector);
        for (cell, _) in book.nearest(&vector, MAX_CELLS_PER_CHUNK) {
            out.push(Posting {
                codebook: book.id().to_string(),
                cell,
                model: model.to_string(),
                doc: id.hex(),
                position: chunk.position,
                page: page.clone(),
                text: text.clone(),
                vector: encoded.clone(),
                simhash: record.simhash,
                language: record.language.clone(),
                fetched_at: record.fetched_at,
            });
        }
    }
    Ok(out)
}

/// Stores one batch of postings (grouped by document) and withdrawals; returns how many
/// postings and withdrawals it took. Blocking.
pub fn store_batch(store: &CellStore, inbound: &PostingsInbound) -> Result<u32, CellStoreError> {
    let publisher = inbound.from.map_or_else(|| "self".to_string(), |p| p.to_string());
    let mut docs: BTreeMap<String, CellDoc> = BTreeMap::new();
    for p in &inbound.batch.postings {
        let Ok(id) = DocId::parse_hex(&p.doc) else { continue };
        let doc = docs.entry(p.doc.clone()).or_insert_with(|| CellDoc {
            id,
            page: p.page.clone(),
            language: p.language.clone(),
            simhash: p.simhash,
            fetched_at: p.fetched_at,
            publisher: publisher.clone(),
            chunks: Vec::new(),
        });
        if doc.chunks.iter().any(|c| c.position == p.position) {
            continue; // the same chunk for its second cell: held once
        }
        doc.chunks.push(CellChunk { cell: p.cell, position: p.position, text: p.text.clone(), vector: p.vector() });
    }
    let mut taken = 0u32;
    for (_, doc) in docs {
        let n = inbound.batch.postings.iter().filter(|p| p.doc == doc.id.hex()).count() as u32;
        store.put(doc)?;
        taken += n;
    }
    for t in &inbound.batch.tombstones {
        if let Ok(id) = DocId::parse_hex(&t.doc) {
            store.withdraw(id, t.at)?;
            taken += 1;
        }
    }
    store.sync()?;
    Ok(taken)
}

/// Stores the postings the network delivers for this node's cells until it stops; each
/// received batch is acknowledged once stored (or answered busy, and sent again).
pub async fn store_postings(store: Arc<CellStore>, mut inbound: tokio::sync::mpsc::Receiver<PostingsInbound>) {
    while let Some(mut batch) = inbound.recv().await {
        let reply = batch.reply.take();
        let s = store.clone();
        let task = tokio::task::spawn_blocking(move || store_batch(&s, &batch));
        let taken = match tokio::time::timeout(STORE_BOUND, task).await {
            Ok(Ok(Ok(n))) => Some(n),
            Ok(Ok(Err(e))) => {
                tracing::warn!("postings not stored: {e}");
                None
            }
            Ok(Err(e)) => {
                tracing::warn!("postings not stored: {e}");
                None
            }
            Err(_) => {
                tracing::warn!("postings not stored within {} s", STORE_BOUND.as_secs());
                None
            }
        };
        if let Some(reply) = reply {
            let _ = reply.send(taken);
        }
    }
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
        }
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
