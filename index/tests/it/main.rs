//! The crate's integration tests, one module per subject, linked into one binary (one link
//! of the dependency tree instead of one per file: see docs/src/testing.md).

mod duplicates;
mod hybrid;
mod indexer;
mod segments;
