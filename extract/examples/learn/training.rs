//! Training: the trees on some pages' blocks, the lexicon on their words, and a stack of both.

use crate::pages::Page;
use weft_extract::learned::labels::Truth;
use weft_extract::learned::tokens::Lexicon;
use weft_extract::learned::train::{self, Params};
use weft_extract::learned::{features, Model};

/// Trains a model of `stages` stages on `pages`. A later stage is trained on what the stage
/// before thinks of pages it was not trained on (an inner cross-validation by site, like the
/// outer one), so that it learns how far to trust that stage on unseen sites.
pub(crate) fn train_on(pages: &[&Page], params: Params, stages: usize, inner_folds: usize) -> Model {
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
pub(crate) fn lexicon_on(pages: &[&Page], epochs: usize, l2: f32) -> Lexicon {
    let (rows, labels, weights) = labelled(pages, |p, b| p.tokens[b].as_slice());
    train::train_lexicon(&rows, &labels, &weights, epochs, l2)
}

/// The labelled blocks of `pages` (an extra page's unlabelled ones weigh nothing and are left
/// out), each as `row` makes it, with its label and weight.
pub(crate) fn labelled<'p, T>(pages: &[&'p Page], row: impl Fn(&'p Page, usize) -> T) -> (Vec<T>, Vec<bool>, Vec<f32>) {
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
pub(crate) fn around(values: &[f32], i: usize) -> f32 {
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
pub(crate) fn lexicon_columns(scores: &[f32]) -> Vec<[f32; 3]> {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f32::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    (0..scores.len()).map(|i| [scores[i], around(scores, i), scores[i] - median]).collect()
}

/// `--lexicon`: the trees with one more feature, a lexicon's score of the block. The trees are
/// trained on scores of pages the lexicon did not see (inner folds by site), as a later stage
/// is, so they learn how far to trust it on unseen sites. Returns each test page's block
/// probabilities, and the lexicon's own.
pub(crate) fn stacked(
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

/// Every block's probability under `model`, reading the extra columns when the page has them
/// (a model trained with them has one stage).
pub(crate) fn probabilities(model: &Model, p: &Page) -> Vec<f32> {
    if p.extra.is_empty() {
        return model.probabilities(&p.rows, &p.parents, &p.chars);
    }
    assert_eq!(model.stages.len(), 1, "--reference-feature trains one stage");
    (0..p.rows.len()).map(|b| model.stages[0].probability(&p.row(b))).collect()
}

/// `--reference-feature NAME`: what a reference extractor kept, as four more columns of each
/// block — the share of its word trigrams in the reference's text (as a training label is
/// aligned with the truth), the mean share of the three blocks either side, the reference's
/// length against the page's text (ln of the word counts' ratio) and whether it kept nothing.
/// The trees then learn, block by block, when to side with the reference: an ensemble finer
/// than choosing one extractor's whole text per page.
pub(crate) fn reference_columns(p: &Page, reference: &str) -> Vec<Vec<f32>> {
    let truth = Truth::new(reference);
    let blocks = weft_extract::block_rows(&p.html, &p.url);
    let shares: Vec<f32> = blocks.iter().map(|b| truth.share(&b.text)).collect();
    let page_words: usize = blocks.iter().map(|b| b.text.split_whitespace().count()).sum();
    let ref_words = reference.split_whitespace().count();
    let ratio = ((1 + ref_words) as f32 / (1 + page_words) as f32).ln();
    let empty = f32::from(u8::from(ref_words == 0));
    (0..shares.len()).map(|i| vec![shares[i], around(&shares, i), ratio, empty]).collect()
}
