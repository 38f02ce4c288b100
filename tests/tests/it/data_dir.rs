//! ARCHITECTURE.md's persistence table names everything a node keeps: a node in a network
//! crawls, indexes and stops, and every file, directory, sled tree and key of sled's default
//! tree it left in its data dir must be named there. A new tree or file without a line in the
//! table fails here, so the table stays the complete list an operator backs up.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;
use weft_simnet::{topic_site, WebServer, TOPICS};

/// The backticked names in the rows of ARCHITECTURE.md's "Persistence" table.
fn documented() -> BTreeSet<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let section = text.split("## Persistence").nth(1).expect("ARCHITECTURE.md has a Persistence section");
    let mut names = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with('|')) {
        let first_cell = row.split('|').nth(1).unwrap_or("");
        for (i, part) in first_cell.split('`').enumerate() {
            if i % 2 == 1 {
                names.extend(part.split(", ").map(str::to_string));
            }
        }
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_a_node_keeps_is_in_the_documented_data_dir_layout() {
    let _one = common::one_of_several_networks();
    let server = WebServer::start(vec![topic_site("topics.test")]).await.unwrap();
    let dir = common::work_dir();
    // A network of one: the network's files and trees are written as in any network.
    let mut c = common::member_config(&server, dir.path(), 0, Vec::new(), 0);
    c.crawl.seeds = vec![server.url("topics.test", "/")];
    let node = common::Running::start(c).await;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    loop {
        let s: serde_json::Value =
            client.get(format!("http://{}/status", node.api)).send().await.unwrap().json().await.unwrap();
        if s["state"] == "idle" && s["index"]["pages_indexed"].as_u64() == Some(TOPICS.len() as u64 + 1) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    node.shutdown().await;

    let documented = documented();
    let mut kept = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() && name == "frontier" {
            for inner in std::fs::read_dir(entry.path()).unwrap() {
                let inner = inner.unwrap();
                let slash = if inner.file_type().unwrap().is_dir() { "/" } else { "" };
                kept.push(format!("frontier/{}{slash}", inner.file_name().to_string_lossy()));
            }
        } else if entry.file_type().unwrap().is_dir() {
            kept.push(format!("{name}/"));
        } else {
            kept.push(name);
        }
    }
    let db = sled::open(dir.path().join("db")).unwrap();
    kept.push(format!("db/{}", weft_frontier::generation::FILE));
    for tree in db.tree_names() {
        let tree = String::from_utf8_lossy(&tree).into_owned();
        if tree != "__sled__default" {
            kept.push(tree);
        }
    }
    for key in db.iter().keys() {
        kept.push(format!("key {}", String::from_utf8_lossy(&key.unwrap())));
    }
    // The files, the sled trees and keys: a node that crawled keeps at least these many (the
    // layout store's and the URL patterns' ten trees went to the frontier's store in fjall).
    assert!(kept.len() > 15, "the node kept its files and trees: {kept:?}");
    let undocumented: Vec<&String> =
        kept.iter().filter(|k| !documented.contains(k.strip_prefix("key ").unwrap_or(k))).collect();
    assert!(
        undocumented.is_empty(),
        "kept but not in ARCHITECTURE.md's persistence table: {undocumented:?}\n(documented: {documented:?})"
    );
    assert!(dir.path().join("db").join(weft_frontier::generation::FILE).exists());
}
