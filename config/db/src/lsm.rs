//! What a fjall database holds in memory, for `/status`: its block cache as filled (bounded),
//! and what it holds outside it. fjall keeps the index blocks of its newest two levels and the
//! filter blocks of its newest level pinned in memory (its defaults): those follow the tables,
//! so they grow with what the store holds. Its write buffer (the memtables not yet written out)
//! is bounded by the keyspaces' memtable size and the journal's. A node reports all three, so
//! an operator can see whether a store's share of memory is growing.

use fjall::{AbstractTree, Database, Keyspace};

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
