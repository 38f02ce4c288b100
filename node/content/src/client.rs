//! Reading a running node's local API from another process (`weft export` against a running
//! node, `weft mcp`): the message of an error answer, and the few facts of `/status` an export
//! stamps its records with.

use serde::Deserialize;
use weft_index::PeerName;

/// The message of an API error answer (`{"error": {"message": …}}`), else the body as text.
pub fn error_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

/// What an export needs of a node's `/status` (the rest of it is ignored): who crawled, with
/// which model, and how many documents there are.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct NodeFacts {
    #[serde(default)]
    pub network: Option<NetworkFacts>,
    #[serde(default)]
    pub index: Option<IndexFacts>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NetworkFacts {
    pub peer_id: PeerName,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct IndexFacts {
    #[serde(default)]
    pub model: String,
    /// Flattened into `index`, as `/status` writes it.
    #[serde(flatten)]
    pub stored: StoredFacts,
}

/// The index's stored records: its documents, the aliases of duplicates, the pages that failed.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StoredFacts {
    pub documents: u64,
    pub aliases: u64,
    pub failed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_answer_gives_its_message_and_anything_else_its_text() {
        assert_eq!(error_message(br#"{"error":{"code":"bad_query","message":"q is empty"}}"#), "q is empty");
        assert_eq!(error_message(b"gateway down"), "gateway down");
    }

    #[test]
    fn the_facts_are_read_from_a_status_with_much_else_in_it() {
        let status = r#"{"version":"0.1.0","network":{"peer_id":"12D3Koo","members":[]},
            "index":{"model":"abc","documents":3,"aliases":1,"failed":2,"chunks":9},"crawl":{}}"#;
        let facts: NodeFacts = serde_json::from_str(status).unwrap();
        assert_eq!(facts.network.unwrap().peer_id, "12D3Koo");
        let index = facts.index.unwrap();
        assert_eq!(
            (index.model.as_str(), index.stored.documents + index.stored.aliases + index.stored.failed),
            ("abc", 6)
        );
        let bare: NodeFacts = serde_json::from_str(r#"{"crawl":{}}"#).unwrap();
        assert!(bare.network.is_none() && bare.index.is_none(), "a node without network or index");
    }
}
