//! One node's part in the roster protocol, without I/O: the event loop tells it about
//! connections, hands it requests and replies, and sends what it returns. Everything a node
//! decides — when to pull, whom to compare digests with, when to ask for sponsors, whom to
//! accuse, when to refute — is here, so that several nodes can be driven in a unit test. (The
//! simulator models the same decisions with a few bits per member, as it cannot hold 10,000
//! rosters; its observers run the real `Roster`.)
//!
//! A node starts *pulling* the roster page by page from whoever it is connected to. A node
//! started with no one to join founds a network: at once when it knows no member (no bootstrap
//! peer, none saved from a last run), else after [`FOUND_AFTER`] with no page from anyone; it
//! signs its own Joined, which needs no sponsor in an empty roster. Once it holds the roster
//! it compares digests every [`ROUND_SECS`] with a member of its *view* ([`VIEW`] members picked
//! at random, one swapped every [`SHUFFLE_SECS`]; at scale all but one among the data plane's grid
//! links, [`RosterNode::set_links`]), keeps connections with the members it watches
//! and those that watch it, waits out its probation, and asks its would-be monitors to sponsor
//! it. This is the design `weft-simnet scale --design roster` measures at 10,000 members.
//!
//! A member checks its own entry: declared dead within [`REFUTE_FOR`], it refutes alone and keeps
//! its place; gone for longer (or after it left), it waits out a probation again.

use super::admission::{Admission, Sponsoring, Stage};
use super::event::{Event, What};
use super::watch::Watch;
use super::wire::{RosterReply, RosterRequest};
use super::{Change, Refused, Roster, Trust, MONITORS, REFUTE_FOR};
use libp2p::identity::Keypair;
use libp2p::PeerId;
use std::collections::{BTreeSet, HashMap};

/// Seconds between two digest rounds.
pub const ROUND_SECS: u64 = 2;
/// Members in a node's view: those it compares digests with.
pub const VIEW: usize = 8;
/// One member of a full view is swapped for another this often, so that views stay random and
/// the two sides of a healed partition meet again.
const SHUFFLE_SECS: u64 = 120;
/// A node with no bootstrap peer configured but members saved from its last run founds a network
/// after this long without a page from anyone (none of them is up: it starts a new network).
pub const FOUND_AFTER: u64 = 10;
/// Seconds a newcomer stays connected to a would-be monitor before that member takes its URLs
/// (a peer that connects only to push URLs and go is turned away).
pub const NEWCOMER_SETTLED: u64 = 5;
/// A request not answered within this long is given up (the transport's own timeout reports
/// most failures earlier).
const GIVE_UP_AFTER: u64 = 30;
/// A peer whose page was empty (or did not come) is asked again after this long: a newcomer
/// among newcomers has no roster to give for a while, and a founder has none for its first
/// [`FOUND_AFTER`] seconds (the nodes started beside it ask it again soon after it founds).
const TRY_AGAIN_AFTER: u64 = 2 * ROUND_SECS;
/// Sponsors that have not all signed within this long are asked again.
const ASK_AGAIN_AFTER: u64 = 30;
/// Departures are dropped from the roster once a minute.
const EXPIRE_EVERY: u64 = 60;
/// Members told of this node's departure directly (the rest hear it with the digests).
const TOLD_OF_LEAVING: usize = MONITORS;
/// Events taken from one message, at most (the codec bounds its bytes; this bounds the work).
const MAX_EVENTS: usize = 512;

/// What a request was, so that its reply is read as what it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    Digest,
    FollowUp,
    Page,
    Sponsor,
    /// A co-signature on the death of this member.
    Accuse(PeerId),
}

/// A request to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Send {
    pub to: PeerId,
    pub request: RosterRequest,
    pub asked: Asked,
}

/// One node's roster and its part in keeping it.
#[derive(Debug)]
pub struct RosterNode {
    key: Keypair,
    me: PeerId,
    vnodes: u16,
    /// This node's public address block, as its sponsors will see it (0: private or relayed).
    block: u64,
    /// Started with no one to join: it founds a network if no one answers.
    may_found: bool,
    /// The peers it joins through: asked for the roster first.
    bootstrap: Vec<PeerId>,
    started: u64,
    roster: Roster,
    admission: Admission,
    sponsoring: Sponsoring,
    watch: Watch,
    connected: BTreeSet<PeerId>,
    /// Requests in flight that hold a turn: the digest round's and the page's, and since when.
    digest_out: Option<(PeerId, u64)>,
    page_out: Option<(PeerId, u64)>,
    /// Peers whose page was empty or failed lately, and when.
    tried: Vec<(PeerId, u64)>,
    asked_at: u64,
    /// Deaths this node signed, waiting for a co-signature.
    accusing: HashMap<PeerId, Event>,
    next_round: u64,
    view: Vec<PeerId>,
    /// The data plane's grid links while the grid is in use (see `crate::grid`): the view is
    /// drawn among them, the connections being held anyway, but for one member at random.
    links: Vec<PeerId>,
    shuffled_at: u64,
    rng: u64,
    expired_at: u64,
    changes: Vec<Change>,
    /// Events refused (a sender's mistake or a forgery; counted, never fatal).
    refused: u64,
    last_refusal: Option<String>,
    /// The last sponsorship or accusation a member declined, with its reason (a newcomer that
    /// stays out can tell why).
    last_declined: Option<String>,
    /// This node left: it does not come in again (its hand-over goes to its hosts' owners).
    left: bool,
}

impl RosterNode {
    /// A node starting at `now` (unix seconds) with `vnodes` ring points when fully admitted;
    /// `may_found` when it has no one to join.
    pub fn new(key: Keypair, vnodes: u16, may_found: bool, now: u64) -> RosterNode {
        RosterNode {
            me: key.public().to_peer_id(),
            vnodes,
            block: 0,
            may_found,
            bootstrap: Vec::new(),
            started: now,
            roster: Roster::new(usize::from(vnodes)),
            admission: Admission::new(now),
            sponsoring: Sponsoring::default(),
            watch: Watch::default(),
            connected: BTreeSet::new(),
            digest_out: None,
            page_out: None,
            tried: Vec::new(),
            asked_at: 0,
            accusing: HashMap::new(),
            next_round: now,
            view: Vec::new(),
            links: Vec::new(),
            shuffled_at: now,
            // Any odd seed: views need only differ between nodes.
            rng: u64::from_le_bytes(key.public().to_peer_id().to_bytes()[2..10].try_into().unwrap_or([7; 8])) | 1,
            expired_at: now,
            changes: Vec::new(),
            refused: 0,
            last_refusal: None,
            last_declined: None,
            left: false,
            key,
        }
    }

    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    pub fn roster_mut(&mut self) -> &mut Roster {
        &mut self.roster
    }

    pub fn stage(&self) -> &Stage {
        self.admission.stage()
    }

    pub fn is_member(&self) -> bool {
        self.roster.is_member(&self.me)
    }

    /// Whether `peer` is a newcomer on its way in that this member will monitor, connected to it
    /// for [`NEWCOMER_SETTLED`] at least: the one stranger whose page URLs a member takes (its
    /// user's seeds, which would otherwise wait out its probation, and be lost with a newcomer
    /// that leaves before it is admitted). See `crate::exchange::NewcomerAllowance` for the bound.
    pub fn watching_newcomer(&self, peer: &PeerId, now: u64) -> bool {
        self.is_member()
            && !self.roster.is_member(peer)
            && self.sponsoring.met_since(peer).is_some_and(|met| now >= met + NEWCOMER_SETTLED)
            && self.roster.successors(peer, MONITORS).contains(&self.me)
    }

    /// While this node is on its way in: the would-be monitor it is connected to that takes its
    /// URLs (see [`RosterNode::watching_newcomer`]). None for a member or a leaver (whose
    /// hand-over goes to its hosts' owners), or with no monitor connected yet.
    pub fn newcomer_via(&self) -> Option<PeerId> {
        if self.left || self.is_member() || !matches!(self.stage(), Stage::Probation { .. } | Stage::Asking { .. }) {
            return None;
        }
        self.roster.successors(&self.me, MONITORS).into_iter().find(|p| self.connected.contains(p))
    }

    /// Events refused so far, and the last reason.
    pub fn refused(&self) -> (u64, Option<&str>) {
        (self.refused, self.last_refusal.as_deref())
    }

    /// The last request of this node a member declined, and why.
    pub fn declined(&self) -> Option<&str> {
        self.last_declined.as_deref()
    }

    /// How the roster changed since the last call.
    pub fn take_changes(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.changes)
    }

    /// The peers this node joins through: asked for the roster before the others.
    pub fn set_bootstrap(&mut self, peers: Vec<PeerId>) {
        self.bootstrap = peers;
    }

    /// This node's public address block as others see it (see `event::block_hash`).
    pub fn set_block(&mut self, block: u64) {
        self.block = block;
    }

    /// The grid's links this node keeps for the data plane (none while the grid is not in use):
    /// its view is drawn among them from the next tick.
    pub fn set_links(&mut self, links: &[PeerId]) {
        if self.links != links {
            self.links = links.to_vec();
        }
    }

    /// The members it compares digests with.
    pub fn view(&self) -> &[PeerId] {
        &self.view
    }

    /// The peers this node wants a connection with: its view, those it watches and those that
    /// watch it (or will: its sponsors while it is on its way in).
    pub fn wanted(&self) -> Vec<PeerId> {
        let mut want = self.roster.successors(&self.me, MONITORS);
        if self.is_member() {
            want.extend(self.roster.watched_by(&self.me));
        }
        want.extend(self.view.iter().copied());
        want.sort();
        want.dedup();
        want
    }

    /// The peers whose connections are kept open while idle: those it wants, and the
    /// newcomers it would sponsor, whose probation it counts from their meeting — a connection
    /// closed while idle would start it again (see `crate::keep_alive`).
    pub fn kept(&self) -> Vec<PeerId> {
        let mut keep = self.wanted();
        if self.is_member() {
            let me = self.me;
            let sponsored = self.sponsoring.met().filter(|p| !self.roster.is_member(p));
            keep.extend(sponsored.filter(|p| self.roster.successors(p, MONITORS).contains(&me)).copied());
        }
        keep
    }

    /// A connection with `peer` stands.
    pub fn connected(&mut self, peer: PeerId, now: u64) {
        self.connected.insert(peer);
        self.watch.reached(&peer);
        self.sponsoring.connected(peer, now);
    }

    /// The last connection with `peer` closed, or a dial to it failed.
    pub fn disconnected(&mut self, peer: &PeerId, now: u64) {
        self.connected.remove(peer);
        self.watch.unreachable(*peer, now);
        self.sponsoring.disconnected(peer);
    }

    /// What to send at `now`: the next page, the digest round, a request for sponsors, the
    /// accusations due. Called about once a second.
    pub fn tick(&mut self, now: u64) -> Vec<Send> {
        let mut out = Vec::new();
        if self.digest_out.is_some_and(|(_, at)| now >= at + GIVE_UP_AFTER) {
            self.digest_out = None;
        }
        if self.page_out.is_some_and(|(_, at)| now >= at + GIVE_UP_AFTER) {
            self.page_out = None;
        }
        if now >= self.expired_at + EXPIRE_EVERY {
            self.expired_at = now;
            self.roster.expire(now);
        }
        self.tried.retain(|(_, at)| now < at + TRY_AGAIN_AFTER);
        match self.admission.stage().clone() {
            Stage::Pulling { after } => {
                let waited = self.bootstrap.is_empty() || now >= self.started + FOUND_AFTER;
                if self.may_found && waited && self.roster.is_empty() {
                    // No one it is connected to had a roster (newcomers may have connected to it),
                    // or it has no one to ask (no bootstrap peer, none saved): the first node.
                    self.found(now);
                } else if let Some(to) = (self.page_out.is_none()).then(|| self.page_partner()).flatten() {
                    self.page_out = Some((to, now));
                    out.push(Send { to, request: RosterRequest::Page { after }, asked: Asked::Page });
                }
                return out;
            }
            // A would-be sponsor counts this node's probation from when it met it, which may be
            // later than this node's arrival (a member whose address it had to ask for): the
            // request waits until every sponsor it is connected to would sign (one that is not
            // connected would decline anyway, and the others may be enough).
            Stage::Probation { .. } if !self.sponsors_ready(now) => {}
            Stage::Probation { .. } => {
                if let Some((joined, sponsors)) =
                    self.admission.ask(&self.key, &self.roster, self.vnodes, self.block, now)
                {
                    self.asked_at = now;
                    if sponsors.is_empty() {
                        // No member to ask: the roster it pulled was empty.
                        self.found(now);
                    }
                    for to in sponsors {
                        out.push(Send { to, request: RosterRequest::Sponsor(joined.clone()), asked: Asked::Sponsor });
                    }
                }
            }
            Stage::Asking { .. } if now >= self.asked_at + ASK_AGAIN_AFTER => self.admission.retry(),
            Stage::Asking { .. } | Stage::Member => {}
        }
        self.check_self(now);
        if self.is_member() {
            for peer in self.roster.watched_by(&self.me) {
                if !self.connected.contains(&peer) {
                    // Never reached, or not since it came: it counts as lost from now.
                    self.watch.unreachable(peer, now);
                }
            }
            for (dead, others) in self.watch.due(&self.key, &self.roster, now) {
                let Ok(peer) = dead.peer_id() else { continue };
                self.accusing.insert(peer, dead.clone());
                for to in others {
                    out.push(Send { to, request: RosterRequest::Accuse(dead.clone()), asked: Asked::Accuse(peer) });
                }
            }
        }
        self.refresh_view(now);
        if now >= self.next_round && self.digest_out.is_none() {
            self.next_round = now + ROUND_SECS;
            if let Some(to) = self.digest_partner() {
                self.digest_out = Some((to, now));
                out.push(Send { to, request: RosterRequest::Digest(self.roster.digest(now)), asked: Asked::Digest });
            }
        }
        out
    }

    /// Whether to ask now: as many would-be sponsors as the join needs are connected to this
    /// node and have met it for the probation (one second of margin for the two clocks'
    /// rounding). A sponsor counts the probation from their meeting, which may come after this
    /// node's arrival (a member it had to ask the address of, one admitted just before it in a
    /// young network, one that restarted meanwhile): asked sooner, too many decline, and the
    /// request waits `ASK_AGAIN_AFTER` for the signatures it lacks. One that declines while
    /// enough others sign costs nothing.
    fn sponsors_ready(&self, now: u64) -> bool {
        let sponsors = self.roster.successors(&self.me, MONITORS);
        let ready = |sponsor: &&PeerId| {
            self.sponsoring.met_since(sponsor).is_some_and(|met| now > met + self.roster.probation(met))
        };
        sponsors.iter().filter(ready).count() >= self.roster.sponsors_needed(now).min(sponsors.len())
    }

    /// This node's answer to `request` from `from`, whose connection comes from address block
    /// `block` (0: private or relayed).
    pub fn on_request(&mut self, from: PeerId, request: RosterRequest, block: u64, now: u64) -> RosterReply {
        match request {
            RosterRequest::Digest(digest) => RosterReply::Answer(self.roster.answer(&digest)),
            RosterRequest::FollowUp(up) => {
                self.take(up.events, now);
                RosterReply::Events(self.roster.events_for(&up.want))
            }
            RosterRequest::Page { after } => RosterReply::Page(self.roster.snapshot(after, now)),
            RosterRequest::Sponsor(joined) => {
                match self.sponsoring.sponsor(&self.key, &self.roster, &from, &joined, block, now) {
                    Ok(proof) => RosterReply::Signed(proof),
                    Err(why) => RosterReply::Declined(why),
                }
            }
            RosterRequest::Accuse(dead) => match self.watch.cosign(&self.key, &self.roster, &from, &dead, now) {
                Ok(proof) => RosterReply::Signed(proof),
                Err(why) => RosterReply::Declined(why),
            },
            // Addresses are the event loop's (`network/peers.rs`), which answers these before
            // they reach here: this node knows none.
            RosterRequest::Where(_) => RosterReply::Addresses(Vec::new()),
        }
    }

    /// `from` answered the request sent as `asked`: what to send next.
    pub fn on_reply(&mut self, from: PeerId, asked: Asked, reply: RosterReply, now: u64) -> Vec<Send> {
        let mut out = Vec::new();
        match (asked, reply) {
            (Asked::Digest, RosterReply::Answer(answer)) => {
                self.digest_out = None;
                self.take(answer.events.clone(), now);
                let up = self.roster.follow_up(&answer, now);
                if !up.events.is_empty() || !up.want.is_empty() {
                    out.push(Send { to: from, request: RosterRequest::FollowUp(up), asked: Asked::FollowUp });
                }
            }
            (Asked::FollowUp, RosterReply::Events(events)) => self.take(events, now),
            (Asked::Page, RosterReply::Page(page)) => {
                self.page_out = None;
                if page.events.is_empty() && page.next.is_none() && self.roster.is_empty() {
                    // It has no roster either (it is on its way in too): ask someone else.
                    self.tried.push((from, now));
                } else {
                    self.admission.page(page, &mut self.roster, now);
                    self.changes.clear();
                    if !matches!(self.admission.stage(), Stage::Pulling { .. }) {
                        self.pulled(now);
                    }
                }
            }
            (Asked::Sponsor, RosterReply::Signed(proof)) => {
                match self.admission.signed(from, proof, &mut self.roster, now) {
                    Ok(true) => self.changes.push(Change::Joined(self.me)),
                    Ok(false) => {}
                    Err(e) => self.refuse(e.to_string()),
                }
            }
            (Asked::Accuse(peer), RosterReply::Signed(proof)) => {
                if let Some(mut dead) = self.accusing.remove(&peer) {
                    if proof.signer == from.to_bytes() {
                        dead.proofs.push(proof);
                        self.take(vec![dead], now);
                    }
                }
            }
            (Asked::Sponsor | Asked::Accuse(_), RosterReply::Declined(why)) => {
                tracing::debug!(peer = %from, "roster request declined: {why}");
                let why: String = why.chars().take(200).collect();
                self.last_declined = Some(format!("{from}: {why}"));
            }
            (asked, reply) => {
                self.forget(asked);
                self.refuse(format!("{from} answered a {asked:?} request with {}", reply_kind(&reply)));
            }
        }
        out
    }

    /// The request sent to `to` as `asked` failed (no connection, a timeout, a refused stream).
    pub fn on_failure(&mut self, to: PeerId, asked: Asked, now: u64) {
        self.forget(asked);
        if asked == Asked::Page {
            self.tried.push((to, now));
        }
    }

    /// This node leaves at `now`: its signed departure, for the members to tell directly.
    pub fn leave(&mut self, now: u64) -> Vec<Send> {
        self.left = true;
        if !self.is_member() {
            return Vec::new();
        }
        let at = now.max(self.roster.event_of(&self.me).map_or(0, |e| e.at) + 1);
        let left = Event::new(&self.me, at, What::Left).signed_by(&self.key);
        self.take(vec![left.clone()], now);
        let mut to: Vec<PeerId> = self.roster.successors(&self.me, MONITORS);
        to.extend(self.connected.iter().copied().filter(|p| self.roster.is_member(p)));
        to.retain(|p| self.connected.contains(p));
        to.dedup();
        let follow = super::FollowUp { events: vec![left], want: Vec::new() };
        let sends = to.into_iter().take(TOLD_OF_LEAVING);
        sends.map(|to| Send { to, request: RosterRequest::FollowUp(follow.clone()), asked: Asked::FollowUp }).collect()
    }

    fn forget(&mut self, asked: Asked) {
        match asked {
            Asked::Digest => self.digest_out = None,
            Asked::Page => self.page_out = None,
            Asked::Accuse(peer) => {
                self.accusing.remove(&peer);
            }
            Asked::FollowUp | Asked::Sponsor => {}
        }
    }

    fn refuse(&mut self, why: String) {
        tracing::debug!("roster: {why}");
        self.refused += 1;
        self.last_refusal = Some(why);
    }

    /// Takes events from a peer (checked as a member checks them).
    fn take(&mut self, events: Vec<Event>, now: u64) {
        for e in events.into_iter().take(MAX_EVENTS) {
            match self.roster.apply(e, now, Trust::Member) {
                Ok(Some(change)) => self.changes.push(change),
                Ok(None) => {}
                // Waiting for a signer this roster has not read yet: kept, not a fault.
                Err(Refused::Sponsors { .. } | Refused::Accusers { .. }) => {}
                Err(e) => self.refuse(e.to_string()),
            }
        }
    }

    /// A network of one: this node's own Joined, with no one to sponsor it.
    fn found(&mut self, now: u64) {
        let what = What::Joined { vnodes: self.vnodes, since: now, block: self.block };
        let joined = Event::new(&self.me, now, what).signed_by(&self.key);
        match self.roster.apply(joined, now, Trust::Member) {
            Ok(_) => {
                tracing::info!("no roster to join: this node founds the network");
                self.admission = Admission::member(now);
                self.changes.push(Change::Joined(self.me));
            }
            Err(e) => self.refuse(format!("founding: {e}")),
        }
    }

    /// The roster is in: a node that restarted finds itself in it and is a member still, or
    /// refutes a death it may still refute.
    fn pulled(&mut self, now: u64) {
        let still = self
            .roster
            .event_of(&self.me)
            .is_some_and(|e| e.what.is_joined() || (e.what == What::Dead && now < e.at + REFUTE_FOR));
        if still {
            self.admission = Admission::member(now);
        }
        self.check_self(now);
    }

    /// A member declared dead refutes it while it may; one gone for longer comes in again (a
    /// node that left does not: it is on its way out).
    fn check_self(&mut self, now: u64) {
        if self.left || !matches!(self.admission.stage(), Stage::Member) {
            return;
        }
        if self.roster.is_member(&self.me) {
            // Its join, sponsored from a roster that lacked members admitted before it (two
            // newcomers to a young network), is short of sponsors now that it knows them: the
            // others refuse it, so it asks again.
            if self.roster.short_of_sponsors(&self.me) {
                tracing::info!("this node's join lacks sponsors the roster now asks for: asking again");
                self.admission = Admission::ask_again(now);
            }
            return;
        }
        let latest = self.roster.event_of(&self.me).map(|e| (e.what, e.at));
        let since = self.roster.since_of(&self.me);
        match (latest, since) {
            (Some((What::Dead, at)), Some(since)) if now < at + REFUTE_FOR => {
                let what = What::Joined { vnodes: self.vnodes, since, block: self.block };
                let refute = Event::new(&self.me, now.max(at + 1), what).signed_by(&self.key);
                tracing::info!("declared dead by its monitors while alive: refuted");
                self.take(vec![refute], now);
            }
            _ => self.admission = Admission::rejoin(&self.roster, now),
        }
    }

    /// Whom to ask for a page: a connected peer not tried lately — a member of the roster
    /// pulled so far, or a bootstrap peer, or any at random (most peers a newcomer meets first
    /// may be newcomers too, with no roster to give).
    fn page_partner(&mut self) -> Option<PeerId> {
        let fresh: Vec<PeerId> =
            (self.connected.iter()).filter(|p| !self.tried.iter().any(|(t, _)| t == *p)).copied().collect();
        let known = |p: &&PeerId| self.roster.is_member(p) || self.bootstrap.contains(p);
        if let Some(p) = fresh.iter().find(known) {
            return Some(*p);
        }
        (!fresh.is_empty()).then(|| fresh[self.random(fresh.len())])
    }

    /// Whom to compare digests with this round: a member of the view it is connected to, at
    /// random; or, while none is, one it watches or that watches it.
    fn digest_partner(&mut self) -> Option<PeerId> {
        let view: Vec<PeerId> = self.view.iter().copied().filter(|p| self.connected.contains(p)).collect();
        if !view.is_empty() {
            return Some(view[self.random(view.len())]);
        }
        let near: Vec<PeerId> = self.wanted().into_iter().filter(|p| self.connected.contains(p)).collect();
        (!near.is_empty()).then(|| near[self.random(near.len())])
    }

    /// Keeps the view to members, swaps one now and then, and fills it: among the grid's links
    /// first while there are any — a connection the data plane holds anyway, where a random
    /// member would be one more each way (at ten thousand members that is what keeps a member
    /// within 64 connections: `weft-simnet data-plane`) — and at random, for at least one
    /// member: links are a fixed pattern, and a member drawn from the whole roster keeps views
    /// mixing as before (the two sides of a healed partition meet again through it).
    fn refresh_view(&mut self, now: u64) {
        let (roster, me) = (&self.roster, self.me);
        self.view.retain(|p| *p != me && roster.is_member(p));
        if !self.links.is_empty() {
            let links = &self.links;
            let mut outside = 0;
            self.view.retain(|p| {
                outside += usize::from(!links.contains(p));
                links.contains(p) || outside <= 1
            });
        }
        if self.view.len() >= VIEW && now >= self.shuffled_at + SHUFFLE_SECS {
            self.shuffled_at = now;
            let out = self.random(self.view.len());
            self.view.remove(out);
        }
        let mut candidates: Vec<PeerId> = (self.links.iter())
            .filter(|p| **p != self.me && self.roster.is_member(p) && !self.view.contains(p))
            .copied()
            .collect();
        while self.view.iter().filter(|p| self.links.contains(p)).count() < VIEW - 1 && !candidates.is_empty() {
            let k = self.random(candidates.len());
            self.view.push(candidates.swap_remove(k));
        }
        let others = self.roster.len().saturating_sub(usize::from(self.is_member()));
        let mut tries = 4 * VIEW;
        while self.view.len() < VIEW.min(others) && tries > 0 {
            tries -= 1;
            let k = self.random(self.roster.len());
            if let Some(p) = self.roster.members().nth(k).copied() {
                if p != self.me && !self.view.contains(&p) {
                    self.view.push(p);
                }
            }
        }
    }

    /// A number below `n` (xorshift: views need only differ between nodes, not resist anyone).
    fn random(&mut self, n: usize) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (self.rng % n.max(1) as u64) as usize
    }
}

fn reply_kind(reply: &RosterReply) -> &'static str {
    match reply {
        RosterReply::Answer(_) => "an answer",
        RosterReply::Events(_) => "events",
        RosterReply::Page(_) => "a page",
        RosterReply::Signed(_) => "a signature",
        RosterReply::Declined(_) => "a refusal",
        RosterReply::Addresses(_) => "addresses",
    }
}

#[cfg(test)]
mod tests;
