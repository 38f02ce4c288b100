//! The index stage of the node: extracted pages go to the indexer thread, questions to the
//! question thread (which embeds them) and searches to the search thread, and none of them ever
//! runs on the async runtime.
//!
//! ```text
//! crawl task ──spawn_blocking──▶ IndexPipeline::process
//!                                  extract ─▶ Job ─(bounded channel)─▶ indexer thread
//!                                  (waits for the outcome)             dedup → chunk → embed → commit
//! /search, weft search ──▶ Embed ─(bounded channel)─▶ question thread: embed the question
//!      and peers' searches ──▶ Search ─(bounded channel)─▶ search thread: kNN (+ BM25) → group
//! ```
//!
//! The crawl task waits for its page's outcome before it completes the lease, for two reasons:
//! a slow embedder slows fetching instead of growing a queue in memory (back-pressure through
//! the bounded channel and the waiting tasks), and a page whose lease is completed is already
//! committed to the index — the lease completion's flush makes both durable together, so a crash
//! cannot lose a page the frontier considers done. While one batch is embedded, the next pages
//! queue up and are embedded together: batches fill themselves as the crawl speeds up.
//!
//! Questions share the indexer's model, which the indexer gives up to them at once
//! (`Embedder::set_yielding`). Searches need no model: they run on a thread of their own, so a
//! peer's search never waits behind this node's own questions being embedded, nor a question
//! behind a queue of peers' searches.

/// The index section of `/status`.
mod status;
/// The indexer, question and search threads.
mod threads;

use crate::pipeline::ExtractPipeline;
use crate::second_opinion::Improved;
use parking_lot::Mutex;
pub use status::{CellsHeld, IndexStatus, RecentDocument};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use threads::{count_outcome, embed_loop, indexer_loop, search_loop, Counters, Embed, Job, Search};
use weft_config::Config;
use weft_crawl::metrics::Metrics;
use weft_fetch::page::{FetchedPage, Pipeline, Processed};
use weft_index::cells::CellStore;
use weft_index::{DocId, Document, Embedder, Hit, IndexError, Indexer, LocalIndex, Outcome};

/// Questions waiting for the question thread, and searches for the search thread; beyond
/// this `/search` answers 503 (and a peer's search is refused as busy).
const QUERY_QUEUE: usize = 64;
/// How long indexing waits for the DHT's near-duplicate answer before indexing anyway.
const DHT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest query text embedded (the model reads at most 256 tokens anyway).
pub const MAX_QUERY_BYTES: usize = 2048;

/// The index of a running node: the indexer, question and search threads and the shared
/// [`LocalIndex`].
pub struct IndexService {
    index: Arc<LocalIndex>,
    /// `None` once stopped.
    jobs: Mutex<Option<SyncSender<Job>>>,
    embeds: Mutex<Option<SyncSender<Embed>>>,
    searches: Mutex<Option<SyncSender<Search>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
    /// In a network: where fingerprints are looked up and published.
    network: Option<DhtDuplicates>,
    /// The postings of the cells this node owns (with the network): searched with the index.
    cells: Option<Arc<CellStore>>,
    max_distance: u32,
    /// `index.replicas`: members that get a copy of each document indexed.
    replicas: usize,
    model: String,
    /// A handle on the model, for what it reports ([`Embedder::memory_bytes`],
    /// [`Embedder::runs_stopped`]).
    model_handle: Embedder,
    dims: usize,
    /// `index.hybrid`: searches fuse BM25 with the vectors.
    hybrid: bool,
    /// What the repair of copies has done (with the network).
    repairs: Arc<crate::replicas::Repairs>,
    /// What extracting the kept responses again has done (`reextract.rs`).
    reextraction: Arc<crate::reextract::Tally>,
}

impl IndexService {
    /// Loads the models (one session for indexing, one for queries) and starts both threads.
    /// `improved` carries the reference extractor's better texts, if it runs; with `network`,
    /// new documents are checked against the whole network's fingerprints (DHT) and the
    /// fingerprints of those indexed here are published.
    pub fn start(
        config: &Config,
        index: Arc<LocalIndex>,
        metrics: Arc<Metrics>,
        improved: Option<Receiver<Improved>>,
        network: Option<weft_p2p::NetworkHandle>,
        cells: Option<Arc<CellStore>>,
    ) -> Result<Arc<IndexService>, IndexError> {
        let model = weft_index::embed::model_id(&config.embed.model)?;
        let counters = Arc::new(Counters::default());
        let (jobs, job_rx) = sync_channel::<Job>(config.index.queue);
        let (embeds, embed_rx) = sync_channel::<Embed>(QUERY_QUEUE);
        let (searches, search_rx) = sync_channel::<Search>(QUERY_QUEUE);
        let (c, m) = (counters.clone(), metrics.clone());
        let mut indexer = Indexer::new(index.clone(), &config.embed, &config.index)?;
        // Questions share the indexer's model: a second copy cost ~96 MiB (`Embedder::share`),
        // and the indexer gives it to them at once.
        let query_embedder = indexer.embedder();
        indexer.yield_to_questions();
        let indexing = std::thread::Builder::new()
            .name("weft-indexer".into())
            .spawn(move || indexer_loop(indexer, job_rx, improved, c, m))?;
        let model_handle = query_embedder.share();
        let embedding = std::thread::Builder::new()
            .name("weft-question".into())
            .spawn(move || embed_loop(query_embedder, embed_rx))?;
        let (local, held) = (index.clone(), cells.clone());
        let searching = std::thread::Builder::new()
            .name("weft-search".into())
            .spawn(move || search_loop(local, held, search_rx))?;
        Ok(Arc::new(IndexService {
            index,
            jobs: Mutex::new(Some(jobs)),
            embeds: Mutex::new(Some(embeds)),
            searches: Mutex::new(Some(searches)),
            threads: Mutex::new(vec![indexing, embedding, searching]),
            counters,
            metrics,
            network: network.map(DhtDuplicates),
            cells,
            model_handle,
            max_distance: config.index.dedup_max_distance,
            replicas: config.index.replicas,
            model,
            dims: config.embed.dims,
            hybrid: config.index.hybrid,
            repairs: Arc::default(),
            reextraction: Arc::new(crate::reextract::Tally::new(
                crate::reextract::selector(&config.extract).id(),
                config.crawl.keep_responses,
            )),
        }))
    }

    /// Stops the threads once they have finished what they hold (blocking). Pages and queries
    /// that arrive later are answered with an error.
    pub fn stop(&self) {
        self.jobs.lock().take();
        self.embeds.lock().take();
        self.searches.lock().take();
        for thread in std::mem::take(&mut *self.threads.lock()) {
            if thread.join().is_err() {
                tracing::error!("an index thread panicked");
            }
        }
    }

    pub fn index(&self) -> &Arc<LocalIndex> {
        &self.index
    }

    /// The cell store (with the network): the postings of the cells this node owns.
    pub fn cells(&self) -> Option<&Arc<CellStore>> {
        self.cells.as_ref()
    }

    /// The tally the repair of copies keeps (see `replicas::repair_on_changes`).
    pub fn repairs(&self) -> Arc<crate::replicas::Repairs> {
        self.repairs.clone()
    }

    /// Indexes one document and waits for the outcome. Blocking: call it from a blocking
    /// thread. Waits while the indexer's queue is full.
    pub fn index_blocking(&self, doc: Document, links: &[String]) -> Result<Outcome, String> {
        let doc = doc.fingerprinted();
        let Some(network) = &self.network else {
            return self.index_job(doc, None);
        };
        let remote = weft_index::duplicates::remote_duplicate(&self.index, &doc, self.max_distance, network);
        let (simhash, url, fetched_at) = (doc.simhash, doc.url.clone(), doc.fetched_at);
        // Where an earlier version of the page was posted: the cells its new version leaves
        // get a withdrawal.
        let ladder = weft_p2p::placement::shipped_ladder();
        let posted_levels = network.0.posted_levels();
        let before = crate::cells::posted(&self.index, &url, ladder, posted_levels.clone()).unwrap_or_default();
        let outcome = self.index_job(doc, remote);
        if let Ok(Outcome::Indexed { .. }) = &outcome {
            // Kept for the document's copies (see `replicas.rs`).
            if let Err(e) = self.index.store().set_links(&DocId::of_url(&url), links) {
                tracing::warn!(url, "links not kept: {e}");
            }
        }
        if let Ok(outcome) = &outcome {
            weft_index::duplicates::publish_indexed(network, self.max_distance, outcome, simhash, &url, fetched_at);
            let postings = match outcome {
                Outcome::Indexed { .. } => {
                    let placing = crate::cells::Placing {
                        ladder,
                        levels: posted_levels,
                        model: &self.model,
                        cells: network.0.cells_per_chunk(),
                    };
                    crate::cells::postings_of(&self.index, &url, placing)
                }
                _ => Ok(Vec::new()),
            };
            // And a copy of the document for the owners of its id (`index.replicas`).
            let copy = match outcome {
                Outcome::Indexed { .. } if self.replicas > 0 => {
                    weft_content::copies::replica_of(&self.index, &DocId::of_url(&url))
                }
                _ => Ok(None),
            };
            match (postings, copy) {
                (Ok(postings), Ok(copy)) => {
                    let gone = crate::cells::withdrawal(&url, before, &postings);
                    network.0.publish_postings(postings, gone.into_iter().collect(), copy.into_iter().collect());
                }
                (Err(e), _) | (_, Err(e)) => tracing::warn!(url, "postings not published: {e}"),
            }
        }
        outcome
    }

    fn index_job(&self, doc: Document, remote: Option<(String, u32)>) -> Result<Outcome, String> {
        let (reply, outcome) = sync_channel(1);
        self.counters.queued.fetch_add(1, Relaxed);
        let url = doc.url.clone();
        let jobs = self.jobs.lock().clone();
        let sent = jobs.is_some_and(|jobs| jobs.send(Job { doc, remote, reply }).is_ok());
        let result = if sent { outcome.recv().ok() } else { None };
        self.counters.queued.fetch_sub(1, Relaxed);
        // The indexer thread counts what it answers; a page it never saw is counted here.
        result.unwrap_or_else(|| {
            let stopped = Err("the indexer stopped".to_string());
            count_outcome(&self.counters, &self.metrics, &stopped, &url);
            stopped
        })
    }

    /// Which embedding model this node uses: the first 16 hex digits of blake3 of the model
    /// file. Vectors are only comparable between nodes with the same model.
    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    fn submit<Q, T>(
        lane: &Mutex<Option<SyncSender<Q>>>,
        make: impl FnOnce(tokio::sync::oneshot::Sender<T>) -> Q,
    ) -> Result<tokio::sync::oneshot::Receiver<T>, SearchError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let lane = lane.lock().clone().ok_or(SearchError::Stopped)?;
        match lane.try_send(make(reply)) {
            Ok(()) => Ok(answer),
            Err(TrySendError::Full(_)) => Err(SearchError::Busy),
            Err(TrySendError::Disconnected(_)) => Err(SearchError::Stopped),
        }
    }

    /// The query's unit vector.
    pub async fn embed_query(&self, text: &str) -> Result<Vec<f32>, SearchError> {
        let text = truncate_at_char(text.trim(), MAX_QUERY_BYTES).to_string();
        if text.is_empty() {
            return Err(SearchError::EmptyQuery);
        }
        let started = Instant::now();
        let answer = Self::submit(&self.embeds, |reply| Embed { text, reply })?;
        let vector = answer.await.map_err(|_| SearchError::Stopped)?.map_err(SearchError::Index);
        self.metrics.histograms.embed_query.observe(started.elapsed().as_secs_f64());
        vector
    }

    /// The `k` best local documents for a query: by meaning (`vector`) and, given its words
    /// (`text`) and `index.hybrid`, by BM25 too, fused ([`weft_index::Fusion::DEFAULT`]).
    pub async fn search_query(
        &self,
        vector: Vec<f32>,
        text: Option<String>,
        k: usize,
    ) -> Result<Vec<Hit>, SearchError> {
        let text = text.filter(|t| self.hybrid && !t.trim().is_empty());
        let answer = Self::submit(&self.searches, |reply| Search { vector, text, k, reply })?;
        self.counters.queries.fetch_add(1, Relaxed);
        answer.await.map_err(|_| SearchError::Stopped)?.map_err(SearchError::Index)
    }

    /// Embeds `text` and returns the `k` best local documents.
    pub async fn search(&self, text: &str, k: usize) -> Result<Vec<Hit>, SearchError> {
        let vector = self.embed_query(text).await?;
        self.search_query(vector, Some(text.to_string()), k).await
    }

    /// Merges small vector segments, the node's own and the cell store's (see
    /// [`LocalIndex::merge_segments`]). Blocking.
    pub fn merge_segments(&self) -> Result<bool, IndexError> {
        let own = self.index.merge_segments()?;
        let cells = self.cells.as_ref().map_or(Ok(false), |c| c.merge_segments())?;
        Ok(own || cells)
    }

    /// Flushes the document store and writes the vector snapshot if it changed, this node's
    /// own and the cell store's. Blocking. (The cell store was left out once: every start
    /// rebuilt its vectors from its documents, and its masked segments — postings withdrawn or
    /// expired — were never compacted, which only a snapshot does.)
    pub fn snapshot(&self) -> Result<bool, IndexError> {
        let own = self.index.snapshot()?;
        let cells = self.cells.as_ref().map_or(Ok(false), |c| c.snapshot())?;
        Ok(own || cells)
    }

    /// Which index a running [`IndexService::snapshot`] is at, and its step: the node's own
    /// or the cell store's (what a snapshot that did not finish is reported with).
    pub fn snapshot_step(&self) -> Option<(&'static str, &'static str)> {
        let own = self.index.snapshot_step().map(|step| ("own", step));
        own.or_else(|| self.cells.as_ref()?.snapshot_step().map(|step| ("cells", step)))
    }

    /// Evicts the `n` documents fetched longest ago (blocking); returns how many went.
    pub fn evict_oldest(&self, n: usize) -> Result<usize, IndexError> {
        let mut gone = 0;
        let ladder = weft_p2p::placement::shipped_ladder();
        let levels = self.network.as_ref().map(|n| n.0.posted_levels()).unwrap_or(0..=0);
        let mut withdrawals = Vec::new();
        for (id, record) in self.index.oldest(n)? {
            // Its postings go too: the cells' owners hear it.
            let posted =
                self.network.as_ref().map(|_| crate::cells::posted(&self.index, &record.url, ladder, levels.clone()));
            if self.index.remove(id)? {
                tracing::debug!(url = record.url, "evicted by the disk quota");
                gone += 1;
                if let Some(Ok(before)) = posted {
                    withdrawals.extend(crate::cells::withdrawal(&record.url, before, &[]));
                }
            }
        }
        if let Some(network) = &self.network {
            network.0.publish_postings(Vec::new(), withdrawals, Vec::new());
        }
        self.counters.evicted.fetch_add(gone as u64, Relaxed);
        Ok(gone)
    }

    /// The tally of the re-extraction after an upgrade (see `reextract.rs`).
    pub fn reextraction(&self) -> Arc<crate::reextract::Tally> {
        self.reextraction.clone()
    }

    /// The latest documents indexed, newest first.
    pub fn recent(&self) -> Vec<RecentDocument> {
        self.counters.recent.lock().iter().rev().cloned().collect()
    }

    pub fn status(&self) -> IndexStatus {
        let c = &self.counters;
        let chunks = c.chunks.load(Relaxed);
        let secs = c.embed_micros.load(Relaxed) as f64 / 1e6;
        IndexStatus {
            stored: self.index.stats(),
            pages_indexed: c.indexed.load(Relaxed),
            pages_replaced: c.replaced.load(Relaxed),
            pages_aliased: c.aliases.load(Relaxed),
            pages_failed: c.failed.load(Relaxed),
            pages_improved: c.improved.load(Relaxed),
            chunks_embedded: chunks,
            chunks_per_sec: if secs > 0.0 { chunks as f64 / secs } else { 0.0 },
            queue: c.queued.load(Relaxed),
            queries: c.queries.load(Relaxed),
            evicted: c.evicted.load(Relaxed),
            model: self.model.clone(),
            model_memory_bytes: self.model_handle.memory_bytes(),
            runs_yielded: self.model_handle.runs_stopped(),
            reextraction: self.reextraction.status(),
            cells: self.cells.as_ref().map(|c| {
                let (documents, chunks) = c.counts();
                CellsHeld {
                    documents: documents as u64,
                    chunks: chunks as u64,
                    vector_memory_bytes: c.vector_memory_bytes() as u64,
                    store_memory_bytes: c.store_memory_bytes(),
                    over_quota: c.over_quota(),
                    copies: c.replicas().counts().0 as u64,
                    copy_bytes: c.replicas().counts().1,
                    copies_refused: c.replicas().refused(),
                    copies_evicted: c.replicas().evicted(),
                    repair: self.repairs.status(),
                }
            }),
        }
    }
}

/// Why a search could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("empty query")]
    EmptyQuery,
    #[error("too many queries waiting; try again")]
    Busy,
    #[error("the index's question or search thread stopped")]
    Stopped,
    #[error("{0}")]
    Index(IndexError),
}

fn truncate_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The network's fingerprints, in the DHT: the node's side of the index's near-duplicate
/// detection (see `weft_index::duplicates`).
struct DhtDuplicates(weft_p2p::NetworkHandle);

impl weft_index::duplicates::NetworkDuplicates for DhtDuplicates {
    fn find(&self, simhash: u64, max_distance: u32, url: &str) -> Option<(String, u32)> {
        let me = self.0.peer_id().to_string();
        self.0
            .find_duplicate_blocking(simhash, max_distance, url, DHT_TIMEOUT)
            .filter(|(entry, _)| entry.peer != me) // this node's own documents: the local tables
            .map(|(entry, distance)| (entry.url, distance))
    }

    fn publish(&self, simhash: u64, url: &str, fetched_at: u64) {
        self.0.publish_fingerprint(simhash, url.to_string(), fetched_at);
    }
}

/// The document the index stores for an extracted page.
pub fn document_of(page: &FetchedPage, e: &weft_extract::Extracted) -> Document {
    let page_type = crate::pipeline::page_type_name(e);
    Document {
        url: page.url.to_string(),
        title: e.metadata.title.clone().unwrap_or_default(),
        text: e.text.clone(),
        description: e.metadata.description.clone(),
        language: e.metadata.language.clone(),
        site_name: e.metadata.site_name.clone(),
        // Dates as RFC 3339 or not at all (a template's date may be any text).
        published: e.metadata.published.as_deref().and_then(weft_extract::metadata::normalize_date),
        modified: e.metadata.modified.as_deref().and_then(weft_extract::metadata::normalize_date),
        author: e.metadata.byline.clone(),
        canonical: e.metadata.canonical.clone(),
        page_type: Some(page_type.to_string()),
        fetched_at: weft_clock::secs(page.fetched_at),
        // Computed once, by `IndexService::index_blocking` (`Document::fingerprinted`).
        simhash: None,
    }
}

/// The full pipeline: extract, then index (dedup → chunk → embed → commit).
pub struct IndexPipeline {
    extract: ExtractPipeline,
    service: Arc<IndexService>,
}

impl IndexPipeline {
    pub fn new(extract: ExtractPipeline, service: Arc<IndexService>) -> IndexPipeline {
        IndexPipeline { extract, service }
    }
}

impl Pipeline for IndexPipeline {
    fn process(&self, page: &FetchedPage) -> Processed {
        let processed = self.extract.process(page);
        // A page waiting for the browser is indexed in its rendered form.
        if let Some(e) = processed.extracted.as_ref().filter(|_| processed.render.is_none()) {
            // Counted by the service; the crawl goes on whatever the outcome.
            let links: Vec<String> = processed.links.iter().map(|l| l.url.to_string()).collect();
            let _ = self.service.index_blocking(document_of(page, e), &links);
        }
        processed
    }

    fn reextract(&self, page: &FetchedPage) -> weft_fetch::page::Reextracted {
        use weft_fetch::page::Reextracted;
        let processed = self.extract.process_again(page);
        if processed.render.is_some() {
            return Reextracted::ForBrowser;
        }
        let Some(e) = processed.extracted else { return Reextracted::Failed };
        let doc = document_of(page, &e);
        let id = DocId::of_url(&doc.url);
        let held = match weft_index::documents::document(self.service.index().store(), &id) {
            Ok(Some(view)) if view.meta.state == "indexed" => view,
            Ok(_) => return Reextracted::NotHeld,
            Err(err) => {
                tracing::warn!(url = doc.url, "a held document could not be read: {err}");
                return Reextracted::Failed;
            }
        };
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        if words(&held.text) == words(&doc.text) {
            return Reextracted::Unchanged;
        }
        let links: Vec<String> = processed.links.iter().map(|l| l.url.to_string()).collect();
        match self.service.index_blocking(doc, &links) {
            Ok(Outcome::Indexed { .. }) => Reextracted::Changed,
            Ok(_) => Reextracted::Unchanged,
            Err(_) => Reextracted::Failed,
        }
    }

    fn adopt(&self, copy: &weft_fetch::page::HeldCopy) -> bool {
        let links: Vec<String> = copy.links.iter().map(url::Url::to_string).collect();
        self.service.index_blocking(copy.document.clone(), &links).is_ok()
    }

    /// The document store's batches reach the OS as they commit; this syncs them, so that a
    /// page acknowledged after the crawl's flush is indexed after a power loss too.
    fn persist(&self) -> Result<(), String> {
        self.service.index().store().flush().map_err(|e| format!("the document store: {e}"))
    }
}
