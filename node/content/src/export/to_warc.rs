//! WARC/1.1 out (ISO 28500), the format crawl archivists exchange (Heritrix, Browsertrix,
//! Common Crawl, pywb, warcio): `--format warc` writes a `warcinfo` record, then for each
//! document whose response the node kept (`crawl.keep_responses`) its `request` and `response`
//! records; `--format wet` writes the extracted main text of every document as `conversion`
//! records, as Common Crawl's WET files do. Each record is its own gzip member, so a reader can
//! seek to any record and a damaged one costs only itself.

use super::{Exported, Listing, Source, PAGE};
use crate::responses::KeptResponse;
use std::io::Write;

/// `warc` (requests and responses) or `wet` (extracted text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Warc,
    Wet,
}

/// A record id: a `urn:uuid` made from what the record is (the same record, the same id).
fn record_id(what: &str) -> String {
    let h = blake3::hash(what.as_bytes());
    let b = h.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
    // Version nibble 8 (RFC 9562's custom UUIDs), variant 10.
    format!(
        "<urn:uuid:{}-{}-8{}-{:x}{}-{}>",
        hex(0..4),
        hex(4..6),
        &hex(6..8)[1..],
        8 | (b[8] & 3),
        &hex(8..10)[1..],
        hex(10..16)
    )
}

/// `sha1:` and the SHA-1 of `bytes` in base32, as `WARC-Block-Digest` and `WARC-Payload-Digest`
/// carry it (Heritrix, Common Crawl, warcio): tools check a record with it (`warcio check`) and
/// deduplicate payloads by it.
pub fn digest(bytes: &[u8]) -> String {
    use sha1::Digest;
    format!("sha1:{}", data_encoding::BASE32.encode(&sha1::Sha1::digest(bytes)))
}

/// One WARC record, gzipped on its own, with the digest of its block.
pub fn record(fields: &[(&str, String)], block: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::with_capacity(block.len() / 3 + 512), flate2::Compression::new(6));
    gz.write_all(b"WARC/1.1\r\n")?;
    for (name, value) in fields {
        // A value never carries a line break into the record's header.
        let value: String = value.chars().filter(|c| *c != '\r' && *c != '\n').collect();
        write!(gz, "{name}: {value}\r\n")?;
    }
    write!(gz, "WARC-Block-Digest: {}\r\n", digest(block))?;
    write!(gz, "Content-Length: {}\r\n\r\n", block.len())?;
    gz.write_all(block)?;
    gz.write_all(b"\r\n\r\n")?;
    gz.finish()
}

/// The `warcinfo` record that opens a file.
pub fn warcinfo(kind: Kind, node: Option<&str>, now_secs: u64) -> std::io::Result<Vec<u8>> {
    let mut info = format!(
        "software: weft/{}\r\nformat: WARC File Format 1.1\r\n\
         conformsTo: https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n\
         robots: obey\r\n",
        env!("CARGO_PKG_VERSION")
    );
    if let Some(n) = node {
        info.push_str(&format!("isPartOf: weft node {n}\r\n"));
    }
    if kind == Kind::Wet {
        info.push_str("description: the main text of each page as Weft extracted it\r\n");
    }
    let date = weft_index::documents::rfc3339(now_secs);
    let fields = [
        ("WARC-Type", "warcinfo".to_string()),
        ("WARC-Date", date.clone()),
        ("WARC-Record-ID", record_id(&format!("warcinfo {date} {node:?} {kind:?}"))),
        ("Content-Type", "application/warc-fields".to_string()),
    ];
    record(&fields, info.as_bytes())
}

/// Response headers that described the bytes on the wire, not the body kept (reqwest decoded
/// it): dropped, and `Content-Length` written again for the body.
const WIRE_ONLY: [&str; 3] = ["content-encoding", "transfer-encoding", "content-length"];

/// A kept exchange as its `request` and `response` records.
pub fn exchange(r: &KeptResponse) -> anyhow::Result<Vec<u8>> {
    let url = url::Url::parse(&r.url)?;
    let date = weft_index::documents::rfc3339(r.fetched_at_ms / 1000);
    let response_id = record_id(&format!("response {} {}", r.url, r.fetched_at_ms));
    let request_id = record_id(&format!("request {} {}", r.url, r.fetched_at_ms));
    let version = if r.version.is_empty() { "HTTP/1.1" } else { r.version.as_str() };

    let reason = reqwest::StatusCode::from_u16(r.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
    let mut head = format!("{version} {} {reason}\r\n", r.status);
    for (k, v) in r.headers.iter().filter(|(k, _)| !WIRE_ONLY.contains(&k.to_ascii_lowercase().as_str())) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", r.body.len()));
    let mut block = head.into_bytes();
    block.extend_from_slice(&r.body);
    let response = record(
        &[
            ("WARC-Type", "response".into()),
            ("WARC-Target-URI", r.url.clone()),
            ("WARC-Date", date.clone()),
            ("WARC-Record-ID", response_id.clone()),
            ("Content-Type", "application/http; msgtype=response".into()),
            ("WARC-Payload-Digest", digest(&r.body)),
        ],
        &block,
    )?;

    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    let host = &url[url::Position::BeforeHost..url::Position::AfterPort];
    let mut request = format!("GET {target} HTTP/1.1\r\nhost: {host}\r\n");
    for (k, v) in &r.request_headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    let request = record(
        &[
            ("WARC-Type", "request".into()),
            ("WARC-Target-URI", r.url.clone()),
            ("WARC-Date", date),
            ("WARC-Record-ID", request_id),
            ("WARC-Concurrent-To", response_id),
            ("Content-Type", "application/http; msgtype=request".into()),
        ],
        request.as_bytes(),
    )?;
    Ok([request, response].concat())
}

/// A document's extracted text as a `conversion` record.
fn conversion(url: &str, fetched_at: &str, title: &str, text: &str) -> std::io::Result<Vec<u8>> {
    let block = if title.is_empty() { text.to_string() } else { format!("{title}\n\n{text}") };
    record(
        &[
            ("WARC-Type", "conversion".into()),
            ("WARC-Target-URI", url.into()),
            ("WARC-Date", fetched_at.into()),
            ("WARC-Record-ID", record_id(&format!("conversion {url} {fetched_at}"))),
            ("Content-Type", "text/plain; charset=utf-8".into()),
            ("WARC-Payload-Digest", digest(block.as_bytes())),
        ],
        block.as_bytes(),
    )
}

/// Writes what `listing` selects as WARC or WET records, a page of documents at a time,
/// flushed before the next; `done.cursor` is the last document written. Documents without a
/// kept response are counted in `done.urls` as skipped (WARC only).
pub fn run(
    source: &mut dyn Source,
    out: &mut dyn Write,
    kind: Kind,
    mut listing: Listing,
    progress: &mut dyn FnMut(&Exported),
) -> anyhow::Result<Exported> {
    let (node, _) = source.provenance();
    if listing.cursor.is_none() {
        out.write_all(&warcinfo(kind, node.as_deref(), weft_clock::now_secs())?)?;
    }
    let mut done = Exported { cursor: listing.cursor.clone(), ..Exported::default() };
    listing.limit = PAGE;
    loop {
        let page = source.page(&listing)?;
        for meta in &page.documents {
            match kind {
                Kind::Warc => match source.response(&meta.id)? {
                    Some(r) => {
                        out.write_all(&exchange(&r)?)?;
                        done.documents += 1;
                    }
                    None => done.urls += 1,
                },
                Kind::Wet => {
                    let Some(view) = source.document(&meta.id)? else { continue };
                    let m = &view.meta;
                    out.write_all(&conversion(&m.page.url, &m.fetched_at, &m.page.title, &view.text)?)?;
                    done.documents += 1;
                }
            }
        }
        out.flush()?;
        if let Some(last) = page.documents.last() {
            done.cursor = Some(last.id.clone());
        }
        progress(&done);
        match page.next_cursor {
            Some(c) => listing.cursor = Some(c),
            None => return Ok(done),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_record_is_one_gzip_member_with_its_length_and_ids_are_uuids() {
        let r = record(&[("WARC-Type", "resource".into()), ("X", "a\r\nInjected: 1".into())], b"hello").unwrap();
        let mut text = String::new();
        flate2::read::GzDecoder::new(&r[..]).read_to_string(&mut text).unwrap();
        assert_eq!(
            text,
            "WARC/1.1\r\nWARC-Type: resource\r\nX: aInjected: 1\r\nWARC-Block-Digest: sha1:VL2MMHO4YXUKFWV63YHTWSBM3GXKSQ2N\r\n\
             Content-Length: 5\r\n\r\nhello\r\n\r\n"
        );
        let id = record_id("x");
        assert_eq!(id.len(), "<urn:uuid:>".len() + 36, "{id}");
        assert_eq!(&id[24..25], "8", "{id}");
        assert_eq!(id, record_id("x"));
        assert_ne!(id, record_id("y"));
    }
}
