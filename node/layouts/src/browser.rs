//! The browser pool: headless Chromium from Debian's `chromium` package, driven over the
//! DevTools protocol (`chromiumoxide`), for the layout teacher and for pages that need
//! JavaScript.
//!
//! **Chromium never touches the network itself.** Every request a page makes — the document,
//! its scripts, its XHRs — is paused by the CDP `Fetch` domain and answered by a function the
//! caller supplies ([`Fetch`]), which is where Weft's own fetcher, robots.txt, politeness and
//! SSRF guard apply, exactly as for static fetches; a request the caller does not answer fails
//! as blocked. As a second wall, Chromium is started with its DNS resolver mapped to nowhere and
//! a proxy on a closed loopback port, and with its background services (updates, safe
//! browsing, metrics, sync) off: nothing it might send on its own gets out.
//!
//! Each instance renders one page at a time in a fresh tab; [`BrowserPool::render`] waits for a
//! free instance.

use base64::Engine as _;
use chromiumoxide::browser::Browser;
use chromiumoxide::cdp::browser_protocol::fetch::{
    EnableParams, EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestPattern,
};
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use futures::future::BoxFuture;
use futures_util::StreamExt;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// Where Debian's package puts the real binary (`/usr/bin/chromium` is a wrapper script).
const DEBIAN_CHROMIUM: &str = "/usr/lib/chromium/chromium";
/// The window pages are laid out in: a common laptop screen.
pub const VIEWPORT: (u32, u32) = (1280, 900);

#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("Chromium not found at {0}: run scripts/setup.sh (it installs Debian's chromium package)")]
    NotFound(PathBuf),
    #[error("Chromium did not start: {0}")]
    Launch(String),
    #[error("rendering {url}: {reason}")]
    Render { url: String, reason: String },
    #[error("rendering {url} took longer than {secs} s")]
    Timeout { url: String, secs: u64 },
}

/// A request a page made.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub url: String,
    pub method: String,
    /// `Document`, `Script`, `XHR`, `Fetch`, `Image`, ...
    pub resource_type: String,
}

/// The answer to a [`PageRequest`].
#[derive(Debug, Clone, PartialEq)]
pub struct PageResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Answers a page's requests; `None` blocks the request.
pub type Fetch = Arc<dyn Fn(PageRequest) -> BoxFuture<'static, Option<PageResponse>> + Send + Sync>;

pub use weft_extract::teacher::ElementBox;

/// A rendered page.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub url: String,
    /// The DOM after scripts ran, serialized.
    pub html: String,
    /// Visible elements with text or size, in document order.
    pub elements: Vec<ElementBox>,
    /// Requests the page made and whether each was answered.
    pub requests: Vec<(PageRequest, bool)>,
    pub took: Duration,
}

/// How the pool runs Chromium.
#[derive(Debug, Clone)]
pub struct BrowserSettings {
    pub executable: PathBuf,
    pub instances: usize,
    /// Longest a page may take to load and settle.
    pub timeout: Duration,
    /// After the load event, how long the page may keep fetching before it is read.
    pub settle: Duration,
    /// An instance is restarted after this many pages (0: never) ...
    pub restart_after_renders: u32,
    /// ... or once its process tree was last measured above this many bytes (0: never):
    /// Chromium's memory grows with what it has rendered, and a node runs for months.
    pub restart_above_bytes: u64,
}

impl Default for BrowserSettings {
    fn default() -> Self {
        BrowserSettings {
            executable: PathBuf::from(DEBIAN_CHROMIUM),
            instances: 2,
            timeout: Duration::from_secs(20),
            settle: Duration::from_millis(300),
            restart_after_renders: 200,
            restart_above_bytes: 512 << 20,
        }
    }
}

/// Collects the boxes, font sizes, visibility and text of the rendered elements. Runs in the
/// page; returns JSON.
const BOXES: &str = r#"(() => {
  const out = [];
  const skip = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "HEAD", "META", "LINK", "TITLE", "SVG", "PATH"]);
  const pathOf = (el) => {
    const parts = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const tag = e.tagName.toLowerCase();
      if (!e.parentElement) { parts.unshift(tag); break; }
      const i = Array.prototype.indexOf.call(e.parentElement.children, e) + 1;
      parts.unshift(tag + ":nth-child(" + i + ")");
    }
    return parts.join(" > ");
  };
  for (const el of document.body ? document.body.querySelectorAll("*") : []) {
    if (skip.has(el.tagName)) continue;
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    const visible = cs.display !== "none" && cs.visibility !== "hidden" && parseFloat(cs.opacity) > 0 && r.width > 0 && r.height > 0;
    const text = (el.innerText || "").trim();
    if (!visible && text.length === 0) continue;
    let links = 0;
    for (const a of el.querySelectorAll("a")) links += (a.innerText || "").trim().length;
    if (el.tagName === "A") links = text.length;
    out.push({
      path: pathOf(el), tag: el.tagName.toLowerCase(), id: el.id || "",
      classes: Array.from(el.classList),
      x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height,
      font_size: parseFloat(cs.fontSize) || 0, visible,
      text_chars: text.length, link_chars: links, text: text.slice(0, 200),
    });
  }
  return JSON.stringify(out);
})()"#;

/// The Chromium binary: `path` if given, else Debian's.
pub fn find_chromium(path: Option<&Path>) -> Result<PathBuf, BrowserError> {
    let p = path.map_or_else(|| PathBuf::from(DEBIAN_CHROMIUM), Path::to_path_buf);
    if p.is_file() {
        Ok(p)
    } else {
        Err(BrowserError::NotFound(p))
    }
}

struct Instance {
    browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    /// Chromium's main process (its own process group; killed by the kernel with the node).
    child: std::process::Child,
    _profile: tempfile::TempDir,
    /// Pages rendered (or driven) on it since it started.
    renders: u32,
}

impl Instance {
    /// Closes the browser and waits (5 s at most) for its processes to exit; what lingers of
    /// its group is killed.
    async fn close(mut self) {
        let _ = tokio::time::timeout(Duration::from_secs(5), self.browser.close()).await;
        self.handler.abort();
        let mut child = self.child;
        let _ = tokio::task::spawn_blocking(move || {
            for _ in 0..50 {
                if matches!(child.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // Helpers of the group may linger after the main process: end them all.
            let _ = super::chromium::kill_group(&mut child);
        })
        .await;
    }
}

/// A fixed number of headless Chromium instances, each restarted after
/// [`BrowserSettings::restart_after_renders`] pages or past
/// [`BrowserSettings::restart_above_bytes`].
pub struct BrowserPool {
    free: Mutex<Vec<Instance>>,
    permits: Semaphore,
    settings: BrowserSettings,
    executable: PathBuf,
    /// The main process of each instance now (an instance restarted has a new one).
    pids: Mutex<Vec<u32>>,
    /// The last measured memory of each instance's process tree, in the order of `pids`.
    memory: Mutex<Vec<u64>>,
    restarts: std::sync::atomic::AtomicU64,
}

fn launch_err(e: impl std::fmt::Display) -> BrowserError {
    BrowserError::Launch(e.to_string())
}

/// Chromium's flags: puppeteer's defaults for automation, headless with Weft's window, and the
/// walls that keep it off the network (see the module docs).
fn chromium_args() -> Vec<String> {
    let mut args: Vec<String> = [
        "--headless=new",
        "--hide-scrollbars",
        "--mute-audio",
        // Containers and root run without the setuid sandbox; the page never reaches a
        // network anyway.
        "--no-sandbox",
        "--disable-setuid-sandbox",
        "--disable-background-networking",
        "--disable-background-timer-throttling",
        "--disable-backgrounding-occluded-windows",
        "--disable-breakpad",
        "--disable-component-extensions-with-background-pages",
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-features=TranslateUI",
        "--disable-hang-monitor",
        "--disable-ipc-flooding-protection",
        "--disable-popup-blocking",
        "--disable-prompt-on-repost",
        "--disable-renderer-backgrounding",
        "--force-color-profile=srgb",
        "--enable-automation",
        "--password-store=basic",
        "--use-mock-keychain",
        "--lang=en_US",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://127.0.0.1:9",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-sync",
        "--disable-component-update",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--safebrowsing-disable-auto-update",
        "--metrics-recording-only",
        "--no-pings",
        "--disable-gpu",
        "--disable-dev-shm-usage",
    ]
    .into_iter()
    .map(str::to_string)
    .collect();
    args.push(format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1));
    args.push("about:blank".into());
    args
}

impl BrowserPool {
    /// Starts `settings.instances` browsers (inside a tokio runtime). Each is killed by the
    /// kernel if the node dies (see `chromium.rs`).
    pub async fn launch(settings: BrowserSettings) -> Result<BrowserPool, BrowserError> {
        let executable = find_chromium(Some(&settings.executable))?;
        let mut free = Vec::new();
        let mut pids = Vec::new();
        for _ in 0..settings.instances.max(1) {
            let instance = start_instance(&executable, &settings).await?;
            pids.push(instance.child.id());
            free.push(instance);
        }
        let permits = Semaphore::new(free.len());
        Ok(BrowserPool {
            free: Mutex::new(free),
            permits,
            settings,
            executable,
            pids: Mutex::new(pids),
            memory: Mutex::new(Vec::new()),
            restarts: Default::default(),
        })
    }

    /// Instances restarted since the pool started (after their renders or their memory).
    pub fn restarts(&self) -> u64 {
        self.restarts.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether `instance` is due for a restart: past its renders, or last measured past the
    /// memory bound.
    fn due(&self, instance: &Instance) -> bool {
        let s = &self.settings;
        if s.restart_after_renders > 0 && instance.renders >= s.restart_after_renders {
            return true;
        }
        if s.restart_above_bytes == 0 {
            return false;
        }
        let pid = instance.child.id();
        let pids = self.pids.lock();
        let memory = self.memory.lock();
        pids.iter().position(|p| *p == pid).and_then(|i| memory.get(i)).is_some_and(|m| *m > s.restart_above_bytes)
    }

    /// Counts a page rendered on the checkout's instance and, when it is due, closes it and
    /// starts a fresh one in its place (the checkout still holds the permit, so nobody renders
    /// on it meanwhile). A fresh instance that does not start leaves the pool one smaller
    /// until the pool itself is restarted.
    async fn after_render(&self, checkout: &mut Checkout<'_>) {
        let Some(instance) = checkout.instance.as_mut() else { return };
        instance.renders += 1;
        if !self.due(instance) {
            return;
        }
        let old = checkout.instance.take().expect("checked above");
        let old_pid = old.child.id();
        let renders = old.renders;
        old.close().await;
        match start_instance(&self.executable, &self.settings).await {
            Ok(fresh) => {
                let pid = fresh.child.id();
                let mut pids = self.pids.lock();
                if let Some(i) = pids.iter().position(|p| *p == old_pid) {
                    pids[i] = pid;
                    // The old instance's figure is not the fresh one's: measured again later.
                    if let Some(m) = self.memory.lock().get_mut(i) {
                        *m = 0;
                    }
                }
                drop(pids);
                self.restarts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tracing::debug!(renders, "browser restarted");
                checkout.instance = Some(fresh);
            }
            Err(e) => {
                self.pids.lock().retain(|p| *p != old_pid);
                tracing::warn!("a browser restart failed: {e}; the pool runs one browser short");
                checkout.lost = true;
            }
        }
    }

    pub fn instances(&self) -> usize {
        self.pids.lock().len()
    }

    /// Memory of each instance: the proportional set size (shared pages divided among the
    /// processes sharing them) of its process and every process it started (renderers, GPU
    /// and network services), in bytes. Summing RSS instead would count Chromium's shared
    /// libraries and zygote once per process.
    ///
    /// The figures of the last [`BrowserPool::measure_memory`] (empty before the first): reading
    /// them costs nothing, so `/status` may be asked as often as anyone likes.
    pub fn memory(&self) -> Vec<u64> {
        self.memory.lock().clone()
    }

    /// Measures [`BrowserPool::memory`] anew. Blocking (it reads `/proc`): call it from the
    /// blocking pool.
    pub fn measure_memory(&self) -> Vec<u64> {
        let pids = self.pids.lock().clone();
        let figures = crate::process_tree::tree_pss(&pids);
        *self.memory.lock() = figures.clone();
        figures
    }

    /// Loads `url` in a fresh tab, every request answered by `fetch`, waits for the load event
    /// and `settings.settle` more, and reads the DOM and the element boxes.
    pub async fn render(&self, url: &str, fetch: Fetch) -> Result<Rendered, BrowserError> {
        let mut checkout = self.checkout(url).await?;
        let result = tokio::time::timeout(self.settings.timeout, self.render_on(checkout.browser(), url, fetch)).await;
        self.after_render(&mut checkout).await;
        match result {
            Ok(r) => r,
            Err(_) => Err(BrowserError::Timeout { url: url.to_string(), secs: self.settings.timeout.as_secs() }),
        }
    }

    async fn render_on(&self, browser: &Browser, url: &str, fetch: Fetch) -> Result<Rendered, BrowserError> {
        let started = Instant::now();
        let err = |e: &dyn std::fmt::Display| BrowserError::Render { url: url.to_string(), reason: e.to_string() };
        let open = open_page(browser, url, fetch).await?;
        let page = &open.page;
        let result = match page.goto(url).await {
            Ok(_) => {
                tokio::time::sleep(self.settings.settle).await;
                let boxes: Result<String, _> = match page.evaluate(BOXES).await {
                    Ok(v) => v.into_value().map_err(|e| err(&e)),
                    Err(e) => Err(err(&e)),
                };
                let html = page.content().await.map_err(|e| err(&e));
                match (boxes, html) {
                    (Ok(boxes), Ok(html)) => {
                        let elements: Vec<ElementBox> = serde_json::from_str(&boxes).map_err(|e| err(&e))?;
                        Ok(Rendered {
                            url: url.to_string(),
                            html,
                            elements,
                            requests: open.requests.lock().clone(),
                            took: started.elapsed(),
                        })
                    }
                    (Err(e), _) | (_, Err(e)) => Err(e),
                }
            }
            Err(e) => Err(err(&e)),
        };
        open.close().await;
        result
    }

    /// Loads `url` in a fresh tab (every request answered by `fetch`), waits for the load
    /// event and hands the page to `drive` — to click, type, evaluate scripts, take
    /// screenshots — then closes the tab. For tests of pages the node serves (the dashboard).
    pub async fn with_page<T>(
        &self,
        url: &str,
        fetch: Fetch,
        drive: impl for<'p> FnOnce(&'p chromiumoxide::Page) -> BoxFuture<'p, Result<T, BrowserError>>,
    ) -> Result<T, BrowserError> {
        let mut checkout = self.checkout(url).await?;
        let result = async {
            let open = open_page(checkout.browser(), url, fetch).await?;
            let loaded = open.page.goto(url).await;
            let result = match loaded {
                Ok(_) => drive(&open.page).await,
                Err(e) => Err(BrowserError::Render { url: url.to_string(), reason: e.to_string() }),
            };
            open.close().await;
            result
        }
        .await;
        self.after_render(&mut checkout).await;
        result
    }

    /// Waits for a free instance; it goes back to the pool when the checkout is dropped.
    async fn checkout(&self, url: &str) -> Result<Checkout<'_>, BrowserError> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|e| BrowserError::Render { url: url.to_string(), reason: e.to_string() })?;
        let instance = self.free.lock().pop().expect("a permit means a free instance");
        Ok(Checkout { pool: self, instance: Some(instance), lost: false, permit: Some(permit) })
    }

    /// Closes every browser and waits for its processes to exit (waits for renders in
    /// progress first). A browser that does not close within 5 s is killed with its group.
    pub async fn close(&self) {
        let n = self.pids.lock().len().max(1) as u32;
        let _all = self.permits.acquire_many(n).await;
        let instances = std::mem::take(&mut *self.free.lock());
        for i in instances {
            i.close().await;
        }
    }
}

/// Starts one Chromium instance and connects to it.
async fn start_instance(executable: &Path, settings: &BrowserSettings) -> Result<Instance, BrowserError> {
    let profile = super::chromium::profile_dir().map_err(launch_err)?;
    let args = chromium_args();
    let exe = executable.to_path_buf();
    let dir = profile.path().to_path_buf();
    let launched =
        tokio::task::spawn_blocking(move || super::chromium::launch(&exe, &dir, &args, Duration::from_secs(30)))
            .await
            .map_err(launch_err)?
            .map_err(launch_err)?;
    let mut child = launched.child;
    let handler_config = chromiumoxide::handler::HandlerConfig {
        viewport: None,
        request_timeout: settings.timeout,
        ..Default::default()
    };
    let (browser, mut handler) = match Browser::connect_with_config(launched.ws_url, handler_config).await {
        Ok(b) => b,
        Err(e) => {
            let _ = super::chromium::kill_group(&mut child);
            return Err(launch_err(e));
        }
    };
    let handler = tokio::spawn(async move {
        while let Some(event) = handler.next().await {
            if event.is_err() {
                break;
            }
        }
    });
    Ok(Instance { browser, handler, child, _profile: profile, renders: 0 })
}

/// An instance taken from the pool; returned (before its permit) when dropped.
struct Checkout<'a> {
    pool: &'a BrowserPool,
    instance: Option<Instance>,
    /// Its instance was closed and none could be started in its place: the permit goes too.
    lost: bool,
    permit: Option<tokio::sync::SemaphorePermit<'a>>,
}

impl Checkout<'_> {
    fn browser(&self) -> &Browser {
        &self.instance.as_ref().expect("held until dropped").browser
    }
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        if let Some(instance) = self.instance.take() {
            self.pool.free.lock().push(instance);
        }
        if self.lost {
            // No instance behind this permit any more: it is not given back.
            if let Some(p) = self.permit.take() {
                p.forget();
            }
        }
    }
}

/// A tab whose requests are all paused and answered by a [`Fetch`].
struct OpenPage {
    page: chromiumoxide::Page,
    answering: tokio::task::JoinHandle<()>,
    requests: Arc<Mutex<Vec<(PageRequest, bool)>>>,
}

impl OpenPage {
    async fn close(self) {
        self.answering.abort();
        let _ = self.page.close().await;
    }
}

/// Opens a blank tab on `browser` with every request intercepted (CDP `Fetch`) and answered by
/// `fetch`, each on its own task; a request `fetch` does not answer fails as blocked.
async fn open_page(browser: &Browser, url: &str, fetch: Fetch) -> Result<OpenPage, BrowserError> {
    let err = |e: &dyn std::fmt::Display| BrowserError::Render { url: url.to_string(), reason: e.to_string() };
    let page = browser.new_page("about:blank").await.map_err(|e| err(&e))?;
    let mut paused = page.event_listener::<EventRequestPaused>().await.map_err(|e| err(&e))?;
    let pattern = RequestPattern { url_pattern: Some("*".into()), resource_type: None, request_stage: None };
    page.execute(EnableParams { patterns: Some(vec![pattern]), handle_auth_requests: None })
        .await
        .map_err(|e| err(&e))?;
    let requests: Arc<Mutex<Vec<(PageRequest, bool)>>> = Arc::default();
    let answering = {
        let (page, requests) = (page.clone(), requests.clone());
        tokio::spawn(async move {
            while let Some(event) = paused.next().await {
                let request = PageRequest {
                    url: event.request.url.clone(),
                    method: event.request.method.clone(),
                    resource_type: format!("{:?}", event.resource_type),
                };
                let (page, fetch, requests) = (page.clone(), fetch.clone(), requests.clone());
                // Each request is answered on its own task: a slow one does not hold the rest.
                tokio::spawn(async move {
                    let answer = fetch(request.clone()).await;
                    requests.lock().push((request, answer.is_some()));
                    let id = event.request_id.clone();
                    let _ = match answer {
                        Some(r) => {
                            let headers =
                                r.headers.into_iter().map(|(name, value)| HeaderEntry { name, value }).collect();
                            let body = base64::engine::general_purpose::STANDARD.encode(&r.body);
                            let mut fulfil = FulfillRequestParams::new(id, i64::from(r.status));
                            fulfil.response_headers = Some(headers);
                            fulfil.body = Some(body.into());
                            page.execute(fulfil).await.map(|_| ())
                        }
                        None => page
                            .execute(FailRequestParams { request_id: id, error_reason: ErrorReason::BlockedByClient })
                            .await
                            .map(|_| ()),
                    };
                });
            }
        })
    };
    Ok(OpenPage { page, answering, requests })
}

/// A pool started on first use and stopped when idle: a node that never meets a page needing
/// the browser never starts one, and one whose renders are over gives the memory back after
/// `idle` (`layouts.browser_idle_secs`). When Chromium is missing or fails to start,
/// [`LazyPool::available`] turns false and the layout worker stops asking for renders.
pub struct LazyPool {
    settings: BrowserSettings,
    idle: Duration,
    running: Mutex<Option<Arc<BrowserPool>>>,
    /// Held while starting or stopping the pool, so the two never overlap.
    lifecycle: tokio::sync::Mutex<()>,
    last_used: Mutex<Instant>,
    available: Arc<std::sync::atomic::AtomicBool>,
    starts: std::sync::atomic::AtomicU64,
}

impl LazyPool {
    pub fn new(settings: BrowserSettings, idle: Duration) -> LazyPool {
        let found = find_chromium(Some(&settings.executable));
        if let Err(e) = &found {
            tracing::warn!("{e}; layouts are counted and override templates used, but nothing is taught or rendered");
        }
        let available = Arc::new(std::sync::atomic::AtomicBool::new(found.is_ok()));
        LazyPool {
            settings,
            idle,
            running: Mutex::new(None),
            lifecycle: tokio::sync::Mutex::new(()),
            last_used: Mutex::new(Instant::now()),
            available,
            starts: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Whether a browser can be had (shared with the worker).
    pub fn available(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.available.clone()
    }

    /// The pool, started now if it is not running; `None` if Chromium cannot run. The pool is
    /// not stopped while the returned handle is held.
    pub async fn get(&self) -> Option<Arc<BrowserPool>> {
        if !self.available.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        *self.last_used.lock() = Instant::now();
        if let Some(p) = self.running.lock().clone() {
            return Some(p);
        }
        let _starting = self.lifecycle.lock().await;
        if let Some(p) = self.running.lock().clone() {
            return Some(p);
        }
        match BrowserPool::launch(self.settings.clone()).await {
            Ok(p) => {
                tracing::info!(instances = p.instances(), "browser pool started");
                self.starts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let p = Arc::new(p);
                *self.running.lock() = Some(p.clone());
                *self.last_used.lock() = Instant::now();
                Some(p)
            }
            Err(e) => {
                tracing::error!("{e}; nothing will be taught or rendered");
                self.available.store(false, std::sync::atomic::Ordering::Release);
                None
            }
        }
    }

    /// The pool if it is running.
    pub fn started(&self) -> Option<Arc<BrowserPool>> {
        self.running.lock().clone()
    }

    /// How many times the pool was started (it is stopped when idle).
    pub fn starts(&self) -> u64 {
        self.starts.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stops the pool if nobody holds it and it was last asked for more than `idle` ago; says
    /// whether it stopped it.
    pub async fn stop_if_idle(&self) -> bool {
        let Ok(_stopping) = self.lifecycle.try_lock() else { return false };
        let pool = {
            let mut running = self.running.lock();
            let idle = self.last_used.lock().elapsed() >= self.idle;
            match &*running {
                Some(p) if idle && Arc::strong_count(p) == 1 => running.take(),
                _ => None,
            }
        };
        let Some(pool) = pool else { return false };
        tracing::info!(idle_secs = self.idle.as_secs(), "browser pool idle: stopping it");
        pool.close().await;
        true
    }

    /// Stops idle browsers until the task is dropped.
    pub async fn run_idle_stop(self: Arc<Self>) {
        let every = (self.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(10));
        loop {
            tokio::time::sleep(every).await;
            self.stop_if_idle().await;
        }
    }

    pub async fn close(&self) {
        let _stopping = self.lifecycle.lock().await;
        let pool = self.running.lock().take();
        if let Some(p) = pool {
            p.close().await;
        }
    }
}
