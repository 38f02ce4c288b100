//! Connections under today's design: a dial stands if both sides' limits allow it (a member
//! behind NAT through a relay with a free circuit); an idle connection closes unless it is kept.

use super::{ms, Ev, Sim};
use crate::scale::member::{Conn, Table, HANDSHAKE_BYTES, IDLE_SECS, MAX_CIRCUITS, MAX_CONNECTIONS, MAX_INBOUND};

impl Sim {
    /// `i` dials `j`: the connection stands if both sides' limits allow it (a member behind NAT
    /// through a relay with a free circuit). `kept`: a mesh peer or a relay, held open.
    pub(super) fn dial(&mut self, i: u32, j: u32, kept: bool) -> bool {
        let (iu, ju) = (i as usize, j as usize);
        let counted = u64::from(self.measuring());
        self.nodes[iu].dials += counted;
        if !self.nodes[ju].online || self.cut(i, j) {
            self.nodes[iu].refused += counted;
            return false;
        }
        if let Some(c) = self.nodes[iu].conns.get_mut(&j) {
            c.kept |= kept;
            if kept {
                if let Some(c) = self.nodes[ju].conns.get_mut(&i) {
                    c.kept = true;
                }
            }
            return true;
        }
        let relay = if self.nodes[ju].public {
            None
        } else {
            let relays = self.nodes[ju].relays.clone();
            match relays
                .into_iter()
                .find(|r| self.nodes[*r as usize].online && self.nodes[*r as usize].circuits < MAX_CIRCUITS)
            {
                Some(r) => Some(r),
                None => {
                    self.nodes[iu].refused += counted;
                    return false;
                }
            }
        };
        // The handshake is spent whether the limits then keep the connection or not.
        for k in [iu, ju] {
            self.nodes[k].up += HANDSHAKE_BYTES;
            self.nodes[k].down += HANDSHAKE_BYTES;
            self.nodes[k].msgs += 8.0;
        }
        if let Some(r) = relay {
            self.nodes[r as usize].up += 2.0 * HANDSHAKE_BYTES;
            self.nodes[r as usize].down += 2.0 * HANDSHAKE_BYTES;
        }
        if counted == 1 {
            self.figures.received.handshakes += if relay.is_some() { 4.0 } else { 2.0 } * HANDSHAKE_BYTES;
        }
        if self.nodes[iu].conns.len() >= MAX_CONNECTIONS
            || self.nodes[ju].conns.len() >= MAX_CONNECTIONS
            || self.nodes[ju].inbound >= MAX_INBOUND
        {
            self.nodes[iu].refused += counted;
            return false;
        }
        // Hole punching makes it direct, or the circuit carries it.
        let punched = relay.is_none() || (self.rng.below(1000) as f64) < self.scenario.punch * 1000.0;
        let relay = if punched { None } else { relay };
        if let Some(r) = relay {
            self.nodes[r as usize].circuits += 1;
        }
        let conn = Conn { dialer: i, kept, relay, opened: self.now };
        self.nodes[iu].conns.insert(j, conn);
        self.nodes[ju].conns.insert(i, conn);
        self.nodes[ju].inbound += 1;
        self.at(self.now + IDLE_SECS, Ev::Close { a: i, b: j, opened_ms: ms(self.now) });
        for (a, b) in [(i, j), (j, i)] {
            if self.nodes[a as usize].observer.is_some() {
                let now = self.instant();
                let (peer, addr) = (self.nodes[b as usize].id, self.nodes[b as usize].addr.clone());
                if let Table::Real(m) = &mut self.nodes[a as usize].table {
                    let change = m.present(&peer, &addr, now);
                    self.changes(a, change.into_iter().collect());
                }
            }
        }
        true
    }

    pub(super) fn close_idle(&mut self, a: u32, b: u32, opened_ms: u64) {
        let Some(c) = self.nodes[a as usize].conns.get(&b) else { return };
        if c.kept || ms(c.opened) != opened_ms {
            return;
        }
        self.disconnect(a, b);
    }

    pub(super) fn disconnect(&mut self, a: u32, b: u32) {
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
            let peer = self.nodes[y as usize].id;
            let node = &mut self.nodes[x as usize];
            node.mesh.retain(|m| *m != y);
            if node.relays.contains(&y) {
                node.relays.retain(|m| *m != y);
            }
            if let Table::Real(m) = &mut node.table {
                m.disconnected(&peer);
            }
        }
    }
}
