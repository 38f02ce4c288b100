//! The Weft node: everything with I/O. The `weft` binary (`src/bin/weft/`) is a thin CLI over this.
//!
//! Modules are private unless the CLI, the tests or the examples need them; what others use
//! is re-exported below. The modules depend on each other one way: a module uses only those
//! before it in this order, and `tests/architecture/tests/module_graph.rs` checks it.
//!
//! 1. Leaves: `blocking` (bounded store calls), `hand_over` (hand-overs paced by the postings
//!    outbox), [`token`], `procmem`, the pure [`extract_cli`]; the network's stores:
//!    `replicas` (document copies) → `copy_sync` (serving `/weft/doc/1`, comparing copies with
//!    co-holders) and `cells` (postings; `cell_levels`, the postings a growing network places
//!    at a new level of cells) → `cell_upkeep`; `reextract` (the extractor a node runs, and
//!    extracting its kept responses again when that changes); `second_opinion`.
//! 2. `second_copies` (this node's hosts' queues copied to their second holders, and what it
//!    keeps for other owners) → `routing` (URLs between members, the crawl's [`Route`]); then
//!    `pipeline` (extraction + the layout worker), `memory` (the memory target) and
//!    [`doctor`]; `indexing` (the index stage).
//! 3. `search`, [`quota`] and `status` (`/status` and `/metrics`), then [`api`] (the local HTTP
//!    API), then `node`, which wires everything from a config, and the CLI's helpers
//!    ([`join`], `templates_cli`).
//!
//! Its subsystems with a concept of their own are crates: the crawl loop with the counters and
//! the storage guard it shares with the node (`weft-crawl`, its [`Crawler`], [`metrics`],
//! [`storage`]); the page fetched and its seams (`weft-fetch`: HTTP under the SSRF guard, the
//! [`page::Pipeline`] and [`Renders`] seams); the layout tier and the browser (`weft-layouts`,
//! re-exported as [`layouts`]); and what the node hands out — documents and copies as views,
//! kept responses, URL outcomes, `weft export` and `weft mcp` (`weft-content`).
//!
//! Module order: blocking, cell_levels, extract_cli, hand_over, procmem, token → replicas →
//! copy_sync, cells → cell_upkeep, reextract, second_opinion → second_copies → routing → doctor,
//! memory, pipeline → indexing → quota, search, status → api → find → join, node, templates_cli.

pub mod api;
mod blocking;
mod cell_levels;
mod cell_upkeep;
mod cells;
mod copy_sync;
pub mod doctor;
pub mod extract_cli;
pub mod find;
mod hand_over;
mod indexing;
pub mod join;
mod memory;
mod node;
mod pipeline;
mod procmem;
pub mod quota;
pub mod reextract;
mod replicas;
mod routing;
mod search;
mod second_copies;
mod second_opinion;
mod status;
pub mod templates_cli;
pub mod token;

pub use indexing::{IndexService, IndexStatus};
pub use node::{Node, RunOptions};
pub use procmem::{drop_thread_caches, tune_malloc};
pub use status::Status;
pub use weft_crawl::received::ReceivedStatus;
pub use weft_crawl::{metrics, storage};
pub use weft_crawl::{CrawlSettings, CrawlState, CrawlStatus, Crawler, Renders, Route, PROCESSING_GRACE};
pub use weft_fetch::page;
pub use weft_layouts as layouts;
pub use weft_layouts::browser;
