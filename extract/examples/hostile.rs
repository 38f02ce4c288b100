//! Benchmark: extraction time on hostile pages at three sizes, against an ordinary page of the
//! same size in the same run. Linear means the milliseconds per MiB stay flat as the size grows
//! (and near the ordinary page's). For the inputs quadratic in html5ever itself, html5ever
//! alone on the unsanitized page (extraction without its sanitizer) is timed too, at 64 and
//! 256 KiB (larger takes minutes).
//!
//! `cargo run --release -p weft-extract --example hostile [-- ROUNDS]`
//!
//! Every case runs once per round, the cases alternating; medians are printed.

use std::time::Instant;

/// One page of roughly `bytes` made of `unit` repeated, inside a minimal document.
fn page(unit: &str, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 64);
    s.push_str("<html><head><title>t</title></head><body>");
    while s.len() < bytes {
        s.push_str(unit);
    }
    s.push_str("</body></html>");
    s
}

/// One element with attributes up to `bytes`.
fn attributes(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 64);
    s.push_str("<html><body><p");
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!(" a{i}=x"));
        i += 1;
    }
    s.push_str(">text</p></body></html>");
    s
}

struct Case {
    name: &'static str,
    make: fn(usize) -> String,
    /// Was quadratic before: html5ever alone on the raw page is the reference.
    was_quadratic: bool,
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let cases = [
        Case {
            name: "ordinary page (reference)",
            make: |n| page("<p>The council met on Tuesday to discuss the new library and the budget for it.</p>\n", n),
            was_quadratic: false,
        },
        Case { name: "<rt> repeated", make: |n| page("<rt>", n), was_quadratic: true },
        Case { name: "<rb> repeated", make: |n| page("<rb>", n), was_quadratic: true },
        Case { name: "<rtc> repeated", make: |n| page("<rtc>", n), was_quadratic: true },
        Case { name: "<optgroup> repeated", make: |n| page("<optgroup>", n), was_quadratic: true },
        Case { name: "attributes on one element", make: attributes, was_quadratic: true },
        Case { name: "<div> nesting", make: |n| page("<div>", n), was_quadratic: false },
        Case { name: "<a> to distinct hosts", make: |n| page("<a href=//h.test/>x</a>", n), was_quadratic: false },
    ];
    let sizes = [256 << 10, 1 << 20, 4 << 20];
    let raw_sizes = [64 << 10, 256 << 10];
    let url = url::Url::parse("https://hostile.test/page").unwrap();
    let pages: Vec<Vec<String>> = cases.iter().map(|c| sizes.iter().map(|&n| (c.make)(n)).collect()).collect();
    let mut ours = vec![vec![Vec::new(); sizes.len()]; cases.len()];
    let raw_pages: Vec<Vec<String>> = cases.iter().map(|c| raw_sizes.iter().map(|&n| (c.make)(n)).collect()).collect();
    let mut raw = vec![vec![Vec::new(); raw_sizes.len()]; cases.len()];
    for _ in 0..rounds {
        for (ci, case) in cases.iter().enumerate() {
            for (si, html) in pages[ci].iter().enumerate() {
                let t = Instant::now();
                let e = weft_extract::extract(html.as_bytes(), &[], &url);
                ours[ci][si].push(t.elapsed().as_secs_f64() * 1e3);
                std::hint::black_box(e);
            }
            for (si, html) in raw_pages[ci].iter().enumerate().filter(|_| case.was_quadratic) {
                let t = Instant::now();
                std::hint::black_box(scraper::Html::parse_document(html));
                raw[ci][si].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("extraction, median of {rounds} rounds, ms (ms per MiB)");
    print!("{:<28}", "");
    for n in sizes {
        print!("{:>20}", format!("{} KiB", n >> 10));
    }
    println!("{:>14}", "growth");
    for (ci, case) in cases.iter().enumerate() {
        print!("{:<28}", case.name);
        let mut per_mib = Vec::new();
        for (si, &n) in sizes.iter().enumerate() {
            let ms = med(&mut ours[ci][si]);
            let mib = n as f64 / f64::from(1 << 20);
            per_mib.push(ms / mib);
            print!("{:>20}", format!("{ms:.1} ({:.1})", ms / mib));
        }
        // Time per MiB at the largest size over the smallest: 1 is linear, 16 quadratic.
        println!("{:>14}", format!("x{:.2}", per_mib[sizes.len() - 1] / per_mib[0]));
        if case.was_quadratic {
            print!("{:<28}", "  before: html5ever alone");
            let mut per_mib = Vec::new();
            for (si, &n) in raw_sizes.iter().enumerate() {
                let ms = med(&mut raw[ci][si]);
                let mib = n as f64 / f64::from(1 << 20);
                per_mib.push(ms / mib);
                print!("{:>20}", format!("{}K: {ms:.0} ({:.0})", n >> 10, ms / mib));
            }
            println!("{:>20}{:>14}", "", format!("x{:.2}", per_mib[1] / per_mib[0]));
        }
    }
    println!(
        "growth: ms per MiB at the largest size measured over the smallest (1 = linear; quadratic grows with size)"
    );
}
