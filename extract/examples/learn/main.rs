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

mod pages;
mod report;
mod training;

use pages::{inputs, load, load_extra, load_pinned, site, Page};
use report::{by_verdict, median, references, score};
use std::collections::BTreeMap;
use std::time::Instant;
use training::{probabilities, reference_columns, stacked, train_on};
use weft_extract::devset::{self, PageScore};
use weft_extract::learned::train::Params;
use weft_extract::learned::{features, Model, Provenance, Selector};

/// The value after `name` on the command line, if it is there.
fn arg_str(name: &str) -> Option<String> {
    std::env::args().skip_while(|a| a != name).nth(1)
}

fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    arg_str(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What the command line asks for.
struct Options {
    folds: usize,
    params: Params,
    stages: usize,
    inner: usize,
    /// `--in-sample`: train on every page, the tested fold's too — how well the model can fit
    /// at all, to tell a model short of features from one that does not generalise.
    in_sample: bool,
    /// `--page`: pages whose blocks are printed.
    look: Vec<String>,
    lexicon: bool,
    epochs: usize,
    l2: f32,
}

impl Options {
    fn read() -> Options {
        let params = Params {
            trees: arg("--trees", Params::default().trees),
            depth: arg("--depth", Params::default().depth),
            learning_rate: arg("--rate", Params::default().learning_rate),
            lambda: arg("--lambda", Params::default().lambda),
            min_child: arg("--min-child", Params::default().min_child),
            subsample: arg("--subsample", Params::default().subsample),
            colsample: arg("--colsample", Params::default().colsample),
        };
        Options {
            folds: arg("--folds", 5),
            params,
            stages: arg("--stages", 1),
            inner: arg("--inner", 3),
            in_sample: flag("--in-sample"),
            look: arg_str("--page").map(|s| s.split(',').map(str::to_string).collect()).unwrap_or_default(),
            lexicon: flag("--lexicon"),
            epochs: arg("--epochs", 3),
            l2: arg("--l2", 1e-4),
        }
    }
}

fn flag(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

const THRESHOLDS: [f32; 4] = [0.3, 0.4, 0.5, 0.6];

/// The scores of every page tested, out of fold.
struct OutOfFold {
    /// Per threshold of [`THRESHOLDS`], each tested page's score.
    scores: Vec<Vec<PageScore>>,
    /// The tested pages, by index into the pages, in the order they were scored.
    index: Vec<usize>,
    /// Each tested page's block probabilities, in `index`'s order.
    probs: Vec<Vec<f32>>,
    /// The last fold's model (timed at the end).
    last: Model,
    /// `--lexicon`: the lexicon alone at 0.5.
    lexicon_alone: Vec<PageScore>,
}

fn main() {
    let o = Options::read();
    let started = Instant::now();
    let mut pages = load(o.folds);
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
        o.folds,
        started.elapsed().as_secs_f64()
    );
    let refs = references();
    if let Some(name) = arg_str("--reference-feature") {
        reference_feature(&mut pages, &refs, &name, o.stages);
    }
    // `--dump PATH`: every page's out-of-fold text and block probabilities as JSON lines, for
    // studying a selector between extractors outside this program.
    let mut dump = arg_str("--dump")
        .map(|path| std::io::BufWriter::new(std::fs::File::create(&path).unwrap_or_else(|e| panic!("{path}: {e}"))));
    let mut oof = OutOfFold {
        scores: vec![Vec::new(); THRESHOLDS.len()],
        index: Vec::new(),
        probs: Vec::new(),
        last: Model::default(),
        lexicon_alone: Vec::new(),
    };
    for fold in 0..o.folds {
        run_fold(&o, &pages, fold, &refs, &mut oof, dump.as_mut());
    }
    let scored = Scored::of(&pages, &oof, &refs);
    scored.table(&refs, &oof);
    if flag("--oracle") {
        scored.oracle(&refs, &oof);
    }
    if flag("--by-verdict") {
        by_verdict(&pages, &oof.index, &oof.probs, &scored.groups);
    }
    if o.lexicon {
        for ((set, kind), ks) in scored.groups.iter().filter(|((_, kind), _)| kind == "all") {
            let alone = devset::summarize(&ks.iter().map(|&k| oof.lexicon_alone[k]).collect::<Vec<_>>()).f1;
            println!("the lexicon alone (p >= 0.5), {set} {kind}: {alone:.3}");
        }
    }
    let pr = |v: &[PageScore]| {
        let s = devset::summarize(v);
        format!("P {:.3} R {:.3}", s.precision, s.recall)
    };
    println!(
        "\nprecision and recall over both sets: rules {}, model@0.5 {}, labels {}",
        pr(&scored.rules),
        pr(&oof.scores[2]),
        pr(&scored.ceiling)
    );
    if flag("--worst") {
        scored.worst(&pages, &oof);
    }
    timing(&pages, &oof, &refs, o.lexicon);
    if flag("--write") {
        write_model(&o, &pages);
    }
    println!("total {:.1} s", started.elapsed().as_secs_f64());
}

/// `--reference-feature NAME`: every block gets four columns from the reference's text.
fn reference_feature(pages: &mut [Page], refs: &[(&'static str, report::Predictions)], name: &str, stages: usize) {
    // Its trees read four more columns than a shipped model's: there is nothing to `--write`.
    assert!(
        stages == 1 && arg_str("--extra").is_none() && !flag("--write"),
        "--reference-feature: one stage, the dev sets only, no --write"
    );
    let Some((_, pr)) = refs.iter().find(|(n, _)| *n == name) else {
        eprintln!("learn: no {name} predictions (run scripts/extract-references.sh)");
        std::process::exit(2);
    };
    for p in pages.iter_mut() {
        let text = pr.get(&(p.set.to_string(), p.id.clone())).map_or("", |(t, _)| t.as_str());
        p.extra = reference_columns(p, text);
    }
    println!("with {name}'s text as 4 more columns of every block");
}

/// One fold: a model trained on the other folds (every fold with `--in-sample`) scores this
/// fold's pages at every threshold.
fn run_fold(
    o: &Options,
    pages: &[Page],
    fold: usize,
    refs: &[(&'static str, report::Predictions)],
    oof: &mut OutOfFold,
    dump: Option<&mut std::io::BufWriter<std::fs::File>>,
) {
    let t = Instant::now();
    let train_pages: Vec<&Page> = pages.iter().filter(|p| o.in_sample || p.fold != fold).collect();
    if o.lexicon {
        let test: Vec<&Page> = pages.iter().filter(|p| p.fold == fold).collect();
        let probs = stacked(&train_pages, &test, o.params, o.inner, o.epochs, o.l2);
        for (p, (probs, lex)) in test.iter().zip(&probs) {
            oof.index.push(pages.iter().position(|q| std::ptr::eq(q, *p)).expect("a page"));
            for (k, &th) in THRESHOLDS.iter().enumerate() {
                let flags: Vec<bool> = probs.iter().map(|&x| x >= th).collect();
                oof.scores[k].push(score(p, Selector::Given(&flags)));
            }
            let flags: Vec<bool> = lex.iter().map(|&x| x >= 0.5).collect();
            oof.lexicon_alone.push(score(p, Selector::Given(&flags)));
        }
        println!("fold {fold}: trained and tested in {:.1} s, {} pages", t.elapsed().as_secs_f64(), test.len());
        return;
    }
    let forest = train_on(&train_pages, o.params, o.stages, o.inner);
    let trained = t.elapsed().as_secs_f64();
    for p in pages.iter().filter(|p| p.fold == fold && o.look.contains(&p.id)) {
        look_at(p, &forest);
    }
    let mut dump = dump;
    for (i, p) in pages.iter().enumerate().filter(|(_, p)| p.fold == fold) {
        oof.index.push(i);
        oof.probs.push(probabilities(&forest, p));
        let probs = (!p.extra.is_empty()).then(|| probabilities(&forest, p));
        for (k, &th) in THRESHOLDS.iter().enumerate() {
            let selected = match &probs {
                None => score(p, Selector::Model(&forest, th)),
                Some(probs) => score(p, Selector::Given(&probs.iter().map(|&x| x >= th).collect::<Vec<_>>())),
            };
            oof.scores[k].push(selected);
        }
        if let Some(out) = dump.as_deref_mut() {
            dump_page(out, p, fold, &forest, refs);
        }
    }
    oof.last = forest.clone();
    println!(
        "fold {fold}: trained in {trained:.1} s, {} pages tested",
        pages.iter().filter(|p| p.fold == fold).count()
    );
}

/// `--page`: a page's texts by the model and by the labels, its truth, and its blocks with
/// label and probability.
fn look_at(p: &Page, forest: &Model) {
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

/// `--dump`: a page's out-of-fold texts (model, rules, references) with their scores, and its
/// blocks' probabilities, as one JSON line.
fn dump_page(
    out: &mut std::io::BufWriter<std::fs::File>,
    p: &Page,
    fold: usize,
    forest: &Model,
    refs: &[(&'static str, report::Predictions)],
) {
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
    for (name, pr) in refs {
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

/// The tested pages scored by the rules, the references and the labels, and grouped by set,
/// half and page type.
struct Scored {
    rules: Vec<PageScore>,
    refs: Vec<Vec<PageScore>>,
    ceiling: Vec<PageScore>,
    groups: BTreeMap<(String, String), Vec<usize>>,
}

impl Scored {
    fn of(pages: &[Page], oof: &OutOfFold, refs: &[(&'static str, report::Predictions)]) -> Scored {
        let index = &oof.index;
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
        let ceiling: Vec<PageScore> =
            index.iter().map(|&i| score(&pages[i], Selector::Given(&pages[i].labels))).collect();
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
        Scored { rules, refs: ref_scores, ceiling, groups }
    }

    /// F1 per set and page type: the rules, the model at each threshold, the labels, the
    /// references.
    fn table(&self, refs: &[(&'static str, report::Predictions)], oof: &OutOfFold) {
        let (rules, ceiling, ref_scores, groups, oof) =
            (&self.rules, &self.ceiling, &self.refs, &self.groups, &oof.scores);
        print!("\n{:<22} {:<14} {:>5}  {:>16}", "set", "pages", "n", "rules (in-sample)");
        for th in THRESHOLDS {
            print!("  {:>12}", format!("model@{th}"));
        }
        print!("  {:>8}", "labels");
        for (name, _) in refs {
            print!("  {name:>14}");
        }
        println!();
        for ((set, kind), ks) in groups {
            let pick = |v: &[PageScore]| ks.iter().map(|&k| v[k]).collect::<Vec<_>>();
            print!("{set:<22} {kind:<14} {:>5}  {:>16.3}", ks.len(), devset::summarize(&pick(&rules)).f1);
            for o in oof {
                print!("  {:>12.3}", devset::summarize(&pick(o)).f1);
            }
            print!("  {:>8.3}", devset::summarize(&pick(&ceiling)).f1);
            for r in ref_scores {
                print!("  {:>14.3}", devset::summarize(&pick(r)).f1);
            }
            println!();
        }
    }

    /// `--oracle`: what choosing per page between candidates could reach at best (the better
    /// of the model's and a reference's text on each page, known from the truth): the ceiling
    /// of an ensemble, before any selector is built.
    fn oracle(&self, refs: &[(&'static str, report::Predictions)], oof: &OutOfFold) {
        let (rules, ref_scores, groups, oof) = (&self.rules, &self.refs, &self.groups, &oof.scores);
        let best = |a: &[PageScore], b: &[PageScore]| -> Vec<PageScore> {
            a.iter().zip(b).map(|(x, y)| if y.f1() > x.f1() { *y } else { *x }).collect()
        };
        let mut candidates: Vec<(String, Vec<PageScore>)> = vec![("model|rules".into(), best(&oof[2], &rules))];
        for ((name, _), r) in refs.iter().zip(ref_scores.iter()) {
            candidates.push((format!("model|{name}"), best(&oof[2], r)));
        }
        let all = ref_scores.iter().fold(best(&oof[2], &rules), |acc, r| best(&acc, r));
        candidates.push(("all".into(), all));
        println!("\nper-page best of (an oracle: the truth picks), F1:");
        for ((set, kind), ks) in groups {
            print!("{set:<22} {kind:<14} {:>5}", ks.len());
            for (name, v) in &candidates {
                print!("  {name} {:.3}", devset::summarize(&ks.iter().map(|&k| v[k]).collect::<Vec<_>>()).f1);
            }
            println!();
        }
    }

    /// `--worst`: the pages the model loses most on against the labels.
    fn worst(&self, pages: &[Page], oof: &OutOfFold) {
        let (rules, ceiling, index, oof) = (&self.rules, &self.ceiling, &oof.index, &oof.scores);
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
}

/// Time per page, single-threaded, median of 3 runs a page: the rules alone and with the last
/// fold's model (the cost of the features and the trees); the references' own times.
fn timing(pages: &[Page], oof: &OutOfFold, refs: &[(&'static str, report::Predictions)], lexicon: bool) {
    let last = &oof.last;
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
    for (name, pr) in refs {
        print!(", {name} {:.2}", median(pr.values().map(|(_, ms)| *ms).collect()));
    }
    if wide {
        println!();
    } else {
        let trees: usize = last.stages.iter().map(|f| f.trees.len()).sum();
        println!(" (model: {trees} trees, {} KiB as text)", last.to_text().len() / 1024);
    }
}

/// `--write`: a model trained on every page, written as the shipped one with its provenance.
fn write_model(o: &Options, pages: &[Page]) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/learned/model.txt");
    let all: Vec<&Page> = pages.iter().collect();
    let model = train_on(&all, o.params, o.stages, o.inner);
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
