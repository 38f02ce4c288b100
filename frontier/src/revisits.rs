//! The freshness loop (seed 001): hub pages of a known template are fetched again on a
//! schedule to find the articles published since. Articles are not: a page already fetched is
//! fetched again only as a revisit, and a revisit is conditional — it sends the page's `ETag`
//! and `Last-Modified`, and a `304 Not Modified` costs the host no body and the node no work.
//!
//! Each revisit's interval adapts: a hub that brought new links is visited again after the base
//! interval (`crawl.hub_revisit_secs`); one that did not (304, or the same links) waits twice
//! as long as last time, up to [`MAX_FACTOR`] × the base.
//!
//! Sled tree `revisits`: `t` + due time (ms, big-endian) + URL → [`Revisit`] (the schedule, in
//! due order); `u` + URL → due time (one entry per URL).

use serde::{Deserialize, Serialize};

/// The longest interval, as a multiple of the base.
pub const MAX_FACTOR: u64 = 8;

/// What a conditional request sends: the validators the page was last served with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

impl Validators {
    pub fn is_empty(&self) -> bool {
        self.etag.is_none() && self.last_modified.is_none()
    }
}

/// A page scheduled to be fetched again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revisit {
    pub url: String,
    pub depth: u32,
    /// Seconds until the next visit after this one.
    pub interval_secs: u64,
    pub validators: Validators,
    /// Visits so far that found nothing new.
    pub unchanged: u32,
    /// Visits so far.
    pub visits: u32,
}

fn tkey(due_ms: u64, url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + url.len());
    k.push(b't');
    k.extend_from_slice(&due_ms.to_be_bytes());
    k.extend_from_slice(url.as_bytes());
    k
}

fn ukey(url: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + url.len());
    k.push(b'u');
    k.extend_from_slice(url.as_bytes());
    k
}

/// The revisit schedule.
#[derive(Clone)]
pub struct Revisits {
    tree: sled::Tree,
}

impl Revisits {
    pub fn open(db: &sled::Db) -> Result<Revisits, sled::Error> {
        Ok(Revisits { tree: db.open_tree("revisits")? })
    }

    /// The entry of `url`, if it is scheduled (or being revisited).
    pub fn get(&self, url: &str) -> Result<Option<Revisit>, sled::Error> {
        let Some(due) = self.tree.get(ukey(url))? else { return Ok(None) };
        let Ok(due) = <[u8; 8]>::try_from(due.as_ref()) else { return Ok(None) };
        Ok(self.tree.get(tkey(u64::from_be_bytes(due), url))?.and_then(|v| serde_json::from_slice(&v).ok()))
    }

    /// Schedules (or re-schedules) `r` at `due_ms`; one entry per URL.
    pub fn schedule(&self, r: &Revisit, due_ms: u64) -> Result<(), sled::Error> {
        let mut batch = sled::Batch::default();
        if let Some(old) = self.tree.get(ukey(&r.url))? {
            if let Ok(old) = <[u8; 8]>::try_from(old.as_ref()) {
                batch.remove(tkey(u64::from_be_bytes(old), &r.url));
            }
        }
        batch.insert(tkey(due_ms, &r.url), serde_json::to_vec(r).expect("revisit serializes"));
        batch.insert(ukey(&r.url), &due_ms.to_be_bytes());
        self.tree.apply_batch(batch)
    }

    /// The revisits due at `now_ms` (at most `max`), in due order. They stay scheduled (moved
    /// a base interval ahead, so a crash cannot lose one) until [`Revisits::visited`]
    /// re-schedules them.
    pub fn due(&self, now_ms: u64, max: usize, hold_ms: u64) -> Result<Vec<Revisit>, sled::Error> {
        let mut out = Vec::new();
        for item in self.tree.range(tkey(0, "")..tkey(now_ms.saturating_add(1), "")) {
            let (_, v) = item?;
            if let Ok(r) = serde_json::from_slice::<Revisit>(&v) {
                out.push(r);
            }
            if out.len() >= max {
                break;
            }
        }
        for r in &out {
            self.schedule(r, now_ms + hold_ms)?;
        }
        Ok(out)
    }

    /// A revisit of `url` (or its first visit) ended: `changed` says whether it brought
    /// anything new; `validators` are the ones the page was served with now (kept when the
    /// answer was a 304). Schedules the next visit from `now_ms`, `base_secs` apart at least.
    pub fn visited(
        &self,
        url: &str,
        depth: u32,
        changed: bool,
        validators: Option<Validators>,
        now_ms: u64,
        base_secs: u64,
    ) -> Result<Revisit, sled::Error> {
        let mut r = self.get(url)?.unwrap_or(Revisit {
            url: url.to_string(),
            depth,
            interval_secs: base_secs,
            validators: Validators::default(),
            unchanged: 0,
            visits: 0,
        });
        r.visits += 1;
        if let Some(v) = validators {
            r.validators = v;
        }
        if changed {
            r.interval_secs = base_secs;
        } else {
            r.unchanged += 1;
            r.interval_secs = (r.interval_secs.max(base_secs) * 2).min(base_secs * MAX_FACTOR);
        }
        self.schedule(&r, now_ms + r.interval_secs * 1000)?;
        Ok(r)
    }

    /// Forgets `url` (its host was handed to another member, or blocked for good).
    pub fn forget(&self, url: &str) -> Result<(), sled::Error> {
        if let Some(due) = self.tree.remove(ukey(url))? {
            if let Ok(due) = <[u8; 8]>::try_from(due.as_ref()) {
                self.tree.remove(tkey(u64::from_be_bytes(due), url))?;
            }
        }
        Ok(())
    }

    /// Pages scheduled.
    pub fn len(&self) -> usize {
        self.tree.scan_prefix(b"u").count()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.scan_prefix(b"u").next().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisits_come_due_in_order_and_back_off_while_nothing_changes() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).temporary(true).open().unwrap();
        let r = Revisits::open(&db).unwrap();
        let v = Validators { etag: Some("\"abc\"".into()), last_modified: None };
        let first = r.visited("https://a.test/", 0, true, Some(v.clone()), 1_000, 60).unwrap();
        assert_eq!((first.interval_secs, first.visits), (60, 1));
        r.visited("https://b.test/news", 1, true, None, 2_000, 60).unwrap();
        assert!(r.due(60_000, 10, 60_000).unwrap().is_empty(), "not yet");
        let due: Vec<String> = r.due(62_000, 10, 60_000).unwrap().into_iter().map(|x| x.url).collect();
        assert_eq!(due, ["https://a.test/", "https://b.test/news"]);
        assert!(r.due(62_000, 10, 60_000).unwrap().is_empty(), "held while being visited");
        assert_eq!(r.len(), 2, "still scheduled: a crash loses nothing");
        // A 304: no validators given, the old ones stay; the interval doubles, up to 8×.
        let again = r.visited("https://a.test/", 0, false, None, 62_000, 60).unwrap();
        assert_eq!((again.interval_secs, again.unchanged, again.validators.clone()), (120, 1, v));
        for _ in 0..5 {
            r.visited("https://a.test/", 0, false, None, 62_000, 60).unwrap();
        }
        assert_eq!(r.get("https://a.test/").unwrap().unwrap().interval_secs, 480);
        let changed = r.visited("https://a.test/", 0, true, None, 62_000, 60).unwrap();
        assert_eq!(changed.interval_secs, 60, "new links: back to the base interval");
        r.forget("https://b.test/news").unwrap();
        assert_eq!(r.len(), 1);
        assert!(r.get("https://b.test/news").unwrap().is_none());
    }
}
