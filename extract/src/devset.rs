//! The extraction dev set and its metric, shared by the `eval` benchmark and the regression
//! test so both agree with the dev set's own `score.py`.
//!
//! The dev set is not part of the repository (it lives beside it, in `../shared`, and a user's
//! clone does not have it): callers take its path from an argument or the `EXTRACTION_DEVSET`
//! environment variable and say plainly when it is absent.
//!
//! Metric (as `score.py`): texts are split into `\w+` tokens; each page's word 4-gram shingles
//! are counted as multisets; true/false positives and negatives are normalised per page so long
//! pages weigh no more than short ones; precision and recall are averaged over pages and F1 is
//! their harmonic mean.

use regex::Regex;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Environment variable naming the news dev set's directory (kept for callers of [`locate`]).
pub const ENV_VAR: &str = NEWS.env_var;

/// One of the dev sets that live in `../shared`, beside the workspace.
#[derive(Debug, Clone, Copy)]
pub struct DevSet {
    /// Directory name under `../shared`.
    pub name: &'static str,
    /// Environment variable that names its directory explicitly.
    pub env_var: &'static str,
    /// How many pages it holds (a sanity check that the right set was found).
    pub pages: usize,
}

/// 88 news pages, mostly of the 2010s.
pub const NEWS: DevSet = DevSet { name: "extraction-devset", env_var: "EXTRACTION_DEVSET", pages: 88 };
/// 720 pages of the 2025–2026 web: articles, forums, service pages, products, documentation,
/// collections and listings, each with its `page_type`.
pub const MODERN: DevSet = DevSet { name: "extraction-devset-2", env_var: "EXTRACTION_DEVSET_2", pages: 720 };

impl DevSet {
    /// Finds the set: an explicit path, else its environment variable, else `../shared/<name>`
    /// relative to the workspace root. `None` if none of them holds `ground-truth.json`.
    pub fn locate(&self, explicit: Option<&Path>) -> Option<PathBuf> {
        let candidates = [
            explicit.map(Path::to_path_buf),
            std::env::var_os(self.env_var).map(PathBuf::from),
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared").join(self.name)),
        ];
        candidates.into_iter().flatten().find(|p| p.join("ground-truth.json").is_file())
    }
}

/// One page of a dev set.
pub struct Page {
    pub id: String,
    pub url: String,
    pub html: Vec<u8>,
    pub truth: String,
    /// `article`, `forum`, `documentation`... (the modern set's `page_type`; `article` when the
    /// set does not say).
    pub kind: String,
}

impl Page {
    /// Which half of the set the page falls in: the numeric id's parity, or (for ids that are
    /// not numbers) the parity of the id's position in the sorted set. Tune on one half, check
    /// on the other.
    pub fn half(&self, position: usize) -> Half {
        let n = self.id.parse::<u64>().unwrap_or(position as u64);
        if n % 2 == 0 {
            Half::Even
        } else {
            Half::Odd
        }
    }
}

/// The two halves of a dev set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Half {
    Even,
    Odd,
}

/// Finds the news dev set (see [`DevSet::locate`]).
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    NEWS.locate(explicit)
}

/// Loads every page (decompressing `html/<id>.html.gz`), sorted by id.
pub fn load(dir: &Path) -> std::io::Result<Vec<Page>> {
    let truth: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("ground-truth.json"))?)?;
    let obj = truth.as_object().ok_or_else(|| std::io::Error::other("ground-truth.json is not an object"))?;
    let mut pages = Vec::with_capacity(obj.len());
    for (id, item) in obj {
        let gz = std::fs::read(dir.join("html").join(format!("{id}.html.gz")))?;
        let mut html = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut html)?;
        pages.push(Page {
            id: id.clone(),
            url: item["url"].as_str().unwrap_or_default().to_string(),
            html,
            truth: item["articleBody"].as_str().unwrap_or_default().to_string(),
            kind: item["page_type"].as_str().unwrap_or("article").to_string(),
        });
    }
    pages.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(pages)
}

fn words(text: &str) -> Vec<&str> {
    static WORD: OnceLock<Regex> = OnceLock::new();
    WORD.get_or_init(|| Regex::new(r"\w+").expect("valid regex")).find_iter(text).map(|m| m.as_str()).collect()
}

fn shingles<'a>(words: &[&'a str]) -> HashMap<Vec<&'a str>, i64> {
    let mut out = HashMap::new();
    if words.is_empty() {
        return out;
    }
    if words.len() < 4 {
        *out.entry(words.to_vec()).or_insert(0) += 1;
        return out;
    }
    for w in words.windows(4) {
        *out.entry(w.to_vec()).or_insert(0) += 1;
    }
    out
}

/// Per-page score: normalised (tp, fp, fn) and whether the token sequences match exactly.
#[derive(Debug, Clone, Copy)]
pub struct PageScore {
    pub tp: f64,
    pub fp: f64,
    pub fn_: f64,
    pub exact: bool,
}

impl PageScore {
    pub fn f1(&self) -> f64 {
        if self.tp == 0.0 {
            0.0
        } else {
            2.0 * self.tp / (2.0 * self.tp + self.fp + self.fn_)
        }
    }
}

pub fn score_page(truth: &str, predicted: &str) -> PageScore {
    let (tw, pw) = (words(truth), words(predicted));
    let (t, p) = (shingles(&tw), shingles(&pw));
    let mut tp = 0i64;
    let mut fp = 0i64;
    let mut fn_ = 0i64;
    for (k, &c) in &p {
        let tc = t.get(k).copied().unwrap_or(0);
        tp += c.min(tc);
        fp += (c - tc).max(0);
    }
    for (k, &c) in &t {
        fn_ += (c - p.get(k).copied().unwrap_or(0)).max(0);
    }
    let total = (tp + fp + fn_) as f64;
    let exact = tw == pw;
    if total == 0.0 {
        PageScore { tp: 0.0, fp: 0.0, fn_: 0.0, exact }
    } else {
        PageScore { tp: tp as f64 / total, fp: fp as f64 / total, fn_: fn_ as f64 / total, exact }
    }
}

/// Aggregate over pages, exactly as `score.py` computes it.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub f1: f64,
    pub precision: f64,
    pub recall: f64,
    pub exact: f64,
}

pub fn summarize(scores: &[PageScore]) -> Summary {
    let (mut ps, mut rs) = (Vec::new(), Vec::new());
    for s in scores {
        if s.fp == 0.0 && s.fn_ == 0.0 && s.tp == 0.0 {
            continue;
        }
        let perfect = s.fp == 0.0 && s.fn_ == 0.0;
        if perfect {
            ps.push(1.0);
            rs.push(1.0);
            continue;
        }
        if s.tp + s.fp > 0.0 {
            ps.push(s.tp / (s.tp + s.fp));
        }
        if s.tp + s.fn_ > 0.0 {
            rs.push(s.tp / (s.tp + s.fn_));
        }
    }
    let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
    let (p, r) = (mean(&ps), mean(&rs));
    let f1 = if p + r > 0.0 { 2.0 * p * r / (p + r) } else { 0.0 };
    let exact = scores.iter().filter(|s| s.exact).count() as f64 / scores.len().max(1) as f64;
    Summary { f1, precision: p, recall: r, exact }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_matches_score_py_semantics() {
        let s = score_page("one two three four five", "one two three four five");
        assert_eq!((s.tp, s.fp, s.fn_, s.exact), (1.0, 0.0, 0.0, true));
        // 2 truth shingles, 1 predicted and shared: tp 1, fn 1.
        let s = score_page("one two three four five", "one two three four");
        assert_eq!((s.tp, s.fn_), (0.5, 0.5));
        let sum = summarize(&[s, score_page("a b c d", "a b c d")]);
        assert!((sum.precision - 1.0).abs() < 1e-9 && (sum.recall - 0.75).abs() < 1e-9);
    }
}
