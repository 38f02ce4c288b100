//! The Weft node: everything with I/O. The `weft` binary (`main.rs`) is a thin CLI over this.
//!
//! - [`guard`]: the SSRF guard (address classes, guarded DNS resolver).
//! - [`fetcher`]: the HTTP fetch engine.
//! - [`pipeline`]: the seam where fetched pages flow downstream.
//! - [`crawler`]: the crawl loop.
//! - [`layouts`], [`worker`], [`teacher`], [`browser`], [`rendering`]: layout learning — the
//!   store, the fast path on every page, the slow path with the browser, the Chromium pool,
//!   and rendering pages that need JavaScript.
//! - [`metrics`]: counters, `/status` and `/metrics` rendering.
//! - [`indexing`]: the index stage (indexer and query threads).
//! - [`routing`]: in a network, discovered URLs to their owners and received ones in.
//! - [`search`]: searching this node or the network, answering other nodes' queries, and
//!   publishing this node's routing summary.
//! - [`api`]: the local HTTP API.
//! - [`node`]: wiring it all from a config.

pub mod api;
pub mod browser;
pub mod chromium;
pub mod crawler;
pub mod doctor;
pub mod extract_cli;
pub mod fetcher;
pub mod guard;
pub mod indexing;
pub mod layouts;
pub mod memory;
pub mod metrics;
pub mod node;
pub mod pipeline;
pub mod quota;
pub mod render_fetch;
pub mod rendering;
pub mod routing;
pub mod search;
pub mod second_opinion;
pub mod storage;
pub mod teacher;
pub mod templates_cli;
pub mod token;
pub mod worker;

pub use crawler::{CrawlSettings, Crawler};
pub use metrics::Status;
pub use node::{Node, RunOptions};
