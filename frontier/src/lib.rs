//! The crawl frontier of a Weft node: which URL to fetch next, and whether it may be fetched.
//!
//! - [`normalize`]: one spelling per URL, typed rejection reasons.
//! - [`seen`]: the Bloom-filter seen-set, sized from config.
//! - [`score`]: URL priority (depth, inlinks, news-likeness, HTML-likeness; binaries skipped).
//! - [`politeness`]: per-host token bucket, `Crawl-delay`, 429/503 backoff.
//! - [`robots`]: RFC 9309 semantics of a robots.txt fetch and a 24 h cache in sled.
//! - [`frontier`]: durable per-host queues in sled with a ready-time schedule across hosts.
//!
//! Everything here is synchronous and does no network I/O: the node fetches, this crate
//! decides. That keeps the rules unit-testable and the crate free of async runtimes.

pub mod frontier;
pub mod normalize;
pub mod politeness;
pub mod robots;
pub mod score;
pub mod seen;

pub use frontier::{
    Candidate, Completed, Completion, Durability, Frontier, FrontierError, FrontierSettings, FrontierStats, Lease,
    Next, PushOutcome, QueuedUrl, SnapshotJob,
};
pub use normalize::{host_key, normalize, normalize_url, NormalizeError, MAX_URL_BYTES};
pub use robots::{HostRobots, RobotsCache, RobotsFetch, RobotsOutcome, Verdict};
pub use score::UrlKind;
pub use seen::SeenSet;

/// Opens the node's sled database with a bounded page cache (sled's default is 1 GiB, far
/// too much for a homelab box that also runs an embedding model).
pub fn open_db(path: &std::path::Path, cache_bytes: u64) -> Result<sled::Db, sled::Error> {
    sled::Config::new().path(path).cache_capacity(cache_bytes).flush_every_ms(Some(500)).open()
}
