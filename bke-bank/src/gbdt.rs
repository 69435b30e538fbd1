//! Gradient-boosted decision trees, the practical anchor of the BaNK tables: what most users try
//! first on tabular data. The defaults are scikit-learn's `GradientBoostingRegressor` /
//! `GradientBoostingClassifier` (Friedman 2001): 100 stages, shrinkage 0.1, depth-3 regression trees,
//! at least 1 row per leaf and 2 per split, no subsampling.
//!
//! * **Least squares** (regression): `F₀ = ȳ`; each stage fits a tree to the residuals `y − F` and
//!   adds `ν ×` its leaf means.
//! * **Log-loss** (0/1 classification): `F₀ = log(p̄/(1 − p̄))`; each stage fits a tree to the
//!   negative gradient `y − σ(F)` and sets each leaf to the Newton step
//!   `Σ(y − p) / Σ p(1 − p)` over its rows.
//!
//! Splits maximise the squared-error reduction `n_L n_R/(n_L + n_R) (r̄_L − r̄_R)²` (Friedman's
//! criterion, scikit-learn's default `friedman_mse`, which equals the reduction of the sum of
//! squares for unit weights) at midpoints between consecutive distinct values; a row goes left when
//! `x ≤ threshold`. Trees grow level by level: each level scans every feature once in its presorted
//! order, so a tree costs `O(depth · N · d)` after one `O(N d log N)` sort.

use crate::error::{BankError, check_count, check_labels, check_positive, mismatch};
use crate::logistic::sigmoid;
use crate::params::Task;
use bke_core::{Dataset, Estimator, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::Backend;
use serde::{Deserialize, Serialize};

/// Parameters of gradient boosting (defaults: scikit-learn's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GbdtParams {
    /// Least squares (regression) or log-loss (classification).
    pub task: Task,
    /// Boosting stages. Default 100.
    pub stages: usize,
    /// Shrinkage `ν`. Default 0.1.
    pub learning_rate: f64,
    /// Tree depth. Default 3.
    pub max_depth: usize,
    /// Fewest rows in a leaf. Default 1.
    pub min_samples_leaf: usize,
    /// Fewest rows in a node that may be split. Default 2.
    pub min_samples_split: usize,
}

impl Default for GbdtParams {
    fn default() -> Self {
        Self {
            task: Task::Regression,
            stages: 100,
            learning_rate: 0.1,
            max_depth: 3,
            min_samples_leaf: 1,
            min_samples_split: 2,
        }
    }
}

impl bke_core::Params for GbdtParams {
    type Error = BankError;
    fn validate(&self) -> Result<(), BankError> {
        check_count("stages", self.stages)?;
        check_count("max_depth", self.max_depth)?;
        check_count("min_samples_leaf", self.min_samples_leaf)?;
        check_count("min_samples_split", self.min_samples_split)?;
        check_positive("learning_rate", self.learning_rate)
    }
}

/// A node of a regression tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Node {
    /// `x[feature] ≤ threshold` goes to `left`, otherwise `right` (indices into the tree's nodes).
    Split {
        /// Input column.
        feature: usize,
        /// Threshold.
        threshold: f64,
        /// Left child.
        left: usize,
        /// Right child.
        right: usize,
    },
    /// A leaf and its value.
    Leaf(f64),
}

/// A fitted tree; node 0 is the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// The nodes.
    pub nodes: Vec<Node>,
}

impl Tree {
    /// The tree's value at `x`.
    pub fn eval(&self, x: &[f64]) -> f64 {
        let mut k = 0;
        loop {
            match &self.nodes[k] {
                Node::Leaf(v) => return *v,
                Node::Split { feature, threshold, left, right } => {
                    k = if x[*feature] <= *threshold { *left } else { *right };
                }
            }
        }
    }
}

/// A fitted boosted ensemble: `F(x) = F₀ + ν Σ_t tree_t(x)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GbdtModel {
    /// The task.
    pub task: Task,
    /// Input dimension.
    pub dim: usize,
    /// `F₀`.
    pub init: f64,
    /// Shrinkage `ν`.
    pub learning_rate: f64,
    /// The trees.
    pub trees: Vec<Tree>,
}

impl Estimator for GbdtParams {
    type Data = Dataset;
    type Fitted = GbdtModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<GbdtModel, BankError> {
        fit(params, data, progress)
    }
}

fn fit(p: &GbdtParams, data: &Dataset, progress: &dyn Progress) -> Result<GbdtModel, BankError> {
    let (x, y) = (data.x(), data.y());
    let (n, d) = (x.len(), x.dim());
    if n < 2 {
        return Err(BankError::TooFewRows { what: "gradient boosting".into(), needed: 2, found: n });
    }
    let init = match p.task {
        Task::Regression => y.iter().sum::<f64>() / n as f64,
        Task::Classification => {
            check_labels(y)?;
            let pbar = (y.iter().sum::<f64>() / n as f64).clamp(1e-12, 1.0 - 1e-12);
            (pbar / (1.0 - pbar)).ln()
        }
    };
    let sorted: Vec<Vec<usize>> = (0..d)
        .map(|k| {
            let mut idx: Vec<usize> = (0..n).collect();
            idx.sort_by(|&a, &b| x.point(a)[k].total_cmp(&x.point(b)[k]));
            idx
        })
        .collect();
    let mut f = vec![init; n];
    let mut trees = Vec::with_capacity(p.stages);
    let mut resid = vec![0.0; n];
    let mut hess = vec![1.0; n];
    for stage in 0..p.stages {
        progress.checkpoint()?;
        for i in 0..n {
            match p.task {
                Task::Regression => resid[i] = y[i] - f[i],
                Task::Classification => {
                    let q = sigmoid(f[i]);
                    resid[i] = y[i] - q;
                    hess[i] = q * (1.0 - q);
                }
            }
        }
        let (tree, leaf_of) = grow(p, x, &sorted, &resid, &hess);
        for i in 0..n {
            if let Node::Leaf(v) = tree.nodes[leaf_of[i]] {
                f[i] += p.learning_rate * v;
            }
        }
        trees.push(tree);
        progress.update("boosting", stage as u64 + 1, p.stages as u64);
    }
    Ok(GbdtModel { task: p.task, dim: d, init, learning_rate: p.learning_rate, trees })
}

/// The best split of one node found so far.
#[derive(Clone, Copy)]
struct Best {
    gain: f64,
    feature: usize,
    threshold: f64,
}

/// Grows one tree on the residuals; returns it and each row's leaf.
fn grow(p: &GbdtParams, x: &Points, sorted: &[Vec<usize>], r: &[f64], h: &[f64]) -> (Tree, Vec<usize>) {
    let n = r.len();
    let mut nodes = vec![Node::Leaf(0.0)];
    let mut node_of = vec![0usize; n];
    let mut open = vec![0usize];
    for _depth in 0..p.max_depth {
        if open.is_empty() {
            break;
        }
        // slot of each open node, its row count and residual sum
        let mut slot = vec![usize::MAX; nodes.len()];
        for (s, &k) in open.iter().enumerate() {
            slot[k] = s;
        }
        let mut cnt = vec![0usize; open.len()];
        let mut sum = vec![0.0; open.len()];
        for i in 0..n {
            let s = slot[node_of[i]];
            if s != usize::MAX {
                cnt[s] += 1;
                sum[s] += r[i];
            }
        }
        let mut best: Vec<Option<Best>> = vec![None; open.len()];
        let mut cl = vec![0usize; open.len()];
        let mut sl = vec![0.0; open.len()];
        let mut last = vec![f64::NAN; open.len()];
        for (k, order) in sorted.iter().enumerate() {
            cl.fill(0);
            sl.fill(0.0);
            for &i in order {
                let s = slot[node_of[i]];
                if s == usize::MAX || cnt[s] < p.min_samples_split {
                    continue;
                }
                let v = x.point(i)[k];
                let (nl, nr) = (cl[s], cnt[s] - cl[s]);
                if nl >= p.min_samples_leaf && nr >= p.min_samples_leaf && v > last[s] {
                    let (ml, mr) = (sl[s] / nl as f64, (sum[s] - sl[s]) / nr as f64);
                    let gain = (nl * nr) as f64 / cnt[s] as f64 * (ml - mr).powi(2);
                    if best[s].is_none_or(|b| gain > b.gain) {
                        best[s] = Some(Best { gain, feature: k, threshold: 0.5 * (last[s] + v) });
                    }
                }
                cl[s] += 1;
                sl[s] += r[i];
                last[s] = v;
            }
        }
        let mut next = Vec::new();
        for (s, &k) in open.iter().enumerate() {
            if let Some(b) = best[s].filter(|b| b.gain > 0.0) {
                let (left, right) = (nodes.len(), nodes.len() + 1);
                nodes.push(Node::Leaf(0.0));
                nodes.push(Node::Leaf(0.0));
                nodes[k] = Node::Split { feature: b.feature, threshold: b.threshold, left, right };
                next.extend([left, right]);
            }
        }
        for i in 0..n {
            if let Node::Split { feature, threshold, left, right } = nodes[node_of[i]] {
                node_of[i] = if x.point(i)[feature] <= threshold { left } else { right };
            }
        }
        open = next;
    }
    // leaf values: mean residual (least squares) or Newton step (log-loss: h = p(1 − p))
    let mut num = vec![0.0; nodes.len()];
    let mut den = vec![0.0; nodes.len()];
    for i in 0..n {
        num[node_of[i]] += r[i];
        den[node_of[i]] += h[i];
    }
    for (k, node) in nodes.iter_mut().enumerate() {
        if let Node::Leaf(v) = node {
            *v = if den[k] > 1e-150 { num[k] / den[k] } else { 0.0 };
        }
    }
    (Tree { nodes }, node_of)
}

impl GbdtModel {
    /// The ensemble's raw score `F(x)` at every point.
    pub fn decision<B: Backend>(&self, x: &Points) -> Result<Vec<f64>, BankError> {
        if x.dim() != self.dim {
            return Err(mismatch("prediction inputs (columns)", self.dim, x.dim()));
        }
        Ok(x.iter()
            .map(|xi| self.init + self.learning_rate * self.trees.iter().map(|t| t.eval(xi)).sum::<f64>())
            .collect())
    }
}

impl Predict for GbdtModel {
    type Output = Prediction;
    type Error = BankError;

    /// Regression: `F(x)` (variance 0, a point estimate); classification: `p = σ(F(x))` and `p(1 − p)`.
    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, BankError> {
        let f = self.decision::<B>(x)?;
        Ok(match self.task {
            Task::Regression => Prediction { variance: vec![0.0; f.len()], mean: f },
            Task::Classification => {
                let mean: Vec<f64> = f.iter().map(|v| sigmoid(*v)).collect();
                Prediction { variance: mean.iter().map(|p| p * (1.0 - p)).collect(), mean }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_core::Params;
    use bke_linalg::DefaultBackend;

    /// One stump on data with a single best split, checked by brute force over every threshold, and
    /// the boosted fit of a step function.
    #[test]
    fn stump_is_the_brute_force_best_split() {
        let xs: Vec<Vec<f64>> =
            (0..40).map(|i| vec![(i as f64 * 0.37).sin(), (i as f64 * 0.11).cos()]).collect();
        let y: Vec<f64> = xs.iter().map(|v| if v[1] > 0.5 { 2.0 } else { 0.0 } + 0.1 * v[0]).collect();
        let x = Points::from_rows("x", &xs).unwrap();
        let p = GbdtParams { stages: 1, max_depth: 1, learning_rate: 1.0, ..Default::default() };
        let m =
            p.check().unwrap().fit::<DefaultBackend>(&Dataset::new(x.clone(), y.clone()).unwrap()).unwrap();
        let Node::Split { feature, threshold, .. } = m.trees[0].nodes[0] else { panic!("no split") };
        let ybar = y.iter().sum::<f64>() / 40.0;
        let sse = |k: usize, t: f64| {
            let (l, r): (Vec<f64>, Vec<f64>) = (0..40).map(|i| (xs[i][k] <= t, y[i] - ybar)).fold(
                (Vec::new(), Vec::new()),
                |(mut l, mut r), (left, v)| {
                    if left {
                        l.push(v)
                    } else {
                        r.push(v)
                    }
                    (l, r)
                },
            );
            let ss = |v: &[f64]| {
                let m = v.iter().sum::<f64>() / v.len().max(1) as f64;
                v.iter().map(|a| (a - m).powi(2)).sum::<f64>()
            };
            ss(&l) + ss(&r)
        };
        let mut best = (f64::INFINITY, 0, 0.0);
        for k in 0..2 {
            for i in 0..40 {
                let t = xs[i][k];
                if xs.iter().any(|v| v[k] > t) {
                    let s = sse(k, t);
                    if s < best.0 - 1e-12 {
                        best = (s, k, t);
                    }
                }
            }
        }
        assert_eq!(feature, best.1);
        assert!((sse(feature, threshold) - best.0).abs() < 1e-12);
        let full = GbdtParams::default()
            .check()
            .unwrap()
            .fit::<DefaultBackend>(&Dataset::new(x.clone(), y.clone()).unwrap())
            .unwrap();
        let pred = full.predict::<DefaultBackend>(&x).unwrap().mean;
        let mse = pred.iter().zip(&y).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 40.0;
        assert!(mse < 1e-3, "training mse {mse}");
    }

    /// Log-loss boosting: the first stage of a one-leaf tree is the Newton step from the prior
    /// log-odds, which is 0 (the prior log-odds already solve the score equation); a separable problem
    /// is fitted.
    #[test]
    fn logloss_boosting_separates() {
        let xs: Vec<f64> = (0..60).map(|i| i as f64 / 10.0).collect();
        let y: Vec<f64> = xs.iter().map(|&v| if v > 2.95 { 1.0 } else { 0.0 }).collect();
        let x = Points::from_1d("x", &xs).unwrap();
        let data = Dataset::new(x.clone(), y.clone()).unwrap();
        let p = GbdtParams { task: Task::Classification, ..Default::default() };
        let m = p.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        assert!((m.init - (30.0f64 / 30.0).ln()).abs() < 1e-12);
        let prob = m.predict::<DefaultBackend>(&x).unwrap().mean;
        assert!(prob.iter().zip(&y).all(|(p, y)| (p > &0.5) == (y > &0.5)));
    }
}
