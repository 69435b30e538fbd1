//! Posterior embeddings as weighted samples, their moments, and kernel herding (Chen, Welling &
//! Smola 2010; seed 004 Algorithm 8.1 lines 6–9).
//!
//! The nonparametric Bayes' rules of this crate (the DME of [`crate::lfi`], KBR of [`crate::kbr`])
//! return a posterior embedding `μ = Σ_j w_j ℓ(t_j, ·)`: a signed weighted sample `{t_j, w_j}`.
//! [`PosteriorEmbedding`] normalises the weights to sum to one (`Σ_j w_j = 1`), so that `μ` embeds a
//! probability measure: the moments `Σ_j w_j t_j` are the posterior's, and the herding objective
//!
//! `θ̂_s = argmax_θ μ'(θ) − (1/s) Σ_{t<s} ℓ'(θ, θ̂_t)`
//!
//! compares a mean embedding (values up to `1`) with the average kernel of the samples drawn so
//! far, which is what lets the repulsion compete with the attraction (unnormalised weights with
//! `Σ w ≪ 1` spread the samples over the candidates; with `Σ w ≫ 1` herding collapses onto the
//! mode). Herding minimises the maximum mean discrepancy of the herding kernel `ℓ'` greedily, so
//! both terms use `ℓ'`: `μ'(θ) = Σ_j w_j ℓ'(t_j, θ)` (with `ℓ' = ℓ`, the default, this is
//! seed 004 Algorithm 8.1 exactly).

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len, invalid};
use bke_core::budget::Bytes;
use bke_core::optim::{LbfgsOptions, minimize};
use bke_core::{Kernel, Points};
use rayon::prelude::*;

/// A posterior embedding `Σ_j w_j ℓ(t_j, ·)` with weights that sum to one (they may be negative).
#[derive(Debug, Clone, PartialEq)]
pub struct PosteriorEmbedding {
    points: Points,
    kernel: Kernel,
    weights: Vec<f64>,
}

impl PosteriorEmbedding {
    /// The embedding of the signed measure `Σ_j w_j δ_{t_j}` normalised to unit mass. Errors unless
    /// the weights are finite, one per point, and their sum is positive (a non-positive mass means
    /// the estimator's regularisation is too weak for these data: the message says so).
    pub fn new(points: Points, kernel: Kernel, weights: Vec<f64>) -> Result<Self, DmeError> {
        check_same_len("embedding points", points.len(), "weights", weights.len())?;
        check_finite_vec("embedding weights", &weights)?;
        kernel.check_dim(points.dim())?;
        let total: f64 = weights.iter().sum();
        if !(total > 0.0) {
            return Err(invalid(
                "total posterior mass",
                total,
                "the embedding weights must sum to a positive number; increase the regulariser \
                 (delta) or widen the kernels",
            ));
        }
        Ok(Self { points, kernel, weights: weights.iter().map(|w| w / total).collect() })
    }

    /// The points `t_j`.
    pub fn points(&self) -> &Points {
        &self.points
    }

    /// The normalised weights `w_j` (`Σ_j w_j = 1`).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The kernel `ℓ` of the embedding.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// Total negative weight `Σ_j min(w_j, 0)`: how far the estimate is from a probability measure.
    pub fn negative_mass(&self) -> f64 {
        self.weights.iter().filter(|w| **w < 0.0).sum()
    }

    /// The posterior mean `Σ_j w_j t_j`.
    pub fn mean(&self) -> Vec<f64> {
        let mut m = vec![0.0; self.points.dim()];
        for (w, t) in self.weights.iter().zip(self.points.iter()) {
            m.iter_mut().zip(t).for_each(|(a, b)| *a += w * b);
        }
        m
    }

    /// The posterior covariance `Σ_j w_j (t_j − m)(t_j − m)ᵀ` (row-major `d × d`; with negative
    /// weights its diagonal can be negative).
    pub fn covariance(&self) -> Vec<f64> {
        let (d, m) = (self.points.dim(), self.mean());
        let mut c = vec![0.0; d * d];
        for (w, t) in self.weights.iter().zip(self.points.iter()) {
            for a in 0..d {
                for b in 0..d {
                    c[a * d + b] += w * (t[a] - m[a]) * (t[b] - m[b]);
                }
            }
        }
        c
    }

    /// `μ(θ) = Σ_j w_j k(t_j, θ)` with kernel `k`.
    fn eval_with(&self, k: &Kernel, theta: &[f64]) -> f64 {
        self.weights.iter().zip(self.points.iter()).map(|(w, t)| w * k.eval(t, theta)).sum()
    }

    /// `μ(θ)` and `∇μ(θ)` with kernel `k`.
    fn eval_grad_with(&self, k: &Kernel, theta: &[f64], grad: &mut [f64]) -> f64 {
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut buf = vec![0.0; theta.len()];
        let mut v = 0.0;
        for (w, t) in self.weights.iter().zip(self.points.iter()) {
            v += w * k.eval_grad_x(theta, t, &mut buf);
            grad.iter_mut().zip(&buf).for_each(|(g, b)| *g += w * b);
        }
        v
    }

    /// `μ(θ)`.
    pub fn eval(&self, theta: &[f64]) -> f64 {
        self.eval_with(&self.kernel, theta)
    }

    /// `μ(θ)` and `∇μ(θ)`.
    pub fn eval_grad(&self, theta: &[f64], grad: &mut [f64]) -> f64 {
        self.eval_grad_with(&self.kernel, theta, grad)
    }

    /// `μ` at every point (parallel).
    pub fn at(&self, points: &Points) -> Result<Vec<f64>, DmeError> {
        points.check_dim("query parameters (must match θ)", self.points.dim())?;
        Ok((0..points.len()).into_par_iter().map(|r| self.eval(points.point(r))).collect())
    }

    /// Kernel herding of the embedding over `candidates` (seed 004 Algorithm 8.1 lines 6–9; see the module
    /// docs). Deterministic.
    pub fn herd(&self, candidates: &Points, params: &HerdingParams) -> Result<Points, DmeError> {
        herd(self, candidates, params)
    }
}

/// Settings of kernel herding.
#[derive(Debug, Clone, PartialEq)]
pub struct HerdingParams {
    /// Number of super-samples `S`. Default 100.
    pub samples: usize,
    /// Herding kernel `ℓ'` [default: the embedding's kernel `ℓ`].
    pub kernel: Option<Kernel>,
    /// Optimise each sample continuously by L-BFGS from the best candidates (kept inside the
    /// candidates' bounding box). Default false.
    pub continuous: bool,
    /// Number of best candidates refined when `continuous`. Default 3.
    pub refine: usize,
    /// L-BFGS iterations per refinement. Default 50.
    pub max_iter: usize,
}

impl Default for HerdingParams {
    fn default() -> Self {
        Self { samples: 100, kernel: None, continuous: false, refine: 3, max_iter: 50 }
    }
}

fn bounding_box(candidates: &Points) -> (Vec<f64>, Vec<f64>) {
    let d = candidates.dim();
    let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
    for p in candidates.iter() {
        for k in 0..d {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
    (lo, hi)
}

fn herd(post: &PosteriorEmbedding, candidates: &Points, opts: &HerdingParams) -> Result<Points, DmeError> {
    candidates.check_len("herding candidates", 1)?;
    candidates.check_dim("herding candidates (must match θ)", post.points.dim())?;
    let kernel = opts.kernel.as_ref().unwrap_or(&post.kernel);
    kernel.check_dim(candidates.dim())?;
    let (r, d) = (candidates.len(), candidates.dim());
    // The samples, and the caller's copy of them (e.g. as JSON: about 5 values' worth per number).
    let setting = format!("herding samples = {} (of dimension {d})", opts.samples);
    bke_core::budget::check(&setting, Bytes::f64s(opts.samples.saturating_mul(d)).times(6))?;
    let mu: Vec<f64> = (0..r).into_par_iter().map(|i| post.eval_with(kernel, candidates.point(i))).collect();
    let (lo, hi) = bounding_box(candidates);
    let mut a = vec![0.0; r];
    let mut out: Vec<f64> = Vec::with_capacity(opts.samples * d);
    for s in 1..=opts.samples {
        let sf = s as f64;
        let score: Vec<f64> = (0..r).map(|i| mu[i] - a[i] / sf).collect();
        let mut order: Vec<usize> = (0..r).collect();
        order.sort_by(|&i, &j| score[j].total_cmp(&score[i]).then(i.cmp(&j)));
        let mut best = candidates.point(order[0]).to_vec();
        if opts.continuous {
            let prev = Points::new("samples", out.clone(), d).ok();
            let objective = |t: &[f64]| {
                let mut g = vec![0.0; d];
                let mut v = post.eval_grad_with(kernel, t, &mut g);
                if let Some(prev) = &prev {
                    let mut buf = vec![0.0; d];
                    for p in prev.iter() {
                        v -= kernel.eval_grad_x(t, p, &mut buf) / sf;
                        g.iter_mut().zip(&buf).for_each(|(gv, b)| *gv -= b / sf);
                    }
                }
                (v, g)
            };
            let mut best_v = score[order[0]];
            let lb = LbfgsOptions { max_iter: opts.max_iter, max_step: 0.5, ..LbfgsOptions::default() };
            for &c in order.iter().take(opts.refine.max(1)) {
                let res = minimize(
                    |t| {
                        let (v, g) = objective(t);
                        Some((-v, g.iter().map(|x| -x).collect()))
                    },
                    candidates.point(c).to_vec(),
                    lb,
                );
                if let Ok(res) = res {
                    let inside = res.x.iter().enumerate().all(|(k, v)| *v >= lo[k] && *v <= hi[k]);
                    if inside && -res.f > best_v {
                        best_v = -res.f;
                        best = res.x;
                    }
                }
            }
        }
        for (i, ai) in a.iter_mut().enumerate() {
            *ai += kernel.eval(candidates.point(i), &best);
        }
        out.extend_from_slice(&best);
    }
    Ok(Points::new("herded samples", out, d)?)
}

/// The Wasserstein-1 distance `∫₀¹ |F_a⁻¹(u) − F_b⁻¹(u)| du` between the empirical distributions of
/// two 1-D samples (for comparing herded samples with exact posterior samples).
pub fn wasserstein1(a: &[f64], b: &[f64]) -> f64 {
    let sorted = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s
    };
    let (a, b) = (sorted(a), sorted(b));
    if a.is_empty() || b.is_empty() {
        return f64::NAN;
    }
    // Walk the merged quantile breakpoints k/|a| and l/|b|.
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut u, mut w) = (0, 0, 0.0, 0.0);
    while i < a.len() && j < b.len() {
        let next = ((i + 1) as f64 / na).min((j + 1) as f64 / nb);
        w += (next - u) * (a[i] - b[j]).abs();
        u = next;
        if (i + 1) as f64 / na <= next {
            i += 1;
        }
        if (j + 1) as f64 / nb <= next {
            j += 1;
        }
    }
    w
}
