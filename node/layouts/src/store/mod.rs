//! The worker's memory of layouts (seed 000 §3.C): how often each layout signature was seen on
//! each host, the template learned for it, the changes recorded when a template stopped
//! validating, and the teacher's queue.
//!
//! Kept as tables of the frontier's LSM store ([`weft_frontier::Tables`]). They were trees of
//! the node's sled database, moved over once when a node of this release opens one
//! ([`LayoutStore::open`]): sled's memory grew with every write, and the signatures and the
//! hosts' JavaScript needs take a write every page.
//!
//! | table | key | value (JSON) |
//! |---|---|---|
//! | `layout.signatures` | host, level, signature | [`SignatureRecord`]: seen, last seen, template version, sample URLs, queued, JS required |
//! | `layout.templates` | host, level, signature | [`Learned`]: the template and the snapshot of the layout it was learned on |
//! | `layout.changes` | host, time, sequence | [`Change`] |
//! | `layout.jobs` | sequence | [`TeacherJob`] |
//! | `layout.hosts` | host | [`HostRendering`]: whether the host's pages are rendered, and why |
//! | `layout.renders` | sequence | [`RenderJob`]: a page waiting for the browser |
//! | `layout.render_urls` | URL | the sequence of its job in `layout.renders` (one job per page) |
//! | `layout.js_needs` | host | whether each of its last eight static pages needed the browser (a bit each) and how many were seen |
//! | `layout.pages` | `s`/`r`, URL | the static HTML of a sample page (`s`, for the teacher) or of a page waiting for the browser (`r`): [`StoredPage`] |
//!
//! The browser never fetches a page the crawl already has: the teacher's samples and the pages
//! queued for rendering keep their HTML here, and the browser is answered from it.
//!
//! A signature seen [`LayoutStore::threshold`] times without a template queues one teacher
//! job (one at a time per signature); so does a template that fails validation. Manual
//! templates (the operator's override file, [`load_overrides`]) are looked up before learned
//! ones and never replaced by the teacher.
//!
//! One module per thing stored: `templates` (signatures and learned templates), `overrides` (the
//! operator's file), `changes`, `teacher_queue` (jobs), `rendering` (hosts' rendering decisions and
//! the render queue), `pages` (kept HTML); `views` is what the operator is shown. This module holds
//! the trees and their keys.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use weft_db::Table as Tree;
use weft_extract::template::Level;

mod changes;
mod overrides;
mod pages;
mod rendering;
mod teacher_queue;
mod templates;
#[cfg(test)]
mod tests;
mod views;

pub use overrides::*;
pub use pages::*;
pub use rendering::*;
pub use teacher_queue::*;
pub use templates::*;
pub use views::*;

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("layout store: {0}")]
    Store(#[from] fjall::Error),
    #[error("layout store (moving an earlier release's records): {0}")]
    Move(#[from] weft_db::MoveError),
    #[error("layout store: {0}")]
    Frontier(#[from] weft_frontier::FrontierError),
    #[error("layout store: {0}")]
    Sled(#[from] sled::Error),
    #[error("corrupt layout record: {0}")]
    Corrupt(#[from] serde_json::Error),
}

/// The layout memory.
#[derive(Clone)]
pub struct LayoutStore {
    /// Sequence numbers of jobs, renders and changes, above the largest already queued.
    ids: Arc<weft_db::Ids>,
    signatures: Tree,
    templates: Tree,
    changes: Tree,
    jobs: Tree,
    hosts: Tree,
    renders: Tree,
    render_urls: Tree,
    pages: Tree,
    js_needs: Tree,
    threshold: u64,
    /// Learned templates and rendering decisions are checked again after this many seconds
    /// (`layouts.decision_ttl_days`).
    ttl_secs: u64,
    /// The operator's templates by host.
    overrides: Arc<HashMap<String, Learned>>,
}

fn key(host: &str, level: Level, signature: &str) -> Vec<u8> {
    let level = match level {
        Level::L1 => b'1',
        Level::L2 => b'2',
    };
    let mut k = Vec::with_capacity(host.len() + signature.len() + 3);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k.push(level);
    k.push(0);
    k.extend_from_slice(signature.as_bytes());
    k
}

fn host_prefix(host: &str) -> Vec<u8> {
    let mut k = host.as_bytes().to_vec();
    k.push(0);
    k
}

impl LayoutStore {
    /// Opens the tables in `tables`, moving an earlier release's sled trees (in `legacy`) in
    /// first, once; a signature seen `threshold` times without a template is taught.
    pub fn open(tables: &weft_frontier::Tables, legacy: &sled::Db, threshold: u64) -> Result<LayoutStore, LayoutError> {
        let open = |name: &str| -> Result<Tree, LayoutError> {
            let table = tables.table(name);
            let moved = table.move_from_sled(legacy, name)?;
            if moved > 0 {
                tracing::info!(
                    moved,
                    table = name,
                    "layout records moved from the sled database to the frontier's store"
                );
            }
            Ok(table)
        };
        let jobs = open("layout.jobs")?;
        let renders = open("layout.renders")?;
        let last = |t: &Tree| -> Result<u64, LayoutError> {
            Ok(t.last()?.and_then(|(k, _)| <[u8; 8]>::try_from(k.as_slice()).ok()).map_or(0, u64::from_be_bytes))
        };
        let ids = Arc::new(weft_db::Ids::new(last(&jobs)?.max(last(&renders)?)));
        Ok(LayoutStore {
            ids,
            signatures: open("layout.signatures")?,
            templates: open("layout.templates")?,
            changes: open("layout.changes")?,
            jobs,
            hosts: open("layout.hosts")?,
            renders,
            render_urls: open("layout.render_urls")?,
            pages: open("layout.pages")?,
            js_needs: open("layout.js_needs")?,
            threshold: threshold.max(1),
            ttl_secs: 7 * 86_400,
            overrides: Arc::default(),
        })
    }

    /// The store of the stopped node whose data dir is `data_dir` (its frontier's tables, and
    /// its sled database for an earlier release's records): for tools, examples and tests.
    pub fn open_dir(data_dir: &Path, threshold: u64) -> Result<LayoutStore, LayoutError> {
        let legacy = weft_db::open_db(&data_dir.join("db"), 8 << 20)?;
        let tables = weft_frontier::Tables::open_dir(&data_dir.join("frontier"))?;
        LayoutStore::open(&tables, &legacy, threshold)
    }

    /// Decisions (learned templates, "the host needs JavaScript") older than `days` are
    /// checked again (see [`LayoutStore::observe`] and [`LayoutStore::rendering_due`]).
    pub fn with_decision_ttl(mut self, days: u64) -> LayoutStore {
        self.ttl_secs = days.saturating_mul(86_400).max(1);
        self
    }

    fn get<T: for<'de> Deserialize<'de>>(tree: &Tree, k: &[u8]) -> Result<Option<T>, LayoutError> {
        Ok(tree.get(k)?.map(|v| serde_json::from_slice(&v)).transpose()?)
    }

    fn put<T: Serialize>(tree: &Tree, k: &[u8], v: &T) -> Result<(), LayoutError> {
        tree.insert(k, serde_json::to_vec(v)?)?;
        Ok(())
    }
}
