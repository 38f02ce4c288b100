//! The Weft node: everything with I/O. The `weft` binary (`main.rs`) is a thin CLI over this.
//!
//! Modules are private unless the CLI, the tests or the examples need them; what others use
//! is re-exported below. The modules depend on each other one way, in this order (a module
//! uses only those above it; `tests/it/module_graph.rs` checks it):
//!
//! 1. [`page`] (the page and the [`page::Pipeline`] seam), [`metrics`] (counters),
//!    [`storage`] (bounded durable writes), `guard` → `fetcher`, [`token`].
//! 2. `crawl`: the crawl loop and its pure decisions; it reaches the network and the browser
//!    through the [`Route`] and [`Renders`] traits it is given.
//! 3. [`layouts`]: layout learning and the JavaScript tier (store, worker, teacher, rendering,
//!    browser); `pipeline` (extraction + the worker) and `second_opinion`; `indexing`
//!    (the index stage) and `search`; `routing` (URLs between members).
//! 4. `status` (`/status` and `/metrics`), [`api`] (the local HTTP API), then `node`,
//!    which wires everything from a config; the CLI's helpers (`doctor`, `extract_cli`,
//!    `templates_cli`) use what they need.

pub mod api;
mod crawl;
pub mod doctor;
pub mod export;
pub mod extract_cli;
mod fetcher;
mod guard;
mod indexing;
pub mod layouts;
pub mod mcp;
mod memory;
pub mod metrics;
mod node;
pub mod page;
mod pipeline;
mod procmem;
pub mod quota;
mod received;
mod routing;
mod search;
mod second_opinion;
mod status;
pub mod storage;
pub mod templates_cli;
mod tenure;
pub mod token;
pub mod urls;

pub use crawl::PROCESSING_GRACE;
pub use crawl::{CrawlSettings, CrawlState, CrawlStatus, Crawler, Renders, Route};
pub use indexing::{IndexService, IndexStatus};
pub use layouts::browser;
pub use node::{Node, RunOptions};
pub use received::ReceivedStatus;
pub use status::Status;
