//! The members this node was connected to, kept in a small file (`<data-dir>/peers.json`) so
//! that a node restarted without bootstrap peers — the network's founder, or a node whose
//! bootstrap peer has left — finds its network again through them, instead of founding another
//! after ten seconds with no one to ask.
//!
//! The file is this node's own, but it is read like anything from outside: bounded in size,
//! each entry checked, a bad one skipped, a bad file named in the log and left alone.

use libp2p::{Multiaddr, PeerId};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::time::Duration;

/// How often the members connected are written down (and once more at the stop).
pub const SAVE_EVERY: Duration = Duration::from_secs(60);
/// Members kept, at most.
pub const MAX_SAVED: usize = 32;
/// Addresses kept per member.
const MAX_ADDRS: usize = 4;
/// A larger file is not read.
const MAX_FILE_BYTES: u64 = 64 * 1024;

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    peer: String,
    addrs: Vec<String>,
}

/// The members in `path`, each with its addresses; none when the file is missing, and none
/// (with a warning) when it cannot be read.
pub fn load(path: &Path) -> Vec<(PeerId, Vec<Multiaddr>)> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), "saved peers not read: {e}");
            return Vec::new();
        }
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            tracing::warn!(path = %path.display(), bytes = m.len(), "saved peers not read: larger than 64 KiB");
            return Vec::new();
        }
        Ok(_) => {}
    }
    let entries: Vec<Entry> = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(entries) => entries,
        Err(e) => {
            tracing::warn!(path = %path.display(), "saved peers not read: {e}");
            return Vec::new();
        }
    };
    parse(entries)
}

fn parse(entries: Vec<Entry>) -> Vec<(PeerId, Vec<Multiaddr>)> {
    let mut peers: Vec<(PeerId, Vec<Multiaddr>)> = Vec::new();
    for e in entries.into_iter().take(MAX_SAVED) {
        let Ok(peer) = e.peer.parse::<PeerId>() else { continue };
        let addrs: Vec<Multiaddr> = e.addrs.iter().take(MAX_ADDRS).filter_map(|a| a.parse().ok()).collect();
        if !addrs.is_empty() && !peers.iter().any(|(p, _)| *p == peer) {
            peers.push((peer, addrs));
        }
    }
    peers
}

/// Writes `peers` (at most [`MAX_SAVED`], [`MAX_ADDRS`] addresses each) to `path`, whole or not
/// at all (a temporary file renamed over it).
pub fn save(path: &Path, peers: &[(PeerId, Vec<Multiaddr>)]) -> std::io::Result<()> {
    let entries: Vec<Entry> = (peers.iter().take(MAX_SAVED))
        .map(|(p, addrs)| Entry {
            peer: p.to_string(),
            addrs: addrs.iter().take(MAX_ADDRS).map(|a| a.to_string()).collect(),
        })
        .collect();
    let bytes = serde_json::to_vec_pretty(&entries).map_err(std::io::Error::other)?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::{load, save, MAX_SAVED};
    use libp2p::{Multiaddr, PeerId};

    #[test]
    fn saved_members_come_back_bounded_and_a_bad_file_gives_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peers.json");
        assert!(load(&path).is_empty(), "no file: no peers");
        let addr: Multiaddr = "/ip4/127.0.0.1/tcp/7701".parse().unwrap();
        let peers: Vec<(PeerId, Vec<Multiaddr>)> =
            (0..MAX_SAVED + 5).map(|_| (PeerId::random(), vec![addr.clone(); 6])).collect();
        save(&path, &peers).unwrap();
        let back = load(&path);
        assert_eq!(back.len(), MAX_SAVED);
        assert_eq!(back[0], (peers[0].0, vec![addr.clone(); 4]));

        // Entries that do not parse are skipped, the rest kept; a file that is not JSON, or too
        // large, gives none.
        let mixed = format!(
            r#"[{{"peer":"not a peer","addrs":["/ip4/1.2.3.4/tcp/1"]}},
                {{"peer":"{p}","addrs":["not an address"]}},
                {{"peer":"{p}","addrs":["not an address","/ip4/127.0.0.1/tcp/7701"]}}]"#,
            p = peers[1].0
        );
        std::fs::write(&path, mixed).unwrap();
        assert_eq!(load(&path), vec![(peers[1].0, vec![addr])]);
        std::fs::write(&path, b"\xff garbage").unwrap();
        assert!(load(&path).is_empty());
        std::fs::write(&path, vec![b' '; 70 * 1024]).unwrap();
        assert!(load(&path).is_empty());
    }
}
