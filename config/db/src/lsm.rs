//! What a fjall database holds in memory, for `/status`: its block cache as filled (bounded),
//! and what it holds outside it. Its write buffer (the memtables not yet written out) is
//! bounded by the keyspaces' memtable size and the journal's. A node reports all three, so an
//! operator can see whether a store's share of memory is growing.
//!
//! And how every Weft keyspace is made ([`keyspace_options`]): without pinned blocks.

use fjall::config::PinningPolicy;
use fjall::{AbstractTree, Database, Keyspace, KeyspaceCreateOptions};

/// The options every Weft keyspace is created with: memtables of `memtable_bytes`, and no
/// index or filter block pinned in memory — they are read through the block cache like the
/// data, so the store's memory is its cache, bounded, however much it holds.
///
/// fjall pins by default the index blocks of the two newest levels and the filter blocks of
/// the newest, outside the cache: those follow the tables, so they grew with what the store
/// held — 5.4 MiB at a million URLs queued in the frontier's soak, and a steady part of a
/// crawling node's growth over an hour (issue 37). Unpinned, the frontier's soak ran as fast
/// (docs/src/benchmarks.md). fjall records a keyspace's options when it creates it: a store
/// made by an earlier release keeps its pinning.
pub fn keyspace_options(memtable_bytes: u64) -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default()
        .max_memtable_size(memtable_bytes)
        .index_block_pinning_policy(PinningPolicy::disabled())
        .filter_block_pinning_policy(PinningPolicy::disabled())
}

/// Bytes a fjall database holds in memory: its block cache as filled, and outside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LsmMemory {
    /// The block cache as filled (bounded by the store's cache size).
    pub cache: u64,
    /// Index and filter blocks kept pinned, over every keyspace.
    pub pinned: u64,
    /// Memtables, active and sealed, not yet written out to tables.
    pub write_buffer: u64,
}

impl LsmMemory {
    /// Reads the figures of `db` over `keyspaces` (cheap: counters and the tables' metadata).
    pub fn of(db: &Database, keyspaces: &[&Keyspace]) -> LsmMemory {
        let pinned =
            keyspaces.iter().map(|k| (k.tree.pinned_filter_size() + k.tree.pinned_block_index_size()) as u64).sum();
        LsmMemory { cache: db.cache_size(), pinned, write_buffer: db.write_buffer_size() }
    }

    /// All together.
    pub fn total(&self) -> u64 {
        self.cache + self.pinned + self.write_buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes pinned after 20,000 keys are written to a table of a keyspace made with `options`.
    fn pinned_after_a_flush(options: fn() -> KeyspaceCreateOptions) -> (u64, u64) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::builder(dir.path()).cache_size(1 << 20).open().unwrap();
        let ks = db.keyspace("k", options).unwrap();
        for i in 0u32..20_000 {
            ks.insert(i.to_be_bytes(), [7u8; 40]).unwrap();
        }
        ks.rotate_memtable_and_wait().unwrap();
        assert!(ks.tree.table_count() >= 1);
        assert_eq!(ks.get(19_999u32.to_be_bytes()).unwrap().as_deref(), Some(&[7u8; 40][..]), "readable unpinned");
        let memory = LsmMemory::of(&db, &[&ks]);
        (memory.pinned, memory.cache)
    }

    #[test]
    fn weft_keyspaces_pin_nothing_where_fjalls_defaults_pin_their_tables_blocks() {
        let (pinned_by_default, _) = pinned_after_a_flush(KeyspaceCreateOptions::default);
        assert!(pinned_by_default > 0, "fjall's defaults pin the new table's index and filter blocks");
        let (pinned, cache) = pinned_after_a_flush(|| keyspace_options(8 << 20));
        assert_eq!(pinned, 0, "nothing outside the block cache");
        assert!(cache > 0, "the read went through the cache");
    }
}
