//! The disk quota (`index.disk_quota_mb`): a node left running for months must not fill its
//! disk. Every `index.quota_check_secs` the node's storage on disk (the sled database, the
//! document store, the vector and lexical indexes' files) is compared with the quota; over it,
//! the documents fetched longest ago are evicted — as many as the overage is worth at the
//! current average cost per document, to 90% of the quota. The document store then compacts
//! what was removed away at once ([`weft_index::store::DocStore::reclaim`]); sled frees the
//! space of its removed entries lazily (segments are reclaimed as they are rewritten), so a
//! check evicts once and the next check, an interval later, sees what was reclaimed. The
//! responses kept for WARC (`crawl.keep_responses`) are in the database and count; those of the
//! evicted documents are dropped with them.

use crate::indexing::IndexService;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a check waits for the document store's compaction after an eviction. The
/// compaction waits on fjall's flush workers, which share their queue with its background
/// compactions; past this bound it goes on in its own thread, and the checks evict nothing
/// more until it has finished (what it frees is not yet measured, so evicting again would
/// evict twice for the same overage).
pub const RECLAIM_BOUND: Duration = Duration::from_secs(60);

/// What one check found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub used_bytes: u64,
    pub quota_bytes: u64,
    pub evicted: usize,
}

/// Bytes the node's storage takes: the sled database (kept responses included), the document
/// store, the vector index's files (the delta's snapshot and the sealed segments) and the
/// lexical index's.
pub fn used_bytes(db: &sled::Db, data_dir: &std::path::Path) -> u64 {
    db.size_on_disk().unwrap_or(0)
        + weft_index::store::disk_bytes(data_dir)
        + weft_index::vectors::disk_bytes(data_dir)
        + weft_index::lexical::disk_bytes(data_dir)
}

/// One check (blocking). `reclaiming` is set while an earlier check's compaction outlives
/// [`RECLAIM_BOUND`].
pub fn check(
    index: &IndexService,
    db: &sled::Db,
    data_dir: &std::path::Path,
    quota_bytes: u64,
    reclaiming: &Arc<AtomicBool>,
) -> anyhow::Result<Checked> {
    let used = used_bytes(db, data_dir);
    if used <= quota_bytes || reclaiming.load(Ordering::Acquire) {
        return Ok(Checked { used_bytes: used, quota_bytes, evicted: 0 });
    }
    let stats = index.status().stored;
    let documents = stats.documents + stats.aliases + stats.failed;
    if documents == 0 {
        return Ok(Checked { used_bytes: used, quota_bytes, evicted: 0 });
    }
    let per_document = (used / documents).max(1);
    let target = quota_bytes / 10 * 9;
    let n = (used - target).div_ceil(per_document).clamp(1, documents) as usize;
    let evicted = index.evict_oldest(n)?;
    // The kept responses (`crawl.keep_responses`) of the documents that went go with them.
    let store = index.index().store();
    let responses = weft_content::responses::ResponseStore::open(db)?
        .keep_only(|id| store.doc(id).map_or(true, |d| d.is_some()))?;
    db.flush()?;
    reclaim(store.clone(), reclaiming)?;
    tracing::warn!(
        used_mb = used >> 20,
        quota_mb = quota_bytes >> 20,
        evicted,
        responses,
        "over the disk quota: evicted the oldest documents"
    );
    Ok(Checked { used_bytes: used, quota_bytes, evicted })
}

/// Compacts what an eviction removed ([`weft_index::store::DocStore::reclaim`]) on a thread of
/// its own, waiting at most [`RECLAIM_BOUND`]: a compaction that outlives it is logged and
/// left to finish, `reclaiming` set until it does.
fn reclaim(store: weft_index::store::DocStore, reclaiming: &Arc<AtomicBool>) -> anyhow::Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    reclaiming.store(true, Ordering::Release);
    let flag = reclaiming.clone();
    let spawned = std::thread::Builder::new().name("weft-quota-reclaim".into()).spawn(move || {
        let done = store.reclaim();
        flag.store(false, Ordering::Release);
        let _ = tx.send(done);
    });
    if let Err(e) = spawned {
        reclaiming.store(false, Ordering::Release);
        return Err(e.into());
    }
    match rx.recv_timeout(RECLAIM_BOUND) {
        Ok(done) => Ok(done?),
        Err(_) => {
            tracing::warn!(
                bound_secs = RECLAIM_BOUND.as_secs(),
                "the document store's compaction after an eviction is still running; \
                 the quota evicts nothing more until it has finished"
            );
            Ok(())
        }
    }
}

/// Checks every `every` until the task is dropped.
pub async fn enforce(index: Arc<IndexService>, db: sled::Db, data_dir: PathBuf, quota_bytes: u64, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    let reclaiming = Arc::new(AtomicBool::new(false));
    loop {
        tick.tick().await;
        let (index, db, dir, reclaiming) = (index.clone(), db.clone(), data_dir.clone(), reclaiming.clone());
        match tokio::task::spawn_blocking(move || check(&index, &db, &dir, quota_bytes, &reclaiming)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::error!("disk quota check failed: {e}"),
            Err(e) => tracing::error!("disk quota check crashed: {e}"),
        }
    }
}
