//! Semantic placement end to end: five real nodes on loopback (real libp2p, the real model,
//! sled, USearch and tantivy), the default configuration but for the replicas. Node A crawls
//! and indexes thirty pages on thirty subjects; each chunk is published to the owners of its
//! two best cells. Then A stops, and every page is still found from node C: from its own cell
//! store, or — for the pages none of whose cells C owns — from the cells' owners. Then D joins:
//! the cells' postings are handed to their new owners, and every page of A is held by at least
//! two of the members (the replicas) and found from D.

use crate::common::{self, Member};

use std::collections::HashMap;
use std::time::Duration;
use weft_simnet::{topic_page, Site, WebServer, TOPICS};

const NODES: usize = 5;
const CANDIDATES: usize = 60;
/// Owners per cell: fewer than the members, so that no node holds every cell.
const REPLICAS: usize = 2;

fn host(topic: usize, j: usize) -> String {
    format!("c{topic}-{j}.test")
}

async fn member(server: &WebServer, dir: &std::path::Path, n: usize, bootstrap: Vec<String>) -> Member {
    Member::start(server, dir, n, bootstrap, |c| {
        // Two owners per cell among five members: a node holds some cells, not all.
        c.search.replicas = REPLICAS;
    })
    .await
}

trait Holds {
    fn holds(&self, doc: &weft_index::DocId) -> bool;
}

impl Holds for Member {
    fn holds(&self, doc: &weft_index::DocId) -> bool {
        self.index.cells().unwrap().provenance(doc).unwrap().is_some()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_indexed_on_a_node_that_left_are_found_through_their_cells_owners() {
    let _network = common::one_of_several_networks();
    let sites: Vec<Site> = (0..TOPICS.len())
        .flat_map(|t| (0..CANDIDATES).map(move |j| Site::new(&host(t, j)).html("/", &topic_page(&TOPICS[t]))))
        .collect();
    let server = WebServer::start(sites).await.unwrap();
    let dirs: Vec<common::WorkDir> = (0..=NODES).map(|_| common::work_dir()).collect();
    let mut members = vec![member(&server, dirs[0].path(), 0, Vec::new()).await];
    let bootstrap = vec![members[0].net.status().listen_addrs[0].clone()];
    for n in 1..NODES {
        members.push(member(&server, dirs[n].path(), n, bootstrap.clone()).await);
    }
    let nets: Vec<_> = members.iter().map(|m| &m.net).collect();
    common::all_members(&nets, NODES, Duration::from_secs(60)).await;
    let ids: Vec<String> = members.iter().map(|m| m.net.peer_id().to_string()).collect();

    // Every topic on a host node A owns.
    let a = &members[0];
    let ring = a.net.ring();
    let mut page_of: HashMap<usize, String> = HashMap::new();
    for t in 0..TOPICS.len() {
        let h = (0..CANDIDATES).map(|j| host(t, j)).find(|h| ring.owner(h).is_some_and(|o| o.to_string() == ids[0]));
        page_of.insert(t, server.url(&h.unwrap(), "/"));
    }
    a.crawler.add_seeds(&page_of.values().cloned().collect::<Vec<_>>()).await;
    common::until("node A indexes the thirty pages", Duration::from_secs(180), || {
        a.index.status().stored.documents == TOPICS.len() as u64
    })
    .await;
    // Every page's postings reached its cells' owners, and nothing waits at A.
    let docs: Vec<weft_index::DocId> = (0..TOPICS.len()).map(|t| weft_index::DocId::of_url(&page_of[&t])).collect();
    let holders = |ms: &[Member], doc: &weft_index::DocId| ms.iter().filter(|m| m.holds(doc)).count();
    // ... and are searchable by their words there too: the words' index is committed every two
    // seconds, and a question asked before that sees a fresh posting by its vector only, while
    // an older one elsewhere is also ranked by its words (a loaded run lost "tomatoes" to a page
    // whose "red wines" matched the question's words on a node that had committed).
    common::until("node A's postings are stored by their owners", Duration::from_secs(60), || {
        docs.iter().all(|d| holders(&members[1..], d) >= 1)
            && a.net.status().postings.backlog == 0
            && members[1..].iter().all(|m| m.index.cells().unwrap().words_current())
    })
    .await;
    let status = a.net.status().postings;
    eprintln!("A: {} chunks; {status:?}", a.index.status().stored.chunks);
    assert_eq!((status.replicas, status.dropped, status.refused), (REPLICAS, 0, 0), "{status:?}");
    // A few members hold many cells each: every chunk goes to its best two.
    assert_eq!((status.cells_per_chunk, a.net.cells_per_chunk()), (2, 2), "{status:?}");
    for (n, m) in members.iter().enumerate().skip(1) {
        let p = m.net.status().postings;
        eprintln!("node {n} holds {:?} (documents, chunks); {p:?}", m.index.cells().unwrap().counts());
        assert_eq!(p.refused, 0, "{p:?}");
        assert!(p.cells_owned > 0 && p.cells_owned < 256, "{p:?}");
    }

    // A stops: its index goes with it.
    members.remove(0).stop().await;
    common::until("the others see A gone", Duration::from_secs(30), || {
        members.iter().all(|m| m.net.status().members.len() == NODES - 1)
    })
    .await;

    // Asked from C: a page C does not hold can only come from a cell's owner.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let c = &members[1];
    let mut remote = 0;
    for (t, topic) in TOPICS.iter().enumerate() {
        let r = http.get(format!("http://{}/search", c.api)).query(&[("q", topic.question), ("k", "5")]);
        let v: serde_json::Value = r.send().await.unwrap().json().await.unwrap();
        let top = &v["hits"][0];
        assert_eq!(top["url"].as_str(), Some(page_of[&t].as_str()), "{}: {v:#}", topic.slug);
        // The page's metadata crossed the network in its postings.
        assert_eq!(top["title"].as_str(), Some(TOPICS[t].title), "{v:#}");
        assert_eq!(top["author"], "Topic Web Editors", "{v:#}");
        if !c.holds(&docs[t]) {
            let peer = top["peer"].as_str().unwrap();
            let by = members.iter().find(|m| m.net.peer_id().to_string() == peer).expect("a member answered");
            assert!(by.holds(&docs[t]), "{}: answered by a node holding its postings", topic.slug);
            remote += 1;
        }
    }
    eprintln!("from C with A gone: every page found, {remote} from another node's cell store");
    assert!(remote > 0, "C owns some cells, not all: other owners answered");

    // D joins: the cells it gains are handed to it by their former owners, and every page of
    // A is held by at least as many members as a cell has owners.
    // A newcomer to a network minutes old is a member after its probation.
    members.push(member(&server, dirs[NODES].path(), NODES, members[0].bootstrap()).await);
    let probation = Duration::from_secs(weft_p2p::roster::PROBATION + 60);
    common::until("D is a member", probation, || members.iter().all(|m| m.net.status().members.len() == NODES)).await;
    let d = members.last().unwrap();
    common::until("the cells' postings are handed to their new owners", Duration::from_secs(60), || {
        d.net.status().postings.received > 0
            && docs.iter().all(|doc| holders(&members, doc) >= REPLICAS)
            && members.iter().all(|m| m.index.cells().unwrap().words_current())
    })
    .await;
    let p = d.net.status().postings;
    eprintln!("D holds {:?}; {p:?}", d.index.cells().unwrap().counts());
    assert_eq!(p.refused, 0, "{p:?}");
    // What D was handed carries its publisher's signature, and names A as the crawler — not
    // the member that handed it on.
    for doc in docs.iter().filter(|doc| d.holds(doc)) {
        let provenance = d.index.cells().unwrap().provenance(doc).unwrap().unwrap();
        assert_eq!(provenance.publisher, ids[0], "{doc:?}");
    }
    for (t, topic) in TOPICS.iter().enumerate() {
        let r = http.get(format!("http://{}/search", d.api)).query(&[("q", topic.question), ("k", "5")]);
        let v: serde_json::Value = r.send().await.unwrap().json().await.unwrap();
        assert_eq!(v["hits"][0]["url"].as_str(), Some(page_of[&t].as_str()), "{}: {v:#}", topic.slug);
    }
    // A clean stop writes the cell store's vector snapshot beside the node's own, so a start
    // loads the postings' vectors instead of rebuilding them from the documents.
    let holding: Vec<bool> = members.iter().map(|m| m.index.cells().unwrap().counts().1 > 0).collect();
    for m in members {
        m.stop().await;
    }
    assert!(holding.iter().any(|h| *h), "some member holds postings");
    for (dir, holds) in dirs[1..].iter().zip(holding) {
        let snapshot = dir.path().join("cells").join(weft_index::vectors::FILE);
        assert!(snapshot.is_file() || !holds, "no snapshot at {}", snapshot.display());
    }
}
