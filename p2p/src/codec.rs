//! The wire codec of `/weft/urls/1`: CBOR, with a size cap — written so that a malformed or
//! oversized request still *arrives* (as [`Frame::Refused`]) instead of vanishing inside the
//! protocol stack. libp2p's stock CBOR codec turns both into a read error that the
//! request-response behaviour only logs, which would leave the sender unpunished.

use crate::exchange::{BatchReply, UrlBatch, MAX_BATCH_BYTES};
use futures::prelude::*;
use libp2p::StreamProtocol;
use std::io;

/// Largest reply read (replies are a few bytes).
const MAX_REPLY_BYTES: u64 = 1024;

/// A request as read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Batch(UrlBatch),
    /// What arrived was not a batch; never sent, only read.
    Refused(Refusal),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Oversized,
    Malformed(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Oversized => write!(f, "a URL batch over {MAX_BATCH_BYTES} bytes"),
            Refusal::Malformed(e) => write!(f, "an undecodable URL batch ({e})"),
        }
    }
}

/// Decodes a request body (at most [`MAX_BATCH_BYTES`] + 1 bytes were read).
pub fn decode_request(bytes: &[u8]) -> Frame {
    if bytes.len() as u64 > MAX_BATCH_BYTES {
        return Frame::Refused(Refusal::Oversized);
    }
    match cbor4ii::serde::from_slice::<UrlBatch>(bytes) {
        Ok(batch) => Frame::Batch(batch),
        Err(e) => Frame::Refused(Refusal::Malformed(e.to_string())),
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct UrlCodec;

impl libp2p::request_response::Codec for UrlCodec {
    type Protocol = StreamProtocol;
    type Request = Frame;
    type Response = BatchReply;

    async fn read_request<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<Frame>
    where
        T: AsyncRead + Unpin + Send,
    {
        let mut bytes = Vec::new();
        io.take(MAX_BATCH_BYTES + 1).read_to_end(&mut bytes).await?;
        Ok(decode_request(&bytes))
    }

    async fn read_response<T>(&mut self, _: &StreamProtocol, io: &mut T) -> io::Result<BatchReply>
    where
        T: AsyncRead + Unpin + Send,
    {
        let mut bytes = Vec::new();
        io.take(MAX_REPLY_BYTES).read_to_end(&mut bytes).await?;
        cbor4ii::serde::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
    }

    async fn write_request<T>(&mut self, _: &StreamProtocol, io: &mut T, frame: Frame) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        let Frame::Batch(batch) = frame else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "only batches are sent"));
        };
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &batch).map_err(|e| io::Error::other(e.to_string()))?;
        io.write_all(&bytes).await?;
        io.close().await
    }

    async fn write_response<T>(&mut self, _: &StreamProtocol, io: &mut T, reply: BatchReply) -> io::Result<()>
    where
        T: AsyncWrite + Unpin + Send,
    {
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &reply).map_err(|e| io::Error::other(e.to_string()))?;
        io.write_all(&bytes).await?;
        io.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::{UrlKind, WireUrl};

    #[test]
    fn batches_round_trip_and_garbage_or_size_is_refused_not_an_error() {
        let batch = UrlBatch {
            urls: vec![WireUrl { url: "http://a.test/".into(), depth: 2, kind: UrlKind::Sitemap }],
            hops: 1,
        };
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &batch).unwrap();
        assert_eq!(decode_request(&bytes), Frame::Batch(batch));
        assert!(matches!(decode_request(b"\xff\xfe garbage"), Frame::Refused(Refusal::Malformed(_))));
        assert!(matches!(decode_request(&bytes[..bytes.len() - 3]), Frame::Refused(Refusal::Malformed(_))));
        let big = vec![0u8; MAX_BATCH_BYTES as usize + 1];
        assert_eq!(decode_request(&big), Frame::Refused(Refusal::Oversized));
    }
}
