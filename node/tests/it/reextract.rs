//! A node upgraded to another extractor extracts what it holds again, from the responses it kept
//! (`crawl.keep_responses`), without fetching anything: a node crawls a small loopback site
//! with the rules alone (`extract.learned = false`, what builds before the learned classifier
//! ran), stops, and starts again on the same data dir with the default extractor. Its `/status`
//! counts the pass; a page whose text the new extractor reads differently (a recipe) is re-indexed with
//! that text, the others are left as they were, and the server sees no request in the second
//! run. A third start has nothing to do.

use crate::common;

use std::time::Duration;
use weft_simnet::{Resource, Site, WebServer};

/// A recipe: its ingredients and steps are short lines, which the rules drop as the edges
/// around one sentence of prose; the learned classifier keeps the whole recipe.
const RECIPE: &str = "<!doctype html><html><head><title>Fish stew</title></head><body>\
    <nav><a href=\"/\">Recipes</a> <a href=\"/story\">Story</a></nav><main><h1>Fish stew</h1>\
    <p>A keeper's stew for winter nights.</p><h2>Ingredients</h2><ul><li>2 cod fillets</li><li>1 onion</li>\
    <li>3 potatoes</li></ul><h2>Method</h2><ol><li>Fry the onion until soft.</li><li>Add the potatoes and \
    water, and simmer for twenty minutes.</li><li>Add the fish for the last five minutes.</li></ol></main></body></html>";

fn story() -> String {
    let p = "<p>The lighthouse keepers of the northern coast kept the lamps burning through the winter storms, \
             and wrote down every ship that passed in their logbooks, with the weather and the hour.</p>";
    format!(
        "<!doctype html><html><head><title>The keepers</title></head><body><nav><a href=\"/\">Home</a></nav>\
         <main><article><h1>The keepers</h1>{}</article></main></body></html>",
        p.repeat(6)
    )
}

const HOME: &str = "<!doctype html><html><head><title>Manual</title></head><body><main><h1>Manual</h1>\
    <p>Two pages: <a href=\"/stew\">a recipe</a> and <a href=\"/story\">a story</a>.</p></main></body></html>";

/// The text the index holds for `url`.
async fn held_text(node: &common::Running, url: &str) -> String {
    let id = weft_index::DocId::of_url(url).hex();
    let doc = node.get(&format!("/documents/{id}?scope=local")).await;
    doc["text"].as_str().unwrap_or_else(|| panic!("no document for {url}: {doc}")).to_string()
}

async fn until(node: &common::Running, what: &str, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let s = node.get("/status").await;
        if done(&s) {
            return s;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgraded_node_extracts_its_kept_responses_again_without_fetching() {
    let story = story();
    let site = Site::new("manual.test")
        .with("/robots.txt", Resource::robots(""))
        .html("/", HOME)
        .html("/stew", RECIPE)
        .html("/story", &story);
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    let recipe_url = server.url("manual.test", "/stew");
    let config = |learned: bool| {
        let mut c = common::config(&server, &data, 0);
        c.index.enabled = true;
        c.embed = weft_index::testing::embed_config();
        c.crawl.keep_responses = true;
        c.crawl.seeds = vec![server.url("manual.test", "/")];
        c.extract.learned = learned;
        c
    };
    let rules_id = weft_extract::learned::Selector::Rules.id();
    let model_id = weft_extract::learned::Selector::default_for_build().id();
    assert_ne!(rules_id, model_id, "a model is built in");

    // The build before: the rules alone (the extractor this test upgrades from).
    let node = common::Running::start(config(false)).await;
    let s = until(&node, "the first crawl did not finish", |s| {
        s["state"] == "idle" && s["index"]["documents"].as_u64() == Some(3)
    })
    .await;
    let r = &s["index"]["reextraction"];
    assert_eq!(r["state"], "current", "a new node records its extractor: {r}");
    assert_eq!(r["extractor"], rules_id.as_str(), "{r}");
    let before = held_text(&node, &recipe_url).await;
    assert!(!before.contains("cod fillets"), "the rules drop the ingredients: {before:?}");
    let story_before = held_text(&node, &server.url("manual.test", "/story")).await;
    node.shutdown().await;
    let fetched = server.requests().len();

    // The upgrade: the default extractor, the same data dir.
    let node = common::Running::start(config(true)).await;
    let s = until(&node, "the pass did not end", |s| s["index"]["reextraction"]["state"] == "done").await;
    let r = &s["index"]["reextraction"];
    assert_eq!(r["extractor"], model_id.as_str(), "{r}");
    assert_eq!(r["from"], rules_id.as_str(), "{r}");
    assert_eq!(r["responses"], 3, "{r}");
    assert_eq!(r["done"], 3, "{r}");
    // Which pages the two extractors read differently, asked of the extractors themselves.
    let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut differ = 0;
    for (path, html) in [("/", HOME), ("/stew", RECIPE), ("/story", story.as_str())] {
        let url = url::Url::parse(&server.url("manual.test", path)).unwrap();
        let old = weft_extract::extract_with(html.as_bytes(), &[], &url, weft_extract::learned::Selector::Rules).0;
        let new = weft_extract::extract(html.as_bytes(), &[], &url);
        let held = held_text(&node, url.as_str()).await;
        assert_eq!(words(&held), words(&new.text), "{path}: the held text is the new extractor's");
        differ += usize::from(words(&old.text) != words(&new.text));
    }
    assert!(differ >= 1, "the recipe at least reads differently");
    assert_eq!(r["changed"], differ, "{r}");
    assert_eq!(r["unchanged"], 3 - differ, "{r}");
    assert_eq!(r["failed"], 0, "{r}");
    let after = held_text(&node, &recipe_url).await;
    assert!(after.contains("2 cod fillets") && after.contains("Fry the onion"), "{after:?}");
    assert_eq!(held_text(&node, &server.url("manual.test", "/story")).await, story_before);
    until(&node, "the node did not settle", |s| s["state"] == "idle").await;
    node.shutdown().await;
    assert_eq!(server.requests().len(), fetched, "nothing was fetched again: {:?}", &server.requests()[fetched..]);

    // Nothing left to do.
    let node = common::Running::start(config(true)).await;
    let s = until(&node, "the node did not settle", |s| s["state"] == "idle").await;
    let r = &s["index"]["reextraction"];
    assert_eq!((r["state"].as_str(), r["done"].as_u64()), (Some("current"), Some(0)), "{r}");
    node.shutdown().await;
}
