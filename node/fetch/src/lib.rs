//! Fetching a page, and the page fetched: HTTP under the SSRF guard ([`fetcher`], [`guard`]),
//! and the page on its way to the index with the seams it crosses ([`page`]: the pipeline that
//! processes it, the browser's queue for the pages that need JavaScript).
//!
//! Below both the node's crawl and the browser tier (`weft-layouts`): each speaks these types
//! without knowing the other.
//!
//! Module order: guard, page → fetcher.

pub mod fetcher;
pub mod guard;
pub mod page;

pub use fetcher::{Expect, FetchError, Fetched, Fetcher, HttpHead, Validators};
pub use page::{
    BrowserFetchError, FetchedPage, HeldCopy, Pipeline, Processed, Reextracted, RenderReason, Renders, WaitingPage,
};
