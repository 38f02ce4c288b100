//! Two real `weft` processes: the first starts a network (`--p2p`) and logs its address, the
//! second joins with `--bootstrap <multiaddr>`; `weft status` shows peers, members and the
//! ring share.

use crate::common;

use common::{spawn_weft, WEFT};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn write_config(dir: &Path) -> std::path::PathBuf {
    let toml = format!(
        "data_dir = \"{}\"\n[index]\nenabled = false\n[api]\nlisten = \"127.0.0.1:0\"\n\
         [fetch]\ncontact_url = \"mailto:ops@crawler.weft-volunteers.org\"\n\
         [p2p]\nlisten = [\"/ip4/127.0.0.1/tcp/0\"]\n",
        dir.join("data").display()
    );
    let path = dir.join("weft.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

fn status(api: &str) -> serde_json::Value {
    let out = Command::new(WEFT).args(["status", "--json", "--api", api]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_second_node_joins_the_first_with_bootstrap() {
    let (a_dir, b_dir) = (common::work_dir(), common::work_dir());
    let (mut a, mut a_logs) = spawn_weft(&write_config(a_dir.path()), &["--p2p"]);
    let boot = a_logs.field("addr", "/p2p/");
    let a_api = a_logs.field("addr", "127.0.0.1:");
    assert!(boot.starts_with("/ip4/127.0.0.1/tcp/"), "{boot}");

    let (mut b, mut b_logs) = spawn_weft(&write_config(b_dir.path()), &["--bootstrap", &boot]);
    let b_api = b_logs.field("addr", "127.0.0.1:");
    let deadline = Instant::now() + Duration::from_secs(60);
    let (sa, sb) = loop {
        let (sa, sb) = (status(&a_api), status(&b_api));
        if sa["network"]["members"].as_array().map(Vec::len) == Some(2)
            && sb["network"]["members"].as_array().map(Vec::len) == Some(2)
        {
            break (sa, sb);
        }
        assert!(Instant::now() < deadline, "no convergence: {sa} {sb}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(sa["network"]["members"], sb["network"]["members"]);
    assert_eq!(sa["network"]["joining"]["state"], "first");
    assert_eq!(sb["network"]["joining"]["state"], "joined");
    let share = sa["network"]["ring_share"].as_f64().unwrap() + sb["network"]["ring_share"].as_f64().unwrap();
    assert!((share - 1.0).abs() < 1e-6, "{share}");
    // Started together: neither is a newcomer to an older network, both hold all their points.
    for s in [&sa, &sb] {
        assert_eq!(s["network"]["admitted"].as_f64(), Some(1.0), "{s}");
    }
    let human = Command::new(WEFT).args(["status", "--api", &b_api]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("network        joined") && text.contains("2 members"), "{text}");

    // The identity is kept: a restart has the same peer id.
    let peer = sb["network"]["peer_id"].as_str().unwrap().to_string();
    b.kill().unwrap();
    b.wait().unwrap();
    let (mut b, mut b_logs) = spawn_weft(&write_config(b_dir.path()), &["--bootstrap", &boot]);
    assert_eq!(b_logs.field("peer_id", "12D3KooW"), peer);
    for child in [&mut a, &mut b] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

fn join(file: &Path, args: &[&str]) -> std::process::Output {
    Command::new(WEFT).args(["join", "--config"]).arg(file).args(args).output().unwrap()
}

#[test]
fn weft_join_writes_the_peer_into_the_config_and_the_node_joins_through_it() {
    let (a_dir, b_dir) = (common::work_dir(), common::work_dir());
    let (mut a, mut a_logs) = spawn_weft(&write_config(a_dir.path()), &["--p2p"]);
    let boot = a_logs.field("addr", "/p2p/");
    let peer = boot.split_once("/p2p/").unwrap().1;

    // A volunteer's config with comments, and neither a peer nor a contact in it.
    let file = b_dir.path().join("weft.toml");
    let original = format!(
        "# my node\ndata_dir = \"{}\"\n\n[crawl]\nconcurrency = 4 # a small box\n\n[api]\nlisten = \"127.0.0.1:0\"\n\n\
         [p2p]\nlisten = [\"/ip4/127.0.0.1/tcp/0\"]\n",
        b_dir.path().join("data").display()
    );
    std::fs::write(&file, &original).unwrap();

    // Refused before writing: a member that does not answer, then no contact.
    let dead = format!("/ip4/127.0.0.1/tcp/1/p2p/{peer}");
    let out = join(&file, &["--no-start", "--contact", "mailto:ops@crawler.weft-volunteers.org", &dead]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no member to join through answers"), "{err}");
    let out = join(&file, &["--no-start", &boot]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no contact for site owners"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "a refused join leaves the file as it was");

    // Written, with the file's comments and other keys kept. Where systemd does not run (this
    // machine, CI), the service step says how to start the node instead.
    let systemd = Path::new("/run/systemd/system").is_dir();
    let mut args = vec!["--contact", "mailto:ops@crawler.weft-volunteers.org", &boot];
    if systemd {
        args.insert(0, "--no-start");
    }
    let out = join(&file, &args);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        said.contains("reachable in") && said.contains(&format!("weft start --config {}", file.display())),
        "{said}"
    );
    if !systemd {
        assert!(said.contains("systemd does not run on this machine"), "{said}");
    }
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("# my node\n") && written.contains("concurrency = 4 # a small box"), "{written}");
    let parsed: toml::Table = written.parse().unwrap();
    assert_eq!(parsed["p2p"]["bootstrap"].as_array().unwrap()[0].as_str(), Some(boot.as_str()));
    assert_eq!(parsed["p2p"]["enabled"].as_bool(), Some(true));
    assert_eq!(parsed["fetch"]["contact_url"].as_str(), Some("mailto:ops@crawler.weft-volunteers.org"));

    // The config alone, no flags, takes the node into the network.
    let (mut b, mut b_logs) = spawn_weft(&file, &[]);
    let b_api = b_logs.field("addr", "127.0.0.1:");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s = status(&b_api);
        if s["network"]["members"].as_array().map(Vec::len) == Some(2) {
            assert_eq!(s["network"]["joining"]["state"], "joined", "{s}");
            break;
        }
        assert!(Instant::now() < deadline, "the joined node did not reach the network: {s}");
        std::thread::sleep(Duration::from_millis(200));
    }
    for child in [&mut a, &mut b] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
