//! The operator's templates: the override file, read and checked at start; they win for their hosts.

use super::LayoutStore;
use crate::Learned;
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;
use weft_extract::changes::Snapshot;
use weft_extract::template::{Level, Origin, Selectors, Template};

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

impl LayoutStore {
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
    pub(super) fn override_for(&self, host: &str) -> Option<&Learned> {
        self.overrides.get(host).or_else(|| self.overrides.get(host.rsplit_once(':').map_or(host, |(h, _)| h)))
    }
}
