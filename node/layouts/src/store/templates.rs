//! Layout signatures and the templates learned for them (`layout.signatures`, `layout.templates`).

use super::{host_prefix, key, JobOutcome, LayoutError, LayoutStore, TeacherJob};
use serde::{Deserialize, Serialize};
use weft_extract::changes::Snapshot;
use weft_extract::template::{Level, Origin, Template};

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

/// A template with the layout snapshot it was learned on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    pub template: Template,
    pub snapshot: Snapshot,
    /// The teacher's reasons, for `weft templates show`.
    #[serde(default)]
    pub evidence: Vec<String>,
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

/// What [`LayoutStore::relearn`] forgot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Relearned {
    pub templates: usize,
    pub signatures: usize,
    pub jobs: usize,
    /// The host's "needs JavaScript" decision was dropped.
    pub rendering: bool,
}

impl LayoutStore {
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

    /// Forgets what was learned of `host` (the operator asked for it): learned templates (not
    /// the operator's), signature counts, queued teacher jobs, the rendering decision and the
    /// recent JavaScript needs. Its pages are counted and taught again from scratch; the change
    /// log stays.
    pub fn relearn(&self, host: &str) -> Result<Relearned, LayoutError> {
        let prefix = host_prefix(host);
        let mut out = Relearned::default();
        for item in self.templates.scan_prefix(&prefix) {
            self.templates.remove(item?.0)?;
            out.templates += 1;
        }
        for item in self.signatures.scan_prefix(&prefix) {
            self.signatures.remove(item?.0)?;
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

    /// The sample URLs a layout's record holds now.
    pub fn samples(&self, host: &str, level: Level, signature: &str) -> Result<Vec<String>, LayoutError> {
        let record: Option<SignatureRecord> = Self::get(&self.signatures, &key(host, level, signature))?;
        Ok(record.map(|r| r.samples).unwrap_or_default())
    }
}
