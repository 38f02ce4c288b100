//! The crawl loop's run state and what starts and stops it: crawling, idle, paused by the
//! operator, throttled over the memory target or stopping; the wake-up other parts give it
//! when there is work; and the cut that sends unanswered requests back to the queue when a
//! stop's grace is over.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use tokio::sync::{watch, Notify};

/// What the crawl loop is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CrawlState {
    Crawling = 0,
    /// Nothing queued and nothing in flight.
    Idle = 1,
    Stopping = 2,
    /// The operator paused it.
    Paused = 3,
    /// Over the memory target: no new requests until memory is back down.
    Throttled = 4,
}

impl CrawlState {
    pub fn as_str(self) -> &'static str {
        match self {
            CrawlState::Crawling => "crawling",
            CrawlState::Idle => "idle",
            CrawlState::Stopping => "stopping",
            CrawlState::Paused => "paused",
            CrawlState::Throttled => "throttled",
        }
    }

    pub(super) fn from_u8(v: u8) -> CrawlState {
        match v {
            0 => CrawlState::Crawling,
            1 => CrawlState::Idle,
            3 => CrawlState::Paused,
            4 => CrawlState::Throttled,
            _ => CrawlState::Stopping,
        }
    }
}

/// The run state, shared by the crawl loop, the API and the browser's work.
#[derive(Debug)]
pub(super) struct Control {
    /// A [`CrawlState`].
    state: AtomicU8,
    /// The operator paused the crawl: no new requests start (in-flight ones finish).
    paused: AtomicBool,
    /// Over the memory target: no new requests start until memory is back down.
    throttled: AtomicBool,
    wake: Notify,
    /// Turns true when a stop's grace is over: requests still waiting for their answer give
    /// up (their URLs go back to the queue), pages already fetched are still processed.
    requests_cut: watch::Sender<bool>,
}

impl Default for Control {
    fn default() -> Control {
        Control {
            state: AtomicU8::new(CrawlState::Crawling as u8),
            paused: AtomicBool::new(false),
            throttled: AtomicBool::new(false),
            wake: Notify::new(),
            requests_cut: watch::Sender::new(false),
        }
    }
}

impl Control {
    pub(super) fn state(&self) -> CrawlState {
        CrawlState::from_u8(self.state.load(Ordering::Relaxed))
    }

    pub(super) fn set_state(&self, state: CrawlState) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    pub(super) fn is_stopping(&self) -> bool {
        self.state() == CrawlState::Stopping
    }

    /// Pauses (`true`) or resumes the crawl, and wakes the loop to notice.
    pub(super) fn pause(&self, on: bool) {
        self.paused.store(on, Ordering::Release);
        self.wake.notify_one();
    }

    /// Holds back (`true`) or releases new requests for memory, and wakes the loop to notice.
    pub(super) fn throttle(&self, on: bool) {
        self.throttled.store(on, Ordering::Release);
        self.wake.notify_one();
    }

    /// Why no request may start now, if one may not: paused before throttled.
    pub(super) fn held(&self) -> Option<CrawlState> {
        if self.paused.load(Ordering::Acquire) {
            Some(CrawlState::Paused)
        } else if self.throttled.load(Ordering::Acquire) {
            Some(CrawlState::Throttled)
        } else {
            None
        }
    }

    /// Wakes the crawl loop: there is work (new URLs, a host free, work finished elsewhere).
    pub(super) fn wake(&self) {
        self.wake.notify_one();
    }

    /// Resolves at the next [`Control::wake`].
    pub(super) fn woken(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }

    /// The stop's grace is over: unanswered requests give up.
    pub(super) fn cut_requests(&self) {
        self.requests_cut.send_replace(true);
    }

    /// Turns true when [`Control::cut_requests`] is called.
    pub(super) fn requests_cut(&self) -> watch::Receiver<bool> {
        self.requests_cut.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paused_wins_over_throttled_and_each_lifts_on_its_own() {
        let c = Control::default();
        assert_eq!((c.state(), c.held()), (CrawlState::Crawling, None));
        c.throttle(true);
        assert_eq!(c.held(), Some(CrawlState::Throttled));
        c.pause(true);
        assert_eq!(c.held(), Some(CrawlState::Paused));
        c.throttle(false);
        assert_eq!(c.held(), Some(CrawlState::Paused));
        c.pause(false);
        assert_eq!(c.held(), None);
        c.set_state(CrawlState::Stopping);
        assert!(c.is_stopping());
        let cut = c.requests_cut();
        c.cut_requests();
        assert!(*cut.borrow());
    }
}
