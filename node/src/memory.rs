//! The memory target (`crawl.memory_target_mb`): a node on a shared box should not grow without
//! bound. Every two seconds the node's resident memory — its own process plus its browsers'
//! process trees — is measured; over the target the crawl starts no new request (in-flight ones
//! finish, queues drain, the indexer catches up) until the use is back under 90% of the target.
//! The figures are taken on the blocking pool ([`crate::procmem`]); `/status` shows the last
//! ones, `throttled`, and `weft_memory_bytes` in `/metrics`. Every 15th measurement first
//! hands the allocator's free pages back to the system ([`crate::procmem::trim`]).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use weft_crawl::Crawler;
use weft_layouts::browser::LazyPool;

/// The allocator's free pages go back to the system on the first measurement and every this
/// many after it ([`crate::procmem::trim`]).
const TRIM_EVERY: u64 = 15;

/// Measures every `every`, publishing the figures and throttling the crawl around
/// `target_bytes` (0: measure only).
pub async fn watch(crawler: Crawler, browsers: Option<Arc<LazyPool>>, target_bytes: u64, every: Duration) {
    let metrics = crawler.metrics();
    metrics.memory_target_bytes.store(target_bytes, Relaxed);
    let mut throttled = false;
    let mut measurements = 0u64;
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let pool = browsers.as_ref().and_then(|b| b.started());
        measurements += 1;
        let trim = measurements % TRIM_EVERY == 1;
        let measured = tokio::task::spawn_blocking(move || {
            if trim {
                crate::procmem::trim();
            }
            crate::procmem::own_rss() + pool.map_or(0, |p| p.measure_memory().iter().sum::<u64>())
        })
        .await;
        let Ok(used) = measured else { continue };
        metrics.memory_bytes.store(used, Relaxed);
        if target_bytes == 0 {
            continue;
        }
        if !throttled && used > target_bytes {
            throttled = true;
            tracing::warn!(
                used_mb = used >> 20,
                target_mb = target_bytes >> 20,
                "over the memory target: no new requests until it is back under 90%"
            );
            crawler.throttle(true);
        } else if throttled && used < target_bytes / 10 * 9 {
            throttled = false;
            tracing::info!(used_mb = used >> 20, "back under the memory target: crawling");
            crawler.throttle(false);
        }
    }
}
