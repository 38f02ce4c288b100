//! The search page's answer: one page of a network search's results in the shape people and
//! metasearch engines read — `/find.json`'s body, and what `/find` renders. Its field names are
//! a promise (`docs/src/api.md`, "The search page's JSON"): SearXNG's generic JSON engine and
//! scripts map them by name.

use crate::search::SearchResponse;
use serde::{Deserialize, Serialize};
use weft_index::PeerName;

/// Results at most across every page: a search is asked for the results up to the end of the
/// page shown (and one more, to know whether another page follows), never more than this.
pub const MAX_RESULTS: usize = crate::api::MAX_K;

/// One page of results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindAnswer {
    pub query: String,
    /// This page's number, from 1.
    pub page: usize,
    pub per_page: usize,
    /// Whether a next page holds more.
    pub more: bool,
    /// A peer asked did not answer in time: results may be missing.
    pub partial: bool,
    /// Peers asked that did not answer (their ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<PeerName>,
    pub took_ms: f64,
    pub results: Vec<FindResult>,
}

/// One result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FindResult {
    pub title: String,
    /// The page's address: `http://` or `https://` only (anything else a peer sent is dropped).
    pub url: String,
    /// The passage that matched (plain text).
    pub content: String,
    /// When the page says it was published, `YYYY-MM-DD`, if it says.
    pub published_date: Option<String>,
    /// The page's host.
    pub host: String,
    /// The document's id: `/find/doc/{id}` shows the network's stored copy of its text.
    pub id: String,
    /// The node whose index answered, and the node that crawled the page (when another did).
    pub answered_by: Option<PeerName>,
    pub crawled_by: Option<PeerName>,
}

/// A page's address as the page may link it: absolute `http(s)` with a host.
fn web_url(url: &str) -> Option<url::Url> {
    url::Url::parse(url).ok().filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

/// The date part of an RFC 3339 moment (`YYYY-MM-DDThh:mm:ssZ` → `YYYY-MM-DD`).
fn day(moment: &str) -> Option<String> {
    let d = moment.get(..10)?;
    let ok = d.bytes().enumerate().all(|(i, b)| if i == 4 || i == 7 { b == b'-' } else { b.is_ascii_digit() });
    ok.then(|| d.to_string())
}

impl FindAnswer {
    /// Page `page` (from 1) of `per_page` results out of `response`, which was asked for
    /// [`results_wanted`] results.
    pub fn from_search(response: SearchResponse, page: usize, per_page: usize) -> FindAnswer {
        let from = (page - 1) * per_page;
        let usable: Vec<FindResult> = response
            .hits
            .into_iter()
            .filter_map(|h| {
                let url = web_url(&h.hit.page.url)?;
                let title = h.hit.page.title.trim();
                Some(FindResult {
                    title: if title.is_empty() { url.as_str().to_string() } else { title.to_string() },
                    host: url.host_str().unwrap_or_default().to_string(),
                    url: url.to_string(),
                    content: h.hit.snippet.clone(),
                    published_date: h.hit.page.published.as_deref().and_then(day),
                    id: h.id,
                    answered_by: h.peer,
                    crawled_by: h.hit.crawled_by,
                })
            })
            .collect();
        let more = usable.len() > from + per_page && from + per_page < MAX_RESULTS;
        let unanswered =
            response.network.map(|n| n.failed.into_iter().map(|(peer, _)| peer).collect()).unwrap_or_default();
        FindAnswer {
            query: response.query,
            page,
            per_page,
            more,
            partial: response.partial,
            unanswered,
            took_ms: response.took_ms,
            results: usable.into_iter().skip(from).take(per_page).collect(),
        }
    }
}

/// How many results to ask the network for to show page `page`: through its end and one more
/// (is there a next page?), at most [`MAX_RESULTS`].
pub fn results_wanted(page: usize, per_page: usize) -> usize {
    (page * per_page + 1).min(MAX_RESULTS)
}

/// The last page there can be.
pub fn last_page(per_page: usize) -> usize {
    MAX_RESULTS.div_ceil(per_page.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{ApiHit, Scope, Timings};
    use weft_index::{Hit, PageMeta};

    fn hit(url: &str, title: &str) -> ApiHit {
        let page = PageMeta {
            url: url.into(),
            title: title.into(),
            published: Some("2024-05-01T10:00:00Z".into()),
            ..Default::default()
        };
        let hit = Hit {
            page,
            snippet: "a passage".into(),
            score: 0.5,
            chunk: 0,
            aliases: Vec::new(),
            simhash: None,
            lexical_rank: None,
            cell: None,
            crawled_by: None,
        };
        ApiHit::new(hit, Some("peer-a".into()))
    }

    fn response(hits: Vec<ApiHit>) -> SearchResponse {
        SearchResponse {
            query: "q".into(),
            k: hits.len(),
            took_ms: 1.0,
            scope: Scope::Local,
            partial: false,
            hits,
            network: None,
            timings: Timings::default(),
        }
    }

    #[test]
    fn a_page_is_its_slice_of_the_results_and_says_whether_another_follows() {
        let hits: Vec<ApiHit> = (0..21).map(|i| hit(&format!("https://a.test/{i}"), &format!("page {i}"))).collect();
        let first = FindAnswer::from_search(response(hits.clone()), 1, 10);
        assert_eq!(first.results.len(), 10);
        assert!(first.more);
        assert_eq!(first.results[0].url, "https://a.test/0");
        assert_eq!(first.results[0].published_date.as_deref(), Some("2024-05-01"));
        assert_eq!(first.results[0].host, "a.test");
        let third = FindAnswer::from_search(response(hits[..21].to_vec()), 3, 10);
        assert_eq!(third.results.len(), 1);
        assert!(!third.more);
        assert_eq!(results_wanted(3, 10), 31);
        assert_eq!(results_wanted(10, 10), MAX_RESULTS);
        assert_eq!(last_page(10), 10);
    }

    #[test]
    fn a_result_that_is_no_web_address_is_dropped_and_an_empty_title_shows_the_address() {
        let hits =
            vec![hit("javascript:alert(1)", "bad"), hit("file:///etc/passwd", "bad"), hit("https://b.test/x", "  ")];
        let answer = FindAnswer::from_search(response(hits), 1, 10);
        assert_eq!(answer.results.len(), 1);
        assert_eq!(answer.results[0].title, "https://b.test/x");
        assert_eq!(answer.results[0].answered_by.as_deref(), Some("peer-a"));
    }
}
