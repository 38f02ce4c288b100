//! Document copies: every document a node indexes is also held by `r` other members (the
//! owners of the document's id on the ring, `index.replicas`), so that it stays readable from
//! any node, and its page is not fetched again, after the node that crawled it is gone.
//!
//! A [`Replica`] is what reading a document needs — its metadata, main text and chunk
//! boundaries — not its vectors (the postings carry those to the cells' owners, and a copy is
//! read, not searched). It is signed by the node that fetched the page: copies travel through
//! other members (a range's former holder hands them to its new one) and a copy's holder must
//! not be able to change it. A document's place on the ring is its id's first 64 bits — the id
//! is blake3 of the URL, so ids spread evenly and a member's arcs hold a share of them.
//!
//! `/weft/doc/1` reads one document from a member that holds it (see [`crate::doc_wire`]).
//! Pure: the placement and the checks; the event loop does the I/O.

use crate::exchange::page_host;
use crate::ring::Ring;
use crate::signing::{self, BadSignature, SignedBytes};
use libp2p::PeerId;
use serde::{Deserialize, Serialize};
use weft_page::{PageFacts, PageMeta};

/// A document's main text a copy may carry, at most (the extractor's own bound is below it).
pub const MAX_TEXT_BYTES: usize = 1024 * 1024;
/// Chunks a copy may list, at most.
pub const MAX_CHUNKS: usize = 16_384;
/// Outbound links a copy may carry, at most.
pub const MAX_LINKS: usize = 500;
const MAX_FIELD_BYTES: usize = 4096;

/// A chunk's place in the main text: the byte range the model embedded (chunks overlap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
    pub tokens: u32,
}

/// One document as its copies hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replica {
    /// The document's id: 32 hex digits, the first 16 bytes of blake3 of the URL.
    pub doc: String,
    #[serde(flatten)]
    pub page: PageMeta,
    #[serde(flatten)]
    pub facts: PageFacts,
    pub word_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash: Option<u64>,
    /// The main text as extracted (paragraphs separated by blank lines).
    pub text: String,
    /// The chunks, in order.
    pub chunks: Vec<Span>,
    /// When the publisher fetched the page, Unix seconds: a newer fetch replaces an older copy.
    pub fetched_at: u64,
    /// The page's outbound links (its first [`MAX_LINKS`]): a member that indexes the page from
    /// this copy instead of fetching it follows them as if it had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<String>,
    /// The publishing peer's public key (libp2p's protobuf encoding).
    #[serde(default, with = "serde_bytes")]
    pub publisher: Vec<u8>,
    /// The publisher's signature over [`Replica::signed_bytes`].
    #[serde(default, with = "serde_bytes")]
    pub signature: Vec<u8>,
}

/// Why a copy was refused (its sender is counted, and banned when it repeats).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadReplica {
    #[error("{0} over its size limit")]
    TooLarge(&'static str),
    #[error("document id {0:?} is not its URL's")]
    Doc(String),
    #[error("bad url {0:?}")]
    Url(String),
    #[error("chunk {0} is not a range of the text")]
    Span(usize),
    #[error("the publisher never owned {0}")]
    NotOwner(String),
    #[error("not signed by its publisher")]
    Signature,
}

/// The id of the document at `url` (as `weft_index::DocId::of_url` spells it).
pub fn doc_id(url: &str) -> String {
    let hash = blake3::hash(url.as_bytes());
    hash.as_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A document's place on the ring: its id's first 64 bits. `None` for a malformed id.
pub fn doc_point(doc: &str) -> Option<u64> {
    if doc.len() != 32 {
        return None;
    }
    u64::from_str_radix(doc.get(..16)?, 16).ok()
}

/// The members that hold copies of `doc` on `ring`: the owner of its point and the next
/// distinct members clockwise, `r` in all (fewer on a smaller ring).
pub fn doc_owners(ring: &Ring, doc: &str, r: usize) -> Vec<PeerId> {
    match doc_point(doc) {
        Some(p) if r > 0 => ring.owners_of_point(p, r),
        _ => Vec::new(),
    }
}

/// The members that hold copies of `doc` published by `publisher`: its first `r` owners on
/// `ring` other than the publisher (which has the document in its own index: a copy there would
/// not survive its leaving).
pub fn doc_holders(ring: &Ring, doc: &str, r: usize, publisher: &PeerId) -> Vec<PeerId> {
    let mut owners = doc_owners(ring, doc, r + 1);
    owners.retain(|o| o != publisher);
    owners.truncate(r);
    owners
}

/// A stored copy whose bytes do not read as a copy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a stored copy cannot be read: {0}")]
pub struct UnreadableCopy(pub String);

impl Replica {
    /// What the publisher signs: every field but the signature, each length-prefixed.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut out = SignedBytes::new("weft-replica/1", 512 + self.text.len() + 12 * self.chunks.len());
        out.field(self.doc.as_bytes()).page(&self.page);
        let f = &self.facts;
        for v in [&f.description, &f.language, &f.site, &f.page_type] {
            out.optional(v.as_deref());
        }
        out.field(&self.word_count.to_le_bytes());
        out.optional(self.simhash.map(|h| h.to_string()).as_deref());
        out.field(self.text.as_bytes());
        let spans: Vec<u8> =
            self.chunks.iter().flat_map(|s| [s.start, s.end, s.tokens]).flat_map(u32::to_le_bytes).collect();
        out.field(&spans).field(&self.fetched_at.to_le_bytes());
        out.field(&(self.links.len() as u32).to_le_bytes());
        for l in &self.links {
            out.field(l.as_bytes());
        }
        out.field(&self.publisher);
        out.into_bytes()
    }

    /// Signs the copy as `key`'s (which becomes its publisher).
    pub fn sign(&mut self, key: &libp2p::identity::Keypair) {
        self.publisher = key.public().encode_protobuf();
        (self.publisher, self.signature) = signing::sign(key, &self.signed_bytes());
    }

    /// The publisher named (its signature unchecked: [`check_content`] checks it).
    pub fn publisher_id(&self) -> Option<PeerId> {
        signing::publisher_id(&self.publisher)
    }

    /// The text of chunk `i`, when it is a range of the text.
    pub fn chunk_text(&self, i: usize) -> Option<&str> {
        let s = self.chunks.get(i)?;
        self.text.get(s.start as usize..s.end as usize)
    }

    /// The copy as a holder stores it (the wire's CBOR).
    pub fn encode(&self) -> Vec<u8> {
        cbor4ii::serde::to_vec(Vec::new(), self).unwrap_or_default()
    }

    /// A stored copy read back (checked when it was received; read as data all the same).
    pub fn decode(bytes: &[u8]) -> Result<Replica, UnreadableCopy> {
        cbor4ii::serde::from_slice(bytes).map_err(|e| UnreadableCopy(e.to_string()))
    }

    /// Its size as the outbox estimates a batch.
    pub fn bytes(&self) -> usize {
        let links: usize = self.links.iter().map(|l| l.len() + 8).sum();
        self.text.len() + 12 * self.chunks.len() + links + self.page.url.len() + self.page.title.len() + 300
    }
}

/// Checks a copy a peer sent, and its publisher's signature: sizes, an http(s) URL whose id
/// the copy carries, chunks that are ranges of the text. Returns the publisher and the page's
/// host (whether the publisher may speak for that host is the caller's membership to say, as
/// for postings). Costly (the signature: ~50 µs): run it away from the event loop.
pub fn check_content(r: &Replica) -> Result<(PeerId, String), BadReplica> {
    if r.text.len() > MAX_TEXT_BYTES {
        return Err(BadReplica::TooLarge("text"));
    }
    if r.chunks.len() > MAX_CHUNKS {
        return Err(BadReplica::TooLarge("chunks"));
    }
    let f = &r.facts;
    let fields =
        [&f.description, &f.language, &f.site, &f.page_type, &r.page.author, &r.page.published, &r.page.modified];
    if r.page.title.len() > MAX_FIELD_BYTES
        || fields.iter().any(|f| f.as_ref().is_some_and(|v| v.len() > MAX_FIELD_BYTES))
    {
        return Err(BadReplica::TooLarge("metadata"));
    }
    let Some(host) = page_host(&r.page.url) else {
        return Err(BadReplica::Url(r.page.url.chars().take(100).collect()));
    };
    if r.page.canonical.as_deref().is_some_and(|c| page_host(c).is_none()) {
        return Err(BadReplica::Url(r.page.canonical.clone().unwrap_or_default().chars().take(100).collect()));
    }
    if r.doc != doc_id(&r.page.url) {
        return Err(BadReplica::Doc(r.doc.chars().take(40).collect()));
    }
    if r.links.len() > MAX_LINKS {
        return Err(BadReplica::TooLarge("links"));
    }
    if let Some(bad) = r.links.iter().find(|l| page_host(l).is_none()) {
        return Err(BadReplica::Url(bad.chars().take(100).collect()));
    }
    let mut last_start = 0;
    for (i, s) in r.chunks.iter().enumerate() {
        if s.start > s.end || s.start < last_start || r.chunk_text(i).is_none() {
            return Err(BadReplica::Span(i));
        }
        last_start = s.start;
    }
    let publisher = signing::verify(&r.publisher, &r.signature, &r.signed_bytes()).map_err(|e| match e {
        BadSignature::TooLarge => BadReplica::TooLarge("signature"),
        BadSignature::Invalid => BadReplica::Signature,
    })?;
    Ok((publisher, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn replica(url: &str) -> Replica {
        let text = "First paragraph here.\n\nSecond paragraph, longer than the first one.".to_string();
        let mut r = Replica {
            doc: doc_id(url),
            page: PageMeta { url: url.into(), title: "A page".into(), ..Default::default() },
            facts: PageFacts { language: Some("en".into()), ..Default::default() },
            word_count: 10,
            simhash: Some(7),
            chunks: vec![Span { start: 0, end: 21, tokens: 4 }, Span { start: 23, end: text.len() as u32, tokens: 8 }],
            text,
            fetched_at: 100,
            links: vec!["http://a.test/next".into()],
            publisher: Vec::new(),
            signature: Vec::new(),
        };
        r.sign(&key());
        r
    }

    fn key() -> libp2p::identity::Keypair {
        libp2p::identity::Keypair::ed25519_from_bytes([9u8; 32]).unwrap()
    }

    #[test]
    fn a_signed_copy_passes_and_survives_the_wire() {
        let r = replica("http://a.test/p");
        assert_eq!(check_content(&r), Ok((key().public().to_peer_id(), "a.test".into())));
        assert_eq!(r.chunk_text(0), Some("First paragraph here."));
        assert_eq!(Replica::decode(&r.encode()), Ok(r.clone()));
        assert!(Replica::decode(b"not cbor").is_err());
    }

    #[test]
    fn each_rule_refuses_what_breaks_it() {
        let good = replica("http://a.test/p");
        let mut r = good.clone();
        r.text.push_str(" and words the publisher never wrote");
        assert_eq!(check_content(&r), Err(BadReplica::Signature), "changed by a holder");
        r = good.clone();
        r.fetched_at += 1;
        assert_eq!(check_content(&r), Err(BadReplica::Signature), "a newer fetch claimed");
        r = good.clone();
        r.page.url = "http://b.test/p".into();
        assert!(matches!(check_content(&r), Err(BadReplica::Doc(_))), "filed under another page's id");
        r.page.url = "file:///etc/passwd".into();
        assert!(matches!(check_content(&r), Err(BadReplica::Url(_))));
        r = good.clone();
        r.chunks[1].end = 10_000;
        assert_eq!(check_content(&r), Err(BadReplica::Span(1)), "past the text");
        r = good.clone();
        r.chunks.swap(0, 1);
        assert!(matches!(check_content(&r), Err(BadReplica::Span(_))), "out of order");
        r = good.clone();
        r.text = "é".repeat(20);
        r.chunks = vec![Span { start: 0, end: 3, tokens: 1 }];
        r.sign(&key());
        assert_eq!(check_content(&r), Err(BadReplica::Span(0)), "inside a character");
        r = good.clone();
        r.links.push("javascript:alert(1)".into());
        r.sign(&key());
        assert!(matches!(check_content(&r), Err(BadReplica::Url(_))), "a link that is not a page");
        r = good.clone();
        r.links[0] = "http://a.test/elsewhere".into();
        assert_eq!(check_content(&r), Err(BadReplica::Signature), "links are signed");
        r = good.clone();
        r.text = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(check_content(&r), Err(BadReplica::TooLarge("text")));
        r = good.clone();
        r.signature.clear();
        assert_eq!(check_content(&r), Err(BadReplica::Signature), "unsigned");
    }

    #[test]
    fn a_documents_holders_are_the_owners_of_its_id() {
        let url = "http://a.test/p";
        assert_eq!(doc_point(&doc_id(url)), Some(crate::ring::host_point(url)), "the id's first 64 bits");
        assert_eq!(doc_point("xyz"), None);
        let members: Vec<PeerId> = (0..5).map(|_| PeerId::random()).collect();
        let ring = Ring::new(members.clone(), 50);
        let owners = doc_owners(&ring, &doc_id(url), 3);
        assert_eq!(owners.len(), 3);
        assert_eq!(owners[0], *ring.owner_of_point(doc_point(&doc_id(url)).unwrap()).unwrap());
        assert!(doc_owners(&ring, &doc_id(url), 0).is_empty());
        // The publisher is not one of its own document's holders: the next owner is.
        let holders = doc_holders(&ring, &doc_id(url), 3, &owners[1]);
        assert_eq!(holders.len(), 3);
        assert!(!holders.contains(&owners[1]));
        assert_eq!(&holders[..2], &[owners[0], owners[2]]);
        assert_eq!(doc_holders(&ring, &doc_id(url), 3, &PeerId::random()), owners);
        assert_eq!(doc_owners(&Ring::new(members[..2].to_vec(), 50), &doc_id(url), 3).len(), 2);
    }
}
