//! The node's persistent ed25519 identity: its peer id is its name on the network and its
//! place on the hash ring, so it must survive restarts. Kept in `<data dir>/identity.key`
//! (libp2p's protobuf key encoding), written once, atomically, readable by the owner only.

pub use libp2p::identity::Keypair;
use std::io::Write;
use std::path::{Path, PathBuf};

/// File name of the key in the data dir.
pub const FILE: &str = "identity.key";

#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("cannot read or write the node identity {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a node identity ({reason}); move it away to create a new one")]
    Corrupt { path: PathBuf, reason: String },
}

/// Loads the identity in `data_dir`, creating it on first start.
pub fn load_or_create(data_dir: &Path) -> Result<Keypair, IdentityError> {
    let path = data_dir.join(FILE);
    let io = |source| IdentityError::Io { path: path.clone(), source };
    match std::fs::read(&path) {
        Ok(bytes) => Keypair::from_protobuf_encoding(&bytes)
            .map_err(|e| IdentityError::Corrupt { path: path.clone(), reason: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(data_dir).map_err(io)?;
            let key = Keypair::generate_ed25519();
            let bytes = key.to_protobuf_encoding().expect("ed25519 keys encode");
            let tmp = path.with_extension("key.tmp");
            let mut options = std::fs::OpenOptions::new();
            options.write(true).create(true).truncate(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
            let mut file = options.open(&tmp).map_err(io)?;
            file.write_all(&bytes).map_err(io)?;
            file.sync_all().map_err(io)?;
            std::fs::rename(&tmp, &path).map_err(io)?;
            Ok(key)
        }
        Err(e) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_survives_a_restart_and_garbage_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path()).unwrap();
        let b = load_or_create(dir.path()).unwrap();
        assert_eq!(a.public().to_peer_id(), b.public().to_peer_id());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join(FILE), b"garbage").unwrap();
        let e = load_or_create(dir.path()).unwrap_err().to_string();
        assert!(e.contains("not a node identity"), "{e}");
    }
}
