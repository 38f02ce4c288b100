//! The simulator's synthetic web: real documentation HTML that a Debian package ships (by
//! default PostgreSQL's manual from `postgresql-doc-15`, installed by `scripts/setup.sh`) split
//! over many virtual hosts, with generated structure around it — a table of contents per host,
//! cross-host links, sitemaps — and the pathologies a crawler meets on the real web.
//!
//! Everything is decided by [`WebSpec`] (its `seed` above all), so two runs serve the same web,
//! and [`DocsWeb`] carries the truth the report judges against: which pages are reachable from
//! the seeds, and how long each host asks crawlers to wait between requests.
//!
//! Pathologies, one host each (when there are enough hosts; host 0 is always plain):
//!
//! | host | pathology |
//! |---|---|
//! | 1 | robots.txt `Disallow: /private/`, with private copies linked from the table of contents |
//! | 2 | robots.txt `Crawl-delay: 1` |
//! | 3 | bursts of 429 with `Retry-After` (every third page: two 429s, then the page) |
//! | 4 | bursts of 5xx (every third page: 503, 500, then the page) |
//! | 5 | slow responses (every page answers after [`SLOW`]) |
//! | 6 | redirect chains (every third page linked as `/old/…` → 301 `/moved/…` → 302 the page) |
//! | 7 | mirrors: near-duplicate copies of host 0's first pages under another layout |
//! | 8 | pages that need JavaScript (every third page is an empty shell filled by a script) |
//! | 9 | no sitemap: its pages are found through links only |
//!
//! Links to pages outside the served set, to stylesheets and to the real web are removed:
//! nothing in this web points off the machine.

use crate::web::{Resource, Site};
use regex::Regex;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use std::time::Duration;

/// Where the documentation is read from unless `WEFT_SIMNET_DOCS` says otherwise.
pub const DEFAULT_DOCS: &str = "/usr/share/doc/postgresql-doc-15/html";

/// How long the slow host takes to answer.
pub const SLOW: Duration = Duration::from_millis(1500);

/// The `Retry-After` the rate-limiting host sends, in seconds.
pub const RETRY_AFTER_SECS: u64 = 2;

/// The `Crawl-delay` of the host that asks for one, in seconds.
pub const CRAWL_DELAY_SECS: u64 = 1;

/// What web to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSpec {
    pub hosts: usize,
    /// Documentation pages served in all (mirrors, private copies and redirects come on top).
    pub pages: usize,
    /// Chooses which pages are served and how they are linked.
    pub seed: u64,
    /// Pages with more words than this are left out (a few reference pages run to 19,000
    /// words; they make the embedder, not the network, the subject of a run).
    pub max_words: usize,
    /// News sites beside the manual (`news{i}.test`, the designs of [`crate::news`] in turn),
    /// each with `news_articles` articles: layouts for the teacher to learn during a run.
    pub news_sites: usize,
    pub news_articles: usize,
}

impl Default for WebSpec {
    fn default() -> Self {
        WebSpec { hosts: 20, pages: 500, seed: 1, max_words: 1500, news_sites: 4, news_articles: 30 }
    }
}

/// The name of news site `i`.
pub fn news_host(i: usize) -> String {
    format!("news{i}.test")
}

/// The script the application shells of host 8 share (fetched once per node, then cached).
const APP_JS: &str = "function render(html) { document.getElementById('app').innerHTML = html; }";

/// One documentation page as shipped.
#[derive(Debug, Clone)]
pub struct DocPage {
    /// File name, e.g. `sql-select.html`.
    pub name: String,
    pub title: String,
    pub html: String,
    pub words: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    #[error(
        "no documentation HTML in {0} — install it with scripts/setup.sh (Debian package \
         postgresql-doc-15) or point WEFT_SIMNET_DOCS at a directory of HTML pages"
    )]
    Missing(PathBuf),
    #[error("reading {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{wanted} pages wanted but {dir} has only {have} of at most {max_words} words")]
    TooFew { wanted: usize, have: usize, max_words: usize, dir: PathBuf },
    #[error("a web needs at least one host and one page per host")]
    Empty,
}

/// The documentation directory: `WEFT_SIMNET_DOCS`, else [`DEFAULT_DOCS`].
pub fn docs_dir() -> PathBuf {
    std::env::var_os("WEFT_SIMNET_DOCS").map_or_else(|| PathBuf::from(DEFAULT_DOCS), PathBuf::from)
}

static TITLE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)<title>(.*?)</title>").expect("regex"));
static TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?s)<[^>]*>").expect("regex"));
static HREF: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"\s(href|src)="([^"]*)""#).expect("regex"));
static BODY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)<body[^>]*>(.*)</body>").expect("regex"));

/// Reads every `*.html` page of `dir`, sorted by name.
pub fn load(dir: &Path) -> Result<Vec<DocPage>, DocsError> {
    let entries = std::fs::read_dir(dir).map_err(|_| DocsError::Missing(dir.to_path_buf()))?;
    let mut pages = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| DocsError::Read(dir.to_path_buf(), e))?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
        if !name.ends_with(".html") {
            continue;
        }
        let bytes = std::fs::read(&path).map_err(|e| DocsError::Read(path.clone(), e))?;
        let html = String::from_utf8_lossy(&bytes).into_owned();
        let title = TITLE.captures(&html).map(|c| c[1].trim().to_string()).unwrap_or_else(|| name.clone());
        let words = TAG.replace_all(&html, " ").split_whitespace().count();
        pages.push(DocPage { name, title, html, words });
    }
    if pages.is_empty() {
        return Err(DocsError::Missing(dir.to_path_buf()));
    }
    pages.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pages)
}

/// A built web: the sites to serve and the truth to judge a crawl of them by.
#[derive(Debug, Clone)]
pub struct DocsWeb {
    pub sites: Vec<Site>,
    /// `http://host:port/` of every host.
    pub seeds: Vec<String>,
    /// Pages (host, path) a polite crawler reaches from the seeds: through links, sitemaps
    /// and redirects, never through a robots.txt Disallow. Redirect hops are not pages.
    pub reachable: HashSet<(String, String)>,
    /// Hosts that ask for more time between requests than the crawler's own delay.
    pub gaps: HashMap<String, Duration>,
    /// (host, path prefix) robots.txt forbids.
    pub disallowed: Vec<(String, String)>,
    /// Every host, in order.
    pub hosts: Vec<String>,
    /// Title of each served documentation page, by (host, path).
    pub titles: BTreeMap<(String, String), String>,
}

/// The name of host `i`.
pub fn host_name(i: usize) -> String {
    format!("docs{i}.test")
}

fn mix(seed: u64, name: &str) -> u64 {
    let h = blake3::hash(format!("{seed}:{name}").as_bytes());
    u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// Builds the web of `spec` from `docs` for a server on `port` (cross-host links, sitemaps
/// and redirects are absolute).
pub fn build(docs: &[DocPage], spec: &WebSpec, port: u16) -> Result<DocsWeb, DocsError> {
    if spec.hosts == 0 || spec.pages < spec.hosts {
        return Err(DocsError::Empty);
    }
    let pool = choose(docs, spec)?;
    let per_host = spec.pages.div_ceil(spec.hosts);
    let home: HashMap<&str, usize> =
        pool.iter().enumerate().map(|(i, d)| (d.name.as_str(), (i / per_host).min(spec.hosts - 1))).collect();
    let hosts: Vec<String> = (0..spec.hosts).map(host_name).collect();
    let layout = Layout { spec, port, hosts: &hosts, home: &home, per_host };
    let mut sites: Vec<Site> = hosts.iter().map(|h| Site::new(h)).collect();
    let mut toc: Vec<Vec<(String, String)>> = vec![Vec::new(); spec.hosts];
    let mut sitemap: Vec<Vec<String>> = vec![Vec::new(); spec.hosts];
    for (k, doc) in pool.iter().enumerate() {
        layout.place(&pool, k, doc, &mut sites, &mut toc, &mut sitemap);
    }
    let mut gaps = HashMap::new();
    let mut disallowed = Vec::new();
    for (h, site) in sites.iter_mut().enumerate() {
        layout.host_pages(h, site, &toc[h], &sitemap[h], &mut gaps, &mut disallowed);
    }
    if spec.hosts > 8 {
        sites[8].routes.insert("/static/app.js".into(), Resource::text("application/javascript", APP_JS));
    }
    let mut seeds: Vec<String> = (0..spec.hosts).map(|h| layout.url(h, "/")).collect();
    let mut hosts = hosts.clone();
    for i in 0..spec.news_sites {
        let host = news_host(i);
        let news = crate::news::news_site(&host, i, spec.news_articles.max(1));
        let site = news.site.with("/robots.txt", Resource::robots("User-agent: *\nAllow: /\n"));
        seeds.push(format!("http://{host}:{port}/"));
        sites.push(site);
        hosts.push(host);
    }
    let reachable = reachable(&sites, &seeds, &disallowed);
    let titles = pool
        .iter()
        .map(|d| ((hosts[home[d.name.as_str()]].clone(), format!("/{}", d.name)), d.title.clone()))
        .collect();
    Ok(DocsWeb { sites, seeds, reachable, gaps, disallowed, hosts, titles })
}

/// The pages served: a seeded sample of the ones short enough, then in name order, so related
/// pages (sql-*, functions-*) tend to share a host as they share a manual chapter.
fn choose<'d>(docs: &'d [DocPage], spec: &WebSpec) -> Result<Vec<&'d DocPage>, DocsError> {
    let mut pool: Vec<&DocPage> =
        docs.iter().filter(|d| d.words <= spec.max_words && d.name != "bookindex.html").collect();
    if pool.len() < spec.pages {
        return Err(DocsError::TooFew {
            wanted: spec.pages,
            have: pool.len(),
            max_words: spec.max_words,
            dir: docs_dir(),
        });
    }
    pool.sort_by_key(|d| mix(spec.seed, &d.name));
    pool.truncate(spec.pages);
    pool.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(pool)
}

/// Where the pages go: the hosts, each page's home host, and the addresses on them.
struct Layout<'a> {
    spec: &'a WebSpec,
    port: u16,
    hosts: &'a [String],
    home: &'a HashMap<&'a str, usize>,
    per_host: usize,
}

impl Layout<'_> {
    fn url(&self, host: usize, path: &str) -> String {
        format!("http://{}:{}{path}", self.hosts[host], self.port)
    }

    /// Places page `k`, `doc`, on its home host, as each host's kind of trouble wants it
    /// (rendered by a script, rate-limited, failing at first, slow, behind redirects, copied
    /// behind a Disallow, mirrored).
    fn place(
        &self,
        pool: &[&DocPage],
        k: usize,
        doc: &DocPage,
        sites: &mut [Site],
        toc: &mut [Vec<(String, String)>],
        sitemap: &mut [Vec<String>],
    ) {
        let (spec, hosts, home, per_host) = (self.spec, self.hosts, self.home, self.per_host);
        let url = |host: usize, path: &str| self.url(host, path);
        let has = |i: usize| spec.hosts > i;
        let h = home[doc.name.as_str()];
        let nth = k % per_host;
        let path = format!("/{}", doc.name);
        // Two generated cross-host links per page, on top of the manual's own.
        let related: Vec<&DocPage> =
            (0..2).map(|j| pool[(mix(spec.seed ^ j, &doc.name) % pool.len() as u64) as usize]).collect();
        let html = rewrite(doc, &related, h, &home, &url);
        let resource = if has(8) && h == 8 && nth % 3 == 1 {
            needs_javascript(doc, &html, nth % 2 == 1)
        } else {
            Resource::Html(html.clone())
        };
        let resource = match h {
            3 if nth % 3 == 1 => Resource::Sequence(vec![too_many(), too_many(), resource]),
            4 if nth % 3 == 1 => Resource::Sequence(vec![Resource::status(503), Resource::status(500), resource]),
            5 => Resource::Delayed { delay: SLOW, inner: Box::new(resource) },
            _ => resource,
        };
        sites[h].routes.insert(path.clone(), resource);
        sitemap[h].push(url(h, &path));
        if h == 6 && nth % 3 == 1 {
            // Linked only through a chain of two redirects.
            let (old, moved) = (format!("/old/{}", doc.name), format!("/moved/{}", doc.name));
            sites[h].routes.insert(old.clone(), Resource::Redirect { status: 301, location: url(h, &moved) });
            sites[h].routes.insert(moved, Resource::Redirect { status: 302, location: path.clone() });
            toc[h].push((old, doc.title.clone()));
        } else {
            toc[h].push((path.clone(), doc.title.clone()));
        }
        if h == 1 && nth < 5 {
            // Copies behind a Disallow: a polite crawler never asks for them.
            let private = format!("/private/{}", doc.name);
            sites[h].routes.insert(private.clone(), Resource::Html(html.clone()));
            toc[h].push((private, format!("{} (internal copy)", doc.title)));
        }
        if has(7) && h == 0 && nth < 10 {
            // A mirror with its own layout around the same text: a near duplicate.
            let mirrored = format!("/mirror/{}", doc.name);
            let body = BODY.captures(&html).map_or(html.as_str(), |c| c.get(1).expect("group").as_str());
            let page = format!(
                "<!doctype html><html><head><title>{} (mirror)</title></head><body>\
                     <header><p>Mirrored documentation, kept in sync nightly.</p></header>{body}\
                     <footer><p>Mirror of {}</p></footer></body></html>",
                doc.title, hosts[0]
            );
            sites[7].routes.insert(mirrored.clone(), Resource::Html(page));
            sitemap[7].push(url(7, &mirrored));
            toc[7].push((mirrored, format!("{} (mirror)", doc.title)));
        }
    }

    /// Host `h`'s own pages: its index (its table of contents and links to two other hosts),
    /// robots.txt (a Disallow on host 1, a Crawl-delay on host 2) and its sitemap (none on
    /// host 9).
    fn host_pages(
        &self,
        h: usize,
        site: &mut Site,
        toc: &[(String, String)],
        sitemap: &[String],
        gaps: &mut HashMap<String, Duration>,
        disallowed: &mut Vec<(String, String)>,
    ) {
        let (spec, hosts) = (self.spec, self.hosts);
        let url = |host: usize, path: &str| self.url(host, path);
        let others: String = [1, 2]
            .iter()
            .map(|d| (h + d) % spec.hosts)
            .filter(|&o| o != h)
            .map(|o| format!("<li><a href=\"{}\">{} manual pages</a></li>", url(o, "/"), hosts[o]))
            .collect();
        let entries: String =
            toc.iter().map(|(p, t)| format!("<li><a href=\"{p}\">{}</a></li>\n", escape(t))).collect();
        let index = format!(
            "<!doctype html><html><head><title>{host}: PostgreSQL manual, part {h}</title></head><body>\
             <h1>PostgreSQL manual, part {h}</h1><p>This host serves {n} pages of the PostgreSQL \
             documentation.</p><ul>{entries}</ul><h2>Elsewhere</h2><ul>{others}</ul></body></html>",
            host = hosts[h],
            n = toc.len()
        );
        site.routes.insert("/".into(), Resource::Html(index));
        let mut robots = String::from("User-agent: *\n");
        if h == 1 {
            robots.push_str("Disallow: /private/\n");
            disallowed.push((hosts[h].clone(), "/private/".to_string()));
        }
        if h == 2 {
            robots.push_str(&format!("Crawl-delay: {CRAWL_DELAY_SECS}\n"));
            gaps.insert(hosts[h].clone(), Duration::from_secs(CRAWL_DELAY_SECS));
        }
        robots.push_str("Allow: /\n");
        if h != 9 {
            robots.push_str(&format!("Sitemap: {}\n", url(h, "/sitemap.xml")));
            let urls: String = sitemap.iter().map(|u| format!("<url><loc>{u}</loc></url>")).collect();
            let xml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\
                 <urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{urls}</urlset>"
            );
            site.routes.insert("/sitemap.xml".into(), Resource::text("application/xml", xml));
        }
        site.routes.insert("/robots.txt".into(), Resource::robots(&robots));
    }
}

fn too_many() -> Resource {
    Resource::Raw {
        status: 429,
        headers: vec![("retry-after".into(), RETRY_AFTER_SECS.to_string())],
        body: b"slow down".to_vec(),
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The page's links pointed at where their targets are served (same host: a relative path;
/// another host: an absolute URL); links to anything not served removed; `related` appended
/// as a "see also" list.
fn rewrite(
    doc: &DocPage,
    related: &[&DocPage],
    host: usize,
    home: &HashMap<&str, usize>,
    url: &impl Fn(usize, &str) -> String,
) -> String {
    let target = |name: &str| -> Option<String> {
        let (file, fragment) = name.split_once('#').map_or((name, ""), |(f, r)| (f, r));
        let h = *home.get(file)?;
        let path = format!("/{file}");
        let base = if h == host { path } else { url(h, &path) };
        Some(if fragment.is_empty() { base } else { format!("{base}#{fragment}") })
    };
    let html = HREF.replace_all(&doc.html, |c: &regex::Captures| match (&c[1], &c[2]) {
        ("href", v) if v.starts_with('#') => format!(" href=\"{v}\""),
        ("href", v) => target(v).map_or_else(String::new, |t| format!(" href=\"{t}\"")),
        // Images and scripts of the shipped manual are not served.
        (_, v) => format!(" data-src=\"{v}\""),
    });
    let see_also: String = related
        .iter()
        .filter(|r| r.name != doc.name)
        .filter_map(|r| target(&r.name).map(|t| format!("<li><a href=\"{t}\">{}</a></li>", escape(&r.title))))
        .collect();
    let block = format!("<div class=\"see-also\"><h3>See also</h3><ul>{see_also}</ul></div>");
    match html.rfind("</body>") {
        Some(i) => format!("{}{block}{}", &html[..i], &html[i..]),
        None => format!("{html}{block}"),
    }
}

/// The page as an application shell: the text arrives in a script that writes it into the
/// document, so a crawler that does not run JavaScript sees an empty page. With `shared`, the
/// writing function comes from the host's `/static/app.js` (a subresource every such page
/// asks for).
fn needs_javascript(doc: &DocPage, html: &str, shared: bool) -> Resource {
    let body = BODY.captures(html).map_or(html, |c| c.get(1).expect("group").as_str());
    let payload = serde_json::to_string(body).expect("strings serialize").replace("</", "<\\/");
    let script = if shared {
        format!("<script src=\"/static/app.js\"></script><script>render({payload});</script>")
    } else {
        format!("<script>document.getElementById('app').innerHTML = {payload};</script>")
    };
    Resource::Html(format!(
        "<!doctype html><html><head><title>{}</title></head><body><div id=\"app\">Loading…</div>\
         <noscript>This documentation needs JavaScript.</noscript>{script}</body></html>",
        escape(&doc.title),
    ))
}

static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r##"href="([^"#]*)"##).expect("regex"));
static LOC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<loc>([^<]*)</loc>").expect("regex"));

/// Breadth-first from the seeds over links (in HTML as served, so not inside a script),
/// sitemaps named by robots.txt, and redirects; skips disallowed paths.
fn reachable(sites: &[Site], seeds: &[String], disallowed: &[(String, String)]) -> HashSet<(String, String)> {
    let by_host: HashMap<&str, &Site> = sites.iter().map(|s| (s.host.as_str(), s)).collect();
    let split = |u: &str, host: &str| -> Option<(String, String)> {
        if u.starts_with('/') {
            return Some((host.to_string(), u.to_string()));
        }
        let rest = u.strip_prefix("http://")?;
        let (authority, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
        let h = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
        Some((h.to_string(), path))
    };
    let allowed = |h: &str, p: &str| !disallowed.iter().any(|(dh, prefix)| dh == h && p.starts_with(prefix.as_str()));
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut pages = HashSet::new();
    let mut queue: VecDeque<(String, String)> = seeds.iter().filter_map(|s| split(s, "")).collect();
    for s in sites {
        if let Some(Resource::Raw { body, .. }) = s.routes.get("/robots.txt") {
            for line in String::from_utf8_lossy(body).lines() {
                if let Some(map) = line.strip_prefix("Sitemap: ") {
                    queue.extend(split(map.trim(), &s.host));
                }
            }
        }
    }
    while let Some((h, p)) = queue.pop_front() {
        if !allowed(&h, &p) || !seen.insert((h.clone(), p.clone())) {
            continue;
        }
        let Some(site) = by_host.get(h.as_str()) else { continue };
        let mut resource = site.routes.get(&p);
        // What the page finally serves (after the bursts; behind the delay).
        loop {
            match resource {
                Some(Resource::Sequence(seq)) => resource = seq.last(),
                Some(Resource::Delayed { inner, .. }) => resource = Some(inner),
                _ => break,
            }
        }
        match resource {
            Some(Resource::Html(html)) => {
                pages.insert((h.clone(), p.clone()));
                let visible = html.split("<script").next().unwrap_or(html);
                queue.extend(LINK.captures_iter(visible).filter_map(|c| split(&c[1], &h)));
            }
            Some(Resource::Redirect { location, .. }) => queue.extend(split(location, &h)),
            Some(Resource::Raw { body, .. }) if p.ends_with(".xml") => {
                queue.extend(LOC.captures_iter(&String::from_utf8_lossy(body)).filter_map(|c| split(&c[1], &h)));
            }
            _ => {}
        }
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, links: &[&str], words: usize) -> DocPage {
        let a: String = links.iter().map(|l| format!("<a href=\"{l}\">x</a> ")).collect();
        let text = "word ".repeat(words);
        DocPage {
            name: name.into(),
            title: name.trim_end_matches(".html").into(),
            html: format!(
                "<html><head><title>{name}</title><link href=\"stylesheet.css\"/></head>\
                 <body><p>{text}</p>{a}<a href=\"https://www.postgresql.org/\">pg</a>\
                 <img src=\"gin.svg\"/></body></html>"
            ),
            words,
        }
    }

    fn corpus() -> Vec<DocPage> {
        (0..120)
            .map(|i| doc(&format!("p{i:03}.html"), &[&format!("p{:03}.html#x", (i + 1) % 120), "#top"], 50))
            .collect()
    }

    #[test]
    fn pages_are_split_over_hosts_with_pathologies_and_nothing_points_off_the_machine() {
        let spec = WebSpec { hosts: 10, pages: 100, seed: 7, max_words: 100, news_sites: 0, news_articles: 0 };
        let web = build(&corpus(), &spec, 8080).unwrap();
        assert_eq!(web.hosts.len(), 10);
        let served: usize = web.titles.len();
        assert_eq!(served, 100);
        for site in &web.sites {
            for r in site.routes.values() {
                let Resource::Html(html) = r else { continue };
                assert!(!html.contains("postgresql.org") && !html.contains("stylesheet.css"), "{html}");
                let scripts = html.matches(" src=\"").count();
                assert_eq!(scripts, html.matches("<script src=\"/static/app.js\"").count(), "images are not served");
            }
        }
        // The chosen sample depends on the seed, the same seed gives the same web.
        let again = build(&corpus(), &spec, 8080).unwrap();
        assert_eq!(web.reachable, again.reachable);
        let other = build(&corpus(), &WebSpec { seed: 8, ..spec.clone() }, 8080).unwrap();
        assert_ne!(web.titles.keys().collect::<Vec<_>>(), other.titles.keys().collect::<Vec<_>>());

        // Reachable: every served page and mirror, not the private copies nor redirect hops.
        let hosts_of = |prefix: &str| web.reachable.iter().filter(|(_, p)| p.starts_with(prefix)).count();
        assert_eq!(hosts_of("/private/"), 0);
        assert_eq!(hosts_of("/old/") + hosts_of("/moved/"), 0);
        assert_eq!(hosts_of("/mirror/"), 10);
        for key in web.titles.keys() {
            assert!(web.reachable.contains(key), "{key:?} unreachable");
        }
        assert_eq!(web.reachable.len(), 100 + 10 + 10, "pages, mirrors and each host's table of contents");
        assert_eq!(web.gaps.get("docs2.test"), Some(&Duration::from_secs(CRAWL_DELAY_SECS)));
        assert_eq!(web.disallowed, vec![("docs1.test".to_string(), "/private/".to_string())]);
        let robots = |h: usize| match web.sites[h].routes.get("/robots.txt") {
            Some(Resource::Raw { body, .. }) => String::from_utf8(body.clone()).unwrap(),
            _ => panic!("no robots.txt"),
        };
        assert!(robots(1).contains("Disallow: /private/") && robots(2).contains("Crawl-delay: 1"));
        assert!(!robots(9).contains("Sitemap") && !web.sites[9].routes.contains_key("/sitemap.xml"));
        assert!(web.sites[5].routes.values().any(|r| matches!(r, Resource::Delayed { .. })));
        assert!(web.sites[3]
            .routes
            .values()
            .any(|r| matches!(r, Resource::Sequence(s) if matches!(s[0], Resource::Raw { status: 429, .. }))));
        assert!(web.sites[8].routes.values().any(|r| matches!(r, Resource::Html(h) if h.contains("innerHTML"))));
        // Cross-host links are absolute, same-host links relative.
        let Some(Resource::Html(page)) =
            web.sites[0].routes.values().find(|r| matches!(r, Resource::Html(h) if h.contains("See also")))
        else {
            panic!("no page on host 0")
        };
        assert!(page.contains("http://docs"), "{page}");
    }

    #[test]
    fn too_few_pages_or_hosts_is_a_typed_error() {
        let docs = corpus();
        assert!(matches!(
            build(&docs, &WebSpec { hosts: 2, pages: 500, seed: 1, max_words: 100, ..WebSpec::default() }, 1),
            Err(DocsError::TooFew { have: 120, .. })
        ));
        assert!(matches!(
            build(&docs, &WebSpec { hosts: 0, pages: 10, seed: 1, max_words: 100, ..WebSpec::default() }, 1),
            Err(DocsError::Empty)
        ));
        assert!(matches!(load(Path::new("/nonexistent/docs")), Err(DocsError::Missing(_))));
    }
}

#[cfg(test)]
mod real {
    use super::*;

    /// The real manual, when installed (scripts/setup.sh installs it; the simulator's own
    /// tests need it and fail with [`DocsError::Missing`]'s advice otherwise).
    #[test]
    fn the_installed_manual_builds_the_default_web() {
        let docs = load(&docs_dir()).unwrap_or_else(|e| panic!("{e}"));
        let web = build(&docs, &WebSpec::default(), 1234).unwrap();
        assert_eq!(web.titles.len(), 500);
        // 500 pages, 20 tables of contents, 10 mirrors; four news sites of 30 articles and 2
        // hub pages each.
        assert_eq!(web.reachable.len(), 530 + 4 * 32, "{}", web.reachable.len());
        assert_eq!(web.hosts.len(), 24);
        let shells = |shared: bool| {
            web.sites[8]
                .routes
                .values()
                .filter(|r| matches!(r, Resource::Html(h) if h.contains("Loading") && h.contains("/static/app.js") == shared))
                .count()
        };
        assert!(shells(true) > 0 && shells(false) > 0, "shells with the shared script and without");
    }
}
