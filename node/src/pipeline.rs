//! The first stage after fetching: extraction. The crawl loop hands every fetched HTML page to
//! a [`Pipeline`] on a blocking thread and queues the links it returns. [`ExtractPipeline`]
//! runs the extractor (`weft_extract`): main text, metadata, normalized links, page type,
//! JS-need score, fingerprints; then the layout worker on the same DOM (the page is parsed
//! once). Deduplication, chunking, embedding and indexing plug in after it (fetch → extract →
//! dedup → chunk → embed → index, see `indexing.rs`) without touching the loop.

use crate::second_opinion::SecondOpinion;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use weft_crawl::metrics::{Event, Metrics};
use weft_extract::learned::Selector;
use weft_extract::Extracted;
use weft_fetch::page::{FetchedPage, Pipeline, Processed};
use weft_layouts::Worker;

/// Extraction: the first stage after fetching.
pub struct ExtractPipeline {
    metrics: Arc<Metrics>,
    second_opinion: SecondOpinion,
    extracting: AtomicUsize,
    /// Layout templates and the JavaScript tier's decision (`layouts.enabled`).
    worker: Option<Worker>,
    /// How each page's blocks are chosen (`extract.learned`).
    selector: Selector<'static>,
}

impl ExtractPipeline {
    pub fn new(config: &weft_config::ExtractConfig, metrics: Arc<Metrics>) -> Self {
        let second_opinion = SecondOpinion::start(config, metrics.clone());
        ExtractPipeline {
            metrics,
            second_opinion,
            extracting: AtomicUsize::new(0),
            worker: None,
            selector: crate::reextract::selector(config),
        }
    }

    /// With the layout worker after the generic extractor.
    pub fn with_worker(mut self, worker: Worker) -> Self {
        self.worker = Some(worker);
        self
    }

    /// Pages whose text the reference extractor improved (see `second_opinion`).
    pub fn improved(&self) -> Option<std::sync::mpsc::Receiver<crate::second_opinion::Improved>> {
        self.second_opinion.take_improved()
    }
}

impl Pipeline for ExtractPipeline {
    fn process(&self, page: &FetchedPage) -> Processed {
        self.extract(page, true)
    }
}

impl ExtractPipeline {
    /// A page held already, extracted again (`reextract.rs`): as [`Pipeline::process`], but the
    /// page is not counted in the extraction's metrics a second time nor offered for a second
    /// opinion.
    pub(crate) fn process_again(&self, page: &FetchedPage) -> Processed {
        self.extract(page, false)
    }

    fn extract(&self, page: &FetchedPage, first_time: bool) -> Processed {
        let extracting = self.extracting.fetch_add(1, Ordering::AcqRel) + 1;
        let mut headers: Vec<(&str, &str)> = Vec::with_capacity(2);
        if let Some(ct) = &page.content_type {
            headers.push(("content-type", ct));
        }
        if let Some(cl) = &page.content_language {
            headers.push(("content-language", cl));
        }
        let (mut e, dom) = weft_extract::extract_with(&page.body, &headers, &page.url, self.selector);
        let worked = self.worker.as_ref().map(|w| w.work(page, &mut e, &dom)).unwrap_or_default();
        if first_time {
            self.count(page, &e);
            if worked.template.is_none() && worked.render.is_none() {
                self.second_opinion.offer(&page.url, &page.body, &e, extracting);
            }
        }
        self.extracting.fetch_sub(1, Ordering::AcqRel);
        let links = std::mem::take(&mut e.links);
        Processed { links, extracted: Some(Box::new(e)), render: worked.render }
    }

    /// An extracted page in the extraction's metrics.
    fn count(&self, page: &FetchedPage, e: &Extracted) {
        let m = &self.metrics;
        m.count_event(Event::PageType(page_type_name(e)));
        if !page.rendered {
            // What the static HTML says about the need for JavaScript; a rendered DOM's answer
            // would count the page twice.
            m.count_event(Event::Js(recommendation_name(e)));
        }
        for w in &e.warnings {
            m.count_event(Event::Warning(w.kind()));
        }
        for (kind, n) in &e.links_rejected {
            m.count_n(kind, u64::from(*n));
        }
    }
}

pub(crate) fn page_type_name(e: &Extracted) -> &'static str {
    match e.classification.page_type {
        weft_extract::PageType::Article => "article",
        weft_extract::PageType::Hub => "hub",
        weft_extract::PageType::Other => "other",
    }
}

fn recommendation_name(e: &Extracted) -> &'static str {
    match e.js.recommendation {
        weft_extract::Recommendation::Static => "static",
        weft_extract::Recommendation::TryStaticFirst => "try_static_first",
        weft_extract::Recommendation::JsRequired => "js_required",
    }
}
