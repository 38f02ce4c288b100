//! `weft join`: the one command a volunteer runs after installing. It writes the members to
//! join through (and the contact for site owners) into the config file, keeping the file's
//! comments and everything else in it; refuses before writing when the result would not load
//! or no member answers; then enables and starts the service and waits for the node to say how
//! the network reaches it (the doctor's reachability verdict) and where its dashboard is.
//!
//! The edit is pure ([`edit`]); [`run`] does the I/O around it.

use crate::doctor::{self, Verdict};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use weft_config::{Config, Sources};

/// What `weft join` was asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// The config file to edit (created when missing).
    pub file: PathBuf,
    /// Members to join through (multiaddrs ending in `/p2p/<peer id>`): they replace
    /// `p2p.bootstrap`.
    pub bootstrap: Vec<String>,
    /// Replaces `fetch.contact_url` when given.
    pub contact: Option<String>,
    /// The systemd unit to enable and start; `None`: leave the service alone.
    pub service: Option<String>,
    /// How long to wait for the started node's reachability verdict.
    pub wait: Duration,
    /// How the rest of the configuration is read (environment, install dirs) to check the result.
    pub sources: Sources,
}

/// Why `weft join` stopped; the config file is unchanged in every case but [`Failed::Service`].
#[derive(Debug, thiserror::Error)]
pub enum Failed {
    #[error("{0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error("{0} is not valid TOML: {1}")]
    Parse(PathBuf, String),
    #[error("with these settings the configuration would not load:\n{0}")]
    Invalid(String),
    #[error(
        "no contact for site owners: pass --contact (an https:// page or a mailto: address); a node fetches \
         nothing on the public web without one"
    )]
    NoContact,
    #[error("no member to join through answers:\n{0}")]
    Unreachable(String),
    #[error("{0}: {1}")]
    Write(PathBuf, std::io::Error),
    #[error("the settings are written to {0}, but the service did not start: {1}")]
    Service(PathBuf, String),
}

/// Sets `p2p.enabled`, `p2p.bootstrap` and (when given) `fetch.contact_url` in a config file's
/// text, keeping its comments, its order and its other keys.
pub fn edit(text: &str, bootstrap: &[String], contact: Option<&str>) -> Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| e.to_string())?;
    let p2p = table(&mut doc, "p2p")?;
    p2p["enabled"] = toml_edit::value(true);
    p2p["bootstrap"] = toml_edit::value(bootstrap.iter().map(String::as_str).collect::<toml_edit::Array>());
    if let Some(contact) = contact {
        table(&mut doc, "fetch")?["contact_url"] = toml_edit::value(contact);
    }
    Ok(doc.to_string())
}

/// The table `name` of a document, created when missing.
fn table<'d>(doc: &'d mut toml_edit::DocumentMut, name: &str) -> Result<&'d mut toml_edit::Table, String> {
    doc.entry(name)
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_mut()
        .ok_or_else(|| format!("`{name}` in the config file is not a table"))
}

/// Edits, checks and writes the config, then starts the service (when asked) and reports on
/// `out` as it goes.
pub async fn run(request: Request, out: &mut (dyn std::io::Write + Send)) -> Result<Config, Failed> {
    let file = &request.file;
    let before = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Failed::Read(file.clone(), e)),
    };
    let after =
        edit(&before, &request.bootstrap, request.contact.as_deref()).map_err(|e| Failed::Parse(file.clone(), e))?;

    // Check the result as the node will read it, from a scratch copy beside the file.
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Failed::Write(dir.to_path_buf(), e))?;
    let scratch = tempfile::Builder::new()
        .prefix(".weft-join")
        .suffix(".toml")
        .tempfile_in(dir)
        .map_err(|e| Failed::Write(dir.to_path_buf(), e))?;
    std::fs::write(scratch.path(), &after).map_err(|e| Failed::Write(scratch.path().to_path_buf(), e))?;
    let config =
        weft_config::load(&Sources { config_file: Some(scratch.path().to_path_buf()), ..request.sources.clone() })
            .map_err(|e| Failed::Invalid(e.to_string()))?;
    if config.fetch.contact_url.trim().is_empty() {
        return Err(Failed::NoContact);
    }

    let checks = doctor::bootstrap(&config).await;
    for c in &checks {
        let _ = writeln!(out, "join: {} — {}", c.name, c.detail);
    }
    if !checks.iter().any(|c| c.verdict == Verdict::Ok) {
        let why = checks.iter().map(|c| format!("  {}: {}", c.name, c.detail)).collect::<Vec<_>>().join("\n");
        return Err(Failed::Unreachable(why));
    }

    // Keep the file's permissions: it may be a root-owned conffile the service reads.
    if let Ok(meta) = std::fs::metadata(file) {
        let _ = std::fs::set_permissions(scratch.path(), meta.permissions());
    }
    scratch.persist(file).map_err(|e| Failed::Write(file.clone(), e.error))?;
    let _ = writeln!(
        out,
        "join: wrote p2p.bootstrap{} to {}",
        if request.contact.is_some() { " and fetch.contact_url" } else { "" },
        file.display()
    );

    let dashboard = format!("http://{}/", config.api.listen);
    let Some(unit) = &request.service else {
        let _ = writeln!(
            out,
            "join: start the node with `weft start --config {}`; its dashboard: {dashboard}",
            file.display()
        );
        return Ok(config);
    };
    if !Path::new("/run/systemd/system").is_dir() {
        let _ = writeln!(
            out,
            "join: systemd does not run on this machine, so there is no service to start: run `weft start --config {}` \
             (or under your own supervisor); its dashboard: {dashboard}",
            file.display()
        );
        return Ok(config);
    }
    for args in [vec!["enable", unit.as_str()], vec!["restart", unit.as_str()]] {
        let status = tokio::process::Command::new("systemctl").args(&args).status().await;
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                return Err(Failed::Service(file.clone(), format!("`systemctl {}` exited with {s}", args.join(" "))))
            }
            Err(e) => return Err(Failed::Service(file.clone(), format!("systemctl: {e}"))),
        }
    }
    let _ = writeln!(out, "join: {unit} enabled and started; waiting for the network's verdict on this node");
    let started = Instant::now();
    let verdict = loop {
        let status = doctor::running_status(&config).await;
        let check = doctor::reachability(&config, status.as_ref());
        let kind = status.as_ref().and_then(|s| s.pointer("/network/reachability/kind")).and_then(|k| k.as_str());
        if kind.is_some_and(|k| k != "unknown") || started.elapsed() >= request.wait {
            break check;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    };
    let _ = writeln!(out, "join: reachability — {}", verdict.detail);
    if let Some(fix) = &verdict.fix {
        let _ = writeln!(out, "      {fix}");
    }
    let _ = writeln!(
        out,
        "join: dashboard {dashboard} · `weft doctor` checks the rest · `journalctl -u {unit}` shows the log"
    );
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEER: &str = "/ip4/192.0.2.7/tcp/7701/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN";

    #[test]
    fn the_edit_keeps_comments_and_other_keys_and_replaces_the_peers() {
        // A volunteer's file before joining, with comments the edit must keep.
        let text = concat!(
            "# my node\ndata_dir = \"/var/lib/weft\"\n\n[fetch]\n# who I am\ncontact_url = \"\"\n\n[p2p]\n",
            "enabled = false # off until I join\n", // off on purpose: the edit under test must turn p2p on (asserted below)
            "bootstrap = [\"/ip4/192.0.2.1/tcp/1/p2p/old\"]\nupnp = true\n",
        );
        let out = edit(text, &[PEER.to_string()], Some("mailto:me@example.org")).unwrap();
        assert!(out.starts_with("# my node\ndata_dir = \"/var/lib/weft\""), "{out}");
        assert!(out.contains("# who I am\ncontact_url = \"mailto:me@example.org\""), "{out}");
        assert!(out.contains("upnp = true"), "{out}");
        assert!(!out.contains("/p2p/old"), "the peers are replaced: {out}");
        let parsed: toml::Table = out.parse().unwrap();
        assert_eq!(parsed["p2p"]["enabled"].as_bool(), Some(true));
        assert_eq!(parsed["p2p"]["bootstrap"].as_array().unwrap()[0].as_str(), Some(PEER));
    }

    #[test]
    fn an_empty_file_gets_the_tables_and_no_contact_leaves_the_contact() {
        let out = edit("", &[PEER.to_string()], None).unwrap();
        let parsed: toml::Table = out.parse().unwrap();
        assert_eq!(parsed["p2p"]["bootstrap"].as_array().unwrap().len(), 1);
        assert!(!parsed.contains_key("fetch"));
        let kept = edit("[fetch]\ncontact_url = \"https://me.example/\"\n", &[PEER.to_string()], None).unwrap();
        assert!(kept.contains("contact_url = \"https://me.example/\""));
    }

    #[test]
    fn a_file_that_is_not_toml_or_has_p2p_as_a_value_is_refused() {
        assert!(edit("[p2p\n", &[PEER.to_string()], None).is_err());
        assert!(edit("p2p = 3\n", &[PEER.to_string()], None).unwrap_err().contains("not a table"));
    }
}
