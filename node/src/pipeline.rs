//! What happens to a fetched page: the seam between fetching and everything downstream.
//!
//! The crawl loop hands every fetched HTML page to a [`Pipeline`] on a blocking thread and
//! queues the links it returns. Today the pipeline only discovers links; extraction, dedup,
//! chunking, embedding and indexing plug in here (fetch → extract → dedup → chunk → embed →
//! index) without touching the loop.

use bytes::Bytes;
use std::time::SystemTime;
use url::Url;
use weft_extract::Link;

/// A page as fetched.
#[derive(Debug, Clone)]
pub struct FetchedPage {
    pub url: Url,
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
    pub depth: u32,
    pub fetched_at: SystemTime,
}

/// What the pipeline learned from a page.
#[derive(Debug, Default)]
pub struct Processed {
    /// Outbound links, absolute but not yet normalized.
    pub links: Vec<Link>,
    /// Non-fatal problems, counted in `/status` (e.g. `invalid_utf8`).
    pub warnings: Vec<&'static str>,
}

/// Downstream processing of fetched pages. Runs on a blocking thread: CPU-bound work is fine.
pub trait Pipeline: Send + Sync + 'static {
    fn process(&self, page: &FetchedPage) -> Processed;
}

/// The interim pipeline: decode and discover links.
#[derive(Debug, Default, Clone, Copy)]
pub struct LinkPipeline;

impl Pipeline for LinkPipeline {
    fn process(&self, page: &FetchedPage) -> Processed {
        let mut warnings = Vec::new();
        let html = match std::str::from_utf8(&page.body) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => {
                warnings.push("invalid_utf8");
                String::from_utf8_lossy(&page.body)
            }
        };
        Processed { links: weft_extract::extract_links(&html, &page.url), warnings }
    }
}
