//! Anti-entropy on the simulated network: each round a member compares its roster with a
//! partner of its view, compactly (the bits of the slots both hold) or, where the member runs the
//! real roster, by the real exchange; a newcomer pulls the roster page by page first.

use super::log::Happened;
use super::real::MESSAGE_BYTES;
use super::{cost, real, Sim, Status, SNAPSHOT_RATE};
use weft_p2p::roster::event::What;
use weft_p2p::roster::{Roster, MONITORS, PROBATION};

impl Sim {
    /// Whether a message is lost (`Scenario::loss`).
    pub(super) fn lost(&mut self) -> bool {
        self.scenario.loss > 0.0 && (self.net.rng.below(1_000_000) as f64) < self.scenario.loss * 1e6
    }

    /// A random member of `i`'s view that has the roster.
    pub(super) fn partner(&mut self, i: u32) -> Option<u32> {
        let n = self.net.nodes[i as usize].mesh.len();
        let ready = |j: u32, s: &Sim| !matches!(s.states[j as usize].status, Status::Syncing(_) | Status::Offline);
        if n == 0 {
            return None;
        }
        let start = self.net.rng.below(n);
        (0..n).map(|k| self.net.nodes[i as usize].mesh[(start + k) % n]).find(|j| ready(*j, self))
    }

    /// `i` compares rosters with a member of its view: digest, keys of the buckets that differ,
    /// the events each lacks.
    pub(super) fn exchange(&mut self, i: u32) {
        let Some(j) = self.partner(i) else { return };
        if self.net.cut(i, j) {
            return;
        }
        // The digest went out; the rest of the exchange is lost with the scenario's odds.
        if self.lost() {
            self.net.send(i, j, self.sizes.digest + MESSAGE_BYTES);
            self.figures.lost_exchanges += 1;
            return;
        }
        if self.scenario.real_everywhere {
            self.exchange_real(i, j);
        }
        let sz = self.sizes;
        // With real rosters everywhere the real exchange above moved the events and counted
        // the bytes; the bits follow for the bookkeeping (deaths read, spread measured).
        let counted = !self.scenario.real_everywhere;
        if counted {
            self.net.send(i, j, sz.digest + MESSAGE_BYTES);
        }
        let (only_a, only_b) = self.flight.differ(i, j);
        let backlog = self.states[i as usize].backlog;
        if only_a.is_empty() && only_b.is_empty() && backlog <= 0.0 {
            if !counted {
                return;
            }
            self.net.send(j, i, sz.empty_answer + MESSAGE_BYTES);
            if self.measuring() {
                self.figures.received.digests += sz.digest + sz.empty_answer + 2.0 * MESSAGE_BYTES;
            }
            return;
        }
        let ids = |slots: &[usize]| slots.iter().filter_map(|s| self.flight.event(*s)).collect::<Vec<usize>>();
        let members = &self.members;
        let c = cost::exchange(
            &self.changes,
            &ids(&only_a),
            &ids(&only_b),
            backlog,
            self.unix(),
            self.unix0,
            |n| members.position(n),
            self.members.len(),
            &sz,
        );
        self.states[i as usize].backlog -= c.caught;
        if counted {
            self.net.send(j, i, c.keys + MESSAGE_BYTES);
            self.net.send(i, j, c.push + MESSAGE_BYTES);
            self.net.send(j, i, c.pull + c.caught + MESSAGE_BYTES);
        }
        if counted && self.measuring() {
            self.figures.received.digests += sz.digest + c.keys + 3.0 * MESSAGE_BYTES;
            self.figures.received.events += c.push - only_b.len() as f64 * sz.want + c.pull + c.caught;
        }
        for s in only_a {
            self.hold(j, s);
            self.free(s);
        }
        for s in only_b {
            self.hold(i, s);
            self.free(s);
        }
    }

    /// The real exchange between `i`'s and `j`'s rosters ([`real::exchange`]).
    pub(super) fn exchange_real(&mut self, i: u32, j: u32) {
        if self.states[i as usize].real.is_none() || self.states[j as usize].real.is_none() {
            return;
        }
        let (Some(mut a), Some(mut b)) = (self.states[i as usize].real.take(), self.states[j as usize].real.take())
        else {
            return;
        };
        let now = self.unix();
        let cost = real::exchange(&mut a, &mut b, now);
        self.net.send(i, j, cost.digest + cost.follow_up);
        self.net.send(j, i, cost.answer + cost.events);
        if self.measuring() {
            self.figures.received.digests += cost.digest + cost.answer;
            self.figures.received.events += cost.follow_up + cost.events;
        }
        // A member that reads its own death while alive refutes it.
        let dead_here = |x: u32, r: &Roster, s: &Sim| {
            r.event_of(&s.net.nodes[x as usize].id).is_some_and(|e| e.what == What::Dead)
                && s.states[x as usize].latest.is_some_and(|l| s.changes[l].what == Happened::Dead)
        };
        let refute: Vec<u32> =
            [(i, &a), (j, &b)].into_iter().filter(|(x, r)| dead_here(*x, r, self)).map(|(x, _)| x).collect();
        self.states[i as usize].real = Some(a);
        self.states[j as usize].real = Some(b);
        for x in refute {
            self.refute(x);
        }
    }

    /// A newcomer pulls pages of the real roster of a member of its view ([`real::page`]),
    /// [`SNAPSHOT_RATE`] bytes a second.
    pub(super) fn pull_real(&mut self, i: u32) {
        let Some(from) = self.partner(i) else { return };
        if self.states[i as usize].real.is_none() || self.states[from as usize].real.is_none() {
            return;
        }
        let (Some(mut mine), Some(theirs)) =
            (self.states[i as usize].real.take(), self.states[from as usize].real.take())
        else {
            return;
        };
        let now = self.unix();
        let mut budget = SNAPSHOT_RATE * self.round();
        let mut done = false;
        while budget > 0.0 && !done {
            let lost = self.lost();
            let (bytes, next) = real::page(&mut mine, &theirs, self.states[i as usize].cursor, now, lost);
            self.net.send(i, from, MESSAGE_BYTES + 12.0);
            self.net.send(from, i, bytes + MESSAGE_BYTES);
            if self.measuring() {
                self.figures.received.snapshots += bytes;
            }
            budget -= bytes;
            match next {
                Some(after) => self.states[i as usize].cursor = after,
                None => done = true,
            }
        }
        self.states[i as usize].real = Some(mine);
        self.states[from as usize].real = Some(theirs);
        if done {
            for s in self.flight.held_by(from) {
                self.hold(i, s);
            }
            let until = self.states[i as usize].arrived + PROBATION as f64;
            self.states[i as usize].status = Status::Probation(until);
            self.syncing -= 1;
        }
    }

    /// The members `i` keeps connections with: its view, its monitors and those it monitors
    /// (or, before it is a member, its would-be sponsors), its relays.
    pub(super) fn wanted(&self, i: u32) -> Vec<u32> {
        let node = &self.net.nodes[i as usize];
        let mut want: Vec<u32> = node.mesh.iter().chain(&node.relays).copied().collect();
        let online = |j: u32| j != i && self.net.nodes[j as usize].online;
        if !matches!(self.states[i as usize].status, Status::Syncing(_) | Status::Offline) {
            want.extend(self.members.after(i, MONITORS, online));
            if self.states[i as usize].status == Status::Member {
                want.extend(self.members.before(i, MONITORS, online));
            }
        }
        want.sort_unstable();
        want.dedup();
        want
    }
}
