//! `weft export`: what this node crawled, out — one JSON line (or Parquet row) per document or
//! per chunk, with metadata and provenance (the node's peer id, when it fetched the page, the
//! embedding model), for RAG pipelines and anything else that wants the text; or per URL met,
//! with its latest crawl outcome (`--what urls`), for an operator's "why is it not in there?".
//!
//! It reads the data dir directly when no node holds it, or the running node's API
//! (`/documents`) when one does (sled allows one process per database). Either way it walks
//! the same stable listing: documents in key order, a page at a time, each page written and
//! flushed before the next is read. The last document written is the cursor: an interrupted
//! export prints it, and `--cursor` resumes right after it.
//!
//! With `--copies`, the copies this node holds for other members' documents follow its own
//! (`index.replicas`; `GET /copies`), each line marked `held: replica` with the peer that
//! crawled it as its `node` (its own are `held: primary`); their cursor is `copy:<id>`.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use weft_index::{DocumentMeta, DocumentPage, DocumentView, Listing, PageMeta};

mod to_parquet;
pub mod to_warc;

/// Documents read per listing page.
const PAGE: usize = 200;

/// One line per document, per chunk, or per URL met.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum What {
    /// Documents: metadata and main text.
    Documents,
    /// Chunks, with their document's metadata.
    Chunks,
    /// Every URL's latest crawl outcome (fetched, redirected, failed, disallowed, skipped…),
    /// indexed or not: why a page is or is not in the index.
    Urls,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Parquet,
    /// WARC/1.1: the request and response of each document whose response the node kept
    /// (`crawl.keep_responses`), a gzip member per record.
    Warc,
    /// WET: each document's extracted main text as a WARC `conversion` record.
    Wet,
}

/// Where an exported record comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The peer id of the node that crawled and indexed it (absent for a node that never had
    /// an identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The embedding model's id (16 hex digits of blake3 of the model file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// When the node fetched the page, RFC 3339.
    pub fetched_at: String,
    /// `primary`: a document this node crawled and indexed; `replica`: a copy it holds for the
    /// owners of the document's id (`node` is then the peer that crawled it). Absent on URL
    /// lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

/// A document as exported: its metadata, its main text, where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentLine {
    #[serde(flatten)]
    pub meta: DocumentMeta,
    pub text: String,
    pub provenance: Provenance,
}

/// A chunk as exported, with what a retriever wants of its document beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkLine {
    pub doc_id: String,
    /// The page's address and what it says of itself.
    #[serde(flatten)]
    pub page: PageMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_type: Option<String>,
    pub key: String,
    pub position: u32,
    pub start: u32,
    pub end: u32,
    pub tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    pub text: String,
    pub provenance: Provenance,
}

/// A URL's latest crawl outcome as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlLine {
    pub url: String,
    pub outcome: weft_frontier::UrlOutcome,
    /// `fetched_at` is when the outcome was recorded; there is no model.
    pub provenance: Provenance,
}

/// Where the documents are read from.
pub trait Source {
    /// One page of the listing.
    fn page(&mut self, listing: &Listing) -> anyhow::Result<DocumentPage>;
    /// A document with its text and chunks (`None`: gone since it was listed).
    fn document(&mut self, id: &str) -> anyhow::Result<Option<DocumentView>>;
    /// Who crawled it and with which model.
    fn provenance(&self) -> (Option<String>, Option<String>);
    /// How many documents there are in all, when known (for the progress bar).
    fn total(&mut self) -> Option<u64>;
    /// Up to `limit` URL outcomes after the URL `cursor`, in URL order.
    fn outcomes(&mut self, cursor: Option<&str>, limit: usize) -> anyhow::Result<crate::urls::OutcomePage>;
    /// Up to `limit` of the copies held for other members after the id `cursor`, in id order.
    fn copies(&mut self, cursor: Option<&str>, limit: usize) -> anyhow::Result<crate::copies::HeldPage>;
    /// The HTTP response kept for the document `id` (`crawl.keep_responses`), if any.
    fn response(&mut self, id: &str) -> anyhow::Result<Option<crate::responses::KeptResponse>>;
}

/// The copies held for other members, in the data dir (the cell store's database).
struct CopiesDir {
    store: weft_index::replicas::ReplicaStore,
    _db: sled::Db,
}

/// The data dir, opened directly (no node may be running on it).
pub struct DataDir {
    store: weft_index::store::DocStore,
    outcomes: weft_frontier::Outcomes,
    /// `None` when this node never held copies (no `cells/` database).
    copies: Option<CopiesDir>,
    responses: crate::responses::ResponseStore,
    node: Option<String>,
    model: Option<String>,
    _db: sled::Db,
}

impl DataDir {
    /// Opens the data dir's database; fails when a running node holds it.
    pub fn open(config: &weft_config::Config) -> anyhow::Result<DataDir> {
        let path = config.data_dir.join("db");
        anyhow::ensure!(path.exists(), "no index at {} (start a node first)", config.data_dir.display());
        let db = weft_frontier::open_db(&path, 16 << 20).with_context(|| format!("cannot open {}", path.display()))?;
        let store = weft_index::store::DocStore::open(&config.data_dir, &db)?;
        let outcomes = weft_frontier::Outcomes::open_dir(&config.data_dir.join("frontier"), &db)?;
        let node = config
            .data_dir
            .join(weft_p2p::identity::FILE)
            .exists()
            .then(|| weft_p2p::identity::load_or_create(&config.data_dir).ok())
            .flatten()
            .map(|k| k.public().to_peer_id().to_string());
        let model = weft_index::embed::model_id(&config.embed.model).ok();
        let cells = config.data_dir.join("cells").join("db");
        let copies = if cells.exists() {
            let db =
                weft_frontier::open_db(&cells, 16 << 20).with_context(|| format!("cannot open {}", cells.display()))?;
            // Read only: no bound applies.
            Some(CopiesDir { store: weft_index::replicas::ReplicaStore::open(&db, u64::MAX)?, _db: db })
        } else {
            None
        };
        let responses = crate::responses::ResponseStore::open(&db)?;
        Ok(DataDir { store, outcomes, copies, responses, node, model, _db: db })
    }
}

impl Source for DataDir {
    fn page(&mut self, listing: &Listing) -> anyhow::Result<DocumentPage> {
        Ok(weft_index::documents::list(&self.store, listing)?)
    }

    fn document(&mut self, id: &str) -> anyhow::Result<Option<DocumentView>> {
        let id = weft_index::DocId::parse_hex(id)?;
        Ok(weft_index::documents::document(&self.store, &id)?)
    }

    fn provenance(&self) -> (Option<String>, Option<String>) {
        (self.node.clone(), self.model.clone())
    }

    fn total(&mut self) -> Option<u64> {
        Some(self.store.doc_count() as u64)
    }

    fn outcomes(&mut self, cursor: Option<&str>, limit: usize) -> anyhow::Result<crate::urls::OutcomePage> {
        Ok(crate::urls::outcomes_page(&self.outcomes, cursor, limit)?)
    }

    fn copies(&mut self, cursor: Option<&str>, limit: usize) -> anyhow::Result<crate::copies::HeldPage> {
        let Some(c) = &self.copies else { return Ok(crate::copies::HeldPage::default()) };
        let cursor = cursor.map(weft_index::DocId::parse_hex).transpose()?;
        Ok(crate::copies::held_page(&c.store, cursor.as_ref(), limit)?)
    }

    fn response(&mut self, id: &str) -> anyhow::Result<Option<crate::responses::KeptResponse>> {
        Ok(self.responses.get(&weft_index::DocId::parse_hex(id)?)?)
    }
}

/// A running node, through its API.
pub struct Api {
    base: String,
    client: reqwest::Client,
    runtime: Arc<tokio::runtime::Runtime>,
    node: Option<String>,
    model: Option<String>,
    total: Option<u64>,
}

impl Api {
    /// Connects to the node at `addr`; fails when nothing answers there.
    pub fn connect(addr: std::net::SocketAddr) -> anyhow::Result<Api> {
        let runtime = Arc::new(tokio::runtime::Builder::new_current_thread().enable_all().build()?);
        let client = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(60)).build()?;
        let base = format!("http://{addr}");
        let status: crate::client::NodeFacts = runtime
            .block_on(async { client.get(format!("{base}/status")).send().await?.error_for_status()?.json().await })
            .with_context(|| format!("no weft node answers at {addr}"))?;
        let index = status.index.as_ref();
        Ok(Api {
            node: status.network.as_ref().map(|n| n.peer_id.to_string()),
            model: index.map(|i| i.model.clone()).filter(|m| !m.is_empty()),
            total: index.map(|i| i.stored.documents + i.stored.aliases + i.stored.failed),
            base,
            client,
            runtime,
        })
    }

    fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> anyhow::Result<Option<T>> {
        let url = format!("{}{path}", self.base);
        self.runtime.block_on(async {
            let resp = self.client.get(&url).send().await?;
            if resp.status() == reqwest::StatusCode::NOT_FOUND {
                return Ok(None);
            }
            if !resp.status().is_success() {
                let status = resp.status();
                let body = resp.bytes().await.unwrap_or_default();
                anyhow::bail!("{url}: HTTP {status}: {}", crate::client::error_message(&body));
            }
            Ok(Some(resp.json().await?))
        })
    }
}

impl Source for Api {
    fn page(&mut self, listing: &Listing) -> anyhow::Result<DocumentPage> {
        let mut query = format!("/documents?limit={}", listing.limit);
        if let Some(h) = &listing.host {
            query.push_str(&format!("&host={h}"));
        }
        if let Some(s) = listing.since {
            query.push_str(&format!("&since={s}"));
        }
        if let Some(c) = &listing.cursor {
            query.push_str(&format!("&cursor={c}"));
        }
        self.get(&query)?.context("the node has no /documents (an older version?)")
    }

    fn document(&mut self, id: &str) -> anyhow::Result<Option<DocumentView>> {
        self.get(&format!("/documents/{id}"))
    }

    fn provenance(&self) -> (Option<String>, Option<String>) {
        (self.node.clone(), self.model.clone())
    }

    fn total(&mut self) -> Option<u64> {
        self.total
    }

    fn outcomes(&mut self, cursor: Option<&str>, limit: usize) -> anyhow::Result<crate::urls::OutcomePage> {
        let mut query = format!("/outcomes?limit={limit}");
        if let Some(c) = cursor {
            query.push_str("&cursor=");
            query.extend(url::form_urlencoded::byte_serialize(c.as_bytes()));
        }
        self.get(&query)?.context("the node has no /outcomes (an older version?)")
    }

    fn copies(&mut self, cursor: Option<&str>, limit: usize) -> anyhow::Result<crate::copies::HeldPage> {
        let mut query = format!("/copies?limit={limit}");
        if let Some(c) = cursor {
            query.push_str(&format!("&cursor={c}"));
        }
        self.get(&query)?.context("the node has no /copies (an older version?)")
    }

    fn response(&mut self, id: &str) -> anyhow::Result<Option<crate::responses::KeptResponse>> {
        let json: Option<crate::responses::ResponseJson> = self.get(&format!("/documents/{id}/response"))?;
        json.map(crate::responses::KeptResponse::try_from).transpose()
    }
}

/// Where the records go.
pub trait Sink {
    fn documents(&mut self, lines: &[DocumentLine]) -> anyhow::Result<()>;
    fn chunks(&mut self, lines: &[ChunkLine]) -> anyhow::Result<()>;
    fn urls(&mut self, lines: &[UrlLine]) -> anyhow::Result<()>;
    /// Makes everything written so far durable (the cursor printed after it is safe to resume
    /// from).
    fn flush(&mut self) -> anyhow::Result<()>;
    fn finish(self: Box<Self>) -> anyhow::Result<()>;
}

/// JSON lines.
pub struct Jsonl<W: Write> {
    out: W,
}

impl<W: Write> Jsonl<W> {
    pub fn new(out: W) -> Jsonl<W> {
        Jsonl { out }
    }

    fn line<T: Serialize>(&mut self, v: &T) -> anyhow::Result<()> {
        serde_json::to_writer(&mut self.out, v)?;
        self.out.write_all(b"\n")?;
        Ok(())
    }
}

impl<W: Write> Sink for Jsonl<W> {
    fn documents(&mut self, lines: &[DocumentLine]) -> anyhow::Result<()> {
        lines.iter().try_for_each(|l| self.line(l))
    }

    fn chunks(&mut self, lines: &[ChunkLine]) -> anyhow::Result<()> {
        lines.iter().try_for_each(|l| self.line(l))
    }

    fn urls(&mut self, lines: &[UrlLine]) -> anyhow::Result<()> {
        lines.iter().try_for_each(|l| self.line(l))
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        Ok(self.out.flush()?)
    }

    fn finish(mut self: Box<Self>) -> anyhow::Result<()> {
        Ok(self.out.flush()?)
    }
}

/// What an export did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exported {
    pub documents: u64,
    pub chunks: u64,
    pub urls: u64,
    /// Of `documents`, the copies held for other members (`--copies`).
    pub copies: u64,
    /// The last document (or URL) written: `--cursor` resumes after it.
    pub cursor: Option<String>,
}

/// The cursor of a copy: `copy:<id>` (a document id alone is one of this node's own).
const COPY_CURSOR: &str = "copy:";

/// Whether `url` is on `host` (a name, or name:port).
fn on_host(host: &str, url: &str) -> bool {
    url::Url::parse(url).is_ok_and(|u| {
        let name = u.host_str().unwrap_or_default();
        host == name || u.port().is_some_and(|p| host == format!("{name}:{p}"))
    })
}

/// Exports what `listing` selects from `source` into `sink`, a page at a time. `progress` is
/// told of each document written.
pub fn run(
    source: &mut dyn Source,
    sink: &mut dyn Sink,
    what: What,
    mut listing: Listing,
    copies: bool,
    progress: &mut dyn FnMut(&Exported),
) -> anyhow::Result<Exported> {
    let (node, model) = source.provenance();
    let provenance = |fetched_at: &str| Provenance {
        node: node.clone(),
        model: model.clone(),
        fetched_at: fetched_at.into(),
        held: Some("primary".into()),
    };
    if what == What::Urls {
        return run_urls(source, sink, &listing, node, progress);
    }
    let mut done = Exported { cursor: listing.cursor.clone(), ..Exported::default() };
    listing.limit = PAGE;
    if let Some(after) = listing.cursor.as_deref().and_then(|c| c.strip_prefix(COPY_CURSOR)) {
        // Resumed among the copies: this node's own went before.
        let after = after.to_string();
        return run_copies(source, sink, what, &listing, Some(after), done, progress);
    }
    loop {
        let page = source.page(&listing)?;
        let mut documents = Vec::new();
        let mut chunks = Vec::new();
        for meta in &page.documents {
            // Listed, then replaced or evicted before it was read: skipped.
            let Some(view) = source.document(&meta.id)? else { continue };
            match what {
                What::Documents => documents.push(DocumentLine {
                    provenance: provenance(&view.meta.fetched_at),
                    meta: view.meta,
                    text: view.text,
                }),
                What::Chunks => {
                    for c in view.chunks {
                        chunks.push(chunk_line(&view.meta, c, provenance(&view.meta.fetched_at)));
                    }
                }
                What::Urls => unreachable!("exported by run_urls"),
            }
        }
        sink.documents(&documents)?;
        done.chunks += chunks.len() as u64;
        sink.chunks(&chunks)?;
        sink.flush()?;
        for meta in &page.documents {
            done.documents += 1;
            done.cursor = Some(meta.id.clone());
            progress(&done);
        }
        match page.next_cursor {
            Some(c) => listing.cursor = Some(c),
            None if copies => return run_copies(source, sink, what, &listing, None, done, progress),
            None => return Ok(done),
        }
    }
}

/// The copies held for other members after the id `after` (of `listing.host`, fetched since
/// `listing.since`), marked `held: replica`, after what `done` counts.
fn run_copies(
    source: &mut dyn Source,
    sink: &mut dyn Sink,
    what: What,
    listing: &Listing,
    mut after: Option<String>,
    mut done: Exported,
    progress: &mut dyn FnMut(&Exported),
) -> anyhow::Result<Exported> {
    loop {
        let page = source.copies(after.as_deref(), PAGE)?;
        let mut documents = Vec::new();
        let mut chunks = Vec::new();
        let mut last = None;
        for held in page.copies {
            let view = held.document;
            last = Some(view.meta.id.clone());
            let fetched = weft_index::documents::parse_moment(&view.meta.fetched_at).unwrap_or(0);
            if listing.host.as_deref().is_some_and(|h| !on_host(h, &view.meta.page.url))
                || listing.since.is_some_and(|s| fetched < s)
            {
                continue;
            }
            let provenance = Provenance {
                node: held.crawler,
                model: None,
                fetched_at: view.meta.fetched_at.clone(),
                held: Some("replica".into()),
            };
            done.documents += 1;
            done.copies += 1;
            match what {
                What::Documents => documents.push(DocumentLine { provenance, meta: view.meta, text: view.text }),
                What::Chunks => {
                    for c in view.chunks {
                        chunks.push(chunk_line(&view.meta, c, provenance.clone()));
                    }
                }
                What::Urls => unreachable!("exported by run_urls"),
            }
        }
        sink.documents(&documents)?;
        done.chunks += chunks.len() as u64;
        sink.chunks(&chunks)?;
        sink.flush()?;
        if let Some(last) = page.next_cursor.clone().or(last) {
            done.cursor = Some(format!("{COPY_CURSOR}{last}"));
            after = Some(last);
        }
        progress(&done);
        if page.next_cursor.is_none() {
            return Ok(done);
        }
    }
}

/// The URL outcomes after `listing.cursor` (a URL), of `listing.host` and since
/// `listing.since` when given.
fn run_urls(
    source: &mut dyn Source,
    sink: &mut dyn Sink,
    listing: &Listing,
    node: Option<String>,
    progress: &mut dyn FnMut(&Exported),
) -> anyhow::Result<Exported> {
    let mut done = Exported { cursor: listing.cursor.clone(), ..Exported::default() };
    let wanted = |line: &crate::urls::OutcomeLine| {
        listing.host.as_deref().is_none_or(|h| on_host(h, &line.url))
            && listing.since.is_none_or(|s| line.outcome.at >= s)
    };
    loop {
        let page = source.outcomes(done.cursor.as_deref(), PAGE)?;
        let lines: Vec<UrlLine> = page
            .outcomes
            .iter()
            .filter(|l| wanted(l))
            .map(|l| UrlLine {
                url: l.url.clone(),
                outcome: l.outcome.clone(),
                provenance: Provenance {
                    node: node.clone(),
                    model: None,
                    fetched_at: weft_index::documents::rfc3339(l.outcome.at),
                    held: None,
                },
            })
            .collect();
        sink.urls(&lines)?;
        sink.flush()?;
        done.urls += lines.len() as u64;
        if let Some(last) = page.outcomes.last() {
            done.cursor = Some(last.url.clone());
        }
        progress(&done);
        if page.next_cursor.is_none() {
            return Ok(done);
        }
    }
}

fn chunk_line(m: &DocumentMeta, c: weft_index::documents::ChunkView, provenance: Provenance) -> ChunkLine {
    ChunkLine {
        doc_id: m.id.clone(),
        page: m.page.clone(),
        language: m.facts.language.clone(),
        page_type: m.facts.page_type.clone(),
        key: c.key,
        position: c.position,
        start: c.start,
        end: c.end,
        tokens: c.tokens,
        prev: c.prev,
        next: c.next,
        text: c.text,
        provenance,
    }
}

/// Opens the sink `format` writes to `output` (`-`: standard output; Parquet wants a file).
pub fn sink(format: Format, what: What, output: &Path) -> anyhow::Result<Box<dyn Sink>> {
    let stdout = output == Path::new("-");
    match format {
        Format::Jsonl if stdout => Ok(Box::new(Jsonl::new(std::io::BufWriter::new(std::io::stdout().lock())))),
        Format::Jsonl => {
            let file = std::fs::File::create(output).with_context(|| format!("cannot create {}", output.display()))?;
            Ok(Box::new(Jsonl::new(std::io::BufWriter::new(file))))
        }
        Format::Warc | Format::Wet => anyhow::bail!("WARC and WET are written by warc_command"),
        Format::Parquet => {
            anyhow::ensure!(!stdout, "Parquet is written to a file: pass --output FILE.parquet");
            let file = std::fs::File::create(output).with_context(|| format!("cannot create {}", output.display()))?;
            Ok(Box::new(to_parquet::Parquet::new(file, what)?))
        }
    }
}

/// What `weft export` was asked for.
#[derive(Debug, Clone)]
pub struct Request {
    pub what: What,
    pub format: Format,
    pub output: std::path::PathBuf,
    pub cursor: Option<String>,
    pub host: Option<String>,
    pub since: Option<String>,
    /// The running node's API address to try first.
    pub api: std::net::SocketAddr,
    pub progress: bool,
    /// Also the copies this node holds for other members' documents, marked.
    pub copies: bool,
}

/// `weft export`: from the running node when one answers at `request.api`, else from the data
/// dir. A failure part-way says where to resume.
pub fn command(config: &weft_config::Config, request: Request) -> anyhow::Result<Exported> {
    if let Some(c) = request.cursor.as_deref().filter(|_| request.what != What::Urls) {
        weft_index::DocId::parse_hex(c.strip_prefix(COPY_CURSOR).unwrap_or(c))
            .map_err(|e| anyhow::anyhow!("--cursor: {e}"))?;
    }
    let since = match &request.since {
        Some(s) => Some(
            weft_index::documents::parse_moment(s)
                .ok_or_else(|| anyhow::anyhow!("--since {s:?}: not RFC 3339 nor Unix seconds"))?,
        ),
        None => None,
    };
    let mut source: Box<dyn Source> = match Api::connect(request.api) {
        Ok(api) => Box::new(api),
        Err(e) => {
            tracing::debug!("{e:#}; reading the data dir");
            Box::new(DataDir::open(config).with_context(|| {
                format!("no weft node answers at {}, and the data dir could not be read", request.api)
            })?)
        }
    };
    if matches!(request.format, Format::Warc | Format::Wet) {
        return warc_command(source.as_mut(), &request, since);
    }
    let mut sink = sink(request.format, request.what, &request.output)?;
    let urls = request.what == What::Urls;
    let total = if urls { None } else { source.total() };
    let bar = if request.progress {
        indicatif::ProgressBar::with_draw_target(total, indicatif::ProgressDrawTarget::stderr())
    } else {
        indicatif::ProgressBar::hidden()
    };
    let template =
        if urls { "{spinner} {pos} URLs {elapsed}" } else { "{bar:40} {pos}/{len} documents, {msg} {elapsed}" };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template).unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let listing = Listing { host: request.host.clone(), since, cursor: request.cursor.clone(), limit: PAGE };
    let mut last = Exported { cursor: request.cursor.clone(), ..Exported::default() };
    let result = run(source.as_mut(), sink.as_mut(), request.what, listing, request.copies, &mut |done| {
        bar.set_position(if urls { done.urls } else { done.documents });
        bar.set_message(format!("{} chunks", done.chunks));
        last = done.clone();
    });
    bar.finish_and_clear();
    match result {
        Ok(done) => {
            sink.finish()?;
            Ok(done)
        }
        Err(e) => {
            let resume = last.cursor.map(|c| format!("; resume with --cursor {c}")).unwrap_or_default();
            let (n, of) = if urls { (last.urls, "URLs") } else { (last.documents, "documents") };
            Err(e.context(format!("export stopped after {n} {of}{resume}")))
        }
    }
}

/// `weft export --format warc|wet`: documents only (`--what` and `--copies` do not apply).
fn warc_command(source: &mut dyn Source, request: &Request, since: Option<u64>) -> anyhow::Result<Exported> {
    anyhow::ensure!(request.what == What::Documents, "--format warc and wet export documents: drop --what");
    anyhow::ensure!(!request.copies, "--format warc and wet export this node's own documents: drop --copies");
    let kind = if request.format == Format::Warc { to_warc::Kind::Warc } else { to_warc::Kind::Wet };
    let mut out: Box<dyn Write> = if request.output == Path::new("-") {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    } else {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(request.cursor.is_some())
            .write(true)
            .truncate(request.cursor.is_none())
            .open(&request.output)
            .with_context(|| format!("cannot create {}", request.output.display()))?;
        Box::new(std::io::BufWriter::new(file))
    };
    let listing = Listing { host: request.host.clone(), since, cursor: request.cursor.clone(), limit: PAGE };
    let mut last = Exported { cursor: request.cursor.clone(), ..Exported::default() };
    match to_warc::run(source, out.as_mut(), kind, listing, &mut |done| last = done.clone()) {
        Ok(done) => {
            out.flush()?;
            Ok(done)
        }
        Err(e) => {
            let resume =
                last.cursor.map(|c| format!("; resume with --cursor {c} (appends to the file)")).unwrap_or_default();
            Err(e.context(format!("export stopped after {} documents{resume}", last.documents)))
        }
    }
}
