use super::digest::Digest;
use super::event::{block_hash, Event, What};
use super::{Change, Refused, Roster, Trust, MONITORS, PROBATION, REFUTE_FOR, SPONSORED_PER_HOUR, TOMBSTONE_FOR};
use crate::membership::MAX_MEMBERS_PER_PREFIX;
use libp2p::identity::Keypair;
use libp2p::PeerId;

const T0: u64 = 1_780_000_000;

fn keys(n: usize) -> Vec<Keypair> {
    (0..n).map(|_| Keypair::generate_ed25519()).collect()
}

fn id(k: &Keypair) -> PeerId {
    k.public().to_peer_id()
}

fn joined(k: &Keypair, at: u64, block: u64, sponsors: &[&Keypair]) -> Event {
    let e = Event::new(&id(k), at, What::Joined { vnodes: 8, since: at, block }).signed_by(k);
    sponsors.iter().fold(e, |e, s| e.signed_by(s))
}

/// A roster of `keys`, each sponsored by the two before it.
pub(super) fn founded(keys: &[Keypair], at: u64) -> (Roster, Vec<Event>) {
    let mut roster = Roster::new(8);
    let mut events = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let sponsors: Vec<&Keypair> = keys[i.saturating_sub(2)..i].iter().collect();
        let e = joined(k, at + i as u64, 0, &sponsors);
        roster.apply(e.clone(), at + i as u64, Trust::Member).unwrap();
        events.push(e);
    }
    (roster, events)
}

#[test]
fn a_join_needs_its_own_signature_and_two_members_sponsors() {
    let k = keys(6);
    let (mut roster, _) = founded(&k[..3], T0);
    assert_eq!(roster.len(), 3);
    let newcomer = &k[3];
    // One sponsor is not enough once there are members to vouch.
    let one = joined(newcomer, T0 + 10, 0, &[&k[0]]);
    assert!(matches!(roster.apply(one, T0 + 10, Trust::Member), Err(Refused::Sponsors { got: 1, needed: 2, .. })));
    // Sponsors who are not members do not count.
    let strangers = joined(newcomer, T0 + 10, 0, &[&k[4], &k[5]]);
    assert!(matches!(roster.apply(strangers, T0 + 10, Trust::Member), Err(Refused::Sponsors { got: 0, .. })));
    // Sponsors cannot make a peer join that did not sign.
    let unsigned = Event::new(&id(newcomer), T0 + 10, What::Joined { vnodes: 8, since: T0 + 10, block: 0 })
        .signed_by(&k[0])
        .signed_by(&k[1]);
    assert!(matches!(roster.apply(unsigned, T0 + 10, Trust::Member), Err(Refused::NotByItself { .. })));
    // A join dated before its admission (to skip the stages) is refused.
    let old = Event::new(&id(newcomer), T0 + 10, What::Joined { vnodes: 8, since: T0 - 9999, block: 0 })
        .signed_by(newcomer)
        .signed_by(&k[0])
        .signed_by(&k[1]);
    assert!(matches!(roster.apply(old, T0 + 10, Trust::Member), Err(Refused::Since(_))));
    let good = joined(newcomer, T0 + 10, 0, &[&k[0], &k[1]]);
    assert_eq!(roster.apply(good.clone(), T0 + 10, Trust::Member), Ok(Some(Change::Joined(id(newcomer)))));
    assert_eq!(roster.apply(good, T0 + 11, Trust::Member), Ok(None), "known already");
    let future = joined(&k[4], T0 + 1000, 0, &[&k[0], &k[1]]);
    assert!(matches!(roster.apply(future, T0 + 10, Trust::Member), Err(Refused::Future(..))));
}

#[test]
fn sybil_limits_hold_per_address_block_and_per_sponsor() {
    let k = keys(3 + MAX_MEMBERS_PER_PREFIX + 1 + SPONSORED_PER_HOUR);
    let (mut roster, _) = founded(&k[..3], T0);
    let block = block_hash(Some("203.0.113.0/24"));
    let crowd = &k[3..3 + MAX_MEMBERS_PER_PREFIX + 1];
    for (i, c) in crowd.iter().enumerate() {
        // Sponsors take turns so that no one reaches its hourly count.
        let s = [&k[i % 3], &k[(i + 1) % 3]];
        let r = roster.apply(joined(c, T0 + 100 + i as u64, block, &s), T0 + 100 + i as u64, Trust::Member);
        if i < MAX_MEMBERS_PER_PREFIX {
            assert!(r.is_ok(), "{i}: {r:?}");
        } else {
            assert!(matches!(r, Err(Refused::Block(_))), "{r:?}");
        }
    }
    // Private or relayed members count under no block; a sponsor's hourly count still binds ...
    let (mut roster, _) = founded(&k[..3], T0);
    let rest = &k[3..];
    let t = T0 + PROBATION;
    let mut refused = 0;
    for (i, c) in rest.iter().enumerate() {
        let r = roster.apply(joined(c, t + i as u64, 0, &[&k[0], &k[1]]), t + i as u64, Trust::Member);
        refused += usize::from(matches!(r, Err(Refused::SponsorRate { .. })));
    }
    // k[0] sponsored two of the founders.
    assert_eq!(refused, rest.len() - (SPONSORED_PER_HOUR - 2));
    assert!(roster.may_sponsor(&id(&k[0]), &id(&k[3]), 0, t + 100).is_err());
    assert!(roster.may_sponsor(&id(&k[2]), &id(&k[3]), 0, t + 100).is_ok());
    roster.expire(t + 3600);
    assert!(roster.may_sponsor(&id(&k[0]), &id(&k[3]), 0, t + 3600).is_ok(), "an hour later");
    // ... once the network is older than a probation: its first members are sponsored by the
    // few there are.
    let (mut young, _) = founded(&k[..3], T0);
    for (i, c) in rest.iter().enumerate() {
        let at = T0 + 10 + i as u64;
        assert!(young.apply(joined(c, at, 0, &[&k[0], &k[1]]), at, Trust::Member).is_ok());
    }
}

#[test]
fn a_death_takes_two_of_its_monitors_and_an_alive_member_refutes_it() {
    let k = keys(60);
    let (mut roster, _) = founded(&k, T0);
    let victim = &k[5];
    let monitors = roster.monitors_of(&id(victim));
    assert_eq!(monitors.len(), MONITORS);
    let key = |p: &PeerId| k.iter().find(|x| id(x) == *p).unwrap();
    // Members far after it on the monitor ring cannot kill it; one monitor alone cannot either.
    let far: Vec<&Keypair> = roster.successors(&id(victim), 60)[30..].iter().map(key).collect();
    let by_others = Event::new(&id(victim), T0 + 60, What::Dead).signed_by(far[0]).signed_by(far[1]);
    assert!(matches!(roster.apply(by_others, T0 + 60, Trust::Member), Err(Refused::Accusers { got: 0, .. })));
    let alone = Event::new(&id(victim), T0 + 61, What::Dead).signed_by(key(&monitors[0]));
    assert!(matches!(roster.apply(alone, T0 + 61, Trust::Member), Err(Refused::Accusers { got: 1, .. })));
    let dead = Event::new(&id(victim), T0 + 62, What::Dead).signed_by(key(&monitors[0])).signed_by(key(&monitors[1]));
    assert_eq!(roster.apply(dead, T0 + 62, Trust::Member), Ok(Some(Change::Gone(id(victim)))));
    assert!(!roster.is_member(&id(victim)));
    assert!(!roster.successors(&id(&k[0]), 8).contains(&id(victim)));
    // It was alive: alone, later, with its first admission's time, it is back.
    let since = T0 + 5;
    let refute = |at: u64| Event::new(&id(victim), at, What::Joined { vnodes: 8, since, block: 0 }).signed_by(victim);
    assert_eq!(roster.apply(refute(T0 + 70), T0 + 70, Trust::Member), Ok(Some(Change::Joined(id(victim)))));
    // Too late to refute alone: it must be sponsored again.
    let dead = Event::new(&id(victim), T0 + 80, What::Dead).signed_by(key(&monitors[0])).signed_by(key(&monitors[2]));
    roster.apply(dead, T0 + 80, Trust::Member).unwrap();
    let late = T0 + 80 + REFUTE_FOR + 1;
    assert!(matches!(roster.apply(refute(late), late, Trust::Member), Err(Refused::Sponsors { .. })));
    // A departure is the member's own.
    let forged = Event::new(&id(&k[1]), T0 + 90, What::Left).signed_by(&k[2]);
    assert!(matches!(roster.apply(forged, T0 + 90, Trust::Member), Err(Refused::NotByItself { .. })));
}

/// One round of anti-entropy: `a` asks `b`.
fn exchange(rosters: &mut [Roster], a: usize, b: usize, now: u64, trust: Trust) -> usize {
    let digest: Digest = rosters[a].digest(now);
    let answer = rosters[b].answer(&digest);
    let up = rosters[a].follow_up(&answer, now);
    let back = rosters[b].events_for(&up.want);
    let moved = answer.events.len() + up.events.len() + back.len();
    for e in answer.events.into_iter().chain(back) {
        let _ = rosters[a].apply(e, now, trust);
    }
    for e in up.events {
        let _ = rosters[b].apply(e, now, Trust::Member);
    }
    moved
}

fn rng(seed: &mut u64) -> usize {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed as usize
}

#[test]
fn anti_entropy_brings_every_roster_to_the_same_ring_in_any_order() {
    let n = 40;
    let k = keys(n + 20);
    let (base, _) = founded(&k[..n], T0);
    let mut rosters = vec![base; n];
    let mut seed = 0x5eed_u64;
    let mut now = T0 + 600;
    // Twenty newcomers join, sponsored by the members after them, each told to one member;
    // five members leave, three die, each told to one member.
    for (i, c) in k[n..].iter().enumerate() {
        let at = now + i as u64;
        let monitors = rosters[0].monitors_of(&id(c));
        let sponsor = |p: &PeerId| k.iter().find(|x| id(x) == *p).unwrap();
        let e = joined(c, at, 0, &[sponsor(&monitors[0]), sponsor(&monitors[1])]);
        let to = rng(&mut seed) % n;
        rosters[to].apply(e, at, Trust::Member).unwrap();
    }
    for i in 0..5 {
        let to = rng(&mut seed) % n;
        rosters[to]
            .apply(Event::new(&id(&k[i]), now + 30, What::Left).signed_by(&k[i]), now + 30, Trust::Member)
            .unwrap();
    }
    for victim in &k[10..13] {
        let monitors = rosters[0].monitors_of(&id(victim));
        let sponsor = |p: &PeerId| k.iter().find(|x| id(x) == *p).unwrap();
        let e = Event::new(&id(victim), now + 29, What::Dead)
            .signed_by(sponsor(&monitors[0]))
            .signed_by(sponsor(&monitors[1]));
        let to = rng(&mut seed) % n;
        rosters[to].apply(e, now + 29, Trust::Member).unwrap();
    }
    now += 40;
    let mut rounds = 0;
    while rosters.iter().any(|r| r.digest(now) != rosters[0].digest(now)) {
        rounds += 1;
        assert!(rounds < 30, "not converged after 30 rounds");
        for a in 0..n {
            let b = (a + 1 + rng(&mut seed) % (n - 1)) % n;
            exchange(&mut rosters, a, b, now, Trust::Member);
        }
        now += 2;
    }
    assert_eq!(rosters[0].len(), n + 20 - 8);
    let ring = rosters[0].ring(now).clone();
    for r in &mut rosters {
        assert_eq!(r.ring(now), &ring);
    }
    // Once alike, a round moves nothing.
    assert_eq!(exchange(&mut rosters, 3, 7, now, Trust::Member), 0);
}

#[test]
fn a_newcomer_pulls_the_whole_roster_over_a_few_rounds() {
    let k = keys(300);
    let (full, _) = founded(&k, T0);
    let now = T0 + 5000;
    let mut rosters = vec![full, Roster::new(8)];
    // Page by page ...
    let (mut after, mut pages) = (None, 0);
    loop {
        let page = rosters[0].snapshot(after, now);
        pages += 1;
        for e in page.events {
            let _ = rosters[1].apply(e, now, Trust::Syncing);
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert!(pages >= 2, "a page is capped: {pages} pages");
    // In key order a join comes before its sponsors' as often as not: it waits for them.
    assert_eq!(rosters[1].len(), 300, "the pages alone bring every member");
    // ... and what it refused while sponsors were missing comes with the first digests.
    let mut rounds = 0;
    while rosters[1].digest(now) != rosters[0].digest(now) {
        rounds += 1;
        assert!(rounds < 20);
        exchange(&mut rosters, 1, 0, now, Trust::Syncing);
    }
    assert_eq!(rosters[1].len(), 300);
    // Digests alone bring an empty roster the whole of it too (outright, bucket by bucket).
    let mut rosters = vec![rosters[0].clone(), Roster::new(8)];
    let mut rounds = 0;
    while rosters[1].digest(now) != rosters[0].digest(now) {
        rounds += 1;
        assert!(rounds < 20);
        exchange(&mut rosters, 1, 0, now, Trust::Syncing);
    }
    assert_eq!(rosters[1].len(), 300);
}

#[test]
fn departures_stop_counting_alike_and_are_dropped_later() {
    let k = keys(6);
    let (mut a, _) = founded(&k, T0);
    a.apply(Event::new(&id(&k[4]), T0 + 100, What::Left).signed_by(&k[4]), T0 + 100, Trust::Member).unwrap();
    let mut b = a.clone();
    let later = T0 + 100 + TOMBSTONE_FOR + 1;
    a.expire(later + 400);
    assert_eq!(a.entries(), 5, "the departure is dropped");
    assert_eq!(b.entries(), 6);
    assert_eq!(a.digest(later + 400), b.digest(later + 400), "the one that kept it does not count it");
    b.expire(later + 400);
    assert_eq!(a.digest(later), b.digest(later));
    // A departure that old is not taken back in.
    let stale = Event::new(&id(&k[5]), T0 + 10, What::Left).signed_by(&k[5]);
    assert!(matches!(a.apply(stale, later, Trust::Member), Err(Refused::Expired(_))));
}

#[test]
fn newcomers_points_grow_in_stages_from_their_join() {
    let k = keys(4);
    let (mut roster, _) = founded(&k[..3], T0);
    let step = crate::membership::ADMISSION_STEP.as_secs();
    let at = T0 + 4 * step;
    roster.apply(joined(&k[3], at, 0, &[&k[0], &k[1]]), at, Trust::Member).unwrap();
    assert_eq!(roster.ring(at).points_of(&id(&k[3])), 2, "a quarter of 8");
    assert_eq!(roster.ring(at).points_of(&id(&k[0])), 8);
    assert_eq!(roster.ring(at + step).points_of(&id(&k[3])), 4);
    assert_eq!(roster.ring(at + 3 * step).points_of(&id(&k[3])), 8);
}

#[test]
fn events_that_arrive_without_their_history_are_judged_by_what_the_roster_can_know() {
    let k = keys(8);
    let (mut roster, events) = founded(&k[..6], T0);
    let now = T0 + 100;
    // A refutation of a death this roster never heard of: it holds the member's join, with the
    // same admission, so the member was and is one.
    let since = T0 + 3;
    let refute = Event::new(&id(&k[3]), now, What::Joined { vnodes: 8, since, block: 0 }).signed_by(&k[3]);
    assert_eq!(roster.apply(refute.clone(), now, Trust::Member), Ok(None), "still a member");
    assert_eq!(roster.event_of(&id(&k[3])), Some(&refute));
    // One it holds nothing of is not taken from a member's digest, but is from the roster a
    // newcomer pulls.
    let stranger = Event::new(&id(&k[6]), now, What::Joined { vnodes: 8, since: T0, block: 0 }).signed_by(&k[6]);
    assert!(matches!(roster.apply(stranger.clone(), now, Trust::Member), Err(Refused::Sponsors { .. })));
    assert!(Roster::new(8).apply(stranger, now, Trust::Syncing).is_ok());
    // A departure over nothing is a tombstone, but its key vouches for no one (any key can
    // sign its own departure) ...
    let fake = Event::new(&id(&k[7]), now, What::Left).signed_by(&k[7]);
    roster.apply(fake, now, Trust::Member).unwrap();
    let sybil = Keypair::generate_ed25519();
    let by_fake = joined(&sybil, now, 0, &[&k[7], &k[0]]);
    assert!(matches!(roster.apply(by_fake, now, Trust::Member), Err(Refused::Sponsors { got: 1, .. })));
    // ... while a member that left still vouches for the joins it sponsored before.
    roster.apply(Event::new(&id(&k[1]), now + 1, What::Left).signed_by(&k[1]), now + 1, Trust::Member).unwrap();
    let newcomer = Keypair::generate_ed25519();
    let before = joined(&newcomer, now, 0, &[&k[1], &k[2]]);
    assert!(roster.apply(before, now + 2, Trust::Member).is_ok());
    // A join that arrives before its sponsor's waits for it.
    let mut fresh = founded(&k[..3], T0).0;
    let _ = events;
    let first = joined(&k[3], now, 0, &[&k[0], &k[1]]);
    let second = joined(&k[4], now + 1, 0, &[&k[3], &k[2]]);
    assert!(matches!(fresh.apply(second, now + 1, Trust::Member), Err(Refused::Sponsors { got: 1, .. })));
    fresh.apply(first, now + 1, Trust::Member).unwrap();
    assert_eq!(fresh.len(), 5, "the second taken once its sponsor was");
}

#[test]
fn old_buckets_are_compared_once_the_recent_past_agrees() {
    let k = keys(40);
    let (a, _) = founded(&k[..39], T0);
    let mut b = a.clone();
    let now = T0 + 5000;
    // b has a recent change a lacks: the changed entry's old version sits in an old bucket of
    // a's, so an old bucket differs too, but only the recent one's keys are sent.
    b.apply(Event::new(&id(&k[5]), now, What::Left).signed_by(&k[5]), now, Trust::Member).unwrap();
    let answer = b.answer(&a.digest(now));
    assert!(answer.keys.is_empty() && answer.events.len() == 1, "{answer:?}");
    // Once the recent past agrees, what differs in the old buckets is compared.
    // (A member's departure: a holds its join, so its old bucket is not empty on a's side —
    // an empty one is answered with its entries outright.)
    let mut c = a.clone();
    c.apply(Event::new(&id(&k[38]), now, What::Left).signed_by(&k[38]), now, Trust::Member).unwrap();
    let later = now + 1200;
    let answer = c.answer(&a.digest(later));
    assert!(
        answer.keys.iter().any(|k| usize::from(k.bucket) >= super::digest::RECENT + super::digest::MID),
        "{answer:?}"
    );
}
