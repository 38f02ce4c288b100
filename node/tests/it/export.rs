//! `weft export`, the real binary: a node (the real model, a one-node network so it has a
//! peer id) crawls the topic web; the export reads it through the running node's API as JSON
//! lines of documents, of chunks and of URL outcomes and as Parquet, resumes from a cursor,
//! and — once the node has stopped — reads the same documents and outcomes from the data dir.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use weft_simnet::{topic_site, WebServer, TOPICS};

fn export(args: &[&str]) -> (bool, String) {
    let out = Command::new(common::WEFT).arg("export").args(args).output().expect("weft export runs");
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_and_chunks_go_out_as_jsonl_and_parquet_from_the_node_or_its_data_dir() {
    let server = WebServer::start(vec![topic_site("topics.test")]).await.unwrap();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    let mut c = common::config(&server, &data, 0);
    c.index.enabled = true;
    c.embed = weft_index::testing::embed_config();
    c.crawl.seeds = vec![server.url("topics.test", "/")];
    // A network of one: the node has a peer id, which provenance names.
    c.p2p.enabled = true;
    c.p2p.listen = vec!["/ip4/127.0.0.1/tcp/0".into()];
    let pages = TOPICS.len() as u64 + 1;
    let node = common::Running::start(c).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    let status = loop {
        let s = node.get("/status").await;
        if s["state"] == "idle" && s["index"]["documents"].as_u64() == Some(pages) {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "the crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let peer = status["network"]["peer_id"].as_str().unwrap().to_string();
    let model = status["index"]["model"].as_str().unwrap().to_string();
    assert_eq!(model.len(), 16, "{status}");
    let chunks = status["index"]["chunks"].as_u64().unwrap();
    let api = node.api.to_string();
    let out = |name: &str| dir.path().join(name).to_string_lossy().into_owned();

    // Documents through the API.
    let (ok, err) = export(&["--api", &api, "--quiet", "-o", &out("docs.jsonl")]);
    assert!(ok, "{err}");
    assert!(err.contains(&format!("exported {pages} documents")), "{err}");
    let docs = jsonl(&dir.path().join("docs.jsonl"));
    assert_eq!(docs.len() as u64, pages);
    for d in &docs {
        assert_eq!(d["provenance"]["node"], peer.as_str(), "{d}");
        assert_eq!(d["provenance"]["model"], model.as_str(), "{d}");
        assert_eq!(d["provenance"]["fetched_at"], d["fetched_at"], "{d}");
        assert_eq!(d["state"], "indexed", "{d}");
        assert_eq!(d["provenance"]["held"], "primary", "crawled here: {d}");
    }
    for t in TOPICS {
        let d = docs.iter().find(|d| d["url"].as_str().unwrap().ends_with(&format!("/t/{}", t.slug))).unwrap();
        assert_eq!(d["title"], t.title);
        assert!(t.paragraphs.iter().all(|p| d["text"].as_str().unwrap().contains(p)), "{d}");
    }

    // Resumed after the tenth document: exactly the rest.
    let ids: Vec<&str> = docs.iter().map(|d| d["id"].as_str().unwrap()).collect();
    let (ok, err) = export(&["--api", &api, "--quiet", "--cursor", ids[9], "-o", &out("rest.jsonl")]);
    assert!(ok, "{err}");
    let rest: Vec<String> =
        jsonl(&dir.path().join("rest.jsonl")).iter().map(|d| d["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(rest, ids[10..].iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let (ok, err) = export(&["--api", &api, "--cursor", "not-an-id"]);
    assert!(!ok && err.contains("--cursor"), "{err}");

    // Chunks: one line each, in order within their document, with the document's metadata.
    let (ok, err) = export(&["--api", &api, "--quiet", "--what", "chunks", "-o", &out("chunks.jsonl")]);
    assert!(ok, "{err}");
    let lines = jsonl(&dir.path().join("chunks.jsonl"));
    assert_eq!(lines.len() as u64, chunks);
    let keys: BTreeSet<&str> = lines.iter().map(|l| l["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len() as u64, chunks, "each chunk once");
    for l in &lines {
        assert!(ids.contains(&l["doc_id"].as_str().unwrap()), "{l}");
        assert_eq!(l["provenance"]["node"].as_str(), Some(peer.as_str()), "{l}");
        if l["url"].as_str().unwrap().contains("/t/") {
            assert_eq!(l["author"], "Topic Web Editors", "a topic's chunk carries its page's author: {l}");
        }
        assert!(!l["text"].as_str().unwrap().is_empty());
    }

    // Parquet, read back with the parquet crate.
    let (ok, err) = export(&["--api", &api, "--quiet", "--format", "parquet", "-o", &out("docs.parquet")]);
    assert!(ok, "{err}");
    let file = std::fs::File::open(dir.path().join("docs.parquet")).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let schema = reader.schema().clone();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    for column in ["id", "url", "title", "author", "fetched_at", "text", "node", "model"] {
        assert!(names.contains(&column), "{names:?}");
    }
    let rows: usize = reader.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(rows as u64, pages);
    let (ok, err) = export(&["--api", &api, "--format", "parquet"]);
    assert!(!ok && err.contains("--output"), "Parquet to a terminal is refused: {err}");

    // Every URL's crawl outcome: the pages fetched, as /outcomes lists them.
    let (ok, err) = export(&["--api", &api, "--quiet", "--what", "urls", "-o", &out("urls.jsonl")]);
    assert!(ok, "{err}");
    let urls = jsonl(&dir.path().join("urls.jsonl"));
    let listed = node.get("/outcomes?limit=1000").await;
    let listed: Vec<&str> = listed["outcomes"].as_array().unwrap().iter().map(|o| o["url"].as_str().unwrap()).collect();
    assert_eq!(urls.iter().map(|u| u["url"].as_str().unwrap()).collect::<Vec<_>>(), listed);
    assert!(err.contains(&format!("exported {} URL outcomes", urls.len())), "{err}");
    for t in TOPICS {
        let u = urls.iter().find(|u| u["url"].as_str().unwrap().ends_with(&format!("/t/{}", t.slug))).unwrap();
        assert_eq!(
            (u["outcome"]["outcome"].as_str(), u["outcome"]["status"].as_u64()),
            (Some("fetched"), Some(200)),
            "{u}"
        );
        assert_eq!(u["provenance"]["node"], peer.as_str(), "{u}");
        assert!(u["provenance"]["fetched_at"].as_str().unwrap().ends_with('Z'), "{u}");
    }
    // Paged through the API three at a time, and resumed after the fifth URL.
    let page = node.get("/outcomes?limit=3").await;
    assert_eq!(page["outcomes"].as_array().unwrap().len(), 3);
    assert_eq!(page["next_cursor"], urls[2]["url"]);
    let fifth = urls[4]["url"].as_str().unwrap();
    let (ok, err) =
        export(&["--api", &api, "--quiet", "--what", "urls", "--cursor", fifth, "-o", &out("urls-rest.jsonl")]);
    assert!(ok, "{err}");
    assert_eq!(jsonl(&dir.path().join("urls-rest.jsonl")), urls[5..].to_vec());
    let (ok, err) =
        export(&["--api", &api, "--quiet", "--what", "urls", "--format", "parquet", "-o", &out("urls.parquet")]);
    assert!(ok, "{err}");
    let file = std::fs::File::open(dir.path().join("urls.parquet")).unwrap();
    let rows: usize = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, urls.len());

    // The node stops; the data dir is read directly, with the same provenance.
    node.shutdown().await;
    let config = dir.path().join("weft.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = \"{}\"\n[api]\nlisten = \"127.0.0.1:1\"\n[embed]\nmodel = \"{}\"\n",
            data.display(),
            weft_index::testing::embed_config().model.display()
        ),
    )
    .unwrap();
    let (ok, err) = export(&["--config", &config.to_string_lossy(), "--quiet", "-o", &out("offline.jsonl")]);
    assert!(ok, "{err}");
    let offline = jsonl(&dir.path().join("offline.jsonl"));
    assert_eq!(offline, docs, "the same documents, the same provenance, from the data dir");
    // With the copies held for others (a node alone holds none): the same, read from the cell
    // store's database too.
    let (ok, err) =
        export(&["--config", &config.to_string_lossy(), "--quiet", "--copies", "-o", &out("offline-copies.jsonl")]);
    assert!(ok, "{err}");
    assert!(!err.contains("copies held"), "{err}");
    assert_eq!(jsonl(&dir.path().join("offline-copies.jsonl")), docs);
    let (ok, err) =
        export(&["--config", &config.to_string_lossy(), "--quiet", "--what", "urls", "-o", &out("offline-urls.jsonl")]);
    assert!(ok, "{err}");
    assert_eq!(jsonl(&dir.path().join("offline-urls.jsonl")), urls, "the same URL outcomes from the data dir");
    let (ok, err) = export(&["--data-dir", &dir.path().join("nothing").to_string_lossy(), "--api", "127.0.0.1:1"]);
    assert!(!ok && err.contains("no index"), "{err}");
}
