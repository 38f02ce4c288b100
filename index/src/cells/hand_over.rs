//! A cell changing owner: what the cell store holds for some cells, read a page at a time for
//! their new owners, and dropping what this node no longer owns once they were handed over.

use super::{CellChunk, CellDoc, CellStore, Provenance};
use crate::store::NewChunk;
use crate::{DocId, IndexError};
use std::collections::BTreeSet;
use std::ops::Bound;

impl CellStore {
    /// The chunks held for `cells` (to hand to a cell's new owner), by document: each as its
    /// publisher sent it, with the chunks of those cells only (a chunk once per cell). Reads
    /// every document's provenance: a ring change is rare next to what a store holds. All at
    /// once: for a store of any size, read them a page at a time ([`CellStore::held_in_page`]).
    pub fn held_in(&self, cells: &BTreeSet<u32>) -> Result<Vec<CellDoc>, IndexError> {
        let mut out = Vec::new();
        let mut after = None;
        loop {
            let (page, next) = self.held_in_page(cells, after, usize::MAX)?;
            out.extend(page);
            match next {
                Some(next) => after = Some(next),
                None => return Ok(out),
            }
        }
    }

    /// At most `max` of the documents [`CellStore::held_in`] returns, the first ones after
    /// document `after` (`None`: from the start), and where the next page starts (`None`: no
    /// more). A node holding a million postings hands a cell over in pieces this way, not by
    /// reading them all into memory.
    pub fn held_in_page(
        &self,
        cells: &BTreeSet<u32>,
        after: Option<DocId>,
        max: usize,
    ) -> Result<(Vec<CellDoc>, Option<DocId>), IndexError> {
        let mut out = Vec::new();
        let from = match after {
            Some(id) => Bound::Excluded(id.0.to_vec()),
            None => Bound::Unbounded,
        };
        for entry in self.provenance.range::<Vec<u8>, _>((from, Bound::Unbounded)) {
            let (key, bytes) = entry.map_err(IndexError::Store)?;
            if out.len() >= max {
                // The next page resumes after the last document returned.
                let last = out.last().map(|d: &CellDoc| d.id);
                return Ok((out, last));
            }
            let Ok(raw) = <[u8; 16]>::try_from(key.as_ref()) else { continue };
            let id = DocId(raw);
            let prov: Provenance =
                postcard::from_bytes(&bytes).map_err(|e| IndexError::Corrupt(format!("provenance: {e}")))?;
            if !prov.cells.iter().any(|(_, c)| cells.contains(c)) {
                continue;
            }
            let Some(record) = self.index.store().doc(&id)? else { continue };
            let signed = self.signed(&id)?;
            let mut chunks = Vec::new();
            for (position, cell) in prov.cells.iter().filter(|(_, c)| cells.contains(c)) {
                let key = id.chunk_key(*position);
                let (Some(chunk), Some(vector)) = (self.index.store().chunk(key)?, self.index.store().vector(key)?)
                else {
                    continue;
                };
                let signature = signed.of(*position);
                chunks.push(CellChunk { cell: *cell, position: *position, text: chunk.text()?, vector, signature });
            }
            out.push(CellDoc {
                id,
                page: record.page(),
                language: record.language,
                simhash: record.simhash,
                fetched_at: record.fetched_at,
                publisher: prov.publisher,
                publisher_key: signed.key,
                chunks,
            });
        }
        Ok((out, None))
    }

    /// Drops what is held for cells `keep` says no to — cells this node no longer owns, once
    /// their new owners were handed them: a document keeps its chunks posted to kept cells
    /// (a chunk posted to two cells stays while either is kept) and goes when none is left.
    /// Returns the documents and chunks dropped.
    pub fn keep_cells(&self, keep: impl Fn(u32) -> bool) -> Result<(usize, usize), IndexError> {
        let (mut docs, mut chunks) = (0, 0);
        for entry in self.provenance.iter() {
            let (key, bytes) = entry.map_err(IndexError::Store)?;
            let prov: Provenance =
                postcard::from_bytes(&bytes).map_err(|e| IndexError::Corrupt(format!("provenance: {e}")))?;
            let kept: Vec<(u32, u32)> = prov.cells.iter().copied().filter(|(_, c)| keep(*c)).collect();
            if kept.len() == prov.cells.len() {
                continue;
            }
            let Ok(raw) = <[u8; 16]>::try_from(key.as_ref()) else { continue };
            let id = DocId(raw);
            let Some(mut record) = self.index.store().doc(&id)? else { continue };
            if kept.is_empty() {
                chunks += record.chunks.len();
                docs += 1;
                self.forget(id)?;
                continue;
            }
            let mut new = Vec::new();
            for key in &record.chunks {
                let (Some(chunk), Some(vector)) = (self.index.store().chunk(*key)?, self.index.store().vector(*key)?)
                else {
                    continue;
                };
                if kept.iter().any(|(position, _)| *position == chunk.position) {
                    new.push(NewChunk { key: *key, record: chunk, vector });
                }
            }
            chunks += record.chunks.len() - new.len();
            record.chunks = new.iter().map(|c| c.key).collect();
            self.index.commit(id, &record, new)?;
            let provenance = Provenance { publisher: prov.publisher.clone(), cells: kept };
            let bytes = postcard::to_stdvec(&provenance).expect("provenance serializes");
            self.provenance.insert(id.0, bytes).map_err(IndexError::Store)?;
            let mut tallies = self.tallies.lock();
            tallies.add(&prov, -1);
            tallies.add(&provenance, 1);
            drop(tallies);
            let mut signed = self.signed(&id)?;
            signed.signatures.retain(|(position, _)| provenance.cells.iter().any(|(p, _)| p == position));
            self.put_signed(&id, &signed)?;
        }
        Ok((docs, chunks))
    }
}
