//! The lexical index: BM25 over the same chunks the vectors embed (tantivy), for what dense
//! models of MiniLM's size miss — names, identifiers, rare words (`pg_stat_activity`,
//! `work_mem`, an error code).
//!
//! It is a cache of the document store, like the HNSW index: one tantivy document per chunk (its key, its
//! document's id, title and text), written in the commit path of [`crate::LocalIndex`] and made
//! visible by [`LexicalIndex::commit`] at the end of each indexing batch. On open, an index that
//! is missing, unreadable or does not hold exactly the store's chunks is rebuilt from the store, so a
//! crash between the two can leave neither orphans nor gaps.
//!
//! Text is read twice. As words: split on non-alphanumerics, lower-cased, stop words dropped
//! and stemmed (English), so `jsonb_set` is `jsonb` + `set`. As identifiers: words joined by `_`, `.`, `-`
//! or `::` kept whole (`work_mem`, `pg_hba.conf`), so that `work_mem` finds its own page before
//! `maintenance_work_mem`'s, which the words alone cannot tell apart. The query is read both
//! ways, the identifier field boosted. Queries are parsed leniently (a user's `:` or `(` is text,
//! not syntax) and their terms are OR-ed, as BM25 wants.

use crate::store::DocStore;
use crate::{DocId, IndexError};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED, STRING};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, Token, TokenStream,
    Tokenizer,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

/// The directory under the data dir.
pub const DIR: &str = "lexical";

/// The writer's memory budget (tantivy's floor is 15 MB).
const WRITER_BYTES: usize = 24 << 20;

fn err(e: impl std::fmt::Display) -> IndexError {
    IndexError::Lexical(e.to_string())
}

/// Why the lexical index was rebuilt on open (`None`: loaded as it was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebuilt {
    Missing,
    Unreadable(String),
    Stale { indexed: u64, chunks: u64 },
}

struct Fields {
    key: Field,
    doc: Field,
    title: Field,
    text: Field,
    ident: Field,
}

/// BM25 over the chunks.
pub struct LexicalIndex {
    index: Index,
    reader: IndexReader,
    writer: Mutex<IndexWriter>,
    fields: Fields,
    /// Writes not yet committed.
    dirty: Mutex<bool>,
    path: PathBuf,
}

/// The identifier field's tokenizer's name.
const IDENT: &str = "weft_ident";

/// The word fields' tokenizer's name.
const WORDS: &str = "weft_words";

/// Words that say how a question is asked, not what it is about: Lucene's English stop words
/// and the function words of questions. Left in, "what to do if someone scalds their skin"
/// ranks the page on SQL's `DO` first by BM25, and the fusion follows it.
pub const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of",
    "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
    "what", "how", "why", "when", "where", "which", "who", "whom", "do", "does", "did", "i", "me", "my", "you", "your",
    "we", "our", "us", "can", "should", "would", "could", "about", "from", "its", "am", "has", "have", "had", "been",
    "being", "were", "so", "than", "too", "very", "just", "he", "she", "him", "her", "his", "them", "some", "get",
    "getting", "keep", "keeping", "make", "way", "ways",
];

/// How much more an identifier matched whole weighs than its words.
const IDENT_BOOST: f32 = 2.0;

fn schema() -> Schema {
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(WORDS).set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let ident = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(IDENT).set_index_option(IndexRecordOption::WithFreqs),
    );
    let mut b = Schema::builder();
    b.add_u64_field("key", STORED);
    b.add_text_field("doc", STRING);
    b.add_text_field("title", text.clone());
    b.add_text_field("text", text);
    b.add_text_field("ident", ident);
    b.build()
}

/// The identifiers in `text`: maximal runs of alphanumerics joined by `_`, `.`, `-` or `:`
/// (trimmed of joiners at either end) that hold at least one joiner. Byte offsets.
fn identifiers(text: &str) -> Vec<(usize, usize)> {
    let joiner = |c: char| matches!(c, '_' | '.' | '-' | ':');
    let mut out = Vec::new();
    let mut start = None;
    let mut push = |from: usize, to: usize| {
        let run = &text[from..to];
        let trimmed = run.trim_matches(joiner);
        if trimmed.contains(joiner) {
            let lead = run.len() - run.trim_start_matches(joiner).len();
            out.push((from + lead, from + lead + trimmed.len()));
        }
    };
    for (i, c) in text.char_indices() {
        let inside = c.is_alphanumeric() || joiner(c);
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                push(s, i);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        push(s, text.len());
    }
    out
}

/// [`identifiers`] as a tantivy tokenizer.
#[derive(Clone, Default)]
struct IdentTokenizer;

struct IdentStream {
    tokens: std::vec::IntoIter<Token>,
    current: Token,
}

impl Tokenizer for IdentTokenizer {
    type TokenStream<'a> = IdentStream;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> IdentStream {
        let tokens: Vec<Token> = identifiers(text)
            .into_iter()
            .enumerate()
            .map(|(position, (from, to))| Token {
                offset_from: from,
                offset_to: to,
                position,
                text: text[from..to].to_string(),
                position_length: 1,
            })
            .collect();
        IdentStream { tokens: tokens.into_iter(), current: Token::default() }
    }
}

impl TokenStream for IdentStream {
    fn advance(&mut self) -> bool {
        match self.tokens.next() {
            Some(t) => {
                self.current = t;
                true
            }
            None => false,
        }
    }
    fn token(&self) -> &Token {
        &self.current
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

impl LexicalIndex {
    /// Opens (or creates) the index under `data_dir`, rebuilt from `store` unless it holds
    /// exactly the store's chunks.
    pub fn open(data_dir: &Path, store: &DocStore) -> Result<(LexicalIndex, Option<Rebuilt>), IndexError> {
        let path = data_dir.join(DIR);
        let existing = if path.join("meta.json").exists() {
            match Index::open_in_dir(&path) {
                Ok(index) if index.schema() == schema() => Ok(index),
                Ok(_) => Err(Rebuilt::Unreadable("another schema".into())),
                Err(e) => Err(Rebuilt::Unreadable(e.to_string())),
            }
        } else {
            Err(Rebuilt::Missing)
        };
        let (index, mut why) = match existing {
            Ok(index) => (index, None),
            Err(why) => {
                if path.exists() {
                    std::fs::remove_dir_all(&path)?;
                }
                std::fs::create_dir_all(&path)?;
                (Index::create_in_dir(&path, schema()).map_err(err)?, Some(why))
            }
        };
        let lexical = LexicalIndex::from_index(index, path)?;
        let (indexed, chunks) = (lexical.len(), store.chunk_count() as u64);
        if why.is_none() && indexed != chunks {
            why = Some(Rebuilt::Stale { indexed, chunks });
        }
        if why.is_some() {
            lexical.rebuild(store)?;
        }
        Ok((lexical, why))
    }

    fn from_index(index: Index, path: PathBuf) -> Result<LexicalIndex, IndexError> {
        index.tokenizers().register(IDENT, TextAnalyzer::builder(IdentTokenizer).filter(LowerCaser).build());
        index.tokenizers().register(
            WORDS,
            TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(40))
                .filter(LowerCaser)
                .filter(StopWordFilter::remove(STOP_WORDS.iter().map(|w| w.to_string())))
                .filter(Stemmer::new(Language::English))
                .build(),
        );
        let s = index.schema();
        let field = |name: &str| s.get_field(name).map_err(err);
        let fields = Fields {
            key: field("key")?,
            doc: field("doc")?,
            title: field("title")?,
            text: field("text")?,
            ident: field("ident")?,
        };
        let writer = index.writer_with_num_threads(1, WRITER_BYTES).map_err(err)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(err)?;
        Ok(LexicalIndex { index, reader, writer: Mutex::new(writer), fields, dirty: Mutex::new(false), path })
    }

    /// Replaces document `doc`'s chunks with `chunks` (key, text); visible after
    /// [`LexicalIndex::commit`].
    pub fn replace(&self, doc: &DocId, title: &str, chunks: &[(u64, &str)]) -> Result<(), IndexError> {
        let writer = self.writer.lock();
        writer.delete_term(Term::from_field_text(self.fields.doc, &doc.hex()));
        for (key, text) in chunks {
            let mut d = TantivyDocument::default();
            d.add_u64(self.fields.key, *key);
            d.add_text(self.fields.doc, doc.hex());
            d.add_text(self.fields.title, title);
            d.add_text(self.fields.text, text);
            d.add_text(self.fields.ident, text);
            writer.add_document(d).map_err(err)?;
        }
        *self.dirty.lock() = true;
        Ok(())
    }

    /// Removes document `doc`'s chunks; visible after [`LexicalIndex::commit`].
    pub fn remove(&self, doc: &DocId) {
        self.writer.lock().delete_term(Term::from_field_text(self.fields.doc, &doc.hex()));
        *self.dirty.lock() = true;
    }

    /// Makes the writes so far durable and searchable (a no-op when there are none).
    pub fn commit(&self) -> Result<(), IndexError> {
        let mut dirty = self.dirty.lock();
        if !*dirty {
            return Ok(());
        }
        self.writer.lock().commit().map_err(err)?;
        self.reader.reload().map_err(err)?;
        *dirty = false;
        Ok(())
    }

    /// Every chunk of `store`, indexed anew.
    pub fn rebuild(&self, store: &DocStore) -> Result<(), IndexError> {
        {
            let writer = self.writer.lock();
            writer.delete_all_documents().map_err(err)?;
            for entry in store.docs() {
                let (id, record) = entry?;
                for key in &record.chunks {
                    let Some(chunk) = store.chunk(*key)? else { continue };
                    let mut d = TantivyDocument::default();
                    d.add_u64(self.fields.key, *key);
                    d.add_text(self.fields.doc, id.hex());
                    d.add_text(self.fields.title, &record.title);
                    let text = chunk.text()?;
                    d.add_text(self.fields.text, &text);
                    d.add_text(self.fields.ident, &text);
                    writer.add_document(d).map_err(err)?;
                }
            }
        }
        *self.dirty.lock() = true;
        self.commit()
    }

    /// The `k` chunks that match `query` best by BM25: (chunk key, score), best first.
    pub fn search(&self, query: &str, k: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        if k == 0 || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let mut parser =
            QueryParser::for_index(&self.index, vec![self.fields.title, self.fields.text, self.fields.ident]);
        parser.set_field_boost(self.fields.ident, IDENT_BOOST);
        let (query, _ignored) = parser.parse_query_lenient(query);
        let searcher = self.reader.searcher();
        let top = searcher.search(&query, &TopDocs::with_limit(k).order_by_score()).map_err(err)?;
        let mut out = Vec::with_capacity(top.len());
        for (score, address) in top {
            let d: TantivyDocument = searcher.doc(address).map_err(err)?;
            if let Some(key) = d.get_first(self.fields.key).and_then(|v| v.as_u64()) {
                out.push((key, score));
            }
        }
        Ok(out)
    }

    /// Chunks indexed (committed).
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes on disk.
    pub fn disk_bytes(&self) -> u64 {
        crate::dir_bytes(&self.path)
    }
}

/// Bytes the lexical index under `data_dir` takes on disk, open or not.
pub fn disk_bytes(data_dir: &Path) -> u64 {
    crate::dir_bytes(&data_dir.join(DIR))
}

#[cfg(test)]
mod tests {
    use super::identifiers;

    fn idents(text: &str) -> Vec<&str> {
        identifiers(text).into_iter().map(|(a, b)| &text[a..b]).collect()
    }

    #[test]
    fn identifiers_are_joined_words_kept_whole() {
        assert_eq!(
            idents("Set work_mem, not maintenance_work_mem; see pg_hba.conf. Plain words are not."),
            ["work_mem", "maintenance_work_mem", "pg_hba.conf"]
        );
        assert_eq!(idents("_private_ x86_64 std::fs::read -- a - b 10:30 end."), ["x86_64", "std::fs::read", "10:30"]);
        assert_eq!(idents("émigré_été …_x"), ["émigré_été"]);
        assert!(idents("").is_empty() && idents("___ ... ::").is_empty());
    }
}
