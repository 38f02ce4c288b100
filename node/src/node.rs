//! Wiring: from a validated [`Config`] to a running node, and an orderly stop.
//!
//! [`Node::open`] builds the parts in dependency order — storage, layouts, the network, the
//! pipeline (extract, then the index, which asks the network for near duplicates), then the
//! crawler with its collaborators — so nothing is completed after construction. [`Node::run`]
//! starts each subsystem's tasks by name (`Layouts::spawn`, `spawn_api`, `spawn_network`,
//! `spawn_timers`), crawls, then stops them in the reverse order.

/// The node's timers.
mod timers;

use crate::api::{self, AppState};
use crate::indexing::{IndexPipeline, IndexService};
use crate::pipeline::ExtractPipeline;
use crate::routing::{Handover, Journal, Router};
use anyhow::Context;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use timers::{snapshot_index, spawn_timers};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use weft_config::Config;
use weft_crawl::metrics::Metrics;
use weft_crawl::storage::Storage;
use weft_crawl::{CrawlSettings, Crawler, Parts, Renders, Route};
use weft_fetch::fetcher::Fetcher;
use weft_fetch::page::Pipeline;
use weft_frontier::{open_db, Frontier, FrontierSettings, RobotsCache};
use weft_index::LocalIndex;
use weft_layouts::Layouts;

/// A node that has opened its state but is not crawling yet.
pub struct Node {
    config: Config,
    crawler: Crawler,
    index: Option<Arc<IndexService>>,
    /// The p2p network and the journal of URLs sent to other members, when `p2p.enabled`.
    network: Option<(weft_p2p::Started, Journal)>,
    /// Layout learning and the JavaScript tier, when `layouts.enabled`.
    layouts: Option<Layouts>,
    /// The node's database (for the disk quota).
    db: sled::Db,
}

/// How `run` should behave.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Stop when nothing is queued and nothing is in flight (scripts, benchmarks, the demo).
    pub exit_when_idle: bool,
}

impl Node {
    /// Opens the data dir (creating it) and everything stored in it; with `index.enabled`,
    /// loads the embedding model and the local index too; with `p2p.enabled`, starts the
    /// network (inside a tokio runtime).
    pub fn open(config: Config) -> anyhow::Result<Node> {
        if let Some(why) = config.fetch.nothing_reachable() {
            anyhow::bail!("{why}");
        }
        for key in config.retired_keys() {
            tracing::warn!("{key} configures nothing in this version: ignored (remove it from the config)");
        }
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("cannot create data dir {}", config.data_dir.display()))?;
        let db_path = config.data_dir.join("db");
        // Only a held lock means another node: damaged files or an I/O error say so instead.
        let db_error = |e: sled::Error| {
            let why = if weft_frontier::is_lock_held(&e) {
                "another weft node is running on this data dir (its lock is held)"
            } else if matches!(e, sled::Error::Corruption { .. }) {
                "the database is corrupted (restore it from a backup, or move it away to start afresh)"
            } else {
                "the database files could not be read (`weft doctor` checks them)"
            };
            anyhow::Error::new(e).context(format!("cannot open {}: {why}", db_path.display()))
        };
        let db = open_db(&db_path, config.storage.cache_mb << 20).map_err(db_error)?;
        // Writes sled dropped while opening damaged files (it takes them for a crash's torn
        // tail, silently): see `weft_frontier::generation`.
        if let Err(lost) = weft_frontier::generation::check(&db, &db_path).map_err(db_error)? {
            anyhow::bail!("cannot open {}: {lost}", db_path.display());
        }
        let frontier = Frontier::open(&db, &config.data_dir.join("frontier"), frontier_settings(&config))
            .context("cannot load the frontier")?;
        let robots = RobotsCache::open(
            &db,
            config.fetch.robots_token(),
            config.politeness.robots_cache_secs,
            config.politeness.robots_retry_secs,
        )?;
        let fetcher =
            Fetcher::new(&config.fetch, config.politeness.robots_max_bytes).context("cannot build the HTTP client")?;
        let metrics = Arc::new(Metrics::default());
        let layouts =
            if config.layouts.enabled { Some(Layouts::open(&config, &frontier.tables(), &db)?) } else { None };
        let network = if config.p2p.enabled { Some(start_network(&config, &db)?) } else { None };
        let handle = network.as_ref().map(|(started, _)| started.handle.clone());
        let (pipeline, index) = open_pipeline(&config, &db, &metrics, layouts.as_ref(), handle)?;
        let route = network.as_ref().map(|(started, journal)| {
            // Copies are looked for only by a node that can index them.
            let replicas = if config.index.enabled { config.index.replicas } else { 0 };
            let held = index.as_ref().and_then(|i| i.cells().cloned());
            Arc::new(Router::new(started.handle.clone(), journal.clone(), replicas, held)) as Arc<dyn Route>
        });
        let renders = layouts.as_ref().map(|l| Arc::new(l.renders.clone()) as Arc<dyn Renders>);
        let storage = Storage::new(&config.data_dir, Duration::from_secs(config.storage.flush_timeout_secs));
        let outcomes = frontier.outcomes()?;
        let adapt = weft_crawl::Adapt::open(&db, &frontier.tables(), weft_crawl::AdaptSettings::from_config(&config))?;
        let crawler = Crawler::new(Parts {
            frontier,
            outcomes,
            adapt,
            robots,
            fetcher,
            pipeline,
            metrics,
            settings: CrawlSettings::from_config(&config),
            storage,
            route,
            renders,
            responses: match config.crawl.keep_responses {
                true => Some(weft_content::responses::ResponseStore::open(&db)?),
                false => None,
            },
        });
        Ok(Node { config, crawler, index, network, layouts, db })
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
        let mut background = JoinSet::new();
        if let Some(l) = &layouts {
            l.spawn(&config, &(Arc::new(crawler.clone()) as weft_layouts::CrawlHandle), &mut background);
        }
        // The API first: a node's status, dashboard and health answer while it joins (it learns
        // the members before it crawls, see `wait_for_members`).
        let mut api_connections = Vec::new();
        if config.api.enabled || config.search_page.enabled {
            let handle = network.as_ref().map(|(started, _)| started.handle.clone());
            let (addr, connections) =
                spawn_api(&config, &crawler, index.as_ref(), handle, layouts.as_ref(), &mut background).await?;
            api_connections = connections;
            if let Some(addr) = addr {
                on_api(addr);
            }
        }
        let network = match network {
            Some((started, journal)) => {
                Some(spawn_network(&config, &crawler, index.as_ref(), started, journal, &mut background).await)
            }
            None => None,
        };
        for (seed, result) in crawler.add_seeds(&config.crawl.seeds).await {
            match result {
                Ok(Some(outcome)) => tracing::info!(seed, ?outcome, "seed"),
                Ok(None) => tracing::info!(seed, "seed sent to the member that owns its host"),
                Err(e) => tracing::warn!(seed, "seed rejected: {e}"),
            }
        }
        // The pass after an upgrade ends with the crawl: asked to stop, or idle (`exit_when_idle`).
        let crawl_over = Arc::new(std::sync::atomic::AtomicBool::new(false));
        if let (Some(index), Some(responses)) = (&index, crawler.responses()) {
            let (responses, pipeline, tally) = (responses.clone(), crawler.pipeline(), index.reextraction());
            let (asked, over) = (shutdown.clone(), crawl_over.clone());
            let stop = move || *asked.borrow() || over.load(std::sync::atomic::Ordering::Relaxed);
            crate::reextract::spawn(&mut background, db.clone(), responses, pipeline, tally, stop);
        }
        spawn_timers(&config, &crawler, index.as_ref(), layouts.as_ref(), db, &mut background);

        // Leaving starts when the stop is asked for, beside the crawl's own grace for its
        // requests in flight (see `routing::leave_early`).
        let leave_timeout = Duration::from_secs(config.p2p.leave_timeout_secs);
        let stop_asked = shutdown.clone();
        let early = network.as_ref().map(|n| {
            let (crawler, handle, journal, mut asked) =
                (crawler.clone(), n.handle.clone(), n.journal.clone(), shutdown.clone());
            tokio::spawn(async move {
                if asked.wait_for(|stop| *stop).await.is_ok() {
                    crate::routing::leave_early(&crawler, &handle, &journal, leave_timeout / 2).await;
                }
            })
        });
        let result = crawler.run(shutdown, opts.exit_when_idle).await;
        crawl_over.store(true, std::sync::atomic::Ordering::Relaxed);
        let early = match early {
            // Asked to stop: the first step of the leave ends before the rest begins.
            Some(task) if *stop_asked.borrow() && crawler.storage().fault().is_none() => {
                let _ = task.await;
                None
            }
            other => other,
        };
        if let Some(task) = early {
            task.abort();
        }

        let storage = crawler.storage().clone();
        if let Some(fault) = storage.fault() {
            // Nothing can be made durable any more: no hand-off (the other members take the
            // hosts over when this node's heartbeats stop), no snapshots. What was acknowledged
            // is on disk already.
            background.abort_all();
            if let Some(l) = &layouts {
                let _ = tokio::time::timeout(Duration::from_secs(5), l.pool.close()).await;
            }
            if let Some(n) = &network {
                n.handle.stop();
            }
            return Err(anyhow::Error::new(fault));
        }
        if let Some(n) = &network {
            crate::routing::leave(&crawler, &n.handle, &n.journal, leave_timeout).await;
        }
        background.abort_all();
        // Wait for the API (its connections too) and the timers to be gone: they hold the state
        // a restart reopens.
        while background.join_next().await.is_some() {}
        for c in api_connections {
            c.closed(Duration::from_secs(5)).await;
        }
        if let Some(l) = &layouts {
            l.pool.close().await;
        }
        if let Some(n) = network {
            n.handle.stop();
            let _ = n.task.await;
            let _ = n.receiver.await;
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

/// The frontier's settings from the node's config.
pub fn frontier_settings(c: &Config) -> FrontierSettings {
    FrontierSettings {
        max_depth: c.crawl.max_depth,
        max_pages_per_host: c.crawl.max_pages_per_host,
        inlink_cap: c.frontier.inlink_cap,
        seen_capacity: c.frontier.seen_capacity,
        seen_fp_rate: c.frontier.seen_fp_rate,
        max_retries: c.politeness.max_retries,
        politeness: weft_frontier::PolitenessPolicy {
            default_delay: Duration::from_millis(c.politeness.default_delay_ms),
            backoff_initial: Duration::from_secs(c.politeness.backoff_initial_secs),
            backoff_max: Duration::from_secs(c.politeness.backoff_max_secs),
            // Alone, nobody else asked a host a moment ago.
            handover_grace: if c.p2p.enabled {
                Duration::from_millis(c.politeness.handover_grace_ms)
            } else {
                Duration::ZERO
            },
        },
        cache_bytes: c.frontier.cache_mb << 20,
        write_buffer_bytes: c.frontier.write_buffer_mb << 20,
    }
}

/// The index service, when `index.enabled`.
type IndexPart = Option<Arc<IndexService>>;

/// The pipeline a page goes down: extraction (with the layout worker), then the index when
/// `index.enabled` (with the network's near-duplicate records when there is a network).
fn open_pipeline(
    config: &Config,
    db: &sled::Db,
    metrics: &Arc<Metrics>,
    layouts: Option<&Layouts>,
    network: Option<weft_p2p::NetworkHandle>,
) -> anyhow::Result<(Arc<dyn Pipeline>, IndexPart)> {
    let mut extract = ExtractPipeline::new(&config.extract, metrics.clone());
    if let Some(l) = layouts {
        extract = extract.with_worker(l.worker(config, metrics.clone()));
    }
    if !config.index.enabled {
        return Ok((Arc::new(extract), None));
    }
    let (dir, dims, index_config, sled) =
        (config.data_dir.clone(), config.embed.dims, config.index.clone(), db.clone());
    let local = within_bound(
        "the local index",
        &config.data_dir.join(weft_index::store::DIR),
        INDEX_OPEN_WARN,
        INDEX_OPEN_BOUND,
        move || LocalIndex::open(&sled, &dir, dims, &index_config),
    )?
    .context("cannot open the local index")?;
    tracing::info!(opened = ?local.opened(), stats = ?local.stats(), "local index opened");
    // With the network: the postings of the cells this node owns (semantic placement).
    let cells = match &network {
        Some(_) => {
            let (dir, dims, index_config) = (config.data_dir.clone(), config.embed.dims, config.index.clone());
            let store = within_bound(
                "the cell store",
                &config.data_dir.join("cells"),
                INDEX_OPEN_WARN,
                INDEX_OPEN_BOUND,
                move || crate::cells::open(&dir, dims, &index_config),
            )?
            .context("cannot open the cell store")?;
            tracing::info!(counts = ?store.counts(), "cell store opened");
            Some(Arc::new(store))
        }
        None => None,
    };
    let improved = extract.improved();
    let service = IndexService::start(config, Arc::new(local), metrics.clone(), improved, network, cells)?;
    Ok((Arc::new(IndexPipeline::new(extract, service.clone())), Some(service)))
}

/// Opening the index reads every document record (its counts, the lexical and vector indexes'
/// checks against the document store): seconds, minutes when a large index is rebuilt or an
/// earlier release's documents are moved out of sled. A storage engine on damaged files can
/// spin forever (sled did on 16 flipped bytes in `db/db`: 100% CPU, no message), so a warning
/// names the document store's path after [`INDEX_OPEN_WARN`] and the open fails after
/// [`INDEX_OPEN_BOUND`]. Moving `documents/` away starts an empty index.
const INDEX_OPEN_WARN: std::time::Duration = std::time::Duration::from_secs(30);
const INDEX_OPEN_BOUND: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Runs `open` on its own thread and waits at most `bound` for it, warning every `warn`.
fn within_bound<T: Send + 'static>(
    what: &str,
    path: &std::path::Path,
    warn: std::time::Duration,
    bound: std::time::Duration,
    open: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("weft-open".into()).spawn(move || {
        let _ = tx.send(open());
    })?;
    let started = std::time::Instant::now();
    loop {
        match rx.recv_timeout(warn.min(bound.saturating_sub(started.elapsed()))) {
            Ok(v) => return Ok(v),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => anyhow::bail!("opening {what} failed (panicked)"),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if started.elapsed() >= bound => anyhow::bail!(
                "{what} at {} did not open within {} s: its files are most likely damaged. Move {} away to \
                 start with an empty index (the pages are crawled again) or restore a backup; `weft doctor` \
                 checks the rest",
                path.display(),
                bound.as_secs(),
                path.display()
            ),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => tracing::warn!(
                path = %path.display(),
                secs = started.elapsed().as_secs(),
                "still opening {what}: a large index takes a while when it is rebuilt; if this never ends, its files may be damaged"
            ),
        }
    }
}

/// Starts the p2p network with this node's identity, and opens the journal of URLs sent to
/// other members.
fn start_network(config: &Config, db: &sled::Db) -> anyhow::Result<(weft_p2p::Started, Journal)> {
    anyhow::ensure!(
        tokio::runtime::Handle::try_current().is_ok(),
        "a node with p2p.enabled must be opened inside a tokio runtime"
    );
    let key = weft_p2p::identity::load_or_create(&config.data_dir)?;
    let mut settings = weft_p2p::NetworkConfig::from_config(&config.p2p)?;
    settings.allow_private = config.fetch.allow_private_networks;
    settings.search = config.search.clone();
    // Postings of another model are refused; a node without an index holds none.
    settings.model = config.index.enabled.then(|| weft_index::embed::model_id(&config.embed.model).ok()).flatten();
    // A node without an index keeps no copies either, and makes none.
    settings.doc_replicas = if settings.model.is_some() { config.index.replicas } else { 0 };
    // A restart without bootstrap peers finds the network through the members saved here.
    settings.saved_peers = Some(config.data_dir.join("peers.json"));
    let journal = Journal::open(db)?;
    let started = weft_p2p::start(key, settings)?;
    tracing::info!(peer_id = %started.handle.peer_id(), "p2p started");
    Ok((started, journal))
}

/// The network's running parts, kept for the stop.
struct Network {
    handle: weft_p2p::NetworkHandle,
    task: JoinHandle<()>,
    /// Queues received URLs: awaited at the stop so nothing acknowledged is cut short.
    receiver: JoinHandle<()>,
    journal: Journal,
}

/// Starts the network's tasks (answering queries, publishing summaries, receiving URLs,
/// handing hosts over on ring changes), waits to learn the members when bootstrapping, and
/// starts the hand-over wait and the resending of unacknowledged URLs.
async fn spawn_network(
    config: &Config,
    crawler: &Crawler,
    index: Option<&Arc<IndexService>>,
    started: weft_p2p::Started,
    journal: Journal,
    tasks: &mut JoinSet<()>,
) -> Network {
    let handover = Handover::default();
    let handle = started.handle.clone();
    tasks.spawn(crate::search::answer_queries(index.cloned(), started.queries));
    match index.and_then(|i| i.cells().cloned().map(|c| (c, i.model().to_string(), i.index().clone()))) {
        Some((cells, model, local)) => {
            let doc_replicas = config.index.replicas;
            tasks.spawn(crate::cells::store_postings(cells.clone(), handle.clone(), doc_replicas, started.postings));
            let replicas = config.search.replicas;
            tasks.spawn(crate::cells::hand_over_on_changes(cells.clone(), handle.clone(), replicas, model.clone()));
            tasks.spawn(crate::cell_upkeep::drop_unowned(cells.clone(), handle.clone(), replicas, doc_replicas));
            let tally = index.map(|i| i.repairs()).unwrap_or_default();
            let sync = (doc_replicas > 0).then(|| {
                crate::copy_sync::CopySync::new(
                    local.clone(),
                    cells.clone(),
                    handle.clone(),
                    doc_replicas,
                    tally.clone(),
                )
            });
            tasks.spawn(crate::copy_sync::serve(local.clone(), cells.clone(), sync.clone(), started.documents));
            if let Some(sync) = sync {
                tasks.spawn(sync.run(Duration::from_secs(config.index.compare_copies_secs)));
                // The pages of a crawler gone for good go back to their hosts' owners.
                let crawl = crawler.clone();
                let rediscover: crate::replicas::Rediscover = Arc::new(move |urls: Vec<String>| {
                    let crawl = crawl.clone();
                    Box::pin(async move { crawl.rediscover(&urls).await })
                });
                let (local, cells, handle) = (local.clone(), cells.clone(), handle.clone());
                tasks.spawn(crate::cell_upkeep::resend_orphans(cells.clone(), handle.clone(), doc_replicas));
                tasks.spawn(crate::replicas::repair_on_changes(local, cells, handle, rediscover, doc_replicas, tally));
            }
            tasks.spawn(crate::cell_upkeep::expire_postings(cells));
            tasks.spawn(crate::cell_upkeep::reannounce(local, handle.clone(), model, doc_replicas > 0));
        }
        // No index: no postings are taken (the network answers their senders busy), no
        // documents read.
        None => {
            drop(started.postings);
            drop(started.documents);
        }
    }
    let receiver =
        tokio::spawn(crate::routing::receive(crawler.clone(), journal.clone(), handover.clone(), started.inbound));
    tasks.spawn(crate::routing::forget_acknowledged(journal.clone(), started.acked));

    let grace = Duration::from_millis(config.politeness.handover_grace_ms);
    let waits = crate::routing::HandoverWaits {
        grace,
        bound: (grace * 5).max(Duration::from_secs(10)),
        // A render on a host given away is waited for up to its own timeout.
        renders: Duration::from_secs(config.layouts.render_timeout_secs),
    };
    tasks.spawn(crate::second_copies::send(crawler.clone(), handle.clone()));
    tasks.spawn(crate::second_copies::follow_ring(crawler.clone(), handle.clone(), waits.bound));
    tasks.spawn(crate::routing::hand_off_on_changes(
        crawler.clone(),
        handle.clone(),
        journal.clone(),
        handover.clone(),
        waits,
    ));
    wait_for_members(&handle).await;
    // While this node was away other members owned its hosts and may be asking them right
    // now: every host waits the hand-over grace from here, not from the start, and until the
    // member that held it said what it fetched (bounded).
    handover.start(&handle.peer_id(), &handle.ring(), grace, waits.bound, crawler);
    // URLs sent before a crash or stop and never acknowledged go out again.
    let unsent = weft_crawl::storage::blocking(|| journal.all());
    if !unsent.is_empty() {
        tracing::info!(urls = unsent.len(), "sending URLs their owners had not acknowledged");
        handle.send_urls(unsent);
    }
    Network { handle, task: started.task, receiver, journal }
}

/// Learns the members before crawling, so this node does not take hosts that are another's:
/// waits for the roster (pulled from the bootstrap peers, or founded when there are none), then
/// until the member set stops changing for a few seconds. A newcomer to an older network is on
/// no ring until its probation ends: it crawls nothing meanwhile and sends its seeds to their
/// hosts' owners.
async fn wait_for_members(handle: &weft_p2p::NetworkHandle) {
    let pulled = handle.wait_for(|s| !s.members.is_empty() && s.roster.stage != "pulling");
    if tokio::time::timeout(ROSTER_WAIT, pulled).await.is_err() {
        tracing::warn!("no roster yet; crawling with the members known so far");
        return;
    }
    // Events still on their way (the newcomers of a network starting together are admitted
    // within its first seconds) are taken before the first URLs are routed.
    let settled = async {
        let mut last = handle.status().members;
        loop {
            tokio::time::sleep(ROSTER_SETTLE).await;
            let now = handle.status().members;
            if now == last {
                break now.len();
            }
            last = now;
        }
    };
    match tokio::time::timeout(ROSTER_WAIT, settled).await {
        Ok(members) => tracing::info!(members, "member set settled; crawling"),
        Err(_) => {
            tracing::info!(members = handle.status().members.len(), "crawling; the member set was still changing")
        }
    }
}

/// How long a starting node waits for the roster, and for it to stop changing.
const ROSTER_WAIT: Duration = Duration::from_secs(60);
/// The member set has settled when it did not change for this long (a digest round or two).
const ROSTER_SETTLE: Duration = Duration::from_secs(3);

/// Binds the API (when `api.enabled`) and the search page's own address (when
/// `search_page.enabled`) and serves them on `tasks`; returns the API's address.
async fn spawn_api(
    config: &Config,
    crawler: &Crawler,
    index: Option<&Arc<IndexService>>,
    network: Option<weft_p2p::NetworkHandle>,
    layouts: Option<&Layouts>,
    tasks: &mut JoinSet<()>,
) -> anyhow::Result<(Option<SocketAddr>, Vec<api::Connections>)> {
    let searcher = index.map(|i| {
        let (search, distance) = (config.search.clone(), config.index.dedup_max_distance);
        Arc::new(crate::search::Searcher::new(i.clone(), network.clone(), search, distance))
    });
    let state = AppState {
        crawler: crawler.clone(),
        index: index.cloned(),
        network,
        searcher,
        layouts: layouts.cloned(),
        token: crate::token::ApiToken::load_or_create(&config.data_dir)
            .context("cannot read or create the API token")?,
        allowed_hosts: Arc::new(config.api.allowed_hosts.clone()),
        search_page: Arc::new(config.search_page.clone()),
    };
    let mut connections = Vec::new();
    if config.search_page.enabled {
        let listen = config.search_page.listen;
        let (addr, serve, held) = crate::find::bind(listen, state.clone())
            .await
            .with_context(|| format!("cannot listen on {listen} (search_page.listen)"))?;
        tracing::info!(%addr, "search page listening: http://{addr}/find");
        tasks.spawn(async move {
            if let Err(e) = serve.await {
                tracing::error!("search page server stopped: {e}");
            }
        });
        connections.push(held);
    }
    if !config.api.enabled {
        return Ok((None, connections));
    }
    let (addr, serve, held) = api::bind(config.api.listen, state, crate::find::routes())
        .await
        .with_context(|| format!("cannot listen on {} (api.listen)", config.api.listen))?;
    tracing::info!(%addr, "API listening: /health /status /metrics /search; dashboard http://{addr}/, search page http://{addr}/find");
    tasks.spawn(async move {
        if let Err(e) = serve.await {
            tracing::error!("API server stopped: {e}");
        }
    });
    connections.push(held);
    Ok((Some(addr), connections))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frontiers_defaults_are_the_configs() {
        let alone =
            Config { p2p: weft_config::P2pConfig { enabled: false, ..Default::default() }, ..Default::default() };
        assert_eq!(frontier_settings(&alone), FrontierSettings::default());
    }

    /// The bound itself (a damaged sled file that spins is not reproducible on demand; the
    /// open it guards is the real `LocalIndex::open`).
    #[test]
    fn an_open_that_never_ends_is_an_error_naming_the_path_within_the_bound() {
        let ms = std::time::Duration::from_millis;
        let path = std::path::Path::new("/data/db");
        let started = std::time::Instant::now();
        let never: anyhow::Result<()> = within_bound("the local index", path, ms(50), ms(300), move || loop {
            std::thread::sleep(ms(1000));
        });
        let e = never.unwrap_err();
        assert!(started.elapsed() < ms(2000), "{:?}", started.elapsed());
        let e = e.to_string();
        assert!(e.contains("/data/db") && e.contains("did not open within"), "{e}");
        assert_eq!(within_bound("x", path, ms(50), ms(300), || 7).unwrap(), 7);
    }
}
