//! Across crates: the crawl loop extracts every page it fetches (page types, JS scores and
//! warnings reach `/status` and `/metrics`), follows only links the extractor found visible,
//! and sends low-confidence pages to the real Readability.js second opinion when configured.

use crate::common;

use std::time::Duration;
use weft_config::SecondOpinion;
use weft_simnet::{Site, WebServer};

fn prose(n: usize) -> String {
    "<p>The committee met on Tuesday to discuss the proposal, which had been debated for months. \
     Members raised concerns about cost, timing and the effect on local businesses, and asked for more data.</p>"
        .repeat(n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crawled_pages_are_extracted_and_low_confidence_ones_get_a_second_opinion() {
    // A node with the model: beside a network test it slows that test's 800 ms search deadline.
    let _one = common::one_of_several_networks();
    let hub_links: String =
        (0..12).map(|i| format!("<li><a href=\"/2019/11/19/story-number-{i}-long-slug\">Story {i}</a></li>")).collect();
    let mut site = Site::new("news.test")
        .html(
            "/",
            "<a href='/world/africa'>Africa</a><a href='/app'>App</a><a href='/secret' hidden>s</a>\
             <a href='/sitemap-news.xml'>Sitemap</a>",
        )
        .with(
            "/sitemap-news.xml",
            weft_simnet::Resource::text("application/xml", "<urlset><url><loc>/world/africa</loc></url></urlset>"),
        )
        // Listing pages: page 1 is linked, page 2 only predicted from the URL.
        .html("/list?page=1", &prose(1))
        .html("/list?page=2", &prose(1))
        .html(
            "/world/africa",
            &format!("<nav><a href='/'>Home</a></nav><a href='/list?page=1'>more</a><ul>{hub_links}</ul>"),
        )
        .html("/app", "<div id='root'></div><noscript>You need to enable JavaScript to run this app.</noscript>")
        .html("/secret", "<p>never linked visibly</p>");
    for i in 0..12 {
        site =
            site.html(&format!("/2019/11/19/story-number-{i}-long-slug"), &format!("<article>{}</article>", prose(10)));
    }
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::loopback_config(&server, "news.test", dir.path(), 0);
    c.extract.second_opinion = SecondOpinion::Always;
    c.extract.second_opinion_below = 0.5;

    let node = common::Running::start(c).await;
    let api = node.api;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        let s: serde_json::Value = serde_json::from_slice(
            &client.get(format!("http://{api}/status")).send().await.unwrap().bytes().await.unwrap(),
        )
        .unwrap();
        let ex = &s["extraction"];
        let sent = ex["second_opinion:sent"].as_u64().unwrap_or(0);
        let done: u64 = ["taken", "kept_native", "failed", "over_budget"]
            .iter()
            .map(|k| ex[format!("second_opinion:{k}")].as_u64().unwrap_or(0))
            .sum();
        if s["state"] == "idle" && s["pages_fetched"] == 17 && sent > 0 && done == sent {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let ex = &status["extraction"];
    assert_eq!(ex["page_type:article"], 12, "{status}");
    assert_eq!(ex["page_type:hub"], 1, "{status}");
    assert_eq!(ex["js:js_required"], 1, "the empty React shell: {status}");
    // Home, hub, app shell and the two short listing pages: low confidence, second opinion asked.
    assert_eq!(ex["second_opinion:sent"], 5, "{status}");
    assert_eq!(status["sitemaps_fetched"], 1, "a linked sitemap is fetched as a sitemap: {status}");
    assert!(
        ex["second_opinion:failed"].as_u64().unwrap_or(0) + ex["second_opinion:kept_native"].as_u64().unwrap_or(0) >= 1
    );
    let metrics = client.get(format!("http://{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("weft_extraction_total{kind=\"page_type:article\"} 12"), "{metrics}");
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert!(!paths.contains(&"/secret".to_string()), "hidden links are not followed: {paths:?}");
    assert!(paths.contains(&"/list?page=2".to_string()), "the predicted next page is fetched: {paths:?}");
    assert!(paths.contains(&"/list?page=3".to_string()), "and predicts page 3 (a 404 here): {paths:?}");
    node.shutdown().await;
}
