//! The bytes each member sends and receives in a model run, and what the relays forward.

use std::collections::HashSet;

/// The bytes each member sends and receives, and what the relays forward.
pub(super) struct Load {
    pub(super) up: Vec<u64>,
    pub(super) down: Vec<u64>,
    pub(super) forwarded: Vec<u64>,
    pub(super) sent: u64,
    pub(super) relayed: u64,
    /// (relay, pair) for each pair a relay carried.
    pub(super) circuits: HashSet<(u32, u64)>,
}

impl Load {
    pub(super) fn new(members: usize) -> Load {
        Load {
            up: vec![0; members],
            down: vec![0; members],
            forwarded: vec![0; members],
            sent: 0,
            relayed: 0,
            circuits: HashSet::new(),
        }
    }

    /// `bytes` from `from` to `to` over one link, through a relay if one carries it (it receives
    /// and sends them on), with the pair whose circuit it holds at the window's end, if any.
    pub(super) fn carry(&mut self, from: u32, to: u32, bytes: u64, relay: Option<(u32, Option<u64>)>) {
        self.sent += bytes;
        self.up[from as usize] += bytes;
        self.down[to as usize] += bytes;
        if let Some((r, held)) = relay {
            self.relayed += bytes;
            if let Some(pair) = held {
                self.circuits.insert((r, pair));
            }
            self.forwarded[r as usize] += bytes;
            self.up[r as usize] += bytes;
            self.down[r as usize] += bytes;
        }
    }
}
