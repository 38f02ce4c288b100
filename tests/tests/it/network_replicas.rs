//! Document copies end to end: five real nodes on loopback (real libp2p, the real model, sled),
//! the default configuration (`index.replicas = 3`). Node A crawls and indexes thirty pages;
//! each goes, signed, to the three holders of its id. Every page is then readable from node C
//! by `GET /documents/{id}` and through `weft mcp`'s `get_document` — from a copy C holds or
//! read from a holder over `/weft/doc/1`. Then A leaves for good, and every page is still
//! readable from every member left; then a holder leaves too, and its copies are repaired onto
//! the ids' new holders.

use crate::common::{self, Member};

use rmcp::model::CallToolRequestParams;
use rmcp::ServiceExt;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_index::DocId;
use weft_p2p::replicas::doc_holders;
use weft_simnet::{topic_page, Site, WebServer, TOPICS};

const NODES: usize = 5;
const CANDIDATES: usize = 60;
/// The default: three copies of each document besides its crawler's.
const COPIES: usize = 3;

fn host(topic: usize, j: usize) -> String {
    format!("r{topic}-{j}.test")
}

async fn member(server: &WebServer, dir: &std::path::Path, n: usize, bootstrap: Vec<String>) -> Member {
    Member::start(server, dir, n, bootstrap, |c| {
        assert_eq!(c.index.replicas, COPIES, "the default configuration");
        // Copies compared with co-holders every 5 s, not every 5 min: the test waits for a round.
        c.index.compare_copies_secs = 5;
    })
    .await
}

trait Holds {
    fn holds_copy(&self, doc: &weft_index::DocId) -> bool;
}

impl Holds for Member {
    fn holds_copy(&self, doc: &weft_index::DocId) -> bool {
        self.index.cells().unwrap().replicas().head(doc).unwrap().is_some()
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Reads document `doc` through `member`'s API; returns the answer and how long it took (ms).
async fn read(http: &reqwest::Client, member: &Member, doc: &DocId) -> (serde_json::Value, f64) {
    let t = Instant::now();
    let r = http.get(format!("http://{}/documents/{}", member.api, doc.hex())).send().await.unwrap();
    let status = r.status();
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(status.is_success(), "{status}: {v:#}");
    (v, t.elapsed().as_secs_f64() * 1e3)
}

/// `weft export --copies` of the node whose API is at `api`, as JSON lines.
async fn export_copies(api: std::net::SocketAddr) -> Vec<serde_json::Value> {
    tokio::task::spawn_blocking(move || {
        use weft_content::export::{self, Jsonl, What};
        let mut source = export::Api::connect(api).unwrap();
        let mut out = Vec::new();
        let listing = weft_index::Listing { host: None, since: None, cursor: None, limit: 100 };
        let done =
            export::run(&mut source, &mut Jsonl::new(&mut out), What::Documents, listing, true, &mut |_| {}).unwrap();
        let lines: Vec<serde_json::Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(done.documents, lines.len() as u64);
        lines
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_are_held_by_three_members_readable_from_any_and_repaired_when_their_crawler_leaves() {
    let _network = common::one_of_several_networks();
    let sites: Vec<Site> = (0..TOPICS.len())
        .flat_map(|t| (0..CANDIDATES).map(move |j| Site::new(&host(t, j)).html("/", &topic_page(&TOPICS[t]))))
        .collect();
    let server = WebServer::start(sites).await.unwrap();
    let dirs: Vec<common::WorkDir> = (0..NODES).map(|_| common::work_dir()).collect();
    let mut members = vec![member(&server, dirs[0].path(), 0, Vec::new()).await];
    let bootstrap = vec![members[0].net.status().listen_addrs[0].clone()];
    for n in 1..NODES {
        members.push(member(&server, dirs[n].path(), n, bootstrap.clone()).await);
    }
    let nets: Vec<_> = members.iter().map(|m| &m.net).collect();
    common::all_members(&nets, NODES, Duration::from_secs(60)).await;
    let a_id = members[0].net.peer_id();

    // Every topic on a host node A owns.
    let a = &members[0];
    let ring = a.net.ring();
    let mut page_of: HashMap<usize, String> = HashMap::new();
    for t in 0..TOPICS.len() {
        let h = (0..CANDIDATES).map(|j| host(t, j)).find(|h| ring.owner(h) == Some(&a_id));
        page_of.insert(t, server.url(&h.unwrap(), "/"));
    }
    a.crawler.add_seeds(&page_of.values().cloned().collect::<Vec<_>>()).await;
    common::until("node A indexes the thirty pages", Duration::from_secs(180), || {
        a.index.status().stored.documents == TOPICS.len() as u64
    })
    .await;
    let docs: Vec<DocId> = (0..TOPICS.len()).map(|t| DocId::of_url(&page_of[&t])).collect();

    // Each document's copies are held by exactly its three holders on the ring (never by A).
    common::until("every document is held by its three holders", Duration::from_secs(60), || {
        docs.iter().all(|d| {
            let want = doc_holders(&ring, &d.hex(), COPIES, &a_id);
            members.iter().filter(|m| m.holds_copy(d)).count() == COPIES
                && want.iter().all(|p| members.iter().any(|m| m.net.peer_id() == *p && m.holds_copy(d)))
        }) && a.net.status().postings.backlog == 0
    })
    .await;
    let bytes: u64 = members.iter().map(|m| m.index.status().cells.unwrap().copy_bytes).sum();
    eprintln!("copies: {} of {} documents, {bytes} bytes in all", COPIES * docs.len(), docs.len());
    for m in &members {
        let p = m.net.status().postings;
        assert_eq!((p.replicas_refused, p.dropped), (0, 0), "{p:?}");
    }

    // Read from C: the document A crawled, from C's copy or from a holder — the same text A has.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let c = &members[1];
    let (mut local_ms, mut peer_ms, mut from_peer) = (Vec::new(), Vec::new(), 0);
    for doc in &docs {
        let (at_a, ms) = read(&http, a, doc).await;
        assert_eq!(at_a["source"]["held"], "local", "{at_a:#}");
        local_ms.push(ms);
        let (at_c, ms) = read(&http, c, doc).await;
        assert_eq!(at_c["text"], at_a["text"], "{at_c:#}");
        assert_eq!(
            (&at_c["url"], &at_c["title"], &at_c["chunk_count"]),
            (&at_a["url"], &at_a["title"], &at_a["chunk_count"])
        );
        assert_eq!(at_c["chunks"], at_a["chunks"], "the same chunks, keys and neighbours");
        assert_eq!(at_c["source"]["crawled_by"].as_str(), Some(a_id.to_string().as_str()), "{at_c:#}");
        match at_c["source"]["held"].as_str() {
            Some("copy") => assert!(c.holds_copy(doc)),
            Some("peer") => {
                assert!(!c.holds_copy(doc));
                peer_ms.push(ms);
                from_peer += 1;
            }
            other => panic!("{other:?}: {at_c:#}"),
        }
    }
    // `weft export --copies` through C's API: its own documents (none) and, marked, the copies
    // it holds — each as A crawled it.
    let held_by_c: Vec<&DocId> = docs.iter().filter(|d| c.holds_copy(d)).collect();
    assert!(!held_by_c.is_empty(), "C holds some copies");
    let lines = export_copies(c.api).await;
    assert_eq!(lines.len(), held_by_c.len(), "one line per copy held");
    for line in &lines {
        assert_eq!(line["provenance"]["held"], "replica", "{line:#}");
        assert_eq!(line["provenance"]["node"].as_str(), Some(a_id.to_string().as_str()), "the crawler: {line:#}");
        let doc = DocId::parse_hex(line["id"].as_str().unwrap()).unwrap();
        assert!(held_by_c.contains(&&doc));
        let (at_a, _) = read(&http, a, &doc).await;
        assert_eq!(line["text"], at_a["text"]);
    }
    let at_a = export_copies(a.api).await;
    assert_eq!(at_a.len(), docs.len(), "A: its own documents, no copies");
    assert!(at_a.iter().all(|l| l["provenance"]["held"] == "primary"), "{:#}", at_a[0]);

    eprintln!(
        "read from C: {from_peer} of {} from another member (median {:.1} ms), own index at A: median {:.1} ms",
        docs.len(),
        median(peer_ms.clone()),
        median(local_ms)
    );
    assert!(from_peer > 0 && from_peer < docs.len(), "C holds some copies, not all");

    // Through `weft mcp` (the MCP server over an in-process pipe, a real MCP client): by URL.
    let t = (0..TOPICS.len()).find(|t| !c.holds_copy(&docs[*t])).unwrap();
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let api = c.api;
    let server_side = tokio::spawn(async move {
        let running = weft_content::mcp::WeftMcp::new(api).unwrap().serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let client = ().serve(client_io).await.expect("initialize");
    let args = serde_json::json!({ "url": page_of[&t] }).as_object().cloned().unwrap();
    let got = client.call_tool(CallToolRequestParams::new("get_document").with_arguments(args)).await.unwrap();
    assert_eq!(got.is_error, Some(false), "{got:?}");
    let doc = got.structured_content.unwrap();
    assert!(TOPICS[t].paragraphs.iter().all(|p| doc["text"].as_str().unwrap().contains(p)), "{doc}");
    assert_eq!(doc["source"]["held"], "peer", "{doc}");
    drop(client);
    server_side.abort();

    // C loses some of its copies (a disk restored from an old backup, say), the member set
    // unchanged, so no push brings them back: comparing with its co-holders, C finds exactly
    // those, asks for them, and they come back as their crawler signed them.
    let lost: Vec<DocId> = docs.iter().filter(|d| c.holds_copy(d)).take(5).copied().collect();
    let replicas = c.index.cells().unwrap().replicas();
    for d in &lost {
        assert!(replicas.withdraw(d, u64::MAX).unwrap());
    }
    let before = c.index.status().cells.unwrap().repair;
    let started = Instant::now();
    common::until("C's lost copies come back from a co-holder", Duration::from_secs(90), || {
        lost.iter().all(|d| c.holds_copy(d))
    })
    .await;
    let after = c.index.status().cells.unwrap().repair;
    let served: u64 = members.iter().map(|m| m.index.status().cells.unwrap().repair.copies_sent_on_request).sum();
    eprintln!(
        "C lost {} copies: back in {:.1} s ({} compare rounds, {} buckets differed, {} asked for, {served} sent on request)",
        lost.len(),
        started.elapsed().as_secs_f64(),
        after.compare_rounds - before.compare_rounds,
        after.buckets_differing - before.buckets_differing,
        after.copies_asked - before.copies_asked
    );
    assert!(after.copies_asked - before.copies_asked >= lost.len() as u64, "{after:?}");
    assert!(served >= lost.len() as u64, "sent by the co-holders asked");
    for d in &lost {
        let (v, _) = read(&http, c, d).await;
        assert_eq!(v["source"]["held"], "copy", "{v:#}");
        let (at_a, _) = read(&http, a, d).await;
        assert_eq!(v["text"], at_a["text"]);
    }

    // A leaves for good: its index goes with it. Its documents' holders stay what they were
    // (a document's holders are its id's owners other than its publisher), and every page
    // stays readable from every member left.
    members.remove(0).stop().await;
    common::until("the others see A gone", Duration::from_secs(30), || {
        members.iter().all(|m| m.net.status().members.len() == NODES - 1)
    })
    .await;
    let ring = members[0].net.ring();
    for d in &docs {
        let holders = doc_holders(&ring, &d.hex(), COPIES, &a_id);
        assert!(holders.iter().all(|p| members.iter().any(|m| m.net.peer_id() == *p && m.holds_copy(d))), "{d:?}");
    }
    let mut read_back = 0;
    for m in &members {
        for doc in &docs {
            let (v, _) = read(&http, m, doc).await;
            assert!(v["text"].as_str().is_some_and(|t| !t.is_empty()), "{v:#}");
            read_back += 1;
        }
    }
    assert_eq!(read_back, docs.len() * (NODES - 1));
    eprintln!("with A gone: {read_back} of {} reads answered", docs.len() * (NODES - 1));

    // Then a holder leaves too: the copies it held are repaired onto the ids' new holders by
    // the holders still there (A, their publisher, is gone), so that each document again has
    // three — with three members left, every member holds every document.
    let gone = (0..members.len()).max_by_key(|i| docs.iter().filter(|d| members[*i].holds_copy(d)).count()).unwrap();
    let held_by_gone = docs.iter().filter(|d| members[gone].holds_copy(d)).count();
    let received_before: u64 =
        (0..members.len()).filter(|i| *i != gone).map(|i| members[i].net.status().postings.replicas_received).sum();
    let started = Instant::now();
    members.remove(gone).stop().await;
    common::until("every document is held by its holders on the new ring", Duration::from_secs(60), || {
        let ring = members[0].net.ring();
        ring.members().len() == NODES - 2
            && docs.iter().all(|d| {
                doc_holders(&ring, &d.hex(), COPIES, &a_id)
                    .iter()
                    .all(|p| members.iter().any(|m| m.net.peer_id() == *p && m.holds_copy(d)))
            })
    })
    .await;
    let moved: u64 = members.iter().map(|m| m.net.status().postings.replicas_received).sum::<u64>() - received_before;
    eprintln!(
        "a holder of {held_by_gone} copies left: repaired in {:.1} s ({moved} copies sent)",
        started.elapsed().as_secs_f64()
    );
    assert!(members.iter().all(|m| docs.iter().all(|d| m.holds_copy(d))), "three members, three copies");
    assert!(moved as usize >= held_by_gone, "each copy it held went to a new holder");
    let repair: Vec<_> = members.iter().map(|m| m.index.status().cells.unwrap().repair).collect();
    let sent: u64 = repair.iter().map(|r| r.copies_sent).sum();
    assert!(sent as usize >= held_by_gone && repair.iter().all(|r| r.rounds > 0), "counted: {repair:?}");
    assert!(repair.iter().map(|r| r.bytes_sent).sum::<u64>() > sent * 100, "{repair:?}");
    for m in &members {
        for doc in &docs {
            let (v, _) = read(&http, m, doc).await;
            assert_eq!(v["source"]["held"], "copy", "{v:#}");
        }
    }
    for m in members {
        m.stop().await;
    }
}

/// A page of `words` words of a made-up text, different on each host (no two are near
/// duplicates), in paragraphs of forty.
fn long_page(host: &str, words: usize) -> String {
    const VOCABULARY: &[&str] = &[
        "river", "granite", "lantern", "orbit", "meadow", "cipher", "harbor", "thistle", "quartz", "violin", "glacier",
        "pepper", "compass", "falcon", "ember", "saddle", "willow", "beacon", "marble", "tundra", "anchor", "cobalt",
        "prairie", "tide", "vessel", "lichen", "summit", "ledger", "hollow", "saffron", "canyon", "drizzle", "furnace",
        "juniper", "kettle", "mosaic", "nectar", "oyster", "parcel", "rampart",
    ];
    // FNV-1a of the host: each host its own sequence.
    let mut state = host.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3));
    let mut body = String::new();
    for p in 0..words / 40 {
        body.push_str("<p>");
        for _ in 0..40 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            body.push_str(VOCABULARY[(state >> 33) as usize % VOCABULARY.len()]);
            body.push(' ');
        }
        body.push_str(&format!("(paragraph {p})</p>\n"));
    }
    format!("<html><head><title>Notes from {host}</title></head><body><article><h1>Notes from {host}</h1>{body}</article></body></html>")
}

/// A publisher within its rights (signed copies of its own hosts' pages) sends more than a
/// holder keeps for one publisher: past a quarter of `index.replica_quota_mb` the holder
/// refuses and counts them, the publisher is not made to send them again and again, and the
/// pages refused are still read — from their crawler.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publisher_past_its_quota_is_refused_counted_and_still_read_from_its_crawler() {
    let _network = common::one_of_several_networks();
    const PAGES: usize = 36;
    let hosts: Vec<String> = (0..400).map(|j| format!("q{j}.test")).collect();
    let sites: Vec<Site> = hosts.iter().map(|h| Site::new(h).html("/", &long_page(h, 1600))).collect();
    let server = WebServer::start(sites).await.unwrap();
    let (da, db) = (common::work_dir(), common::work_dir());
    let a = member(&server, da.path(), 0, Vec::new()).await;
    // A megabyte (not the default 2 GiB), so that a few dozen pages pass a publisher's quarter.
    let b = Member::start(&server, db.path(), 1, a.bootstrap(), |c| c.index.replica_quota_mb = 1).await;
    common::all_members(&[&a.net, &b.net], 2, Duration::from_secs(60)).await;
    let a_id = a.net.peer_id();
    let ring = a.net.ring();
    let pages: Vec<String> =
        hosts.iter().filter(|h| ring.owner(h) == Some(&a_id)).take(PAGES).map(|h| server.url(h, "/")).collect();
    assert_eq!(pages.len(), PAGES);
    a.crawler.add_seeds(&pages).await;
    common::until("node A indexes its pages", Duration::from_secs(300), || {
        a.index.status().stored.documents == PAGES as u64
    })
    .await;
    // Every copy answered (kept or refused once), none left to send again. (A counts a document
    // before its postings and copy are in the outbox: wait for B's tally.)
    common::until("each of A's copies is kept or refused at B", Duration::from_secs(120), || {
        let held = b.index.status().cells.unwrap();
        held.copies + held.copies_refused >= PAGES as u64 && a.net.status().postings.backlog == 0
    })
    .await;
    let held = b.index.status().cells.unwrap();
    let quarter = (1u64 << 20) / 4;
    eprintln!(
        "{PAGES} pages of ~11 KB: B keeps {} copies ({} bytes, a quarter is {quarter}), refused {}",
        held.copies, held.copy_bytes, held.copies_refused
    );
    assert!(held.copies > 0 && held.copies < PAGES as u64, "{held:?}");
    assert!(held.copy_bytes <= quarter, "{held:?}");
    assert_eq!(held.copies + held.copies_refused, PAGES as u64, "each copy kept or refused once: {held:?}");
    let p = a.net.status().postings;
    assert_eq!(p.dropped, 0, "{p:?}");

    // B still answers: a copy it kept from its store, a refused one read from A.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let (mut kept, mut refused) = (0, 0);
    for url in &pages {
        let doc = DocId::of_url(url);
        let (v, _) = read(&http, &b, &doc).await;
        match v["source"]["held"].as_str() {
            Some("copy") => kept += 1,
            Some("peer") => {
                assert_eq!(v["source"]["peer"].as_str(), Some(a_id.to_string().as_str()), "{v:#}");
                refused += 1;
            }
            other => panic!("{other:?}: {v:#}"),
        }
    }
    assert_eq!((kept, refused), (held.copies, held.copies_refused));
    b.stop().await;
    a.stop().await;
}
