//! The reference extractor: Mozilla's Readability.js, run in an embedded QuickJS engine
//! (`readability-js`). It is the algorithm every browser reader mode descends from, which makes
//! it a good second opinion — and at ~3.4 s per page against ~3 ms for [`crate::extract`], a
//! terrible hot path. The node runs it on one dedicated thread, only for pages whose native
//! confidence is low, only when it has spare capacity, and keeps its answer only where
//! [`prefer_reference`] says it is better.
//!
//! A [`Reference`] owns a JavaScript engine, so it is `!Send`: create it on the thread that
//! uses it.

use std::collections::HashSet;

/// An instance of Readability.js.
pub struct Reference {
    inner: readability_js::Readability,
}

/// Why the reference extractor produced nothing.
#[derive(Debug, thiserror::Error)]
#[error("reference extractor: {0}")]
pub struct ReferenceError(String);

impl Reference {
    /// Starts the engine and loads Readability.js (~50–100 ms): do it once per thread.
    pub fn new() -> Result<Self, ReferenceError> {
        readability_js::Readability::new().map(|inner| Reference { inner }).map_err(|e| ReferenceError(e.to_string()))
    }

    /// Main text of `html` as Readability.js sees it, paragraphs separated by blank lines.
    pub fn extract(&self, html: &str, url: &str) -> Result<String, ReferenceError> {
        let base = url::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https")).map(|_| url);
        // The wrapper's DOM has no body for a bare fragment, and Readability then finds nothing;
        // browsers imply <html><body>, so do the same.
        let wrapped;
        let html = if html.get(..html.len().min(200_000)).is_some_and(|h| h.to_ascii_lowercase().contains("<body")) {
            html
        } else {
            wrapped = format!("<html><body>{html}</body></html>");
            &wrapped
        };
        let article = self.inner.parse_with_options(html, base, None).map_err(|e| ReferenceError(e.to_string()))?;
        Ok(tidy(&article.text_content))
    }
}

/// Readability's `textContent` keeps the source's whitespace: collapse each line, and runs of
/// blank lines into paragraph breaks.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(&line);
    }
    out
}

fn word_set(text: &str) -> HashSet<&str> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).collect()
}

/// Whether the reference's text should replace the fast extractor's. The fast extractor's
/// usual failure at low confidence is finding too little (a wrong, small container), so the
/// reference wins when it is substantially longer and still contains most of what the fast
/// result found — longer but unrelated text is more likely a comment thread or a listing.
pub fn prefer_reference(fast: &str, reference: &str) -> bool {
    let (f, r) = (fast.chars().count(), reference.chars().count());
    if r < 200 || (r as f32) < f as f32 * 1.3 {
        return false;
    }
    if f == 0 {
        return true;
    }
    let (fw, rw) = (word_set(fast), word_set(reference));
    let shared = fw.iter().filter(|w| rw.contains(*w)).count();
    shared as f32 >= 0.6 * fw.len() as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readability_js_extracts_an_article() {
        let reference = Reference::new().expect("QuickJS starts");
        let para = "<p>The committee met on Tuesday to discuss the proposal, which had been debated for months. \
                    Members raised concerns about cost, timing and the effect on local businesses.</p>";
        let html = format!(
            "<html><head><title>T</title></head><body><nav><a href='/'>Home</a></nav><article>{}</article></body></html>",
            para.repeat(5)
        );
        let text = reference.extract(&html, "https://a.test/story").expect("an article");
        assert_eq!(text.matches("The committee met").count(), 5);
        assert!(!text.contains("Home"));
        // A bare fragment works too.
        let text = reference
            .extract(&format!("<article>{}</article>", para.repeat(5)), "https://a.test/s")
            .expect("an article");
        assert_eq!(text.matches("The committee met").count(), 5);
    }

    #[test]
    fn preference_rule() {
        let fast = "alpha beta gamma delta";
        assert!(!prefer_reference(fast, "short"));
        let longer = format!("alpha beta gamma delta {}", "more words here ".repeat(40));
        assert!(prefer_reference(fast, &longer));
        let unrelated = "completely different words ".repeat(40);
        assert!(!prefer_reference(fast, &unrelated));
    }
}
