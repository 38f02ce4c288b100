//! Wall-clock time as Weft records it: whole seconds or milliseconds since the Unix epoch,
//! the one spelling of "now" that the frontier, the network and the node store and send.
//!
//! A crate of its own (std only, no dependencies) because those three crates must not depend
//! on each other for it. Durations and deadlines use `std::time::Instant`, never these:
//! the wall clock may step back (NTP), so a reading before the epoch is `0`, not a panic, and
//! callers that need "not before the last value" keep that themselves.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch of `t` (`0` for a time before it).
pub fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Milliseconds since the Unix epoch of `t` (`0` for a time before it).
pub fn ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Now, in seconds since the Unix epoch.
pub fn now_secs() -> u64 {
    secs(SystemTime::now())
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    ms(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn readings_agree_and_the_past_before_the_epoch_is_zero() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(secs(t), 1_700_000_000);
        assert_eq!(ms(t), 1_700_000_000_123);
        assert_eq!(secs(UNIX_EPOCH - Duration::from_secs(5)), 0);
        let (s, m) = (now_secs(), now_ms());
        assert!(m / 1000 >= s && m / 1000 <= s + 1, "{s} s and {m} ms");
    }
}
