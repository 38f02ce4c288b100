//! The real exchanges between two members' rosters — `weft_p2p::roster` end to end, as
//! `/weft/roster/1` would carry them — and what each message costs on the wire.

use super::sizes::Encode;
use weft_p2p::roster::{Roster, Trust};

/// Bytes each message of a request-response costs on top of its body, each way: a yamux
/// stream's frames and multistream-select naming `/weft/roster/1`. Estimated, not captured.
pub const MESSAGE_BYTES: f64 = 100.0;

/// The messages of one exchange, each at its encoded size plus [`MESSAGE_BYTES`]: the asker's
/// digest and the answer; when they differ, the follow-up and the events it asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Exchange {
    pub digest: f64,
    pub answer: f64,
    pub follow_up: f64,
    pub events: f64,
}

fn size(v: &dyn Encode) -> f64 {
    v.len() as f64 + MESSAGE_BYTES
}

/// `a` asks `b` at `now`: each takes what the other sends.
pub fn exchange(a: &mut Roster, b: &mut Roster, now: u64) -> Exchange {
    let digest = a.digest(now);
    let answer = b.answer(&digest);
    let mut cost = Exchange { digest: size(&digest), answer: size(&answer), ..Exchange::default() };
    if answer.keys.is_empty() && answer.events.is_empty() {
        return cost;
    }
    for e in answer.events.iter().cloned() {
        let _ = a.apply(e, now, Trust::Member);
    }
    let up = a.follow_up(&answer, now);
    for e in up.events.iter().cloned() {
        let _ = b.apply(e, now, Trust::Member);
    }
    let back = b.events_for(&up.want);
    for e in back.iter().cloned() {
        let _ = a.apply(e, now, Trust::Member);
    }
    (cost.follow_up, cost.events) = (size(&up), size(&back));
    cost
}

/// One page of `theirs` after `after`, taken into `mine` (unless `lost`): the page's bytes and
/// where the next starts (`None`: the last).
pub fn page(
    mine: &mut Roster,
    theirs: &Roster,
    after: Option<u64>,
    now: u64,
    lost: bool,
) -> (f64, Option<Option<u64>>) {
    let page = theirs.snapshot(after, now);
    let bytes = page.len() as f64;
    if lost {
        return (bytes, Some(after));
    }
    let next = page.next;
    for e in page.events {
        let _ = mine.apply(e, now, Trust::Syncing);
    }
    (bytes, next.map(Some))
}

#[cfg(test)]
mod tests {
    use super::{exchange, page};
    use libp2p::identity::Keypair;
    use weft_p2p::roster::event::{Event, What};
    use weft_p2p::roster::{Roster, Trust};

    #[test]
    fn an_exchange_brings_both_rosters_level_and_the_next_costs_only_its_digest() {
        let keys: Vec<Keypair> = (0..30).map(|_| Keypair::generate_ed25519()).collect();
        let t0 = 1_780_000_000;
        let mut a = Roster::new(16);
        for (i, k) in keys.iter().enumerate() {
            let at = t0 + i as u64;
            let e = keys[i.saturating_sub(2)..i].iter().fold(
                Event::new(&k.public().to_peer_id(), at, What::Joined { vnodes: 16, since: at, block: 0 }).signed_by(k),
                |e, s| e.signed_by(s),
            );
            a.apply(e, at, Trust::Member).unwrap();
        }
        // A newcomer pulls the roster page by page, then compares digests.
        let mut b = Roster::new(16);
        let (mut after, mut pages) = (None, 0);
        loop {
            let (bytes, next) = page(&mut b, &a, after, t0 + 60, false);
            assert!(bytes > 0.0);
            pages += 1;
            match next {
                Some(n) => after = n,
                None => break,
            }
            assert!(pages < 10);
        }
        assert_eq!(b.len(), 30);
        let now = t0 + 100;
        b.apply(Event::new(&keys[3].public().to_peer_id(), now, What::Left).signed_by(&keys[3]), now, Trust::Member)
            .unwrap();
        let first = exchange(&mut a, &mut b, now);
        assert!(first.events > 0.0 && !a.is_member(&keys[3].public().to_peer_id()));
        let second = exchange(&mut a, &mut b, now);
        assert_eq!((second.follow_up, second.events), (0.0, 0.0));
        assert!(second.digest > super::MESSAGE_BYTES && second.answer < first.answer);
    }
}
