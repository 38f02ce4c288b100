//! Pages' HTML kept for the browser (`layout.pages`): the teacher's samples and the pages waiting
//! to be rendered, so the browser never fetches what the crawl already has.

use super::{LayoutError, LayoutStore};

/// A page's HTML as the crawl fetched it, kept for the browser.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPage {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

impl StoredPage {
    /// `status` (2 bytes, big-endian), content type length (2 bytes) and bytes, body.
    fn encode(&self) -> Vec<u8> {
        let ct = self.content_type.as_deref().unwrap_or("").as_bytes();
        let ct = &ct[..ct.len().min(u16::MAX as usize)];
        let mut v = Vec::with_capacity(4 + ct.len() + self.body.len());
        v.extend_from_slice(&self.status.to_be_bytes());
        v.extend_from_slice(&(ct.len() as u16).to_be_bytes());
        v.extend_from_slice(ct);
        v.extend_from_slice(&self.body);
        v
    }

    fn decode(v: &[u8]) -> Option<StoredPage> {
        let status = u16::from_be_bytes(v.get(0..2)?.try_into().ok()?);
        let n = u16::from_be_bytes(v.get(2..4)?.try_into().ok()?) as usize;
        let ct = std::str::from_utf8(v.get(4..4 + n)?).ok()?;
        Some(StoredPage {
            status,
            content_type: (!ct.is_empty()).then(|| ct.to_string()),
            body: v.get(4 + n..)?.to_vec(),
        })
    }
}

/// Which of the kept pages: a teacher's sample or a page waiting for the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageRole {
    Sample,
    Render,
}

fn page_key(role: PageRole, url: &str) -> Vec<u8> {
    let mut k = vec![match role {
        PageRole::Sample => b's',
        PageRole::Render => b'r',
    }];
    k.extend_from_slice(url.as_bytes());
    k
}

impl LayoutStore {
    /// Keeps a page's HTML for the browser (see [`StoredPage`]).
    pub fn keep_page(&self, role: PageRole, url: &str, page: &StoredPage) -> Result<(), LayoutError> {
        self.pages.insert(page_key(role, url), page.encode())?;
        Ok(())
    }

    /// A kept page's HTML.
    pub fn page(&self, role: PageRole, url: &str) -> Result<Option<StoredPage>, LayoutError> {
        Ok(self.pages.get(page_key(role, url))?.and_then(|v| StoredPage::decode(&v)))
    }

    pub fn drop_page(&self, role: PageRole, url: &str) -> Result<(), LayoutError> {
        self.pages.remove(page_key(role, url))?;
        Ok(())
    }
}
