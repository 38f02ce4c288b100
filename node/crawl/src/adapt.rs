//! What the crawl learns about its hosts as it goes, and acts on (seeds 000–002):
//!
//! - **URL patterns**: every page's URL template counted per host, and scheme changes — by
//!   counts, or by redirects from one template to another — recorded in the host's change log
//!   (`weft_frontier::patterns`);
//! - **hosts refusing the crawler**: 401/403/451 and bot-check pages to most requests mark the
//!   host blocked, with the evidence; its queue pauses and is probed again later
//!   (`weft_frontier::health`);
//! - **discovery when idle**: the archive links a host's pages pointed at, and `/sitemap.xml`,
//!   are offered when its queue runs dry (`weft_frontier::discovery`);
//! - **the freshness loop**: hubs of a known template are revisited on a schedule, with
//!   conditional requests (`weft_frontier::revisits`);
//! - **stalls**: no progress while work is queued, and the reason (`stall.rs`).
//!
//! The decisions are pure functions of those modules; this file keeps their state for the
//! crawl loop (in memory and in sled) and answers its questions. Every method is short and
//! touches sled: call them from the blocking pool (`storage::blocking`).

use super::stall::{Backlog, Stall, StallWatch};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_frontier::discovery::{Discovery, Found};
use weft_frontier::health::{Answer, Blocked, HostHealth, PausePolicy, Verdict};
use weft_frontier::patterns::{Patterns, SchemeChange};
use weft_frontier::revisits::{Revisit, Revisits, Validators};

/// The settings it acts on (from `crawl.*`).
#[derive(Debug, Clone, Copy)]
pub struct AdaptSettings {
    pub pause: PausePolicy,
    /// Hubs revisited this often at least; `None`: no revisits.
    pub hub_revisit: Option<Duration>,
    /// No progress this long with work queued is a stall.
    pub stall_after: Duration,
}

impl AdaptSettings {
    pub fn from_config(c: &weft_config::Config) -> AdaptSettings {
        AdaptSettings {
            pause: PausePolicy {
                first: Duration::from_secs(c.crawl.blocked_pause_secs),
                max: Duration::from_secs(c.crawl.blocked_pause_max_secs.max(c.crawl.blocked_pause_secs)),
            },
            hub_revisit: (c.crawl.hub_revisit_secs > 0).then(|| Duration::from_secs(c.crawl.hub_revisit_secs)),
            stall_after: Duration::from_secs(c.crawl.stall_secs),
        }
    }
}

/// A host refusing the crawler, for `/status`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BlockedHost {
    pub host: String,
    #[serde(flatten)]
    pub blocked: Blocked,
}

/// What a fetched page taught.
#[derive(Debug, Default)]
pub struct PageLesson {
    pub change: Option<SchemeChange>,
    /// The page is a hub of a template known to be hubs: revisit it.
    pub revisit: bool,
}

/// The crawl's memory of its hosts.
pub struct Adapt {
    pub patterns: Patterns,
    health: Mutex<HashMap<String, HostHealth>>,
    /// Blocked hosts (host → [`HostHealth`] JSON), so a restart keeps showing them.
    health_tree: sled::Tree,
    discovery: Discovery,
    pub revisits: Revisits,
    stall: Mutex<StallWatch>,
    pub settings: AdaptSettings,
}

impl Adapt {
    /// Opens the crawl's memory: the hosts' health, discovery hints and revisits in `db`, the
    /// URL patterns in `tables`.
    pub fn open(db: &sled::Db, tables: &weft_frontier::Tables, settings: AdaptSettings) -> anyhow::Result<Adapt> {
        let health_tree = db.open_tree("host_health")?;
        let mut health = HashMap::new();
        for item in health_tree.iter() {
            let (k, v) = item?;
            if let Ok(h) = serde_json::from_slice::<HostHealth>(&v) {
                health.insert(String::from_utf8_lossy(&k).into_owned(), h);
            }
        }
        Ok(Adapt {
            patterns: Patterns::open(tables, db)?,
            health: Mutex::new(health),
            health_tree,
            discovery: Discovery::open(db)?,
            revisits: Revisits::open(db)?,
            stall: Mutex::new(StallWatch::new(Instant::now())),
            settings,
        })
    }

    /// Records how `host` answered a request for `url`; says whether to carry on, pause the
    /// host (it refuses the crawler) or that it is back.
    pub fn answer(&self, host: &str, url: &str, answer: Answer) -> Verdict {
        let mut map = self.health.lock();
        let refuses = matches!(answer, Answer::Refused { .. } | Answer::Challenge { .. });
        // Hosts enter the map at their first refusal: a host that never refused costs nothing.
        if !refuses && !map.contains_key(host) {
            return Verdict::Continue;
        }
        let h = map.entry(host.to_string()).or_default();
        let was_blocked = h.blocked.is_some();
        let verdict = h.answer(answer, url, weft_clock::now_secs(), self.settings.pause);
        let persist = match &verdict {
            Verdict::Pause { .. } => Some(serde_json::to_vec(&*h).expect("health serializes")),
            _ => None,
        };
        if h.is_clean() {
            map.remove(host);
        }
        drop(map);
        let written = match persist {
            Some(v) => self.health_tree.insert(host, v).map(|_| ()),
            None if was_blocked => self.health_tree.remove(host).map(|_| ()),
            None => Ok(()),
        };
        if let Err(e) = written {
            tracing::warn!(host, "recording the host's health failed: {e}");
        }
        verdict
    }

    /// Hosts refusing the crawler right now.
    pub fn blocked(&self) -> Vec<BlockedHost> {
        let mut out: Vec<BlockedHost> = self
            .health
            .lock()
            .iter()
            .filter_map(|(h, s)| s.blocked.clone().map(|blocked| BlockedHost { host: h.clone(), blocked }))
            .collect();
        out.sort_by(|a, b| a.host.cmp(&b.host));
        out
    }

    /// Counts a fetched page of `url` with `template` and `page_type`; a hub whose template is
    /// known to be hubs (or a host's front page) is to be revisited.
    pub fn page(&self, host: &str, url: &str, template: &str, page_type: &str) -> PageLesson {
        let change = match self.patterns.observe(host, template, page_type, url, weft_clock::now_secs()) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(host, "recording the URL pattern failed: {e}");
                None
            }
        };
        let revisit = self.settings.hub_revisit.is_some()
            && page_type == "hub"
            && (template == "/"
                || self.patterns.host(host).ok().flatten().is_some_and(|p| p.page_type_of(template) == Some("hub")));
        PageLesson { change, revisit }
    }

    /// Counts a redirect on `host` from `from` to `to` (URLs and their templates).
    pub fn redirected(&self, host: &str, from: (&str, &str), to: (&str, &str)) -> Option<SchemeChange> {
        self.patterns.redirected(host, from, to, weft_clock::now_secs()).unwrap_or_else(|e| {
            tracing::warn!(host, "recording a redirect failed: {e}");
            None
        })
    }

    /// Remembers the archive links of a page of `host`.
    pub fn archives<'a>(&self, host: &str, urls: impl IntoIterator<Item = &'a str>) {
        if let Err(e) = self.discovery.note_archives(host, urls) {
            tracing::warn!(host, "recording archive hints failed: {e}");
        }
    }

    /// `host`'s queue ran dry: what to offer next.
    pub fn idle(&self, host: &str, scheme: &str) -> Found {
        self.discovery.on_idle(host, scheme).unwrap_or_else(|e| {
            tracing::warn!(host, "reading archive hints failed: {e}");
            Found { archives: Vec::new(), sitemap: None }
        })
    }

    /// Revisits due now (at most `max`).
    pub fn due(&self, max: usize) -> Vec<Revisit> {
        let hold = self.settings.hub_revisit.unwrap_or(Duration::from_secs(3600)).as_millis() as u64;
        self.revisits.due(weft_clock::now_ms(), max, hold).unwrap_or_else(|e| {
            tracing::warn!("reading the revisit schedule failed: {e}");
            Vec::new()
        })
    }

    /// Whether `url` is on the revisit schedule (a hub), not a one-off fetch again.
    pub fn is_scheduled(&self, url: &str) -> bool {
        self.revisits.get(url).ok().flatten().is_some()
    }

    /// The validators to send when revisiting `url`.
    pub fn validators(&self, url: &str) -> Option<Validators> {
        self.revisits.get(url).ok().flatten().map(|r| r.validators).filter(|v| !v.is_empty())
    }

    /// A hub was fetched (first time or revisit): schedules its next visit.
    pub fn visited(&self, url: &str, depth: u32, changed: bool, validators: Option<Validators>) {
        let Some(base) = self.settings.hub_revisit else { return };
        if let Err(e) = self.revisits.visited(url, depth, changed, validators, weft_clock::now_ms(), base.as_secs()) {
            tracing::warn!(url, "scheduling a revisit failed: {e}");
        }
    }

    /// Takes `url` off the revisit schedule (the page is gone).
    pub fn forget_revisit(&self, url: &str) {
        if let Err(e) = self.revisits.forget(url) {
            tracing::warn!(url, "dropping a revisit failed: {e}");
        }
    }

    /// A page or sitemap arrived.
    pub fn progress(&self) {
        self.stall.lock().progress(Instant::now());
    }

    /// A request was answered without progress (`None`) or failed with an error of `kind`.
    pub fn no_progress(&self, failure: Option<&'static str>) {
        let mut s = self.stall.lock();
        match failure {
            Some(kind) => s.failed(kind),
            None => s.answered(),
        }
    }

    /// Nothing is queued: not a stall.
    pub fn idle_crawl(&self) {
        self.stall.lock().idle(Instant::now());
    }

    /// Whether the crawl is stalled, given what is queued.
    pub fn stall(&self, mut backlog: Backlog) -> Option<Stall> {
        backlog.blocked = self.health.lock().values().filter(|h| h.blocked.is_some()).count() as u64;
        self.stall.lock().check(Instant::now(), self.settings.stall_after, backlog)
    }
}
