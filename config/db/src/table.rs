//! A small named table inside a fjall keyspace, with the handful of operations the node's
//! small stores used from sled trees (the layout store, the URL patterns).
//!
//! Those stores rewrite a few records on every page (a host's URL patterns, a layout's
//! sightings). In sled, every such write kept memory: a crawling node's sled share grew with
//! the writes, whatever its cache (issue 37's profiles: ~5 MiB per 30,000 pages from these two
//! stores alone). In an LSM keyspace the rewrites land in a memtable that is written out by size
//! and by age ([`crate::MemtableAge`]), so their memory is bounded.
//!
//! Many tables share one keyspace: each key is stored behind the table's name and a zero byte,
//! so one keyspace (one memtable, one set of tables on disk) serves them all. Keys handed out
//! by the iterators are the table's own, without that prefix.
//!
//! Each write is durable once the database is persisted (the frontier's store does that after
//! every page). Writes of several keys are not atomic together, as with sled's trees.
//! [`Table::compare_and_swap`] and [`Table::remove`] (which returns what was removed) are atomic
//! against the table's other writes through the same handle and its clones.

use fjall::{Database, Keyspace, Slice};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

/// One table: a name's share of a keyspace. Cheap to clone (handles).
#[derive(Clone)]
pub struct Table {
    db: Database,
    ks: Keyspace,
    /// The table's name and a zero byte: the start of each of its keys.
    prefix: Arc<[u8]>,
    /// Serializes writes, so a compare-and-swap is not interleaved with another write.
    lock: Arc<Mutex<()>>,
    /// The store's: a failed write here explains the store's later `Poisoned`.
    failure: crate::FirstFailure,
}

/// An entry: the key (without the table's prefix) and the value.
pub type Entry = (Vec<u8>, Slice);

impl Table {
    /// The table `name` in `ks` (of `db`); its failed writes are noted in `failure`. A name
    /// must not be a prefix of another table's name followed by a zero byte, which no printable
    /// name is.
    pub fn open(db: &Database, ks: &Keyspace, name: &str, failure: &crate::FirstFailure) -> Table {
        let mut prefix = name.as_bytes().to_vec();
        prefix.push(0);
        Table { db: db.clone(), ks: ks.clone(), prefix: prefix.into(), lock: Arc::default(), failure: failure.clone() }
    }

    fn full(&self, k: &[u8]) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.prefix.len() + k.len());
        full.extend_from_slice(&self.prefix);
        full.extend_from_slice(k);
        full
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, k: impl AsRef<[u8]>) -> fjall::Result<Option<Slice>> {
        self.ks.get(self.full(k.as_ref()))
    }

    pub fn contains_key(&self, k: impl AsRef<[u8]>) -> fjall::Result<bool> {
        self.ks.contains_key(self.full(k.as_ref()))
    }

    pub fn insert(&self, k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) -> fjall::Result<()> {
        let _g = self.guard();
        self.failure.note(self.ks.insert(self.full(k.as_ref()), v.as_ref()))
    }

    /// Removes `k`; returns the value it had.
    pub fn remove(&self, k: impl AsRef<[u8]>) -> fjall::Result<Option<Slice>> {
        let full = self.full(k.as_ref());
        let _g = self.guard();
        let old = self.ks.get(&full)?;
        if old.is_some() {
            self.failure.note(self.ks.remove(full))?;
        }
        Ok(old)
    }

    /// Sets `k` to `new` (or removes it, `None`) only if its value is `old` (`None`: absent);
    /// returns whether it did.
    pub fn compare_and_swap(&self, k: impl AsRef<[u8]>, old: Option<&[u8]>, new: Option<&[u8]>) -> fjall::Result<bool> {
        let full = self.full(k.as_ref());
        let _g = self.guard();
        if self.ks.get(&full)?.as_deref() != old {
            return Ok(false);
        }
        self.failure.note(match new {
            Some(v) => self.ks.insert(full, v),
            None => self.ks.remove(full),
        })?;
        Ok(true)
    }

    fn strip(&self, item: fjall::Guard) -> fjall::Result<Entry> {
        let (k, v) = item.into_inner()?;
        Ok((k[self.prefix.len()..].to_vec(), v))
    }

    /// The entries whose keys start with `p`, in key order.
    pub fn scan_prefix(&self, p: impl AsRef<[u8]>) -> impl Iterator<Item = fjall::Result<Entry>> + '_ {
        self.ks.prefix(self.full(p.as_ref())).map(|item| self.strip(item))
    }

    /// Every entry, in key order.
    pub fn iter(&self) -> impl Iterator<Item = fjall::Result<Entry>> + '_ {
        self.scan_prefix([])
    }

    /// The entries after `k` (not `k` itself), in key order.
    pub fn after(&self, k: &[u8]) -> impl Iterator<Item = fjall::Result<Entry>> + '_ {
        let n = self.prefix.len();
        self.ks
            .range::<Vec<u8>, _>((Bound::Excluded(self.full(k)), Bound::Unbounded))
            .map(|item| item.into_inner())
            .take_while(|item| item.as_ref().map_or(true, |(key, _)| key.starts_with(&self.prefix)))
            .map(move |item| item.map(|(key, v)| (key[n..].to_vec(), v)))
    }

    /// The entry with the smallest key.
    pub fn first(&self) -> fjall::Result<Option<Entry>> {
        self.iter().next().transpose()
    }

    /// The entry with the largest key.
    pub fn last(&self) -> fjall::Result<Option<Entry>> {
        self.ks.prefix(&*self.prefix).next_back().map(|item| self.strip(item)).transpose()
    }

    /// Entries in the table (a scan: for views and tests, not for paths run per page).
    pub fn len(&self) -> usize {
        self.ks.prefix(&*self.prefix).count()
    }

    pub fn is_empty(&self) -> bool {
        self.ks.prefix(&*self.prefix).next().is_none()
    }

    /// Moves the entries of an earlier release's sled tree `tree` (in `legacy`) here, then drops
    /// that tree; returns how many ([`move_sled_tree`]).
    pub fn move_from_sled(&self, legacy: &sled::Db, tree: &str) -> Result<usize, MoveError> {
        move_sled_tree(legacy, tree, &self.db, &self.ks, &self.prefix)
    }
}

/// Entries copied per batch by [`move_sled_tree`].
pub const MOVE_BATCH: usize = 4096;

/// Moves the entries of an earlier release's sled tree `tree` (in `legacy`) into `ks` of `db`,
/// each key behind `prefix` (empty for a keyspace of its own), then drops that tree; returns how
/// many. Done when a store opens, before it writes: the copy does not overwrite an entry already
/// there (a move cut short is done again, and a newer write wins), it goes in batches of
/// [`MOVE_BATCH`], and the tree is dropped only once the copy is synced.
pub fn move_sled_tree(
    legacy: &sled::Db,
    tree: &str,
    db: &Database,
    ks: &Keyspace,
    prefix: &[u8],
) -> Result<usize, MoveError> {
    if !legacy.tree_names().iter().any(|n| n.as_ref() == tree.as_bytes()) {
        return Ok(0);
    }
    let old = legacy.open_tree(tree)?;
    let mut moved = 0;
    let mut batch = db.batch();
    for item in old.iter() {
        let (k, v) = item?;
        let full = [prefix, &k].concat();
        if ks.contains_key(&full)? {
            continue;
        }
        batch.insert(ks, full, v.to_vec());
        moved += 1;
        if moved % MOVE_BATCH == 0 {
            std::mem::replace(&mut batch, db.batch()).commit()?;
        }
    }
    batch.commit()?;
    db.persist(fjall::PersistMode::SyncAll)?;
    drop(old);
    legacy.drop_tree(tree)?;
    legacy.flush()?;
    Ok(moved)
}

/// Increasing ids for keys that must sort by creation and stay unique across restarts (a
/// queue's sequence, a log entry's tie-breaker), as sled's `generate_id` gave: seeded with the
/// clock in microseconds, or above `floor` (the largest id a table already holds) when that is
/// later.
#[derive(Debug)]
pub struct Ids(std::sync::atomic::AtomicU64);

impl Ids {
    pub fn new(floor: u64) -> Ids {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        Ids(std::sync::atomic::AtomicU64::new(micros.max(floor.saturating_add(1))))
    }

    pub fn next(&self) -> u64 {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// Why [`move_sled_tree`] failed.
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    #[error("reading the earlier release's sled tree: {0}")]
    Sled(#[from] sled::Error),
    #[error("writing the table: {0}")]
    Lsm(#[from] fjall::Error),
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::KeyspaceCreateOptions;

    fn tables(dir: &std::path::Path) -> (Database, Table, Table) {
        let db = Database::builder(dir.join("lsm")).open().unwrap();
        let ks = db.keyspace("tables", KeyspaceCreateOptions::default).unwrap();
        let f = crate::FirstFailure::default();
        (db.clone(), Table::open(&db, &ks, "a", &f), Table::open(&db, &ks, "ab", &f))
    }

    /// Two tables in one keyspace keep apart (a name that is another's prefix included); the
    /// operations behave as sled's did; the entries are on disk after a reopen.
    #[test]
    fn tables_share_a_keyspace_apart_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (db, a, ab) = tables(dir.path());
            for i in 0u8..5 {
                a.insert([i], [i, i]).unwrap();
            }
            ab.insert(b"x", b"1").unwrap();
            assert_eq!(a.len(), 5);
            assert_eq!(ab.len(), 1);
            assert_eq!(a.first().unwrap().unwrap().0, vec![0]);
            assert_eq!(a.last().unwrap().unwrap().0, vec![4]);
            assert_eq!(ab.last().unwrap().unwrap().0, b"x".to_vec());
            let after: Vec<Vec<u8>> = a.after(&[2]).map(|e| e.unwrap().0).collect();
            assert_eq!(after, vec![vec![3], vec![4]], "after stops at the table's end");
            assert_eq!(a.scan_prefix([1]).count(), 1);
            assert_eq!(a.remove([1]).unwrap().as_deref(), Some(&[1u8, 1][..]));
            assert_eq!(a.remove([1]).unwrap(), None);
            assert!(!a.compare_and_swap([9], Some(b"no"), Some(b"v")).unwrap(), "absent is not 'no'");
            assert!(a.compare_and_swap([9], None, Some(b"v")).unwrap());
            assert!(!a.compare_and_swap([9], None, Some(b"w")).unwrap(), "present is not absent");
            assert!(a.compare_and_swap([9], Some(b"v"), None).unwrap());
            assert!(!a.contains_key([9]).unwrap());
            db.persist(fjall::PersistMode::SyncAll).unwrap();
        }
        let (_, a, ab) = tables(dir.path());
        let keys: Vec<Vec<u8>> = a.iter().map(|e| e.unwrap().0).collect();
        assert_eq!(keys, vec![vec![0], vec![2], vec![3], vec![4]]);
        assert_eq!(ab.get(b"x").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(!ab.is_empty());
    }

    /// An earlier release's sled tree is moved in once: its entries arrive, an entry already
    /// in the table is not overwritten, and the tree is gone afterwards.
    #[test]
    fn a_sled_tree_is_moved_in_once_without_overwriting_newer_entries() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = crate::open_db(&dir.path().join("db"), 1 << 20).unwrap();
        let old = legacy.open_tree("t").unwrap();
        old.insert(b"k1", b"old").unwrap();
        old.insert(b"k2", b"old").unwrap();
        drop(old);
        let (_, a, _) = tables(dir.path());
        a.insert(b"k2", b"new").unwrap();
        assert_eq!(a.move_from_sled(&legacy, "t").unwrap(), 1);
        assert_eq!(a.get(b"k1").unwrap().as_deref(), Some(&b"old"[..]));
        assert_eq!(a.get(b"k2").unwrap().as_deref(), Some(&b"new"[..]));
        assert!(!legacy.tree_names().iter().any(|n| n.as_ref() == b"t"));
        assert_eq!(a.move_from_sled(&legacy, "t").unwrap(), 0, "nothing left to move");
    }

    #[test]
    fn ids_increase_and_start_above_their_floor() {
        let ids = Ids::new(0);
        let (a, b) = (ids.next(), ids.next());
        assert!(b > a && a > 1_700_000_000_000_000, "clock-seeded: {a}");
        assert_eq!(Ids::new(u64::MAX - 10).next(), u64::MAX - 9);
    }
}
