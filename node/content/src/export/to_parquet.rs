//! The export's Parquet sink: one row per document, chunk or URL, the same fields as the JSON
//! lines (provenance flattened into `node`, `model`, `fetched_at`; a URL's outcome as its kind
//! and its details in JSON), one row group per page the export reads, Snappy-compressed.

use super::{ChunkLine, DocumentLine, Sink, UrlLine, What};
use arrow_array::{ArrayRef, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::sync::Arc;

pub struct Parquet {
    writer: ArrowWriter<std::fs::File>,
    schema: Arc<Schema>,
}

fn text(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// The columns of a document row.
pub fn document_schema() -> Schema {
    let mut fields = vec![text("id", false), text("url", false)];
    for f in ["canonical", "title", "description", "author", "published", "modified", "language", "site", "page_type"] {
        fields.push(text(f, f != "title"));
    }
    fields.extend([
        text("fetched_at", false),
        Field::new("word_count", DataType::UInt32, false),
        text("simhash", true),
        text("state", false),
        text("alias_of", true),
        text("failure", true),
        // JSON array of URLs.
        text("aliases", false),
        Field::new("chunk_count", DataType::UInt64, false),
        text("text", false),
        text("node", true),
        text("model", true),
        // primary | replica
        text("held", true),
    ]);
    Schema::new(fields)
}

/// The columns of a chunk row.
pub fn chunk_schema() -> Schema {
    let mut fields = vec![text("doc_id", false), text("url", false), text("title", false)];
    for f in ["canonical", "author", "published", "modified", "language", "page_type"] {
        fields.push(text(f, true));
    }
    fields.extend([
        text("key", false),
        Field::new("position", DataType::UInt32, false),
        Field::new("start", DataType::UInt32, false),
        Field::new("end", DataType::UInt32, false),
        Field::new("tokens", DataType::UInt32, false),
        text("prev", true),
        text("next", true),
        text("text", false),
        text("node", true),
        text("model", true),
        text("fetched_at", false),
        text("held", true),
    ]);
    Schema::new(fields)
}

/// The columns of a URL row.
pub fn url_schema() -> Schema {
    Schema::new(vec![
        text("url", false),
        // fetched, redirected, status, rate_limited, failed, disallowed, rendering, skipped
        text("outcome", false),
        // The whole outcome as JSON (status, to, error, detail, retrying, reason, at, attempts).
        text("detail", false),
        text("at", false),
        Field::new("attempts", DataType::UInt32, false),
        text("node", true),
    ])
}

fn strings<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(values.collect::<StringArray>())
}

fn u32s(values: impl Iterator<Item = u32>) -> ArrayRef {
    Arc::new(values.collect::<UInt32Array>())
}

impl Parquet {
    pub fn new(file: std::fs::File, what: What) -> anyhow::Result<Parquet> {
        let schema = Arc::new(match what {
            What::Documents => document_schema(),
            What::Chunks => chunk_schema(),
            What::Urls => url_schema(),
        });
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props))?;
        Ok(Parquet { writer, schema })
    }

    fn write(&mut self, columns: Vec<ArrayRef>) -> anyhow::Result<()> {
        let batch = RecordBatch::try_new(self.schema.clone(), columns)?;
        self.writer.write(&batch)?;
        Ok(())
    }
}

impl Sink for Parquet {
    fn documents(&mut self, lines: &[DocumentLine]) -> anyhow::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let m = |f: fn(&DocumentLine) -> Option<&str>| strings(lines.iter().map(f));
        let aliases: Vec<String> =
            lines.iter().map(|l| serde_json::to_string(&l.meta.aliases).unwrap_or_default()).collect();
        self.write(vec![
            m(|l| Some(l.meta.id.as_str())),
            m(|l| Some(l.meta.page.url.as_str())),
            m(|l| l.meta.page.canonical.as_deref()),
            m(|l| Some(l.meta.page.title.as_str())),
            m(|l| l.meta.facts.description.as_deref()),
            m(|l| l.meta.page.author.as_deref()),
            m(|l| l.meta.page.published.as_deref()),
            m(|l| l.meta.page.modified.as_deref()),
            m(|l| l.meta.facts.language.as_deref()),
            m(|l| l.meta.facts.site.as_deref()),
            m(|l| l.meta.facts.page_type.as_deref()),
            m(|l| Some(l.meta.fetched_at.as_str())),
            u32s(lines.iter().map(|l| l.meta.word_count)),
            m(|l| l.meta.simhash.as_deref()),
            m(|l| Some(l.meta.state.as_str())),
            m(|l| l.meta.alias_of.as_deref()),
            m(|l| l.meta.failure.as_deref()),
            strings(aliases.iter().map(|a| Some(a.as_str()))),
            Arc::new(lines.iter().map(|l| l.meta.chunk_count as u64).collect::<UInt64Array>()),
            m(|l| Some(l.text.as_str())),
            m(|l| l.provenance.node.as_deref()),
            m(|l| l.provenance.model.as_deref()),
            m(|l| l.provenance.held.as_deref()),
        ])
    }

    fn chunks(&mut self, lines: &[ChunkLine]) -> anyhow::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let m = |f: fn(&ChunkLine) -> Option<&str>| strings(lines.iter().map(f));
        self.write(vec![
            m(|l| Some(l.doc_id.as_str())),
            m(|l| Some(l.page.url.as_str())),
            m(|l| Some(l.page.title.as_str())),
            m(|l| l.page.canonical.as_deref()),
            m(|l| l.page.author.as_deref()),
            m(|l| l.page.published.as_deref()),
            m(|l| l.page.modified.as_deref()),
            m(|l| l.language.as_deref()),
            m(|l| l.page_type.as_deref()),
            m(|l| Some(l.key.as_str())),
            u32s(lines.iter().map(|l| l.position)),
            u32s(lines.iter().map(|l| l.start)),
            u32s(lines.iter().map(|l| l.end)),
            u32s(lines.iter().map(|l| l.tokens)),
            m(|l| l.prev.as_deref()),
            m(|l| l.next.as_deref()),
            m(|l| Some(l.text.as_str())),
            m(|l| l.provenance.node.as_deref()),
            m(|l| l.provenance.model.as_deref()),
            m(|l| Some(l.provenance.fetched_at.as_str())),
            m(|l| l.provenance.held.as_deref()),
        ])
    }

    fn urls(&mut self, lines: &[UrlLine]) -> anyhow::Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let detail: Vec<serde_json::Value> =
            lines.iter().map(|l| serde_json::to_value(&l.outcome)).collect::<Result<_, _>>()?;
        let kinds: Vec<Option<&str>> = detail.iter().map(|d| d["outcome"].as_str()).collect();
        let detail: Vec<String> = detail.iter().map(|d| d.to_string()).collect();
        self.write(vec![
            strings(lines.iter().map(|l| Some(l.url.as_str()))),
            strings(kinds.into_iter()),
            strings(detail.iter().map(|d| Some(d.as_str()))),
            strings(lines.iter().map(|l| Some(l.provenance.fetched_at.as_str()))),
            u32s(lines.iter().map(|l| l.outcome.attempts)),
            strings(lines.iter().map(|l| l.provenance.node.as_deref())),
        ])
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        // Closes the row group; the file is complete only after `finish` writes the footer.
        self.writer.flush()?;
        Ok(())
    }

    fn finish(self: Box<Self>) -> anyhow::Result<()> {
        self.writer.close()?;
        Ok(())
    }
}
