//! Extraction quality and speed on the dev set.
//!
//! ```text
//! cargo run --release -p weft-extract --example eval -- ../shared/extraction-devset
//! cargo run --release -p weft-extract --example eval -- DIR --predictions out.json --worst 10
//! cargo run --release -p weft-extract --features reference --example eval -- DIR --reference
//! ```
//!
//! Prints F1, precision, recall and exact-match share (the dev set's own metric, see
//! `weft_extract::devset`) and the median and p95 milliseconds per page, single-threaded: each
//! page is extracted `--repeat` times (default 5) and its median kept, because this machine is
//! noisy. The fastest reference, dom_smoothie (a Rust port of Readability), runs in the same
//! loop, alternating with ours page by page, so both see the same machine state. `--predictions` writes the JSON that the dev set's `score.py` reads, to cross-check.
//!
//! `--reference` (needs `--features reference`) also runs Mozilla's Readability.js on the pages
//! whose confidence is below `--below` (default 0.5) and reports what that second opinion costs
//! and buys under the node's policy: take it when it is longer and overlaps the fast result.

use std::path::PathBuf;
use std::time::Instant;
use url::Url;
use weft_extract::devset;

fn main() {
    let mut dir = None;
    let mut predictions = None;
    let mut worst = 8usize;
    let mut repeat = 5usize;
    let mut reference = false;
    let mut below = 0.5f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--predictions" => predictions = args.next().map(PathBuf::from),
            "--worst" => worst = args.next().and_then(|v| v.parse().ok()).unwrap_or(worst),
            "--repeat" => repeat = args.next().and_then(|v| v.parse().ok()).unwrap_or(repeat).max(1),
            "--reference" => reference = true,
            "--below" => below = args.next().and_then(|v| v.parse().ok()).unwrap_or(below),
            other => dir = Some(PathBuf::from(other)),
        }
    }
    let Some(dir) = devset::locate(dir.as_deref()) else {
        eprintln!(
            "dev set not found: pass its directory (e.g. ../shared/extraction-devset) or set {}",
            devset::ENV_VAR
        );
        std::process::exit(2);
    };
    let pages = devset::load(&dir).expect("load dev set");
    let mut scores = Vec::new();
    let mut times = Vec::new();
    let mut ref_scores = Vec::new();
    let mut ref_times = Vec::new();
    let mut out = serde_json::Map::new();
    let mut results = Vec::new();
    for p in &pages {
        let url = Url::parse(&p.url).unwrap_or_else(|_| Url::parse("http://devset.invalid/").unwrap());
        let mut per = Vec::with_capacity(repeat);
        let mut ref_per = Vec::with_capacity(repeat);
        let mut ex = None;
        let mut ref_text = String::new();
        for _ in 0..repeat {
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
    report("weft-extract", &scores, &times);
    report("dom_smoothie", &ref_scores, &ref_times);
    let mut order: Vec<usize> = (0..pages.len()).collect();
    order.sort_by(|&a, &b| scores[a].f1().total_cmp(&scores[b].f1()));
    let worst_list: Vec<String> = order
        .iter()
        .take(worst)
        .map(|&i| {
            let s = &scores[i];
            format!(
                "{} {:.2} (p {:.2} r {:.2} conf {:.2})",
                &pages[i].id[..12],
                s.f1(),
                s.tp / (s.tp + s.fp).max(1e-9),
                s.tp / (s.tp + s.fn_).max(1e-9),
                results[i].confidence
            )
        })
        .collect();
    println!("lowest page F1: {}", worst_list.join(", "));
    if let Some(path) = predictions {
        std::fs::write(&path, serde_json::to_vec_pretty(&out).expect("json")).expect("write predictions");
        println!("predictions written to {}", path.display());
    }
    if reference {
        run_reference(&pages, &results, &scores, below);
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
        "{name:<13} pages {}  F1 {:.3}  precision {:.3}  recall {:.3}  exact {:.3}  median {:.2} ms  p95 {:.2} ms",
        scores.len(),
        sum.f1,
        sum.precision,
        sum.recall,
        sum.exact,
        median,
        p95
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
