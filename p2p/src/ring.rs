//! Who crawls which host: a consistent hash ring over the network's members.
//!
//! Every member is placed on a 64-bit ring at `vnodes` points, the first 8 bytes of
//! `blake3("<peer id>:<i>")` for `i` in `0..vnodes`; a host belongs to the member of the first
//! point clockwise from `blake3(host)`. Nothing but the member set goes in, so every node that
//! knows the same members computes the same owner for every host — no coordination needed. When
//! a member joins it takes over the arcs just before its points (about 1/N of all hosts); when
//! one leaves, its arcs fall to the next points clockwise, spread over many members thanks to
//! the virtual nodes.
//!
//! A member may hold fewer than `vnodes` points (a newcomer being admitted gradually: see
//! `crate::membership`); its points are then the first ones of its full set, so a member
//! growing only takes arcs over, and every node that agrees on the counts agrees on the ring.

use libp2p::PeerId;

/// Virtual nodes per member unless configured otherwise.
pub const DEFAULT_VNODES: usize = 150;

/// The ring of one member set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    /// (point, index into `members`), sorted by point.
    points: Vec<(u64, u32)>,
    /// Members, sorted (so the ring does not depend on the order they were learned in).
    members: Vec<PeerId>,
    /// Points of each member (same order), at most `vnodes`.
    counts: Vec<usize>,
    vnodes: usize,
}

fn point(bytes: &[u8]) -> u64 {
    let hash = blake3::hash(bytes);
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_be_bytes(first)
}

/// Where `host` sits on the ring.
pub fn host_point(host: &str) -> u64 {
    point(host.as_bytes())
}

impl Ring {
    /// This ring without `member` (what the others use while it is away).
    pub fn without(&self, member: &PeerId) -> Ring {
        let rest = self.members.iter().zip(&self.counts).filter(|(m, _)| *m != member);
        Ring::weighted(rest.map(|(m, c)| (*m, *c)), self.vnodes)
    }

    /// The ring of `members` with `vnodes` points each. A member's points hash its base58 form.
    pub fn new(members: impl IntoIterator<Item = PeerId>, vnodes: usize) -> Ring {
        Ring::weighted(members.into_iter().map(|m| (m, vnodes)), vnodes)
    }

    /// The ring of `members`, each with the given number of its points (at least one, at most
    /// `vnodes`; a member listed twice keeps its first count).
    pub fn weighted(members: impl IntoIterator<Item = (PeerId, usize)>, vnodes: usize) -> Ring {
        let vnodes = vnodes.max(1);
        let (members, counts) = Ring::sorted(members, vnodes);
        let mut points = Vec::with_capacity(counts.iter().sum());
        for (m, (member, count)) in members.iter().zip(&counts).enumerate() {
            Ring::points_from(member, m as u32, 0, *count, &mut points);
        }
        // Ties (astronomically unlikely) are broken by member order, the same everywhere.
        points.sort_unstable();
        Ring { points, members, counts, vnodes }
    }

    /// `members` sorted, each listed once (its first count kept), with its points' count
    /// clamped to `1..=vnodes`.
    fn sorted(members: impl IntoIterator<Item = (PeerId, usize)>, vnodes: usize) -> (Vec<PeerId>, Vec<usize>) {
        let mut sorted: Vec<(PeerId, usize)> = members.into_iter().collect();
        sorted.sort_by_key(|a| a.0);
        sorted.dedup_by(|later, first| later.0 == first.0);
        let counts = sorted.iter().map(|(_, c)| (*c).clamp(1, vnodes)).collect();
        (sorted.into_iter().map(|(m, _)| m).collect(), counts)
    }

    /// The points of `member`'s first `count` (from `from` on), with index `m`.
    fn points_from(member: &PeerId, m: u32, from: usize, count: usize, out: &mut Vec<(u64, u32)>) {
        // The peer id's base58 form once per member, not per point: encoding it is most of a
        // point's cost.
        let mut name = format!("{member}:").into_bytes();
        let base = name.len();
        for i in from..count {
            name.truncate(base);
            name.extend_from_slice(i.to_string().as_bytes());
            out.push((point(&name), m));
        }
    }

    /// The ring of `members` (as [`Ring::weighted`], with this ring's `vnodes`), made from this
    /// one: only the points of members that came, left or changed their count are hashed or
    /// dropped, and the rest are merged as they stand. The same ring as built from nothing, at a
    /// fraction of the cost when few members changed — every member rebuilds its ring at every
    /// change of the member set, and a ring of 10,000 members holds 1.5 million points.
    pub fn rebuilt(&self, members: impl IntoIterator<Item = (PeerId, usize)>) -> Ring {
        let vnodes = self.vnodes;
        let (members, counts) = Ring::sorted(members, vnodes);
        // Each old member's index on the new ring and how many of its points stay.
        let mut keep: Vec<(u32, usize)> = vec![(u32::MAX, 0); self.members.len()];
        let mut added = Vec::new();
        for (m, (member, count)) in members.iter().zip(&counts).enumerate() {
            let had = match self.members.binary_search(member) {
                Ok(old) => {
                    keep[old] = (m as u32, self.counts[old].min(*count));
                    self.counts[old]
                }
                Err(_) => 0,
            };
            if *count > had {
                Ring::points_from(member, m as u32, had, *count, &mut added);
            }
        }
        added.sort_unstable();
        // A point's place in its member's list is not stored; the points that stay of a member
        // that shrank are found again by hashing them (shrinking is rare: a claim moved later).
        let mut stays: Option<std::collections::HashSet<u64>> = None;
        if keep.iter().zip(&self.counts).any(|((new, kept), had)| *new != u32::MAX && kept < had) {
            let mut set = Vec::new();
            for (old, (new, kept)) in keep.iter().enumerate() {
                if *new != u32::MAX && *kept < self.counts[old] {
                    Ring::points_from(&self.members[old], *new, 0, *kept, &mut set);
                }
            }
            stays = Some(set.into_iter().map(|(q, _)| q).collect());
        }
        let old_points = self.points.iter().filter_map(|&(q, old)| {
            let (new, kept) = keep[old as usize];
            let whole = kept == self.counts[old as usize];
            let stays = new != u32::MAX && (whole || stays.as_ref().is_some_and(|s| s.contains(&q)));
            stays.then_some((q, new))
        });
        let mut points = Vec::with_capacity(counts.iter().sum());
        let mut added = added.into_iter().peekable();
        for p in old_points {
            while let Some(a) = added.next_if(|a| *a < p) {
                points.push(a);
            }
            points.push(p);
        }
        points.extend(added);
        Ring { points, members, counts, vnodes }
    }

    /// The points `member` holds (0 if it is not a member).
    pub fn points_of(&self, member: &PeerId) -> usize {
        self.members.binary_search(member).map_or(0, |i| self.counts[i])
    }

    pub fn members(&self) -> &[PeerId] {
        &self.members
    }

    pub fn vnodes(&self) -> usize {
        self.vnodes
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub fn contains(&self, member: &PeerId) -> bool {
        self.members.binary_search(member).is_ok()
    }

    /// The member that owns `host`, a host name ([`weft_url::HostKey::name`]); `None` on
    /// an empty ring.
    pub fn owner(&self, host: &str) -> Option<&PeerId> {
        self.owner_of_point(host_point(host))
    }

    /// The member owning position `p`: the first point at or after it, wrapping around.
    pub fn owner_of_point(&self, p: u64) -> Option<&PeerId> {
        if self.points.is_empty() {
            return None;
        }
        let i = self.points.partition_point(|&(q, _)| q < p);
        let (_, m) = self.points[if i == self.points.len() { 0 } else { i }];
        Some(&self.members[m as usize])
    }

    /// The first `r` distinct members clockwise from position `p` (fewer on a ring of fewer
    /// members): the owner of `p` and its successors, the replicas of whatever sits at `p`.
    /// When the owner leaves, the second becomes the owner and a new `r`-th joins the list,
    /// so a replica set changes by one member per membership change.
    pub fn owners_of_point(&self, p: u64, r: usize) -> Vec<PeerId> {
        let mut out: Vec<PeerId> = Vec::with_capacity(r);
        if self.points.is_empty() {
            return out;
        }
        let start = self.points.partition_point(|&(q, _)| q < p);
        for k in 0..self.points.len() {
            if out.len() == r.min(self.members.len()) {
                break;
            }
            let (_, m) = self.points[(start + k) % self.points.len()];
            let member = self.members[m as usize];
            if !out.contains(&member) {
                out.push(member);
            }
        }
        out
    }

    /// The members that share some position's `r` owners with `member` (each arc of the ring
    /// has one owner set; these are the others in the sets `member` is in), sorted: whom it
    /// compares what it holds with, since they hold copies of the same ids.
    pub fn co_owners(&self, member: &PeerId, r: usize) -> Vec<PeerId> {
        let mut out = std::collections::BTreeSet::new();
        if self.contains(member) {
            for i in 0..self.points.len() {
                // The arc ending at point `i` has the owners from `i` on.
                let owners = self.owners_of_point(self.points[i].0, r);
                if owners.contains(member) {
                    out.extend(owners.into_iter().filter(|o| o != member));
                }
            }
        }
        out.into_iter().collect()
    }

    /// The fraction of the ring's hash space `member` owns (0 if it is not a member).
    pub fn share(&self, member: &PeerId) -> f64 {
        let Ok(m) = self.members.binary_search(member) else { return 0.0 };
        let n = self.points.len();
        let mut owned: u128 = 0;
        for (i, &(q, owner)) in self.points.iter().enumerate() {
            if owner as usize != m {
                continue;
            }
            // The arc ending at this point starts just after the previous point.
            let prev = if i == 0 { self.points[n - 1].0 } else { self.points[i - 1].0 };
            owned += u128::from(q.wrapping_sub(prev));
        }
        if n == 1 {
            return 1.0;
        }
        owned as f64 / (u64::MAX as f64 + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(n: usize) -> Vec<PeerId> {
        (0..n).map(|_| PeerId::random()).collect()
    }

    #[test]
    fn a_ring_rebuilt_from_another_is_the_ring_built_from_nothing() {
        let ms = members(40);
        let mut ring = Ring::weighted(ms[..20].iter().map(|m| (*m, 150)), 150);
        // Members come, leave, grow and shrink (a claim moved later), several at once.
        let steps: Vec<Vec<(PeerId, usize)>> = vec![
            ms[..21].iter().map(|m| (*m, 150)).collect(),
            ms[1..21].iter().map(|m| (*m, 150)).collect(),
            ms[1..25].iter().enumerate().map(|(i, m)| (*m, if i % 3 == 0 { 38 } else { 150 })).collect(),
            ms[1..25].iter().enumerate().map(|(i, m)| (*m, if i % 3 == 0 { 75 } else { 150 })).collect(),
            ms[5..40].iter().enumerate().map(|(i, m)| (*m, if i % 2 == 0 { 20 } else { 150 })).collect(),
            ms[5..40].iter().map(|m| (*m, 150)).collect(),
            vec![(ms[7], 150)],
            vec![],
            ms[..3].iter().map(|m| (*m, 400)).collect(),
        ];
        for step in steps {
            let fresh = Ring::weighted(step.clone(), 150);
            ring = ring.rebuilt(step);
            assert_eq!(ring, fresh);
        }
    }

    #[test]
    fn replicas_are_the_owner_and_its_distinct_successors() {
        let ms = members(10);
        let ring = Ring::new(ms.clone(), 150);
        for p in [0u64, 1 << 20, u64::MAX / 3, u64::MAX] {
            let owners = ring.owners_of_point(p, 3);
            assert_eq!(owners.len(), 3);
            assert_eq!(Some(&owners[0]), ring.owner_of_point(p));
            assert!(owners[1] != owners[0] && owners[2] != owners[0] && owners[2] != owners[1]);
            // The owner gone, the second takes over and the third stays a replica.
            let without = ring.without(&owners[0]);
            assert_eq!(without.owners_of_point(p, 2), owners[1..].to_vec());
        }
        assert_eq!(Ring::new(ms[..2].to_vec(), 150).owners_of_point(7, 3).len(), 2, "two members, two replicas");
        assert!(Ring::new([], 150).owners_of_point(7, 3).is_empty());
    }

    #[test]
    fn co_owners_are_exactly_the_members_sharing_an_owner_set() {
        let ms = members(12);
        let ring = Ring::new(ms.clone(), 8);
        for m in &ms {
            let co = ring.co_owners(m, 3);
            assert!(!co.contains(m) && !co.is_empty());
            // Sampled positions: whoever shares an owner set with `m` is listed.
            for k in 0..20_000u64 {
                let owners = ring.owners_of_point(k.wrapping_mul(0x9E37_79B9_7F4A_7C15), 3);
                if owners.contains(m) {
                    assert!(owners.iter().all(|o| o == m || co.contains(o)));
                }
            }
        }
        assert!(ring.co_owners(&PeerId::random(), 3).is_empty(), "not a member");
        assert_eq!(ring.co_owners(&ms[0], 1), Vec::<PeerId>::new(), "one owner each: nobody shares");
    }

    #[test]
    fn an_empty_ring_owns_nothing_and_one_member_owns_everything() {
        assert_eq!(Ring::new([], 150).owner("a.test"), None);
        let solo = PeerId::random();
        let r = Ring::new([solo], 150);
        assert_eq!(r.owner("a.test"), Some(&solo));
        assert!((r.share(&solo) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_member_with_fewer_points_holds_a_part_of_its_full_share_and_growing_only_takes_arcs() {
        let m = members(10);
        let full = Ring::new(m.iter().copied(), 150);
        let weighted = |k: usize| Ring::weighted(m.iter().map(|p| (*p, if *p == m[0] { k } else { 150 })), 150);
        assert_eq!(weighted(150), full, "full counts are the plain ring");
        let (quarter, half) = (weighted(38), weighted(75));
        assert_eq!(quarter.points_of(&m[0]), 38);
        let s = |r: &Ring| r.share(&m[0]);
        assert!(s(&quarter) < s(&half) && s(&half) < s(&full), "{} {} {}", s(&quarter), s(&half), s(&full));
        assert!((s(&quarter) / s(&full) - 0.25).abs() < 0.15, "{} of {}", s(&quarter), s(&full));
        // Growing moves hosts only to the member that grows.
        for i in 0..5000 {
            let host = format!("h{i}.test");
            let (before, after) = (quarter.owner(&host).unwrap(), half.owner(&host).unwrap());
            assert!(before == after || *after == m[0], "{host} moved between two other members");
        }
        // Counts survive `without`, and are bounded.
        assert_eq!(quarter.without(&m[1]).points_of(&m[0]), 38);
        assert_eq!(Ring::weighted([(m[0], 0), (m[1], 999)], 150).points_of(&m[0]), 1);
        assert_eq!(Ring::weighted([(m[0], 0), (m[1], 999)], 150).points_of(&m[1]), 150);
    }

    #[test]
    fn the_owner_does_not_depend_on_the_order_members_were_learned_in() {
        let m = members(7);
        let mut reversed = m.clone();
        reversed.reverse();
        let (a, b) = (Ring::new(m, 150), Ring::new(reversed, 150));
        assert_eq!(a, b);
        for h in 0..1000 {
            let host = format!("host{h}.test");
            assert_eq!(a.owner(&host), b.owner(&host));
        }
    }

    #[test]
    fn shares_sum_to_one_and_match_the_hosts_owned() {
        let r = Ring::new(members(10), 150);
        let total: f64 = r.members().iter().map(|m| r.share(m)).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let mut counts = std::collections::HashMap::new();
        for h in 0..20_000 {
            *counts.entry(*r.owner(&format!("h{h}.test")).unwrap()).or_insert(0usize) += 1;
        }
        for m in r.members() {
            let observed = counts[m] as f64 / 20_000.0;
            assert!((observed - r.share(m)).abs() < 0.02, "{m}: {observed} vs {}", r.share(m));
        }
    }

    #[test]
    fn a_join_moves_hosts_only_to_the_newcomer_and_a_leave_only_from_the_leaver() {
        let ten = members(10);
        let before = Ring::new(ten.clone(), 150);
        let newcomer = PeerId::random();
        let after = Ring::new(ten.into_iter().chain([newcomer]), 150);
        let mut moved = 0;
        for h in 0..10_000 {
            let host = format!("h{h}.test");
            let (a, b) = (before.owner(&host).unwrap(), after.owner(&host).unwrap());
            if a != b {
                assert_eq!(b, &newcomer);
                moved += 1;
            }
        }
        let share = moved as f64 / 10_000.0;
        assert!((share - 1.0 / 11.0).abs() < 0.03, "{share}");
        // Leaving is the same move backwards.
        for h in 0..10_000 {
            let host = format!("h{h}.test");
            let (a, b) = (after.owner(&host).unwrap(), before.owner(&host).unwrap());
            assert!(a == b || a == &newcomer);
        }
        assert_eq!(after.without(&newcomer), before);
    }

    #[test]
    fn the_point_is_blake3_of_peer_and_index() {
        let p = PeerId::random();
        let r = Ring::new([p], 1);
        let expected =
            u64::from_be_bytes(blake3::hash(format!("{p}:0").as_bytes()).as_bytes()[..8].try_into().unwrap());
        assert_eq!(r.points, vec![(expected, 0)]);
        // A host just at or before the point is owned by it; the ring wraps after the last point.
        assert_eq!(r.owner_of_point(expected), Some(&p));
        assert_eq!(r.owner_of_point(expected.wrapping_add(1)), Some(&p));
    }
}
