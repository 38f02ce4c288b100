//! Joining through the bootstrap peers: where it stands ([`Joining`], shown in `/status`), and
//! when to dial them again while none answers — after a delay that doubles from [`FIRST_RETRY`]
//! up to [`MAX_RETRY`], back to the first once one has answered.

use super::status::Joining;
use std::time::Duration;
use tokio::time::Instant;

/// First delay before dialling the bootstrap peers again when none answered; doubles up to
/// [`MAX_RETRY`].
pub(super) const FIRST_RETRY: Duration = Duration::from_secs(1);
pub(super) const MAX_RETRY: Duration = Duration::from_secs(60);

/// The bootstrap dials' state.
#[derive(Debug, Default)]
pub(super) struct Bootstrap {
    joining: Joining,
    /// When to dial again, while a retry is scheduled.
    retry_at: Option<Instant>,
    /// Rounds of dials no bootstrap peer answered, since one last did.
    attempt: u32,
}

impl Bootstrap {
    pub(super) fn joining(&self) -> &Joining {
        &self.joining
    }

    /// When the next round of dials is due, if one is scheduled.
    pub(super) fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// A round of dials starts (the scheduled one, if any, is taken).
    pub(super) fn dialing(&mut self) {
        self.retry_at = None;
        if self.joining == Joining::First {
            self.joining = Joining::Connecting;
        }
    }

    /// A bootstrap peer answered; `true` the first time since the node was last cut off.
    pub(super) fn joined(&mut self) -> bool {
        if self.joining == Joining::Joined {
            return false;
        }
        self.joining = Joining::Joined;
        self.attempt = 0;
        self.retry_at = None;
        true
    }

    /// Every connection closed: the node is connecting again.
    pub(super) fn cut_off(&mut self) {
        self.joining = Joining::Connecting;
    }

    /// Schedules the next round of dials after `error` (unless one is scheduled already);
    /// returns its delay when it schedules one.
    pub(super) fn retry(&mut self, error: String, now: Instant) -> Option<Duration> {
        if self.retry_at.is_some() {
            return None;
        }
        let delay = FIRST_RETRY.saturating_mul(1 << self.attempt.min(10)).min(MAX_RETRY);
        self.attempt += 1;
        self.retry_at = Some(now + delay);
        self.joining = Joining::Retrying { attempt: self.attempt, next_in_secs: delay.as_secs(), last_error: error };
        Some(delay)
    }

    pub(super) fn attempt(&self) -> u32 {
        self.attempt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_delay_doubles_to_its_cap_and_starts_over_once_joined() {
        let now = Instant::now();
        let mut b = Bootstrap::default();
        assert_eq!(b.joining(), &Joining::First);
        b.dialing();
        assert_eq!(b.joining(), &Joining::Connecting);
        let delays: Vec<u64> = (0..8)
            .map(|_| {
                let d = b.retry("refused".into(), now).expect("scheduled");
                assert_eq!(b.retry("again".into(), now), None, "one round scheduled at a time");
                b.dialing();
                d.as_secs()
            })
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert!(matches!(b.joining(), Joining::Connecting | Joining::Retrying { .. }));
        assert!(b.joined(), "joined now");
        assert!(!b.joined(), "already");
        assert_eq!((b.attempt(), b.retry_at()), (0, None));
        b.cut_off();
        assert_eq!(b.retry("gone".into(), now), Some(FIRST_RETRY), "from the first delay again");
        assert!(matches!(b.joining(), Joining::Retrying { attempt: 1, next_in_secs: 1, .. }));
    }
}
