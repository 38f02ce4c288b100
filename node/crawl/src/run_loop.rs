//! The crawl loop itself: lease what is ready, up to the concurrency limit, until the stop;
//! then the stop's grace for requests in flight and the pages already fetched.

use super::{CrawlState, Crawler, Inner, PROCESSING_GRACE};
use crate::storage::blocking;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinSet;
use weft_frontier::Next;

impl Crawler {
    /// Runs until `shutdown` turns true (or, with `exit_when_idle`, until nothing is left to
    /// crawl), then finishes in-flight requests within the grace period and flushes state.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>, exit_when_idle: bool) -> anyhow::Result<()> {
        let inner = &self.inner;
        let mut tasks: JoinSet<()> = JoinSet::new();
        let mut fault = inner.storage.subscribe();
        // The freshness loop: due revisits are queued once a second.
        let revisiting = inner.adapt.settings.hub_revisit.is_some();
        let mut revisit_tick = tokio::time::interval(Duration::from_secs(1));
        revisit_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut revisits_checked = Instant::now();
        loop {
            if *shutdown.borrow() || *fault.borrow_and_update() {
                break;
            }
            if revisiting && revisits_checked.elapsed() >= Duration::from_secs(1) {
                revisits_checked = Instant::now();
                inner.queue_revisits();
            }
            while let Some(done) = tasks.try_join_next() {
                if let Err(e) = done {
                    tracing::error!("crawl task failed: {e}");
                }
            }
            if let Some(held) = inner.control.held() {
                inner.set_state(held);
                tokio::select! {
                    _ = inner.control.woken() => {}
                    Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                    _ = shutdown.changed() => {}
                    _ = fault.changed() => {}
                }
                continue;
            }
            if tasks.len() >= inner.settings.concurrency {
                tokio::select! {
                    _ = tasks.join_next() => {}
                    _ = shutdown.changed() => {}
                    _ = fault.changed() => {}
                }
                continue;
            }
            let wait_until = match inner.next_step(&mut tasks, exit_when_idle) {
                Step::Leased => continue,
                Step::Wait(until) => until,
                Step::Exit => break,
            };
            let sleep = async {
                match wait_until {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => {}
                _ = inner.control.woken() => {}
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                _ = revisit_tick.tick(), if revisiting => {}
                _ = shutdown.changed() => {}
                _ = fault.changed() => {}
            }
        }

        self.finish(tasks).await?;
        // Writing the snapshot also flushes every pending frontier write.
        let bytes = self.snapshot().await?;
        let pages_fetched = inner.metrics.pages_fetched.load(Ordering::Relaxed);
        tracing::info!(pages_fetched, seen_snapshot_bytes = bytes, "crawl state flushed");
        Ok(())
    }

    /// Winds the crawl down: the requests in flight get the stop's grace; past it, those still
    /// unanswered go back to the queue and the pages already fetched get
    /// [`PROCESSING_GRACE`] to be processed; what is left then stays queued for the next start.
    async fn finish(&self, mut tasks: JoinSet<()>) -> anyhow::Result<()> {
        let inner = &self.inner;
        inner.set_state(CrawlState::Stopping);
        if let Some(fault) = inner.storage.fault() {
            // Nothing more can be made durable; what was acknowledged already is.
            tasks.abort_all();
            return Err(fault.into());
        }
        let in_flight = tasks.len();
        if in_flight > 0 {
            tracing::info!(in_flight, "finishing in-flight requests");
            let grace = inner.settings.shutdown_grace;
            let mut drained = tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
            if drained.is_err() {
                // Requests still unanswered give up and go back to the queue; a page already
                // here is processed to the end (its links queued, its lease done): cut short,
                // it would go to its host's next owner as queued and be fetched a second time
                // (indexing can outlast the grace on a loaded machine). PROCESSING_GRACE bounds
                // a processing that does not end.
                inner.control.cut_requests();
                tracing::info!(left = tasks.len(), "grace period over; unanswered requests go back to the queue");
                drained =
                    tokio::time::timeout(PROCESSING_GRACE, async { while tasks.join_next().await.is_some() {} }).await;
            }
            if drained.is_err() {
                tracing::warn!(left = tasks.len(), "grace period over; unfinished URLs stay queued for the next start");
                tasks.abort_all();
                while tasks.join_next().await.is_some() {}
                // Back in the queue: a leave hands them to the host's next owner as queued.
                if let Err(e) = blocking(|| inner.frontier.lock().abandon_leases()) {
                    tracing::error!("frontier error: {e}");
                }
            }
        }
        Ok(())
    }
}

/// What the loop does after asking the frontier.
enum Step {
    /// A lease was started.
    Leased,
    /// Nothing to start: wait until then (or for a wake-up).
    Wait(Option<Instant>),
    /// Idle, and the crawl exits when idle.
    Exit,
}

impl Inner {
    /// Leases the next URL that is ready and starts its work in `tasks`, or says how long to
    /// wait; an empty frontier with nothing in flight or rendering is idle.
    fn next_step(self: &Arc<Self>, tasks: &mut JoinSet<()>, exit_when_idle: bool) -> Step {
        let next = blocking(|| self.frontier.lock().next(Instant::now()));
        match next {
            Ok(Next::Ready(lease)) => {
                self.set_state(CrawlState::Crawling);
                let inner = self.clone();
                tasks.spawn(async move { inner.process(lease).await });
                Step::Leased
            }
            Ok(Next::WaitUntil(t)) => {
                if tasks.is_empty() {
                    // Nothing in flight: the crawl waits on politeness alone.
                    let wait = t.saturating_duration_since(Instant::now());
                    self.metrics.histograms.politeness_wait.observe(wait.as_secs_f64());
                }
                Step::Wait(Some(t))
            }
            Ok(Next::Busy) => Step::Wait(None),
            Ok(Next::Empty) => {
                let rendering = self.renders.as_ref().map_or(0, |r| r.pending());
                if tasks.is_empty() && rendering == 0 {
                    self.set_state(CrawlState::Idle);
                    self.adapt.idle_crawl();
                    if exit_when_idle {
                        return Step::Exit;
                    }
                }
                Step::Wait(None)
            }
            Err(e) => {
                self.storage.error("frontier lease (retrying in 1 s)", e);
                Step::Wait(Some(Instant::now() + Duration::from_secs(1)))
            }
        }
    }
}
