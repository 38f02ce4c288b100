//! Wiring: from a validated [`Config`] to a running node — storage, frontier, robots cache,
//! fetcher, pipeline (extract, then the index), crawl loop, API and the snapshot timers — and
//! an orderly stop.

use crate::api::{self, AppState};
use crate::browser::{BrowserSettings, LazyPool};
use crate::crawler::{CrawlSettings, Crawler};
use crate::fetcher::Fetcher;
use crate::indexing::{IndexPipeline, IndexService};
use crate::layouts::{load_overrides, LayoutStore};
use crate::metrics::Metrics;
use crate::pipeline::{ExtractPipeline, Pipeline};
use crate::worker::Worker;
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use weft_config::Config;
use weft_frontier::{open_db, Frontier, FrontierSettings, RobotsCache};
use weft_index::LocalIndex;

/// sled's page cache for the node's database.
const DB_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// A node that has opened its state but is not crawling yet.
pub struct Node {
    config: Config,
    crawler: Crawler,
    index: Option<Arc<IndexService>>,
    /// The p2p network and the journal of URLs sent to other members, when `p2p.enabled`.
    network: Option<(weft_p2p::Started, crate::routing::Journal)>,
    /// Layout learning and the JavaScript tier, when `layouts.enabled`.
    layouts: Option<Layouts>,
    /// The node's database (for the disk quota).
    db: sled::Db,
}

/// The parts of layout learning the node runs beside the crawl.
#[derive(Clone)]
pub struct Layouts {
    pub store: LayoutStore,
    pub pool: Arc<LazyPool>,
    teacher_wake: Arc<tokio::sync::Notify>,
}

impl Layouts {
    /// Opens the layout store with the operator's overrides and prepares (does not start) the
    /// browser pool.
    fn open(config: &Config, db: &sled::Db) -> anyhow::Result<Layouts> {
        let la = &config.layouts;
        let path = config.data_dir.join(&la.overrides);
        let overrides = load_overrides(&path)?;
        if !overrides.is_empty() {
            tracing::info!(templates = overrides.len(), file = %path.display(), "override templates loaded");
        }
        let store = LayoutStore::open(db, la.teach_after)?.with_overrides(overrides);
        // Browsers a killed node left behind (the kernel's parent-death signal should have
        // ended them; this is the second wall).
        crate::chromium::reap_orphans(&std::env::temp_dir());
        let pool = Arc::new(LazyPool::new(
            BrowserSettings {
                executable: la.chromium.clone(),
                instances: la.browsers,
                timeout: Duration::from_secs(la.render_timeout_secs),
                ..BrowserSettings::default()
            },
            Duration::from_secs(la.browser_idle_secs),
        ));
        Ok(Layouts { store, pool, teacher_wake: Arc::default() })
    }

    fn worker(&self, config: &Config, metrics: Arc<Metrics>) -> Worker {
        Worker::new(self.store.clone(), &config.layouts, metrics, self.pool.available(), self.teacher_wake.clone())
    }
}

/// How `run` should behave.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Stop when nothing is queued and nothing is in flight (scripts, benchmarks, the demo).
    pub exit_when_idle: bool,
}

impl Node {
    /// Opens the data dir (creating it) and everything stored in it; with `index.enabled`,
    /// loads the embedding model and the local index too.
    pub fn open(config: Config) -> anyhow::Result<Node> {
        let mut service = None;
        let mut layouts = None;
        let (slot, layouts_slot) = (&mut service, &mut layouts);
        let mut node = Node::open_with_pipeline(config, |config, db, metrics| {
            let mut extract = ExtractPipeline::new(&config.extract, metrics.clone());
            if config.layouts.enabled {
                let l = Layouts::open(config, db)?;
                extract = extract.with_worker(l.worker(config, metrics.clone()));
                *layouts_slot = Some(l);
            }
            if !config.index.enabled {
                return Ok(Arc::new(extract) as Arc<dyn Pipeline>);
            }
            let local = LocalIndex::open(db, &config.data_dir, config.embed.dims, &config.index)
                .context("cannot open the local index")?;
            tracing::info!(opened = ?local.opened(), stats = ?local.stats(), "local index opened");
            let improved = extract.improved();
            let started = IndexService::start(config, Arc::new(local), metrics, improved)?;
            *slot = Some(started.clone());
            Ok(Arc::new(IndexPipeline::new(extract, started)))
        })?;
        node.index = service;
        node.layouts = layouts;
        if let (Some(index), Some(network)) = (&node.index, node.network()) {
            index.set_network(network.clone());
        }
        Ok(node)
    }

    /// Like [`Node::open`] with another pipeline, built from the config, the node's database
    /// and its metrics.
    pub fn open_with_pipeline(
        config: Config,
        pipeline: impl FnOnce(&Config, &sled::Db, Arc<Metrics>) -> anyhow::Result<Arc<dyn Pipeline>>,
    ) -> anyhow::Result<Node> {
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("cannot create data dir {}", config.data_dir.display()))?;
        let db_path = config.data_dir.join("db");
        let db = open_db(&db_path, DB_CACHE_BYTES).with_context(|| {
            format!("cannot open {} (is another weft node running on this data dir?)", db_path.display())
        })?;
        let frontier =
            Frontier::open(&db, FrontierSettings::from_config(&config)).context("cannot load the frontier")?;
        let robots = RobotsCache::open(
            &db,
            config.fetch.robots_token(),
            config.politeness.robots_cache_secs,
            config.politeness.robots_retry_secs,
        )?;
        let fetcher =
            Fetcher::new(&config.fetch, config.politeness.robots_max_bytes).context("cannot build the HTTP client")?;
        let metrics = Arc::new(Metrics::default());
        let pipeline = pipeline(&config, &db, metrics.clone())?;
        let storage =
            crate::storage::Storage::new(&config.data_dir, Duration::from_secs(config.storage.flush_timeout_secs));
        let crawler =
            Crawler::new(frontier, robots, fetcher, pipeline, metrics, CrawlSettings::from_config(&config), storage);
        let network = if config.p2p.enabled {
            anyhow::ensure!(
                tokio::runtime::Handle::try_current().is_ok(),
                "a node with p2p.enabled must be opened inside a tokio runtime"
            );
            let key = weft_p2p::identity::load_or_create(&config.data_dir)?;
            let mut settings = weft_p2p::NetworkConfig::from_config(&config.p2p)?;
            settings.allow_private = config.fetch.allow_private_networks;
            settings.search = config.search.clone();
            let journal = crate::routing::Journal::open(&db)?;
            let started = weft_p2p::start(key, settings)?;
            tracing::info!(peer_id = %started.handle.peer_id(), "p2p started");
            Some((started, journal))
        } else {
            None
        };
        Ok(Node { config, crawler, index: None, network, layouts: None, db })
    }

    pub fn crawler(&self) -> &Crawler {
        &self.crawler
    }

    /// The p2p network, when `p2p.enabled`.
    pub fn network(&self) -> Option<&weft_p2p::NetworkHandle> {
        self.network.as_ref().map(|(s, _)| &s.handle)
    }

    /// Layout learning, when `layouts.enabled`.
    pub fn layouts(&self) -> Option<&Layouts> {
        self.layouts.as_ref()
    }

    /// The local index, when `index.enabled`.
    pub fn index(&self) -> Option<&Arc<IndexService>> {
        self.index.as_ref()
    }

    /// Serves the API (if enabled) and crawls until `shutdown` turns true (or idle, if asked).
    /// Returns the API's bound address through `on_api` as soon as it listens.
    pub async fn run(
        self,
        opts: RunOptions,
        shutdown: watch::Receiver<bool>,
        on_api: impl FnOnce(SocketAddr),
    ) -> anyhow::Result<()> {
        let Node { config, crawler, index, network, layouts, db } = self;
        let mut background = tokio::task::JoinSet::new();
        if let Some(l) = &layouts {
            let renders = crate::rendering::RenderQueue::new(l.store.clone());
            crawler.set_rendering(renders.clone());
            let patience = Duration::from_secs(config.layouts.render_patience_secs);
            let metrics = crawler.metrics();
            background.spawn(crate::rendering::run(
                renders.clone(),
                crawler.clone(),
                l.pool.clone(),
                patience,
                metrics.clone(),
            ));
            let teacher = crate::teacher::Teacher {
                store: l.store.clone(),
                crawler: crawler.clone(),
                pool: l.pool.clone(),
                renders,
                metrics,
                patience,
                wake: l.teacher_wake.clone(),
            };
            background.spawn(teacher.run());
            background.spawn(l.pool.clone().run_idle_stop());
        }
        let handover = crate::routing::Handover::default();
        let network = network.map(|(started, journal)| {
            crawler.set_router(crate::routing::Router::new(started.handle.clone(), journal.clone()));
            background.spawn(crate::search::answer_queries(index.clone(), started.queries));
            if let Some(index) = &index {
                background.spawn(crate::search::publish_summaries(
                    index.clone(),
                    started.handle.clone(),
                    config.search.clone(),
                ));
            }
            let receiver = tokio::spawn(crate::routing::receive(
                crawler.clone(),
                journal.clone(),
                handover.clone(),
                started.inbound,
            ));
            background.spawn(crate::routing::forget_acknowledged(journal.clone(), started.acked));
            background.spawn(crate::routing::hand_off_on_changes(
                crawler.clone(),
                started.handle.clone(),
                journal.clone(),
                Duration::from_millis(config.politeness.handover_grace_ms),
            ));
            (started.handle, started.task, receiver, journal)
        });
        if let Some((handle, _, _, journal)) = &network {
            if !config.p2p.bootstrap.is_empty() {
                // Learn the members before crawling, so this node does not take hosts that are
                // another's: wait to be joined and to hear a heartbeat (bounded by the expiry).
                let wait = Duration::from_secs(config.p2p.heartbeat_secs * u64::from(config.p2p.missed_heartbeats));
                let joined = handle.wait_for(|s| s.joining == weft_p2p::Joining::Joined && s.members.len() > 1);
                if tokio::time::timeout(wait, joined).await.is_err() {
                    tracing::warn!("no other member heard yet; crawling with the members known so far");
                } else {
                    // The other members' heartbeats arrive over the next interval or two: wait
                    // until the member set stops growing, so the first URLs are routed on the
                    // whole ring rather than on the first member heard.
                    let beat = Duration::from_secs(config.p2p.heartbeat_secs);
                    let settled = async {
                        let mut last = handle.status().members.len();
                        loop {
                            tokio::time::sleep(beat).await;
                            let now = handle.status().members.len();
                            if now == last {
                                break now;
                            }
                            last = now;
                        }
                    };
                    if let Ok(members) = tokio::time::timeout(wait, settled).await {
                        tracing::info!(members, "member set settled; crawling");
                    }
                }
            }
            // While this node was away other members owned its hosts and may be asking them
            // right now: every host waits the hand-over grace from here, not from the start,
            // and until the member that held it said what it fetched (bounded).
            let grace = Duration::from_millis(config.politeness.handover_grace_ms);
            let bound = (grace * 5).max(Duration::from_secs(10));
            handover.start(&handle.peer_id().to_string(), &handle.ring(), grace, bound, &crawler);
            // URLs sent before a crash or stop and never acknowledged go out again.
            let unsent = crate::storage::blocking(|| journal.all());
            if !unsent.is_empty() {
                tracing::info!(urls = unsent.len(), "sending URLs their owners had not acknowledged");
                handle.send_urls(unsent);
            }
        }
        for (seed, result) in crawler.add_seeds(&config.crawl.seeds).await {
            match result {
                Ok(Some(outcome)) => tracing::info!(seed, ?outcome, "seed"),
                Ok(None) => tracing::info!(seed, "seed sent to the member that owns its host"),
                Err(e) => tracing::warn!(seed, "seed rejected: {e}"),
            }
        }
        if config.api.enabled {
            let network = network.as_ref().map(|(h, _, _, _)| h.clone());
            let searcher = index.as_ref().map(|i| {
                let (config, distance) = (config.search.clone(), config.index.dedup_max_distance);
                Arc::new(crate::search::Searcher::new(i.clone(), network.clone(), config, distance))
            });
            let state = AppState {
                crawler: crawler.clone(),
                index: index.clone(),
                network,
                searcher,
                layouts: layouts.clone(),
                token: crate::token::ApiToken::load_or_create(&config.data_dir)
                    .context("cannot read or create the API token")?,
            };
            let (addr, serve) = api::bind(config.api.listen, state)
                .await
                .with_context(|| format!("cannot listen on {} (api.listen)", config.api.listen))?;
            tracing::info!(%addr, "API listening: /health /status /metrics /search");
            on_api(addr);
            background.spawn(async move {
                if let Err(e) = serve.await {
                    tracing::error!("API server stopped: {e}");
                }
            });
        }
        if let (Some(index), quota) = (&index, config.index.disk_quota_mb) {
            if quota > 0 {
                background.spawn(crate::quota::enforce(
                    index.clone(),
                    db.clone(),
                    config.data_dir.clone(),
                    quota << 20,
                    Duration::from_secs(config.index.quota_check_secs),
                ));
            }
        }
        background.spawn(crawler.storage().clone().watch(Duration::from_secs(config.storage.check_interval_secs)));
        background.spawn(crate::memory::watch(
            crawler.clone(),
            layouts.as_ref().map(|l| l.pool.clone()),
            config.crawl.memory_target_mb << 20,
            Duration::from_secs(2),
        ));
        // The dashboard's charts: the counters every few seconds.
        let metrics = crawler.metrics();
        background.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(crate::api::HISTORY_SECS));
            loop {
                tick.tick().await;
                metrics.sample();
            }
        });
        let every = Duration::from_secs(config.frontier.snapshot_interval_secs);
        let snapshotter = crawler.clone();
        background.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                match snapshotter.snapshot().await {
                    Ok(bytes) => tracing::debug!(bytes, "seen-set snapshot written"),
                    Err(e) => tracing::error!("seen-set snapshot failed: {e}"),
                }
            }
        });
        if let Some(index) = index.clone() {
            let every = Duration::from_secs(config.index.snapshot_interval_secs);
            let storage = crawler.storage().clone();
            background.spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    if let Err(e) = snapshot_index(&storage, index.clone()).await {
                        tracing::error!("vector index snapshot failed: {e}");
                    }
                }
            });
        }
        let result = crawler.run(shutdown, opts.exit_when_idle).await;
        let storage = crawler.storage().clone();
        if let Some(fault) = storage.fault() {
            // Nothing can be made durable any more: no hand-off (the other members take the
            // hosts over when this node's heartbeats stop), no snapshots. What was acknowledged
            // is on disk already.
            background.abort_all();
            if let Some(l) = &layouts {
                let _ = tokio::time::timeout(Duration::from_secs(5), l.pool.close()).await;
            }
            if let Some((handle, _, _, _)) = &network {
                handle.stop();
            }
            return Err(anyhow::Error::new(fault));
        }
        if let Some((handle, _, _, journal)) = &network {
            let wait = Duration::from_secs(config.p2p.leave_timeout_secs);
            crate::routing::leave(&crawler, handle, journal, wait).await;
        }
        background.abort_all();
        // Wait for the API and the timers to be gone: they hold the state a restart reopens.
        while background.join_next().await.is_some() {}
        if let Some(l) = &layouts {
            l.pool.close().await;
        }
        if let Some((handle, task, receiver, _)) = network {
            handle.stop();
            let _ = task.await;
            let _ = receiver.await;
        }
        if let Some(index) = index {
            snapshot_index(&storage, index.clone()).await.context("writing the vector index at shutdown")?;
            tracing::info!(index = ?index.status().stored, "index flushed");
            storage
                .bounded("stopping the index", move || {
                    index.stop();
                    Ok::<_, String>(())
                })
                .await?;
        }
        result
    }
}

/// Flushes the document store and writes the vector snapshot, on the blocking pool, bounded.
async fn snapshot_index(storage: &crate::storage::Storage, index: Arc<IndexService>) -> anyhow::Result<()> {
    let wrote = storage.bounded("writing the vector index", move || index.snapshot()).await?;
    if wrote {
        tracing::debug!("vector index snapshot written");
    }
    Ok(())
}
