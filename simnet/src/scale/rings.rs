//! Comparing members' rings: on how many hosts two members name different owners, and how
//! many owners a member names that are gone.

use weft_p2p::{PeerId, Ring};

/// What a set of rings says about the same hosts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    /// The share of hosts two rings give different owners, over every pair of rings.
    pub disagreement: f64,
    /// The share of (ring, host) whose owner is not `online`.
    pub owner_gone: f64,
}

/// Compares `rings` on `hosts`; `None` for fewer than two rings or no hosts.
pub fn compare(rings: &[&Ring], hosts: &[String], online: impl Fn(&PeerId) -> bool) -> Option<Comparison> {
    if rings.len() < 2 || hosts.is_empty() {
        return None;
    }
    let owners: Vec<Vec<Option<PeerId>>> =
        rings.iter().map(|r| hosts.iter().map(|h| r.owner(h).copied()).collect()).collect();
    let (mut differ, mut pairs) = (0u64, 0u64);
    for a in 0..owners.len() {
        for b in a + 1..owners.len() {
            differ += owners[a].iter().zip(&owners[b]).filter(|(x, y)| x != y).count() as u64;
            pairs += hosts.len() as u64;
        }
    }
    let gone = owners.iter().flatten().filter(|o| o.is_none_or(|p| !online(&p))).count();
    Some(Comparison {
        disagreement: differ as f64 / pairs as f64,
        owner_gone: gone as f64 / (owners.len() * hosts.len()) as f64,
    })
}

/// The share of `hosts` whose owner on `ring` is not their owner on `truth`.
pub fn misrouted(ring: &Ring, truth: &Ring, hosts: &[String]) -> f64 {
    let wrong = hosts.iter().filter(|h| ring.owner(h) != truth.owner(h)).count();
    wrong as f64 / hosts.len().max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_of_different_members_disagree_on_the_hosts_that_moved() {
        let ms: Vec<PeerId> = (0..10).map(|_| PeerId::random()).collect();
        let all = Ring::new(ms.clone(), 150);
        let fewer = all.without(&ms[0]);
        let hosts: Vec<String> = (0..2000).map(|i| format!("h{i}.test")).collect();
        let same = compare(&[&all, &all], &hosts, |_| true).unwrap();
        assert_eq!(same, Comparison { disagreement: 0.0, owner_gone: 0.0 });
        // One member of ten missing from one ring: its hosts (about a tenth) moved.
        let apart = compare(&[&all, &fewer], &hosts, |p| *p != ms[0]).unwrap();
        assert!((0.05..0.16).contains(&apart.disagreement), "{apart:?}");
        // The full ring names the gone member for those hosts; the other ring never does.
        assert!((apart.owner_gone - apart.disagreement / 2.0).abs() < 1e-9, "{apart:?}");
        assert_eq!(compare(&[&all], &hosts, |_| true), None);
        assert_eq!(misrouted(&all, &all, &hosts), 0.0);
        assert!((misrouted(&fewer, &all, &hosts) - apart.disagreement).abs() < 1e-9);
    }
}
