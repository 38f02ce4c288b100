//! Embedding throughput: chunks/s and tokens/s of the index's embedder at 1 and 2 threads,
//! batch 32 (runs capped at `embed.batch_tokens` padded tokens; at 2 threads one session, the default, and one session per thread), against the same int8 model through Python onnxruntime (`embed_reference.py`),
//! run alternately in the same process so a noisy machine affects both alike; medians of the
//! rounds are printed.
//!
//! ```sh
//! bash scripts/bench-reference.sh            # once: a venv with onnxruntime, tokenizers, numpy
//! cargo run --release -p weft-index --example bench_embed -- [--devset DIR] [--rounds 3] [--chunks 256]
//!     [--batch 32] [--batch-tokens 1024]
//! ```
//!
//! Two corpora: `full` — chunks of exactly the model's 256 tokens (the issue's setting), cut
//! from the extraction dev set's texts (`--devset`, `$EXTRACTION_DEVSET` or
//! `../shared/extraction-devset`; generated text when absent) — and `mix`, every chunk the
//! chunker makes of those texts, short tails included, in document order: what indexing a crawl
//! really feeds the model.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use weft_index::tokenizer::{load, Purpose};
use weft_index::{Chunker, Embedder};

struct Args {
    devset: Option<PathBuf>,
    python: PathBuf,
    rounds: usize,
    chunks: usize,
    batch: usize,
    batch_tokens: usize,
}

fn args() -> Args {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut a = Args {
        devset: std::env::var_os("EXTRACTION_DEVSET").map(PathBuf::from).or_else(|| {
            let p = root.join("../shared/extraction-devset");
            p.is_dir().then_some(p)
        }),
        python: root.join("target/bench-venv/bin/python"),
        rounds: 3,
        chunks: 256,
        batch: 32,
        batch_tokens: weft_config::EmbedConfig::default().batch_tokens,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--devset" => a.devset = Some(value.into()),
            "--python" => a.python = value.into(),
            "--rounds" => a.rounds = value.parse().expect("--rounds N"),
            "--chunks" => a.chunks = value.parse().expect("--chunks N"),
            "--batch" => a.batch = value.parse().expect("--batch N"),
            "--batch-tokens" => a.batch_tokens = value.parse().expect("--batch-tokens N"),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// Texts of the dev set's hand-checked main text, or generated prose when it is absent.
fn texts(devset: Option<&Path>) -> Vec<String> {
    if let Some(dir) = devset {
        let path = dir.join("ground-truth.json");
        if let Ok(bytes) = std::fs::read(&path) {
            let v: serde_json::Value = serde_json::from_slice(&bytes).expect("ground-truth.json is JSON");
            let mut keys: Vec<&String> = v.as_object().expect("an object").keys().collect();
            keys.sort();
            println!("corpus: main texts of the {} dev-set pages in {}", keys.len(), dir.display());
            return keys.iter().filter_map(|k| v[k.as_str()]["articleBody"].as_str().map(str::to_string)).collect();
        }
    }
    println!("corpus: generated text (the dev set is absent; pass --devset DIR or set EXTRACTION_DEVSET)");
    let words = "the a river city council budget music garden history science bread engine winter market \
        school library travel ocean mountain language computer energy health football election museum village \
        painting harvest festival bridge railway forest weather company workers students reading"
        .split_whitespace()
        .collect::<Vec<_>>();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..60)
        .map(|_| {
            (0..800)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let w = words[(x % words.len() as u64) as usize];
                    if i % 14 == 13 {
                        format!("{w}.")
                    } else {
                        w.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

struct Run {
    chunks: usize,
    tokens: usize,
    seconds: f64,
}

fn rust(embedder: &mut Embedder, texts: &[&str]) -> Run {
    let started = Instant::now();
    let ids = embedder.tokenize(texts).unwrap();
    let vectors = embedder.embed_tokens(&ids).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), texts.len());
    Run { chunks: texts.len(), tokens: ids.iter().map(Vec::len).sum(), seconds }
}

fn python(python: &Path, texts: &[&str], threads: usize, batch: usize) -> Option<Run> {
    let files = weft_index::testing::model_files();
    let job = serde_json::json!({
        "model": files.model, "tokenizer": files.tokenizer, "texts": texts,
        "threads": threads, "batch": batch, "max_tokens": files.max_tokens,
    });
    let path = std::env::temp_dir().join(format!("weft-bench-embed-{}.json", std::process::id()));
    std::fs::write(&path, job.to_string()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/embed_reference.py");
    let out = Command::new(python).arg(script).arg(&path).output().ok()?;
    let _ = std::fs::remove_file(&path);
    if !out.status.success() {
        eprintln!("reference failed: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(Run {
        chunks: v["chunks"].as_u64()? as usize,
        tokens: v["tokens"].as_u64()? as usize,
        seconds: v["seconds"].as_f64()?,
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a = args();
    let mut files = weft_index::testing::model_files();
    files.batch_size = a.batch;
    files.batch_tokens = a.batch_tokens;
    let chunker = Chunker::new(load(&files.tokenizer, Purpose::Chunking).unwrap(), files.max_tokens, 0.15);
    let texts = texts(a.devset.as_deref());
    let mut full: Vec<String> = Vec::new();
    let mut mix: Vec<String> = Vec::new();
    for t in &texts {
        // Full: consecutive windows of exactly the model's limit, wherever they fall.
        let mut rest = t.as_str();
        while full.len() < a.chunks && chunker.count_tokens(rest).unwrap() >= chunker.window() {
            let window = chunker.truncate(rest, chunker.window()).unwrap();
            rest = &rest[window.len()..];
            if chunker.count_tokens(window).unwrap() == chunker.window() {
                full.push(window.to_string());
            }
        }
        for s in chunker.split(t, 0).unwrap() {
            if mix.len() < a.chunks {
                mix.push(t[s.start..s.end].to_string());
            }
        }
    }
    let have_python = a.python.is_file()
        && Command::new(&a.python)
            .args(["-c", "import onnxruntime, tokenizers, numpy"])
            .status()
            .is_ok_and(|s| s.success());
    if !have_python {
        println!("reference: {} cannot import onnxruntime/tokenizers/numpy; run `bash scripts/bench-reference.sh` (Rust figures only)", a.python.display());
    }

    let mut one = Embedder::open(&files, 1).unwrap();
    // The default (`embed.sessions` = 1): one session running each inference on both threads;
    // and one single-threaded session per thread, which holds the weights twice.
    let mut two = Embedder::open(&files, 2).unwrap();
    let mut two_sessions = Embedder::open(&weft_config::EmbedConfig { sessions: 2, ..files.clone() }, 2).unwrap();
    // Warm up every session once.
    for e in [&mut one, &mut two, &mut two_sessions] {
        e.embed(&[full[0].as_str()]).unwrap();
    }
    for (name, corpus) in [("full", &full), ("mix", &mix)] {
        let refs: Vec<&str> = corpus.iter().map(String::as_str).collect();
        let mut results: Vec<(&str, Vec<Run>)> =
            ["weft 1 thread", "python 1 thread", "weft 2 threads", "python 2 threads", "weft 2 threads, 2 sessions"]
                .into_iter()
                .map(|n| (n, Vec::new()))
                .collect();
        for _ in 0..a.rounds {
            results[0].1.push(rust(&mut one, &refs));
            if have_python {
                results[1].1.extend(python(&a.python, &refs, 1, a.batch));
            }
            results[2].1.push(rust(&mut two, &refs));
            if have_python {
                results[3].1.extend(python(&a.python, &refs, 2, a.batch));
            }
            results[4].1.push(rust(&mut two_sessions, &refs));
        }
        let tokens_per_chunk = results[0].1[0].tokens as f64 / results[0].1[0].chunks as f64;
        println!(
            "\n{name}: {} chunks, {:.0} tokens per chunk on average, batch {}, median of {} rounds",
            refs.len(),
            tokens_per_chunk,
            a.batch,
            a.rounds
        );
        println!("{:<28} {:>10} {:>10}", "", "chunks/s", "tokens/s");
        for (label, runs) in &results {
            if runs.is_empty() {
                continue;
            }
            let cps = median(runs.iter().map(|r| r.chunks as f64 / r.seconds).collect());
            let tps = median(runs.iter().map(|r| r.tokens as f64 / r.seconds).collect());
            println!("{label:<28} {cps:>10.1} {tps:>10.0}");
        }
        let t = |i: usize| median(results[i].1.iter().map(|r| r.tokens as f64 / r.seconds).collect());
        if have_python {
            println!("per token vs python, same run: 1 thread {:.2}x, 2 threads {:.2}x", t(0) / t(1), t(2) / t(3));
        }
        println!(
            "2 threads: one session {:.0} tokens/s, two sessions {:.0} ({:+.1}%)",
            t(2),
            t(4),
            (t(4) / t(2) - 1.0) * 100.0
        );
    }
}
