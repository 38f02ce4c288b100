//! The node's small stores, kept as tables of the frontier's LSM store ([`Store::table`]):
//! the URL patterns ([`crate::patterns`]) and the node's layout store. They were sled trees;
//! sled's memory grew with every write, and these take a write or two every page.

use crate::store::{Result, Store};
use std::path::Path;

/// Opens tables in the frontier's store. Cheap to clone (handles).
#[derive(Clone)]
pub struct Tables {
    store: Store,
}

impl Tables {
    pub(crate) fn of(store: &Store) -> Tables {
        Tables { store: store.clone() }
    }

    /// The tables of the frontier whose files are in `dir`, without opening the frontier: for a
    /// tool reading or changing a stopped node's data dir (`weft templates` with no node up).
    pub fn open_dir(dir: &Path) -> Result<Tables> {
        Ok(Tables { store: Store::open(dir, 8 << 20, 4 << 20)? })
    }

    /// The table `name`.
    pub fn table(&self, name: &str) -> weft_db::Table {
        self.store.table(name)
    }

    /// Syncs what was written to disk (a tool does before it exits; the crawl syncs after
    /// every page).
    pub fn persist(&self) -> Result<()> {
        self.store.persist()
    }
}
