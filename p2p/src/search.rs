//! `/weft/search/1`: one node asks another for its best chunks for a query vector.
//!
//! The asker embeds the query itself and sends the vector (a few KiB), so a peer's answer
//! costs it one kNN lookup, not a model run. A peer answers from its own index only: queries
//! are never forwarded, so one query costs the network exactly the peers the asker chose.
//! Everything that arrives is checked ([`check_request`], [`check_reply`]) before it is used;
//! [`merge`] turns the answers of several peers into one ranked list.

use serde::{Deserialize, Serialize};
pub use weft_page::PageMeta;
use weft_page::PeerName;

/// Results a peer is asked for at most.
pub const MAX_K: u32 = 50;
const MAX_TITLE_BYTES: usize = 1024;
const MAX_SNIPPET_BYTES: usize = 4096;
const MAX_ALIASES: usize = 32;
/// An author's name a peer may send, at most.
pub const MAX_AUTHOR_BYTES: usize = 256;

/// A query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRequest {
    /// The asker's embedding model (an answer from another model is not comparable).
    pub model: String,
    /// The query's unit vector.
    pub vector: Vec<f32>,
    pub k: u32,
    /// The query's words, for the peer's lexical (BM25) index; peers of earlier releases
    /// neither send nor read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The longest query text a peer reads.
pub const MAX_QUERY_TEXT_BYTES: usize = 1024;

/// One document from a peer's index: its best chunk for the query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteHit {
    /// The page's address and what it says of itself (peers of earlier releases send only the
    /// URL and the title). Its fields sit at the hit's top level, as they always have.
    #[serde(flatten)]
    pub page: PageMeta,
    pub snippet: String,
    /// Cosine similarity of the query and the chunk.
    pub score: f32,
    pub chunk: u32,
    /// The document's SimHash: near duplicates on different peers are merged.
    pub simhash: Option<u64>,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The document's BM25 rank on the answering peer (1 = best) when the query's words
    /// matched it: the asker fuses it with the cosine ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lexical_rank: Option<u32>,
    /// Answered from postings: the cell the chunk was posted to, and the peer that crawled the
    /// page (peers of earlier releases send neither).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crawled_by: Option<PeerName>,
}

/// The answer to a [`SearchRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SearchReply {
    Hits(Vec<RemoteHit>),
    /// Over its rate, or its query queue is full: ask someone else.
    Busy,
    /// The request was well formed but cannot be answered (another model, bad vector).
    Refused(String),
}

/// `/weft/search/1` on the wire (see [`crate::codec`]).
pub struct SearchWire;

impl crate::codec::Wire for SearchWire {
    type Request = SearchRequest;
    type Response = SearchReply;
    const NAME: &'static str = "search request";
    /// A 4096-dimension vector in CBOR fits with room to spare.
    const MAX_REQUEST_BYTES: u64 = 64 * 1024;
    /// [`MAX_K`] hits of the largest size allowed.
    const MAX_RESPONSE_BYTES: u64 = 1024 * 1024;
    /// Sixty-four requests of the largest size (a 384-dimension query is ~2 KB).
    const MAX_BUFFERED_BYTES: u64 = 64 * 64 * 1024;
}

/// Why a query is refused; its text is sent back as [`SearchReply::Refused`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadQuery {
    #[error("this node embeds with model {ours}, the query with {theirs}")]
    Model { ours: String, theirs: String },
    #[error("a {got}-dimension vector; this node's are {dims}")]
    Dimensions { got: usize, dims: usize },
    #[error("a vector with non-finite components")]
    NotFinite,
    #[error("a vector of norm {0}, not a unit vector")]
    NotUnit(f32),
    #[error("k = {0}; allowed 1 ..= {MAX_K}")]
    K(u32),
    #[error("a query text over {MAX_QUERY_TEXT_BYTES} bytes")]
    TextTooLong,
}

/// Checks a query before answering it.
pub fn check_request(r: &SearchRequest, dims: usize, model: &str) -> Result<(), BadQuery> {
    if r.model != model {
        return Err(BadQuery::Model { ours: model.to_string(), theirs: r.model.clone() });
    }
    if r.vector.len() != dims {
        return Err(BadQuery::Dimensions { got: r.vector.len(), dims });
    }
    if r.vector.iter().any(|x| !x.is_finite()) {
        return Err(BadQuery::NotFinite);
    }
    let norm = weft_vecmath::norm(&r.vector);
    if !(0.9..=1.1).contains(&norm) {
        return Err(BadQuery::NotUnit(norm));
    }
    if r.k == 0 || r.k > MAX_K {
        return Err(BadQuery::K(r.k));
    }
    if r.text.as_ref().is_some_and(|t| t.len() > MAX_QUERY_TEXT_BYTES) {
        return Err(BadQuery::TextTooLong);
    }
    Ok(())
}

/// Why a peer's answer was not used (the peer is penalised).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BadReply {
    #[error("{got} hits for k = {k}")]
    TooMany { got: usize, k: u32 },
    #[error("score {0} is not a cosine similarity")]
    Score(f32),
    #[error("bad url {0:?}")]
    Url(String),
    #[error("{0} over its size limit")]
    TooLarge(&'static str),
    #[error("date {0:?} is not RFC 3339")]
    Date(String),
    #[error("lexical rank {0} for k = {1}")]
    LexicalRank(u32, u32),
}

fn check_url(u: &str) -> Result<(), BadReply> {
    let ok = u.len() <= crate::exchange::MAX_URL_BYTES
        && url::Url::parse(u).is_ok_and(|p| matches!(p.scheme(), "http" | "https") && p.host().is_some());
    if ok {
        Ok(())
    } else {
        Err(BadReply::Url(u.chars().take(100).collect()))
    }
}

/// Checks a peer's hits for a query of `k`.
pub fn check_reply(hits: &[RemoteHit], k: u32) -> Result<(), BadReply> {
    if hits.len() > k as usize {
        return Err(BadReply::TooMany { got: hits.len(), k });
    }
    for h in hits {
        if !h.score.is_finite() || !(-1.01..=1.01).contains(&h.score) {
            return Err(BadReply::Score(h.score));
        }
        check_url(&h.page.url)?;
        if h.page.title.len() > MAX_TITLE_BYTES {
            return Err(BadReply::TooLarge("title"));
        }
        if h.snippet.len() > MAX_SNIPPET_BYTES {
            return Err(BadReply::TooLarge("snippet"));
        }
        if h.aliases.len() > MAX_ALIASES {
            return Err(BadReply::TooLarge("alias list"));
        }
        h.aliases.iter().try_for_each(|a| check_url(a))?;
        if h.page.author.as_ref().is_some_and(|a| a.len() > MAX_AUTHOR_BYTES) {
            return Err(BadReply::TooLarge("author"));
        }
        for d in [&h.page.published, &h.page.modified].into_iter().flatten() {
            if chrono::DateTime::parse_from_rfc3339(d).is_err() {
                return Err(BadReply::Date(d.chars().take(40).collect()));
            }
        }
        if let Some(c) = &h.page.canonical {
            check_url(c)?;
        }
        if h.crawled_by.as_ref().is_some_and(|p| p.len() > 128)
            || h.cell.is_some_and(|c| c as usize >= crate::placement::MAX_CELLS)
        {
            return Err(BadReply::TooLarge("provenance"));
        }
        // A peer ranks at most a few times k documents by their words.
        if let Some(r) = h.lexical_rank.filter(|&r| r == 0 || r > k.saturating_mul(4).max(40)) {
            return Err(BadReply::LexicalRank(r, k));
        }
    }
    Ok(())
}

/// One merged result: the hit and the peer that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedHit {
    pub peer: PeerName,
    #[serde(flatten)]
    pub hit: RemoteHit,
}

/// Merges the answers of several peers: best score first, one result per URL, and documents
/// whose SimHashes are within `max_distance` bits folded into the better one as aliases.
pub fn merge(answers: Vec<(PeerName, Vec<RemoteHit>)>, k: usize, max_distance: u32) -> Vec<MergedHit> {
    let mut all = flatten(answers);
    all.sort_by(|a, b| b.hit.score.total_cmp(&a.hit.score).then_with(|| a.hit.page.url.cmp(&b.hit.page.url)));
    merge_ranked(all, k, max_distance)
}

/// Every peer's hits in one list, each with its peer.
pub fn flatten(answers: Vec<(PeerName, Vec<RemoteHit>)>) -> Vec<MergedHit> {
    answers
        .into_iter()
        .flat_map(|(peer, hits)| hits.into_iter().map(move |hit| MergedHit { peer: peer.clone(), hit }))
        .collect()
}

/// [`merge`] for hits the caller has ranked already (best first; e.g. fused with their
/// lexical ranks): one result per URL, near duplicates folded, the first `k` kept.
pub fn merge_ranked(all: Vec<MergedHit>, k: usize, max_distance: u32) -> Vec<MergedHit> {
    let mut out: Vec<MergedHit> = Vec::new();
    for m in all {
        if out.iter().any(|o| o.hit.page.url == m.hit.page.url || o.hit.aliases.contains(&m.hit.page.url)) {
            continue;
        }
        let twin = m
            .hit
            .simhash
            .and_then(|h| out.iter().position(|o| o.hit.simhash.is_some_and(|g| (g ^ h).count_ones() <= max_distance)));
        match twin {
            Some(i) => {
                let o = &mut out[i];
                o.hit.aliases.push(m.hit.page.url);
                o.hit.aliases.extend(m.hit.aliases);
                o.hit.aliases.dedup();
            }
            None if out.len() < k => out.push(m),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(url: &str, score: f32, simhash: Option<u64>) -> RemoteHit {
        RemoteHit {
            page: PageMeta { url: url.into(), title: "t".into(), ..Default::default() },
            snippet: "s".into(),
            score,
            chunk: 0,
            simhash,
            aliases: Vec::new(),
            ..Default::default()
        }
    }

    #[test]
    fn requests_are_checked() {
        let mut v = vec![0.0f32; 8];
        v[0] = 1.0;
        let good = SearchRequest { model: "m".into(), vector: v.clone(), k: 10, text: Some("a query".into()) };
        assert!(check_request(&good, 8, "m").is_ok());
        assert!(matches!(check_request(&good, 8, "other"), Err(BadQuery::Model { .. })));
        assert!(check_request(&good, 16, "m").is_err());
        let mut nan = good.clone();
        nan.vector[1] = f32::NAN;
        assert!(check_request(&nan, 8, "m").is_err());
        let mut long = good.clone();
        long.vector[1] = 3.0;
        assert!(matches!(check_request(&long, 8, "m"), Err(BadQuery::NotUnit(_))));
        assert!(check_request(&SearchRequest { k: 51, ..good.clone() }, 8, "m").is_err());
        assert!(check_request(&SearchRequest { k: 0, ..good.clone() }, 8, "m").is_err());
        assert!(check_request(&SearchRequest { text: Some("x".repeat(2000)), ..good }, 8, "m").is_err());
    }

    #[test]
    fn replies_are_checked() {
        let ok = vec![hit("http://a.test/1", 0.8, None), hit("https://b.test/", -0.2, Some(1))];
        assert!(check_reply(&ok, 2).is_ok());
        assert_eq!(check_reply(&ok, 1), Err(BadReply::TooMany { got: 2, k: 1 }));
        assert!(matches!(check_reply(&[hit("http://a.test/", f32::NAN, None)], 5), Err(BadReply::Score(_))));
        assert!(matches!(check_reply(&[hit("http://a.test/", 7.0, None)], 5), Err(BadReply::Score(_))));
        assert!(matches!(check_reply(&[hit("ftp://a.test/", 0.5, None)], 5), Err(BadReply::Url(_))));
        assert!(matches!(check_reply(&[hit("not a url", 0.5, None)], 5), Err(BadReply::Url(_))));
        let mut big = hit("http://a.test/", 0.5, None);
        big.snippet = "x".repeat(MAX_SNIPPET_BYTES + 1);
        assert_eq!(check_reply(&[big], 5), Err(BadReply::TooLarge("snippet")));
        let mut aliased = hit("http://a.test/", 0.5, None);
        aliased.aliases = vec!["javascript:alert(1)".into()];
        assert!(check_reply(&[aliased], 5).is_err());
        // What a page says of itself: RFC 3339 dates, a bounded author, a web canonical URL.
        let mut described = hit("http://a.test/", 0.5, None);
        described.page.author = Some("Ada Lovelace".into());
        described.page.published = Some("2026-03-01T09:00:00+00:00".into());
        described.page.modified = Some("2026-04-02T10:30:00-05:00".into());
        described.page.canonical = Some("https://a.test/article".into());
        assert!(check_reply(std::slice::from_ref(&described), 5).is_ok());
        let mut bad = described.clone();
        bad.page.published = Some("last Tuesday".into());
        assert_eq!(check_reply(&[bad], 5), Err(BadReply::Date("last Tuesday".into())));
        let mut bad = described.clone();
        bad.page.author = Some("x".repeat(MAX_AUTHOR_BYTES + 1));
        assert_eq!(check_reply(&[bad], 5), Err(BadReply::TooLarge("author")));
        let mut bad = described.clone();
        bad.page.canonical = Some("javascript:alert(1)".into());
        assert!(matches!(check_reply(&[bad], 5), Err(BadReply::Url(_))));
        // A BM25 rank: from 1, within a few times k.
        let mut ranked = described;
        ranked.lexical_rank = Some(3);
        assert!(check_reply(std::slice::from_ref(&ranked), 5).is_ok());
        ranked.lexical_rank = Some(0);
        assert_eq!(check_reply(std::slice::from_ref(&ranked), 5), Err(BadReply::LexicalRank(0, 5)));
        ranked.lexical_rank = Some(1_000_000);
        assert!(check_reply(&[ranked], 5).is_err());
    }

    #[test]
    fn merging_ranks_by_score_and_folds_duplicates() {
        let a = vec![hit("http://a.test/1", 0.9, Some(0b1111)), hit("http://a.test/2", 0.5, Some(0xff00))];
        let b = vec![
            hit("http://a.test/1", 0.9, Some(0b1111)),     // the same URL from another peer
            hit("http://b.test/copy", 0.85, Some(0b0111)), // one bit from a.test/1: a near duplicate
            hit("http://b.test/3", 0.7, None),
        ];
        let merged = merge(vec![("pa".into(), a), ("pb".into(), b)], 10, 3);
        let urls: Vec<&str> = merged.iter().map(|m| m.hit.page.url.as_str()).collect();
        assert_eq!(urls, ["http://a.test/1", "http://b.test/3", "http://a.test/2"]);
        assert_eq!(merged[0].hit.aliases, ["http://b.test/copy"]);
        assert_eq!(merged[0].peer, "pa");
        assert_eq!(merged[1].peer, "pb");
        assert_eq!(merge(vec![("pa".into(), vec![hit("http://x.test/", 0.1, None)])], 0, 3).len(), 0);
        let top2 = merge(
            vec![("p".into(), (0..5).map(|i| hit(&format!("http://h.test/{i}"), i as f32 / 10.0, None)).collect())],
            2,
            3,
        );
        assert_eq!(top2.iter().map(|m| m.hit.score).collect::<Vec<_>>(), [0.4, 0.3]);
    }

    /// A hit as releases before the shared [`PageMeta`] spelled it out, field by field.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct SpelledOut {
        url: String,
        title: String,
        snippet: String,
        score: f32,
        chunk: u32,
        simhash: Option<u64>,
        #[serde(default)]
        aliases: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        published: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        modified: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        canonical: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lexical_rank: Option<u32>,
    }

    #[test]
    fn peers_of_either_shape_read_each_others_hits() {
        let mut new = hit("http://a.test/p", 0.5, Some(7));
        new.page.author = Some("Ada".into());
        new.page.published = Some("2026-03-01T09:00:00+00:00".into());
        new.lexical_rank = Some(2);
        let old = SpelledOut {
            url: "http://a.test/p".into(),
            title: "t".into(),
            snippet: "s".into(),
            score: 0.5,
            chunk: 0,
            simhash: Some(7),
            aliases: Vec::new(),
            author: Some("Ada".into()),
            published: Some("2026-03-01T09:00:00+00:00".into()),
            modified: None,
            canonical: None,
            lexical_rank: Some(2),
        };
        let from_new = cbor4ii::serde::to_vec(Vec::new(), &new).unwrap();
        let from_old = cbor4ii::serde::to_vec(Vec::new(), &old).unwrap();
        assert_eq!(cbor4ii::serde::from_slice::<SpelledOut>(&from_new).unwrap(), old);
        assert_eq!(cbor4ii::serde::from_slice::<RemoteHit>(&from_old).unwrap(), new);
        // Inside a reply, as the wire carries it.
        let reply = cbor4ii::serde::to_vec(Vec::new(), &SearchReply::Hits(vec![new.clone()])).unwrap();
        assert_eq!(cbor4ii::serde::from_slice::<SearchReply>(&reply).unwrap(), SearchReply::Hits(vec![new]));
    }
}
