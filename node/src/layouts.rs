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
//!
//! A signature seen [`LayoutStore::threshold`] times without a template queues one teacher
//! job (one at a time per signature); so does a template that fails validation. Manual
//! templates (the operator's override file) are looked up before learned ones and never
//! replaced by the teacher.

use serde::{Deserialize, Serialize};
use sled::Tree;
use weft_extract::changes::{Change, Snapshot};
use weft_extract::template::{Level, Origin, Template};

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
}

/// A template with the layout snapshot it was learned on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    pub template: Template,
    pub snapshot: Snapshot,
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

/// What the worker should do with a page.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The template for its layout (L1 first, then L2), if any.
    pub template: Option<Learned>,
    /// A teacher job this page queued.
    pub queued: Option<TeacherJob>,
    pub js_required: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("layout store: {0}")]
    Store(#[from] sled::Error),
    #[error("corrupt layout record: {0}")]
    Corrupt(#[from] serde_json::Error),
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
    threshold: u64,
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
            threshold: threshold.max(1),
        })
    }

    pub fn threshold(&self) -> u64 {
        self.threshold
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
        let l1_t: Option<Learned> = Self::get(&self.templates, &key(host, Level::L1, l1))?;
        let l2_t: Option<Learned> = Self::get(&self.templates, &key(host, Level::L2, l2))?;
        let manual = |t: &Option<Learned>| t.as_ref().is_some_and(|l| l.template.origin == Origin::Manual);
        Ok(if manual(&l2_t) && !manual(&l1_t) { l2_t } else { l1_t.or(l2_t) })
    }

    /// Counts one page of `host` (seen at `now`) and says which template to use; queues a
    /// teacher job when the L1 signature reached the threshold without one.
    pub fn observe(&self, host: &str, l1: &str, l2: &str, url: &str, now: u64) -> Result<Observed, LayoutError> {
        let template = self.template(host, l1, l2)?;
        let k = key(host, Level::L1, l1);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.seen += 1;
        record.last_seen = now;
        record.template_version = template.as_ref().map(|t| t.template.version);
        if record.samples.len() < SAMPLES && !record.samples.iter().any(|s| s == url) {
            record.samples.push(url.to_string());
        }
        let mut queued = None;
        if template.is_none() && !record.queued && !record.js_required && record.seen >= self.threshold {
            let job = TeacherJob {
                host: host.to_string(),
                level: Level::L1,
                signature: l1.to_string(),
                urls: record.samples.clone(),
                reason: "unseen".into(),
                at: now,
            };
            self.enqueue(&job)?;
            record.queued = true;
            queued = Some(job);
        }
        Self::put(&self.signatures, &k, &record)?;
        Ok(Observed { template, queued, js_required: record.js_required })
    }

    fn enqueue(&self, job: &TeacherJob) -> Result<(), LayoutError> {
        let seq = self.db.generate_id()?;
        Self::put(&self.jobs, &seq.to_be_bytes(), job)
    }

    /// Records that `learned`'s template failed on a page (with what changed) and queues the
    /// layout for the teacher, once.
    pub fn failed(&self, learned: &Learned, change: &Change) -> Result<Option<TeacherJob>, LayoutError> {
        let t = &learned.template;
        let mut ck = host_prefix(&t.host);
        ck.extend_from_slice(&change.at.to_be_bytes());
        ck.extend_from_slice(&self.db.generate_id()?.to_be_bytes());
        Self::put(&self.changes, &ck, change)?;
        let k = key(&t.host, t.level, &t.signature);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        if record.queued || t.origin == Origin::Manual {
            return Ok(None);
        }
        let mut urls = vec![change.url.clone()];
        urls.extend(record.samples.iter().filter(|u| **u != change.url).cloned());
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

    /// Stores what the teacher learned (version = the previous one's + 1); the signature's job
    /// is done.
    pub fn learned(&self, mut learned: Learned) -> Result<u32, LayoutError> {
        let t = &learned.template;
        let k = key(&t.host, t.level, &t.signature);
        let previous: Option<Learned> = Self::get(&self.templates, &k)?;
        if previous.as_ref().is_some_and(|p| p.template.origin == Origin::Manual) {
            return Ok(previous.map_or(0, |p| p.template.version));
        }
        learned.template.version = previous.map_or(1, |p| p.template.version + 1);
        let version = learned.template.version;
        Self::put(&self.templates, &k, &learned)?;
        self.job_done(&learned.template.host, learned.template.level, &learned.template.signature, false)?;
        Ok(version)
    }

    /// Marks a signature's job finished; `js_required`: its pages need the browser.
    pub fn job_done(&self, host: &str, level: Level, signature: &str, js_required: bool) -> Result<(), LayoutError> {
        let k = key(host, level, signature);
        let mut record: SignatureRecord = Self::get(&self.signatures, &k)?.unwrap_or_default();
        record.queued = false;
        record.js_required |= js_required;
        Self::put(&self.signatures, &k, &record)
    }

    /// Takes the oldest teacher job off the queue.
    pub fn next_job(&self) -> Result<Option<TeacherJob>, LayoutError> {
        Ok(self.jobs.pop_min()?.map(|(_, v)| serde_json::from_slice(&v)).transpose()?)
    }

    pub fn queue_len(&self) -> usize {
        self.jobs.len()
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
        }
    }

    #[test]
    fn a_signature_seen_often_enough_is_queued_once_and_a_template_ends_it() {
        let (_d, s) = store(5);
        for i in 0..4 {
            let o = s.observe("h.test", "a1", "b2", &format!("http://h.test/{i}"), i).unwrap();
            assert!(o.template.is_none() && o.queued.is_none());
        }
        let o = s.observe("h.test", "a1", "b2", "http://h.test/4", 4).unwrap();
        let job = o.queued.expect("the fifth sighting queues the teacher");
        assert_eq!(job.urls, ["http://h.test/0", "http://h.test/1", "http://h.test/2"]);
        assert!(s.observe("h.test", "a1", "b2", "http://h.test/5", 5).unwrap().queued.is_none(), "once");
        assert_eq!(s.next_job().unwrap(), Some(job));
        assert_eq!(s.next_job().unwrap(), None);
        assert_eq!(s.learned(template(Origin::Learned, Level::L1, "a1")).unwrap(), 1);
        let o = s.observe("h.test", "a1", "b2", "http://h.test/6", 6).unwrap();
        assert_eq!(o.template.unwrap().template.version, 1);
        let sigs = s.signatures("h.test").unwrap();
        assert_eq!(sigs.len(), 1);
        assert_eq!((sigs[0].0, sigs[0].1.as_str(), sigs[0].2.seen), (Level::L1, "a1", 7));
        assert_eq!(sigs[0].2.template_version, Some(1));
    }

    #[test]
    fn failures_record_changes_queue_relearning_and_manual_templates_win() {
        let (_d, s) = store(5);
        s.learned(template(Origin::Learned, Level::L1, "a1")).unwrap();
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
        assert_eq!(s.changes("h.test").unwrap(), [change.clone(), change]);
        assert_eq!(s.learned(template(Origin::Learned, Level::L1, "a1")).unwrap(), 2, "re-learned: version 2");
        // A manual template by L2 wins over the learned L1 one, and the teacher cannot replace it.
        s.learned(template(Origin::Manual, Level::L2, "b2")).unwrap();
        assert_eq!(s.template("h.test", "a1", "b2").unwrap().unwrap().template.origin, Origin::Manual);
        let v = s.learned(template(Origin::Learned, Level::L2, "b2")).unwrap();
        assert_eq!(s.template("h.test", "a1", "b2").unwrap().unwrap().template.origin, Origin::Manual);
        assert_eq!(v, 1);
        // A layout found to need JavaScript is not taught again.
        s.job_done("h.test", Level::L1, "c3", true).unwrap();
        for i in 0..10 {
            let o = s.observe("h.test", "c3", "zz", &format!("http://h.test/c{i}"), i).unwrap();
            assert!(o.queued.is_none() && o.js_required);
        }
        assert_eq!(s.templates(Some("h.test")).unwrap().len(), 2);
        assert_eq!(s.templates(Some("other.test")).unwrap().len(), 0);
    }
}
