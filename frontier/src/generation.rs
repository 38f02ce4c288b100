//! Lost writes in sled, noticed: a generation number kept both inside the database and in a
//! file beside its log.
//!
//! When sled opens a log with a damaged record (flipped bytes on disk), its recovery can take
//! the damage for the torn tail of a crash and drop every record written after it — without a
//! word (seen: 11 to 894 of 20,000 records missing). Weft cannot repair that, but it must not
//! carry on as if nothing had happened: the node periodically writes the next generation into
//! the database, flushes, and only then records it in [`FILE`]. A crash can leave the file
//! behind the database, never ahead of it; so a database whose generation is *lower* than the
//! file's has lost writes that were on disk.
//!
//! The file lives inside `db/`: moving `db/` away to start afresh, or restoring it from a
//! backup, takes the file with it.

use std::path::{Path, PathBuf};

/// The file beside sled's own in the database directory.
pub const FILE: &str = "weft.generation";
/// The key inside the database.
const KEY: &[u8] = b"weft/generation";

/// The database lost writes it had flushed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the database holds generation {found}, but generation {flushed} was flushed to it before \
     (recorded in {file}): sled dropped writes it had on disk, which happens when its files are \
     damaged. Restore db/ from a backup, or move it away to start afresh"
)]
pub struct LostWrites {
    pub found: u64,
    pub flushed: u64,
    pub file: PathBuf,
}

fn stored(db: &sled::Db) -> Result<u64, sled::Error> {
    Ok(db.get(KEY)?.and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok()).map_or(0, u64::from_be_bytes))
}

fn recorded(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join(FILE)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

/// Compares the database in `dir` (sled's directory) with its generation file. A missing or
/// unreadable file is generation 0 (a database from before, or the file lost with a crash).
pub fn check(db: &sled::Db, dir: &Path) -> Result<Result<u64, LostWrites>, sled::Error> {
    let (found, flushed) = (stored(db)?, recorded(dir));
    if found < flushed {
        return Ok(Err(LostWrites { found, flushed, file: dir.join(FILE) }));
    }
    Ok(Ok(found))
}

/// Writes the next generation into the database, flushes it, then records it in the file
/// (written aside and renamed: never half a number). Blocking; one caller at a time.
pub fn advance(db: &sled::Db, dir: &Path) -> std::io::Result<u64> {
    let next = stored(db).map_err(std::io::Error::other)? + 1;
    db.insert(KEY, &next.to_be_bytes()).map_err(std::io::Error::other)?;
    db.flush().map_err(std::io::Error::other)?;
    let tmp = dir.join(format!("{FILE}.tmp"));
    std::fs::write(&tmp, next.to_string())?;
    std::fs::rename(&tmp, dir.join(FILE))?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_behind_its_generation_file_lost_writes() {
        let dir = tempfile::tempdir().unwrap();
        let db = crate::open_db(dir.path(), 8 << 20).unwrap();
        assert_eq!(check(&db, dir.path()).unwrap(), Ok(0), "a new database");
        for _ in 0..3 {
            advance(&db, dir.path()).unwrap();
        }
        assert_eq!(check(&db, dir.path()).unwrap(), Ok(3));
        // The file behind the database (a crash between the flush and the rename): fine.
        std::fs::write(dir.path().join(FILE), "2").unwrap();
        assert_eq!(check(&db, dir.path()).unwrap(), Ok(3));
        // The database behind the file: what sled's recovery does when it drops a tail.
        std::fs::write(dir.path().join(FILE), "5").unwrap();
        let lost = check(&db, dir.path()).unwrap().unwrap_err();
        assert_eq!((lost.found, lost.flushed), (3, 5));
        assert!(lost.to_string().contains("dropped writes"), "{lost}");
        // An unreadable file is no evidence.
        std::fs::write(dir.path().join(FILE), "not a number").unwrap();
        assert_eq!(check(&db, dir.path()).unwrap(), Ok(3));
    }
}
