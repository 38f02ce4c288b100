//! Sentence embeddings with ONNX Runtime: tokenize, run the model, pool, normalize.
//!
//! The ONNX Runtime shared library is loaded at run time (`ort`'s `load-dynamic`) from
//! `embed.ort_library`, so the binary builds and starts without it and a missing file is a
//! one-line error rather than a loader failure. All texts of a call are tokenized together
//! (in parallel, by `tokenizers`), sorted by length and cut into batches, and each batch is
//! padded only to its own longest member: a batch of 32 short chunks does not pay for 256
//! positions. Vectors are mean-pooled over the attention mask (or CLS-pooled, per config) and
//! L2-normalized, so cosine similarity is a dot product.
//!
//! An [`Embedder`] is synchronous and holds its sessions — `embed.sessions` ONNX Runtime
//! sessions (1 by default) among which the `embed.threads` threads are shared, each session
//! taking the next run when free — and runs of at most `embed.batch_tokens` padded tokens
//! (rows × longest row; 256 = one full chunk). Both were measured (`bench_embed`,
//! `embed_memory`, docs/src/benchmarks.md): short runs beat 32 full-length rows per run; one
//! single-threaded session per thread embeds faster than one session on all threads (+5–7% on
//! an idle box, +30% on a busy one) but holds the model's weights once per session (~92 MiB
//! each), which a small box cannot spare, so one session is the default.
//! Callers run it on threads of their own (the node's indexer and its questions each hold a
//! handle on one model, [`Embedder::share`]) so inference never blocks an async runtime.

/// A session shared among handles, and one inference run on it.
mod slot;

use crate::tokenizer::{self, Purpose};
use crate::IndexError;
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use slot::{Shape, Slot, Vectors};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, OnceLock};
use tokenizers::Tokenizer;
use weft_config::EmbedConfig;

/// ONNX Runtime allows one environment per process; every session shares it.
static ENVIRONMENT: OnceLock<Result<(PathBuf, Environment), String>> = OnceLock::new();

fn environment(library: &Path) -> Result<Environment, IndexError> {
    if !library.is_file() {
        return Err(IndexError::missing("ONNX Runtime library", "embed.ort_library", library));
    }
    let wanted = library.canonicalize().unwrap_or_else(|_| library.to_path_buf());
    let loaded = ENVIRONMENT.get_or_init(|| {
        let builder = ort::init_from(&wanted).map_err(|e| format!("cannot load {}: {e}", wanted.display()))?;
        let env = builder.with_name("weft").with_telemetry(false).build().map_err(|e| e.to_string())?;
        Ok((wanted.clone(), env))
    });
    match loaded {
        Ok((path, env)) if *path == wanted => Ok(env.clone()),
        Ok((path, _)) => Err(IndexError::Model(format!(
            "ONNX Runtime is already loaded from {} in this process; cannot also load {}",
            path.display(),
            wanted.display()
        ))),
        Err(e) => Err(IndexError::Model(e.clone())),
    }
}

/// The model's identity: blake3 of the model file, 16 hex digits.
pub fn model_id(path: &std::path::Path) -> Result<String, crate::IndexError> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(std::fs::File::open(path)?)?;
    Ok(hasher.finalize().to_hex()[..16].to_string())
}

/// The process's heap, bytes: in use (glibc's `mallinfo2`: arenas and large mappings) and held
/// free in the arenas; zeros where that is not known. Process-wide: a difference in use across
/// a step measures the step only while nothing else allocates much, as when the node loads its
/// model at start. (The node also reports both in `/status`.)
pub fn heap_bytes() -> (u64, u64) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 reads the allocator's counters under its own locks.
        let info = unsafe { libc::mallinfo2() };
        ((info.uordblks + info.hblkhd) as u64, info.fordblks as u64)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    (0, 0)
}

/// A loaded embedding model.
///
/// [`Embedder::share`] gives another handle on the same sessions: a node's indexer and its
/// questions share one model in memory. A session holds the model's weights as ONNX Runtime
/// optimised them (~96 MiB resident for the int8 MiniLM, whose weights constant folding turns
/// to f32), so a second copy for questions cost a node as much as its whole index of a few
/// thousand pages. Each inference run locks a session and hands it on fairly when done. The
/// indexer's handle *yields* ([`Embedder::set_yielding`]): a question that finds a session
/// busy with one of its runs stops that run between two operators and goes first, and the
/// indexer runs it again after, so a question does not wait for the indexer's run
/// (`embed_sharing`, docs/src/benchmarks.md).
pub struct Embedder {
    /// `embed.sessions` sessions, the threads shared out among them: independent runs in
    /// parallel are a few percent faster than one run split across threads, but each session
    /// holds the weights again (measured in `bench_embed` and `embed_memory`).
    sessions: Arc<[Slot]>,
    /// This handle's runs give way to other handles' runs ([`Embedder::set_yielding`]).
    yielding: bool,
    tokenizer: Arc<Tokenizer>,
    shape: Shape,
    batch_size: usize,
    batch_tokens: usize,
    /// What loading the sessions took from the heap, bytes ([`Embedder::memory_bytes`]).
    memory_bytes: u64,
    threads: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("dims", &self.shape.dims)
            .field("max_tokens", &self.shape.max_tokens)
            .field("sessions", &self.sessions.len())
            .finish()
    }
}

impl Embedder {
    /// Loads the model named by `config` to run on `threads` threads (0 = one per core), shared
    /// out among `embed.sessions` sessions.
    pub fn open(config: &EmbedConfig, threads: usize) -> Result<Embedder, IndexError> {
        if !config.model.is_file() {
            return Err(IndexError::missing("embedding model", "embed.model", &config.model));
        }
        let tokenizer = tokenizer::load(&config.tokenizer, Purpose::Embedding { max_tokens: config.max_tokens })?;
        let env = environment(&config.ort_library)?;
        let threads = if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
        let model_err = |e: ort::Error<_>| IndexError::Model(format!("{}: {e}", config.model.display()));
        let count = config.sessions.clamp(1, threads);
        let mut sessions = Vec::with_capacity(count);
        let heap_before = heap_bytes().0;
        for i in 0..count {
            // The threads shared out as evenly as they go: 3 threads in 2 sessions are 2 + 1.
            let intra = threads / count + usize::from(i < threads % count);
            let session = Session::builder(&env)
                .map_err(|e| IndexError::Model(e.to_string()))?
                .with_optimization_level(GraphOptimizationLevel::All)
                .map_err(model_err)?
                .with_intra_threads(intra)
                .map_err(model_err)?
                .with_inter_threads(1)
                .map_err(model_err)?
                // A session's helper threads otherwise spin between the operators of a run and
                // after it, burning the cores the crawl and the extraction need on a small box.
                .with_intra_op_spinning(false)
                .map_err(model_err)?
                // ONNX Runtime's memory pattern plans one block per input shape it has seen and
                // keeps it; runs here come in every length up to the longest chunk, so the plans
                // pile up: ~70 MiB per session after 40 runs of four lengths, with no speed
                // gained (`embed_memory`, docs/src/benchmarks.md). The arena stays on: without
                // it inference is ~12% slower.
                .with_memory_pattern(false)
                .map_err(model_err)?
                .commit_from_file(&config.model)
                .map_err(|e| IndexError::Model(format!("cannot load {}: {e}", config.model.display())))?;
            sessions.push(session);
        }
        let names: Vec<&str> = sessions[0].inputs().iter().map(|i| i.name()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !names.contains(&needed) {
                return Err(IndexError::Model(format!(
                    "{} has inputs {names:?}; an embedding model needs input_ids and attention_mask",
                    config.model.display()
                )));
            }
        }
        let token_type_ids = names.contains(&"token_type_ids");
        let memory_bytes = heap_bytes().0.saturating_sub(heap_before);
        let slots = sessions.into_iter().map(Slot::new).collect::<Result<Vec<_>, _>>()?;
        Ok(Embedder {
            sessions: slots.into(),
            yielding: false,
            memory_bytes,
            threads,
            tokenizer: Arc::new(tokenizer),
            shape: Shape { dims: config.dims, max_tokens: config.max_tokens, pooling: config.pooling, token_type_ids },
            batch_size: config.batch_size.max(1),
            batch_tokens: config.batch_tokens.max(1),
        })
    }

    /// The heap the model's sessions took when they loaded, bytes: ONNX Runtime's copy of the
    /// weights (constant folding turns the int8 matrices to f32, ~42 MiB) and their packed
    /// forms, for each session (one per thread). Measured by the allocator around the loading
    /// (glibc's `mallinfo2`; 0 elsewhere), so an operator sees what each embedding thread costs
    /// in memory: ~90 MiB each for all-MiniLM-L6-v2. Runs add the arena's blocks on top.
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes
    }

    /// Another handle on this embedder's sessions (the model is not loaded again). Runs of
    /// both handles take turns on the sessions. The new handle does not yield.
    pub fn share(&self) -> Embedder {
        Embedder { sessions: self.sessions.clone(), tokenizer: self.tokenizer.clone(), yielding: false, ..*self }
    }

    /// Makes this handle's runs give way to the other handles' runs (a node's indexer gives
    /// way to its questions): a run of another handle that finds a session busy with a run of
    /// this one stops it — ONNX Runtime checks its terminate flag between operators, well
    /// under a millisecond apart for MiniLM — and takes the session; this handle runs the
    /// stopped batch again once no other run waits, and that second run is not stopped. A
    /// question so waits for no indexer run; the indexing loses at most the part of a run done.
    ///
    /// The indexer does not also run at a lower priority: an unprivileged thread cannot raise
    /// its priority back, so whatever waits on its work (a snapshot waiting on tantivy's
    /// commit) would inherit a starved thread's wait.
    pub fn set_yielding(&mut self, yielding: bool) {
        self.yielding = yielding;
    }

    /// Runs of yielding handles stopped so that another handle's run could go first, since
    /// the model was loaded (all handles' sessions together).
    pub fn runs_stopped(&self) -> u64 {
        self.sessions.iter().map(|s| s.stopped.load(SeqCst)).sum()
    }

    /// One run on the first free session, else on the first session (for a handle that does
    /// not yield: the one a yielding run holds, if any) once it is free.
    fn run_on_any(&self, ids: &[Vec<u32>], rows: &[usize]) -> Vectors {
        let free = self.sessions.iter().find_map(|s| s.session.try_lock().map(|held| (s, held)));
        if self.yielding {
            let slot = free.map_or(&self.sessions[0], |(s, _)| s);
            return slot.run_yielding(self.shape, ids, rows);
        }
        match free {
            Some((slot, held)) => slot.run_first(Some(held), self.shape, ids, rows),
            None => {
                let slot = self.sessions.iter().find(|s| s.yielding_busy.load(SeqCst)).unwrap_or(&self.sessions[0]);
                slot.run_first(None, self.shape, ids, rows)
            }
        }
    }

    /// One run on `slot`, as this handle runs (yielding or not).
    fn run_on(&self, slot: &Slot, ids: &[Vec<u32>], rows: &[usize]) -> Vectors {
        match self.yielding {
            true => slot.run_yielding(self.shape, ids, rows),
            false => slot.run_first(None, self.shape, ids, rows),
        }
    }

    pub fn dims(&self) -> usize {
        self.shape.dims
    }

    /// Texts per inference run at most (`embed.batch_size`).
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Threads the embedder runs on, all sessions together.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Sessions (copies of the model in memory) the threads are shared among.
    pub fn sessions(&self) -> usize {
        self.sessions.len()
    }

    /// Tokens the model reads at most, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.shape.max_tokens
    }

    /// Tokenizes `texts` as the model will see them (truncated, special tokens added).
    pub fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, IndexError> {
        let failed = |e: tokenizers::Error| IndexError::Tokenize(e.to_string());
        // One text (a question) is tokenized on the calling thread: a batch goes to rayon's
        // pool, and a question would wait for one of its threads, busy with the indexer's
        // chunks, to be free and scheduled.
        if let [text] = texts {
            return Ok(vec![self.tokenizer.encode(*text, true).map_err(failed)?.get_ids().to_vec()]);
        }
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(failed)?;
        Ok(encodings.into_iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// One unit vector per text, in order.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let ids = self.tokenize(texts)?;
        self.embed_tokens(&ids)
    }

    /// Embeds already tokenized inputs (as [`Embedder::tokenize`] makes them): sorted by
    /// length, cut into runs of at most `embed.batch_size` texts and `embed.batch_tokens`
    /// padded tokens, the runs shared out to the sessions.
    pub fn embed_tokens(&mut self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, IndexError> {
        let batches = batches(ids, self.batch_size, self.batch_tokens, self.shape.max_tokens);
        let results: Vec<(usize, Vectors)> = if self.sessions.len() == 1 || batches.len() == 1 {
            batches.iter().enumerate().map(|(b, rows)| (b, self.run_on_any(ids, rows))).collect()
        } else {
            // Each session takes the next batch when it is free: long and short runs balance.
            let next = AtomicUsize::new(0);
            let (next, batches, this) = (&next, &batches, &*self);
            std::thread::scope(|scope| {
                let workers: Vec<_> = self
                    .sessions
                    .iter()
                    .map(|slot| {
                        scope.spawn(move || {
                            let mut done = Vec::new();
                            loop {
                                let b = next.fetch_add(1, SeqCst);
                                let Some(rows) = batches.get(b) else { break };
                                done.push((b, this.run_on(slot, ids, rows)));
                            }
                            done
                        })
                    })
                    .collect();
                workers.into_iter().flat_map(|w| w.join().expect("an embedding thread panicked")).collect()
            })
        };
        let mut out = vec![Vec::new(); ids.len()];
        for (b, result) in results {
            for (&i, v) in batches[b].iter().zip(result?) {
                out[i] = v;
            }
        }
        Ok(out)
    }
}

/// Indices of `ids` grouped into inference runs: longest first, at most `rows` per run and at
/// most `budget` padded tokens (a run always holds at least one text).
fn batches(ids: &[Vec<u32>], rows: usize, budget: usize, max_tokens: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
    let mut batches: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut longest = 0;
    for i in order {
        let len = ids[i].len().clamp(1, max_tokens);
        if current.is_empty() {
            longest = len;
        }
        if !current.is_empty() && (current.len() == rows || (current.len() + 1) * longest > budget) {
            batches.push(std::mem::take(&mut current));
            longest = len;
        }
        current.push(i);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    batches
}

pub use weft_vecmath::normalize;

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    weft_vecmath::dot(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    fn embedder() -> Embedder {
        Embedder::open(&crate::testing::embed_config(), 2).unwrap()
    }

    #[test]
    fn a_paraphrase_ranks_above_an_unrelated_sentence() {
        let mut e = embedder();
        let v = e
            .embed(&[
                "How do I bake fresh bread at home?",
                "A simple recipe for making your own loaf of bread in the kitchen.",
                "The stock market fell sharply after the central bank raised interest rates.",
            ])
            .unwrap();
        let para = cosine(&v[0], &v[1]);
        let unrelated = cosine(&v[0], &v[2]);
        assert!(para > unrelated + 0.3, "paraphrase {para}, unrelated {unrelated}");
    }

    #[test]
    fn vectors_are_unit_length_and_sized_from_config() {
        let mut e = embedder();
        for v in e.embed(&["one", "two words", ""]).unwrap() {
            assert_eq!(v.len(), 384);
            let n: f32 = v.iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-3, "norm² {n}");
        }
    }

    #[test]
    fn batching_and_padding_do_not_change_vectors() {
        let mut e = embedder();
        let texts = ["short", "a somewhat longer sentence about gardens and their flowers", "mid length text"];
        let together = e.embed(&texts).unwrap();
        for (t, v) in texts.iter().zip(&together) {
            let alone = e.embed(&[t]).unwrap().remove(0);
            assert!(cosine(v, &alone) > 0.999, "{t}");
        }
    }

    #[test]
    fn runs_are_sorted_by_length_and_capped_in_rows_and_tokens() {
        let ids: Vec<Vec<u32>> = [3usize, 256, 10, 256, 256, 256, 256, 5].iter().map(|&n| vec![1; n]).collect();
        let b = batches(&ids, 32, 1024, 256);
        // Four 256-token rows fill the 1024-token budget; the short ones go together.
        assert_eq!(b, vec![vec![1, 3, 4, 5], vec![6, 2, 7, 0]]);
        let b = batches(&ids, 2, 1024, 256);
        assert!(b.iter().all(|r| r.len() <= 2));
        assert_eq!(b.iter().map(Vec::len).sum::<usize>(), ids.len());
    }

    #[test]
    fn a_shared_handle_runs_on_the_same_model_from_another_thread() {
        let texts: Vec<String> = (0..24).map(|i| format!("Paragraph {i} on {}", "indexing ".repeat(i * 3))).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut indexer = Embedder::open(&crate::testing::embed_config(), 1).unwrap();
        let alone = indexer.embed(&refs).unwrap();
        let mut asker = indexer.share();
        // Both handles at once: the indexer's runs and the questions take turns on one session.
        let questions = std::thread::spawn(move || {
            (0..20)
                .map(|q| asker.embed(&[format!("question {q}").as_str()]).unwrap().pop().unwrap())
                .collect::<Vec<_>>()
        });
        let busy = indexer.embed(&refs).unwrap();
        let answers = questions.join().unwrap();
        for (a, b) in alone.iter().zip(&busy) {
            assert!(cosine(a, b) > 0.9999);
        }
        let mut fresh = Embedder::open(&crate::testing::embed_config(), 1).unwrap();
        assert!(cosine(&answers[7], &fresh.embed(&["question 7"]).unwrap()[0]) > 0.9999);
        assert_eq!(indexer.threads(), 1);
    }

    #[test]
    fn a_question_stops_a_yielding_run_which_is_done_again_with_the_same_vectors() {
        // Full-length chunks: each run of the indexer is one chunk of 256 tokens (~40 ms).
        let texts: Vec<String> = (0..32)
            .map(|i| format!("Chunk {i}: {}", "the planner reads the buffer and the vacuum ".repeat(40)))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut indexer = Embedder::open(&crate::testing::embed_config(), 1).unwrap();
        let alone = indexer.embed(&refs).unwrap();
        let mut asker = indexer.share();
        indexer.set_yielding(true);
        let done = Arc::new(AtomicBool::new(false));
        let asking = done.clone();
        let questions = std::thread::spawn(move || {
            let mut answers = Vec::new();
            while !asking.load(SeqCst) {
                answers.push(asker.embed(&["where is the planner"]).unwrap().pop().unwrap());
                std::thread::sleep(Duration::from_millis(15));
            }
            answers
        });
        // A question every ~20 ms, faster than one run: each run is stopped at most once, so
        // the indexing still ends.
        let busy = indexer.embed(&refs).unwrap();
        done.store(true, SeqCst);
        let answers = questions.join().unwrap();
        // Questions asked while the indexer was mid-run stopped it; the stopped runs were done
        // again and every chunk's vector is the one it has alone.
        assert!(indexer.runs_stopped() > 0, "no run stopped in {} questions", answers.len());
        for (a, b) in alone.iter().zip(&busy) {
            assert!(cosine(a, b) > 0.9999);
        }
        let mut fresh = Embedder::open(&crate::testing::embed_config(), 1).unwrap();
        let expected = fresh.embed(&["where is the planner"]).unwrap().remove(0);
        assert!(answers.iter().all(|a| cosine(a, &expected) > 0.9999));
        // The handle that does not yield is never stopped: its runs were all whole.
        assert_eq!(fresh.runs_stopped(), 0);
    }

    #[test]
    fn two_sessions_or_two_threads_give_the_same_vectors_as_one() {
        let texts: Vec<String> = (0..40).map(|i| format!("Sentence {i} about {} things.", "many ".repeat(i))).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let one = Embedder::open(&crate::testing::embed_config(), 1).unwrap().embed(&refs).unwrap();
        let config = EmbedConfig { sessions: 2, ..crate::testing::embed_config() };
        let mut two = Embedder::open(&config, 2).unwrap();
        assert_eq!((two.threads(), two.sessions()), (2, 2));
        for (a, b) in one.iter().zip(two.embed(&refs).unwrap()) {
            assert!(cosine(a, &b) > 0.9999);
        }
        // The default: one session running each inference on both threads.
        let mut shared = Embedder::open(&crate::testing::embed_config(), 2).unwrap();
        assert_eq!((shared.threads(), shared.sessions()), (2, 1));
        for (a, b) in one.iter().zip(shared.embed(&refs).unwrap()) {
            assert!(cosine(a, &b) > 0.9999);
        }
    }

    #[test]
    fn reads_256_tokens_not_the_shipped_128() {
        let e = embedder();
        let long = "word ".repeat(400);
        let ids = e.tokenize(&[&long]).unwrap();
        assert_eq!(ids[0].len(), 256);
    }

    #[test]
    fn the_tokens_past_128_change_the_vector() {
        let mut e = embedder();
        let head = "The committee met on Tuesday to discuss the budget. ".repeat(12);
        let a = format!("{head} Then everyone talked about dinosaurs and fossils for hours.");
        let v = e.embed(&[&head, &a]).unwrap();
        assert!(cosine(&v[0], &v[1]) < 0.999, "text after token 128 was ignored");
    }

    #[test]
    fn non_latin_and_emoji_embed() {
        let mut e = embedder();
        let v = e.embed(&["東京は日本の首都です。", "Москва — столица России.", "🎉🚀🎈", "\u{0}\u{1}"]).unwrap();
        assert!(v.iter().all(|v| v.len() == 384 && v.iter().all(|x| x.is_finite())));
    }

    #[test]
    fn a_missing_model_is_a_one_line_error_that_says_how_to_get_it() {
        let mut c = crate::testing::embed_config();
        c.model = "/nonexistent/model.onnx".into();
        let e = Embedder::open(&c, 1).unwrap_err().to_string();
        assert!(!e.contains('\n'));
        assert!(e.contains("scripts/setup.sh") && e.contains("embed.model"), "{e}");
    }
}
