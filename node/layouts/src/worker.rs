//! The worker: the fast path of layout learning (seed 000's teacher/worker design), run on
//! every fetched page right after the generic extractor.
//!
//! 1. Count the page's layout signature ([`LayoutStore::observe`]); a layout seen often enough
//!    without a template queues the teacher.
//! 2. With a template for the layout (the operator's, then by L1, then by L2), extract with its
//!    selectors ([`weft_extract::template::apply`], which validates). When it fails, find out
//!    what changed ([`weft_extract::changes::diagnose`]), record it, try the class-rename
//!    repair on this page, and queue the layout for re-learning.
//! 3. Without one, try the host's templates of other layouts: sites have many signatures of
//!    one article layout (with or without comments, an embed moved). One that fits is adopted
//!    for the new signature, and what drifted is recorded.
//! 4. Decide whether the page needs the browser (tier 2): a JavaScript score above
//!    `layouts.render_js_above`, or above `render_js_maybe_above` with too little static text,
//!    or a host or layout already known to need it. Only when most of a host's recent pages
//!    needed it (three of its last five) are all its pages sent to the browser without a
//!    static fetch first; that decision is remembered.
//!
//! A template's fields replace the generic extraction's text, title, date and author; the rest
//! (links, metadata, classification) stays the generic extractor's.

use super::store::{HostRendering, LayoutError, LayoutStore, Learned, PageRole, StoredPage};
use crate::events::{Event, Layout, Render, Tally};
use scraper::Html;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;
use weft_extract::changes::{diagnose, repair, ChangeKind};
use weft_extract::template::{apply, TemplateText, MIN_WORDS};
use weft_extract::{ContentBlock, Extracted};
use weft_fetch::page::{FetchedPage, RenderReason};

/// Host templates tried on a page of a new layout, newest first.
const HOST_TEMPLATES_TRIED: usize = 4;

/// What the worker did with a page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Worked {
    /// The version of the template that extracted it.
    pub template: Option<u32>,
    /// Why the page should be rendered in the browser.
    pub render: Option<RenderReason>,
}

/// The worker, shared by the crawl's blocking threads.
pub struct Worker {
    store: LayoutStore,
    metrics: Arc<dyn Tally>,
    render_above: f64,
    render_maybe_above: f64,
    /// A page extracted with less confidence than this queues its layout at once.
    teach_below: f64,
    /// Whether a browser can render (false when Chromium is missing or failed to start).
    can_render: Arc<AtomicBool>,
    /// Wakes the teacher when a job was queued.
    teacher: Arc<Notify>,
}

/// A page's HTML as it is kept for the browser.
pub fn stored(page: &FetchedPage) -> StoredPage {
    StoredPage { status: page.status, content_type: page.content_type.clone(), body: page.body.to_vec() }
}

impl Worker {
    pub fn new(
        store: LayoutStore,
        config: &weft_config::LayoutsConfig,
        metrics: Arc<dyn Tally>,
        can_render: Arc<AtomicBool>,
        teacher: Arc<Notify>,
    ) -> Worker {
        Worker {
            store,
            metrics,
            render_above: config.render_js_above,
            render_maybe_above: config.render_js_maybe_above,
            teach_below: config.teach_below_confidence,
            can_render,
            teacher,
        }
    }

    /// Runs the worker on a page the generic extractor has read into `e` from `doc` (the DOM it
    /// parsed: templates run on it, the page is not parsed again), replacing its text when a
    /// template fits.
    pub fn work(&self, page: &FetchedPage, e: &mut Extracted, doc: &Html) -> Worked {
        if page.rendered {
            // A rendered DOM is not the static HTML templates are learned for.
            return Worked::default();
        }
        match self.try_work(page, e, doc) {
            Ok(w) => w,
            Err(err) => {
                self.metrics.error("layout_store", page.url.as_str(), &err);
                Worked::default()
            }
        }
    }

    fn try_work(&self, page: &FetchedPage, e: &mut Extracted, doc: &Html) -> Result<Worked, LayoutError> {
        let m = &self.metrics;
        let host = weft_url::HostKey::of(&page.url).into_string();
        let (l1, l2) = (e.fingerprints.l1.clone(), e.fingerprints.l2.clone());
        let url = page.url.as_str();
        let now = weft_clock::now_secs();
        // Unsure of a page that has text to teach from: a hub or an empty page is not a layout
        // the teacher can learn (the JavaScript tier sees to pages whose text is missing).
        let unsure = e.confidence < self.teach_below
            && e.classification.page_type != weft_extract::PageType::Hub
            && e.word_count >= MIN_WORDS;
        let observed = self.store.observe(&host, &l1, &l2, url, now, unsure)?;
        if observed.sampled {
            // The teacher works on the samples' HTML as fetched now, never fetching them again.
            self.store.keep_page(PageRole::Sample, url, &stored(page))?;
        }
        if observed.queued.is_some() {
            m.count_event(Event::Layout(Layout::TeacherQueued));
            self.teacher.notify_one();
        }
        let mut used: Option<(TemplateText, u32)> = None;
        if observed.template.is_some() || observed.try_host_templates {
            let js = e.js.score as f32;
            if let Some(learned) = &observed.template {
                match apply(doc, &learned.template) {
                    Ok(t) => used = Some((t, learned.template.version)),
                    Err(failure) if short_page(&failure, e.word_count) => {
                        // Every selector matched and the page has no more text than that: the
                        // generic extraction stands, the layout is fine, nothing to re-learn.
                        m.count_event(Event::Layout(Layout::ShortPage));
                        tracing::debug!(host, url, "template v{}: {failure}; a short page", learned.template.version);
                    }
                    Err(failure) => {
                        m.count_event(Event::Layout(Layout::TemplateFailed));
                        let change = diagnose(&learned.template, &learned.snapshot, Some(&failure), doc, js, url, now);
                        tracing::info!(host, url, reason = %change.reason, "template v{} failed: {failure}", learned.template.version);
                        // A rename is repaired on the spot; the teacher re-learns anyway.
                        for kind in &change.kinds {
                            if let ChangeKind::ClassRename { renames } = kind {
                                let repaired = repair(&learned.template, renames);
                                if let Ok(t) = apply(doc, &repaired) {
                                    m.count_event(Event::Layout(Layout::Repaired));
                                    used = Some((t, learned.template.version));
                                }
                            }
                        }
                        if self.store.failed(learned, &change)?.is_some() {
                            self.store.keep_page(PageRole::Sample, url, &stored(page))?;
                            m.count_event(Event::Layout(Layout::TeacherQueued));
                            self.teacher.notify_one();
                        }
                    }
                }
            } else {
                used = self.adopt(doc, &host, &l1, js, url, now)?;
            }
        }
        let worked = match used {
            Some((t, version)) => {
                m.count_event(Event::Layout(Layout::Template));
                self.store.extracted_by_template(&host, &l1)?;
                replace(e, t);
                Worked { template: Some(version), render: None }
            }
            None => {
                m.count_event(Event::Layout(Layout::Generic));
                Worked::default()
            }
        };
        let render = self.needs_browser(page, doc, &host, e, worked.template.is_some(), observed.js_required)?;
        Ok(Worked { render, ..worked })
    }

    /// Tries the host's templates of other layouts on a page of a new one.
    fn adopt(
        &self,
        doc: &Html,
        host: &str,
        l1: &str,
        js: f32,
        url: &str,
        now: u64,
    ) -> Result<Option<(TemplateText, u32)>, LayoutError> {
        let candidates: Vec<Learned> =
            self.store.host_templates(host)?.into_iter().take(HOST_TEMPLATES_TRIED).collect();
        for learned in candidates {
            let Ok(t) = apply(doc, &learned.template) else { continue };
            let change = diagnose(&learned.template, &learned.snapshot, None, doc, js, url, now);
            if !matches!(change.kinds.as_slice(), [ChangeKind::Unknown]) {
                tracing::info!(host, url, reason = %change.reason, "layout drifted; template v{} still fits", learned.template.version);
                self.store.record_change(host, &change)?;
            }
            self.store.adopt(&learned, host, l1)?;
            self.metrics.count_event(Event::Layout(Layout::Adopted));
            return Ok(Some((t, learned.template.version)));
        }
        self.store.missed(host, l1)?;
        Ok(None)
    }

    /// Whether the page should go through the browser, and why; the first decision for a host
    /// is remembered with its signals.
    fn needs_browser(
        &self,
        page: &FetchedPage,
        doc: &Html,
        host: &str,
        e: &Extracted,
        by_template: bool,
        layout_needs_js: bool,
    ) -> Result<Option<RenderReason>, LayoutError> {
        if !self.can_render.load(Ordering::Acquire) {
            return Ok(None);
        }
        let recheck = match self.store.host_rendering(host)?.filter(|h| h.render) {
            // The decision outlived its TTL: this static page decides whether it still holds.
            Some(h) if h.rechecking => true,
            Some(h) => return Ok(Some(RenderReason::HostRenders(h.reason))),
            None => false,
        };
        let score = e.js.score;
        let valid = by_template || e.word_count >= MIN_WORDS;
        let reason = if layout_needs_js {
            Some(RenderReason::LayoutNeedsJs)
        } else if score > self.render_above {
            Some(RenderReason::JsScore { score, above: self.render_above })
        } else if score > self.render_maybe_above && !valid {
            Some(RenderReason::ThinStatic {
                score,
                above: self.render_maybe_above,
                words: e.word_count,
                min_words: MIN_WORDS,
            })
        } else {
            None
        };
        if recheck {
            let still = reason.is_some();
            if self.store.recheck_done(host, still, weft_clock::now_secs())? {
                tracing::info!(host, url = %e.url, "the host's pages no longer need the browser: fetched statically again");
                self.metrics.count_event(Event::Render(Render::HostStatic));
            }
            return Ok(reason);
        }
        // The page itself is rendered if it needs it; the whole host only once most of its
        // recent pages did.
        let whole_host = self.store.note_js_need(host, reason.is_some())?;
        let Some(reason) = reason else { return Ok(None) };
        if !whole_host {
            return Ok(Some(reason));
        }
        let decision = HostRendering {
            render: true,
            score,
            signals: e.js.signals.clone(),
            reason: reason.to_string(),
            url: e.url.to_string(),
            decided_at: weft_clock::now_secs(),
            rendered: 0,
            rechecking: false,
        };
        if self.store.decide_rendering(host, decision)? {
            self.metrics.count_event(Event::Render(Render::HostDecided));
            tracing::info!(host, url = %e.url, "rendering the host's pages in the browser: {reason}");
            // A host that had static templates and now needs the browser migrated to a
            // single-page app: say so in its change log.
            if let Some(newest) = self.store.host_templates(host)?.first() {
                let failure = apply(doc, &newest.template).err();
                let change = diagnose(
                    &newest.template,
                    &newest.snapshot,
                    failure.as_ref(),
                    doc,
                    score as f32,
                    page.url.as_str(),
                    weft_clock::now_secs(),
                );
                if change.kinds.contains(&ChangeKind::SpaMigration) {
                    self.store.record_change(host, &change)?;
                }
            }
        }
        Ok(Some(reason))
    }
}

/// Whether a template that failed only for want of words met a short page rather than a
/// changed layout: its selectors all matched, and the generic extractor (`generic_words`) found
/// at most twice the text the template did. A redesign that points the content selector at a
/// small element leaves the generic extractor finding much more; a short article does not.
fn short_page(failure: &weft_extract::template::TemplateError, generic_words: usize) -> bool {
    match failure {
        weft_extract::template::TemplateError::TooShort { words, .. } => generic_words <= 2 * (*words).max(1),
        _ => false,
    }
}

/// A template's fields over the generic extraction.
fn replace(e: &mut Extracted, t: TemplateText) {
    e.blocks = t
        .text
        .split("\n\n")
        .map(|p| ContentBlock { tag: "p".into(), text: p.to_string(), links: Vec::new() })
        .collect();
    e.text = t.text;
    e.word_count = t.word_count;
    e.metadata.title = Some(t.title);
    if let Some(d) = t.date {
        e.metadata.published = Some(weft_extract::metadata::normalize_date(&d).unwrap_or(d));
    }
    if let Some(a) = t.author {
        e.metadata.byline = Some(a);
    }
    // The template was validated: as sure as the teacher was.
    e.confidence = e.confidence.max(0.9);
}

#[cfg(test)]
mod tests {
    use super::short_page;
    use weft_extract::template::TemplateError;

    #[test]
    fn a_short_page_is_not_a_changed_layout() {
        let short = |words| TemplateError::TooShort { words, min: 40 };
        assert!(short_page(&short(26), 30), "a 26-word note read alike both ways");
        assert!(short_page(&short(39), 70));
        assert!(!short_page(&short(12), 600), "the selector now points at a small box: a change");
        assert!(!short_page(&short(0), 300));
        let missing = TemplateError::Missing { field: "content".into(), selector: "article".into() };
        assert!(!short_page(&missing, 10), "a selector that matched nothing is a change");
    }
}
