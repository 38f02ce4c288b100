//! The crate's integration tests, one module per subject, linked into one binary (one link
//! of the dependency tree instead of one per file: see docs/src/testing.md).

mod cell_hedging;
mod cell_routing;
mod grid;
mod hostile_postings;
mod hostile_replicas;
mod hostile_roster;
mod hostile_streams;
mod network;
mod versions;

/// A node's network configuration for these tests: TCP on loopback.
pub fn tcp_config(bootstrap: Vec<String>) -> weft_p2p::NetworkConfig {
    let c = weft_config::P2pConfig {
        enabled: true,
        listen: vec!["/ip4/127.0.0.1/tcp/0".into()],
        bootstrap,
        ..weft_config::P2pConfig::default()
    };
    weft_p2p::NetworkConfig::from_config(&c).unwrap()
}

/// Runs the test `name` in a process of its own — this test binary, that test alone — and
/// says whether the caller is that process (then it runs the test's body). For a test that
/// measures the whole process, such as its resident memory, which the crate's other tests
/// (one binary, run side by side) would share.
pub fn alone(name: &str) -> bool {
    const ALONE: &str = "WEFT_TEST_ALONE";
    if std::env::var_os(ALONE).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env(ALONE, "1")
        .output()
        .expect("the test binary runs");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{said}");
    assert!(out.status.success(), "{name}, run alone, failed: {said}");
    assert!(said.contains("1 passed"), "{name} did not run in its own process: {said}");
    false
}

/// `n` nodes on loopback made with `config(bootstrap)`: the first listens, the others join
/// through it. Returns once every node counts all `n` as members.
pub async fn members(n: usize, config: impl Fn(Vec<String>) -> weft_p2p::NetworkConfig) -> Vec<weft_p2p::Started> {
    use std::time::Duration;
    let key = libp2p::identity::Keypair::generate_ed25519;
    let mut nodes = vec![weft_p2p::start(key(), config(vec![])).unwrap()];
    let boot = tcp_addr(&nodes[0].handle).await;
    for _ in 1..n {
        nodes.push(weft_p2p::start(key(), config(vec![boot.clone()])).unwrap());
    }
    for node in &nodes {
        let all = node.handle.wait_for(|s| s.members.len() == n);
        tokio::time::timeout(Duration::from_secs(60), all).await.expect("every node counts every member");
    }
    nodes
}

/// `node`'s TCP listen address, once it listens (within 10 s).
pub async fn tcp_addr(node: &weft_p2p::NetworkHandle) -> String {
    let listens = node.wait_for(|s| s.listen_addrs.iter().any(|a| a.contains("/tcp/")));
    tokio::time::timeout(std::time::Duration::from_secs(10), listens).await.expect("the node listens");
    node.status().listen_addrs.into_iter().find(|a| a.contains("/tcp/")).unwrap()
}
