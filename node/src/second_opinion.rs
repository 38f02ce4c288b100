//! The reference extractor (Readability.js in QuickJS) as a second opinion, off the hot path.
//!
//! One dedicated OS thread owns the JavaScript engine (it is `!Send`) and takes jobs from a
//! bounded queue. The crawl never waits for it: [`SecondOpinion::offer`] either enqueues a
//! low-confidence page or skips it, following `extract.second_opinion`:
//!
//! - `off`: never;
//! - `idle`: only when the reference thread is free and at most one page is being extracted —
//!   second opinions use spare capacity and never queue up behind the crawl;
//! - `always`: whenever the bounded queue has room.
//!
//! QuickJS cannot be interrupted through `readability-js`, so the time budget is enforced on
//! the result: a job that waited or ran longer than `second_opinion_budget_ms` is discarded and
//! counted. Taken opinions are delivered on [`SecondOpinion::take_improved`]'s channel for the
//! index to use.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;
use weft_config::{ExtractConfig, SecondOpinion as Policy};
use weft_crawl::metrics::{Event, Metrics, SecondOpinion as Opinion};

/// Pages the `always` policy may have waiting.
const QUEUE: usize = 32;
/// Improved texts kept for the consumer; beyond this they are dropped (and counted).
const IMPROVED: usize = 1_024;

struct Job {
    url: Url,
    html: String,
    fast_text: String,
    queued: Instant,
}

/// A page whose main text the reference extractor improved.
#[derive(Debug, Clone)]
pub struct Improved {
    pub url: Url,
    pub text: String,
}

pub struct SecondOpinion {
    policy: Policy,
    below: f32,
    tx: Option<SyncSender<Job>>,
    busy: Arc<AtomicBool>,
    improved: parking_lot::Mutex<Option<Receiver<Improved>>>,
    metrics: Arc<Metrics>,
}

impl SecondOpinion {
    /// Starts the reference thread unless the policy is `off`.
    pub fn start(config: &ExtractConfig, metrics: Arc<Metrics>) -> Self {
        let busy = Arc::new(AtomicBool::new(false));
        let (tx, improved) = if config.second_opinion == Policy::Off {
            (None, None)
        } else {
            let (tx, rx) = sync_channel::<Job>(QUEUE);
            let (out_tx, out_rx) = sync_channel(IMPROVED);
            let budget = Duration::from_millis(config.second_opinion_budget_ms);
            let (busy, metrics) = (busy.clone(), metrics.clone());
            std::thread::Builder::new()
                .name("weft-reference".into())
                .stack_size(16 << 20)
                .spawn(move || worker(rx, out_tx, budget, busy, metrics))
                .expect("spawn the reference extractor thread");
            (Some(tx), Some(out_rx))
        };
        SecondOpinion {
            policy: config.second_opinion,
            below: config.second_opinion_below,
            tx,
            busy,
            improved: parking_lot::Mutex::new(improved),
            metrics,
        }
    }

    /// Offers a page that was just extracted. `extracting` is how many pages are being
    /// extracted right now (this one included).
    pub fn offer(&self, url: &Url, html: &[u8], fast: &weft_extract::Extracted, extracting: usize) {
        let Some(tx) = &self.tx else { return };
        if fast.confidence >= f64::from(self.below) {
            return;
        }
        if self.policy == Policy::Idle && (self.busy.load(Ordering::Acquire) || extracting > 1) {
            self.metrics.count_event(Event::SecondOpinion(Opinion::SkippedBusy));
            return;
        }
        // The reference reads a string; give it the text our decoder produced.
        let html = String::from_utf8_lossy(html).into_owned();
        let job = Job { url: url.clone(), html, fast_text: fast.text.clone(), queued: Instant::now() };
        match tx.try_send(job) {
            Ok(()) => self.metrics.count_event(Event::SecondOpinion(Opinion::Sent)),
            Err(TrySendError::Full(_)) => self.metrics.count_event(Event::SecondOpinion(Opinion::SkippedQueueFull)),
            Err(TrySendError::Disconnected(_)) => self.metrics.count_event(Event::SecondOpinion(Opinion::Unavailable)),
        }
    }

    /// The channel of improved texts (once; later calls return `None`).
    pub fn take_improved(&self) -> Option<Receiver<Improved>> {
        self.improved.lock().take()
    }
}

fn worker(
    rx: Receiver<Job>,
    out: SyncSender<Improved>,
    budget: Duration,
    busy: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
) {
    let reference = match weft_extract::reference::Reference::new() {
        Ok(r) => r,
        Err(e) => {
            metrics.error("reference_start", "", &e);
            return;
        }
    };
    while let Ok(job) = rx.recv() {
        if job.queued.elapsed() > budget {
            metrics.count_event(Event::SecondOpinion(Opinion::OverBudget));
            continue;
        }
        busy.store(true, Ordering::Release);
        let started = Instant::now();
        let result = reference.extract(&job.html, job.url.as_str());
        busy.store(false, Ordering::Release);
        let took = started.elapsed();
        match result {
            Err(e) => {
                metrics.count_event(Event::SecondOpinion(Opinion::Failed));
                tracing::debug!(url = %job.url, "second opinion failed: {e}");
            }
            Ok(_) if job.queued.elapsed() > budget => metrics.count_event(Event::SecondOpinion(Opinion::OverBudget)),
            Ok(text) if weft_extract::reference::prefer_reference(&job.fast_text, &text) => {
                metrics.count_event(Event::SecondOpinion(Opinion::Taken));
                tracing::debug!(url = %job.url, ms = took.as_millis() as u64, "second opinion taken");
                if out.try_send(Improved { url: job.url, text }).is_err() {
                    metrics.count_event(Event::SecondOpinion(Opinion::DroppedUnconsumed));
                }
            }
            Ok(_) => metrics.count_event(Event::SecondOpinion(Opinion::KeptNative)),
        }
    }
}
