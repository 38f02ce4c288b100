//! Hosts changing hands between members: giving a host's queue and done list away, taking
//! URLs other members send (hand-overs and links to this node's hosts), holding a host gained
//! until its previous owner is done with it.
//!
//! The rule that holds it together: a URL leaves a node's responsibility only when its new
//! owner has it queued or done, durably. The seen-set cannot tell "fetched here" from "given
//! away with its host" (every URL handed off stays in it), so what another member sends is
//! judged by the queue and the done list instead ([`Frontier::push_received`]).

use super::{Candidate, Frontier, HostFilter, PushOutcome, QueuedUrl, Result};
use crate::host::HostKey;
use crate::score::UrlKind;
use crate::second::SecondCopy;
use std::time::{Duration, Instant};
use url::Url;

/// What [`Frontier::hand_off`] gives away.
#[derive(Debug, Default)]
pub struct HandOff {
    /// Queued URLs, for the new owners to queue.
    pub queued: Vec<QueuedUrl>,
    /// URLs this node fetched or gave up on, for the new owners to mark seen.
    pub done: Vec<String>,
    /// Hosts given away that asked this node to back off (a 429 or 503), and how long they
    /// still wait: their new owners wait too ([`Frontier::defer_host`]), or a host that said
    /// `Retry-After: 600` to one member would be asked again by the next a second later.
    pub waits: Vec<(String, Duration)>,
}

impl HandOff {
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty() && self.done.is_empty()
    }
}

/// What became of a URL another member sent this node, the owner of its host
/// ([`Frontier::push_received`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    Queued,
    /// Queued here already (a still-queued URL gains an inlink).
    AlreadyQueued,
    /// Fetched or given up on here, or reported done by a previous owner of its host.
    AlreadyDone,
    /// Not queued, and why: [`PushOutcome::TooDeep`], `Binary`, `HostBudgetExhausted`,
    /// `Blocked`.
    Refused(PushOutcome),
}

impl Frontier {
    /// Offers a URL another member sent: a hand-over of a host this node now owns, or a link
    /// to one. Here the seen-set does not decide, the queue and the done list do: this node's
    /// seen-set also holds every URL it gave away with a host it no longer owned (and Bloom
    /// false positives), and such a URL coming back with its host is this node's to fetch.
    /// So a seen URL is queued again unless it is queued here or done here (fetched, given up
    /// on, or reported done by a previous owner: [`Frontier::mark_done`]). Nothing leaves a
    /// node's responsibility until its new owner has it queued or done (ARCHITECTURE.md).
    pub fn push_received(&mut self, c: Candidate) -> Result<Received> {
        if c.kind != UrlKind::Revisit && (self.seen.contains(c.url.as_str()) || self.seen.forgets()) {
            let url = c.url.as_str();
            let host = HostKey::of(&c.url).into_string();
            if self.store.queued_key(url, &host)?.is_some() {
                self.bump_inlinks(url, &host)?;
                return Ok(Received::AlreadyQueued);
            }
            if self.is_done(url, &host)? {
                return Ok(Received::AlreadyDone);
            }
        }
        Ok(match self.push_checked(c, false)? {
            PushOutcome::Queued => Received::Queued,
            // A revisit already queued.
            PushOutcome::AlreadySeen => Received::AlreadyQueued,
            refused => Received::Refused(refused),
        })
    }

    /// Whether `url` of `host` is done here (its host record knows it).
    pub(super) fn is_done(&self, url: &str, host: &str) -> Result<bool> {
        match self.known_id(host)? {
            Some(id) => self.store.is_done(id, url, host),
            None => Ok(false),
        }
    }

    /// Gives away the hosts for which `keep(host)` is false: in a network, the hosts this node
    /// no longer owns go to their new owner. Their queued URLs leave the queue and come back in
    /// [`HandOff::queued`]; `persist` sees them (and the done ones, the URL leased right now
    /// among them) first and must store them elsewhere (the node's
    /// outbox) before they leave, so a crash in between can repeat a URL but never lose it. The
    /// URLs this node is done with on those hosts come back in [`HandOff::done`], so the new
    /// owner does not fetch them again. A URL leased right now is not touched (its fetch
    /// finishes here); everything handed off stays in this node's seen-set, and a host that
    /// comes back waits the hand-over grace before its first request. One batch: durable
    /// with the next flush.
    pub fn hand_off(
        &mut self,
        keep: impl FnMut(&str) -> bool,
        persist: impl FnOnce(&HandOff) -> std::result::Result<(), sled::Error>,
    ) -> Result<HandOff> {
        self.give_away(keep, persist, false)
    }

    /// [`Frontier::hand_off`]; with `forget`, each URL that leaves the queue also leaves a
    /// [`SecondCopy::Forget`] note for its host's second holder, in the same batch (a block drops
    /// a host's queue: not to be crawled by the second holder should this node crash, and no
    /// crash between the two leaves it there).
    pub(super) fn give_away(
        &mut self,
        mut keep: impl FnMut(&str) -> bool,
        persist: impl FnOnce(&HandOff) -> std::result::Result<(), sled::Error>,
        forget: bool,
    ) -> Result<HandOff> {
        let now = Instant::now();
        let now_ms = weft_clock::now_ms();
        let mut entries = Vec::new();
        let mut done = Vec::new();
        let mut waits = Vec::new();
        // (host, live entries taken)
        let mut taken: Vec<(u32, u64)> = Vec::new();
        let mut given = Vec::new();
        let mut batch = self.store.batch();
        // Hosts not in memory have nothing queued: their done URLs go, and so do they.
        let mut forgotten = 0;
        for (name, record) in self.store.host_records()? {
            if self.host_ids.contains_key(&name) || keep(&name) {
                continue;
            }
            done.extend(self.store.done_of_host(record.id, &name)?);
            if record.backoff_level > 0 && record.next_allowed_unix_ms > now_ms {
                waits.push((name.clone(), Duration::from_millis(record.next_allowed_unix_ms - now_ms)));
            }
            self.store.remove_host(&mut batch, &name, record.id)?;
            self.store.forget_second_holder(&mut batch, &name);
            forgotten += 1;
        }
        for id in self.hosts.ids() {
            let h = &self.hosts[id as usize];
            if h.given_away || keep(&h.name) {
                continue;
            }
            given.push(id);
            // Its queue is its new owner's to copy; back here some day, it is written whole again.
            self.store.forget_second_holder(&mut batch, &h.name);
            done.extend(self.store.done_of_host(id, &h.name)?);
            if h.politeness.backoff_level > 0 && h.politeness.next_allowed > now {
                waits.push((h.name.clone(), h.politeness.next_allowed - now));
            }
            let leased = h.leased;
            // The URL leased right now is this node's to finish: the new owner is told it is
            // done, or it would fetch it again while this node is still indexing it.
            if let Some(key) = leased {
                if let Some(entry) = self.store.entry(&key)? {
                    done.push(entry.url(&h.name));
                }
            }
            if h.queued == 0 {
                continue;
            }
            let mut live = 0;
            for (key, entry) in self.store.entries_of_host(id)? {
                if Some(key) == leased {
                    continue;
                }
                let q = self.queued_url(id, &key, entry);
                self.store.remove_entry(&mut batch, &key, &q.url);
                entries.push(q);
                live += 1;
            }
            taken.push((id, live));
        }
        if forget && self.second.sending {
            for q in &entries {
                self.put_note(&mut batch, &SecondCopy::Forget { host: q.host.clone(), url: q.url.clone() })?;
            }
        }
        let given_away = HandOff { queued: entries, done, waits };
        persist(&given_away)?;
        for &(id, live) in &taken {
            let h = &mut self.hosts[id as usize];
            h.queued = h.queued.saturating_sub(live);
            self.put_record(&mut batch, id, now)?;
        }
        if let Err(e) = self.store.commit(batch) {
            for &(id, live) in &taken {
                self.hosts[id as usize].queued += live;
            }
            return Err(e);
        }
        self.known = self.known.saturating_sub(forgotten);
        for id in given {
            self.hosts[id as usize].given_away = true;
        }
        for (id, live) in taken {
            self.queued = self.queued.saturating_sub(live);
            self.removed_since_compact += live;
            self.reschedule(id);
        }
        Ok(given_away)
    }

    /// The member that handed this node `host` says the host asked it to back off until `until`
    /// (see [`HandOff::waits`]): it is not asked here before then either — waiting at most the
    /// longest backoff from now (`politeness.backoff_max`), since the wait comes from a peer.
    /// Durable with the next flush.
    pub fn defer_host(&mut self, host: &str, until: Instant) -> Result<()> {
        let now = Instant::now();
        let policy = self.settings.politeness;
        let id = self.host_id(host, now)?;
        policy.defer(&mut self.hosts[id as usize].politeness, until.min(now + policy.backoff_max));
        let mut batch = self.store.batch();
        self.put_record(&mut batch, id, now)?;
        self.store.commit(batch)?;
        self.reschedule(id);
        Ok(())
    }

    /// Hosts with a request in flight (a lease, or a browser's borrowed request): a node
    /// leaving keeps them until that request ends, so its host's next owner cannot ask the
    /// host closer than its delay behind it.
    pub fn busy_hosts(&self) -> Vec<String> {
        self.hosts
            .ids()
            .into_iter()
            .map(|id| &self.hosts[id as usize])
            .filter(|h| h.in_flight || h.leased.is_some())
            .map(|h| h.name.clone())
            .collect()
    }

    /// The URLs done here on `hosts` (fetched or given up on), the hosts staying this node's:
    /// a leaving node tells their next owner at once what it must not fetch again, while it
    /// finishes its last requests on them (their queues follow with [`Frontier::hand_off`]).
    pub fn done_of(&self, hosts: &std::collections::HashSet<String>) -> Result<Vec<String>> {
        let mut done = Vec::new();
        for id in self.hosts.ids() {
            let h = &self.hosts[id as usize];
            if hosts.contains(&h.name) {
                done.extend(self.store.done_of_host(id, &h.name)?);
            }
        }
        Ok(done)
    }

    /// Takes `urls` off their hosts' done lists: pages this node took off its queue but never
    /// fetched, which left with their host as queued URLs (pages waiting for the browser when
    /// their host was handed over). Left done here, the host coming back with them later would
    /// drop them as done ([`Frontier::push_received`]) and nobody would ever fetch them. Durable
    /// with the next flush; returns how many were done.
    pub fn undo_done(&mut self, urls: &[Url]) -> Result<usize> {
        let mut batch = self.store.batch();
        let mut undone = 0;
        for url in urls {
            let host = HostKey::of(url).into_string();
            let Some(id) = self.known_id(&host)? else { continue };
            if self.store.is_done(id, url.as_str(), &host)? {
                self.store.remove_done(&mut batch, id, url.as_str(), &host);
                undone += 1;
            }
        }
        self.store.commit(batch)?;
        Ok(undone)
    }

    /// A host given away is this node's again (a URL of it was queued or reported done here,
    /// which happens only for hosts this node owns): its next hand-off passes its queue and
    /// done list on, and its first request waits the hand-over grace (the member that held it
    /// may have just requested it). Done reports alone must take it back too: a host whose
    /// new owner left having queued nothing came back with only its done list, stayed given
    /// away, and the member after was told nothing of it and fetched its pages again.
    pub(super) fn take_back(&mut self, id: u32, now: Instant) {
        let grace = self.settings.politeness.handover_grace;
        let h = &mut self.hosts[id as usize];
        if std::mem::take(&mut h.given_away) {
            h.politeness.next_allowed = h.politeness.next_allowed.max(now + grace);
        }
    }

    /// Whether this node holds `host`'s queue: it knows the host and has not given it away.
    pub fn holds(&self, host: &str) -> bool {
        self.host_ids.get(host).is_some_and(|&id| !self.hosts[id as usize].given_away)
    }

    /// Holds back the hosts `pick` selects until at least `until`: in a network, hosts this node
    /// just became the owner of (their previous owner may be requesting them right now).
    pub fn hold_hosts(&mut self, mut pick: impl FnMut(&str) -> bool, until: Instant) -> usize {
        let mut held = 0;
        for id in self.hosts.ids() {
            if !pick(&self.hosts[id as usize].name) {
                continue;
            }
            let h = &mut self.hosts[id as usize];
            if h.ready_at() < until {
                h.hold_until = Some(until);
                held += 1;
                self.reschedule(id);
            }
        }
        held
    }

    /// Holds the hosts `pick` selects among those this node meets from now on until `until`
    /// too (`None`: no longer): hosts it has not heard of yet may have been crawled by the
    /// members that held them while it was away. `pick` runs under the frontier's lock.
    pub fn hold_new_hosts(&mut self, hold: Option<(Instant, HostFilter)>) {
        self.new_host_hold = hold;
    }

    /// Ends early a hold of the hosts `pick` selects (by [`Frontier::hold_hosts`] or
    /// [`Frontier::hold_new_hosts`]): they may be requested from `at` on, their politeness —
    /// delay, backoff, Retry-After — still applying. Holds only ever move earlier here.
    pub fn release_hosts(&mut self, mut pick: impl FnMut(&str) -> bool, at: Instant) -> usize {
        let mut released = 0;
        for id in self.hosts.ids() {
            if !pick(&self.hosts[id as usize].name) {
                continue;
            }
            let h = &mut self.hosts[id as usize];
            if h.hold_until.is_some_and(|until| until > at) {
                h.hold_until = Some(at);
                released += 1;
                self.reschedule(id);
            }
        }
        released
    }

    /// Records that another member already fetched `url` (it owned the host before): the URL
    /// joins the seen-set and this host's done list, so neither links to it nor a later
    /// hand-over queue it again, and it leaves the queue if a link got it there first (unless
    /// it is being fetched right now). Returns whether anything changed.
    pub fn mark_done(&mut self, url: &Url) -> Result<bool> {
        let u = url.as_str();
        let host = HostKey::of(url).into_string();
        // Known from now on, so a later hand-off passes the URL on.
        let now = Instant::now();
        let id = self.host_id(&host, now)?;
        self.take_back(id, now);
        if let Some((key, _)) = self.store.queued_key(u, &host)? {
            if self.hosts[id as usize].leased != Some(key) {
                self.remove_entry(id, &key, u, true, now)?;
                self.reschedule(id);
                return Ok(true);
            }
        }
        let seen = self.seen.contains(u);
        // Seen is not enough: this node may have seen the URL and given it away with its host
        // (then [`Frontier::push_received`] would queue it again when it comes back). Nor is
        // unseen once the seen-set forgets: the done list may hold it all the same.
        if (seen || self.seen.forgets()) && self.store.is_done(id, u, &host)? {
            return Ok(false);
        }
        let mut batch = self.store.batch();
        if !seen {
            self.store.journal(&mut batch, self.next_jseq, u);
        }
        // Passed on again should the host move on.
        self.store.put_done(&mut batch, id, u, &host);
        self.store.commit(batch)?;
        if !seen {
            self.next_jseq += 1;
            self.seen.insert(u);
        }
        Ok(true)
    }
}
