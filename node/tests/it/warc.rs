//! WARC out, read back by `warcio` (the Python WARC library archivists use, installed in a venv
//! by `scripts/setup.sh`): a node that keeps responses (`crawl.keep_responses`) crawls a small
//! loopback site — one page sent gzip-encoded — and `weft export --format warc` writes, through
//! the running node's API and again from the data dir once it stopped, a `warcinfo` record and a
//! `request` and `response` record per page whose bodies are the pages the server sent;
//! `--format wet` writes each page's extracted text as a `conversion` record.

use crate::common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weft_simnet::{Resource, Site, WebServer};

/// The venv's Python with warcio, as `scripts/setup.sh` makes it.
fn warcio_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tools/warcio/bin/python");
    let ok = Command::new(&python).args(["-c", "import warcio"]).output().is_ok_and(|o| o.status.success());
    assert!(ok, "warcio is missing at {}: run scripts/setup.sh", python.display());
    python
}

/// Every record warcio reads from `file`: type, target URI, HTTP status, the payload as
/// warcio decodes it, and the request's User-Agent.
fn read_with_warcio(file: &Path) -> Vec<serde_json::Value> {
    let script = r#"
import sys, json
from warcio.archiveiterator import ArchiveIterator
with open(sys.argv[1], 'rb') as f:
    for r in ArchiveIterator(f):
        out = {'type': r.rec_type, 'uri': r.rec_headers.get_header('WARC-Target-URI')}
        if r.http_headers is not None:
            out['status'] = r.http_headers.get_statuscode()
            out['user_agent'] = r.http_headers.get_header('user-agent')
        out['payload'] = r.content_stream().read().decode('utf-8', 'replace')
        print(json.dumps(out))
"#;
    let out = Command::new(warcio_python()).args(["-c", script]).arg(file).output().unwrap();
    assert!(out.status.success(), "warcio could not read {}: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn export(args: &[&str]) -> String {
    let out = Command::new(common::WEFT).arg("export").args(args).output().expect("weft export runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

fn page(n: usize, links: &str) -> String {
    format!(
        "<!doctype html><html><head><title>Archive page {n}</title></head><body><main><h1>Archive page {n}</h1>\
         <p>Page {n} tells of the lighthouse keepers of the northern coast, who kept the lamps burning \
         through the winter storms and wrote down every ship that passed in their logbooks.</p>{links}</main></body></html>"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_responses_go_out_as_warc_and_text_as_wet_that_warcio_reads() {
    let python = warcio_python();
    let links = "<a href=\"/a\">a</a> <a href=\"/b\">b</a> <a href=\"/zipped\">zipped</a>";
    let mut bodies: BTreeMap<&str, String> = BTreeMap::new();
    bodies.insert("/", page(0, links));
    bodies.insert("/a", page(1, ""));
    bodies.insert("/b", page(2, ""));
    bodies.insert("/zipped", page(3, ""));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bodies["/zipped"].as_bytes()).unwrap();
    let zipped = Resource::Raw {
        status: 200,
        headers: vec![("content-type".into(), "text/html".into()), ("content-encoding".into(), "gzip".into())],
        body: gz.finish().unwrap(),
    };
    let site = Site::new("archive.test")
        .with("/robots.txt", Resource::robots(""))
        .html("/", &bodies["/"])
        .html("/a", &bodies["/a"])
        .html("/b", &bodies["/b"])
        .with("/zipped", zipped);
    let server = WebServer::start(vec![site]).await.unwrap();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    let mut c = common::config(&server, &data, 0);
    c.index.enabled = true;
    c.embed = weft_index::testing::embed_config();
    c.crawl.keep_responses = true;
    c.crawl.seeds = vec![server.url("archive.test", "/")];
    let node = common::Running::start(c).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let s = node.get("/status").await;
        if s["state"] == "idle" && s["index"]["documents"].as_u64() == Some(4) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the crawl did not finish: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let api = node.api.to_string();
    let err = export(&["--api", &api, "--quiet", "--format", "warc", "-o", &out("live.warc.gz")]);
    assert!(err.contains("exported 4 documents"), "{err}");
    node.shutdown().await;

    let config = dir.path().join("weft.toml");
    std::fs::write(&config, format!("data_dir = \"{}\"\n[api]\nlisten = \"127.0.0.1:1\"\n", data.display())).unwrap();
    let config = config.to_string_lossy().into_owned();
    export(&["--config", &config, "--quiet", "--format", "warc", "-o", &out("offline.warc.gz")]);
    export(&["--config", &config, "--quiet", "--format", "wet", "-o", &out("pages.wet.gz")]);

    // warcio's own check: every record carries a digest of its block (and responses and
    // conversions of their payload) and every digest matches.
    for file in ["live.warc.gz", "offline.warc.gz", "pages.wet.gz"] {
        let checked = Command::new(&python)
            .args(["-c", "import sys; from warcio.cli import main; main(sys.argv[1:])", "check", "-v"])
            .arg(out(file))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&checked.stdout).into_owned();
        assert!(checked.status.success(), "warcio check {file}: {said}{}", String::from_utf8_lossy(&checked.stderr));
        let passed = said.matches("digest pass").count();
        let records = said.matches("WARC-Record-ID").count();
        assert!(records >= 5 && passed == records, "{file}: {passed} of {records} digests checked and passed:\n{said}");
    }

    let live = read_with_warcio(Path::new(&out("live.warc.gz")));
    let offline = read_with_warcio(Path::new(&out("offline.warc.gz")));
    assert_eq!(live[1..], offline[1..], "the same records from the node's API and from its data dir");
    assert_eq!(live[0]["type"], "warcinfo", "{:?}", live[0]);
    let mut responses = BTreeMap::new();
    for r in &live[1..] {
        let path = r["uri"].as_str().unwrap().split_once(".test:").unwrap().1.split_once('/').unwrap().1;
        let path = format!("/{path}");
        match r["type"].as_str().unwrap() {
            "request" => assert!(r["user_agent"].as_str().unwrap().starts_with("WeftBot/"), "{r}"),
            "response" => {
                assert_eq!(r["status"], "200", "{r}");
                responses.insert(path, r["payload"].as_str().unwrap().to_string());
            }
            other => panic!("unexpected record type {other}: {r}"),
        }
    }
    assert_eq!(live.len(), 1 + 2 * 4, "warcinfo, then a request and a response per page");
    for (path, body) in &bodies {
        assert_eq!(responses.get(*path), Some(body), "{path}: the body the server sent (decoded when gzipped)");
    }

    let wet = read_with_warcio(Path::new(&out("pages.wet.gz")));
    assert_eq!(wet[0]["type"], "warcinfo");
    assert_eq!(wet.len(), 5, "{wet:?}");
    for r in &wet[1..] {
        assert_eq!(r["type"], "conversion", "{r}");
        let text = r["payload"].as_str().unwrap();
        assert!(text.starts_with("Archive page ") && text.contains("lighthouse keepers"), "{r}");
    }
}
