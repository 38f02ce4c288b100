//! The learned block classifier: which blocks of a page are its main text, decided by
//! gradient-boosted trees over the facts the walk and the rules computed (issue 38).
//!
//! Why: the hand-written rules in `content` fit the pages they were written against and lose
//! on pages they were not (the held-out figures in docs/src/benchmarks.md). A model trained
//! on labelled pages from many sites, and measured only on sites it was not trained on
//! (cross-validation grouped by site, the `learn` example), generalises or shows that it does
//! not. The rules stay: their verdicts are features, and they decide alone when no model is
//! shipped or the model cannot be read.
//!
//! - `features`: the numbers a block is described by;
//! - `forest`: the model's format and scoring;
//! - `tokens`: a block as hashed words, and a linear model over them (measured, not shipped);
//! - `train`: the trainer (used by the `learn` example, never by a node);
//! - `labels`: block labels aligned from a page's ground-truth text, for training.

pub mod features;
pub mod forest;
pub mod labels;
pub mod tokens;
pub mod train;

use crate::content::{self, MainContent, Verdict};
use crate::dom::{ElemId, Walk};
pub use forest::Forest;
use std::sync::OnceLock;

/// The model shipped in the binary, written by the `learn` example (`--write`) from both dev sets
/// and the fixture pages; its header says how ([`Provenance`]).
const SHIPPED: &str = include_str!("model.txt");

/// A block is kept when the model gives it at least this probability.
pub const THRESHOLD: f32 = 0.5;

/// A block classifier in stages: the first scores each block from its features; each further
/// stage sees the same features plus what the stage before thought of the block and its
/// neighbours ([`features::context`]) — a page's main text is contiguous, and a block between
/// two blocks of it is likelier to be of it than its own features say.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Model {
    pub stages: Vec<Forest>,
}

impl Model {
    /// The text form: each stage's forest in turn.
    pub fn to_text(&self) -> String {
        self.stages.iter().map(Forest::to_text).collect()
    }

    /// Reads the text form (lines starting with `#` are comments); `None` when there is no
    /// stage, or one does not parse or does not fit this build's features.
    pub fn parse(text: &str) -> Option<Model> {
        let mut sections: Vec<String> = Vec::new();
        // `#` lines are comments (the shipped file says how it was made, or why it is empty).
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            if line.starts_with("weft-forest ") || sections.is_empty() {
                sections.push(String::new());
            }
            let last = sections.last_mut()?;
            last.push_str(line);
            last.push('\n');
        }
        let stages: Vec<Forest> = sections.iter().map(|s| Forest::parse(s).ok()).collect::<Option<_>>()?;
        let fits = stages.iter().enumerate().all(|(k, f)| {
            f.features == if k == 0 { features::COUNT } else { features::COUNT + features::CONTEXT }
                && !f.trees.is_empty()
        });
        (fits && !stages.is_empty()).then_some(Model { stages })
    }

    /// Every block's probability of being main text. `rows` are the blocks' features,
    /// `parents` and `chars` their parent elements and lengths (for the later stages' context).
    pub fn probabilities(&self, rows: &[[f32; features::COUNT]], parents: &[ElemId], chars: &[u32]) -> Vec<f32> {
        let Some(first) = self.stages.first() else { return vec![0.0; rows.len()] };
        let mut p: Vec<f32> = rows.iter().map(|x| first.probability(x)).collect();
        let mut wide = Vec::with_capacity(features::COUNT + features::CONTEXT);
        for stage in &self.stages[1..] {
            let context = features::context(parents, chars, &p);
            p = rows
                .iter()
                .zip(&context)
                .map(|(x, c)| {
                    wide.clear();
                    wide.extend_from_slice(x);
                    wide.extend_from_slice(c);
                    stage.probability(&wide)
                })
                .collect();
        }
        p
    }
}

/// What a model file says of itself in its header (`# key: value` lines), so that anyone can
/// make the same file again and tell whether the one shipped is that file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Provenance {
    /// The command that wrote it.
    pub command: String,
    /// What it was trained on: each input with its page count and content hash.
    pub inputs: Vec<String>,
    /// [`checksum`] of the model's lines, as recorded when it was written.
    pub checksum: Option<u64>,
}

impl Provenance {
    /// The header lines of `text`.
    pub fn of(text: &str) -> Provenance {
        let mut p = Provenance::default();
        for line in text.lines().filter_map(|l| l.strip_prefix("# ")) {
            if let Some(c) = line.strip_prefix("command: ") {
                p.command = c.to_string();
            } else if let Some(i) = line.strip_prefix("input: ") {
                p.inputs.push(i.to_string());
            } else if let Some(h) = line.strip_prefix("checksum: xxh3-64 ") {
                p.checksum = u64::from_str_radix(h.trim(), 16).ok();
            }
        }
        p
    }

    /// The header to write above a model's lines.
    pub fn header(&self, model_text: &str) -> String {
        let mut h = String::from(
            "# The block classifier weft-extract ships (crate::learned). Written by the `learn` example;\n\
             # the same command on the same inputs writes the same file.\n",
        );
        h.push_str(&format!("# command: {}\n", self.command));
        for i in &self.inputs {
            h.push_str(&format!("# input: {i}\n"));
        }
        h.push_str(&format!("# checksum: xxh3-64 {:016x}\n", checksum(model_text)));
        h
    }
}

/// The hash of a model file's model lines (every line but the `#` comments), as the header
/// records it.
pub fn checksum(text: &str) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        h.update(line.as_bytes());
        h.update(b"\n");
    }
    h.digest()
}

/// The shipped model's facts for `weft doctor`: its size, its trees, how long parsing it took
/// and whether its lines still match the checksum its header records.
#[derive(Debug, Clone, PartialEq)]
pub struct ShippedFacts {
    pub bytes: usize,
    pub stages: usize,
    pub trees: usize,
    pub parse_ms: f64,
    pub provenance: Provenance,
    pub checksum_matches: bool,
}

/// Parses the shipped model afresh (timed) and reads its header; `None` when none is shipped.
pub fn shipped_facts() -> Option<ShippedFacts> {
    let started = std::time::Instant::now();
    let model = Model::parse(SHIPPED)?;
    let parse_ms = started.elapsed().as_secs_f64() * 1e3;
    let provenance = Provenance::of(SHIPPED);
    Some(ShippedFacts {
        bytes: SHIPPED.len(),
        stages: model.stages.len(),
        trees: model.stages.iter().map(|s| s.trees.len()).sum(),
        parse_ms,
        checksum_matches: provenance.checksum == Some(checksum(SHIPPED)),
        provenance,
    })
}

/// The shipped model, parsed once; `None` when it is missing or does not fit this build's
/// features (then the rules decide alone).
pub fn shipped() -> Option<&'static Model> {
    static MODEL: OnceLock<Option<Model>> = OnceLock::new();
    MODEL.get_or_init(|| Model::parse(SHIPPED)).as_ref()
}

/// How blocks are chosen: by the rules alone, or by a model over them.
#[derive(Debug, Clone, Copy)]
pub enum Selector<'a> {
    Rules,
    Model(&'a Model, f32),
    /// Exactly these blocks (one flag per block): the ceiling a block classifier could reach,
    /// measured with the training labels.
    Given(&'a [bool]),
}

impl Selector<'static> {
    /// What `extract` uses: the shipped model when there is one, at [`THRESHOLD`].
    pub fn default_for_build() -> Selector<'static> {
        shipped().map_or(Selector::Rules, |m| Selector::Model(m, THRESHOLD))
    }
}

impl Selector<'_> {
    /// What the extractor choosing this way is: the rules' revision, and the model's checksum
    /// and threshold. A node records it beside the texts it extracted; a build that says
    /// something else extracts the pages it kept the responses of again.
    pub fn id(&self) -> String {
        let rules = format!("rules-{}", content::RULES_REVISION);
        match self {
            Selector::Rules => rules,
            Selector::Model(m, threshold) => {
                let sum = match shipped() {
                    Some(s) if std::ptr::eq(*m, s) => checksum(SHIPPED),
                    _ => checksum(&m.to_text()),
                };
                format!("{rules}+model-{sum:016x}@{threshold}")
            }
            Selector::Given(_) => format!("{rules}+given"),
        }
    }
}

/// One block of a page as the trainer sees it (`block_rows`).
#[derive(Debug, Clone)]
pub struct BlockRow {
    pub text: String,
    pub features: [f32; features::COUNT],
    /// Its hashed words ([`tokens::blocks`]).
    pub tokens: Vec<u32>,
    /// The block's parent element (an index into the page's elements).
    pub parent: u32,
    pub chars: u32,
}

/// The facts [`Model::probabilities`] needs of a walked page's blocks.
pub fn rows(
    walk: &Walk,
    url: Option<&url::Url>,
    verdicts: &[Verdict],
    container: ElemId,
    confidence: f32,
) -> (Vec<[f32; features::COUNT]>, Vec<ElemId>, Vec<u32>) {
    let rows = features::blocks(walk, url, verdicts, container, confidence);
    let parents = walk.blocks.iter().map(|b| walk.elems[b.elem as usize].parent).collect();
    let chars = walk.blocks.iter().map(|b| b.chars).collect();
    (rows, parents, chars)
}

/// Selects the main content of a walked page, as `extract` does: the rules' verdicts
/// ([`content::judge`]), then, with a model, the blocks it keeps.
pub fn select(walk: &Walk, url: Option<&url::Url>, selector: Selector<'_>) -> MainContent {
    let Some((verdicts, container, confidence)) = content::judge(walk) else { return MainContent::default() };
    let kept: Vec<bool> = match selector {
        Selector::Rules => verdicts.iter().map(|v| *v == Verdict::Kept).collect(),
        Selector::Model(model, threshold) => keep(model, threshold, walk, url, &verdicts, container, confidence),
        Selector::Given(given) => (0..walk.blocks.len()).map(|i| given.get(i) == Some(&true)).collect(),
    };
    let blocks = kept.iter().enumerate().filter(|(_, k)| **k).map(|(i, _)| i).collect();
    MainContent { blocks, container: Some(container), confidence }
}

/// Which blocks the model keeps, given the rules' verdicts.
pub fn keep(
    model: &Model,
    threshold: f32,
    walk: &Walk,
    url: Option<&url::Url>,
    verdicts: &[Verdict],
    container: ElemId,
    confidence: f32,
) -> Vec<bool> {
    let (rows, parents, chars) = rows(walk, url, verdicts, container, confidence);
    model.probabilities(&rows, &parents, &chars).iter().map(|&p| p >= threshold).collect()
}

#[cfg(test)]
mod tests {
    use super::forest::{Node, Tree};
    use super::*;

    fn stump(features: usize, feature: u16, threshold: f32) -> Forest {
        Forest {
            features,
            base: 0.0,
            trees: vec![Tree {
                nodes: vec![Node::Split { feature, threshold, left: 1, right: 2 }, Node::Leaf(-3.0), Node::Leaf(3.0)],
            }],
        }
    }

    #[test]
    fn a_second_stage_sees_what_the_first_thought_of_the_neighbours() {
        // Stage 1 keeps blocks whose feature 6 (ln chars) is high; stage 2 keeps a block when
        // its neighbours' mean (context feature 3) is high, whatever the block itself.
        let model = Model {
            stages: vec![
                stump(features::COUNT, 6, 2.0),
                stump(features::COUNT + features::CONTEXT, (features::COUNT + 3) as u16, 0.5),
            ],
        };
        let row = |chars: f32| {
            let mut r = [0f32; features::COUNT];
            r[6] = chars;
            r
        };
        let rows = [row(5.0), row(5.0), row(0.0), row(5.0), row(5.0), row(0.0), row(0.0), row(0.0), row(0.0), row(0.0)];
        let p = model.probabilities(&rows, &[0; 10], &[100; 10]);
        assert!(p[2] > 0.5, "a short block between kept ones is kept: {p:?}");
        assert!(p[9] < 0.5, "a short block among short ones is not: {p:?}");
        let again = Model::parse(&model.to_text()).unwrap();
        assert_eq!(again, model);
    }

    /// The model built in is the file `learn --write` wrote: its lines hash to the checksum its
    /// header records, and the header names the command and the inputs that make it again.
    #[test]
    fn the_shipped_model_is_the_file_its_header_describes() {
        let model = shipped().expect("a model is shipped and fits this build's features");
        let p = Provenance::of(SHIPPED);
        assert!(
            p.command.starts_with("cargo run --release -p weft-extract --example learn -- ")
                && p.command.contains("--write"),
            "the header names the command that wrote it: {:?}",
            p.command
        );
        assert_eq!(
            p.checksum,
            Some(checksum(SHIPPED)),
            "the model's lines were changed after it was written; write it again with: {}",
            p.command
        );
        for set in ["extraction-devset, 88 pages", "extraction-devset-2, 720 pages"] {
            assert!(p.inputs.iter().any(|i| i.starts_with(set)), "trained on {set}: {:?}", p.inputs);
        }
        // The header is what `Provenance::header` writes for these lines.
        let body: String = SHIPPED.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect();
        assert_eq!(Provenance { checksum: None, ..p.clone() }.header(&body) + &body, SHIPPED);
        assert_eq!(model.to_text(), body, "the model reads back as written");
        let facts = shipped_facts().unwrap();
        assert!(facts.checksum_matches && facts.bytes == SHIPPED.len() && facts.trees > 0);
    }

    #[test]
    fn a_selector_names_the_extractor() {
        let rules = Selector::Rules.id();
        assert_eq!(rules, format!("rules-{}", content::RULES_REVISION));
        let built_in = Selector::default_for_build().id();
        assert!(
            built_in.starts_with(&format!("{rules}+model-")) && built_in.ends_with(&format!("@{THRESHOLD}")),
            "{built_in}"
        );
        let other = Model { stages: vec![stump(features::COUNT, 6, 2.0)] };
        assert_ne!(Selector::Model(&other, THRESHOLD).id(), built_in, "another model is another extractor");
        assert_ne!(Selector::Model(shipped().unwrap(), 0.4).id(), built_in, "so is another threshold");
    }

    #[test]
    fn a_model_that_does_not_fit_the_features_is_not_used() {
        assert!(Model::parse("").is_none());
        assert!(Model::parse("# no model yet\n").is_none());
        assert!(Model::parse(SHIPPED).is_none() || shipped().is_some(), "the shipped file is a model or only comments");
        assert!(Model::parse(&stump(3, 0, 1.0).to_text()).is_none(), "built for other features");
        let one = Model { stages: vec![stump(features::COUNT, 6, 2.0)] };
        assert_eq!(Model::parse(&one.to_text()), Some(one));
    }
}
