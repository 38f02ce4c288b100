//! Pure HTML → structured content for Weft: bytes in, data out, no I/O.
//!
//! This crate is the crawler's hot path. So far it provides what the crawl loop needs to
//! discover URLs — outbound [`links`] of an HTML page and the entries of a [`sitemap`]. Main
//! text, metadata, page type, JS-need score and fingerprints arrive with the extraction issue.

pub mod links;
pub mod sitemap;

pub use links::{extract_links, Link};
pub use sitemap::{parse_sitemap, Sitemap, SitemapError};
