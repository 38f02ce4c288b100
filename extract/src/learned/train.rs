//! Training the block classifier: gradient boosting of depth-limited trees on the logistic
//! loss, with histogram splits (each feature cut into at most [`BINS`] quantile bins), as
//! LightGBM and XGBoost's `hist` do. Small enough to read in one sitting; it runs in the
//! `learn` example, never in the node.
//!
//! Rows carry weights: the dev sets' metric averages pages, and within a page a block counts
//! by its length, so a block's weight is its share of its page's words.

use super::forest::{Forest, Node, Tree};

/// Quantile bins per feature.
pub const BINS: usize = 64;

#[derive(Debug, Clone, Copy)]
pub struct Params {
    pub trees: usize,
    pub depth: usize,
    pub learning_rate: f32,
    /// L2 regularisation of leaf values (XGBoost's `lambda`).
    pub lambda: f64,
    /// The least summed hessian in a leaf (XGBoost's `min_child_weight`), in units of the
    /// rows' weights.
    pub min_child: f64,
    /// The share of rows each tree is grown on, drawn afresh for each tree (stochastic
    /// gradient boosting; XGBoost's `subsample`): 1 grows every tree on every row.
    pub subsample: f32,
    /// The share of features each tree may split on, drawn afresh for each tree (XGBoost's
    /// `colsample_bytree`): 1 offers every feature.
    pub colsample: f32,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            trees: 200,
            depth: 6,
            learning_rate: 0.1,
            lambda: 1.0,
            min_child: 0.05,
            subsample: 1.0,
            colsample: 1.0,
        }
    }
}

/// A fixed xorshift sequence: the same data and parameters give the same forest.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// A feature's cut points: bin `b` holds values in `[cuts[b-1], cuts[b])`.
fn cuts(values: &mut [f32]) -> Vec<f32> {
    values.sort_by(f32::total_cmp);
    let mut cuts: Vec<f32> = Vec::with_capacity(BINS);
    for q in 1..BINS {
        let v = values[(q * values.len() / BINS).min(values.len() - 1)];
        if cuts.last().is_none_or(|&c| v > c) && values[0] < v {
            cuts.push(v);
        }
    }
    cuts
}

fn bin(cuts: &[f32], v: f32) -> u8 {
    cuts.partition_point(|&c| c <= v) as u8
}

/// Trains a forest on `rows` (each `features` long) with labels 0/1 and weights.
pub fn train(rows: &[Vec<f32>], labels: &[bool], weights: &[f32], params: Params) -> Forest {
    assert!(!rows.is_empty() && rows.len() == labels.len() && rows.len() == weights.len());
    let features = rows[0].len();
    let n = rows.len();
    let all_cuts: Vec<Vec<f32>> = (0..features)
        .map(|f| {
            let mut column: Vec<f32> = rows.iter().map(|r| r[f]).collect();
            cuts(&mut column)
        })
        .collect();
    // Column-major bins: one byte per value.
    let bins: Vec<Vec<u8>> = (0..features).map(|f| rows.iter().map(|r| bin(&all_cuts[f], r[f])).collect()).collect();
    let w: Vec<f64> = weights.iter().map(|&x| f64::from(x)).collect();
    let total_w: f64 = w.iter().sum();
    let positive: f64 = labels.iter().zip(&w).filter(|(l, _)| **l).map(|(_, w)| w).sum();
    let prior = (positive / total_w).clamp(1e-6, 1.0 - 1e-6);
    let base = (prior / (1.0 - prior)).ln() as f32;
    let mut margin = vec![f64::from(base); n];
    let mut trees = Vec::with_capacity(params.trees);
    let mut grad = vec![0f64; n];
    let mut hess = vec![0f64; n];
    let mut draws = Draws(0x9E37_79B9_7F4A_7C15);
    // At least one feature a tree (`clamp` would panic on a row of no features: then none).
    let offered = ((params.colsample.clamp(0.0, 1.0) * features as f32).ceil() as usize).max(1).min(features);
    for _ in 0..params.trees {
        for i in 0..n {
            let p = 1.0 / (1.0 + (-margin[i]).exp());
            let y = if labels[i] { 1.0 } else { 0.0 };
            grad[i] = (p - y) * w[i];
            hess[i] = (p * (1.0 - p)).max(1e-6) * w[i];
        }
        // This tree's features: the first `offered` of a shuffle (all of them, in order, at 1).
        let mut columns: Vec<usize> = (0..features).collect();
        if offered < features {
            for i in 0..offered {
                let j = i + (draws.next() % (features - i) as u64) as usize;
                columns.swap(i, j);
            }
            columns.truncate(offered);
            columns.sort_unstable();
        }
        let rows_here: Vec<u32> = if params.subsample < 1.0 {
            (0..n as u32).filter(|_| draws.unit() < params.subsample).collect()
        } else {
            (0..n as u32).collect()
        };
        let mut grower = Grower {
            bins: &bins,
            cuts: &all_cuts,
            columns: &columns,
            grad: &grad,
            hess: &hess,
            params,
            nodes: Vec::new(),
        };
        grower.grow(rows_here, 0);
        let tree = Tree { nodes: grower.nodes };
        for (i, m) in margin.iter_mut().enumerate() {
            *m += f64::from(tree.value(&rows[i]));
        }
        trees.push(tree);
    }
    Forest { features, base, trees }
}

struct Grower<'a> {
    bins: &'a [Vec<u8>],
    cuts: &'a [Vec<f32>],
    /// The features this tree may split on.
    columns: &'a [usize],
    grad: &'a [f64],
    hess: &'a [f64],
    params: Params,
    nodes: Vec<Node>,
}

impl Grower<'_> {
    fn leaf_value(&self, g: f64, h: f64) -> f32 {
        (-g / (h + self.params.lambda)) as f32 * self.params.learning_rate
    }

    /// Grows the subtree over `rows`; returns its root's index.
    fn grow(&mut self, rows: Vec<u32>, depth: usize) -> u32 {
        let at = self.nodes.len() as u32;
        let (g, h) = rows.iter().fold((0.0, 0.0), |(g, h), &i| (g + self.grad[i as usize], h + self.hess[i as usize]));
        self.nodes.push(Node::Leaf(self.leaf_value(g, h)));
        if depth >= self.params.depth || h < 2.0 * self.params.min_child {
            return at;
        }
        let lambda = self.params.lambda;
        let parent_gain = g * g / (h + lambda);
        let mut best: Option<(f64, usize, usize)> = None;
        let mut hist_g = [0f64; BINS];
        let mut hist_h = [0f64; BINS];
        for &f in self.columns {
            let column = &self.bins[f];
            let bins_here = self.cuts[f].len() + 1;
            if bins_here < 2 {
                continue;
            }
            hist_g[..bins_here].fill(0.0);
            hist_h[..bins_here].fill(0.0);
            for &i in &rows {
                let b = column[i as usize] as usize;
                hist_g[b] += self.grad[i as usize];
                hist_h[b] += self.hess[i as usize];
            }
            let (mut gl, mut hl) = (0.0, 0.0);
            for b in 0..bins_here - 1 {
                gl += hist_g[b];
                hl += hist_h[b];
                let (gr, hr) = (g - gl, h - hl);
                if hl < self.params.min_child || hr < self.params.min_child {
                    continue;
                }
                let gain = gl * gl / (hl + lambda) + gr * gr / (hr + lambda) - parent_gain;
                if gain > 1e-9 && best.is_none_or(|(bg, _, _)| gain > bg) {
                    best = Some((gain, f, b));
                }
            }
        }
        let Some((_, feature, b)) = best else { return at };
        let threshold = self.cuts[feature][b];
        let (left, right): (Vec<u32>, Vec<u32>) =
            rows.into_iter().partition(|&i| (self.bins[feature][i as usize] as usize) <= b);
        let l = self.grow(left, depth + 1);
        let r = self.grow(right, depth + 1);
        self.nodes[at as usize] = Node::Split { feature: feature as u16, threshold, left: l, right: r };
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_an_interaction_it_was_not_told_about() {
        // y = (x0 > 0.5) xor (x1 > 0.3), with a noise feature: no single split separates it.
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        for _ in 0..4_000 {
            let r = vec![next(), next(), next()];
            labels.push((r[0] > 0.5) != (r[1] > 0.3));
            rows.push(r);
        }
        let weights = vec![1.0; rows.len()];
        let forest = train(
            &rows[..3_000],
            &labels[..3_000],
            &weights[..3_000],
            Params { trees: 60, depth: 3, ..Params::default() },
        );
        let right =
            rows[3_000..].iter().zip(&labels[3_000..]).filter(|(r, l)| (forest.probability(r) > 0.5) == **l).count();
        assert!(right > 960, "{right} of 1000 held-out rows right");
        // What was trained is what is read back.
        let again = Forest::parse(&forest.to_text()).unwrap();
        assert!(rows.iter().all(|r| (again.probability(r) - forest.probability(r)).abs() < 1e-5));
        // Each tree on 70% of the rows and two of the three features: still learnt, and the
        // same forest each time.
        let sampled = Params { trees: 60, depth: 3, subsample: 0.7, colsample: 0.6, ..Params::default() };
        let forest = train(&rows[..3_000], &labels[..3_000], &weights[..3_000], sampled);
        let right =
            rows[3_000..].iter().zip(&labels[3_000..]).filter(|(r, l)| (forest.probability(r) > 0.5) == **l).count();
        assert!(right > 940, "{right} of 1000 held-out rows right with sampling");
        let again = train(&rows[..3_000], &labels[..3_000], &weights[..3_000], sampled);
        assert_eq!(again.to_text(), forest.to_text());
    }
}

/// Trains a [`Lexicon`](super::tokens::Lexicon): weighted logistic regression over hashed
/// tokens, by AdaGrad (each weight's step shrinks with the gradients it has seen, so rare
/// tokens move as far as common ones do per sighting) with L2 shrinkage, `epochs` passes in a
/// fixed shuffled order (the same data gives the same model).
pub fn train_lexicon(
    rows: &[&[u32]],
    labels: &[bool],
    weights: &[f32],
    epochs: usize,
    l2: f32,
) -> super::tokens::Lexicon {
    use super::tokens::{Lexicon, BUCKETS};
    assert!(rows.len() == labels.len() && rows.len() == weights.len());
    // Weights scaled to a mean of 1, so the step size means the same whatever their units.
    let mean = weights.iter().map(|&w| f64::from(w)).sum::<f64>() / weights.len().max(1) as f64;
    let scale = if mean > 0.0 { (1.0 / mean) as f32 } else { 1.0 };
    let (mut w, mut g2) = (vec![0f32; BUCKETS], vec![1e-6f32; BUCKETS]);
    let (mut bias, mut bias_g2) = (0f32, 1e-6f32);
    let rate = 0.2f32;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..epochs {
        // Fisher–Yates with a fixed xorshift: deterministic.
        for i in (1..order.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(i, (state % (i as u64 + 1)) as usize);
        }
        for &i in &order {
            let weight = weights[i] * scale;
            if weight <= 0.0 {
                continue;
            }
            let z = bias + rows[i].iter().map(|&t| w[t as usize]).sum::<f32>();
            let p = 1.0 / (1.0 + (-z.clamp(-30.0, 30.0)).exp());
            let g = (p - f32::from(u8::from(labels[i]))) * weight;
            bias_g2 += g * g;
            bias -= rate * g / bias_g2.sqrt();
            for &t in rows[i] {
                let t = t as usize;
                let gt = g + l2 * w[t];
                g2[t] += gt * gt;
                w[t] -= rate * gt / g2[t].sqrt();
            }
        }
    }
    Lexicon { bias, weights: w }
}
