//! Loading the model's own tokenizer, with the settings its `tokenizer.json` gets wrong for us.
//!
//! The `tokenizer.json` shipped with all-MiniLM-L6-v2 truncates at 128 tokens and pads every
//! input to 128, although the model reads 256: used as shipped, half of every full chunk would
//! be silently dropped and short inputs would pay for 128 positions. Both are overridden here:
//! truncation at the model's limit (`embed.max_tokens`) for embedding, none at all for chunking
//! (the chunker must see every token to place its cuts), and no padding (the embedder pads each
//! length-sorted batch only to its own longest member).

use crate::IndexError;
use std::path::Path;
use tokenizers::{PostProcessor, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// What the tokenizer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Chunking: no truncation, offsets needed.
    Chunking,
    /// Embedding: truncate at the model's limit, special tokens included.
    Embedding { max_tokens: usize },
}

/// Loads `tokenizer.json` and applies the overrides for `purpose`.
pub fn load(path: &Path, purpose: Purpose) -> Result<Tokenizer, IndexError> {
    if !path.is_file() {
        return Err(IndexError::missing("tokenizer", "embed.tokenizer", path));
    }
    let mut tokenizer = Tokenizer::from_file(path)
        .map_err(|e| IndexError::Model(format!("cannot read tokenizer {}: {e}", path.display())))?;
    tokenizer.with_padding(None);
    let truncation = match purpose {
        Purpose::Chunking => None,
        Purpose::Embedding { max_tokens } => Some(TruncationParams {
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        }),
    };
    tokenizer
        .with_truncation(truncation)
        .map_err(|e| IndexError::Model(format!("cannot set truncation on {}: {e}", path.display())))?;
    Ok(tokenizer)
}

/// Tokens the post-processor adds to a single sequence (`[CLS]` and `[SEP]` for BERT).
pub fn special_tokens(tokenizer: &Tokenizer) -> usize {
    tokenizer.get_post_processor().map_or(0, |p| p.added_tokens(false))
}
