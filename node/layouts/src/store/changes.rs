//! Layout changes recorded when a template stopped validating (`layout.changes`).

use super::{host_prefix, LayoutError, LayoutStore};
use weft_extract::changes::Change;

impl LayoutStore {
    /// Records a change of `host`'s layout (one that broke no template: a drift, a migration
    /// seen by other means).
    pub fn record_change(&self, host: &str, change: &Change) -> Result<(), LayoutError> {
        let mut ck = host_prefix(host);
        ck.extend_from_slice(&change.at.to_be_bytes());
        ck.extend_from_slice(&self.ids.next().to_be_bytes());
        Self::put(&self.changes, &ck, change)
    }

    /// Drops change-log entries recorded before `before` (seconds since the Unix epoch);
    /// returns how many.
    pub fn prune_changes(&self, before: u64) -> Result<usize, LayoutError> {
        let mut n = 0;
        for item in self.changes.iter() {
            let (k, v) = item?;
            if serde_json::from_slice::<Change>(&v).map_or(true, |c| c.at < before) {
                self.changes.remove(k)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// The changes recorded for `host`, oldest first.
    pub fn changes(&self, host: &str) -> Result<Vec<Change>, LayoutError> {
        self.changes.scan_prefix(host_prefix(host)).map(|r| Ok(serde_json::from_slice(&r?.1)?)).collect()
    }
}
