//! Trains the learned block classifier on the dev sets and measures it out of fold (issue 38).
//!
//! ```text
//! bash scripts/extract-references.sh                                  # once: the references' predictions
//! cargo run --release -p weft-extract --example learn                 # out-of-fold figures
//! cargo run --release -p weft-extract --example learn -- --trees 200 --depth 8
//! cargo run --release -p weft-extract --example learn -- --write      # and ship a model trained on all
//! ```
//!
//! Both dev sets (`../shared`, or `EXTRACTION_DEVSET` / `EXTRACTION_DEVSET_2`) are pooled and
//! cut into `--folds` folds (5) **by site**: every page of one host falls in one fold, so no site
//! is both trained on and tested on. Each fold's pages are extracted with a model trained on the
//! other folds and scored with the sets' metric; the figures printed are those out-of-fold
//! scores at four thresholds, per set and per page type, beside the rules alone on the same
//! pages (the rules were written against these pages: theirs are in-sample figures, labelled
//! so), the training labels' ceiling, and trafilatura and rs-trafilatura when
//! `scripts/extract-references.sh` has written their predictions. Then the median time per
//! page, rules and model.
//!
//! Options: `--trees N`, `--depth N`, `--rate X` (the trainer's); `--stages 2` adds a second
//! stage over the first's probabilities (`--inner N` folds by site for its training data);
//! `--uniform` weighs blocks equally instead of by length; `--in-sample` trains on the tested
//! fold too (how well the features can fit at all); `--worst` lists the pages the model loses
//! most on against the labels; `--page ID,ID` prints those pages' blocks with label and
//! probability; `--oracle` prints what choosing per page between the model and each reference
//! could reach at best (the ceiling of an ensemble); `--dump FILE` writes each page's
//! out-of-fold text and block probabilities (for `extract/references/selector_study.py`);
//! `--extra FILE` adds labelled pages to every fold's training (partially labelled from
//! `extract/references/extra_training.py`, fully from `full_training.py`; `--extra-weight X`
//! weighs each such page, 1 by default); `--reference-feature NAME` gives every block four
//! columns from a reference's text of the page (an ensemble block by block); `--truth-weights`
//! weighs a block by its length over the truth's (`--cap X` a page's sum); `--by-verdict`
//! chooses a threshold for each of the rules' verdicts on the other folds and reports it out of
//! fold; `--type-weight X` weighs the modern set's non-article pages X pages each. The pinned
//! pages (`extract/tests/pinned`) join every fold's training (`--pinned-weight X`, 5;
//! `--no-pinned`). `--write` then trains on every page and writes
//! `extract/src/learned/model.txt`, the model `weft extract` and the node ship, under a header
//! naming the command, the inputs and the checksum of its lines.

use std::collections::BTreeMap;
use std::time::Instant;
use url::Url;
use weft_extract::devset::{self, DevSet, PageScore};
use weft_extract::learned::labels::Truth;
use weft_extract::learned::tokens::Lexicon;
use weft_extract::learned::train::{self, Params};
use weft_extract::learned::{features, Model, Provenance, Selector};

struct Page {
    set: &'static str,
    id: String,
    kind: String,
    url: Url,
    html: Vec<u8>,
    truth: String,
    fold: usize,
    /// The hash of the page's site: the outer folds take it modulo the fold count, the inner
    /// ones (a later stage's training) a different split of it.
    site_hash: u64,
    rows: Vec<[f32; features::COUNT]>,
    parents: Vec<u32>,
    chars: Vec<u32>,
    /// Each block's hashed words (`--lexicon`).
    tokens: Vec<Vec<u32>>,
    labels: Vec<bool>,
    weights: Vec<f32>,
    /// More columns for each block (`--reference-feature`), empty when none.
    extra: Vec<Vec<f32>>,
}

impl Page {
    /// Block `b`'s features as the trees read them: its row and any extra columns.
    fn row(&self, b: usize) -> Vec<f32> {
        let mut r = self.rows[b].to_vec();
        if let Some(e) = self.extra.get(b) {
            r.extend_from_slice(e);
        }
        r
    }
}

/// The site a page belongs to, for grouping: its host without a leading `www.`.
fn site(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    host.strip_prefix("www.").unwrap_or(host).to_string()
}

/// The value after `name` on the command line, if it is there.
fn arg_str(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    arg_str(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn load(folds: usize) -> Vec<Page> {
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
fn load_pinned() -> Vec<Page> {
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

/// What a pinned page weighs, in dev-set pages.
const PINNED_WEIGHT: f32 = 5.0;

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
fn load_extra(path: &str, dev_sites: &std::collections::HashSet<String>) -> Vec<Page> {
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

/// Trains a model of `stages` stages on `pages`. A later stage is trained on what the stage
/// before thinks of pages it was not trained on (an inner cross-validation by site, like the
/// outer one), so that it learns how far to trust that stage on unseen sites.
fn train_on(pages: &[&Page], params: Params, stages: usize, inner_folds: usize) -> Model {
    let first = |pages: &[&Page]| {
        let (rows, labels, weights) = labelled(pages, |p, b| p.row(b));
        train::train(&rows, &labels, &weights, params)
    };
    let mut model = Model { stages: vec![first(pages)] };
    // A later stage needs every block of a page labelled: the dev sets' pages only.
    let pages: Vec<&Page> = pages.iter().copied().filter(|p| p.set != "extra").collect();
    let pages = &pages[..];
    for _ in 1..stages {
        // What the model so far says of each page, from models that did not see its site.
        let mut seen: Vec<Vec<f32>> = vec![Vec::new(); pages.len()];
        for inner in 0..inner_folds {
            let group = |p: &Page| ((p.site_hash >> 32) % inner_folds as u64) as usize == inner;
            let train_pages: Vec<&Page> = pages.iter().copied().filter(|p| !group(p)).collect();
            let mut partial = Model { stages: vec![first(&train_pages)] };
            partial.stages.extend(model.stages[1..].iter().cloned());
            for (k, p) in pages.iter().enumerate().filter(|(_, p)| group(p)) {
                seen[k] = partial.probabilities(&p.rows, &p.parents, &p.chars);
            }
        }
        let (mut rows, mut labels, mut weights) = (Vec::new(), Vec::new(), Vec::new());
        for (p, probs) in pages.iter().zip(&seen) {
            for (x, c) in p.rows.iter().zip(features::context(&p.parents, &p.chars, probs)) {
                let mut wide = x.to_vec();
                wide.extend_from_slice(&c);
                rows.push(wide);
            }
            labels.extend(&p.labels);
            weights.extend(&p.weights);
        }
        model.stages.push(train::train(&rows, &labels, &weights, params));
    }
    model
}

/// A lexicon ([`weft_extract::learned::tokens`]) trained on `pages`' labelled blocks.
fn lexicon_on(pages: &[&Page], epochs: usize, l2: f32) -> Lexicon {
    let (rows, labels, weights) = labelled(pages, |p, b| p.tokens[b].as_slice());
    train::train_lexicon(&rows, &labels, &weights, epochs, l2)
}

/// The labelled blocks of `pages` (an extra page's unlabelled ones weigh nothing and are left
/// out), each as `row` makes it, with its label and weight.
fn labelled<'p, T>(pages: &[&'p Page], row: impl Fn(&'p Page, usize) -> T) -> (Vec<T>, Vec<bool>, Vec<f32>) {
    let (mut rows, mut labels, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for p in pages {
        for (b, (&l, &w)) in p.labels.iter().zip(&p.weights).enumerate().filter(|(_, (_, &w))| w > 0.0) {
            rows.push(row(p, b));
            labels.push(l);
            weights.push(w);
        }
    }
    (rows, labels, weights)
}

/// The mean of `values` over the three places either side of `i` (main text is contiguous).
fn around(values: &[f32], i: usize) -> f32 {
    let near: Vec<f32> =
        (i.saturating_sub(3)..(i + 4).min(values.len())).filter(|&j| j != i).map(|j| values[j]).collect();
    if near.is_empty() {
        0.0
    } else {
        near.iter().sum::<f32>() / near.len() as f32
    }
}

/// What the trees see of a page's lexicon scores for each block: its own, the mean of the
/// three either side (main text is contiguous), and its own less the page's median.
fn lexicon_columns(scores: &[f32]) -> Vec<[f32; 3]> {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f32::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    (0..scores.len()).map(|i| [scores[i], around(scores, i), scores[i] - median]).collect()
}

/// `--lexicon`: the trees with one more feature, a lexicon's score of the block. The trees are
/// trained on scores of pages the lexicon did not see (inner folds by site), as a later stage
/// is, so they learn how far to trust it on unseen sites. Returns each test page's block
/// probabilities, and the lexicon's own.
fn stacked(
    train_pages: &[&Page],
    test: &[&Page],
    params: Params,
    inner: usize,
    epochs: usize,
    l2: f32,
) -> Vec<(Vec<f32>, Vec<f32>)> {
    let mut seen: Vec<Vec<f32>> = vec![Vec::new(); train_pages.len()];
    for k in 0..inner {
        let group = |p: &Page| ((p.site_hash >> 32) % inner as u64) as usize == k;
        let others: Vec<&Page> = train_pages.iter().copied().filter(|p| !group(p)).collect();
        let lexicon = lexicon_on(&others, epochs, l2);
        for (i, p) in train_pages.iter().enumerate().filter(|(_, p)| group(p)) {
            seen[i] = p.tokens.iter().map(|t| lexicon.score(t)).collect();
        }
    }
    let (mut rows, mut labels, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (p, scores) in train_pages.iter().zip(&seen) {
        let columns = lexicon_columns(scores);
        for (b, ((&l, &w), c)) in
            p.labels.iter().zip(&p.weights).zip(&columns).enumerate().filter(|(_, ((_, &w), _))| w > 0.0)
        {
            let mut wide = p.row(b);
            wide.extend_from_slice(c);
            rows.push(wide);
            labels.push(l);
            weights.push(w);
        }
    }
    let forest = train::train(&rows, &labels, &weights, params);
    let lexicon = lexicon_on(train_pages, epochs, l2);
    test.iter()
        .map(|p| {
            let lex: Vec<f32> = p.tokens.iter().map(|t| lexicon.score(t)).collect();
            let probs = lexicon_columns(&lex)
                .iter()
                .enumerate()
                .map(|(b, c)| {
                    let mut wide = p.row(b);
                    wide.extend_from_slice(c);
                    forest.probability(&wide)
                })
                .collect();
            (probs, lex.iter().map(|&s| 1.0 / (1.0 + (-s).exp())).collect())
        })
        .collect()
}

fn score(p: &Page, selector: Selector<'_>) -> PageScore {
    let (e, _) = weft_extract::extract_with(&p.html, &[], &p.url, selector);
    devset::score_page(&p.truth, &e.text)
}

/// The reference extractors' predictions for the dev sets, written by
/// `scripts/extract-references.sh`: per extractor, `(set, id)` → (text, milliseconds).
type Predictions = BTreeMap<(String, String), (String, f64)>;

fn references() -> Vec<(&'static str, Predictions)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/extract-references");
    let mut out = Vec::new();
    for name in ["trafilatura", "rs-trafilatura"] {
        let mut predictions = Predictions::new();
        for set in [devset::NEWS.name, devset::MODERN.name] {
            let path = dir.join(format!("{name}-{set}.json"));
            let Ok(bytes) = std::fs::read(&path) else { continue };
            let v: serde_json::Value = serde_json::from_slice(&bytes).expect("predictions are JSON");
            for (id, p) in v.as_object().into_iter().flatten() {
                let text = p["articleBody"].as_str().unwrap_or_default().to_string();
                predictions.insert((set.to_string(), id.clone()), (text, p["ms"].as_f64().unwrap_or(f64::NAN)));
            }
        }
        if predictions.is_empty() {
            eprintln!("learn: no {name} predictions in {} (run scripts/extract-references.sh)", dir.display());
        } else {
            out.push((name, predictions));
        }
    }
    out
}

/// `--reference-feature NAME`: what a reference extractor kept, as four more columns of each
/// block — the share of its word trigrams in the reference's text (as a training label is
/// aligned with the truth), the mean share of the three blocks either side, the reference's
/// length against the page's text (ln of the word counts' ratio) and whether it kept nothing.
/// The trees then learn, block by block, when to side with the reference: an ensemble finer
/// than choosing one extractor's whole text per page.
fn reference_columns(p: &Page, reference: &str) -> Vec<Vec<f32>> {
    let truth = Truth::new(reference);
    let blocks = weft_extract::block_rows(&p.html, &p.url);
    let shares: Vec<f32> = blocks.iter().map(|b| truth.share(&b.text)).collect();
    let page_words: usize = blocks.iter().map(|b| b.text.split_whitespace().count()).sum();
    let ref_words = reference.split_whitespace().count();
    let ratio = ((1 + ref_words) as f32 / (1 + page_words) as f32).ln();
    let empty = f32::from(u8::from(ref_words == 0));
    (0..shares.len()).map(|i| vec![shares[i], around(&shares, i), ratio, empty]).collect()
}

/// Every block's probability under `model`, reading the extra columns when the page has them
/// (a model trained with them has one stage).
fn probabilities(model: &Model, p: &Page) -> Vec<f32> {
    if p.extra.is_empty() {
        return model.probabilities(&p.rows, &p.parents, &p.chars);
    }
    assert_eq!(model.stages.len(), 1, "--reference-feature trains one stage");
    (0..p.rows.len()).map(|b| model.stages[0].probability(&p.row(b))).collect()
}

/// Each set the pages came from, with how many and a hash of their ids, HTML and truths: a
/// model file names what it was trained on, so the same command can be checked to see the same
/// inputs.
fn inputs(pages: &[Page]) -> Vec<String> {
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

/// The thresholds `--by-verdict` tries: for blocks the rules kept, for blocks they judged
/// interface or edge lines inside the content, and for blocks in boilerplate or outside it.
const KEPT_T: [f32; 4] = [0.3, 0.4, 0.5, 0.6];
const INSIDE_T: [f32; 4] = [0.4, 0.5, 0.6, 0.7];
const BOILER_T: [f32; 4] = [0.5, 0.6, 0.75, 0.9];

/// `--by-verdict`: a threshold for each of the rules' verdicts instead of one — the trees see
/// the verdicts, but a block in a page's footer or beside its content needs more evidence to be
/// kept than one the rules already kept. For each fold the three thresholds are chosen on the
/// other folds' out-of-fold pages (the mean of both sets' F1), then applied to it: every figure
/// printed is out of fold, thresholds included.
fn by_verdict(pages: &[Page], index: &[usize], probs: &[Vec<f32>], groups: &BTreeMap<(String, String), Vec<usize>>) {
    let combos: Vec<[f32; 3]> = KEPT_T
        .iter()
        .flat_map(|&k| INSIDE_T.iter().flat_map(move |&i| BOILER_T.iter().map(move |&b| [k, i, b])))
        .collect();
    // Each tested page's score under each combination; a page's text depends only on its flags.
    let scores: Vec<Vec<PageScore>> = index
        .iter()
        .zip(probs)
        .map(|(&i, probs)| {
            let p = &pages[i];
            let mut seen: std::collections::HashMap<Vec<bool>, PageScore> = std::collections::HashMap::new();
            combos
                .iter()
                .map(|t| {
                    let flags: Vec<bool> =
                        p.rows.iter().zip(probs).map(|(r, &x)| x >= verdict_threshold(r, *t)).collect();
                    *seen.entry(flags.clone()).or_insert_with(|| score(p, Selector::Given(&flags)))
                })
                .collect()
        })
        .collect();
    let f1_of = |ks: &[usize], c: usize| {
        let mut by_set: BTreeMap<&str, Vec<PageScore>> = BTreeMap::new();
        for &k in ks {
            by_set.entry(pages[index[k]].set).or_default().push(scores[k][c]);
        }
        by_set.values().map(|v| devset::summarize(v).f1).sum::<f64>() / by_set.len().max(1) as f64
    };
    let folds = pages.iter().map(|p| p.fold).filter(|&f| f != usize::MAX).max().unwrap_or(0) + 1;
    let mut chosen: Vec<PageScore> = vec![PageScore { tp: 0.0, fp: 0.0, fn_: 0.0, exact: false }; index.len()];
    for fold in 0..folds {
        let others: Vec<usize> = (0..index.len()).filter(|&k| pages[index[k]].fold != fold).collect();
        let best = (0..combos.len()).max_by(|&a, &b| f1_of(&others, a).total_cmp(&f1_of(&others, b))).unwrap_or(0);
        println!("by verdict, fold {fold}: kept / inside / boiler thresholds {:?}", combos[best]);
        for k in (0..index.len()).filter(|&k| pages[index[k]].fold == fold) {
            chosen[k] = scores[k][best];
        }
    }
    let all: Vec<usize> = (0..index.len()).collect();
    let best = (0..combos.len()).max_by(|&a, &b| f1_of(&all, a).total_cmp(&f1_of(&all, b))).unwrap_or(0);
    println!(
        "\nthresholds by the rules' verdict, chosen out of fold (and, in-sample on all pages, {:?}):",
        combos[best]
    );
    for ((set, kind), ks) in groups {
        let pick = |c: Option<usize>| -> f64 {
            devset::summarize(&ks.iter().map(|&k| c.map_or(chosen[k], |c| scores[k][c])).collect::<Vec<_>>()).f1
        };
        println!(
            "{set:<22} {kind:<14} {:>5}  out of fold {:.3}  in-sample {:.3}",
            ks.len(),
            pick(None),
            pick(Some(best))
        );
    }
}

/// The threshold a block's probability must reach, by the rules' verdict on it (its first five
/// features are the verdict, one-hot: kept, interface, edge, boilerplate, outside).
fn verdict_threshold(row: &[f32; features::COUNT], t: [f32; 3]) -> f32 {
    if row[0] > 0.5 {
        t[0]
    } else if row[1] > 0.5 || row[2] > 0.5 {
        t[1]
    } else {
        t[2]
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let folds: usize = arg("--folds", 5);
    let params = Params {
        trees: arg("--trees", Params::default().trees),
        depth: arg("--depth", Params::default().depth),
        learning_rate: arg("--rate", Params::default().learning_rate),
        lambda: arg("--lambda", Params::default().lambda),
        min_child: arg("--min-child", Params::default().min_child),
        subsample: arg("--subsample", Params::default().subsample),
        colsample: arg("--colsample", Params::default().colsample),
    };
    let thresholds = [0.3f32, 0.4, 0.5, 0.6];
    let stages: usize = arg("--stages", 1);
    let inner: usize = arg("--inner", 3);
    let started = Instant::now();
    let mut pages = load(folds);
    pages.extend(load_pinned());
    if let Some(path) = arg_str("--extra") {
        let dev_sites = pages.iter().map(|p| site(&p.url)).collect();
        pages.extend(load_extra(&path, &dev_sites));
    }
    let rows: usize = pages.iter().map(|p| p.rows.len()).sum();
    println!(
        "{} pages, {} blocks, {} features, {} folds by site; loaded in {:.1} s",
        pages.len(),
        rows,
        features::COUNT,
        folds,
        started.elapsed().as_secs_f64()
    );
    // Out of fold: each page scored by a model that never saw its site.
    let mut oof: Vec<Vec<PageScore>> = vec![Vec::new(); thresholds.len()];
    let mut index = Vec::new();
    // Each tested page's out-of-fold block probabilities, in `index`'s order.
    let mut oof_probs: Vec<Vec<f32>> = Vec::new();
    let mut last = Model::default();
    // `--dump PATH`: every page's out-of-fold text and block probabilities as JSON lines, for
    // studying a selector between extractors outside this program.
    let refs = references();
    if let Some(name) = arg_str("--reference-feature") {
        // Its trees read four more columns than a shipped model's: there is nothing to `--write`.
        let write = std::env::args().any(|a| a == "--write");
        assert!(
            stages == 1 && arg_str("--extra").is_none() && !write,
            "--reference-feature: one stage, the dev sets only, no --write"
        );
        let Some((_, pr)) = refs.iter().find(|(n, _)| *n == name) else {
            eprintln!("learn: no {name} predictions (run scripts/extract-references.sh)");
            std::process::exit(2);
        };
        for p in &mut pages {
            let text = pr.get(&(p.set.to_string(), p.id.clone())).map_or("", |(t, _)| t.as_str());
            p.extra = reference_columns(p, text);
        }
        println!("with {name}'s text as 4 more columns of every block");
    }
    let mut dump = arg_str("--dump")
        .map(|path| std::io::BufWriter::new(std::fs::File::create(&path).unwrap_or_else(|e| panic!("{path}: {e}"))));
    // `--in-sample`: train on every page, the tested fold's too — how well the model can fit at
    // all, to tell a model short of features from one that does not generalise.
    let in_sample = std::env::args().any(|a| a == "--in-sample");
    let look: Vec<String> = arg_str("--page").map(|s| s.split(',').map(str::to_string).collect()).unwrap_or_default();
    let lexicon = std::env::args().any(|a| a == "--lexicon");
    let (epochs, l2): (usize, f32) = (arg("--epochs", 3), arg("--l2", 1e-4));
    let mut lexicon_alone: Vec<PageScore> = Vec::new();
    for fold in 0..folds {
        let t = Instant::now();
        let train_pages: Vec<&Page> = pages.iter().filter(|p| in_sample || p.fold != fold).collect();
        if lexicon {
            let test: Vec<&Page> = pages.iter().filter(|p| p.fold == fold).collect();
            let probs = stacked(&train_pages, &test, params, inner, epochs, l2);
            for (p, (probs, lex)) in test.iter().zip(&probs) {
                index.push(pages.iter().position(|q| std::ptr::eq(q, *p)).expect("a page"));
                for (k, &th) in thresholds.iter().enumerate() {
                    let flags: Vec<bool> = probs.iter().map(|&x| x >= th).collect();
                    oof[k].push(score(p, Selector::Given(&flags)));
                }
                let flags: Vec<bool> = lex.iter().map(|&x| x >= 0.5).collect();
                lexicon_alone.push(score(p, Selector::Given(&flags)));
            }
            println!("fold {fold}: trained and tested in {:.1} s, {} pages", t.elapsed().as_secs_f64(), test.len());
            continue;
        }
        let forest = train_on(&train_pages, params, stages, inner);
        let trained = t.elapsed().as_secs_f64();
        for p in pages.iter().filter(|p| p.fold == fold && look.contains(&p.id)) {
            let texts = weft_extract::block_rows(&p.html, &p.url);
            let probs = forest.probabilities(&p.rows, &p.parents, &p.chars);
            println!("--- {} {} {}", p.id, p.kind, p.url);
            for (name, sel) in [("model", Selector::Model(&forest, 0.5)), ("labels", Selector::Given(&p.labels))] {
                let (e, _) = weft_extract::extract_with(&p.html, &[], &p.url, sel);
                let short: String = e.text.chars().take(600).collect();
                println!("{name}: {} chars, blocks {}: {short:?}", e.text.len(), e.blocks.len());
            }
            println!("truth: {:?}", p.truth.chars().take(300).collect::<String>());
            for (k, b) in texts.iter().enumerate() {
                let short: String = b.text.chars().take(90).collect();
                println!(
                    "{k:>4} label {} p {:.2} rule {} {:>5} {short:?}",
                    u8::from(p.labels[k]),
                    probs[k],
                    b.features[0],
                    b.text.len()
                );
            }
        }
        for (i, p) in pages.iter().enumerate().filter(|(_, p)| p.fold == fold) {
            index.push(i);
            oof_probs.push(probabilities(&forest, p));
            let probs = (!p.extra.is_empty()).then(|| probabilities(&forest, p));
            for (k, &th) in thresholds.iter().enumerate() {
                let selected = match &probs {
                    None => score(p, Selector::Model(&forest, th)),
                    Some(probs) => score(p, Selector::Given(&probs.iter().map(|&x| x >= th).collect::<Vec<_>>())),
                };
                oof[k].push(selected);
            }
            if let Some(out) = dump.as_mut() {
                use std::io::Write;
                let t = Instant::now();
                let (model, _) = weft_extract::extract_with(&p.html, &[], &p.url, Selector::Model(&forest, 0.5));
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let (rules, _) = weft_extract::extract_with(&p.html, &[], &p.url, Selector::Rules);
                // Each text with its score by the sets' metric (tp, fp, fn as fractions).
                let scored = |text: &str| {
                    let s = devset::score_page(&p.truth, text);
                    serde_json::json!({ "text": text, "score": [s.tp, s.fp, s.fn_] })
                };
                let mut texts = serde_json::Map::new();
                texts.insert("model".into(), scored(&model.text));
                texts.insert("rules".into(), scored(&rules.text));
                for (name, pr) in &refs {
                    let text = pr.get(&(p.set.to_string(), p.id.clone())).map_or("", |(t, _)| t.as_str());
                    texts.insert((*name).into(), scored(text));
                }
                let line = serde_json::json!({
                    "set": p.set, "id": p.id, "kind": p.kind, "url": p.url.as_str(), "fold": fold,
                    "texts": texts, "ms": ms,
                    "page_kind": format!("{:?}", model.classification.page_type), "confidence": model.confidence,
                    "probs": probabilities(&forest, p),
                    "chars": p.chars, "rule": p.rows.iter().map(|r| r[0]).collect::<Vec<f32>>(),
                    "labels": p.labels,
                });
                writeln!(out, "{line}").expect("write the dump");
            }
        }
        last = forest.clone();
        println!(
            "fold {fold}: trained in {trained:.1} s, {} pages tested",
            pages.iter().filter(|p| p.fold == fold).count()
        );
    }
    let rules: Vec<PageScore> = index.iter().map(|&i| score(&pages[i], Selector::Rules)).collect();
    let ref_scores: Vec<Vec<PageScore>> = refs
        .iter()
        .map(|(_, pr)| {
            index
                .iter()
                .map(|&i| {
                    let p = &pages[i];
                    let text = pr.get(&(p.set.to_string(), p.id.clone())).map_or("", |(t, _)| t.as_str());
                    devset::score_page(&p.truth, text)
                })
                .collect()
        })
        .collect();
    let ceiling: Vec<PageScore> = index.iter().map(|&i| score(&pages[i], Selector::Given(&pages[i].labels))).collect();
    // Per set and page type.
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (k, &i) in index.iter().enumerate() {
        let p = &pages[i];
        groups.entry((p.set.to_string(), "all".into())).or_default().push(k);
        // Two halves by site, apart from the folds' split: settings compared on one half and
        // reported on the other are not chosen on the pages they are reported on.
        let half = if (p.site_hash >> 17) & 1 == 0 { "half A" } else { "half B" };
        groups.entry((p.set.to_string(), half.into())).or_default().push(k);
        if p.set == devset::MODERN.name {
            groups.entry((p.set.to_string(), p.kind.clone())).or_default().push(k);
        }
    }
    print!("\n{:<22} {:<14} {:>5}  {:>16}", "set", "pages", "n", "rules (in-sample)");
    for th in thresholds {
        print!("  {:>12}", format!("model@{th}"));
    }
    print!("  {:>8}", "labels");
    for (name, _) in &refs {
        print!("  {name:>14}");
    }
    println!();
    for ((set, kind), ks) in &groups {
        let pick = |v: &[PageScore]| ks.iter().map(|&k| v[k]).collect::<Vec<_>>();
        print!("{set:<22} {kind:<14} {:>5}  {:>16.3}", ks.len(), devset::summarize(&pick(&rules)).f1);
        for o in &oof {
            print!("  {:>12.3}", devset::summarize(&pick(o)).f1);
        }
        print!("  {:>8.3}", devset::summarize(&pick(&ceiling)).f1);
        for r in &ref_scores {
            print!("  {:>14.3}", devset::summarize(&pick(r)).f1);
        }
        println!();
    }
    // `--oracle`: what choosing per page between candidates could reach at best (the better of
    // the model's and a reference's text on each page, known from the truth): the ceiling of an
    // ensemble, before any selector is built.
    if std::env::args().any(|a| a == "--oracle") {
        let best = |a: &[PageScore], b: &[PageScore]| -> Vec<PageScore> {
            a.iter().zip(b).map(|(x, y)| if y.f1() > x.f1() { *y } else { *x }).collect()
        };
        let mut candidates: Vec<(String, Vec<PageScore>)> = vec![("model|rules".into(), best(&oof[2], &rules))];
        for ((name, _), r) in refs.iter().zip(&ref_scores) {
            candidates.push((format!("model|{name}"), best(&oof[2], r)));
        }
        let all = ref_scores.iter().fold(best(&oof[2], &rules), |acc, r| best(&acc, r));
        candidates.push(("all".into(), all));
        println!("\nper-page best of (an oracle: the truth picks), F1:");
        for ((set, kind), ks) in &groups {
            print!("{set:<22} {kind:<14} {:>5}", ks.len());
            for (name, v) in &candidates {
                print!("  {name} {:.3}", devset::summarize(&ks.iter().map(|&k| v[k]).collect::<Vec<_>>()).f1);
            }
            println!();
        }
    }
    if std::env::args().any(|a| a == "--by-verdict") {
        by_verdict(&pages, &index, &oof_probs, &groups);
    }
    if lexicon {
        for ((set, kind), ks) in groups.iter().filter(|((_, kind), _)| kind == "all") {
            let alone = devset::summarize(&ks.iter().map(|&k| lexicon_alone[k]).collect::<Vec<_>>()).f1;
            println!("the lexicon alone (p >= 0.5), {set} {kind}: {alone:.3}");
        }
    }
    let pr = |v: &[PageScore]| {
        let s = devset::summarize(v);
        format!("P {:.3} R {:.3}", s.precision, s.recall)
    };
    println!(
        "\nprecision and recall over both sets: rules {}, model@0.5 {}, labels {}",
        pr(&rules),
        pr(&oof[2]),
        pr(&ceiling)
    );
    if std::env::args().any(|a| a == "--worst") {
        let mut gaps: Vec<(f64, usize)> = (0..index.len()).map(|k| (ceiling[k].f1() - oof[2][k].f1(), k)).collect();
        gaps.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (gap, k) in gaps.iter().take(25) {
            let p = &pages[index[*k]];
            let (o, c) = (oof[2][*k], ceiling[*k]);
            println!(
                "{gap:.2} {} {} {:<13} model F1 {:.2} (tp {:.2} fp {:.2} fn {:.2}) labels {:.2} rules {:.2} {}",
                p.set,
                p.id,
                p.kind,
                o.f1(),
                o.tp,
                o.fp,
                o.fn_,
                c.f1(),
                rules[*k].f1(),
                p.url
            );
        }
    }
    // Time per page, single-threaded, median of 3 runs a page: the rules alone and with the
    // last fold's model (the cost of the features and the trees).
    let time = |selector: Selector<'_>| -> f64 {
        let per_page = pages.iter().filter(|p| p.fold != usize::MAX).map(|p| {
            median(
                (0..3)
                    .map(|_| {
                        let t = Instant::now();
                        let _ = weft_extract::extract_with(&p.html, &[], &p.url, selector);
                        t.elapsed().as_secs_f64() * 1e3
                    })
                    .collect(),
            )
        });
        median(per_page.collect())
    };
    let rules_ms = time(Selector::Rules);
    print!("\nmedian ms per page: weft-extract rules {rules_ms:.2}");
    // `--lexicon` keeps no `Model` to time (its trees read one more column than a shipped one),
    // and `--reference-feature`'s reads four more.
    let wide = lexicon || pages.iter().any(|p| !p.extra.is_empty());
    if !wide {
        print!(", with the model {:.2}", time(Selector::Model(&last, 0.5)));
    }
    for (name, pr) in &refs {
        print!(", {name} {:.2}", median(pr.values().map(|(_, ms)| *ms).collect()));
    }
    if wide {
        println!();
    } else {
        let trees: usize = last.stages.iter().map(|f| f.trees.len()).sum();
        println!(" (model: {trees} trees, {} KiB as text)", last.to_text().len() / 1024);
    }
    if let Some(path) = std::env::args()
        .any(|a| a == "--write")
        .then(|| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/learned/model.txt"))
    {
        let all: Vec<&Page> = pages.iter().collect();
        let model = train_on(&all, params, stages, inner);
        let text = model.to_text();
        let args: Vec<String> = std::env::args().skip(1).collect();
        let provenance = Provenance {
            command: format!("cargo run --release -p weft-extract --example learn -- {}", args.join(" ")),
            inputs: inputs(&pages),
            checksum: None,
        };
        std::fs::write(&path, provenance.header(&text) + &text).expect("write the model");
        let trees: usize = model.stages.iter().map(|f| f.trees.len()).sum();
        println!(
            "\nwrote {} ({} stages, {trees} trees, {} bytes)",
            path.display(),
            model.stages.len(),
            model.to_text().len()
        );
    }
    println!("total {:.1} s", started.elapsed().as_secs_f64());
}
