//! What happened to each URL this node tried, so that an operator can answer "why is this page
//! not in the index?" without reading logs: fetched (with its status), redirected (to where),
//! disallowed by robots.txt, failed (the error's kind, retried or given up), sent to the
//! browser, or skipped before any request (a binary file, too deep, the host's budget spent, the
//! host blocked). The latest outcome per URL is kept, with when and how many attempts.
//!
//! One keyspace of the frontier's LSM store, `outcomes` (URL → JSON); writes are independent
//! of the frontier's lock. Not a sled tree: sled's memory grows with every entry written,
//! whatever its cache, and this is a crawling node's largest table (one entry per URL tried).
//! An earlier release's sled tree (`url_outcomes`) is moved over once
//! ([`Outcomes::move_from_sled`]). The index adds the other half of the answer (indexed, alias
//! of another page, failed to embed): see the node's `/urls`.

use crate::store::{FrontierError, Result, Store};
use fjall::Keyspace;
use serde::{Deserialize, Serialize};

/// What happened to a URL the last time this node dealt with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Fate {
    /// A response with a body (a page, a sitemap).
    Fetched { status: u16 },
    /// A redirect, followed to `to` (which has its own outcome).
    Redirected { status: u16, to: String },
    /// A response without a usable body (404, 410, 5xx…): `retrying` until the retries run out.
    Status { status: u16, retrying: bool },
    /// 429 or 503: the host asked us to wait; the URL stays queued.
    RateLimited { status: u16 },
    /// No response: `error` is the kind (`timeout`, `dns`, `connect`, `too_large`,
    /// `not_html`…), `detail` the message; `retrying` while attempts remain.
    Failed { error: String, detail: String, retrying: bool },
    /// robots.txt disallows it for this crawler.
    Disallowed,
    /// Sent to the headless browser (its host's pages need JavaScript).
    Rendering,
    /// Never requested: `reason` is `binary`, `too_deep`, `host_budget_exhausted`,
    /// `host_blocked` or `robots_unreachable` (its host's robots.txt could not be reached,
    /// [`crate::ROBOTS_TRIES`] times in a row).
    Skipped { reason: String },
    /// Not requested: indexed from the copy `holder` (another member) held, fetched by the
    /// page's crawler at `fetched_at` (Unix seconds) — the host changed hands, or this node
    /// lost its own completion in a crash.
    Adopted { holder: String, fetched_at: u64 },
}

impl Fate {
    /// Whether the host was asked for it (an attempt).
    fn is_attempt(&self) -> bool {
        matches!(
            self,
            Fate::Fetched { .. }
                | Fate::Redirected { .. }
                | Fate::Status { .. }
                | Fate::RateLimited { .. }
                | Fate::Failed { .. }
        )
    }
}

/// A URL's latest outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlOutcome {
    #[serde(flatten)]
    pub fate: Fate,
    /// When, seconds since the Unix epoch.
    pub at: u64,
    /// Requests made for it so far (redirect hops and retries each count).
    pub attempts: u32,
}

/// The sled tree an earlier release kept the outcomes in.
const LEGACY_TREE: &str = "url_outcomes";

/// The outcomes keyspace. Cheap to clone (a handle).
#[derive(Clone)]
pub struct Outcomes {
    tree: Keyspace,
    /// The store's database, kept open with the keyspace.
    db: fjall::Database,
    /// The store's: a failed write here explains the store's later `Poisoned`.
    failure: weft_db::FirstFailure,
}

impl Outcomes {
    /// The outcomes kept in `store`, an earlier release's sled tree of them (in `legacy`) moved
    /// in first, once.
    pub(crate) fn of(store: &Store, legacy: &sled::Db) -> Result<Outcomes> {
        let (db, tree) = store.outcomes_keyspace();
        let outcomes = Outcomes { tree, db, failure: store.failure() };
        outcomes.move_from_sled(legacy)?;
        Ok(outcomes)
    }

    /// The outcomes of the frontier whose files are in `dir`, without opening the frontier (a
    /// tool reading a stopped node's data dir); `legacy` is the node's sled database, whose
    /// `url_outcomes` tree an earlier release kept them in (moved over first).
    pub fn open_dir(dir: &std::path::Path, legacy: &sled::Db) -> Result<Outcomes> {
        Outcomes::of(&Store::open(dir, 8 << 20, 4 << 20)?, legacy)
    }

    /// Moves the outcomes an earlier release kept in sled (`legacy`'s `url_outcomes`) here, then
    /// drops that tree; returns how many. Done before the crawl writes any outcome: the copy
    /// never overwrites a newer one, and a move cut short is done again whole.
    pub(crate) fn move_from_sled(&self, legacy: &sled::Db) -> Result<usize> {
        let moved = weft_db::move_sled_tree(legacy, LEGACY_TREE, &self.db, &self.tree, &[])?;
        if moved > 0 {
            tracing::info!(moved, "URL outcomes moved from the sled database to the frontier's store");
        }
        Ok(moved)
    }

    /// Records `fate` as `url`'s latest outcome, counting an attempt when the host was asked.
    pub fn record(&self, url: &str, fate: Fate) -> Result<()> {
        let at = weft_clock::now_secs();
        let attempt = u32::from(fate.is_attempt());
        // Read-modify-write of one key: a lost update would only miscount attempts.
        let before = self.get(url)?.map_or(0, |o| o.attempts);
        let outcome = UrlOutcome { fate, at, attempts: before.saturating_add(attempt) };
        let bytes = serde_json::to_vec(&outcome).expect("an outcome serializes");
        self.failure.note(self.tree.insert(url.as_bytes(), bytes))?;
        Ok(())
    }

    /// Replaces the fate of `url`'s latest outcome, keeping its time and attempts (its retries
    /// ran out: the last failure is final).
    pub fn settle(&self, url: &str, fate: Fate) -> Result<()> {
        let Some(mut outcome) = self.get(url)? else { return Ok(()) };
        outcome.fate = fate;
        self.tree.insert(url.as_bytes(), serde_json::to_vec(&outcome).expect("an outcome serializes"))?;
        Ok(())
    }

    /// Records a skip, unless the URL already has an outcome (a link met again and again
    /// would otherwise rewrite it each time, and a skip never replaces a real request).
    pub fn record_skip(&self, url: &str, reason: &str) -> Result<()> {
        if self.tree.contains_key(url.as_bytes())? {
            return Ok(());
        }
        self.record(url, Fate::Skipped { reason: reason.to_string() })
    }

    /// `url`'s latest outcome (a record that does not decode reads as none).
    pub fn get(&self, url: &str) -> Result<Option<UrlOutcome>> {
        Ok(self.tree.get(url.as_bytes())?.and_then(|v| serde_json::from_slice(&v).ok()))
    }

    /// Outcomes in URL order, after `after` when given (paging an export).
    pub fn after(&self, after: Option<&str>) -> impl Iterator<Item = Result<(String, UrlOutcome)>> + '_ {
        let from = after.map(|a| a.as_bytes().to_vec());
        let items: Box<dyn Iterator<Item = fjall::Guard>> = match from {
            Some(a) => {
                Box::new(self.tree.range::<Vec<u8>, _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded)))
            }
            None => Box::new(self.tree.iter()),
        };
        items.filter_map(|g| match g.into_inner() {
            Ok((k, v)) => {
                let outcome: UrlOutcome = serde_json::from_slice(&v).ok()?;
                Some(Ok((String::from_utf8_lossy(&k).into_owned(), outcome)))
            }
            Err(e) => Some(Err(FrontierError::Queue(e))),
        })
    }

    /// Outcomes kept (reads every key: for tests and tools, not the crawl).
    pub fn len(&self) -> usize {
        self.tree.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.iter().next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_outcome_is_kept_with_its_attempts_and_skips_never_replace_requests() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path().join("db")).unwrap();
        let o = Outcomes::open_dir(&dir.path().join("frontier"), &db).unwrap();
        let u = "http://a.test/p";
        o.record(u, Fate::Status { status: 503, retrying: true }).unwrap();
        o.record(u, Fate::Fetched { status: 200 }).unwrap();
        let got = o.get(u).unwrap().unwrap();
        assert_eq!((got.fate, got.attempts), (Fate::Fetched { status: 200 }, 2));
        o.record_skip(u, "binary").unwrap();
        assert_eq!(o.get(u).unwrap().unwrap().fate, Fate::Fetched { status: 200 });
        o.record_skip("http://a.test/x.zip", "binary").unwrap();
        o.record("http://a.test/private", Fate::Disallowed).unwrap();
        let all: Vec<(String, UrlOutcome)> = o.after(None).map(Result::unwrap).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].1.attempts, 0, "a skip is not an attempt");
        let rest: Vec<String> = o.after(Some(&all[0].0)).map(|r| r.unwrap().0).collect();
        assert_eq!(rest, [all[1].0.clone(), all[2].0.clone()]);
        // The JSON an operator reads.
        let json = serde_json::to_value(o.get("http://a.test/private").unwrap().unwrap()).unwrap();
        assert_eq!(json["outcome"], "disallowed");
    }

    #[test]
    fn an_earlier_releases_sled_tree_is_moved_over_once_and_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path().join("db")).unwrap();
        let old = db.open_tree(LEGACY_TREE).unwrap();
        let n = weft_db::MOVE_BATCH + 10;
        for i in 0..n {
            let o = UrlOutcome { fate: Fate::Fetched { status: 200 }, at: i as u64, attempts: 1 };
            old.insert(format!("http://a.test/{i:05}"), serde_json::to_vec(&o).unwrap()).unwrap();
        }
        drop(old);
        {
            let o = Outcomes::open_dir(&dir.path().join("frontier"), &db).unwrap();
            assert_eq!(o.len(), n, "every outcome moved, over several batches");
            assert_eq!(o.get("http://a.test/00007").unwrap().unwrap().at, 7);
            assert!(!db.tree_names().iter().any(|t| t.as_ref() == LEGACY_TREE.as_bytes()), "the sled tree is gone");
            o.record("http://a.test/00007", Fate::Disallowed).unwrap();
        }
        // Reopened: nothing moved again over the newer outcome.
        let o = Outcomes::open_dir(&dir.path().join("frontier"), &db).unwrap();
        assert_eq!(o.len(), n);
        assert_eq!(o.get("http://a.test/00007").unwrap().unwrap().fate, Fate::Disallowed);
    }
}
