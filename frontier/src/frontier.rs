//! The URL frontier: durable per-host priority queues and a ready-time schedule across hosts.
//!
//! # Layout in sled (tree `frontier`)
//! | key | value |
//! |---|---|
//! | `q` + seq (u64 BE) | a [`QueuedUrl`] (postcard) |
//! | `u` + normalized URL | seq of its queue entry, while queued |
//! | `j` + jseq (u64 BE) | a URL added to the seen-set since the last snapshot (journal) |
//! | `d` + host + `0` + URL | a URL this node is done with (fetched or given up on), per host |
//! | `m:seen` | seen-set snapshot: journal mark + Bloom filter |
//!
//! Every push writes its queue entry, URL index and journal entry in one atomic sled batch, and
//! every completion removes them in one batch, so after a crash (kill -9) the queue is exactly
//! what was durably acknowledged: nothing queued is lost and nothing completed comes back. The
//! seen-set is restored from its snapshot plus the journal. Callers make writes durable with
//! [`Frontier::durability`] before they acknowledge anything (e.g. before a URL batch is acked).
//!
//! # In memory
//! Only what scheduling needs: per host a max-heap of `(score, seq)` (16 bytes per queued URL;
//! the URL itself stays in sled) and the host's politeness bucket; across hosts a min-heap of
//! ready times. Scores can rise (inlinks), which pushes a second heap reference; stale ones are
//! skipped on pop by comparing with the stored entry (lazy deletion).

use crate::host::HostKey;
use crate::politeness::{HostPoliteness, PolitenessPolicy};
use crate::score::{is_binary, score, UrlKind, HUB_BOOST, INLINK_WEIGHT};
use crate::seen::SeenSet;
use serde::{Deserialize, Serialize};
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use url::Url;

/// Where a URL stands in the frontier (see [`Frontier::url_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UrlState {
    Queued,
    Done,
    Seen,
    Unseen,
}

/// Errors of the frontier's storage.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    #[error("frontier store: {0}")]
    Store(#[from] sled::Error),
    #[error("frontier record is corrupt: {0}")]
    Codec(#[from] postcard::Error),
}

pub type Result<T> = std::result::Result<T, FrontierError>;

/// Frontier settings. The node derives them from its config (`weft_config` is not a
/// dependency of this crate); the defaults here are the config's defaults for a node alone.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierSettings {
    pub max_depth: u32,
    pub max_pages_per_host: u64,
    pub inlink_cap: u32,
    pub seen_capacity: u64,
    pub seen_fp_rate: f64,
    pub max_retries: u32,
    pub politeness: PolitenessPolicy,
}

impl Default for FrontierSettings {
    fn default() -> Self {
        FrontierSettings {
            max_depth: 16,
            max_pages_per_host: 100_000,
            inlink_cap: 5,
            seen_capacity: 10_000_000,
            seen_fp_rate: 0.01,
            max_retries: 3,
            politeness: PolitenessPolicy::default(),
        }
    }
}

/// One host's load, for the dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostLoad {
    pub host: String,
    pub queued: u64,
    pub fetched: u64,
    pub in_flight: bool,
}

/// What [`Frontier::hand_off`] gives away.
#[derive(Debug, Default)]
pub struct HandOff {
    /// Queued URLs, for the new owners to queue.
    pub queued: Vec<QueuedUrl>,
    /// URLs this node fetched or gave up on, for the new owners to mark seen.
    pub done: Vec<String>,
}

impl HandOff {
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty() && self.done.is_empty()
    }
}

/// A queued URL as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueuedUrl {
    pub url: String,
    pub host: String,
    pub kind: UrlKind,
    pub depth: u32,
    pub inlinks: u32,
    pub score: f32,
    /// Transient failures so far.
    pub attempts: u32,
    /// URLs that redirected to this one, oldest first (hop limit and loop detection).
    pub redirects: Vec<String>,
    pub discovered_unix_ms: u64,
}

/// A URL offered to the frontier. The URL must already be normalized.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub url: Url,
    pub kind: UrlKind,
    pub depth: u32,
    pub redirects: Vec<String>,
    /// Linked from a hub page: its priority gains [`crate::score::HUB_BOOST`].
    pub from_hub: bool,
}

impl Candidate {
    pub fn page(url: Url, depth: u32) -> Candidate {
        Candidate::of(url, UrlKind::Page, depth)
    }

    pub fn of(url: Url, kind: UrlKind, depth: u32) -> Candidate {
        Candidate { url, kind, depth, redirects: Vec::new(), from_hub: false }
    }
}

/// What became of a pushed candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    Queued,
    /// Already queued or fetched (or a Bloom false positive). A still-queued URL gains an inlink.
    AlreadySeen,
    TooDeep,
    Binary,
    HostBudgetExhausted,
    /// The operator blocked its host.
    Blocked,
}

/// A URL handed out for fetching. Its host has no other request in flight until the lease is
/// completed; an uncompleted lease (crash) leaves the URL queued.
#[derive(Debug, Clone)]
pub struct Lease {
    pub seq: u64,
    pub entry: QueuedUrl,
}

/// What [`Frontier::next`] has to offer.
#[derive(Debug)]
pub enum Next {
    Ready(Lease),
    /// Nothing is ready before this instant.
    WaitUntil(Instant),
    /// Everything queued belongs to hosts with a request in flight.
    Busy,
    /// Nothing queued and nothing in flight.
    Empty,
}

/// What [`Frontier::borrow_host`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Borrow {
    /// The host is this caller's until [`Frontier::return_host`].
    Granted,
    /// Its politeness delay (or a hold) runs until then.
    WaitUntil(Instant),
    /// A request to it is in flight; ask again shortly.
    Busy,
}

/// How a borrowed host's request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Returned {
    /// A request reached the host (the delay counts from now).
    Requested,
    /// The host answered 429 or 503, maybe with Retry-After: back off as for a queued URL.
    RateLimited { retry_after: Option<Duration> },
    /// No request was made after all.
    Unused,
}

/// How a leased URL ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Completion {
    /// Handled for good. `page` counts against the host's page budget.
    Done { page: bool },
    /// Transient failure: requeue unless the retry budget is spent.
    Retry,
    /// 429/503: requeue and back the host off.
    RateLimited { retry_after: Option<Duration> },
    /// Not attempted yet for a reason outside the URL (e.g. robots.txt just fetched, or
    /// unreachable): requeue without counting an attempt; the host waits at least `wait`.
    Requeue { wait: Duration },
}

/// What [`Frontier::complete`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completed {
    Removed,
    Requeued,
    /// The retry budget was spent; the URL is dropped.
    GaveUp,
}

/// Counters for `/status`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FrontierStats {
    pub queued: u64,
    pub in_flight: u64,
    pub hosts: u64,
    pub hosts_with_queue: u64,
    pub seen: u64,
    pub seen_bytes: u64,
}

#[derive(Clone, Copy, PartialEq)]
struct HeapRef {
    score: f32,
    seq: u64,
}

impl Eq for HeapRef {}

impl Ord for HeapRef {
    fn cmp(&self, other: &Self) -> Ordering {
        // Higher score first, then older (smaller seq) first.
        self.score.total_cmp(&other.score).then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for HeapRef {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

struct HostQueue {
    name: String,
    heap: BinaryHeap<HeapRef>,
    /// Live queue entries of this host (the heap may also hold stale references).
    queued: u64,
    /// Pages fetched (the budget counter), persisted in the `hosts` tree.
    fetched: u64,
    in_flight: bool,
    /// The queue entry being fetched, while `in_flight`.
    leased: Option<u64>,
    politeness: HostPoliteness,
    /// The schedule entry that is current for this host, if any.
    scheduled_at: Option<Instant>,
    /// Handed to another member; if it comes back, its first request waits the hand-over grace.
    given_away: bool,
    /// Held apart from politeness, until the member that held it before has handed it over
    /// (see [`Frontier::hold_hosts`], [`Frontier::release_hosts`]).
    hold_until: Option<Instant>,
}

impl HostQueue {
    /// When the host may be requested next: its politeness, and any hand-over hold.
    fn ready_at(&self) -> Instant {
        self.politeness.next_allowed.max(self.hold_until.unwrap_or(self.politeness.next_allowed))
    }
}

/// Persisted per-host record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct HostRecord {
    fetched: u64,
    /// Wall-clock time before which the host must not be asked (survives restarts).
    next_allowed_unix_ms: u64,
    backoff_level: u32,
}

const SEEN_KEY: &[u8] = b"m:seen";

fn qkey(seq: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = b'q';
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn ukey(url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(url.len() + 1);
    k.push(b'u');
    k.extend_from_slice(url.as_bytes());
    k
}

fn dkey(host: &str, url: &str) -> Vec<u8> {
    let mut k = dprefix(host);
    k.extend_from_slice(url.as_bytes());
    k
}

fn dprefix(host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(host.len() + 2);
    k.push(b'd');
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k
}

fn jkey(seq: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = b'j';
    k[1..].copy_from_slice(&seq.to_be_bytes());
    k
}

fn seq_of(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&key[1..9]);
    u64::from_be_bytes(b)
}

pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

#[derive(Serialize, Deserialize)]
struct SeenSnapshot {
    /// Journal entries up to and including this jseq are in `seen`.
    mark: u64,
    seen: SeenSet,
}

#[derive(Serialize)]
struct SeenSnapshotRef<'a> {
    mark: u64,
    seen: &'a SeenSet,
}

/// A seen-set snapshot serialized under the frontier's lock (a memory copy of the filter),
/// written to disk outside it.
pub struct SnapshotJob {
    tree: sled::Tree,
    mark: u64,
    bytes: Vec<u8>,
}

impl SnapshotJob {
    /// Writes the snapshot and drops the journal entries it covers, atomically.
    pub fn write(self) -> Result<usize> {
        let bytes = self.bytes;
        let mut batch = sled::Batch::default();
        for item in self.tree.range(jkey(0)..=jkey(self.mark)) {
            let (k, _) = item?;
            batch.remove(k);
        }
        batch.insert(SEEN_KEY, bytes.as_slice());
        self.tree.apply_batch(batch)?;
        self.tree.flush()?;
        Ok(bytes.len())
    }
}

/// Makes frontier writes durable without holding the frontier's lock.
#[derive(Clone)]
pub struct Durability(sled::Tree);

impl Durability {
    /// Flushes and fsyncs the frontier's writes. Blocking: async callers run it on a blocking
    /// thread. (sled's own `flush_async` was seen to hang forever when many tasks awaited it at
    /// once; the synchronous flush does not, and concurrent callers share the fsync.)
    pub fn flush(&self) -> Result<()> {
        self.0.flush()?;
        Ok(())
    }
}

/// The frontier. Not thread-safe by itself: the node keeps it behind a mutex, and every
/// method is short (no I/O besides sled).
pub struct Frontier {
    tree: sled::Tree,
    hosts_tree: sled::Tree,
    settings: FrontierSettings,
    seen: SeenSet,
    hosts: Vec<HostQueue>,
    host_ids: HashMap<String, u32>,
    schedule: BinaryHeap<Reverse<(Instant, u32)>>,
    next_seq: u64,
    next_jseq: u64,
    queued: u64,
    in_flight: u64,
    /// Hosts the operator blocked (persisted as `b` + host).
    blocked: HashSet<String>,
    /// Hosts first seen before this instant wait until then: in a network, right after this
    /// node (re)joined, until the members that held its hosts have said what they did with them
    /// (see [`Frontier::hold_new_hosts`]).
    new_host_hold: Option<(Instant, HostFilter)>,
}

/// Picks hosts by name (see [`Frontier::hold_new_hosts`]).
pub type HostFilter = Box<dyn Fn(&str) -> bool + Send>;

fn bkey(host: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(host.len() + 1);
    k.push(b'b');
    k.extend_from_slice(host.as_bytes());
    k
}

impl Frontier {
    /// Opens (or creates) the frontier in `db`, restoring the queue and the seen-set.
    pub fn open(db: &sled::Db, settings: FrontierSettings) -> Result<Frontier> {
        let now = Instant::now();
        let tree = db.open_tree("frontier")?;
        let hosts_tree = db.open_tree("hosts")?;

        let (mut seen, mark) = match tree.get(SEEN_KEY)? {
            Some(bytes) => {
                let snap: SeenSnapshot = postcard::from_bytes(&bytes)?;
                (snap.seen, snap.mark)
            }
            None => (SeenSet::with_capacity(settings.seen_capacity, settings.seen_fp_rate), 0),
        };
        let mut next_jseq = mark + 1;
        for item in tree.scan_prefix(b"j") {
            let (k, v) = item?;
            seen.insert(&String::from_utf8_lossy(&v));
            next_jseq = next_jseq.max(seq_of(&k) + 1);
        }

        // Sequence numbers only need to be unique among live entries and the in-memory heap
        // references of this run, so the next one is derived from what is stored.
        let mut next_seq = 1;
        let mut f = Frontier {
            tree: tree.clone(),
            hosts_tree,
            settings,
            seen,
            hosts: Vec::new(),
            host_ids: HashMap::new(),
            schedule: BinaryHeap::new(),
            next_seq: 0,
            next_jseq,
            queued: 0,
            in_flight: 0,
            blocked: HashSet::new(),
            new_host_hold: None,
        };
        for item in tree.scan_prefix(b"b") {
            let (k, _) = item?;
            f.blocked.insert(String::from_utf8_lossy(&k[1..]).into_owned());
        }
        for item in tree.scan_prefix(b"q") {
            let (k, v) = item?;
            let seq = seq_of(&k);
            let entry: QueuedUrl = postcard::from_bytes(&v)?;
            next_seq = next_seq.max(seq + 1);
            let id = f.host_id(&entry.host, now)?;
            let h = &mut f.hosts[id as usize];
            h.heap.push(HeapRef { score: entry.score, seq });
            h.queued += 1;
            f.queued += 1;
        }
        f.next_seq = next_seq;
        for id in 0..f.hosts.len() as u32 {
            f.reschedule(id);
        }
        Ok(f)
    }

    /// A handle to make writes durable outside the lock.
    pub fn durability(&self) -> Durability {
        Durability(self.tree.clone())
    }

    pub fn settings(&self) -> &FrontierSettings {
        &self.settings
    }

    fn host_id(&mut self, host: &str, now: Instant) -> Result<u32> {
        if let Some(&id) = self.host_ids.get(host) {
            return Ok(id);
        }
        let record: HostRecord = match self.hosts_tree.get(host)? {
            Some(v) => postcard::from_bytes(&v).unwrap_or_default(),
            None => HostRecord::default(),
        };
        let mut politeness = HostPoliteness::new(now);
        let wait_ms = record.next_allowed_unix_ms.saturating_sub(unix_ms(SystemTime::now()));
        // A host new to this process may have been crawled by another member a moment ago.
        politeness.next_allowed = now + Duration::from_millis(wait_ms).max(self.settings.politeness.handover_grace);
        let hold_until = match &self.new_host_hold {
            Some((until, pick)) if *until > now && pick(host) => Some(*until),
            _ => None,
        };
        politeness.backoff_level = record.backoff_level;
        let id = self.hosts.len() as u32;
        self.hosts.push(HostQueue {
            name: host.to_string(),
            heap: BinaryHeap::new(),
            queued: 0,
            fetched: record.fetched,
            in_flight: false,
            leased: None,
            politeness,
            scheduled_at: None,
            given_away: false,
            hold_until,
        });
        self.host_ids.insert(host.to_string(), id);
        Ok(id)
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
        let s = &self.settings;
        if c.kind == UrlKind::Page && c.depth > s.max_depth {
            return Ok(PushOutcome::TooDeep);
        }
        if is_binary(&c.url, c.kind) {
            return Ok(PushOutcome::Binary);
        }
        let url = c.url.as_str();
        if c.kind == UrlKind::Revisit {
            // Seen by definition: queued again unless it is queued already.
            if self.tree.get(ukey(url))?.is_some() {
                return Ok(PushOutcome::AlreadySeen);
            }
        } else if self.seen.contains(url) {
            self.bump_inlinks(url)?;
            return Ok(PushOutcome::AlreadySeen);
        }
        let now = Instant::now();
        let host = HostKey::of(&c.url).into_string();
        if self.blocked.contains(&host) {
            return Ok(PushOutcome::Blocked);
        }
        let id = self.host_id(&host, now)?;
        {
            let h = &self.hosts[id as usize];
            if c.kind == UrlKind::Page && h.fetched + h.queued >= self.settings.max_pages_per_host {
                return Ok(PushOutcome::HostBudgetExhausted);
            }
        }
        let grace = self.settings.politeness.handover_grace;
        let h = &mut self.hosts[id as usize];
        if std::mem::take(&mut h.given_away) {
            // The host is back from another member, which may have just requested it.
            h.politeness.next_allowed = h.politeness.next_allowed.max(now + grace);
        }
        let boost = if c.from_hub && c.kind == UrlKind::Page { HUB_BOOST } else { 0.0 };
        let entry = QueuedUrl {
            score: score(&c.url, c.kind, c.depth, 0, self.settings.inlink_cap) + boost,
            url: url.to_string(),
            host,
            kind: c.kind,
            depth: c.depth,
            inlinks: 0,
            attempts: 0,
            redirects: c.redirects,
            discovered_unix_ms: unix_ms(SystemTime::now()),
        };
        let seq = self.next_seq;
        let jseq = self.next_jseq;
        let mut batch = sled::Batch::default();
        batch.insert(&qkey(seq), postcard::to_allocvec(&entry)?);
        batch.insert(ukey(url), &seq.to_be_bytes());
        batch.insert(&jkey(jseq), url.as_bytes());
        self.tree.apply_batch(batch)?;
        self.next_seq += 1;
        self.next_jseq += 1;
        self.seen.insert(url);
        let h = &mut self.hosts[id as usize];
        h.heap.push(HeapRef { score: entry.score, seq });
        h.queued += 1;
        self.queued += 1;
        self.reschedule(id);
        Ok(PushOutcome::Queued)
    }

    fn bump_inlinks(&mut self, url: &str) -> Result<()> {
        let Some(seqv) = self.tree.get(ukey(url))? else {
            return Ok(());
        };
        let Ok(seq_bytes) = <[u8; 8]>::try_from(seqv.as_ref()) else {
            return Ok(());
        };
        let seq = u64::from_be_bytes(seq_bytes);
        let Some(v) = self.tree.get(qkey(seq))? else {
            return Ok(());
        };
        let mut entry: QueuedUrl = postcard::from_bytes(&v)?;
        if entry.inlinks >= self.settings.inlink_cap || entry.kind != UrlKind::Page {
            return Ok(());
        }
        // The score is linear in the inlinks: adding one link's worth keeps whatever else it
        // was given (a hub's boost) without storing it.
        entry.inlinks += 1;
        entry.score += INLINK_WEIGHT;
        self.tree.insert(qkey(seq), postcard::to_allocvec(&entry)?)?;
        if let Some(&id) = self.host_ids.get(&entry.host) {
            self.hosts[id as usize].heap.push(HeapRef { score: entry.score, seq });
        }
        Ok(())
    }

    /// The next URL whose host is ready at `now`, if any.
    pub fn next(&mut self, now: Instant) -> Result<Next> {
        loop {
            let Some(&Reverse((at, id))) = self.schedule.peek() else {
                return Ok(if self.in_flight > 0 { Next::Busy } else { Next::Empty });
            };
            if self.hosts[id as usize].scheduled_at != Some(at) {
                self.schedule.pop();
                continue;
            }
            if at > now {
                return Ok(Next::WaitUntil(at));
            }
            self.schedule.pop();
            self.hosts[id as usize].scheduled_at = None;
            if let Some(lease) = self.pop_host(id)? {
                let h = &mut self.hosts[id as usize];
                h.in_flight = true;
                h.leased = Some(lease.seq);
                self.in_flight += 1;
                return Ok(Next::Ready(lease));
            }
            self.reschedule(id);
        }
    }

    /// Pops the host's best live entry, dropping stale references and over-budget pages.
    fn pop_host(&mut self, id: u32) -> Result<Option<Lease>> {
        while let Some(r) = self.hosts[id as usize].heap.pop() {
            let Some(v) = self.tree.get(qkey(r.seq))? else {
                continue;
            };
            let entry: QueuedUrl = postcard::from_bytes(&v)?;
            if entry.score != r.score {
                continue;
            }
            let h = &self.hosts[id as usize];
            if entry.kind == UrlKind::Page && h.fetched >= self.settings.max_pages_per_host {
                self.remove_entry(id, r.seq, &entry.url, true)?;
                continue;
            }
            return Ok(Some(Lease { seq: r.seq, entry }));
        }
        Ok(None)
    }

    /// Removes a queue entry; `done`: this node will not fetch the URL again, which is
    /// recorded per host for the next owner of the host (see [`Frontier::hand_off`]).
    fn remove_entry(&mut self, id: u32, seq: u64, url: &str, done: bool) -> Result<()> {
        let mut batch = sled::Batch::default();
        batch.remove(&qkey(seq));
        batch.remove(ukey(url));
        if done {
            batch.insert(dkey(&self.hosts[id as usize].name, url), &[]);
        }
        self.tree.apply_batch(batch)?;
        let h = &mut self.hosts[id as usize];
        h.queued = h.queued.saturating_sub(1);
        self.queued = self.queued.saturating_sub(1);
        Ok(())
    }

    /// Gives away the hosts for which `keep(host)` is false: in a network, the hosts this node
    /// no longer owns go to their new owner. Their queued URLs leave the queue and come back in
    /// [`HandOff::queued`]; `persist` sees them (and the done ones, the URL leased right now
    /// among them) first and must store them elsewhere (the node's
    /// outbox) before they leave, so a crash in between can repeat a URL but never lose it. The
    /// URLs this node is done with on those hosts come back in [`HandOff::done`], so the new
    /// owner does not fetch them again. A URL leased right now is not touched (its fetch
    /// finishes here); everything handed off stays in this node's seen-set, and a host that
    /// comes back waits the hand-over grace before its first request. One sled batch: durable
    /// with the next flush.
    pub fn hand_off(
        &mut self,
        mut keep: impl FnMut(&str) -> bool,
        persist: impl FnOnce(&HandOff) -> std::result::Result<(), sled::Error>,
    ) -> Result<HandOff> {
        let mut entries = Vec::new();
        let mut done = Vec::new();
        // (host, its heap as it was, live entries taken)
        let mut taken: Vec<(usize, BinaryHeap<HeapRef>, u64)> = Vec::new();
        let mut given = Vec::new();
        let mut batch = sled::Batch::default();
        for id in 0..self.hosts.len() {
            if self.hosts[id].given_away || keep(&self.hosts[id].name) {
                continue;
            }
            given.push(id);
            let prefix = dprefix(&self.hosts[id].name);
            for kv in self.tree.scan_prefix(&prefix) {
                let (k, _) = kv?;
                done.push(String::from_utf8_lossy(&k[prefix.len()..]).into_owned());
            }
            // The URL leased right now is this node's to finish: the new owner is told it is
            // done, or it would fetch it again while this node is still indexing it.
            if let Some(seq) = self.hosts[id].leased {
                if let Some(v) = self.tree.get(qkey(seq))? {
                    let entry: QueuedUrl = postcard::from_bytes(&v)?;
                    done.push(entry.url);
                }
            }
            if self.hosts[id].queued == 0 {
                continue;
            }
            let heap = std::mem::take(&mut self.hosts[id].heap);
            let mut seqs: Vec<u64> = heap.iter().map(|r| r.seq).collect();
            seqs.sort_unstable();
            seqs.dedup();
            let mut live = 0;
            for seq in seqs {
                let Some(v) = self.tree.get(qkey(seq))? else { continue };
                let entry: QueuedUrl = postcard::from_bytes(&v)?;
                batch.remove(&qkey(seq));
                batch.remove(ukey(&entry.url));
                entries.push(entry);
                live += 1;
            }
            taken.push((id, heap, live));
        }
        let given_away = HandOff { queued: entries, done };
        if let Err(e) = persist(&given_away) {
            // Nothing leaves the queue: the heaps go back as they were.
            for (id, heap, _) in taken {
                self.hosts[id].heap = heap;
            }
            return Err(e.into());
        }
        self.tree.apply_batch(batch)?;
        for id in given {
            self.hosts[id].given_away = true;
        }
        for (id, _, live) in taken {
            let h = &mut self.hosts[id];
            h.queued = h.queued.saturating_sub(live);
            self.queued = self.queued.saturating_sub(live);
            self.reschedule(id as u32);
        }
        Ok(given_away)
    }

    /// Blocks `host` (a host key, `name` or `name:port`) for good: its queued URLs are dropped
    /// (they stay in the seen-set), and nothing of it is queued again until
    /// [`Frontier::unblock_host`]. A request in flight finishes. Returns how many queued URLs
    /// were dropped. Durable with the next flush.
    pub fn block_host(&mut self, host: &str) -> Result<u64> {
        self.tree.insert(bkey(host), &[])?;
        self.blocked.insert(host.to_string());
        let dropped = self.hand_off(|h| h != host, |_| Ok(()))?;
        Ok(dropped.queued.len() as u64)
    }

    /// Lifts a block; says whether the host was blocked. URLs dropped by the block are not
    /// coming back (they are seen); new links to the host are queued again.
    pub fn unblock_host(&mut self, host: &str) -> Result<bool> {
        self.tree.remove(bkey(host))?;
        Ok(self.blocked.remove(host))
    }

    pub fn is_blocked(&self, host: &str) -> bool {
        self.blocked.contains(host)
    }

    /// The blocked hosts, sorted.
    pub fn blocked_hosts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.blocked.iter().cloned().collect();
        v.sort();
        v
    }

    /// Holds back the hosts `pick` selects until at least `until`: in a network, hosts this node
    /// just became the owner of (their previous owner may be requesting them right now).
    pub fn hold_hosts(&mut self, mut pick: impl FnMut(&str) -> bool, until: Instant) -> usize {
        let mut held = 0;
        for id in 0..self.hosts.len() {
            if !pick(&self.hosts[id].name) {
                continue;
            }
            let h = &mut self.hosts[id];
            if h.ready_at() < until {
                h.hold_until = Some(until);
                held += 1;
                self.reschedule(id as u32);
            }
        }
        held
    }

    /// Holds the hosts `pick` selects among those this node meets from now on until `until`
    /// too (`None`: no longer): hosts it has not heard of yet may have been crawled by the
    /// members that held them while it was away. `pick` runs under the frontier's lock.
    pub fn hold_new_hosts(&mut self, hold: Option<(Instant, HostFilter)>) {
        self.new_host_hold = hold;
    }

    /// Ends early a hold of the hosts `pick` selects (by [`Frontier::hold_hosts`] or
    /// [`Frontier::hold_new_hosts`]): they may be requested from `at` on, their politeness —
    /// delay, backoff, Retry-After — still applying. Holds only ever move earlier here.
    pub fn release_hosts(&mut self, mut pick: impl FnMut(&str) -> bool, at: Instant) -> usize {
        let mut released = 0;
        for id in 0..self.hosts.len() {
            if !pick(&self.hosts[id].name) {
                continue;
            }
            let h = &mut self.hosts[id];
            if h.hold_until.is_some_and(|until| until > at) {
                h.hold_until = Some(at);
                released += 1;
                self.reschedule(id as u32);
            }
        }
        released
    }

    /// Records that another member already fetched `url` (it owned the host before): the URL
    /// joins the seen-set, so links to it are not queued again, and leaves the queue if a link
    /// got it there first (unless it is being fetched right now). Returns whether anything
    /// changed.
    pub fn mark_done(&mut self, url: &Url) -> Result<bool> {
        let u = url.as_str();
        let host = HostKey::of(url).into_string();
        // Known from now on, so a later hand-off passes the URL on.
        let id = self.host_id(&host, Instant::now())?;
        if let Some(seqv) = self.tree.get(ukey(u))? {
            if let Ok(seq) = <[u8; 8]>::try_from(seqv.as_ref()).map(u64::from_be_bytes) {
                if self.hosts[id as usize].leased != Some(seq) {
                    self.remove_entry(id, seq, u, true)?;
                    self.reschedule(id);
                    return Ok(true);
                }
            }
        }
        if self.seen.contains(u) {
            return Ok(false);
        }
        let jseq = self.next_jseq;
        let mut batch = sled::Batch::default();
        batch.insert(&jkey(jseq), u.as_bytes());
        // Passed on again should the host move on.
        batch.insert(dkey(&host, u), &[]);
        self.tree.apply_batch(batch)?;
        self.next_jseq += 1;
        self.seen.insert(u);
        Ok(true)
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
        let result = match outcome {
            Completion::Done { page } => {
                if page {
                    self.hosts[id as usize].fetched += 1;
                }
                self.remove_entry(id, lease.seq, &entry.url, true)?;
                Completed::Removed
            }
            Completion::Retry => {
                entry.attempts += 1;
                if entry.attempts > self.settings.max_retries {
                    self.remove_entry(id, lease.seq, &entry.url, true)?;
                    Completed::GaveUp
                } else {
                    self.requeue(id, lease.seq, &entry)?;
                    Completed::Requeued
                }
            }
            Completion::RateLimited { retry_after } => {
                policy.on_rate_limited(&mut self.hosts[id as usize].politeness, now, retry_after);
                self.requeue(id, lease.seq, &entry)?;
                Completed::Requeued
            }
            Completion::Requeue { wait } => {
                policy.defer(&mut self.hosts[id as usize].politeness, now + wait);
                self.requeue(id, lease.seq, &entry)?;
                Completed::Requeued
            }
        };
        self.save_host(id, now)?;
        self.reschedule(id);
        Ok(result)
    }

    fn requeue(&mut self, id: u32, seq: u64, entry: &QueuedUrl) -> Result<()> {
        self.tree.insert(qkey(seq), postcard::to_allocvec(entry)?)?;
        self.hosts[id as usize].heap.push(HeapRef { score: entry.score, seq });
        Ok(())
    }

    fn save_host(&mut self, id: u32, now: Instant) -> Result<()> {
        let h = &self.hosts[id as usize];
        let wait = h.politeness.next_allowed.saturating_duration_since(now);
        let record = HostRecord {
            fetched: h.fetched,
            next_allowed_unix_ms: unix_ms(SystemTime::now()) + wait.as_millis() as u64,
            backoff_level: h.politeness.backoff_level,
        };
        self.hosts_tree.insert(h.name.as_bytes(), postcard::to_allocvec(&record)?)?;
        Ok(())
    }

    /// Puts back in the queue the URLs whose leases will never be completed (their tasks were
    /// abandoned at a stop), so that a hand-off that follows gives them to the host's next
    /// owner as queued URLs rather than as done. Returns how many.
    pub fn abandon_leases(&mut self) -> Result<usize> {
        let mut n = 0;
        for id in 0..self.hosts.len() {
            let Some(seq) = self.hosts[id].leased.take() else { continue };
            let h = &mut self.hosts[id];
            if h.in_flight {
                h.in_flight = false;
                self.in_flight = self.in_flight.saturating_sub(1);
            }
            if let Some(v) = self.tree.get(qkey(seq))? {
                let entry: QueuedUrl = postcard::from_bytes(&v)?;
                self.hosts[id].heap.push(HeapRef { score: entry.score, seq });
                n += 1;
            }
            self.reschedule(id as u32);
        }
        Ok(n)
    }

    /// Takes `host` for one request outside the queue — a browser's page or subresource — under
    /// the same rules as a lease: one request in flight per host, its delay, Crawl-delay,
    /// backoff and hand-over hold. Give it back with [`Frontier::return_host`].
    pub fn borrow_host(&mut self, host: &str, now: Instant) -> Result<Borrow> {
        let id = self.host_id(host, now)?;
        let h = &mut self.hosts[id as usize];
        if h.in_flight {
            return Ok(Borrow::Busy);
        }
        if h.ready_at() > now {
            return Ok(Borrow::WaitUntil(h.ready_at()));
        }
        h.in_flight = true;
        h.scheduled_at = None;
        self.in_flight += 1;
        Ok(Borrow::Granted)
    }

    /// Gives back a host taken with [`Frontier::borrow_host`]; its queue is scheduled again.
    pub fn return_host(&mut self, host: &str, how: Returned, now: Instant) -> Result<()> {
        let id = self.host_id(host, now)?;
        let policy = self.settings.politeness;
        let h = &mut self.hosts[id as usize];
        if h.in_flight && h.leased.is_none() {
            h.in_flight = false;
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        match how {
            Returned::Requested => policy.on_request_done(&mut h.politeness, now),
            Returned::RateLimited { retry_after } => {
                policy.on_rate_limited(&mut h.politeness, now, retry_after);
            }
            Returned::Unused => {}
        }
        self.save_host(id, now)?;
        self.reschedule(id);
        Ok(())
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

    /// Is this URL in the seen-set?
    pub fn seen(&self, url: &str) -> bool {
        self.seen.contains(url)
    }

    /// Where a normalized URL stands here: queued, done (fetched or given up on), only seen
    /// (met and not queued: refused, or sent to its host's owner), or never met. The seen-set
    /// is a Bloom filter: `Seen` may, rarely, be a URL never met.
    pub fn url_state(&self, url: &Url) -> Result<UrlState> {
        let u = url.as_str();
        if self.tree.contains_key(ukey(u))? {
            return Ok(UrlState::Queued);
        }
        if self.tree.contains_key(dkey(HostKey::of(url).as_str(), u))? {
            return Ok(UrlState::Done);
        }
        Ok(if self.seen.contains(u) { UrlState::Seen } else { UrlState::Unseen })
    }

    /// Whether `host` has work: URLs queued, or a request in flight.
    pub fn host_has_work(&self, host: &str) -> bool {
        self.host_ids.get(host).is_some_and(|&id| {
            let h = &self.hosts[id as usize];
            h.queued > 0 || h.in_flight
        })
    }

    /// When the first host with work may be asked, if none may be now (for the stall check).
    pub fn next_ready(&self, now: Instant) -> Option<Instant> {
        let ready = self.hosts.iter().filter(|h| h.queued > 0 && !h.in_flight).map(HostQueue::ready_at).min()?;
        (ready > now).then_some(ready)
    }

    pub fn stats(&self) -> FrontierStats {
        FrontierStats {
            queued: self.queued,
            in_flight: self.in_flight,
            hosts: self.hosts.len() as u64,
            hosts_with_queue: self.hosts.iter().filter(|h| h.queued > 0).count() as u64,
            seen: self.seen.len(),
            seen_bytes: self.seen.memory_bytes() as u64,
        }
    }

    /// The `n` hosts with the most URLs queued (ties: most fetched), for the dashboard.
    pub fn top_hosts(&self, n: usize) -> Vec<HostLoad> {
        let mut v: Vec<HostLoad> = self
            .hosts
            .iter()
            .filter(|h| h.queued > 0 || h.fetched > 0)
            .map(|h| HostLoad { host: h.name.clone(), queued: h.queued, fetched: h.fetched, in_flight: h.in_flight })
            .collect();
        v.sort_by(|a, b| b.queued.cmp(&a.queued).then(b.fetched.cmp(&a.fetched)).then(a.host.cmp(&b.host)));
        v.truncate(n);
        v
    }

    /// Takes a seen-set snapshot to write with [`SnapshotJob::write`] outside the lock.
    pub fn snapshot_job(&self) -> Result<SnapshotJob> {
        let mark = self.next_jseq - 1;
        let bytes = postcard::to_allocvec(&SeenSnapshotRef { mark, seen: &self.seen })?;
        Ok(SnapshotJob { tree: self.tree.clone(), mark, bytes })
    }
}
