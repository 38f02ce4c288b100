//! What the layout tier needs of the crawl: the browser's requests go through it (under its
//! politeness and robots.txt), rendered pages go down its pipeline, and the browser's work
//! pauses while the crawl does. The node's `Crawler` implements it.

use crate::events::Tally;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use url::Url;
use weft_fetch::{BrowserFetchError, Fetched, FetchedPage};

/// The crawl, as the browser tier sees it.
pub trait Crawl: Send + Sync + 'static {
    /// Where the counts go.
    fn tally(&self) -> Arc<dyn Tally>;
    /// Returns once the crawl is neither paused nor throttled: the browser's work starts no
    /// request while the crawl's does not either.
    fn until_running(&self) -> BoxFuture<'_, ()>;
    /// Whether the crawl is stopping: no new work starts.
    fn stopping(&self) -> bool;
    /// Wakes the crawl loop (work finished here).
    fn wake(&self);
    /// One request outside the crawl's queue (a page for the browser or the teacher), under
    /// the crawl's rules; waits at most `patience` for the host's politeness delay.
    fn fetch_for_browser<'a>(
        &'a self,
        url: &'a Url,
        patience: Duration,
    ) -> BoxFuture<'a, Result<Fetched, BrowserFetchError>>;
    /// A page the browser rendered (or fetched again after the browser failed on it) goes
    /// down the pipeline; its links are queued and durable when this returns.
    fn process_rendered(&self, page: FetchedPage) -> BoxFuture<'_, ()>;
}

/// The crawl a layout task holds.
pub type CrawlHandle = Arc<dyn Crawl>;
