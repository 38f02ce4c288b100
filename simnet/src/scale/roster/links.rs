//! The connections a member of the roster design keeps — its view, its relays, and whatever
//! else it dials — and what setting them up costs: the members themselves (their links and
//! counters), the randomness that picks views and hole punches, and the partition that cuts them.

use crate::rng::Rng;
use crate::scale::member::{Conn, Node, Relaying, HANDSHAKE_BYTES, MAX_CIRCUITS, RELAYS};
use crate::scale::Partition;
use weft_p2p::grid::Grid;

/// A member's random view: it dials this many members and takes at most `VIEW_MAX` in.
pub const VIEW: usize = 8;
pub const VIEW_MAX: usize = 12;

/// The members and their links.
pub struct Net {
    pub nodes: Vec<Node>,
    pub rng: Rng,
    /// The share of hole punches that make a relayed connection direct.
    punch: f64,
    seed: u64,
    partition: Option<Partition>,
    /// The partition is in force.
    pub partitioned: bool,
    /// Virtual time, and whether dials are counted (past the warm-up).
    pub now: f64,
    pub measuring: bool,
    /// Handshake bytes received network-wide while measured.
    pub handshakes: f64,
    /// The data plane's grid over every member, when views are drawn among its links (as past
    /// `weft_p2p::grid::FROM_MEMBERS` members, `RosterNode::set_links`): a member's view is
    /// then `VIEW` − 1 of its links online and one member at random. A link is a connection
    /// the data plane holds anyway, so a member takes it in past `VIEW_MAX`.
    pub grid: Option<Grid<u32>>,
}

impl Net {
    pub fn new(nodes: Vec<Node>, rng: Rng, punch: f64, seed: u64, partition: Option<Partition>) -> Net {
        Net {
            nodes,
            rng,
            punch,
            seed,
            partition,
            partitioned: false,
            now: 0.0,
            measuring: false,
            handshakes: 0.0,
            grid: None,
        }
    }

    /// Refills `i`'s view with members online (`online` of them), each dialled: among its grid
    /// links first when views are drawn there, then at random.
    pub fn refill_view(&mut self, i: u32, online: usize) {
        let iu = i as usize;
        let gone: Vec<u32> = self.nodes[iu].mesh.iter().copied().filter(|j| !self.nodes[*j as usize].online).collect();
        self.nodes[iu].mesh.retain(|j| !gone.contains(j) && *j != i);
        if let Some(grid) = &self.grid {
            let links = grid.neighbours(i);
            let mut candidates: Vec<u32> = (links.iter().copied())
                .filter(|j| self.nodes[*j as usize].online && !self.nodes[iu].mesh.contains(j))
                .collect();
            let linked = |net: &Net| net.nodes[iu].mesh.iter().filter(|j| links.contains(j)).count();
            while linked(self) + 1 < VIEW && !candidates.is_empty() {
                let j = candidates.swap_remove(self.rng.below(candidates.len()));
                if !self.cut(i, j) && self.dial(i, j) {
                    self.nodes[iu].mesh.push(j);
                    self.nodes[j as usize].mesh.push(i);
                }
            }
        }
        let mut tries = 0;
        while self.nodes[iu].mesh.len() < VIEW && tries < 3 * VIEW && online > 1 {
            tries += 1;
            let j = self.rng.below(self.nodes.len()) as u32;
            let ok = j != i
                && self.nodes[j as usize].online
                && !self.nodes[iu].mesh.contains(&j)
                && self.nodes[j as usize].mesh.len() < VIEW_MAX
                && !self.cut(i, j);
            if ok && self.dial(i, j) {
                self.nodes[iu].mesh.push(j);
                self.nodes[j as usize].mesh.push(i);
            }
        }
        if !self.nodes[iu].public && self.nodes[iu].relays.len() < RELAYS {
            self.reserve_relays(i);
        }
    }

    /// `i` swaps a random member of its full view for another (the next refill picks it).
    pub fn shuffle(&mut self, i: u32) {
        if self.nodes[i as usize].mesh.len() < VIEW {
            return;
        }
        let out = self.nodes[i as usize].mesh[self.rng.below(VIEW)];
        self.nodes[i as usize].mesh.retain(|j| *j != out);
        self.nodes[out as usize].mesh.retain(|j| *j != i);
    }

    /// The partition begins: connections across it close.
    pub fn close_across(&mut self) {
        for a in 0..self.nodes.len() as u32 {
            let across: Vec<u32> = self.nodes[a as usize].conns.keys().copied().filter(|b| self.cut(a, *b)).collect();
            for b in across {
                self.disconnect(a, b);
            }
        }
    }

    /// `from` sends `to` a message of `bytes`.
    pub fn send(&mut self, from: u32, to: u32, bytes: f64) {
        self.nodes[from as usize].up += bytes;
        self.nodes[from as usize].msgs += 1.0;
        self.nodes[to as usize].down += bytes;
        self.nodes[to as usize].msgs += 1.0;
    }

    /// `i` dials `j` (through a relay of `j`'s when it is behind NAT).
    pub fn dial(&mut self, i: u32, j: u32) -> bool {
        let counted = u64::from(self.measuring);
        self.nodes[i as usize].dials += counted;
        if !self.nodes[j as usize].online || self.cut(i, j) {
            self.nodes[i as usize].refused += counted;
            return false;
        }
        if self.nodes[i as usize].conns.contains_key(&j) {
            return true;
        }
        let relay = if self.nodes[j as usize].public {
            None
        } else {
            let relays = self.nodes[j as usize].relays.clone();
            match relays
                .into_iter()
                .find(|r| self.nodes[*r as usize].online && self.nodes[*r as usize].circuits < MAX_CIRCUITS)
            {
                Some(r) => Some(r),
                None => {
                    self.nodes[i as usize].refused += counted;
                    return false;
                }
            }
        };
        for k in [i, j] {
            self.nodes[k as usize].up += HANDSHAKE_BYTES;
            self.nodes[k as usize].down += HANDSHAKE_BYTES;
            self.nodes[k as usize].msgs += 8.0;
        }
        if let Some(r) = relay {
            self.nodes[r as usize].up += 2.0 * HANDSHAKE_BYTES;
            self.nodes[r as usize].down += 2.0 * HANDSHAKE_BYTES;
        }
        if counted == 1 {
            self.handshakes += if relay.is_some() { 4.0 } else { 2.0 } * HANDSHAKE_BYTES;
        }
        let punched = relay.is_none() || (self.rng.below(1000) as f64) < self.punch * 1000.0;
        let relay = if punched { None } else { relay };
        if let Some(r) = relay {
            self.nodes[r as usize].circuits += 1;
        }
        let conn = Conn { dialer: i, kept: true, relay, opened: self.now };
        self.nodes[i as usize].conns.insert(j, conn);
        self.nodes[j as usize].conns.insert(i, conn);
        self.nodes[j as usize].inbound += 1;
        true
    }

    /// The connection of `a` and `b` closes: out of each other's view and relays.
    pub fn disconnect(&mut self, a: u32, b: u32) {
        let Some(c) = self.nodes[a as usize].conns.remove(&b) else { return };
        self.nodes[b as usize].conns.remove(&a);
        let inbound_side = if c.dialer == a { b } else { a };
        let n = &mut self.nodes[inbound_side as usize];
        n.inbound = n.inbound.saturating_sub(1);
        if let Some(r) = c.relay {
            let relay = &mut self.nodes[r as usize];
            relay.circuits = relay.circuits.saturating_sub(1);
        }
        for (x, y) in [(a, b), (b, a)] {
            let node = &mut self.nodes[x as usize];
            node.mesh.retain(|m| *m != y);
            if node.relays.contains(&y) {
                node.relays.retain(|m| *m != y);
                let r = &mut self.nodes[y as usize];
                r.reservations = r.reservations.saturating_sub(1);
            }
        }
    }

    /// Whether member `i` is on the cut-off side of the partition.
    pub fn side(&self, i: u32) -> bool {
        self.partition.is_some_and(|p| p.holds(self.seed, i))
    }

    /// Whether `a` and `b` cannot reach each other now.
    pub fn cut(&self, a: u32, b: u32) -> bool {
        self.partitioned && self.side(a) != self.side(b)
    }
}

impl Relaying for Net {
    fn members(&mut self) -> &mut [Node] {
        &mut self.nodes
    }

    fn draw(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn dial_relay(&mut self, i: u32, r: u32) -> bool {
        self.dial(i, r)
    }
}
