//! [`Indexer`]: extracted documents in, searchable chunks out — dedup → chunk → embed → commit.
//!
//! Documents are taken in batches so that embedding batches are full even when pages are short:
//! all chunks of all documents of a call are embedded together, sorted by length. A failed
//! embedding is retried once; if it fails again each document is embedded on its own, and the
//! ones that still fail are recorded as failed (visible in `/status`), never dropped silently.

use crate::chunk::Chunker;
use crate::dedup;
use crate::embed::Embedder;
use crate::store::{ChunkRecord, NewChunk};
use crate::tokenizer::{self, Purpose};
use crate::{DocId, DocRecord, DocState, IndexError, LocalIndex};
use std::sync::Arc;
use weft_config::{EmbedConfig, IndexConfig};

/// A title prefix takes at most this many tokens of a chunk's window.
const MAX_TITLE_TOKENS: usize = 32;

/// A document to index: what the extractor made of a fetched page.
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// The final, normalized URL.
    pub url: String,
    pub title: String,
    /// Main text, paragraphs separated by blank lines.
    pub text: String,
    pub description: Option<String>,
    pub language: Option<String>,
    pub site_name: Option<String>,
    /// When the page says it was first published and last modified, RFC 3339.
    pub published: Option<String>,
    pub modified: Option<String>,
    /// Who wrote it, as the page names them.
    pub author: Option<String>,
    /// The URL the page names as its canonical one (normalized), when it names one.
    pub canonical: Option<String>,
    pub page_type: Option<String>,
    /// Seconds since the Unix epoch.
    pub fetched_at: u64,
    /// The SimHash of `text` ([`dedup::simhash`]), computed once where the document is made
    /// ([`Document::fingerprinted`]) and carried through the network's duplicate lookup to the
    /// index. `None`: not computed yet (the indexer computes it then), or a text too short to
    /// have one.
    pub simhash: Option<u64>,
}

impl Document {
    /// The document with its SimHash computed (once: a document that has one keeps it).
    pub fn fingerprinted(mut self) -> Document {
        if self.simhash.is_none() {
            self.simhash = dedup::simhash(&self.text);
        }
        self
    }

    /// The stored document `record` with a new main text (a better extraction of the same
    /// page): what the page says of itself is kept; the SimHash is left for the indexer to
    /// compute from the new text. The inverse of how the indexer stores a document, in the
    /// crate that owns both shapes.
    pub fn with_new_text(record: DocRecord, text: String) -> Document {
        Document {
            url: record.url,
            title: record.title,
            text,
            description: record.description,
            language: record.language,
            site_name: record.site_name,
            published: record.published,
            modified: record.modified,
            author: record.author,
            canonical: record.canonical,
            page_type: record.page_type,
            fetched_at: record.fetched_at,
            simhash: None,
        }
    }

    /// Its SimHash: the carried one, else computed now.
    pub(crate) fn fingerprint(&self) -> Option<u64> {
        self.simhash.or_else(|| dedup::simhash(&self.text))
    }
}

/// What became of one document.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Indexed {
        chunks: usize,
        replaced: bool,
    },
    /// A near duplicate of `canonical`: recorded as its alias, not embedded.
    Alias {
        canonical: String,
        distance: u32,
    },
    Failed {
        reason: String,
    },
}

struct Plan {
    id: DocId,
    record: DocRecord,
    /// (byte range start, end, tokens, text) of each chunk.
    chunks: Vec<(usize, usize, usize, String)>,
    /// What the model reads for each chunk (the text, maybe after the title).
    inputs: Vec<String>,
}

/// Turns documents into index entries. Owns its model sessions (shared with [`Indexer::embedder`]'s
/// handles): run it on a thread of its own.
pub struct Indexer {
    index: Arc<LocalIndex>,
    chunker: Chunker,
    embedder: Embedder,
    title_prefix: bool,
    max_distance: u32,
}

impl Indexer {
    /// Loads the tokenizer and model for indexing (`embed.threads` intra-op threads).
    pub fn new(index: Arc<LocalIndex>, embed: &EmbedConfig, config: &IndexConfig) -> Result<Indexer, IndexError> {
        let embedder = Embedder::open(embed, embed.threads)?;
        let chunker =
            Chunker::new(tokenizer::load(&embed.tokenizer, Purpose::Chunking)?, embed.max_tokens, config.chunk_overlap);
        Ok(Indexer {
            index,
            chunker,
            embedder,
            title_prefix: config.title_prefix,
            max_distance: config.dedup_max_distance,
        })
    }

    /// A handle on this indexer's model for other work (a node's questions): the sessions are
    /// shared, not loaded again ([`Embedder::share`]).
    pub fn embedder(&self) -> Embedder {
        self.embedder.share()
    }

    /// Makes the indexing give way to the other handles' runs on the model (a node's
    /// questions): see [`Embedder::set_yielding`].
    pub fn yield_to_questions(&mut self) {
        self.embedder.set_yielding(true);
    }

    pub fn index_handle(&self) -> &Arc<LocalIndex> {
        &self.index
    }

    pub fn chunker(&self) -> &Chunker {
        &self.chunker
    }

    /// Indexes `docs`; one outcome per document, in order. Only storage errors are returned
    /// as `Err` (the node cannot go on without its store); everything else is an outcome.
    pub fn index(&mut self, docs: Vec<Document>) -> Result<Vec<Outcome>, IndexError> {
        let mut outcomes: Vec<Option<Outcome>> = vec![None; docs.len()];
        let mut plans: Vec<(usize, Plan)> = Vec::new();
        // Fingerprints of this batch's documents, so two copies in one batch are caught too.
        let mut fresh: Vec<(DocId, u64, String)> = Vec::new();
        for (i, doc) in docs.into_iter().enumerate() {
            let id = DocId::of_url(&doc.url);
            let hash = doc.fingerprint();
            let mut record = record_of(&doc, hash);
            if let (Some(h), true) = (hash, self.max_distance > 0) {
                if let Some((canonical, url, distance)) = self.duplicate_of(h, &id, &fresh)? {
                    record.state = DocState::Alias { canonical, distance };
                    self.index.commit(id, &record, Vec::new())?;
                    outcomes[i] = Some(Outcome::Alias { canonical: url, distance });
                    continue;
                }
                fresh.push((id, h, doc.url.clone()));
            }
            match self.plan(id, record, &doc) {
                Ok(plan) => plans.push((i, plan)),
                Err(e) => outcomes[i] = Some(self.fail(id, record_of(&doc, hash), &e)?),
            }
        }

        let inputs: Vec<&str> = plans.iter().flat_map(|(_, p)| p.inputs.iter().map(String::as_str)).collect();
        let vectors = match self.embed_retrying(&inputs) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::warn!(
                    chunks = inputs.len(),
                    "embedding batch failed twice ({e}); embedding documents one by one"
                );
                None
            }
        };
        let mut offset = 0;
        for (i, plan) in plans {
            let n = plan.inputs.len();
            let result = match &vectors {
                Some(all) => Ok(all[offset..offset + n].to_vec()),
                None => {
                    let inputs: Vec<&str> = plan.inputs.iter().map(String::as_str).collect();
                    self.embed_retrying(&inputs)
                }
            };
            offset += n;
            outcomes[i] = Some(match result {
                Ok(vectors) => self.commit(plan, vectors)?,
                Err(e) => self.fail(plan.id, plan.record, &e)?,
            });
        }
        self.index.sync()?;
        Ok(outcomes.into_iter().map(|o| o.expect("every document has an outcome")).collect())
    }

    /// Records `doc` as a near duplicate of `canonical_url`, a document indexed elsewhere
    /// (another node, found through the DHT): stored as an alias, not embedded.
    pub fn record_alias(&mut self, doc: &Document, canonical_url: &str, distance: u32) -> Result<Outcome, IndexError> {
        let id = DocId::of_url(&doc.url);
        let mut record = record_of(doc, doc.fingerprint());
        record.state = DocState::Alias { canonical: DocId::of_url(canonical_url), distance };
        self.index.commit(id, &record, Vec::new())?;
        self.index.sync()?;
        Ok(Outcome::Alias { canonical: canonical_url.to_string(), distance })
    }

    /// The SimHash distance within which documents are near duplicates (0: dedup off).
    pub fn max_distance(&self) -> u32 {
        self.max_distance
    }

    fn duplicate_of(
        &self,
        hash: u64,
        id: &DocId,
        fresh: &[(DocId, u64, String)],
    ) -> Result<Option<(DocId, String, u32)>, IndexError> {
        let batch = fresh
            .iter()
            .filter(|(other, h, _)| other != id && dedup::distance(hash, *h) <= self.max_distance)
            .min_by_key(|(_, h, _)| dedup::distance(hash, *h))
            .map(|(other, h, url)| (*other, url.clone(), dedup::distance(hash, *h)));
        if batch.is_some() {
            return Ok(batch);
        }
        let Some((canonical, distance)) = self.index.store().near_duplicate(hash, self.max_distance, id)? else {
            return Ok(None);
        };
        let url = self.index.store().doc(&canonical)?.map(|r| r.url).unwrap_or_default();
        Ok(Some((canonical, url, distance)))
    }

    fn plan(&self, id: DocId, record: DocRecord, doc: &Document) -> Result<Plan, IndexError> {
        let title = if self.title_prefix { self.chunker.truncate(doc.title.trim(), MAX_TITLE_TOKENS)? } else { "" };
        let reserved = if title.is_empty() { 0 } else { self.chunker.count_tokens(title)? };
        // A page without main text is still findable by its title and description.
        let fallback;
        let text = if doc.text.trim().is_empty() {
            fallback = [doc.title.trim(), doc.description.as_deref().unwrap_or("").trim()]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(". ");
            fallback.as_str()
        } else {
            doc.text.as_str()
        };
        let spans = self.chunker.split(text, reserved)?;
        let chunks: Vec<(usize, usize, usize, String)> =
            spans.iter().map(|s| (s.start, s.end, s.tokens, text[s.start..s.end].to_string())).collect();
        let inputs = chunks
            .iter()
            .map(
                |(_, _, _, t)| {
                    if title.is_empty() || t.starts_with(title) {
                        t.clone()
                    } else {
                        format!("{title}\n\n{t}")
                    }
                },
            )
            .collect();
        Ok(Plan { id, record, chunks, inputs })
    }

    fn embed_retrying(&mut self, inputs: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        if inputs.is_empty() {
            return Ok(Vec::new());
        }
        match self.embedder.embed(inputs) {
            Ok(v) => Ok(v),
            Err(e) => {
                tracing::warn!("embedding failed, retrying once: {e}");
                self.embedder.embed(inputs)
            }
        }
    }

    fn commit(&self, plan: Plan, vectors: Vec<Vec<f32>>) -> Result<Outcome, IndexError> {
        let Plan { id, mut record, chunks, .. } = plan;
        let mut new = Vec::with_capacity(chunks.len());
        for (position, ((start, end, tokens, text), vector)) in chunks.into_iter().zip(vectors).enumerate() {
            let position = position as u32;
            let key = id.chunk_key(position);
            new.push(NewChunk { key, record: ChunkRecord::new(id, position, start, end, tokens, &text), vector });
        }
        record.chunks = new.iter().map(|c| c.key).collect();
        for (i, c) in new.iter_mut().enumerate() {
            c.record.prev = i.checked_sub(1).map(|p| record.chunks[p]);
            c.record.next = record.chunks.get(i + 1).copied();
        }
        record.state = DocState::Indexed;
        let n = new.len();
        let replaced = self.index.store().doc(&id)?.is_some();
        self.index.commit(id, &record, new)?;
        Ok(Outcome::Indexed { chunks: n, replaced })
    }

    fn fail(&self, id: DocId, mut record: DocRecord, error: &IndexError) -> Result<Outcome, IndexError> {
        let reason = error.to_string();
        tracing::warn!(url = record.url, "not indexed: {reason}");
        record.state = DocState::Failed { reason: reason.clone() };
        record.chunks.clear();
        self.index.commit(id, &record, Vec::new())?;
        Ok(Outcome::Failed { reason })
    }
}

fn record_of(doc: &Document, simhash: Option<u64>) -> DocRecord {
    DocRecord {
        url: doc.url.clone(),
        title: doc.title.clone(),
        description: doc.description.clone(),
        language: doc.language.clone(),
        site_name: doc.site_name.clone(),
        published: doc.published.clone(),
        page_type: doc.page_type.clone(),
        fetched_at: doc.fetched_at,
        word_count: doc.text.split_whitespace().count() as u32,
        simhash,
        chunks: Vec::new(),
        state: DocState::Indexed,
        aliases: Vec::new(),
        modified: doc.modified.clone(),
        author: doc.author.clone(),
        canonical: doc.canonical.clone(),
    }
}
