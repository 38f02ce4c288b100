//! Across crates: config → node → crawl through robots.txt `Sitemap:` lines and a gzipped
//! sitemap index → the local API (`/health`, `/status`, `/metrics`) over real HTTP.

use crate::common;

use std::io::Write;
use std::time::Duration;
use weft_simnet::{Resource, Site, WebServer};

fn gzip(data: &str) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data.as_bytes()).unwrap();
    gz.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_feed_the_frontier_and_the_api_reports_it() {
    // A node with the model: beside a network test it slows that test's 800 ms search deadline.
    let _one = common::one_of_several_networks();
    // Pages /hidden/N are linked from nowhere: only the sitemaps know them. The sitemaps name
    // absolute URLs, so the site is built once the server's port is known.
    let site = |port: u16| {
        let mut s = Site::new("maps.test").html("/", "<p>home, no links</p>");
        let mut urlset = String::from("<urlset>");
        for i in 0..5 {
            s = s.html(&format!("/hidden/{i}"), "<p>only in the sitemap</p>");
            urlset.push_str(&format!("<url><loc>http://maps.test:{port}/hidden/{i}</loc></url>"));
        }
        urlset.push_str("</urlset>");
        let index =
            format!("<sitemapindex><sitemap><loc>http://maps.test:{port}/pages.xml</loc></sitemap></sitemapindex>");
        vec![s
            .with(
                "/robots.txt",
                Resource::robots(&format!("User-agent: *\nAllow: /\nSitemap: http://maps.test:{port}/index.xml.gz\n")),
            )
            .with("/index.xml.gz", Resource::text("application/gzip", gzip(&index)))
            .with("/pages.xml", Resource::text("application/xml", urlset))]
    };
    let server = WebServer::start_with(site).await.unwrap();
    let dir = common::work_dir();
    let c = common::loopback_config(&server, "maps.test", dir.path(), 50);

    let node = common::Running::start(c).await;
    let api = node.api;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    assert_eq!(client.get(format!("http://{api}/health")).send().await.unwrap().text().await.unwrap(), "ok\n");

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        let s: serde_json::Value = serde_json::from_slice(
            &client.get(format!("http://{api}/status")).send().await.unwrap().bytes().await.unwrap(),
        )
        .unwrap();
        if s["state"] == "idle" && s["pages_fetched"] == 6 {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status["sitemaps_fetched"], 2, "the gzipped index and the urlset; /sitemap.xml is a 404: {status}");
    assert!(status["errors"].get("http_4xx").is_none(), "a missing /sitemap.xml is not an error: {status}");
    let metrics = client.get(format!("http://{api}/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("weft_pages_fetched_total 6"), "{metrics}");

    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    for i in 0..5 {
        assert_eq!(paths.iter().filter(|p| **p == format!("/hidden/{i}")).count(), 1, "{paths:?}");
    }
    node.shutdown().await;
}
