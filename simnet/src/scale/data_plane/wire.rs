//! How one message of a window travels under a design — straight over a connection (held
//! for the window or closed soon after its last use) or hop by hop over the grid — and what it
//! is counted as: the pairs of members it links, the bytes each carries (a relay's too), and
//! the pages whose messages opened a connection.

use super::load::Load;
use super::nat::{hashed, pair, Nat};
use super::traffic::{Design, Traffic};
use super::{Kind, KINDS};
use crate::rng::Rng;
use std::collections::{HashMap, HashSet};
use weft_p2p::grid::Grid;

/// The messages of a window, as they are sent.
pub(super) struct Wire<'a> {
    design: Design,
    grid: Option<&'a Grid<u32>>,
    nat: &'a Nat,
    seed: u64,
    /// The share of the window a short-lived connection stays open after its last use: under
    /// the hybrid design a bulky message's connection counts only if it falls within the last
    /// `bulk_secs` of the window (it closes that long after its last use); under the brief one,
    /// every message's.
    open_share: Option<f64>,
    nat_over_grid: bool,
    records_straight: bool,
    route: Rng,
    /// The page whose messages are being sent (a page's messages to one peer leave together).
    page: u64,
    /// For each pair, the page each last counted an opening for (URLs apart from the rest).
    counted: HashMap<(u64, bool), u64>,
    sent: Sent,
}

/// What a window's messages did.
pub(super) struct Sent {
    pub design: Design,
    /// The pairs of members linked, by kind of message.
    pub pairs: Vec<HashSet<u64>>,
    pub load: Load,
    /// For each pair that exchanged something straight, the pages that sent it URLs and the
    /// pages that sent it anything else.
    pub events: HashMap<u64, [u32; 2]>,
    pub messages: u64,
    /// Links crossed (a message over the grid crosses one per hop).
    pub links: u64,
    /// Messages between members that differ in more than one coordinate that went straight.
    pub straight: u64,
}

impl<'a> Wire<'a> {
    pub(super) fn new(
        design: Design,
        grid: Option<&'a Grid<u32>>,
        traffic: &Traffic,
        nat: &'a Nat,
        members: usize,
        seed: u64,
    ) -> Wire<'a> {
        let open_share = match design {
            Design::Hybrid { bulk_secs: secs, .. } | Design::Brief { secs, .. } => {
                Some((secs / traffic.window_secs).min(1.0))
            }
            _ => None,
        };
        Wire {
            design,
            grid,
            nat,
            seed,
            open_share,
            nat_over_grid: matches!(design, Design::Hybrid { nat_over_grid: true, .. }),
            records_straight: matches!(design, Design::Hybrid { records_over_grid: false, .. }),
            route: Rng(seed ^ 0x5eed),
            page: 0,
            counted: HashMap::new(),
            sent: Sent {
                design,
                pairs: KINDS.iter().map(|_| HashSet::new()).collect(),
                load: Load::new(members),
                events: HashMap::new(),
                messages: 0,
                links: 0,
                straight: 0,
            },
        }
    }

    /// The next page's messages follow.
    pub(super) fn next_page(&mut self) {
        self.page += 1;
    }

    /// `me` sends `bytes` of `kind` to `to`.
    pub(super) fn send(&mut self, me: u32, kind: Kind, to: u32, bytes: u64) {
        if to == me {
            return;
        }
        let sent = &mut self.sent;
        sent.messages += 1;
        let bulky = matches!(kind, Kind::Postings | Kind::Copies) || (kind == Kind::Records && self.records_straight);
        let punch = self.nat.behind[me as usize] && self.nat.behind[to as usize];
        let direct = match (self.grid, self.open_share) {
            (None, share) => Some(share.unwrap_or(1.0)),
            (Some(_), Some(_)) if bulky && punch && self.nat_over_grid => None,
            (Some(_), Some(share)) if bulky => Some(share),
            _ => None,
        };
        if let Some(share) = direct {
            sent.links += 1;
            let urls = kind == Kind::Urls;
            if self.counted.insert((pair(me, to), urls), self.page) != Some(self.page) {
                sent.events.entry(pair(me, to)).or_default()[usize::from(!urls)] += 1;
            }
            let held = match self.design {
                // One batch a pair every `linger` seconds: the pair is held or not, whatever it
                // sent.
                Design::Brief { secs, url_linger: Some(linger) } if kind == Kind::Urls => {
                    hashed(pair(me, to), self.seed) <= (secs / linger).min(1.0)
                }
                _ => share >= 1.0 || self.route.unit() <= share,
            };
            if held {
                sent.pairs[kind as usize].insert(pair(me, to));
            }
            let relay = self.nat.relay_between(me, to);
            sent.load.carry(me, to, bytes, relay.map(|r| (r, held.then_some(pair(me, to)))));
            return;
        }
        let Some(grid) = self.grid else { return };
        let path = grid.path(me, to, |n| self.route.below(n));
        if path.len() == 1 && grid.differ(me, to) > Some(1) {
            sent.straight += 1;
        }
        let mut at = me;
        for hop in path {
            sent.links += 1;
            sent.pairs[kind as usize].insert(pair(at, hop));
            let relay = self.nat.relay_between(at, hop);
            sent.load.carry(at, hop, bytes, relay.map(|r| (r, Some(pair(at, hop)))));
            at = hop;
        }
    }

    /// What the window's messages did.
    pub(super) fn sent(self) -> Sent {
        self.sent
    }
}
