//! A document as a copy and a copy as a document: the signed [`Replica`] a member holds of
//! another member's page, made from this node's index ([`replica_of`]), read from the replica
//! store ([`held`], [`held_page`]) and shown as the API and exports show any document
//! ([`view_of`]).

use weft_index::cells::CellStore;
use weft_index::documents::{ChunkView, DocumentMeta, DocumentView};
use weft_index::{DocId, DocState, IndexError, LocalIndex};
use weft_p2p::replicas::{Replica, Span};

/// The copy of document `id` as this node indexed it (unsigned: the network signs it as it
/// leaves), or `None` when this node holds no indexed document `id`.
pub fn replica_of(index: &LocalIndex, id: &DocId) -> Result<Option<Replica>, IndexError> {
    let Some(record) = index.store().doc(id)? else { return Ok(None) };
    if record.state != DocState::Indexed {
        return Ok(None);
    }
    let Some(view) = weft_index::documents::document(index.store(), id)? else { return Ok(None) };
    let (text, chunks) = text_and_spans(&view.chunks);
    Ok(Some(Replica {
        doc: id.hex(),
        page: record.page(),
        facts: record.facts(),
        word_count: record.word_count,
        simhash: record.simhash,
        text,
        chunks,
        fetched_at: record.fetched_at,
        links: index.store().links(id)?,
        publisher: Vec::new(),
        signature: Vec::new(),
    }))
}

/// The main text as the chunks make it (each chunk's part past the one before; a gap between
/// two chunks — a paragraph the chunker skipped — becomes a blank line, as
/// `weft_index::documents::main_text` reads it back), and each chunk's range in *that* text: a
/// chunk's stored range is in the extracted text, which a gap makes longer or shorter.
pub fn text_and_spans(chunks: &[ChunkView]) -> (String, Vec<Span>) {
    let mut text = String::new();
    let mut spans = Vec::with_capacity(chunks.len());
    // The end of what the text covers so far, in the extracted text's offsets.
    let mut covered = 0usize;
    for c in chunks {
        let (start, end) = (c.start as usize, c.end as usize);
        let placed = if end <= covered {
            // Inside what is there already: found where its text is, near the end.
            let from = text.len().saturating_sub(covered - start + c.text.len());
            let from = (from..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
            text[from..].find(&c.text).map(|i| from + i)
        } else if start >= covered {
            if !text.is_empty() && start > covered {
                text.push_str("\n\n");
            }
            let at = text.len();
            text.push_str(&c.text);
            covered = end;
            Some(at)
        } else {
            let skip = covered - start;
            match c.text.get(skip..) {
                Some(rest) if text.len() >= skip => {
                    let at = text.len() - skip;
                    text.push_str(rest);
                    covered = end;
                    Some(at)
                }
                _ => None,
            }
        };
        // A chunk whose text is not found where it should be is listed empty (a record is
        // data: never an out-of-range span).
        let (s, e) = match placed {
            Some(at) if text.get(at..at + c.text.len()) == Some(c.text.as_str()) => (at, at + c.text.len()),
            _ => (text.len(), text.len()),
        };
        spans.push(Span { start: s as u32, end: e as u32, tokens: c.tokens });
    }
    // Spans must start in order.
    for i in 1..spans.len() {
        if spans[i].start < spans[i - 1].start {
            spans[i].start = spans[i - 1].start;
            spans[i].end = spans[i].end.max(spans[i].start);
        }
    }
    (text, spans)
}

/// A copy as the API shows a document (the chunks' keys are the same on every node: they are
/// derived from the document's id and the chunk's position).
pub fn view_of(r: &Replica) -> Option<DocumentView> {
    let id = DocId::parse_hex(&r.doc).ok()?;
    let keys: Vec<u64> = (0..r.chunks.len() as u32).map(|p| id.chunk_key(p)).collect();
    let chunks = r
        .chunks
        .iter()
        .enumerate()
        .map(|(i, s)| ChunkView {
            key: format!("{:016x}", keys[i]),
            position: i as u32,
            start: s.start,
            end: s.end,
            tokens: s.tokens,
            prev: i.checked_sub(1).map(|j| format!("{:016x}", keys[j])),
            next: keys.get(i + 1).map(|k| format!("{k:016x}")),
            text: r.chunk_text(i).unwrap_or_default().to_string(),
        })
        .collect();
    let meta = DocumentMeta {
        id: r.doc.clone(),
        page: r.page.clone(),
        facts: r.facts.clone(),
        fetched_at: weft_index::documents::rfc3339(r.fetched_at),
        word_count: r.word_count,
        simhash: r.simhash.map(|h| format!("{h:016x}")),
        state: "indexed".into(),
        alias_of: None,
        failure: None,
        aliases: Vec::new(),
        chunk_count: r.chunks.len(),
    };
    Some(DocumentView { meta, text: r.text.clone(), chunks })
}

/// The copy this node holds of document `id`, if any (blocking).
pub fn held(cells: &CellStore, id: &DocId) -> Result<Option<Replica>, IndexError> {
    let Some(bytes) = cells.replicas().get(id)? else { return Ok(None) };
    match Replica::decode(&bytes) {
        Ok(r) => Ok(Some(r)),
        Err(e) => Err(IndexError::Corrupt(format!("replica {}: {e}", id.hex()))),
    }
}

/// A copy this node holds for another member's document, as the API lists it and an export
/// writes it: the document, and the peer that crawled it and signed the copy.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HeldView {
    #[serde(flatten)]
    pub document: DocumentView,
    pub crawler: Option<String>,
}

/// One page of the copies held, in id order (`GET /copies`); `next_cursor` is absent on the
/// last page.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct HeldPage {
    pub copies: Vec<HeldView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Up to `limit` of the copies held after the id `cursor`. A copy that does not decode is
/// skipped (the page's cursor still moves past it). Blocking.
pub fn held_page(
    store: &weft_index::replicas::ReplicaStore,
    cursor: Option<&DocId>,
    limit: usize,
) -> Result<HeldPage, IndexError> {
    let bodies = store.page(cursor, limit)?;
    let next_cursor = (bodies.len() == limit).then(|| bodies.last().map(|(id, _)| id.hex())).flatten();
    let copies = bodies
        .iter()
        .filter_map(|(_, body)| Replica::decode(body).ok())
        .filter_map(|r| {
            let crawler = r.publisher_id().map(|p| p.to_string());
            Some(HeldView { document: view_of(&r)?, crawler })
        })
        .collect();
    Ok(HeldPage { copies, next_cursor })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(start: u32, end: u32, text: &str) -> ChunkView {
        ChunkView { key: String::new(), position: 0, start, end, tokens: 1, prev: None, next: None, text: text.into() }
    }

    #[test]
    fn a_copys_spans_are_ranges_of_its_text_across_overlaps_and_gaps() {
        // "aaaa bbbb cccc" chunked with an overlap, then a gap (a skipped paragraph), then a
        // chunk inside the one before.
        let chunks =
            [chunk(0, 9, "aaaa bbbb"), chunk(5, 14, "bbbb cccc"), chunk(30, 38, "dddd eee"), chunk(35, 38, "eee")];
        let (text, spans) = text_and_spans(&chunks);
        assert_eq!(text, "aaaa bbbb cccc\n\ndddd eee");
        for (c, s) in chunks.iter().zip(&spans) {
            assert_eq!(&text[s.start as usize..s.end as usize], c.text, "{s:?}");
        }
        assert!(spans.windows(2).all(|w| w[0].start <= w[1].start));
        // The same text as the API reads back.
        let records: Vec<weft_index::store::ChunkRecord> = chunks
            .iter()
            .map(|c| {
                weft_index::store::ChunkRecord::new(DocId([0; 16]), 0, c.start as usize, c.end as usize, 1, &c.text)
            })
            .collect();
        assert_eq!(weft_index::documents::main_text(&records).unwrap(), text);
        // Multi-byte text: ranges stay on character boundaries.
        let (text, spans) = text_and_spans(&[chunk(0, 6, "été"), chunk(10, 13, "ça")]);
        assert!(spans.iter().all(|s| text.get(s.start as usize..s.end as usize).is_some()));
    }
}
