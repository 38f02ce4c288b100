//! The node's timers, each an async fn of its own that runs until the node stops: what keeps
//! the stores healthy and bounded while the crawl runs.

use crate::indexing::IndexService;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use weft_config::Config;
use weft_crawl::storage::Storage;
use weft_crawl::Crawler;
use weft_layouts::Layouts;

/// How often the database's generation is recorded (see `weft_frontier::generation`).
const GENERATION_EVERY: Duration = Duration::from_secs(10);

/// The node's timers: the database's generation, disk quota, storage health, memory, the
/// change log's pruning, the dashboard's samples, and the frontier's and the index's upkeep.
pub(super) fn spawn_timers(
    config: &Config,
    crawler: &Crawler,
    index: Option<&Arc<IndexService>>,
    layouts: Option<&Layouts>,
    db: sled::Db,
    tasks: &mut JoinSet<()>,
) {
    tasks.spawn(record_generation(crawler.storage().clone(), db.clone(), config.data_dir.join("db")));
    if let Some(index) = index {
        // The copies held for others have their share of the quota, bounded apart.
        let quota = config.index.own_quota_bytes(index.cells().is_some());
        if quota > 0 {
            tasks.spawn(crate::quota::enforce(
                index.clone(),
                db,
                config.data_dir.clone(),
                quota,
                Duration::from_secs(config.index.quota_check_secs),
            ));
        }
    }
    tasks.spawn(crawler.storage().clone().watch(Duration::from_secs(config.storage.check_interval_secs)));
    tasks.spawn(crate::memory::watch(
        crawler.clone(),
        layouts.map(|l| l.pool.clone()),
        config.crawl.memory_target_mb << 20,
        Duration::from_secs(2),
    ));
    let keep = Duration::from_secs(config.layouts.change_log_days.saturating_mul(86_400));
    tasks.spawn(prune_change_log(crawler.clone(), layouts.map(|l| l.store.clone()), keep));
    tasks.spawn(sample_counters(crawler.metrics()));
    tasks.spawn(frontier_upkeep(crawler.clone(), Duration::from_secs(config.frontier.snapshot_interval_secs)));
    if let Some(index) = index.cloned() {
        let every = Duration::from_secs(config.index.snapshot_interval_secs);
        tasks.spawn(index_upkeep(crawler.storage().clone(), index, every));
    }
}

/// The database's generation, written and flushed, then recorded beside it: a later open
/// that finds the database behind the record knows sled dropped writes. Ends at a storage
/// fault (which the guard reports, and which stops the node).
async fn record_generation(storage: Storage, db: sled::Db, dir: std::path::PathBuf) {
    let mut tick = tokio::time::interval(GENERATION_EVERY);
    loop {
        tick.tick().await;
        let (db, dir, guard) = (db.clone(), dir.clone(), storage.clone());
        // The data dir checked first: a dir gone or full is named as such, not as a failed
        // flush of the generation.
        let record = move || {
            guard.check().map_err(|e| e.to_string())?;
            weft_frontier::generation::advance(&db, &dir).map_err(|e| e.to_string())
        };
        if storage.bounded("recording the database generation", record).await.is_err() {
            return;
        }
    }
}

/// The change log keeps `layouts.change_log_days`: pruned at start and hourly.
async fn prune_change_log(crawler: Crawler, store: Option<weft_layouts::LayoutStore>, keep: Duration) {
    let mut tick = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tick.tick().await;
        let (pruner, store) = (crawler.clone(), store.clone());
        let pruned = tokio::task::spawn_blocking(move || {
            let before = std::time::SystemTime::now().checked_sub(keep).map_or(0, weft_clock::secs);
            let layout = store.map_or(Ok(0), |s| s.prune_changes(before).map_err(anyhow::Error::from))?;
            Ok::<_, anyhow::Error>(layout + pruner.patterns().prune_changes(before)?)
        })
        .await;
        match pruned {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!(entries = n, "old change-log entries dropped"),
            Ok(Err(e)) => tracing::warn!("pruning the change log failed: {e}"),
            Err(e) => tracing::warn!("pruning the change log failed: {e}"),
        }
    }
}

/// The dashboard's charts: the counters every few seconds.
async fn sample_counters(metrics: Arc<weft_crawl::metrics::Metrics>) {
    let mut tick = tokio::time::interval(Duration::from_secs(crate::api::HISTORY_SECS));
    loop {
        tick.tick().await;
        metrics.sample();
    }
}

/// Every `every`: the seen-set's snapshot, idle hosts out of memory, the frontier's files
/// compacted once its queue drained.
async fn frontier_upkeep(crawler: Crawler, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        match crawler.snapshot().await {
            Ok(bytes) => tracing::debug!(bytes, "seen-set snapshot written"),
            Err(e) => tracing::error!("seen-set snapshot failed: {e}"),
        }
        match crawler.evict_idle_hosts().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(hosts = n, "idle hosts left memory (their records stay on disk)"),
            Err(e) => tracing::warn!("letting idle hosts leave memory failed: {e}"),
        }
        match crawler.compact_frontier().await {
            Ok(true) => tracing::info!("frontier files compacted: the drained queue's space is reclaimed"),
            Ok(false) => {}
            Err(e) => tracing::warn!("compacting the frontier's files failed: {e}"),
        }
    }
}

/// Every `every`: the vector index's snapshot (bounded), then its small segments merged.
async fn index_upkeep(storage: Storage, index: Arc<IndexService>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        if let Err(e) = snapshot_index(&storage, index.clone()).await {
            tracing::error!("vector index snapshot failed: {e}");
        }
        // Small vector segments merged, apart from the bounded snapshot: CPU work of up to
        // ~20 s, not a sign of a failing disk.
        let merging = index.clone();
        match tokio::task::spawn_blocking(move || merging.merge_segments()).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!("merging vector segments failed: {e}"),
            Err(e) => tracing::error!("merging vector segments crashed: {e}"),
        }
    }
}

/// Flushes the document store and writes the vector snapshot, on the blocking pool, bounded.
pub(super) async fn snapshot_index(storage: &Storage, index: Arc<IndexService>) -> anyhow::Result<()> {
    let running = index.clone();
    let wrote = match storage.bounded("writing the vector index", move || running.snapshot()).await {
        Ok(wrote) => wrote,
        Err(fault) => {
            // Which step did not answer (a storage fault stops the node; this says where).
            if let Some((which, step)) = index.snapshot_step() {
                tracing::error!(index = which, step, "the index snapshot did not finish");
            }
            return Err(fault.into());
        }
    };
    if wrote {
        tracing::debug!("vector index snapshot written");
    }
    Ok(())
}
