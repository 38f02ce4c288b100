//! Extraction quality and speed on the dev sets, side by side with dom_smoothie.
//!
//! `extract` uses the shipped block classifier, which was trained on these pages: the figures
//! here are in-sample. What it does on sites it never saw is measured out of fold by the
//! `learn` example.
//!
//! ```text
//! cargo run --release -p weft-extract --example eval                 # both sets from ../shared
//! cargo run --release -p weft-extract --example eval -- ../shared/extraction-devset-2 --half odd
//! cargo run --release -p weft-extract --example eval -- DIR --kind forum --worst 20 --predictions out.json
//! cargo run --release -p weft-extract --features reference --example eval -- DIR --reference
//! ```
//!
//! For each set: F1, precision, recall and exact-match share (the sets' own metric, see
//! `weft_extract::devset`), the median and p95 milliseconds per page single-threaded, then F1 per
//! half (even and odd ids: tune on one, check on the other) and per page type. Each page is
//! extracted `--repeat` times (default 5) and its median kept, because this machine is noisy.
//! dom_smoothie (a Rust port of Readability) runs in the same loop, alternating with ours page by
//! page, so both see the same machine state. `--predictions` writes the JSON that the sets'
//! `score.py` reads, to cross-check (prefixed with the set's name when there are two).
//!
//! `--reference` (needs `--features reference`) also runs Mozilla's Readability.js on the pages
//! whose confidence is below `--below` (default 0.5) and reports what that second opinion costs
//! and buys under the node's policy: take it when it is longer and overlaps the fast result.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;
use url::Url;
use weft_extract::devset::{self, DevSet, Half, PageScore};

struct Options {
    dirs: Vec<PathBuf>,
    predictions: Option<PathBuf>,
    worst: usize,
    repeat: usize,
    reference: bool,
    below: f64,
    only: Option<Half>,
    kind: Option<String>,
}

fn main() {
    let mut o = Options {
        dirs: Vec::new(),
        predictions: None,
        worst: 8,
        repeat: 5,
        reference: false,
        below: 0.5,
        only: None,
        kind: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--predictions" => o.predictions = args.next().map(PathBuf::from),
            "--worst" => o.worst = args.next().and_then(|v| v.parse().ok()).unwrap_or(o.worst),
            "--repeat" => o.repeat = args.next().and_then(|v| v.parse().ok()).unwrap_or(o.repeat).max(1),
            "--reference" => o.reference = true,
            "--below" => o.below = args.next().and_then(|v| v.parse().ok()).unwrap_or(o.below),
            "--half" => {
                o.only = match args.next().as_deref() {
                    Some("even") => Some(Half::Even),
                    Some("odd") => Some(Half::Odd),
                    other => {
                        eprintln!("--half takes even or odd, not {other:?}");
                        std::process::exit(2);
                    }
                }
            }
            "--kind" => o.kind = args.next(),
            other => o.dirs.push(PathBuf::from(other)),
        }
    }
    // Without directories: both sets, each found beside the workspace or through its variable.
    let dirs: Vec<PathBuf> = if o.dirs.is_empty() {
        [devset::NEWS, devset::MODERN]
            .iter()
            .filter_map(|set: &DevSet| {
                let found = set.locate(None);
                if found.is_none() {
                    println!("{}: not found (set {} to its directory, or keep it in ../shared)", set.name, set.env_var);
                }
                found
            })
            .collect()
    } else {
        o.dirs.clone()
    };
    if dirs.is_empty() {
        eprintln!("no dev set found: pass a directory (e.g. ../shared/extraction-devset-2)");
        std::process::exit(2);
    }
    for dir in &dirs {
        evaluate(dir, &o, dirs.len() > 1);
    }
}

fn evaluate(dir: &std::path::Path, o: &Options, several: bool) {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let pages: Vec<(usize, devset::Page)> = devset::load(dir)
        .expect("load dev set")
        .into_iter()
        .enumerate()
        .filter(|(i, p)| o.only.is_none_or(|h| p.half(*i) == h) && o.kind.as_ref().is_none_or(|k| &p.kind == k))
        .collect();
    println!("\n{name} ({} pages)", pages.len());
    let mut scores = Vec::new();
    let mut times = Vec::new();
    let mut ref_scores = Vec::new();
    let mut ref_times = Vec::new();
    let mut out = serde_json::Map::new();
    let mut results = Vec::new();
    for (_, p) in &pages {
        let url = Url::parse(&p.url).unwrap_or_else(|_| Url::parse("http://devset.invalid/").unwrap());
        let mut per = Vec::with_capacity(o.repeat);
        let mut ref_per = Vec::with_capacity(o.repeat);
        let mut ex = None;
        let mut ref_text = String::new();
        for _ in 0..o.repeat {
            let t = Instant::now();
            let e = weft_extract::extract(&p.html, &[], &url);
            per.push(t.elapsed().as_secs_f64() * 1e3);
            ex = Some(e);
            let t = Instant::now();
            ref_text = dom_smoothie_text(&p.html, &p.url);
            ref_per.push(t.elapsed().as_secs_f64() * 1e3);
        }
        per.sort_by(f64::total_cmp);
        times.push(per[per.len() / 2]);
        ref_per.sort_by(f64::total_cmp);
        ref_times.push(ref_per[ref_per.len() / 2]);
        ref_scores.push(devset::score_page(&p.truth, &ref_text));
        let ex = ex.expect("repeat >= 1");
        scores.push(devset::score_page(&p.truth, &ex.text));
        out.insert(p.id.clone(), serde_json::json!({ "articleBody": ex.text }));
        results.push(ex);
    }
    println!("{:<13} {:>6} {:>6} {:>6} {:>6} {:>9} {:>9}", "", "F1", "prec", "recall", "exact", "median", "p95");
    report("weft-extract", &scores, &times);
    report("dom_smoothie", &ref_scores, &ref_times);
    // The halves: tune on one, check on the other.
    let half = |h: Half, s: &[PageScore]| -> (usize, f64) {
        let picked: Vec<PageScore> =
            pages.iter().zip(s).filter(|((i, p), _)| p.half(*i) == h).map(|(_, s)| *s).collect();
        (picked.len(), devset::summarize(&picked).f1)
    };
    for h in [Half::Even, Half::Odd] {
        let (n, f) = half(h, &scores);
        let (_, rf) = half(h, &ref_scores);
        if n > 0 {
            println!("  {:?} half: {n} pages, F1 weft-extract {f:.3}, dom_smoothie {rf:.3}", h);
        }
    }
    // By page type (the modern set says each page's type).
    let mut kinds: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (k, (_, p)) in pages.iter().enumerate() {
        kinds.entry(p.kind.as_str()).or_default().push(k);
    }
    if kinds.len() > 1 {
        println!("  {:<14} {:>5}  {:>20}  {:>12}", "page type", "pages", "weft F1 (P / R)", "dom_smoothie");
        let mut rows: Vec<_> = kinds.into_iter().collect();
        rows.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        for (kind, idx) in rows {
            let w: Vec<PageScore> = idx.iter().map(|&k| scores[k]).collect();
            let r: Vec<PageScore> = idx.iter().map(|&k| ref_scores[k]).collect();
            let (w, r) = (devset::summarize(&w), devset::summarize(&r));
            println!(
                "  {kind:<14} {:>5}  {:>6.3} ({:.3} / {:.3})  {:>12.3}",
                idx.len(),
                w.f1,
                w.precision,
                w.recall,
                r.f1
            );
        }
    }
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by(|&a, &b| scores[a].f1().total_cmp(&scores[b].f1()));
    let worst_list: Vec<String> = order
        .iter()
        .take(o.worst)
        .map(|&i| {
            let s = &scores[i];
            let p = &pages[i].1;
            format!(
                "{} {} {:.2} (p {:.2} r {:.2} conf {:.2})",
                &p.id[..p.id.len().min(12)],
                p.kind,
                s.f1(),
                s.tp / (s.tp + s.fp).max(1e-9),
                s.tp / (s.tp + s.fn_).max(1e-9),
                results[i].confidence
            )
        })
        .collect();
    if !worst_list.is_empty() {
        println!("  lowest page F1: {}", worst_list.join(", "));
    }
    if let Some(path) = &o.predictions {
        let path = if several {
            path.with_file_name(format!("{name}-{}", path.file_name().unwrap_or_default().to_string_lossy()))
        } else {
            path.clone()
        };
        std::fs::write(&path, serde_json::to_vec_pretty(&out).expect("json")).expect("write predictions");
        println!("  predictions written to {}", path.display());
    }
    if o.reference {
        let pages: Vec<devset::Page> = pages.into_iter().map(|(_, p)| p).collect();
        run_reference(&pages, &results, &scores, o.below);
    }
}

/// Reads `html` the way the dev set's reference figure was taken (lossy UTF-8, formatted text).
fn dom_smoothie_text(html: &[u8], url: &str) -> String {
    let cfg = dom_smoothie::Config { text_mode: dom_smoothie::TextMode::Formatted, ..Default::default() };
    let html = String::from_utf8_lossy(html);
    dom_smoothie::Readability::new(html.as_ref(), Some(url), Some(cfg))
        .and_then(|mut r| r.parse())
        .map(|a| a.text_content.to_string())
        .unwrap_or_default()
}

fn report(name: &str, scores: &[devset::PageScore], times: &[f64]) {
    let sum = devset::summarize(scores);
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let p95 = sorted[((sorted.len() as f64 * 0.95) as usize).min(sorted.len() - 1)];
    println!(
        "{name:<13} {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>6.2} ms {:>6.2} ms",
        sum.f1, sum.precision, sum.recall, sum.exact, median, p95
    );
}

#[cfg(feature = "reference")]
fn run_reference(
    pages: &[devset::Page],
    results: &[weft_extract::Extracted],
    scores: &[devset::PageScore],
    below: f64,
) {
    let reader = weft_extract::reference::Reference::new().expect("start Readability.js");
    let mut new_scores = scores.to_vec();
    let mut ref_times = Vec::new();
    let mut taken = 0;
    let mut low = 0;
    for (i, p) in pages.iter().enumerate() {
        if results[i].confidence >= below {
            continue;
        }
        low += 1;
        let html = String::from_utf8_lossy(&p.html);
        let t = Instant::now();
        let r = reader.extract(&html, &p.url);
        ref_times.push(t.elapsed().as_secs_f64() * 1e3);
        if let Ok(text) = r {
            if weft_extract::reference::prefer_reference(&results[i].text, &text) {
                new_scores[i] = devset::score_page(&p.truth, &text);
                taken += 1;
            }
        }
    }
    let before = devset::summarize(scores);
    let after = devset::summarize(&new_scores);
    ref_times.sort_by(f64::total_cmp);
    let med = ref_times.get(ref_times.len() / 2).copied().unwrap_or(0.0);
    println!(
        "second opinion (confidence < {below}): {low} pages sent, {taken} taken; F1 {:.3} -> {:.3} (precision {:.3}, recall {:.3}); Readability.js median {:.0} ms/page, total {:.1} s",
        before.f1,
        after.f1,
        after.precision,
        after.recall,
        med,
        ref_times.iter().sum::<f64>() / 1e3
    );
}

#[cfg(not(feature = "reference"))]
fn run_reference(_: &[devset::Page], _: &[weft_extract::Extracted], _: &[devset::PageScore], _: f64) {
    eprintln!("--reference needs the `reference` feature: add --features reference");
    std::process::exit(2);
}
