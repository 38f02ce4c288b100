//! The crate's integration tests, one module per subject, linked into one binary (one link
//! of the dependency tree instead of one per file: see docs/src/testing.md).

mod adaptive;
mod api;
mod bad_input;
mod browser;
mod common;
mod dashboard;
mod deb;
mod default_node;
mod docs;
mod doctor;
mod export;
mod find;
mod layouts;
mod mcp;
mod memory;
mod nat_lab;
mod p2p_cli;
mod politeness;
mod questions;
mod quota;
mod reextract;
mod restart;
mod simnet_churn;
mod storage_faults;
mod teacher;
mod warc;
