//! "Why is this page not in the index?": a real crawl (defaults: the real model, layouts on)
//! of a site where every URL meets a different fate, then `GET /urls?url=` for each — fetched
//! and indexed, redirected, 404, 500 until the retries ran out, disallowed by robots.txt, a
//! binary link never fetched, a near duplicate recorded as an alias, a URL never met.

use crate::common;

use std::time::Duration;
use weft_simnet::{topics::topic_page, Resource, Site, WebServer, TOPICS};

const HOST: &str = "why.test";

fn site() -> Site {
    let ok = topic_page(&TOPICS[0]);
    // The same article under another URL with other chrome: a near duplicate.
    let copy = ok
        .replace("<nav><a href=\"/\">All topics</a></nav>", "<header>Print view</header>")
        .replace("Topic web, a test site of Weft.", "Printed from the topic web.");
    let links = ["/ok", "/copy", "/old", "/missing", "/broken", "/private/secret", "/files/report.zip"]
        .iter()
        .map(|p| format!("<li><a href=\"{p}\">{p}</a></li>"))
        .collect::<String>();
    let home = format!(
        "<!doctype html><html lang=\"en\"><head><title>Why</title></head><body><main><h1>Why</h1>\
         <p>Pages that meet every fate a crawler knows, for the operator's question.</p><ul>{links}</ul></main></body></html>"
    );
    Site::new(HOST)
        .with("/robots.txt", Resource::robots("User-agent: *\nDisallow: /private/\n"))
        .html("/", &home)
        .html("/ok", &ok)
        .html("/copy", &copy)
        .with("/old", Resource::Raw { status: 301, headers: vec![("location".into(), "/new".into())], body: vec![] })
        .html("/new", &topic_page(&TOPICS[1]))
        .with("/missing", Resource::status(404))
        .with("/broken", Resource::status(500))
        .html("/private/secret", &topic_page(&TOPICS[2]))
        .with("/files/report.zip", Resource::text("application/zip", b"PK".to_vec()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_url_says_why_it_is_or_is_not_in_the_index() {
    // A node with the model: beside a network test it slows that test's 800 ms search deadline.
    let _one = common::one_of_several_networks();
    let server = WebServer::start(vec![site()]).await.unwrap();
    let dir = common::work_dir();
    let mut c = common::loopback_config(&server, HOST, dir.path(), 20);
    // One retry instead of three: the test waits for /broken's retries to run out.
    c.politeness.max_retries = 1;
    let node = common::Running::start(c).await;
    let api = node.api;
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let get = |path: String| {
        let client = client.clone();
        async move {
            let resp = client.get(format!("http://{api}{path}")).send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<serde_json::Value>().await.unwrap())
        }
    };

    // Home, /ok, /new indexed; /copy aliased.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let (_, s) = get("/status".into()).await;
        let done =
            s["index"]["pages_indexed"].as_u64().unwrap_or(0) + s["index"]["pages_aliased"].as_u64().unwrap_or(0);
        if s["state"] == "idle" && done == 4 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let port = server.port();
    let report = |path: &str| get(format!("/urls?url=http://{HOST}:{port}{path}"));
    // /ok and /copy are the same article: whichever was indexed first is the document, the
    // other its alias.
    let (status, first) = report("/ok").await;
    assert_eq!(status, 200, "{first}");
    let (_, second) = report("/copy").await;
    let (ok, copy) = if first["document"]["state"] == "indexed" { (first, second) } else { (second, first) };
    assert_eq!((ok["frontier"].as_str(), ok["outcome"]["outcome"].as_str()), (Some("done"), Some("fetched")), "{ok}");
    assert_eq!((ok["outcome"]["status"].as_u64(), ok["outcome"]["attempts"].as_u64()), (Some(200), Some(1)), "{ok}");
    let id = ok["document"]["id"].as_str().expect("the document");
    assert_eq!(ok["document"]["state"], "indexed", "{ok}");
    assert!(ok["explanation"].as_str().unwrap().starts_with("indexed"), "{ok}");
    // The id leads to the document.
    let (status, doc) = get(format!("/documents/{id}")).await;
    assert_eq!((status, doc["url"].as_str()), (200, ok["url"].as_str()), "{doc}");
    assert_eq!(copy["document"]["state"], "alias", "{copy}");
    assert_eq!(copy["document"]["alias_of"], ok["url"], "{copy}");
    assert!(copy["explanation"].as_str().unwrap().contains("near duplicate of"), "{copy}");

    let (_, old) = report("/old").await;
    assert_eq!(
        (old["outcome"]["outcome"].as_str(), old["outcome"]["status"].as_u64()),
        (Some("redirected"), Some(301))
    );
    assert_eq!(old["outcome"]["to"], format!("http://{HOST}:{port}/new"), "{old}");
    assert!(old["document"].is_null(), "{old}");
    let (_, new) = report("/new").await;
    assert_eq!(new["document"]["state"], "indexed", "{new}");

    let (_, missing) = report("/missing").await;
    assert_eq!(missing["outcome"]["status"], 404, "{missing}");
    assert_eq!(missing["outcome"]["retrying"], false, "{missing}");

    let (_, broken) = report("/broken").await;
    assert_eq!(
        (broken["outcome"]["status"].as_u64(), broken["outcome"]["retrying"].as_bool()),
        (Some(500), Some(false))
    );
    assert_eq!(broken["outcome"]["attempts"], 2, "asked once, retried once: {broken}");
    assert!(broken["explanation"].as_str().unwrap().contains("retries ran out"), "{broken}");

    let (_, private) = report("/private/secret").await;
    assert_eq!(private["outcome"]["outcome"], "disallowed", "{private}");
    assert!(private["explanation"].as_str().unwrap().contains("robots.txt"), "{private}");

    let (_, zip) = report("/files/report.zip").await;
    assert_eq!(
        (zip["outcome"]["outcome"].as_str(), zip["outcome"]["reason"].as_str()),
        (Some("skipped"), Some("binary"))
    );
    assert_eq!(zip["outcome"]["attempts"], 0, "{zip}");

    let (_, never) = get("/urls?url=http://elsewhere.test/page".into()).await;
    assert_eq!((never["frontier"].as_str(), never["outcome"].is_null()), (Some("unseen"), true), "{never}");
    assert_eq!(never["explanation"], "never met by this node", "{never}");

    // Spelled differently, the same URL (normalized).
    let (_, upper) = get(format!("/urls?url=HTTP://WHY.TEST:{port}/missing#top")).await;
    assert_eq!(upper["url"], missing["url"], "{upper}");

    for bad in ["/urls", "/urls?url=", "/urls?url=ftp://why.test/"] {
        let (status, v) = get(bad.into()).await;
        assert_eq!((status, v["error"]["code"].as_str()), (400, Some("bad_url")), "{bad}: {v}");
    }
    // Nothing was requested that the outcomes say was not.
    let asked = |path: &str| server.requests().iter().filter(|r| r.path == path).count();
    assert_eq!((asked("/private/secret"), asked("/files/report.zip"), asked("/broken")), (0, 0, 2));
    node.shutdown().await;
}
