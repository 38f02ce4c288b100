//! The crate's integration tests, one module per subject, linked into one binary (one link
//! of the dependency tree instead of one per file: see docs/src/testing.md).

mod common;
mod data_dir;
mod extract_in_crawl;
mod network_cells;
mod network_crash;
mod network_crawl;
mod network_dedup;
mod network_handoff;
mod network_replicas;
mod network_search;
mod search;
mod sitemaps_and_api;
mod urls;
