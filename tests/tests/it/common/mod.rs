#![allow(dead_code)]
//! Shared setup of the cross-crate tests.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use weft_config::Config;
use weft_simnet::WebServer;

/// A node config for crawling `host` on the loopback test server: private networks allowed,
/// the host pinned to 127.0.0.1, a small seen-set, the API on an ephemeral port, `/` as seed,
/// and the real embedding model (installed by `scripts/setup.sh`) for the index.
pub fn loopback_config(server: &WebServer, host: &str, data_dir: &Path, delay_ms: u64) -> Config {
    let mut c = Config { data_dir: data_dir.to_path_buf(), ..Default::default() };
    c.fetch.allow_private_networks = true;
    let lo: IpAddr = "127.0.0.1".parse().expect("loopback address");
    c.fetch.resolve = BTreeMap::from([(host.to_string(), lo)]);
    c.politeness.default_delay_ms = delay_ms;
    c.frontier.seen_capacity = 10_000;
    c.api.listen = "127.0.0.1:0".parse().expect("socket address");
    c.crawl.seeds = vec![server.url(host, "/")];
    c.embed = weft_index::testing::embed_config();
    c
}

/// A network member's config for crawling every host of the loopback server: no seeds of its
/// own, external links followed, fetches signed `WeftTestNode{n}` (so the server's log tells the
/// nodes apart), p2p on loopback.
pub fn member_config(server: &WebServer, data_dir: &Path, n: usize, bootstrap: Vec<String>, delay_ms: u64) -> Config {
    let mut c = loopback_config(server, "unused.test", data_dir, delay_ms);
    c.crawl.seeds.clear();
    c.crawl.follow_external_links = true;
    let lo: IpAddr = "127.0.0.1".parse().expect("loopback address");
    c.fetch.resolve = server.hosts().into_iter().map(|h| (h, lo)).collect();
    c.fetch.user_agent = format!("WeftTestNode{n}");
    c.p2p.enabled = true;
    c.p2p.listen = vec!["/ip4/127.0.0.1/tcp/0".into()];
    c.p2p.bootstrap = bootstrap;
    c
}

/// A member of a test network, run on its own task: its network handle, index and crawler at
/// hand, its API on an ephemeral port.
pub struct Member {
    pub net: weft_p2p::NetworkHandle,
    pub index: std::sync::Arc<weft_node::IndexService>,
    pub crawler: weft_node::Crawler,
    pub api: std::net::SocketAddr,
    stop: tokio::sync::watch::Sender<bool>,
    run: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Member {
    /// Node `n` crawling only its seeds (depth 0), leaving within 5 s, bootstrapped from
    /// `bootstrap`, with `tweak` applied to its [`member_config`]; returns once it listens.
    pub async fn start(
        server: &WebServer,
        dir: &Path,
        n: usize,
        bootstrap: Vec<String>,
        tweak: impl FnOnce(&mut Config),
    ) -> Member {
        let mut c = member_config(server, dir, n, bootstrap, 0);
        c.crawl.max_depth = 0;
        c.p2p.leave_timeout_secs = 5;
        tweak(&mut c);
        let node = weft_node::Node::open(c).unwrap();
        let net = node.network().unwrap().clone();
        let listening = net.wait_for(|s| !s.listen_addrs.is_empty());
        tokio::time::timeout(std::time::Duration::from_secs(10), listening).await.unwrap();
        let (index, crawler) = (node.index().unwrap().clone(), node.crawler().clone());
        let (stop, rx) = tokio::sync::watch::channel(false);
        let (api_tx, api_rx) = tokio::sync::oneshot::channel();
        let run = tokio::spawn(node.run(weft_node::RunOptions::default(), rx, move |a| {
            let _ = api_tx.send(a);
        }));
        Member { net, index, crawler, api: api_rx.await.unwrap(), stop, run }
    }

    /// Stops the node gracefully (a leave) and waits until it has.
    pub async fn stop(self) {
        self.stop.send(true).unwrap();
        self.run.await.unwrap().unwrap();
    }

    /// Goes away as a crashed process does: its connections close, it says goodbye to no one,
    /// and nothing more of it runs.
    pub fn crash(self) {
        self.net.stop();
        self.run.abort();
    }

    /// Its first listen address, for others to bootstrap from.
    pub fn bootstrap(&self) -> Vec<String> {
        vec![self.net.status().listen_addrs[0].clone()]
    }
}

pub use weft_test_support::{one_network_at_a_time, one_of_several_networks, until, Running, WorkDir};

/// A data dir for this test's node: removed when the test passes, kept under
/// `target/test-failures/<module>-<test>[-n]/` when it fails (in CI too), with the node's files
/// and log.
pub fn work_dir() -> WorkDir {
    log_if_asked();
    WorkDir::for_this_test().expect("a temporary dir")
}

/// With `RUST_LOG` set, the nodes' logs go to the test's captured output (printed when it fails).
fn log_if_asked() {
    if std::env::var_os("RUST_LOG").is_some() {
        let filter = tracing_subscriber::EnvFilter::from_default_env();
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    }
}

/// Waits until every one of `nets` counts `n` members; after `limit`, fails the test with each
/// node's roster as it stands (its stage, the members it counts, the last request of it a member
/// declined, the last event it refused), so that a network that did not form says why.
pub async fn all_members(nets: &[&weft_p2p::NetworkHandle], n: usize, limit: std::time::Duration) {
    let started = std::time::Instant::now();
    while !nets.iter().all(|net| net.status().members.len() == n) {
        if started.elapsed() > limit {
            let each: Vec<String> = nets
                .iter()
                .enumerate()
                .map(|(i, net)| {
                    let s = net.status();
                    let r = &s.roster;
                    format!(
                        "node {i} ({}): {} counting {} members ({} on the ring, {} connected); declined: {:?}; refused {}: {:?}",
                        net.peer_id(),
                        r.stage,
                        r.members,
                        s.members.len(),
                        s.connected_peers,
                        r.last_declined,
                        r.refused_events,
                        r.last_refusal
                    )
                })
                .collect();
            panic!("{n} members not formed in {limit:?}:\n{}", each.join("\n"));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    eprintln!("waited {:.1} s for {n} members", started.elapsed().as_secs_f64());
}
