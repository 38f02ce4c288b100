//! The crawl frontier of a Weft node: which URL to fetch next, and whether it may be fetched.
//!
//! - [`normalize`]: one spelling per URL, typed rejection reasons.
//! - [`address`]: the addresses a crawler is never sent to (the SSRF guard's table).
//! - [`seen`]: the Bloom-filter seen-set, sized from config.
//! - [`score`]: URL priority (depth, inlinks, news-likeness, HTML-likeness; binaries skipped).
//! - [`politeness`]: per-host token bucket, `Crawl-delay`, 429/503 backoff.
//! - [`robots`]: RFC 9309 semantics of a robots.txt fetch and a 24 h cache in sled.
//! - [`frontier`]: durable per-host queues with a ready-time schedule across hosts.
//! - [`store`]: the frontier's files: an LSM tree (fjall) keyed by host and priority, so
//!   memory grows with hosts, not URLs; the seen-set snapshot.
//! - [`migrate`]: the frontier as kept in sled before, imported once.
//! - [`outcomes`]: what happened to each URL tried (fetched, redirected, disallowed, failed…).
//! - [`patterns`]: URL templates per host and URL-scheme changes (by counts and by redirects).
//! - [`health`]: hosts refusing the crawler (401/403/451, bot checks): blocked, paused, probed.
//! - [`discovery`]: archive links and `/sitemap.xml`, offered when a host's queue runs dry.
//! - [`fanout`]: how many other hosts one host's links may bring into the crawl.
//! - [`revisits`]: the freshness loop's schedule (hubs revisited, conditional requests).
//!
//! Everything here is synchronous and does no network I/O: the node fetches, this crate
//! decides. That keeps the rules unit-testable and the crate free of async runtimes.

pub mod address;
pub mod discovery;
pub mod fanout;
pub mod frontier;
pub mod health;
pub mod host;
pub mod migrate;
pub mod normalize;
pub mod outcomes;
pub mod patterns;
pub mod politeness;
pub mod revisits;
pub mod robots;
pub mod score;
pub mod seen;
pub mod store;

pub use frontier::{
    Borrow, Candidate, CompactJob, Completed, Completion, Durability, Frontier, FrontierError, FrontierSettings,
    FrontierStats, HandOff, HostFilter, HostLoad, Lease, Next, PushOutcome, QueuedUrl, Returned, SnapshotJob, UrlState,
};
pub use host::HostKey;
pub use normalize::{normalize, normalize_url, NormalizeError, MAX_URL_BYTES};
pub use outcomes::{Fate, Outcomes, UrlOutcome};
pub use politeness::PolitenessPolicy;
pub use robots::{HostRobots, RobotsCache, RobotsFetch, RobotsOutcome, Verdict, ROBOTS_TRIES};
pub use score::UrlKind;
pub use seen::SeenSet;

/// Opens the node's sled database with a bounded page cache (sled's default is 1 GiB, far
/// too much for a homelab box that also runs an embedding model).
///
/// sled finishes in-flight log writes on background pool threads that keep the file lock
/// for a moment after the last handle is dropped, so a reopen right after a close (a
/// restart in the same process, a test) can find the lock still held. The lock is retried
/// for up to [`LOCK_WAIT`]; a lock held longer belongs to another process and is reported.
pub fn open_db(path: &std::path::Path, cache_bytes: u64) -> Result<sled::Db, sled::Error> {
    let config = sled::Config::new().path(path).cache_capacity(cache_bytes).flush_every_ms(Some(500));
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match config.open() {
            Err(e) if is_lock_held(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other,
        }
    }
}

/// How long [`open_db`] waits for a lock left by this process's own closing handle.
pub const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether `e` says another process holds the database's lock (another node on the same data
/// dir), as opposed to damaged files or an I/O error.
pub fn is_lock_held(e: &sled::Error) -> bool {
    match e {
        sled::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::WouldBlock || io.to_string().contains("could not acquire lock")
        }
        _ => false,
    }
}
