//! Blocking store calls from async code, with a bound: the cell store, the replica store and
//! the index sit on sled, which can hang for good when its files fail under it, so a task
//! that waits on them waits at most a bound and goes on without the answer.

use std::time::Duration;

/// A store call that takes longer than this is given up (a received batch is then answered
/// busy, and sent again).
pub(crate) const STORE_BOUND: Duration = Duration::from_secs(30);

/// Runs `op` (a cell store, replica store or index call: sled underneath) on the blocking pool
/// and waits at most `bound`; a failure or a timeout is logged as `what` and gives `None` —
/// the work goes on without it (unlike [`weft_crawl::storage::Storage::bounded`], nothing here
/// stops the node: postings and copies are the network's, not this node's own data).
pub(crate) async fn bounded<T: Send + 'static, E: std::fmt::Display + Send + 'static>(
    what: &str,
    bound: Duration,
    op: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Option<T> {
    match tokio::time::timeout(bound, tokio::task::spawn_blocking(op)).await {
        Ok(Ok(Ok(v))) => Some(v),
        Ok(Ok(Err(e))) => {
            tracing::warn!("{what}: {e}");
            None
        }
        Ok(Err(e)) => {
            tracing::warn!("{what}: {e}");
            None
        }
        Err(_) => {
            tracing::warn!("{what}: no answer within {} s", bound.as_secs());
            None
        }
    }
}
