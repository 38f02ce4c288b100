//! The Weft node: everything with I/O. The `weft` binary (`main.rs`) is a thin CLI over this.
//!
//! The modules depend on each other one way, in this order (a module uses only those above
//! it; `tests/module_graph.rs` checks it):
//!
//! 1. [`page`] (the page and the [`page::Pipeline`] seam), [`metrics`] (counters),
//!    [`storage`] (bounded durable writes), `guard` → [`fetcher`], [`token`].
//! 2. [`crawl`]: the crawl loop and its pure decisions; it reaches the network and the browser
//!    through the [`crawl::Route`] and [`crawl::Renders`] traits it is given.
//! 3. [`layouts`]: layout learning and the JavaScript tier (store, worker, teacher, rendering,
//!    browser); [`pipeline`] (extraction + the worker) and `second_opinion`; [`indexing`]
//!    (the index stage) and [`search`]; [`routing`] (URLs between members).
//! 4. [`status`] (`/status` and `/metrics`), [`api`] (the local HTTP API), then [`node`],
//!    which wires everything from a config; the CLI's helpers (`doctor`, `extract_cli`,
//!    `templates_cli`) use what they need.

pub mod api;
pub mod crawl;
pub mod doctor;
pub mod extract_cli;
pub mod fetcher;
mod guard;
pub mod indexing;
pub mod layouts;
mod memory;
pub mod metrics;
pub mod node;
pub mod page;
pub mod pipeline;
pub mod quota;
pub mod routing;
pub mod search;
mod second_opinion;
pub mod status;
pub mod storage;
pub mod templates_cli;
pub mod token;

pub use crawl::{CrawlSettings, CrawlStatus, Crawler};
pub use layouts::browser;
pub use node::{Node, RunOptions};
pub use status::Status;
