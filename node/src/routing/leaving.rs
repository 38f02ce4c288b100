//! Leaving the network: off the ring first, then every host this node held handed to its next
//! owner with what is queued and what is done on it, and the hand-offs acknowledged before the
//! node exits (within the leave's bound).

use super::hand_offs::give_away;
use super::Journal;
use std::time::{Duration, Instant};
use weft_crawl::Crawler;
use weft_p2p::{NetworkHandle, WireUrl};

/// The first step of leaving, taken as soon as the crawl stops starting requests — not after
/// its in-flight work ends: on a loaded machine that work can outlast the whole stop bound, and
/// the node would exit having handed nothing over (pages never fetched, others fetched twice by
/// the hosts' next owners). The browser takes no further page
/// and the pages it is rendering end (for up to `renders`), this node leaves the ring, and
/// every host it is not requesting right now goes to its new owner (journaled first, like any
/// hand-off). Hosts with a request in flight follow in [`leave`]. Alone, nothing happens.
pub async fn leave_early(crawler: &Crawler, network: &NetworkHandle, journal: &Journal, renders: Duration) {
    if others(network) == 0 {
        return;
    }
    // The crawl loop answers the stop at once; from then on it leases nothing.
    let until = Instant::now() + Duration::from_secs(5);
    while !crawler.stopping() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    crawler.close_renders();
    // While this node still owns their hosts: a render's many requests (scripts, styles) are
    // not to meet the host's next owner's. The links they find are routed as usual.
    let until = Instant::now() + renders;
    while !crawler.hosts_rendering().is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !off_the_ring(network).await {
        return;
    }
    let busy = crawler.busy_hosts();
    let urls = give_away(crawler, network, journal, |host| busy.contains(host), |_| false, Vec::new()).await;
    // The busy hosts' next owners learn now what is done on them: links other members find
    // meanwhile reach them, and without it a page fetched here would be fetched again. Their
    // queues follow in `leave`; pages completed meanwhile are reported done as
    // they complete (their hosts are another member's on the ring now).
    let done: Vec<WireUrl> =
        crawler.done_of(&busy).into_iter().map(|url| WireUrl::new(url, 0, weft_p2p::UrlKind::Done)).collect();
    let told = done.len();
    if !done.is_empty() {
        match weft_crawl::storage::blocking(|| journal.insert(&done)) {
            Ok(()) => network.hand_off(done, Vec::new()),
            Err(e) => tracing::error!("outbox journal: {e}"),
        }
    }
    tracing::info!(
        urls,
        busy = busy.len(),
        done_told = told,
        "left the ring; handed the queue to the remaining members"
    );
}

/// Members other than this node.
fn others(network: &NetworkHandle) -> usize {
    let me = network.peer_id();
    network.ring().members().iter().filter(|m| **m != me).count()
}

/// Announces the leave and waits until this node is off its own ring (at most 5 s): handed
/// off before, URLs would be routed back to it.
async fn off_the_ring(network: &NetworkHandle) -> bool {
    network.leave();
    let me = network.peer_id();
    let mut rings = network.ring_changes();
    let off = rings.wait_for(|ring| !ring.contains(&me));
    if tokio::time::timeout(Duration::from_secs(5), off).await.is_err() {
        tracing::warn!("the network task did not take this node off the ring; staying");
        return false;
    }
    true
}

/// Leaves the network after the crawl stopped ([`leave_early`] did most of it): hands every
/// URL still queued here — requests the stop cut, hosts that were busy, pages still waiting
/// for the browser — to the members that own its host without this node (journaled first),
/// and waits up to `wait` until every hand-off and every batch forwarded meanwhile is
/// acknowledged, the postings and document copies of its last pages are delivered, and the
/// renders in flight are done. Alone, the node keeps its queue: there is
/// nobody to give it to.
pub async fn leave(crawler: &Crawler, network: &NetworkHandle, journal: &Journal, wait: Duration) {
    if others(network) == 0 {
        return;
    }
    crawler.close_renders();
    if !off_the_ring(network).await {
        return;
    }
    let urls = give_away(crawler, network, journal, |_| false, |_| false, Vec::new()).await;
    tracing::info!(urls, "handing the rest of the queue to the remaining members");
    let done = async {
        loop {
            let s = network.status();
            // The postings and document copies of the pages indexed last go out too: a page
            // handed over as done whose copies never left would be lost with this node.
            let sent = weft_crawl::storage::blocking(|| journal.is_empty())
                && s.urls_waiting == 0
                && s.urls_in_flight == 0
                && s.postings.backlog == 0;
            // A render that was running when the queue closed: its page and links are this
            // node's to finish (the links then go out like any other).
            if sent && crawler.rendering() == 0 {
                break true;
            }
            if network.ring().is_empty() {
                // Every other member left too (a whole network stopping): nobody to wait for.
                break false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    match tokio::time::timeout(wait, done).await {
        Ok(true) => tracing::info!("left the network; every handed-off URL was acknowledged"),
        Ok(false) | Err(_) => tracing::warn!(
            unacknowledged = weft_crawl::storage::blocking(|| journal.len()),
            "left the network with URLs unacknowledged; they stay journaled and go out at the next start"
        ),
    }
}
