//! Documents read back: what the index holds about a page — its metadata, its full main text
//! and its chunks with their neighbours — for the API, the export and LLM tools. Search gives
//! ranked snippets; this gives the whole thing.
//!
//! The main text is not stored twice: chunks are byte ranges of it, stored in order with their
//! overlap, so the text is their union ([`main_text`]). A listing pages through the documents
//! in key order (the key is a hash of the URL, so the order is stable and says nothing), with
//! the last id of a page as the cursor of the next: a listing survives documents being added
//! or replaced between pages, which an offset would not.

use crate::store::{ChunkRecord, DocStore};
use crate::{DocId, DocRecord, DocState, IndexError, PageFacts, PageMeta};
use serde::{Deserialize, Serialize};

/// Documents a listing page holds at most.
pub const MAX_PAGE: usize = 1000;

/// A document with everything known of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentView {
    #[serde(flatten)]
    pub meta: DocumentMeta,
    /// The main text as extracted (paragraphs separated by blank lines); empty for an alias
    /// or a failed document.
    pub text: String,
    pub chunks: Vec<ChunkView>,
}

/// What a document is, without its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentMeta {
    /// 32 hex digits: the first 16 bytes of blake3 of the normalized URL — the same on every
    /// node.
    pub id: String,
    /// The page's address and what it says of itself.
    #[serde(flatten)]
    pub page: PageMeta,
    /// Its description, language, site name and page type.
    #[serde(flatten)]
    pub facts: PageFacts,
    /// When this node fetched it, RFC 3339 (UTC).
    pub fetched_at: String,
    pub word_count: u32,
    /// The SimHash of the text, 16 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simhash: Option<String>,
    /// `indexed`, `alias` (a near duplicate of `alias_of`, not embedded) or `failed`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// URLs recorded as near duplicates of this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    pub chunk_count: usize,
}

/// One chunk: what the model embedded and where it sits in the text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkView {
    /// The chunk's key (16 hex digits; also its key in the vector index).
    pub key: String,
    pub position: u32,
    /// Byte range in the main text (chunks overlap).
    pub start: u32,
    pub end: u32,
    pub tokens: u32,
    /// Keys of the chunks before and after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    pub text: String,
}

/// Which documents a listing wants.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Only this host (`name` or `name:port`, as in the URL).
    pub host: Option<String>,
    /// Only documents fetched at or after this moment, seconds since the Unix epoch.
    pub since: Option<u64>,
    /// Start after this document id (the previous page's `next_cursor`).
    pub cursor: Option<String>,
    pub limit: usize,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentPage {
    pub documents: Vec<DocumentMeta>,
    /// Pass it as `cursor` for the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A malformed document id or cursor.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0:?} is not a document id (32 hex digits)")]
pub struct BadId(pub String);

impl DocId {
    /// Reads [`DocId::hex`] back.
    pub fn parse_hex(s: &str) -> Result<DocId, BadId> {
        let bad = || BadId(s.chars().take(80).collect());
        if s.len() != 32 || !s.is_ascii() {
            return Err(bad());
        }
        let mut id = [0u8; 16];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(DocId(id))
    }
}

/// A moment as listings take it: RFC 3339 or Unix seconds.
pub fn parse_moment(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Some(secs);
    }
    chrono::DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp().max(0) as u64)
}

/// RFC 3339 (UTC, seconds) of a Unix time.
pub fn rfc3339(unix_secs: u64) -> String {
    chrono::DateTime::from_timestamp(unix_secs as i64, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The metadata of a stored document.
pub fn meta(store: &DocStore, id: &DocId, r: &DocRecord) -> Result<DocumentMeta, IndexError> {
    let (state, alias_of, failure) = match &r.state {
        DocState::Indexed => ("indexed", None, None),
        DocState::Alias { canonical, .. } => {
            let url = store.doc(canonical)?.map(|c| c.url).unwrap_or_else(|| canonical.hex());
            ("alias", Some(url), None)
        }
        DocState::Failed { reason } => ("failed", None, Some(reason.clone())),
    };
    Ok(DocumentMeta {
        id: id.hex(),
        page: r.page(),
        facts: r.facts(),
        fetched_at: rfc3339(r.fetched_at),
        word_count: r.word_count,
        simhash: r.simhash.map(|h| format!("{h:016x}")),
        state: state.into(),
        alias_of,
        failure,
        aliases: r.aliases.clone(),
        chunk_count: r.chunks.len(),
    })
}

/// The document `id` with its text and chunks, if the index holds it.
pub fn document(store: &DocStore, id: &DocId) -> Result<Option<DocumentView>, IndexError> {
    let Some(record) = store.doc(id)? else { return Ok(None) };
    let mut chunks = Vec::with_capacity(record.chunks.len());
    for key in &record.chunks {
        let c = store.chunk(*key)?.ok_or_else(|| IndexError::Corrupt(format!("chunk {key:016x} of {}", record.url)))?;
        chunks.push((*key, c));
    }
    let text = main_text(chunks.iter().map(|(_, c)| c))?;
    let chunks = chunks
        .into_iter()
        .map(|(key, c)| {
            Ok(ChunkView {
                key: format!("{key:016x}"),
                position: c.position,
                start: c.start,
                end: c.end,
                tokens: c.tokens,
                prev: c.prev.map(|k| format!("{k:016x}")),
                next: c.next.map(|k| format!("{k:016x}")),
                text: c.text()?,
            })
        })
        .collect::<Result<Vec<_>, IndexError>>()?;
    Ok(Some(DocumentView { meta: meta(store, id, &record)?, text, chunks }))
}

/// The text the chunks were cut from: each chunk's part past the end of the one before (they
/// overlap by design). A gap — never made by the chunker, but a record is data — becomes a
/// paragraph break.
pub fn main_text<'a>(chunks: impl IntoIterator<Item = &'a ChunkRecord>) -> Result<String, IndexError> {
    let mut text = String::new();
    let mut covered = 0usize;
    for c in chunks {
        let (start, end) = (c.start as usize, c.end as usize);
        if end <= covered {
            continue;
        }
        let t = c.text()?;
        if start >= covered {
            if !text.is_empty() && start > covered {
                text.push_str("\n\n");
            }
            text.push_str(&t);
        } else {
            let skip = covered - start;
            match t.get(skip..) {
                Some(rest) => text.push_str(rest),
                None => return Err(IndexError::Corrupt(format!("chunk range {start}..{end} does not fit its text"))),
            }
        }
        covered = end;
    }
    Ok(text)
}

/// The host of a URL as listings filter it (`name` or `name:port`).
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}

/// One page of documents that `want` selects, in key order.
pub fn list(store: &DocStore, want: &Listing) -> Result<DocumentPage, IndexError> {
    let limit = want.limit.clamp(1, MAX_PAGE);
    let after = match &want.cursor {
        Some(c) => Some(DocId::parse_hex(c).map_err(|e| IndexError::Corrupt(e.to_string()))?),
        None => None,
    };
    let host = want.host.as_deref().map(str::to_ascii_lowercase);
    let mut documents = Vec::new();
    let mut next_cursor = None;
    for item in store.docs_after(after.as_ref()) {
        let (id, record) = item?;
        if host.as_deref().is_some_and(|h| !host_of(&record.url).eq_ignore_ascii_case(h)) {
            continue;
        }
        if want.since.is_some_and(|s| record.fetched_at < s) {
            continue;
        }
        if documents.len() == limit {
            next_cursor = documents.last().map(|d: &DocumentMeta| d.id.clone());
            break;
        }
        documents.push(meta(store, &id, &record)?);
    }
    Ok(DocumentPage { documents, next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_and_bad_ones_are_refused() {
        let id = DocId::of_url("https://a.test/x");
        assert_eq!(DocId::parse_hex(&id.hex()), Ok(id));
        assert!(DocId::parse_hex("zz").is_err());
        assert!(DocId::parse_hex(&"g".repeat(32)).is_err());
        assert!(DocId::parse_hex("ééééééééééééééé1").is_err(), "not ASCII, not a panic");
    }

    #[test]
    fn the_main_text_is_the_union_of_overlapping_chunks() {
        let text = "One two three. Four five six. Seven eight nine.";
        let id = DocId::of_url("https://a.test/");
        let chunk = |p: u32, s: usize, e: usize| ChunkRecord::new(id, p, s, e, 3, &text[s..e]);
        let chunks = [chunk(0, 0, 29), chunk(1, 15, 47)];
        assert_eq!(main_text(chunks.iter()).unwrap(), text);
        assert_eq!(main_text([chunk(0, 0, 14), chunk(1, 15, 29)].iter()).unwrap(), "One two three.\n\nFour five six.");
        assert_eq!(main_text([chunk(0, 0, 29), chunk(1, 4, 20)].iter()).unwrap(), &text[..29], "inside: nothing");
    }

    #[test]
    fn hosts_are_read_from_urls() {
        assert_eq!(host_of("https://a.test:8080/x?y"), "a.test:8080");
        assert_eq!(host_of("http://u:p@b.test#f"), "b.test");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse_moment("1970-01-01T00:01:00+00:00"), Some(60));
        assert_eq!(parse_moment(" 42 "), Some(42));
        assert_eq!(parse_moment("yesterday"), None);
    }
}
