//! The per-owner outbox: URLs wait for their owner until a batch is full or its oldest has
//! waited [`BATCH_WAIT`]; batches not acknowledged are sent again with backoff, to the owner the
//! ring names then; hand-over markers ride on the last batch to a member.

use super::{UrlBatch, WireUrl, BATCH_URLS, BATCH_WAIT, FIRST_RETRY_DELAY, MAX_RETRY_DELAY};
use crate::ring::Ring;
use libp2p::PeerId;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// A batch that was sent and awaits its acknowledgement.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub owner: PeerId,
    pub batch: UrlBatch,
    pub attempts: u32,
}

/// URLs waiting to be sent to their owners, and batches waiting to be retried.
#[derive(Debug, Default)]
pub struct Outbox {
    /// Owner → URLs not sent yet, and when the oldest arrived.
    waiting: BTreeMap<PeerId, (Vec<WireUrl>, Instant, u8)>,
    /// Batches to send again once their time comes: (due, owner-agnostic batch, attempts).
    retries: Vec<(Instant, UrlBatch, u32)>,
    /// Members owed a hand-over marker: the batch to each that goes with it carries it, or an
    /// empty one goes alone.
    markers: BTreeSet<PeerId>,
}

impl Outbox {
    /// Adds URLs for their owners on `ring`; URLs of hosts `me` owns are returned instead.
    pub fn route(&mut self, urls: Vec<WireUrl>, hops: u8, ring: &Ring, me: &PeerId, now: Instant) -> Vec<WireUrl> {
        let mut mine = Vec::new();
        for u in urls {
            let Some(owner) = u.ring_host().and_then(|h| ring.owner(&h).copied()) else { continue };
            if owner == *me {
                mine.push(u);
            } else {
                let entry = self.waiting.entry(owner).or_insert_with(|| (Vec::new(), now, hops));
                entry.2 = entry.2.max(hops);
                entry.0.push(u);
            }
        }
        mine
    }

    /// Adds URLs received to pass on to their owners, as [`Outbox::route`] does, due at once:
    /// they waited for a batch at their sender already, and over the grid every hop would add
    /// [`BATCH_WAIT`] again.
    pub fn pass_on(&mut self, urls: Vec<WireUrl>, hops: u8, ring: &Ring, me: &PeerId, now: Instant) -> Vec<WireUrl> {
        let owners: BTreeSet<PeerId> =
            urls.iter().filter_map(|u| u.ring_host().and_then(|h| ring.owner(&h).copied())).collect();
        let mine = self.route(urls, hops, ring, me, now);
        for owner in owners {
            if let Some(entry) = self.waiting.get_mut(&owner) {
                entry.1 = entry.1.min(now.checked_sub(BATCH_WAIT).unwrap_or(entry.1));
            }
        }
        mine
    }

    /// URLs waiting (not in flight).
    pub fn waiting(&self) -> usize {
        self.waiting.values().map(|(v, _, _)| v.len()).sum::<usize>()
            + self.retries.iter().map(|(_, b, _)| b.urls.len()).sum::<usize>()
    }

    /// Batches due at `now`: full ones, ones whose oldest URL waited [`BATCH_WAIT`] (or all
    /// of them with `flush_all`), and retries whose time has come — re-routed on `ring`, so a
    /// batch whose owner left goes to the new owner. URLs `me` now owns come back in `mine`.
    pub fn due(&mut self, ring: &Ring, me: &PeerId, now: Instant, flush_all: bool) -> Due {
        let mut due = Due::default();
        // Retries first: their URLs are re-routed like new ones, keeping their attempt count.
        let (ready, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.retries).into_iter().partition(|(t, _, _)| *t <= now);
        self.retries = later;
        let mut attempts: HashMap<PeerId, u32> = HashMap::new();
        for (_, batch, n) in ready {
            for u in batch.urls {
                let Some(owner) = u.ring_host().and_then(|h| ring.owner(&h).copied()) else { continue };
                if owner == *me {
                    due.mine.push(u);
                } else {
                    let a = attempts.entry(owner).or_insert(0);
                    *a = (*a).max(n);
                    let entry = self.waiting.entry(owner).or_insert_with(|| (Vec::new(), now - BATCH_WAIT, batch.hops));
                    entry.0.push(u);
                    entry.1 = now - BATCH_WAIT; // send it now
                }
            }
        }
        let owners: Vec<PeerId> = self.waiting.keys().copied().collect();
        for owner in owners {
            let (urls, since, _) = &self.waiting[&owner];
            if !(flush_all || urls.len() >= BATCH_URLS || now.saturating_duration_since(*since) >= BATCH_WAIT) {
                continue;
            }
            let (mut urls, _, hops) = self.waiting.remove(&owner).expect("owner is waiting");
            // A ring change may have made some of them ours, or someone else's.
            let mut rest = Vec::new();
            for u in urls.drain(..) {
                match u.ring_host().and_then(|h| ring.owner(&h).copied()) {
                    Some(o) if o == *me => due.mine.push(u),
                    Some(o) if o == owner => rest.push(u),
                    Some(o) => self.waiting.entry(o).or_insert_with(|| (Vec::new(), now, hops)).0.push(u),
                    None => {}
                }
            }
            let chunks: Vec<&[WireUrl]> = rest.chunks(BATCH_URLS).collect();
            let last = chunks.len().saturating_sub(1);
            for (i, chunk) in chunks.into_iter().enumerate() {
                // The marker rides on the last batch of the hand-over.
                let handoff = i == last && self.markers.remove(&owner);
                due.batches.push(InFlight {
                    owner,
                    batch: UrlBatch { urls: chunk.to_vec(), hops, handoff, second: false },
                    attempts: attempts.get(&owner).copied().unwrap_or(0),
                });
            }
        }
        // Markers for members this node had nothing for go alone (a retried one too).
        for owner in std::mem::take(&mut self.markers) {
            if owner != *me && ring.contains(&owner) {
                due.batches.push(InFlight {
                    owner,
                    batch: UrlBatch { urls: Vec::new(), hops: 0, handoff: true, second: false },
                    attempts: 0,
                });
            }
        }
        due
    }

    /// `owners` are owed a hand-over marker with the next batch sent to them (see
    /// [`UrlBatch::handoff`]); send it with a full flush.
    pub fn mark_handoff(&mut self, owners: impl IntoIterator<Item = PeerId>) {
        self.markers.extend(owners);
    }

    /// A sent batch failed or was refused: it is retried after a backoff (re-routed then).
    pub fn retry(&mut self, failed: InFlight, now: Instant) {
        if failed.batch.handoff {
            self.markers.insert(failed.owner);
        }
        let delay = FIRST_RETRY_DELAY.saturating_mul(1 << failed.attempts.min(10)).min(MAX_RETRY_DELAY);
        self.retries.push((now + delay, failed.batch, failed.attempts + 1));
    }

    /// The owner answered `Busy` (over its rate limit, or its node is behind; after
    /// [`BUSY_DELAY`]) or `NotMember` (after [`NOT_MEMBER_DELAY`]): the batch goes again,
    /// without counting as a failure.
    pub fn retry_later(&mut self, busy: InFlight, delay: Duration, now: Instant) {
        if busy.batch.handoff {
            self.markers.insert(busy.owner);
        }
        self.retries.push((now + delay, busy.batch, busy.attempts));
    }

    /// When [`Outbox::due`] should next be asked (None: nothing waits).
    pub fn next_due(&self) -> Option<Instant> {
        let waiting = self.waiting.values().map(|(_, since, _)| *since + BATCH_WAIT);
        let retries = self.retries.iter().map(|(t, _, _)| *t);
        waiting.chain(retries).min()
    }
}

/// What [`Outbox::due`] hands out.
#[derive(Debug, Default)]
pub struct Due {
    pub batches: Vec<InFlight>,
    /// URLs that turned out to be this node's own.
    pub mine: Vec<WireUrl>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{check_batch, UrlKind};

    fn page(url: &str) -> WireUrl {
        WireUrl::new(url, 1, UrlKind::Page)
    }

    /// Three members, `a` < `b` < `c`, and their ring.
    fn ring() -> (Ring, PeerId, PeerId, PeerId) {
        let mut p: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        p.sort();
        (Ring::new(p.clone(), 150), p[0], p[1], p[2])
    }

    /// A host owned by `owner` on [`ring`].
    fn host_of(ring: &Ring, owner: &PeerId, n: usize) -> String {
        (0..).map(|i| format!("h{i}.test")).filter(|h| ring.owner(h) == Some(owner)).nth(n).unwrap()
    }

    #[test]
    fn own_urls_stay_and_others_wait_for_a_full_batch_or_five_seconds() {
        let ((r, a, b, _), t0) = (ring(), Instant::now());
        let mut out = Outbox::default();
        let (mine, theirs) = (host_of(&r, &a, 0), host_of(&r, &b, 0));
        let kept =
            out.route(vec![page(&format!("http://{mine}/x")), page(&format!("http://{theirs}/y"))], 0, &r, &a, t0);
        assert_eq!(kept, vec![page(&format!("http://{mine}/x"))]);
        assert!(out.due(&r, &a, t0 + Duration::from_secs(1), false).batches.is_empty());
        assert_eq!(out.next_due(), Some(t0 + BATCH_WAIT));
        let due = out.due(&r, &a, t0 + BATCH_WAIT, false);
        assert_eq!(due.batches.len(), 1);
        assert_eq!(due.batches[0].owner, b);
        assert_eq!(out.waiting(), 0);

        let urls: Vec<WireUrl> = (0..BATCH_URLS + 5).map(|i| page(&format!("http://{theirs}/{i}"))).collect();
        out.route(urls, 0, &r, &a, t0);
        let due = out.due(&r, &a, t0, false);
        assert_eq!(due.batches.iter().map(|b| b.batch.urls.len()).collect::<Vec<_>>(), vec![BATCH_URLS, 5]);
    }

    #[test]
    fn urls_passed_on_leave_at_once_with_what_waited_for_their_owner() {
        let ((r, a, b, c), t0) = (ring(), Instant::now() + BATCH_WAIT);
        let mut out = Outbox::default();
        let (to_b, to_c) = (host_of(&r, &b, 0), host_of(&r, &c, 0));
        out.route(vec![page(&format!("http://{to_b}/own")), page(&format!("http://{to_c}/own"))], 0, &r, &a, t0);
        let mine = out.pass_on(vec![page(&format!("http://{to_b}/passed"))], 2, &r, &a, t0);
        assert!(mine.is_empty());
        // The batch for b leaves now, with the URL of this node's own that waited for it and
        // the hops of the one passed on; c's waits its five seconds.
        let due = out.due(&r, &a, t0, false);
        assert_eq!(due.batches.len(), 1);
        assert_eq!((due.batches[0].owner, due.batches[0].batch.hops, due.batches[0].batch.urls.len()), (b, 2, 2));
        assert_eq!(out.next_due(), Some(t0 + BATCH_WAIT));
    }

    #[test]
    fn hand_over_markers_ride_on_the_last_batch_or_go_alone() {
        let ((r, a, b, c), t0) = (ring(), Instant::now());
        let mut out = Outbox::default();
        let to_b = host_of(&r, &b, 0);
        out.mark_handoff([b, c]);
        out.route(vec![page(&format!("http://{to_b}/1")), page(&format!("http://{to_b}/2"))], 0, &r, &a, t0);
        let mut due = out.due(&r, &a, t0, true).batches;
        due.sort_by_key(|x| x.owner);
        assert_eq!(due.len(), 2);
        assert_eq!((due[0].owner, due[0].batch.urls.len(), due[0].batch.handoff), (b, 2, true));
        assert_eq!((due[1].owner, due[1].batch.urls.len(), due[1].batch.handoff), (c, 0, true));
        assert_eq!(check_batch(&due[1].batch), Ok(()), "an empty marker is a valid batch");
        // A marker whose batch failed goes again with the retry.
        let failed = due.remove(0);
        out.retry(failed, t0);
        let again = out.due(&r, &a, t0 + FIRST_RETRY_DELAY, false).batches;
        assert!(again.iter().any(|f| f.owner == b && f.batch.handoff && f.batch.urls.len() == 2), "{again:?}");
    }

    #[test]
    fn failed_batches_are_retried_with_backoff_and_rerouted_when_the_owner_leaves() {
        let ((r, a, b, c), t0) = (ring(), Instant::now());
        let mut out = Outbox::default();
        let theirs = host_of(&r, &b, 0);
        out.route(vec![page(&format!("http://{theirs}/y"))], 0, &r, &a, t0);
        let failed = out.due(&r, &a, t0, true).batches.remove(0);
        out.retry(failed, t0);
        assert!(out.due(&r, &a, t0 + Duration::from_secs(1), false).batches.is_empty(), "not before the backoff");
        let again = out.due(&r, &a, t0 + FIRST_RETRY_DELAY, false).batches.remove(0);
        assert_eq!((again.owner, again.attempts), (b, 1));
        out.retry(again, t0 + FIRST_RETRY_DELAY);
        assert_eq!(out.next_due(), Some(t0 + FIRST_RETRY_DELAY * 3), "doubled");
        // b leaves: the retry goes to whoever owns the host now.
        let smaller = Ring::new([a, c], 150);
        let due = out.due(&smaller, &a, t0 + FIRST_RETRY_DELAY * 3, false);
        let owner = smaller.owner(&theirs).unwrap();
        if *owner == a {
            assert_eq!(due.mine.len(), 1);
        } else {
            assert_eq!(due.batches[0].owner, c);
        }
    }
}
