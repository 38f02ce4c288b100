//! What the frontier's integration tests share: a page offered, a frontier opened on real
//! fjall and sled files.
#![allow(dead_code)]

use weft_frontier::{open_db, Candidate, Frontier, FrontierSettings};
use weft_url::normalize;

/// A page URL at `depth`.
pub fn page(u: &str, depth: u32) -> Candidate {
    Candidate::page(normalize(u, None).unwrap(), depth)
}

/// The frontier (and the node's sled database beside it) in `dir`.
pub fn open(dir: &std::path::Path, s: FrontierSettings) -> (sled::Db, Frontier) {
    let db = open_db(&dir.join("db"), 8 << 20).unwrap();
    let f = Frontier::open(&db, &dir.join("frontier"), s).unwrap();
    (db, f)
}
