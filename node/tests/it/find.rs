//! The search page for people, on a real node that crawled and indexed the topic web (real
//! model), served on its own address as a LAN would reach it:
//!
//! - in Debian's headless Chromium with JavaScript off: a person loads `/find`, types a
//!   question, presses Enter and gets result links to the crawled pages; a page whose title is
//!   a `<script>` element shows it as text; a screenshot of a phone's screen is kept
//!   (`target/tmp/search-page.png`, the book's picture);
//! - `/opensearch.xml` is an OpenSearch 1.1 description whose `{searchTerms}` template, filled
//!   in, answers the question;
//! - the SearXNG settings in the book's "Searching" chapter, parsed, ask `/find.json` with
//!   their `search_url` and map its answer with their field paths as SearXNG's JSON engine does;
//! - the bounds and the rate limit answer 400 and 429 with JSON errors, and the address serves
//!   nothing of the operator's API.

use crate::common;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft_node::browser::BrowserError;
use weft_simnet::{topic_site, Site, WebServer, TOPICS};

/// The hostile page: its title is markup, its text about something no topic page is.
const HOSTILE_TITLE: &str = "<script>document.title='owned'</script> Octopus camouflage";
const HOSTILE_QUESTION: &str = "how does an octopus change the colour of its skin";

fn hostile_site() -> Site {
    let html = "<!doctype html><html><head><title>&lt;script&gt;document.title='owned'&lt;/script&gt; Octopus \
                camouflage</title></head><body><article><h1>Octopus camouflage</h1>\
                <p>An octopus changes the colour of its skin in a fraction of a second. Its skin holds \
                thousands of chromatophores, small sacs of pigment that muscles stretch open or squeeze \
                shut, and below them reflecting cells that shift the light.</p>\
                <p>With them an octopus matches the sand, the rock or the weed it rests on, flashes dark to \
                warn a rival, and ripples pale bands over its body to startle the fish it hunts.</p>\
                <p>It does this although it is colour blind, and biologists still argue how the animal \
                sees what it copies.</p></article></body></html>";
    Site::new("sea.test").html("/", html)
}

/// A port free now on 127.0.0.1 (the search page's address is fixed in its config).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn err(e: &dyn std::fmt::Display) -> BrowserError {
    BrowserError::Render { url: "/find".into(), reason: e.to_string() }
}

// With JavaScript off, the page is read and driven through the DevTools protocol's DOM and
// Input domains alone: chromiumoxide's `Element::click`, `attribute`, `inner_text` and
// `Page::content` run a function in the page, which never returns with scripts disabled.

/// An element's markup (`DOM.getOuterHTML`).
async fn outer_html(page: &chromiumoxide::Page, e: &chromiumoxide::Element) -> Result<String, BrowserError> {
    use chromiumoxide::cdp::browser_protocol::dom::GetOuterHtmlParams;
    let params = GetOuterHtmlParams::builder().backend_node_id(e.backend_node_id).build();
    Ok(page.execute(params).await.map_err(|e| err(&e))?.result.outer_html)
}

/// The text of a piece of markup: tags dropped, the five entities decoded.
fn text_of(html: &str) -> String {
    let mut text = String::new();
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&#39;", "'").replace("&amp;", "&")
}

/// An element's attribute, from its node's description (`DOM.describeNode`).
async fn attribute(e: &chromiumoxide::Element, name: &str) -> Result<Option<String>, BrowserError> {
    let flat = e.attributes().await.map_err(|e| err(&e))?;
    Ok(flat.chunks(2).find(|kv| kv[0] == name).and_then(|kv| kv.get(1).cloned()))
}

/// The `href` and text of each result's title link.
async fn results(page: &chromiumoxide::Page) -> Result<Vec<(String, String)>, BrowserError> {
    let mut out = Vec::new();
    for a in page.find_elements("#results h2 a").await.map_err(|e| err(&e))? {
        let href = attribute(&a, "href").await?.unwrap_or_default();
        out.push((href, text_of(&outer_html(page, &a).await?)));
    }
    Ok(out)
}

/// Waits until the page shows results (or says nothing matched).
async fn until_answered(page: &chromiumoxide::Page) -> Result<Vec<(String, String)>, BrowserError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = results(page).await.unwrap_or_default();
        if !found.is_empty() || page.find_element("#nothing").await.is_ok() {
            return Ok(found);
        }
        if Instant::now() > deadline {
            let html = match page.find_element("html").await {
                Ok(root) => outer_html(page, &root).await.unwrap_or_default(),
                Err(e) => e.to_string(),
            };
            return Err(err(&format!("no answer on the page:\n{html}")));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// SearXNG's JSON engine's query: a `/`-separated path of keys, each matched at any depth below
/// the last (`searx/engines/json_engine.py`, `do_query`).
fn json_query<'a>(data: &'a serde_json::Value, path: &[&str]) -> Vec<&'a serde_json::Value> {
    let Some(first) = path.first() else { return Vec::new() };
    let items: Vec<(String, &serde_json::Value)> = match data {
        serde_json::Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        serde_json::Value::Array(a) => a.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for (key, value) in items {
        let nested = value.is_object() || value.is_array();
        if path.len() == 1 {
            if key == *first {
                out.push(value);
            } else if nested {
                out.extend(json_query(value, path));
            }
        } else if nested {
            out.extend(json_query(value, if key == *first { &path[1..] } else { path }));
        }
    }
    out
}

fn query_path(q: &str) -> Vec<&str> {
    q.split('/').filter(|p| !p.is_empty()).collect()
}

/// The SearXNG engine settings in the book's "Searching" chapter.
fn searxng_engine() -> serde_yaml::Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src/searching.md");
    let chapter = std::fs::read_to_string(path).unwrap();
    let block = chapter.split("```yaml\n").nth(1).and_then(|b| b.split("```").next()).expect("a YAML block");
    let engines: Vec<serde_yaml::Value> = serde_yaml::from_str(block).expect("the settings are YAML");
    let weft = engines.into_iter().find(|e| e["engine"] == "json_engine").expect("a json_engine entry");
    for key in ["search_url", "results_query", "url_query", "title_query", "content_query"] {
        assert!(weft[key].is_string(), "the engine sets {key}: {weft:?}");
    }
    weft
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_searches_from_the_search_page_a_browser_and_searxng_can_use() {
    let server = WebServer::start(vec![topic_site("topics.test"), hostile_site()]).await.unwrap();
    let dir = common::work_dir();
    let mut c = weft_config::Config { data_dir: dir.path().to_path_buf(), ..Default::default() };
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().unwrap();
    c.fetch.resolve = BTreeMap::from([("topics.test".to_string(), lo), ("sea.test".to_string(), lo)]);
    c.politeness.default_delay_ms = 0;
    c.frontier.seen_capacity = 10_000;
    c.crawl.seeds = vec![server.url("topics.test", "/"), server.url("sea.test", "/")];
    c.embed = weft_index::testing::embed_config();
    c.layouts.enabled = false; // the generic extractor's text: the question→page pairs are known for it
    c.search_page.enabled = true;
    // Two a second, thirty at once: room for the checks below, which end by going past it.
    c.search_page.requests_per_minute = 120;
    c.search_page.listen = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let page_addr = c.search_page.listen;
    let node = common::Running::start(c).await;
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let s = node.get("/status").await;
        if s["state"] == "idle" && s["index"]["documents"].as_u64().unwrap_or(0) > TOPICS.len() as u64 {
            break;
        }
        assert!(Instant::now() < deadline, "the node did not index the topic web: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("indexed; the search page at {page_addr}");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let base = format!("http://{page_addr}");

    // In Chromium, with JavaScript off.
    let pool = common::browser().await;
    let foreign = Arc::new(Mutex::new(Vec::new()));
    let topic = &TOPICS[1];
    let question = topic.question.to_string();
    let find = format!("{base}/find");
    let typed = question.clone();
    let driven = pool
        .with_page(&find, common::only_from(page_addr, foreign.clone()), |page| {
            let find = find.clone();
            Box::pin(async move {
                use chromiumoxide::cdp::browser_protocol::emulation::{
                    SetDeviceMetricsOverrideParams, SetScriptExecutionDisabledParams,
                };
                page.execute(SetScriptExecutionDisabledParams::new(true)).await.map_err(|e| err(&e))?;
                page.execute(SetDeviceMetricsOverrideParams::new(390, 844, 2.0, true)).await.map_err(|e| err(&e))?;
                page.goto(find.as_str()).await.map_err(|e| err(&e))?;
                // The page's head offers the OpenSearch description.
                let link = page
                    .find_element("link[rel=search][type='application/opensearchdescription+xml']")
                    .await
                    .map_err(|e| err(&e))?;
                let description = attribute(&link, "href").await?.unwrap_or_default();
                // A person types a question into the box and presses Enter.
                let input = page.find_element("input[name=q]").await.map_err(|e| err(&e))?;
                let focus = chromiumoxide::cdp::browser_protocol::dom::FocusParams::builder()
                    .backend_node_id(input.backend_node_id)
                    .build();
                page.execute(focus).await.map_err(|e| err(&e))?;
                input.type_str(&typed).await.map_err(|e| err(&e))?;
                input.press_key("Enter").await.map_err(|e| err(&e))?;
                let answered = until_answered(page).await?;
                let url = page.url().await.map_err(|e| err(&e))?.unwrap_or_default();
                let shot = chromiumoxide::page::ScreenshotParams::builder().build();
                let png = page.screenshot(shot).await.map_err(|e| err(&e))?;
                // The page titled with a script element.
                let hostile = format!(
                    "{find}?q={}",
                    url::form_urlencoded::byte_serialize(HOSTILE_QUESTION.as_bytes()).collect::<String>()
                );
                page.goto(hostile.as_str()).await.map_err(|e| err(&e))?;
                let hostile_results = until_answered(page).await?;
                let scripts = page.find_elements("script").await.map_err(|e| err(&e))?.len();
                let title = match page.find_element("title").await {
                    Ok(t) => text_of(&outer_html(page, &t).await?),
                    Err(e) => return Err(err(&e)),
                };
                Ok((description, answered, url, png, hostile_results, scripts, title))
            })
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    pool.close().await;
    let (description, answered, url, png, hostile_results, scripts, title) = driven;
    assert_eq!(description, "/opensearch.xml");
    assert!(url.contains("/find?q="), "the form asks /find: {url}");
    let first = &answered.first().unwrap_or_else(|| panic!("no results for {question:?}")).0;
    assert!(first.ends_with(&format!("/t/{}", topic.slug)), "the question's page comes first: {answered:?}");
    assert!(
        answered.iter().all(|(href, _)| href.starts_with("http://topics.test") || href.starts_with("http://sea.test")),
        "{answered:?}"
    );
    let (href, text) = hostile_results.first().expect("the octopus page is found");
    assert!(href.starts_with("http://sea.test"), "{hostile_results:?}");
    assert_eq!(text, HOSTILE_TITLE, "the title shows as text");
    assert_eq!(scripts, 0, "no script element made it into the page");
    assert!(!title.contains("owned"), "{title}");
    assert!(foreign.lock().unwrap().is_empty(), "the page fetched from elsewhere: {:?}", foreign.lock().unwrap());
    assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{} bytes", png.len());
    let artefact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("search-page.png");
    std::fs::write(&artefact, &png).unwrap();
    eprintln!("screenshot: {}", artefact.display());

    // OpenSearch 1.1: the description's elements, and its template filled in answers.
    let xml = http.get(format!("{base}/opensearch.xml")).send().await.unwrap();
    assert!(xml.headers()["content-type"].to_str().unwrap().starts_with("application/opensearchdescription+xml"));
    let xml = xml.text().await.unwrap();
    let (root, namespace, fields, urls) = opensearch(&xml);
    assert_eq!(root, "OpenSearchDescription");
    assert_eq!(namespace.as_deref(), Some("http://a9.com/-/spec/opensearch/1.1/"));
    let short = fields.get("ShortName").expect("ShortName");
    assert!(!short.is_empty() && short.chars().count() <= 16, "{short}");
    assert!(fields.get("Description").is_some_and(|d| !d.is_empty() && d.chars().count() <= 1024));
    let html_template = urls.iter().find(|(t, _)| t == "text/html").map(|(_, t)| t.clone()).expect("a text/html Url");
    assert!(urls.iter().any(|(t, _)| t == "application/json"), "{urls:?}");
    assert!(html_template.contains("{searchTerms}"));
    let filled = fill(&html_template, &question);
    let answer = http.get(&filled).send().await.unwrap();
    assert_eq!(answer.status(), 200, "{filled}");
    let answer = answer.text().await.unwrap();
    assert!(answer.contains(&format!("/t/{}\"", topic.slug)), "{filled} answers the question: {answer}");

    // SearXNG's generic JSON engine with the book's settings.
    let engine = searxng_engine();
    let search_url = engine["search_url"].as_str().unwrap();
    let (_, path) = search_url.split_once("://").and_then(|(_, rest)| rest.split_once('/')).expect("a path");
    let asked = format!(
        "{base}/{}",
        path.replace("{query}", &url::form_urlencoded::byte_serialize(question.as_bytes()).collect::<String>())
            .replace("{pageno}", "1")
    );
    let json: serde_json::Value = http.get(&asked).send().await.unwrap().json().await.unwrap();
    let results = json_query(&json, &query_path(engine["results_query"].as_str().unwrap()));
    let results =
        results.first().and_then(|r| r.as_array()).unwrap_or_else(|| panic!("results_query finds the results: {json}"));
    assert!(!results.is_empty(), "{json}");
    let field = |r: &serde_json::Value, key: &str| -> Option<String> {
        let found = json_query(r, &query_path(engine[key].as_str().unwrap()));
        found.first().and_then(|v| v.as_str()).map(str::to_string)
    };
    for r in results {
        let url = field(r, "url_query").unwrap_or_else(|| panic!("url_query maps {r}"));
        assert!(url.starts_with("http://"), "{url}");
        assert!(field(r, "title_query").is_some_and(|t| !t.is_empty()), "{r}");
        assert!(field(r, "content_query").is_some_and(|t| !t.is_empty()), "{r}");
    }
    assert!(field(&results[0], "url_query").unwrap().ends_with(&format!("/t/{}", topic.slug)), "{json}");
    assert_eq!(results[0]["published_date"], "2026-03-01", "{json}");
    // The stored copy of the first result, for a page that is gone.
    let id = results[0]["id"].as_str().unwrap();
    let copy = http.get(format!("{base}/find/doc/{id}?q=tides")).send().await.unwrap();
    assert_eq!(copy.status(), 200);
    let copy = copy.text().await.unwrap();
    assert!(copy.contains("this node&#39;s index") || copy.contains("this node's index"), "{copy}");
    assert!(copy.contains(&format!("/t/{}", topic.slug)), "{copy}");
    let hostile_id = json_query(
        &http
            .get(format!("{base}/find.json?q=octopus+skin+colour"))
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap(),
        &["results"],
    )[0][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let copy = http.get(format!("{base}/find/doc/{hostile_id}")).send().await.unwrap().text().await.unwrap();
    assert!(
        copy.contains("<h1>&lt;script&gt;document.title=&#39;owned&#39;&lt;/script&gt; Octopus camouflage</h1>"),
        "{copy}"
    );
    assert!(copy.contains("chromatophores") && !copy.contains("<script"), "{copy}");
    if engine["paging"].as_bool() == Some(true) {
        let second = asked.replace("page=1", "page=2");
        let status = http.get(&second).send().await.unwrap().status();
        assert_eq!(status, 200, "{second}");
    }

    // Bounds: JSON errors.
    let long = "x".repeat(600);
    for (path, code) in [
        (format!("/find.json?q={long}"), "query_too_long"),
        (format!("/find?q={long}"), "query_too_long"),
        ("/find.json?q=tides&per_page=51".to_string(), "bad_per_page"),
        ("/find.json?q=tides&page=11".to_string(), "bad_page"),
        ("/find.json?q=tides&page=zero".to_string(), "bad_page"),
        ("/find.json?q=tides&page=1&page=2".to_string(), "bad_request"),
        ("/find.json".to_string(), "empty_query"),
    ] {
        let r = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 400, "{path}");
        let v: serde_json::Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], code, "{path}: {v}");
    }
    // Nothing of the operator's API on this address.
    for path in ["/status", "/search?q=tides", "/documents", "/"] {
        let r = http.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
    let r = http.post(format!("{base}/seeds")).body("{}").send().await.unwrap();
    assert!(r.status() == 404 || r.status() == 405, "{}", r.status());
    // The rate limit: the requests above took most of the thirty.
    let mut limited = None;
    for _ in 0..80 {
        let r = http.get(format!("{base}/opensearch.xml")).send().await.unwrap();
        if r.status() == 429 {
            limited = Some(r);
            break;
        }
        assert_eq!(r.status(), 200);
    }
    let limited = limited.expect("a client past its rate is refused");
    let wait: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    let v: serde_json::Value = limited.json().await.unwrap();
    assert_eq!(v["error"]["code"], "rate_limited", "{v}");
    // The operator's API serves the page too, without the limit.
    for _ in 0..20 {
        let r = http.get(format!("http://{}/opensearch.xml", node.api)).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }

    node.shutdown().await;
}

/// An OpenSearch description's root element, its namespace, its text fields and its `Url`s
/// (type, template).
fn opensearch(xml: &str) -> (String, Option<String>, BTreeMap<String, String>, Vec<(String, String)>) {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let (mut root, mut namespace) = (String::new(), None);
    let (mut fields, mut urls) = (BTreeMap::new(), Vec::new());
    let mut open: Option<String> = None;
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let attr = |key: &str| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.as_ref() == key.as_bytes())
                        .map(|a| a.unescape_value().unwrap().into_owned())
                };
                if root.is_empty() {
                    root = name.clone();
                    namespace = attr("xmlns");
                } else if name == "Url" {
                    urls.push((attr("type").expect("a Url has a type"), attr("template").expect("and a template")));
                }
                open = Some(name);
            }
            Event::Text(t) => {
                if let Some(name) = &open {
                    fields.insert(name.clone(), t.unescape().unwrap().into_owned());
                }
            }
            Event::End(_) => open = None,
            Event::Eof => break,
            _ => {}
        }
    }
    (root, namespace, fields, urls)
}

/// An OpenSearch template with `{searchTerms}` filled in and its optional parameters left
/// empty, as a client that has no value for them does.
fn fill(template: &str, terms: &str) -> String {
    let mut out =
        template.replace("{searchTerms}", &url::form_urlencoded::byte_serialize(terms.as_bytes()).collect::<String>());
    while let Some(start) = out.find('{') {
        let end = out[start..].find('}').map(|e| start + e).expect("a closed parameter");
        assert!(out[start..end].ends_with('?'), "a required parameter besides searchTerms: {}", &out[start..=end]);
        out.replace_range(start..=end, "");
    }
    out
}
