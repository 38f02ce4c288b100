//! The Debian package, for real on this machine: cargo-deb (installed by `scripts/deb.sh tool`)
//! packages the `weft` these tests run, as `scripts/deb.sh` packages the release build; `dpkg -i`
//! installs it; `systemd-analyze verify` checks its unit; the packaged `weft doctor` and a short
//! crawl of a loopback site run as the `weft` user with the packaged config, finding the model
//! beside the binary (the working directory is `/`); `dpkg -r` keeps the config and the state,
//! `dpkg --purge` leaves nothing behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use weft_simnet::{Resource, Site, WebServer};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program).args(args).output().unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn ok(program: &str, args: &[&str]) -> String {
    let out = run(program, args);
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `/usr/bin/weft ARGS` as the `weft` user, from `/`, with nothing of this test's environment
/// but what `env` names.
fn as_weft(env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", "weft", "--", "env", "-i", "PATH=/usr/bin:/bin", "HOME=/var/lib/weft", "RUST_LOG=info"]);
    for (k, v) in env {
        c.arg(format!("{k}={v}"));
    }
    c.arg("/usr/bin/weft").args(args).current_dir("/");
    c
}

/// Purges the package however the test ends, so a failure leaves this machine as it was.
struct Installed;

impl Drop for Installed {
    fn drop(&mut self) {
        let _ = run("dpkg", &["--purge", "weft"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_package_installs_runs_as_its_user_and_purges_clean() {
    let cargo_deb = workspace().join("target/tools/cargo-deb/bin/cargo-deb");
    let uid = run("id", &["-u"]).stdout;
    if String::from_utf8_lossy(&uid).trim() != "0" {
        return common::skip("installing a package needs root");
    }
    for tool in ["dpkg", "systemd-analyze", "runuser", "useradd"] {
        if !run("sh", &["-c", &format!("command -v {tool}")]).status.success() {
            return common::skip(&format!("{tool} is not installed"));
        }
    }
    if !cargo_deb.is_file() {
        return common::skip(&format!("{} is missing: run `bash scripts/deb.sh tool`", cargo_deb.display()));
    }
    if run("dpkg", &["-s", "weft"]).status.success() {
        return common::skip("a weft package is installed on this machine; the test would replace it");
    }

    // Package the weft these tests run: cargo-deb takes `target/release/` from CARGO_TARGET_DIR.
    let dir = common::work_dir();
    let release = dir.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    std::fs::copy(common::WEFT, release.join("weft")).unwrap();
    ok(common::WEFT, &["manpages", release.join("man").to_str().unwrap()]);
    let out_dir = dir.path().join("deb");
    let started = Instant::now();
    let built = Command::new(&cargo_deb)
        .args(["deb", "-p", "weft-node", "--no-build", "--strip", "--fast", "--offline", "--output"])
        .arg(&out_dir)
        .current_dir(workspace())
        .env("CARGO_TARGET_DIR", dir.path().join("target"))
        .output()
        .unwrap();
    assert!(built.status.success(), "cargo-deb: {}", String::from_utf8_lossy(&built.stderr));
    let deb = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .unwrap();
    eprintln!(
        "packaged {} ({} MiB) in {:?}",
        deb.display(),
        std::fs::metadata(&deb).unwrap().len() >> 20,
        started.elapsed()
    );
    let fields = ok("dpkg-deb", &["-f", deb.to_str().unwrap(), "Package", "Depends", "Recommends"]);
    assert!(
        fields.contains("Package: weft") && fields.contains("libc6") && fields.contains("Recommends: chromium"),
        "{fields}"
    );
    let listing = ok("dpkg-deb", &["-c", deb.to_str().unwrap()]);
    for file in [
        "./usr/lib/weft/weft",
        "./usr/bin/weft",
        "./usr/lib/weft/models/all-MiniLM-L6-v2-int8/model.onnx",
        "./usr/lib/weft/models/all-MiniLM-L6-v2-int8/tokenizer.json",
        "./usr/lib/weft/models/onnxruntime-1.31.1/libonnxruntime.so",
        "./etc/weft/weft.toml",
        "/systemd/system/weft.service",
        "./usr/share/man/man1/weft.1",
        "./usr/share/man/man1/weft-join.1",
    ] {
        assert!(listing.contains(file), "{file} is not in the package:\n{listing}");
    }
    let conffiles = ok("sh", &["-c", &format!("dpkg-deb --ctrl-tarfile {} | tar -xO ./conffiles", deb.display())]);
    assert_eq!(conffiles.trim(), "/etc/weft/weft.toml", "the config is a conffile");

    // Install.
    let installed = Installed;
    let install_started = Instant::now();
    ok("dpkg", &["-i", deb.to_str().unwrap()]);
    eprintln!("installed in {:?}", install_started.elapsed());
    let passwd = ok("getent", &["passwd", "weft"]);
    assert!(
        passwd.contains(":/var/lib/weft:/usr/sbin/nologin"),
        "a system user with its home in the state dir: {passwd}"
    );
    let owner = ok("stat", &["-c", "%U:%G %a", "/var/lib/weft"]);
    assert_eq!(owner.trim(), "weft:weft 750");
    let unit = Path::new("/lib/systemd/system/weft.service");
    let unit = if unit.is_file() { unit.to_path_buf() } else { PathBuf::from("/usr/lib/systemd/system/weft.service") };
    let verify = run("systemd-analyze", &["verify", unit.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&verify.stderr).into_owned();
    assert!(verify.status.success(), "systemd-analyze verify: {said}");
    assert!(!said.contains("weft.service:"), "systemd-analyze has something to say about the unit: {said}");
    let text = std::fs::read_to_string(&unit).unwrap();
    for line in [
        "User=weft",
        "StateDirectory=weft",
        "ProtectSystem=strict",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
        "MemoryMax=",
    ] {
        assert!(text.contains(line), "{line} is not in the unit");
    }

    // The packaged doctor, as the weft user: the model is found beside the binary, the state
    // dir is writable, and the packaged config's missing contact is the one thing to fix.
    let doctor = as_weft(&[], &["doctor", "--json"]).output().unwrap();
    let checks: Vec<serde_json::Value> = serde_json::from_slice(&doctor.stdout)
        .unwrap_or_else(|e| panic!("doctor's JSON: {e}: {}", String::from_utf8_lossy(&doctor.stderr)));
    let verdict =
        |name: &str| checks.iter().find(|c| c["name"] == name).map(|c| c["verdict"].as_str().unwrap().to_string());
    assert_eq!(verdict("model and ONNX Runtime").as_deref(), Some("ok"), "{checks:?}");
    let model = checks.iter().find(|c| c["name"] == "model and ONNX Runtime").unwrap();
    assert!(model["detail"].as_str().unwrap().starts_with("/usr/lib/weft/models/"), "the package's own model: {model}");
    assert_eq!(verdict("data dir").as_deref(), Some("ok"), "{checks:?}");
    assert_eq!(
        verdict("contact for site owners").as_deref(),
        Some("fail"),
        "the packaged config has no contact yet: {checks:?}"
    );
    assert!(!doctor.status.success(), "a failed check fails the doctor");

    // A short crawl of a loopback site as the weft user, with the packaged config; what the test
    // needs besides it comes from the environment and flags, each said why.
    let site = Site::new("127.0.0.1")
        .with("/robots.txt", Resource::robots(""))
        .html("/", &common::coast::hub(&["/a".to_string(), "/b".to_string()]))
        .html("/a", &common::coast::article(1, common::coast::Version::V1))
        .html("/b", &common::coast::article(2, common::coast::Version::V1));
    let server = WebServer::start(vec![site]).await.unwrap();
    let api = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let seed = server.url("127.0.0.1", "/");
    let crawl_started = Instant::now();
    let mut crawl = as_weft(
        &[
            // The site is on loopback, which a public node refuses to fetch.
            ("WEFT_FETCH__ALLOW_PRIVATE_NETWORKS", "true"),
            // One node here: the packaged p2p.enabled would listen on 0.0.0.0:7701, which another
            // test's node on this machine may hold; the network has its own tests.
            ("WEFT_P2P__ENABLED", "false"),
        ],
        &[
            "start",
            "--contact",
            "mailto:ops@crawler.weft-volunteers.org",
            "--seed",
            &seed,
            "--api-listen",
            &api,
            "--exit-when-idle",
        ],
    );
    let child = crawl.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    // --exit-when-idle ends it; a node that never goes idle is stopped (runuser passes the
    // signal on) and fails the test.
    let pid = child.id().to_string();
    let waited =
        tokio::time::timeout(Duration::from_secs(300), tokio::task::spawn_blocking(move || child.wait_with_output()));
    let Ok(out) = waited.await else {
        run("kill", &[&pid]);
        panic!("the packaged node did not finish its crawl of three pages within 300 s");
    };
    let out = out.unwrap().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "the packaged node's crawl: {}\n{log}", out.status);
    eprintln!("crawled as the weft user in {:?}", crawl_started.elapsed());
    let fetched: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    for path in ["/robots.txt", "/", "/a", "/b"] {
        assert!(fetched.iter().any(|p| p == path), "{path} was not fetched: {fetched:?}");
    }
    let search = as_weft(
        &[],
        &[
            "search",
            "--json",
            "--local",
            "--api",
            "127.0.0.1:1",
            "the",
            "tide",
            "met",
            "the",
            "sailor",
            "near",
            "the",
            "harbour",
        ],
    )
    .output()
    .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&search.stdout)
        .unwrap_or_else(|e| panic!("search's JSON: {e}: {}", String::from_utf8_lossy(&search.stderr)));
    assert!(answer["hits"].as_array().is_some_and(|h| !h.is_empty()), "the packaged node indexed the pages: {answer}");
    let owners = ok("sh", &["-c", "find /var/lib/weft -not -user weft | head"]);
    assert!(owners.trim().is_empty(), "everything in the state dir belongs to weft: {owners}");

    // Remove keeps the conffile and the state; purge keeps nothing.
    ok("dpkg", &["-r", "weft"]);
    assert!(!Path::new("/usr/lib/weft").exists() && !Path::new("/usr/bin/weft").exists());
    assert!(Path::new("/etc/weft/weft.toml").is_file(), "dpkg -r keeps the conffile");
    assert!(Path::new("/var/lib/weft").is_dir(), "dpkg -r keeps the state");
    ok("dpkg", &["--purge", "weft"]);
    std::mem::forget(installed);
    for gone in [
        "/etc/weft",
        "/var/lib/weft",
        "/usr/lib/weft",
        "/usr/share/man/man1/weft.1.gz",
        "/usr/share/man/man1/weft.1",
        unit.to_str().unwrap(),
    ] {
        assert!(!Path::new(gone).exists(), "{gone} is left after the purge");
    }
    assert!(!run("getent", &["passwd", "weft"]).status.success(), "the weft user is left after the purge");
    assert!(!run("getent", &["group", "weft"]).status.success(), "the weft group is left after the purge");
    assert!(!run("dpkg", &["-s", "weft"]).status.success());
}
