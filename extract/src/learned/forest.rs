//! Gradient-boosted trees: the block classifier's model, how it is written down and how it
//! scores a block.
//!
//! The format is plain text so that a change to the shipped model reads as a diff:
//!
//! ```text
//! weft-forest 1 <features> <base score>
//! tree <nodes>
//! <feature> <threshold> <left> <right>     (a split: go left when x[feature] < threshold)
//! leaf <value>
//! ```
//!
//! Nodes are numbered from 0 within their tree, children after parents. The score is the
//! logistic of the base plus one leaf value per tree.

use std::fmt::Write as _;

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Split { feature: u16, threshold: f32, left: u32, right: u32 },
    Leaf(f32),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tree {
    pub nodes: Vec<Node>,
}

impl Tree {
    /// The leaf value `x` falls into. Bounded by the tree's depth: children come after their
    /// parent (checked when parsed), so the walk only moves forward.
    pub fn value(&self, x: &[f32]) -> f32 {
        let mut at = 0usize;
        loop {
            match self.nodes.get(at) {
                Some(Node::Split { feature, threshold, left, right }) => {
                    let v = x.get(*feature as usize).copied().unwrap_or(0.0);
                    at = if v < *threshold { *left as usize } else { *right as usize };
                }
                Some(Node::Leaf(v)) => return *v,
                None => return 0.0,
            }
        }
    }
}

/// A boosted ensemble for binary classification.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Forest {
    pub features: usize,
    pub base: f32,
    pub trees: Vec<Tree>,
}

/// Why a model file could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("model line {line}: {what}")]
pub struct FormatError {
    pub line: usize,
    pub what: &'static str,
}

impl Forest {
    /// The probability that `x` is the positive class.
    pub fn probability(&self, x: &[f32]) -> f32 {
        let margin: f32 = self.base + self.trees.iter().map(|t| t.value(x)).sum::<f32>();
        1.0 / (1.0 + (-margin).exp())
    }

    /// The text form (see the module's documentation).
    pub fn to_text(&self) -> String {
        let mut s = format!("weft-forest 1 {} {}\n", self.features, self.base);
        for t in &self.trees {
            let _ = writeln!(s, "tree {}", t.nodes.len());
            for n in &t.nodes {
                let _ = match n {
                    Node::Split { feature, threshold, left, right } => {
                        writeln!(s, "{feature} {threshold} {left} {right}")
                    }
                    Node::Leaf(v) => writeln!(s, "leaf {v}"),
                };
            }
        }
        s
    }

    /// Reads the text form, checking every index so that scoring cannot loop or read out of
    /// bounds.
    pub fn parse(text: &str) -> Result<Forest, FormatError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.split_ascii_whitespace().collect::<Vec<_>>()));
        let err = |line, what| FormatError { line, what };
        let (line, head) = lines.next().ok_or(err(1, "empty"))?;
        let (features, base) = match head.as_slice() {
            ["weft-forest", "1", f, b] => (
                f.parse::<usize>().map_err(|_| err(line, "feature count"))?,
                b.parse::<f32>().map_err(|_| err(line, "base score"))?,
            ),
            _ => return Err(err(line, "not a weft-forest 1 header")),
        };
        let mut trees = Vec::new();
        while let Some((line, words)) = lines.next() {
            let count = match words.as_slice() {
                ["tree", n] => n.parse::<usize>().map_err(|_| err(line, "node count"))?,
                [] => continue,
                _ => return Err(err(line, "expected `tree N`")),
            };
            if count == 0 || count > 1 << 16 {
                return Err(err(line, "node count out of range"));
            }
            let mut nodes = Vec::with_capacity(count);
            for i in 0..count {
                let (line, words) = lines.next().ok_or(err(line, "tree ends early"))?;
                let node = match words.as_slice() {
                    ["leaf", v] => Node::Leaf(v.parse().map_err(|_| err(line, "leaf value"))?),
                    [f, t, l, r] => {
                        let feature: u16 = f.parse().map_err(|_| err(line, "feature"))?;
                        let left: u32 = l.parse().map_err(|_| err(line, "left child"))?;
                        let right: u32 = r.parse().map_err(|_| err(line, "right child"))?;
                        let fine = |c: u32| (c as usize) > i && (c as usize) < count;
                        if feature as usize >= features || !fine(left) || !fine(right) {
                            return Err(err(line, "index out of range"));
                        }
                        Node::Split { feature, threshold: t.parse().map_err(|_| err(line, "threshold"))?, left, right }
                    }
                    _ => return Err(err(line, "expected a split or a leaf")),
                };
                nodes.push(node);
            }
            trees.push(Tree { nodes });
        }
        Ok(Forest { features, base, trees })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stump() -> Forest {
        Forest {
            features: 2,
            base: 0.5,
            trees: vec![Tree {
                nodes: vec![
                    Node::Split { feature: 1, threshold: 0.25, left: 1, right: 2 },
                    Node::Leaf(-2.0),
                    Node::Leaf(1.5),
                ],
            }],
        }
    }

    #[test]
    fn scores_and_round_trips_through_text() {
        let f = stump();
        assert!((f.probability(&[0.0, 0.0]) - 1.0 / (1.0 + 1.5f32.exp())).abs() < 1e-6);
        assert!((f.probability(&[0.0, 1.0]) - 1.0 / (1.0 + (-2.0f32).exp())).abs() < 1e-6);
        assert_eq!(Forest::parse(&f.to_text()).unwrap(), f);
    }

    #[test]
    fn a_damaged_model_is_refused_not_followed() {
        let good = stump().to_text();
        for (bad, what) in [
            (good.replace("1 0.25 1 2", "1 0.25 0 2"), "index out of range"),
            (good.replace("1 0.25 1 2", "7 0.25 1 2"), "index out of range"),
            (good.replace("leaf 1.5", ""), "expected a split or a leaf"),
            (good.replace("weft-forest 1", "weft-forest 9"), "not a weft-forest 1 header"),
            (good.replace("tree 3", "tree 4"), "tree ends early"),
            (String::new(), "empty"),
        ] {
            assert_eq!(Forest::parse(&bad).unwrap_err().what, what, "{bad}");
        }
    }
}
