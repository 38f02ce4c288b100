//! What the program reports: a page's score, the references' predictions, the thresholds by
//! the rules' verdict, medians.

use crate::pages::Page;
use std::collections::BTreeMap;
use weft_extract::devset::{self, PageScore};
use weft_extract::learned::{features, Selector};

/// The reference extractors' predictions for the dev sets, written by
/// `scripts/extract-references.sh`: per extractor, `(set, id)` → (text, milliseconds).
pub(crate) type Predictions = BTreeMap<(String, String), (String, f64)>;

/// The thresholds `--by-verdict` tries: for blocks the rules kept, for blocks they judged
/// interface or edge lines inside the content, and for blocks in boilerplate or outside it.
pub(crate) const KEPT_T: [f32; 4] = [0.3, 0.4, 0.5, 0.6];
pub(crate) const INSIDE_T: [f32; 4] = [0.4, 0.5, 0.6, 0.7];
pub(crate) const BOILER_T: [f32; 4] = [0.5, 0.6, 0.75, 0.9];

pub(crate) fn score(p: &Page, selector: Selector<'_>) -> PageScore {
    let (e, _) = weft_extract::extract_with(&p.html, &[], &p.url, selector);
    devset::score_page(&p.truth, &e.text)
}

pub(crate) fn references() -> Vec<(&'static str, Predictions)> {
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

/// `--by-verdict`: a threshold for each of the rules' verdicts instead of one — the trees see
/// the verdicts, but a block in a page's footer or beside its content needs more evidence to be
/// kept than one the rules already kept. For each fold the three thresholds are chosen on the
/// other folds' out-of-fold pages (the mean of both sets' F1), then applied to it: every figure
/// printed is out of fold, thresholds included.
pub(crate) fn by_verdict(
    pages: &[Page],
    index: &[usize],
    probs: &[Vec<f32>],
    groups: &BTreeMap<(String, String), Vec<usize>>,
) {
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
pub(crate) fn verdict_threshold(row: &[f32; features::COUNT], t: [f32; 3]) -> f32 {
    if row[0] > 0.5 {
        t[0]
    } else if row[1] > 0.5 || row[2] > 0.5 {
        t[1]
    } else {
        t[2]
    }
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
