//! The Weft node: everything with I/O. The `weft` binary (`src/bin/weft/`) is a thin CLI over this.
//!
//! Modules are private unless the CLI, the tests or the examples need them; what others use
//! is re-exported below. The modules depend on each other one way: a module uses only those
//! before it in this order, and `tests/architecture/tests/module_graph.rs` checks it.
//!
//! 1. The page and its seams: [`page`] (the page and the [`page::Pipeline`] seam), [`storage`]
//!    (bounded durable writes), `blocking` (bounded store calls), `hand_over` (hand-overs paced
//!    by the postings outbox), `guard` (the SSRF guard) →
//!    `fetcher`, [`token`], `received` (URLs from peers), `procmem`, the pure [`extract_cli`];
//!    [`metrics`] (counters); the
//!    network's stores: `replicas` (document copies) → `copy_sync` (serving `/weft/doc/1`,
//!    comparing copies with co-holders) and `cells` (postings; `cell_levels`, the postings a
//!    growing network places at a new level of cells) → `cell_upkeep`; `reextract` (the
//!    extractor a node runs, and extracting its kept responses again when that changes).
//! 2. `crawl`: the crawl loop and its pure decisions; it reaches the network and the browser
//!    through the [`Route`] and [`Renders`] traits it is given. `second_opinion` beside it.
//! 3. [`layouts`]: layout learning and the JavaScript tier (store, worker, teacher, rendering,
//!    browser); `second_copies` (this node's hosts' queues copied to their second holders, and
//!    what it keeps for other owners) → `routing` (URLs between members); then `pipeline` (extraction + the worker),
//!    `memory` (the memory target) and [`doctor`]; `indexing` (the index stage).
//! 4. `search`, [`quota`] and `status` (`/status` and `/metrics`), then [`api`] (the local HTTP
//!    API), then `node`, which wires everything from a config, and the CLI's helpers
//!    ([`join`], `templates_cli`).
//!
//! What the node hands out — documents and copies as views, kept responses, URL outcomes,
//! `weft export` and `weft mcp` — is the `weft-content` crate's.
//!
//! Module order: blocking, cell_levels, extract_cli, guard, hand_over, page, procmem, received, storage,
//! token → replicas → copy_sync, cells → cell_upkeep, fetcher, metrics, reextract → crawl, second_opinion → layouts, second_copies → routing → doctor, memory,
//! pipeline → indexing → quota, search, status → api → find → join, node, templates_cli.

pub mod api;
mod blocking;
mod cell_levels;
mod cell_upkeep;
mod cells;
mod copy_sync;
mod crawl;
pub mod doctor;
pub mod extract_cli;
mod fetcher;
pub mod find;
mod guard;
mod hand_over;
mod indexing;
pub mod join;
pub mod layouts;
mod memory;
pub mod metrics;
mod node;
pub mod page;
mod pipeline;
mod procmem;
pub mod quota;
mod received;
pub mod reextract;
mod replicas;
mod routing;
mod search;
mod second_copies;
mod second_opinion;
mod status;
pub mod storage;
pub mod templates_cli;
pub mod token;

pub use crawl::PROCESSING_GRACE;
pub use crawl::{CrawlSettings, CrawlState, CrawlStatus, Crawler, Renders, Route};
pub use indexing::{IndexService, IndexStatus};
pub use layouts::browser;
pub use node::{Node, RunOptions};
pub use procmem::{drop_thread_caches, tune_malloc};
pub use received::ReceivedStatus;
pub use status::Status;
