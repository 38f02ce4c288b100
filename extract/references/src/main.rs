//! `rs-trafilatura-predict DEVSET_DIR OUT.json`: runs `rs-trafilatura` (its defaults, with the
//! page's URL) on every page of an extraction dev set and writes `{id: {"articleBody": text,
//! "ms": milliseconds}}`, the predictions format the sets' `score.py` reads, with each page's
//! single-threaded extraction time (the median of `REPEAT` runs: this machine is shared).

use std::io::Read;

const REPEAT: usize = 3;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: rs-trafilatura-predict DEVSET_DIR OUT.json");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    let truth: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("ground-truth.json")).expect("ground-truth.json"))
            .expect("json");
    let mut predictions = serde_json::Map::new();
    for (id, item) in truth.as_object().expect("an object of pages") {
        let gz = std::fs::read(dir.join("html").join(format!("{id}.html.gz"))).expect("page");
        let mut html = Vec::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut html).expect("gzip");
        let options = rs_trafilatura::Options {
            url: item["url"].as_str().map(str::to_string),
            ..rs_trafilatura::Options::default()
        };
        let mut times = Vec::with_capacity(REPEAT);
        let mut text = String::new();
        for _ in 0..REPEAT {
            let started = std::time::Instant::now();
            let result = rs_trafilatura::extract_bytes_with_options(&html, &options);
            times.push(started.elapsed().as_secs_f64() * 1e3);
            text = result.map(|r| r.content_text).unwrap_or_default();
        }
        times.sort_by(f64::total_cmp);
        predictions.insert(id.clone(), serde_json::json!({ "articleBody": text, "ms": times[REPEAT / 2] }));
    }
    std::fs::write(out, serde_json::to_vec(&predictions).expect("json")).expect("write the predictions");
    eprintln!("rs-trafilatura: {} pages of {} -> {out}", predictions.len(), dir.display());
}
