//! Importing the frontier a node kept in sled before this layout.

use super::Frontier;
use crate::migrate::OldLayout;
use crate::seen::SeenSet;
use crate::store;
use crate::store::{Result, Stored};
use std::time::{Duration, Instant};

impl Frontier {
    /// Imports the frontier a node kept in sled before (see [`crate::migrate`]), then drops it.
    pub(super) fn import(&mut self, old: OldLayout, now: Instant) -> Result<()> {
        let wall = weft_clock::now_ms();
        match old.seen()? {
            Some(seen) => {
                self.seen = SeenSet::from_legacy(seen, self.settings.seen_capacity, self.settings.seen_fp_rate)
            }
            None => {
                for url in old.journal() {
                    self.seen.insert(&url?);
                }
            }
        }
        for host in old.blocked() {
            let host = host?;
            self.store.set_blocked(&host, true)?;
            self.blocked.insert(host);
        }
        for item in old.hosts() {
            let (name, record) = item?;
            let id = self.host_id(&name, now)?;
            let h = &mut self.hosts[id as usize];
            h.fetched = h.fetched.max(record.fetched);
            h.politeness.backoff_level = record.backoff_level;
            let wait = Duration::from_millis(record.next_allowed_unix_ms.saturating_sub(wall));
            h.politeness.next_allowed = h.politeness.next_allowed.max(now + wait);
        }
        let mut imported = 0u64;
        for q in old.queued() {
            let q = q?;
            if self.store.queued_key(&q.url, &q.host)?.is_some() {
                continue;
            }
            let id = self.host_id(&q.host, now)?;
            let entry = Stored::of(&q);
            let mut batch = self.store.batch();
            let key = store::qkey(id, q.score, self.take_seq(&mut batch));
            self.store.put_entry(&mut batch, &key, &entry, &q.url)?;
            self.hosts[id as usize].queued += 1;
            self.put_record(&mut batch, id, now)?;
            self.store.commit(batch)?;
            self.queued += 1;
            imported += 1;
        }
        for item in old.done() {
            let (host, url) = item?;
            let id = self.host_id(&host, now)?;
            let mut batch = self.store.batch();
            self.store.put_done(&mut batch, id, &url, &host);
            self.store.commit(batch)?;
        }
        let mut batch = self.store.batch();
        for id in self.hosts.ids() {
            self.put_record(&mut batch, id, now)?;
        }
        self.store.commit(batch)?;
        self.snapshot_job()?.write()?;
        old.finish()?;
        tracing::info!(queued = imported, seen = self.seen.len(), "frontier: imported the queue kept in sled");
        Ok(())
    }
}
