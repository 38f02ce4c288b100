use super::{Asked, RosterNode, Send, FOUND_AFTER, NEWCOMER_SETTLED};
use crate::roster::admission::Stage;
use crate::roster::event::What;
use crate::roster::watch::SUSPECT_AFTER;
use crate::roster::PROBATION;
use libp2p::identity::Keypair;
use libp2p::PeerId;
use std::collections::{BTreeSet, VecDeque};

const T0: u64 = 1_780_000_000;

/// Nodes on a perfect network: every request answered at once, in order.
struct Net {
    nodes: Vec<RosterNode>,
    up: Vec<bool>,
    now: u64,
}

impl Net {
    /// A network founded by node 0 alone (at its first tick: it has no one to ask), `age`
    /// seconds old.
    fn founded(age: u64) -> Net {
        let mut net = Net { nodes: Vec::new(), up: Vec::new(), now: T0 };
        net.add(true);
        net.run(1 + age);
        net
    }

    fn id(&self, i: usize) -> PeerId {
        self.nodes[i].me
    }

    fn index(&self, p: &PeerId) -> usize {
        self.nodes.iter().position(|n| n.me == *p).unwrap()
    }

    fn add(&mut self, may_found: bool) -> usize {
        let mut node = RosterNode::new(Keypair::generate_ed25519(), 16, may_found, self.now);
        if !may_found {
            // Each joins through the first node, as `weft start --bootstrap` does.
            node.set_bootstrap(vec![self.id(0)]);
        }
        self.nodes.push(node);
        self.up.push(true);
        let i = self.nodes.len() - 1;
        for j in 0..i {
            if self.up[j] {
                self.connect(i, j);
            }
        }
        i
    }

    fn connect(&mut self, i: usize, j: usize) {
        let (a, b) = (self.id(i), self.id(j));
        self.nodes[i].connected(b, self.now);
        self.nodes[j].connected(a, self.now);
    }

    fn crash(&mut self, i: usize) {
        self.up[i] = false;
        let me = self.id(i);
        for j in 0..self.nodes.len() {
            if j != i && self.up[j] {
                let now = self.now;
                self.nodes[j].disconnected(&me, now);
            }
        }
    }

    fn deliver(&mut self, from: usize, sends: Vec<Send>) {
        let mut queue: VecDeque<(usize, Send)> = sends.into_iter().map(|s| (from, s)).collect();
        while let Some((i, send)) = queue.pop_front() {
            let j = self.index(&send.to);
            let now = self.now;
            if !self.up[j] {
                self.nodes[i].on_failure(send.to, send.asked, now);
                continue;
            }
            let me = self.id(i);
            let reply = self.nodes[j].on_request(me, send.request, 0, now);
            let next = self.nodes[i].on_reply(send.to, send.asked, reply, now);
            queue.extend(next.into_iter().map(|s| (i, s)));
        }
    }

    fn run(&mut self, secs: u64) {
        for _ in 0..secs {
            self.now += 1;
            for i in 0..self.nodes.len() {
                if self.up[i] {
                    let sends = self.nodes[i].tick(self.now);
                    self.deliver(i, sends);
                }
            }
        }
    }

    fn members_of(&self, i: usize) -> BTreeSet<PeerId> {
        self.nodes[i].roster().members().copied().collect()
    }

    /// Runs until every node holds every node as a member; fails past `limit` seconds.
    fn until_agreed(&mut self, limit: u64) {
        let all: BTreeSet<PeerId> = (0..self.nodes.len()).map(|i| self.id(i)).collect();
        let mut waited = 0;
        while self.agreed().as_ref() != Some(&all) {
            let members: Vec<usize> = (0..self.nodes.len()).map(|i| self.members_of(i).len()).collect();
            assert!(waited < limit, "not agreed after {waited} s: members {members:?}");
            self.run(1);
            waited += 1;
        }
    }

    /// Every node up holds the same member set: these.
    fn agreed(&self) -> Option<BTreeSet<PeerId>> {
        let live: Vec<usize> = (0..self.nodes.len()).filter(|i| self.up[*i]).collect();
        let first = self.members_of(live[0]);
        live.iter().all(|i| self.members_of(*i) == first).then_some(first)
    }
}

#[test]
fn newcomers_that_pulled_a_young_roster_before_each_other_were_admitted_end_up_in_one_roster() {
    let mut net = Net::founded(1);
    let (one, two) = (net.add(false), net.add(false));
    let step = |net: &mut Net, i: usize| {
        let sends = net.nodes[i].tick(net.now);
        net.deliver(i, sends);
    };
    // Both pull the founder's roster of one; the first is admitted, sponsored by the founder
    // alone (all it needs); then the second, also by the founder alone — one short, now that
    // the first is a member admitted before it: the others keep its join waiting.
    net.now += 1;
    step(&mut net, one);
    step(&mut net, two);
    net.now += 1;
    step(&mut net, one);
    net.now += 1;
    step(&mut net, two);
    assert!(net.nodes[one].is_member() && net.nodes[two].is_member());
    assert!(!net.nodes[0].roster().is_member(&net.id(two)), "short of a sponsor");
    // It hears of the first, finds its own join short, and asks both at once: it served its
    // probation already (waiting a fresh one held a young network's formation back by its age).
    let all: BTreeSet<PeerId> = (0..3).map(|i| net.id(i)).collect();
    let asked = net.now;
    while net.agreed().as_ref() != Some(&all) && net.now < asked + 60 {
        net.run(1);
    }
    assert_eq!(net.agreed(), Some(all));
    // 7 s here (digests carry the first's join, then one round of signatures); a fresh
    // probation would add the network's age, 13 s in all.
    assert!(net.now - asked <= 10, "agreed {} s after the second's short join", net.now - asked);
    assert!(net.nodes.iter().all(|n| n.stage() == &Stage::Member && n.refused().0 == 0));
}

/// The same race the other way round: the founder takes the second's short join before it
/// hears of the first (the first's digest was late), so it holds the second as a member while
/// the first refuses it. The second finds its join short and asks again; the members that
/// took the short join sign again rather than decline it as "a member already" — which left
/// the two rosters apart for good.
#[test]
fn a_short_join_a_member_took_already_is_signed_again() {
    let mut net = Net::founded(1);
    let first = net.add(false);
    net.now += 1;
    let second = net.add(false);
    // Both pull the founder's roster of one, wait out their probation and are signed by the
    // founder; their digests are late, so no one hears of either join yet.
    while !(net.nodes[first].is_member() && net.nodes[second].is_member()) {
        net.now += 1;
        for i in [first, second] {
            let now = net.now;
            let (lost, sends): (Vec<Send>, Vec<Send>) =
                net.nodes[i].tick(now).into_iter().partition(|s| s.asked == Asked::Digest);
            net.deliver(i, sends);
            for s in lost {
                net.nodes[i].on_failure(s.to, s.asked, now);
            }
        }
        assert!(net.now < T0 + 30, "not signed");
    }
    // Whichever was signed first, the other's join is short (both cite the founder alone); the
    // founder hears of the short one first.
    let since = |net: &Net, i: usize| match net.nodes[i].roster().event_of(&net.id(i)).unwrap().what {
        What::Joined { since, .. } => since,
        _ => unreachable!(),
    };
    assert!(net.nodes[first].is_member() && net.nodes[second].is_member());
    let (early, late) = if since(&net, first) <= since(&net, second) { (first, second) } else { (second, first) };
    assert!(since(&net, early) < since(&net, late), "signed in different seconds");
    let event = net.nodes[late].roster().event_of(&net.id(late)).unwrap().clone();
    let now = net.now;
    net.nodes[0].take(vec![event], now);
    let event = net.nodes[early].roster().event_of(&net.id(early)).unwrap().clone();
    net.nodes[0].take(vec![event], now);
    assert!(net.nodes[0].roster().is_member(&net.id(late)), "the founder took the short join");
    // Within seconds, not a retry's wait (`ASK_AGAIN_AFTER`): the members sign the second
    // request at once.
    net.until_agreed(15);
    assert!(net.nodes.iter().all(|n| n.stage() == &Stage::Member));
    assert!(net.nodes.iter().all(|n| n.stage() == &Stage::Member));
}

/// Nodes started with their founder (`weft start --bootstrap` beside the first `weft start`,
/// which has no one to ask and founds at once) are members within seconds, even those that
/// asked it for the roster before it had one.
#[test]
fn nodes_started_with_their_founder_are_members_within_seconds() {
    let mut net = Net { nodes: Vec::new(), up: Vec::new(), now: T0 };
    net.add(true);
    for _ in 0..4 {
        net.add(false);
    }
    net.until_agreed(10);
}

/// Nodes that asked their founder for the roster before it had one (it waited for the members
/// it saved from its last run, who are gone) are members within seconds of its founding, not a
/// whole retry later.
#[test]
fn nodes_that_asked_before_the_founding_are_members_soon_after_it() {
    let mut net = Net { nodes: Vec::new(), up: Vec::new(), now: T0 };
    net.add(true);
    net.nodes[0].set_bootstrap(vec![Keypair::generate_ed25519().public().to_peer_id()]);
    for _ in 0..4 {
        net.add(false);
    }
    net.run(FOUND_AFTER);
    assert!(net.nodes[0].is_member(), "the first node founds the network");
    net.until_agreed(10);
}

/// A node with no bootstrap peer but members saved from its last run asks them first: it founds
/// a network of its own only once none has given it a roster for [`FOUND_AFTER`].
#[test]
fn a_node_with_saved_members_founds_only_after_none_answered() {
    let gone = Keypair::generate_ed25519().public().to_peer_id();
    let mut node = RosterNode::new(Keypair::generate_ed25519(), 16, true, T0);
    node.set_bootstrap(vec![gone]);
    for t in 1..FOUND_AFTER {
        node.tick(T0 + t);
        assert!(!node.is_member(), "founded {t} s in");
    }
    node.tick(T0 + FOUND_AFTER);
    assert!(node.is_member());
}

#[test]
fn a_network_forms_agrees_and_keeps_agreeing_through_a_departure_a_crash_and_a_false_alarm() {
    let mut net = Net::founded(1);
    assert!(net.nodes[0].is_member(), "the first node founds the network");
    // Five join within the network's first minute: their probation is the network's age.
    for _ in 0..5 {
        net.add(false);
        net.run(5);
    }
    net.run(90);
    let all: BTreeSet<PeerId> = (0..6).map(|i| net.id(i)).collect();
    assert_eq!(net.agreed(), Some(all.clone()), "every node admitted and every roster alike");
    assert!(net.nodes.iter().all(|n| n.stage() == &Stage::Member && n.refused().0 == 0));
    // Their rings are the same ring.
    let now = net.now;
    let owners: Vec<Vec<PeerId>> = (0..6)
        .map(|i| {
            let ring = net.nodes[i].roster_mut().ring(now).clone();
            (0..200).map(|h| *ring.owner(&format!("host{h}.example")).unwrap()).collect()
        })
        .collect();
    assert!(owners.iter().all(|o| *o == owners[0]));

    // A latecomer to a network older than the probation waits all of it.
    net.run(PROBATION);
    let late = net.add(false);
    net.run(PROBATION / 2);
    assert!(!net.nodes[late].is_member() && !net.members_of(0).contains(&net.id(late)));
    net.run(PROBATION / 2 + 60);
    assert!(net.nodes[late].is_member());
    let all: BTreeSet<PeerId> = (0..7).map(|i| net.id(i)).collect();
    assert_eq!(net.agreed(), Some(all.clone()));

    // One leaves with its last word: gone from every roster within seconds.
    let now = net.now;
    let sends = net.nodes[3].leave(now);
    assert!(!sends.is_empty());
    net.deliver(3, sends);
    net.crash(3);
    net.run(10);
    let mut left = all.clone();
    left.remove(&net.id(3));
    assert_eq!(net.agreed(), Some(left.clone()));
    assert_eq!(net.nodes[0].roster().event_of(&net.id(3)).unwrap().what, What::Left);

    // One crashes: its monitors find it gone and sign its death together.
    net.crash(5);
    net.run(SUSPECT_AFTER + 20);
    left.remove(&net.id(5));
    assert_eq!(net.agreed(), Some(left.clone()));
    assert_eq!(net.nodes[0].roster().event_of(&net.id(5)).unwrap().what, What::Dead);

    // A false alarm: one monitor lost a member another still reaches: no one is removed.
    let victim = 2;
    let monitors = net.nodes[0].roster().monitors_of(&net.id(victim));
    let m = net.index(&monitors[0]);
    let v = net.id(victim);
    let now = net.now;
    net.nodes[m].disconnected(&v, now);
    net.run(SUSPECT_AFTER + 20);
    assert_eq!(net.agreed(), Some(left.clone()), "one monitor alone cannot remove a member");

    // A member declared dead while alive (both of its monitors cut off from it) refutes it:
    // its entry is a Joined again, later than the death, with its first admission.
    let (before, since) = (net.nodes[0].roster().event_of(&v).unwrap().at, net.nodes[0].roster().since_of(&v));
    let now = net.now;
    for mon in net.nodes[0].roster().monitors_of(&v) {
        let k = net.index(&mon);
        net.nodes[k].disconnected(&v, now);
        net.nodes[victim].disconnected(&mon, now);
    }
    net.run(SUSPECT_AFTER + 30);
    let after = net.nodes[0].roster().event_of(&v).unwrap().clone();
    assert!(after.at > now + SUSPECT_AFTER && after.at > before, "refuted after the accusation: {after:?}");
    assert_eq!(net.nodes[0].roster().since_of(&v), since);
    assert_eq!(net.agreed(), Some(left), "a member again, on every roster");
    assert!(matches!(net.nodes[0].roster().event_of(&v).unwrap().what, What::Joined { .. }));
}

#[test]
fn a_newcomer_on_probation_sends_through_a_monitor_that_watches_it_and_a_leaver_does_not() {
    let mut net = Net::founded(1);
    for _ in 0..3 {
        net.add(false);
        net.run(60);
    }
    net.run(PROBATION);
    assert_eq!(net.agreed().map(|m| m.len()), Some(4));
    let arrived = net.now;
    let c = net.add(false);
    net.run(2);
    assert!(matches!(net.nodes[c].stage(), Stage::Probation { .. }), "{:?}", net.nodes[c].stage());
    let me = net.id(c);
    let via = net.nodes[c].newcomer_via().expect("a would-be monitor is connected");
    let monitors = net.nodes[c].roster().successors(&me, 3);
    assert!(monitors.contains(&via));
    // The monitors take its URLs once it has been connected a few seconds; the other member
    // does not, nor does anyone take a stranger's, or a member's as a newcomer's.
    let taking = |net: &Net, now: u64| -> Vec<PeerId> {
        (0..c).filter(|i| net.nodes[*i].watching_newcomer(&me, now)).map(|i| net.id(i)).collect()
    };
    assert!(taking(&net, arrived + NEWCOMER_SETTLED - 1).is_empty());
    let mut watching = taking(&net, arrived + NEWCOMER_SETTLED);
    watching.sort();
    let mut expected = monitors.clone();
    expected.sort();
    assert_eq!(watching, expected);
    let stranger = PeerId::random();
    assert!((0..c).all(|i| !net.nodes[i].watching_newcomer(&stranger, net.now)));
    assert!(!net.nodes[0].watching_newcomer(&net.id(1), net.now));
    // It drops the connection: its probation, and the monitors' trust, start again.
    let now = net.now;
    let m = net.index(&via);
    net.nodes[m].disconnected(&me, now);
    assert!(!net.nodes[m].watching_newcomer(&me, now + NEWCOMER_SETTLED));
    // Admitted, it sends to its hosts' owners itself; so does a member that leaves.
    net.run(PROBATION + 60);
    assert!(net.nodes[c].is_member());
    assert_eq!(net.nodes[c].newcomer_via(), None);
    let now = net.now;
    let _ = net.nodes[1].leave(now);
    net.run(5);
    assert_eq!(net.nodes[1].stage(), &Stage::Member, "a leaver does not come in again");
    assert_eq!(net.nodes[1].newcomer_via(), None);
}

#[test]
fn a_newcomer_asks_a_sponsor_it_met_late_only_once_their_probation_is_served() {
    let mut net = Net::founded(1);
    let first = net.add(false);
    while !net.nodes[0].roster().is_member(&net.id(first)) {
        net.run(1);
    }
    // The second knows the first only from the roster it pulls, and reaches it only after its
    // own probation (a dial to a member whose address it had to ask for). The first counts
    // the second's probation from their meeting: asked sooner, it declines, and the join
    // waits for the retry.
    let second = net.add(false);
    let (a, b) = (net.id(first), net.id(second));
    net.nodes[first].disconnected(&b, net.now);
    net.nodes[second].disconnected(&a, net.now);
    // Past its own probation (counted from its arrival) before they meet.
    let arrived = net.now;
    net.run(net.nodes[0].roster().probation(arrived) + 3);
    assert!(!net.nodes[0].roster().is_member(&b));
    let met = net.now;
    net.connect(first, second);
    let all: BTreeSet<PeerId> = (0..3).map(|i| net.id(i)).collect();
    while net.agreed().as_ref() != Some(&all) && net.now < met + 120 {
        net.run(1);
    }
    assert_eq!(net.agreed(), Some(all));
    let probation = net.nodes[first].roster().probation(met);
    assert!(
        net.now - met <= probation + 5,
        "admitted {} s after they met (the probation: {probation} s; the retry comes after 30)",
        net.now - met
    );
    assert!(net.nodes.iter().all(|n| n.refused().0 == 0));
}

#[test]
fn a_sponsor_met_again_does_not_hold_a_join_the_others_sponsor() {
    let mut net = Net::founded(1);
    for _ in 0..2 {
        let i = net.add(false);
        while !net.nodes[0].roster().is_member(&net.id(i)) {
            net.run(1);
        }
    }
    let arrived = net.now;
    let newcomer = net.add(false);
    let probation = net.nodes[0].roster().probation(arrived);
    // Midway through its probation one of its three would-be sponsors restarts: their
    // meeting, and the probation that sponsor counts, start again. The other two are enough.
    net.run(probation / 2);
    let (c, m) = (net.id(newcomer), net.id(2));
    net.nodes[newcomer].disconnected(&m, net.now);
    net.nodes[2].disconnected(&c, net.now);
    net.connect(newcomer, 2);
    let all: BTreeSet<PeerId> = (0..4).map(|i| net.id(i)).collect();
    while net.agreed().as_ref() != Some(&all) && net.now < arrived + 300 {
        net.run(1);
    }
    assert_eq!(net.agreed(), Some(all));
    assert!(
        net.now - arrived <= probation + 8,
        "admitted {} s after it arrived (its probation: {probation} s)",
        net.now - arrived
    );
}

#[test]
fn a_member_keeps_its_connections_to_the_newcomers_it_would_sponsor_and_they_to_it() {
    // A network a minute old: its newcomers' probation is a minute.
    let mut net = Net::founded(60);
    let newcomer = net.add(false);
    net.run(5);
    assert!(!net.nodes[newcomer].is_member(), "still on probation");
    // Each counts the newcomer's probation from their meeting: a connection closed while idle
    // would start it again.
    assert!(net.nodes[0].kept().contains(&net.id(newcomer)));
    assert!(net.nodes[newcomer].kept().contains(&net.id(0)));
    while !net.nodes[0].roster().is_member(&net.id(newcomer)) {
        net.run(1);
    }
    // Members now, each watching the other.
    assert!(net.nodes[0].kept().contains(&net.id(newcomer)));
}

/// At scale a member's view is drawn among the grid's links (connections the data plane holds
/// anyway) but for one member at random, and it is drawn at random again once the grid is out
/// of use.
#[test]
fn a_view_is_drawn_among_the_grid_s_links_but_for_one_member_at_random() {
    use super::VIEW;
    let mut net = Net { nodes: Vec::new(), up: Vec::new(), now: T0 };
    net.add(true);
    for _ in 0..19 {
        net.add(false);
    }
    net.until_agreed(30);
    let links: Vec<PeerId> = (5..15).map(|i| net.id(i)).collect();
    net.nodes[0].set_links(&links);
    net.run(2);
    let view = net.nodes[0].view().to_vec();
    let outside: Vec<&PeerId> = view.iter().filter(|p| !links.contains(p)).collect();
    assert_eq!(view.len(), VIEW, "{view:?}");
    assert!(outside.len() <= 1, "{} of the view outside the links", outside.len());
    assert!(view.iter().filter(|p| links.contains(p)).count() >= VIEW - 1);
    // The digests go on: a departure reaches node 0 through its view.
    let leaver = 19;
    let sends = net.nodes[leaver].leave(net.now);
    net.deliver(leaver, sends);
    net.up[leaver] = false;
    let gone = net.id(leaver);
    let mut waited = 0;
    while net.members_of(0).contains(&gone) {
        assert!(waited < 30, "the departure never reached node 0");
        net.run(1);
        waited += 1;
    }
    // Out of use: the view is the roster's own again, kept as it is until a shuffle.
    net.nodes[0].set_links(&[]);
    net.run(2);
    assert_eq!(net.nodes[0].view().len(), VIEW);
}
