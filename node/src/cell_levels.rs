//! A network climbing the codebook's ladder: when the member count crosses into a level's
//! reach, the postings already held are placed at that level too, by the members that hold
//! them — their publishers may be away, and their weekly re-announce is a week off.
//!
//! Chunks are posted at every level a member counting a little more or fewer members would ask
//! at (`weft_p2p::placement::Ladder::posted_levels`), so a new level comes in while the old one
//! is still asked: the network fills the new level's cells from the old level's before any
//! question goes there, and the old level's cells are dropped once the member set settles
//! (`cell_upkeep::drop_unowned`). The same holds going down.
//!
//! Each chunk is placed anew by one member: of the chunk's cells at the old level (as its
//! publisher placed it), the first that still has an owner on the new ring, and of that cell's
//! owners on the old ring the first still a member — the rule a cell's hand-over follows
//! (`cells::gained_owners`; `Ladder::placer`). Pure: `cells::hand_over_on_changes` does the I/O.

use std::collections::{BTreeMap, BTreeSet};
use weft_index::cells::{CellChunk, CellDoc};
use weft_p2p::placement::ladder::Climb;
use weft_p2p::placement::Ladder;
use weft_p2p::{PeerId, Ring};

/// The cells of `climb.from` whose postings `me` may have to place anew: those it owned on
/// `before` (it holds them), the first of their former owners still a member.
pub fn placing_cells(
    ladder: &Ladder,
    climb: &Climb,
    before: &Ring,
    after: &Ring,
    replicas: usize,
    me: &PeerId,
) -> BTreeSet<u32> {
    ladder
        .cells_of_levels(climb.from..=climb.from)
        .filter(|c| ladder.owners(before, *c, replicas).into_iter().find(|o| after.contains(o)) == Some(*me))
        .collect()
}

/// Where the chunks of `doc` (as held, at `climb.from`) go at `climb.to`, for the chunks `me`
/// places: by owner other than `me`, and those `me` owns itself. A chunk once, whichever of
/// its cells at `from` brought it.
pub fn placed_anew(
    doc: &CellDoc,
    ladder: &Ladder,
    climb: &Climb,
    (before, after): (&Ring, &Ring),
    replicas: usize,
    me: &PeerId,
) -> (BTreeMap<PeerId, Vec<CellChunk>>, Vec<CellChunk>) {
    let (mut to, mut mine) = (BTreeMap::<PeerId, Vec<CellChunk>>::new(), Vec::new());
    let mut done = BTreeSet::new();
    for chunk in &doc.chunks {
        let from_level = ladder.locate(chunk.cell).map(|(l, _)| l);
        if from_level != Some(climb.from) || !done.insert(chunk.position) {
            continue;
        }
        if ladder.placer(climb, &chunk.vector, before, after, replicas) != Some(*me) {
            continue;
        }
        for cell in ladder.placed(&chunk.vector, climb.to..=climb.to, climb.to_cells) {
            let placed = CellChunk { cell, ..chunk.clone() };
            for owner in ladder.owners(after, cell, replicas) {
                if owner == *me {
                    mine.push(placed.clone());
                } else {
                    to.entry(owner).or_default().push(placed.clone());
                }
            }
        }
    }
    (to, mine)
}

#[cfg(test)]
mod tests {
    use super::{placed_anew, placing_cells};
    use std::collections::BTreeMap;
    use weft_index::cells::{CellChunk, CellDoc};
    use weft_index::DocId;
    use weft_p2p::placement::ladder::Climb;
    use weft_p2p::placement::shipped_ladder;
    use weft_p2p::{PeerId, Ring};

    #[test]
    fn every_chunk_is_placed_at_the_new_level_once_on_each_of_its_owners() {
        let ladder = shipped_ladder();
        let members: Vec<PeerId> = (0..40).map(|_| PeerId::random()).collect();
        let before = Ring::new(members[..39].to_vec(), 20);
        let after = Ring::new(members[1..].to_vec(), 20); // one left, one joined
        let climb = Climb { from: 0, to: 1, from_cells: 3, to_cells: 3 };
        // Chunks posted at level 0 by their vectors: the shipped cells themselves, leaned.
        let vectors: Vec<Vec<f32>> = (0..60u32)
            .map(|i| {
                let (a, b) = (ladder.level(0).cell(i * 4), ladder.level(0).cell(i * 4 + 1));
                let v: Vec<f32> = a.iter().zip(b).map(|(x, y)| 0.8 * x + 0.2 * y).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect();
        let doc_of = |cells: &dyn Fn(&[f32]) -> Vec<u32>| CellDoc {
            id: DocId::of_url("http://a.test/p"),
            page: Default::default(),
            language: None,
            simhash: None,
            fetched_at: 1,
            publisher: "p".into(),
            publisher_key: Vec::new(),
            chunks: vectors
                .iter()
                .enumerate()
                .flat_map(|(i, v)| {
                    cells(v).into_iter().map(move |cell| CellChunk {
                        cell,
                        position: i as u32,
                        text: String::new(),
                        vector: v.clone(),
                        signature: Vec::new(),
                    })
                })
                .collect(),
        };
        // What each former member holds: its cells' chunks at level 0.
        let mut received: BTreeMap<(PeerId, u32), usize> = BTreeMap::new();
        for me in &members[..39] {
            let cells = placing_cells(ladder, &climb, &before, &after, 3, me);
            let held = |v: &[f32]| -> Vec<u32> {
                ladder
                    .placed(v, 0..=0, 3)
                    .into_iter()
                    .filter(|c| ladder.owners(&before, *c, 3).contains(me) && cells.contains(c))
                    .collect()
            };
            let (to, mine) = placed_anew(&doc_of(&held), ladder, &climb, (&before, &after), 3, me);
            for (owner, chunks) in to {
                assert_ne!(owner, *me);
                for c in chunks {
                    *received.entry((owner, c.cell)).or_default() += 1;
                }
            }
            for c in mine {
                *received.entry((*me, c.cell)).or_default() += 1;
            }
        }
        // Every chunk reaches each owner of each of its level-1 cells, once.
        let mut expected: BTreeMap<(PeerId, u32), usize> = BTreeMap::new();
        for v in &vectors {
            for cell in ladder.placed(v, 1..=1, 3) {
                for owner in ladder.owners(&after, cell, 3) {
                    *expected.entry((owner, cell)).or_default() += 1;
                }
            }
        }
        assert_eq!(received, expected);
    }
}
