//! Reading the frontier as it was kept before it moved out of sled (sled trees `frontier` and
//! `hosts`), so that a node's queue, seen-set, done URLs, blocks and politeness survive the
//! upgrade. [`crate::Frontier::open`] imports them into the new store once, then drops the old
//! trees; an import cut short by a crash is simply run again (every step is idempotent).
//!
//! The old `frontier` tree: `q`+seq → [`QueuedUrl`], `u`+url → seq, `j`+jseq → URL (seen-set
//! journal), `d`+host+0+url (done), `m:seen` (seen-set snapshot), `b`+host (blocked). The old
//! `hosts` tree: host → pages fetched, next allowed time, backoff level.

use crate::seen::LegacySeenSet;
use crate::store::QueuedUrl;
use crate::store::Result;
use serde::Deserialize;

const OLD_QUEUE: &str = "frontier";
const OLD_HOSTS: &str = "hosts";

#[derive(Deserialize)]
struct OldSnapshot {
    #[allow(dead_code)]
    mark: u64,
    seen: LegacySeenSet,
}

/// An old host record.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OldHost {
    pub fetched: u64,
    pub next_allowed_unix_ms: u64,
    pub backoff_level: u32,
}

/// The old trees, when they hold anything.
pub struct OldLayout {
    db: sled::Db,
    queue: sled::Tree,
    hosts: sled::Tree,
}

impl OldLayout {
    /// The old layout in `db`, if there is one to import.
    pub fn find(db: &sled::Db) -> Result<Option<OldLayout>> {
        let names = db.tree_names();
        let has = |n: &str| names.iter().any(|t| t.as_ref() == n.as_bytes());
        if !has(OLD_QUEUE) && !has(OLD_HOSTS) {
            return Ok(None);
        }
        let queue = db.open_tree(OLD_QUEUE)?;
        let hosts = db.open_tree(OLD_HOSTS)?;
        if queue.is_empty() && hosts.is_empty() {
            db.drop_tree(OLD_QUEUE)?;
            db.drop_tree(OLD_HOSTS)?;
            return Ok(None);
        }
        Ok(Some(OldLayout { db: db.clone(), queue, hosts }))
    }

    /// The old seen-set: its snapshot with the journal replayed (`None`: it had none).
    pub fn seen(&self) -> Result<Option<LegacySeenSet>> {
        let mut seen = match self.queue.get(b"m:seen")? {
            Some(bytes) => Some(postcard::from_bytes::<OldSnapshot>(&bytes)?.seen),
            None => None,
        };
        for item in self.queue.scan_prefix(b"j") {
            let (_, url) = item?;
            if let Some(s) = seen.as_mut() {
                s.insert(&String::from_utf8_lossy(&url));
            }
        }
        Ok(seen)
    }

    /// The URLs of the old journal (to add to a fresh seen-set when there was no snapshot).
    pub fn journal(&self) -> impl Iterator<Item = Result<String>> + '_ {
        self.queue.scan_prefix(b"j").map(|item| Ok(String::from_utf8_lossy(&item?.1).into_owned()))
    }

    pub fn blocked(&self) -> impl Iterator<Item = Result<String>> + '_ {
        self.queue.scan_prefix(b"b").map(|item| Ok(String::from_utf8_lossy(&item?.0[1..]).into_owned()))
    }

    pub fn hosts(&self) -> impl Iterator<Item = Result<(String, OldHost)>> + '_ {
        self.hosts.iter().map(|item| {
            let (k, v) = item?;
            Ok((String::from_utf8_lossy(&k).into_owned(), postcard::from_bytes(&v).unwrap_or_default()))
        })
    }

    pub fn queued(&self) -> impl Iterator<Item = Result<QueuedUrl>> + '_ {
        self.queue.scan_prefix(b"q").map(|item| Ok(postcard::from_bytes(&item?.1)?))
    }

    /// Done URLs as (host, URL).
    pub fn done(&self) -> impl Iterator<Item = Result<(String, String)>> + '_ {
        self.queue.scan_prefix(b"d").map(|item| {
            let (k, _) = item?;
            let rest = &k[1..];
            let split = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            let host = String::from_utf8_lossy(&rest[..split]).into_owned();
            let url = String::from_utf8_lossy(rest.get(split + 1..).unwrap_or_default()).into_owned();
            Ok((host, url))
        })
    }

    /// Drops the old trees (after the import is durable).
    pub fn finish(self) -> Result<()> {
        drop(self.queue);
        drop(self.hosts);
        self.db.drop_tree(OLD_QUEUE)?;
        self.db.drop_tree(OLD_HOSTS)?;
        self.db.flush()?;
        Ok(())
    }
}
