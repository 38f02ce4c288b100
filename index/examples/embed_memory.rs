//! Resident memory of ONNX Runtime sessions of the embedding model, by session option: what
//! the memory pattern, the arena, prepacking and the graph optimisation level cost, and how
//! long the runs take (docs/src/benchmarks.md, "The model's memory").
//!
//! ```sh
//! cargo run --release -p weft-index --example embed_memory -- [--arena on|off|shared|shared-same]
//!     [--pattern on|off]
//!     [--prepack on|off|shared] [--opt none|basic|ext|all] [--disable ConstantFolding,...]
//!     [--sessions 2] [--rows 8]
//!     [--tokens 256] [--runs 20]
//! ```
//! Runs of `rows` × `tokens` and shorter (four lengths in turn) on every session, each session
//! on its own thread at once; prints the
//! process's RSS after loading (before and after `malloc_trim`) and after the runs. One setting
//! per process: memory is the process's.

use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use std::path::PathBuf;

mod support;
use support::{rss_mib, rss_parts_mib, trim};

/// Registers one CPU arena in ONNX Runtime's environment for every session that asks for it
/// (`session.use_env_allocators`), instead of an arena per session. `same_as_requested`: the
/// arena grows by what a run asks for rather than the next power of two. Once per environment;
/// an error if ONNX Runtime refuses.
fn register_shared_arena(env: &ort::environment::Environment, same_as_requested: bool) -> Result<(), String> {
    use ort::memory::{AllocationDevice, AllocatorType, MemoryInfo, MemoryType};
    use ort::AsPointer;
    let api = ort::api();
    let check = |status: ort::sys::OrtStatusPtr| -> Result<(), String> {
        if status.0.is_null() {
            return Ok(());
        }
        // SAFETY: a non-null status holds a message until it is released, once, here.
        let message = unsafe {
            let m = std::ffi::CStr::from_ptr((api.GetErrorMessage)(status.0)).to_string_lossy().into_owned();
            (api.ReleaseStatus)(status.0);
            m
        };
        Err(message)
    };
    let keys = [c"arena_extend_strategy".as_ptr()];
    let values = [usize::from(same_as_requested)];
    let mut config: *mut ort::sys::OrtArenaCfg = std::ptr::null_mut();
    // SAFETY: the keys and values outlive the call; `config` is written by it.
    check(unsafe { (api.CreateArenaCfgV2)(keys.as_ptr(), values.as_ptr(), keys.len(), &mut config) })?;
    let info = MemoryInfo::new(AllocationDevice::CPU, 0, AllocatorType::Arena, MemoryType::Default)
        .map_err(|e| e.to_string())?;
    // SAFETY: the environment, the memory info and the config are live; ONNX Runtime copies
    // what it needs from the config, which is released right after.
    let registered = check(unsafe { (api.CreateAndRegisterAllocator)(env.ptr().cast_mut(), info.ptr(), config) });
    // SAFETY: created above, released once.
    unsafe { (api.ReleaseArenaCfg)(config) };
    registered
}

/// A session loaded from the model file, or from the mapped optimised file.
enum Loaded {
    File(Session),
    Mapped(ort::session::InMemorySession<'static>),
}

/// What the command line asks for.
struct Probe {
    arena: bool,
    pattern: bool,
    sessions: usize,
    rows: usize,
    tokens: usize,
    runs: usize,
    /// One arena in the environment for all sessions (`shared`: growing by powers of two as a
    /// session's own does; `shared-same`: by what a run asks for).
    shared_arena: Option<bool>,
    prepack: String,
    opt: String,
    /// Graph transformers to leave out (ONNX Runtime's `optimization.disable_specified_optimizers`,
    /// names comma-separated, e.g. `ConstantFolding`).
    disable: String,
    /// Sessions load the model as ONNX Runtime saved it optimised (its `.ort` format), reading
    /// the weights in place from one read-only mapping of that file shared by all sessions.
    ort_format: bool,
}

impl Probe {
    fn read() -> Probe {
        let mut p = Probe {
            arena: true,
            pattern: true,
            sessions: 2,
            rows: 8,
            tokens: 256,
            runs: 20,
            shared_arena: None,
            prepack: "on".into(),
            opt: "all".into(),
            disable: String::new(),
            ort_format: false,
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let v = it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
            match flag.as_str() {
                "--arena" => {
                    p.arena = v != "off";
                    p.shared_arena = match v.as_str() {
                        "shared" => Some(false),
                        "shared-same" => Some(true),
                        _ => None,
                    };
                }
                "--pattern" => p.pattern = v == "on",
                "--sessions" => p.sessions = v.parse().unwrap(),
                "--rows" => p.rows = v.parse().unwrap(),
                "--tokens" => p.tokens = v.parse().unwrap(),
                "--runs" => p.runs = v.parse().unwrap(),
                "--prepack" => p.prepack = v,
                "--opt" => p.opt = v,
                "--disable" => p.disable = v,
                "--ort-format" => p.ort_format = v == "on",
                other => panic!("unknown flag {other}"),
            }
        }
        p
    }
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let probe = Probe::read();
    let models = root.join("models");
    let env = ort::init_from(models.join("onnxruntime-1.31.1/libonnxruntime.so"))
        .unwrap()
        .with_name("probe")
        .build()
        .unwrap();
    if let Some(same) = probe.shared_arena {
        register_shared_arena(&env, same).unwrap();
    }
    let model = models.join("all-MiniLM-L6-v2-int8/model.onnx");
    let optimised = std::env::temp_dir().join(format!("embed_memory-{}.ort", std::process::id()));
    if probe.ort_format {
        // Saving the optimised graph is a side effect of committing a session.
        let saved = Session::builder(&env)
            .unwrap()
            .with_optimization_level(GraphOptimizationLevel::All)
            .unwrap()
            .with_optimized_model_path(&optimised)
            .unwrap()
            .commit_from_file(&model)
            .unwrap();
        drop(saved);
        trim();
    }
    // SAFETY: the file is this process's own and nothing writes it while mapped.
    let mapped =
        probe.ort_format.then(|| unsafe { memmap2::Mmap::map(&std::fs::File::open(&optimised).unwrap()).unwrap() });
    let start = rss_mib();
    let shared = ort::session::builder::PrepackedWeights::new();
    let mut all: Vec<Loaded> =
        (0..probe.sessions).map(|_| load(&probe, &env, &shared, &model, mapped.as_deref())).collect();
    let untrimmed = rss_mib();
    trim();
    let loaded = rss_mib();
    println!("sessions loaded: {untrimmed:.0} MiB, after malloc_trim {loaded:.0} MiB");
    let t = std::time::Instant::now();
    run_all(&mut all, &probe);
    let secs = t.elapsed().as_secs_f64();
    let after = rss_mib();
    let (anon, file) = rss_parts_mib();
    println!("at the end: anonymous {anon:.0} MiB, mapped files {file:.0} MiB");
    drop(all);
    drop(mapped);
    let _ = std::fs::remove_file(&optimised);
    let Probe { opt, disable, ort_format, prepack, arena, shared_arena, pattern, sessions, rows, tokens, .. } = probe;
    println!(
        "opt={opt} disable={disable:?} ort_format={ort_format} prepack={prepack} arena={arena} shared arena={shared_arena:?} pattern={pattern} sessions={sessions} rows={rows} tokens={tokens}: start {start:.0} MiB, sessions +{:.0} MiB, runs +{:.0} MiB, total {after:.0} MiB, runs took {secs:.2} s",
        loaded - start,
        after - loaded
    );
}

/// One session, built as `probe` says, from the model file or from the mapped `.ort` bytes.
fn load(
    probe: &Probe,
    env: &ort::environment::Environment,
    shared: &ort::session::builder::PrepackedWeights,
    model: &std::path::Path,
    mapped: Option<&[u8]>,
) -> Loaded {
    let Probe { opt, prepack, disable, pattern, arena, shared_arena, .. } = probe;
    let level = match opt.as_str() {
        "basic" => GraphOptimizationLevel::Level1,
        "ext" => GraphOptimizationLevel::Level2,
        "none" => GraphOptimizationLevel::Disable,
        _ => GraphOptimizationLevel::All,
    };
    let mut b = Session::builder(env).unwrap().with_optimization_level(level).unwrap();
    match prepack.as_str() {
        "off" => b = b.with_prepacking(false).unwrap(),
        "shared" => b = b.with_prepacked_weights(shared).unwrap(),
        _ => {}
    }
    b = b.with_intra_threads(1).unwrap().with_inter_threads(1).unwrap();
    if !disable.is_empty() {
        b = b.with_config_entry("optimization.disable_specified_optimizers", disable).unwrap();
    }
    b = b.with_memory_pattern(*pattern).unwrap();
    b = b.with_execution_providers([ort::ep::CPU::default().with_arena_allocator(*arena).build()]).unwrap();
    if shared_arena.is_some() {
        b = b.with_env_allocators().unwrap();
    }
    match mapped {
        Some(bytes) => {
            let session = b.commit_from_memory_directly(bytes).unwrap();
            // SAFETY (experiment): the mapping outlives the sessions, dropped at the end of main.
            Loaded::Mapped(unsafe {
                std::mem::transmute::<ort::session::InMemorySession<'_>, ort::session::InMemorySession<'static>>(
                    session,
                )
            })
        }
        None => Loaded::File(b.commit_from_file(model).unwrap()),
    }
}

/// Each session on its own thread, as the node's indexer and questions run them.
fn run_all(all: &mut [Loaded], probe: &Probe) {
    let (runs, rows, tokens) = (probe.runs, probe.rows, probe.tokens);
    std::thread::scope(|scope| {
        for s in all.iter_mut() {
            scope.spawn(move || {
                for r in 0..runs {
                    // Lengths vary as real runs do.
                    let len = tokens / (1 + r % 4);
                    let n = rows;
                    let ids: Vec<i64> = (0..n * len).map(|i| 1000 + (i as i64 * 7919) % 20000).collect();
                    let inputs = ort::inputs![
                        "input_ids" => Tensor::from_array(([n, len], ids)).unwrap(),
                        "attention_mask" => Tensor::from_array(([n, len], vec![1i64; n * len])).unwrap(),
                        "token_type_ids" => Tensor::from_array(([n, len], vec![0i64; n * len])).unwrap(),
                    ];
                    match s {
                        Loaded::File(s) => drop(s.run(inputs).unwrap()),
                        Loaded::Mapped(s) => drop(s.run(inputs).unwrap()),
                    }
                }
            });
        }
    });
}
