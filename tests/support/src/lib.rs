//! What Weft's tests share, in one crate (a dev-dependency of the crates whose tests use it;
//! nothing in the product depends on it):
//!
//! - [`failures`]: a test's work dir, removed when it passes and kept under
//!   `target/test-failures/<test>/` when it fails; turns for networks across test processes.
//! - [`wait`]: polling until something holds, failing the test after a limit; [`skip`] for a
//!   test whose prerequisite is missing (a failure under `CI=true`).
//! - [`running`]: a node run on its own task, with its API on a free port.
//!
//! Module order: failures, wait → running.

pub mod failures;
pub mod running;
pub mod wait;

pub use failures::{one_network_at_a_time, one_of_several_networks, WorkDir};
pub use running::Running;
pub use wait::{skip, until};

/// A data dir for this test: removed when the test passes, kept under
/// `target/test-failures/<module>-<test>[-n]/` when it fails (in CI too), with the node's files
/// and log.
pub fn work_dir() -> WorkDir {
    WorkDir::for_this_test().expect("a temporary dir")
}
