//! `--churn HOURS`: recall@10 of questions asked while members come and go.
//!
//! The `--grow` runs place every chunk on one ring and ask on it: a network where nobody has
//! left. Here the members come and go for `HOURS` as `weft-simnet scale` draws them
//! ([`SessionModel::default`]: Stutzbach and Rejaie's session and downtime lengths, an
//! always-on core, a burst of newcomers halfway, half the leavers leaving with a last word), and
//! each cell's postings move as the node moves them:
//!
//! - the ring is the members online (a death counts from the minute it happens: the real
//!   roster takes the 5–30 s its monitors need to sign it; a newcomer's points all count at once,
//!   not in the admission's stages);
//! - at every change, the first of a cell's former owners still on the ring hands the postings
//!   it holds to each new owner (`weft_node::cells::gained_owners`); a member that left or
//!   crashed hands nothing over, and keeps what it held on its disk for when it comes back;
//! - nothing is dropped: a node drops a cell's postings once the cell has been another's for ten
//!   minutes (`cell_upkeep::DROP_AFTER`), which changes nothing here — a question asks the
//!   cells' owners of the moment, and a cell is handed on by a former owner of the last ring;
//! - each document is announced again once a week (`cell_upkeep::REANNOUNCE_EVERY`), at a phase
//!   of its own, by the member that crawled it, if that member is online and owns its host then;
//!   its postings go to its cells' owners of the moment.
//!
//! Every host was crawled by its owner on the first ring, and every chunk posted to its cells'
//! owners there. Questions are asked at moments spread over the span by members online then,
//! planned on the ring of that moment ([`plan`]); an asked peer answers from every posting it
//! holds, the asker from its own index and its postings. The same questions on the first ring,
//! before anyone came or went, are the figure without churn.

use crate::{
    design_cells, embed_all, exact, held_out, merge, questions, recall, subset, top_docs, Args, Corpus, Design,
    SAMPLE_PER_CELL,
};
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;
use weft_index::kmeans::kmeans;
use weft_index::Embedder;
use weft_p2p::placement::{cell_owners, plan, Codebook};
use weft_p2p::ring::{Ring, DEFAULT_VNODES};
use weft_p2p::PeerId;
use weft_simnet::rng::Rng;
use weft_simnet::scale::member_key;
use weft_simnet::scale::sessions::{Kind, SessionModel};

/// The simulation's step: the ring is rebuilt and cells handed over once a minute.
const STEP_SECS: f64 = 60.0;
/// Moments at which questions are asked, spread over the span.
const MOMENTS: usize = 24;
/// How often each document is announced again (`cell_upkeep::REANNOUNCE_EVERY`).
const REANNOUNCE_SECS: f64 = 7.0 * 86_400.0;

/// One identity's sessions: online or not, until when.
#[derive(Debug, Clone, Copy)]
struct Member {
    kind: Kind,
    online: bool,
    /// When it next comes or goes; `f64::INFINITY` for a newcomer gone for good.
    next: f64,
}

/// The members' comings and goings, drawn from the session model.
struct Churn {
    model: SessionModel,
    members: Vec<Member>,
    ids: Vec<PeerId>,
    rng: Rng,
}

impl Churn {
    /// About `online` members online, in the model's stationary state at time 0, with the
    /// newcomers of a burst arriving at its fraction of `span` seconds.
    fn new(online: usize, span: f64, seed: u64) -> Churn {
        let model = SessionModel::default();
        let mut rng = Rng(seed);
        let kinds = model.kinds(online);
        let mut arrivals = model.bursts(online, span, &mut rng).into_iter();
        let members: Vec<Member> = kinds
            .iter()
            .map(|&kind| match kind {
                Kind::Newcomer => Member { kind, online: false, next: arrivals.next().unwrap_or(f64::INFINITY) },
                _ => {
                    let (online, left) = model.start_state(kind, &mut rng);
                    Member { kind, online, next: left }
                }
            })
            .collect();
        let ids = (0..members.len()).map(|i| member_key(seed, i).public().to_peer_id()).collect();
        Churn { model, members, ids, rng }
    }

    fn online(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.iter().enumerate().filter(|(_, m)| m.online).map(|(i, _)| i as u32)
    }

    /// Every coming and going up to `now`: how many went.
    fn advance(&mut self, now: f64) -> usize {
        let mut went = 0;
        for m in &mut self.members {
            while m.next <= now {
                if m.online {
                    went += 1;
                    m.online = false;
                    m.next = match m.kind {
                        Kind::Newcomer => f64::INFINITY,
                        kind => m.next + self.model.downtime_secs(kind, &mut self.rng),
                    };
                } else {
                    m.online = true;
                    m.next += self.model.session_secs(m.kind, &mut self.rng);
                }
            }
        }
        went
    }
}

/// One design's postings as they move: every (chunk, cell) and who holds it.
struct Postings {
    design: Design,
    book: Codebook,
    /// Per chunk, its cells.
    cells: Vec<Vec<u32>>,
    /// Per cell, the postings in it: (chunk, and who holds that chunk's posting in this cell).
    by_cell: Vec<Vec<(u32, Vec<u32>)>>,
    /// Per cell, its owners on the last ring (members' indexes).
    owners: Vec<Vec<u32>>,
}

impl Postings {
    /// Every chunk posted to its cells' owners on `ring`.
    fn place(design: Design, book: Codebook, cells: Vec<Vec<u32>>, ring: &Ring, index: &HashMap<PeerId, u32>) -> Self {
        let owners: Vec<Vec<u32>> = (0..book.len() as u32)
            .map(|c| cell_owners(ring, book.id(), c, design.replicas).iter().map(|p| index[p]).collect())
            .collect();
        let mut by_cell: Vec<Vec<(u32, Vec<u32>)>> = vec![Vec::new(); book.len()];
        for (chunk, cs) in cells.iter().enumerate() {
            for c in cs {
                by_cell[*c as usize].push((chunk as u32, owners[*c as usize].clone()));
            }
        }
        Postings { design, book, cells, by_cell, owners }
    }

    /// The ring changed to `ring` (`on`: who is on it): each cell's first former owner still on
    /// it hands what it holds of the cell to each new owner. Returns the postings handed.
    fn ring_changed(&mut self, ring: &Ring, index: &HashMap<PeerId, u32>, on: &[bool]) -> usize {
        let mut handed = 0;
        for c in 0..self.book.len() {
            let new: Vec<u32> =
                cell_owners(ring, self.book.id(), c as u32, self.design.replicas).iter().map(|p| index[p]).collect();
            if new == self.owners[c] {
                continue;
            }
            let giver = self.owners[c].iter().copied().find(|o| on[*o as usize]);
            let gained: Vec<u32> = new.iter().copied().filter(|o| !self.owners[c].contains(o)).collect();
            if let Some(giver) = giver {
                for (_, holders) in &mut self.by_cell[c] {
                    if holders.contains(&giver) {
                        for o in &gained {
                            if !holders.contains(o) {
                                holders.push(*o);
                                handed += 1;
                            }
                        }
                    }
                }
            }
            self.owners[c] = new;
        }
        handed
    }

    /// `chunks` announced again: each posting goes to its cell's owners of the moment.
    fn announce(&mut self, chunks: &[u32]) {
        for &chunk in chunks {
            for c in &self.cells[chunk as usize] {
                let owners = &self.owners[*c as usize];
                if let Some((_, holders)) = self.by_cell[*c as usize].iter_mut().find(|(k, _)| *k == chunk) {
                    for o in owners {
                        if !holders.contains(o) {
                            holders.push(*o);
                        }
                    }
                }
            }
        }
    }

    /// Per member online, the chunks it holds postings of; and the share of postings that at
    /// least one of their cell's owners holds.
    fn held(&self, on: &[bool]) -> (HashMap<u32, Vec<usize>>, f64) {
        let mut held: HashMap<u32, BTreeSet<usize>> = HashMap::new();
        let (mut all, mut owned) = (0usize, 0usize);
        for (c, postings) in self.by_cell.iter().enumerate() {
            for (chunk, holders) in postings {
                all += 1;
                if holders.iter().any(|h| self.owners[c].contains(h)) {
                    owned += 1;
                }
                for h in holders.iter().filter(|h| on[**h as usize]) {
                    held.entry(*h).or_default().insert(*chunk as usize);
                }
            }
        }
        (held.into_iter().map(|(h, s)| (h, s.into_iter().collect())).collect(), owned as f64 / all.max(1) as f64)
    }
}

/// A share's questions: their vectors and exact answers over its corpus.
struct Questions<'a> {
    sub: &'a Corpus,
    vectors: Vec<Vec<f32>>,
    truth: Vec<Vec<u32>>,
}

/// What one design's span came to.
struct Day {
    online: usize,
    identities: usize,
    cells: usize,
    /// Mean recall@10 on the first ring, and at the moments under churn.
    still: f64,
    under: f64,
    /// The share of postings on one of their cell's owners at the end.
    on_owner: f64,
    /// Members that came or went, and postings handed over.
    moved: usize,
    handed: usize,
}

/// `--churn HOURS`: for each share of `--grow`, each `--held` and each design, recall@10
/// without churn and under it.
pub(crate) fn churn(corpus: &Corpus, a: &Args, embedder: &mut Embedder) -> anyhow::Result<()> {
    println!(
        "\nQuestions asked under churn: {} h, {} chunks a member, {} cells ranked, seed {}",
        a.churn_hours, a.per_member, a.nprobe, a.seed
    );
    println!(
        "| members online | identities | design | cells | peers at most | recall@10 without churn | under churn | postings on a cell owner at the end | comings and goings | postings handed over | wall s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for &share in &a.grow {
        let sub = subset(corpus, share);
        let titles = questions(&sub, a.queries, &held_out);
        let vectors = embed_all(embedder, &titles)?;
        let truth = exact(&sub, &vectors);
        eprintln!("  share {share}: {} chunks, {} questions", sub.len(), titles.len());
        let qs = Questions { sub: &sub, vectors, truth };
        let mut train: Vec<usize> =
            (0..sub.len()).filter(|c| !held_out(&sub.hosts[sub.docs[sub.chunk_doc[*c] as usize].2])).collect();
        Rng(0x434f_4445).shuffle(&mut train); // "CODE"
        for &h in &a.held {
            for d in &a.designs {
                let started = Instant::now();
                let day = day(&qs, &train, a, h, *d)?;
                println!(
                    "| {} | {} | {d} | {} | {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.0} |",
                    day.online,
                    day.identities,
                    day.cells,
                    a.budgets[0],
                    day.still,
                    day.under,
                    day.on_owner,
                    day.moved,
                    day.handed,
                    started.elapsed().as_secs_f64(),
                );
            }
        }
    }
    Ok(())
}

/// One design's span: the first ring's placement and questions, then the comings and goings
/// minute by minute, questions at [`MOMENTS`] moments.
fn day(qs: &Questions<'_>, train: &[usize], a: &Args, held: f64, d: Design) -> anyhow::Result<Day> {
    let sub = qs.sub;
    let span = a.churn_hours * 3600.0;
    let n = (sub.len() / a.per_member.max(1)).max(2);
    let mut churn = Churn::new(n, span, a.seed);
    let ids = churn.ids.clone();
    let index: HashMap<PeerId, u32> = ids.iter().enumerate().map(|(i, p)| (*p, i as u32)).collect();
    let mut on: Vec<bool> = churn.members.iter().map(|m| m.online).collect();
    let online: Vec<u32> = churn.online().collect();
    let mut ring = Ring::new(online.iter().map(|i| ids[*i as usize]), DEFAULT_VNODES);
    // Who crawled each host: its owner on the first ring.
    let crawler: Vec<u32> = sub.hosts.iter().map(|host| index[ring.owner(host).expect("a member")]).collect();
    let mut own: HashMap<u32, Vec<usize>> = HashMap::new();
    for c in 0..sub.len() {
        own.entry(crawler[sub.docs[sub.chunk_doc[c] as usize].2]).or_default().push(c);
    }
    let cells_n = ((held * online.len() as f64 / d.replicas as f64).round() as usize).max(1);
    let sample: Vec<Vec<f32>> = train.iter().take(SAMPLE_PER_CELL * cells_n).map(|c| sub.vector(*c).to_vec()).collect();
    let book = Codebook::new(&kmeans(&sample, cells_n).centroids)?;
    let cells: Vec<Vec<u32>> =
        design_cells(sub, &book, d).into_iter().map(|cs| cs.into_iter().map(|(c, _)| c).collect()).collect();
    let mut postings = Postings::place(d, book, cells, &ring, &index);
    // Each document's chunks and its announcement's phase within the week.
    let mut doc_chunks: Vec<Vec<u32>> = vec![Vec::new(); sub.docs.len()];
    for c in 0..sub.len() {
        doc_chunks[sub.chunk_doc[c] as usize].push(c as u32);
    }
    let mut phase_rng = Rng(a.seed ^ 0x414e_4e4f); // "ANNO"
    let phases: Vec<f64> = (0..sub.docs.len()).map(|_| phase_rng.below_u64(REANNOUNCE_SECS as u64) as f64).collect();

    let asking = Asking { qs, ids: &ids, index: &index, own: &own, nprobe: a.nprobe, budget: a.budgets[0] };
    let all: Vec<usize> = (0..qs.vectors.len()).collect();
    let mut ask_rng = Rng(a.seed ^ 0x4153_4b53); // "ASKS"
    let still = asking.ask(&postings, &on, &online, &all, &mut ask_rng);

    let (mut moved, mut handed, mut under) = (0usize, 0usize, Vec::new());
    let steps = (span / STEP_SECS).ceil() as usize;
    let per_moment = all.len().div_ceil(MOMENTS);
    for step in 1..=steps {
        let now = step as f64 * STEP_SECS;
        let went = churn.advance(now);
        let now_on: Vec<bool> = churn.members.iter().map(|m| m.online).collect();
        let came = now_on.iter().zip(&on).filter(|(n, o)| **n && !**o).count();
        moved += went + came;
        on = now_on;
        if went + came > 0 {
            ring = ring.rebuilt(churn.online().map(|i| (ids[i as usize], DEFAULT_VNODES)));
            handed += postings.ring_changed(&ring, &index, &on);
        }
        // Documents due for their weekly announcement, by their crawler if it is online and
        // owns their host now.
        let due: Vec<u32> = (0..sub.docs.len())
            .filter(|d| phases[*d] >= now - STEP_SECS && phases[*d] < now)
            .filter(|d| {
                let (host, c) = (&sub.hosts[sub.docs[*d].2], crawler[sub.docs[*d].2]);
                on[c as usize] && ring.owner(host).is_some_and(|o| index[o] == c)
            })
            .flat_map(|d| doc_chunks[d].iter().copied())
            .collect();
        postings.announce(&due);
        // Questions at MOMENTS moments, the last at the span's end.
        let moment = step * MOMENTS / steps;
        if (step * MOMENTS).is_multiple_of(steps) && moment >= 1 {
            let from = (moment - 1) * per_moment;
            let qis: Vec<usize> = (from..(from + per_moment).min(all.len())).collect();
            let members: Vec<u32> = churn.online().collect();
            under.extend(asking.ask(&postings, &on, &members, &qis, &mut ask_rng));
        }
    }
    let (_, on_owner) = postings.held(&on);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Ok(Day {
        online: online.len(),
        identities: churn.members.len(),
        cells: postings.book.len(),
        still: mean(&still),
        under: mean(&under),
        on_owner,
        moved,
        handed,
    })
}

/// What a question is asked with: the members' identities, what each crawled, and the node's
/// routing settings.
struct Asking<'a> {
    qs: &'a Questions<'a>,
    ids: &'a [PeerId],
    index: &'a HashMap<PeerId, u32>,
    own: &'a HashMap<u32, Vec<usize>>,
    nprobe: usize,
    budget: usize,
}

impl Asking<'_> {
    /// Questions `qis`, each by a member of `members` drawn by `rng`, planned on the cells'
    /// owners of the moment: recall@10 of each. An asked peer answers from every posting it
    /// holds (`on`: the members online), the asker from its own index and its postings.
    fn ask(&self, postings: &Postings, on: &[bool], members: &[u32], qis: &[usize], rng: &mut Rng) -> Vec<f64> {
        let (held, _) = postings.held(on);
        let none = Vec::new();
        let sub = self.qs.sub;
        qis.iter()
            .map(|&qi| {
                let asker = members[rng.below(members.len())];
                let q = &self.qs.vectors[qi];
                let ranked = postings.book.nearest(q, self.nprobe);
                let owners: Vec<Vec<PeerId>> = ranked
                    .iter()
                    .map(|(c, _)| postings.owners[*c as usize].iter().map(|o| self.ids[*o as usize]).collect())
                    .collect();
                let route = ranked.iter().zip(&owners).map(|((c, _), o)| (*c, o.as_slice()));
                let chosen = plan(route, &self.ids[asker as usize], self.budget, |_| true);
                let mine = self.own.get(&asker).unwrap_or(&none).iter().chain(held.get(&asker).unwrap_or(&none));
                let mut lists = vec![top_docs(sub, q, mine.copied(), 10)];
                for (p, _) in &chosen {
                    let chunks = held.get(&self.index[p]).unwrap_or(&none);
                    lists.push(top_docs(sub, q, chunks.iter().copied(), 10));
                }
                recall(&merge(lists, 10), &self.qs.truth[qi])
            })
            .collect()
    }
}
