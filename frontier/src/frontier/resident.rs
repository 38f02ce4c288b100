//! The hosts held in memory: the per-host state the schedule needs, for the hosts in use.

use crate::politeness::HostPoliteness;
use crate::store::QKey;
use std::collections::HashMap;
use std::ops::{Index, IndexMut};
use std::time::{Duration, Instant};

pub(super) struct HostQueue {
    pub(super) name: String,
    /// Live queue entries of this host (persisted in its record).
    pub(super) queued: u64,
    /// Pages fetched (the budget counter), persisted in its record.
    pub(super) fetched: u64,
    pub(super) in_flight: bool,
    /// The queue entry being fetched, while `in_flight`.
    pub(super) leased: Option<QKey>,
    pub(super) politeness: HostPoliteness,
    /// The schedule entry that is current for this host, if any.
    pub(super) scheduled_at: Option<Instant>,
    /// Handed to another member; if it comes back, its first request waits the hand-over grace.
    pub(super) given_away: bool,
    /// Held apart from politeness, until the member that held it before has handed it over
    /// (see [`Frontier::hold_hosts`](super::Frontier::hold_hosts), [`Frontier::release_hosts`](super::Frontier::release_hosts)).
    pub(super) hold_until: Option<Instant>,
    /// Every queued key of this host is at or after this one: the front of a drained queue is
    /// deletions, which reads skip by starting here.
    pub(super) floor: QKey,
}

impl HostQueue {
    /// When the host may be requested next: its politeness, and any hand-over hold.
    pub(super) fn ready_at(&self) -> Instant {
        self.politeness.next_allowed.max(self.hold_until.unwrap_or(self.politeness.next_allowed))
    }
}

/// A host with nothing queued, no request in flight and none for this long leaves memory (its
/// store record keeps its counts and politeness).
pub const IDLE_FOR: Duration = Duration::from_secs(600);

/// The hosts held in memory, by id (indexed like a vector by the id; a host in use — with a
/// lease, a queue or a schedule entry — is always here).
#[derive(Default)]
pub(super) struct Resident(pub(super) HashMap<u32, HostQueue>);

impl Resident {
    pub(super) fn get(&self, id: u32) -> Option<&HostQueue> {
        self.0.get(&id)
    }

    pub(super) fn insert(&mut self, id: u32, h: HostQueue) {
        self.0.insert(id, h);
    }

    /// The ids held, ascending.
    pub(super) fn ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.0.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &HostQueue> {
        self.0.values()
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Index<usize> for Resident {
    type Output = HostQueue;
    fn index(&self, id: usize) -> &HostQueue {
        self.0.get(&(id as u32)).expect("a host in use is held in memory")
    }
}

impl IndexMut<usize> for Resident {
    fn index_mut(&mut self, id: usize) -> &mut HostQueue {
        self.0.get_mut(&(id as u32)).expect("a host in use is held in memory")
    }
}
