//! The data plane at scale: how many peers a member is connected to for what it sends and is
//! sent besides the roster — URL hand-overs, postings, near-duplicate records, copies — in a
//! network of thousands of members.
//!
//! Under the `direct` design a connection stays open while it carries something at least every
//! [`weft_p2p::keep_alive::LINGER`] (the roster keeps its own few open, see
//! `RosterNode::kept`), so the peers a member is connected to for data are the peers it sent to,
//! or was sent by, in the last such window. This model draws one window of every member's
//! traffic on the real ring of `members` members and counts, for each member, the distinct
//! peers on either side, by what the traffic is; where each message goes is decided by the
//! product's own placement functions (`Ring::owner` for hosts, `cell_owners`, the records'
//! keys, `doc_holders`). What a page sends is the model's input ([`Traffic`]), its defaults
//! measured where they could be (see each field). Searches (a few peers per question) and the
//! copies' periodic comparisons are left out: they are rarer than a crawl's pages.
//!
//! Module order: traffic, nat, load, zipf → handshakes, held, ranks, wire → table.

mod handshakes;
mod held;
mod load;
mod nat;
mod ranks;
mod table;
mod traffic;
mod wire;
mod zipf;

pub use handshakes::{HANDSHAKE_BYTES, PUNCH_BYTES};
pub use held::{Held, ViewFrom};
pub use ranks::{join_churn, ByRank, JoinChurn, RANKS};
pub use table::table;
pub use traffic::{Design, Traffic};

use crate::rng::Rng;
use load::Load;
use nat::Nat;
use std::collections::{HashMap, HashSet};
use weft_p2p::grid::{Grid, Shape};
use weft_p2p::placement::{cell_owners, cells_per_chunk, shipped};
use weft_p2p::records::{keys, RECORD_OWNERS};
use weft_p2p::replicas::{doc_holders, doc_id};
use weft_p2p::{PeerId, Ring, DEFAULT_VNODES};
use wire::{Sent, Wire};
use zipf::Zipf;

/// What a member's data traffic is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Urls,
    Postings,
    Records,
    Copies,
}

const KINDS: [Kind; 4] = [Kind::Urls, Kind::Postings, Kind::Records, Kind::Copies];

/// Connections per member: over the members, the mean, median, 99th percentile and most.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub p50: usize,
    pub p99: usize,
    pub max: usize,
}

impl Spread {
    fn of(mut degrees: Vec<usize>) -> Spread {
        if degrees.is_empty() {
            return Spread::default();
        }
        degrees.sort_unstable();
        let at = |q: f64| degrees[rank(degrees.len(), q)];
        Spread {
            mean: degrees.iter().sum::<usize>() as f64 / degrees.len() as f64,
            p50: at(0.5),
            p99: at(0.99),
            max: *degrees.last().expect("not empty"),
        }
    }
}

/// The index of the `q` quantile among `len` sorted values (nearest, counted from the least).
fn rank(len: usize, q: f64) -> usize {
    (len.saturating_sub(1) as f64 * q).round() as usize
}

/// One run's figures.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Figures {
    pub members: usize,
    pub traffic: Traffic,
    /// Cells each chunk is posted to at this size ([`cells_per_chunk`]), and the members that
    /// own any cell.
    pub cells_per_chunk: usize,
    pub cell_owners: usize,
    /// Connections for each kind of traffic alone, in [`KINDS`] order, and for all of it.
    pub by_kind: Vec<Spread>,
    pub all: Spread,
    /// The share of members connected to more than 64 peers for data (the goal), and to more
    /// than 256 (`p2p.max_connections`).
    pub over_64: f64,
    pub over_256: f64,
    pub design: Design,
    /// Messages sent over a link for each message sent (1 for direct delivery), and the share
    /// of messages a grid could not route through its buckets (sent straight).
    pub hops: f64,
    pub straight: f64,
    /// The grid's neighbours a member keeps (0 for direct delivery).
    pub neighbours: Spread,
    /// Connections a member opens or accepts a second (each a handshake at both ends): mean and
    /// 99th percentile over the members. A pair's messages are taken to come as a Poisson
    /// stream at the rate the window saw (a page's messages to one peer at once), so a message
    /// opens a connection when the one before it is more than the connection's linger ago:
    /// λ·e^(−λ·S) a second for a pair at rate λ held S seconds after use, and for URLs sent in
    /// one batch every L seconds the share of batches with anything in them over L. A grid's
    /// links are kept, opened once (churn aside).
    pub opens_per_sec: (f64, f64),
    /// What those handshakes cost each member, in KB/s sent (mean, 99th percentile): a
    /// connection's handshake is [`HANDSHAKE_BYTES`] each way, and a punch adds
    /// [`PUNCH_BYTES`] each way (the relayed connection first, then the direct one).
    pub handshake_kb: (f64, f64),
    /// Hole punches a second a public member's relay starts (each opens a circuit to the
    /// member behind NAT first): mean and most over the public members.
    pub circuit_opens_per_sec: (f64, f64),
    /// Of the connections opened, those between two members behind NAT, a second a member
    /// (each a hole punch).
    pub punches_per_sec: f64,
    /// Of those, the punches that fail, a second a member: their pair talks through a relay.
    pub failed_punches_per_sec: f64,
    /// What the relays carry: the share of all bytes sent that went through one (failed
    /// punches, and grid links between two members behind NAT whose punch failed), and the
    /// KB/s each public member forwards as a relay (mean and 99th percentile over them).
    pub relayed_share: f64,
    pub relay_kb: (f64, f64),
    /// The circuits each public member holds open at a time (the pairs it relays for whose
    /// connection is open, counted as the connections are): mean and most, against
    /// `p2p.relay.max_circuits` (64).
    pub relay_circuits: (f64, usize),
    /// Bytes a second each member sends (forwarding and relaying included) and receives: mean
    /// and 99th percentile over the members, in KB/s.
    pub up_kb: (f64, f64),
    pub down_kb: (f64, f64),
    /// Connections held in all — the data's, every grid link, and the roster's view and
    /// monitors (see [`held`]) — with the view drawn at random as the roster does alone, and
    /// drawn among the grid's links.
    #[serde(default)]
    pub held: Held,
    #[serde(default)]
    pub held_grid_view: Held,
    /// Over a grid, what its members of each rank send (see [`ranks`]), and what a join
    /// changes.
    #[serde(default)]
    pub by_rank: ByRank,
    #[serde(default)]
    pub join_churn: JoinChurn,
}

/// Joins averaged over for [`Figures::join_churn`].
const JOINS: usize = 20;

/// Each of `members` members' distinct peers among the pairs of `sets` (see [`nat::pair`]).
fn degrees(members: usize, sets: &[&HashSet<u64>]) -> Vec<usize> {
    let mut d = vec![0usize; members];
    let mut seen = HashSet::new();
    for p in sets.iter().flat_map(|s| s.iter()) {
        if seen.insert(*p) {
            d[(p >> 32) as usize] += 1;
            d[(p & 0xffff_ffff) as usize] += 1;
        }
    }
    d
}

/// The share of members with more than `n` peers.
fn share_over(degrees: &[usize], n: usize) -> f64 {
    degrees.iter().filter(|d| **d > n).count() as f64 / degrees.len().max(1) as f64
}

/// The mean and the 99th percentile of `v`.
fn mean_p99(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (super::mean(&v), v.get(rank(v.len(), 0.99)).copied().unwrap_or(0.0))
}

/// Draws one window of every member's traffic among `members` members; deterministic from
/// `seed`.
pub fn run(members: usize, traffic: &Traffic, design: Design, seed: u64) -> Figures {
    let mut rng = Rng(seed);
    let ids: Vec<PeerId> = (0..members).map(|_| peer(&mut rng)).collect();
    let index: HashMap<PeerId, u32> = ids.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
    let ring = Ring::new(ids.iter().copied(), DEFAULT_VNODES);
    let book = shipped();
    let cells = traffic.cells.unwrap_or(book.len()).max(1);
    let per_chunk = cells_per_chunk(members, cells, traffic.cell_replicas);
    let owners_of: Vec<Vec<u32>> = (0..cells as u32)
        .map(|c| cell_owners(&ring, book.id(), c, traffic.cell_replicas).iter().map(|p| index[p]).collect())
        .collect();
    let cell_owner_count = owners_of.iter().flatten().collect::<HashSet<_>>().len();
    let zipf = Zipf::new(traffic.hosts, traffic.zipf);
    let pages = (traffic.pages_per_sec * traffic.window_secs).round().max(1.0) as usize;
    let grid = match design {
        Design::Direct | Design::Brief { .. } => None,
        Design::Grid { dims, per_bucket } | Design::Hybrid { dims, per_bucket, .. } => Some(Grid::new(
            Shape::fitting(members, dims, per_bucket),
            ids.iter().enumerate().map(|(i, p)| (i as u32, p)),
        )),
    };
    let nat = Nat::draw(members, traffic, seed);
    let mut wire = Wire::new(design, grid.as_ref(), traffic, &nat, members, seed);
    // A page's postings: each chunk to the owners of its best cells, batched to each owner.
    let page_cells = if traffic.posting { per_chunk + traffic.extra_page_cells } else { 0 };
    let posting_batch =
        (traffic.chunks * per_chunk * traffic.posting_bytes as usize).checked_div(page_cells).unwrap_or(0) as u64;
    for (me, my_id) in ids.iter().enumerate() {
        let me = me as u32;
        for _ in 0..pages {
            wire.next_page();
            // Its links' hosts, each to its owner.
            let mut linked = std::collections::BTreeSet::new();
            while linked.len() < traffic.foreign_hosts {
                linked.insert(zipf.draw(&mut rng));
            }
            for host in linked {
                let point = weft_p2p::ring::host_point(&format!("h{host}.example"));
                for holder in ring.owners_of_point(point, traffic.url_holders.max(1)) {
                    wire.send(me, Kind::Urls, index[&holder], traffic.url_bytes);
                }
            }
            // Its chunks' postings, to the owners of the page's cells.
            for _ in 0..page_cells {
                for to in &owners_of[rng.below(cells)] {
                    wire.send(me, Kind::Postings, *to, posting_batch);
                }
            }
            // Its fingerprint: a lookup to the first owner of each key, the entry to all of them.
            for key in keys(rng.next()) {
                for to in ring.owners_of_point(key.point(), RECORD_OWNERS) {
                    wire.send(me, Kind::Records, index[&to], traffic.record_bytes);
                }
            }
            // Its copies.
            let doc = doc_id(&format!("https://h{}.example/{}", zipf.draw(&mut rng), rng.next()));
            for to in doc_holders(&ring, &doc, traffic.doc_replicas, my_id) {
                wire.send(me, Kind::Copies, index[&to], traffic.copy_bytes);
            }
        }
    }
    let placement = Placement { per_chunk, cell_owners: cell_owner_count };
    figures(wire.sent(), &ids, grid.as_ref(), traffic, &nat, placement, seed)
}

/// What the cells' placement gave: cells a chunk is posted to, members owning a cell.
struct Placement {
    per_chunk: usize,
    cell_owners: usize,
}

/// A window's figures, from what its messages did.
fn figures(
    sent: Sent,
    ids: &[PeerId],
    grid: Option<&Grid<u32>>,
    traffic: &Traffic,
    nat: &Nat,
    placement: Placement,
    seed: u64,
) -> Figures {
    let Sent { design, pairs, load, events, messages, links, straight } = sent;
    let members = ids.len();
    let by_kind = pairs.iter().map(|s| Spread::of(degrees(members, &[s]))).collect();
    let all = degrees(members, &pairs.iter().collect::<Vec<_>>());
    let (over_64, over_256) = (share_over(&all, 64), share_over(&all, 256));
    let kb = |v: &[u64]| mean_p99(v.iter().map(|b| *b as f64 / traffic.window_secs / 1000.0).collect());
    let (up_kb, down_kb) = (kb(&load.up), kb(&load.down));
    let priced = handshakes::price(&events, design, traffic, nat, members);
    let relayed_share = load.relayed as f64 / load.sent.max(1) as f64;
    let public: Vec<u64> = (0..members).filter(|i| !nat.behind[*i]).map(|i| load.forwarded[i]).collect();
    let relay_kb = kb(&public);
    let relay_circuits = {
        let mut per = vec![0usize; members];
        load.circuits.iter().for_each(|(r, _)| per[*r as usize] += 1);
        let public: Vec<usize> = (0..members).filter(|i| !nat.behind[*i]).map(|i| per[i]).collect();
        let mean = public.iter().sum::<usize>() as f64 / public.len().max(1) as f64;
        (mean, public.iter().copied().max().unwrap_or(0))
    };
    let neighbours =
        grid.map_or(Spread::default(), |g| Spread::of((0..members as u32).map(|a| g.neighbours(a).len()).collect()));
    let (held, held_grid_view) = (
        held::held(&pairs, grid, ids, ViewFrom::Random, seed),
        held::held(&pairs, grid, ids, ViewFrom::GridLinks, seed),
    );
    let by_rank = grid.map_or(ByRank::default(), |g| ranks::by_rank(g, &load, traffic.window_secs));
    let join_churn = grid.map_or(JoinChurn::default(), |g| ranks::join_churn(g.shape(), ids, JOINS, seed));
    Figures {
        members,
        design,
        held,
        by_rank,
        join_churn,
        held_grid_view,
        hops: links as f64 / messages.max(1) as f64,
        straight: straight as f64 / messages.max(1) as f64,
        neighbours,
        opens_per_sec: priced.opens_per_sec,
        handshake_kb: priced.handshake_kb,
        circuit_opens_per_sec: priced.circuit_opens_per_sec,
        punches_per_sec: priced.punches_per_sec,
        failed_punches_per_sec: priced.failed_punches_per_sec,
        relayed_share,
        relay_kb,
        relay_circuits,
        up_kb,
        down_kb,
        traffic: traffic.clone(),
        cells_per_chunk: placement.per_chunk,
        cell_owners: placement.cell_owners,
        by_kind,
        all: Spread::of(all),
        over_64,
        over_256,
    }
}

/// A member's identity, from the run's stream.
fn peer(rng: &mut Rng) -> PeerId {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next().to_le_bytes());
    }
    libp2p::identity::Keypair::ed25519_from_bytes(bytes).expect("32 bytes make an ed25519 key").public().to_peer_id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_traffic_meets_the_expected_number_of_peers() {
        // Copies alone go to random members: n sends from each of N members reach about
        // N·(1 − e^(−2n/N)) peers each, counting both directions.
        let traffic = Traffic { foreign_hosts: 0, posting: false, ..Traffic::default() };
        let f = run(400, &traffic, Design::Direct, 7);
        let sends = traffic.pages_per_sec * traffic.window_secs * traffic.doc_replicas as f64;
        let expected = 400.0 * (1.0 - (-2.0 * sends / 400.0).exp());
        let copies = f.by_kind[Kind::Copies as usize].mean;
        assert!((copies - expected).abs() < 0.05 * expected, "{copies} against {expected}");
        assert_eq!(f.by_kind[Kind::Urls as usize].max, 0);
    }

    #[test]
    fn a_popular_host_s_owner_hears_from_most_members() {
        // Two pages a member, 24 links: the most linked host is among them for ~82% of the
        // members (1 − (1 − 1/H(10⁶))²⁴), and its owner hears from all of those.
        let traffic = Traffic { pages_per_sec: 0.1, posting: false, ..Traffic::default() };
        let f = run(300, &traffic, Design::Direct, 3);
        let urls = f.by_kind[Kind::Urls as usize];
        assert!(urls.max as f64 > 0.7 * 299.0, "{urls:?}");
        assert!(urls.mean < urls.max as f64 / 3.0, "{urls:?}");
    }

    #[test]
    fn connections_closed_soon_after_use_hold_the_window_s_share_of_the_pairs_and_carry_the_same_bytes() {
        let traffic = Traffic::default();
        let direct = run(1000, &traffic, Design::Direct, 9);
        let brief = run(1000, &traffic, Design::Brief { secs: 1.0, url_linger: None }, 9);
        // A twentieth of the window: about a twentieth of the pairs are held at its end (a pair
        // that talks often is held more often than its share).
        let share = brief.all.mean / direct.all.mean;
        assert!(share > 1.0 / 20.0 && share < 3.0 / 20.0, "{share}");
        assert_eq!((brief.up_kb, brief.hops), (direct.up_kb, direct.hops));
        let whole = run(1000, &traffic, Design::Brief { secs: traffic.window_secs, url_linger: None }, 9);
        assert_eq!(whole.all, direct.all);
        // URLs sent in a batch a minute to each owner: the popular hosts' owners, who hear
        // from most members, hold far fewer at a moment.
        let batched = run(1000, &traffic, Design::Brief { secs: 1.0, url_linger: Some(60.0) }, 9);
        let (u, b) = (brief.by_kind[Kind::Urls as usize], batched.by_kind[Kind::Urls as usize]);
        assert!(b.max * 2 < u.max, "{b:?} against {u:?}");
        assert_eq!(batched.up_kb, brief.up_kb);
    }

    #[test]
    fn over_a_grid_a_member_s_connections_are_its_neighbours_however_much_it_sends() {
        let traffic = Traffic { pages_per_sec: 2.0, ..Traffic::default() };
        let f = run(1000, &traffic, Design::Grid { dims: 3, per_bucket: 2.0 }, 2);
        // A side of 8, ~1.95 members a bucket (Poisson): its bucket-mates, and one link into
        // each of the 3·(side − 1) = 21 buckets one coordinate away holding more members than
        // its rank — about 14.8 (see `weft_p2p::grid`'s tests).
        assert!((f.neighbours.mean - 14.8).abs() < 1.5, "{:?}", f.neighbours);
        assert!(f.all.max <= f.neighbours.max + 20, "{:?} against {:?}; {} straight", f.all, f.neighbours, f.straight);
        // Under three coordinates a message, and hops to bucket-mates with the links.
        assert!(f.hops > 1.5 && f.hops < 4.0, "{}", f.hops);
        let direct = run(1000, &traffic, Design::Direct, 2);
        assert!(direct.all.mean > 10.0 * f.all.mean, "{} against {}", direct.all.mean, f.all.mean);
    }

    #[test]
    fn every_byte_sent_is_received_and_a_grid_carries_each_over_its_hops() {
        let traffic = Traffic::default();
        let direct = run(500, &traffic, Design::Direct, 4);
        assert!((direct.up_kb.0 - direct.down_kb.0).abs() < 1e-6 * direct.up_kb.0);
        let grid = run(500, &traffic, Design::Grid { dims: 3, per_bucket: 1.5 }, 4);
        assert!((grid.up_kb.0 - grid.down_kb.0).abs() < 1e-6 * grid.up_kb.0);
        // The same traffic (same seed) over more links: about `hops` times the bytes.
        let ratio = grid.up_kb.0 / direct.up_kb.0;
        assert!(ratio > 1.5 && ratio < grid.hops + 0.5, "{ratio} for {} hops", grid.hops);
    }

    #[test]
    fn a_hybrid_sends_its_bulk_straight_and_holds_those_connections_briefly() {
        let traffic = Traffic::default();
        let grid = run(1000, &traffic, Design::Grid { dims: 3, per_bucket: 2.0 }, 6);
        let hybrid_design =
            Design::Hybrid { dims: 3, per_bucket: 2.0, bulk_secs: 2.0, nat_over_grid: false, records_over_grid: true };
        let hybrid = run(1000, &traffic, hybrid_design, 6);
        // The same small messages over the same grid; the bulk takes no hop.
        let (a, b) = (grid.by_kind[Kind::Urls as usize].mean, hybrid.by_kind[Kind::Urls as usize].mean);
        assert!((a - b).abs() < 0.02 * a, "{a} against {b}");
        assert!(hybrid.up_kb.0 < 0.6 * grid.up_kb.0, "{:?} against {:?}", hybrid.up_kb, grid.up_kb);
        // A tenth of the window's copies hold a connection at a time.
        let direct = run(1000, &traffic, Design::Direct, 6);
        let (held, all) = (hybrid.by_kind[Kind::Copies as usize].mean, direct.by_kind[Kind::Copies as usize].mean);
        assert!(held > 0.05 * all && held < 0.2 * all, "{held} of {all}");
        // With records straight too, their connections are held as briefly as the copies'.
        let urls_only =
            Design::Hybrid { dims: 3, per_bucket: 2.0, bulk_secs: 2.0, nat_over_grid: false, records_over_grid: false };
        let urls_only = run(1000, &traffic, urls_only, 6);
        let records = |f: &Figures| f.by_kind[Kind::Records as usize].mean;
        let (straight, all) = (records(&urls_only), records(&direct));
        assert!(straight > 0.05 * all && straight < 0.2 * all, "{straight} of {all}");
        // The URLs' paths draw from the stream the records' paths draw from too.
        let (a, b) = (urls_only.by_kind[Kind::Urls as usize].mean, hybrid.by_kind[Kind::Urls as usize].mean);
        assert!((a - b).abs() < 0.01 * a, "{a} against {b}");
    }

    #[test]
    fn every_connection_opened_between_two_members_behind_nat_is_a_punch() {
        let none = run(300, &Traffic { nat_share: 0.0, ..Traffic::default() }, Design::Direct, 8);
        assert_eq!(none.punches_per_sec, 0.0);
        let all = run(300, &Traffic { nat_share: 1.0, ..Traffic::default() }, Design::Direct, 8);
        assert!(all.punches_per_sec > 0.0);
        assert!(
            (all.punches_per_sec - all.opens_per_sec.0).abs() < 1e-9,
            "{} against {:?}",
            all.punches_per_sec,
            all.opens_per_sec
        );
        let grid =
            run(300, &Traffic { nat_share: 1.0, ..Traffic::default() }, Design::Grid { dims: 3, per_bucket: 2.0 }, 8);
        assert_eq!(grid.punches_per_sec, 0.0, "a grid's links are kept");
    }

    #[test]
    fn a_connection_closed_soon_after_use_is_opened_again_by_the_next_message() {
        // Copies and records alone: a page's 3 copies and its 4 keys' 3 owners each go to ~15
        // members, so a member opens ~15 connections a second and accepts ~15 (a little fewer:
        // a page's messages to one member share one).
        let copies = Traffic { foreign_hosts: 0, posting: false, nat_share: 0.0, ..Traffic::default() };
        let at_once = run(400, &copies, Design::Brief { secs: 0.01, url_linger: None }, 3);
        let sends = (copies.doc_replicas + 4 * weft_p2p::records::RECORD_OWNERS) as f64 * 2.0;
        let o = at_once.opens_per_sec.0;
        assert!(o <= sends && o > 0.95 * sends, "{:?} against {sends}", at_once.opens_per_sec);
        let kb = at_once.opens_per_sec.0 * HANDSHAKE_BYTES as f64 / 1000.0;
        assert!((at_once.handshake_kb.0 - kb).abs() < 1e-9, "{:?} against {kb}", at_once.handshake_kb);
        assert_eq!(at_once.punches_per_sec, 0.0);
        // Kept 20 s, a pair that talks again within them reuses its connection.
        let kept = run(400, &copies, Design::Direct, 3);
        assert!(kept.opens_per_sec.0 < at_once.opens_per_sec.0, "{:?}", kept.opens_per_sec);
        // A member's URL batches open at most one connection a pair every linger.
        let urls = Traffic { posting: false, doc_replicas: 0, nat_share: 0.0, ..Traffic::default() };
        let batched = run(400, &urls, Design::Brief { secs: 0.5, url_linger: Some(60.0) }, 3);
        let each = run(400, &urls, Design::Brief { secs: 0.5, url_linger: None }, 3);
        assert!(
            batched.opens_per_sec.0 < each.opens_per_sec.0,
            "{:?} against {:?}",
            batched.opens_per_sec,
            each.opens_per_sec
        );
        // Over a grid, links are kept.
        let grid = run(400, &Traffic::default(), Design::Grid { dims: 3, per_bucket: 2.0 }, 3);
        assert_eq!((grid.opens_per_sec.0, grid.handshake_kb.0), (0.0, 0.0));
    }

    #[test]
    fn failed_punches_talk_through_a_relay_and_the_relays_carry_their_bytes() {
        let sure = run(400, &Traffic { punch_success: 1.0, ..Traffic::default() }, Design::Direct, 5);
        assert_eq!((sure.failed_punches_per_sec, sure.relayed_share, sure.relay_kb.0), (0.0, 0.0, 0.0));
        let never = run(400, &Traffic { punch_success: 0.0, ..Traffic::default() }, Design::Direct, 5);
        assert_eq!(never.failed_punches_per_sec, never.punches_per_sec);
        // Bytes between two members behind NAT: about 0.6² of them, all relayed.
        assert!((never.relayed_share - 0.36).abs() < 0.08, "{}", never.relayed_share);
        // Every relayed byte is received and sent on by a public member (0.4 of them).
        let expected = never.relayed_share * never.up_kb.0 / (1.0 + never.relayed_share) / 0.4;
        assert!((never.relay_kb.0 - expected).abs() < 0.15 * expected, "{:?} against {expected}", never.relay_kb);
        assert!((never.up_kb.0 - never.down_kb.0).abs() < 1e-6 * never.up_kb.0);
        // Each failed pair holds a circuit on a relay: ~0.6² of the connections.
        let circuits = never.relay_circuits.0 * 0.4 * 400.0;
        let expected = 0.36 * never.all.mean * 400.0 / 2.0;
        assert!((circuits - expected).abs() < 0.2 * expected, "{circuits} against {expected}");
        let usual = run(400, &Traffic::default(), Design::Direct, 5);
        let failed = usual.failed_punches_per_sec / usual.punches_per_sec;
        assert!((failed - 0.3).abs() < 0.05, "{failed}");
    }

    #[test]
    fn a_hybrid_can_keep_its_bulk_off_punches_by_sending_it_over_the_grid() {
        let traffic = Traffic::default();
        let straight =
            Design::Hybrid { dims: 3, per_bucket: 1.5, bulk_secs: 1.0, nat_over_grid: false, records_over_grid: true };
        let over_grid =
            Design::Hybrid { dims: 3, per_bucket: 1.5, bulk_secs: 1.0, nat_over_grid: true, records_over_grid: true };
        let (a, b) = (run(600, &traffic, straight, 3), run(600, &traffic, over_grid, 3));
        assert!(a.punches_per_sec > 1.0, "{}", a.punches_per_sec);
        assert_eq!(b.punches_per_sec, 0.0);
        // The grid's links between two members behind NAT whose punch failed are relayed too.
        assert!(b.relayed_share > 0.0 && b.hops > a.hops, "{} {} {}", b.relayed_share, b.hops, a.hops);
    }

    #[test]
    fn a_second_holder_of_each_host_s_urls_adds_their_bytes_once_more() {
        let only_urls = Traffic { posting: false, doc_replicas: 0, ..Traffic::default() };
        let one = run(300, &only_urls, Design::Direct, 4);
        let two = run(300, &Traffic { url_holders: 2, ..only_urls.clone() }, Design::Direct, 4);
        let (urls, records) = (one.by_kind[Kind::Urls as usize], one.by_kind[Kind::Records as usize]);
        assert!(urls.mean > 0.0 && two.by_kind[Kind::Urls as usize].mean > urls.mean, "{urls:?}");
        // URLs are ~180 bytes a linked host, records 16 × 130 a page: twice the URLs adds theirs.
        let url_kb = 12.0 * 180.0 / 1000.0;
        assert!((two.up_kb.0 - one.up_kb.0 - url_kb).abs() < 0.25 * url_kb, "{} {}", one.up_kb.0, two.up_kb.0);
        assert!(records.mean > 0.0);
    }

    #[test]
    fn a_run_is_the_same_from_the_same_seed() {
        let design =
            Design::Hybrid { dims: 3, per_bucket: 1.0, bulk_secs: 1.0, nat_over_grid: false, records_over_grid: true };
        let (a, b) = (run(400, &Traffic::default(), design, 9), run(400, &Traffic::default(), design, 9));
        assert_eq!((a.by_kind, a.all, a.hops, a.up_kb), (b.by_kind, b.all, b.hops, b.up_kb));
    }
}
