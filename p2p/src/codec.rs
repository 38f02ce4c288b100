//! The wire codec of Weft's request-response protocols (`/weft/urls/1`, `/weft/search/1`):
//! CBOR, with size caps — written so that a malformed or oversized request still *arrives*
//! (as [`Frame::Refused`]) instead of vanishing inside the protocol stack. libp2p's stock CBOR
//! codec turns both into a read error that the request-response behaviour only logs, which
//! would leave the sender unpunished. A malformed *reply* is a read error
//! ([`std::io::ErrorKind::InvalidData`]) that reaches the asker as an outbound failure.

use futures::prelude::*;
use libp2p::StreamProtocol;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::io;
use std::marker::PhantomData;

/// One protocol's message types and size caps.
pub trait Wire: Send + Sync + 'static {
    type Request: Serialize + DeserializeOwned + Clone + Send + Sync + std::fmt::Debug + 'static;
    type Response: Serialize + DeserializeOwned + Send + Sync + std::fmt::Debug + 'static;
    /// What a request is called in refusals ("URL batch").
    const NAME: &'static str;
    const MAX_REQUEST_BYTES: u64;
    const MAX_RESPONSE_BYTES: u64;
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
    Oversized { what: &'static str, max: u64 },
    Malformed { what: &'static str, error: String },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Oversized { what, max } => write!(f, "a {what} over {max} bytes"),
            Refusal::Malformed { what, error } => write!(f, "an undecodable {what} ({error})"),
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

/// The CBOR codec of protocol `W`.
pub struct Codec<W>(PhantomData<W>);

impl<W> Default for Codec<W> {
    fn default() -> Self {
        Codec(PhantomData)
    }
}

impl<W> Clone for Codec<W> {
    fn clone(&self) -> Self {
        Codec(PhantomData)
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
        let mut bytes = Vec::new();
        io.take(W::MAX_REQUEST_BYTES + 1).read_to_end(&mut bytes).await?;
        Ok(decode_request::<W>(&bytes))
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
    use crate::exchange::{UrlBatch, UrlKind, UrlWire, WireUrl, MAX_BATCH_BYTES};

    #[test]
    fn batches_round_trip_and_garbage_or_size_is_refused_not_an_error() {
        let batch =
            UrlBatch { urls: vec![WireUrl::new("http://a.test/", 2, UrlKind::Sitemap)], hops: 1, handoff: false };
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &batch).unwrap();
        assert_eq!(decode_request::<UrlWire>(&bytes), Frame::Request(batch));
        assert!(matches!(decode_request::<UrlWire>(b"\xff\xfe garbage"), Frame::Refused(Refusal::Malformed { .. })));
        let cut = decode_request::<UrlWire>(&bytes[..bytes.len() - 3]);
        assert!(matches!(cut, Frame::Refused(Refusal::Malformed { .. })));
        let big = vec![0u8; MAX_BATCH_BYTES as usize + 1];
        assert!(matches!(decode_request::<UrlWire>(&big), Frame::Refused(Refusal::Oversized { .. })));
    }
}
