//! `--climb FROM,TO`: a network growing from `FROM` to `TO` members over `--churn HOURS` (24
//! unless given), its postings climbing the codebook's ladder as the node climbs it.
//!
//! The node posts each chunk at every level a member counting a little more or fewer members
//! would ask at (`Ladder::posted_levels`), and when a ring change brings a level in, the holders
//! of the postings place them there (`Ladder::climbs`, `Ladder::placer`, the node's
//! `cell_levels`); questions go to the level the network's size calls for
//! (`Ladder::asked_level`). Here, minute by minute:
//!
//! - newcomers arrive evenly over the span (nobody leaves: the growth alone is measured;
//!   `--churn` measures comings and goings at a fixed size);
//! - at each ring change every cell of the levels taken hands its postings on as the node does
//!   (the first former owner still on the ring to each new owner), and for each level brought
//!   in, each chunk's placer places it there if it holds the chunk (else it waits for its
//!   crawler's weekly re-announce, modelled as in `--churn`);
//! - questions are asked at moments over the span at the level of the moment.
//!
//! Reported per moment: members, the level asked, recall@10; at the end, postings placed anew,
//! chunks no placer held, and the share of the asked level's postings on one of their owners.
//! The ladder is split from 256 cells trained on the training half of the hosts (as `--ladder`),
//! `--ladder DEPTH` levels deep (4 unless given; `--ladder 0` is the fixed codebook of before);
//! `--held H` (one value) aims at another share of cells an owner than the node's.

use crate::{embed_all, exact, held_out, merge, questions, recall, subset, top_docs, Args, Corpus, SAMPLE_PER_CELL};
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;
use weft_index::kmeans::kmeans;
use weft_index::Embedder;
use weft_p2p::placement::{cells_per_chunk, plan, Codebook, Ladder};
use weft_p2p::ring::{Ring, DEFAULT_VNODES};
use weft_p2p::PeerId;
use weft_simnet::rng::Rng;

const STEP_SECS: f64 = 60.0;
const MOMENTS: usize = 24;
const REANNOUNCE_SECS: f64 = 7.0 * 86_400.0;

/// Every posting: per global cell, the chunks in it and who holds each.
struct Held {
    replicas: usize,
    by_cell: HashMap<u32, HashMap<u32, Vec<u32>>>,
    /// Per global cell of the levels taken, its owners on the last ring (members' indexes).
    owners: HashMap<u32, Vec<u32>>,
}

impl Held {
    fn owners_on(ladder: &Ladder, ring: &Ring, cell: u32, replicas: usize, index: &HashMap<PeerId, u32>) -> Vec<u32> {
        ladder.owners(ring, cell, replicas).iter().map(|p| index[p]).collect()
    }

    /// Posts `chunk` (vector `v`) at every level posted on a ring of `members`, to the owners of
    /// the moment.
    fn post(&mut self, ladder: &Ladder, v: &[f32], chunk: u32, members: usize) {
        let levels = ladder.posted_levels(members, self.replicas);
        let level = ladder.asked_level(members, self.replicas);
        let k = cells_per_chunk(members, ladder.level(level).len(), self.replicas);
        for cell in ladder.placed(v, levels, k) {
            let owners = self.owners.get(&cell).cloned().unwrap_or_default();
            let holders = self.by_cell.entry(cell).or_default().entry(chunk).or_default();
            for o in owners {
                if !holders.contains(&o) {
                    holders.push(o);
                }
            }
        }
    }

    /// The owners of every cell of `levels` on `ring`; returns, per cell whose owners changed,
    /// its former owners.
    fn reown(
        &mut self,
        ladder: &Ladder,
        ring: &Ring,
        levels: std::ops::RangeInclusive<usize>,
        index: &HashMap<PeerId, u32>,
    ) -> HashMap<u32, Vec<u32>> {
        let mut changed = HashMap::new();
        for cell in ladder.cells_of_levels(levels) {
            let new = Held::owners_on(ladder, ring, cell, self.replicas, index);
            let old = self.owners.insert(cell, new.clone()).unwrap_or_default();
            if old != new {
                changed.insert(cell, old);
            }
        }
        changed
    }

    /// Hands over: for each changed cell, its first former owner still a member gives what it
    /// holds to each new owner. Returns the postings handed.
    fn hand_over(&mut self, changed: &HashMap<u32, Vec<u32>>, on: &[bool]) -> usize {
        let mut handed = 0;
        for (cell, old) in changed {
            let Some(giver) = old.iter().copied().find(|o| on[*o as usize]) else { continue };
            let new = self.owners[cell].clone();
            for holders in self.by_cell.entry(*cell).or_default().values_mut() {
                if holders.contains(&giver) {
                    for o in new.iter().filter(|o| !old.contains(o)) {
                        if !holders.contains(o) {
                            holders.push(*o);
                            handed += 1;
                        }
                    }
                }
            }
        }
        handed
    }

    /// Per member, the chunks it holds; and the share of the postings of `levels` that one of
    /// their cell's owners holds.
    fn held(&self, ladder: &Ladder, levels: std::ops::RangeInclusive<usize>) -> (HashMap<u32, Vec<usize>>, f64) {
        let mut held: HashMap<u32, BTreeSet<usize>> = HashMap::new();
        let (mut all, mut owned) = (0usize, 0usize);
        let counted: BTreeSet<u32> = ladder.cells_of_levels(levels).collect();
        for (cell, chunks) in &self.by_cell {
            for (chunk, holders) in chunks {
                if counted.contains(cell) {
                    all += 1;
                    if holders.iter().any(|h| self.owners.get(cell).is_some_and(|o| o.contains(h))) {
                        owned += 1;
                    }
                }
                for h in holders {
                    held.entry(*h).or_default().insert(*chunk as usize);
                }
            }
        }
        (held.into_iter().map(|(h, s)| (h, s.into_iter().collect())).collect(), owned as f64 / all.max(1) as f64)
    }
}

pub fn climb(corpus: &Corpus, a: &Args, (from, to): (usize, usize), embedder: &mut Embedder) -> anyhow::Result<()> {
    let started = Instant::now();
    let sub = subset(corpus, *a.grow.first().unwrap_or(&1.0));
    let titles = questions(&sub, a.queries, &held_out);
    let vectors = embed_all(embedder, &titles)?;
    let truth = exact(&sub, &vectors);
    let mut train: Vec<usize> =
        (0..sub.len()).filter(|c| !held_out(&sub.hosts[sub.docs[sub.chunk_doc[*c] as usize].2])).collect();
    Rng(0x434f_4445).shuffle(&mut train); // "CODE"
                                          // `--ladder 0`: the first level alone, the fixed codebook of before.
    let depth = a.ladder.unwrap_or(4);
    let sample: Vec<Vec<f32>> =
        train.iter().take(SAMPLE_PER_CELL * (256 << depth)).map(|c| sub.vector(*c).to_vec()).collect();
    let ladder = crate::ladder::split(Codebook::new(&kmeans(&sample, 256).centroids)?, &sample, depth)?;
    // `--held H`: another aim than the node's (`ladder::HELD`).
    let aim = match a.held.as_slice() {
        [h] => *h,
        _ => weft_p2p::placement::ladder::HELD,
    };
    let ladder = ladder.aiming_at(aim);
    let replicas = a.replicas;
    let hours = if a.churn_hours > 0.0 { a.churn_hours } else { 24.0 };
    let span = hours * 3600.0;
    println!(
        "\nA network growing from {from} to {to} members over {hours} h: {} chunks, {} questions, {} peers at most, {} cells ranked, {} levels, aiming at {} cells an owner",
        sub.len(),
        titles.len(),
        a.budgets[0],
        a.nprobe,
        depth + 1,
        aim
    );

    // Identities and arrivals: the first `from` at once, the rest evenly over the span.
    let mut rng = Rng(a.seed ^ 0x434c_494d); // "CLIM"
    let ids: Vec<PeerId> = (0..to).map(|i| weft_simnet::scale::member_key(a.seed, i).public().to_peer_id()).collect();
    let index: HashMap<PeerId, u32> = ids.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
    let arrival = |i: usize| if i < from { 0.0 } else { (i - from + 1) as f64 * span / (to - from).max(1) as f64 };
    let mut on: Vec<bool> = (0..to).map(|i| i < from).collect();
    let mut ring = Ring::new(ids[..from].iter().copied(), DEFAULT_VNODES);
    let crawler: Vec<u32> = sub.hosts.iter().map(|h| index[ring.owner(h).expect("a member")]).collect();
    let mut own: HashMap<u32, Vec<usize>> = HashMap::new();
    for c in 0..sub.len() {
        own.entry(crawler[sub.docs[sub.chunk_doc[c] as usize].2]).or_default().push(c);
    }
    let mut held = Held { replicas, by_cell: HashMap::new(), owners: HashMap::new() };
    held.reown(&ladder, &ring, ladder.accepted_levels(from, replicas), &index);
    for c in 0..sub.len() {
        held.post(&ladder, sub.vector(c), c as u32, from);
    }
    let mut doc_chunks: Vec<Vec<u32>> = vec![Vec::new(); sub.docs.len()];
    for c in 0..sub.len() {
        doc_chunks[sub.chunk_doc[c] as usize].push(c as u32);
    }
    let phases: Vec<f64> = (0..sub.docs.len()).map(|_| rng.below_u64(REANNOUNCE_SECS as u64) as f64).collect();

    println!("| hour | members | level asked | cells | recall@10 | peers asked |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let (mut handed, mut placed, mut missed) = (0usize, 0usize, 0usize);
    let steps = (span / STEP_SECS).ceil() as usize;
    let per_moment = vectors.len().div_ceil(MOMENTS);
    let mut recalls = Vec::new();
    let mut members = from;
    for step in 0..=steps {
        let now = step as f64 * STEP_SECS;
        let before_n = members;
        while members < to && arrival(members) <= now {
            on[members] = true;
            members += 1;
        }
        if members != before_n {
            let before = ring.clone();
            ring = ring.rebuilt(ids[..members].iter().map(|p| (*p, DEFAULT_VNODES)));
            let changed = held.reown(&ladder, &ring, ladder.accepted_levels(members, replicas), &index);
            handed += held.hand_over(&changed, &on);
            for climb in ladder.climbs(before_n, members, replicas) {
                let (p, m) = place_on_climb(&climb, &ladder, &mut held, &sub, (&before, &ring), &index, replicas);
                placed += p;
                missed += m;
            }
        }
        // Weekly announcements, by a crawler online that owns its host now.
        if step > 0 {
            for d in (0..sub.docs.len()).filter(|d| phases[*d] >= now - STEP_SECS && phases[*d] < now) {
                let (host, c) = (&sub.hosts[sub.docs[d].2], crawler[sub.docs[d].2]);
                if on[c as usize] && ring.owner(host).is_some_and(|o| index[o] == c) {
                    for &chunk in &doc_chunks[d] {
                        held.post(&ladder, sub.vector(chunk as usize), chunk, members);
                    }
                }
            }
        }
        let moment = step * MOMENTS / steps.max(1);
        if step > 0 && (step * MOMENTS).is_multiple_of(steps) && moment >= 1 {
            let qis: Vec<usize> = ((moment - 1) * per_moment..(moment * per_moment).min(vectors.len())).collect();
            let level = ladder.asked_level(members, replicas);
            let asking = Asking { ladder: &ladder, held: &held, sub: &sub, ids: &ids, index: &index, own: &own };
            let (rs, asked) = asking.ask(&qis, &vectors, &truth, level, members, a, &mut rng);
            let mean = rs.iter().sum::<f64>() / rs.len().max(1) as f64;
            recalls.extend(rs);
            println!(
                "| {:.0} | {members} | {level} | {} | {mean:.3} | {:.1} |",
                now / 3600.0,
                ladder.level(level).len(),
                asked as f64 / qis.len().max(1) as f64
            );
        }
    }
    let end = End { ladder: &ladder, held: &held, ring: &ring, index: &index, sub: &sub };
    end.print(members, replicas, (handed, placed, missed), &recalls, started);
    Ok(())
}

/// A climb to a new level: each chunk held at the level climbed from is placed at the level
/// climbed to by its placer, if the placer holds it. Returns the postings placed and the chunks
/// no placer held.
fn place_on_climb(
    climb: &weft_p2p::placement::ladder::Climb,
    ladder: &Ladder,
    held: &mut Held,
    sub: &Corpus,
    (before, ring): (&Ring, &Ring),
    index: &HashMap<PeerId, u32>,
    replicas: usize,
) -> (usize, usize) {
    let (mut placed, mut missed) = (0, 0);
    let chunks: BTreeSet<u32> = ladder
        .cells_of_levels(climb.from..=climb.from)
        .flat_map(|c| held.by_cell.get(&c).into_iter().flat_map(|m| m.keys().copied()))
        .collect();
    for chunk in chunks {
        let v = sub.vector(chunk as usize);
        let Some(placer) = ladder.placer(climb, v, before, ring, replicas) else { continue };
        let p = index[&placer];
        let holds = ladder
            .placed(v, climb.from..=climb.from, climb.from_cells)
            .iter()
            .any(|c| held.by_cell.get(c).and_then(|m| m.get(&chunk)).is_some_and(|h| h.contains(&p)));
        if !holds {
            missed += 1;
            continue;
        }
        for cell in ladder.placed(v, climb.to..=climb.to, climb.to_cells) {
            let owners = held.owners.get(&cell).cloned().unwrap_or_default();
            let holders = held.by_cell.entry(cell).or_default().entry(chunk).or_default();
            for o in owners {
                if !holders.contains(&o) {
                    holders.push(o);
                    placed += 1;
                }
            }
        }
    }
    (placed, missed)
}

/// What a question sees at one moment of the climb.
struct Asking<'a> {
    ladder: &'a Ladder,
    held: &'a Held,
    sub: &'a Corpus,
    ids: &'a [PeerId],
    index: &'a HashMap<PeerId, u32>,
    /// What each member crawled.
    own: &'a HashMap<u32, Vec<usize>>,
}

impl Asking<'_> {
    /// Questions `qis` asked at `level` by random members: each one's recall@10, and the peers
    /// asked in all.
    #[allow(clippy::too_many_arguments)]
    fn ask(
        &self,
        qis: &[usize],
        vectors: &[Vec<f32>],
        truth: &[Vec<u32>],
        level: usize,
        members: usize,
        a: &Args,
        rng: &mut Rng,
    ) -> (Vec<f64>, usize) {
        let (ladder, held, sub, ids, index, own) = (self.ladder, self.held, self.sub, self.ids, self.index, self.own);
        let (holding, _) = held.held(&ladder, level..=level);
        let none = Vec::new();
        let mut asked = 0usize;
        let rs: Vec<f64> = qis
            .iter()
            .map(|&qi| {
                let asker = rng.below(members) as u32;
                let q = &vectors[qi];
                let ranked = ladder.nearest(level, q, a.nprobe);
                let owners: Vec<Vec<PeerId>> =
                    ranked.iter().map(|(c, _)| held.owners[c].iter().map(|o| ids[*o as usize]).collect()).collect();
                let route = ranked.iter().zip(&owners).map(|((c, _), o)| (*c, o.as_slice()));
                let chosen = plan(route, &ids[asker as usize], a.budgets[0], |_| true);
                asked += chosen.len();
                let mine = own.get(&asker).unwrap_or(&none).iter().chain(holding.get(&asker).unwrap_or(&none));
                let mut lists = vec![top_docs(&sub, q, mine.copied(), 10)];
                for (p, _) in &chosen {
                    lists.push(top_docs(&sub, q, holding.get(&index[p]).unwrap_or(&none).iter().copied(), 10));
                }
                recall(&merge(lists, 10), &truth[qi])
            })
            .collect();
        (rs, asked)
    }
}

/// The climb's end.
struct End<'a> {
    ladder: &'a Ladder,
    held: &'a Held,
    ring: &'a Ring,
    index: &'a HashMap<PeerId, u32>,
    sub: &'a Corpus,
}

impl End<'_> {
    /// Recall over the span, what was handed over and placed, and what members hold at the end
    /// (and keep once they drop what they do not own).
    fn print(
        &self,
        members: usize,
        replicas: usize,
        (handed, placed, missed): (usize, usize, usize),
        recalls: &[f64],
        started: Instant,
    ) {
        let (ladder, held, ring, index, sub) = (self.ladder, self.held, self.ring, self.index, self.sub);
        let level = ladder.asked_level(members, replicas);
        let (holding, on_owner) = held.held(&ladder, level..=level);
        // What a member holds at the end, in units of a member's own share of the corpus.
        let share = sub.len() as f64 / members as f64;
        let mean = holding.values().map(Vec::len).sum::<usize>() as f64 / members as f64 / share;
        let most = holding.values().map(Vec::len).max().unwrap_or(0) as f64 / share;
        let holders = holding.values().filter(|h| !h.is_empty()).count();
        // What they keep once the node drops what it does not own (`cell_upkeep::drop_unowned`:
        // the cells of the levels taken it is among the first `replicas + 1` owners of).
        let mut kept: HashMap<u32, BTreeSet<u32>> = HashMap::new();
        for cell in ladder.cells_of_levels(ladder.accepted_levels(members, replicas)) {
            let keepers: Vec<u32> = ladder.owners(&ring, cell, replicas + 1).iter().map(|p| index[p]).collect();
            for (chunk, holders) in held.by_cell.get(&cell).into_iter().flatten() {
                for h in holders.iter().filter(|h| keepers.contains(h)) {
                    kept.entry(*h).or_default().insert(*chunk);
                }
            }
        }
        let kept_mean = kept.values().map(BTreeSet::len).sum::<usize>() as f64 / members as f64 / share;
        let kept_most = kept.values().map(BTreeSet::len).max().unwrap_or(0) as f64 / share;
        println!(
            "recall@10 over the span {:.3}; postings handed over {handed}, placed at a new level {placed}; chunks no placer held {missed}; the asked level's postings on an owner at the end {on_owner:.3}; at the end {holders} of {members} members hold postings, chunks held × own mean {mean:.1} / most {most:.1}, once what is not owned is dropped {kept_mean:.1} / {kept_most:.1} ({} members); {:.0} s",
            recalls.iter().sum::<f64>() / recalls.len().max(1) as f64,
            kept.len(),
            started.elapsed().as_secs_f64()
        );
    }
}
