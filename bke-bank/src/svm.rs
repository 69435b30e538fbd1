//! RBF support-vector classification, the kernel baseline users run as scikit-learn's `SVC`
//! (LIBSVM): the C-SVC of Cortes & Vapnik (1995) with `k(x, x') = exp(−‖x − x'‖²/(2ℓ²))` on
//! standardised inputs, `C` and `ℓ` tuned by cross-validation, probabilities by Platt scaling.
//!
//! * **Dual**: `min_α ½ αᵀQα − 1ᵀα` subject to `0 ≤ α_i ≤ C` and `sᵀα = 0`, where
//!   `Q_ij = s_i s_j k(x_i, x_j)` and `s_i = 2y_i − 1 ∈ {−1, 1}`; the decision function is
//!   `f(x) = Σ_i α_i s_i k(x_i, x) − ρ`.
//! * **Solver** ([`solve_dual`]): SMO with the second-order working-set selection of Fan, Chen & Lin
//!   (2005, WSS 2, LIBSVM's). With `g = Qα − 1`, `I_up = {t : α_t < C, s_t = 1 or α_t > 0, s_t = −1}`
//!   and `I_low` its mirror: `i = argmax_{I_up} −s_t g_t`, `j = argmin −b_t²/a_t` over `t ∈ I_low`
//!   with `b_t = −s_i g_i + s_t g_t > 0` and `a_t = K_ii + K_tt − 2K_it`; the pair moves by
//!   `α_i += s_i δ`, `α_j −= s_j δ` with `δ = b_j/a_j` clipped to the box, and `g_t += s_t δ (K_ti − K_tj)`.
//!   It stops when the maximal KKT violation `max_{I_up} −s g − min_{I_low} −s g` is below `10⁻³`
//!   (LIBSVM's default). The kernel matrix is held in `f32`, as LIBSVM's cache is.
//! * **ρ**: the mean of `s_t g_t` over the free `α_t`, else the midpoint of the KKT bounds (LIBSVM).
//! * **`C` and `ℓ`**: the grid `C ∈ {0.1, 1, 10, 100}` × `ℓ ∈ ℓ̄ · {√2, 1, 2^{−½}, ½, 2^{−3/2}, ¼}`
//!   (`ℓ̄` the median pairwise distance of the standardised inputs; scikit-learn's `gamma="scale"`
//!   is `ℓ ≈ ℓ̄/2` for standardised Gaussian inputs), the point of lowest error in a stratified
//!   3-fold cross-validation on the training rows, ties broken by the out-of-fold log-loss of the
//!   Platt probabilities below (scikit-learn's `GridSearchCV` scores accuracy alone).
//! * **Probabilities**: Platt scaling `P(y = 1 | x) = σ(A f(x) + B)` fitted by Newton's method (Lin,
//!   Lin & Weng 2007) to the out-of-fold decision values of the chosen grid point, with Platt's
//!   targets `(N₊ + 1)/(N₊ + 2)` for positives and `1/(N₋ + 2)` for negatives (scikit-learn's
//!   `probability=True` does the same with its own inner 5-fold cross-validation).
//!
//! Exact for `N ≤ max_rows` (default 5000; the kernel matrix of 5000 rows is 100 MB in `f32`);
//! above it, a subset of `max_rows` evenly spaced rows.

use crate::error::{BankError, check_count, check_labels, check_positive, mismatch};
use crate::features::Standardizer;
use crate::logistic::{sigmoid, softplus};
use bke_core::{Dataset, Estimator, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::{Backend, Mat};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Parameters of the RBF SVC baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct SvcParams {
    /// Largest number of training rows used exactly. Default 5000.
    pub max_rows: usize,
    /// Box constraints `C` tried. Default `[0.1, 1, 10, 100]`.
    pub costs: Vec<f64>,
    /// Length scales tried, as multiples of the median pairwise distance. Default
    /// `[√2, 1, 2^{−½}, ½, 2^{−3/2}, ¼]`.
    pub length_factors: Vec<f64>,
    /// Folds of the inner cross-validation that picks `C` and `ℓ`. Default 3.
    pub inner_folds: usize,
    /// Stopping tolerance on the maximal KKT violation. Default `10⁻³`.
    pub tolerance: f64,
    /// Seed of the inner folds.
    pub seed: u64,
}

impl Default for SvcParams {
    fn default() -> Self {
        let r = std::f64::consts::SQRT_2;
        Self {
            max_rows: 5000,
            costs: vec![0.1, 1.0, 10.0, 100.0],
            length_factors: vec![r, 1.0, 1.0 / r, 0.5, 0.5 / r, 0.25],
            inner_folds: 3,
            tolerance: 1e-3,
            seed: 0,
        }
    }
}

impl bke_core::Params for SvcParams {
    type Error = BankError;
    fn validate(&self) -> Result<(), BankError> {
        check_count("max_rows", self.max_rows)?;
        check_count("costs (values)", self.costs.len())?;
        check_count("length_factors (values)", self.length_factors.len())?;
        if self.inner_folds < 2 {
            return Err(crate::error::invalid(
                "inner_folds",
                self.inner_folds as f64,
                "choosing C and the length scale needs at least 2 folds",
            ));
        }
        check_positive("tolerance", self.tolerance)?;
        for &v in self.costs.iter().chain(&self.length_factors) {
            check_positive("SVC grid value", v)?;
        }
        Ok(())
    }
}

/// A symmetric kernel matrix in `f32`, column-major.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelMatrix {
    n: usize,
    data: Vec<f32>,
}

impl KernelMatrix {
    /// `exp(−d2_{rows[a], rows[b]}/(2ℓ²))` for the squared distances `d2` (`N × N`, column-major).
    fn gaussian(d2: &[f32], n_all: usize, rows: &[usize], length: f64) -> Self {
        let n = rows.len();
        let scale = -1.0 / (2.0 * length * length);
        let mut data = vec![0f32; n * n];
        data.par_chunks_mut(n.max(1)).zip(rows.par_iter()).for_each(|(col, &rb)| {
            let src = &d2[rb * n_all..(rb + 1) * n_all];
            for (v, &ra) in col.iter_mut().zip(rows) {
                *v = (f64::from(src[ra]) * scale).exp() as f32;
            }
        });
        Self { n, data }
    }

    /// Column `j`.
    fn col(&self, j: usize) -> &[f32] {
        &self.data[j * self.n..(j + 1) * self.n]
    }
}

/// A solution of the dual (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct Dual {
    /// The multipliers `α`.
    pub alpha: Vec<f64>,
    /// The offset `ρ`.
    pub rho: f64,
    /// SMO iterations taken.
    pub iterations: usize,
    /// Whether the KKT violation fell below the tolerance within the iteration limit.
    pub converged: bool,
}

/// Curvature floor for a pair whose kernel columns coincide (LIBSVM's `TAU`).
const TAU: f64 = 1e-12;

/// Solves the C-SVC dual with kernel `k` and signs `s` by SMO (module docs), at most
/// `max_iterations` pair updates.
pub fn solve_dual(k: &KernelMatrix, s: &[f64], c: f64, tolerance: f64, max_iterations: usize) -> Dual {
    let n = s.len();
    let diag: Vec<f64> = (0..n).map(|t| f64::from(k.col(t)[t])).collect();
    let mut alpha = vec![0.0; n];
    let mut g = vec![-1.0; n];
    let in_up = |a: f64, st: f64| if st > 0.0 { a < c } else { a > 0.0 };
    let in_low = |a: f64, st: f64| if st > 0.0 { a > 0.0 } else { a < c };
    let mut converged = false;
    let mut iterations = 0;
    while iterations < max_iterations {
        let mut i = None;
        let mut g_max = f64::NEG_INFINITY;
        for t in 0..n {
            if in_up(alpha[t], s[t]) && -s[t] * g[t] > g_max {
                g_max = -s[t] * g[t];
                i = Some(t);
            }
        }
        let Some(i) = i else {
            converged = true;
            break;
        };
        let ki = k.col(i);
        let (mut j, mut best, mut g_min) = (None, f64::INFINITY, f64::INFINITY);
        for t in 0..n {
            if !in_low(alpha[t], s[t]) {
                continue;
            }
            let v = -s[t] * g[t];
            g_min = g_min.min(v);
            let b = g_max - v;
            if b > 0.0 {
                let a = (diag[i] + diag[t] - 2.0 * f64::from(ki[t])).max(TAU);
                if -b * b / a < best {
                    best = -b * b / a;
                    j = Some(t);
                }
            }
        }
        let Some(j) = j.filter(|_| g_max - g_min >= tolerance) else {
            converged = true;
            break;
        };
        iterations += 1;
        let kj = k.col(j);
        let a = (diag[i] + diag[j] - 2.0 * f64::from(ki[j])).max(TAU);
        let room_i = if s[i] > 0.0 { c - alpha[i] } else { alpha[i] };
        let room_j = if s[j] > 0.0 { alpha[j] } else { c - alpha[j] };
        let delta = ((g_max + s[j] * g[j]) / a).min(room_i).min(room_j);
        alpha[i] = if delta == room_i { if s[i] > 0.0 { c } else { 0.0 } } else { alpha[i] + s[i] * delta };
        alpha[j] = if delta == room_j { if s[j] > 0.0 { 0.0 } else { c } } else { alpha[j] - s[j] * delta };
        for t in 0..n {
            g[t] += s[t] * delta * (f64::from(ki[t]) - f64::from(kj[t]));
        }
    }
    let rho = offset(&alpha, &g, s, c);
    Dual { alpha, rho, iterations, converged }
}

/// `ρ` from the gradient at the solution (module docs).
fn offset(alpha: &[f64], g: &[f64], s: &[f64], c: f64) -> f64 {
    let (mut upper, mut lower, mut sum, mut free) = (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize);
    for t in 0..alpha.len() {
        let sg = s[t] * g[t];
        let at_upper = alpha[t] >= c;
        if at_upper || alpha[t] <= 0.0 {
            if (s[t] > 0.0) != at_upper {
                upper = upper.min(sg);
            } else {
                lower = lower.max(sg);
            }
        } else {
            sum += sg;
            free += 1;
        }
    }
    match (free, upper.is_finite(), lower.is_finite()) {
        (f, ..) if f > 0 => sum / f as f64,
        (_, true, true) => 0.5 * (upper + lower),
        (_, true, false) => upper,
        (_, false, true) => lower,
        _ => 0.0,
    }
}

/// `Σ_i softplus(z_i) − t_i z_i` with `z = A f + B`: the cross-entropy of `σ(z)` against targets
/// `t` (Platt's smoothed targets while fitting, the labels when scoring).
fn cross_entropy(f: &[f64], t: &[f64], a: f64, b: f64) -> f64 {
    f.iter().zip(t).map(|(fi, ti)| softplus(a * fi + b) - ti * (a * fi + b)).sum()
}

/// Platt's sigmoid `P(y = 1 | f) = σ(A f + B)` fitted to decision values `f` and labels `y`
/// (module docs): Newton's method with a backtracking line search on the cross-entropy with
/// Platt's targets, from `A = 0`, `B = log((N₊ + 1)/(N₋ + 1))`. Returns `(A, B)`.
pub fn platt(f: &[f64], y: &[f64]) -> (f64, f64) {
    let pos = y.iter().filter(|&&v| v > 0.5).count() as f64;
    let neg = y.len() as f64 - pos;
    let t: Vec<f64> =
        y.iter().map(|&v| if v > 0.5 { (pos + 1.0) / (pos + 2.0) } else { 1.0 / (neg + 2.0) }).collect();
    let loss = |a: f64, b: f64| cross_entropy(f, &t, a, b);
    let (mut a, mut b) = (0.0, ((pos + 1.0) / (neg + 1.0)).ln());
    let mut current = loss(a, b);
    for _ in 0..100 {
        let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (0.0, 0.0, 1e-12, 0.0, 1e-12);
        for (fi, ti) in f.iter().zip(&t) {
            let p = sigmoid(a * fi + b);
            let w = p * (1.0 - p);
            ga += (p - ti) * fi;
            gb += p - ti;
            haa += w * fi * fi;
            hab += w * fi;
            hbb += w;
        }
        if ga.abs().max(gb.abs()) < 1e-5 {
            break;
        }
        let det = haa * hbb - hab * hab;
        let (da, db) = (-(hbb * ga - hab * gb) / det, -(haa * gb - hab * ga) / det);
        let mut step = 1.0;
        while step > 1e-10 {
            let next = loss(a + step * da, b + step * db);
            if next <= current + 1e-4 * step * (ga * da + gb * db) {
                a += step * da;
                b += step * db;
                current = next;
                break;
            }
            step *= 0.5;
        }
        if step <= 1e-10 {
            break;
        }
    }
    (a, b)
}

/// The test rows of `k` stratified folds of the labels `y` (each class shuffled and dealt in turn).
fn stratified_folds(y: &[f64], k: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut folds = vec![Vec::new(); k];
    let mut next = 0;
    for class in [0.0, 1.0] {
        let mut rows: Vec<usize> = (0..y.len()).filter(|&i| y[i] == class).collect();
        rows.shuffle(&mut rng);
        for r in rows {
            folds[next % k].push(r);
            next += 1;
        }
    }
    folds
}

/// One grid point's inner cross-validation: error, out-of-fold decision values and Platt log-loss.
struct GridScore {
    cost: f64,
    length: f64,
    errors: usize,
    log_loss: f64,
    decisions: Vec<f64>,
}

/// A fitted RBF SVC.
#[derive(Debug, Clone, PartialEq)]
pub struct SvcModel {
    /// Input standardisation.
    pub inputs: Standardizer,
    /// Standardised support vectors (`n_sv × d`).
    pub support: Mat,
    /// `α_i s_i` of each support vector.
    pub coefficients: Vec<f64>,
    /// The offset `ρ`.
    pub rho: f64,
    /// The chosen length scale (standardised units).
    pub length: f64,
    /// The chosen box constraint `C`.
    pub cost: f64,
    /// Platt's `(A, B)`.
    pub platt: (f64, f64),
    /// Inner cross-validation error of the chosen grid point.
    pub inner_error: f64,
    /// Whether the final SMO solve converged to the tolerance.
    pub converged: bool,
}

/// The SMO iteration limit for `n` rows (LIBSVM's is `max(10⁷, 100n)`).
fn iteration_limit(n: usize) -> usize {
    100 * n.max(1000)
}

impl Estimator for SvcParams {
    type Data = Dataset;
    type Fitted = SvcModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<SvcModel, BankError> {
        check_labels(data.y())?;
        let n0 = data.len();
        let m = params.max_rows;
        let rows: Vec<usize> = if n0 > m { (0..m).map(|k| k * n0 / m).collect() } else { (0..n0).collect() };
        let data = data.select(&rows);
        let y = data.y();
        let positives = y.iter().filter(|&&v| v == 1.0).count();
        let smaller = positives.min(y.len() - positives);
        if smaller < params.inner_folds {
            return Err(BankError::TooFewRows {
                what: format!("the RBF SVC ({} inner folds, rows of the smaller class)", params.inner_folds),
                needed: params.inner_folds,
                found: smaller,
            });
        }
        let inputs = Standardizer::fit(data.x());
        let x = inputs.apply(data.x());
        let n = x.nrows();
        let median = bke_core::median_distance(&Points::from_mat("inputs", &x)?).unwrap_or(1.0);
        let d2: Vec<f32> =
            crate::distances::pairwise::<B>(&x)?.as_slice().iter().map(|&v| v as f32).collect();
        let s: Vec<f64> = y.iter().map(|&v| 2.0 * v - 1.0).collect();
        let folds = stratified_folds(y, params.inner_folds, params.seed);
        let scores = grid_scores(params, &d2, n, y, &s, &folds, median, progress)?;
        let best = scores
            .iter()
            .min_by(|a, b| a.errors.cmp(&b.errors).then(a.log_loss.total_cmp(&b.log_loss)))
            .expect("the grid is not empty (validated)");
        let all: Vec<usize> = (0..n).collect();
        let k = KernelMatrix::gaussian(&d2, n, &all, best.length);
        drop(d2);
        let dual = solve_dual(&k, &s, best.cost, params.tolerance, iteration_limit(n));
        let sv: Vec<usize> = (0..n).filter(|&i| dual.alpha[i] > 0.0).collect();
        Ok(SvcModel {
            inputs,
            support: Mat::from_fn(sv.len(), x.ncols(), |a, c| x[(sv[a], c)]),
            coefficients: sv.iter().map(|&i| dual.alpha[i] * s[i]).collect(),
            rho: dual.rho,
            length: best.length,
            cost: best.cost,
            platt: platt(&best.decisions, y),
            inner_error: best.errors as f64 / n as f64,
            converged: dual.converged,
        })
    }
}

/// The inner cross-validation of every grid point (module docs): per length scale and fold one
/// kernel matrix, the costs solved in parallel.
#[allow(clippy::too_many_arguments)]
fn grid_scores(
    params: &SvcParams,
    d2: &[f32],
    n: usize,
    y: &[f64],
    s: &[f64],
    folds: &[Vec<usize>],
    median: f64,
    progress: &dyn Progress,
) -> Result<Vec<GridScore>, BankError> {
    let total = (params.length_factors.len() * folds.len()) as u64;
    let mut done = 0;
    let mut scores = Vec::new();
    for &factor in &params.length_factors {
        let length = factor * median;
        let mut decisions = vec![vec![0.0; n]; params.costs.len()];
        for test in folds {
            progress.checkpoint()?;
            let mut is_test = vec![false; n];
            test.iter().for_each(|&i| is_test[i] = true);
            let train: Vec<usize> = (0..n).filter(|&i| !is_test[i]).collect();
            let k = KernelMatrix::gaussian(d2, n, &train, length);
            let st: Vec<f64> = train.iter().map(|&i| s[i]).collect();
            let limit = iteration_limit(train.len());
            let duals: Vec<Dual> =
                params.costs.par_iter().map(|&c| solve_dual(&k, &st, c, params.tolerance, limit)).collect();
            let scale = -1.0 / (2.0 * length * length);
            for (dual, out) in duals.iter().zip(&mut decisions) {
                let sv: Vec<(usize, f64)> = (0..train.len())
                    .filter(|&a| dual.alpha[a] > 0.0)
                    .map(|a| (train[a], dual.alpha[a] * st[a]))
                    .collect();
                for &t in test {
                    let col = &d2[t * n..(t + 1) * n];
                    out[t] = sv.iter().map(|&(r, w)| w * (f64::from(col[r]) * scale).exp()).sum::<f64>()
                        - dual.rho;
                }
            }
            done += 1;
            progress.update("SVC grid (C, length scale) x inner folds", done, total);
        }
        for (&cost, decisions) in params.costs.iter().zip(decisions) {
            let errors = decisions.iter().zip(s).filter(|(f, si)| **f * **si <= 0.0).count();
            let (a, b) = platt(&decisions, y);
            let log_loss = cross_entropy(&decisions, y, a, b);
            scores.push(GridScore { cost, length, errors, log_loss, decisions });
        }
    }
    Ok(scores)
}

impl SvcModel {
    /// The decision function `f(x)` at `x` (original units).
    pub fn decision<B: Backend>(&self, x: &Points) -> Result<Vec<f64>, BankError> {
        let d = self.support.ncols();
        if x.dim() != d {
            return Err(mismatch("prediction inputs (columns)", d, x.dim()));
        }
        let xt = self.inputs.apply(x);
        let d2 = crate::distances::between::<B>(&xt, &self.support)?;
        let scale = -1.0 / (2.0 * self.length * self.length);
        Ok((0..xt.nrows())
            .map(|i| {
                let k = |a: usize| (d2[(i, a)] * scale).exp();
                self.coefficients.iter().enumerate().map(|(a, w)| w * k(a)).sum::<f64>() - self.rho
            })
            .collect())
    }
}

impl Predict for SvcModel {
    type Output = Prediction;
    type Error = BankError;

    /// `P(y = 1 | x) = σ(A f(x) + B)` (Platt) and its Bernoulli variance.
    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, BankError> {
        let (a, b) = self.platt;
        let p: Vec<f64> = self.decision::<B>(x)?.iter().map(|f| sigmoid(a * f + b)).collect();
        let variance = p.iter().map(|q| q * (1.0 - q)).collect();
        Ok(Prediction { mean: p, variance })
    }
}

#[cfg(test)]
mod tests;
