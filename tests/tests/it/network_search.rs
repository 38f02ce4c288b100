//! Network search end to end: five real nodes on loopback (real libp2p, the real embedding
//! model, sled and USearch), thirty topics of which each node crawls and indexes six. A query
//! asked at node 0 finds the topic's page through the owners of its best cells, contacting two
//! peers at most. Then three misbehaving members (real libp2p members whose identities put
//! them first among the owners of particular questions' cells on node 0's ring) are asked: one
//! never answers, one dies mid-query, one answers garbage. Each is replaced by an honest owner
//! of its cells: the silent one is not waited for once that owner answered, the others' queries
//! return at once, marked partial, and the garbage peer is penalised.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};
use weft_node::Node;
use weft_p2p::identity::Keypair;
use weft_p2p::placement::{cell_owners, plan, shipped};
use weft_p2p::search::{PageMeta, RemoteHit, SearchReply};
use weft_p2p::{PeerId, Ring};
use weft_simnet::{topic_page, Site, WebServer, TOPICS};

const NODES: usize = 5;
/// Candidate hosts per topic: one owned by the topic's node is picked once the ring is known.
const CANDIDATES: usize = 60;

fn host(topic: usize, j: usize) -> String {
    format!("t{topic}-{j}.test")
}

async fn get(http: &reqwest::Client, api: std::net::SocketAddr, q: &str, k: usize) -> serde_json::Value {
    let query = [("q", q), ("k", &k.to_string())];
    let r = http.get(format!("http://{api}/search")).query(&query).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

/// A bare network member (no crawler, no index) whose queries the test answers by hand.
struct RawPeer {
    handle: weft_p2p::NetworkHandle,
    task: tokio::task::JoinHandle<()>,
    queries: tokio::sync::mpsc::Receiver<weft_p2p::SearchInbound>,
    /// The question it is asked first for.
    vector: Vec<f32>,
}

fn raw_peer(bootstrap: &str, key: Keypair, vector: Vec<f32>) -> RawPeer {
    let p2p = weft_config::P2pConfig {
        enabled: true,
        listen: vec!["/ip4/127.0.0.1/tcp/0".into()],
        bootstrap: vec![bootstrap.to_string()],
        ..Default::default()
    };
    let mut config = weft_p2p::NetworkConfig::from_config(&p2p).unwrap();
    config.allow_private = true;
    let started = weft_p2p::start(key, config).unwrap();
    // URLs handed to this member when the ring changes are acknowledged and forgotten.
    let mut inbound = started.inbound;
    tokio::spawn(async move {
        while let Some(i) = inbound.recv().await {
            if let Some(reply) = i.reply {
                let _ = reply.send(i.urls.len() as u32);
            }
        }
    });
    RawPeer { handle: started.handle, task: started.task, queries: started.queries, vector }
}

impl RawPeer {
    /// The next query for its own question (its vector's).
    async fn its_query(&mut self) -> weft_p2p::SearchInbound {
        loop {
            let q = self.queries.recv().await.expect("a query");
            let cosine: f32 = q.request.vector.iter().zip(&self.vector).map(|(a, b)| a * b).sum();
            if cosine > 0.99 {
                return q;
            }
        }
    }
}

/// Whom node 0 (`me`) asks first for a question (`vector`) on `ring`, as its search does with
/// the default settings and a first wave of one peer: that peer, the cells it is asked for,
/// and its stand-ins (the cells' other owners, in order).
fn asked_first(ring: &Ring, me: &PeerId, vector: &[f32]) -> Option<(PeerId, Vec<u32>, Vec<PeerId>)> {
    let (book, search) = (shipped(), weft_config::SearchConfig::default());
    let owners: Vec<(u32, Vec<PeerId>)> = book
        .nearest(vector, search.nprobe)
        .iter()
        .map(|(c, _)| (*c, cell_owners(ring, book.id(), *c, search.replicas)))
        .collect();
    let (peer, cells) = plan(owners.iter().map(|(c, o)| (*c, o.as_slice())), me, 1, |p| p != me).into_iter().next()?;
    let mut stand_ins: Vec<PeerId> = Vec::new();
    for (_, os) in owners.iter().filter(|(c, _)| cells.contains(c)) {
        for o in os.iter().filter(|o| **o != peer && *o != me) {
            if !stand_ins.contains(o) {
                stand_ins.push(*o);
            }
        }
    }
    Some((peer, cells, stand_ins))
}

/// Whether `hostile` is asked first for `vector` on `ring` — and, when `replaced`, is replaced
/// by an honest member (not one of `all_hostile`) that owns every cell it was asked for, so
/// that the honest answer stands in for all of them.
fn attracts(
    ring: &Ring,
    me: &PeerId,
    vector: &[f32],
    hostile: &PeerId,
    all_hostile: &[PeerId],
    replaced: bool,
) -> bool {
    let Some((peer, cells, stand_ins)) = asked_first(ring, me, vector) else { return false };
    let book = shipped();
    let replicas = weft_config::SearchConfig::default().replicas;
    let whole = |s: &PeerId| {
        !all_hostile.contains(s) && cells.iter().all(|c| cell_owners(ring, book.id(), *c, replicas).contains(s))
    };
    peer == *hostile && (!replaced || stand_ins.first().is_some_and(whole))
}

/// The ed25519 identity numbered `n`: the test's members are drawn from a fixed sequence, so
/// its ring — whom node 0 asks first for each question — is the same in every run. (With random
/// members, some rings left no three misbehaving identities to draw: 100,000 draws found none
/// once in three runs.)
fn seeded_key(n: u64) -> Keypair {
    let mut rng = weft_simnet::rng::Rng(n);
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    Keypair::ed25519_from_bytes(bytes).expect("32 bytes make an ed25519 key")
}

/// The draw [`hostile_identities`] starts at: the first that fits this test's members (fixed
/// identities, fixed questions). Counted from 1 the search costs tens of seconds in a debug
/// build, and the network grows that much older, so the three's probation (as long as the
/// network is old) grows as much. Should the members, the questions or the ring change, the
/// search goes on past it and wraps around to 1.
const FIRST_DRAW: u64 = 24_348;

/// Identities for three misbehaving members and a question each, from `questions` (vectors
/// whose honest answer is node 0's own page), such that on the ring of today's members and the
/// three each is asked first for its question; the first (the silent one) replaced by an honest
/// owner of all its cells, the third also asked first once the second is gone (it dies before
/// the third is asked). Drawn until they do, from a fixed sequence, starting at [`FIRST_DRAW`].
fn hostile_identities(ring: &Ring, me: &PeerId, questions: &[Vec<f32>]) -> Vec<(Keypair, usize)> {
    for draw in (FIRST_DRAW..=100_000).chain(1..FIRST_DRAW) {
        let keys: Vec<Keypair> = (0..3).map(|k| seeded_key(1_000 + 3 * draw + k)).collect();
        let ids: Vec<PeerId> = keys.iter().map(|k| k.public().to_peer_id()).collect();
        let members = ring.members().iter().chain(&ids).map(|m| (*m, ring.vnodes()));
        let all = ring.rebuilt(members);
        let without_dying = all.without(&ids[1]);
        let mut chosen: Vec<usize> = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            let fits = |q: &usize| {
                !chosen.contains(q)
                    && attracts(&all, me, &questions[*q], id, &ids, i == 0)
                    && (i != 2 || attracts(&without_dying, me, &questions[*q], id, &ids, false))
            };
            match (0..questions.len()).find(fits) {
                Some(q) => chosen.push(q),
                None => break,
            }
        }
        if chosen.len() == 3 {
            eprintln!("three misbehaving identities at draw {draw}");
            return keys.into_iter().zip(chosen).collect();
        }
    }
    panic!("no three identities attract three of node 0's questions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_reach_the_nodes_that_hold_the_topic_and_bad_peers_cannot_stall_them() {
    let _network = common::one_network_at_a_time();
    let sites: Vec<Site> = (0..TOPICS.len())
        .flat_map(|t| (0..CANDIDATES).map(move |j| Site::new(&host(t, j)).html("/", &topic_page(&TOPICS[t]))))
        .collect();
    let server = WebServer::start(sites).await.unwrap();
    let dirs: Vec<common::WorkDir> = (0..NODES).map(|_| common::work_dir()).collect();
    let mut bootstrap = Vec::new();
    let (mut nets, mut indexes, mut crawlers, mut apis, mut stops, mut runs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (n, dir) in dirs.iter().enumerate() {
        let mut c = common::member_config(&server, dir.path(), n, bootstrap.clone(), 0);
        c.crawl.max_depth = 0;
        c.p2p.leave_timeout_secs = 5;
        if n == 0 {
            // The asking node contacts at most two peers: the routing has to pick the right one.
            c.search.fanout = 2;
            c.search.min_fanout = 2;
            c.search.fanout_share = 1.0;
        }
        // A fixed identity (see `seeded_key`), where the node looks for it.
        let key = seeded_key(n as u64).to_protobuf_encoding().unwrap();
        std::fs::create_dir_all(dir.path()).unwrap();
        std::fs::write(dir.path().join(weft_p2p::identity::FILE), key).unwrap();
        let node = Node::open(c).unwrap();
        let net = node.network().unwrap().clone();
        tokio::time::timeout(Duration::from_secs(10), net.wait_for(|s| !s.listen_addrs.is_empty())).await.unwrap();
        if n == 0 {
            bootstrap = vec![net.status().listen_addrs[0].clone()];
        }
        indexes.push(node.index().unwrap().clone());
        crawlers.push(node.crawler().clone());
        let (tx, rx) = tokio::sync::watch::channel(false);
        let (api_tx, api_rx) = tokio::sync::oneshot::channel();
        runs.push(tokio::spawn(node.run(weft_node::RunOptions::default(), rx, move |a| {
            let _ = api_tx.send(a);
        })));
        apis.push(api_rx.await.unwrap());
        stops.push(tx);
        nets.push(net);
    }
    common::all_members(&nets.iter().collect::<Vec<_>>(), NODES, Duration::from_secs(60)).await;

    // Topic t lives on node t % 5, on a host that node owns.
    let ring = nets[0].ring();
    let ids: Vec<String> = nets.iter().map(|n| n.peer_id().to_string()).collect();
    let mut page_of: HashMap<usize, (String, usize)> = HashMap::new();
    for t in 0..TOPICS.len() {
        let owner = t % NODES;
        let h = (0..CANDIDATES)
            .map(|j| host(t, j))
            .find(|h| ring.owner(h).is_some_and(|o| o.to_string() == ids[owner]))
            .unwrap();
        page_of.insert(t, (server.url(&h, "/"), owner));
    }
    let seeds: Vec<String> = page_of.values().map(|(u, _)| u.clone()).collect();
    crawlers[0].add_seeds(&seeds).await;
    common::until("every node indexes its six topics", Duration::from_secs(120), || {
        indexes.iter().all(|i| i.status().stored.documents == (TOPICS.len() / NODES) as u64)
    })
    .await;
    // Every page's postings reached its cells' owners, and are searchable by their words there.
    common::until("every node's postings are stored by their owners", Duration::from_secs(60), || {
        nets.iter().all(|n| n.status().postings.backlog == 0)
            && indexes.iter().all(|i| i.cells().unwrap().words_current())
    })
    .await;

    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    // The first question node 0 sends: routed like the rest, but not held to the hedge and the
    // deadline. Its first exchange with each peer took 60–130 ms here on a quiet machine and
    // ~400 ms with a build beside (debug build, five nodes on two cores), where the next ones
    // took 3–10 ms: past the 300 ms hedge, node 0 rightly asked more peers. The questions below
    // are held to both.
    let v = get(&http, apis[0], TOPICS[1].question, 5).await;
    assert_eq!(v["hits"][0]["url"].as_str(), Some(page_of[&1].0.as_str()), "{v:#}");
    let hedge_ms = weft_config::Config::default().search.hedge_ms as f64;
    let deadline_ms = weft_config::Config::default().search.deadline_ms as f64;
    for (t, topic) in TOPICS.iter().enumerate() {
        let (url, owner) = &page_of[&t];
        let mut v = get(&http, apis[0], topic.question, 5).await;
        // A question that took over twice the deadline spent a whole deadline outside the wait
        // for peers (embedding the query, searching its own index): the asking process was
        // starved of CPU, and so, likely, were its peers. Seen once in CI (2.6 s for an 800 ms
        // deadline, a peer's answer at 701 ms where they take 3–10 ms), with another test
        // binary beside the five nodes on two cores. Such a question is asked once more; a
        // second partial answer fails below.
        if v["partial"] == true && v["took_ms"].as_f64().unwrap() > 2.0 * deadline_ms {
            eprintln!("{}: starved ({} ms), asked again: {v:#}", topic.slug, v["took_ms"]);
            v = get(&http, apis[0], topic.question, 5).await;
        }
        let top = &v["hits"][0];
        assert_eq!(top["url"].as_str(), Some(url.as_str()), "{}: {v:#}", topic.slug);
        // Answered by its node, or by a node holding its postings (the owner of one of its
        // cells: the asker itself, or a peer it asked). With five members and three owners a
        // cell, any three members hold every cell: the asker and the two it asks.
        let doc = weft_index::DocId::of_url(url);
        let holds = |n: usize| n == *owner || indexes[n].cells().is_some_and(|c| c.provenance(&doc).unwrap().is_some());
        let holders: Vec<&str> = (0..NODES).filter(|n| holds(*n)).map(|n| ids[n].as_str()).collect();
        assert!(
            holders.contains(&top["peer"].as_str().unwrap()),
            "{}: answered by {} of {holders:?}",
            topic.slug,
            top["peer"]
        );
        // What the page says of itself crosses the network with it.
        assert_eq!(top["author"], "Topic Web Editors", "{v:#}");
        assert_eq!(top["published"], "2026-03-01T09:00:00+00:00", "{v:#}");
        assert_eq!(v["scope"], "network");
        assert_eq!(v["partial"], false, "{v:#}");
        // Where the time went: each part measured, none longer than the whole.
        let part = |k: &str| v["timings"][k].as_f64().unwrap();
        let took = v["took_ms"].as_f64().unwrap();
        for k in ["embed_ms", "local_ms", "network_ms"] {
            assert!(part(k) > 0.0 && part(k) <= took, "{k}: {v:#}");
        }
        assert!(part("embed_ms") + part("network_ms") <= took, "{v:#}");
        let contacted: Vec<&str> =
            v["network"]["contacted"].as_array().unwrap().iter().filter_map(|p| p.as_str()).collect();
        // Two peers at most, unless one of the first two had not answered by the hedge (then
        // the next is asked, as it should be): ~1 in 60 questions here, when the machine is
        // loaded by a build and another test binary beside the five nodes.
        let slow = |peer: &str| {
            let answered = v["network"]["answered"].as_array().unwrap().iter().find(|a| a[0] == peer);
            answered.is_none_or(|a| a[2].as_f64().unwrap() >= hedge_ms)
        };
        let hedged = contacted.iter().take(2).filter(|p| slow(p)).count();
        assert!(contacted.len() <= 2 + hedged, "{}: contacted {contacted:?}: {v:#}", topic.slug);
        // Each peer asked was chosen as an owner of the question's best cells.
        let by_cell: Vec<&str> =
            v["network"]["by_cell"].as_array().into_iter().flatten().filter_map(|c| c[0].as_str()).collect();
        assert!(contacted.iter().take(2).all(|p| by_cell.contains(p)), "{}: {v:#}", topic.slug);
    }
    // scope=local: node 0's own index only.
    let r = http
        .get(format!("http://{}/search", apis[0]))
        .query(&[("q", TOPICS[1].question), ("scope", "local")])
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["scope"], "local");
    assert!(v["hits"].as_array().unwrap().iter().all(|h| h["peer"] == ids[0].as_str()), "{v:#}");
    // Topic 1 was crawled by node 1: node 0 holds it only if it owns one of its cells.
    let held = indexes[0].cells().unwrap().provenance(&weft_index::DocId::of_url(&page_of[&1].0)).unwrap().is_some();
    let first = v["hits"][0]["url"].as_str() == Some(page_of[&1].0.as_str());
    assert_eq!(first, held, "topic 1 is on node 0 through its postings only: {v:#}");

    // Three misbehaving members, each the owner node 0 asks first for the cells of one of its
    // own topics' questions (their honest answer is in node 0's own index, whoever is asked);
    // the silent one with an honest owner of all its cells to stand in for it.
    let own: Vec<usize> = (0..TOPICS.len()).filter(|t| t % NODES == 0).collect();
    let mut vectors = Vec::new();
    for t in &own {
        vectors.push(indexes[0].embed_query(TOPICS[*t].question).await.unwrap());
    }
    let me: PeerId = ids[0].parse().unwrap();
    let identities = hostile_identities(&nets[0].ring(), &me, &vectors);
    let mut peers = Vec::new();
    let mut topic_of = Vec::new();
    for (key, q) in identities {
        peers.push(raw_peer(&bootstrap[0], key, vectors[q].clone()));
        topic_of.push(own[q]);
    }
    // They are members after their probation (as long as the network is old, at most five
    // minutes): only members are asked.
    let probation = Duration::from_secs(weft_p2p::roster::PROBATION + 60);
    common::until("the three are members", probation, || nets[0].status().members.len() == NODES + 3).await;
    // Node 0's ring is the one they were drawn for (every member at full weight: the network is
    // younger than an admission step).
    let ring = nets[0].ring();
    let hostile: Vec<PeerId> = peers.iter().map(|p| p.handle.peer_id()).collect();
    for (i, (p, id)) in peers.iter().zip(&hostile).enumerate() {
        assert!(attracts(&ring, &me, &p.vector, id, &hostile, i == 0), "{id} is not asked first on node 0's ring");
    }
    let (silent_t, dying_t, garbage_t) = (topic_of[0], topic_of[1], topic_of[2]);
    let (silent_q, dying_q, garbage_q) =
        (TOPICS[silent_t].question, TOPICS[dying_t].question, TOPICS[garbage_t].question);
    let mut garbage = peers.pop().unwrap();
    let mut dying = peers.pop().unwrap();
    let mut silent = peers.pop().unwrap();
    let deadline = Duration::from_millis(weft_config::SearchConfig::default().deadline_ms);
    let first_asked = |v: &serde_json::Value| v["network"]["contacted"][0].as_str().unwrap_or_default().to_string();

    // Silent: takes the query and never answers. Past the hedge an honest owner of its cells is
    // asked; once it has answered for all of them the silent one is not waited for: the answer
    // is whole, before the deadline.
    let silent_id = silent.handle.peer_id().to_string();
    let holder = tokio::spawn(async move {
        let q = silent.its_query().await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        drop(q);
        silent
    });
    let started = Instant::now();
    let v = get(&http, apis[0], silent_q, 5).await;
    let took = started.elapsed();
    assert_eq!(first_asked(&v), silent_id, "{v:#}");
    assert_eq!(v["hits"][0]["url"].as_str(), Some(page_of[&silent_t].0.as_str()), "{v:#}");
    assert!(v["network"]["superseded"].as_array().unwrap().iter().any(|p| p == silent_id.as_str()), "{v:#}");
    assert_eq!(v["partial"], false, "its cells were answered for: {v:#}");
    assert!(took < deadline, "took {took:?}: waited for the silent peer");
    let _silent = holder.await.unwrap();

    // Dying: its process goes away with the query in hand. The query does not wait for the
    // deadline: the closed connection fails the request and an honest owner is asked.
    let dying_id = dying.handle.peer_id().to_string();
    let killer = tokio::spawn(async move {
        let _q = dying.its_query().await;
        dying.handle.stop();
        dying.task.abort();
    });
    let started = Instant::now();
    let v = get(&http, apis[0], dying_q, 5).await;
    let took = started.elapsed();
    killer.await.unwrap();
    assert_eq!(first_asked(&v), dying_id, "{v:#}");
    assert_eq!(v["hits"][0]["url"].as_str(), Some(page_of[&dying_t].0.as_str()), "{v:#}");
    assert_eq!(v["partial"], true, "{v:#}");
    assert!(took < deadline + Duration::from_millis(700), "took {took:?}");
    let failed = v["network"]["failed"].as_array().unwrap();
    assert!(failed.iter().any(|f| f[0] == dying_id.as_str()), "{v:#}");

    // Garbage: answers with a non-cosine score and a javascript: URL. Ignored, penalised, and
    // not asked again.
    let garbage_id = garbage.handle.peer_id().to_string();
    let liar = tokio::spawn(async move {
        let q = garbage.its_query().await;
        let bad = RemoteHit {
            page: PageMeta { url: "javascript:alert(1)".into(), title: "Best result".into(), ..Default::default() },
            snippet: "trust me".into(),
            score: 7.5,
            chunk: 0,
            simhash: None,
            aliases: Vec::new(),
            ..Default::default()
        };
        let _ = q.reply.send(SearchReply::Hits(vec![bad]));
        garbage
    });
    let v = get(&http, apis[0], garbage_q, 5).await;
    let _garbage = liar.await.unwrap();
    assert_eq!(first_asked(&v), garbage_id, "{v:#}");
    assert_eq!(v["hits"][0]["url"].as_str(), Some(page_of[&garbage_t].0.as_str()), "{v:#}");
    assert!(v["hits"].as_array().unwrap().iter().all(|h| h["url"] != "javascript:alert(1)"));
    let failed = v["network"]["failed"].as_array().unwrap();
    assert!(failed.iter().any(|f| f[0] == garbage_id.as_str() && f[1].as_str().unwrap().contains("garbage")), "{v:#}");
    let status = nets[0].status().search;
    assert_eq!(status.bad_replies, 1);
    assert_eq!(status.penalised_peers, 1);
    let v = get(&http, apis[0], garbage_q, 5).await;
    let contacted = v["network"]["contacted"].as_array().unwrap();
    assert!(contacted.iter().all(|p| p != garbage_id.as_str()), "a penalised peer is not asked: {v:#}");
    assert_eq!(v["hits"][0]["url"].as_str(), Some(page_of[&garbage_t].0.as_str()));

    for tx in stops.iter().rev() {
        let _ = tx.send(true);
    }
    for run in runs {
        run.await.unwrap().unwrap();
    }
}
