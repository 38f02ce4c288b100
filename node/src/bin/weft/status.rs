//! `weft status`: the running node's `/status`, printed for a person or as JSON.

use anyhow::Context;
use std::net::SocketAddr;
use weft_node::Status;

pub(super) async fn fetch_status(addr: SocketAddr) -> anyhow::Result<Status> {
    let url = format!("http://{addr}/status");
    let client = reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(5)).build()?;
    let resp = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("no weft node answers at {url} (is it running? see api.listen)"))?;
    let body = resp.error_for_status()?.bytes().await?;
    Ok(serde_json::from_slice(&body)?)
}

pub(super) fn print_status(status: &Status) {
    let s = &status.crawl;
    println!("state          {}", s.state);
    println!("uptime         {:.0} s", s.uptime_secs);
    println!("pages fetched  {} ({:.2}/s)", s.pages_fetched, s.pages_per_sec);
    println!(
        "requests       {} ({} robots.txt, {} sitemaps, {} redirects)",
        s.requests, s.robots_fetched, s.sitemaps_fetched, s.redirects
    );
    println!("bytes          {}", s.bytes);
    println!(
        "queued         {} ({} in flight) over {} hosts ({} known, {} in memory)",
        s.queued, s.in_flight, s.hosts_with_queue, s.hosts, s.hosts_in_memory
    );
    println!("seen URLs      {} ({} KiB filter)", s.seen_urls, s.seen_bytes / 1024);
    let m = &status.memory;
    let mib = |b: u64| b >> 20;
    println!(
        "memory MiB     {} own: {} anonymous (vectors {}, model {}, seen-set {}, storage {}, other {}) + {} mapped files; browsers {}; heap {} live, {} free",
        mib(m.anonymous + m.file_backed),
        mib(m.anonymous),
        mib(m.vectors + m.cell_vectors),
        mib(m.model),
        mib(m.seen_set),
        mib(m.storage),
        mib(m.other),
        mib(m.file_backed),
        mib(m.browsers),
        mib(m.heap_live),
        mib(m.heap_free)
    );
    println!(
        "disallowed     {}   rate-limited {}   retries {}   gave up {}",
        s.robots_disallowed, s.rate_limited, s.retries, s.gave_up
    );
    if let Some(stall) = &s.stalled {
        println!("stalled        {}", stall.reason);
    }
    println!(
        "adaptive       {} hub revisits ({} not modified), {} URL-scheme changes, {} URLs found when hosts ran dry",
        s.revisits, s.not_modified, s.scheme_changes, s.found_when_idle
    );
    for b in &s.blocked_by_hosts {
        println!("refusing us    {}: {}", b.host, b.blocked.reason);
        for e in &b.blocked.evidence {
            println!("  · {e}");
        }
    }
    let x = |k: &str| s.extraction.get(k).copied().unwrap_or(0);
    println!(
        "extracted      {} articles, {} hubs, {} other; JS needed {}, worth trying {}",
        x("page_type:article"),
        x("page_type:hub"),
        x("page_type:other"),
        x("js:js_required"),
        x("js:try_static_first")
    );
    if let Some(i) = &status.index {
        print_index(i);
    }
    if let Some(n) = &status.network {
        print_network(n);
    }
    println!("errors         {}", s.errors_total);
    for (kind, n) in &s.errors {
        println!("  {kind:<20} {n}");
    }
}

/// The index's lines of `weft status`.
fn print_index(i: &weft_node::IndexStatus) {
    println!(
        "index          {} documents, {} chunks, {} aliases, {} failed; {} KiB of vectors",
        i.stored.documents,
        i.stored.chunks,
        i.stored.aliases,
        i.stored.failed,
        i.stored.vector_memory_bytes / 1024
    );
    println!(
        "  this run     {} pages indexed ({} replaced), {} aliased, {} failed; {} chunks at {:.1}/s; {} waiting",
        i.pages_indexed,
        i.pages_replaced,
        i.pages_aliased,
        i.pages_failed,
        i.chunks_embedded,
        i.chunks_per_sec,
        i.queue
    );
    for (url, reason) in &i.stored.recent_failures {
        println!("  failed       {url}: {reason}");
    }
}

/// The network's lines of `weft status`.
fn print_network(n: &weft_p2p::NetworkStatus) {
    let joining = match &n.joining {
        weft_p2p::Joining::First => "first node (others bootstrap from it)".to_string(),
        weft_p2p::Joining::Connecting => "connecting to bootstrap peers".to_string(),
        weft_p2p::Joining::Joined => "joined".to_string(),
        weft_p2p::Joining::Retrying { attempt, next_in_secs, last_error } => {
            format!("no bootstrap peer answers (attempt {attempt}, next in {next_in_secs} s): {last_error}")
        }
    };
    println!("network        {joining}; peer id {}", n.peer_id);
    println!(
        "  peers        {} connected, {} members; this node owns {:.1}% of the ring{}",
        n.connected_peers,
        n.members.len(),
        n.ring_share * 100.0,
        if n.admitted < 1.0 {
            format!(" (admitted to {:.0}% of its points: a newcomer's share grows over 90 minutes)", n.admitted * 100.0)
        } else {
            String::new()
        }
    );
    for addr in &n.listen_addrs {
        println!("  listening    {addr}");
    }
    let r = &n.reachability;
    println!(
        "  reachable    {} ({} peers direct, {} relayed only; {} hole punches, {} failed)",
        r.summary, r.direct_peers, r.relayed_peers, r.hole_punches, r.hole_punch_failures
    );
    for addr in &r.advertised {
        println!("  advertised   {addr}");
    }
    if r.relay_reservations + r.relay_circuits > 0 || r.relay_circuits_served > 0 {
        println!(
            "  relay        holding {} slots for nodes behind NAT, {} circuits open, {} served",
            r.relay_reservations, r.relay_circuits, r.relay_circuits_served
        );
    }
    let q = &n.search;
    println!(
        "  search       {} queries sent (p50 {:.0} ms, p95 {:.0} ms, {} partial), {} answered, {} busy, {} bad answers",
        q.queries, q.ms_p50, q.ms_p95, q.partial, q.answered, q.busy, q.bad_replies
    );
}
