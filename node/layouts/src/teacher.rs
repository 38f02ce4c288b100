//! The teacher service: the slow path of layout learning. It drains the layout store's queue,
//! one job at a time, in the background of the crawl:
//!
//! 1. fetch the static HTML of the job's pages (up to three of the layout) through the
//!    crawler — robots.txt, the host's delay and the SSRF guard apply, as to every request; if
//!    one of the host's templates (of another layout) extracts them all, adopt it and stop;
//! 2. render the first in the browser pool (its requests go through the crawler too);
//! 3. reason about the rendered boxes ([`weft_extract::teacher::learn`]) and validate the
//!    template on the static pages;
//! 4. cross-check with Readability.js on the rendered DOM: how much of its text the template's
//!    text covers goes into the template's confidence and evidence;
//! 5. store the template under the page's L1 and L2 signatures with the layout's snapshot — or,
//!    when the text is only in the rendered page, remember that the layout and its host need
//!    the browser and queue its pages for rendering.

use super::browser::{LazyPool, VIEWPORT};
use super::render_fetch::RenderFetcher;
use super::rendering::RenderQueue;
use super::store::{HostRendering, JobOutcome, LayoutStore, Learned, PageRole, StoredPage, TeacherJob};
use crate::crawl::CrawlHandle;
use crate::events::{Event, Tally, Teacher as Taught};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use url::Url;
use weft_db::blocking;
use weft_extract::teacher::{learn, LearnError, Lesson};
use weft_fetch::page::RenderReason;

/// Everything the teacher works with.
pub struct Teacher {
    pub store: LayoutStore,
    pub crawler: CrawlHandle,
    /// The fetch function of its renders (requests under the crawl's rules).
    pub fetcher: RenderFetcher,
    pub pool: Arc<LazyPool>,
    pub renders: RenderQueue,
    pub metrics: Arc<dyn Tally>,
    /// Longest a request waits for its host's politeness delay.
    pub patience: Duration,
    pub wake: Arc<Notify>,
}

impl Teacher {
    /// Takes jobs off the queue until the task is dropped.
    pub async fn run(self) {
        loop {
            let job = match blocking(|| self.store.next_job()) {
                Ok(j) => j,
                Err(e) => {
                    tracing::error!("teacher queue: {e}");
                    None
                }
            };
            let Some((key, job)) = job else {
                tokio::select! {
                    _ = self.wake.notified() => {}
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                }
                continue;
            };
            self.crawler.until_running().await;
            if self.crawler.stopping() {
                // The node is stopping (see `Crawler::close_renders`): lessons wait for the
                // next start.
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            self.metrics.count_event(Event::Teacher(Taught::Runs));
            let outcome = self.teach(&job).await;
            let counted = match &outcome {
                JobOutcome::Learned => Taught::Learned,
                JobOutcome::JsRequired => Taught::JsRequired,
                JobOutcome::Failed => Taught::Failed,
            };
            self.metrics.count_event(Event::Teacher(counted));
            if let Err(e) = blocking(|| self.store.job_done(&job.host, job.level, &job.signature, outcome)) {
                tracing::error!("teacher: {e}");
            }
            if outcome != JobOutcome::Failed {
                // The layout's samples went with `job_done`; these are the job's own.
                for u in &job.urls {
                    let _ = blocking(|| self.store.drop_page(PageRole::Sample, u));
                }
            }
            if let Err(e) = blocking(|| self.store.job_finished(&key)) {
                tracing::error!("teacher: {e}");
            }
            self.crawler.wake();
        }
    }

    /// One job, start to finish; says how it ended.
    async fn teach(&self, job: &TeacherJob) -> JobOutcome {
        let Some(pool) = self.pool.get().await else {
            return JobOutcome::Failed;
        };
        let (statics, held) = self.kept_samples(job);
        let Some((first, first_html)) = statics.first().cloned() else {
            tracing::info!(
                host = job.host,
                "teacher: none of the layout's pages is kept; it is taught again from the next ones"
            );
            return JobOutcome::Failed;
        };
        // The page's own signatures: the job may have come from an L2 match or an older layout.
        let page = weft_extract::extract(first_html.as_bytes(), &[], &first);
        let (l1, l2, js) = (page.fingerprints.l1.clone(), page.fingerprints.l2.clone(), page.js.score as f32);
        // A template of another layout of the host may fit these pages already (the layout
        // was queued before the host had one): no browser needed.
        if let Some(fits) = self.fitting_host_template(&job.host, &statics) {
            tracing::info!(
                host = job.host,
                signature = l1,
                version = fits.template.version,
                "a template of the host fits the layout"
            );
            self.metrics.count_event(Event::Teacher(Taught::Adopted));
            return match blocking(|| self.store.adopt(&fits, &job.host, &l1)) {
                Ok(()) => JobOutcome::Learned,
                Err(e) => {
                    tracing::error!("teacher: {e}");
                    JobOutcome::Failed
                }
            };
        }
        let (fetch, _) = self.fetcher.for_page(&first, held.first().cloned(), self.patience);
        let rendered = match pool.render(first.as_str(), fetch).await {
            Ok(r) => r,
            Err(e) => {
                self.metrics.error("teacher_render", first.as_str(), &e);
                return JobOutcome::Failed;
            }
        };
        let static_refs: Vec<&str> = statics.iter().map(|(_, h)| h.as_str()).collect();
        let html = rendered.html.clone();
        let boxes = rendered.elements.clone();
        let host = job.host.clone();
        let statics_owned: Vec<String> = static_refs.iter().map(|s| s.to_string()).collect();
        let l1_for = l1.clone();
        let lesson = tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = statics_owned.iter().map(String::as_str).collect();
            let signature = (l1_for.as_str(), weft_extract::template::Level::L1);
            learn(&host, signature, &html, &boxes, &refs, f64::from(VIEWPORT.0), weft_clock::now_secs())
        })
        .await;
        let lesson = match lesson {
            Ok(Ok(l)) => l,
            Ok(Err(LearnError::NotInStaticHtml(why))) => {
                tracing::info!(host = job.host, url = %first, "the layout's text is only in the rendered page ({why}): rendering its pages");
                return self.render_layout(job, &l1, &page.js, &first, &why.to_string(), &statics, &held);
            }
            Ok(Err(e)) => {
                tracing::info!(host = job.host, url = %first, "teacher learned nothing: {e}");
                return JobOutcome::Failed;
            }
            Err(e) => {
                tracing::error!("teacher thread: {e}");
                return JobOutcome::Failed;
            }
        };
        self.keep_lesson(job, lesson, (&first, &first_html), rendered.html, (&l1, &l2), js).await
    }

    /// The layout's static pages, in the job's order, as the crawl fetched them (kept by the
    /// worker), then its samples kept since the job was queued (pages of a changed layout
    /// that failed its template meanwhile): each page's decoded text, and its HTML as kept (a
    /// page queued for rendering takes it along). Nothing is fetched again: the crawl fetched
    /// every one of them, and the web server sees a page once. The first is rendered.
    fn kept_samples(&self, job: &TeacherJob) -> (Vec<(Url, String)>, Vec<StoredPage>) {
        let mut statics: Vec<(Url, String)> = Vec::new();
        // Their HTML, in the same order: a page queued for rendering takes it along (the
        // browser is answered from it).
        let mut held: Vec<StoredPage> = Vec::new();
        let mut urls = job.urls.clone();
        let later = blocking(|| self.store.samples(&job.host, job.level, &job.signature)).unwrap_or_default();
        urls.extend(later.into_iter().filter(|u| !job.urls.contains(u)));
        for u in &urls {
            let Ok(url) = Url::parse(u) else { continue };
            let kept = blocking(|| self.store.page(PageRole::Sample, u)).ok().flatten();
            let Some(page) = kept else {
                self.metrics.count_event(Event::Teacher(Taught::SampleMissing));
                continue;
            };
            let tld = url.host_str().and_then(|h| h.rsplit('.').next()).map(str::to_string);
            let text =
                weft_extract::decode::decode(&page.body, page.content_type.as_deref(), tld.as_deref(), &mut Vec::new())
                    .text;
            held.push(page);
            statics.push((url, text));
        }
        (statics, held)
    }

    /// The layout's text is only in the rendered page: its host's pages go to the browser
    /// from now on, and the pages taught with go to it now, their HTML along.
    #[allow(clippy::too_many_arguments)]
    fn render_layout(
        &self,
        job: &TeacherJob,
        l1: &str,
        js: &weft_extract::JsScore,
        first: &Url,
        why: &str,
        statics: &[(Url, String)],
        held: &[StoredPage],
    ) -> JobOutcome {
        let decision = HostRendering {
            render: true,
            score: f64::from(js.score as f32),
            signals: js.signals.clone(),
            reason: format!("the teacher found the text only in the rendered page ({why})"),
            url: first.to_string(),
            decided_at: weft_clock::now_secs(),
            rendered: 0,
            rechecking: false,
        };
        if let Err(e) = blocking(|| self.store.decide_rendering(&job.host, decision)) {
            tracing::error!("teacher: {e}");
        }
        let _ =
            blocking(|| self.store.job_done(&job.host, weft_extract::template::Level::L1, l1, JobOutcome::JsRequired));
        for ((url, _), page) in statics.iter().zip(held) {
            if let Err(e) = self.renders.push_stored(url, 0, &RenderReason::LayoutNeedsJs, Some(page)) {
                tracing::error!("render queue: {e}");
            }
        }
        JobOutcome::JsRequired
    }

    /// Keeps what the teacher learned, cross-checked with Readability.js on the rendered page
    /// (its agreement moves the template's confidence), with the layout's snapshot for telling
    /// later changes apart.
    async fn keep_lesson(
        &self,
        job: &TeacherJob,
        lesson: Lesson,
        (first, first_html): (&Url, &str),
        rendered_html: String,
        (l1, l2): (&str, &str),
        js: f32,
    ) -> JobOutcome {
        let mut template = lesson.template;
        let mut evidence = lesson.evidence;
        evidence.push(format!("validated on {} of {} static pages of the layout", lesson.validated, lesson.pages));
        // Cross-check with Readability.js on the rendered DOM (seconds: its own thread).
        let ours = weft_extract::template::apply(&scraper::Html::parse_document(first_html), &template)
            .map(|t| t.text)
            .unwrap_or_default();
        match cross_check(rendered_html, first.to_string(), ours).await {
            Some(agreement) => {
                evidence.push(format!(
                    "Readability.js on the rendered page: word F1 {:.2} with the template's text",
                    agreement
                ));
                template.confidence = (0.8 * template.confidence + 0.2 * agreement as f32).clamp(0.0, 1.0);
            }
            None => evidence.push("Readability.js found no article on the rendered page".into()),
        }
        let snapshot = weft_extract::changes::snapshot(
            &scraper::Html::parse_document(first_html),
            &template.selectors.content,
            js,
        );
        let learned = Learned { template, snapshot, evidence };
        match blocking(|| self.store.learned(learned, Some(l2))) {
            Ok(version) => {
                tracing::info!(host = job.host, signature = l1, version, reason = job.reason, "layout learned");
                if job.signature != l1 {
                    let _ = blocking(|| self.store.job_done(&job.host, job.level, &job.signature, JobOutcome::Learned));
                }
                JobOutcome::Learned
            }
            Err(e) => {
                tracing::error!("teacher: {e}");
                JobOutcome::Failed
            }
        }
    }
}

impl Teacher {
    /// The host's newest template that extracts every one of `statics`, if any.
    fn fitting_host_template(&self, host: &str, statics: &[(Url, String)]) -> Option<Learned> {
        let candidates = blocking(|| self.store.host_templates(host)).ok()?;
        let docs: Vec<scraper::Html> = statics.iter().map(|(_, h)| scraper::Html::parse_document(h)).collect();
        candidates.into_iter().find(|l| docs.iter().all(|d| weft_extract::template::apply(d, &l.template).is_ok()))
    }
}

/// How far Readability.js on the rendered page agrees with the template's text: the F1 of
/// their word sets (`None`: it found nothing). Runs on its own thread: the JavaScript engine is `!Send`
/// and needs a big stack.
async fn cross_check(rendered_html: String, url: String, ours: String) -> Option<f64> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("weft-teacher-reference".into())
        .stack_size(16 << 20)
        .spawn(move || {
            let text = weft_extract::reference::Reference::new().and_then(|r| r.extract(&rendered_html, &url));
            let _ = tx.send(text.ok());
        })
        .ok()?;
    let reference = rx.await.ok().flatten().filter(|t| !t.trim().is_empty())?;
    let words = |t: &str| -> std::collections::HashSet<String> {
        t.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
    };
    let (theirs, ours) = (words(&reference), words(&ours));
    let common = theirs.intersection(&ours).count() as f64;
    let (precision, recall) = (common / ours.len().max(1) as f64, common / theirs.len().max(1) as f64);
    Some(if common == 0.0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) })
}
