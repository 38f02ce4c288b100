//! Block labels for training, derived from a page's ground-truth text: a block is main content
//! when most of its word trigrams (its words, for blocks of one or two) occur in the truth.
//! The dev sets label text, not markup, so this alignment is what turns them into block
//! labels; repeated text (a title in the navigation and above the article) is labelled
//! content in both places, a little noise the weights keep small.

use std::collections::HashSet;

/// Word tokens as the dev sets' metric splits them (`\w+`).
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).collect()
}

/// The truth's word n-grams for n = 1, 2, 3.
pub struct Truth<'a> {
    grams: [HashSet<Vec<&'a str>>; 3],
}

impl<'a> Truth<'a> {
    pub fn new(truth: &'a str) -> Truth<'a> {
        let w = words(truth);
        let grams = [1, 2, 3].map(|n| w.windows(n).map(<[&str]>::to_vec).collect());
        Truth { grams }
    }

    /// The share (0–1) of `block`'s trigrams (or, when shorter, of the block whole) found in the
    /// truth; 0 for a block without words.
    pub fn share(&self, block: &str) -> f32 {
        let w = words(block);
        match w.len() {
            0 => 0.0,
            n @ (1 | 2) => f32::from(u8::from(self.grams[n - 1].contains(&w))),
            n => {
                let found = w.windows(3).filter(|g| self.grams[2].contains(*g)).count();
                found as f32 / (n - 2) as f32
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_trigrams_found() {
        let t = Truth::new("The quick brown fox jumps over the lazy dog. Then it sleeps.");
        assert_eq!(t.share("the quick brown fox"), 0.5, "case counts, as in the metric");
        assert_eq!(t.share("The quick brown fox jumps"), 1.0);
        assert_eq!(t.share("Home"), 0.0);
        assert_eq!(t.share("lazy dog"), 1.0);
        assert_eq!(t.share("Share on Facebook and Twitter"), 0.0);
        assert_eq!(t.share("—"), 0.0);
    }
}
