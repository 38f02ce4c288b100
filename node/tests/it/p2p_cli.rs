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
         [p2p]\nlisten = [\"/ip4/127.0.0.1/tcp/0\"]\nheartbeat_secs = 1\n",
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
