//! The roster events a run made, in order: who, when, what, its size and the real signed event;
//! and how many changed in each second, for the key lists of a digest's time bucket.

use std::collections::VecDeque;
use weft_p2p::roster::event::Event;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Happened {
    Joined,
    Refuted,
    Left,
    Dead,
}

/// One roster event in flight or done.
pub struct Change {
    pub node: u32,
    /// Virtual seconds.
    pub at: f64,
    pub what: Happened,
    pub bytes: f64,
    pub real: Event,
}

/// The run's roster events.
#[derive(Default)]
pub struct Log {
    changes: Vec<Change>,
    /// Changes so far at each second with a change (unix), the last 20 minutes.
    per_second: VecDeque<(u64, u32)>,
}

impl Log {
    /// Records `change`, made at `unix`: its id.
    pub fn record(&mut self, change: Change, unix: u64) -> usize {
        self.changes.push(change);
        let total = self.per_second.back().map_or(0, |(_, n)| *n) + 1;
        match self.per_second.back_mut() {
            Some((s, n)) if *s == unix => *n = total,
            _ => self.per_second.push_back((unix, total)),
        }
        while self.per_second.front().is_some_and(|(s, _)| *s + 1200 < unix) {
            self.per_second.pop_front();
        }
        self.changes.len() - 1
    }

    pub fn len(&self) -> usize {
        self.changes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Bytes of the events from `id` on.
    pub fn bytes_since(&self, id: usize) -> f64 {
        self.changes[id.min(self.changes.len())..].iter().map(|c| c.bytes).sum()
    }

    /// Bytes of the departures made at or after virtual time `t` (the tombstones a roster
    /// page still carries).
    pub fn departures_since(&self, t: f64) -> f64 {
        (self.changes.iter().rev())
            .take_while(|c| c.at >= t)
            .filter(|c| matches!(c.what, Happened::Left | Happened::Dead))
            .map(|c| c.bytes)
            .sum()
    }

    /// Changes made in `[from, until)` (unix seconds, within the last 20 minutes).
    pub fn made_in(&self, from: u64, until: u64) -> f64 {
        // The running count of the last second with a change before `sec`.
        let upto = |sec: u64| {
            let k = self.per_second.partition_point(|(s, _)| *s < sec);
            if k == 0 {
                0
            } else {
                self.per_second[k - 1].1
            }
        };
        f64::from(upto(until) - upto(from))
    }
}

impl std::ops::Index<usize> for Log {
    type Output = Change;

    fn index(&self, id: usize) -> &Change {
        &self.changes[id]
    }
}

#[cfg(test)]
mod tests {
    use super::{Change, Happened, Log};
    use libp2p::PeerId;
    use weft_p2p::roster::event::{Event, What};

    #[test]
    fn changes_are_counted_by_second_and_departures_by_time() {
        let mut log = Log::default();
        let real = Event::new(&PeerId::random(), 1, What::Left);
        for (at, unix, what) in [(0.0, 100, Happened::Joined), (1.0, 101, Happened::Left), (1.5, 101, Happened::Dead)] {
            log.record(Change { node: 0, at, what, bytes: 10.0, real: real.clone() }, unix);
        }
        assert_eq!((log.made_in(100, 101), log.made_in(101, 102), log.made_in(90, 200)), (1.0, 2.0, 3.0));
        assert_eq!(log.departures_since(1.0), 20.0);
        assert_eq!((log.bytes_since(1), log.len(), log[2].what), (20.0, 3, Happened::Dead));
    }
}
