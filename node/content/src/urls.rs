//! "Why is this page not in the index?" — one URL's story on this node (`GET /urls?url=`):
//! where it stands in the frontier, what happened when it was tried (see
//! [`weft_frontier::outcomes`]), the document the index holds for it, whether another member
//! owns its host, and one sentence that puts them together. And every URL's latest outcome,
//! a page at a time (`GET /outcomes`, `weft export --what urls`).

use serde::{Deserialize, Serialize};
use weft_frontier::{Fate, UrlOutcome, UrlState};

/// What the crawl knows of a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrawlView {
    /// The frontier's host key (`name` or `name:port`).
    pub host: String,
    /// `queued`, `done`, `seen` (met, not queued here) or `unseen`.
    pub frontier: UrlState,
    /// The latest outcome, when this node tried it or refused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<UrlOutcome>,
    /// The peer that owns the host, when it is not this node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// What the index holds for a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexView {
    pub id: String,
    /// `indexed`, `alias` or `failed`.
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub chunks: usize,
    pub fetched_at: String,
}

impl From<weft_index::DocumentMeta> for IndexView {
    fn from(m: weft_index::DocumentMeta) -> IndexView {
        IndexView {
            id: m.id,
            state: m.state,
            alias_of: m.alias_of,
            failure: m.failure,
            chunks: m.chunk_count,
            fetched_at: m.fetched_at,
        }
    }
}

/// One URL's latest outcome, as `/outcomes` lists it and the export writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeLine {
    pub url: String,
    pub outcome: UrlOutcome,
}

/// A page of `/outcomes`, in URL order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OutcomePage {
    pub outcomes: Vec<OutcomeLine>,
    /// The last URL of the page, when more may follow: pass it as `cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Most outcomes one page holds.
pub const MAX_OUTCOMES_PAGE: usize = 1000;

/// Up to `limit` outcomes after the URL `cursor`, in URL order.
pub fn outcomes_page(
    outcomes: &weft_frontier::Outcomes,
    cursor: Option<&str>,
    limit: usize,
) -> Result<OutcomePage, weft_frontier::FrontierError> {
    let mut page = OutcomePage::default();
    for entry in outcomes.after(cursor) {
        let (url, outcome) = entry?;
        if page.outcomes.len() == limit {
            page.next_cursor = page.outcomes.last().map(|l| l.url.clone());
            break;
        }
        page.outcomes.push(OutcomeLine { url, outcome });
    }
    Ok(page)
}

/// The answer of `/urls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlReport {
    /// The URL as this node spells it (normalized).
    pub url: String,
    #[serde(flatten)]
    pub crawl: CrawlView,
    /// `None` when the index holds nothing for it (or the node does not index).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<IndexView>,
    /// The story in one sentence.
    pub explanation: String,
}

impl UrlReport {
    pub fn new(url: String, crawl: CrawlView, document: Option<IndexView>) -> UrlReport {
        let explanation = explain(&crawl, document.as_ref());
        UrlReport { url, crawl, document, explanation }
    }
}

/// One sentence for an operator, the index's word first (it is the end of the pipeline).
pub fn explain(crawl: &CrawlView, document: Option<&IndexView>) -> String {
    if let Some(d) = document {
        match d.state.as_str() {
            "indexed" => return format!("indexed: document {} in {} chunks", d.id, d.chunks),
            "alias" => {
                return format!(
                    "a near duplicate of {}: recorded as its alias, not indexed on its own",
                    d.alias_of.as_deref().unwrap_or("another page")
                )
            }
            _ => return format!("fetched, but indexing failed: {}", d.failure.as_deref().unwrap_or("unknown reason")),
        }
    }
    let owner =
        || crawl.owner.as_ref().map(|p| format!("; its host belongs to peer {p}: ask that node")).unwrap_or_default();
    let retry = |retrying: bool| if retrying { "; it will be retried" } else { "; retries ran out" };
    match &crawl.outcome {
        Some(o) => match &o.fate {
            Fate::Fetched { status } => format!(
                "fetched (HTTP {status}) but not in the index: still in the pipeline, not HTML, or no text worth indexing"
            ),
            Fate::Redirected { status, to } => format!("redirected (HTTP {status}) to {to}"),
            Fate::Status { status, retrying } => format!("the server answered HTTP {status}{}", retry(*retrying)),
            Fate::RateLimited { status } => {
                format!("the host asked to slow down (HTTP {status}); the URL waits in its queue")
            }
            Fate::Failed { error, detail, retrying } => format!("failed ({error}: {detail}){}", retry(*retrying)),
            Fate::Disallowed => "robots.txt disallows it for this crawler".to_string(),
            Fate::Rendering => "waiting for the headless browser (its host's pages need JavaScript)".to_string(),
            Fate::Adopted { holder, fetched_at } => format!(
                "indexed from the copy member {holder} held (fetched by its crawler at {}), not fetched again",
                weft_index::documents::rfc3339(*fetched_at)
            ),
            Fate::Skipped { reason } => {
                let why = match reason.as_str() {
                    "binary" => "it looks like a binary file, not a page",
                    "too_deep" => "it is deeper than crawl.max_depth",
                    "host_budget_exhausted" => "its host's page budget is spent",
                    "host_blocked" => "the operator blocked its host",
                    other => other,
                };
                format!("never fetched: {why}")
            }
        },
        None => match crawl.frontier {
            UrlState::Queued => format!("queued, not fetched yet{}", owner()),
            UrlState::Done => "done without a recorded outcome (crawled before outcomes were kept)".to_string(),
            UrlState::Seen => format!("met by this node but not queued here{}", owner()),
            UrlState::Unseen => format!("never met by this node{}", owner()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crawl(frontier: UrlState, fate: Option<Fate>, owner: Option<&str>) -> CrawlView {
        CrawlView {
            host: "a.test".into(),
            frontier,
            outcome: fate.map(|fate| UrlOutcome { fate, at: 0, attempts: 1 }),
            owner: owner.map(str::to_string),
        }
    }

    #[test]
    fn the_sentence_says_where_the_url_stopped() {
        let doc = |state: &str| IndexView {
            id: "ab".into(),
            state: state.into(),
            alias_of: Some("http://a.test/original".into()),
            failure: Some("inference failed".into()),
            chunks: 3,
            fetched_at: "2026-11-24T00:00:00Z".into(),
        };
        let fetched = crawl(UrlState::Done, Some(Fate::Fetched { status: 200 }), None);
        assert_eq!(explain(&fetched, Some(&doc("indexed"))), "indexed: document ab in 3 chunks");
        assert!(explain(&fetched, Some(&doc("alias"))).contains("near duplicate of http://a.test/original"));
        assert!(explain(&fetched, Some(&doc("failed"))).contains("inference failed"));
        assert!(explain(&fetched, None).contains("not in the index"));
        let cases = [
            (Fate::Disallowed, "robots.txt"),
            (Fate::Redirected { status: 301, to: "http://a.test/new".into() }, "to http://a.test/new"),
            (Fate::Status { status: 404, retrying: false }, "HTTP 404; retries ran out"),
            (Fate::Failed { error: "timeout".into(), detail: "after 30 s".into(), retrying: true }, "will be retried"),
            (Fate::Skipped { reason: "binary".into() }, "binary file"),
            (Fate::Rendering, "browser"),
        ];
        for (fate, expected) in cases {
            let said = explain(&crawl(UrlState::Done, Some(fate), None), None);
            assert!(said.contains(expected), "{said:?} lacks {expected:?}");
        }
        let elsewhere = explain(&crawl(UrlState::Unseen, None, Some("12D3KooW")), None);
        assert_eq!(elsewhere, "never met by this node; its host belongs to peer 12D3KooW: ask that node");
        assert_eq!(explain(&crawl(UrlState::Queued, None, None), None), "queued, not fetched yet");
    }
}
