//! One ONNX Runtime session as the handles of a model share it ([`Slot`]), and one inference
//! run on it: pad the run's texts to its longest, run the model, pool and normalize.

use crate::IndexError;
use ort::session::{RunOptions, Session};
use ort::value::Tensor;
use parking_lot::{Mutex, MutexGuard};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;
use weft_config::Pooling;
use weft_vecmath::normalize;

/// What every inference run needs to know besides its session.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) dims: usize,
    pub(super) max_tokens: usize,
    pub(super) pooling: Pooling,
    pub(super) token_type_ids: bool,
}

/// The vectors of one run (or why it failed).
pub(super) type Vectors = Result<Vec<Vec<f32>>, IndexError>;

/// One ONNX Runtime session and what lets another handle's run stop a yielding run on it.
pub(super) struct Slot {
    pub(super) session: Mutex<Session>,
    /// The options of yielding runs on this session: a run that wants the session sets their
    /// terminate flag.
    options: RunOptions,
    /// A yielding run holds the session (set before it reads `wanted`).
    pub(super) yielding_busy: AtomicBool,
    /// Runs of other handles waiting for the session (counted before they read `yielding_busy`,
    /// so either the yielding run sees them and stands back, or they see it and stop it).
    wanted: AtomicUsize,
    /// A waiting run asked the yielding run to stop.
    stop_asked: AtomicBool,
    /// Yielding runs stopped since the session was loaded.
    pub(super) stopped: AtomicU64,
}

impl Slot {
    pub(super) fn new(session: Session) -> Result<Slot, IndexError> {
        Ok(Slot {
            session: Mutex::new(session),
            options: RunOptions::new().map_err(|e| IndexError::Model(e.to_string()))?,
            yielding_busy: AtomicBool::new(false),
            wanted: AtomicUsize::new(0),
            stop_asked: AtomicBool::new(false),
            stopped: AtomicU64::new(0),
        })
    }

    /// A run that goes first: on the session `held` if given, else once the session is free,
    /// stopping a yielding run that holds it. Handed on fairly after: a run waiting on another
    /// handle of the same model goes next.
    pub(super) fn run_first(
        &self,
        held: Option<MutexGuard<'_, Session>>,
        shape: Shape,
        ids: &[Vec<u32>],
        rows: &[usize],
    ) -> Vectors {
        let mut held = match held {
            Some(held) => held,
            None => {
                self.wanted.fetch_add(1, SeqCst);
                if self.yielding_busy.load(SeqCst) {
                    self.stop_asked.store(true, SeqCst);
                    let _ = self.options.terminate();
                }
                let held = self.session.lock();
                self.wanted.fetch_sub(1, SeqCst);
                held
            }
        };
        let out = run(&mut held, shape, ids, rows, None);
        MutexGuard::unlock_fair(held);
        out
    }

    /// A run that gives way: it starts only while no other run waits for the session, and one
    /// stopped by another run is run again — once more only: the second time it is not
    /// stopped (a question then waits for it, as it would for any run). Questions coming
    /// faster than one run takes would otherwise stop every run and the indexing would never
    /// end; so each run is lost at most once.
    pub(super) fn run_yielding(&self, shape: Shape, ids: &[Vec<u32>], rows: &[usize]) -> Vectors {
        let mut may_stop = true;
        loop {
            while self.wanted.load(SeqCst) > 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            if !may_stop {
                return self.run_first(None, shape, ids, rows);
            }
            let mut held = self.session.lock();
            let _ = self.options.unterminate();
            self.stop_asked.store(false, SeqCst);
            self.yielding_busy.store(true, SeqCst);
            if self.wanted.load(SeqCst) > 0 {
                self.yielding_busy.store(false, SeqCst);
                MutexGuard::unlock_fair(held);
                continue;
            }
            let out = run(&mut held, shape, ids, rows, Some(&self.options));
            self.yielding_busy.store(false, SeqCst);
            let stopped = self.stop_asked.swap(false, SeqCst);
            MutexGuard::unlock_fair(held);
            if out.is_err() && stopped {
                self.stopped.fetch_add(1, SeqCst);
                may_stop = false;
                continue;
            }
            return out;
        }
    }
}

/// One inference run over the texts `rows` of `ids`, padded to the longest of them.
/// With `options`, the run stops early when their terminate flag is set (an error).
fn run(
    session: &mut Session,
    shape: Shape,
    ids: &[Vec<u32>],
    rows: &[usize],
    options: Option<&RunOptions>,
) -> Result<Vec<Vec<f32>>, IndexError> {
    let n = rows.len();
    let len = rows.iter().map(|&i| ids[i].len()).max().unwrap_or(0).clamp(1, shape.max_tokens);
    let mut input_ids = vec![0i64; n * len];
    let mut mask = vec![0i64; n * len];
    for (r, &i) in rows.iter().enumerate() {
        for (c, &id) in ids[i].iter().take(len).enumerate() {
            input_ids[r * len + c] = i64::from(id);
            mask[r * len + c] = 1;
        }
    }
    let tensor_shape = [n, len];
    let run_err = |e: ort::Error| IndexError::Inference(e.to_string());
    let mut inputs = ort::inputs![
        "input_ids" => Tensor::from_array((tensor_shape, input_ids)).map_err(run_err)?,
        "attention_mask" => Tensor::from_array((tensor_shape, mask.clone())).map_err(run_err)?,
    ];
    if shape.token_type_ids {
        let types = Tensor::from_array((tensor_shape, vec![0i64; n * len])).map_err(run_err)?;
        inputs.push(("token_type_ids".into(), types.into()));
    }
    let outputs = match options {
        Some(options) => session.run_with_options(inputs, options),
        None => session.run(inputs),
    }
    .map_err(run_err)?;
    let (out_shape, data) = outputs[0].try_extract_tensor::<f32>().map_err(run_err)?;
    let dims = shape.dims;
    if out_shape.len() != 3 || out_shape[0] as usize != n || out_shape[2] as usize != dims {
        return Err(IndexError::Inference(format!(
            "model output has shape {out_shape:?}; expected [{n}, {len}, {dims}] (check embed.dims)"
        )));
    }
    let tokens = out_shape[1] as usize;
    let mut vectors = Vec::with_capacity(n);
    for r in 0..n {
        let mut v = vec![0f32; dims];
        match shape.pooling {
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
