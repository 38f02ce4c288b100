//! The workspace's architecture checks, as tests that read the repository (`tests/`): every
//! crate's modules follow the order its `lib.rs` documents, and the crates depend on each other
//! as ARCHITECTURE.md's "Dependencies" paragraph says. They depend on no crate of Weft's, so they
//! run without the workspace built.
