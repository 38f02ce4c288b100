//! URLs and hosts as every Weft crate sees them, in a crate of its own so that the crates that
//! only need these (`weft-extract` resolving links, `weft-p2p` checking what peers send) do not
//! link the frontier's storage engines.
//!
//! - [`normalize`]: one spelling per URL, typed rejection reasons.
//! - [`host`]: [`HostKey`], the unit of ownership and politeness (`name` or `name:port`), and
//!   its site (the registrable domain).
//! - [`address`]: the addresses a crawler is never sent to (the SSRF guard's table, also
//!   applied to the URLs peers send).
//!
//! Module order (each module uses only those before it; `tests/architecture/tests/module_graph.rs`
//! checks it): address, host, normalize.

pub mod address;
pub mod host;
pub mod normalize;

pub use host::HostKey;
pub use normalize::{normalize, normalize_url, NormalizeError, MAX_URL_BYTES};
