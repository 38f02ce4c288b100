//! A block as a bag of hashed words, and a linear model over them (a "lexicon").
//!
//! Why: the trees in `forest` see a block through fixed features — a few hand-picked groups of
//! class/id words and text words among them — and on unseen sites they land close to the rules.
//! What a page's markup and words say is far richer than sixteen groups: `entry-content`,
//! `c-article-body`, `comment-meta`, "Share this", "Posted by". Dragnet and BoilerNet learn
//! from such words directly. Here every class/id word of the block's element and its
//! ancestors (by how far up), the tags around it and the block's own words are hashed into
//! [`BUCKETS`] weights; a logistic model over them gives one number per block, which the trees
//! take as one more feature (trained on scores of pages the lexicon did not see, so the trees
//! learn how far to trust it on unseen sites).
//!
//! Hashing keeps the model a fixed size whatever the vocabulary, and collisions only blur rare
//! words. Every token is bounded (at most [`MAX_TEXT_WORDS`] words of text, [`LEVELS`]
//! ancestors, words up to 32 bytes), so a block's tokens are a few dozen however large the page.

use crate::dom::{ElemId, Walk, NO_PARENT};

/// How many weights the lexicon has (a power of two: a token's bucket is its hash's low bits).
pub const BUCKETS: usize = 1 << 18;

/// Ancestors whose class/id words are read (the element itself is level 0).
const LEVELS: usize = 6;

/// The words of a block's own text that are tokens.
const MAX_TEXT_WORDS: usize = 48;

/// Blocks of at most this many words are also one token as a whole ("Read more", "Share").
const WHOLE_TEXT_WORDS: usize = 6;

fn hash(kind: &[u8], word: &[u8]) -> u32 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(kind);
    h.update(b"\0");
    h.update(word);
    (h.digest() as usize & (BUCKETS - 1)) as u32
}

/// A class/id word worth a token: not a number, an id's hash or a minified class (`x1a2b3c`).
fn useful(word: &str) -> bool {
    let digits = word.bytes().filter(u8::is_ascii_digit).count();
    word.len() >= 2 && word.len() <= 32 && digits * 3 <= word.len()
}

/// The hashed tokens of every block of a walked page, in block order (sorted, no repeats).
pub fn blocks(walk: &Walk) -> Vec<Vec<u32>> {
    // Each element's class/id words, lowercased, computed once.
    let words: Vec<Vec<String>> = walk
        .elems
        .iter()
        .map(|e| {
            e.label
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| useful(w))
                .map(str::to_ascii_lowercase)
                .collect()
        })
        .collect();
    walk.blocks
        .iter()
        .map(|b| {
            let mut out = Vec::with_capacity(64);
            let mut e: ElemId = b.elem;
            let mut tags: Vec<&str> = Vec::with_capacity(3);
            for level in 0..LEVELS {
                if e == NO_PARENT {
                    break;
                }
                let elem = &walk.elems[e as usize];
                let near = [b'c', b'0' + level.min(3) as u8];
                for w in &words[e as usize] {
                    out.push(hash(&near, w.as_bytes()));
                    out.push(hash(b"c*", w.as_bytes()));
                }
                if level < 3 {
                    out.push(hash(&[b't', b'0' + level as u8], elem.tag.as_bytes()));
                    tags.push(elem.tag);
                }
                e = elem.parent;
            }
            out.push(hash(b"tp", tags.join("/").as_bytes()));
            out.push(hash(b"bt", b.tag.as_bytes()));
            let text: Vec<String> = b
                .text
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty() && w.len() <= 32)
                .take(MAX_TEXT_WORDS + 1)
                .map(str::to_lowercase)
                .collect();
            for w in text.iter().take(MAX_TEXT_WORDS) {
                out.push(hash(b"w", w.as_bytes()));
            }
            if let Some(first) = text.first() {
                out.push(hash(b"f", first.as_bytes()));
            }
            if text.len() <= WHOLE_TEXT_WORDS {
                out.push(hash(b"s", text.join(" ").as_bytes()));
            }
            let end = b.text.trim_end().chars().last().map_or('∅', |c| if c.is_alphanumeric() { 'a' } else { c });
            out.push(hash(b"end", end.to_string().as_bytes()));
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect()
}

/// A logistic model over hashed tokens: a block's score is the bias plus its tokens' weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Lexicon {
    pub bias: f32,
    pub weights: Vec<f32>,
}

impl Lexicon {
    /// The block's log-odds of being main text.
    pub fn score(&self, tokens: &[u32]) -> f32 {
        self.bias + tokens.iter().map(|&t| self.weights.get(t as usize).copied().unwrap_or(0.0)).sum::<f32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_markup_and_words_and_stay_bounded() {
        let html = format!(
            "<html><body><div class='entry-content'><p>A paragraph of prose, long enough.</p></div>\
             <footer class='site-footer x9f8e7d6'><p>Share</p></footer><p>{}</p></body></html>",
            "word ".repeat(5000)
        );
        let tokens = crate::debug_walk(html.as_bytes(), None, |walk| blocks(walk));
        assert_eq!(tokens.len(), 3);
        assert!(tokens[0].contains(&hash(b"c1", b"entry")) && tokens[0].contains(&hash(b"c1", b"content")));
        assert!(tokens[1].contains(&hash(b"c1", b"footer")) && tokens[1].contains(&hash(b"s", b"share")));
        assert!(!tokens[1].contains(&hash(b"c*", b"x9f8e7d6")), "a hashed class is not a word");
        assert!(tokens[2].len() < 40, "a huge block is a few tokens: {}", tokens[2].len());
        assert!(tokens.iter().flatten().all(|&t| (t as usize) < BUCKETS));
    }
}
