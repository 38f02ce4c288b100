//! The extractor a node runs, and extracting again after an upgrade. A node records which
//! extractor made the texts it holds ([`weft_extract::learned::Selector::id`]: the rules'
//! revision, and the built-in model's checksum unless `extract.learned = false`). Started by a
//! build whose extractor differs, it extracts every page whose HTTP response it kept
//! (`crawl.keep_responses`) again, from that response, through the same pipeline a fetched page
//! takes, and re-indexes the pages whose text changed: the index improves without fetching
//! anything. Pages without a kept response keep their text until they are fetched again.
//!
//! The pass walks the kept responses in key order and records how far it got, so a node stopped
//! halfway goes on where it stopped; the new extractor is recorded when the pass ends. It runs
//! on one blocking thread beside the crawl, a page at a time, and yields to a stop at once.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use weft_content::responses::ResponseStore;
use weft_fetch::page::{FetchedPage, Pipeline, Reextracted};

/// How a node chooses each page's blocks: the built-in classifier over the rules, or the rules
/// alone (`extract.learned = false`).
pub fn selector(config: &weft_config::ExtractConfig) -> weft_extract::learned::Selector<'static> {
    if config.learned {
        weft_extract::learned::Selector::default_for_build()
    } else {
        weft_extract::learned::Selector::Rules
    }
}

/// Where the extractor's id and the pass's place are kept, in the node's database.
const TREE: &str = "extraction";
const HELD: &[u8] = b"extractor";
const CURSOR: &[u8] = b"cursor";
/// The pass records its place after this many pages.
const SAVE_EVERY: u64 = 32;

/// What the pass has done, for `/status` (`index.reextraction`).
#[derive(Debug, Default)]
pub struct Tally {
    /// The extractor this node runs.
    extractor: String,
    /// `crawl.keep_responses`: whether there is anything to extract again.
    keeps_responses: bool,
    running: AtomicBool,
    finished: AtomicBool,
    done: AtomicU64,
    changed: AtomicU64,
    unchanged: AtomicU64,
    not_held: AtomicU64,
    for_browser: AtomicU64,
    failed: AtomicU64,
    responses: AtomicU64,
    from: parking_lot::Mutex<Option<String>>,
}

/// The re-extraction as `/status` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReextractionStatus {
    /// The extractor this build runs.
    pub extractor: String,
    /// The extractor the held texts were made by, while a pass runs or is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `current` (nothing to do), `running`, `done` (a pass ended in this run), `no_responses`
    /// (the node keeps none: its texts change as pages are fetched again).
    pub state: String,
    /// Kept responses when the pass started.
    pub responses: u64,
    /// Responses extracted again in this run, and what came of them: text changed and
    /// re-indexed, text the same, no document held for the page (evicted, an alias), sent to
    /// the browser instead (the page needs JavaScript; its rendered form is indexed), failed.
    pub done: u64,
    pub changed: u64,
    pub unchanged: u64,
    pub not_held: u64,
    pub for_browser: u64,
    pub failed: u64,
}

impl Tally {
    pub fn new(extractor: String, keeps_responses: bool) -> Tally {
        Tally { extractor, keeps_responses, ..Tally::default() }
    }

    pub fn status(&self) -> ReextractionStatus {
        let from = self.from.lock().clone();
        let state = if self.running.load(Relaxed) {
            "running"
        } else if self.finished.load(Relaxed) {
            "done"
        } else if !self.keeps_responses {
            "no_responses"
        } else {
            "current"
        };
        ReextractionStatus {
            extractor: self.extractor.clone(),
            from,
            state: state.into(),
            responses: self.responses.load(Relaxed),
            done: self.done.load(Relaxed),
            changed: self.changed.load(Relaxed),
            unchanged: self.unchanged.load(Relaxed),
            not_held: self.not_held.load(Relaxed),
            for_browser: self.for_browser.load(Relaxed),
            failed: self.failed.load(Relaxed),
        }
    }
}

/// The extractor the node's texts were made by, as recorded; `None` on a node that never
/// recorded one (new, or older than the record).
pub fn held(db: &sled::Db) -> Result<Option<String>, sled::Error> {
    Ok(db.open_tree(TREE)?.get(HELD)?.map(|v| String::from_utf8_lossy(&v).into_owned()))
}

/// Whether a pass is due: the extractor recorded differs from `now`, or none is recorded and
/// the node holds kept responses (a node upgraded from a build before the record). A new node
/// records `now` at once.
pub fn due(db: &sled::Db, responses: &ResponseStore, now: &str) -> Result<Option<String>, sled::Error> {
    match held(db)? {
        Some(h) if h == now => Ok(None),
        Some(h) => Ok(Some(h)),
        None if responses.is_empty() => {
            db.open_tree(TREE)?.insert(HELD, now.as_bytes())?;
            Ok(None)
        }
        None => Ok(Some("an extractor before the record".into())),
    }
}

/// Extracts every kept response again through `pipeline`, whose extractor `tally` names (see
/// the module's documentation), unless `stop` turns true first. Blocking.
pub fn run(
    db: &sled::Db,
    responses: &ResponseStore,
    pipeline: &dyn Pipeline,
    tally: &Tally,
    stop: &dyn Fn() -> bool,
) -> Result<(), sled::Error> {
    let Some(from) = due(db, responses, &tally.extractor)? else { return Ok(()) };
    let tree = db.open_tree(TREE)?;
    tracing::info!(from, to = tally.extractor, "extracting the kept responses again");
    *tally.from.lock() = Some(from);
    tally.responses.store(responses.len() as u64, Relaxed);
    tally.running.store(true, Relaxed);
    let mut after = tree.get(CURSOR)?.map(|v| v.to_vec());
    let mut since_save = 0;
    let mut stopped = false;
    while let Some((key, kept)) = responses.next_after(after.as_deref())? {
        if stop() {
            stopped = true;
            break;
        }
        let outcome = match kept.map(page_of) {
            Ok(Some(page)) => pipeline.reextract(&page),
            Ok(None) => Reextracted::Failed,
            Err(e) => {
                tracing::warn!("a kept response could not be read: {e}");
                Reextracted::Failed
            }
        };
        let counter = match outcome {
            Reextracted::Changed => &tally.changed,
            Reextracted::Unchanged => &tally.unchanged,
            Reextracted::NotHeld => &tally.not_held,
            Reextracted::ForBrowser => &tally.for_browser,
            Reextracted::Failed => &tally.failed,
        };
        // A page whose indexing a stop cut short is done again next time.
        if stop() {
            stopped = true;
            break;
        }
        counter.fetch_add(1, Relaxed);
        tally.done.fetch_add(1, Relaxed);
        after = Some(key);
        since_save += 1;
        if since_save == SAVE_EVERY {
            tree.insert(CURSOR, after.as_deref().unwrap_or_default())?;
            since_save = 0;
        }
    }
    tally.running.store(false, Relaxed);
    if stopped {
        if let Some(at) = &after {
            tree.insert(CURSOR, at.as_slice())?;
        }
        return Ok(());
    }
    tree.remove(CURSOR)?;
    tree.insert(HELD, tally.extractor.as_bytes())?;
    tally.finished.store(true, Relaxed);
    tracing::info!(done = tally.done.load(Relaxed), changed = tally.changed.load(Relaxed), "extracted again");
    Ok(())
}

/// A kept response as the pipeline takes a fetched page.
/// `None` when its URL does not parse (a damaged record).
fn page_of(kept: weft_content::responses::KeptResponse) -> Option<FetchedPage> {
    let header = |name: &str| kept.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    Some(FetchedPage {
        url: url::Url::parse(&kept.url).ok()?,
        status: kept.status,
        content_type: header("content-type"),
        content_language: header("content-language"),
        fetched_at: UNIX_EPOCH + Duration::from_millis(kept.fetched_at_ms),
        body: kept.body.into(),
        depth: 0,
        rendered: false,
    })
}

/// Starts the pass in `tasks`, on a blocking thread, if the node keeps responses; it ends when
/// it is done or `stop` turns true.
pub fn spawn(
    tasks: &mut tokio::task::JoinSet<()>,
    db: sled::Db,
    responses: ResponseStore,
    pipeline: Arc<dyn Pipeline>,
    tally: Arc<Tally>,
    stop: impl Fn() -> bool + Send + 'static,
) {
    tasks.spawn_blocking(move || {
        if let Err(e) = run(&db, &responses, pipeline.as_ref(), &tally, &stop) {
            tracing::warn!("extracting the kept responses again stopped: {e}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_fetch::page::Processed;

    /// Counts the pages it is asked to extract again; says each changed.
    #[derive(Default)]
    struct Counting(parking_lot::Mutex<Vec<String>>);

    impl Pipeline for Counting {
        fn process(&self, _: &FetchedPage) -> Processed {
            Processed::default()
        }

        fn reextract(&self, page: &FetchedPage) -> Reextracted {
            self.0.lock().push(page.url.to_string());
            Reextracted::Changed
        }
    }

    #[test]
    fn a_pass_stopped_halfway_goes_on_where_it_stopped_and_then_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let db = weft_frontier::open_db(dir.path(), 8 << 20).unwrap();
        let responses = ResponseStore::open(&db).unwrap();
        // A node before the record, holding five kept responses.
        let urls: Vec<String> = (0..5).map(|i| format!("http://a.test/{i}")).collect();
        for u in &urls {
            let kept = weft_content::responses::KeptResponse {
                url: u.clone(),
                fetched_at_ms: 1_780_000_000_000,
                version: "HTTP/1.1".into(),
                status: 200,
                headers: vec![("content-type".into(), "text/html".into())],
                request_headers: Vec::new(),
                body: b"<p>page</p>".to_vec(),
            };
            responses.keep(&kept).unwrap();
        }
        let pipeline = Counting::default();
        let tally = Tally::new("new".into(), true);
        let asked = std::sync::atomic::AtomicUsize::new(0);
        // Stopped while the third page is extracted: that page is done again next time.
        let stop = || asked.fetch_add(1, Relaxed) >= 5;
        run(&db, &responses, &pipeline, &tally, &stop).unwrap();
        assert_eq!(pipeline.0.lock().len(), 3);
        assert_eq!(tally.status().done, 2);
        assert_eq!(held(&db).unwrap(), None, "not recorded before the pass ends");
        let tally = Tally::new("new".into(), true);
        run(&db, &responses, &pipeline, &tally, &|| false).unwrap();
        let mut seen = pipeline.0.lock().clone();
        assert_eq!(seen.len(), 6, "the cut page again, then the rest: {seen:?}");
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 5, "every page: {seen:?}");
        let s = tally.status();
        assert_eq!(
            (s.state.as_str(), s.done, s.changed, s.from.as_deref()),
            ("done", 3, 3, Some("an extractor before the record"))
        );
        assert_eq!(held(&db).unwrap().as_deref(), Some("new"));
        // Nothing is due for the same extractor; another one starts a pass again.
        let tally = Tally::new("new".into(), true);
        run(&db, &responses, &pipeline, &tally, &|| false).unwrap();
        assert_eq!((tally.status().state.as_str(), pipeline.0.lock().len()), ("current", 6));
        assert_eq!(due(&db, &responses, "newer").unwrap().as_deref(), Some("new"));
        // A new node (no kept response) records its extractor at once.
        let fresh = weft_frontier::open_db(&dir.path().join("fresh"), 8 << 20).unwrap();
        assert_eq!(due(&fresh, &ResponseStore::open(&fresh).unwrap(), "new").unwrap(), None);
        assert_eq!(held(&fresh).unwrap().as_deref(), Some("new"));
    }
}
