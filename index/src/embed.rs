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
//! An [`Embedder`] is synchronous and owns its session; callers run it on threads of their own
//! (the node gives indexing and queries one each) so inference never blocks an async runtime.

use crate::tokenizer::{self, Purpose};
use crate::IndexError;
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tokenizers::Tokenizer;
use weft_config::{EmbedConfig, Pooling};

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

/// A loaded embedding model.
pub struct Embedder {
    session: Session,
    tokenizer: Tokenizer,
    dims: usize,
    max_tokens: usize,
    pooling: Pooling,
    batch_size: usize,
    token_type_ids: bool,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("dims", &self.dims).field("max_tokens", &self.max_tokens).finish()
    }
}

impl Embedder {
    /// Loads the model named by `config` with `threads` intra-op threads (0 = one per core).
    pub fn open(config: &EmbedConfig, threads: usize) -> Result<Embedder, IndexError> {
        if !config.model.is_file() {
            return Err(IndexError::missing("embedding model", "embed.model", &config.model));
        }
        let tokenizer = tokenizer::load(&config.tokenizer, Purpose::Embedding { max_tokens: config.max_tokens })?;
        let env = environment(&config.ort_library)?;
        let threads = if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
        let model_err = |e: ort::Error<_>| IndexError::Model(format!("{}: {e}", config.model.display()));
        let session = Session::builder(&env)
            .map_err(|e| IndexError::Model(e.to_string()))?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(model_err)?
            .with_intra_threads(threads)
            .map_err(model_err)?
            .with_inter_threads(1)
            .map_err(model_err)?
            .commit_from_file(&config.model)
            .map_err(|e| IndexError::Model(format!("cannot load {}: {e}", config.model.display())))?;
        let names: Vec<&str> = session.inputs().iter().map(|i| i.name()).collect();
        for needed in ["input_ids", "attention_mask"] {
            if !names.contains(&needed) {
                return Err(IndexError::Model(format!(
                    "{} has inputs {names:?}; an embedding model needs input_ids and attention_mask",
                    config.model.display()
                )));
            }
        }
        let token_type_ids = names.contains(&"token_type_ids");
        Ok(Embedder {
            session,
            tokenizer,
            dims: config.dims,
            max_tokens: config.max_tokens,
            pooling: config.pooling,
            batch_size: config.batch_size.max(1),
            token_type_ids,
        })
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Tokens the model reads at most, special tokens included.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// Tokenizes `texts` as the model will see them (truncated, special tokens added).
    pub fn tokenize(&self, texts: &[&str]) -> Result<Vec<Vec<u32>>, IndexError> {
        let encodings =
            self.tokenizer.encode_batch(texts.to_vec(), true).map_err(|e| IndexError::Tokenize(e.to_string()))?;
        Ok(encodings.into_iter().map(|e| e.get_ids().to_vec()).collect())
    }

    /// One unit vector per text, in order.
    pub fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, IndexError> {
        let ids = self.tokenize(texts)?;
        self.embed_tokens(&ids)
    }

    /// Embeds already tokenized inputs (as [`Embedder::tokenize`] makes them), sorted by
    /// length into batches of `embed.batch_size`.
    pub fn embed_tokens(&mut self, ids: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, IndexError> {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let mut out = vec![Vec::new(); ids.len()];
        for batch in order.chunks(self.batch_size) {
            let seqs: Vec<&[u32]> = batch.iter().map(|&i| ids[i].as_slice()).collect();
            let vectors = self.run_batch(&seqs)?;
            for (&i, v) in batch.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn run_batch(&mut self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>, IndexError> {
        let rows = seqs.len();
        let len = seqs.iter().map(|s| s.len()).max().unwrap_or(0).clamp(1, self.max_tokens);
        let mut input_ids = vec![0i64; rows * len];
        let mut mask = vec![0i64; rows * len];
        for (r, seq) in seqs.iter().enumerate() {
            for (c, &id) in seq.iter().take(len).enumerate() {
                input_ids[r * len + c] = i64::from(id);
                mask[r * len + c] = 1;
            }
        }
        let shape = [rows, len];
        let run_err = |e: ort::Error| IndexError::Inference(e.to_string());
        let mut inputs = ort::inputs![
            "input_ids" => Tensor::from_array((shape, input_ids)).map_err(run_err)?,
            "attention_mask" => Tensor::from_array((shape, mask.clone())).map_err(run_err)?,
        ];
        if self.token_type_ids {
            let types = Tensor::from_array((shape, vec![0i64; rows * len])).map_err(run_err)?;
            inputs.push(("token_type_ids".into(), types.into()));
        }
        let outputs = self.session.run(inputs).map_err(run_err)?;
        let (out_shape, data) = outputs[0].try_extract_tensor::<f32>().map_err(run_err)?;
        let dims = self.dims;
        if out_shape.len() != 3 || out_shape[0] as usize != rows || out_shape[2] as usize != dims {
            return Err(IndexError::Inference(format!(
                "model output has shape {out_shape:?}; expected [{rows}, {len}, {dims}] (check embed.dims)"
            )));
        }
        let tokens = out_shape[1] as usize;
        let mut vectors = Vec::with_capacity(rows);
        for r in 0..rows {
            let mut v = vec![0f32; dims];
            match self.pooling {
                Pooling::Cls => v.copy_from_slice(&data[r * tokens * dims..r * tokens * dims + dims]),
                Pooling::Mean => {
                    let mut count = 0f32;
                    for t in 0..tokens.min(len) {
                        if mask[r * len + t] == 0 {
                            continue;
                        }
                        count += 1.0;
                        let row = &data[(r * tokens + t) * dims..(r * tokens + t + 1) * dims];
                        for (acc, x) in v.iter_mut().zip(row) {
                            *acc += x;
                        }
                    }
                    let count = count.max(1.0);
                    v.iter_mut().for_each(|x| *x /= count);
                }
            }
            normalize(&mut v);
            vectors.push(v);
        }
        Ok(vectors)
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two unit vectors.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

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
