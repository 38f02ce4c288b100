//! Each simulated minute: every member's traffic and connections sampled, and the observers'
//! rings compared (disagreement, owners gone).

use super::{Ev, Sim};
use crate::scale::gossip;
use crate::scale::heartbeats::Members;
use crate::scale::member::{Shared, Table, PING_BYTES_PER_SEC};
use crate::scale::rings;
use libp2p::PeerId;

impl Sim {
    pub(super) fn sample(&mut self) {
        let now = self.now;
        self.at(now + 60.0, Ev::Sample);
        let online = self.online.max(1) as f64;
        let mut ihave_total = 0.0;
        let rates = [self.published[0] / 60.0, self.published[1] / 60.0];
        let measuring = now > self.scenario.warmup_minutes * 60.0;
        let mut rates_up = Vec::new();
        let mut rates_down = Vec::new();
        let mut msg_rates = Vec::new();
        let mut conns = Vec::new();
        for node in self.nodes.iter_mut().filter(|n| n.online) {
            let outside = node.conns.len().saturating_sub(node.mesh.len());
            let (peers, ihave) = gossip::ihave_per_minute(outside, &rates);
            ihave_total += ihave;
            let pings = node.conns.len() as f64 * PING_BYTES_PER_SEC * 60.0;
            if measuring {
                self.figures.received.pings += pings;
            }
            node.up += ihave + pings;
            node.down += pings;
            node.msgs += 120.0 * peers + node.conns.len() as f64 * 8.0;
            conns.push(node.conns.len() as f64);
        }
        self.shared.down += ihave_total / online;
        if measuring {
            self.figures.received.ihave += ihave_total;
            self.figures.received.member_secs += 60.0 * self.online as f64;
        }
        for node in self.nodes.iter_mut() {
            if node.online {
                if let Some(at_join) = node.joined_shared {
                    let whole = at_join.up == 0.0 && at_join.down == 0.0 && at_join.msgs == 0.0;
                    let up = (node.up + self.shared.up - at_join.up) / 60.0;
                    let down = (node.down + self.shared.down - at_join.down) / 60.0;
                    let msgs = (node.msgs + self.shared.msgs - at_join.msgs) / 60.0;
                    // A member online for the whole minute (it came before the last sample).
                    if measuring && whole {
                        rates_up.push(up);
                        rates_down.push(down);
                        msg_rates.push(msgs);
                    }
                }
                node.joined_shared = Some(Shared::default());
            }
            (node.up, node.down, node.msgs) = (0.0, 0.0, 0.0);
        }
        // Members that came during the minute start counting from now.
        self.shared = Shared::default();
        self.published = [0.0; 2];
        if measuring {
            self.figures.up.extend(rates_up);
            self.figures.down.extend(rates_down);
            self.figures.msgs.extend(msg_rates);
            self.figures.connections.extend(conns);
            self.figures.online.push(self.online as f64);
        }
        self.measure_rings(measuring);
    }

    /// Ring disagreement among the observers and the share of hosts whose owner is gone.
    pub(super) fn measure_rings(&mut self, measuring: bool) {
        let rings: Vec<&Members> = (self.observers.iter())
            .filter_map(|o| match &self.nodes[*o as usize].table {
                Table::Real(m) if self.nodes[*o as usize].online => Some(m.as_ref()),
                _ => None,
            })
            .collect();
        let (nodes, index) = (&self.nodes, &self.index);
        let online = |p: &PeerId| index.get(p).is_some_and(|j| nodes[*j as usize].online);
        let ring_refs: Vec<&weft_p2p::Ring> = rings.iter().map(|m| m.ring()).collect();
        let Some(compared) = rings::compare(&ring_refs, &self.hosts, online) else { return };
        let (disagreement, gone) = (compared.disagreement, compared.owner_gone);
        let view = rings.iter().map(|m| m.len() as f64).sum::<f64>() / rings.len() as f64 / self.online.max(1) as f64;
        let quiet = self.now - self.last_change;
        if measuring {
            self.figures.disagreement.push(disagreement);
            self.figures.owner_gone.push(gone);
            self.figures.view.push(view);
        }
        if self.now >= self.churn_until && quiet >= 59.0 {
            self.figures.quiet_disagreement.push((quiet, disagreement));
        }
    }
}
