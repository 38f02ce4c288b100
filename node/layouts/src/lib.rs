//! Layout learning and the JavaScript tier (the teacher/worker design): everything a node does
//! with page layouts and the browser, together.
//!
//! - `store/`: the layout store in sled — signatures, templates, changes, the teacher's and
//!   the browser's queues, the pages they work on.
//! - `worker.rs`: the fast path, on every fetched page, on the DOM the extractor parsed.
//! - `teacher.rs`: the slow path, with the browser, in the background.
//! - `rendering.rs`: pages that need JavaScript, rendered and sent down the pipeline; the crawl
//!   reaches it through [`weft_fetch::Renders`], which [`RenderQueue`] implements.
//! - `render_fetch.rs`: what a rendered page may fetch, under the crawl's rules.
//! - `browser.rs`, `chromium.rs`: the Chromium pool and the process it runs;
//!   `process_tree.rs` its processes' memory.
//! - `crawl.rs`: what this tier needs of the crawl ([`Crawl`]: the browser's requests go
//!   through it, rendered pages down its pipeline); `events.rs` what it counts ([`Tally`]).
//!
//! The node gives it the crawl and the metrics; nothing here knows the node.
//!
//! Module order: chromium, events, process_tree, store → crawl → browser, render_fetch → rendering,
//! worker → teacher.

pub mod browser;
pub(crate) mod chromium;
pub mod crawl;
pub mod events;
mod process_tree;
mod render_fetch;
mod rendering;
mod store;
mod teacher;
mod worker;

pub use crawl::{Crawl, CrawlHandle};
pub use events::{Event, Tally};
pub use render_fetch::{decide, Decision, DocumentFailure, RenderFetcher, RenderSession};
pub use rendering::{retry_after, RenderQueue, RENDER_RETRY_SECS};
pub use store::{
    load_overrides, HostDetail, HostRendering, HostSummary, LayoutError, LayoutStore, Learned, OverrideError,
    Relearned, SignatureRecord, SignatureView, StoredPage,
};
pub use teacher::Teacher;
pub use worker::{Worked, Worker};

use browser::{BrowserSettings, LazyPool};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;
use weft_config::Config;

/// `/status` `layouts`: the worker's and the teacher's state. Counters of what they did are in
/// `extraction` (`layout:template`, `layout:generic`, `teacher:runs`, `render:rendered`, ...).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LayoutsStatus {
    /// Templates stored (one per signature and level).
    pub templates: u64,
    /// Hosts whose pages go through the browser.
    pub hosts_rendering: u64,
    pub teacher_queue: u64,
    pub render_queue: u64,
    /// Whether Chromium can be used, and how many instances run now.
    pub browser_available: bool,
    pub browsers_running: u64,
    /// Times the pool was started (it stops after `layouts.browser_idle_secs` without work).
    #[serde(default)]
    pub browser_starts: u64,
    /// Resident memory of each running instance (all its processes), bytes.
    pub browser_memory_bytes: Vec<u64>,
    /// Instances restarted (after `layouts.browser_restart_renders` pages or past
    /// `layouts.browser_restart_mb`) since the pool last started.
    #[serde(default)]
    pub browser_restarts: u64,
}

/// A host's change log: the layout changes the worker recorded (when `store` is there) and the
/// URL-scheme changes the crawl recorded (`scheme`), oldest first.
pub fn change_log(
    store: Option<&LayoutStore>,
    scheme: Vec<weft_frontier::patterns::SchemeChange>,
    host: &str,
) -> Result<Vec<weft_extract::changes::Change>, LayoutError> {
    let mut log = match store {
        Some(s) => s.changes(host)?,
        None => Vec::new(),
    };
    log.extend(scheme.into_iter().map(scheme_entry));
    log.sort_by_key(|c| c.at);
    Ok(log)
}

/// Forgets what was learned of `host`: its layouts (see [`LayoutStore::relearn`]) and its URL
/// patterns. The answer of `POST /templates/{host}/relearn`.
pub fn relearn(
    store: &LayoutStore,
    patterns: &weft_frontier::patterns::Patterns,
    host: &str,
) -> Result<serde_json::Value, LayoutError> {
    let r = store.relearn(host)?;
    let url_patterns = patterns.forget(host)?;
    Ok(serde_json::json!({
        "host": host,
        "templates": r.templates,
        "signatures": r.signatures,
        "jobs": r.jobs,
        "rendering": r.rendering,
        "url_patterns": url_patterns,
    }))
}

/// A URL-scheme change as an entry of the change log.
fn scheme_entry(c: weft_frontier::patterns::SchemeChange) -> weft_extract::changes::Change {
    let detected = match c.detected {
        weft_frontier::patterns::Detected::Counts => "counts",
        weft_frontier::patterns::Detected::Redirects => "redirects",
    };
    weft_extract::changes::Change {
        kinds: vec![weft_extract::changes::ChangeKind::UrlScheme { from: c.from, to: c.to, detected: detected.into() }],
        evidence: c.evidence,
        reason: c.reason,
        breaking: false,
        url: c.url,
        at: c.at,
    }
}

/// The parts of layout learning a node runs beside the crawl.
#[derive(Clone)]
pub struct Layouts {
    pub store: LayoutStore,
    pub pool: Arc<LazyPool>,
    /// Pages for the browser; given to the crawler as its [`weft_fetch::Renders`].
    pub renders: RenderQueue,
    teacher_wake: Arc<tokio::sync::Notify>,
}

impl Layouts {
    /// Opens the layout store (in `tables`; an earlier release's records moved in from `db`)
    /// with the operator's overrides and prepares (does not start) the browser pool.
    pub fn open(config: &Config, tables: &weft_frontier::Tables, db: &sled::Db) -> anyhow::Result<Layouts> {
        let la = &config.layouts;
        let path = config.data_dir.join(&la.overrides);
        let overrides = load_overrides(&path)?;
        if !overrides.is_empty() {
            tracing::info!(templates = overrides.len(), file = %path.display(), "override templates loaded");
        }
        let store = LayoutStore::open(tables, db, la.teach_after)?
            .with_overrides(overrides)
            .with_decision_ttl(la.decision_ttl_days);
        // Browsers a killed node left behind (the kernel's parent-death signal should have
        // ended them; this is the second wall).
        chromium::reap_orphans(&std::env::temp_dir());
        let pool = Arc::new(LazyPool::new(
            BrowserSettings {
                executable: la.chromium.clone(),
                instances: la.browsers,
                timeout: Duration::from_secs(la.render_timeout_secs),
                restart_after_renders: la.browser_restart_renders,
                restart_above_bytes: la.browser_restart_mb << 20,
                ..BrowserSettings::default()
            },
            Duration::from_secs(la.browser_idle_secs),
        ));
        let renders = RenderQueue::new(store.clone());
        Ok(Layouts { store, pool, renders, teacher_wake: Arc::default() })
    }

    /// The worker for the extraction pipeline.
    pub fn worker(&self, config: &Config, metrics: Arc<dyn Tally>) -> Worker {
        Worker::new(self.store.clone(), &config.layouts, metrics, self.pool.available(), self.teacher_wake.clone())
    }

    /// Starts the renderer, the teacher and the browser's idle stop on `tasks`.
    pub fn spawn(&self, config: &Config, crawler: &CrawlHandle, tasks: &mut JoinSet<()>) {
        let patience = Duration::from_secs(config.layouts.render_patience_secs);
        let metrics = crawler.tally();
        let fetcher = RenderFetcher::new(crawler.clone(), config.layouts.max_subresources);
        tasks.spawn(rendering::run(
            self.renders.clone(),
            crawler.clone(),
            fetcher.clone(),
            self.pool.clone(),
            patience,
            metrics.clone(),
        ));
        let teacher = Teacher {
            store: self.store.clone(),
            crawler: crawler.clone(),
            fetcher,
            pool: self.pool.clone(),
            renders: self.renders.clone(),
            metrics,
            patience,
            wake: self.teacher_wake.clone(),
        };
        tasks.spawn(teacher.run());
        tasks.spawn(self.pool.clone().run_idle_stop());
    }

    /// The `layouts` section of `/status`.
    pub fn status(&self) -> LayoutsStatus {
        let mut status = self.store.status();
        status.browser_available = self.pool.available().load(std::sync::atomic::Ordering::Acquire);
        status.browser_starts = self.pool.starts();
        if let Some(pool) = self.pool.started() {
            status.browsers_running = pool.instances() as u64;
            status.browser_memory_bytes = pool.memory();
            status.browser_restarts = pool.restarts();
        }
        status
    }
}
