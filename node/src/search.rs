//! Search, as the user and the other nodes see it.
//!
//! - [`Searcher::search`]: a query in plain words. The question thread embeds it once; with
//!   `scope = local` only this node's index answers; with `scope = network` (the default in a
//!   network) the vector also goes to the peers that hold its neighbourhood (`weft_p2p` picks
//!   the owners of its best cells, asks them in parallel, hedges and stops at the deadline),
//!   and their answers are merged with this node's own: by score, one result per URL, near
//!   duplicates folded by SimHash.
//! - [`answer_queries`]: other nodes' queries, checked and answered from the local index.

use crate::indexing::{IndexService, SearchError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Instant;
use weft_config::SearchConfig;
use weft_index::PeerName;
use weft_index::{Hit, PageMeta};
use weft_p2p::search::{check_request, flatten, merge_ranked, RemoteHit, SearchReply, SearchRequest, MAX_K};
use weft_p2p::{NetworkHandle, SearchInbound};

/// Titles and snippets sent to other nodes are cut to these sizes (the receiver's limits).
const MAX_TITLE_BYTES: usize = 1000;
const MAX_SNIPPET_BYTES: usize = 4000;
const MAX_ALIASES: usize = 32;
const MAX_AUTHOR_BYTES: usize = weft_p2p::search::MAX_AUTHOR_BYTES;

/// Which index answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This node's index only.
    Local,
    /// This node's and the peers' most likely to hold similar content.
    #[default]
    Network,
}

/// How results are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// By meaning and by the query's words, fused (`index.hybrid`, the default).
    #[default]
    Hybrid,
    /// By meaning alone: the cosine order, on every node asked.
    Dense,
}

/// One result, its document's id and the node that holds it (`None` for a node outside any
/// network).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiHit {
    /// The document's id (`GET /documents/{id}` on the node that holds it): a hash of the
    /// URL, the same on every node.
    pub id: String,
    /// What the results are ordered by ([`Hit::rank_score`]): the cosine (`score`) plus the
    /// share of the words' rank (`lexical_rank`), so the figures a reader sees go down the
    /// list.
    #[serde(default)]
    pub rank_score: f32,
    #[serde(flatten)]
    pub hit: Hit,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PeerName>,
}

impl ApiHit {
    pub fn new(hit: Hit, peer: Option<PeerName>) -> ApiHit {
        ApiHit { id: weft_index::DocId::of_url(&hit.page.url).hex(), rank_score: hit.rank_score(), hit, peer }
    }
}

/// How a network search went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetworkReport {
    /// This node's peer id (its own results carry it).
    pub peer_id: PeerName,
    pub members: usize,
    /// Peers worth asking: the owners of the question's best cells.
    pub candidates: usize,
    /// Peers asked, in order (hedges included).
    pub contacted: Vec<PeerName>,
    /// The peers chosen as owners of the question's best cells, each with those cells, in the
    /// order asked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_cell: Vec<(PeerName, Vec<u32>)>,
    /// Peers that answered: id, results, milliseconds.
    pub answered: Vec<(PeerName, usize, f64)>,
    /// Peers that did not, and why.
    pub failed: Vec<(PeerName, String)>,
    /// Peers not waited for: silent past the hedge when other owners had answered for all the
    /// cells they were asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<PeerName>,
}

/// The body of a `/search` answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchResponse {
    pub query: String,
    pub k: usize,
    pub took_ms: f64,
    #[serde(default)]
    pub scope: Scope,
    /// A peer that was asked did not answer in time (or at all): results may be missing.
    #[serde(default)]
    pub partial: bool,
    pub hits: Vec<ApiHit>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkReport>,
    /// Where `took_ms` went.
    #[serde(default)]
    pub timings: Timings,
}

/// Where a search's time went, in milliseconds: embedding the question, then this node's own
/// search and the network's (side by side; the network's is 0 for a local search). What is
/// left of `took_ms` is fusing the answers and waiting for a thread.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Timings {
    pub embed_ms: f64,
    pub local_ms: f64,
    pub network_ms: f64,
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// `f`'s output and the milliseconds from `since` to it.
async fn timed<T>(since: Instant, f: impl std::future::Future<Output = T>) -> (T, f64) {
    let out = f.await;
    (out, ms_since(since))
}

/// Answers searches for the API.
pub struct Searcher {
    index: Arc<IndexService>,
    network: Option<NetworkHandle>,
    config: SearchConfig,
    max_distance: u32,
}

fn cut(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// A local hit as sent to another node (cut to the receiver's limits).
pub fn to_remote(h: Hit) -> RemoteHit {
    let page = h.page;
    RemoteHit {
        page: PageMeta {
            title: cut(&page.title, MAX_TITLE_BYTES),
            url: page.url,
            author: page.author.map(|a| cut(&a, MAX_AUTHOR_BYTES)),
            // Documents stored before dates were checked may hold any text: a peer refuses that.
            published: page.published.as_deref().and_then(weft_extract::metadata::normalize_date),
            modified: page.modified.as_deref().and_then(weft_extract::metadata::normalize_date),
            canonical: page.canonical.filter(|c| c.len() <= 2048),
        },
        snippet: cut(&h.snippet, MAX_SNIPPET_BYTES),
        score: h.score,
        chunk: h.chunk,
        simhash: h.simhash,
        aliases: h.aliases.into_iter().filter(|a| a.len() <= 2048).take(MAX_ALIASES).collect(),
        lexical_rank: h.lexical_rank,
        cell: h.cell,
        crawled_by: h.crawled_by,
    }
}

fn from_remote(r: RemoteHit) -> Hit {
    Hit {
        page: r.page,
        snippet: r.snippet,
        score: r.score,
        chunk: r.chunk,
        aliases: r.aliases,
        simhash: r.simhash,
        lexical_rank: r.lexical_rank,
        cell: r.cell,
        crawled_by: r.crawled_by,
    }
}

impl Searcher {
    pub fn new(
        index: Arc<IndexService>,
        network: Option<NetworkHandle>,
        config: SearchConfig,
        max_distance: u32,
    ) -> Searcher {
        Searcher { index, network, config, max_distance }
    }

    /// The `k` best documents for `text`; `scope` defaults to the network when there is one.
    pub async fn search(
        &self,
        text: &str,
        k: usize,
        scope: Option<Scope>,
        mode: Mode,
    ) -> Result<SearchResponse, SearchError> {
        let started = Instant::now();
        // The words go along unless the asker wants meaning alone (each node still fuses
        // only if its `index.hybrid` is on).
        let words = (mode == Mode::Hybrid).then(|| text.to_string());
        let vector = self.index.embed_query(text).await?;
        let mut timings = Timings { embed_ms: ms_since(started), ..Timings::default() };
        let network = self.network.as_ref().filter(|_| scope != Some(Scope::Local));
        let Some(network) = network else {
            let me = self.network.as_ref().map(|n| PeerName::from(n.peer_id().to_string()));
            let local = Instant::now();
            let hits = self.index.search_query(vector, words, k).await?;
            timings.local_ms = ms_since(local);
            return Ok(SearchResponse {
                query: text.to_string(),
                k,
                took_ms: started.elapsed().as_secs_f64() * 1e3,
                scope: Scope::Local,
                partial: false,
                hits: hits.into_iter().map(|hit| ApiHit::new(hit, me.clone())).collect(),
                network: None,
                timings,
            });
        };
        let me = PeerName::from(network.peer_id().to_string());
        let members = network.status().members.len();
        let request = SearchRequest {
            model: self.index.model().to_string(),
            vector: vector.clone(),
            k: k.min(MAX_K as usize) as u32,
            text: words.as_deref().map(|w| cut(w, weft_p2p::search::MAX_QUERY_TEXT_BYTES)),
        };
        let fanout = self.config.fanout_for(members);
        let asked = Instant::now();
        let ((local, local_ms), (remote, network_ms)) = tokio::join!(
            timed(asked, self.index.search_query(vector, words, k)),
            timed(asked, network.search(request, fanout))
        );
        (timings.local_ms, timings.network_ms) = (local_ms, network_ms);
        let mut answers = vec![(me.clone(), local?.into_iter().map(to_remote).collect::<Vec<_>>())];
        answers.extend(remote.answers.iter().map(|a| (a.peer.clone(), a.hits.clone())));
        // Every node fused its own words and meaning; across nodes the cosines are comparable,
        // and each node's BM25 ranks count as they are.
        let ranked =
            weft_index::fuse(flatten(answers), weft_index::Fusion::DEFAULT, |m| m.hit.score, |m| m.hit.lexical_rank);
        let hits = merge_ranked(ranked, k, self.max_distance)
            .into_iter()
            .map(|m| ApiHit::new(from_remote(m.hit), Some(m.peer)))
            .collect();
        Ok(SearchResponse {
            query: text.to_string(),
            k,
            took_ms: started.elapsed().as_secs_f64() * 1e3,
            scope: Scope::Network,
            partial: remote.partial,
            hits,
            network: Some(NetworkReport {
                peer_id: me,
                members,
                candidates: remote.candidates,
                contacted: remote.contacted,
                by_cell: remote.by_cell,
                answered: remote.answers.iter().map(|a| (a.peer.clone(), a.hits.len(), a.ms)).collect(),
                failed: remote.failed,
                superseded: remote.superseded,
            }),
            timings,
        })
    }
}

/// Answers other nodes' queries from the local index (`None`: this node does not index) until
/// the network stops.
pub async fn answer_queries(index: Option<Arc<IndexService>>, mut queries: tokio::sync::mpsc::Receiver<SearchInbound>) {
    while let Some(q) = queries.recv().await {
        let Some(index) = index.clone() else {
            let _ = q.reply.send(SearchReply::Refused("this node does not index".into()));
            continue;
        };
        if let Err(why) = check_request(&q.request, index.dims(), index.model()) {
            tracing::debug!(peer = %q.from, "query refused: {why}");
            let _ = q.reply.send(SearchReply::Refused(why.to_string()));
            continue;
        }
        tokio::spawn(async move {
            let SearchRequest { vector, k, text, .. } = q.request;
            let reply = match index.search_query(vector, text, k as usize).await {
                Ok(hits) => SearchReply::Hits(hits.into_iter().map(to_remote).collect()),
                Err(e) => {
                    tracing::debug!("query from {} not answered: {e}", q.from);
                    SearchReply::Busy
                }
            };
            let _ = q.reply.send(reply);
        });
    }
}
