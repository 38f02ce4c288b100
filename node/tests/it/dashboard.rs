//! The web dashboard in Debian's headless Chromium, served by a real node that crawled and
//! indexed the topic web (real model): the page loads with nothing but the node's own API
//! behind it, shows the crawl, the top hosts and the documents just indexed, and a search typed
//! into its box renders the right page first. A screenshot is saved as a test artefact
//! (`target/tmp/dashboard.png`).

use crate::common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft_node::browser::BrowserError;
use weft_simnet::{topic_site, WebServer, TOPICS};

async fn eval<T: serde::de::DeserializeOwned>(page: &chromiumoxide::Page, js: &str) -> Result<T, BrowserError> {
    let err = |e: &dyn std::fmt::Display| BrowserError::Render { url: "dashboard".into(), reason: e.to_string() };
    page.evaluate(js).await.map_err(|e| err(&e))?.into_value().map_err(|e| err(&e))
}

/// Polls `js` (a boolean expression) until it holds.
async fn until(page: &chromiumoxide::Page, js: &str, what: &str) -> Result<(), BrowserError> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if eval::<bool>(page, js).await? {
            return Ok(());
        }
        if Instant::now() > deadline {
            let body: String = eval(page, "document.body.innerText").await?;
            return Err(BrowserError::Render {
                url: "dashboard".into(),
                reason: format!("{what} never happened:\n{body}"),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_the_node_and_answers_a_search_in_chromium() {
    let server = WebServer::start(vec![topic_site("topics.test")]).await.unwrap();
    let dir = common::work_dir();
    let mut c = weft_config::Config { data_dir: dir.path().to_path_buf(), ..Default::default() };
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = BTreeMap::from([("topics.test".to_string(), lo)]);
    c.politeness.default_delay_ms = 0;
    c.frontier.seen_capacity = 10_000;
    c.api.listen = "127.0.0.1:0".parse().unwrap();
    c.crawl.seeds = vec![server.url("topics.test", "/")];
    c.embed = weft_index::testing::embed_config();
    c.layouts.enabled = false; // the generic extractor's text: the question→page pairs are known for it
    let node = common::Running::start(c).await;
    let api = node.api;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let s = node.get("/status").await;
        if s["state"] == "idle" && s["index"]["documents"].as_u64().unwrap_or(0) >= TOPICS.len() as u64 {
            break;
        }
        assert!(Instant::now() < deadline, "the node did not index the topic web: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let pool = common::browser().await;
    let foreign = Arc::new(Mutex::new(Vec::new()));
    let topic = &TOPICS[1];
    let question = topic.question.to_string();
    let shot = pool
        .with_page(&format!("http://{api}/"), common::only_from(api, foreign.clone()), |page| {
            Box::pin(async move {
                until(page, "document.getElementById('state').textContent === 'idle'", "the state").await?;
                until(
                    page,
                    "Number(document.getElementById('pages').textContent.replace(/,/g, '')) >= 30",
                    "the page count",
                )
                .await?;
                until(page, "document.querySelectorAll('#top-hosts tr').length >= 1", "the top hosts").await?;
                until(page, "document.querySelectorAll('#recent li').length >= 10", "the recent documents").await?;
                until(
                    page,
                    "/documents/.test(document.getElementById('index-summary').textContent)",
                    "the index summary",
                )
                .await?;
                // A person types a question and presses Enter.
                let err =
                    |e: &dyn std::fmt::Display| BrowserError::Render { url: "dashboard".into(), reason: e.to_string() };
                let input = page.find_element("#q").await.map_err(|e| err(&e))?;
                input.click().await.map_err(|e| err(&e))?;
                input.type_str(&question).await.map_err(|e| err(&e))?;
                input.press_key("Enter").await.map_err(|e| err(&e))?;
                until(page, "document.querySelectorAll('#results li').length > 0", "the search results").await?;
                let first: String = eval(page, "document.querySelector('#results li .url').textContent").await?;
                let info: String = eval(page, "document.getElementById('search-info').textContent").await?;
                let params = chromiumoxide::page::ScreenshotParams::builder().full_page(true).build();
                let png = page.screenshot(params).await.map_err(|e| err(&e))?;
                Ok((first, info, png))
            })
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    let (first, info, png) = shot;
    assert!(first.ends_with(&format!("/t/{}", topic.slug)), "the question's page comes first: {first} ({info})");
    assert!(info.contains("results in"), "{info}");
    assert!(foreign.lock().unwrap().is_empty(), "the dashboard fetched from elsewhere: {:?}", foreign.lock().unwrap());
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "{} bytes", png.len());
    let artefact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png");
    std::fs::write(&artefact, &png).unwrap();
    eprintln!("screenshot: {}", artefact.display());

    node.shutdown().await;
}
