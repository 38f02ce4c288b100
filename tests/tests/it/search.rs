//! Crawl → extract → dedup → chunk → embed → index → search, with the real model, over real
//! HTTP on loopback: the topic web's thirty pages, one near-duplicate copy, a restart.

use crate::common;

use std::time::Duration;
use weft_node::Node;
use weft_simnet::{topic_site, topics::topic_page, WebServer, TOPICS};

/// The topic web plus a print view of one article: the same main text under another URL with
/// other chrome around it.
fn site() -> weft_simnet::Site {
    let sourdough = &TOPICS[0];
    let print = topic_page(sourdough)
        .replace("<nav><a href=\"/\">All topics</a></nav>", "<header>Print view</header>")
        .replace("Topic web, a test site of Weft.", "Printed from the topic web.");
    let site = topic_site("topics.test").html("/print/sourdough", &print);
    // The index page links the print view too.
    let weft_simnet::Resource::Html(index) = site.routes["/"].clone() else { unreachable!() };
    let index = index.replace("</ul>", "<li><a href=\"/print/sourdough\">Print: sourdough</a></li></ul>");
    site.html("/", &index)
}

async fn get_json(client: &reqwest::Client, url: String) -> serde_json::Value {
    let resp = client.get(&url).send().await.unwrap();
    serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_topic_question_finds_its_page_first_and_survives_a_restart() {
    // A node with the model: beside a network test it slows that test's 800 ms search deadline.
    let _one = common::one_of_several_networks();
    let server = WebServer::start(vec![site()]).await.unwrap();
    let dir = common::work_dir();
    let c = common::loopback_config(&server, "topics.test", dir.path(), 0);
    let pages = TOPICS.len() + 2; // the topics, the index page, the print view

    let node = common::Running::start(c.clone()).await;
    let api = node.api;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    let status = loop {
        let s = get_json(&client, format!("http://{api}/status")).await;
        let index = &s["index"];
        let done = index["pages_indexed"].as_u64().unwrap_or(0) + index["pages_aliased"].as_u64().unwrap_or(0);
        if s["state"] == "idle" && done == pages as u64 {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "indexing did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let index = &status["index"];
    assert_eq!(index["pages_aliased"], 1, "the print view is a near duplicate: {status}");
    assert_eq!(index["aliases"], 1, "{status}");
    assert_eq!(index["documents"], pages as u64 - 1, "{status}");
    assert_eq!(index["pages_failed"], 0, "{status}");
    assert!(index["chunks"].as_u64().unwrap() >= TOPICS.len() as u64, "{status}");
    assert_eq!(index["chunks"], index["vectors"], "{status}");
    let metrics = client.get(format!("http://{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("weft_index_aliases 1"), "{metrics}");

    // Every question finds its own page first.
    let mut misses = Vec::new();
    for t in TOPICS {
        let q: String = url_encode(t.question);
        let answer = get_json(&client, format!("http://{api}/search?q={q}&k=3")).await;
        let hits = answer["hits"].as_array().unwrap();
        // The score shown is the one the hits are ordered by: the cosine plus the words' share.
        let shown: Vec<f64> = hits.iter().map(|h| h["rank_score"].as_f64().unwrap()).collect();
        assert!(shown.windows(2).all(|w| w[0] >= w[1]), "shown scores go down the list: {answer}");
        for h in hits {
            let words = h["lexical_rank"].as_f64().map_or(0.0, |r| 0.1 / r);
            assert!((h["rank_score"].as_f64().unwrap() - h["score"].as_f64().unwrap() - words).abs() < 1e-4, "{h}");
        }
        let top = hits[0]["url"].as_str().unwrap();
        let want = format!("/t/{}", t.slug);
        let is_print = t.slug == "sourdough" && top.ends_with("/print/sourdough");
        if !top.ends_with(&want) && !is_print {
            misses.push(format!("{:?} → {top} (score {})", t.question, hits[0]["score"]));
        }
        // What the page says of itself comes back with it, dates in RFC 3339 (the modified
        // time is written `2026-04-02 10:30:00` in the page).
        assert_eq!(hits[0]["author"], "Topic Web Editors", "{answer}");
        assert_eq!(hits[0]["published"], "2026-03-01T09:00:00+00:00", "{answer}");
        assert_eq!(hits[0]["modified"], "2026-04-02T10:30:00+00:00", "{answer}");
        assert!(hits[0]["canonical"].as_str().unwrap().ends_with(&format!("/t/{}", t.slug)), "{answer}");
        if t.slug == "sourdough" {
            // One document for both URLs: the canonical one names the other as an alias.
            let aliases: Vec<&str> =
                hits[0]["aliases"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            assert_eq!(aliases.len(), 1, "{answer}");
            assert!(hits.iter().skip(1).all(|h| !h["url"].as_str().unwrap().contains("sourdough")), "{answer}");
        }
    }
    assert!(
        misses.is_empty(),
        "{} of {} questions missed their page:\n{}",
        misses.len(),
        TOPICS.len(),
        misses.join("\n")
    );

    // Bad requests are typed errors.
    let resp = client.get(format!("http://{api}/search?q=")).send().await.unwrap();
    assert_eq!(resp.status(), 400);

    documents_read_back(&client, &api.to_string(), &format!("topics.test:{}", server.port()), pages).await;

    let before: Vec<serde_json::Value> = {
        let q = url_encode(TOPICS[5].question);
        get_json(&client, format!("http://{api}/search?q={q}&k=5")).await["hits"].as_array().unwrap().clone()
    };
    node.shutdown().await;

    // Restart on the same data dir: the vector snapshot written at shutdown is loaded as is,
    // and the same question gets the same answer.
    let node = Node::open(c).unwrap();
    let service = node.index().unwrap().clone();
    assert_eq!(*service.index().opened(), weft_index::vectors::Opened::Loaded);
    let after = service.search(TOPICS[5].question, 5).await.unwrap();
    let urls =
        |hits: &[serde_json::Value]| hits.iter().map(|h| h["url"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(after.iter().map(|h| h.page.url.clone()).collect::<Vec<_>>(), urls(&before));
    let stats = service.index().stats();
    assert_eq!((stats.documents, stats.aliases), (pages as u64 - 1, 1));
}

/// The documents API: every document listed once across pages, filters, each topic's full
/// text and chunks read back through the id its search hit carries, the alias, typed errors.
async fn documents_read_back(client: &reqwest::Client, api: &str, host: &str, pages: usize) {
    let mut listed = Vec::new();
    let mut cursor = String::new();
    loop {
        let page = get_json(client, format!("http://{api}/documents?limit=7{cursor}")).await;
        let docs = page["documents"].as_array().unwrap();
        assert!(docs.len() <= 7, "{page}");
        listed.extend(docs.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let mut ids: Vec<&str> = listed.iter().map(|d| d["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((listed.len(), ids.len()), (pages, pages), "each document once: {listed:?}");
    let count = |query: String| async move {
        get_json(client, format!("http://{api}/documents?limit=1000&{query}")).await["documents"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(format!("host={host}")).await, pages);
    assert_eq!(count("host=elsewhere.test".into()).await, 0);
    assert_eq!(count("since=2000-01-01T00:00:00Z".into()).await, pages);
    assert_eq!(count("since=4102444800".into()).await, 0, "nothing fetched after 2100");

    for t in TOPICS {
        let q = url_encode(t.question);
        let hit = get_json(client, format!("http://{api}/search?q={q}&k=1&scope=local")).await["hits"][0].clone();
        let doc = get_json(client, format!("http://{api}/documents/{}", hit["id"].as_str().unwrap())).await;
        assert_eq!((&doc["url"], &doc["title"], &doc["state"]), (&hit["url"], &hit["title"], &"indexed".into()));
        assert_eq!(doc["author"], "Topic Web Editors");
        assert!(doc["fetched_at"].as_str().unwrap().ends_with('Z'), "{doc}");
        let text = doc["text"].as_str().unwrap();
        for p in t.paragraphs {
            assert!(text.contains(p), "{:?} lacks a paragraph of its page: {text:?}", t.slug);
        }
        let chunks = doc["chunks"].as_array().unwrap();
        assert_eq!(chunks.len() as u64, doc["chunk_count"].as_u64().unwrap());
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(c["position"], i as u64);
            let (start, end) = (c["start"].as_u64().unwrap() as usize, c["end"].as_u64().unwrap() as usize);
            assert_eq!(&text[start..end], c["text"].as_str().unwrap(), "chunk {i} is its range of the text");
            assert_eq!(c["prev"], if i == 0 { serde_json::Value::Null } else { chunks[i - 1]["key"].clone() });
            assert_eq!(c["next"], chunks.get(i + 1).map_or(serde_json::Value::Null, |n| n["key"].clone()));
        }
    }
    let alias = listed.iter().find(|d| d["state"] == "alias").expect("the print view");
    // One of the two sourdough URLs, naming the other.
    assert!(alias["url"].as_str().unwrap().contains("sourdough"), "{alias}");
    assert!(alias["alias_of"].as_str().unwrap().contains("sourdough"), "{alias}");
    assert_ne!(alias["url"], alias["alias_of"], "{alias}");

    for (path, status, code) in [
        ("/documents/xyz".to_string(), 400, "bad_id"),
        (format!("/documents/{}", "0".repeat(32)), 404, "no_document"),
        ("/documents?cursor=nope".to_string(), 400, "bad_cursor"),
        ("/documents?since=yesterday".to_string(), 400, "bad_since"),
    ] {
        let resp = client.get(format!("http://{api}{path}")).send().await.unwrap();
        assert_eq!(resp.status(), status, "{path}");
        let v: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(v["error"]["code"], code, "{path}: {v}");
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            b' ' => "+".to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
