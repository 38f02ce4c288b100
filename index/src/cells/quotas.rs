//! The cell store's quotas: one publisher may hold at most a quarter of the store and one cell
//! an eighth, so a publisher, who owns the hosts it crawls and could make up pages on them,
//! cannot fill every store it posts to.

use super::Provenance;
use std::collections::HashMap;
use weft_page::PeerName;

/// How much a cell store holds, at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Chunks in all.
    pub chunks: usize,
    /// Chunks of one publisher.
    pub per_publisher: usize,
    /// Chunks posted to one cell.
    pub per_cell: usize,
}

impl Limits {
    /// `chunks` in all; a quarter of them for one publisher, an eighth for one cell.
    pub fn of(chunks: usize) -> Limits {
        Limits { chunks, per_publisher: (chunks / 4).max(1), per_cell: (chunks / 8).max(1) }
    }
}

/// Chunks held by publisher and by cell (rebuilt from the provenance at open).
#[derive(Debug, Default)]
pub(super) struct Tallies {
    publishers: HashMap<PeerName, usize>,
    cells: HashMap<u32, usize>,
}

impl Tallies {
    pub(super) fn add(&mut self, p: &Provenance, sign: isize) {
        let chunks = positions(p);
        let n = self.publishers.entry(p.publisher.clone()).or_default();
        *n = n.saturating_add_signed(sign * chunks as isize);
        if *n == 0 {
            self.publishers.remove(&p.publisher);
        }
        for (_, cell) in &p.cells {
            let n = self.cells.entry(*cell).or_default();
            *n = n.saturating_add_signed(sign);
            if *n == 0 {
                self.cells.remove(cell);
            }
        }
    }

    /// The quota storing `new` in place of `held` would pass, if any: its publisher's, else the
    /// first of its cells'. What `held` already holds counts once.
    pub(super) fn over(&self, limits: &Limits, held: Option<&Provenance>, new: &Provenance) -> Option<Over> {
        let mut publisher = self.publishers.get(&new.publisher).copied().unwrap_or(0);
        if let Some(h) = held.filter(|h| h.publisher == new.publisher) {
            publisher = publisher.saturating_sub(positions(h));
        }
        if publisher + positions(new) > limits.per_publisher {
            return Some(Over { what: "publisher", max: limits.per_publisher });
        }
        new.cells.iter().find_map(|(_, cell)| {
            let before = held.map_or(0, |h| h.cells.iter().filter(|(_, c)| c == cell).count());
            let after = new.cells.iter().filter(|(_, c)| c == cell).count();
            let now = self.cells.get(cell).copied().unwrap_or(0).saturating_sub(before);
            (now + after > limits.per_cell).then_some(Over { what: "cell", max: limits.per_cell })
        })
    }
}

/// Distinct chunks (positions) a provenance names.
pub(super) fn positions(p: &Provenance) -> usize {
    let mut positions: Vec<u32> = p.cells.iter().map(|(position, _)| *position).collect();
    positions.sort_unstable();
    positions.dedup();
    positions.len()
}

/// A quota a document would pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Over {
    /// `publisher` or `cell`.
    pub what: &'static str,
    /// The quota, chunks.
    pub max: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provenance(publisher: &str, cells: &[(u32, u32)]) -> Provenance {
        Provenance { publisher: publisher.into(), cells: cells.to_vec() }
    }

    #[test]
    fn a_publisher_and_a_cell_are_held_to_their_share_and_a_replacement_counts_once() {
        let limits = Limits::of(16);
        assert_eq!((limits.per_publisher, limits.per_cell), (4, 2));
        let mut tallies = Tallies::default();
        let held = provenance("a", &[(0, 1), (1, 2), (2, 3)]);
        tallies.add(&held, 1);
        // Two more chunks of `a` pass its quarter; the same document again does not.
        assert_eq!(tallies.over(&limits, None, &provenance("a", &[(5, 4), (6, 5)])).map(|o| o.what), Some("publisher"));
        assert_eq!(tallies.over(&limits, Some(&held), &provenance("a", &[(0, 1), (1, 2), (2, 3), (3, 4)])), None);
        // Cell 1 holds one chunk; two more of another publisher pass its eighth.
        assert_eq!(tallies.over(&limits, None, &provenance("b", &[(0, 1), (1, 1)])).map(|o| o.what), Some("cell"));
        assert_eq!(tallies.over(&limits, None, &provenance("b", &[(0, 1)])), None);
        tallies.add(&held, -1);
        assert!(tallies.publishers.is_empty() && tallies.cells.is_empty());
    }
}
