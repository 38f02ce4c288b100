//! What keeping responses and writing WARC costs (issue 39): every page of the PostgreSQL
//! manual (Debian's `postgresql-doc-15`, installed by `scripts/setup.sh`) kept as the crawl
//! keeps a response (`crawl.keep_responses`: postcard + LZ4 into a real sled database), then
//! written out as WARC request and response records (a gzip member each) the way
//! `weft export --format warc` reads and writes them. Prints the pages' HTML size, the bytes
//! kept and the bytes written per page, and the keep and export rates (medians of 5 rounds).
//!
//! `cargo run --release -p weft-content --example warc_export -- [HTML_DIR]`

use std::io::Write;
use std::time::Instant;
use weft_content::responses::{KeptResponse, ResponseStore};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/usr/share/doc/postgresql-doc-15/html".into());
    let mut pages = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| anyhow::anyhow!("{dir}: {e} (run scripts/setup.sh)"))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "html") {
            pages.push((path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path)?));
        }
    }
    pages.sort();
    let html: usize = pages.iter().map(|(_, b)| b.len()).sum();
    let responses: Vec<KeptResponse> = pages
        .into_iter()
        .enumerate()
        .map(|(i, (name, body))| KeptResponse {
            url: format!("http://docs.test/{name}"),
            fetched_at_ms: 1_780_000_000_000 + i as u64,
            version: "HTTP/1.1".into(),
            status: 200,
            headers: vec![
                ("content-type".into(), "text/html; charset=utf-8".into()),
                ("date".into(), "Sun, 29 Nov 2026 03:00:00 GMT".into()),
                ("server".into(), "nginx".into()),
                ("last-modified".into(), "Thu, 12 Nov 2026 10:00:00 GMT".into()),
                ("etag".into(), format!("\"{i:x}-5f2a\"")),
            ],
            request_headers: vec![
                ("accept".into(), "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1".into()),
                ("user-agent".into(), "WeftBot/0.1 (+https://crawler.weft-volunteers.org/)".into()),
                ("accept-encoding".into(), "gzip, br".into()),
            ],
            body,
        })
        .collect();
    let n = responses.len();
    let (mut keep_rates, mut export_rates) = (Vec::new(), Vec::new());
    let (mut kept_bytes, mut warc_bytes) = (0, 0);
    for _ in 0..5 {
        let work = tempfile::tempdir()?;
        let db = weft_frontier::open_db(&work.path().join("db"), 32 << 20)?;
        let store = ResponseStore::open(&db)?;
        let t = Instant::now();
        kept_bytes = 0;
        for r in &responses {
            kept_bytes += store.keep(r)?;
        }
        db.flush()?;
        keep_rates.push(n as f64 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut out = std::io::BufWriter::new(std::fs::File::create(work.path().join("out.warc.gz"))?);
        out.write_all(&weft_content::export::to_warc::warcinfo(weft_content::export::to_warc::Kind::Warc, None, 0)?)?;
        for r in &responses {
            let kept = store.get(&weft_index::DocId::of_url(&r.url))?.expect("kept");
            out.write_all(&weft_content::export::to_warc::exchange(&kept)?)?;
        }
        out.flush()?;
        drop(out);
        export_rates.push(n as f64 / t.elapsed().as_secs_f64());
        warc_bytes = std::fs::metadata(work.path().join("out.warc.gz"))?.len() as usize;
    }
    println!("{n} pages of {dir}, {:.1} KiB of HTML a page", html as f64 / n as f64 / 1024.0);
    println!(
        "kept: {:.1} KiB a page (LZ4), {:.0} pages/s (median of 5)",
        kept_bytes as f64 / n as f64 / 1024.0,
        median(keep_rates)
    );
    println!(
        "WARC: {:.1} KiB a page (request + response records, gzip each), {:.0} pages/s = {:.0} records/s (median of 5)",
        warc_bytes as f64 / n as f64 / 1024.0,
        median(export_rates.clone()),
        2.0 * median(export_rates)
    );
    Ok(())
}
