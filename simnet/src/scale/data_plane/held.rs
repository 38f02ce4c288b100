//! What a member holds in all: the connections its data needs (the model's pairs), the grid's
//! links it keeps whether or not the window used them, and the roster's — the members it
//! compares digests with (its view, `RosterNode::wanted`) and the monitors on either side of it
//! (those it watches and those that watch it). The network aims at 64 in all, so the roster's
//! ~20 count against the data plane's budget; where the view comes from decides how many of
//! them are new.

use super::nat::pair;
use super::{degrees, share_over, Spread};
use crate::rng::Rng;
use std::collections::HashSet;
use weft_p2p::grid::Grid;
use weft_p2p::roster::event::position;
use weft_p2p::roster::node::VIEW;
use weft_p2p::roster::MONITORS;
use weft_p2p::PeerId;

/// Where a member's roster view comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewFrom {
    /// [`VIEW`] members at random (the roster alone).
    Random,
    /// [`VIEW`] − 1 of its grid links and one member at random, the rest at random where it
    /// has fewer links (`RosterNode::set_links`).
    GridLinks,
}

/// Connections held per member, and the share holding more than 64.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Held {
    pub spread: Spread,
    pub over_64: f64,
}

/// The monitor ring's pairs: each member with the [`MONITORS`] after it by roster position
/// (`Roster::successors`; the pairs seen from the other side are those it watches).
fn monitor_pairs(ids: &[PeerId]) -> HashSet<u64> {
    let mut order: Vec<(u64, u32)> = ids.iter().enumerate().map(|(i, p)| (position(p), i as u32)).collect();
    order.sort_unstable();
    let n = order.len();
    let mut out = HashSet::new();
    for (k, (_, me)) in order.iter().enumerate() {
        for step in 1..=MONITORS.min(n.saturating_sub(1)) {
            out.insert(pair(*me, order[(k + step) % n].1));
        }
    }
    out
}

/// Each member's view: [`VIEW`] others drawn from `seed` (from its grid links first under
/// [`ViewFrom::GridLinks`], all but one).
fn view_pairs(members: usize, grid: Option<&Grid<u32>>, from: ViewFrom, seed: u64) -> HashSet<u64> {
    let mut rng = Rng(seed ^ 0x7133);
    let mut out = HashSet::new();
    let want = VIEW.min(members.saturating_sub(1));
    for me in 0..members as u32 {
        let mut view = HashSet::new();
        if let (ViewFrom::GridLinks, Some(g)) = (from, grid) {
            let mut links = g.neighbours(me);
            while view.len() + 1 < want && !links.is_empty() {
                view.insert(links.swap_remove(rng.below(links.len())));
            }
        }
        while view.len() < want {
            let other = rng.below(members) as u32;
            if other != me {
                view.insert(other);
            }
        }
        out.extend(view.into_iter().map(|v| pair(me, v)));
    }
    out
}

/// What each member holds: `data` (the window's pairs, by kind), the grid's links, the
/// monitors and the view drawn `from` where it says.
pub fn held(data: &[HashSet<u64>], grid: Option<&Grid<u32>>, ids: &[PeerId], from: ViewFrom, seed: u64) -> Held {
    let members = ids.len();
    let mut all: HashSet<u64> = data.iter().flatten().copied().collect();
    if let Some(g) = grid {
        for me in 0..members as u32 {
            all.extend(g.neighbours(me).into_iter().map(|n| pair(me, n)));
        }
    }
    all.extend(monitor_pairs(ids));
    all.extend(view_pairs(members, grid, from, seed));
    let degrees = degrees(members, &[&all]);
    Held { over_64: share_over(&degrees, 64), spread: Spread::of(degrees) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_p2p::grid::Shape;

    fn ids(n: usize) -> Vec<PeerId> {
        (0..n).map(|_| PeerId::random()).collect()
    }

    #[test]
    fn the_roster_alone_holds_its_view_and_monitors_on_both_sides() {
        let ids = ids(2000);
        let h = held(&[], None, &ids, ViewFrom::Random, 1);
        // Six monitor pairs and eight view pairs it chose, about eight more that chose it.
        let expected = (2 * MONITORS + 2 * VIEW) as f64;
        assert!((h.spread.mean - expected).abs() < 0.5, "{:?}", h.spread);
        assert!(h.spread.p50 >= 2 * MONITORS + VIEW && h.over_64 == 0.0, "{:?}", h.spread);
    }

    #[test]
    fn a_view_among_the_grid_links_adds_only_the_monitors_and_a_random_member_each_way_to_them() {
        let ids = ids(2000);
        let grid = Grid::new(Shape::fitting(ids.len(), 3, 1.5), ids.iter().enumerate().map(|(i, p)| (i as u32, p)));
        let links = held(&[], Some(&grid), &ids, ViewFrom::GridLinks, 1);
        let random = held(&[], Some(&grid), &ids, ViewFrom::Random, 1);
        let neighbours = (0..ids.len() as u32).map(|m| grid.neighbours(m).len()).sum::<usize>() as f64 / 2000.0;
        let expected = neighbours + 2.0 * MONITORS as f64 + 2.0;
        assert!(links.spread.mean < expected + 0.5, "{:?} over {neighbours}", links.spread);
        assert!(random.spread.mean > links.spread.mean + 1.5 * VIEW as f64, "{:?} against {:?}", random, links);
    }
}
