//! The member table's rules, on fixed peer ids and clocks.

use super::*;

/// Three peers, `me` < `b` < `c` in the ring's order.
fn peers() -> (PeerId, PeerId, PeerId) {
    let mut p: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
    p.sort();
    (p[0], p[1], p[2])
}

/// Where a member is connected from in these tests.
fn lo() -> Multiaddr {
    "/ip4/127.0.0.1/tcp/4001".parse().unwrap()
}

fn hb(peer: &PeerId) -> Heartbeat {
    Heartbeat {
        peer: peer.to_string(),
        addrs: vec!["/ip4/127.0.0.1/tcp/1".into()],
        capacity: 10,
        leaving: false,
        relay: false,
        joined: 0,
        left: Vec::new(),
        every: 0,
    }
}

#[test]
fn a_leaving_member_is_dropped_at_once_and_a_leaver_owns_nothing() {
    let (me, b, c) = peers();
    let t0 = Instant::now();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    m.observe(hb(&b), b, Some(&lo()), t0);
    m.observe(hb(&c), c, Some(&lo()), t0);
    let bye = Heartbeat { leaving: true, ..hb(&b) };
    assert_eq!(Heartbeat::decode(&bye.encode(), &b.to_string()).unwrap(), bye);
    assert_eq!(m.observe(bye, b, Some(&lo()), t0), Some(Change::Left(b)));
    assert_eq!(m.peers(), [me, c]);
    m.leave();
    assert_eq!(m.peers(), [c], "the leaver's ring gives its hosts to the others");
    assert!(m.me().leaving);
    assert_eq!(m.ring().owner("any.test"), Some(&c));
}

#[test]
fn members_join_expire_and_the_ring_follows() {
    let (me, b, c) = peers();
    let t0 = Instant::now();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    assert_eq!(m.ring().members(), [me]);
    assert_eq!(m.observe(hb(&b), b, Some(&lo()), t0), Some(Change::Joined(b)));
    assert_eq!(m.observe(hb(&b), b, Some(&lo()), t0), None, "a repeated heartbeat is no change");
    assert_eq!(m.observe(hb(&me), me, Some(&lo()), t0), None, "our own heartbeat echoes are ignored");
    m.observe(hb(&c), c, Some(&lo()), t0 + Duration::from_secs(15));
    assert_eq!(m.peers(), [me, b, c]);
    // Their connections closed (a member connected has longer: see the test below).
    m.disconnected(&b);
    m.disconnected(&c);
    // Silent for a while before it expires: still a member, on the ring.
    let quiet = Duration::from_secs(5);
    let at = t0 + Duration::from_secs(16);
    assert!(m.silent(&b, quiet, at) && !m.silent(&c, quiet, at), "b last heard 16 s ago, c 1 s");
    assert!(!m.silent(&me, quiet, at), "this node is never silent to itself");
    assert_eq!(m.expire(t0 + Duration::from_secs(21)), vec![Change::Left(b)]);
    assert!(!m.silent(&b, quiet, t0 + Duration::from_secs(21)), "gone, not silent");
    assert_eq!(m.ring().members(), [me, c]);
    assert_eq!(m.remove(&c), Some(Change::Left(c)));
    assert_eq!(m.len(), 1);
}

#[test]
fn time_this_node_could_not_listen_does_not_count_against_the_members() {
    let (me, b, c) = peers();
    let t0 = Instant::now();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    m.observe(hb(&b), b, Some(&lo()), t0);
    m.observe(hb(&c), c, Some(&lo()), t0 + Duration::from_secs(10));
    m.disconnected(&b);
    m.disconnected(&c);
    // This node's loop stalled 25 s: at its next tick b and c would be 30 and 20 s silent.
    let tick = t0 + Duration::from_secs(30);
    m.deaf_for(Duration::from_secs(25), tick);
    assert_eq!(m.expire(tick), vec![], "nobody dropped for a stall of this node's");
    assert_eq!(m.peers(), [me, b, c]);
    // Silent from then on, they are dropped a ttl after their heartbeats, the stall left out.
    assert_eq!(m.expire(t0 + Duration::from_secs(45)), vec![], "b heard at 0 + 25 s of deafness");
    assert_eq!(m.expire(t0 + Duration::from_secs(46)), vec![Change::Left(b)]);
    // Never moved past now: a member heard just before the stall is not made newer than now.
    m.deaf_for(Duration::from_secs(600), t0 + Duration::from_secs(47));
    assert_eq!(m.expire(t0 + Duration::from_secs(67)), vec![]);
    assert_eq!(m.expire(t0 + Duration::from_secs(68)), vec![Change::Left(c)]);
}

#[test]
fn a_member_connected_to_this_node_has_longer_to_be_heard_and_a_ping_counts() {
    let (me, b, c) = peers();
    let stranger = PeerId::random();
    let t0 = Instant::now();
    let ttl = Duration::from_secs(20);
    let mut m = Members::new(me, hb(&me), ttl, 150);
    m.observe(hb(&b), b, Some(&lo()), t0);
    m.observe(hb(&c), c, Some(&lo()), t0);
    m.disconnected(&c);
    // Neither is heard from again. c, not connected, goes after the ttl; b, connected (its
    // heartbeats dropped on the way to a node starved of CPU), after CONNECTED_GRACE times it.
    let grace = ttl * CONNECTED_GRACE;
    assert_eq!(m.expire(t0 + ttl + Duration::from_secs(1)), vec![Change::Left(c)]);
    assert_eq!(m.expire(t0 + grace), vec![], "b is connected");
    // A ping b answers is as good as a heartbeat; a stranger's is nothing.
    m.alive(&b, t0 + grace);
    m.alive(&stranger, t0 + grace);
    assert!(!m.knows(&stranger, t0 + grace), "a sign of life makes no member");
    assert_eq!(m.expire(t0 + grace * 2), vec![]);
    assert_eq!(m.peers(), [me, b]);
    // Its connection closes: the ttl from its last sign of life.
    m.disconnected(&b);
    assert_eq!(m.expire(t0 + grace * 2 + Duration::from_secs(1)), vec![Change::Left(b)]);
    // Connected again (a new connection), it is a member again by its next heartbeat.
    let later = t0 + grace * 3;
    assert_eq!(m.observe(hb(&b), b, Some(&lo()), later), Some(Change::Joined(b)));
}

#[test]
fn the_heartbeat_period_stretches_with_the_network_and_the_ttl_with_it() {
    let me = PeerId::random();
    let t0 = Instant::now();
    let (period, ttl) = (Duration::from_secs(5), Duration::from_secs(20));
    let mut m = Members::new(me, hb(&me), ttl, 150).beating_every(period);
    let others: Vec<PeerId> = (0..39).map(|_| PeerId::random()).collect();
    for p in &others[..FULL_RATE_MEMBERS - 1] {
        m.observe(hb(p), *p, Some(&lo()), t0);
    }
    // Up to FULL_RATE_MEMBERS the configured period, and the heartbeat says so.
    assert_eq!(m.len(), FULL_RATE_MEMBERS);
    assert_eq!(m.period(), period);
    assert_eq!(m.heartbeat(t0).every, 5);
    for p in &others[FULL_RATE_MEMBERS - 1..] {
        m.observe(hb(p), *p, Some(&lo()), t0);
    }
    // Forty members: twice the period, and each member has twice the ttl to be heard.
    assert_eq!(m.len(), 40);
    assert_eq!(m.period(), period * 2);
    assert_eq!(m.heartbeat(t0).every, 10);
    let quiet = others[0];
    m.disconnected(&quiet);
    for p in &others[1..] {
        m.observe(hb(p), *p, Some(&lo()), t0 + ttl * 2);
    }
    assert_eq!(m.expire(t0 + ttl + Duration::from_secs(1)), vec![], "within twice the ttl");
    assert_eq!(m.expire(t0 + ttl * 2 + Duration::from_secs(1)), vec![Change::Left(quiet)]);
    // A member that hears more members than this node keeps a longer period: it is given the
    // ttl's number of its periods ...
    let far = others[1];
    let t1 = t0 + ttl * 2;
    m.observe(Heartbeat { every: 30, ..hb(&far) }, far, Some(&lo()), t1);
    m.disconnected(&far);
    let heard = |m: &mut Members, at: Instant| {
        for p in &others[3..] {
            m.observe(hb(p), *p, Some(&lo()), at);
        }
    };
    heard(&mut m, t1 + Duration::from_secs(100));
    assert_eq!(m.expire(t1 + Duration::from_secs(119)), vec![]);
    assert_eq!(m.expire(t1 + Duration::from_secs(121)), vec![Change::Left(far)]);
    // ... but no more than MAX_PERIOD's worth, whatever it says.
    let liar = others[2];
    let t2 = t1 + Duration::from_secs(121);
    m.observe(Heartbeat { every: u32::MAX, ..hb(&liar) }, liar, Some(&lo()), t2);
    m.disconnected(&liar);
    let gone = t2 + MAX_PERIOD * 4 + Duration::from_secs(1);
    heard(&mut m, gone - Duration::from_secs(10));
    assert_eq!(m.expire(gone), vec![Change::Left(liar)]);
    // A huge network: the period stops at MAX_PERIOD (one ring point each, to build 250 rings
    // quickly).
    let mut big = Members::new(me, hb(&me), ttl, 1).beating_every(period);
    for _ in 0..250 {
        let p = PeerId::random();
        big.observe(hb(&p), p, Some(&lo()), t0);
    }
    assert_eq!(big.period(), MAX_PERIOD);
}

#[test]
fn a_member_that_left_is_known_for_a_while_with_the_hosts_it_owned_and_a_stranger_never() {
    let (me, b, c) = peers();
    let stranger = PeerId::random();
    let t0 = Instant::now();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    m.observe(hb(&b), b, Some(&lo()), t0);
    m.observe(hb(&c), c, Some(&lo()), t0);
    let of_b: Vec<String> = (0..200).map(|i| format!("h{i}.test")).filter(|h| m.ring().owner(h) == Some(&b)).collect();
    assert!(!of_b.is_empty());
    m.observe(Heartbeat { leaving: true, ..hb(&b) }, b, Some(&lo()), t0);
    let now = Instant::now();
    assert!(m.knows(&b, now) && m.knows(&c, now) && m.knows(&me, now));
    assert!(!m.knows(&stranger, now), "a peer never a member");
    assert!(of_b.iter().all(|h| m.owned_recently(&b, h, now)), "b owned these before it left");
    assert!(of_b.iter().all(|h| !m.owned_recently(&stranger, h, now)), "a stranger owned nothing");
    let later = now + FORMER_RINGS_FOR + Duration::from_secs(1);
    assert!(!m.knows(&b, later) && !m.owned_recently(&b, &of_b[0], later), "forgotten after a while");
    assert!(m.knows(&c, later), "a current member stays known");
    // A flapping member does not grow the memory without bound.
    for _ in 0..100 {
        m.observe(hb(&stranger), stranger, Some(&lo()), t0);
        m.remove(&stranger);
    }
    assert!(m.former.len() <= FORMER_RINGS);
}

#[test]
fn heartbeats_are_capped_validated_and_bound_to_their_signer() {
    let (a, b, _) = peers();
    let (a_s, b_s) = (a.to_string(), b.to_string());
    let bytes = hb(&a).encode();
    assert_eq!(Heartbeat::decode(&bytes, &a_s).unwrap(), hb(&a));
    assert!(matches!(Heartbeat::decode(&bytes, &b_s), Err(HeartbeatError::Impostor { .. })));
    assert!(matches!(Heartbeat::decode(b"\xff\x00{", &a_s), Err(HeartbeatError::Decode(_))));
    let big = vec![b' '; MAX_HEARTBEAT_BYTES + 1];
    assert!(matches!(Heartbeat::decode(&big, &a_s), Err(HeartbeatError::TooLarge(_))));
    let many = Heartbeat { addrs: vec!["/ip4/1.2.3.4/tcp/1".into(); 100], ..hb(&a) };
    assert!(Heartbeat::decode(&many.encode(), &a_s).is_err());
    let not_a_peer = Heartbeat { peer: "peer-a".into(), ..hb(&a) };
    assert!(matches!(Heartbeat::decode(&not_a_peer.encode(), "peer-a"), Err(HeartbeatError::Decode(_))));
}

#[test]
fn a_hundred_identities_behind_one_connection_stay_candidates_and_are_given_up() {
    let (me, honest, _) = peers();
    let gateway = PeerId::random();
    let t0 = Instant::now();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    let sybils: Vec<PeerId> = (0..100).map(|_| PeerId::random()).collect();
    for s in &sybils {
        assert_eq!(m.observe(hb(s), gateway, None, t0), None);
    }
    assert_eq!(m.len(), 1, "nobody reached, nobody counted");
    assert_eq!(m.candidates(), MAX_CANDIDATES_PER_SOURCE, "one relaying peer fills its own share");
    let dial = m.to_dial(t0);
    assert_eq!(dial.len(), MAX_CANDIDATES_PER_SOURCE);
    assert!(m.to_dial(t0 + Duration::from_secs(1)).is_empty(), "not dialled again at once");
    assert_eq!(m.to_dial(t0 + REDIAL_AFTER).len(), MAX_CANDIDATES_PER_SOURCE, "dialled again");
    // An honest peer heard over the same connection and reached joins.
    m.observe(hb(&honest), gateway, None, t0);
    assert_eq!(m.candidates(), MAX_CANDIDATES_PER_SOURCE, "the gateway's share is full");
    assert_eq!(m.observe(hb(&honest), honest, Some(&lo()), t0), Some(Change::Joined(honest)));
    // The unreached are given up and ignored for a while, making room for others.
    let later = t0 + REACH_WITHIN + Duration::from_secs(1);
    for s in &sybils {
        m.observe(hb(s), gateway, None, later);
    }
    m.to_dial(later);
    assert_eq!(m.candidates(), 0, "the unreached are given up");
    for s in &sybils[..MAX_CANDIDATES_PER_SOURCE] {
        m.observe(hb(s), gateway, None, later);
    }
    assert_eq!(m.candidates(), 0, "and ignored when heard of again");
    m.observe(hb(&sybils[50]), gateway, None, later);
    assert_eq!(m.candidates(), 1, "one not tried yet takes a free place");
    assert_eq!(m.peers().len(), 2);
    // Reached later (it was real after all): a member.
    assert_eq!(m.present(&sybils[50], &lo(), later), Some(Change::Joined(sybils[50])));
    assert!(m.present(&sybils[0], &lo(), later).is_none(), "a given-up peer must be heard again");
    // Its heartbeat over a connection with it: reached after all (a loaded box dials slowly).
    assert_eq!(m.observe(hb(&sybils[1]), sybils[1], Some(&lo()), later), Some(Change::Joined(sybils[1])));
    // The others are ignored for UNREACHED_FIRST, then heard of again, given up again, and
    // ignored twice as long.
    let again = later + UNREACHED_FIRST + Duration::from_secs(1);
    m.observe(hb(&sybils[2]), gateway, None, again);
    assert_eq!(m.candidates(), 1, "heard of again after a minute");
    let given_up = again + REACH_WITHIN + Duration::from_secs(1);
    m.to_dial(given_up);
    let soon = given_up + UNREACHED_FIRST + Duration::from_secs(1);
    m.observe(hb(&sybils[2]), gateway, None, soon);
    assert_eq!(m.candidates(), 0, "the second time, ignored for longer than a minute");
    m.observe(hb(&sybils[2]), gateway, None, given_up + UNREACHED_FIRST * 2 + Duration::from_secs(1));
    assert_eq!(m.candidates(), 1, "and heard again after two");
}

#[test]
fn a_member_counts_while_it_is_met_and_is_dialled_before_its_presence_runs_out() {
    let (me, b, _) = peers();
    let t0 = Instant::now();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    m.observe(hb(&b), me, None, t0);
    assert_eq!(m.len(), 1);
    assert_eq!(m.present(&b, &lo(), t0), Some(Change::Joined(b)), "reached: a member");
    // Heartbeats keep coming through others, but the connection is gone.
    let mut t = t0;
    while t < t0 + PRESENCE_FOR / 2 {
        t += Duration::from_secs(10);
        m.observe(hb(&b), me, None, t);
        assert!(m.expire(t).is_empty());
    }
    t += Duration::from_secs(10);
    m.observe(hb(&b), me, None, t);
    assert_eq!(m.to_dial(t).iter().map(|(p, _)| *p).collect::<Vec<_>>(), [b], "time to meet it again");
    let end = t0 + PRESENCE_FOR + Duration::from_secs(1);
    m.observe(hb(&b), me, None, end);
    assert_eq!(m.expire(end), vec![Change::Left(b)], "not met within PRESENCE_FOR: dropped");
}

#[test]
fn one_public_address_block_brings_at_most_a_few_members() {
    let t0 = Instant::now();
    let me = PeerId::random();
    let mut m = Members::new(me, hb(&me), Duration::from_secs(20), 150);
    let at = |a: &str| -> Multiaddr { a.parse().unwrap() };
    let joined = (0..MAX_MEMBERS_PER_PREFIX + 3)
        .filter(|i| {
            let p = PeerId::random();
            m.observe(hb(&p), p, Some(&at(&format!("/ip4/8.8.4.{i}/tcp/4001"))), t0).is_some()
        })
        .count();
    assert_eq!(joined, MAX_MEMBERS_PER_PREFIX);
    let p = PeerId::random();
    assert!(m.observe(hb(&p), p, Some(&at("/ip4/8.8.5.1/tcp/4001")), t0).is_some(), "another block");
    for i in 0..20 {
        let p = PeerId::random();
        assert!(m.observe(hb(&p), p, Some(&at(&format!("/ip4/192.168.1.{i}/tcp/4001"))), t0).is_some());
    }
    let relayed = at("/ip4/8.8.4.200/tcp/4001/p2p/12D3KooWGzBXD7mGH3XUAtBGLjZP3P7eR7yXH7mfh3hLqv1UkQnm/p2p-circuit");
    let p = PeerId::random();
    assert!(m.observe(hb(&p), p, Some(&relayed), t0).is_some(), "relayed: the relay limits its slots");
    assert_eq!(m.len(), 1 + MAX_MEMBERS_PER_PREFIX + 1 + 20 + 1);
}

fn claiming(peer: &PeerId, joined: u64) -> Heartbeat {
    Heartbeat { joined, ..hb(peer) }
}

const HOUR: u64 = 3600;

#[test]
fn a_newcomer_to_an_older_network_is_admitted_in_stages() {
    let (me, b, c) = peers();
    let u0 = weft_clock::now_secs();
    let mut m = Members::new(me, claiming(&me, u0 - 3 * HOUR), Duration::from_secs(20), 150);
    let t0 = Instant::now();
    m.observe(claiming(&c, u0 - 5 * HOUR), c, Some(&lo()), t0);
    assert_eq!(m.observe(claiming(&b, u0), b, Some(&lo()), t0), Some(Change::Joined(b)));
    assert_eq!((m.points_of(&me), m.points_of(&c), m.points_of(&b)), (150, 150, 38), "a quarter at first");
    let alive = |m: &mut Members, t: Instant| {
        for p in [b, c] {
            m.observe(claiming(&p, if p == b { u0 } else { u0 - 5 * HOUR }), p, Some(&lo()), t);
        }
    };
    let mut grown = Vec::new();
    let mut t = t0;
    while t < t0 + ADMISSION_STEP * ADMISSION_STAGES as u32 {
        t += Duration::from_secs(10);
        alive(&mut m, t);
        if m.expire(t) == [Change::Grew(b)] {
            grown.push((t.duration_since(t0).as_secs() / 60, m.points_of(&b)));
        }
    }
    assert_eq!(grown, [(30, 75), (60, 113), (90, 150)], "(minutes, points)");
    let share = m.ring().share(&b);
    assert!((share - 1.0 / 3.0).abs() < 0.1, "all of its share at the end: {share}");
}

#[test]
fn members_that_started_together_make_the_plain_ring() {
    let (me, b, c) = peers();
    let u0 = weft_clock::now_secs();
    let mut m = Members::new(me, claiming(&me, u0), Duration::from_secs(20), 150);
    let t0 = Instant::now();
    m.observe(claiming(&b, u0 - 40), b, Some(&lo()), t0);
    m.observe(claiming(&c, u0 + 3), c, Some(&lo()), t0);
    assert_eq!(*m.ring(), Ring::new([me, b, c], 150));
    // Still the plain ring as they all grow old together (a stage apart at most briefly).
    let later = t0 + ADMISSION_STEP * 5;
    m.observe(claiming(&b, u0 - 40), b, Some(&lo()), later);
    m.observe(claiming(&c, u0 + 3), c, Some(&lo()), later);
    m.expire(later);
    assert_eq!(*m.ring(), Ring::new([me, b, c], 150));
}

#[test]
fn a_claim_to_be_old_counts_from_shortly_before_this_node_met_the_claimant() {
    let (me, honest, forger) = peers();
    let u0 = weft_clock::now_secs();
    let old = u0 - 3 * HOUR;
    let (forged, late_met) = (u0 - 240 * HOUR, u0 - 14 * 60);
    let mut m = Members::new(me, claiming(&me, old), Duration::from_secs(20), 150).settling_for(Duration::ZERO);
    let t = Instant::now() + Duration::from_secs(1);
    // Arrived now, says it has been here ten days: a newcomer to this node, which saw it
    // arrive. An honest member this node reached 14 minutes late is a newcomer too.
    m.observe(claiming(&forger, forged), forger, Some(&lo()), t);
    m.observe(claiming(&honest, late_met), honest, Some(&lo()), t);
    assert_eq!((m.points_of(&forger), m.points_of(&honest)), (38, 38));
    // 17 minutes on: the honest claim stands (31 minutes old: the second stage), and the
    // forger counts from 15 minutes before this node met it — not ten days.
    let later = t + Duration::from_secs(17 * 60);
    for (p, claim) in [(forger, forged), (honest, late_met)] {
        m.observe(claiming(&p, claim), p, Some(&lo()), later);
    }
    m.expire(later);
    assert_eq!((m.points_of(&honest), m.points_of(&forger)), (75, 75));
    // Dropped and met again (a lost connection): still held to the first meeting.
    assert_eq!(m.remove(&forger), Some(Change::Left(forger)));
    m.observe(claiming(&forger, forged), forger, Some(&lo()), later);
    assert_eq!(m.points_of(&forger), 75);
    // A node that started after the forger arrived takes it at its word: the one place a
    // forged claim pays, until the forger is as old as it said. The honest member looks
    // the same to it as to the node that saw it arrive.
    let mut late = Members::new(me, claiming(&me, old), Duration::from_secs(20), 150);
    let now = Instant::now();
    late.observe(claiming(&forger, forged), forger, Some(&lo()), now);
    late.observe(claiming(&honest, late_met - 17 * 60), honest, Some(&lo()), now);
    assert_eq!((late.points_of(&forger), late.points_of(&honest)), (150, 75));
}

#[test]
fn a_node_that_was_away_takes_a_leavers_hand_off_once_two_members_vouch_for_it() {
    let (me, b, c) = peers();
    let (leaver, stranger) = (PeerId::random(), PeerId::random());
    let (t0, ttl) = (Instant::now(), Duration::from_secs(20));
    // b saw the leaver go, and says so in its heartbeats.
    let mut of_b = Members::new(b, hb(&b), ttl, 150);
    of_b.observe(hb(&leaver), leaver, Some(&lo()), t0);
    of_b.observe(Heartbeat { leaving: true, ..hb(&leaver) }, leaver, Some(&lo()), t0);
    let b_says = of_b.heartbeat(t0);
    assert_eq!(b_says.left.len(), 1);
    assert_eq!(Heartbeat::decode(&b_says.encode(), &b.to_string()).unwrap(), b_says);
    let c_says = Heartbeat { left: b_says.left.clone(), ..hb(&c) };

    // This node was away (restarted): it never had the leaver on a ring.
    let mut m = Members::new(me, hb(&me), ttl, 150);
    m.observe(hb(&c), c, Some(&lo()), t0);
    m.observe(b_says.clone(), b, Some(&lo()), t0);
    assert!(!m.knows(&leaver, t0), "one of two members said so");
    m.observe(c_says, c, Some(&lo()), t0);
    assert!(m.knows(&leaver, t0), "two members vouch for it");
    assert!(!m.knows(&stranger, t0));
    assert_eq!(m.peers(), [me, b, c], "a believed leaver is no member");

    // Its "done" counts for the hosts it owned among the members and it, and no others.
    let hosts: Vec<String> = (0..600).map(|i| format!("h{i}.test")).collect();
    let with = Ring::new([me, b, c, leaver], 150);
    let apart = Ring::new([b, c, leaver], 150);
    let its: Vec<&String> = hosts.iter().filter(|h| with.owner(h) == Some(&leaver)).collect();
    let never: Vec<&String> =
        hosts.iter().filter(|h| with.owner(h) != Some(&leaver) && apart.owner(h) != Some(&leaver)).collect();
    assert!(!its.is_empty() && !never.is_empty());
    assert!(its.iter().all(|h| m.owned_recently(&leaver, h, t0)));
    assert!(never.iter().all(|h| !m.owned_recently(&leaver, h, t0)));

    // Forgotten with its vouchers, and after a while.
    let later = t0 + FORMER_RINGS_FOR + Duration::from_secs(1);
    m.expire(later);
    assert!(!m.knows(&leaver, later));
}
