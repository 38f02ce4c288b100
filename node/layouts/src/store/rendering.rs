//! Which hosts' pages go through the browser (`layout.hosts`, `layout.js_needs`) and the pages
//! waiting for it (`layout.renders`, `layout.render_urls`).

use super::{LayoutError, LayoutStore};
use serde::{Deserialize, Serialize};

/// A host's pages all go to the browser once this many of its last [`HOST_RENDER_WINDOW`]
/// statically fetched pages needed it.
pub const HOST_RENDER_MIN: u32 = 3;

pub const HOST_RENDER_WINDOW: u32 = 5;

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
    /// Renders of this page that ended without its HTML (the host failed, for now) — see
    /// [`LayoutStore::retry_render`].
    #[serde(default)]
    pub tries: u32,
    /// Not to be rendered before this (unix seconds): a retry waits for the host.
    #[serde(default)]
    pub not_before: u64,
}

impl LayoutStore {
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
        self.js_needs.insert(host.as_bytes(), [bits, n])?;
        let window = (1u16 << HOST_RENDER_WINDOW.min(8)) - 1;
        Ok((u16::from(bits) & window).count_ones() >= HOST_RENDER_MIN)
    }

    pub fn decide_rendering(&self, host: &str, decision: HostRendering) -> Result<bool, LayoutError> {
        let value = serde_json::to_vec(&decision)?;
        Ok(self.hosts.compare_and_swap(host.as_bytes(), None, Some(&value))?)
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

    /// Queues a page for the browser; kept on disk, so a page the crawl finished with is
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
        let seq = self.ids.next().to_be_bytes();
        Self::put(&self.renders, &seq, job)?;
        self.render_urls.insert(job.url.as_bytes(), seq)?;
        Ok(true)
    }

    /// The oldest page waiting for the browser, with its queue key (remove it with
    /// [`LayoutStore::render_done`] once rendered, so a crash renders it again).
    pub fn next_render(&self, after: Option<&[u8]>) -> Result<Option<(Vec<u8>, RenderJob)>, LayoutError> {
        let next = match after {
            Some(a) => self.renders.after(a).next(),
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

    /// Puts the job under key `k` back in the queue as `job` (its tries and wait updated): a
    /// new key at the queue's end, then the old key removed — a crash between the two leaves
    /// the page queued twice (rendered twice), never not at all.
    pub fn retry_render(&self, k: &[u8], job: &RenderJob) -> Result<(), LayoutError> {
        let seq = self.ids.next().to_be_bytes();
        Self::put(&self.renders, &seq, job)?;
        self.render_urls.insert(job.url.as_bytes(), seq.to_vec())?;
        self.renders.remove(k)?;
        Ok(())
    }

    pub fn render_done(&self, k: &[u8]) -> Result<(), LayoutError> {
        let Some(v) = self.renders.remove(k)? else { return Ok(()) };
        let job: RenderJob = serde_json::from_slice(&v)?;
        // Only if it still names this job.
        let _ = self.render_urls.compare_and_swap(job.url.as_bytes(), Some(k), None)?;
        Ok(())
    }
}
