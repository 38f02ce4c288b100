//! What the compact model charges for one exchange between two members that differ in some
//! events in flight: the answer's key lists (every entry changed in each time bucket that
//! differs), the events each lacks, and what a member back from a short absence catches up.

use super::log::Log;
use super::sizes::Sizes;
use weft_p2p::roster::digest::{Cuts, MID, RECENT};
use weft_p2p::roster::ANSWER_BYTES;

/// The bodies of an exchange's messages after the digest.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    /// The answer: keys and versions of the buckets that differ.
    pub keys: f64,
    /// Events the asker sends (with the keys it wants), and those it receives.
    pub push: f64,
    pub pull: f64,
    /// Bytes of the asker's backlog caught up by this exchange.
    pub caught: f64,
}

/// The cost of an exchange at `unix` in which the asker alone holds events `only_a` and the
/// other alone `only_b`, the asker owing `backlog` bytes; `position(node)` places a member on
/// the monitor ring, `members` is the roster's size.
#[allow(clippy::too_many_arguments)]
pub fn exchange(
    log: &Log,
    only_a: &[usize],
    only_b: &[usize],
    backlog: f64,
    unix: u64,
    unix0: u64,
    position: impl Fn(u32) -> u64,
    members: usize,
    sizes: &Sizes,
) -> Cost {
    let cuts = Cuts::at(unix);
    let mut buckets: Vec<usize> = (only_a.iter().chain(only_b))
        .map(|id| cuts.bucket(unix0 + log[*id].at as u64, position(log[*id].node)))
        .collect();
    if backlog > 0.0 {
        buckets.push(RECENT + 4);
    }
    buckets.sort_unstable();
    buckets.dedup();
    let entries = |b: usize| {
        if b >= RECENT + MID {
            // An old bucket holds a sixteenth of the roster.
            return (members as f64 / 16.0).ceil();
        }
        let (from, until) = cuts.span(b);
        log.made_in(from, until)
    };
    let bytes = |ids: &[usize]| ids.iter().map(|id| log[*id].bytes).sum::<f64>();
    Cost {
        keys: buckets.iter().map(|b| entries(*b)).sum::<f64>() * sizes.key,
        push: bytes(only_a) + only_b.len() as f64 * sizes.want,
        pull: bytes(only_b),
        caught: backlog.min(2.0 * ANSWER_BYTES as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::exchange;
    use crate::scale::roster::log::{Change, Happened, Log};
    use crate::scale::roster::sizes::Sizes;
    use libp2p::PeerId;
    use weft_p2p::roster::event::{Event, What};

    #[test]
    fn a_difference_costs_its_events_and_the_keys_of_its_bucket() {
        let sizes = Sizes::real();
        let mut log = Log::default();
        let real = Event::new(&PeerId::random(), 1, What::Left);
        let unix0 = 1_780_000_000;
        // Three changes in the same eight seconds, one of which only the asker holds.
        for at in [100.0, 101.0, 102.0] {
            log.record(
                Change { node: 0, at, what: Happened::Left, bytes: 110.0, real: real.clone() },
                unix0 + at as u64,
            );
        }
        let cost = exchange(&log, &[1], &[], 0.0, unix0 + 104, unix0, |_| 7, 1000, &sizes);
        assert_eq!((cost.push, cost.pull, cost.caught), (110.0, 0.0, 0.0));
        assert!(cost.keys >= sizes.key && cost.keys <= 3.0 * sizes.key, "{cost:?}");
        let caught = exchange(&log, &[], &[], 1e6, unix0 + 104, unix0, |_| 7, 1000, &sizes);
        assert!(caught.caught > 0.0 && caught.caught < 1e6);
    }
}
