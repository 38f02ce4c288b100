//! The URL frontier: durable per-host priority queues and a ready-time schedule across hosts.
//!
//! The queue lives on disk ([`crate::store`]): each host's URLs sorted by priority under the
//! host's id, so the next URL of a host is one range read and nothing per URL is held in
//! memory. What memory holds is per host: its name, counts, politeness bucket, lease and the
//! floor below which its keys are known to be gone; across hosts a min-heap of ready times.
//! That makes the frontier's memory O(hosts) — 10 million queued URLs cost what their hosts
//! cost, plus the seen-set — and only of the hosts in use: a host with nothing queued and no
//! request for [`IDLE_FOR`] lives in its store record alone ([`Frontier::evict_idle`]) until
//! a URL of it comes again. A node that has met a million hosts over months holds the few
//! thousand it is crawling.
//!
//! Every push writes its queue entry, URL index, seen-set journal entry and the host's count
//! in one atomic batch, and every completion removes them in one batch, so after a crash
//! (kill -9) the queue is exactly what was durably acknowledged: nothing queued is lost and
//! nothing completed comes back. Callers make writes durable with [`Frontier::durability`]
//! before they acknowledge anything (e.g. before a URL batch is acked). A lease is memory
//! only: an uncompleted lease leaves its URL queued.
//!
//! This file holds the queue and the schedule; beside it: `types` (what goes in and out),
//! `resident` (the hosts held in memory), `handover` (hosts changing hands), `blocks` (operator
//! blocks), `borrow` (a host lent for one request outside the queue), `report` (states and
//! counters) and `import` (the old sled layout).

use crate::host::HostKey;
use crate::migrate::OldLayout;
use crate::politeness::HostPoliteness;
use crate::score::{is_binary, score, UrlKind, HUB_BOOST, INLINK_WEIGHT};
use crate::second::SecondCopy;
use crate::seen::SeenSet;
use crate::store::{self, HostRecord, QKey, Store, Stored};
pub use crate::store::{CompactJob, FrontierError, Result, SnapshotJob};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

mod blocks;
mod borrow;
mod handover;
mod import;
mod report;
mod resident;
mod second;
mod types;
pub use handover::{HandOff, Received};
pub use resident::IDLE_FOR;
use resident::{HostQueue, Resident};
pub use second::SecondCopiesCounts;
pub use types::*;

/// Makes frontier writes durable without holding the frontier's lock.
#[derive(Clone)]
pub struct Durability {
    store: Store,
    db: sled::Db,
}

impl Durability {
    /// Syncs the frontier's writes, then the node's sled database (a hand-off writes its
    /// outbox there and counts on this one call covering both). Blocking: async callers run it
    /// on a blocking thread. (sled's own `flush_async` was seen to hang forever when many tasks
    /// awaited it at once; the synchronous flush does not, and concurrent callers share the
    /// fsync.)
    pub fn flush(&self) -> Result<()> {
        self.store.persist()?;
        self.db.flush()?;
        Ok(())
    }
}

/// The frontier. Not thread-safe by itself: the node keeps it behind a mutex, and every
/// method is short (no I/O besides its store).
pub struct Frontier {
    store: Store,
    db: sled::Db,
    settings: FrontierSettings,
    seen: SeenSet,
    /// The hosts in memory, by id, and their ids by name (see [`IDLE_FOR`]).
    hosts: Resident,
    host_ids: HashMap<String, u32>,
    /// The id the next new host gets.
    next_id: u32,
    /// Host records in the store.
    known: u64,
    schedule: BinaryHeap<Reverse<(Instant, u32)>>,
    next_seq: u64,
    /// Sequence numbers below this are reserved on disk.
    reserved_seq: u64,
    next_jseq: u64,
    /// URLs the seen-set had forgotten and the disk knew ([`FrontierStats::seen_recalled`]).
    seen_recalled: u64,
    queued: u64,
    in_flight: u64,
    /// Queue entries removed since the store was last compacted (see
    /// [`Frontier::compaction_due`]).
    removed_since_compact: u64,
    /// Hosts the operator blocked (persisted).
    blocked: HashSet<String>,
    /// Hosts first seen before this instant wait until then: in a network, right after this
    /// node (re)joined, until the members that held its hosts have said what they did with them
    /// (see [`Frontier::hold_new_hosts`]).
    new_host_hold: Option<(Instant, HostFilter)>,
    /// Second copies: the notes for this node's hosts' second holders, the URLs kept for
    /// other owners.
    second: second::Second,
}

/// Queue entries removed before a compaction is considered (see [`Frontier::compaction_due`]).
pub const COMPACT_AFTER: u64 = 1_000_000;

/// Picks hosts by name (see [`Frontier::hold_new_hosts`]).
pub type HostFilter = Box<dyn Fn(&str) -> bool + Send>;

impl Frontier {
    /// Opens (or creates) the frontier's store in `dir`, restoring the hosts, their queue
    /// counts and politeness, and the seen-set. `db` is the node's sled database, flushed with
    /// the frontier by [`Durability::flush`].
    pub fn open(db: &sled::Db, dir: &Path, settings: FrontierSettings) -> Result<Frontier> {
        let now = Instant::now();
        let store = Store::open(dir, settings.cache_bytes, settings.write_buffer_bytes)?;
        let (seen, next_jseq) = store.load_seen(settings.seen_capacity, settings.seen_fp_rate)?;
        let reserved_seq = store.reserved_seq()?;
        let mut f = Frontier {
            store: store.clone(),
            db: db.clone(),
            settings,
            seen,
            hosts: Resident::default(),
            host_ids: HashMap::new(),
            next_id: 0,
            known: 0,
            schedule: BinaryHeap::new(),
            next_seq: reserved_seq,
            reserved_seq,
            next_jseq,
            seen_recalled: 0,
            queued: 0,
            in_flight: 0,
            removed_since_compact: 0,
            blocked: store.blocked()?.into_iter().collect(),
            new_host_hold: None,
            second: second::Second::open(&store)?,
        };
        // Only the hosts with work come into memory; the rest wait in their records.
        for (name, record) in store.host_records()? {
            f.known += 1;
            f.next_id = f.next_id.max(record.id + 1);
            if record.queued == 0 {
                continue;
            }
            let id = record.id;
            f.queued += record.queued;
            f.host_ids.insert(name.clone(), id);
            let h = f.new_queue(id, name, &record, now);
            f.hosts.insert(id, h);
        }
        if let Some(old) = OldLayout::find(db)? {
            f.import(old, now)?;
        }
        for id in f.hosts.ids() {
            f.reschedule(id);
        }
        Ok(f)
    }

    fn new_queue(&self, id: u32, name: String, record: &HostRecord, now: Instant) -> HostQueue {
        let mut politeness = HostPoliteness::new(now);
        let wait_ms = record.next_allowed_unix_ms.saturating_sub(weft_clock::now_ms());
        // A host new to this process may have been crawled by another member a moment ago.
        politeness.next_allowed = now + Duration::from_millis(wait_ms).max(self.settings.politeness.handover_grace);
        politeness.backoff_level = record.backoff_level;
        let hold_until = match &self.new_host_hold {
            Some((until, pick)) if *until > now && pick(&name) => Some(*until),
            _ => None,
        };
        HostQueue {
            name,
            queued: record.queued,
            fetched: record.fetched,
            in_flight: false,
            leased: None,
            politeness,
            scheduled_at: None,
            given_away: false,
            hold_until,
            floor: store::host_start(id),
        }
    }

    /// A handle to make writes durable outside the lock.
    pub fn durability(&self) -> Durability {
        Durability { store: self.store.clone(), db: self.db.clone() }
    }

    pub fn settings(&self) -> &FrontierSettings {
        &self.settings
    }

    /// The store's memory and journal figures (benchmarks, `weft doctor`).
    pub fn store_diagnostics(&self) -> String {
        self.store.diagnostics()
    }

    /// The URL outcomes, kept in the frontier's store ([`crate::Outcomes`]): an earlier
    /// release's sled tree of them (in the database the frontier was opened with) is moved in
    /// on the first call.
    pub fn outcomes(&self) -> Result<crate::Outcomes> {
        crate::Outcomes::of(&self.store, &self.db)
    }

    /// The tables the node's small stores keep in the frontier's store ([`crate::Tables`]).
    pub fn tables(&self) -> crate::Tables {
        crate::Tables::of(&self.store)
    }

    /// Bytes the frontier's store holds on disk.
    pub fn disk_bytes(&self) -> u64 {
        self.store.disk_bytes()
    }

    /// The id of `host`, bringing it into memory from its record, or creating (and recording)
    /// it if it is new.
    fn host_id(&mut self, host: &str, now: Instant) -> Result<u32> {
        if let Some(&id) = self.host_ids.get(host) {
            return Ok(id);
        }
        let record = match self.store.host_record(host)? {
            Some(record) => record,
            None => {
                let record = HostRecord { id: self.next_id, ..HostRecord::default() };
                // Recorded at once: everything stored for the host is keyed by this id.
                let mut batch = self.store.batch();
                self.store.put_host(&mut batch, host, &record)?;
                self.store.commit(batch)?;
                self.next_id += 1;
                self.known += 1;
                record
            }
        };
        let id = record.id;
        let h = self.new_queue(id, host.to_string(), &record, now);
        self.hosts.insert(id, h);
        self.host_ids.insert(host.to_string(), id);
        Ok(id)
    }

    /// The id of `host` if it has a record, without bringing it into memory.
    fn known_id(&self, host: &str) -> Result<Option<u32>> {
        match self.host_ids.get(host) {
            Some(&id) => Ok(Some(id)),
            None => Ok(self.store.host_record(host)?.map(|r| r.id)),
        }
    }

    /// Lets the hosts idle for [`IDLE_FOR`] at `now` leave memory: nothing queued, no request
    /// in flight, none since `IDLE_FOR` (nor a wait owed that long), no hold. Their records
    /// keep their counts and politeness; a host this node gave away to another member leaves
    /// the store too (its done URLs went with it; durable with the next flush). Returns how
    /// many left.
    pub fn evict_idle(&mut self, now: Instant) -> Result<usize> {
        let idle: Vec<u32> = self
            .hosts
            .0
            .iter()
            .filter(|(_, h)| {
                h.queued == 0
                    && !h.in_flight
                    && h.leased.is_none()
                    && h.scheduled_at.is_none()
                    && h.hold_until.is_none_or(|until| until <= now)
                    && now >= h.politeness.next_allowed + IDLE_FOR
            })
            .map(|(id, _)| *id)
            .collect();
        if idle.is_empty() {
            return Ok(0);
        }
        // Their records are current (every change of a count or of politeness writes one).
        let mut batch = self.store.batch();
        let mut forgotten = 0;
        for &id in &idle {
            let h = &self.hosts[id as usize];
            if h.given_away {
                self.store.remove_host(&mut batch, &h.name, id)?;
                forgotten += 1;
            }
        }
        if forgotten > 0 {
            self.store.commit(batch)?;
        }
        self.known = self.known.saturating_sub(forgotten);
        for id in &idle {
            if let Some(h) = self.hosts.0.remove(id) {
                self.host_ids.remove(&h.name);
            }
        }
        // Maps keep their room after removals: give it back once most of it is empty.
        if self.hosts.0.len() < self.hosts.0.capacity() / 4 {
            self.hosts.0.shrink_to_fit();
            self.host_ids.shrink_to_fit();
        }
        Ok(idle.len())
    }

    /// The host's record as it stands in memory, to write in a batch.
    fn record(&self, id: u32, now: Instant) -> HostRecord {
        let h = &self.hosts[id as usize];
        let wait = h.politeness.next_allowed.saturating_duration_since(now);
        HostRecord {
            id,
            fetched: h.fetched,
            queued: h.queued,
            next_allowed_unix_ms: weft_clock::now_ms() + wait.as_millis() as u64,
            backoff_level: h.politeness.backoff_level,
        }
    }

    fn put_record(&self, batch: &mut store::Batch, id: u32, now: Instant) -> Result<()> {
        let record = self.record(id, now);
        self.store.put_host(batch, &self.hosts[id as usize].name, &record)
    }

    /// The next sequence number, reserving a block on disk when the last one is used up.
    fn take_seq(&mut self, batch: &mut store::Batch) -> u64 {
        if self.next_seq >= self.reserved_seq {
            self.reserved_seq = self.next_seq + store::seq_block();
            self.store.reserve_seq(batch, self.reserved_seq);
        }
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Puts the host on the schedule if it has work and no request in flight.
    fn reschedule(&mut self, id: u32) {
        let h = &mut self.hosts[id as usize];
        if h.in_flight || h.queued == 0 {
            h.scheduled_at = None;
            return;
        }
        let at = h.ready_at();
        if h.scheduled_at != Some(at) {
            h.scheduled_at = Some(at);
            self.schedule.push(Reverse((at, id)));
        }
    }

    /// Offers a URL. Seen URLs are not queued again; a still-queued one gains an inlink.
    pub fn push(&mut self, c: Candidate) -> Result<PushOutcome> {
        self.push_checked(c, true)
    }

    /// [`Frontier::push`]; `by_seen`: a URL in the seen-set is not queued again.
    fn push_checked(&mut self, c: Candidate, by_seen: bool) -> Result<PushOutcome> {
        let s = &self.settings;
        if c.kind == UrlKind::Page && c.depth > s.max_depth {
            return Ok(PushOutcome::TooDeep);
        }
        if is_binary(&c.url, c.kind) {
            return Ok(PushOutcome::Binary);
        }
        let url = c.url.as_str();
        let host = HostKey::of(&c.url).into_string();
        if c.kind == UrlKind::Revisit {
            // Seen by definition: queued again unless it is queued already.
            if self.store.queued_key(url, &host)?.is_some() {
                return Ok(PushOutcome::AlreadySeen);
            }
        } else if by_seen && (self.seen.contains(url) || self.met_before(url, &host)?) {
            self.bump_inlinks(url, &host)?;
            return Ok(PushOutcome::AlreadySeen);
        }
        if self.blocked.contains(&host) {
            return Ok(PushOutcome::Blocked);
        }
        let now = Instant::now();
        let id = self.host_id(&host, now)?;
        {
            let h = &self.hosts[id as usize];
            if c.kind == UrlKind::Page && h.fetched + h.queued >= self.settings.max_pages_per_host {
                return Ok(PushOutcome::HostBudgetExhausted);
            }
        }
        self.take_back(id, now);
        let boost = if c.from_hub && c.kind == UrlKind::Page { HUB_BOOST } else { 0.0 };
        let priority = score(&c.url, c.kind, c.depth, 0, self.settings.inlink_cap) + boost;
        let entry = Stored::new(url, &host, c.kind, c.depth, c.redirects, weft_clock::now_ms());
        let mut batch = self.store.batch();
        let seq = self.take_seq(&mut batch);
        let key = store::qkey(id, priority, seq);
        self.store.put_entry(&mut batch, &key, &entry, url)?;
        self.store.journal(&mut batch, self.next_jseq, url);
        if self.second.sending {
            let note = SecondCopy::Keep { host: host.clone(), url: url.to_string(), depth: c.depth, kind: c.kind };
            self.put_note(&mut batch, &note)?;
        }
        self.hosts[id as usize].queued += 1;
        self.put_record(&mut batch, id, now)?;
        if let Err(e) = self.store.commit(batch) {
            self.hosts[id as usize].queued -= 1;
            return Err(e);
        }
        self.next_jseq += 1;
        self.seen.insert(url);
        let h = &mut self.hosts[id as usize];
        h.floor = h.floor.min(key);
        self.queued += 1;
        self.reschedule(id);
        Ok(PushOutcome::Queued)
    }

    /// Whether a URL the seen-set does not hold was met all the same, before its filters forgot
    /// it ([`SeenSet::forgets`]): queued here, or done here. Such a URL goes back into the
    /// seen-set. Two point reads of the store, and only once the seen-set has dropped a
    /// generation; until then a miss is proof enough.
    fn met_before(&mut self, url: &str, host: &str) -> Result<bool> {
        if !self.seen.forgets() {
            return Ok(false);
        }
        let met = self.store.queued_key(url, host)?.is_some() || self.is_done(url, host)?;
        if met {
            self.seen.refresh(url);
            self.seen_recalled += 1;
        }
        Ok(met)
    }

    /// A link to a still-queued page raises its priority (up to the inlink cap): its entry
    /// moves to the key of its new priority.
    fn bump_inlinks(&mut self, url: &str, host: &str) -> Result<()> {
        let Some(&id) = self.host_ids.get(host) else { return Ok(()) };
        let Some((key, mut entry)) = self.store.queued_key(url, host)? else { return Ok(()) };
        if entry.inlinks >= self.settings.inlink_cap
            || entry.kind != UrlKind::Page
            || self.hosts[id as usize].leased == Some(key)
        {
            return Ok(());
        }
        // The score is linear in the inlinks: adding one link's worth keeps whatever else it
        // was given (a hub's boost) without storing it.
        entry.inlinks += 1;
        let seq = u64::from_be_bytes(key[8..].try_into().expect("16-byte key"));
        let moved = store::qkey(id, store::key_score(&key) + INLINK_WEIGHT, seq);
        let mut batch = self.store.batch();
        self.store.remove_entry(&mut batch, &key, url);
        self.store.put_entry(&mut batch, &moved, &entry, url)?;
        self.store.commit(batch)?;
        self.removed_since_compact += 1;
        let h = &mut self.hosts[id as usize];
        h.floor = h.floor.min(moved);
        Ok(())
    }

    /// The next URL whose host is ready at `now`, if any.
    pub fn next(&mut self, now: Instant) -> Result<Next> {
        loop {
            let Some(&Reverse((at, id))) = self.schedule.peek() else {
                return Ok(if self.in_flight > 0 { Next::Busy } else { Next::Empty });
            };
            // An entry left behind by a reschedule (or by a host that has left memory since).
            if self.hosts.get(id).and_then(|h| h.scheduled_at) != Some(at) {
                self.schedule.pop();
                continue;
            }
            if at > now {
                return Ok(Next::WaitUntil(at));
            }
            self.schedule.pop();
            self.hosts[id as usize].scheduled_at = None;
            if let Some(lease) = self.pop_host(id, now)? {
                let h = &mut self.hosts[id as usize];
                h.in_flight = true;
                h.leased = Some(lease.key);
                self.in_flight += 1;
                return Ok(Next::Ready(lease));
            }
            self.reschedule(id);
        }
    }

    fn queued_url(&self, id: u32, key: &QKey, entry: Stored) -> QueuedUrl {
        let host = &self.hosts[id as usize].name;
        QueuedUrl {
            url: entry.url(host),
            host: host.clone(),
            kind: entry.kind,
            depth: entry.depth,
            inlinks: entry.inlinks,
            score: store::key_score(key),
            attempts: entry.attempts,
            redirects: entry.redirects,
            discovered_unix_ms: entry.discovered_unix_ms,
        }
    }

    /// The host's best entry, dropping over-budget pages. The entry stays on disk until the
    /// lease is completed.
    fn pop_host(&mut self, id: u32, now: Instant) -> Result<Option<Lease>> {
        loop {
            let floor = self.hosts[id as usize].floor;
            let Some((key, entry)) = self.store.first_of_host(id, &floor)? else {
                // The count said there was more (it never should): trust the disk.
                let h = &mut self.hosts[id as usize];
                if h.queued > 0 {
                    tracing::warn!(host = %h.name, counted = h.queued, "frontier: host queue count corrected to 0");
                    self.queued = self.queued.saturating_sub(h.queued);
                    h.queued = 0;
                    let mut batch = self.store.batch();
                    self.put_record(&mut batch, id, now)?;
                    self.store.commit(batch)?;
                }
                return Ok(None);
            };
            self.hosts[id as usize].floor = key;
            let h = &self.hosts[id as usize];
            if entry.kind == UrlKind::Page && h.fetched >= self.settings.max_pages_per_host {
                let url = entry.url(&h.name);
                self.remove_entry(id, &key, &url, true, now)?;
                continue;
            }
            let entry = self.queued_url(id, &key, entry);
            return Ok(Some(Lease { key, entry }));
        }
    }

    /// Removes a queue entry; `done`: this node will not fetch the URL again, which is
    /// recorded per host for the next owner of the host (see [`Frontier::hand_off`]).
    fn remove_entry(&mut self, id: u32, key: &QKey, url: &str, done: bool, now: Instant) -> Result<()> {
        let mut batch = self.store.batch();
        self.store.remove_entry(&mut batch, key, url);
        if done {
            self.store.put_done(&mut batch, id, url, &self.hosts[id as usize].name);
        }
        if self.second.sending {
            let note = SecondCopy::Forget { host: self.hosts[id as usize].name.clone(), url: url.to_string() };
            self.put_note(&mut batch, &note)?;
        }
        let h = &mut self.hosts[id as usize];
        h.queued = h.queued.saturating_sub(1);
        self.put_record(&mut batch, id, now)?;
        if let Err(e) = self.store.commit(batch) {
            self.hosts[id as usize].queued += 1;
            return Err(e);
        }
        let h = &mut self.hosts[id as usize];
        if h.floor == *key {
            h.floor = store::after(key);
        }
        self.queued = self.queued.saturating_sub(1);
        self.removed_since_compact += 1;
        Ok(())
    }

    /// Ends a lease. `requested` says whether a request reached the host (politeness applies).
    pub fn complete(&mut self, lease: Lease, outcome: Completion, requested: bool, now: Instant) -> Result<Completed> {
        let id = self.host_id(&lease.entry.host, now)?;
        let policy = self.settings.politeness;
        {
            let h = &mut self.hosts[id as usize];
            h.leased = None;
            if h.in_flight {
                h.in_flight = false;
                self.in_flight = self.in_flight.saturating_sub(1);
            }
            if requested {
                policy.on_request_done(&mut h.politeness, now);
            }
        }
        let mut entry = lease.entry;
        // Removal and requeueing write the host's record (politeness, counts) with the entry.
        let result = match outcome {
            Completion::Done { page } => {
                if page {
                    self.hosts[id as usize].fetched += 1;
                }
                self.remove_entry(id, &lease.key, &entry.url, true, now)?;
                Completed::Removed
            }
            Completion::Retry => {
                entry.attempts += 1;
                if entry.attempts > self.settings.max_retries {
                    self.remove_entry(id, &lease.key, &entry.url, true, now)?;
                    Completed::GaveUp
                } else {
                    self.requeue(id, &lease.key, &entry, now)?;
                    Completed::Requeued
                }
            }
            Completion::RateLimited { retry_after } => {
                policy.on_rate_limited(&mut self.hosts[id as usize].politeness, now, retry_after);
                self.requeue(id, &lease.key, &entry, now)?;
                Completed::Requeued
            }
            Completion::Requeue { wait } => {
                policy.defer(&mut self.hosts[id as usize].politeness, now + wait);
                self.requeue(id, &lease.key, &entry, now)?;
                Completed::Requeued
            }
        };
        self.reschedule(id);
        Ok(result)
    }

    /// Writes a leased entry back under its key (its attempts changed).
    fn requeue(&mut self, id: u32, key: &QKey, entry: &QueuedUrl, now: Instant) -> Result<()> {
        let stored = Stored::of(entry);
        let mut batch = self.store.batch();
        self.store.update_entry(&mut batch, key, &stored)?;
        self.put_record(&mut batch, id, now)?;
        self.store.commit(batch)?;
        let h = &mut self.hosts[id as usize];
        h.floor = h.floor.min(*key);
        Ok(())
    }

    /// Writes the host's record (politeness, budget).
    fn save_host(&mut self, id: u32, now: Instant) -> Result<()> {
        let mut batch = self.store.batch();
        self.put_record(&mut batch, id, now)?;
        self.store.commit(batch)
    }

    /// Puts back in the queue the URLs whose leases will never be completed (their tasks were
    /// abandoned at a stop), so that a hand-off that follows gives them to the host's next
    /// owner as queued URLs rather than as done. Returns how many.
    pub fn abandon_leases(&mut self) -> Result<usize> {
        let mut n = 0;
        for id in self.hosts.ids() {
            let Some(key) = self.hosts[id as usize].leased.take() else { continue };
            let h = &mut self.hosts[id as usize];
            if h.in_flight {
                h.in_flight = false;
                self.in_flight = self.in_flight.saturating_sub(1);
            }
            // The entry never left the disk; the floor only has to let it be read again.
            if self.store.entry(&key)?.is_some() {
                h.floor = h.floor.min(key);
                n += 1;
            }
            self.reschedule(id);
        }
        Ok(n)
    }

    /// Sets a host's `Crawl-delay` from its robots.txt (`None`: the default delay).
    pub fn set_crawl_delay(&mut self, host: &str, delay: Option<Duration>) -> Result<()> {
        let id = self.host_id(host, Instant::now())?;
        self.hosts[id as usize].politeness.crawl_delay = delay;
        Ok(())
    }

    /// The delay currently owed to `host` between requests.
    pub fn host_delay(&mut self, host: &str) -> Result<Duration> {
        let id = self.host_id(host, Instant::now())?;
        Ok(self.settings.politeness.delay(&self.hosts[id as usize].politeness))
    }

    /// A compaction of the store, when the entries removed since the last one number at least
    /// [`COMPACT_AFTER`] and as many as are still queued (the queue's files are then mostly
    /// deletions). Run it outside the lock with [`CompactJob::run`].
    pub fn compaction_due(&mut self) -> Option<CompactJob> {
        if self.removed_since_compact >= COMPACT_AFTER && self.removed_since_compact >= self.queued {
            self.removed_since_compact = 0;
            return Some(self.store.compact_job());
        }
        None
    }

    /// URLs added to the seen-set since its last snapshot (replayed on open).
    pub fn journal_len(&self) -> Result<u64> {
        self.store.journal_len()
    }

    /// Takes a seen-set snapshot to write with [`SnapshotJob::write`] outside the lock.
    pub fn snapshot_job(&self) -> Result<SnapshotJob> {
        self.store.snapshot_job(&self.seen, self.next_jseq - 1)
    }
}
