//! How long this node has been a member of the network without a break: what its heartbeat
//! claims ([`weft_p2p::membership::Heartbeat::joined`]) and what its ring points grow with
//! (see [`weft_p2p::membership`]). Kept in the node's database with when the node was last
//! alive, so a restart shorter than the members' patience keeps it, and a longer absence —
//! after which the members have dropped the node — starts it again, as they see it.

use std::time::Duration;

const KEY: &[u8] = b"weft/member_since";

fn read(db: &sled::Db) -> sled::Result<Option<(u64, u64)>> {
    Ok(db.get(KEY)?.and_then(|v| {
        let v: [u8; 16] = v.as_ref().try_into().ok()?;
        let (joined, alive) = v.split_at(8);
        Some((u64::from_be_bytes(joined.try_into().ok()?), u64::from_be_bytes(alive.try_into().ok()?)))
    }))
}

fn write(db: &sled::Db, joined: u64, alive: u64) -> sled::Result<()> {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&joined.to_be_bytes());
    v[8..].copy_from_slice(&alive.to_be_bytes());
    db.insert(KEY, &v)?;
    Ok(())
}

/// Since when this node has been a member, at its start at `now` (Unix seconds): as before if
/// it was alive within `patience` (the heartbeats the members wait for), else `now`.
pub fn resume(db: &sled::Db, patience: Duration, now: u64) -> sled::Result<u64> {
    let joined = match read(db)? {
        Some((joined, alive)) if joined <= now && now.saturating_sub(alive) <= patience.as_secs() => joined,
        _ => now,
    };
    write(db, joined, now)?;
    Ok(joined)
}

/// Records that the node is alive at `now` (Unix seconds); flushed with the next flush.
pub fn alive(db: &sled::Db, now: u64) -> sled::Result<()> {
    let joined = read(db)?.map_or(now, |(joined, _)| joined.min(now));
    write(db, joined, now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_restart_keeps_the_membership_and_a_long_absence_starts_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let patience = Duration::from_secs(20);
        assert_eq!(resume(&db, patience, 1_000).unwrap(), 1_000, "first start");
        alive(&db, 5_000).unwrap();
        assert_eq!(resume(&db, patience, 5_015).unwrap(), 1_000, "back within 20 s");
        alive(&db, 6_000).unwrap();
        assert_eq!(resume(&db, patience, 6_021).unwrap(), 6_021, "away longer: dropped, joins anew");
        db.insert(KEY, b"garbage".as_ref()).unwrap();
        assert_eq!(resume(&db, patience, 7_000).unwrap(), 7_000, "an unreadable record is a new start");
        alive(&db, 7_010).unwrap();
        assert_eq!(resume(&db, patience, 6_000).unwrap(), 6_000, "a clock set back never claims the future");
    }
}
