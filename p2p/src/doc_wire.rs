//! `/weft/doc/1` on the wire: reading one document from a member that holds it (see
//! [`crate::replicas`]), and the requests two holders compare their copies with (see
//! [`crate::copy_sync`]). Pure: the types and their bounds; the event loop does the I/O.

use crate::copy_sync::{Digest, Listed, MAX_LIST, MAX_SEND};
use crate::replicas::{Replica, MAX_TEXT_BYTES};
use serde::{Deserialize, Serialize};

/// A `/weft/doc/1` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DocRequest {
    /// One document by its id (32 hex digits).
    Read { doc: String },
    /// The digests of the copies the asker should hold, bucket by bucket.
    Digests,
    /// One page of what the asker should hold in `bucket`, after the id `after`.
    List { bucket: u16, after: Option<String> },
    /// Send these copies (at most [`MAX_SEND`]) as a hand-over: the asker lacks them.
    Send { docs: Vec<String> },
}

impl DocRequest {
    /// A read of one document.
    pub fn read(doc: &str) -> DocRequest {
        DocRequest::Read { doc: doc.to_string() }
    }
}

/// A `/weft/doc/1` response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DocReply {
    /// The document, as its publisher signed it.
    Found(Box<Replica>),
    /// This member holds no copy.
    Missing,
    /// Not now (over the asker's rate, or too much to send already): ask another holder, or
    /// again later.
    Busy,
    /// What [`DocRequest::Digests`] asked for.
    Digests(Vec<Digest>),
    /// What [`DocRequest::List`] asked for.
    Listed(Listed),
    /// How many of the copies [`DocRequest::Send`] asked for are on their way (the rest this
    /// member does not hold, or the asker is not their holder on its ring).
    Sending(u32),
}

/// `/weft/doc/1` on the wire (see [`crate::codec`]).
pub struct DocWire;

impl crate::codec::Wire for DocWire {
    type Request = DocRequest;
    type Response = DocReply;
    const NAME: &'static str = "document request";
    /// A request to send [`MAX_SEND`] ids (~40 bytes each).
    const MAX_REQUEST_BYTES: u64 = 64 * MAX_SEND as u64;
    /// The largest copy and its metadata (a listing of [`MAX_LIST`] ids is ~50 KiB).
    const MAX_RESPONSE_BYTES: u64 = 2 * MAX_TEXT_BYTES as u64;
    const MAX_BUFFERED_BYTES: u64 = 4 * MAX_TEXT_BYTES as u64;
}

const _: () = assert!(MAX_LIST * 64 < 2 * MAX_TEXT_BYTES);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Wire;

    fn round_trip<T: Serialize + for<'a> Deserialize<'a>>(v: &T) -> (T, usize) {
        let bytes = cbor4ii::serde::to_vec(Vec::new(), v).unwrap();
        (cbor4ii::serde::from_slice(&bytes).unwrap(), bytes.len())
    }

    #[test]
    fn every_kind_survives_the_wire_within_its_bound() {
        let doc = crate::replicas::doc_id("http://a.test/p");
        let send = DocRequest::Send { docs: vec![doc.clone(); MAX_SEND] };
        let (back, bytes) = round_trip(&send);
        assert_eq!(back, send);
        assert!(bytes as u64 <= DocWire::MAX_REQUEST_BYTES, "{bytes}");
        for r in [DocRequest::read(&doc), DocRequest::Digests, DocRequest::List { bucket: 3, after: Some(doc.clone()) }]
        {
            assert_eq!(round_trip(&r).0, r);
        }
        let listed = DocReply::Listed(Listed { entries: vec![(doc, u64::MAX); MAX_LIST], more: true });
        let (back, bytes) = round_trip(&listed);
        assert_eq!(back, listed);
        assert!(bytes as u64 <= DocWire::MAX_RESPONSE_BYTES);
        let digests = DocReply::Digests(vec![Digest { bucket: 1023, count: 9, hash: u64::MAX }; 1024]);
        assert_eq!(round_trip(&digests).0, digests);
        for r in [DocReply::Missing, DocReply::Busy, DocReply::Sending(7)] {
            assert_eq!(round_trip(&r).0, r);
        }
    }
}
