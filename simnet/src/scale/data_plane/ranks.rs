//! What the grid's matching costs its members unequally. A bucket's first members have links
//! into more of the neighbouring buckets than its later ones (a member links to the one of its
//! rank, where that bucket holds one), so they also carry the later ones' messages into the
//! buckets too small to hold their rank: their uplink is what bounds the grid. And a member
//! joining a bucket moves the bucket's later members a rank, so their links across change with
//! it: what that costs is the links opened per join.

use super::{mean_p99, Load};
use crate::rng::Rng;
use std::collections::HashSet;
use weft_p2p::grid::{Grid, Shape};
use weft_p2p::PeerId;

/// The ranks told apart: 0, 1, and 2 or more.
pub const RANKS: usize = 3;

/// Bytes a second sent by the members of each rank ([`RANKS`]: 0, 1, 2 or more).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ByRank {
    /// The share of members of each rank.
    pub share: Vec<f64>,
    /// KB/s each sends: mean and 99th percentile over the members of that rank.
    pub up_kb: Vec<(f64, f64)>,
}

/// What one member joining changes on the grid, averaged over joins: the members whose links
/// change, and the links opened (each a handshake between two members; as many close).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JoinChurn {
    pub members_changed: f64,
    pub links_opened: f64,
}

/// The uplink of each rank's members in `load`, over `window_secs`.
pub(super) fn by_rank(grid: &Grid<u32>, load: &Load, window_secs: f64) -> ByRank {
    let mut up: Vec<Vec<f64>> = vec![Vec::new(); RANKS];
    for (m, bytes) in load.up.iter().enumerate() {
        let Some(rank) = grid.rank(m as u32) else { continue };
        up[rank.min(RANKS - 1)].push(*bytes as f64 / window_secs / 1000.0);
    }
    let members = load.up.len().max(1) as f64;
    ByRank {
        share: up.iter().map(|v| v.len() as f64 / members).collect(),
        up_kb: up.into_iter().map(mean_p99).collect(),
    }
}

/// The grid's links as pairs (`a < b`).
fn links(grid: &Grid<u32>, members: u32) -> HashSet<(u32, u32)> {
    (0..members).flat_map(|a| grid.neighbours(a).into_iter().map(move |b| (a.min(b), a.max(b)))).collect()
}

/// `joins` members, each joining the grid of `shape` over `ids` in turn (the grid rebuilt
/// without and with it, as a member rebuilds it from its ring), drawn from `seed`. The shape
/// stays: the network's shape changes only where its size crosses a step, and then every
/// member's links change at once.
pub fn join_churn(shape: Shape, ids: &[PeerId], joins: usize, seed: u64) -> JoinChurn {
    let members = ids.len() as u32;
    let before = Grid::new(shape, ids.iter().enumerate().map(|(i, p)| (i as u32, p)));
    let old = links(&before, members);
    let mut rng = Rng(seed ^ 0x101);
    let (mut changed, mut opened) = (0usize, 0usize);
    for _ in 0..joins {
        let newcomer = super::peer(&mut rng);
        let after = Grid::new(shape, ids.iter().chain([&newcomer]).enumerate().map(|(i, p)| (i as u32, p)));
        let new = links(&after, members + 1);
        let added: Vec<&(u32, u32)> = new.difference(&old).filter(|(_, b)| *b != members).collect();
        let removed: Vec<&(u32, u32)> = old.difference(&new).collect();
        let touched: HashSet<u32> = added.iter().chain(&removed).flat_map(|(a, b)| [*a, *b]).collect();
        changed += touched.len();
        // The newcomer's own links are opened too: it is new to every one of them.
        opened += added.len() + after.neighbours(members).len();
    }
    let n = joins.max(1) as f64;
    JoinChurn { members_changed: changed as f64 / n, links_opened: opened as f64 / n }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_changes_the_links_of_its_bucket_s_later_members_and_opens_the_newcomer_s_own() {
        // Drawn as the model draws its members and newcomers, so a newcomer's rank is as likely
        // as any.
        let mut rng = Rng(3);
        let ids: Vec<PeerId> = (0..2000).map(|_| super::super::peer(&mut rng)).collect();
        let shape = Shape::fitting(ids.len(), 4, 2.5);
        let grid = Grid::new(shape, ids.iter().enumerate().map(|(i, p)| (i as u32, p)));
        let mean_links = (0..2000u32).map(|m| grid.neighbours(m).len()).sum::<usize>() as f64 / 2000.0;
        let churn = join_churn(shape, &ids, 30, 7);
        // At least the newcomer's own links, and it reaches no further than its bucket's
        // members and their partners across.
        assert!(churn.links_opened >= 0.8 * mean_links, "{churn:?} against {mean_links} links a member");
        assert!(churn.links_opened < 6.0 * mean_links, "{churn:?} against {mean_links} links a member");
        assert!(churn.members_changed < 200.0, "{churn:?}");
    }
}
