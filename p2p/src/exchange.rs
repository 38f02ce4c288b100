//! URL exchange (`/weft/urls/1`): URLs a node discovers for hosts another member owns travel to
//! that owner in batches; the owner validates them, queues them through its seen-set and
//! acknowledges. This file is the pure part — the wire types, their validation, the per-owner
//! outbox with its flush and retry policy, and the per-peer rate limit; the event loop in
//! [`crate::network`] moves the bytes.

/// The URLs waiting for their owners and the batches waiting to be sent again.
mod outbox;
/// How fast a peer, and newcomers together, may send.
mod rate;

pub use outbox::{Due, InFlight, Outbox};
pub use rate::{NewcomerAllowance, RateLimit};
use serde::{Deserialize, Serialize};
use std::time::Duration;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode_request, Frame, Refusal};

    fn page(url: &str) -> WireUrl {
        WireUrl::new(url, 1, UrlKind::Page)
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
