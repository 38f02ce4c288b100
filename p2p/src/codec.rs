//! The wire codec of Weft's request-response protocols (`/weft/urls/1`, `/weft/search/1`):
//! CBOR, with size caps — written so that a malformed or oversized request still *arrives*
//! (as [`Frame::Refused`]) instead of vanishing inside the protocol stack. libp2p's stock CBOR
//! codec turns both into a read error that the request-response behaviour only logs, which
//! would leave the sender unpunished. A malformed *reply* is a read error
//! ([`std::io::ErrorKind::InvalidData`]) that reaches the asker as an outbound failure.
//!
//! Requests are read under two bounds, because libp2p holds a half-sent request's bytes for
//! as long as its stream lives (the request timeout): an adversarial review's 90 streams, each
//! half of a 4 MB URL batch, took +357 MB. A request whose sender goes quiet for
//! [`STALL_LIMIT`] mid-request arrives as [`Refusal::Stalled`] (and bans its sender; one
//! silent from its first byte holds nothing and is only dropped),
//! and all requests of one protocol being read hold at most `W::MAX_BUFFERED_BYTES` between
//! them ([`RequestBudget`]): one that would go over is dropped — an honest sender retries.

use futures::prelude::*;
use libp2p::StreamProtocol;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a request may go without a byte before it is finished: honest senders write a
/// request in one go, so a pause this long mid-request is a stalled link or a peer holding
/// this node's buffers.
pub const STALL_LIMIT: Duration = Duration::from_secs(10);
/// Bytes read from the wire at a time.
const READ_CHUNK: usize = 16 * 1024;

/// One protocol's message types and size caps.
pub trait Wire: Send + Sync + 'static {
    type Request: Serialize + DeserializeOwned + Clone + Send + Sync + std::fmt::Debug + 'static;
    type Response: Serialize + DeserializeOwned + Send + Sync + std::fmt::Debug + 'static;
    /// What a request is called in refusals ("URL batch").
    const NAME: &'static str;
    const MAX_REQUEST_BYTES: u64;
    const MAX_RESPONSE_BYTES: u64;
    /// Bytes that requests being read may hold in all, every connection together.
    const MAX_BUFFERED_BYTES: u64;
}

/// A request as read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<R> {
    Request(R),
    /// What arrived was not a request; never sent, only read.
    Refused(Refusal),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Oversized {
        what: &'static str,
        max: u64,
    },
    Malformed {
        what: &'static str,
        error: String,
    },
    /// The sender went quiet mid-request for [`STALL_LIMIT`], after `bytes`.
    Stalled {
        what: &'static str,
        bytes: u64,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Oversized { what, max } => write!(f, "a {what} over {max} bytes"),
            Refusal::Malformed { what, error } => write!(f, "an undecodable {what} ({error})"),
            Refusal::Stalled { what, bytes } => {
                write!(f, "a {what} stalled for {} s after {bytes} bytes", STALL_LIMIT.as_secs())
            }
        }
    }
}

/// Decodes a request body (at most `W::MAX_REQUEST_BYTES` + 1 bytes were read).
pub fn decode_request<W: Wire>(bytes: &[u8]) -> Frame<W::Request> {
    if bytes.len() as u64 > W::MAX_REQUEST_BYTES {
        return Frame::Refused(Refusal::Oversized { what: W::NAME, max: W::MAX_REQUEST_BYTES });
    }
    match cbor4ii::serde::from_slice::<W::Request>(bytes) {
        Ok(r) => Frame::Request(r),
        Err(e) => Frame::Refused(Refusal::Malformed { what: W::NAME, error: e.to_string() }),
    }
}

/// The bytes held by the requests of one protocol being read, across all connections: libp2p
/// clones a codec for every connection and stream, and all clones share one budget.
#[derive(Debug)]
pub struct RequestBudget {
    max: u64,
    held: AtomicU64,
    cut: AtomicU64,
}

impl RequestBudget {
    pub fn new(max: u64) -> RequestBudget {
        RequestBudget { max, held: AtomicU64::new(0), cut: AtomicU64::new(0) }
    }

    /// Bytes held now by requests being read.
    pub fn held(&self) -> u64 {
        self.held.load(Ordering::Relaxed)
    }

    /// Requests dropped because the budget was spent.
    pub fn cut(&self) -> u64 {
        self.cut.load(Ordering::Relaxed)
    }
}

/// One request's share of a [`RequestBudget`], given back when the read ends however it ends
/// (finished, failed, or dropped by a timeout).
struct Share<'a> {
    budget: &'a RequestBudget,
    bytes: u64,
}

impl Share<'_> {
    /// Grows the share to `to` bytes; false (and unchanged) when the budget has no room.
    fn grow(&mut self, to: u64) -> bool {
        let more = to.saturating_sub(self.bytes);
        let before = self.budget.held.fetch_add(more, Ordering::Relaxed);
        if before + more > self.budget.max {
            self.budget.held.fetch_sub(more, Ordering::Relaxed);
            return false;
        }
        self.bytes = to;
        true
    }
}

impl Drop for Share<'_> {
    fn drop(&mut self) {
        self.budget.held.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Reads one request of at most `max` bytes (+1, to tell an oversized one), its memory counted
/// against `budget`: `Ok(Err(bytes))` when the sender went quiet for `stall` after `bytes`.
async fn read_bounded<T>(
    io: &mut T,
    max: u64,
    budget: &RequestBudget,
    stall: Duration,
) -> io::Result<Result<Vec<u8>, u64>>
where
    T: AsyncRead + Unpin + Send,
{
    let limit = max as usize + 1;
    let mut share = Share { budget, bytes: 0 };
    let mut bytes: Vec<u8> = Vec::new();
    let mut chunk = vec![0u8; READ_CHUNK];
    while bytes.len() < limit {
        let want = READ_CHUNK.min(limit - bytes.len());
        let n = match tokio::time::timeout(stall, io.read(&mut chunk[..want])).await {
            Ok(read) => read?,
            Err(_) => return Ok(Err(bytes.len() as u64)),
        };
        if n == 0 {
            break;
        }
        if bytes.len() + n > bytes.capacity() {
            // Capacity is what the allocator holds: count it, not the length.
            let cap = (bytes.capacity() * 2).max(bytes.len() + n).max(READ_CHUNK).min(limit);
            if !share.grow(cap as u64) {
                budget.cut.fetch_add(1, Ordering::Relaxed);
                return Err(io::Error::other("too many requests being read: this one is dropped"));
            }
            bytes.reserve_exact(cap - bytes.len());
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(Ok(bytes))
}

/// What a read of a request came to: a request, a refusal to ban its sender for, or a failed
/// stream that is nobody's fault.
fn frame_of<W: Wire>(read: Result<Vec<u8>, u64>) -> io::Result<Frame<W::Request>> {
    match read {
        // A stream closed before its first byte carries no request at all: a failed stream
        // (the sender gave up on it), not a bad request — nothing to ban anyone for. Seen
        // in `weft demo`: two members banned a third for "undecodable" empty reads.
        Ok(bytes) if bytes.is_empty() => {
            Err(io::Error::new(io::ErrorKind::UnexpectedEof, format!("an empty {} stream", W::NAME)))
        }
        Ok(bytes) => Ok(decode_request::<W>(&bytes)),
        // Nor is a stream silent from its start: it holds none of this node's buffers, and a
        // sender whose box is loaded opens a stream and writes it many seconds later: banned
        // for that, loaded honest members ban each other by the thousand and tear their views
        // of the network apart.
        Err(0) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no byte of a {} within {} s", W::NAME, STALL_LIMIT.as_secs()),
        )),
        Err(bytes) => Ok(Frame::Refused(Refusal::Stalled { what: W::NAME, bytes })),
    }
}

/// The CBOR codec of protocol `W`.
pub struct Codec<W> {
    budget: Arc<RequestBudget>,
    wire: PhantomData<W>,
}

impl<W: Wire> Codec<W> {
    /// A codec whose requests share a budget of `W::MAX_BUFFERED_BYTES`, returned too (for the
    /// node's status).
    pub fn new() -> (Codec<W>, Arc<RequestBudget>) {
        let budget = Arc::new(RequestBudget::new(W::MAX_BUFFERED_BYTES));
        (Codec { budget: budget.clone(), wire: PhantomData }, budget)
    }
}

impl<W> Clone for Codec<W> {
    fn clone(&self) -> Self {
        Codec { budget: self.budget.clone(), wire: PhantomData }
    }
}

async fn write_cbor<T, V>(io: &mut T, value: &V) -> io::Result<()>
where
    T: AsyncWrite + Unpin + Send,
    V: Serialize,
{
    let bytes = cbor4ii::serde::to_vec(Vec::new(), value).map_err(|e| io::Error::other(e.to_string()))?;
    io.write_all(&bytes).await?;
    io.close().await
}

impl<W: Wire> libp2p::request_response::Codec for Codec<W> {
    type Protocol = StreamProtocol;
    type Request = Frame<W::Request>;
    type Response = W::Response;

    async fn read_request<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Self::Request>
    where
        T: AsyncRead + Unpin + Send,
    {
        frame_of::<W>(read_bounded(io, W::MAX_REQUEST_BYTES, &self.budget, STALL_LIMIT).await?)
    }

    async fn read_response<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<W::Response>
    where
        T: AsyncRead + Unpin + Send,
    {
        let mut bytes = Vec::new();
        io.take(W::MAX_RESPONSE_BYTES + 1).read_to_end(&mut bytes).await?;
        if bytes.len() as u64 > W::MAX_RESPONSE_BYTES {
            let why = format!("a {} reply over {} bytes", W::NAME, W::MAX_RESPONSE_BYTES);
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        cbor4ii::serde::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    }

    async fn write_request<T>(&mut self, _: &StreamProtocol, io: &mut T, frame: Self::Request) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        let Frame::Request(request) = frame else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "refusals are never sent"));
        };
        write_cbor(io, &request).await
    }

    async fn write_response<T>(&mut self, _: &StreamProtocol, io: &mut T, reply: W::Response) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        write_cbor(io, &reply).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes, then silence (a sender that never finishes).
    struct ThenSilent(futures::io::Cursor<Vec<u8>>);

    impl AsyncRead for ThenSilent {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
            buf: &mut [u8],
        ) -> std::task::Poll<io::Result<usize>> {
            match std::pin::Pin::new(&mut self.0).poll_read(cx, buf) {
                std::task::Poll::Ready(Ok(0)) => std::task::Poll::Pending,
                other => other,
            }
        }
    }

    #[tokio::test]
    async fn requests_being_read_share_a_budget_and_a_stalled_one_is_told_apart() {
        const STALL: Duration = Duration::from_millis(200);
        let budget = RequestBudget::new(256 * 1024);
        // Finished requests give their share back.
        let mut done = futures::io::Cursor::new(vec![7u8; 100_000]);
        assert_eq!(read_bounded(&mut done, 1 << 20, &budget, STALL).await.unwrap().unwrap().len(), 100_000);
        assert_eq!(budget.held(), 0);
        // Oversized: one byte past the cap is read, to tell it.
        let mut big = futures::io::Cursor::new(vec![7u8; 300]);
        assert_eq!(read_bounded(&mut big, 200, &budget, STALL).await.unwrap().unwrap().len(), 201);
        // A sender that stops mid-request: told apart after STALL_LIMIT, share given back.
        let mut stalled = ThenSilent(futures::io::Cursor::new(vec![7u8; 50_000]));
        assert_eq!(read_bounded(&mut stalled, 1 << 20, &budget, STALL).await.unwrap(), Err(50_000));
        assert_eq!(budget.held(), 0);
        // Two requests hold the budget (each read dropped half-way keeps nothing).
        let mut a = ThenSilent(futures::io::Cursor::new(vec![7u8; 100_000]));
        let mut b = ThenSilent(futures::io::Cursor::new(vec![7u8; 100_000]));
        let mut c = futures::io::Cursor::new(vec![7u8; 100_000]);
        {
            let ra = read_bounded(&mut a, 1 << 20, &budget, STALL);
            let rb = read_bounded(&mut b, 1 << 20, &budget, STALL);
            futures::pin_mut!(ra, rb);
            assert!(futures::poll!(ra.as_mut()).is_pending() && futures::poll!(rb.as_mut()).is_pending());
            assert_eq!(budget.held(), 2 * 128 * 1024, "capacity is counted");
            let third = read_bounded(&mut c, 1 << 20, &budget, STALL).await;
            assert!(third.is_err(), "no room for a third");
            assert_eq!(budget.cut(), 1);
        } // both reads dropped half-way (a stream's timeout)
        assert_eq!(budget.held(), 0);
        assert!(read_bounded(&mut futures::io::Cursor::new(vec![1u8; 10]), 100, &budget, STALL).await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn an_empty_or_silent_stream_is_a_failed_read_not_a_refusal_to_ban_for() {
        use libp2p::request_response::Codec as _;
        struct Small;
        impl Wire for Small {
            type Request = Vec<u32>;
            type Response = u32;
            const NAME: &'static str = "small request";
            const MAX_REQUEST_BYTES: u64 = 64;
            const MAX_RESPONSE_BYTES: u64 = 64;
            const MAX_BUFFERED_BYTES: u64 = 1024;
        }
        let (mut codec, _) = Codec::<Small>::new();
        let protocol = StreamProtocol::new("/weft/small/1");
        let empty = codec.read_request(&protocol, &mut futures::io::Cursor::new(Vec::new())).await;
        assert_eq!(empty.map_err(|e| e.kind()), Err(io::ErrorKind::UnexpectedEof));
        // Silent from the start: a failed read, not a refusal; silent after some bytes: refused.
        assert_eq!(frame_of::<Small>(Err(0)).map_err(|e| e.kind()), Err(io::ErrorKind::TimedOut));
        assert_eq!(
            frame_of::<Small>(Err(12)).unwrap(),
            Frame::Refused(Refusal::Stalled { what: "small request", bytes: 12 })
        );
        // One byte of something else is still a bad request.
        let junk = codec.read_request(&protocol, &mut futures::io::Cursor::new(vec![0xffu8])).await.unwrap();
        assert!(matches!(junk, Frame::Refused(Refusal::Malformed { .. })));
    }
}
