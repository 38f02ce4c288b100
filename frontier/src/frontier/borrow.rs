//! A host borrowed for one request outside the queue (the browser's pages and subresources),
//! under a lease's rules.

use super::Frontier;
use crate::store::Result;
use crate::{Borrow, Returned};
use std::time::Instant;

impl Frontier {
    /// Takes `host` for one request outside the queue — a browser's page or subresource — under
    /// the same rules as a lease: one request in flight per host, its delay, Crawl-delay,
    /// backoff and hand-over hold. Give it back with [`Frontier::return_host`].
    pub fn borrow_host(&mut self, host: &str, now: Instant) -> Result<Borrow> {
        let id = self.host_id(host, now)?;
        let h = &mut self.hosts[id as usize];
        if h.in_flight {
            return Ok(Borrow::Busy);
        }
        if h.ready_at() > now {
            return Ok(Borrow::WaitUntil(h.ready_at()));
        }
        h.in_flight = true;
        h.scheduled_at = None;
        self.in_flight += 1;
        Ok(Borrow::Granted)
    }

    /// Gives back a host taken with [`Frontier::borrow_host`]; its queue is scheduled again.
    pub fn return_host(&mut self, host: &str, how: Returned, now: Instant) -> Result<()> {
        let id = self.host_id(host, now)?;
        let policy = self.settings.politeness;
        let h = &mut self.hosts[id as usize];
        if h.in_flight && h.leased.is_none() {
            h.in_flight = false;
            self.in_flight = self.in_flight.saturating_sub(1);
        }
        match how {
            Returned::Requested => policy.on_request_done(&mut h.politeness, now),
            Returned::RateLimited { retry_after } => {
                policy.on_rate_limited(&mut h.politeness, now, retry_after);
            }
            Returned::Unused => {}
        }
        self.save_host(id, now)?;
        self.reschedule(id);
        Ok(())
    }
}
