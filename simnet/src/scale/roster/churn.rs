//! Arrivals and departures in the roster design: a session starts (a member back within
//! [`CATCH_UP_WITHIN`] catches up by digest, one away longer pulls the roster again), ends with a
//! last word or without one, its monitors find it gone and sign its death, a member that reads its
//! own death refutes it, and a newcomer past its probation is sponsored.

use super::log::Happened;
use super::real::MESSAGE_BYTES;
use super::{Ev, Sim, Status, CATCH_UP_WITHIN, DETECT_SECS};
use crate::scale::sessions::Kind;
use weft_p2p::roster::{Roster, PROBATION, REFUTE_FOR};

impl Sim {
    pub(super) fn pending_down(&mut self, i: u32, at: f64) {
        self.net.nodes[i as usize].ending = true;
        if at < self.churn_until {
            // The session running, or (before it starts) the next one.
            let node = &self.net.nodes[i as usize];
            let s = if node.online { node.session } else { node.session + 1 };
            self.at(at, Ev::Down(i, s.max(1)));
        }
    }

    pub(super) fn up(&mut self, i: u32) {
        let now = self.now;
        if (now >= self.churn_until && now > 61.0) || self.net.nodes[i as usize].online {
            return;
        }
        self.online += 1;
        self.strands.back(i, now);
        let unix = self.unix();
        self.net.nodes[i as usize].come_online(unix, self.shared);
        let away = now - self.states[i as usize].left_at;
        let missed: f64 =
            if away <= CATCH_UP_WITHIN { self.changes.bytes_since(self.states[i as usize].seen_until) } else { 0.0 };
        let latest = self.states[i as usize].latest.map(|l| (self.changes[l].what, self.changes[l].at));
        let snapshot = self.snapshot_bytes();
        let st = &mut self.states[i as usize];
        st.arrived = now;
        if away <= CATCH_UP_WITHIN && st.since > 0 {
            // With real rosters everywhere, the real digests catch it up.
            st.backlog = if self.scenario.real_everywhere { 0.0 } else { missed };
            st.status = match latest {
                Some((Happened::Joined | Happened::Refuted, _)) => Status::Member,
                Some((Happened::Dead, at)) if now - at < REFUTE_FOR as f64 => Status::Member,
                _ => Status::Probation(now + PROBATION as f64),
            };
        } else {
            st.status = Status::Syncing(snapshot);
            self.syncing += 1;
            st.cursor = None;
            if self.scenario.real_everywhere {
                st.real = Some(Box::new(Roster::new(weft_p2p::DEFAULT_VNODES)));
            }
        }
        if let Some(Happened::Dead) = latest.map(|l| l.0) {
            if self.states[i as usize].status == Status::Member {
                self.refute(i);
            }
        }
        self.links(i, true);
        if self.net.nodes[i as usize].observer.is_none() && !self.net.nodes[i as usize].ending {
            let kind = self.net.nodes[i as usize].kind;
            let length = self.sessions.session_secs(kind, &mut self.net.rng);
            self.pending_down(i, now + length);
        }
    }

    /// What a newcomer pulls: the entries of the members and of the last hour's departures.
    fn snapshot_bytes(&self) -> f64 {
        let members = self.members.len() as f64 * self.sizes.joined;
        members + self.changes.departures_since(self.now - 3600.0)
    }

    pub(super) fn down(&mut self, i: u32, session: u32) {
        let iu = i as usize;
        if !self.net.nodes[iu].online || self.net.nodes[iu].session != session {
            return;
        }
        let now = self.now;
        let member = self.states[iu].status == Status::Member;
        let graceful = (self.net.rng.below(1000) as f64) < self.sessions.graceful * 1000.0;
        if member && graceful {
            // It tells two members of its view, and goes.
            let told: Vec<u32> =
                self.net.nodes[iu].mesh.iter().copied().filter(|j| !self.net.cut(i, *j)).take(2).collect();
            let real = self.keys.left(i, self.unix());
            let mut to = Vec::new();
            for j in told {
                self.net.send(i, j, self.sizes.left + MESSAGE_BYTES);
                if !self.lost() {
                    to.push(j);
                }
            }
            if to.is_empty() {
                // Its last word lost, its monitors find it gone.
                let detect = DETECT_SECS.0 + self.net.rng.below(1000) as f64 / 1000.0 * (DETECT_SECS.1 - DETECT_SECS.0);
                self.at(now + detect, Ev::Detect(i, session));
                self.offline(i);
                self.after_down(i, now);
                return;
            }
            self.members.remove(i);
            self.change(i, Happened::Left, real, &to);
        } else if member {
            // It vanished with its hosts' queues on its disk.
            let returns = self.net.nodes[iu].kind != Kind::Newcomer;
            self.strands.crashed(i, 1.0 / self.members.len().max(1) as f64, now, returns);
            let detect = DETECT_SECS.0 + self.net.rng.below(1000) as f64 / 1000.0 * (DETECT_SECS.1 - DETECT_SECS.0);
            self.at(now + detect, Ev::Detect(i, session));
        }
        self.offline(i);
        self.after_down(i, now);
    }

    /// When a member that went down at `now` comes back, and whether its roster is kept.
    fn after_down(&mut self, i: u32, now: f64) {
        let iu = i as usize;
        let kind = self.net.nodes[iu].kind;
        let back = if kind != Kind::Newcomer {
            now + self.sessions.downtime_secs(kind, &mut self.net.rng)
        } else {
            f64::INFINITY
        };
        if back < self.churn_until {
            self.at(back, Ev::Up(i));
        }
        // A roster it will not catch up by digest is not kept meanwhile.
        if back - now > CATCH_UP_WITHIN && self.net.nodes[iu].observer.is_none() {
            self.states[iu].real = None;
        }
    }

    fn offline(&mut self, i: u32) {
        let iu = i as usize;
        let peers: Vec<u32> = self.net.nodes[iu].conns.keys().copied().collect();
        for j in peers {
            self.net.disconnect(i, j);
        }
        for node in &mut self.net.nodes {
            node.relays.retain(|r| *r != i);
        }
        self.net.nodes[iu].go_offline(self.scenario.stable);
        self.online -= 1;
        self.flight.forget(i);
        let st = &mut self.states[iu];
        if matches!(st.status, Status::Syncing(_)) {
            self.syncing -= 1;
        }
        st.status = Status::Offline;
        st.left_at = self.now;
        st.seen_until = self.changes.len();
        self.flight.settle_all(self.online - self.syncing);
    }

    /// Its monitors find member `i` gone: the first two online sign its death.
    pub(super) fn detect(&mut self, i: u32, session: u32) {
        let iu = i as usize;
        let still_gone = !self.net.nodes[iu].online || self.net.nodes[iu].session != session;
        let latest_joined =
            self.states[iu].latest.is_none_or(|l| matches!(self.changes[l].what, Happened::Joined | Happened::Refuted));
        if !still_gone || !latest_joined || !self.members.contains(i) {
            return;
        }
        self.accuse(i, None);
    }

    /// Member `i` is declared dead by two of its monitors (on `side` of a partition, if any).
    pub(super) fn accuse(&mut self, i: u32, side: Option<bool>) {
        let (net, near) = (&self.net, |j: u32| side.is_none_or(|side| self.net.side(j) == side));
        let accusers = self.members.after(i, 2, |j| net.nodes[j as usize].online && near(j));
        if accusers.len() < 2 {
            return;
        }
        let real = self.keys.dead(i, self.unix(), &accusers);
        self.net.send(accusers[0], accusers[1], self.sizes.dead + MESSAGE_BYTES);
        self.members.remove(i);
        self.strands.declared(i, self.now);
        self.change(i, Happened::Dead, real, &accusers);
    }

    /// Member `i` reads its own death while alive: it signs a join of its own.
    pub(super) fn refute(&mut self, i: u32) {
        let since = self.states[i as usize].since;
        let real = self.keys.joined(i, self.unix(), since, &[]);
        self.members.insert(i);
        self.states[i as usize].status = Status::Member;
        self.change(i, Happened::Refuted, real, &[i]);
    }

    /// A newcomer past its probation, synced, is sponsored by its two would-be monitors.
    pub(super) fn admit(&mut self, i: u32) {
        let net = &self.net;
        let sponsors = self.members.after(i, 2, |j| net.nodes[j as usize].online && !net.cut(i, j));
        if sponsors.len() < 2.min(self.members.len()) {
            return;
        }
        let at = self.unix();
        let real = self.keys.joined(i, at, at, &sponsors);
        for s in &sponsors {
            // The request and its signature back.
            self.net.send(i, *s, self.sizes.refute + MESSAGE_BYTES);
            self.net.send(*s, i, 64.0 + MESSAGE_BYTES);
        }
        self.states[i as usize].since = at;
        self.states[i as usize].status = Status::Member;
        self.members.insert(i);
        let mut holders = sponsors.clone();
        holders.push(i);
        self.change(i, Happened::Joined, real, &holders);
    }
}
