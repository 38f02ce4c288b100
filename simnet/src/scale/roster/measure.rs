//! What a roster run measures each minute — each member's traffic and connections, the
//! observers' rings against each other and against the ring of every event — and how long an
//! event takes to reach every observer.

use crate::scale::member::{Node, Shared, PING_BYTES_PER_SEC};
use crate::scale::rings;
use crate::scale::Figures;
use libp2p::PeerId;
use std::collections::HashMap;
use weft_p2p::{roster::Roster, Ring};

/// Closes the minute of every member's traffic: pings on every connection counted, and the
/// rates of those online the whole minute kept when `measuring`.
pub fn traffic(nodes: &mut [Node], measuring: bool, figures: &mut Figures) {
    for node in nodes.iter_mut() {
        if !node.online {
            (node.up, node.down, node.msgs) = (0.0, 0.0, 0.0);
            continue;
        }
        let pings = node.conns.len() as f64 * PING_BYTES_PER_SEC * 60.0;
        node.up += pings;
        node.down += pings;
        node.msgs += node.conns.len() as f64 * 8.0;
        let whole = node.joined_shared.is_some_and(|s| s.up == 0.0 && s.down == 0.0 && s.msgs == 0.0);
        if measuring {
            figures.received.pings += pings;
            figures.connections.push(node.conns.len() as f64);
            if whole {
                figures.up.push(node.up / 60.0);
                figures.down.push(node.down / 60.0);
                figures.msgs.push(node.msgs / 60.0);
            }
        }
        node.joined_shared = Some(Shared::default());
        (node.up, node.down, node.msgs) = (0.0, 0.0, 0.0);
    }
}

/// One minute's comparison of the observers' rings.
pub struct Rings {
    pub disagreement: f64,
    pub owner_gone: f64,
    /// Hosts whose owner on an observer's ring is not theirs on `truth`, on average.
    pub misrouted: f64,
    /// An observer's members over the members online.
    pub view: f64,
}

/// Compares the rings the observers' `rosters` last built, with each other and with `truth`.
pub fn rings(
    rosters: &[&Roster],
    truth: &Ring,
    hosts: &[String],
    online: impl Fn(&PeerId) -> bool,
    members_online: usize,
) -> Option<Rings> {
    let rings: Vec<&Ring> = rosters.iter().map(|r| r.built_ring()).collect();
    let misrouted = rings.iter().map(|r| rings::misrouted(r, truth, hosts)).sum::<f64>() / rings.len().max(1) as f64;
    let compared = rings::compare(&rings, hosts, online)?;
    let sizes = rosters.iter().map(|r| r.len() as f64).sum::<f64>();
    let view = sizes / rosters.len().max(1) as f64 / members_online.max(1) as f64;
    Some(Rings { disagreement: compared.disagreement, owner_gone: compared.owner_gone, misrouted, view })
}

/// Events on their way to every observer's roster.
#[derive(Default)]
pub struct Spread {
    /// Event → (its member's arrival, when it was made, the observers that have it).
    waiting: HashMap<usize, (f64, f64, Vec<bool>)>,
}

impl Spread {
    /// Event `id` was made at `made` (its member arrived at `arrived`); `have` says which
    /// observers need not wait for it (those offline).
    pub fn made(&mut self, id: usize, arrived: f64, made: f64, have: Vec<bool>) {
        self.waiting.insert(id, (arrived, made, have));
    }

    /// Observer `k` has event `id` at `now`: when it is the last, how long the event took to
    /// reach them all, and how long since its member arrived.
    pub fn reached(&mut self, id: usize, k: usize, now: f64) -> Option<(f64, f64)> {
        let (arrived, made, have) = self.waiting.get_mut(&id)?;
        have[k] = true;
        if !have.iter().all(|h| *h) {
            return None;
        }
        let took = (now - *made, now - *arrived);
        self.waiting.remove(&id);
        Some(took)
    }
}

#[cfg(test)]
mod tests {
    use super::Spread;

    #[test]
    fn an_event_has_spread_when_the_last_observer_has_it() {
        let mut s = Spread::default();
        s.made(7, 10.0, 300.0, vec![false, true, false]);
        assert_eq!(s.reached(7, 0, 305.0), None);
        assert_eq!(s.reached(7, 2, 309.0), Some((9.0, 299.0)));
        assert_eq!(s.reached(7, 1, 310.0), None, "counted once");
    }
}
