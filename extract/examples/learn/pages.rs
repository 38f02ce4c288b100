//! The pages trained and tested on: both dev sets, the pinned pages and any extra labelled
//! pages, each with its blocks' features, labels and weights, in folds by site.

use crate::arg;
use std::collections::BTreeMap;
use url::Url;
use weft_extract::devset::{self, DevSet};
use weft_extract::learned::features;
use weft_extract::learned::labels::Truth;

pub(crate) struct Page {
    pub(crate) set: &'static str,
    pub(crate) id: String,
    pub(crate) kind: String,
    pub(crate) url: Url,
    pub(crate) html: Vec<u8>,
    pub(crate) truth: String,
    pub(crate) fold: usize,
    /// The hash of the page's site: the outer folds take it modulo the fold count, the inner
    /// ones (a later stage's training) a different split of it.
    pub(crate) site_hash: u64,
    pub(crate) rows: Vec<[f32; features::COUNT]>,
    pub(crate) parents: Vec<u32>,
    pub(crate) chars: Vec<u32>,
    /// Each block's hashed words (`--lexicon`).
    pub(crate) tokens: Vec<Vec<u32>>,
    pub(crate) labels: Vec<bool>,
    pub(crate) weights: Vec<f32>,
    /// More columns for each block (`--reference-feature`), empty when none.
    pub(crate) extra: Vec<Vec<f32>>,
}

impl Page {
    /// Block `b`'s features as the trees read them: its row and any extra columns.
    pub(crate) fn row(&self, b: usize) -> Vec<f32> {
        let mut r = self.rows[b].to_vec();
        if let Some(e) = self.extra.get(b) {
            r.extend_from_slice(e);
        }
        r
    }
}

/// The site a page belongs to, for grouping: its host without a leading `www.`.
pub(crate) fn site(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    host.strip_prefix("www.").unwrap_or(host).to_string()
}

pub(crate) fn load(folds: usize) -> Vec<Page> {
    let uniform = std::env::args().any(|a| a == "--uniform");
    let truth_weights = std::env::args().any(|a| a == "--truth-weights");
    let cap: f32 = arg("--cap", 8.0);
    let type_weight: f32 = arg("--type-weight", 1.0);
    let mut pages = Vec::new();
    for set in [devset::NEWS, devset::MODERN] {
        let DevSet { name, .. } = set;
        let Some(dir) = set.locate(None) else {
            eprintln!("learn: the dev set {name} is not there (set {} or put it in ../shared)", set.env_var);
            std::process::exit(2);
        };
        for p in devset::load(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let url = Url::parse(&p.url).unwrap_or_else(|_| Url::parse("https://unknown.invalid/").unwrap());
            let site_hash = xxhash_rust::xxh3::xxh3_64(site(&url).as_bytes());
            let fold = (site_hash % folds as u64) as usize;
            let truth = Truth::new(&p.truth);
            let blocks = weft_extract::block_rows(&p.html, &url);
            let words: Vec<f32> = blocks.iter().map(|b| b.text.split_whitespace().count() as f32 + 1.0).collect();
            let total: f32 = words.iter().sum::<f32>().max(1.0);
            let labels = blocks.iter().map(|b| truth.share(&b.text) >= 0.5).collect();
            let rows = blocks.iter().map(|b| b.features).collect();
            let parents = blocks.iter().map(|b| b.parent).collect();
            let chars = blocks.iter().map(|b| b.chars).collect();
            let tokens = blocks.iter().map(|b| b.tokens.clone()).collect();
            // `--truth-weights`: a block's error moves its page's precision or recall by about its
            // length over the truth's, so weigh it so (each page's sum capped at `--cap`, 8)
            // rather than by its share of the page.
            // (`w / total` as it was without: the same bits, so earlier runs repeat exactly.)
            let truth_words = p.truth.split_whitespace().count().max(20) as f32;
            let scale = (total / truth_words).min(cap);
            // `--type-weight X`: a page of the modern set that is not an article weighs X pages
            // (the page type is the set's label: it steers training only, never a prediction).
            let page_weight = if set.name == devset::MODERN.name && p.kind != "article" { type_weight } else { 1.0 };
            let weights = words
                .iter()
                .map(|w| match (uniform, truth_weights) {
                    (true, _) => 1.0 / words.len() as f32,
                    (false, true) => w * scale / total,
                    (false, false) => w / total,
                } * page_weight)
                .collect();
            pages.push(Page {
                set: name,
                id: p.id,
                kind: p.kind,
                url,
                html: p.html,
                truth: p.truth,
                fold,
                site_hash,
                rows,
                parents,
                chars,
                tokens,
                labels,
                weights,
                extra: Vec::new(),
            });
        }
    }
    pages
}

/// The pinned pages (`extract/tests/pinned`): small pages, each with its main text, that pin a
/// behaviour the dev sets show too rarely for the trees to learn it (a thread's comments, an
/// author box, teasers after an article...). The extract crate's fixture tests check the model
/// keeps to them; here they join every fold's training, never its testing, each weighing
/// `--pinned-weight` dev-set pages (`--no-pinned` leaves them out).
pub(crate) fn load_pinned() -> Vec<Page> {
    if std::env::args().any(|a| a == "--no-pinned") {
        return Vec::new();
    }
    let weight: f32 = arg("--pinned-weight", PINNED_WEIGHT);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pinned");
    let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|path| {
            let read = |ext: &str| {
                let p = path.with_extension(ext);
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            };
            let html = read("html").into_bytes();
            let truth = read("txt");
            let url = Url::parse(read("url").trim()).expect("a pinned page's URL");
            let blocks = weft_extract::block_rows(&html, &url);
            let t = Truth::new(&truth);
            let labels = blocks.iter().map(|b| t.share(&b.text) >= 0.5).collect();
            let words: Vec<f32> = blocks.iter().map(|b| b.text.split_whitespace().count() as f32 + 1.0).collect();
            let total: f32 = words.iter().sum::<f32>().max(1.0);
            Page {
                set: "pinned",
                id: path.file_stem().unwrap_or_default().to_string_lossy().into_owned(),
                kind: "pinned".into(),
                site_hash: xxhash_rust::xxh3::xxh3_64(site(&url).as_bytes()),
                url,
                html,
                truth,
                fold: usize::MAX,
                rows: blocks.iter().map(|b| b.features).collect(),
                parents: blocks.iter().map(|b| b.parent).collect(),
                chars: blocks.iter().map(|b| b.chars).collect(),
                tokens: blocks.iter().map(|b| b.tokens.clone()).collect(),
                labels,
                weights: words.iter().map(|w| weight * w / total).collect(),
                extra: Vec::new(),
            }
        })
        .collect()
}

pub(crate) const PINNED_WEIGHT: f32 = 5.0;

/// `--extra FILE`: more labelled pages, for training only (never tested): JSON lines of
/// `{url, site, path, with: [sentences kept], without: [sentences dropped]}`, as
/// `extract/references/extra_training.py` writes them from trafilatura's evaluation corpus, or
/// `{url, site, path, truth}` with the page's whole main text, as
/// `extract/references/full_training.py` writes them from older public benchmarks. With a
/// truth every block is labelled as a dev-set page's are; else a block holding a "with"
/// sentence is labelled kept, one holding a "without" sentence dropped, and the rest carry no
/// label and no weight. Pages of a dev set's site are left out (they would leak across the
/// folds). Each page's labelled blocks weigh `--extra-weight` (1) together, as
/// a dev-set page's blocks weigh 1.

/// What a pinned page weighs, in dev-set pages.
pub(crate) fn load_extra(path: &str, dev_sites: &std::collections::HashSet<String>) -> Vec<Page> {
    let squash = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let weight: f32 = arg("--extra-weight", 1.0);
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let (mut pages, mut leaked, mut unlabelled) = (Vec::new(), 0, 0);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let strs = |k: &str| -> Vec<String> {
            v[k].as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s.as_str())
                .map(squash)
                .filter(|s| !s.is_empty())
                .collect()
        };
        let (with, without) = (strs("with"), strs("without"));
        let Ok(url) = Url::parse(v["url"].as_str().unwrap_or_default()) else { continue };
        if dev_sites.contains(v["site"].as_str().unwrap_or_default()) || dev_sites.contains(&site(&url)) {
            leaked += 1;
            continue;
        }
        let Ok(html) = std::fs::read(v["path"].as_str().unwrap_or_default()) else { continue };
        let blocks = weft_extract::block_rows(&html, &url);
        let truth = v["truth"].as_str().map(Truth::new);
        let labels: Vec<Option<bool>> = blocks
            .iter()
            .map(|b| {
                if let Some(truth) = &truth {
                    return Some(truth.share(&b.text) >= 0.5);
                }
                let t = squash(&b.text);
                let kept = with.iter().any(|w| t.contains(w.as_str()));
                let dropped = without.iter().any(|w| t.contains(w.as_str()));
                match (kept, dropped) {
                    (true, false) => Some(true),
                    (false, true) => Some(false),
                    _ => None,
                }
            })
            .collect();
        let words: Vec<f32> = blocks.iter().map(|b| b.text.split_whitespace().count() as f32 + 1.0).collect();
        let total: f32 = labels.iter().zip(&words).filter(|(l, _)| l.is_some()).map(|(_, w)| w).sum();
        if total == 0.0 {
            unlabelled += 1;
            continue;
        }
        let site_hash = xxhash_rust::xxh3::xxh3_64(site(&url).as_bytes());
        pages.push(Page {
            set: "extra",
            id: v["site"].as_str().unwrap_or_default().to_string(),
            kind: "extra".into(),
            url,
            html: Vec::new(),
            truth: String::new(),
            fold: usize::MAX,
            site_hash,
            rows: blocks.iter().map(|b| b.features).collect(),
            parents: blocks.iter().map(|b| b.parent).collect(),
            chars: blocks.iter().map(|b| b.chars).collect(),
            tokens: blocks.iter().map(|b| b.tokens.clone()).collect(),
            labels: labels.iter().map(|l| l.unwrap_or(false)).collect(),
            weights: labels
                .iter()
                .zip(&words)
                .map(|(l, w)| if l.is_some() { weight * w / total } else { 0.0 })
                .collect(),
            extra: Vec::new(),
        });
    }
    let blocks: usize = pages.iter().map(|p| p.weights.iter().filter(|&&w| w > 0.0).count()).sum();
    println!(
        "extra: {} pages, {blocks} labelled blocks (left out: {leaked} of a dev set's site, {unlabelled} with no sentence found in a block)",
        pages.len()
    );
    pages
}

/// Each set the pages came from, with how many and a hash of their ids, HTML and truths: a
/// model file names what it was trained on, so the same command can be checked to see the same
/// inputs.
pub(crate) fn inputs(pages: &[Page]) -> Vec<String> {
    let mut sets: BTreeMap<&str, (usize, xxhash_rust::xxh3::Xxh3)> = BTreeMap::new();
    for p in pages {
        let (n, h) = sets.entry(p.set).or_insert_with(|| (0, xxhash_rust::xxh3::Xxh3::new()));
        *n += 1;
        for part in [p.id.as_bytes(), &p.html, p.truth.as_bytes()] {
            h.update(&(part.len() as u64).to_le_bytes());
            h.update(part);
        }
    }
    sets.iter().map(|(set, (n, h))| format!("{set}, {n} pages, xxh3-64 {:016x}", h.digest())).collect()
}
