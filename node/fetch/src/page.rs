//! A page on its way from the fetcher to the index, and the seams it crosses: the crawl loop
//! hands every fetched HTML page to a [`Pipeline`] and queues the links it returns, and hands
//! the pages that need JavaScript to the browser tier's queue ([`Renders`]), whose requests it
//! makes under its own rules (or says why not: [`BrowserFetchError`]).
//!
//! The crawl loop, the pipeline's stages and the browser tier all speak these types, and none
//! of them needs another to do so.

use bytes::Bytes;
use std::fmt;
use std::time::SystemTime;
use url::Url;
use weft_extract::{Extracted, Link};

/// A page as fetched (or as the browser rendered it).
#[derive(Debug, Clone)]
pub struct FetchedPage {
    pub url: Url,
    pub status: u16,
    pub content_type: Option<String>,
    pub content_language: Option<String>,
    pub body: Bytes,
    pub depth: u32,
    pub fetched_at: SystemTime,
    /// The DOM of a rendered page (or a page the browser failed on): it is not sent to the
    /// browser again and its layout is not learned.
    pub rendered: bool,
}

/// What the pipeline learned from a page.
#[derive(Debug, Default)]
pub struct Processed {
    /// Outbound links, absolute and normalized.
    pub links: Vec<Link>,
    /// The extraction, for the stages after it.
    pub extracted: Option<Box<Extracted>>,
    /// Why the page should be rendered in the browser (JavaScript tier) before it is indexed.
    pub render: Option<RenderReason>,
}

/// Downstream processing of fetched pages. Runs on a blocking thread: CPU-bound work is fine.
pub trait Pipeline: Send + Sync + 'static {
    fn process(&self, page: &FetchedPage) -> Processed;

    /// Indexes a page from a copy another member held, instead of fetching it (see
    /// [`HeldCopy`]); says whether it was indexed. A pipeline without an index indexes none.
    fn adopt(&self, copy: &HeldCopy) -> bool {
        let _ = copy;
        false
    }

    /// Extracts a page it holds again, from its kept response, and re-indexes it if its text
    /// changed (see `reextract.rs`). A pipeline without an index holds nothing.
    fn reextract(&self, page: &FetchedPage) -> Reextracted {
        let _ = page;
        Reextracted::NotHeld
    }

    /// Syncs what the pipeline stored to disk. The crawl calls it in its flush, before it
    /// acknowledges the pages it covers. Blocking.
    fn persist(&self) -> Result<(), String> {
        Ok(())
    }
}

/// What extracting a held page again came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reextracted {
    /// Its text changed: re-indexed.
    Changed,
    Unchanged,
    /// The index holds no document for it (evicted, an alias of another page, never indexed).
    NotHeld,
    /// It goes to the browser now: its rendered form is indexed when it is fetched again.
    ForBrowser,
    Failed,
}

/// A page as a copy another member holds it: the document its crawler indexed, the page's
/// links, and who answered.
#[derive(Debug, Clone)]
pub struct HeldCopy {
    pub document: weft_index::Document,
    pub links: Vec<Url>,
    /// The member that held the copy.
    pub holder: String,
}

/// Why a page goes to the browser. Stored (in the render queue and a host's decision) as its
/// text, which is what the operator reads.
#[derive(Debug, Clone, PartialEq)]
pub enum RenderReason {
    /// Most of the host's recent pages needed the browser: all of them go there now (the
    /// remembered decision's reason inside).
    HostRenders(String),
    /// The teacher found this layout's text only in the rendered page.
    LayoutNeedsJs,
    /// The page's JavaScript score is above `layouts.render_js_above`.
    JsScore { score: f64, above: f64 },
    /// The score is above `layouts.render_js_maybe_above` and the static page has too little
    /// text to be the page.
    ThinStatic { score: f64, above: f64, words: usize, min_words: usize },
}

impl fmt::Display for RenderReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderReason::HostRenders(why) => write!(f, "host renders: {why}"),
            RenderReason::LayoutNeedsJs => {
                f.write_str("the teacher found this layout's text only in the rendered page")
            }
            RenderReason::JsScore { score, above } => write!(f, "JavaScript score {score:.2} > {above:.2}"),
            RenderReason::ThinStatic { score, above, words, min_words } => write!(
                f,
                "JavaScript score {score:.2} > {above:.2} and the static page has {words} words (< {min_words})"
            ),
        }
    }
}

/// The browser tier's queue, as the crawl sees it (`weft_layouts::RenderQueue` implements it).
pub trait Renders: Send + Sync + 'static {
    /// Queues a page for the browser, with the page the crawl fetched when it has one (the
    /// browser is answered from it rather than fetching the page again).
    fn push(&self, url: &Url, depth: u32, reason: &RenderReason, fetched: Option<&FetchedPage>) -> anyhow::Result<()>;
    /// Why every page of `host` goes straight to the browser, if it does.
    fn host_renders(&self, host: &str) -> Option<RenderReason>;
    /// Pages waiting for the browser (not being rendered) whose host `pick` selects, claimed
    /// until [`Renders::forget`] or [`Renders::release`]: the renderer will not take them.
    fn waiting(&self, pick: &mut dyn FnMut(&str) -> bool) -> Vec<WaitingPage>;
    /// The HTML this node fetched for a waiting page, as the page to index when it will not be
    /// rendered here (its host changed hands); `None` when the crawl never fetched it.
    fn held_page(&self, page: &WaitingPage) -> Option<FetchedPage>;
    /// Takes pages off the queue (handed over with their host, or their host blocked).
    fn forget(&self, pages: &[WaitingPage]);
    /// Gives back pages [`Renders::waiting`] returned and that stay (a hand-off failed).
    fn release(&self, pages: &[WaitingPage]);
    /// Pages queued or being rendered, and work that may queue more: the crawl is not idle.
    fn pending(&self) -> usize;
    /// Pages queued for the browser or being rendered now.
    fn rendering(&self) -> usize;
    /// Hosts of the pages the browser is rendering now (or claimed for a hand-off): a node
    /// leaving keeps them until those renders end.
    fn hosts_rendering(&self) -> Vec<String>;
    /// The renderer takes no further page: the node is leaving, and what still waits goes
    /// with its host ([`Renders::waiting`]; a page fetched here is indexed from its HTML).
    fn close(&self);
}

/// A page waiting for the browser: part of its host's queue.
#[derive(Debug, Clone)]
pub struct WaitingPage {
    /// The queue's key for it.
    pub key: Vec<u8>,
    pub url: Url,
    pub depth: u32,
    /// When it was queued, seconds since the Unix epoch.
    pub queued_unix: u64,
}

/// Why a browser's request was not made.
#[derive(Debug, thiserror::Error)]
pub enum BrowserFetchError {
    #[error("the URL has no host")]
    NoHost,
    #[error("robots.txt disallows it")]
    Disallowed,
    #[error("robots.txt is unavailable for now")]
    RobotsUnavailable,
    #[error("the SSRF guard blocks the host")]
    Blocked,
    #[error("the host's politeness delay runs past the render's patience")]
    Impatient,
    /// The request failed; `transient`: it may succeed later (a timeout, a refused
    /// connection, the frontier's storage), not so for a malformed answer or an SSRF refusal.
    #[error("{error}")]
    Fetch { error: String, transient: bool },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_reasons_read_as_before() {
        assert_eq!(RenderReason::JsScore { score: 0.91, above: 0.8 }.to_string(), "JavaScript score 0.91 > 0.80");
        assert_eq!(
            RenderReason::ThinStatic { score: 0.5, above: 0.4, words: 12, min_words: 40 }.to_string(),
            "JavaScript score 0.50 > 0.40 and the static page has 12 words (< 40)"
        );
        assert_eq!(RenderReason::HostRenders("x".into()).to_string(), "host renders: x");
    }
}
