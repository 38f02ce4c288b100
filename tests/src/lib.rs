//! End-to-end tests across Weft's crates live in `tests/tests/`. Tests that drive the real
//! `weft` binary live in `node/tests/`, where Cargo provides its path.
