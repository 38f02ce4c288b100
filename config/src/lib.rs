//! Typed configuration for a Weft node.
//!
//! One tree ([`Config`]) with serde defaults, merged from four sources in a fixed order:
//! built-in defaults < TOML file < environment (`WEFT_SECTION__KEY`) < command-line flags.
//! The merge is done by [figment], which tags every value with the source that produced it, so
//! that an error can say not only *what* is wrong but *where* the offending value came from: a
//! volunteer who set `WEFT_FETCH__MAX_REDIRECTS=99` months ago in a systemd unit deserves to be
//! told it is the environment, not their TOML file, that is wrong.
//!
//! Unknown keys are rejected (a typo must never silently fall back to a default) and every
//! numeric key has an allowed range checked by [`Config::validate`].
//!
//! The commented example at `config/weft.example.toml` documents every key; a test parses it
//! and checks that it covers the whole tree.
//!
//! Module order (each module uses only those before it; `tests/architecture/tests/module_graph.rs`
//! checks it): index, network, validate → load.

mod index;
mod load;
mod network;
mod validate;

pub use index::{EmbedConfig, IndexConfig, Pooling, Quantization};
pub use network::{P2pConfig, RelayConfig, Retired, SearchConfig};

pub use load::{load, load_file, Overrides, Sources};
pub use validate::{ConfigError, Source};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// The whole configuration of one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the node keeps everything: queue, seen-set, robots cache, later the index.
    pub data_dir: PathBuf,
    pub crawl: CrawlConfig,
    pub fetch: FetchConfig,
    pub politeness: PolitenessConfig,
    pub frontier: FrontierConfig,
    pub extract: ExtractConfig,
    pub embed: EmbedConfig,
    pub index: IndexConfig,
    pub p2p: P2pConfig,
    pub search: SearchConfig,
    pub layouts: LayoutsConfig,
    pub storage: StorageConfig,
    pub api: ApiConfig,
    pub search_page: SearchPageConfig,
    pub log: LogConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from(".weft"),
            crawl: CrawlConfig::default(),
            fetch: FetchConfig::default(),
            politeness: PolitenessConfig::default(),
            frontier: FrontierConfig::default(),
            extract: ExtractConfig::default(),
            embed: EmbedConfig::default(),
            index: IndexConfig::default(),
            p2p: P2pConfig::default(),
            search: SearchConfig::default(),
            layouts: LayoutsConfig::default(),
            storage: StorageConfig::default(),
            api: ApiConfig::default(),
            search_page: SearchPageConfig::default(),
            log: LogConfig::default(),
        }
    }
}

/// What to crawl and how much of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CrawlConfig {
    /// URLs added to the frontier at start (already-seen ones are ignored, so re-adding the
    /// same seeds on every restart is harmless).
    pub seeds: Vec<String>,
    /// Requests in flight at once across all hosts. Each host still gets at most one.
    pub concurrency: usize,
    /// Links more than this many hops from a seed are not followed.
    pub max_depth: u32,
    /// Pages fetched from one host before it is considered done.
    pub max_pages_per_host: u64,
    /// Read `Sitemap:` lines and `/sitemap.xml` to discover URLs.
    pub follow_sitemaps: bool,
    /// Links to other hosts are followed (off: stay on the hosts of this run's seeds).
    pub follow_external_links: bool,
    /// Distinct other hosts the links of one site's pages (a registrable domain: all its
    /// subdomains together) may bring into the crawl per day (a site of generated pages
    /// linking made-up hosts cannot fill the node with hosts).
    pub max_hosts_per_source: usize,
    /// Keep each page's HTTP response (request and response headers, body; LZ4-compressed in
    /// the node's database, counted under the disk quota) for `weft export --format warc`.
    pub keep_responses: bool,
    /// Resident memory the node aims to stay under, MiB, browsers included (0: no target).
    /// Over it, no new request starts until use is back under 90% (`/status` says `throttled`).
    pub memory_target_mb: u64,
    /// No page fetched for this long while work is queued: `/status` says `stalled`, and why.
    pub stall_secs: u64,
    /// At a stop, requests still unanswered after this long give up (their URLs stay queued:
    /// for the next start, or for their hosts' next owners when the node leaves). Pages already
    /// fetched are still indexed and their links queued (for up to 40 s more).
    pub shutdown_grace_secs: u64,
    /// Hub pages of a known template are fetched again this often (conditional requests; an
    /// unchanged hub waits twice as long each time, up to 8×) to find new articles; 0: never.
    pub hub_revisit_secs: u64,
    /// A host that refuses most requests (401/403/451, bot checks) is paused this long, then
    /// probed; each refused probe doubles the pause.
    pub blocked_pause_secs: u64,
    /// The longest pause of a blocked host.
    pub blocked_pause_max_secs: u64,
}

impl Default for CrawlConfig {
    fn default() -> Self {
        CrawlConfig {
            seeds: Vec::new(),
            concurrency: 32,
            max_depth: 16,
            max_pages_per_host: 100_000,
            follow_sitemaps: true,
            follow_external_links: true,
            max_hosts_per_source: 1000,
            keep_responses: false,
            memory_target_mb: 0,
            stall_secs: 300,
            shutdown_grace_secs: 20,
            hub_revisit_secs: 3600,
            blocked_pause_secs: 600,
            blocked_pause_max_secs: 6 * 3600,
        }
    }
}

/// The HTTP fetcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FetchConfig {
    /// Product token sent as the User-Agent and matched against robots.txt groups.
    pub user_agent: String,
    /// Where a site owner can reach this node's operator (an `https://` page or a `mailto:`
    /// address); appended to the User-Agent as `(+URL)`. Empty by default, and then the node
    /// crawls only loopback and private networks (with `allow_private_networks`): a crawler on
    /// the public web must say who runs it, and a shared default would name nobody.
    pub contact_url: String,
    pub connect_timeout_ms: u64,
    /// Longest silence allowed while reading a response (slow-drip guard, per read).
    pub read_timeout_ms: u64,
    /// Hard cap on one whole request, headers to last byte.
    pub total_timeout_ms: u64,
    pub max_redirects: u32,
    /// Bodies longer than this are cut off and counted as an error.
    pub max_body_bytes: u64,
    /// Allow connecting to loopback, private, link-local, CGNAT and similar addresses.
    /// Off by default: a crawler that follows links from the open web must not be steered into
    /// the volunteer's own network (SSRF). Turn on for tests and intranet crawls.
    pub allow_private_networks: bool,
    /// Fixed host → IP answers consulted before DNS (tests map virtual hosts to 127.0.0.1).
    /// The SSRF guard still applies to these addresses.
    pub resolve: BTreeMap<String, IpAddr>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            user_agent: "WeftBot/0.1".into(),
            contact_url: String::new(),
            connect_timeout_ms: 10_000,
            read_timeout_ms: 20_000,
            total_timeout_ms: 60_000,
            max_redirects: 10,
            max_body_bytes: 10 * 1024 * 1024,
            allow_private_networks: false,
            resolve: BTreeMap::new(),
        }
    }
}

impl FetchConfig {
    /// The full User-Agent header: product token plus contact URL.
    pub fn user_agent_header(&self) -> String {
        if self.contact_url.is_empty() {
            self.user_agent.clone()
        } else {
            format!("{} (+{})", self.user_agent, self.contact_url)
        }
    }

    /// Whether the node may fetch public addresses: only with a contact for site owners.
    pub fn public_web_allowed(&self) -> bool {
        !self.contact_url.is_empty()
    }

    /// Why the node could fetch nothing at all: no contact set, and private networks refused.
    pub fn nothing_reachable(&self) -> Option<String> {
        (!self.public_web_allowed() && !self.allow_private_networks).then(|| {
            "crawling the public web needs a contact for site owners: set fetch.contact_url to a page or \
             a mailto: address where they can reach you (in the config file, as WEFT_FETCH__CONTACT_URL or \
             with --contact); a crawl of loopback or a private network needs none \
             (fetch.allow_private_networks = true)"
                .to_string()
        })
    }

    /// The token robots.txt groups are matched against: the product name without version.
    pub fn robots_token(&self) -> &str {
        let product = self.user_agent.split_whitespace().next().unwrap_or("");
        product.split('/').next().unwrap_or(product)
    }
}

/// How gently hosts are treated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolitenessConfig {
    /// Minimum time between the end of one request to a host and the start of the next, when
    /// robots.txt sets no `Crawl-delay`.
    pub default_delay_ms: u64,
    /// How long a fetched robots.txt is trusted.
    pub robots_cache_secs: u64,
    /// robots.txt bodies are read up to this many bytes (RFC 9309 asks for at least 500 KiB).
    pub robots_max_bytes: u64,
    /// After a 5xx or unreachable robots.txt the host is treated as disallowed; retry after this.
    pub robots_retry_secs: u64,
    /// First backoff after a 429/503 without `Retry-After`; doubles on each repeat.
    pub backoff_initial_secs: u64,
    /// Backoff ceiling, also the cap applied to a `Retry-After` header.
    pub backoff_max_secs: u64,
    /// Transient failures (timeouts, connection errors, 5xx) of one URL before giving up on it.
    pub max_retries: u32,
    /// In a network (p2p on): a host new to this node, or handed back to it, waits this long
    /// before its first request, because the member that owned it may have just asked it.
    pub handover_grace_ms: u64,
}

impl Default for PolitenessConfig {
    fn default() -> Self {
        PolitenessConfig {
            default_delay_ms: 1000,
            robots_cache_secs: 24 * 3600,
            robots_max_bytes: 500 * 1024,
            robots_retry_secs: 600,
            backoff_initial_secs: 30,
            backoff_max_secs: 600,
            max_retries: 3,
            handover_grace_ms: 2000,
        }
    }
}

/// The URL frontier: seen-set sizing, scoring and persistence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrontierConfig {
    /// URLs the seen-set's memory remembers: two Bloom filters of half this each, fixed when
    /// the node starts (~14 MiB at 10M and 1%). A crawl that meets more drops the older half;
    /// a URL met again after that is looked up in the frontier's store (queued or done), so it
    /// is still not queued twice. Larger means fewer of those reads, not a different crawl.
    pub seen_capacity: u64,
    /// Target false-positive rate of the seen-set (a false positive = a new URL skipped).
    pub seen_fp_rate: f64,
    /// How often the seen-set is snapshotted to disk (it is also snapshotted at shutdown, and
    /// a journal covers the time in between).
    pub snapshot_interval_secs: u64,
    /// Known inlinks beyond this add nothing to a URL's score.
    pub inlink_cap: u32,
    /// MiB of the queue store's block cache (fjall): the blocks of queued URLs read lately.
    /// Blocks not cached are read from the files, which the kernel caches, so a small cache
    /// costs a busy crawl little; a larger one keeps filling long into a crawl, memory that
    /// buys reads the kernel answers anyway.
    pub cache_mb: u64,
    /// MiB each of the queue store's six keyspaces may buffer before writing a table (fjall's
    /// memtable). Most of the time only the queue's and the URL records' buffers fill.
    pub write_buffer_mb: u64,
}

impl Default for FrontierConfig {
    fn default() -> Self {
        FrontierConfig {
            seen_capacity: 10_000_000,
            seen_fp_rate: 0.01,
            snapshot_interval_secs: 30,
            inlink_cap: 5,
            cache_mb: 8,
            write_buffer_mb: 8,
        }
    }
}

/// When the slow reference extractor (Readability.js) gives a second opinion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SecondOpinion {
    /// Never. On the dev set the native extractor beats Readability.js, so this is the default.
    #[default]
    Off,
    /// For low-confidence pages, only while the reference thread is free and the node is not
    /// busy extracting: second opinions never queue up behind the crawl.
    Idle,
    /// For every low-confidence page (queued, within a bounded queue).
    Always,
}

/// Main-content extraction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExtractConfig {
    /// The learned block classifier chooses each page's text over the rules' verdicts; off,
    /// the rules alone do (what builds before the classifier did).
    pub learned: bool,
    pub second_opinion: SecondOpinion,
    /// Pages whose extraction confidence is below this get a second opinion.
    pub second_opinion_below: f32,
    /// A second opinion that takes longer than this is discarded.
    pub second_opinion_budget_ms: u64,
}

impl Default for ExtractConfig {
    fn default() -> Self {
        ExtractConfig {
            learned: true,
            second_opinion: SecondOpinion::Off,
            second_opinion_below: 0.5,
            second_opinion_budget_ms: 10_000,
        }
    }
}

/// Layout learning (the teacher/worker design) and rendering pages that need JavaScript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LayoutsConfig {
    /// Count layout signatures, extract with learned templates, teach new layouts.
    pub enabled: bool,
    /// A layout seen this many times without a template is taught (rendered once, learned).
    pub teach_after: u64,
    /// Headless Chromium instances in the browser pool (started on first use).
    pub browsers: usize,
    /// The Chromium binary (Debian's `chromium` package); when missing, layouts are still
    /// counted and templates from the override file used, but nothing is taught or rendered.
    pub chromium: PathBuf,
    /// Longest one page may take to render.
    pub render_timeout_secs: u64,
    /// Longest a rendered page's request waits for its host's politeness delay.
    pub render_patience_secs: u64,
    /// Pages whose JavaScript score is above this are rendered in the browser ...
    pub render_js_above: f64,
    /// ... and those above this whose static extraction is not valid (too little text).
    pub render_js_maybe_above: f64,
    /// The operator's templates (TOML, `[[template]]` per host); relative to the data dir.
    /// They win over learned ones.
    pub overrides: PathBuf,
    /// Browsers are stopped after this many seconds without a render (and started again on
    /// the next need): a node whose hosts are static holds no Chromium.
    pub browser_idle_secs: u64,
    /// A browser is restarted after rendering this many pages (0: never) ...
    pub browser_restart_renders: u32,
    /// ... or once its processes hold more than this many MiB (0: never): Chromium's memory
    /// grows with what it has rendered, and a node runs for months.
    pub browser_restart_mb: u64,
    /// Subresource requests (scripts, stylesheets, XHRs) answered per render; the rest fail
    /// in the browser. Images, fonts, media and favicons are always refused.
    pub max_subresources: usize,
    /// Learned templates and "this host needs JavaScript" decisions are checked again after
    /// this many days (the teacher re-learns a template; one static fetch decides whether the
    /// host still needs the browser).
    pub decision_ttl_days: u64,
    /// Entries of a host's change log (layout and URL-scheme changes) are kept this many days.
    pub change_log_days: u64,
    /// A page whose generic extraction is less sure than this (0–1) queues its layout for the
    /// teacher at the layout's second sighting, before `teach_after`.
    pub teach_below_confidence: f64,
}

impl Default for LayoutsConfig {
    fn default() -> Self {
        LayoutsConfig {
            enabled: true,
            teach_after: 5,
            browsers: 2,
            chromium: PathBuf::from("/usr/lib/chromium/chromium"),
            render_timeout_secs: 20,
            render_patience_secs: 30,
            render_js_above: 0.8,
            render_js_maybe_above: 0.4,
            overrides: PathBuf::from("templates.toml"),
            browser_idle_secs: 120,
            browser_restart_renders: 200,
            browser_restart_mb: 512,
            max_subresources: 30,
            decision_ttl_days: 7,
            change_log_days: 90,
            teach_below_confidence: 0.3,
        }
    }
}

/// The node's storage (the sled database in the data dir) and what happens when it fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// Longest one flush to disk may take. A flush that fails or takes longer (data dir
    /// removed, disk full, read-only, I/O errors) stops the node with a non-zero exit: nothing
    /// it acknowledged was lost, since acknowledgements follow flushes. Generous on purpose: a
    /// failing flush, a removed or read-only data dir and a full disk are caught at once (an
    /// error, or the data-dir check), so the bound only ends true hangs — while an `fsync` on
    /// a disk busy with another program's writes can take tens of seconds and is no fault.
    pub flush_timeout_secs: u64,
    /// How often the data dir is checked (still there, still the same directory, writable).
    pub check_interval_secs: u64,
    /// MiB of sled's page cache for the node's database (documents, layouts, outcomes). sled's
    /// default is 1 GiB; what is not cached is read from the files, which the kernel caches, so
    /// a small cache costs little on a small box. Issue 37: 64 MiB, then 32; at 8 a crawl of
    /// 31k pages held 398 MiB against 437 at 32, grew +10% after warm-up against +16%, at the
    /// same page rate (side by side, docs/src/benchmarks.md).
    pub cache_mb: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig { flush_timeout_secs: 60, check_interval_secs: 2, cache_mb: 8 }
    }
}

/// The local HTTP API (`/health`, `/status`, `/metrics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    pub enabled: bool,
    /// Bound to loopback by default: the API is for the operator, not the world.
    pub listen: SocketAddr,
    /// Host names the API answers to besides IP addresses and `localhost` (a name the operator
    /// reaches it by, e.g. through a reverse proxy). A request naming any other host is
    /// refused: a web page whose name is made to resolve to 127.0.0.1 (DNS rebinding) cannot
    /// read the API from the operator's browser.
    pub allowed_hosts: Vec<String>,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig { enabled: true, listen: SocketAddr::from(([127, 0, 0, 1], 7700)), allowed_hosts: Vec::new() }
    }
}

/// The search page for people (`/find`, `/find.json`, `/opensearch.xml`). The operator's API
/// serves it too; with `enabled` it also has an address of its own that serves nothing else —
/// read-only, no token, each client address rate-limited — so a household or a LAN can search
/// without reaching the operator's controls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SearchPageConfig {
    /// Off by default.
    pub enabled: bool,
    /// Loopback by default; `0.0.0.0:7701` serves the LAN.
    pub listen: SocketAddr,
    /// Requests a minute one client address may make of that address (a quarter of it, at
    /// least 10, at once).
    pub requests_per_minute: u32,
    /// The longest question taken, in bytes.
    pub max_query_bytes: usize,
    /// Results a page shows.
    pub per_page: usize,
    /// The address browsers and metasearch engines are told to use in `/opensearch.xml`
    /// (`https://search.home.arpa`, behind a reverse proxy); empty: the address a request
    /// reached, over http.
    pub public_url: String,
}

impl Default for SearchPageConfig {
    fn default() -> Self {
        SearchPageConfig {
            // Off: an address of its own is the operator's choice to serve people beyond this
            // machine; the API's address serves the same page meanwhile.
            enabled: false,
            listen: SocketAddr::from(([127, 0, 0, 1], 7701)),
            requests_per_minute: 60,
            max_query_bytes: 512,
            per_page: 10,
            public_url: String::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Logging. The filter comes from `RUST_LOG` (default `info,libp2p_gossipsub=error`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
}

impl Config {
    /// The effective configuration as TOML, as `weft config show` prints it.
    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("the config tree always serializes to TOML")
    }

    /// The keys given that this version ignores (see [`Retired`]), for a warning at start.
    pub fn retired_keys(&self) -> Vec<&'static str> {
        let s = &self.search;
        [
            ("p2p.bootstrap_interval_secs", self.p2p.bootstrap_interval_secs),
            ("search.centroids", s.centroids),
            ("search.summary_interval_secs", s.summary_interval_secs),
            ("search.probes", s.probes),
        ]
        .into_iter()
        .filter(|(_, r)| r.given)
        .map(|(k, _)| k)
        .collect()
    }
}
