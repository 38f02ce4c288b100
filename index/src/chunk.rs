//! Token-aware chunking: cut a document's text into pieces the embedding model reads whole.
//!
//! A chunk is at most the model's limit minus its special tokens (254 for all-MiniLM-L6-v2),
//! counted with the model's own tokenizer, so nothing is truncated at embedding time. Cuts go
//! where a reader would put them: at a sentence start (unicode-segmentation's UAX #29 sentence
//! boundaries) when one falls in the second half of the window, else at a word start, else
//! anywhere (a 1 MB paragraph of one "word" still chunks). Each chunk after the first starts
//! about `overlap` (15%) of a window before the previous one ended, again at a sentence or word
//! start, so a fact that straddles a cut is whole in at least one chunk. A short tail is merged
//! into the chunk before it, or, when that would not fit, gets a full window of context.
//!
//! The text is tokenized once; everything else is index arithmetic on its tokens' offsets.

use crate::IndexError;
use tokenizers::Tokenizer;
use unicode_segmentation::UnicodeSegmentation;

/// The smallest window a chunk keeps, however long the reserved prefix (a title) is.
const MIN_WINDOW: usize = 32;

/// One chunk of a text: a byte range and its length in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub tokens: usize,
}

/// Splits texts into model-sized chunks.
pub struct Chunker {
    tokenizer: Tokenizer,
    window: usize,
    overlap: f32,
}

/// How good a place to cut (before) a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Cut {
    Inside = 0,
    Word = 1,
    Sentence = 2,
}

impl Chunker {
    /// `tokenizer` must not truncate (see [`crate::tokenizer::Purpose::Chunking`]);
    /// `max_tokens` is the model's limit, special tokens included.
    pub fn new(tokenizer: Tokenizer, max_tokens: usize, overlap: f32) -> Chunker {
        let special = crate::tokenizer::special_tokens(&tokenizer);
        let window = max_tokens.saturating_sub(special).max(MIN_WINDOW);
        Chunker { tokenizer, window, overlap: overlap.clamp(0.0, 0.5) }
    }

    /// Tokens a chunk may hold with nothing reserved.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Tokens in `text`, special tokens excluded.
    pub fn count_tokens(&self, text: &str) -> Result<usize, IndexError> {
        Ok(self.encode(text)?.len())
    }

    /// The longest prefix of `text` that has at most `max` tokens (for capping a title).
    pub fn truncate<'t>(&self, text: &'t str, max: usize) -> Result<&'t str, IndexError> {
        let enc = self.tokenizer.encode(text, false).map_err(|e| IndexError::Tokenize(e.to_string()))?;
        let offsets = enc.get_offsets();
        if offsets.len() <= max || max == 0 {
            return Ok(if max == 0 { "" } else { text });
        }
        Ok(text[..offsets[max - 1].1].trim_end())
    }

    fn encode(&self, text: &str) -> Result<Vec<(usize, usize)>, IndexError> {
        let enc = self.tokenizer.encode(text, false).map_err(|e| IndexError::Tokenize(e.to_string()))?;
        Ok(enc.get_offsets().to_vec())
    }

    /// Chunks `text`, keeping `reserved` tokens of each window free (for a title prefix).
    pub fn split(&self, text: &str, reserved: usize) -> Result<Vec<Span>, IndexError> {
        let offsets = self.encode(text)?;
        let n = offsets.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let window = self.window.saturating_sub(reserved).max(MIN_WINDOW).min(self.window);
        let cuts = cut_kinds(text, &offsets);
        let overlap = (window as f32 * self.overlap).round() as usize;

        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut a = 0;
        loop {
            let hi = (a + window).min(n);
            let b = if hi == n { n } else { best_cut(&cuts, a + window / 2 + 1, hi) };
            ranges.push((a, b));
            if b == n {
                break;
            }
            a = if overlap == 0 { b } else { overlap_start(&cuts, b.saturating_sub(overlap).max(a + 1), b) };
        }
        // A short tail: merge it into the chunk before, or give it a full window of context.
        if ranges.len() >= 2 {
            let (prev_a, prev_b) = ranges[ranges.len() - 2];
            if n - prev_b < window / 4 {
                ranges.pop();
                if n - prev_a <= window {
                    ranges.last_mut().expect("two ranges").1 = n;
                } else {
                    ranges.push((overlap_start(&cuts, n - window, n), n));
                }
            }
        }
        Ok(ranges
            .into_iter()
            .map(|(a, b)| Span { start: offsets[a].0, end: offsets[b - 1].1.max(offsets[a].0), tokens: b - a })
            .collect())
    }
}

/// For every token, how good a cut just before it is.
fn cut_kinds(text: &str, offsets: &[(usize, usize)]) -> Vec<Cut> {
    let mut sentences = text.split_sentence_bound_indices().map(|(i, _)| i).peekable();
    let mut kinds = Vec::with_capacity(offsets.len());
    let mut prev_end = 0;
    for (i, &(start, end)) in offsets.iter().enumerate() {
        let mut kind = if i == 0 || start > prev_end { Cut::Word } else { Cut::Inside };
        let mut crossed = false;
        while sentences.peek().is_some_and(|&s| s <= start) {
            sentences.next();
            crossed = true;
        }
        if crossed && i > 0 && kind == Cut::Word {
            kind = Cut::Sentence;
        }
        kinds.push(kind);
        prev_end = prev_end.max(end);
    }
    kinds
}

/// Where to end a chunk: the best cut in `lo..=hi`, the latest of the best kind.
fn best_cut(cuts: &[Cut], lo: usize, hi: usize) -> usize {
    let mut best = hi;
    let mut best_kind = Cut::Inside;
    for i in (lo..=hi).rev() {
        if i < cuts.len() && cuts[i] > best_kind {
            best = i;
            best_kind = cuts[i];
            if best_kind == Cut::Sentence {
                break;
            }
        }
    }
    best
}

/// Where to start the next chunk: the earliest sentence start in `from..to`, else the word
/// start nearest `from`, else `from` itself.
fn overlap_start(cuts: &[Cut], from: usize, to: usize) -> usize {
    let range = from..to;
    range
        .clone()
        .find(|&i| cuts[i] == Cut::Sentence)
        .or_else(|| range.clone().find(|&i| cuts[i] == Cut::Word))
        .unwrap_or(from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{load, Purpose};

    fn chunker() -> Chunker {
        let t = load(&crate::testing::model_files().tokenizer, Purpose::Chunking).unwrap();
        Chunker::new(t, 256, 0.15)
    }

    fn sentences(n: usize) -> String {
        (0..n).map(|i| format!("Sentence number {i} talks about rivers, bridges and the weather in town. ")).collect()
    }

    #[test]
    fn window_is_the_model_limit_minus_special_tokens() {
        assert_eq!(chunker().window(), 254);
    }

    #[test]
    fn empty_and_whitespace_give_no_chunks() {
        let c = chunker();
        assert!(c.split("", 0).unwrap().is_empty());
        assert!(c.split("  \n\t ", 0).unwrap().is_empty());
    }

    #[test]
    fn short_text_is_one_chunk() {
        let spans = chunker().split("A short note.", 0).unwrap();
        assert_eq!(spans.len(), 1);
        assert_eq!((spans[0].start, spans[0].end), (0, 13));
    }

    #[test]
    fn long_text_cuts_at_sentences_with_overlap_and_fits_the_model() {
        let c = chunker();
        let text = sentences(80);
        let spans = c.split(&text, 0).unwrap();
        assert!(spans.len() >= 5, "{}", spans.len());
        for (i, s) in spans.iter().enumerate() {
            assert!(s.tokens <= 254, "chunk {i} has {} tokens", s.tokens);
            assert_eq!(c.count_tokens(&text[s.start..s.end]).unwrap(), s.tokens);
            assert!(text[s.start..].starts_with("Sentence number"), "chunk {i} starts mid-sentence");
            assert!(text[..s.end].ends_with("town."), "chunk {i} ends mid-sentence");
        }
        for w in spans.windows(2) {
            assert!(w[1].start < w[0].end, "consecutive chunks overlap");
            let shared = c.count_tokens(&text[w[1].start..w[0].end]).unwrap();
            assert!((10..=40).contains(&shared), "overlap of {shared} tokens, 15% of 254 is 38");
        }
        assert_eq!(spans.last().unwrap().end, text.trim_end().len());
    }

    #[test]
    fn reserved_tokens_shrink_the_window() {
        let c = chunker();
        let text = sentences(40);
        for s in c.split(&text, 20).unwrap() {
            assert!(s.tokens <= 234);
        }
    }

    #[test]
    fn a_short_tail_is_merged() {
        let c = chunker();
        // Just over one window: without merging, the last chunk would hold a few tokens.
        let mut text = sentences(15);
        while c.count_tokens(&text).unwrap() <= 254 {
            text.push_str("More words here. ");
        }
        let spans = c.split(&text, 0).unwrap();
        let last = spans.last().unwrap();
        assert!(last.tokens >= 254 / 4 + 10, "tail of {} tokens", last.tokens);
    }

    #[test]
    fn one_megabyte_paragraph_without_sentences_chunks() {
        let c = chunker();
        let text = "lorem ipsum dolor sit amet consectetur ".repeat(1 << 20 >> 5);
        let spans = c.split(&text, 0).unwrap();
        assert!(spans.len() > 1000);
        assert!(spans.iter().all(|s| s.tokens <= 254 && s.tokens > 100));
        let one_word = "x".repeat(1 << 20);
        let spans = c.split(&one_word, 0).unwrap();
        assert!(spans.iter().all(|s| s.tokens <= 254));
    }

    #[test]
    fn non_latin_scripts_and_emoji_chunk() {
        let c = chunker();
        let texts = [
            "東京は日本の首都です。人口は約千四百万人です。".repeat(40),
            "Москва — столица России. Город стоит на реке Москве. ".repeat(30),
            "مرحبا بالعالم. هذه جملة عربية قصيرة. ".repeat(40),
            "🎉🚀 party time 🎈🎂! ".repeat(100),
        ];
        for text in &texts {
            let spans = c.split(text, 0).unwrap();
            assert!(!spans.is_empty());
            for s in &spans {
                assert!(s.tokens <= 254);
                assert!(text.is_char_boundary(s.start) && text.is_char_boundary(s.end));
            }
        }
    }

    #[test]
    fn truncate_caps_a_title() {
        let c = chunker();
        let title = "word ".repeat(100);
        let t = c.truncate(&title, 10).unwrap();
        assert_eq!(c.count_tokens(t).unwrap(), 10);
        assert_eq!(c.truncate("short", 10).unwrap(), "short");
    }
}
