//! URL exchange (`/weft/urls/1`): URLs a node discovers for hosts another member owns travel to
//! that owner in batches; the owner validates them, queues them through its seen-set and
//! acknowledges. This file is the pure part — the wire types, their validation, the per-owner
//! outbox with its flush and retry policy, and the per-peer rate limit; the event loop in
//! [`crate::network`] moves the bytes.

use crate::ring::Ring;
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// A batch is sent once it holds this many URLs...
pub const BATCH_URLS: usize = 1000;
/// ...or its oldest URL has waited this long.
pub const BATCH_WAIT: Duration = Duration::from_secs(5);
/// Longest URL accepted (the frontier's own limit).
pub const MAX_URL_BYTES: usize = 2048;
/// Largest encoded batch accepted: 1000 URLs of the longest kind, with room to spare.
pub const MAX_BATCH_BYTES: u64 = 4 * 1024 * 1024;
pub use crate::grid::{GRID_HOPS, MAX_HOPS};
/// First retry of an unacknowledged batch; doubles up to [`MAX_RETRY_DELAY`].
pub const FIRST_RETRY_DELAY: Duration = Duration::from_secs(2);
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(120);
/// How long a batch answered `Busy` waits before it is sent again.
pub const BUSY_DELAY: Duration = Duration::from_millis(250);
/// A batch the owner refused because the sender is not a member in its roster yet is sent again
/// after this (a digest round: an admission reaches every member in a few).
pub const NOT_MEMBER_DELAY: Duration = Duration::from_secs(2);
/// Batches a peer may send per second on average (burst of twice that).
pub const BATCHES_PER_SEC: f64 = 20.0;
/// Page URLs a member takes from all the newcomers it watches on their way in, per hour (see
/// [`NewcomerAllowance`]), and at once.
pub const NEWCOMER_URLS_PER_HOUR: f64 = 3600.0;
pub const NEWCOMER_URLS_BURST: f64 = BATCH_URLS as f64;

/// What a URL is for the crawler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UrlKind {
    Page,
    Sitemap,
    /// Already fetched (or given up on) by the previous owner of its host: the new owner marks
    /// it seen and does not fetch it. Sent when hosts change hands.
    Done,
}

/// One URL on the wire, with what the crawl needs to keep its limits across nodes.
///
/// A URL is parsed once per node on its way: the sender's crawl built it parsed
/// ([`WireUrl::parsed`] keeps that), the receiver's [`check_url`] parses it once and keeps the
/// result; routing on the ring and queueing use the kept URL. Equality and hashing are over
/// what goes on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireUrl {
    pub url: String,
    pub depth: u32,
    pub kind: UrlKind,
    /// In a hand-over: the host asked its previous owner to back off (a 429 or 503, its
    /// `Retry-After`) until this time, unix seconds; its new owner waits too — at most its own
    /// longest backoff (`politeness.backoff_max_secs`) from when it reads it, so a peer can delay
    /// a host's crawl, not stop it. Absent otherwise (and from older senders).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_wait_until: Option<u64>,
    /// The URL parsed, when this node has parsed it already (never on the wire).
    #[serde(skip)]
    parsed: Option<url::Url>,
}

impl WireUrl {
    /// A URL as read from storage or a peer: parsed when first needed.
    pub fn new(url: impl Into<String>, depth: u32, kind: UrlKind) -> WireUrl {
        WireUrl { url: url.into(), depth, kind, host_wait_until: None, parsed: None }
    }

    /// A URL this node has parsed already.
    pub fn parsed(url: url::Url, depth: u32, kind: UrlKind) -> WireUrl {
        WireUrl { url: url.to_string(), depth, kind, host_wait_until: None, parsed: Some(url) }
    }

    /// The same URL, telling its host's new owner to wait until `until` (unix seconds).
    pub fn with_host_wait(mut self, until: Option<u64>) -> WireUrl {
        self.host_wait_until = until;
        self
    }

    /// The parsed URL, parsing it only if this node has not yet.
    pub fn url(&self) -> Option<std::borrow::Cow<'_, url::Url>> {
        match &self.parsed {
            Some(u) => Some(std::borrow::Cow::Borrowed(u)),
            None => url::Url::parse(&self.url).ok().map(std::borrow::Cow::Owned),
        }
    }

    /// Takes the parsed URL out (parsing it if needed).
    pub fn into_url(self) -> Option<url::Url> {
        match self.parsed {
            Some(u) => Some(u),
            None => url::Url::parse(&self.url).ok(),
        }
    }

    /// The host this URL belongs to on the ring (see [`weft_url::HostKey::name`]).
    pub fn ring_host(&self) -> Option<String> {
        self.url().map(|u| weft_url::HostKey::of(&u).name().to_string())
    }
}

impl PartialEq for WireUrl {
    fn eq(&self, other: &Self) -> bool {
        (&self.url, self.depth, self.kind) == (&other.url, other.depth, other.kind)
    }
}

impl Eq for WireUrl {}

impl std::hash::Hash for WireUrl {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (&self.url, self.depth, self.kind).hash(state);
    }
}

/// `/weft/urls/1` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlBatch {
    pub urls: Vec<WireUrl>,
    /// How many times these URLs were forwarded already.
    pub hops: u8,
    /// The sender's hand-over after the receiver joined: what it queued and did for the hosts
    /// the receiver now owns is in this batch (possibly nothing). The receiver waits for it
    /// before requesting those hosts (see the node's `routing`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub handoff: bool,
    /// Second copies (see `weft_frontier::SecondCopy`): notes from the owner of these URLs'
    /// hosts to the hosts' second holder, not URLs to queue. A `Page` or `Sitemap` is queued
    /// at the owner (the receiver keeps it aside), a `Done` is done there (the receiver keeps
    /// it no longer). Sent to one member and never forwarded.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub second: bool,
}

/// A member keeps second copies ([`UrlBatch::second`]) of the hosts for which it is among the
/// first this many members on its ring: the second holder itself, and one more for a ring
/// that has not yet taken a join the sender's has.
pub const SECOND_HOLDER_WITHIN: usize = 3;

/// `/weft/urls/1` on the wire (see [`crate::codec`]).
pub struct UrlWire;

impl crate::codec::Wire for UrlWire {
    type Request = UrlBatch;
    type Response = BatchReply;
    const NAME: &'static str = "URL batch";
    const MAX_REQUEST_BYTES: u64 = MAX_BATCH_BYTES;
    /// Replies are a few bytes.
    const MAX_RESPONSE_BYTES: u64 = 1024;
    /// Sixteen batches of the largest size (a typical batch of 1000 URLs is ~100 KB).
    const MAX_BUFFERED_BYTES: u64 = 16 * MAX_BATCH_BYTES;
}

/// `/weft/urls/1` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum BatchReply {
    /// Queued (or already seen) `accepted` URLs, forwarded `forwarded`, dropped `rejected`.
    Ack { accepted: u32, forwarded: u32, rejected: u32 },
    /// Not now (rate limit, shutting down): the sender retries later.
    Busy,
    /// The sender is not a member here (yet): only members may send URLs, or a stranger could
    /// queue and steer this node's crawl. A newcomer whose admission has not reached this
    /// node's roster yet retries after [`NOT_MEMBER_DELAY`].
    NotMember,
}

/// Why a batch is refused outright (and its sender banned for a while).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidBatch {
    #[error("{0} URLs in one batch (at most {BATCH_URLS})")]
    TooMany(usize),
    #[error("an empty batch")]
    Empty,
    #[error("hop count {0} over the limit of {MAX_HOPS}")]
    TooManyHops(u8),
}

/// Why one URL of a valid batch is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadUrl {
    TooLong,
    Unparseable,
    Scheme,
    NoHost,
    /// An IP literal in a loopback/private/link-local range, from a node that does not allow
    /// private networks.
    Private,
}

/// The host (as the ring places it) of a page's URL that a peer sent, if it is an http(s) URL
/// within [`MAX_URL_BYTES`].
pub fn page_host(url: &str) -> Option<String> {
    if url.len() > MAX_URL_BYTES {
        return None;
    }
    let parsed = url::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())?;
    Some(weft_url::HostKey::of(&parsed).name().to_string())
}

/// Checks a batch's shape. Individual URLs are checked with [`check_url`].
pub fn check_batch(batch: &UrlBatch) -> Result<(), InvalidBatch> {
    if batch.urls.is_empty() && !batch.handoff {
        return Err(InvalidBatch::Empty);
    }
    if batch.urls.len() > BATCH_URLS {
        return Err(InvalidBatch::TooMany(batch.urls.len()));
    }
    if batch.hops > MAX_HOPS {
        return Err(InvalidBatch::TooManyHops(batch.hops));
    }
    Ok(())
}

/// Parses one received URL: http(s), with a host, at most [`MAX_URL_BYTES`]; IP literals in
/// private ranges are refused unless `allow_private`. (Hostnames that *resolve* to private
/// addresses are caught by the fetcher's SSRF guard at connect time.)
pub fn check_url(u: &mut WireUrl, allow_private: bool) -> Result<(), BadUrl> {
    if u.url.len() > MAX_URL_BYTES {
        return Err(BadUrl::TooLong);
    }
    let url = url::Url::parse(&u.url).map_err(|_| BadUrl::Unparseable)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(BadUrl::Scheme);
    }
    // The fetcher's SSRF table: a peer cannot queue what a link could not.
    let private = match url.host() {
        None => return Err(BadUrl::NoHost),
        Some(host) => weft_url::address::host_reason(&host).is_some(),
    };
    if private && !allow_private {
        return Err(BadUrl::Private);
    }
    u.parsed = Some(url);
    Ok(())
}

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

/// A token bucket per peer: `per_sec` requests on average, bursts of twice that
/// ([`BATCHES_PER_SEC`] by default).
#[derive(Debug)]
pub struct RateLimit {
    per_sec: f64,
    buckets: HashMap<String, (f64, Instant)>,
    /// The map's size at which idle buckets are dropped next (amortized: it doubles).
    prune_at: usize,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit::new(BATCHES_PER_SEC)
    }
}

impl RateLimit {
    pub fn new(per_sec: f64) -> RateLimit {
        RateLimit { per_sec, buckets: HashMap::new(), prune_at: 1024 }
    }

    /// Takes a token for `peer`; false when it is over its rate.
    pub fn allow(&mut self, peer: &str, now: Instant) -> bool {
        let burst = self.per_sec * 2.0;
        if self.buckets.len() >= self.prune_at {
            // A bucket idle long enough to have filled up is the same as no bucket: dropping
            // it changes no answer, and peers come and go (so would the map, for ever).
            let refill = std::time::Duration::from_secs_f64(burst / self.per_sec);
            self.buckets.retain(|_, (_, last)| now.saturating_duration_since(*last) < refill);
            self.prune_at = (self.buckets.len() * 2).max(1024);
        }
        let (tokens, last) = self.buckets.entry(peer.to_string()).or_insert((burst, now));
        *tokens = (*tokens + now.saturating_duration_since(*last).as_secs_f64() * self.per_sec).min(burst);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// How many page URLs a member takes from newcomers, all of them together.
///
/// A newcomer on its probation is on no ring, and its owners refuse its URLs; its user's seeds
/// go to a would-be monitor instead, which routes them as its own. One bucket for every
/// newcomer, not one each: identities cost nothing, so a crowd of them gets no more than one.
/// A newcomer over it waits, and sends its URLs itself once it is a member.
#[derive(Debug)]
pub struct NewcomerAllowance {
    tokens: f64,
    last: Instant,
}

impl NewcomerAllowance {
    pub fn new(now: Instant) -> NewcomerAllowance {
        NewcomerAllowance { tokens: NEWCOMER_URLS_BURST, last: now }
    }

    /// Takes `urls` URLs' worth; false (and nothing taken) when the allowance is short.
    pub fn take(&mut self, urls: usize, now: Instant) -> bool {
        let per_sec = NEWCOMER_URLS_PER_HOUR / 3600.0;
        self.tokens =
            (self.tokens + now.saturating_duration_since(self.last).as_secs_f64() * per_sec).min(NEWCOMER_URLS_BURST);
        self.last = now;
        if self.tokens >= urls as f64 {
            self.tokens -= urls as f64;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_request, Frame, Refusal};

    #[test]
    fn newcomers_share_one_allowance_that_refills_over_the_hour() {
        let t0 = Instant::now();
        let mut a = NewcomerAllowance::new(t0);
        assert!(a.take(BATCH_URLS, t0), "a full batch at once");
        assert!(!a.take(1, t0), "then nothing");
        let later = t0 + Duration::from_secs(12);
        assert!(!a.take(13, later), "twelve seconds refill twelve URLs, not thirteen");
        assert!(a.take(12, later));
        // Never more than the burst, however long it waited.
        let much_later = later + Duration::from_secs(86_400);
        assert!(!a.take(BATCH_URLS + 1, much_later));
        assert!(a.take(BATCH_URLS, much_later));
    }

    fn page(url: &str) -> WireUrl {
        WireUrl::new(url, 1, UrlKind::Page)
    }

    #[test]
    fn rate_limit_buckets_of_peers_gone_quiet_are_dropped() {
        let mut r = RateLimit::new(10.0);
        let t0 = Instant::now();
        for i in 0..1024 {
            assert!(r.allow(&format!("p{i}"), t0));
        }
        // Two seconds later every bucket is full again: the next new peer prunes them all.
        let t1 = t0 + std::time::Duration::from_secs(2);
        assert!(r.allow("new", t1));
        assert_eq!(r.buckets.len(), 1);
        // A busy peer keeps its (spent) bucket through a prune.
        for _ in 0..20 {
            r.allow("busy", t1);
        }
        assert!(!r.allow("busy", t1));
        for i in 0..1100 {
            r.allow(&format!("q{i}"), t1);
        }
        assert!(!r.allow("busy", t1), "still over its rate");
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

    #[test]
    fn batches_and_urls_are_validated() {
        assert_eq!(
            check_batch(&UrlBatch { urls: vec![], hops: 0, handoff: false, second: false }),
            Err(InvalidBatch::Empty)
        );
        let many =
            UrlBatch { urls: vec![page("http://a.test/"); BATCH_URLS + 1], hops: 0, handoff: false, second: false };
        assert_eq!(check_batch(&many), Err(InvalidBatch::TooMany(BATCH_URLS + 1)));
        assert_eq!(
            check_batch(&UrlBatch {
                urls: vec![page("http://a.test/")],
                hops: MAX_HOPS + 1,
                handoff: false,
                second: false
            }),
            Err(InvalidBatch::TooManyHops(MAX_HOPS + 1))
        );
        let last = UrlBatch { urls: vec![page("http://a.test/")], hops: MAX_HOPS, handoff: false, second: false };
        assert_eq!(check_batch(&last), Ok(()));
        assert!(check_url(&mut page("https://a.test/x"), false).is_ok());
        assert_eq!(check_url(&mut page("ftp://a.test/"), false), Err(BadUrl::Scheme));
        assert_eq!(check_url(&mut page("not a url"), false), Err(BadUrl::Unparseable));
        assert_eq!(check_url(&mut page(&format!("http://a.test/{}", "x".repeat(3000))), false), Err(BadUrl::TooLong));
        // The last seven got through before the batch check used the fetcher's table.
        for private in [
            "http://127.0.0.1/",
            "http://10.1.2.3/",
            "http://192.168.0.1/",
            "http://[::1]/",
            "http://localhost/",
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://100.64.0.1/",
            "http://0.1.2.3/",
            "http://224.0.0.1/",
            "http://240.0.0.1/",
            "http://[2002:7f00:1::]/",
        ] {
            assert_eq!(check_url(&mut page(private), false), Err(BadUrl::Private), "{private}");
            assert!(check_url(&mut page(private), true).is_ok());
        }
    }

    #[test]
    fn the_rate_limit_allows_a_burst_then_the_average() {
        let (mut rl, t0) = (RateLimit::default(), Instant::now());
        let burst = (0..100).filter(|_| rl.allow("p", t0)).count();
        assert_eq!(burst, (BATCHES_PER_SEC * 2.0) as usize);
        assert!(!rl.allow("p", t0));
        assert!(rl.allow("q", t0), "per peer");
        assert!(rl.allow("p", t0 + Duration::from_millis(100)), "refilled");
    }

    #[test]
    fn batches_round_trip_and_garbage_or_size_is_refused_not_an_error() {
        let batch = UrlBatch {
            urls: vec![WireUrl::new("http://a.test/", 2, UrlKind::Sitemap)],
            hops: 1,
            handoff: false,
            second: false,
        };
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &batch).unwrap();
        assert_eq!(decode_request::<UrlWire>(&bytes), Frame::Request(batch));
        assert!(matches!(decode_request::<UrlWire>(b"\xff\xfe garbage"), Frame::Refused(Refusal::Malformed { .. })));
        let cut = decode_request::<UrlWire>(&bytes[..bytes.len() - 3]);
        assert!(matches!(cut, Frame::Refused(Refusal::Malformed { .. })));
        let big = vec![0u8; MAX_BATCH_BYTES as usize + 1];
        assert!(matches!(decode_request::<UrlWire>(&big), Frame::Refused(Refusal::Oversized { .. })));
    }

    #[test]
    fn a_host_s_wait_rides_with_its_urls_and_batches_without_one_read_as_before() {
        // A sender that never heard of the field: a URL is its three fields.
        #[derive(serde::Serialize)]
        struct Before {
            url: String,
            depth: u32,
            kind: UrlKind,
        }
        #[derive(serde::Serialize)]
        struct BatchBefore {
            urls: Vec<Before>,
            hops: u8,
            handoff: bool,
        }
        let old = BatchBefore {
            urls: vec![Before { url: "http://a.test/".into(), depth: 1, kind: UrlKind::Page }],
            hops: 0,
            handoff: false,
        };
        let Frame::Request(read) = decode_request::<UrlWire>(&cbor4ii::serde::to_vec(Vec::new(), &old).unwrap()) else {
            panic!("an older sender's batch is refused")
        };
        assert_eq!(read.urls[0].host_wait_until, None);
        assert!(!read.second, "an older sender's batch holds URLs to queue");
        // Without a wait nothing more goes on the wire; with one, it arrives.
        let plain = cbor4ii::serde::to_vec(Vec::new(), &WireUrl::new("http://a.test/", 1, UrlKind::Page)).unwrap();
        assert_eq!(plain, cbor4ii::serde::to_vec(Vec::new(), &old.urls[0]).unwrap());
        let waiting = UrlBatch {
            urls: vec![WireUrl::new("http://a.test/", 1, UrlKind::Page).with_host_wait(Some(1_800_000_300))],
            hops: 0,
            handoff: true,
            second: false,
        };
        let Frame::Request(read) = decode_request::<UrlWire>(&cbor4ii::serde::to_vec(Vec::new(), &waiting).unwrap())
        else {
            panic!("refused")
        };
        assert_eq!(read.urls[0].host_wait_until, Some(1_800_000_300));
    }
}
