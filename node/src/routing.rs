//! Where discovered URLs go in a network: to this node's frontier when it owns their host on
//! the ring, else to the owner through the URL exchange; and URLs other members send here go
//! into the frontier, acknowledged once they are durable.

use crate::crawler::Crawler;
use weft_frontier::{normalize, Candidate, UrlKind};
use weft_p2p::{Inbound, NetworkHandle, WireUrl};

/// Sends the URLs this node does not own to their owners.
#[derive(Clone)]
pub struct Router {
    network: NetworkHandle,
    me: String,
}

impl Router {
    pub fn new(network: NetworkHandle) -> Router {
        let me = network.peer_id().to_string();
        Router { network, me }
    }

    /// Keeps the candidates whose host this node owns and sends the rest to their owners.
    pub fn route(&self, candidates: Vec<Candidate>) -> Vec<Candidate> {
        let ring = self.network.ring();
        let mut mine = Vec::with_capacity(candidates.len());
        let mut theirs = Vec::new();
        for c in candidates {
            let owner = c.url.host_str().map(str::to_ascii_lowercase).and_then(|h| ring.owner(&h).map(str::to_string));
            match owner {
                Some(owner) if owner != self.me => theirs.push(WireUrl {
                    url: c.url.to_string(),
                    depth: c.depth,
                    kind: match c.kind {
                        UrlKind::Page => weft_p2p::UrlKind::Page,
                        UrlKind::Sitemap => weft_p2p::UrlKind::Sitemap,
                    },
                }),
                _ => mine.push(c),
            }
        }
        self.network.send_urls(theirs);
        mine
    }
}

/// Whenever the member set changes, moves the queued URLs of hosts this node no longer owns to
/// their new owners, so that politeness and the robots.txt cache of a host stay on one node.
/// A fetch in flight finishes here. Runs until the network stops.
pub async fn hand_off_on_changes(crawler: Crawler, network: NetworkHandle) {
    let me = network.peer_id().to_string();
    let mut rings = network.ring_changes();
    while rings.changed().await.is_ok() {
        let ring = rings.borrow_and_update().clone();
        let mut hosts = 0usize;
        let given = crawler
            .hand_off(|host| {
                // Frontier hosts carry their port; the ring knows host names.
                let name =
                    url::Url::parse(&format!("http://{host}/")).ok().and_then(|u| u.host_str().map(str::to_string));
                let keep = name.and_then(|n| ring.owner(&n).map(|o| o == me)).unwrap_or(true);
                if !keep {
                    hosts += 1;
                }
                keep
            })
            .await;
        if given.is_empty() {
            continue;
        }
        tracing::info!(
            urls = given.len(),
            hosts,
            members = ring.members().len(),
            "handed queued URLs to their new owners"
        );
        let urls = given
            .into_iter()
            .map(|q| WireUrl {
                url: q.url,
                depth: q.depth,
                kind: match q.kind {
                    UrlKind::Page => weft_p2p::UrlKind::Page,
                    UrlKind::Sitemap => weft_p2p::UrlKind::Sitemap,
                },
            })
            .collect();
        network.send_urls(urls);
    }
}

/// Queues URLs other members sent (their hosts are this node's) and acknowledges them once
/// the frontier has them on disk. Runs until the network stops.
pub async fn receive(crawler: Crawler, mut inbound: tokio::sync::mpsc::Receiver<Inbound>) {
    while let Some(Inbound { urls, reply, .. }) = inbound.recv().await {
        let candidates: Vec<Candidate> = urls
            .into_iter()
            .filter_map(|u| {
                let url = normalize(&u.url, None).ok()?;
                let kind = match u.kind {
                    weft_p2p::UrlKind::Page => UrlKind::Page,
                    weft_p2p::UrlKind::Sitemap => UrlKind::Sitemap,
                };
                Some(Candidate { url, kind, depth: u.depth, redirects: Vec::new() })
            })
            .collect();
        let accepted = crawler.add_owned(candidates).await;
        if let Some(reply) = reply {
            let _ = reply.send(accepted);
        }
    }
}
