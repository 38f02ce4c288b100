//! The frontier's files: an LSM tree ([fjall]) laid out so that memory grows with hosts, not
//! with URLs, and a seen-set snapshot file beside it.
//!
//! # Why not sled
//! The node's small stores are sled; the queue is not (nor are the index's documents), because
//! measured it could not be made small. The sled layout before held 461 MiB resident and 2.58 GiB of files at 1.5M
//! queued URLs (8.6k operations/s); the most compact sled layout tried (keys `host id |
//! priority | seq`, ~45-byte values, no per-URL index) still held 384 MiB and growing and
//! 3.7 GiB at 7.5M queued. This layout on fjall holds 10M queued URLs over 100k hosts in 254 MiB
//! resident (heap flat at ~130 MiB from 1M to 10M) and 1.19 GiB on disk at 24k operations/s (the
//! the book's soak figures, docs/src/benchmarks.md). A queue is an append-then-delete workload: an LSM tree writes it
//! sequentially, compresses sorted neighbours together (URLs of one host share most of their
//! bytes) and drops drained entries in compaction, where sled's pages stay resident and
//! fragment.
//!
//! # Layout (one fjall database, `<dir>/lsm`)
//! | keyspace | key | value |
//! |---|---|---|
//! | `queue` | [`QKey`]: host id (u32 BE) · priority order (u32 BE) · seq (u64 BE) | [`Stored`] entry |
//! | `urls` | xxh3-64 of the URL | the [`QKey`] of its queue entry, while queued |
//! | `done` | host id · URL without scheme and host | empty: fetched or given up on, per host |
//! | `journal` | jseq (u64 BE) | a URL added to the seen-set since the last snapshot |
//! | `hosts` | host key | [`HostRecord`]: id, pages fetched, URLs queued, politeness |
//! | `meta` | `seq`, `b` + host | reserved sequence numbers; blocked hosts |
//! | `outcomes` | URL | what happened to it when last tried ([`crate::Outcomes`]) |
//! | `tables` | table name · 0 · key | the node's small stores' records ([`Store::table`]): the URL patterns (`url_patterns`), the layout store (`layout.*`) |
//! | `second` | `o` · seq (u64 BE); `k` · host · 0 · URL without scheme and host; `h` · host | a [`crate::SecondCopy`] note waiting for this node's host's second holder; (depth, kind) of a URL kept for another owner; whom this node's host's queue was last written for |
//!
//! Keys of one host share their first four bytes, and within a host sort by priority (higher
//! first) then age, so a host's next URL is the first key at or after its floor — nothing
//! per URL needs to live in memory. A host's record carries its queued count, written in the
//! same atomic batch as the entries it counts, so opening reads one record per host.
//!
//! # Durability
//! Every write reaches the operating system before the call returns (fjall's journal is
//! written, not yet synced), so a killed process (kill -9) loses nothing; [`Store::persist`]
//! syncs it for power loss, and callers do that before they acknowledge anything.

use crate::score::UrlKind;
use crate::seen::{LegacySeenSet, SeenSet};
use fjall::{Database, Keyspace, PersistMode};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How the keys are laid out.
mod keys;
/// The `second` keyspace's notes, kept URLs and holders.
mod second;

pub use keys::{after, host_start, key_score, qkey, QKey};
use keys::{blocked_key, done_key, host_end, to_qkey, url_from_tail, url_hash, url_tail};

/// Errors of the frontier's storage.
#[derive(Debug, thiserror::Error)]
pub enum FrontierError {
    #[error("frontier store: {0}")]
    Store(#[from] sled::Error),
    #[error("frontier queue: {0}")]
    Queue(#[from] fjall::Error),
    /// A write or sync of the store failed, said with the first failure behind it (fjall's
    /// `Poisoned` names none: see [`weft_db::FirstFailure`]).
    #[error("frontier store: {0}")]
    Refused(String),
    #[error("frontier seen-set snapshot {path}: {error}")]
    Snapshot { path: PathBuf, error: std::io::Error },
    #[error("frontier record is corrupt: {0}")]
    Codec(#[from] postcard::Error),
}

pub type Result<T> = std::result::Result<T, FrontierError>;

impl From<weft_db::MoveError> for FrontierError {
    fn from(e: weft_db::MoveError) -> FrontierError {
        match e {
            weft_db::MoveError::Sled(e) => FrontierError::Store(e),
            weft_db::MoveError::Lsm(e) => FrontierError::Queue(e),
        }
    }
}

/// The most the LSM tree's write-ahead journal may hold on disk before memtables are flushed.
const JOURNAL_BYTES: u64 = 96 << 20;
/// Journal entries removed per batch after a snapshot.
const JOURNAL_CHUNK: usize = 4096;
/// Sequence numbers are reserved on disk this many at a time.
const SEQ_BLOCK: u64 = 1 << 16;

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

/// A queue entry on disk (the key holds host and priority).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    /// [`url_tail`] of the URL.
    tail: Vec<u8>,
    pub kind: UrlKind,
    pub depth: u32,
    pub inlinks: u32,
    pub attempts: u32,
    pub redirects: Vec<String>,
    pub discovered_unix_ms: u64,
}

impl Stored {
    pub fn new(url: &str, host: &str, kind: UrlKind, depth: u32, redirects: Vec<String>, discovered: u64) -> Stored {
        Stored {
            tail: url_tail(url, host),
            kind,
            depth,
            inlinks: 0,
            attempts: 0,
            redirects,
            discovered_unix_ms: discovered,
        }
    }

    /// The stored form of a queued URL as handed out (requeued, or imported).
    pub fn of(q: &QueuedUrl) -> Stored {
        Stored {
            inlinks: q.inlinks,
            attempts: q.attempts,
            ..Stored::new(&q.url, &q.host, q.kind, q.depth, q.redirects.clone(), q.discovered_unix_ms)
        }
    }

    pub fn url(&self, host: &str) -> String {
        url_from_tail(&self.tail, host)
    }
}

/// Persisted per-host record.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct HostRecord {
    pub id: u32,
    pub fetched: u64,
    pub queued: u64,
    /// Wall-clock time before which the host must not be asked (survives restarts).
    pub next_allowed_unix_ms: u64,
    pub backoff_level: u32,
}

#[derive(Serialize, Deserialize)]
struct SeenSnapshot {
    /// Journal entries up to and including this jseq are in `seen`.
    mark: u64,
    seen: SeenSet,
}

/// An earlier release's snapshot (`seen.bloom`): one growing filter.
#[derive(Deserialize)]
struct LegacySnapshot {
    mark: u64,
    seen: LegacySeenSet,
}

#[derive(Serialize)]
struct SeenSnapshotRef<'a> {
    mark: u64,
    seen: &'a SeenSet,
}

/// The frontier's store. Cheap to clone (handles).
#[derive(Clone)]
pub struct Store {
    db: Database,
    queue: Keyspace,
    urls: Keyspace,
    done: Keyspace,
    journal: Keyspace,
    hosts: Keyspace,
    meta: Keyspace,
    outcomes: Keyspace,
    /// The small tables of the node's other stores ([`Store::table`]).
    tables: Keyspace,
    /// Second copies ([`crate::second`]): notes for this node's hosts' second holders, waiting
    /// to be sent (`o` · seq), and the URLs this node keeps for other owners (`k` · host · 0 ·
    /// URL tail).
    second: Keyspace,
    snapshot_path: PathBuf,
    /// An earlier release's snapshot, read once and removed when the first new one is written.
    legacy_snapshot_path: PathBuf,
    /// The crawl syncs after every page: coalesced ([`weft_db::Syncs`]).
    syncs: std::sync::Arc<weft_db::Syncs>,
    /// The first write the database refused, shared with its tables and the outcomes.
    failure: weft_db::FirstFailure,
    /// The URLs done, the outcomes and the tables take writes every page: written out by age
    /// ([`weft_db::MemtableAge`]), checked at each sync.
    aging: std::sync::Arc<weft_db::MemtableAge>,
}

/// The writes of one frontier operation, applied atomically by [`Store::commit`].
pub struct Batch {
    inner: fjall::OwnedWriteBatch,
}

impl Store {
    /// Opens (or creates) the store in `dir`, with a block cache of `cache_bytes` and a write
    /// buffer of `memtable_bytes` per keyspace.
    pub fn open(dir: &Path, cache_bytes: u64, memtable_bytes: u64) -> Result<Store> {
        std::fs::create_dir_all(dir).map_err(|error| FrontierError::Snapshot { path: dir.to_path_buf(), error })?;
        let db =
            Database::builder(dir.join("lsm")).cache_size(cache_bytes).max_journaling_size(JOURNAL_BYTES).open()?;
        let ks = |name: &str| db.keyspace(name, || weft_db::keyspace_options(memtable_bytes));
        Ok(Store {
            queue: ks("queue")?,
            urls: ks("urls")?,
            done: ks("done")?,
            journal: ks("journal")?,
            hosts: ks("hosts")?,
            meta: ks("meta")?,
            outcomes: ks("outcomes")?,
            tables: ks("tables")?,
            second: ks("second")?,
            snapshot_path: dir.join("seen.gens"),
            legacy_snapshot_path: dir.join("seen.bloom"),
            syncs: Default::default(),
            aging: Default::default(),
            failure: Default::default(),
            db,
        })
    }

    /// The database and its keyspace of URL outcomes ([`crate::Outcomes`] reads and writes it).
    pub(crate) fn outcomes_keyspace(&self) -> (Database, Keyspace) {
        (self.db.clone(), self.outcomes.clone())
    }

    /// The table `name` of the keyspace `tables`, where the node's small stores keep their
    /// records (the URL patterns, the layout store): they share this store's journal, syncs,
    /// cache and write buffer rather than open an LSM tree (and its threads) each. They left
    /// sled because its memory grew with every write (see [`weft_db::Table`]).
    pub fn table(&self, name: &str) -> weft_db::Table {
        weft_db::Table::open(&self.db, &self.tables, name, &self.failure)
    }

    pub fn batch(&self) -> Batch {
        Batch { inner: self.db.batch() }
    }

    pub fn commit(&self, batch: Batch) -> Result<()> {
        batch.inner.commit().map_err(|e| self.refused(e))
    }

    /// A failed write or sync as the error to report: the first failure noted, and `e` named
    /// by it when `e` is the `Poisoned` that followed.
    fn refused(&self, e: fjall::Error) -> FrontierError {
        self.failure.note_error(&e);
        FrontierError::Refused(self.failure.explain(&e))
    }

    /// The first write the database refused, for the writers that keep their own keyspace
    /// ([`crate::Outcomes`]).
    pub(crate) fn failure(&self) -> weft_db::FirstFailure {
        self.failure.clone()
    }

    /// Syncs everything written so far to disk. Callers at once share a sync: each returns
    /// after one that started after its call ([`weft_db::Syncs`]).
    pub fn persist(&self) -> Result<()> {
        self.syncs.sync_request(|| self.db.persist(PersistMode::SyncAll)).map_err(|e| self.refused(e))?;
        self.aging.seal_old(&self.keyspaces()).map_err(|e| self.refused(e))?;
        Ok(())
    }

    fn keyspaces(&self) -> [&Keyspace; 9] {
        [
            &self.queue,
            &self.urls,
            &self.done,
            &self.journal,
            &self.hosts,
            &self.meta,
            &self.outcomes,
            &self.tables,
            &self.second,
        ]
    }

    /// Bytes on disk (LSM files, journal and snapshot).
    pub fn disk_bytes(&self) -> u64 {
        let snapshot = [&self.snapshot_path, &self.legacy_snapshot_path]
            .iter()
            .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
            .sum::<u64>();
        self.db.disk_space().unwrap_or(0) + snapshot
    }

    /// Bytes the LSM tree holds in memory: its block cache, the index and filter blocks it keeps
    /// pinned (they follow the tables) and its write buffer ([`weft_db::LsmMemory`]).
    pub fn memory(&self) -> weft_db::LsmMemory {
        weft_db::LsmMemory::of(&self.db, &self.keyspaces())
    }

    /// What the LSM tree holds in memory and in its journal, for diagnostics.
    pub fn diagnostics(&self) -> String {
        format!(
            "write buffer {} MiB, journals {} ({} MiB), outstanding flushes {}, cache {} MiB, pinned {:.1} MiB, tables {}",
            self.db.write_buffer_size() >> 20,
            self.db.journal_count(),
            self.db.journal_disk_space().unwrap_or(0) >> 20,
            self.db.outstanding_flushes(),
            self.db.cache_size() >> 20,
            self.memory().pinned as f64 / 1048576.0,
            [&self.queue, &self.urls, &self.done, &self.journal, &self.hosts, &self.meta]
                .iter()
                .map(|k| format!("{}:{}MiB", k.table_count(), k.disk_space() >> 20))
                .collect::<Vec<_>>()
                .join("/"),
        )
    }

    // --- hosts ---

    /// Every host record, by host key.
    pub fn host_records(&self) -> Result<Vec<(String, HostRecord)>> {
        let mut v = Vec::new();
        for item in self.hosts.iter() {
            let (k, val) = item.into_inner()?;
            v.push((String::from_utf8_lossy(&k).into_owned(), postcard::from_bytes(&val)?));
        }
        Ok(v)
    }

    pub fn put_host(&self, b: &mut Batch, host: &str, record: &HostRecord) -> Result<()> {
        b.inner.insert(&self.hosts, host.as_bytes(), postcard::to_allocvec(record)?);
        Ok(())
    }

    /// The record of `host`, if it has one.
    pub fn host_record(&self, host: &str) -> Result<Option<HostRecord>> {
        match self.hosts.get(host.as_bytes())? {
            Some(v) => Ok(Some(postcard::from_bytes(&v)?)),
            None => Ok(None),
        }
    }

    /// Forgets host `id` (named `host`): its record and its done URLs. Only for a host with
    /// nothing queued.
    pub fn remove_host(&self, b: &mut Batch, host: &str, id: u32) -> Result<()> {
        b.inner.remove(&self.hosts, host.as_bytes());
        for item in self.done.prefix(id.to_be_bytes()) {
            b.inner.remove(&self.done, item.key()?);
        }
        Ok(())
    }

    // --- queue ---

    pub fn put_entry(&self, b: &mut Batch, key: &QKey, entry: &Stored, url: &str) -> Result<()> {
        b.inner.insert(&self.queue, *key, postcard::to_allocvec(entry)?);
        b.inner.insert(&self.urls, url_hash(url), *key);
        Ok(())
    }

    /// Rewrites an entry in place (same key: attempts changed).
    pub fn update_entry(&self, b: &mut Batch, key: &QKey, entry: &Stored) -> Result<()> {
        b.inner.insert(&self.queue, *key, postcard::to_allocvec(entry)?);
        Ok(())
    }

    pub fn remove_entry(&self, b: &mut Batch, key: &QKey, url: &str) {
        b.inner.remove(&self.queue, *key);
        b.inner.remove(&self.urls, url_hash(url));
    }

    pub fn entry(&self, key: &QKey) -> Result<Option<Stored>> {
        match self.queue.get(key)? {
            Some(v) => Ok(Some(postcard::from_bytes(&v)?)),
            None => Ok(None),
        }
    }

    /// The first entry of host `id` at or after `floor`: its next URL.
    pub fn first_of_host(&self, id: u32, floor: &QKey) -> Result<Option<(QKey, Stored)>> {
        let Some(item) = self.queue.range(*floor..=host_end(id)).next() else { return Ok(None) };
        let (k, v) = item.into_inner()?;
        let Some(key) = to_qkey(&k) else { return Ok(None) };
        Ok(Some((key, postcard::from_bytes(&v)?)))
    }

    /// Every entry of host `id`, in priority order.
    pub fn entries_of_host(&self, id: u32) -> Result<Vec<(QKey, Stored)>> {
        let mut v = Vec::new();
        for item in self.queue.range(host_start(id)..=host_end(id)) {
            let (k, val) = item.into_inner()?;
            if let Some(key) = to_qkey(&k) {
                v.push((key, postcard::from_bytes(&val)?));
            }
        }
        Ok(v)
    }

    /// The key of `url`'s queue entry, if it is queued (`host`: its host key and id).
    pub fn queued_key(&self, url: &str, host: &str) -> Result<Option<(QKey, Stored)>> {
        let Some(v) = self.urls.get(url_hash(url))? else { return Ok(None) };
        let Some(key) = to_qkey(&v) else { return Ok(None) };
        // The index is by a 64-bit hash: the entry is checked to be this URL's.
        match self.entry(&key)? {
            Some(entry) if entry.url(host) == url => Ok(Some((key, entry))),
            _ => Ok(None),
        }
    }

    // --- done ---

    pub fn put_done(&self, b: &mut Batch, id: u32, url: &str, host: &str) {
        b.inner.insert(&self.done, done_key(id, url, host), []);
    }

    pub fn remove_done(&self, b: &mut Batch, id: u32, url: &str, host: &str) {
        b.inner.remove(&self.done, done_key(id, url, host));
    }

    pub fn is_done(&self, id: u32, url: &str, host: &str) -> Result<bool> {
        Ok(self.done.contains_key(done_key(id, url, host))?)
    }

    /// The URLs done on host `id`.
    pub fn done_of_host(&self, id: u32, host: &str) -> Result<Vec<String>> {
        let mut v = Vec::new();
        for item in self.done.prefix(id.to_be_bytes()) {
            let k = item.key()?;
            v.push(url_from_tail(&k[4..], host));
        }
        Ok(v)
    }

    // --- seen-set: snapshot file + journal ---

    pub fn journal(&self, b: &mut Batch, jseq: u64, url: &str) {
        b.inner.insert(&self.journal, jseq.to_be_bytes(), url.as_bytes());
    }

    /// The seen-set as last saved, and the jseq its snapshot covers; then the journal's URLs
    /// are added. New generations are sized for `capacity` at `fp`; with no snapshot the set
    /// starts empty, and an earlier release's single filter (`seen.bloom`) is read into it.
    /// Returns the set and the next jseq.
    pub fn load_seen(&self, capacity: u64, fp: f64) -> Result<(SeenSet, u64)> {
        let read = |path: &PathBuf| match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(FrontierError::Snapshot { path: path.clone(), error }),
        };
        let (mut seen, mark) = if let Some(bytes) = read(&self.snapshot_path)? {
            let mut snap: SeenSnapshot = postcard::from_bytes(&bytes)?;
            snap.seen.resize(capacity, fp);
            (snap.seen, snap.mark)
        } else if let Some(bytes) = read(&self.legacy_snapshot_path)? {
            let snap: LegacySnapshot = postcard::from_bytes(&bytes)?;
            (SeenSet::from_legacy(snap.seen, capacity, fp), snap.mark)
        } else {
            (SeenSet::with_capacity(capacity, fp), 0)
        };
        let mut next = mark + 1;
        for item in self.journal.range((mark + 1).to_be_bytes()..) {
            let (k, v) = item.into_inner()?;
            seen.insert(&String::from_utf8_lossy(&v));
            if let Ok(b) = <[u8; 8]>::try_from(&k[..]) {
                next = next.max(u64::from_be_bytes(b) + 1);
            }
        }
        Ok((seen, next))
    }

    /// URLs journaled since the last snapshot.
    pub fn journal_len(&self) -> Result<u64> {
        Ok(self.journal.len()? as u64)
    }

    pub fn compact_job(&self) -> CompactJob {
        CompactJob { store: self.clone() }
    }

    /// Serializes a snapshot of `seen` covering the journal up to `mark` (in memory; written
    /// by [`SnapshotJob::write`] outside the frontier's lock).
    pub fn snapshot_job(&self, seen: &SeenSet, mark: u64) -> Result<SnapshotJob> {
        let bytes = postcard::to_allocvec(&SeenSnapshotRef { mark, seen })?;
        Ok(SnapshotJob { store: self.clone(), mark, bytes })
    }

    // --- meta ---

    /// Reserves sequence numbers up to `to` (exclusive) on disk.
    pub fn reserve_seq(&self, b: &mut Batch, to: u64) {
        b.inner.insert(&self.meta, "seq", to.to_be_bytes());
    }

    /// The first sequence number never handed out before.
    pub fn reserved_seq(&self) -> Result<u64> {
        Ok(self.meta.get("seq")?.and_then(|v| <[u8; 8]>::try_from(&v[..]).ok()).map(u64::from_be_bytes).unwrap_or(1))
    }

    pub fn set_blocked(&self, host: &str, blocked: bool) -> Result<()> {
        if blocked {
            self.meta.insert(blocked_key(host), [])?;
        } else {
            self.meta.remove(blocked_key(host))?;
        }
        Ok(())
    }

    pub fn blocked(&self) -> Result<Vec<String>> {
        let mut v = Vec::new();
        for item in self.meta.prefix("b") {
            let k = item.key()?;
            v.push(String::from_utf8_lossy(&k[1..]).into_owned());
        }
        Ok(v)
    }
}

/// A major compaction of the queue's keyspaces, run outside the frontier's lock (see
/// [`crate::Frontier::compaction_due`]).
pub struct CompactJob {
    store: Store,
}

impl CompactJob {
    /// Rewrites the queue, its URL index and the seen-set journal without the entries deleted
    /// since: a drained queue's tombstones otherwise wait for compactions that only new writes
    /// would trigger. Blocking, seconds to minutes; writes go on meanwhile.
    pub fn run(self) -> Result<()> {
        for ks in [&self.store.queue, &self.store.urls, &self.store.journal] {
            ks.major_compact()?;
        }
        Ok(())
    }
}

/// How many sequence numbers [`Store::reserve_seq`] reserves at once.
pub const fn seq_block() -> u64 {
    SEQ_BLOCK
}

/// A seen-set snapshot serialized under the frontier's lock (a memory copy of the filter),
/// written to disk outside it.
pub struct SnapshotJob {
    store: Store,
    mark: u64,
    bytes: Vec<u8>,
}

impl SnapshotJob {
    /// Writes the snapshot file (a new file renamed over the old one, synced), then drops the
    /// journal entries it covers. A crash in between only leaves journal entries that are
    /// added again on open. Returns the snapshot's size.
    pub fn write(self) -> Result<usize> {
        let path = &self.store.snapshot_path;
        let io = |error| FrontierError::Snapshot { path: path.clone(), error };
        let tmp = path.with_extension("gens.tmp");
        {
            let mut f = std::fs::File::create(&tmp).map_err(io)?;
            f.write_all(&self.bytes).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, path).map_err(io)?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        // The new snapshot covers what an earlier release's held.
        match std::fs::remove_file(&self.store.legacy_snapshot_path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(FrontierError::Snapshot { path: self.store.legacy_snapshot_path.clone(), error: e })
            }
            _ => {}
        }
        // In batches of bounded size (30 s of a fast crawl is a million entries): removing
        // part of them is as safe as removing none, since the snapshot covers them all.
        // Each chunk starts after the last one's keys, not over their fresh tombstones.
        let mut from = 0u64;
        while from <= self.mark {
            let mut batch = self.store.db.batch();
            for item in self.store.journal.range(from.to_be_bytes()..=self.mark.to_be_bytes()).take(JOURNAL_CHUNK) {
                let key = item.key()?;
                from = <[u8; 8]>::try_from(&key[..]).map(u64::from_be_bytes).unwrap_or(u64::MAX).saturating_add(1);
                batch.remove(&self.store.journal, key);
            }
            if batch.is_empty() {
                break;
            }
            batch.commit()?;
        }
        self.store.persist()?;
        Ok(self.bytes.len())
    }
}
