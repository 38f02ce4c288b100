//! The index's three threads: the indexer (dedup, chunk, embed, commit, a batch of pages at a
//! time), the question thread (embeds a question on the indexer's model, which gives way to
//! it) and the search thread (this node's index and the cells it owns, one answer of both),
//! and what the indexer counts for `/status`.

use super::status::RecentDocument;
use crate::second_opinion::Improved;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_crawl::metrics::Metrics;
use weft_index::cells::CellStore;
use weft_index::{Document, Embedder, Hit, IndexError, Indexer, LocalIndex, Outcome};

/// Documents the indexer takes into one call at most (their chunks are embedded together).
pub(super) const MAX_BATCH_DOCS: usize = 32;
/// Documents kept for the dashboard's "recently indexed".
const RECENT: usize = 20;

pub(super) struct Job {
    pub(super) doc: Document,
    /// A near duplicate indexed by another node (url, distance), found in the DHT.
    pub(super) remote: Option<(String, u32)>,
    pub(super) reply: SyncSender<Result<Outcome, String>>,
}

/// Work for the question thread: embed the text, for a search whose vector goes to this
/// node's index and to other nodes.
pub(super) struct Embed {
    pub(super) text: String,
    pub(super) reply: tokio::sync::oneshot::Sender<Result<Vec<f32>, IndexError>>,
}

/// Work for the search thread: the `k` best local documents for a query vector (this node's,
/// or another node's), and its words when known (hybrid search).
pub(super) struct Search {
    pub(super) vector: Vec<f32>,
    pub(super) text: Option<String>,
    pub(super) k: usize,
    pub(super) reply: tokio::sync::oneshot::Sender<Result<Vec<Hit>, IndexError>>,
}

/// Counters of this run.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) indexed: AtomicU64,
    pub(super) replaced: AtomicU64,
    pub(super) aliases: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) improved: AtomicU64,
    pub(super) chunks: AtomicU64,
    pub(super) embed_micros: AtomicU64,
    pub(super) queries: AtomicU64,
    pub(super) queued: AtomicU64,
    pub(super) evicted: AtomicU64,
    /// The latest documents indexed, newest last.
    pub(super) recent: parking_lot::Mutex<std::collections::VecDeque<RecentDocument>>,
}

pub(super) fn count_outcome(counters: &Counters, metrics: &Metrics, outcome: &Result<Outcome, String>, url: &str) {
    match outcome {
        Ok(Outcome::Indexed { replaced, .. }) => {
            counters.indexed.fetch_add(1, Relaxed);
            if *replaced {
                counters.replaced.fetch_add(1, Relaxed);
            }
        }
        Ok(Outcome::Alias { .. }) => {
            counters.aliases.fetch_add(1, Relaxed);
        }
        Ok(Outcome::Failed { reason }) => {
            counters.failed.fetch_add(1, Relaxed);
            metrics.error("index_failed", url, reason);
        }
        Err(e) => {
            counters.failed.fetch_add(1, Relaxed);
            metrics.error("index_store", url, e);
        }
    }
}

pub(super) fn indexer_loop(
    mut indexer: Indexer,
    jobs: Receiver<Job>,
    improved: Option<Receiver<Improved>>,
    counters: Arc<Counters>,
    metrics: Arc<Metrics>,
) {
    loop {
        // With a second opinion running, wake up now and then to take its better texts.
        let first = match &improved {
            None => jobs.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(_) => jobs.recv_timeout(Duration::from_millis(500)),
        };
        let mut batch = match first {
            Ok(job) => vec![job],
            Err(RecvTimeoutError::Timeout) => Vec::new(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        while batch.len() < MAX_BATCH_DOCS {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let mut docs: Vec<Document> = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        for job in batch {
            if let Some((canonical, distance)) = job.remote {
                // A near duplicate of a page another node indexed: recorded, not embedded.
                let outcome = indexer.record_alias(&job.doc, &canonical, distance).map_err(|e| e.to_string());
                count_outcome(&counters, &metrics, &outcome, &job.doc.url);
                let _ = job.reply.send(outcome);
                continue;
            }
            docs.push(job.doc);
            replies.push(Some(job.reply));
        }
        if let Some(rx) = &improved {
            while docs.len() < MAX_BATCH_DOCS {
                let Ok(better) = rx.try_recv() else { break };
                if let Some(doc) = improved_document(indexer.index_handle(), better) {
                    counters.improved.fetch_add(1, Relaxed);
                    docs.push(doc);
                    replies.push(None);
                }
            }
        }
        if docs.is_empty() {
            continue;
        }
        let urls: Vec<String> = docs.iter().map(|d| d.url.clone()).collect();
        let titles: Vec<String> = docs.iter().map(|d| d.title.clone()).collect();
        let started = Instant::now();
        let outcomes = indexer.index(docs);
        counters.embed_micros.fetch_add(started.elapsed().as_micros() as u64, Relaxed);
        metrics.histograms.index_batch.observe(started.elapsed().as_secs_f64());
        match outcomes {
            Ok(outcomes) => {
                for (((outcome, reply), url), title) in outcomes.into_iter().zip(replies).zip(&urls).zip(&titles) {
                    if let Outcome::Indexed { chunks, .. } = outcome {
                        counters.chunks.fetch_add(chunks as u64, Relaxed);
                        let unix_ms = weft_clock::now_ms();
                        let mut recent = counters.recent.lock();
                        if recent.len() == RECENT {
                            recent.pop_front();
                        }
                        recent.push_back(RecentDocument { url: url.clone(), title: title.clone(), chunks, unix_ms });
                    }
                    let outcome = Ok(outcome);
                    count_outcome(&counters, &metrics, &outcome, url);
                    if let Some(reply) = reply {
                        let _ = reply.send(outcome);
                    }
                }
            }
            Err(e) => {
                // The store itself failed: every page of the batch is reported, none dropped.
                let reason = e.to_string();
                for (reply, url) in replies.into_iter().zip(&urls) {
                    let outcome = Err(reason.clone());
                    count_outcome(&counters, &metrics, &outcome, url);
                    if let Some(reply) = reply {
                        let _ = reply.send(outcome);
                    }
                }
            }
        }
    }
}

/// The stored document of `better.url`, with the reference extractor's text.
fn improved_document(index: &LocalIndex, better: Improved) -> Option<Document> {
    let record = index.document(better.url.as_str()).ok().flatten()?;
    Some(Document::with_new_text(record, better.text))
}

pub(super) fn embed_loop(mut embedder: Embedder, questions: Receiver<Embed>) {
    while let Ok(Embed { text, reply }) = questions.recv() {
        let _ = reply.send(embedder.embed(&[text.as_str()]).map(|mut v| v.pop().unwrap_or_default()));
    }
}

pub(super) fn search_loop(index: Arc<LocalIndex>, cells: Option<Arc<CellStore>>, searches: Receiver<Search>) {
    while let Ok(Search { vector, text, k, reply }) = searches.recv() {
        let hits = match &text {
            Some(text) => index.search_hybrid(text, &vector, k),
            None => index.search(&vector, k),
        };
        // With the postings of the cells this node owns: one answer of both.
        let hits = match (&cells, hits) {
            (Some(cells), Ok(hits)) => {
                cells.search(text.as_deref(), &vector, k).map(|held| crate::cells::merge(hits, held, k))
            }
            (_, hits) => hits,
        };
        let _ = reply.send(hits);
    }
}
