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
