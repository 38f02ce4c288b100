//! `weft extract [--url URL] [--format json|jsonl|text] PATH...`: run the extractor on files.
//!
//! Paths may be files or directories (walked recursively, in name order); `.gz` files are
//! decompressed transparently. `jsonl` prints one object per input — `path`, `ms` (what its
//! extraction took, reading not counted) and every field of the extraction, `text` holding the
//! main text; `json` prints the same objects as one array; `text` prints the main text only
//! (with a `==> path <==` header when there are several inputs). A path that cannot be read is
//! reported on stderr and makes the result `false`;
//! every readable input is extracted, whatever its bytes.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use url::Url;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Json,
    Jsonl,
    Text,
}

/// Expands directories into the files below them.
fn inputs(paths: &[PathBuf], err: &mut dyn Write, ok: &mut bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut stack = vec![p.clone()];
            while let Some(dir) = stack.pop() {
                let mut entries: Vec<PathBuf> = match std::fs::read_dir(&dir) {
                    Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
                    Err(e) => {
                        let _ = writeln!(err, "weft extract: {}: {e}", dir.display());
                        *ok = false;
                        continue;
                    }
                };
                entries.sort();
                // A directory's files in name order, then its subdirectories in name order.
                let (dirs, files): (Vec<PathBuf>, Vec<PathBuf>) = entries.into_iter().partition(|e| e.is_dir());
                out.extend(files);
                stack.extend(dirs.into_iter().rev());
            }
        } else {
            out.push(p.clone());
        }
    }
    out
}

/// Most bytes read from one input, after decompression: twice what the extractor parses
/// ([`weft_extract::sanitize::MAX_HTML_BYTES`]), so the extractor still sees and reports the
/// cut, while a small `.gz` that inflates to gigabytes (or a huge file) cannot take the
/// machine's memory — as the fetcher caps a compressed body.
pub const MAX_INPUT_BYTES: u64 = 2 * weft_extract::sanitize::MAX_HTML_BYTES as u64;

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut out = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        let raw = std::io::BufReader::new(file);
        flate2::read::GzDecoder::new(raw).take(MAX_INPUT_BYTES).read_to_end(&mut out)?;
    } else {
        file.take(MAX_INPUT_BYTES).read_to_end(&mut out)?;
    }
    Ok(out)
}

/// The page URL for a file: `--url` if given, else the file's `file://` URL (relative links
/// then resolve to files and are dropped as non-HTTP; pass `--url` to keep them).
fn page_url(path: &Path, url: Option<&Url>) -> Url {
    if let Some(u) = url {
        return u.clone();
    }
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    Url::from_file_path(&abs).unwrap_or_else(|_| Url::parse("file:///").expect("static URL"))
}

/// Runs the command. Returns whether every path could be read.
pub fn run(paths: &[PathBuf], url: Option<&Url>, format: Format, out: &mut dyn Write, err: &mut dyn Write) -> bool {
    let mut ok = true;
    let files = inputs(paths, err, &mut ok);
    let many = files.len() > 1;
    let mut array = Vec::new();
    for path in &files {
        let body = match read(path) {
            Ok(b) => b,
            Err(e) => {
                let _ = writeln!(err, "weft extract: {}: {e}", path.display());
                ok = false;
                continue;
            }
        };
        let url = page_url(path, url);
        let started = std::time::Instant::now();
        let e = weft_extract::extract(&body, &[], &url);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        match format {
            Format::Text => {
                if many {
                    let _ = writeln!(out, "==> {} <==", path.display());
                }
                let _ = writeln!(out, "{}", e.text);
                if many {
                    let _ = writeln!(out);
                }
            }
            Format::Json | Format::Jsonl => {
                let mut v = serde_json::to_value(&e).expect("extraction serializes");
                if let serde_json::Value::Object(m) = &mut v {
                    m.insert("path".into(), serde_json::Value::String(path.display().to_string()));
                    // What the extraction took, single-threaded, in milliseconds (reading the
                    // file not counted): a page that is slow to extract shows here.
                    m.insert("ms".into(), serde_json::json!((ms * 1e3).round() / 1e3));
                }
                if format == Format::Jsonl {
                    let _ = writeln!(out, "{v}");
                } else {
                    array.push(v);
                }
            }
        }
    }
    if format == Format::Json {
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&array).expect("json"));
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn files_directories_gzip_and_unreadable_paths() {
        let dir = tempfile::tempdir().unwrap();
        let page = "<html><head><title>One</title></head><body><article><p>Hello there, this is the first page, with words.</p></article></body></html>";
        std::fs::write(dir.path().join("a.html"), page).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"<p>Second page from a gzip file, with words.</p><a href='/next'>next</a>").unwrap();
        std::fs::write(dir.path().join("sub/b.html.gz"), gz.finish().unwrap()).unwrap();
        let missing = dir.path().join("missing.html");

        let (mut out, mut err) = (Vec::new(), Vec::new());
        let url = Url::parse("https://site.test/dir/page").unwrap();
        let ok = run(&[dir.path().to_path_buf(), missing.clone()], Some(&url), Format::Jsonl, &mut out, &mut err);
        assert!(!ok, "an unreadable path makes the run fail");
        assert!(String::from_utf8(err).unwrap().contains("missing.html"));
        let lines: Vec<serde_json::Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0]["path"].as_str().unwrap().ends_with("a.html"));
        assert_eq!(lines[0]["title"], "One");
        assert_eq!(lines[0]["text"], "Hello there, this is the first page, with words.");
        assert_eq!(lines[1]["text"], "Second page from a gzip file, with words.");
        assert_eq!(lines[1]["links"][0]["url"], "https://site.test/next");
        assert!(lines[0]["ms"].as_f64().unwrap() > 0.0, "{}", lines[0]["ms"]);
        for key in ["page_type", "template", "js", "fingerprints", "blocks", "word_count", "published", "warnings"] {
            assert!(lines[0].get(key).is_some(), "{key}");
        }

        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert!(run(&[dir.path().join("a.html")], None, Format::Text, &mut out, &mut err));
        assert_eq!(String::from_utf8(out).unwrap(), "Hello there, this is the first page, with words.\n");

        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert!(run(&[dir.path().to_path_buf()], None, Format::Json, &mut out, &mut err));
        let arr: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(arr.as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_gzip_bomb_is_read_only_up_to_the_cap_and_a_large_text_tail_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        // 1 GiB of text in ~1 MB of gzip: read up to the cap, not into memory whole.
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(b"<html><body><p>").unwrap();
        let chunk = "many words of one long paragraph ".repeat(32 << 10);
        for _ in 0..(1usize << 30) / chunk.len() {
            gz.write_all(chunk.as_bytes()).unwrap();
        }
        let bomb = dir.path().join("bomb.html.gz");
        std::fs::write(&bomb, gz.finish().unwrap()).unwrap();
        assert!(std::fs::metadata(&bomb).unwrap().len() < 8 << 20);
        assert_eq!(read(&bomb).unwrap().len() as u64, MAX_INPUT_BYTES);

        // The extractor cuts it at 8 MiB inside the paragraph and keeps the text before the cut.
        let (mut out, mut err) = (Vec::new(), Vec::new());
        assert!(run(&[bomb], None, Format::Jsonl, &mut out, &mut err));
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert!(v["word_count"].as_u64().unwrap() > 1_000_000, "{}", v["word_count"]);
        assert!(v["warnings"].to_string().contains("truncated"), "{}", v["warnings"]);
    }
}
