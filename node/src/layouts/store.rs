//! The worker's memory of layouts, in the node's sled database (seed 000 §3.C): how often each
//! layout signature was seen on each host, the template learned for it, the changes recorded
//! when a template stopped validating, and the teacher's queue.
//!
//! | tree | key | value (JSON) |
//! |---|---|---|
//! | `layout.signatures` | host, level, signature | [`SignatureRecord`]: seen, last seen, template version, sample URLs, queued, JS required |
//! | `layout.templates` | host, level, signature | [`Learned`]: the template and the snapshot of the layout it was learned on |
//! | `layout.changes` | host, time, sequence | [`Change`] |
//! | `layout.jobs` | sequence | [`TeacherJob`] |
//! | `layout.hosts` | host | [`HostRendering`]: whether the host's pages are rendered, and why |
//! | `layout.renders` | sequence | [`RenderJob`]: a page waiting for the browser |
//! | `layout.render_urls` | URL | the sequence of its job in `layout.renders` (one job per page) |
//! | `layout.js_needs` | host | whether each of its last eight static pages needed the browser (a bit each) and how many were seen |
//! | `layout.pages` | `s`/`r`, URL | the static HTML of a sample page (`s`, for the teacher) or of a page waiting for the browser (`r`): [`StoredPage`] |
//!
//! The browser never fetches a page the crawl already has: the teacher's samples and the pages
//! queued for rendering keep their HTML here, and the browser is answered from it.
//!
//! A signature seen [`LayoutStore::threshold`] times without a template queues one teacher
//! job (one at a time per signature); so does a template that fails validation. Manual
//! templates (the operator's override file, [`load_overrides`]) are looked up before learned
//! ones and never replaced by the teacher.

use serde::{Deserialize, Serialize};
use sled::Tree;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use weft_extract::changes::{Change, Snapshot};
use weft_extract::template::{Level, Origin, Selectors, Template};

/// A host's pages all go to the browser once this many of its last [`HOST_RENDER_WINDOW`]
/// statically fetched pages needed it.
pub const HOST_RENDER_MIN: u32 = 3;
pub const HOST_RENDER_WINDOW: u32 = 5;

/// Sightings of a layout before an unsure page of it queues the teacher (`teach_after` for the
/// others).
pub const LOW_CONFIDENCE_DUE: u64 = 2;

/// Sample URLs kept per signature: the teacher validates on them.
const SAMPLES: usize = 3;

/// What is known of one layout signature on one host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SignatureRecord {
    pub seen: u64,
    /// Seconds since the Unix epoch.
    pub last_seen: u64,
    pub template_version: Option<u32>,
    pub samples: Vec<String>,
    /// A teacher job is waiting or running for it.
    pub queued: bool,
    /// The teacher found its text only in the rendered page.
    pub js_required: bool,
    /// Pages of it a template extracted.
    #[serde(default)]
    pub by_template: u64,
    /// Times the host's other templates were tried on it and none fit.
    #[serde(default)]
    pub misses: u32,
    /// Teacher jobs that learned nothing: each doubles the sightings before the next.
    #[serde(default)]
    pub failures: u32,
}

/// Whether a host's pages go through the browser, and the signals that decided it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostRendering {
    pub render: bool,
    /// The JavaScript score of the page that decided it.
    pub score: f64,
    pub signals: Vec<String>,
    pub reason: String,
    pub url: String,
    pub decided_at: u64,
    /// Pages rendered since.
    pub rendered: u64,
    /// The decision outlived `layouts.decision_ttl_days`: the next page is fetched statically
    /// to see whether the host still needs the browser.
    #[serde(default)]
    pub rechecking: bool,
}

/// A page waiting for the browser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderJob {
    pub url: String,
    pub depth: u32,
    pub reason: String,
    pub at: u64,
}

/// A page's HTML as the crawl fetched it, kept for the browser.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPage {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

impl StoredPage {
    /// `status` (2 bytes, big-endian), content type length (2 bytes) and bytes, body.
    fn encode(&self) -> Vec<u8> {
        let ct = self.content_type.as_deref().unwrap_or("").as_bytes();
        let ct = &ct[..ct.len().min(u16::MAX as usize)];
        let mut v = Vec::with_capacity(4 + ct.len() + self.body.len());
        v.extend_from_slice(&self.status.to_be_bytes());
        v.extend_from_slice(&(ct.len() as u16).to_be_bytes());
        v.extend_from_slice(ct);
        v.extend_from_slice(&self.body);
        v
    }

    fn decode(v: &[u8]) -> Option<StoredPage> {
        let status = u16::from_be_bytes(v.get(0..2)?.try_into().ok()?);
        let n = u16::from_be_bytes(v.get(2..4)?.try_into().ok()?) as usize;
        let ct = std::str::from_utf8(v.get(4..4 + n)?).ok()?;
        Some(StoredPage {
            status,
            content_type: (!ct.is_empty()).then(|| ct.to_string()),
            body: v.get(4 + n..)?.to_vec(),
        })
    }
}

/// Which of the kept pages: a teacher's sample or a page waiting for the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRole {
    Sample,
    Render,
}

fn page_key(role: PageRole, url: &str) -> Vec<u8> {
    let mut k = vec![match role {
        PageRole::Sample => b's',
        PageRole::Render => b'r',
    }];
    k.extend_from_slice(url.as_bytes());
    k
}

/// A template with the layout snapshot it was learned on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    pub template: Template,
    pub snapshot: Snapshot,
    /// The teacher's reasons, for `weft templates show`.
    #[serde(default)]
    pub evidence: Vec<String>,
}

/// How a teacher job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobOutcome {
    Learned,
    /// The layout's text is only in the rendered page.
    JsRequired,
    /// Nothing learned: the layout is taught again only after twice as many more sightings.
    Failed,
}

/// Work for the teacher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TeacherJob {
    pub host: String,
    pub level: Level,
    pub signature: String,
    /// Pages of the layout, the first to be rendered.
    pub urls: Vec<String>,
    /// Why: `unseen` (the signature reached the threshold) or the template's failure.
    pub reason: String,
    pub at: u64,
}

/// One host in `weft templates list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    pub host: String,
    /// Templates stored for it (per signature and level), the operator's included.
    pub templates: usize,
    pub manual: bool,
    pub signatures: usize,
    pub pages_seen: u64,
    pub pages_by_template: u64,
    pub changes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendering: Option<HostRendering>,
}

/// One host in `weft templates show HOST`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostDetail {
    pub host: String,
    pub templates: Vec<Learned>,
    pub signatures: Vec<SignatureView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rendering: Option<HostRendering>,
    /// The host's URL templates as the crawl counted them (filled in by the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_patterns: Option<weft_frontier::patterns::HostPatterns>,
}

/// What [`LayoutStore::relearn`] forgot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Relearned {
    pub templates: usize,
    pub signatures: usize,
    pub jobs: usize,
    /// The host's "needs JavaScript" decision was dropped.
    pub rendering: bool,
}

/// A signature and what is known of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureView {
    pub level: Level,
    pub signature: String,
    #[serde(flatten)]
    pub record: SignatureRecord,
}

/// What the worker should do with a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The template for its layout (the override, then L1, then L2), if any.
    pub template: Option<Learned>,
    /// No template, but the host has templates of other layouts worth trying.
    pub try_host_templates: bool,
    /// A teacher job this page queued.
    pub queued: Option<TeacherJob>,
    /// The page became one of its layout's samples: keep its HTML for the teacher.
    pub sampled: bool,
    pub js_required: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("layout store: {0}")]
    Store(#[from] sled::Error),
    #[error("corrupt layout record: {0}")]
    Corrupt(#[from] serde_json::Error),
}

/// A problem with the operator's override file.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: {error}")]
    Parse { path: String, error: toml::de::Error },
    #[error("{path}: template {index} (host {host:?}): the {field} selector {selector:?} does not parse")]
    Selector { path: String, index: usize, host: String, field: &'static str, selector: String },
}

/// One `[[template]]` of the override file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideEntry {
    host: String,
    title: String,
    content: String,
    date: Option<String>,
    author: Option<String>,
    #[serde(default)]
    exclusions: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverrideFile {
    #[serde(default)]
    template: Vec<OverrideEntry>,
}

/// Reads the operator's templates: `[[template]]` tables with `host`, `title`, `content` and
/// optionally `date`, `author`, `exclusions`. A missing file is no templates; every selector
/// must parse, so a typo is reported at start, not as silent misses.
pub fn load_overrides(path: &Path) -> Result<Vec<Template>, OverrideError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(OverrideError::Read { path: shown, error }),
    };
    let file: OverrideFile =
        toml::from_str(&text).map_err(|error| OverrideError::Parse { path: shown.clone(), error })?;
    let mut out = Vec::new();
    for (index, e) in file.template.into_iter().enumerate() {
        let fields = [
            ("title", Some(&e.title)),
            ("content", Some(&e.content)),
            ("date", e.date.as_ref()),
            ("author", e.author.as_ref()),
        ];
        let exclusions = e.exclusions.iter().map(|x| ("exclusions", Some(x)));
        for (field, selector) in fields.into_iter().chain(exclusions) {
            if let Some(sel) = selector.filter(|s| scraper::Selector::parse(s).is_err()) {
                return Err(OverrideError::Selector {
                    path: shown,
                    index: index + 1,
                    host: e.host,
                    field,
                    selector: sel.clone(),
                });
            }
        }
        out.push(Template {
            host: e.host.trim().to_ascii_lowercase(),
            signature: "*".into(),
            level: Level::L1,
            selectors: Selectors { title: e.title, content: e.content, date: e.date, author: e.author },
            exclusions: e.exclusions,
            confidence: 1.0,
            version: 1,
            origin: Origin::Manual,
            learned_at: 0,
        });
    }
    Ok(out)
}

/// The layout memory.
#[derive(Clone)]
pub struct LayoutStore {
    /// For sequence numbers (`generate_id`).
    db: sled::Db,
    signatures: Tree,
    templates: Tree,
    changes: Tree,
    jobs: Tree,
    hosts: Tree,
    renders: Tree,
    render_urls: Tree,
    pages: Tree,
    js_needs: Tree,
    threshold: u64,
    /// Learned templates and rendering decisions are checked again after this many seconds
    /// (`layouts.decision_ttl_days`).
    ttl_secs: u64,
    /// The operator's templates by host.
    overrides: Arc<HashMap<String, Learned>>,
}

fn key(host: &str, level: Level, signature: &str) -> Vec<u8> {
    let level = match level {
        Level::L1 => b'1',
        Level::L2 => b'2',
    };
    let mut k = Vec::with_capacity(host.len() + signature.len() + 3);
    k.extend_from_slice(host.as_bytes());
    k.push(0);
    k.push(level);
    k.push(0);
    k.extend_from_slice(signature.as_bytes());
    k
}

fn host_prefix(host: &str) -> Vec<u8> {
    let mut k = host.as_bytes().to_vec();
    k.push(0);
    k
}

impl LayoutStore {
    /// Opens the trees in `db`; a signature seen `threshold` times without a template is
    /// taught.
    pub fn open(db: &sled::Db, threshold: u64) -> Result<LayoutStore, LayoutError> {
        Ok(LayoutStore {
            db: db.clone(),
            signatures: db.open_tree("layout.signatures")?,
            templates: db.open_tree("layout.templates")?,
            changes: db.open_tree("layout.changes")?,
            jobs: db.open_tree("layout.jobs")?,
            hosts: db.open_tree("layout.hosts")?,
            renders: db.open_tree("layout.renders")?,
            render_urls: db.open_tree("layout.render_urls")?,
            pages: db.open_tree("layout.pages")?,
            js_needs: db.open_tree("layout.js_needs")?,
            threshold: threshold.max(1),
            ttl_secs: 7 * 86_400,
            overrides: Arc::default(),
        })
    }

    /// Decisions (learned templates, "the host needs JavaScript") older than `days` are
    /// checked again (see [`LayoutStore::observe`] and [`LayoutStore::rendering_due`]).
    pub fn with_decision_ttl(mut self, days: u64) -> LayoutStore {
        self.ttl_secs = days.saturating_mul(86_400).max(1);
        self
    }

    /// The operator's templates (see [`load_overrides`]): for their hosts they win over every
    /// learned template.
    pub fn with_overrides(mut self, templates: Vec<Template>) -> LayoutStore {
        let map = templates
            .into_iter()
            .map(|t| (t.host.clone(), Learned { template: t, snapshot: Snapshot::default(), evidence: Vec::new() }));
        self.overrides = Arc::new(map.collect());
        self
    }

    /// The operator's template for `host` (a host key: `name` or `name:port`; the file names
    /// hosts without ports).
    fn override_for(&self, host: &str) -> Option<&Learned> {
        self.overrides.get(host).or_else(|| self.overrides.get(host.rsplit_once(':').map_or(host, |(h, _)| h)))
    }

    fn get<T: for<'de> Deserialize<'de>>(tree: &Tree, k: &[u8]) -> Result<Option<T>, LayoutError> {
        Ok(tree.get(k)?.map(|v| serde_json::from_slice(&v)).transpose()?)
    }

    fn put<T: Serialize>(tree: &Tree, k: &[u8], v: &T) -> Result<(), LayoutError> {
        tree.insert(k, serde_json::to_vec(v)?)?;
        Ok(())
    }

    /// The template for a page of `host` with fingerprints `l1`/`l2`: a manual one first, then
    /// learned by L1, then by L2.
    pub fn template(&self, host: &str, l1: &str, l2: &str) -> Result<Option<Learned>, LayoutError> {
        if let Some(o) = self.override_for(host) {
            return Ok(Some(o.clone()));
        }
        let l1_t: Option<Learned> = Self::get(&self.templates, &key(host, Level::L1, l1))?;
        let l2_t: Option<Learned> = Self::get(&self.templates, &key(host, Level::L2, l2))?;
        let manual = |t: &Option<Learned>| t.as_ref().is_some_and(|l| l.template.origin == Origin::Manual);
        Ok(if manual(&l2_t) && !manual(&l1_t) { l2_t } else { l1_t.or(l2_t) })
    }

    /// Counts one page of `host` (seen at `now`) and says which template to use; queues a
    /// teacher job when the L1 signature reached the threshold without one.
    ///
    /// A learned template older than the decision TTL is queued for the teacher again (reason
    /// `expired`) and used meanwhile; a page the generic extractor was unsure of
    /// (`low_confidence`) queues its layout at its second sighting, before the threshold.
    pub fn observe(
        &self,
        host: &str,
        l1: &str,
        l2: &str,
        url: &str,
        now: u64,
        low_confidence: bool,
    ) -> Result<Observed, LayoutError> {
        let template = self.template(host, l1, l2)?;
        let k = key(host, Level::L1, l1);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.seen += 1;
        record.last_seen = now;
        record.template_version = template.as_ref().map(|t| t.template.version);
        let mut sampled = false;
        if record.samples.len() < SAMPLES && !record.samples.iter().any(|s| s == url) {
            record.samples.push(url.to_string());
            sampled = true;
        }
        let try_host_templates = template.is_none() && record.misses < 3 && self.has_templates(host);
        let mut queued = None;
        // A layout is something seen twice: a one-off page is not worth a render, however
        // unsure the extractor was of it (a crawl meets many hosts of one page).
        let due = if low_confidence && record.failures == 0 {
            LOW_CONFIDENCE_DUE.min(self.threshold)
        } else {
            self.threshold.saturating_mul(1 << record.failures.min(30))
        };
        let expired = template.as_ref().filter(|t| {
            t.template.origin != Origin::Manual && now.saturating_sub(t.template.learned_at) > self.ttl_secs
        });
        // While the host's other templates may still fit this layout, the worker tries them
        // first (see `try_host_templates`); only a layout none fits is taught.
        let unseen = template.is_none() && !try_host_templates && !record.js_required && record.seen >= due;
        if !record.queued && (unseen || expired.is_some()) {
            let reason = match expired {
                Some(t) => format!("expired: learned {} days ago", now.saturating_sub(t.template.learned_at) / 86_400),
                None if low_confidence && record.seen < self.threshold => "low confidence".to_string(),
                None => "unseen".to_string(),
            };
            // The page's layout is taught (again): its L1 signature, whichever template served it.
            let job = TeacherJob {
                host: host.to_string(),
                level: Level::L1,
                signature: l1.to_string(),
                urls: record.samples.clone(),
                reason,
                at: now,
            };
            self.enqueue(&job)?;
            record.queued = true;
            queued = Some(job);
        }
        Self::put(&self.signatures, &k, &record)?;
        Ok(Observed { template, try_host_templates, queued, sampled, js_required: record.js_required })
    }

    fn has_templates(&self, host: &str) -> bool {
        self.templates.scan_prefix(host_prefix(host)).next().is_some()
    }

    /// Counts a page of the L1 signature that a template extracted.
    pub fn extracted_by_template(&self, host: &str, l1: &str) -> Result<(), LayoutError> {
        let k = key(host, Level::L1, l1);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.by_template += 1;
        Self::put(&self.signatures, &k, &record)
    }

    /// The host's learned templates, newest first, one per distinct set of selectors: what a
    /// page of a new layout of the host is tried with before anything is taught.
    pub fn host_templates(&self, host: &str) -> Result<Vec<Learned>, LayoutError> {
        let mut all = self.templates(Some(host))?;
        all.sort_by(|a, b| {
            b.template.learned_at.cmp(&a.template.learned_at).then(b.template.version.cmp(&a.template.version))
        });
        let mut seen = Vec::new();
        all.retain(|l| {
            let key = (l.template.selectors.clone(), l.template.exclusions.clone());
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        });
        Ok(all)
    }

    /// A template of another layout of the host fitted a page of the new signature `l1`: it is
    /// kept for that signature too (same version), so its pages skip the search next time.
    pub fn adopt(&self, from: &Learned, host: &str, l1: &str) -> Result<(), LayoutError> {
        let mut copy = from.clone();
        copy.template.host = host.to_string();
        copy.template.level = Level::L1;
        copy.template.signature = l1.to_string();
        Self::put(&self.templates, &key(host, Level::L1, l1), &copy)?;
        let k = key(host, Level::L1, l1);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.template_version = Some(copy.template.version);
        Self::put(&self.signatures, &k, &record)
    }

    /// Counts a page of `l1` that none of the host's templates fitted; after three the host's
    /// templates are no longer tried on it.
    pub fn missed(&self, host: &str, l1: &str) -> Result<(), LayoutError> {
        let k = key(host, Level::L1, l1);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.misses += 1;
        Self::put(&self.signatures, &k, &record)
    }

    /// Records a change of `host`'s layout (one that broke no template: a drift, a migration
    /// seen by other means).
    pub fn record_change(&self, host: &str, change: &Change) -> Result<(), LayoutError> {
        let mut ck = host_prefix(host);
        ck.extend_from_slice(&change.at.to_be_bytes());
        ck.extend_from_slice(&self.db.generate_id()?.to_be_bytes());
        Self::put(&self.changes, &ck, change)
    }

    fn enqueue(&self, job: &TeacherJob) -> Result<(), LayoutError> {
        let seq = self.db.generate_id()?;
        Self::put(&self.jobs, &seq.to_be_bytes(), job)
    }

    /// Records that `learned`'s template failed on a page (with what changed) and queues the
    /// layout for the teacher — once: until it is re-learned, further failures add nothing.
    /// A manual template's failures are recorded (the operator should know) but not taught.
    pub fn failed(&self, learned: &Learned, change: &Change) -> Result<Option<TeacherJob>, LayoutError> {
        let t = &learned.template;
        let k = key(&t.host, t.level, &t.signature);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        if record.queued {
            // Already recorded and being re-learned: every page of a broken layout fails
            // until then, and one entry says it.
            return Ok(None);
        }
        self.record_change(&t.host, change)?;
        if t.origin == Origin::Manual {
            return Ok(None);
        }
        // The layout changed: its samples are pages of the old one. The failing page (kept by
        // the worker) starts the new samples, and the next pages of the layout join them until
        // the teacher takes the job.
        for url in std::mem::take(&mut record.samples) {
            if url != change.url {
                self.drop_page(PageRole::Sample, &url)?;
            }
        }
        record.samples.push(change.url.clone());
        let urls = vec![change.url.clone()];
        let job = TeacherJob {
            host: t.host.clone(),
            level: t.level,
            signature: t.signature.clone(),
            urls,
            reason: change.reason.clone(),
            at: change.at,
        };
        self.enqueue(&job)?;
        record.queued = true;
        Self::put(&self.signatures, &k, &record)?;
        Ok(Some(job))
    }

    /// Stores what the teacher learned (version = the previous one's + 1), under its own
    /// signature and, with `also_l2`, under the page's L2 signature too — so a page whose
    /// classes changed still finds it, fails it, and says what changed. The signature's job is
    /// done.
    pub fn learned(&self, mut learned: Learned, also_l2: Option<&str>) -> Result<u32, LayoutError> {
        let t = &learned.template;
        let mut keys = vec![key(&t.host, t.level, &t.signature)];
        if let Some(l2) = also_l2.filter(|_| t.level == Level::L1) {
            keys.push(key(&t.host, Level::L2, l2));
        }
        let mut previous = Vec::new();
        for k in &keys {
            previous.push(Self::get::<Learned>(&self.templates, k)?);
        }
        if let Some(Some(manual)) =
            previous.first().filter(|p| p.as_ref().is_some_and(|p| p.template.origin == Origin::Manual))
        {
            return Ok(manual.template.version);
        }
        learned.template.version = previous.iter().flatten().map(|p| p.template.version).max().map_or(1, |v| v + 1);
        let version = learned.template.version;
        for (k, p) in keys.iter().zip(&previous) {
            if p.as_ref().is_some_and(|p| p.template.origin == Origin::Manual) {
                continue;
            }
            let mut copy = learned.clone();
            if k != &keys[0] {
                copy.template.level = Level::L2;
                copy.template.signature = also_l2.unwrap_or_default().to_string();
            }
            Self::put(&self.templates, k, &copy)?;
        }
        self.job_done(
            &learned.template.host,
            learned.template.level,
            &learned.template.signature,
            JobOutcome::Learned,
        )?;
        Ok(version)
    }

    /// Marks a signature's job finished.
    pub fn job_done(&self, host: &str, level: Level, signature: &str, outcome: JobOutcome) -> Result<(), LayoutError> {
        let k = key(host, level, signature);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.queued = false;
        match outcome {
            JobOutcome::Learned => record.failures = 0,
            JobOutcome::JsRequired => record.js_required = true,
            JobOutcome::Failed => record.failures += 1,
        }
        if outcome != JobOutcome::Failed {
            // Done with these samples: the layout's next pages are kept in their place, so a
            // later re-learn (expiry, a change) reads pages the crawl fetched, not fetches them.
            for url in std::mem::take(&mut record.samples) {
                self.drop_page(PageRole::Sample, &url)?;
            }
        }
        Self::put(&self.signatures, &k, &record)
    }

    /// The oldest teacher job, with its queue key. It stays queued until
    /// [`LayoutStore::job_finished`], so a crash in the middle teaches it again.
    pub fn next_job(&self) -> Result<Option<(Vec<u8>, TeacherJob)>, LayoutError> {
        match self.jobs.first()? {
            Some((k, v)) => Ok(Some((k.to_vec(), serde_json::from_slice(&v)?))),
            None => Ok(None),
        }
    }

    /// Takes a finished job off the queue.
    pub fn job_finished(&self, key: &[u8]) -> Result<(), LayoutError> {
        self.jobs.remove(key)?;
        Ok(())
    }

    /// Teacher jobs and renders queued or running: while there are any, the crawl is not idle.
    pub fn pending_work(&self) -> usize {
        self.jobs.len() + self.renders.len()
    }

    /// Pages queued for the browser or being rendered.
    pub fn render_jobs(&self) -> usize {
        self.renders.len()
    }

    /// Whether `host`'s pages are rendered, and why.
    pub fn host_rendering(&self, host: &str) -> Result<Option<HostRendering>, LayoutError> {
        Self::get(&self.hosts, host.as_bytes())
    }

    /// Remembers that `host`'s pages need the browser; the first decision is kept. Says
    /// whether this one was the first.
    /// Records whether a statically fetched page of `host` needed the browser, and says
    /// whether the host as a whole does now: at least `HOST_RENDER_MIN` of its last
    /// `HOST_RENDER_WINDOW` pages did. One app shell on a site of static articles is rendered
    /// alone; a site that became a single-page app goes to the browser page after page, without
    /// a static fetch first.
    pub fn note_js_need(&self, host: &str, needed: bool) -> Result<bool, LayoutError> {
        let old = self.js_needs.get(host.as_bytes())?;
        let (bits, n) =
            old.as_deref().map_or((0u8, 0u8), |v| (v.first().copied().unwrap_or(0), v.get(1).copied().unwrap_or(0)));
        let bits = (bits << 1) | u8::from(needed);
        let n = n.saturating_add(1);
        self.js_needs.insert(host.as_bytes(), &[bits, n])?;
        let window = (1u16 << HOST_RENDER_WINDOW.min(8)) - 1;
        Ok((u16::from(bits) & window).count_ones() >= HOST_RENDER_MIN)
    }

    pub fn decide_rendering(&self, host: &str, decision: HostRendering) -> Result<bool, LayoutError> {
        let value = serde_json::to_vec(&decision)?;
        Ok(self.hosts.compare_and_swap(host.as_bytes(), None as Option<&[u8]>, Some(value))?.is_ok())
    }

    /// Whether `host`'s pages go straight to the browser now. A decision older than the TTL is
    /// checked again: it is marked `rechecking` and `None` is returned — pages are fetched
    /// statically (and still rendered if they need it) until the worker has decided anew on
    /// one of them ([`LayoutStore::recheck_done`]).
    pub fn rendering_due(&self, host: &str, now: u64) -> Result<Option<HostRendering>, LayoutError> {
        let Some(mut h) = self.host_rendering(host)?.filter(|h| h.render) else { return Ok(None) };
        if !h.rechecking && now.saturating_sub(h.decided_at) <= self.ttl_secs {
            return Ok(Some(h));
        }
        if !h.rechecking {
            h.rechecking = true;
            Self::put(&self.hosts, host.as_bytes(), &h)?;
        }
        Ok(None)
    }

    /// The re-check of `host`'s rendering decision ended: `still_needed` renews it from `now`;
    /// otherwise the decision and the recent JavaScript needs are dropped (the host is static
    /// again). Says whether the host changed.
    pub fn recheck_done(&self, host: &str, still_needed: bool, now: u64) -> Result<bool, LayoutError> {
        let Some(mut h) = self.host_rendering(host)? else { return Ok(false) };
        if still_needed {
            h.rechecking = false;
            h.decided_at = now;
            Self::put(&self.hosts, host.as_bytes(), &h)?;
            return Ok(false);
        }
        self.hosts.remove(host.as_bytes())?;
        self.js_needs.remove(host.as_bytes())?;
        Ok(true)
    }

    /// Forgets what was learned of `host` (the operator asked for it): learned templates (not
    /// the operator's), signature counts, queued teacher jobs, the rendering decision and the
    /// recent JavaScript needs. Its pages are counted and taught again from scratch; the change
    /// log stays.
    pub fn relearn(&self, host: &str) -> Result<Relearned, LayoutError> {
        let prefix = host_prefix(host);
        let mut out = Relearned::default();
        for k in self.templates.scan_prefix(&prefix).keys() {
            self.templates.remove(k?)?;
            out.templates += 1;
        }
        for k in self.signatures.scan_prefix(&prefix).keys() {
            self.signatures.remove(k?)?;
            out.signatures += 1;
        }
        for item in self.jobs.iter() {
            let (k, v) = item?;
            if serde_json::from_slice::<TeacherJob>(&v).is_ok_and(|j| j.host == host) {
                self.jobs.remove(k)?;
                out.jobs += 1;
            }
        }
        out.rendering = self.hosts.remove(host.as_bytes())?.is_some();
        self.js_needs.remove(host.as_bytes())?;
        Ok(out)
    }

    /// Drops change-log entries recorded before `before` (seconds since the Unix epoch);
    /// returns how many.
    pub fn prune_changes(&self, before: u64) -> Result<usize, LayoutError> {
        let mut n = 0;
        for item in self.changes.iter() {
            let (k, v) = item?;
            if serde_json::from_slice::<Change>(&v).map_or(true, |c| c.at < before) {
                self.changes.remove(k)?;
                n += 1;
            }
        }
        Ok(n)
    }

    /// Keeps a page's HTML for the browser (see [`StoredPage`]).
    pub fn keep_page(&self, role: PageRole, url: &str, page: &StoredPage) -> Result<(), LayoutError> {
        self.pages.insert(page_key(role, url), page.encode())?;
        Ok(())
    }

    /// A kept page's HTML.
    pub fn page(&self, role: PageRole, url: &str) -> Result<Option<StoredPage>, LayoutError> {
        Ok(self.pages.get(page_key(role, url))?.and_then(|v| StoredPage::decode(&v)))
    }

    pub fn drop_page(&self, role: PageRole, url: &str) -> Result<(), LayoutError> {
        self.pages.remove(page_key(role, url))?;
        Ok(())
    }

    /// The sample URLs a layout's record holds now.
    pub fn samples(&self, host: &str, level: Level, signature: &str) -> Result<Vec<String>, LayoutError> {
        let record: Option<SignatureRecord> = Self::get(&self.signatures, &key(host, level, signature))?;
        Ok(record.map(|r| r.samples).unwrap_or_default())
    }

    /// Counts a rendered page of `host`.
    pub fn rendered(&self, host: &str) -> Result<(), LayoutError> {
        let mut h: HostRendering = Self::get(&self.hosts, host.as_bytes())?.unwrap_or_default();
        h.rendered += 1;
        Self::put(&self.hosts, host.as_bytes(), &h)
    }

    /// Every host with a rendering decision.
    pub fn rendering_hosts(&self) -> Result<Vec<(String, HostRendering)>, LayoutError> {
        self.hosts
            .iter()
            .map(|r| {
                let (k, v) = r?;
                Ok((String::from_utf8_lossy(&k).into_owned(), serde_json::from_slice(&v)?))
            })
            .collect()
    }

    /// Queues a page for the browser; kept in sled, so a page the crawl finished with is
    /// rendered even across a restart. A page already waiting (the crawl and the teacher may
    /// both send it) is not queued twice: says whether this call queued it.
    pub fn queue_render(&self, job: &RenderJob) -> Result<bool, LayoutError> {
        // The URL index may point at a job that is gone (a crash between the two writes of
        // `render_done`): only a job that exists counts.
        if let Some(k) = self.render_urls.get(job.url.as_bytes())? {
            if self.renders.contains_key(&k)? {
                return Ok(false);
            }
        }
        let seq = self.db.generate_id()?.to_be_bytes();
        Self::put(&self.renders, &seq, job)?;
        self.render_urls.insert(job.url.as_bytes(), &seq)?;
        Ok(true)
    }

    /// The oldest page waiting for the browser, with its queue key (remove it with
    /// [`LayoutStore::render_done`] once rendered, so a crash renders it again).
    pub fn next_render(&self, after: Option<&[u8]>) -> Result<Option<(Vec<u8>, RenderJob)>, LayoutError> {
        let next = match after {
            Some(a) => {
                self.renders.range::<&[u8], _>((std::ops::Bound::Excluded(a), std::ops::Bound::Unbounded)).next()
            }
            None => self.renders.iter().next(),
        };
        Ok(next.transpose()?.map(|(k, v)| serde_json::from_slice(&v).map(|j| (k.to_vec(), j))).transpose()?)
    }

    /// Every page waiting for the browser, with its queue key.
    pub fn renders(&self) -> Result<Vec<(Vec<u8>, RenderJob)>, LayoutError> {
        let mut out = Vec::new();
        for item in self.renders.iter() {
            let (k, v) = item?;
            out.push((k.to_vec(), serde_json::from_slice(&v)?));
        }
        Ok(out)
    }

    pub fn render_done(&self, k: &[u8]) -> Result<(), LayoutError> {
        let Some(v) = self.renders.remove(k)? else { return Ok(()) };
        let job: RenderJob = serde_json::from_slice(&v)?;
        // Only if it still names this job.
        let _ = self.render_urls.compare_and_swap(job.url.as_bytes(), Some(k), None::<&[u8]>)?;
        Ok(())
    }

    /// Every host with signatures, templates or a rendering decision, and what is known of it.
    pub fn overview(&self) -> Result<Vec<HostSummary>, LayoutError> {
        let mut hosts: std::collections::BTreeSet<String> = self.overrides.keys().cloned().collect();
        for tree in [&self.signatures, &self.templates] {
            for k in tree.iter().keys() {
                let k = k?;
                let end = k.iter().position(|b| *b == 0).unwrap_or(k.len());
                hosts.insert(String::from_utf8_lossy(&k[..end]).into_owned());
            }
        }
        for (h, _) in self.rendering_hosts()? {
            hosts.insert(h);
        }
        hosts
            .into_iter()
            .map(|host| {
                let signatures = self.signatures(&host)?;
                Ok(HostSummary {
                    templates: self.templates(Some(&host))?.len() + usize::from(self.overrides.contains_key(&host)),
                    manual: self.overrides.contains_key(&host),
                    signatures: signatures.len(),
                    pages_seen: signatures.iter().map(|s| s.2.seen).sum(),
                    pages_by_template: signatures.iter().map(|s| s.2.by_template).sum(),
                    changes: self.changes.scan_prefix(host_prefix(&host)).count(),
                    rendering: self.host_rendering(&host)?,
                    host,
                })
            })
            .collect()
    }

    /// Everything known of `host`'s layouts: its templates (the operator's first), signatures
    /// (most seen first) and rendering decision.
    pub fn detail(&self, host: &str) -> Result<HostDetail, LayoutError> {
        let mut templates: Vec<Learned> = self.overrides.get(host).cloned().into_iter().collect();
        templates.extend(self.templates(Some(host))?);
        let mut signatures: Vec<SignatureView> = self
            .signatures(host)?
            .into_iter()
            .map(|(level, signature, record)| SignatureView { level, signature, record })
            .collect();
        signatures.sort_by_key(|s| std::cmp::Reverse(s.record.seen));
        Ok(HostDetail {
            host: host.to_string(),
            templates,
            signatures,
            rendering: self.host_rendering(host)?,
            url_patterns: None,
        })
    }

    /// What `/status` shows.
    pub fn status(&self) -> super::LayoutsStatus {
        let rendering = self
            .hosts
            .iter()
            .values()
            .flatten()
            .filter(|v| serde_json::from_slice::<HostRendering>(v).is_ok_and(|h| h.render));
        super::LayoutsStatus {
            templates: self.templates.len() as u64 + self.overrides.len() as u64,
            hosts_rendering: rendering.count() as u64,
            teacher_queue: self.jobs.len() as u64,
            render_queue: self.renders.len() as u64,
            ..Default::default()
        }
    }

    /// Every template (of `host`, or of all hosts).
    pub fn templates(&self, host: Option<&str>) -> Result<Vec<Learned>, LayoutError> {
        let prefix = host.map(host_prefix).unwrap_or_default();
        self.templates.scan_prefix(prefix).map(|r| Ok(serde_json::from_slice(&r?.1)?)).collect()
    }

    /// The changes recorded for `host`, oldest first.
    pub fn changes(&self, host: &str) -> Result<Vec<Change>, LayoutError> {
        self.changes.scan_prefix(host_prefix(host)).map(|r| Ok(serde_json::from_slice(&r?.1)?)).collect()
    }

    /// Every signature of `host` and what is known of it.
    pub fn signatures(&self, host: &str) -> Result<Vec<(Level, String, SignatureRecord)>, LayoutError> {
        let prefix = host_prefix(host);
        self.signatures
            .scan_prefix(&prefix)
            .map(|r| {
                let (k, v) = r?;
                let rest = &k[prefix.len()..];
                let level = if rest.first() == Some(&b'2') { Level::L2 } else { Level::L1 };
                let signature = String::from_utf8_lossy(rest.get(2..).unwrap_or_default()).into_owned();
                Ok((level, signature, serde_json::from_slice(&v)?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_extract::changes::ChangeKind;
    use weft_extract::template::Selectors;

    fn store(threshold: u64) -> (tempfile::TempDir, LayoutStore) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path().join("db")).unwrap();
        (dir, LayoutStore::open(&db, threshold).unwrap())
    }

    fn template(origin: Origin, level: Level, signature: &str) -> Learned {
        Learned {
            template: Template {
                host: "h.test".into(),
                signature: signature.into(),
                level,
                selectors: Selectors { title: "h1".into(), content: "div.body".into(), date: None, author: None },
                exclusions: Vec::new(),
                confidence: 0.9,
                version: 0,
                origin,
                learned_at: 0,
            },
            snapshot: Snapshot::default(),
            evidence: Vec::new(),
        }
    }

    #[test]
    fn a_signature_seen_often_enough_is_queued_once_and_a_template_ends_it() {
        let (_d, s) = store(5);
        for i in 0..4 {
            let o = s.observe("h.test", "a1", "b2", &format!("http://h.test/{i}"), i, false).unwrap();
            assert!(o.template.is_none() && o.queued.is_none());
        }
        let o = s.observe("h.test", "a1", "b2", "http://h.test/4", 4, false).unwrap();
        let job = o.queued.expect("the fifth sighting queues the teacher");
        assert_eq!(job.urls, ["http://h.test/0", "http://h.test/1", "http://h.test/2"]);
        assert!(s.observe("h.test", "a1", "b2", "http://h.test/5", 5, false).unwrap().queued.is_none(), "once");
        let (k, next) = s.next_job().unwrap().unwrap();
        assert_eq!(next, job);
        assert_eq!(s.pending_work(), 1, "a job being taught is still pending");
        s.job_finished(&k).unwrap();
        assert_eq!(s.next_job().unwrap(), None);
        assert_eq!(s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap(), 1);
        let o = s.observe("h.test", "a1", "b2", "http://h.test/6", 6, false).unwrap();
        assert_eq!(o.template.unwrap().template.version, 1);
        let sigs = s.signatures("h.test").unwrap();
        assert_eq!(sigs.len(), 1);
        assert_eq!((sigs[0].0, sigs[0].1.as_str(), sigs[0].2.seen), (Level::L1, "a1", 7));
        assert_eq!(sigs[0].2.template_version, Some(1));
    }

    #[test]
    fn failures_record_changes_queue_relearning_and_manual_templates_win() {
        let (_d, s) = store(5);
        s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap();
        let learned = s.template("h.test", "a1", "zz").unwrap().unwrap();
        let change = Change {
            kinds: vec![ChangeKind::Unknown],
            evidence: vec!["x".into()],
            reason: "changed".into(),
            breaking: true,
            url: "http://h.test/9".into(),
            at: 42,
        };
        let job = s.failed(&learned, &change).unwrap().expect("queued");
        assert_eq!(job.urls[0], "http://h.test/9");
        assert!(s.failed(&learned, &change).unwrap().is_none(), "one job per layout");
        assert_eq!(s.changes("h.test").unwrap(), std::slice::from_ref(&change), "and one entry while it is re-learned");
        assert_eq!(s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap(), 2, "re-learned: version 2");
        // A manual template by L2 wins over the learned L1 one, and the teacher cannot replace it.
        s.learned(template(Origin::Manual, Level::L2, "b2"), None).unwrap();
        assert_eq!(s.template("h.test", "a1", "b2").unwrap().unwrap().template.origin, Origin::Manual);
        let v = s.learned(template(Origin::Learned, Level::L2, "b2"), None).unwrap();
        assert_eq!(s.template("h.test", "a1", "b2").unwrap().unwrap().template.origin, Origin::Manual);
        assert_eq!(v, 1);
        // A layout found to need JavaScript is not taught again.
        s.job_done("h.test", Level::L1, "c3", JobOutcome::JsRequired).unwrap();
        for i in 0..10 {
            let o = s.observe("h.test", "c3", "zz", &format!("http://h.test/c{i}"), i, false).unwrap();
            assert!(o.queued.is_none() && o.js_required);
        }
        assert_eq!(s.templates(Some("h.test")).unwrap().len(), 2);
        assert_eq!(s.templates(Some("other.test")).unwrap().len(), 0);
    }

    #[test]
    fn decisions_expire_templates_are_taught_again_and_a_js_host_is_rechecked() {
        const DAY: u64 = 86_400;
        let (_d, s) = store(5);
        let s = s.with_decision_ttl(7);
        let mut t = template(Origin::Learned, Level::L1, "a1");
        t.template.learned_at = 10 * DAY;
        s.learned(t, None).unwrap();
        let o = s.observe("h.test", "a1", "zz", "http://h.test/1", 16 * DAY, false).unwrap();
        assert!(o.template.is_some() && o.queued.is_none(), "six days: still fresh");
        let o = s.observe("h.test", "a1", "zz", "http://h.test/2", 18 * DAY, false).unwrap();
        let job = o.queued.expect("eight days: taught again");
        assert_eq!((job.reason.as_str(), job.signature.as_str()), ("expired: learned 8 days ago", "a1"));
        assert!(o.template.is_some(), "and used meanwhile");
        assert!(s.observe("h.test", "a1", "zz", "http://h.test/3", 18 * DAY, false).unwrap().queued.is_none(), "once");
        // A manual template never expires.
        let mut m = template(Origin::Manual, Level::L1, "m1");
        m.template.learned_at = 0;
        s.learned(m, None).unwrap();
        assert!(s.observe("h.test", "m1", "zz", "http://h.test/m", 400 * DAY, false).unwrap().queued.is_none());

        // The browser decision: used while fresh, re-checked once expired.
        let decision = HostRendering { render: true, decided_at: 10 * DAY, ..HostRendering::default() };
        assert!(s.decide_rendering("js.test", decision).unwrap());
        assert!(s.rendering_due("js.test", 12 * DAY).unwrap().is_some());
        assert!(s.rendering_due("js.test", 18 * DAY).unwrap().is_none(), "expired: a static fetch decides");
        assert!(s.host_rendering("js.test").unwrap().unwrap().rechecking);
        assert!(s.rendering_due("js.test", 18 * DAY).unwrap().is_none(), "static until decided");
        assert!(!s.recheck_done("js.test", true, 18 * DAY).unwrap(), "still needed: renewed");
        assert!(s.rendering_due("js.test", 20 * DAY).unwrap().is_some());
        assert!(s.rendering_due("js.test", 26 * DAY).unwrap().is_none());
        assert!(s.recheck_done("js.test", false, 26 * DAY).unwrap(), "not needed any more: static again");
        assert!(s.host_rendering("js.test").unwrap().is_none());
    }

    #[test]
    fn a_page_the_extractor_was_unsure_of_queues_its_layout_at_once() {
        let (_d, s) = store(5);
        let o = s.observe("h.test", "u1", "zz", "http://h.test/u", 1, true).unwrap();
        assert!(o.queued.is_none(), "a one-off page is not taught");
        let o = s.observe("h.test", "u1", "zz", "http://h.test/v", 2, true).unwrap();
        assert_eq!(o.queued.expect("queued at the second sighting, not the fifth").reason, "low confidence");
        let o = s.observe("h.test", "s1", "zz", "http://h.test/s", 1, false).unwrap();
        assert!(o.queued.is_none(), "a sure page waits for the threshold");
    }

    #[test]
    fn relearning_forgets_a_hosts_layouts_and_old_changes_are_pruned() {
        let (_d, s) = store(5);
        s.observe("h.test", "q1", "zz", "http://h.test/2", 1, true).unwrap();
        assert!(s.observe("h.test", "q1", "zz", "http://h.test/3", 1, true).unwrap().queued.is_some());
        s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap();
        s.observe("h.test", "a1", "zz", "http://h.test/1", 1, false).unwrap();
        s.decide_rendering("h.test", HostRendering { render: true, ..HostRendering::default() }).unwrap();
        s.observe("other.test", "a1", "zz", "http://other.test/1", 1, false).unwrap();
        let r = s.relearn("h.test").unwrap();
        assert_eq!(r, Relearned { templates: 1, signatures: 2, jobs: 1, rendering: true });
        assert!(s.template("h.test", "a1", "zz").unwrap().is_none());
        assert!(s.signatures("h.test").unwrap().is_empty());
        assert_eq!(s.signatures("other.test").unwrap().len(), 1, "other hosts keep theirs");
        let change = |at| Change {
            kinds: vec![ChangeKind::Unknown],
            evidence: vec![],
            reason: "x".into(),
            breaking: false,
            url: "http://h.test/".into(),
            at,
        };
        s.record_change("h.test", &change(100)).unwrap();
        s.record_change("h.test", &change(200)).unwrap();
        assert_eq!(s.prune_changes(150).unwrap(), 1);
        assert_eq!(s.changes("h.test").unwrap(), [change(200)]);
    }

    #[test]
    fn the_override_file_is_read_checked_and_wins_for_its_host_with_any_port() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("templates.toml");
        assert!(load_overrides(&path).unwrap().is_empty(), "no file, no templates");
        std::fs::write(
            &path,
            "[[template]]\nhost = \"News.Test\"\ntitle = \"h1\"\ncontent = \"div.body\"\nexclusions = [\".ad\"]\n",
        )
        .unwrap();
        let t = load_overrides(&path).unwrap();
        assert_eq!((t[0].host.as_str(), t[0].origin, t[0].exclusions.len()), ("news.test", Origin::Manual, 1));
        let (_d, s) = store(5);
        let s = s.with_overrides(t);
        s.learned(template(Origin::Learned, Level::L1, "a1"), None).unwrap();
        let got = s.template("news.test:8080", "a1", "b2").unwrap().unwrap();
        assert_eq!(got.template.origin, Origin::Manual);
        assert!(s.template("h.test", "a1", "b2").unwrap().is_some_and(|l| l.template.origin == Origin::Learned));
        // A selector that does not parse is named with its place in the file.
        std::fs::write(&path, "[[template]]\nhost = \"a.test\"\ntitle = \"h1\"\ncontent = \"div[\"\n").unwrap();
        let err = load_overrides(&path).unwrap_err().to_string();
        assert!(err.contains("template 1") && err.contains("content") && err.contains("div["), "{err}");
        std::fs::write(&path, "[[template]]\nhost = \"a.test\"\ntitel = \"h1\"\n").unwrap();
        assert!(matches!(load_overrides(&path), Err(OverrideError::Parse { .. })));
    }

    #[test]
    fn host_rendering_is_decided_once_and_renders_stay_queued_until_done() {
        let (_d, s) = store(5);
        let decision = |reason: &str| HostRendering { render: true, reason: reason.into(), ..Default::default() };
        assert!(s.decide_rendering("h.test", decision("first")).unwrap());
        assert!(!s.decide_rendering("h.test", decision("second")).unwrap(), "the first decision stands");
        s.rendered("h.test").unwrap();
        let h = s.host_rendering("h.test").unwrap().unwrap();
        assert_eq!((h.reason.as_str(), h.rendered), ("first", 1));
        assert_eq!(s.status().hosts_rendering, 1);
        let job = |i: u64| RenderJob { url: format!("http://h.test/{i}"), depth: 1, reason: "js".into(), at: i };
        for i in 0..3 {
            assert!(s.queue_render(&job(i)).unwrap());
        }
        // The crawl and the teacher may both send a page: it waits once (a second job would
        // find its HTML gone with the first one's render and fetch the page again).
        assert!(!s.queue_render(&job(1)).unwrap());
        assert_eq!(s.renders().unwrap().len(), 3);
        let (k0, j0) = s.next_render(None).unwrap().unwrap();
        let (k1, j1) = s.next_render(Some(&k0)).unwrap().unwrap();
        assert_eq!((j0.url.as_str(), j1.url.as_str()), ("http://h.test/0", "http://h.test/1"));
        assert_eq!(s.pending_work(), 3, "taken is not done");
        s.render_done(&k1).unwrap();
        s.render_done(&k0).unwrap();
        assert_eq!(s.next_render(None).unwrap().unwrap().1.url, "http://h.test/2");
        assert!(s.queue_render(&job(1)).unwrap(), "rendered: it may be queued again");
    }

    #[test]
    fn hosts_templates_are_tried_before_teaching_and_an_adopted_one_is_kept() {
        let (_d, s) = store(2);
        s.learned(template(Origin::Learned, Level::L1, "a1"), Some("b2")).unwrap();
        assert_eq!(s.templates(Some("h.test")).unwrap().len(), 2, "under L1 and L2");
        // A new layout of the host: the worker tries the host's templates; nothing is taught
        // while they might fit (three misses).
        for i in 0..3 {
            let o = s.observe("h.test", "new", "other", &format!("http://h.test/n{i}"), i, false).unwrap();
            assert!(o.template.is_none() && o.try_host_templates && o.queued.is_none(), "{i}");
            s.missed("h.test", "new").unwrap();
        }
        let o = s.observe("h.test", "new", "other", "http://h.test/n3", 3, false).unwrap();
        assert!(!o.try_host_templates && o.queued.is_some(), "none fitted: taught");
        // Another new layout that a host template fits is adopted, with its version.
        let from = s.host_templates("h.test").unwrap().remove(0);
        s.adopt(&from, "h.test", "third").unwrap();
        let got = s.template("h.test", "third", "zz").unwrap().unwrap();
        assert_eq!((got.template.signature.as_str(), got.template.version), ("third", 1));
        assert_eq!(s.host_templates("h.test").unwrap().len(), 1, "one per distinct set of selectors");
        assert_eq!(s.overview().unwrap()[0].templates, 3);
    }

    #[test]
    fn a_host_goes_to_the_browser_only_when_most_of_its_recent_pages_need_it() {
        let (_d, s) = store(5);
        // One app shell among static articles: the host stays static.
        for needed in [false, false, true, false, false, false, false, false] {
            assert!(!s.note_js_need("news.test", needed).unwrap());
        }
        // A site that became a single-page app: the third of its last five pages flips it.
        assert!(!s.note_js_need("spa.test", false).unwrap());
        assert!(!s.note_js_need("spa.test", true).unwrap());
        assert!(!s.note_js_need("spa.test", true).unwrap());
        assert!(s.note_js_need("spa.test", true).unwrap());
        // Older pages fall out of the window.
        for _ in 0..5 {
            s.note_js_need("mixed.test", true).unwrap();
        }
        for _ in 0..3 {
            s.note_js_need("mixed.test", false).unwrap();
        }
        assert!(!s.note_js_need("mixed.test", false).unwrap(), "two of the last five");
    }
}
