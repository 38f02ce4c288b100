//! Does prefixing each chunk with its page's title help retrieval? Indexes the same pages twice
//! — `index.title_prefix` on and off — and asks both the same questions; prints hit@1 and MRR@10
//! of the page each question is about.
//!
//! ```sh
//! cargo run --release -p weft-simnet --example eval_title -- [DEVSET_DIR]
//! ```
//!
//! Three kinds of question:
//! - the topic web's thirty paraphrased questions (`weft_simnet::TOPICS`: short pages);
//! - the dev set's pages asked by their own meta description (a human summary of the page, the
//!   closest thing to a real query; pages whose description is copied into the text are left
//!   out), from `DEVSET_DIR`, `$EXTRACTION_DEVSET` or `../shared/extraction-devset`;
//! - the dev set's pages asked by a sentence from the middle of their text (a passage search:
//!   where a title prefix could only dilute).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use unicode_segmentation::UnicodeSegmentation;
use weft_config::IndexConfig;
use weft_index::{Document, Embedder, Indexer, LocalIndex};

struct Question {
    text: String,
    url: String,
}

fn documents(devset: Option<&Path>) -> (Vec<Document>, Vec<(&'static str, Vec<Question>)>) {
    let mut docs = Vec::new();
    let mut topics = Vec::new();
    for t in weft_simnet::TOPICS {
        let url = format!("http://topics.test/t/{}", t.slug);
        docs.push(Document {
            url: url.clone(),
            title: t.title.into(),
            text: t.paragraphs.join("\n\n"),
            ..Default::default()
        });
        topics.push(Question { text: t.question.into(), url });
    }
    let mut kinds = vec![("topic web questions", topics)];
    let Some(dir) = weft_extract::devset::locate(devset) else {
        println!("dev set absent (pass its directory or set {}): topic web only", weft_extract::devset::ENV_VAR);
        return (docs, kinds);
    };
    let pages = weft_extract::devset::load(&dir).expect("load the dev set");
    let (mut described, mut passages) = (Vec::new(), Vec::new());
    for p in pages {
        let url = url::Url::parse(&p.url).unwrap_or_else(|_| url::Url::parse("http://devset.invalid/").unwrap());
        let e = weft_extract::extract(&p.html, &[], &url);
        let doc_url = format!("{}#{}", p.url, &p.id[..8]);
        if let Some(d) = e.metadata.description.as_deref().map(str::trim) {
            let prefix: String = d.chars().take(60).collect();
            if d.split_whitespace().count() >= 6 && !e.text.contains(&prefix) {
                described.push(Question { text: d.to_string(), url: doc_url.clone() });
            }
        }
        let sentences: Vec<&str> = e.text.unicode_sentences().filter(|s| s.split_whitespace().count() >= 10).collect();
        if sentences.len() >= 6 {
            passages
                .push(Question { text: sentences[sentences.len() * 3 / 5].trim().to_string(), url: doc_url.clone() });
        }
        docs.push(Document {
            url: doc_url,
            title: e.metadata.title.clone().unwrap_or_default(),
            text: e.text,
            description: e.metadata.description.clone(),
            ..Default::default()
        });
    }
    kinds.push(("dev-set pages by their description", described));
    kinds.push(("dev-set pages by a mid-text sentence", passages));
    (docs, kinds)
}

fn main() {
    let devset: Option<PathBuf> = std::env::args().nth(1).map(PathBuf::from);
    let (docs, kinds) = documents(devset.as_deref());
    let embed = weft_index::testing::embed_config();
    let mut query = Embedder::open(&embed, 0).unwrap();
    let mut indexes = Vec::new();
    for prefix in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path().join("db")).unwrap();
        // Dedup off: both indexes must hold exactly the same documents.
        let config = IndexConfig { title_prefix: prefix, dedup_max_distance: 0, ..IndexConfig::default() };
        let index = Arc::new(LocalIndex::open(&db, dir.path(), embed.dims, &config).unwrap());
        let mut indexer = Indexer::new(index.clone(), &embed, &config).unwrap();
        let started = std::time::Instant::now();
        for batch in docs.chunks(16) {
            indexer.index(batch.to_vec()).unwrap();
        }
        println!(
            "title prefix {}: {} documents, {} chunks, indexed in {:.1} s",
            if prefix { "on " } else { "off" },
            index.stats().documents,
            index.stats().chunks,
            started.elapsed().as_secs_f64()
        );
        indexes.push((prefix, index, dir, db));
    }
    println!("\n{:<40} {:>5} {:>16} {:>16}", "questions", "n", "prefix on @1/MRR", "prefix off @1/MRR");
    for (kind, questions) in &kinds {
        let texts: Vec<&str> = questions.iter().map(|q| q.text.as_str()).collect();
        let vectors = query.embed(&texts).unwrap();
        let mut row = format!("{kind:<40} {:>5}", questions.len());
        for (_, index, _, _) in &indexes {
            let (mut top, mut mrr) = (0.0, 0.0);
            for (q, v) in questions.iter().zip(&vectors) {
                let hits = index.search(v, 10).unwrap();
                if let Some(rank) = hits.iter().position(|h| h.page.url == q.url) {
                    mrr += 1.0 / (rank + 1) as f64;
                    if rank == 0 {
                        top += 1.0;
                    }
                }
            }
            let n = questions.len().max(1) as f64;
            row.push_str(&format!("      {:.3}/{:.3}", top / n, mrr / n));
        }
        println!("{row}");
    }
}
