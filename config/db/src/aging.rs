//! Memtables that fill slowly are written out by age, not only by size.
//!
//! fjall writes a keyspace's memtable to a table when it reaches its size (`max_memtable_size`)
//! or when the journals grow too large. A keyspace written once a page (the frontier's URLs
//! done and outcomes, the documents' SimHash blocks) takes half an hour or more of crawling to
//! fill a few MiB, so its memtable grows for that long before it is written: a node's memory
//! kept rising for ~30 minutes after start (issue 37) though every part of it was bounded.
//! [`MemtableAge`] seals, every few minutes, each memtable that holds more than a little, so
//! a store's write buffer holds minutes of writes and is flat after its first few minutes.
//! Sealing loses nothing: the sealed memtable stays readable until fjall's flush workers have
//! written it, and the journal covers it until then.

use fjall::{AbstractTree, Keyspace};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a memtable may keep taking writes before it is sealed.
pub const MEMTABLE_MAX_AGE: Duration = Duration::from_secs(240);
/// Memtables smaller than this are left to fill: a few hundred KiB is not worth a table.
pub const MEMTABLE_MIN_SEALED: u64 = 256 << 10;

/// When a store last sealed its memtables by age; stores call [`MemtableAge::seal_old`] from
/// a path they run often (a sync), and it does the work once every `every`.
#[derive(Debug)]
pub struct MemtableAge {
    every: Duration,
    next: Mutex<Instant>,
}

impl Default for MemtableAge {
    fn default() -> Self {
        MemtableAge::new(MEMTABLE_MAX_AGE)
    }
}

impl MemtableAge {
    pub fn new(every: Duration) -> MemtableAge {
        MemtableAge { every, next: Mutex::new(Instant::now() + every) }
    }

    /// Seals the memtable of each of `keyspaces` that holds at least [`MEMTABLE_MIN_SEALED`]
    /// when `every` has passed since the last time (fjall's flush workers then write it out).
    /// Returns how many it sealed (0 when it is not yet time).
    pub fn seal_old(&self, keyspaces: &[&Keyspace]) -> fjall::Result<usize> {
        let now = Instant::now();
        {
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            if now < *next {
                return Ok(0);
            }
            *next = now + self.every;
        }
        let mut sealed = 0;
        for ks in keyspaces {
            if ks.tree.active_memtable().size() >= MEMTABLE_MIN_SEALED && ks.rotate_memtable()? {
                sealed += 1;
            }
        }
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fjall::{Database, KeyspaceCreateOptions};

    #[test]
    fn a_memtable_past_its_age_is_written_out_and_a_small_or_young_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).open().unwrap();
        let big = db.keyspace("big", KeyspaceCreateOptions::default).unwrap();
        let small = db.keyspace("small", KeyspaceCreateOptions::default).unwrap();
        for i in 0u32..4_000 {
            big.insert(i.to_be_bytes(), [7u8; 100]).unwrap();
        }
        small.insert(b"k", b"v").unwrap();
        let age = MemtableAge::new(Duration::from_millis(200));
        assert_eq!(age.seal_old(&[&big, &small]).unwrap(), 0, "not yet time");
        std::thread::sleep(Duration::from_millis(250));
        assert_eq!(age.seal_old(&[&big, &small]).unwrap(), 1, "only the memtable past the floor");
        assert_eq!(age.seal_old(&[&big, &small]).unwrap(), 0, "once per period");
        let deadline = Instant::now() + Duration::from_secs(30);
        while big.tree.table_count() == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(big.tree.table_count(), 1, "the sealed memtable was written to a table");
        assert!(big.tree.active_memtable().is_empty());
        assert_eq!(small.tree.table_count(), 0);
        assert_eq!(big.get(3_999u32.to_be_bytes()).unwrap().as_deref(), Some(&[7u8; 100][..]), "nothing lost");
        assert_eq!(small.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }
}
