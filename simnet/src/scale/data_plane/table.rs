//! A model run's figures as a Markdown table.

use super::{Figures, Held, Kind};

/// Connections held in all: mean, 99th percentile, most, and the share over 64.
fn held(h: &Held) -> String {
    format!("{:.0}, {}, {}, {:.1}%", h.spread.mean, h.spread.p99, h.spread.max, 100.0 * h.over_64)
}

/// Uplink by rank: the mean (99th percentile) of each rank's members.
fn by_rank(f: &Figures) -> String {
    let ranks: Vec<String> = f.by_rank.up_kb.iter().map(|(mean, p99)| format!("{mean:.0} ({p99:.0})")).collect();
    if ranks.is_empty() {
        "–".to_string()
    } else {
        ranks.join(", ")
    }
}

/// The rows of a Markdown table, one per run.
pub fn table(runs: &[Figures]) -> String {
    let mut out = String::from(
        "| design | members | pages/s | cells/chunk, cell owners | URLs | postings | records | copies | all: mean | p50 | p99 | max | > 64 | > 256 | hops | neighbours: mean, max | KB/s up: mean, p99 | down: mean, p99 | opens/s: mean, p99 | handshake KB/s: mean, p99 | punches/s | failed | circuits opened/s: mean, max | relayed | relay KB/s: mean, p99 | circuits: mean, max | held in all, view at random: mean, p99, max, > 64 | view among grid links | KB/s up by rank 0, 1, 2+: mean (p99) | a join: members changed, links opened |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for f in runs {
        let kind = |k: Kind| {
            let s = f.by_kind[k as usize];
            format!("{:.0} (max {})", s.mean, s.max)
        };
        out.push_str(&format!(
            "| {} | {} | {} | {}, {} | {} | {} | {} | {} | {:.0} | {} | {} | {} | {:.1}% | {:.1}% | {:.2} | {:.0}, {} | {:.0}, {:.0} | {:.0}, {:.0} | {:.1}, {:.1} | {:.1}, {:.1} | {:.1} | {:.1} | {:.2}, {:.1} | {:.1}% | {:.0}, {:.0} | {:.0}, {} | {} | {} | {} | {:.0}, {:.0} |\n",
            f.design,
            f.members,
            f.traffic.pages_per_sec,
            f.cells_per_chunk,
            f.cell_owners,
            kind(Kind::Urls),
            kind(Kind::Postings),
            kind(Kind::Records),
            kind(Kind::Copies),
            f.all.mean,
            f.all.p50,
            f.all.p99,
            f.all.max,
            100.0 * f.over_64,
            100.0 * f.over_256,
            f.hops,
            f.neighbours.mean,
            f.neighbours.max,
            f.up_kb.0,
            f.up_kb.1,
            f.down_kb.0,
            f.down_kb.1,
            f.opens_per_sec.0,
            f.opens_per_sec.1,
            f.handshake_kb.0,
            f.handshake_kb.1,
            f.punches_per_sec,
            f.failed_punches_per_sec,
            f.circuit_opens_per_sec.0,
            f.circuit_opens_per_sec.1,
            100.0 * f.relayed_share,
            f.relay_kb.0,
            f.relay_kb.1,
            f.relay_circuits.0,
            f.relay_circuits.1,
            held(&f.held),
            held(&f.held_grid_view),
            by_rank(f),
            f.join_churn.members_changed,
            f.join_churn.links_opened,
        ));
    }
    out
}
