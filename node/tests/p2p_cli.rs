//! Two real `weft` processes: the first starts a network (`--p2p`) and logs its address, the
//! second joins with `--bootstrap <multiaddr>`; `weft status` shows peers, members and the
//! ring share.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

fn write_config(dir: &Path) -> std::path::PathBuf {
    let toml = format!(
        "data_dir = \"{}\"\n[index]\nenabled = false\n[api]\nlisten = \"127.0.0.1:0\"\n\
         [p2p]\nlisten = [\"/ip4/127.0.0.1/tcp/0\"]\nheartbeat_secs = 1\n",
        dir.join("data").display()
    );
    let path = dir.join("weft.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Starts `weft start` with JSON logs; returns the child and a channel of its log lines.
fn start(config: &Path, extra: &[&str]) -> (Child, Logs) {
    let mut child = Command::new(WEFT)
        .args(["--log-format", "json", "start", "--config"])
        .arg(config)
        .args(extra)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("weft starts");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    (child, Logs { rx, seen: Vec::new() })
}

/// The log lines of a node, kept so a search never loses a line another search skipped.
struct Logs {
    rx: Receiver<serde_json::Value>,
    seen: Vec<serde_json::Value>,
}

impl Logs {
    /// The first `fields.<field>` containing `contains`, waiting for it if needed.
    fn field(&mut self, field: &str, contains: &str) -> String {
        let matches = |line: &serde_json::Value| {
            line["fields"][field].as_str().filter(|v| v.contains(contains)).map(str::to_string)
        };
        if let Some(v) = self.seen.iter().find_map(matches) {
            return v;
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.rx.recv_timeout(left).unwrap_or_else(|_| panic!("no log line with {field} ~ {contains}"));
            let found = matches(&line);
            self.seen.push(line);
            if let Some(v) = found {
                return v;
            }
        }
    }
}

fn status(api: &str) -> serde_json::Value {
    let out = Command::new(WEFT).args(["status", "--json", "--api", api]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_second_node_joins_the_first_with_bootstrap() {
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut a, mut a_logs) = start(&write_config(a_dir.path()), &["--p2p"]);
    let boot = a_logs.field("addr", "/p2p/");
    let a_api = a_logs.field("addr", "127.0.0.1:");
    assert!(boot.starts_with("/ip4/127.0.0.1/tcp/"), "{boot}");

    let (mut b, mut b_logs) = start(&write_config(b_dir.path()), &["--bootstrap", &boot]);
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
    let human = Command::new(WEFT).args(["status", "--api", &b_api]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("network        joined") && text.contains("2 members"), "{text}");

    // The identity is kept: a restart has the same peer id.
    let peer = sb["network"]["peer_id"].as_str().unwrap().to_string();
    b.kill().unwrap();
    b.wait().unwrap();
    let (mut b, mut b_logs) = start(&write_config(b_dir.path()), &["--bootstrap", &boot]);
    assert_eq!(b_logs.field("peer_id", "12D3KooW"), peer);
    for child in [&mut a, &mut b] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
