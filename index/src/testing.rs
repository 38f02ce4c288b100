//! Paths of the real model files for this crate's tests, examples and benchmarks (and the
//! node's): `models/` at the workspace root, where `scripts/setup.sh` puts them; and opening an
//! index in a directory the way those tests do.

use std::path::PathBuf;
use weft_config::EmbedConfig;

/// The model files as `scripts/setup.sh` installs them, with absolute paths.
pub fn model_files() -> EmbedConfig {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let defaults = EmbedConfig::default();
    let files = EmbedConfig {
        model: root.join(&defaults.model),
        tokenizer: root.join(&defaults.tokenizer),
        ort_library: root.join(&defaults.ort_library),
        ..defaults
    };
    assert!(
        files.model.is_file() && files.tokenizer.is_file() && files.ort_library.is_file(),
        "the model files are missing under {}: run scripts/setup.sh",
        root.join("models").display()
    );
    files
}

/// The default embedding config with the installed model files.
pub fn embed_config() -> EmbedConfig {
    model_files()
}

/// Opens (or creates) a local index of 384 dimensions with default settings in `dir`, its sled
/// database in `dir/db`, as the node opens it (`weft_db::open_db`: a reopen right after a drop
/// waits for the lock the closing handle still holds).
pub fn open_index(dir: &std::path::Path) -> (sled::Db, std::sync::Arc<crate::LocalIndex>) {
    let db = weft_db::open_db(&dir.join("db"), 64 << 20).expect("the index's sled database opens");
    let index = crate::LocalIndex::open(&db, dir, 384, &weft_config::IndexConfig::default()).expect("the index opens");
    (db, std::sync::Arc::new(index))
}

/// The record of an indexed document with the keys of its chunks, every other field empty:
/// what tests commit beside their chunks.
pub fn indexed_record(url: &str, title: &str, fetched_at: u64, word_count: u32, chunks: Vec<u64>) -> crate::DocRecord {
    crate::DocRecord {
        url: url.to_string(),
        title: title.to_string(),
        description: None,
        language: None,
        site_name: None,
        published: None,
        page_type: None,
        fetched_at,
        word_count,
        simhash: None,
        chunks,
        state: crate::DocState::Indexed,
        aliases: Vec::new(),
        modified: None,
        author: None,
        canonical: None,
    }
}
