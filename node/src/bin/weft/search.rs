//! `weft search`: through the running node's API, or from the data dir when none runs.

use anyhow::Context;
use std::net::SocketAddr;
use weft_node::api::{ApiHit, Scope, SearchResponse};

pub(super) enum SearchVia {
    /// Nothing listens: search the data dir directly.
    NoNode(reqwest::Error),
    /// A node answered with an error.
    Failed(anyhow::Error),
}

pub(super) async fn search_api(
    addr: SocketAddr,
    query: &str,
    k: usize,
    scope: Scope,
) -> Result<SearchResponse, SearchVia> {
    let url = format!("http://{addr}/search");
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .map_err(|e| SearchVia::Failed(e.into()))?;
    let scope = match scope {
        Scope::Local => "local",
        Scope::Network => "network",
    };
    let resp =
        client.get(&url).query(&[("q", query), ("k", &k.to_string()), ("scope", scope)]).send().await.map_err(|e| {
            if e.is_connect() {
                SearchVia::NoNode(e)
            } else {
                SearchVia::Failed(anyhow::Error::new(e).context(format!("asking {url}")))
            }
        })?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| SearchVia::Failed(e.into()))?;
    if !status.is_success() {
        let message = weft_content::client::error_message(&body);
        return Err(SearchVia::Failed(anyhow::anyhow!("the node at {addr} answered {status}: {message}")));
    }
    serde_json::from_slice(&body).map_err(|e| SearchVia::Failed(e.into()))
}

/// Searches the data dir without a running node (sled allows one process per database).
pub(super) fn search_offline(config: &weft_config::Config, query: &str, k: usize) -> anyhow::Result<SearchResponse> {
    let started = std::time::Instant::now();
    let db_path = config.data_dir.join("db");
    anyhow::ensure!(db_path.exists(), "no index at {} (start a node first)", config.data_dir.display());
    let db = weft_frontier::open_db(&db_path, 16 << 20)
        .with_context(|| format!("cannot open {} (is a node running with its API off?)", db_path.display()))?;
    let index = weft_index::LocalIndex::open(&db, &config.data_dir, config.embed.dims, &config.index)?;
    let embedding = std::time::Instant::now();
    let mut embedder = weft_index::Embedder::open(&config.embed, 1)?;
    let vector = embedder.embed(&[query])?.pop().unwrap_or_default();
    // The model's loading counts: an offline search pays it every time.
    let embed_ms = embedding.elapsed().as_secs_f64() * 1e3;
    let searching = std::time::Instant::now();
    let hits = if config.index.hybrid { index.search_hybrid(query, &vector, k)? } else { index.search(&vector, k)? };
    let local_ms = searching.elapsed().as_secs_f64() * 1e3;
    let hits = hits.into_iter().map(|hit| ApiHit::new(hit, None)).collect();
    Ok(SearchResponse {
        query: query.to_string(),
        k,
        took_ms: started.elapsed().as_secs_f64() * 1e3,
        scope: Scope::Local,
        partial: false,
        hits,
        network: None,
        timings: weft_node::api::Timings { embed_ms, local_ms, network_ms: 0.0 },
    })
}

pub(super) fn print_hits(answer: &SearchResponse) {
    if answer.hits.is_empty() {
        println!("no results for {:?}", answer.query);
        return;
    }
    let me = answer.network.as_ref().map(|n| n.peer_id.as_str());
    for (i, api_hit) in answer.hits.iter().enumerate() {
        let hit = &api_hit.hit;
        let title = if hit.page.title.is_empty() { "(untitled)" } else { hit.page.title.as_str() };
        println!("{:>2}. {:.3}  {title}", i + 1, api_hit.rank_score);
        println!("    {}", hit.page.url);
        if let Some(rank) = hit.lexical_rank {
            // The figure above is the sum: say what it is made of when the words added to it.
            println!("    meaning {:.3}, words #{rank}", hit.score);
        }
        let snippet: String = hit.snippet.split_whitespace().collect::<Vec<_>>().join(" ");
        println!("    {snippet}");
        if !hit.aliases.is_empty() {
            println!("    also at: {}", hit.aliases.join(", "));
        }
        match api_hit.peer.as_deref() {
            Some(p) if Some(p) == me => println!("    from this node"),
            Some(p) if me.is_some() => println!("    from peer {}", short_peer(p)),
            _ => {}
        }
    }
    match &answer.network {
        Some(n) => {
            let t = &answer.timings;
            println!(
                "({} results in {:.0} ms (embedding {:.0}, this node {:.0}, the network {:.0}) from this node and {} of {} peers asked; {} members{})",
                answer.hits.len(),
                answer.took_ms,
                t.embed_ms,
                t.local_ms,
                t.network_ms,
                n.answered.len(),
                n.contacted.len(),
                n.members,
                if answer.partial { "; partial: some peers did not answer" } else { "" }
            );
            for (peer, why) in &n.failed {
                println!("  no answer from {}: {why}", short_peer(peer));
            }
        }
        None => println!(
            "({} results in {:.0} ms (embedding {:.0}, searching {:.0}), this node's index)",
            answer.hits.len(),
            answer.took_ms,
            answer.timings.embed_ms,
            answer.timings.local_ms
        ),
    }
}

/// The last characters of a peer id: enough to tell members apart.
fn short_peer(p: &str) -> &str {
    &p[p.len().saturating_sub(8)..]
}
