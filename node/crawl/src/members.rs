//! The crawler's side of hosts changing hands between members: URLs other members send
//! (queued, done, or sent on to their owner by now), holds on hosts gained, and giving hosts
//! away with their queues, done URLs and pages waiting for the browser.

use super::{Crawler, WaitingPage};
use crate::metrics::{inc, Event, Render};
use crate::storage::{blocking, StorageFault};
use std::collections::HashSet;
use url::Url;
use weft_fetch::page::FetchedPage;
use weft_frontier::{Candidate, UrlKind};
use weft_url::HostKey;

impl Crawler {
    /// Queues URLs whose hosts this node owns (sent by other members): not routed again, not
    /// filtered by this run's seed hosts, judged by the queue and the done list rather than the
    /// seen-set ([`weft_frontier::Frontier::push_received`]: a URL given away with its host and
    /// got back is queued again). Each URL's fate is counted (`/status` `received`).
    ///
    /// A URL whose host another member owns by now goes on to it. Ownership is read under the
    /// frontier's lock, which a ring change's hand-off takes too, so a URL is handed off by the
    /// change or goes to the new owner — never left with a node that no longer owns its host.
    ///
    /// Returns, once durable, how many were taken and the URLs sent on (journaled in the outbox
    /// again: the caller must not forget them); an error: nothing is durable (acknowledge none).
    pub async fn add_owned(&self, candidates: Vec<Candidate>) -> Result<(u32, Vec<String>), StorageFault> {
        let metrics = self.inner.metrics.clone();
        let not_mine = |c: &Candidate| {
            self.inner.route.as_ref().is_some_and(|r| r.owner(&HostKey::of(&c.url).into_string()).is_some())
        };
        let (accepted, elsewhere) = blocking(|| {
            let mut accepted = 0;
            let mut elsewhere = Vec::new();
            let mut frontier = self.inner.frontier.lock();
            for c in candidates {
                if not_mine(&c) {
                    elsewhere.push(c);
                    continue;
                }
                match frontier.push_received(c) {
                    Ok(fate) => {
                        if fate == weft_frontier::Received::Queued {
                            inc(&metrics.urls_queued);
                        }
                        metrics.received.pushed(&fate);
                        accepted += 1;
                    }
                    Err(e) => self.inner.storage.error("frontier push", e),
                }
            }
            (accepted, elsewhere)
        });
        let mut accepted = accepted;
        let sent_on: Vec<String> = elsewhere.iter().map(|c| c.url.to_string()).collect();
        if !elsewhere.is_empty() {
            // Journaled and sent to their owners (durable with the flush below, before the
            // sender hears back); any the ring gave back to this node meanwhile are queued.
            metrics.received.forwarded(elsewhere.len() as u64);
            accepted += elsewhere.len() as u32;
            let back = blocking(|| self.inner.routed(elsewhere));
            blocking(|| {
                let mut frontier = self.inner.frontier.lock();
                for c in back {
                    if let Err(e) = frontier.push_received(c) {
                        self.inner.storage.error("frontier push", e);
                    }
                }
            });
        }
        self.inner.flush().await?;
        self.inner.control.wake();
        Ok((accepted, sent_on))
    }

    /// Hosts handed to this node that asked their previous owner to back off, and until when
    /// (unix seconds): not asked here before then either, within this node's longest backoff
    /// (see [`weft_frontier::Frontier::defer_host`]).
    pub fn defer_hosts(&self, waits: Vec<(String, u64)>) {
        if waits.is_empty() {
            return;
        }
        let now_unix = weft_clock::now_secs();
        blocking(|| {
            let mut frontier = self.inner.frontier.lock();
            for (host, until) in waits {
                let wait = std::time::Duration::from_secs(until.saturating_sub(now_unix));
                if let Err(e) = frontier.defer_host(&host, std::time::Instant::now() + wait) {
                    self.inner.storage.error("frontier defer", e);
                }
            }
        });
    }

    /// Holds back the hosts `pick` selects for `grace` (see [`Frontier::hold_hosts`]).
    pub fn hold_hosts(&self, pick: impl FnMut(&str) -> bool, grace: std::time::Duration) -> usize {
        let held = blocking(|| self.inner.frontier.lock().hold_hosts(pick, std::time::Instant::now() + grace));
        self.inner.control.wake();
        held
    }

    /// Ends the hand-over hold of the hosts `pick` selects from `at` on (see
    /// [`Frontier::release_hosts`]).
    pub fn release_hosts(&self, pick: impl FnMut(&str) -> bool, at: std::time::Instant) -> usize {
        let released = blocking(|| self.inner.frontier.lock().release_hosts(pick, at));
        self.inner.control.wake();
        released
    }

    /// Holds the hosts this node meets from now on until `until` too (see
    /// [`Frontier::hold_new_hosts`]).
    pub fn hold_new_hosts(&self, hold: Option<(std::time::Instant, weft_frontier::HostFilter)>) {
        blocking(|| self.inner.frontier.lock().hold_new_hosts(hold));
        self.inner.control.wake();
    }

    /// Marks URLs the previous owner of their host already fetched as seen (see
    /// [`Frontier::mark_done`]); returns how many, once durable.
    ///
    /// As in [`Crawler::add_owned`], a URL whose host another member owns by now is passed on
    /// to it (journaled; returned, so the caller does not forget it): recorded here, the owner
    /// would never learn it was fetched and fetch it again.
    pub async fn mark_done(&self, urls: Vec<url::Url>) -> Result<(u32, Vec<String>), StorageFault> {
        if urls.is_empty() {
            return Ok((0, Vec::new()));
        }
        let n = urls.len() as u32;
        let (elsewhere, here) = blocking(|| {
            let mut elsewhere = Vec::new();
            let mut here = Vec::new();
            let mut frontier = self.inner.frontier.lock();
            for u in urls {
                let owned_elsewhere =
                    self.inner.route.as_ref().is_some_and(|r| r.owner(&HostKey::of(&u).into_string()).is_some());
                if owned_elsewhere {
                    elsewhere.push(u);
                } else {
                    if let Err(e) = frontier.mark_done(&u) {
                        self.inner.storage.error("frontier mark done", e);
                    }
                    here.push(u);
                }
            }
            (elsewhere, here)
        });
        self.drop_renders_done_elsewhere(&here);
        self.inner.metrics.received.done_reported(u64::from(n) - elsewhere.len() as u64);
        self.inner.metrics.received.forwarded(elsewhere.len() as u64);
        if let Some(route) = &self.inner.route {
            for u in &elsewhere {
                blocking(|| route.forward_done(u));
            }
        }
        self.inner.flush().await?;
        Ok((n, elsewhere.iter().map(|u| u.to_string()).collect()))
    }

    /// Pages waiting for the browser that another member reports fetched leave the render
    /// queue, unless this node holds their HTML (it fetched them too, and renders from it
    /// without asking the host again). A page of a host that renders waits there unfetched —
    /// the browser fetches it — and stays when a done report takes it off the frontier's
    /// queue: random churn seed 29 caught a restarted node rendering three pages the member
    /// that had held its host meanwhile had fetched and reported done.
    fn drop_renders_done_elsewhere(&self, done: &[url::Url]) {
        let Some(r) = &self.inner.renders else { return };
        if done.is_empty() {
            return;
        }
        let urls: HashSet<&str> = done.iter().map(url::Url::as_str).collect();
        let hosts: HashSet<String> = done.iter().map(|u| HostKey::of(u).into_string()).collect();
        let waiting = r.waiting(&mut |h| hosts.contains(h));
        let (gone, stay): (Vec<WaitingPage>, Vec<WaitingPage>) =
            waiting.into_iter().partition(|w| urls.contains(w.url.as_str()) && r.held_page(w).is_none());
        if !gone.is_empty() {
            tracing::debug!(pages = gone.len(), "pages waiting for the browser were fetched by another member");
            for _ in &gone {
                self.inner.metrics.count_event(Event::Render(Render::DoneElsewhere));
            }
        }
        r.forget(&gone);
        r.release(&stay);
    }

    /// Gives away the hosts for which `keep(host)` is false: their queued URLs, after `persist`
    /// has stored them, and the URLs done on them (see [`Frontier::hand_off`]); durable when
    /// this returns. Pages of those hosts waiting for the browser are part of their queue:
    /// those not fetched yet go as queued URLs (the new owner fetches and decides for itself),
    /// not as done. Those whose HTML this node fetched stay done and are indexed here from that
    /// HTML, without the browser: handed over they would be fetched a second time, and
    /// rendered here the browser's requests (scripts) would reach a host another node now
    /// crawls, closer than its delay.
    pub async fn hand_off(
        &self,
        mut keep: impl FnMut(&str) -> bool,
        persist: impl FnOnce(&weft_frontier::HandOff) -> Result<(), sled::Error>,
    ) -> weft_frontier::HandOff {
        let waiting = self.inner.renders.as_ref().map(|r| r.waiting(&mut |h| !keep(h))).unwrap_or_default();
        // Pages whose HTML this node fetched, and pages never fetched.
        let mut held: Vec<(WaitingPage, FetchedPage)> = Vec::new();
        let mut renders: Vec<WaitingPage> = Vec::new();
        for w in waiting {
            match self.inner.renders.as_ref().and_then(|r| blocking(|| r.held_page(&w))) {
                Some(page) => held.push((w, page)),
                None => renders.push(w),
            }
        }
        // Pages fetched here whose processing has not ended: the frontier holds them done only
        // once it has, and the marker that ends the hand-over goes at once — the new owner,
        // reaching the host by a link or its sitemap, fetched them again (a newcomer admitted
        // mid-crawl, 20 live nodes: nine pages of one host). They go as done now.
        let processing = self.processing_on(|host| !keep(host));
        let mut handed: Option<weft_frontier::HandOff> = None;
        let unfetched: Vec<url::Url> = renders.iter().map(|w| w.url.clone()).collect();
        let result = blocking(|| {
            let mut frontier = self.inner.frontier.lock();
            let given = frontier.hand_off(keep, |given| {
                let rendering: HashSet<&str> = unfetched.iter().map(Url::as_str).collect();
                let mut all = weft_frontier::HandOff {
                    queued: given.queued.clone(),
                    done: given.done.iter().filter(|u| !rendering.contains(u.as_str())).cloned().collect(),
                    waits: given.waits.clone(),
                };
                for (w, _) in &held {
                    if !all.done.iter().any(|u| u.as_str() == w.url.as_str()) {
                        all.done.push(w.url.to_string());
                    }
                }
                for url in &processing {
                    if !all.done.contains(url) && !rendering.contains(url.as_str()) {
                        all.done.push(url.clone());
                    }
                }
                for w in &renders {
                    all.queued.push(weft_frontier::QueuedUrl {
                        host: HostKey::of(&w.url).into_string(),
                        url: w.url.to_string(),
                        kind: UrlKind::Page,
                        depth: w.depth,
                        inlinks: 0,
                        score: 0.0,
                        attempts: 0,
                        redirects: Vec::new(),
                        discovered_unix_ms: w.queued_unix * 1000,
                    });
                }
                persist(&all)?;
                handed = Some(all);
                Ok(())
            })?;
            // They went as queued: done here, they would be dropped as done should their host
            // come back with them.
            frontier.undo_done(&unfetched)?;
            Ok::<_, weft_frontier::FrontierError>(given)
        });
        if let Err(e) = result {
            self.inner.storage.error("frontier hand-off", e);
            if let Some(r) = &self.inner.renders {
                r.release(&renders);
                r.release(&held.into_iter().map(|(w, _)| w).collect::<Vec<_>>());
            }
            return weft_frontier::HandOff::default();
        }
        let _ = self.inner.flush().await;
        if let (Some(r), Some(_)) = (&self.inner.renders, &handed) {
            r.forget(&renders);
            if !held.is_empty() {
                tracing::debug!(
                    pages = held.len(),
                    "pages waiting for the browser, of hosts handed over: indexed from their HTML"
                );
                // Here, not on a task of their own: nothing of the crawl outlives the node.
                for (w, page) in held {
                    self.process_rendered(page).await;
                    r.forget(std::slice::from_ref(&w));
                }
            }
        }
        handed.unwrap_or_default()
    }

    /// Before this node leaves the network: the browser takes no further page. What still
    /// waits for it goes with its host ([`Crawler::hand_off`]: a page whose HTML is here is
    /// indexed from it, one never fetched goes to the host's new owner as queued); the pages
    /// being rendered now finish.
    pub fn close_renders(&self) {
        if let Some(r) = &self.inner.renders {
            r.close();
        }
    }

    /// Hosts this node is requesting right now — a fetch in flight, a browser's request, a
    /// page being rendered: a leaving node hands them over only once those end, so their next
    /// owner does not ask them closer than their delay behind this node.
    pub fn busy_hosts(&self) -> std::collections::HashSet<String> {
        let mut busy: std::collections::HashSet<String> =
            blocking(|| self.inner.frontier.lock().busy_hosts()).into_iter().collect();
        if let Some(r) = &self.inner.renders {
            busy.extend(r.hosts_rendering());
        }
        busy
    }

    /// Pages fetched here on the hosts `pick` selects whose processing has not ended yet.
    fn processing_on(&self, mut pick: impl FnMut(&str) -> bool) -> Vec<String> {
        let processing = self.inner.processing.lock();
        processing.iter().filter(|p| pick(&p.host)).map(|p| p.url.clone()).collect()
    }

    /// The URLs done here on `hosts` (see [`weft_frontier::Frontier::done_of`]), and those
    /// fetched whose processing has not ended yet: a leaving node tells its busy hosts' next
    /// owner at once: a page still in the indexer's queue (seconds, under load) when a link
    /// reaches that owner would be fetched twice.
    pub fn done_of(&self, hosts: &std::collections::HashSet<String>) -> Vec<String> {
        let mut done = match blocking(|| self.inner.frontier.lock().done_of(hosts)) {
            Ok(done) => done,
            Err(e) => {
                self.inner.storage.error("frontier done list", e);
                Vec::new()
            }
        };
        let processing = self.processing_on(|host| hosts.contains(host));
        done.extend(processing.into_iter().filter(|url| !done.contains(url)).collect::<Vec<_>>());
        let unfetched = self.waiting_unfetched(hosts);
        done.retain(|u| !unfetched.contains(u));
        done
    }

    /// Pages of `hosts` waiting for the browser that this node never fetched (the browser
    /// fetches a rendering host's pages itself). The frontier holds them done — they left its
    /// queue for the browser's — but nobody has fetched them: they go to the host's next owner
    /// as queued ([`Crawler::hand_off`]), and told done first, that owner dropped them as done
    /// when they came (random churn seed 29 in CI: seven pages of the rendering host lost,
    /// their leaving node's browser still busy on the host when it told the done list). Pages
    /// being rendered now are not among them: their render fetches them.
    fn waiting_unfetched(&self, hosts: &std::collections::HashSet<String>) -> HashSet<String> {
        let Some(r) = &self.inner.renders else { return HashSet::new() };
        let waiting = r.waiting(&mut |h| hosts.contains(h));
        let unfetched =
            waiting.iter().filter(|w| blocking(|| r.held_page(w)).is_none()).map(|w| w.url.to_string()).collect();
        r.release(&waiting);
        unfetched
    }

    /// Hosts of the pages the browser is rendering now.
    pub fn hosts_rendering(&self) -> Vec<String> {
        self.inner.renders.as_ref().map_or_else(Vec::new, |r| r.hosts_rendering())
    }
}
