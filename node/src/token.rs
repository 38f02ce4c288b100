//! The API's write token: 32 random bytes, hex, in `<data-dir>/api.token` (mode 0600), created
//! at the first start. Reading endpoints are open (the API listens on 127.0.0.1 by default);
//! endpoints that change what the node does (seeds, pause, blocks) want
//! `Authorization: Bearer <token>` — so another local user, or a web page in the operator's
//! browser making blind requests to localhost, cannot steer the crawler.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file's name in the data dir.
pub const FILE: &str = "api.token";

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error("cannot read or write {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path} does not hold a token (64 hex digits); delete it to have a new one made")]
    Corrupt { path: PathBuf },
    #[error("no randomness for the API token: {0}")]
    Random(std::io::Error),
}

/// The token, compared in constant time.
#[derive(Clone)]
pub struct ApiToken(String);

impl std::fmt::Debug for ApiToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiToken(…)")
    }
}

fn random_hex() -> Result<String, TokenError> {
    let mut bytes = [0u8; 32];
    let mut file = std::fs::File::open("/dev/urandom").map_err(TokenError::Random)?;
    std::io::Read::read_exact(&mut file, &mut bytes).map_err(TokenError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl ApiToken {
    /// Reads the data dir's token, creating it (0600) if there is none.
    pub fn load_or_create(data_dir: &Path) -> Result<ApiToken, TokenError> {
        let path = data_dir.join(FILE);
        let io = |source| TokenError::Io { path: path.clone(), source };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let t = text.trim();
                if t.len() == 64 && t.chars().all(|c| c.is_ascii_hexdigit()) {
                    Ok(ApiToken(t.to_ascii_lowercase()))
                } else {
                    Err(TokenError::Corrupt { path })
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(data_dir).map_err(io)?;
                let token = random_hex()?;
                let tmp = path.with_extension("token.tmp");
                let mut options = std::fs::OpenOptions::new();
                options.write(true).create(true).truncate(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let mut file = options.open(&tmp).map_err(io)?;
                writeln!(file, "{token}").map_err(io)?;
                file.sync_all().map_err(io)?;
                std::fs::rename(&tmp, &path).map_err(io)?;
                Ok(ApiToken(token))
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Whether an `Authorization` header value carries this token (`Bearer <token>`).
    pub fn accepts(&self, header: Option<&str>) -> bool {
        let Some(given) = header.and_then(|h| h.strip_prefix("Bearer ")).map(str::trim) else {
            return false;
        };
        let (a, b) = (given.as_bytes(), self.0.as_bytes());
        // Constant time in the token's length: no early exit on the first wrong byte.
        a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_made_once_kept_private_and_checked_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let t = ApiToken::load_or_create(dir.path()).unwrap();
        assert_eq!(t.as_str().len(), 64);
        assert_eq!(ApiToken::load_or_create(dir.path()).unwrap().as_str(), t.as_str(), "kept across restarts");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(t.accepts(Some(&format!("Bearer {}", t.as_str()))));
        assert!(!t.accepts(None));
        assert!(!t.accepts(Some(t.as_str())), "the scheme is required");
        assert!(!t.accepts(Some(&format!("Bearer {}x", t.as_str()))));
        assert!(!t.accepts(Some("Bearer 00")));
        std::fs::write(dir.path().join(FILE), "not a token").unwrap();
        assert!(matches!(ApiToken::load_or_create(dir.path()), Err(TokenError::Corrupt { .. })));
    }
}
