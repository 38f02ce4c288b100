//! Postings: what a node publishes about each chunk it indexed to the owners of the chunk's
//! cells (see [`crate::placement`]), so that a question reaches that chunk by its meaning
//! whoever crawled it — and finds it while its crawler is away.
//!
//! A posting carries what a cell owner needs to answer a question without asking anyone: the
//! vector (f16), the chunk's text (for the words' ranking and the snippet), the page's
//! metadata ([`PageMeta`]) and where it came from (the publishing peer, the model). A
//! [`Tombstone`] withdraws a document's postings (replaced, removed, evicted).
//!
//! Everything a peer publishes is checked here before it is stored: sizes, a unit vector of the
//! model's dimensions, the cell it claims (the vector must belong there), and the publisher's
//! right to speak for the page: the caller passes whether the publisher owned the page's host
//! on a recent ring ([`crate::membership::Members::owned_recently`]), as for `done` URLs. Pure:
//! the event loop does the I/O and keeps the per-peer quotas.

use crate::placement::Ladder;
use crate::replicas::Replica;
use crate::signing::{self, BadSignature, SignedBytes};
use half::f16;
use serde::{Deserialize, Serialize};
use std::ops::RangeInclusive;
pub use weft_page::PageMeta;

/// A chunk's text a posting may carry, at most (a 256-token chunk is 1–2 KB).
pub const MAX_TEXT_BYTES: usize = 8 * 1024;
const MAX_TITLE_BYTES: usize = 1024;
const MAX_AUTHOR_BYTES: usize = 256;
pub use crate::placement::MAX_CELLS_PER_CHUNK;
/// Cosine below which a vector is not near enough a claimed cell (it must be among the
/// chunk's best cells; small f16 differences between nodes are allowed).
const CELL_SLACK: f32 = 0.02;

/// One chunk, as published to the owners of `cell`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Posting {
    /// The codebook the cell belongs to ([`Codebook::id`]).
    pub codebook: String,
    pub cell: u32,
    /// The embedding model's id (vectors meet only vectors of the same model).
    pub model: String,
    /// The document's id (32 hex digits, blake3 of the URL) and the chunk's position in it.
    pub doc: String,
    pub position: u32,
    #[serde(flatten)]
    pub page: PageMeta,
    /// The chunk's text.
    pub text: String,
    /// The unit vector, little-endian f16.
    #[serde(with = "serde_bytes")]
    pub vector: Vec<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// When the publisher fetched the page, Unix seconds.
    pub fetched_at: u64,
    /// The publishing peer's public key (libp2p's protobuf encoding; its peer id follows).
    #[serde(default, with = "serde_bytes")]
    pub publisher: Vec<u8>,
    /// The publisher's signature over [`Posting::signed_bytes`]: a cell's former owner hands
    /// postings on to the cell's next owners, and must not be able to change or invent them.
    #[serde(default, with = "serde_bytes")]
    pub signature: Vec<u8>,
}

/// A document's postings withdrawn by its publisher (replaced, removed or evicted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    pub doc: String,
    /// The page's URL: the publisher's right to withdraw is checked on its host, as to post.
    pub url: String,
    /// Unix seconds; postings published before it are dropped.
    pub at: u64,
}

/// Postings and tombstones in one request, at most.
pub const MAX_BATCH_ITEMS: usize = 256;
/// A batch's size on the wire, at most (256 postings of a 1–2 KB chunk and a 768-byte vector
/// fit with room to spare).
pub const MAX_BATCH_BYTES: u64 = 4 * 1024 * 1024;

/// `/weft/postings/1` request: postings for cells the receiver owns, withdrawals, and copies of
/// documents.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PostingBatch {
    pub postings: Vec<Posting>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tombstones: Vec<Tombstone>,
    /// Copies of documents whose ids the receiver owns (see [`crate::replicas`]): they travel
    /// with the postings, batched, acknowledged and retried alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<Replica>,
    /// Postings a cell's owner hands to the cell's new owner after a membership change (not its
    /// own pages): the receiver checks that the sender owned the cells, not the pages' hosts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub handover: bool,
}

impl PostingBatch {
    pub fn len(&self) -> usize {
        self.postings.len() + self.tombstones.len() + self.replicas.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `/weft/postings/1` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PostingReply {
    /// Stored `taken` (durably: the sender may forget them) and refused `refused` (each counted
    /// against the sender).
    Ack { taken: u32, refused: u32 },
    /// Not now (over the sender's rate or quota, or the store is behind): retry later.
    Busy,
    /// The sender is not a member here (yet): it announces itself and retries.
    NotMember,
}

/// `/weft/postings/1` on the wire (see [`crate::codec`]).
pub struct PostingWire;

impl crate::codec::Wire for PostingWire {
    type Request = PostingBatch;
    type Response = PostingReply;
    const NAME: &'static str = "posting batch";
    const MAX_REQUEST_BYTES: u64 = MAX_BATCH_BYTES;
    /// Replies are a few bytes.
    const MAX_RESPONSE_BYTES: u64 = 1024;
    /// Eight batches of the largest size.
    const MAX_BUFFERED_BYTES: u64 = 8 * MAX_BATCH_BYTES;
}

/// Checks a withdrawal: a document id and a URL whose host the sender owned (`owned`).
pub fn check_tombstone(t: &Tombstone, owned: impl Fn(&str) -> bool) -> Result<(), BadPosting> {
    if t.doc.len() != 32 || !t.doc.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(BadPosting::Doc(t.doc.chars().take(40).collect()));
    }
    let Some(host) = host_of(&t.url) else { return Err(BadPosting::Url(t.url.chars().take(100).collect())) };
    if !owned(&host) {
        return Err(BadPosting::NotOwner(host));
    }
    Ok(())
}

/// Why a posting was refused (the publisher is counted, and banned when it repeats).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadPosting {
    #[error("a codebook other than this node's ({0})")]
    Codebook(String),
    #[error("a model other than this node's")]
    Model,
    #[error("cell {0} is not in the codebook")]
    NoCell(u32),
    /// Not an offence: the sender counts the network bigger or smaller than this node does.
    #[error("cell {0} is of level {1}, which this node does not take postings at")]
    OtherLevel(u32, usize),
    #[error("{0} over its size limit")]
    TooLarge(&'static str),
    #[error("the vector is not a unit vector of the model's dimensions")]
    Vector,
    #[error("the vector does not belong to cell {0}")]
    WrongCell(u32),
    #[error("bad document id {0:?}")]
    Doc(String),
    #[error("bad url {0:?}")]
    Url(String),
    #[error("the publisher never owned {0}")]
    NotOwner(String),
    #[error("not signed by its publisher")]
    Signature,
}

impl Posting {
    /// The vector as f32.
    pub fn vector(&self) -> Vec<f32> {
        self.vector.chunks_exact(2).map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32()).collect()
    }

    /// What the publisher signs: every field but the cell (a chunk posted to two cells is
    /// signed once; its vector proves its cells) and the signature, each length-prefixed.
    pub fn signed_bytes(&self) -> Vec<u8> {
        let mut out = SignedBytes::new("weft-posting/1", 256 + self.text.len() + self.vector.len());
        out.field(self.codebook.as_bytes()).field(self.model.as_bytes()).field(self.doc.as_bytes());
        out.field(&self.position.to_le_bytes());
        out.page(&self.page);
        out.field(self.text.as_bytes()).field(&self.vector);
        out.optional(self.simhash.map(|h| h.to_string()).as_deref());
        out.optional(self.language.as_deref());
        out.field(&self.fetched_at.to_le_bytes()).field(&self.publisher);
        out.into_bytes()
    }

    /// Signs the posting as `key`'s (which becomes its publisher).
    pub fn sign(&mut self, key: &libp2p::identity::Keypair) {
        self.publisher = key.public().encode_protobuf();
        (self.publisher, self.signature) = signing::sign(key, &self.signed_bytes());
    }

    /// The publisher named (its signature unchecked: [`Posting::verify`] checks it).
    pub fn publisher_id(&self) -> Option<libp2p::PeerId> {
        signing::publisher_id(&self.publisher)
    }

    /// The publisher, when the signature is its own over this posting.
    pub fn verify(&self) -> Result<libp2p::PeerId, BadPosting> {
        signing::verify(&self.publisher, &self.signature, &self.signed_bytes()).map_err(|e| match e {
            BadSignature::TooLarge => BadPosting::TooLarge("signature"),
            BadSignature::Invalid => BadPosting::Signature,
        })
    }

    /// Encodes `v` as a posting's vector.
    pub fn encode_vector(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| f16::from_f32(*x).to_le_bytes()).collect()
    }
}

/// The host of a posting's URL, if it is an http(s) URL within the size limit.
pub use crate::exchange::page_host as host_of;

/// Checks a posting received for `model`, a cell of `ladder` at one of `levels` (the levels
/// this node takes postings at: [`Ladder::accepted_levels`]), and its publisher's signature.
/// `owned` says whether the publisher (the signer) may speak for the page's host — owned it
/// on a recent ring, and sent it itself, or handed on a cell it held: the caller's
/// membership knows. Returns the publisher.
pub fn check(
    p: &Posting,
    ladder: &Ladder,
    levels: RangeInclusive<usize>,
    model: &str,
    owned: impl Fn(&libp2p::PeerId, &str) -> bool,
) -> Result<libp2p::PeerId, BadPosting> {
    let (publisher, host) = check_content(p, ladder, levels, model)?;
    if !owned(&publisher, &host) {
        return Err(BadPosting::NotOwner(host));
    }
    Ok(publisher)
}

/// [`check`] without the publisher's right to the page's host: what can be checked away from
/// the membership (and is the costly part: ~130 µs a posting, the signature and the nearest
/// cells — a network event loop is not to spend 30 ms on a full batch). Returns the
/// publisher and the page's host.
///
/// A posting names its ladder by the ladder's first codebook (the one every release has
/// shipped) and its cell by the ladder's global number ([`Ladder::global`]), which says the
/// level; the cell is not signed, so a holder can place a chunk at a level the network climbs
/// to, and the vector proves the cell wherever it is posted.
pub fn check_content(
    p: &Posting,
    ladder: &Ladder,
    levels: RangeInclusive<usize>,
    model: &str,
) -> Result<(libp2p::PeerId, String), BadPosting> {
    let base = ladder.level(0);
    if p.codebook != base.id() {
        return Err(BadPosting::Codebook(base.id().to_string()));
    }
    let Some((level, cell)) = ladder.locate(p.cell) else { return Err(BadPosting::NoCell(p.cell)) };
    if !levels.contains(&level) {
        return Err(BadPosting::OtherLevel(p.cell, level));
    }
    let codebook = ladder.level(level);
    if p.model != model {
        return Err(BadPosting::Model);
    }
    if p.text.len() > MAX_TEXT_BYTES {
        return Err(BadPosting::TooLarge("text"));
    }
    if p.page.title.len() > MAX_TITLE_BYTES {
        return Err(BadPosting::TooLarge("title"));
    }
    if p.page.author.as_ref().is_some_and(|a| a.len() > MAX_AUTHOR_BYTES) {
        return Err(BadPosting::TooLarge("author"));
    }
    if p.language.as_ref().is_some_and(|l| l.len() > 16) {
        return Err(BadPosting::TooLarge("language"));
    }
    if p.doc.len() != 32 || !p.doc.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(BadPosting::Doc(p.doc.chars().take(40).collect()));
    }
    let Some(host) = host_of(&p.page.url) else { return Err(BadPosting::Url(p.page.url.chars().take(100).collect())) };
    if p.page.canonical.as_deref().is_some_and(|c| host_of(c).is_none()) {
        return Err(BadPosting::Url(p.page.canonical.clone().unwrap_or_default().chars().take(100).collect()));
    }
    if p.vector.len() != codebook.dims() * 2 {
        return Err(BadPosting::Vector);
    }
    let v = p.vector();
    let norm = weft_vecmath::norm(&v);
    if v.iter().any(|x| !x.is_finite()) || !(0.98..=1.02).contains(&norm) {
        return Err(BadPosting::Vector);
    }
    // The vector must belong to the cell it claims: among its best cells (what a small network
    // posts to), the best within a little slack (f16 rounding, another CPU's arithmetic), or
    // its spread ones (a large network's: `placement::cells_of`).
    let best = codebook.nearest(&v, MAX_CELLS_PER_CHUNK);
    let claimed = weft_vecmath::dot(codebook.cell(cell), &v);
    let last = best.last().map_or(1.0, |b| b.1);
    let spread = || crate::placement::spread(codebook, &v, MAX_CELLS_PER_CHUNK);
    if !best.iter().any(|b| b.0 == cell) && claimed < last - CELL_SLACK && !spread().iter().any(|c| c.0 == cell) {
        return Err(BadPosting::WrongCell(p.cell));
    }
    let publisher = p.verify()?;
    Ok((publisher, host))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::Codebook;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// [`super::check`] in a network of one codebook (a ladder of one level).
    fn check(
        p: &Posting,
        book: &Codebook,
        model: &str,
        owned: impl Fn(&libp2p::PeerId, &str) -> bool,
    ) -> Result<libp2p::PeerId, BadPosting> {
        super::check(p, &Ladder::new(vec![book.clone()]).unwrap(), 0..=0, model, owned)
    }

    #[test]
    fn a_posting_names_its_level_by_its_cell_and_is_taken_at_the_levels_this_node_takes() {
        // Level 1 splits each of the four cells in two (cell p's halves are 2p and 2p + 1).
        let b = book();
        let halves: Vec<Vec<f32>> = (0..4u32)
            .flat_map(|c| {
                let cell = b.cell(c).to_vec();
                let turned: Vec<f32> = cell.iter().map(|x| x * 0.9).chain([]).collect();
                let mut a = turned.clone();
                let mut z = turned;
                // Lean each half a little towards a different axis.
                let (i, j) = ((c as usize + 1) % 3, (c as usize + 2) % 3);
                a[i] += 0.3;
                z[j] += 0.3;
                [unit(&a), unit(&z)]
            })
            .collect();
        let ladder = Ladder::new(vec![b.clone(), Codebook::new(&halves).unwrap()]).unwrap();
        let v = [1.0, 0.25, 0.0];
        let fine = ladder.level(1).nearest(&unit(&v), 1)[0].0;
        let at_1 = ladder.global(1, fine);
        assert!(at_1 >= 4, "level 1's cells come after level 0's");
        let mut p = posting(&b, at_1, &v);
        p.codebook = b.id().to_string();
        let all = |_: &libp2p::PeerId, _: &str| true;
        assert!(super::check(&p, &ladder, 0..=1, "m", all).is_ok());
        assert_eq!(super::check(&p, &ladder, 0..=0, "m", all), Err(BadPosting::OtherLevel(at_1, 1)));
        // The cell is not signed: the same posting filed at level 0 is as good.
        let at_0 = ladder.nearest(0, &unit(&v), 1)[0].0;
        let again = Posting { cell: at_0, ..p.clone() };
        assert!(super::check(&again, &ladder, 0..=0, "m", all).is_ok());
        // A level-1 cell the vector is far from, and a number past the ladder.
        let far = ladder.global(1, ladder.level(1).nearest(&unit(&[-1.0, 0.0, 0.1]), 1)[0].0);
        assert_eq!(
            super::check(&Posting { cell: far, ..p.clone() }, &ladder, 0..=1, "m", all),
            Err(BadPosting::WrongCell(far))
        );
        assert_eq!(super::check(&Posting { cell: 12, ..p }, &ladder, 0..=1, "m", all), Err(BadPosting::NoCell(12)));
    }

    fn book() -> Codebook {
        Codebook::new(&[
            unit(&[1.0, 0.0, 0.0]),
            unit(&[0.0, 1.0, 0.0]),
            unit(&[0.0, 0.0, 1.0]),
            unit(&[-1.0, 0.0, 0.0]),
        ])
        .unwrap()
    }

    fn posting(book: &Codebook, cell: u32, v: &[f32]) -> Posting {
        Posting {
            codebook: book.id().to_string(),
            cell,
            model: "m".into(),
            doc: "0123456789abcdef0123456789abcdef".into(),
            position: 0,
            page: PageMeta { url: "http://a.test/p".into(), title: "P".into(), ..Default::default() },
            text: "some text".into(),
            vector: Posting::encode_vector(&unit(v)),
            simhash: None,
            language: Some("en".into()),
            fetched_at: 1,
            publisher: Vec::new(),
            signature: Vec::new(),
        }
        .signed(&key())
    }

    /// The publisher of the tests' postings.
    fn key() -> libp2p::identity::Keypair {
        libp2p::identity::Keypair::ed25519_from_bytes([7u8; 32]).unwrap()
    }

    trait Signed {
        fn signed(self, key: &libp2p::identity::Keypair) -> Self;
    }

    impl Signed for Posting {
        fn signed(mut self, key: &libp2p::identity::Keypair) -> Posting {
            self.sign(key);
            self
        }
    }

    #[test]
    fn a_well_formed_posting_from_the_hosts_owner_is_taken() {
        let b = book();
        let p = posting(&b, 0, &[1.0, 0.2, 0.0]);
        let me = key().public().to_peer_id();
        assert_eq!(check(&p, &b, "m", |who, h| *who == me && h == "a.test"), Ok(me));
        // Its second-best cell too (a chunk near a border): one signature for both.
        let mut second = posting(&b, 0, &[1.0, 0.9, 0.0]);
        second.cell = 1;
        assert_eq!(check(&second, &b, "m", |_, _| true), Ok(me));
        // It survives the wire.
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &p).unwrap();
        assert_eq!(cbor4ii::serde::from_slice::<Posting>(&bytes).unwrap(), p);
    }

    #[test]
    fn a_posting_to_one_of_its_spread_cells_is_taken_though_not_among_its_best() {
        // Cells 0–2 lie on one side of the vector, cell 3 across: its spread cells are 0, 1, 3.
        let b = Codebook::new(&[
            unit(&[0.95, 0.31, 0.0]),
            unit(&[0.9, 0.44, 0.0]),
            unit(&[0.88, 0.47, 0.05]),
            unit(&[0.8, -0.2, 0.55]),
            unit(&[-1.0, 0.0, 0.0]),
        ])
        .unwrap();
        let v = [1.0, 0.0, 0.0];
        let cells = |k| crate::placement::spread(&b, &v, k).into_iter().map(|c| c.0).collect::<Vec<_>>();
        assert_eq!(cells(3), [0, 1, 3]);
        assert!(!b.nearest(&v, MAX_CELLS_PER_CHUNK).iter().any(|c| c.0 == 3), "not among its best three");
        let all = |_: &libp2p::PeerId, _: &str| true;
        assert!(check(&posting(&b, 3, &v), &b, "m", all).is_ok());
        assert_eq!(check(&posting(&b, 4, &v), &b, "m", all), Err(BadPosting::WrongCell(4)), "neither");
    }

    #[test]
    fn a_withdrawal_needs_the_hosts_owner_and_a_document_id() {
        let t = Tombstone { doc: "0123456789abcdef0123456789abcdef".into(), url: "http://a.test/p".into(), at: 5 };
        assert_eq!(check_tombstone(&t, |h| h == "a.test"), Ok(()));
        assert_eq!(check_tombstone(&t, |_| false), Err(BadPosting::NotOwner("a.test".into())));
        let bad = Tombstone { doc: "xyz".into(), ..t.clone() };
        assert!(matches!(check_tombstone(&bad, |_| true), Err(BadPosting::Doc(_))));
        let batch = PostingBatch {
            postings: vec![posting(&book(), 0, &[1.0, 0.0, 0.0])],
            tombstones: vec![t],
            replicas: Vec::new(),
            handover: false,
        };
        let bytes = cbor4ii::serde::to_vec(Vec::new(), &batch).unwrap();
        assert_eq!(cbor4ii::serde::from_slice::<PostingBatch>(&bytes).unwrap(), batch);
        assert_eq!(batch.len(), 2);
    }

    #[test]
    fn each_rule_refuses_what_breaks_it() {
        let b = book();
        let good = posting(&b, 0, &[1.0, 0.2, 0.0]);
        let all = |_: &libp2p::PeerId, _: &str| true;
        assert_eq!(
            check(&good, &b, "m", |_, _| false),
            Err(BadPosting::NotOwner("a.test".into())),
            "a stranger's page"
        );
        assert_eq!(check(&good, &b, "other", all), Err(BadPosting::Model));
        let mut p = good.clone();
        p.codebook = "elsewhere".into();
        assert!(matches!(check(&p, &b, "m", all), Err(BadPosting::Codebook(_))));
        p = good.clone();
        p.cell = 9;
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::NoCell(9)));
        assert_eq!(
            check(&posting(&b, 3, &[1.0, 0.2, 0.0]), &b, "m", all),
            Err(BadPosting::WrongCell(3)),
            "a cell far from its vector (not among its best three)"
        );
        assert!(check(&posting(&b, 2, &[1.0, 0.2, 0.0]), &b, "m", all).is_ok(), "its third cell");
        p = good.clone();
        p.text = "x".repeat(MAX_TEXT_BYTES + 1);
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::TooLarge("text")));
        p = good.clone();
        p.vector = Posting::encode_vector(&[2.0, 0.0, 0.0]);
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Vector), "not a unit vector");
        p.vector = Posting::encode_vector(&[1.0, 0.0]);
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Vector), "other dimensions");
        p = good.clone();
        p.page.url = "javascript:alert(1)".into();
        assert!(matches!(check(&p, &b, "m", all), Err(BadPosting::Url(_))));
        p = good.clone();
        p.doc = "not hex".into();
        assert!(matches!(check(&p, &b, "m", all), Err(BadPosting::Doc(_))));
        // Changed after signing (what a cell's former owner handing it on could try), signed
        // by another key than the one it names, or not signed.
        p = good.clone();
        p.text = "words the publisher never wrote".into();
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Signature), "changed text");
        p = good.clone();
        p.fetched_at += 1;
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Signature), "a newer fetch claimed");
        p = good.clone();
        p.publisher = libp2p::identity::Keypair::generate_ed25519().public().encode_protobuf();
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Signature), "another publisher named");
        p = good.clone();
        p.signature.clear();
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Signature), "unsigned");
        p.publisher = vec![1, 2, 3];
        assert_eq!(check(&p, &b, "m", all), Err(BadPosting::Signature), "not a key");
        // Re-signed by another peer, it is that peer's posting (then its ownership is checked).
        let other = libp2p::identity::Keypair::generate_ed25519();
        let mut theirs = good.clone();
        theirs.sign(&other);
        assert_eq!(check(&theirs, &b, "m", all), Ok(other.public().to_peer_id()));
    }
}
