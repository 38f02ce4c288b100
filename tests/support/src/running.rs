//! A node run on its own task in the test's process, as `weft start` runs it, with its API on a
//! free port: started from a config, asked over its API, and stopped gracefully (everything
//! flushed) or as a crash would stop it.

use std::net::SocketAddr;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use weft_config::Config;
use weft_node::{Node, RunOptions};

/// A node run on its own task with its API on.
pub struct Running {
    pub api: SocketAddr,
    pub stop: watch::Sender<bool>,
    pub task: JoinHandle<anyhow::Result<()>>,
    client: reqwest::Client,
}

impl Running {
    /// Opens and runs a node on `config` (its API on, on any free port when the config keeps
    /// the default address); returns once the API listens.
    pub async fn start(mut config: Config) -> Running {
        config.api.enabled = true;
        if config.api.listen == weft_config::ApiConfig::default().listen {
            // Any free port: two tests on the default port (7700) at once, and one failed to
            // start.
            config.api.listen = "127.0.0.1:0".parse().expect("socket address");
        }
        let node = Node::open(config).expect("node opens");
        let (stop, rx) = watch::channel(false);
        let (tx, addr) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(node.run(RunOptions::default(), rx, move |a| {
            let _ = tx.send(a);
        }));
        let client = reqwest::Client::builder().no_proxy().build().expect("an HTTP client");
        let api = match addr.await {
            Ok(api) => api,
            // The node ended before its API listened: say why.
            Err(_) => panic!("the node stopped before its API listened: {:?}", task.await),
        };
        Running { api, stop, task, client }
    }

    /// `GET path` on the node's API, as JSON.
    pub async fn get(&self, path: &str) -> serde_json::Value {
        let resp = self.client.get(format!("http://{}{path}", self.api)).send().await.expect("the API answers");
        resp.json().await.expect("JSON")
    }

    /// `GET path` on the node's API, as text.
    pub async fn text(&self, path: &str) -> String {
        let resp = self.client.get(format!("http://{}{path}", self.api)).send().await.expect("the API answers");
        resp.text().await.expect("text")
    }

    /// Stops the node gracefully and waits until it has flushed everything.
    pub async fn shutdown(self) {
        self.stop.send(true).expect("node still running");
        self.task.await.expect("node task").expect("node stops cleanly");
    }
}
