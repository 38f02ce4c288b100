//! What happened to each URL this node tried, so that an operator can answer "why is this page
//! not in the index?" without reading logs: fetched (with its status), redirected (to where),
//! disallowed by robots.txt, failed (the error's kind, retried or given up), sent to the
//! browser, or skipped before any request (a binary file, too deep, the host's budget spent, the
//! host blocked). The latest outcome per URL is kept, with when and how many attempts.
//!
//! One sled tree, `url_outcomes` (URL → JSON), beside the frontier's; writes are independent
//! of the frontier's lock. The index adds the other half of the answer (indexed, alias of
//! another page, failed to embed): see the node's `/urls`.

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

/// The outcomes tree.
#[derive(Clone)]
pub struct Outcomes {
    tree: sled::Tree,
}

impl Outcomes {
    pub fn open(db: &sled::Db) -> Result<Outcomes, sled::Error> {
        Ok(Outcomes { tree: db.open_tree("url_outcomes")? })
    }

    /// Records `fate` as `url`'s latest outcome, counting an attempt when the host was asked.
    pub fn record(&self, url: &str, fate: Fate) -> Result<(), sled::Error> {
        let at = weft_clock::now_secs();
        let attempt = u32::from(fate.is_attempt());
        // Read-modify-write of one key: a lost update would only miscount attempts.
        let before = self.get(url)?.map_or(0, |o| o.attempts);
        let outcome = UrlOutcome { fate, at, attempts: before.saturating_add(attempt) };
        let bytes = serde_json::to_vec(&outcome).expect("an outcome serializes");
        self.tree.insert(url.as_bytes(), bytes)?;
        Ok(())
    }

    /// Replaces the fate of `url`'s latest outcome, keeping its time and attempts (its retries
    /// ran out: the last failure is final).
    pub fn settle(&self, url: &str, fate: Fate) -> Result<(), sled::Error> {
        let Some(mut outcome) = self.get(url)? else { return Ok(()) };
        outcome.fate = fate;
        self.tree.insert(url.as_bytes(), serde_json::to_vec(&outcome).expect("an outcome serializes"))?;
        Ok(())
    }

    /// Records a skip, unless the URL already has an outcome (a link met again and again
    /// would otherwise rewrite it each time, and a skip never replaces a real request).
    pub fn record_skip(&self, url: &str, reason: &str) -> Result<(), sled::Error> {
        if self.tree.contains_key(url.as_bytes())? {
            return Ok(());
        }
        self.record(url, Fate::Skipped { reason: reason.to_string() })
    }

    /// `url`'s latest outcome (a record that does not decode reads as none).
    pub fn get(&self, url: &str) -> Result<Option<UrlOutcome>, sled::Error> {
        Ok(self.tree.get(url.as_bytes())?.and_then(|v| serde_json::from_slice(&v).ok()))
    }

    /// Outcomes in URL order, after `after` when given (paging an export).
    pub fn after(&self, after: Option<&str>) -> impl Iterator<Item = Result<(String, UrlOutcome), sled::Error>> + '_ {
        let items = match after {
            Some(a) => {
                self.tree.range::<&[u8], _>((std::ops::Bound::Excluded(a.as_bytes()), std::ops::Bound::Unbounded))
            }
            None => self.tree.iter(),
        };
        items.filter_map(|r| match r {
            Ok((k, v)) => {
                let outcome: UrlOutcome = serde_json::from_slice(&v).ok()?;
                Some(Ok((String::from_utf8_lossy(&k).into_owned(), outcome)))
            }
            Err(e) => Some(Err(e)),
        })
    }

    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_outcome_is_kept_with_its_attempts_and_skips_never_replace_requests() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let o = Outcomes::open(&db).unwrap();
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
}
