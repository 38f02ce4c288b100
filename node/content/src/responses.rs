//! The HTTP responses a node keeps (`crawl.keep_responses`, off by default), so that what it
//! crawled can leave as WARC, the archivists' format (`weft export --format warc`): the status
//! line, the headers as received, the request that was sent and the body — the latest response
//! of each page, keyed by the page's document id.
//!
//! Kept in the node's own database (a `responses` tree), so the disk quota counts them: a check
//! over quota evicts the oldest documents and then the responses whose document went with them
//! ([`ResponseStore::keep_only`]). Each record is postcard, LZ4-compressed (HTML compresses 4–8×).
//!
//! The body is stored as reqwest handed it over: decoded when the server sent it gzip- or
//! brotli-encoded. The headers that described the encoding no longer fit it, so the WARC writer
//! drops `Content-Encoding` and `Transfer-Encoding` and sets `Content-Length` to the body kept.

use serde::{Deserialize, Serialize};
use weft_index::DocId;

/// The request a response answered, and the response, as kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeptResponse {
    pub url: String,
    /// When the response arrived, milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    pub status: u16,
    /// Response headers in the order received (names lowercase, as HTTP/2 and reqwest have them).
    pub headers: Vec<(String, String)>,
    /// The request headers sent (beside `Host`, which the URL gives).
    pub request_headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// [`KeptResponse`] as JSON (`GET /documents/{id}/response`): the body in base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseJson {
    pub url: String,
    pub fetched_at_ms: u64,
    pub version: String,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub request_headers: Vec<(String, String)>,
    pub body_base64: String,
}

impl From<KeptResponse> for ResponseJson {
    fn from(r: KeptResponse) -> ResponseJson {
        use base64::Engine;
        ResponseJson {
            body_base64: base64::engine::general_purpose::STANDARD.encode(&r.body),
            url: r.url,
            fetched_at_ms: r.fetched_at_ms,
            version: r.version,
            status: r.status,
            headers: r.headers,
            request_headers: r.request_headers,
        }
    }
}

impl TryFrom<ResponseJson> for KeptResponse {
    type Error = anyhow::Error;

    fn try_from(j: ResponseJson) -> anyhow::Result<KeptResponse> {
        use base64::Engine;
        Ok(KeptResponse {
            body: base64::engine::general_purpose::STANDARD.decode(&j.body_base64)?,
            url: j.url,
            fetched_at_ms: j.fetched_at_ms,
            version: j.version,
            status: j.status,
            headers: j.headers,
            request_headers: j.request_headers,
        })
    }
}

/// What reading a kept response failed on.
#[derive(Debug, thiserror::Error)]
pub enum ResponseError {
    #[error("storage: {0}")]
    Store(#[from] sled::Error),
    #[error("a kept response is damaged: {0}")]
    Corrupt(String),
}

/// The kept responses, by document id.
#[derive(Clone)]
pub struct ResponseStore {
    tree: sled::Tree,
}

impl ResponseStore {
    pub fn open(db: &sled::Db) -> Result<ResponseStore, ResponseError> {
        Ok(ResponseStore { tree: db.open_tree("responses")? })
    }

    /// Keeps `r` as its page's latest response (replacing an older one); returns the bytes
    /// stored.
    pub fn keep(&self, r: &KeptResponse) -> Result<usize, ResponseError> {
        let bytes = postcard::to_stdvec(r).map_err(|e| ResponseError::Corrupt(e.to_string()))?;
        let packed = lz4_flex::compress_prepend_size(&bytes);
        self.tree.insert(DocId::of_url(&r.url).0, packed.as_slice())?;
        Ok(packed.len())
    }

    /// The latest response of the document `id`, if one was kept.
    pub fn get(&self, id: &DocId) -> Result<Option<KeptResponse>, ResponseError> {
        let Some(packed) = self.tree.get(id.0)? else { return Ok(None) };
        decode(&packed).map(Some)
    }

    /// How many responses are kept.
    pub fn len(&self) -> usize {
        self.tree.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tree.is_empty()
    }

    /// The first kept response after the key `after` (from the start with `None`), with its
    /// key: a walk over every response that can stop and go on later. A record that cannot be
    /// read comes as its error, in its place.
    #[allow(clippy::type_complexity)]
    pub fn next_after(
        &self,
        after: Option<&[u8]>,
    ) -> Result<Option<(Vec<u8>, Result<KeptResponse, ResponseError>)>, sled::Error> {
        let next = match after {
            Some(key) => {
                self.tree.range::<&[u8], _>((std::ops::Bound::Excluded(key), std::ops::Bound::Unbounded)).next()
            }
            None => self.tree.iter().next(),
        };
        let Some((key, packed)) = next.transpose()? else { return Ok(None) };
        Ok(Some((key.to_vec(), decode(&packed))))
    }

    /// Drops the responses whose document `exists` no longer says exists (evicted by the disk
    /// quota, removed); returns how many.
    pub fn keep_only(&self, exists: impl Fn(&DocId) -> bool) -> Result<usize, ResponseError> {
        let mut dropped = 0;
        for key in self.tree.iter().keys() {
            let key = key?;
            let Ok(id) = <[u8; 16]>::try_from(key.as_ref()) else { continue };
            if !exists(&DocId(id)) {
                self.tree.remove(&key)?;
                dropped += 1;
            }
        }
        Ok(dropped)
    }
}

/// A record as [`ResponseStore::keep`] packs it.
fn decode(packed: &[u8]) -> Result<KeptResponse, ResponseError> {
    let bytes = lz4_flex::decompress_size_prepended(packed).map_err(|e| ResponseError::Corrupt(e.to_string()))?;
    postcard::from_bytes(&bytes).map_err(|e| ResponseError::Corrupt(e.to_string()))
}

/// A kept response of `url` with `body`, for tests.
#[cfg(test)]
pub(crate) fn response(url: &str, body: &str) -> KeptResponse {
    KeptResponse {
        url: url.into(),
        fetched_at_ms: 1_780_000_000_000,
        version: "HTTP/1.1".into(),
        status: 200,
        headers: vec![("content-type".into(), "text/html".into())],
        request_headers: vec![("user-agent".into(), "WeftBot/0.1".into())],
        body: body.as_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_response_is_kept_compressed_and_dropped_with_its_document() {
        let dir = tempfile::tempdir().unwrap();
        let db = weft_frontier::open_db(dir.path(), 8 << 20).unwrap();
        let store = ResponseStore::open(&db).unwrap();
        let page = "<html><body>".to_string() + &"<p>the same paragraph again</p>".repeat(200) + "</body></html>";
        let stored = store.keep(&response("http://a.test/", &page)).unwrap();
        assert!(stored * 4 < page.len(), "{stored} bytes for {}", page.len());
        store.keep(&response("http://a.test/", "<p>newer</p>")).unwrap();
        store.keep(&response("http://b.test/", "<p>b</p>")).unwrap();
        let a = DocId::of_url("http://a.test/");
        assert_eq!(store.get(&a).unwrap().unwrap().body, b"<p>newer</p>");
        assert_eq!(db.open_tree("responses").unwrap().len(), 2);
        assert_eq!(store.keep_only(|id| *id == a).unwrap(), 1);
        assert!(store.get(&DocId::of_url("http://b.test/")).unwrap().is_none());
        // Damaged bytes are an error, not a panic.
        db.open_tree("responses").unwrap().insert(a.0, &b"\x05\x00\x00\x00garbage"[..]).unwrap();
        assert!(matches!(store.get(&a), Err(ResponseError::Corrupt(_))));
    }
}
