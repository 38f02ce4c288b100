//! Development aid: where the main text the extractor misses went.
//!
//! `misses DEVSET_DIR [--half even|odd] [--kind TYPE]` attributes each page's truth (word
//! 4-grams, as the dev sets' metric counts them) to the blocks that hold it — kept, dropped as
//! interface, dropped at the content's edges, in boilerplate, outside the container, across two
//! blocks (a seam) — or to none
//! (text the walk never saw: skipped elements, hidden text, or wording the page does not have).
//! Averaged per page, as the metric averages recall. `--show VERDICT` prints the truth's lines
//! that went mostly to that verdict.

use std::collections::{BTreeMap, HashSet};
use weft_extract::content::Verdict;
use weft_extract::devset::{self, Half};

fn shingles(text: &str) -> Vec<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.len() < 4 {
        return if words.is_empty() { Vec::new() } else { vec![words.join(" ")] };
    }
    words.windows(4).map(|w| w.join(" ")).collect()
}

fn main() {
    let mut dir = None;
    let (mut only, mut kind, mut show) = (None, None, None::<String>);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--half" => only = args.next().map(|h| if h == "even" { Half::Even } else { Half::Odd }),
            "--kind" => kind = args.next(),
            "--show" => show = args.next(),
            other => dir = Some(std::path::PathBuf::from(other)),
        }
    }
    let Some(dir) = devset::MODERN.locate(dir.as_deref()) else {
        eprintln!("dev set not found: pass its directory");
        std::process::exit(2);
    };
    let pages = devset::load(&dir).expect("load dev set");
    let mut by_kind: BTreeMap<String, (usize, BTreeMap<&'static str, f64>)> = BTreeMap::new();
    for (i, p) in pages.iter().enumerate() {
        if only.is_some_and(|h| p.half(i) != h) || kind.as_ref().is_some_and(|k| &p.kind != k) {
            continue;
        }
        let truth = shingles(&p.truth);
        if truth.is_empty() {
            continue;
        }
        let blocks = weft_extract::debug_blocks(&p.html);
        let mut owner: Vec<(HashSet<String>, &'static str)> = Vec::new();
        for (text, v) in &blocks {
            let name = match v {
                Verdict::Kept => "kept",
                Verdict::Bad => "bad",
                Verdict::Edge => "edge",
                Verdict::Boiler => "boiler",
                Verdict::Outside => "outside",
            };
            owner.push((shingles(text).into_iter().collect(), name));
        }
        let all_text: Vec<&str> = blocks.iter().map(|(t, _)| t.as_str()).collect();
        let seen: HashSet<String> = shingles(&all_text.join(" ")).into_iter().collect();
        if let Some(verdict) = &show {
            // The truth's lines that went mostly to this verdict.
            for line in p.truth.lines() {
                let sh = shingles(line);
                let hit = sh
                    .iter()
                    .filter(|s| {
                        let v = owner.iter().find(|(set, _)| set.contains(*s)).map(|(_, n)| *n);
                        v.unwrap_or(if seen.contains(*s) { "seam" } else { "unseen" }) == verdict
                    })
                    .count();
                if !sh.is_empty() && hit * 2 > sh.len() {
                    println!("{} {}: {}", p.id, p.kind, line.chars().take(160).collect::<String>());
                }
            }
        }
        let entry = by_kind.entry(p.kind.clone()).or_default();
        entry.0 += 1;
        for s in &truth {
            // The best verdict that holds this shingle (kept first).
            let found = ["kept", "bad", "edge", "boiler", "outside"]
                .into_iter()
                .find(|name| owner.iter().any(|(set, n)| n == name && set.contains(s)))
                .unwrap_or(if seen.contains(s) { "seam" } else { "unseen" });
            *entry.1.entry(found).or_default() += 1.0 / truth.len() as f64;
        }
    }
    println!(
        "{:<14} {:>5}  {:>6} {:>6} {:>6} {:>6} {:>7} {:>6} {:>6}",
        "type", "pages", "kept", "bad", "edge", "boiler", "outside", "seam", "unseen"
    );
    for (k, (n, m)) in &by_kind {
        let g = |x: &str| m.get(x).copied().unwrap_or(0.0) / *n as f64;
        println!(
            "{k:<14} {n:>5}  {:>6.3} {:>6.3} {:>6.3} {:>6.3} {:>7.3} {:>6.3} {:>6.3}",
            g("kept"),
            g("bad"),
            g("edge"),
            g("boiler"),
            g("outside"),
            g("seam"),
            g("unseen")
        );
    }
}
