//! Ring balance: max/mean hosts per member for 100k hosts at 10, 50 and 100 members, and the
//! share of hosts that move when one member joins, for several vnode counts. Each figure is
//! the median (and worst) of 9 member sets with different peer ids.
//!
//! ```sh
//! cargo run --release -p weft-p2p --example ring_balance
//! ```

use libp2p::identity::Keypair;
use libp2p::PeerId;
use std::collections::HashMap;
use weft_p2p::Ring;

const HOSTS: usize = 100_000;
const TRIALS: u64 = 9;

/// Peer-id-like strings (libp2p ed25519 ids start with 12D3KooW), distinct per trial.
/// Member ids, the same for a trial on every run: ed25519 keys from seeded bytes.
fn members(n: usize, trial: u64) -> Vec<PeerId> {
    (0..n)
        .map(|i| {
            let seed = *blake3::hash(format!("{trial}/{i}").as_bytes()).as_bytes();
            Keypair::ed25519_from_bytes(seed).expect("32 bytes").public().to_peer_id()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let hosts: Vec<String> = (0..HOSTS).map(|i| format!("www.site{i}.example")).collect();
    println!("{HOSTS} hosts, median (worst) of {TRIALS} member sets\n");
    println!("{:>7} {:>7} {:>22} {:>26}", "members", "vnodes", "max/mean hosts", "moved on one join (1/N+1)");
    for vnodes in [50, 150, 500] {
        for n in [10usize, 50, 100] {
            let (mut ratios, mut moved) = (Vec::new(), Vec::new());
            for trial in 0..TRIALS {
                let m = members(n + 1, trial);
                let ring = Ring::new(m[..n].iter().cloned(), vnodes);
                let grown = Ring::new(m.iter().cloned(), vnodes);
                let mut counts: HashMap<&PeerId, usize> = HashMap::new();
                let mut changed = 0;
                for h in &hosts {
                    let owner = ring.owner(h).unwrap();
                    *counts.entry(owner).or_insert(0) += 1;
                    if grown.owner(h).unwrap() != owner {
                        changed += 1;
                    }
                }
                let max = *counts.values().max().unwrap() as f64;
                ratios.push(max / (HOSTS as f64 / n as f64));
                moved.push(changed as f64 / HOSTS as f64);
            }
            let worst_ratio = ratios.iter().cloned().fold(0.0, f64::max);
            let worst_moved = moved.iter().map(|m| (m * (n + 1) as f64 - 1.0).abs()).fold(0.0, f64::max);
            println!(
                "{n:>7} {vnodes:>7} {:>14.3} ({worst_ratio:.3}) {:>12.4} ({:.4}, {:+.0}% worst off)",
                median(ratios),
                median(moved.clone()),
                1.0 / (n + 1) as f64,
                worst_moved * 100.0
            );
        }
    }
}
