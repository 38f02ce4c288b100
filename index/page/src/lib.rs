//! What a page says of itself — its address, its title, who wrote it, when, and the URL it
//! names canonical — as one shape that travels with the page: in the stored document's view
//! (`weft_index::documents::DocumentMeta`), in a search hit (`weft_index::Hit`), in a peer's
//! answer (`weft_p2p::search::RemoteHit`) and in an exported chunk (the node's `ChunkLine`);
//! [`PageFacts`], the rest of what a whole document says of itself, in the document's view and
//! in its copies on other members.
//!
//! It is its own crate because those four live in crates that must not depend on each other
//! (`weft-p2p` does not link the index's storage and model runtime). Each holder flattens it
//! (`#[serde(flatten)]`), so the JSON and the CBOR on the wire keep the field names they had
//! when each holder spelled the fields out.
//!
//! What is *not* here, and why: the stored record (`weft_index::DocRecord`) keeps its own
//! fields, because postcard lays a record out by field position and the records on disk fix
//! that order; it hands out a `PageMeta` instead. Checking a peer's copy (sizes, dates, URLs)
//! stays in `weft-p2p`, which owns what peers send.
//!
//! [`PeerName`] names the member a page came from (who crawled it, published its chunks,
//! answered for it), in the same crates, as its peer id's text.

use serde::{Deserialize, Serialize};

/// A page's address and what it says of itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageMeta {
    /// The final, normalized URL the page was fetched from.
    pub url: String,
    pub title: String,
    /// The URL the page names as its canonical one (normalized), when it names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    /// Who wrote it, as the page names them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// When the page says it was first published, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    /// When the page says it was last modified, RFC 3339.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
}

/// What a whole document says of its page besides [`PageMeta`]: the description, language,
/// site name and page type — what a stored document's view (`DocumentMeta`) and a document's
/// copy held by other members (`weft_p2p::replicas::Replica`) both carry, flattened the same
/// way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageFacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// `article`, `hub` or `other`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_type: Option<String>,
}

/// A member of the network by its peer id's text (base58), as a page's provenance names it:
/// who crawled a page, published its chunks or answered a question. Serialized as the bare
/// string, so stored records and the API read as before. This node's own postings are
/// published as [`PeerName::this_node`], which is no peer id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PeerName(String);

impl PeerName {
    pub fn new(name: impl Into<String>) -> PeerName {
        PeerName(name.into())
    }

    /// The publisher of this node's own postings in its cell store.
    pub fn this_node() -> PeerName {
        PeerName("self".into())
    }

    pub fn is_this_node(&self) -> bool {
        self.0 == "self"
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Display for PeerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A name reads as its text (its length, its bytes, what it starts with).
impl std::ops::Deref for PeerName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for PeerName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<PeerName> for String {
    fn eq(&self, other: &PeerName) -> bool {
        *self == other.0
    }
}

impl PartialEq<PeerName> for &str {
    fn eq(&self, other: &PeerName) -> bool {
        *self == other.0
    }
}

/// A name hashes as its text, so maps keyed by names are looked up by `&str`.
impl std::borrow::Borrow<str> for PeerName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<String> for PeerName {
    fn from(name: String) -> PeerName {
        PeerName(name)
    }
}

impl From<&str> for PeerName {
    fn from(name: &str) -> PeerName {
        PeerName(name.to_string())
    }
}

impl PartialEq<str> for PeerName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for PeerName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for PeerName {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Holder {
        id: u32,
        #[serde(flatten)]
        page: PageMeta,
        score: f32,
    }

    #[test]
    fn a_holder_flattens_it_and_absent_fields_stay_absent() {
        let h = Holder {
            id: 7,
            page: PageMeta {
                url: "http://a.test/".into(),
                title: "A".into(),
                author: Some("Ada".into()),
                ..Default::default()
            },
            score: 0.5,
        };
        let v = serde_json::to_value(&h).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"id": 7, "url": "http://a.test/", "title": "A", "author": "Ada", "score": 0.5})
        );
        assert_eq!(serde_json::from_value::<Holder>(v).unwrap(), h);
    }

    #[test]
    fn a_peer_name_is_its_bare_string_on_the_wire() {
        let name = PeerName::new("12D3KooWExample");
        assert_eq!(serde_json::to_value(&name).unwrap(), serde_json::json!("12D3KooWExample"));
        assert_eq!(serde_json::from_value::<PeerName>(serde_json::json!("12D3KooWExample")).unwrap(), name);
        assert!(PeerName::this_node().is_this_node() && !name.is_this_node());
    }
}
