//! Where else a host's pages may be found once its queue runs dry (seed 000 §4 "Archive
//! Discovery", seed 001): the archive and sitemap links its pages pointed at, and
//! `/sitemap.xml` if it was never tried.
//!
//! Pages' archive hints are remembered per host ([`MAX_ARCHIVES`] at most); when the host's
//! last queued URL is done, [`Discovery::on_idle`] hands them back, with the speculative
//! sitemap the first time, as URLs to offer the frontier — which drops those already seen and
//! holds pages to the host's budget. Archives are offered at depth 1: an archive is near the
//! top of a site wherever it was linked from, so a deep page's archive link is not lost to the
//! depth limit. Each hint is handed back once.

use serde::{Deserialize, Serialize};

/// Archive links remembered per host.
pub const MAX_ARCHIVES: usize = 20;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct HostHints {
    /// Archive links not handed back yet.
    archives: Vec<String>,
    /// Archive links handed back already (never twice).
    given: Vec<String>,
    sitemap_tried: bool,
}

/// What to offer the frontier for an idle host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Archive pages, to queue at depth 1.
    pub archives: Vec<String>,
    /// `/sitemap.xml` of the host, the first time.
    pub sitemap: Option<String>,
}

impl Found {
    pub fn is_empty(&self) -> bool {
        self.archives.is_empty() && self.sitemap.is_none()
    }
}

/// The hints of every host, in sled tree `host_hints` (host → JSON).
#[derive(Clone)]
pub struct Discovery {
    tree: sled::Tree,
}

impl Discovery {
    pub fn open(db: &sled::Db) -> Result<Discovery, sled::Error> {
        Ok(Discovery { tree: db.open_tree("host_hints")? })
    }

    fn get(&self, host: &str) -> Result<HostHints, sled::Error> {
        Ok(self.tree.get(host)?.and_then(|v| serde_json::from_slice(&v).ok()).unwrap_or_default())
    }

    fn put(&self, host: &str, h: &HostHints) -> Result<(), sled::Error> {
        let v = serde_json::to_vec(h).expect("hints serialize");
        self.tree.insert(host, v)?;
        Ok(())
    }

    /// Remembers archive links a page of `host` pointed at (links to other hosts are left to
    /// their own host's hints). Writes only when something is new.
    pub fn note_archives<'a>(&self, host: &str, urls: impl IntoIterator<Item = &'a str>) -> Result<(), sled::Error> {
        let urls: Vec<&str> = urls.into_iter().collect();
        if urls.is_empty() {
            return Ok(());
        }
        let mut h = self.get(host)?;
        let mut changed = false;
        for u in urls {
            if h.archives.len() >= MAX_ARCHIVES {
                break;
            }
            if !h.archives.iter().any(|a| a == u) && !h.given.iter().any(|a| a == u) {
                h.archives.push(u.to_string());
                changed = true;
            }
        }
        if changed {
            self.put(host, &h)?;
        }
        Ok(())
    }

    /// The host's queue ran dry: what to try next (`scheme` is the scheme its pages use).
    pub fn on_idle(&self, host: &str, scheme: &str) -> Result<Found, sled::Error> {
        let mut h = self.get(host)?;
        let sitemap = (!h.sitemap_tried).then(|| format!("{scheme}://{host}/sitemap.xml"));
        if h.archives.is_empty() && sitemap.is_none() {
            return Ok(Found { archives: Vec::new(), sitemap: None });
        }
        h.sitemap_tried = true;
        let archives = std::mem::take(&mut h.archives);
        h.given.extend(archives.iter().cloned());
        if h.given.len() > 4 * MAX_ARCHIVES {
            let excess = h.given.len() - 4 * MAX_ARCHIVES;
            h.given.drain(..excess);
        }
        self.put(host, &h)?;
        Ok(Found { archives, sitemap })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_host_gets_its_archives_and_one_sitemap_probe_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::Config::new().path(dir.path()).temporary(true).open().unwrap();
        let d = Discovery::open(&db).unwrap();
        d.note_archives("a.test", ["https://a.test/archive/2024", "https://a.test/archive/2025"]).unwrap();
        d.note_archives("a.test", ["https://a.test/archive/2024"]).unwrap();
        let f = d.on_idle("a.test", "https").unwrap();
        assert_eq!(f.archives, ["https://a.test/archive/2024", "https://a.test/archive/2025"]);
        assert_eq!(f.sitemap.as_deref(), Some("https://a.test/sitemap.xml"));
        assert!(d.on_idle("a.test", "https").unwrap().is_empty(), "each once");
        d.note_archives("a.test", ["https://a.test/archive/2024", "https://a.test/archives"]).unwrap();
        let f = d.on_idle("a.test", "https").unwrap();
        assert_eq!((f.archives.as_slice(), f.sitemap), (&["https://a.test/archives".to_string()][..], None));
        let many: Vec<String> = (0..50).map(|i| format!("https://b.test/archive/{i}")).collect();
        d.note_archives("b.test", many.iter().map(String::as_str)).unwrap();
        assert_eq!(d.on_idle("b.test", "http").unwrap().archives.len(), MAX_ARCHIVES);
    }
}
