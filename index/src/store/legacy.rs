//! Moving a document store that an earlier release kept in sled (trees `index.docs`,
//! `index.chunks`, `index.vectors`, `index.simhash`, `index.links` of the node's database)
//! into the fjall store, once, when the index is first opened.
//!
//! The order makes it safe to stop at any point: the trees are copied, then the `meta` key
//! [`MOVED_FROM_SLED`] is written and synced, and only then are the sled trees dropped. Stopped
//! during the copy, the next open copies again over the partial copy (the same keys, the same
//! values); stopped after the key, it only drops what is left in sled. The fjall store is not
//! written by anything else before the move ends, so a second copy never overwrites newer
//! documents.

use super::{DocStore, MOVED_FROM_SLED};
use crate::IndexError;
use fjall::Keyspace;

/// Entries copied per batch: bounded memory whatever the store's size.
const BATCH: usize = 4096;

/// The sled trees and the keyspaces they go to.
fn trees(store: &DocStore) -> [(&'static str, &Keyspace); 5] {
    [
        ("index.docs", &store.docs),
        ("index.chunks", &store.chunks),
        ("index.vectors", &store.vectors),
        ("index.simhash", &store.blocks),
        ("index.links", &store.links),
    ]
}

/// What [`move_from_sled`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Entries copied from sled (all trees).
    pub entries: u64,
    /// sled trees dropped.
    pub trees: usize,
}

/// Whether `legacy` still holds a store of an earlier release: the documents it has in sled
/// (`None`: nothing to move). `weft doctor` says so.
pub fn pending(legacy: &sled::Db) -> Option<usize> {
    legacy
        .tree_names()
        .iter()
        .any(|n| n.as_ref() == b"index.docs")
        .then(|| legacy.open_tree("index.docs").map(|t| t.len()).unwrap_or(0))
}

/// Copies the documents an earlier release kept in `legacy` into `store` and drops them from
/// sled; nothing when there are none or when they were moved already.
pub(super) fn move_from_sled(store: &DocStore, legacy: &sled::Db) -> Result<Moved, IndexError> {
    let names = legacy.tree_names();
    let present: Vec<(&'static str, &Keyspace)> =
        trees(store).into_iter().filter(|(name, _)| names.iter().any(|n| n.as_ref() == name.as_bytes())).collect();
    let mut moved = Moved::default();
    if !store.meta.contains_key(MOVED_FROM_SLED)? {
        let started = std::time::Instant::now();
        for (name, keyspace) in &present {
            let tree = legacy.open_tree(name)?;
            let mut batch = store.db.batch();
            for item in tree.iter() {
                let (k, v) = item?;
                batch.insert(keyspace, k.as_ref(), v.as_ref());
                moved.entries += 1;
                if batch.len() == BATCH {
                    std::mem::replace(&mut batch, store.db.batch()).commit()?;
                }
            }
            batch.commit()?;
        }
        store.meta.insert(MOVED_FROM_SLED, moved.entries.to_be_bytes())?;
        // Synced here, not through `DocStore::flush`: its coalescing counts the store's own
        // batches, which these are not, and the sled trees go next.
        store.db.persist(fjall::PersistMode::SyncAll)?;
        if moved.entries > 0 {
            tracing::info!(
                entries = moved.entries,
                secs = started.elapsed().as_secs_f32(),
                path = %store.path.display(),
                "moved the index's documents from sled to their own store"
            );
        }
    }
    for (name, _) in &present {
        legacy.drop_tree(name)?;
        moved.trees += 1;
    }
    if moved.trees > 0 {
        legacy.flush()?;
    }
    Ok(moved)
}
