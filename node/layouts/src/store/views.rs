//! What the store shows the operator: `weft templates list | show`, `/status`, the dashboard.

use super::{host_prefix, LayoutError, LayoutStore};
use crate::{HostRendering, Learned, SignatureRecord};
use serde::{Deserialize, Serialize};
use weft_extract::template::Level;

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

/// A signature and what is known of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignatureView {
    pub level: Level,
    pub signature: String,
    #[serde(flatten)]
    pub record: SignatureRecord,
}

impl LayoutStore {
    /// Every host with signatures, templates or a rendering decision, and what is known of it.
    pub fn overview(&self) -> Result<Vec<HostSummary>, LayoutError> {
        let mut hosts: std::collections::BTreeSet<String> = self.overrides.keys().cloned().collect();
        for tree in [&self.signatures, &self.templates] {
            for item in tree.iter() {
                let k = item?.0;
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
    pub fn status(&self) -> crate::LayoutsStatus {
        let rendering = self
            .hosts
            .iter()
            .flatten()
            .map(|(_, v)| v)
            .filter(|v| serde_json::from_slice::<HostRendering>(v).is_ok_and(|h| h.render));
        crate::LayoutsStatus {
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
