//! `weft templates list | show HOST | changes HOST | relearn HOST`: what the node learned about
//! the layouts and URLs of the hosts it crawls, and forgetting it. Asks the running node's API
//! (`relearn` with the write token from the data dir); when no node answers, opens the data dir
//! itself (sled allows one process per database).

use anyhow::Context;
use serde::de::DeserializeOwned;
use std::io::Write;
use std::net::SocketAddr;
use std::time::{Duration, UNIX_EPOCH};
use weft_extract::changes::{Change, ChangeKind};
use weft_layouts::{change_log, load_overrides, relearn, HostDetail, HostSummary, LayoutStore};

/// What to show.
pub enum What {
    List,
    Show(String),
    Changes(String),
    Relearn(String),
}

impl What {
    fn path(&self) -> String {
        match self {
            What::List => "/templates".into(),
            What::Show(h) => format!("/templates/{h}"),
            What::Changes(h) => format!("/templates/{h}/changes"),
            What::Relearn(h) => format!("/templates/{h}/relearn"),
        }
    }
}

/// Fetches from the API at `api` (or the data dir) and prints, as text or JSON.
pub async fn run(
    config: &weft_config::Config,
    api: SocketAddr,
    what: What,
    json: bool,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    let host = |h: &str| h.trim().to_ascii_lowercase();
    let what = match what {
        What::Show(h) => What::Show(host(&h)),
        What::Changes(h) => What::Changes(host(&h)),
        What::Relearn(h) => What::Relearn(host(&h)),
        w => w,
    };
    let token = match &what {
        What::Relearn(_) => Some(crate::token::ApiToken::load_or_create(&config.data_dir)?),
        _ => None,
    };
    let body = match ask(api, &what.path(), token.as_ref().map(|t| t.as_str())).await? {
        Some(body) => body,
        None => offline(config, &what)?,
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&serde_json::from_slice::<serde_json::Value>(&body)?)?)?;
        return Ok(());
    }
    match what {
        What::List => print_list(&parse::<Vec<HostSummary>>(&body)?, out)?,
        What::Show(_) => print_detail(&parse::<HostDetail>(&body)?, out)?,
        What::Changes(h) => print_changes(&h, &parse::<Vec<Change>>(&body)?, out)?,
        What::Relearn(h) => {
            let r: serde_json::Value = parse(&body)?;
            writeln!(
                out,
                "{h}: forgot {} templates, {} signatures, {} teacher jobs{}{}; its layouts are learned again from its next pages",
                r["templates"], r["signatures"], r["jobs"],
                if r["rendering"].as_bool() == Some(true) { ", the browser decision" } else { "" },
                if r["url_patterns"].as_bool() == Some(true) { ", its URL patterns" } else { "" },
            )?;
        }
    }
    Ok(())
}

fn parse<T: DeserializeOwned>(body: &[u8]) -> anyhow::Result<T> {
    serde_json::from_slice(body).context("unexpected answer from the node")
}

/// The API's answer (a `POST` with the write token when `token` is given); `None` when nothing
/// listens.
async fn ask(api: SocketAddr, path: &str, token: Option<&str>) -> anyhow::Result<Option<Vec<u8>>> {
    let url = format!("http://{api}{path}");
    let client = reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(10)).build()?;
    let request = match token {
        Some(t) => client.post(&url).bearer_auth(t),
        None => client.get(&url),
    };
    let resp = match request.send().await {
        Ok(r) => r,
        Err(e) if e.is_connect() => return Ok(None),
        Err(e) => return Err(anyhow::Error::new(e).context(format!("asking {url}"))),
    };
    let status = resp.status();
    let body = resp.bytes().await?.to_vec();
    if !status.is_success() {
        let message = weft_content::client::error_message(&body);
        anyhow::bail!("the node at {api} answered {status}: {message}");
    }
    Ok(Some(body))
}

fn offline(config: &weft_config::Config, what: &What) -> anyhow::Result<Vec<u8>> {
    let db_path = config.data_dir.join("db");
    anyhow::ensure!(
        db_path.exists(),
        "no node answers and no data dir at {} (start a node first)",
        config.data_dir.display()
    );
    // The sled database first: its lock says whether a node (with its API off) holds the data
    // dir, before the frontier's store is opened beside it.
    let db = weft_frontier::open_db(&db_path, 16 << 20)
        .with_context(|| format!("cannot open {} (is a node running with its API off?)", db_path.display()))?;
    let frontier_dir = config.data_dir.join("frontier");
    let tables = weft_frontier::Tables::open_dir(&frontier_dir)
        .with_context(|| format!("cannot open the frontier's store in {}", frontier_dir.display()))?;
    let overrides = load_overrides(&config.data_dir.join(&config.layouts.overrides))?;
    let store = LayoutStore::open(&tables, &db, config.layouts.teach_after)?
        .with_overrides(overrides)
        .with_decision_ttl(config.layouts.decision_ttl_days);
    let patterns = weft_frontier::patterns::Patterns::open(&tables, &db)?;
    let answer = match what {
        What::List => serde_json::to_vec(&store.overview()?)?,
        What::Show(h) => {
            let mut detail = store.detail(h)?;
            detail.url_patterns = patterns.host(h)?;
            serde_json::to_vec(&detail)?
        }
        What::Changes(h) => serde_json::to_vec(&change_log(Some(&store), patterns.changes(h)?, h)?)?,
        What::Relearn(h) => serde_json::to_vec(&relearn(&store, &patterns, h)?)?,
    };
    tables.persist()?;
    Ok(answer)
}

fn when(secs: u64) -> String {
    httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs))
}

fn print_list(hosts: &[HostSummary], out: &mut dyn Write) -> std::io::Result<()> {
    if hosts.is_empty() {
        return writeln!(out, "no layouts seen yet");
    }
    writeln!(
        out,
        "{:<32} {:>9} {:>10} {:>8} {:>11} {:>7}  rendering",
        "host", "templates", "signatures", "pages", "by template", "changes"
    )?;
    for h in hosts {
        let share = if h.pages_seen > 0 { 100.0 * h.pages_by_template as f64 / h.pages_seen as f64 } else { 0.0 };
        let rendering = match &h.rendering {
            Some(r) if r.render => format!("browser ({})", r.reason),
            _ => "static".to_string(),
        };
        let manual = if h.manual { " (manual)" } else { "" };
        writeln!(
            out,
            "{:<32} {:>9} {:>10} {:>8} {:>5} {:>4.0}% {:>7}  {rendering}{manual}",
            h.host, h.templates, h.signatures, h.pages_seen, h.pages_by_template, share, h.changes
        )?;
    }
    Ok(())
}

fn print_detail(d: &HostDetail, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "{}", d.host)?;
    if let Some(r) = &d.rendering {
        writeln!(
            out,
            "  rendering: {} — {} ({} pages rendered; decided on {} at score {:.2}: {})",
            if r.render { "browser" } else { "static" },
            r.reason,
            r.rendered,
            r.url,
            r.score,
            r.signals.join(", ")
        )?;
    }
    if d.templates.is_empty() {
        writeln!(out, "  no templates")?;
    }
    for l in &d.templates {
        let t = &l.template;
        let level = match t.level {
            weft_extract::template::Level::L1 => "L1",
            weft_extract::template::Level::L2 => "L2",
        };
        let origin = match t.origin {
            weft_extract::template::Origin::Learned => format!("learned {}", when(t.learned_at)),
            weft_extract::template::Origin::Manual => "manual (override file)".to_string(),
        };
        writeln!(out, "  template v{} {level} {} — {origin}, confidence {:.2}", t.version, t.signature, t.confidence)?;
        writeln!(out, "    title    {}", t.selectors.title)?;
        writeln!(out, "    content  {}", t.selectors.content)?;
        if let Some(s) = &t.selectors.date {
            writeln!(out, "    date     {s}")?;
        }
        if let Some(s) = &t.selectors.author {
            writeln!(out, "    author   {s}")?;
        }
        if !t.exclusions.is_empty() {
            writeln!(out, "    excluded {}", t.exclusions.join(", "))?;
        }
        for e in &l.evidence {
            writeln!(out, "    · {e}")?;
        }
    }
    if let Some(p) = &d.url_patterns {
        writeln!(out, "  URL templates ({} pages counted):", p.pages())?;
        let mut templates: Vec<_> = p.templates.iter().collect();
        templates.sort_by_key(|t| std::cmp::Reverse(t.count));
        for t in templates.iter().take(20) {
            writeln!(
                out,
                "    {:<40} {:>6} pages, {:<7} first {}, last {}",
                t.template,
                t.count,
                t.page_type().unwrap_or("other"),
                when(t.first_seen),
                when(t.last_seen)
            )?;
        }
        for r in &p.redirects {
            writeln!(out, "    redirects {} → {}: {}", r.from, r.to, r.count)?;
        }
    }
    writeln!(out, "  signatures (most seen first):")?;
    for s in d.signatures.iter().take(20) {
        let r = &s.record;
        let template = r.template_version.map_or("none".to_string(), |v| format!("v{v}"));
        let flags = [(r.queued, " teacher queued"), (r.js_required, " needs JavaScript")]
            .iter()
            .filter(|f| f.0)
            .map(|f| f.1)
            .collect::<String>();
        let level = match s.level {
            weft_extract::template::Level::L1 => "L1",
            weft_extract::template::Level::L2 => "L2",
        };
        writeln!(
            out,
            "    {level} {} seen {:>6}, by template {:>6}, template {template}{flags}",
            s.signature, r.seen, r.by_template
        )?;
    }
    Ok(())
}

fn print_changes(host: &str, changes: &[Change], out: &mut dyn Write) -> std::io::Result<()> {
    if changes.is_empty() {
        return writeln!(out, "no layout or URL-scheme changes recorded for {host}");
    }
    for c in changes {
        let kinds: Vec<&str> = c
            .kinds
            .iter()
            .map(|k| match k {
                ChangeKind::ClassRename { .. } => "class rename",
                ChangeKind::Relocated { .. } => "relocated content",
                ChangeKind::Iframes { .. } => "iframes",
                ChangeKind::SpaMigration => "single-page app",
                ChangeKind::UrlScheme { .. } => "URL scheme",
                ChangeKind::Unknown => "unknown",
            })
            .collect();
        let breaking = if c.breaking { "breaking" } else { "not breaking" };
        writeln!(out, "{} [{}] {breaking}: {}", when(c.at), kinds.join(", "), c.reason)?;
        writeln!(out, "  page {}", c.url)?;
        for e in &c.evidence {
            writeln!(out, "  · {e}")?;
        }
    }
    Ok(())
}
