//! Fuzzes the extraction entry point with arbitrary bytes and an arbitrary Content-Type.
//! Run with `scripts/fuzz.sh` (or `cargo +nightly fuzz run extract` in `extract/`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use url::Url;

fuzz_target!(|data: &[u8]| {
    // The first byte picks a declared charset, so the decoder's every path is exercised.
    let (selector, body) = data.split_first().map(|(s, b)| (*s, b)).unwrap_or((0, data));
    let content_type = match selector % 6 {
        0 => None,
        1 => Some("text/html; charset=utf-8"),
        2 => Some("text/html; charset=iso-8859-1"),
        3 => Some("text/html; charset=shift_jis"),
        4 => Some("text/html; charset=utf-16le"),
        _ => Some("text/html; charset=bogus-label"),
    };
    let headers: Vec<(&str, &str)> = content_type.map(|c| ("content-type", c)).into_iter().collect();
    let url = Url::parse("http://fuzz.test/a/b/page.html").expect("static URL");
    let e = weft_extract::extract(body, &headers, &url);
    // Invariants the rest of the node relies on.
    assert_eq!(e.word_count, e.text.split_whitespace().count());
    assert!((0.0..=1.0).contains(&e.js.score));
    assert!((0.0..=1.0).contains(&e.confidence));
    assert!(e.links.iter().all(|l| matches!(l.url.scheme(), "http" | "https")));
});
