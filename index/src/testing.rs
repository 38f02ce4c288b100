//! Paths of the real model files for this crate's tests, examples and benchmarks (and the
//! node's): `models/` at the workspace root, where `scripts/setup.sh` puts them.

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
