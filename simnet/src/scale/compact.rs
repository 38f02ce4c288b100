//! A member's table of the others, compact: the rules of `super::heartbeats::Members` that
//! decide whom a member dials and whom it counts, without the rings it builds.
//!
//! A member heard of becomes a candidate (at most [`MAX_CANDIDATES`] at once) and is dialled at
//! once, again every [`REDIAL_AFTER`] until [`REACH_WITHIN`], then ignored for
//! [`UNREACHED_FIRST`], doubling to [`UNREACHED_FOR`]; a member not met for half of
//! [`PRESENCE_FOR`] is dialled again, and dropped after all of it (heard again at its next
//! heartbeat). The constants mirror `super::heartbeats`'.

use crate::rng::Rng;

pub const MAX_CANDIDATES: u32 = 256;
pub const REACH_WITHIN: f64 = 30.0;
pub const REDIAL_AFTER: f64 = 5.0;
pub const UNREACHED_FIRST: f64 = 60.0;
pub const UNREACHED_FOR: f64 = 600.0;
pub const PRESENCE_FOR: f64 = 600.0;

/// One member's view of another.
#[derive(Debug, Clone, Copy)]
struct Entry {
    peer: u32,
    /// Which of the peer's sessions it was heard in: a later one is another stay.
    session: u32,
    state: State,
    /// Heard: when it is heard; Candidate: since; Member: last met; Unreached: until.
    t: f32,
    dialled: f32,
    times: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Heard,
    Candidate,
    Member,
    Unreached,
}

/// The compact table of one member.
#[derive(Debug, Default)]
pub struct Compact {
    known: Vec<Entry>,
    candidates: u32,
    members: usize,
}

impl Compact {
    /// `peer`, in its session `session`, is heard of at `at` (seconds).
    pub fn hear(&mut self, peer: u32, session: u32, at: f64) {
        let entry = Entry { peer, session, state: State::Heard, t: at as f32, dialled: f32::NEG_INFINITY, times: 0 };
        self.known.push(entry);
    }

    /// The members it counts (itself not included), as of its last tick.
    pub fn members(&self) -> usize {
        self.members
    }

    /// One tick at `now` (seconds), `period` the seconds between heartbeats: forgets peers
    /// `present` says are gone (or in another session), takes those it is `connected` to as
    /// met, and returns whom to dial.
    pub fn tick(
        &mut self,
        now: f64,
        period: f64,
        present: impl Fn(u32, u32) -> bool,
        connected: impl Fn(u32) -> bool,
        rng: &mut Rng,
    ) -> Vec<u32> {
        let (now, period) = (now as f32, period as f32);
        let mut heard_again = |now: f32| now + rng.below((period * 1000.0) as usize) as f32 / 1000.0;
        let (mut count, mut dial, mut k) = (0usize, Vec::new(), 0);
        while k < self.known.len() {
            let e = &mut self.known[k];
            if !present(e.peer, e.session) {
                if e.state == State::Candidate {
                    self.candidates -= 1;
                }
                self.known.swap_remove(k);
                continue;
            }
            let connected = connected(e.peer);
            let due = now - e.dialled >= REDIAL_AFTER as f32;
            match e.state {
                State::Heard if now >= e.t && self.candidates < MAX_CANDIDATES => {
                    if connected {
                        (e.state, e.t) = (State::Member, now);
                    } else {
                        (e.state, e.t, e.dialled) = (State::Candidate, now, now);
                        self.candidates += 1;
                        dial.push(e.peer);
                    }
                }
                State::Heard => {}
                State::Candidate => {
                    if connected {
                        (e.state, e.t) = (State::Member, now);
                        self.candidates -= 1;
                    } else if now - e.t > REACH_WITHIN as f32 {
                        let ignored = (UNREACHED_FIRST * f64::from(1u32 << e.times.min(16))).min(UNREACHED_FOR);
                        (e.state, e.t) = (State::Unreached, now + ignored as f32);
                        e.times = e.times.saturating_add(1);
                        self.candidates -= 1;
                    } else if due {
                        e.dialled = now;
                        dial.push(e.peer);
                    }
                }
                State::Member => {
                    if connected {
                        e.t = now;
                    } else if now - e.t > PRESENCE_FOR as f32 {
                        // Expired; heard again at its next heartbeat.
                        (e.state, e.t) = (State::Heard, heard_again(now));
                    } else if now - e.t > (PRESENCE_FOR / 2.0) as f32 && due {
                        e.dialled = now;
                        dial.push(e.peer);
                    }
                }
                State::Unreached => {
                    if connected {
                        (e.state, e.t) = (State::Member, now);
                    } else if now >= e.t {
                        (e.state, e.t) = (State::Heard, heard_again(now));
                    }
                }
            }
            if e.state == State::Member {
                count += 1;
            }
            k += 1;
        }
        self.members = count;
        dial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_dialled_met_redialled_and_given_up_as_members_are() {
        let mut rng = Rng(1);
        let mut t = Compact::default();
        t.hear(7, 1, 0.0);
        // Heard: a candidate, dialled at once; not reached: again after 5 s, then given up.
        assert_eq!(t.tick(0.0, 5.0, |_, _| true, |_| false, &mut rng), vec![7]);
        assert!(t.tick(2.0, 5.0, |_, _| true, |_| false, &mut rng).is_empty());
        assert_eq!(t.tick(5.0, 5.0, |_, _| true, |_| false, &mut rng), vec![7]);
        assert!(t.tick(31.0, 5.0, |_, _| true, |_| false, &mut rng).is_empty());
        assert_eq!((t.candidates, t.members()), (0, 0));
        // Ignored for a minute, heard again, then met: a member.
        assert!(t.tick(60.0, 5.0, |_, _| true, |_| false, &mut rng).is_empty());
        assert!(t.tick(100.0, 5.0, |_, _| true, |_| true, &mut rng).is_empty());
        assert!(t.tick(110.0, 5.0, |_, _| true, |_| true, &mut rng).is_empty());
        assert_eq!(t.members(), 1);
        // Not met for half of PRESENCE_FOR: dialled again; for all of it: dropped.
        assert!(t.tick(300.0, 5.0, |_, _| true, |_| false, &mut rng).is_empty());
        assert_eq!(t.tick(420.0, 5.0, |_, _| true, |_| false, &mut rng), vec![7]);
        t.tick(720.0, 5.0, |_, _| true, |_| false, &mut rng);
        assert_eq!(t.members(), 0);
        // Gone (another session): forgotten.
        t.tick(730.0, 5.0, |_, s| s == 2, |_| false, &mut rng);
        assert!(t.known.is_empty());
    }
}
