//! The teacher's queue (`layout.jobs`): one job per signature that needs a template.

use super::{key, LayoutError, LayoutStore, PageRole};
use crate::{Learned, SignatureRecord};
use serde::{Deserialize, Serialize};
use weft_extract::changes::Change;
use weft_extract::template::{Level, Origin};

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

impl LayoutStore {
    pub(super) fn enqueue(&self, job: &TeacherJob) -> Result<(), LayoutError> {
        let seq = self.ids.next();
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
}
