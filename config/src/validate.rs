//! Range checks, and errors that name the key, the source and what is allowed.

use crate::Config;
use figment::Figment;
use std::fmt;
use std::path::PathBuf;

/// Name given to the command-line provider, so errors can point at "command-line flag".
pub(crate) const CLI_NAME: &str = "command-line flags";
/// Environment variables with this prefix are configuration; `__` separates nesting levels.
pub const ENV_PREFIX: &str = "WEFT_";

/// Where a configuration value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    /// The environment variable's name, e.g. `WEFT_FETCH__MAX_REDIRECTS`.
    Env(String),
    /// The command-line flag for the key.
    Cli,
    Unknown,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => write!(f, "built-in default"),
            Source::File(p) => write!(f, "TOML file {}", p.display()),
            Source::Env(var) => write!(f, "environment variable {var}"),
            Source::Cli => write!(f, "command-line flag"),
            Source::Unknown => write!(f, "unknown source"),
        }
    }
}

impl Source {
    fn from_metadata(meta: Option<&figment::Metadata>, key: &str) -> Source {
        let Some(meta) = meta else {
            return Source::Unknown;
        };
        if let Some(figment::Source::File(path)) = &meta.source {
            return Source::File(path.clone());
        }
        if meta.name == CLI_NAME {
            return Source::Cli;
        }
        if meta.name.contains("environment") {
            return Source::Env(env_var_for(key));
        }
        if meta.name.contains("Serialized") || meta.name.contains("default") {
            return Source::Default;
        }
        Source::Unknown
    }

    /// The source that supplied `key` (dotted path) in the merged figment.
    pub(crate) fn of(figment: &Figment, key: &str) -> Source {
        Source::from_metadata(figment.find_metadata(key), key)
    }
}

/// `fetch.max_redirects` → `WEFT_FETCH__MAX_REDIRECTS`.
pub fn env_var_for(key: &str) -> String {
    format!("{ENV_PREFIX}{}", key.split('.').map(str::to_ascii_uppercase).collect::<Vec<_>>().join("__"))
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// Dotted key path, e.g. `fetch.max_redirects`.
    pub key: String,
    pub source: Source,
    pub message: String,
}

impl Problem {
    pub(crate) fn from_figment(e: &figment::Error) -> Problem {
        use figment::error::Kind;
        let mut path = e.path.clone();
        let message = match &e.kind {
            Kind::UnknownField(field, expected) => {
                // figment usually includes the field in the path already.
                if path.last() != Some(field) {
                    path.push(field.clone());
                }
                format!("unknown key; expected one of: {}", expected.join(", "))
            }
            Kind::InvalidType(actual, expected) => {
                format!("wrong type: found {actual}, expected {expected}")
            }
            Kind::InvalidValue(actual, expected) => {
                format!("invalid value {actual}, expected {expected}")
            }
            Kind::UnknownVariant(v, expected) => {
                format!("unknown value \"{v}\"; expected one of: {}", expected.join(", "))
            }
            other => other.to_string(),
        };
        let key = if path.is_empty() { "(root)".to_string() } else { path.join(".") };
        Problem { source: Source::from_metadata(e.metadata.as_ref(), &key), key, message }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (from {}): {}", self.key, self.source, self.message)
    }
}

/// The configuration could not be loaded; every problem found is listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError {
    pub problems: Vec<Problem>,
}

impl ConfigError {
    pub(crate) fn single(key: &str, source: Source, message: String) -> ConfigError {
        ConfigError { problems: vec![Problem { key: key.into(), source, message }] }
    }

    pub(crate) fn from_problems(problems: Vec<Problem>) -> ConfigError {
        ConfigError { problems }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid configuration")?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Collects range violations while walking the tree.
struct Checker<'a> {
    source_of: &'a dyn Fn(&str) -> Source,
    problems: Vec<Problem>,
}

impl Checker<'_> {
    fn range<T: PartialOrd + fmt::Display>(&mut self, key: &str, value: T, lo: T, hi: T) {
        if !(value >= lo && value <= hi) {
            self.fail(key, format!("{value} is out of range; allowed {lo} ..= {hi}"));
        }
    }

    fn fail(&mut self, key: &str, message: String) {
        self.problems.push(Problem { key: key.into(), source: (self.source_of)(key), message });
    }
}

const DAY: u64 = 24 * 3600;
const MIB: u64 = 1024 * 1024;

impl Config {
    /// Checks every range; values from defaults alone always pass.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with(|_| Source::Unknown)
    }

    pub(crate) fn validate_with(&self, source_of: impl Fn(&str) -> Source) -> Result<(), ConfigError> {
        let mut c = Checker { source_of: &source_of, problems: Vec::new() };
        self.check_crawl(&mut c);
        self.check_pages(&mut c);
        self.check_network(&mut c);
        self.check_index(&mut c);
        self.check_search_page(&mut c);
        if c.problems.is_empty() {
            Ok(())
        } else {
            Err(ConfigError::from_problems(c.problems))
        }
    }

    /// The data dir, the crawl, fetching, politeness and the frontier.
    fn check_crawl(&self, c: &mut Checker<'_>) {
        if self.data_dir.as_os_str().is_empty() {
            c.fail("data_dir", "must not be empty".into());
        }
        let cr = &self.crawl;
        c.range("crawl.concurrency", cr.concurrency, 1, 4096);
        c.range("crawl.max_depth", cr.max_depth, 0, 1000);
        c.range("crawl.max_hosts_per_source", cr.max_hosts_per_source, 1, 1_000_000);
        c.range("crawl.max_pages_per_host", cr.max_pages_per_host, 1, 1_000_000_000);
        let f = &self.fetch;
        let token_ok = !f.user_agent.is_empty()
            && f.user_agent.is_ascii()
            && !f.user_agent.chars().any(|ch| ch.is_ascii_control())
            && !f.robots_token().is_empty();
        if !token_ok {
            c.fail(
                "fetch.user_agent",
                "must be a non-empty printable ASCII product token such as \"WeftBot/0.1\"".into(),
            );
        }
        if let Err(why) = check_contact(&f.contact_url) {
            c.fail("fetch.contact_url", why);
        }
        c.range("fetch.connect_timeout_ms", f.connect_timeout_ms, 100, 300_000);
        c.range("fetch.read_timeout_ms", f.read_timeout_ms, 100, 600_000);
        c.range("fetch.total_timeout_ms", f.total_timeout_ms, 100, 3_600_000);
        c.range("fetch.max_redirects", f.max_redirects, 0, 20);
        c.range("fetch.max_body_bytes", f.max_body_bytes, 1024, 1024 * MIB);
        let p = &self.politeness;
        c.range("politeness.default_delay_ms", p.default_delay_ms, 0, 3_600_000);
        c.range("politeness.robots_cache_secs", p.robots_cache_secs, 60, 30 * DAY);
        c.range("politeness.robots_max_bytes", p.robots_max_bytes, 1024, 16 * MIB);
        c.range("politeness.robots_retry_secs", p.robots_retry_secs, 1, DAY);
        c.range("politeness.backoff_initial_secs", p.backoff_initial_secs, 1, 3600);
        c.range("politeness.backoff_max_secs", p.backoff_max_secs, p.backoff_initial_secs.max(1), DAY);
        c.range("politeness.max_retries", p.max_retries, 0, 20);
        c.range("politeness.handover_grace_ms", p.handover_grace_ms, 0, 600_000);
        let fr = &self.frontier;
        c.range("frontier.seen_capacity", fr.seen_capacity, 1000, 10_000_000_000);
        c.range("frontier.seen_fp_rate", fr.seen_fp_rate, 1e-6, 0.5);
        c.range("frontier.snapshot_interval_secs", fr.snapshot_interval_secs, 1, 3600);
        c.range("frontier.inlink_cap", fr.inlink_cap, 0, 1000);
        c.range("frontier.cache_mb", fr.cache_mb, 1, 65_536);
        c.range("frontier.write_buffer_mb", fr.write_buffer_mb, 1, 1024);
        c.range("crawl.memory_target_mb", self.crawl.memory_target_mb, 0, 1 << 30);
        c.range("crawl.stall_secs", self.crawl.stall_secs, 1, 86_400);
        c.range("crawl.shutdown_grace_secs", self.crawl.shutdown_grace_secs, 0, 600);
        c.range("crawl.hub_revisit_secs", self.crawl.hub_revisit_secs, 0, 30 * 86_400);
        c.range("crawl.blocked_pause_secs", self.crawl.blocked_pause_secs, 1, 86_400);
        c.range(
            "crawl.blocked_pause_max_secs",
            self.crawl.blocked_pause_max_secs,
            self.crawl.blocked_pause_secs,
            30 * 86_400,
        );
    }

    /// What becomes of a page: the layout tier, storage, extraction and the embedding model.
    fn check_pages(&self, c: &mut Checker<'_>) {
        let la = &self.layouts;
        c.range("layouts.teach_after", la.teach_after, 1, 1_000_000);
        c.range("layouts.browsers", la.browsers, 1, 64);
        c.range("layouts.render_timeout_secs", la.render_timeout_secs, 1, 600);
        c.range("layouts.render_patience_secs", la.render_patience_secs, 1, 3600);
        c.range("layouts.render_js_above", la.render_js_above, 0.0, 1.0);
        c.range("layouts.render_js_maybe_above", la.render_js_maybe_above, 0.0, la.render_js_above);
        c.range("layouts.browser_idle_secs", la.browser_idle_secs, 1, 86_400);
        c.range("layouts.browser_restart_renders", la.browser_restart_renders, 0, 1_000_000);
        c.range("layouts.browser_restart_mb", la.browser_restart_mb, 0, 1 << 20);
        c.range("layouts.max_subresources", la.max_subresources, 0, 10_000);
        c.range("layouts.decision_ttl_days", la.decision_ttl_days, 1, 3650);
        c.range("layouts.change_log_days", la.change_log_days, 1, 36_500);
        c.range("layouts.teach_below_confidence", la.teach_below_confidence, 0.0, 1.0);
        c.range("storage.flush_timeout_secs", self.storage.flush_timeout_secs, 1, 3600);
        c.range("storage.check_interval_secs", self.storage.check_interval_secs, 1, 3600);
        c.range("storage.cache_mb", self.storage.cache_mb, 4, 65_536);
        let ex = &self.extract;
        c.range("extract.second_opinion_below", ex.second_opinion_below, 0.0, 1.0);
        c.range("extract.second_opinion_budget_ms", ex.second_opinion_budget_ms, 100, 600_000);
        let em = &self.embed;
        c.range("embed.dims", em.dims, 1, 8192);
        c.range("embed.max_tokens", em.max_tokens, 16, 8192);
        c.range("embed.threads", em.threads, 0, 256);
        c.range("embed.sessions", em.sessions, 1, 256);
        c.range("embed.batch_size", em.batch_size, 1, 1024);
        c.range("embed.batch_tokens", em.batch_tokens, 64, 1 << 20);
    }

    /// The network and its searches.
    fn check_network(&self, c: &mut Checker<'_>) {
        let p2p = &self.p2p;
        c.range("p2p.vnodes", p2p.vnodes, 1, 10_000);
        c.range("p2p.max_connections", p2p.max_connections, 1, 100_000);
        c.range("p2p.leave_timeout_secs", p2p.leave_timeout_secs, 0, 3600);
        c.range("p2p.relays", p2p.relays, 0, 8);
        c.range("p2p.autonat_timeout_secs", p2p.autonat_timeout_secs, 1, 3600);
        let r = &p2p.relay;
        c.range("p2p.relay.max_reservations", r.max_reservations, 0, 100_000);
        c.range("p2p.relay.max_reservations_per_peer", r.max_reservations_per_peer, 1, 1000);
        c.range("p2p.relay.max_circuits", r.max_circuits, 0, 100_000);
        c.range("p2p.relay.max_circuits_per_peer", r.max_circuits_per_peer, 1, 1000);
        c.range("p2p.relay.max_circuit_secs", r.max_circuit_secs, 10, 86_400);
        c.range("p2p.relay.max_circuit_bytes", r.max_circuit_bytes, 64 << 10, 1 << 34);
        let se = &self.search;
        c.range("search.fanout", se.fanout, 1, 1000);
        c.range("search.min_fanout", se.min_fanout, 1, se.fanout.max(1));
        c.range("search.fanout_share", se.fanout_share, 0.0, 1.0);
        c.range("search.deadline_ms", se.deadline_ms, 50, 60_000);
        c.range("search.hedge_ms", se.hedge_ms, 10, se.deadline_ms.max(10));
        c.range("search.peer_queries_per_sec", se.peer_queries_per_sec, 0.1, 10_000.0);
        c.range("search.replicas", se.replicas, 1, 8);
        c.range("search.nprobe", se.nprobe, 1, 256);
    }

    /// The index.
    fn check_index(&self, c: &mut Checker<'_>) {
        let ix = &self.index;
        c.range("index.chunk_overlap", ix.chunk_overlap, 0.0, 0.5);
        c.range("index.dedup_max_distance", ix.dedup_max_distance, 0, 3);
        c.range("index.connectivity", ix.connectivity, 4, 128);
        c.range("index.expansion_add", ix.expansion_add, 8, 4096);
        c.range("index.expansion_search", ix.expansion_search, 8, 4096);
        c.range("index.disk_quota_mb", ix.disk_quota_mb, 0, 1 << 30);
        c.range("index.quota_check_secs", ix.quota_check_secs, 1, 86_400);
        c.range("index.replicas", ix.replicas, 0, 8);
        c.range("index.replica_quota_mb", ix.replica_quota_mb, 1, 1 << 30);
        c.range("index.compare_copies_secs", ix.compare_copies_secs, 1, 7 * 24 * 3600);
        c.range("index.snapshot_interval_secs", ix.snapshot_interval_secs, 1, 86_400);
        c.range("index.queue", ix.queue, 1, 100_000);
    }

    /// The search page, and its address apart from the API's.
    fn check_search_page(&self, c: &mut Checker<'_>) {
        let sp = &self.search_page;
        c.range("search_page.requests_per_minute", sp.requests_per_minute, 1, 100_000);
        c.range("search_page.max_query_bytes", sp.max_query_bytes, 16, 4096);
        c.range("search_page.per_page", sp.per_page, 1, 50);
        if let Err(why) = check_public_url(&sp.public_url) {
            c.fail("search_page.public_url", why);
        }
        if sp.enabled && self.api.enabled && sp.listen == self.api.listen {
            c.fail("search_page.listen", format!("{} is api.listen already: give the search page its own", sp.listen));
        }
    }
}

/// Where the search page is reached from outside: empty, or an `http(s)://` address with a host
/// and no query (the page's paths are added to it).
fn check_public_url(url: &str) -> Result<(), String> {
    if url.is_empty() {
        return Ok(());
    }
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    let ok = rest.is_some_and(|r| {
        let host = r.split('/').next().unwrap_or("");
        !host.is_empty() && !r.contains(['?', '#', '"', '<', '>', ' ', '\\']) && r.is_ascii()
    });
    if ok {
        Ok(())
    } else {
        Err(format!("{url:?} must be an http:// or https:// address with a host and no query"))
    }
}

/// A contact a site owner can use: empty (none: public addresses are not fetched), an
/// `http(s)://` URL with a host, or a `mailto:` address — and not a placeholder that names
/// nobody (the example domains, the reserved test and documentation names, the old default).
fn check_contact(contact: &str) -> Result<(), String> {
    if contact.is_empty() {
        return Ok(());
    }
    if !contact.is_ascii() || contact.chars().any(|ch| ch.is_ascii_control() || ch == ' ') {
        return Err("must be printable ASCII without spaces".into());
    }
    let lower = contact.to_ascii_lowercase();
    let host = if let Some(address) = lower.strip_prefix("mailto:") {
        match address.split_once('@') {
            Some((user, domain)) if !user.is_empty() && domain.contains('.') => domain.to_string(),
            _ => return Err(format!("{contact:?} is not a mailto: address (mailto:you@example.org)")),
        }
    } else if let Some(rest) = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://")) {
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
        let host = host.split(':').next().unwrap_or("");
        if !host.contains('.') {
            return Err(format!("{contact:?} has no host a site owner could reach"));
        }
        host.to_string()
    } else {
        return Err(format!("{contact:?} must be an https:// page or a mailto: address"));
    };
    let host = host.trim_end_matches('.');
    let placeholder =
        ["example.com", "example.org", "example.net"].iter().any(|d| host == *d || host.ends_with(&format!(".{d}")))
            || [".example", ".invalid", ".test", ".localhost", ".local"].iter().any(|t| host.ends_with(t))
            || lower.contains("github.com/weft-search/weft");
    if placeholder {
        return Err(format!("{contact:?} is a placeholder: give a page or address where site owners reach you"));
    }
    Ok(())
}
