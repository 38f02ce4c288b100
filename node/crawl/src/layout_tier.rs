//! The crawl as the layout tier (`weft-layouts`) sees it: the browser's requests go through
//! the crawl's rules, rendered pages down its pipeline, and the counts into its metrics.

use crate::Crawler;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;
use url::Url;
use weft_fetch::{BrowserFetchError, Fetched, FetchedPage};
use weft_layouts::{Crawl, Tally};

impl Crawl for Crawler {
    fn tally(&self) -> Arc<dyn Tally> {
        self.metrics()
    }

    fn until_running(&self) -> BoxFuture<'_, ()> {
        Box::pin(Crawler::until_running(self))
    }

    fn stopping(&self) -> bool {
        Crawler::stopping(self)
    }

    fn wake(&self) {
        Crawler::wake(self)
    }

    fn fetch_for_browser<'a>(
        &'a self,
        url: &'a Url,
        patience: Duration,
    ) -> BoxFuture<'a, Result<Fetched, BrowserFetchError>> {
        Box::pin(Crawler::fetch_for_browser(self, url, patience))
    }

    fn process_rendered(&self, page: FetchedPage) -> BoxFuture<'_, ()> {
        Box::pin(Crawler::process_rendered(self, page))
    }
}
