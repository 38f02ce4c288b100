//! Regression floors on the extraction dev sets: 88 news pages with hand-checked main text
//! (mostly 2010s), and 720 pages of the 2025–2026 web (articles, forums, service pages,
//! products, documentation, collections, listings).
//!
//! The sets live outside the repository: set `EXTRACTION_DEVSET` / `EXTRACTION_DEVSET_2` to
//! their directories, or keep them at `../shared/extraction-devset{,-2}` beside the workspace
//! (as CI does). Without one, its test says so and checks nothing else (under `CI=true` it fails); with it, F1 below the
//! floor fails the build. The modern set is also held on its odd half, the pages no rule was
//! tuned on.
//!
//! The shipped block classifier was trained on these pages, so the floors guard the extractor
//! against regressions in-sample; how it does on sites it never saw is measured out of fold by
//! the `learn` example (docs/src/benchmarks.md).

use url::Url;
use weft_extract::devset::{self, DevSet, Half, PageScore, Summary};

fn scores(set: &DevSet) -> Option<Vec<(Half, PageScore)>> {
    let Some(dir) = set.locate(None) else {
        let why = format!("{} not found (set {} to its directory, or keep it in ../shared)", set.name, set.env_var);
        // CI has ../shared: there a missing set is a broken machine, not a skip.
        assert!(!std::env::var("CI").is_ok_and(|v| v == "true"), "a prerequisite is missing under CI=true: {why}");
        eprintln!("SKIPPED: {why}");
        return None;
    };
    let pages = devset::load(&dir).expect("load dev set");
    assert_eq!(pages.len(), set.pages, "unexpected dev set at {}", dir.display());
    Some(
        pages
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let url = Url::parse(&p.url).unwrap_or_else(|_| Url::parse("http://devset.invalid/").unwrap());
                (p.half(i), devset::score_page(&p.truth, &weft_extract::extract(&p.html, &[], &url).text))
            })
            .collect(),
    )
}

fn summary(scores: &[(Half, PageScore)], half: Option<Half>) -> Summary {
    let picked: Vec<PageScore> = scores.iter().filter(|(h, _)| half.is_none_or(|x| x == *h)).map(|(_, s)| *s).collect();
    devset::summarize(&picked)
}

/// The target (issue 20): F1 ≥ 0.97 on the news set; the rules alone measured 0.972, the shipped
/// model 0.989 in-sample and 0.970 out of fold (docs/src/benchmarks.md).
const NEWS_F1_FLOOR: f64 = 0.97;

#[test]
fn news_dev_set_f1_stays_above_the_floor() {
    let Some(scores) = scores(&devset::NEWS) else { return };
    let s = summary(&scores, None);
    eprintln!("news dev set: F1 {:.3} precision {:.3} recall {:.3}", s.f1, s.precision, s.recall);
    assert!(s.f1 >= NEWS_F1_FLOOR, "F1 {:.3} fell below the floor {NEWS_F1_FLOOR}", s.f1);
}

/// The target (issue 20): F1 ≥ 0.86 on the modern set, on the whole and on its odd half (the
/// pages no rule was tuned on); the rules alone measured 0.867 and 0.864, the shipped model
/// 0.923 and 0.925 in-sample and 0.873 out of fold (docs/src/benchmarks.md).
const MODERN_F1_FLOOR: f64 = 0.86;
const MODERN_ODD_F1_FLOOR: f64 = 0.86;

#[test]
fn modern_dev_set_f1_stays_above_the_floor() {
    let Some(scores) = scores(&devset::MODERN) else { return };
    let all = summary(&scores, None);
    let odd = summary(&scores, Some(Half::Odd));
    eprintln!(
        "modern dev set: F1 {:.3} precision {:.3} recall {:.3}; odd half F1 {:.3}",
        all.f1, all.precision, all.recall, odd.f1
    );
    assert!(all.f1 >= MODERN_F1_FLOOR, "F1 {:.3} fell below the floor {MODERN_F1_FLOOR}", all.f1);
    assert!(odd.f1 >= MODERN_ODD_F1_FLOOR, "odd-half F1 {:.3} fell below the floor {MODERN_ODD_F1_FLOOR}", odd.f1);
}
