//! Second copies of this node's hosts' queues, in a network (see [`weft_frontier::SecondCopy`]):
//! the notes its frontier writes go to each host's second holder (the next member on the ring,
//! the one that owns the host once this node is gone), and what other owners send here is kept
//! aside until this node owns their hosts.
//!
//! A note leaves the frontier only when its second holder has it on disk, or when nobody needs
//! it (the host is not this node's any more, or the ring has no second member). A second holder
//! that is down keeps its notes waiting here until it answers or the ring replaces it; its
//! replacement is sent the whole queue of the hosts it now holds second.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};
use weft_crawl::Crawler;
use weft_frontier::{SecondCopy, UrlKind};
use weft_p2p::ring::host_point;
use weft_p2p::{NetworkHandle, PeerId, Ring, WireUrl, SECOND_HOLDER_WITHIN};
use weft_url::{normalize_url, HostKey};

/// Notes in one batch: the URL exchange's limit.
const BATCH: usize = weft_p2p::exchange::BATCH_URLS;
/// Notes read from the frontier a round: a second holder that does not answer holds up at most
/// this many of the others' notes for a round.
const ROUND: usize = 20 * BATCH;
/// How often the notes waiting are sent.
const EVERY: Duration = Duration::from_secs(1);

/// The first `k` members of a frontier host (which carries its port; the ring places names)
/// on `ring`: its owner, then the member that would own it without the owner, and so on.
fn holders(ring: &Ring, host: &str, k: usize) -> Vec<PeerId> {
    ring.owners_of_point(host_point(HostKey::from_stored(host).name()), k)
}

/// The member that would own `host` after its owner: its second holder on `ring`.
fn second_holder(ring: &Ring, host: &str) -> Option<PeerId> {
    holders(ring, host, 2).get(1).copied()
}

/// Whether `me` is `host`'s second holder on `ring`.
pub(crate) fn holds_second(ring: &Ring, host: &str, me: &PeerId) -> bool {
    second_holder(ring, host).as_ref() == Some(me)
}

fn owner_is(ring: &Ring, host: &str, me: &PeerId) -> bool {
    holders(ring, host, 1).first() == Some(me)
}

/// A note as the URL exchange carries it ([`weft_p2p::exchange::UrlBatch::second`]).
fn to_wire(note: &SecondCopy) -> WireUrl {
    match note {
        SecondCopy::Keep { url, depth, kind, .. } => {
            let kind = match kind {
                UrlKind::Sitemap => weft_p2p::UrlKind::Sitemap,
                UrlKind::Page | UrlKind::Revisit => weft_p2p::UrlKind::Page,
            };
            WireUrl::new(url.clone(), *depth, kind)
        }
        SecondCopy::Forget { url, .. } => WireUrl::new(url.clone(), 0, weft_p2p::UrlKind::Done),
    }
}

/// A received note, normalized here (the sender is not trusted to have done it); `None` for a
/// URL that does not normalize.
pub fn from_wire(u: WireUrl, max_depth: u32) -> Option<SecondCopy> {
    let (depth, kind) = (u.depth.min(max_depth), u.kind);
    let url = normalize_url(u.into_url()?).ok()?;
    let host = HostKey::of(&url).into_string();
    let url = url.to_string();
    Some(match kind {
        weft_p2p::UrlKind::Page => SecondCopy::Keep { host, url, depth, kind: UrlKind::Page },
        weft_p2p::UrlKind::Sitemap => SecondCopy::Keep { host, url, depth, kind: UrlKind::Sitemap },
        weft_p2p::UrlKind::Done => SecondCopy::Forget { host, url },
    })
}

/// Sends the frontier's notes to their second holders, every [`EVERY`] (a task of the node's,
/// ended with it). Each batch goes at once to its holder; the notes of the batches a holder
/// took leave the frontier. A holder that did not take a batch is not asked again for a while
/// ([`Backoff`]), and each round reads on from where the last one stopped, so the notes of one
/// holder that does not answer hold up no one else's: read from the oldest every round, a
/// holder with a round's worth of notes waiting kept every other holder's from going. A holder
/// whose notes were left behind is sent no later ones until the reading comes round to the
/// oldest again: it gets its notes in order (a `Forget` before the `Keep` it follows would
/// leave a done URL kept).
pub async fn send(crawler: Crawler, network: NetworkHandle) {
    crawler.send_second_copies();
    let me = network.peer_id();
    // Not before the roster came: on the ring of this node alone no host has a second holder,
    // and the notes left from before a restart would go as unneeded.
    network.wait_for(|s| !s.members.is_empty() && s.roster.stage != "pulling").await;
    let mut backoff = Backoff::default();
    let mut from = 0;
    // Holders with notes left behind since the reading last started from the oldest.
    let mut behind: HashSet<PeerId> = HashSet::new();
    loop {
        tokio::time::sleep(EVERY).await;
        if from == 0 {
            behind.clear();
        }
        let notes = crawler.second_copies(from, ROUND);
        // The next round reads on past these, or from the oldest again after the last.
        from = match notes.last() {
            Some((seq, _)) if notes.len() == ROUND => seq + 1,
            _ => 0,
        };
        if notes.is_empty() {
            continue;
        }
        let now = Instant::now();
        let round = plan(&notes, &network.ring(), &me, |h| behind.contains(h) || backoff.waits(h, now));
        behind.extend(round.left);
        crawler.second_copies_sent(&round.unneeded);
        let sends = round.by_holder.into_iter().flat_map(|(holder, notes)| {
            notes
                .chunks(BATCH)
                .map(|batch| {
                    let (seqs, urls): (Vec<u64>, Vec<WireUrl>) = batch.iter().cloned().unzip();
                    let network = network.clone();
                    async move { (holder, network.send_second_copies(holder, urls).await.then_some(seqs)) }
                })
                .collect::<Vec<_>>()
        });
        for (holder, taken) in futures::future::join_all(sends).await {
            match taken {
                Some(seqs) => {
                    backoff.answered(&holder);
                    crawler.second_copies_sent(&seqs);
                }
                None => {
                    backoff.failed(holder, Instant::now());
                    behind.insert(holder);
                }
            }
        }
    }
}

/// What a round of [`send`] does with the notes it read.
#[derive(Debug, Default, PartialEq)]
struct Round {
    /// Notes no one needs: their host is not this node's any more (its new owner tells its own
    /// second holder), or it has no second member to tell.
    unneeded: Vec<u64>,
    /// Notes to send, by second holder.
    by_holder: HashMap<PeerId, Vec<(u64, WireUrl)>>,
    /// The holders whose notes were left for a later round.
    left: HashSet<PeerId>,
}

/// Sorts `notes` on `ring` for `me`: each goes to its host's second holder, unless `waiting`
/// says that holder is not asked now (its notes stay for a later round).
fn plan(notes: &[(u64, SecondCopy)], ring: &Ring, me: &PeerId, waiting: impl Fn(&PeerId) -> bool) -> Round {
    let mut round = Round::default();
    for (seq, note) in notes {
        match second_holder(ring, note.host()) {
            Some(holder) if owner_is(ring, note.host(), me) => {
                if waiting(&holder) {
                    round.left.insert(holder);
                } else {
                    round.by_holder.entry(holder).or_default().push((*seq, to_wire(note)));
                }
            }
            _ => round.unneeded.push(*seq),
        }
    }
    round
}

/// The longest a holder that does not take its notes waits to be asked again.
const BACKOFF_MAX: Duration = Duration::from_secs(60);

/// Second holders that did not take a batch, and when each is asked again: a round later after
/// the first failure, then twice as long each time up to [`BACKOFF_MAX`]; at once after it
/// takes one. A holder that is down but still on the ring (not yet replaced) costs a request a
/// minute, not one a second.
#[derive(Debug, Default)]
struct Backoff {
    holders: HashMap<PeerId, (Instant, Duration)>,
}

impl Backoff {
    fn waits(&self, holder: &PeerId, now: Instant) -> bool {
        self.holders.get(holder).is_some_and(|(until, _)| now < *until)
    }

    fn failed(&mut self, holder: PeerId, now: Instant) {
        let wait = self.holders.get(&holder).map_or(EVERY, |(_, wait)| (*wait * 2).min(BACKOFF_MAX));
        self.holders.insert(holder, (now + wait, wait));
    }

    fn answered(&mut self, holder: &PeerId) {
        self.holders.remove(holder);
    }
}

/// How often [`follow_ring`] looks again without a ring change: hosts gained wait out the
/// hand-over bound before what was kept for them is queued.
const LOOK_EVERY: Duration = Duration::from_secs(2);

/// A host this node kept URLs for and owns now: since when, and who owned it before.
struct Gained {
    since: Instant,
    from: Option<PeerId>,
}

/// At the start, on every ring change and every [`LOOK_EVERY`] while some host waits: what was
/// kept for a host this node gained is queued once the hand-over bound has passed, if the
/// member it gained it from crashed. A member that left with a last word handed the host over
/// itself, its queue and what it fetched, and may still be finishing a request to it: what was
/// kept for it goes, as for one still on the ring (this node joined in front of it).
/// What this node would no longer take over goes; and each of its hosts' queues is written
/// whole for its second holder when it was last written for another (a member joined next to
/// this node, the holder left, or the network had no second member). Runs until the network
/// stops.
pub async fn follow_ring(crawler: Crawler, network: NetworkHandle, handover_bound: Duration) {
    let me = network.peer_id();
    // Not before the roster came: on the ring of this node alone it would own every host it
    // keeps URLs for.
    network.wait_for(|s| !s.members.is_empty() && s.roster.stage != "pulling").await;
    let mut rings = network.ring_changes();
    let mut before = rings.borrow().clone();
    let mut gained: HashMap<String, Gained> = HashMap::new();
    let mut changed = true;
    loop {
        let now = rings.borrow_and_update().clone();
        // Without a change, only when some host waits to be adopted.
        if !now.is_empty() && (changed || !gained.is_empty()) {
            let at = Instant::now();
            let kept = crawler.kept_hosts();
            gained.retain(|host, _| kept.contains(host) && owner_is(&now, host, &me));
            let (mut adopt, mut handed_over) = (HashSet::new(), HashSet::new());
            for host in kept.iter().filter(|h| owner_is(&now, h, &me)) {
                let from = holders(&before, host, 1).first().copied().filter(|p| *p != me);
                let g = gained.entry(host.clone()).or_insert(Gained { since: at, from });
                if at.duration_since(g.since) < handover_bound {
                    continue;
                }
                match g.from {
                    // Gained from a member that hands over: one still on the ring (this node
                    // joined before it), or one that left with a last word.
                    Some(p) if now.contains(&p) || network.left_with_last_word(p).await => {
                        handed_over.insert(host.clone());
                    }
                    // From one that crashed, or from nobody this node saw (it was away).
                    _ => {
                        adopt.insert(host.clone());
                    }
                }
                gained.remove(host);
            }
            let moved = crawler
                .second_copies_after_change(
                    |host| adopt.contains(host),
                    |host| !handed_over.contains(host) && holders(&now, host, SECOND_HOLDER_WITHIN).contains(&me),
                    |host| {
                        let holder = second_holder(&now, host).filter(|_| owner_is(&now, host, &me))?;
                        Some(holder.to_bytes())
                    },
                )
                .await;
            match moved {
                Ok(m) if m != Default::default() => {
                    tracing::info!(adopted = m.adopted, dropped = m.dropped, sent_again = m.sent_again, "second copies")
                }
                Ok(_) => {}
                // A storage fault stops the node.
                Err(_) => return,
            }
            before = now;
        }
        changed = tokio::select! {
            result = rings.changed() => if result.is_err() { return } else { true },
            _ = tokio::time::sleep(LOOK_EVERY) => false,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_crosses_the_wire_and_back() {
        let keep =
            SecondCopy::Keep { host: "a.test".into(), url: "http://a.test/x".into(), depth: 3, kind: UrlKind::Sitemap };
        assert_eq!(from_wire(to_wire(&keep), 16), Some(keep));
        let forget = SecondCopy::Forget { host: "a.test".into(), url: "http://a.test/y".into() };
        assert_eq!(from_wire(to_wire(&forget), 16), Some(forget));
        // A peer's depth is capped; a revisit is kept as a page.
        let deep = WireUrl::new("http://A.test/z#frag", u32::MAX, weft_p2p::UrlKind::Page);
        assert_eq!(
            from_wire(deep, 16),
            Some(SecondCopy::Keep {
                host: "a.test".into(),
                url: "http://a.test/z".into(),
                depth: 16,
                kind: UrlKind::Page
            })
        );
    }

    #[test]
    fn the_second_holder_is_who_owns_the_host_without_its_owner() {
        let members: Vec<PeerId> = (0..5).map(|_| PeerId::random()).collect();
        let ring = Ring::new(members.clone(), weft_p2p::DEFAULT_VNODES);
        for i in 0..50 {
            // As the frontier names a host: with its port when it has one.
            let (name, host) = (format!("h{i}.test"), format!("h{i}.test:8080"));
            let owner = *ring.owner(&name).unwrap();
            assert!(owner_is(&ring, &host, &owner));
            let second = second_holder(&ring, &host).unwrap();
            assert_ne!(owner, second);
            assert_eq!(ring.without(&owner).owner(&name), Some(&second));
        }
        assert_eq!(second_holder(&Ring::new([members[0]], weft_p2p::DEFAULT_VNODES), "a.test"), None);
    }

    #[test]
    fn a_holder_that_is_not_asked_now_keeps_its_notes_and_holds_up_no_one_else() {
        let members: Vec<PeerId> = (0..4).map(|_| PeerId::random()).collect();
        let ring = Ring::new(members.clone(), weft_p2p::DEFAULT_VNODES);
        let me = members[0];
        let hosts: Vec<String> = (0..200).map(|i| format!("h{i}.test")).collect();
        let mine: Vec<&String> = hosts.iter().filter(|h| owner_is(&ring, h, &me)).collect();
        let other = hosts.iter().find(|h| !owner_is(&ring, h, &me)).unwrap();
        let note = |host: &str| SecondCopy::Forget { host: host.into(), url: format!("http://{host}/") };
        let notes: Vec<(u64, SecondCopy)> =
            mine.iter().map(|h| note(h)).chain([note(other)]).enumerate().map(|(i, n)| (i as u64, n)).collect();
        let holders: HashSet<PeerId> = mine.iter().filter_map(|h| second_holder(&ring, h)).collect();
        assert!(holders.len() >= 2, "this node's hosts have more than one second holder");
        let down = *holders.iter().next().unwrap();

        let all = plan(&notes, &ring, &me, |_| false);
        assert_eq!(all.unneeded, [notes.len() as u64 - 1], "a host this node does not own");
        assert_eq!(all.by_holder.values().map(Vec::len).sum::<usize>(), mine.len());
        let round = plan(&notes, &ring, &me, |h| *h == down);
        assert!(!round.by_holder.contains_key(&down));
        assert_eq!(round.left, HashSet::from([down]));
        assert!(all.left.is_empty());
        assert_eq!(round.by_holder.len(), holders.len() - 1);
        for (holder, sent) in &round.by_holder {
            assert_eq!(sent, &all.by_holder[holder], "the others' notes go as they would");
        }
        assert_eq!(round.unneeded, all.unneeded);
    }

    #[test]
    fn a_holder_that_does_not_take_its_notes_is_asked_less_often_until_it_does() {
        let (peer, t0) = (PeerId::random(), Instant::now());
        let mut b = Backoff::default();
        assert!(!b.waits(&peer, t0));
        let mut at = t0;
        let mut waits = Vec::new();
        for _ in 0..10 {
            b.failed(peer, at);
            let wait = b.holders[&peer].1;
            assert!(b.waits(&peer, at + wait - Duration::from_millis(1)) && !b.waits(&peer, at + wait));
            waits.push(wait.as_secs());
            at += wait;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        b.answered(&peer);
        assert!(!b.waits(&peer, at));
        b.failed(peer, at);
        assert_eq!(b.holders[&peer].1, EVERY, "after an answer, from the start again");
    }
}
