//! Development aid: median milliseconds per dev-set page for each phase of extraction.
use std::time::Instant;
fn main() {
    let dir =
        weft_extract::devset::locate(std::env::args().nth(1).as_deref().map(std::path::Path::new)).expect("dev set");
    let pages = weft_extract::devset::load(&dir).expect("load");
    let (mut d, mut s, mut p, mut all) = (vec![], vec![], vec![], vec![]);
    for page in &pages {
        let url = url::Url::parse(&page.url).unwrap();
        for _ in 0..3 {
            let mut w = Vec::new();
            let t0 = Instant::now();
            let dec = weft_extract::decode::decode(&page.html, None, None, &mut w);
            let t1 = Instant::now();
            let html = weft_extract::sanitize::sanitize(&dec.text, &mut w);
            let t2 = Instant::now();
            let doc = scraper::Html::parse_document(&html);
            let t3 = Instant::now();
            drop(doc);
            let t4 = Instant::now();
            let _ = weft_extract::extract(&page.html, &[], &url);
            let t5 = Instant::now();
            d.push((t1 - t0).as_secs_f64() * 1e3);
            s.push((t2 - t1).as_secs_f64() * 1e3);
            p.push((t3 - t2).as_secs_f64() * 1e3 + (t4 - t3).as_secs_f64() * 1e3);
            all.push((t5 - t4).as_secs_f64() * 1e3);
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "decode {:.3}  sanitize {:.3}  parse+drop {:.3}  total {:.3} ms (medians)",
        med(&mut d),
        med(&mut s),
        med(&mut p),
        med(&mut all)
    );
}
