//! Likelihood-free inference with deconditional mean embeddings (seed §8.3, Algorithm 8.1).
//!
//! Simulations `{θ_i, x_i}_{i=1}^n` (`x_i ~ p(x | θ_i)`, `θ_i ~ π`), prior samples `{θ̃_j}_{j=1}^m ~ p(θ)`,
//! observed statistics `y`. Kernels: `ℓ` on parameters, `k` on statistics, the ε-kernel
//! `κ_ε(y, x) = N(y; x, ε²I)` and the herding kernel `ℓ'` (the caller's choice; `ℓ` is natural). With `L = ℓ(θ, θ)`, `L̃ = ℓ(θ, θ̃)`, `A = (L + nλI)⁻¹ L̃`, `K = k(x, x)`:
//!
//! * posterior embedding (line 5): `μ(θ*) = ℓ(θ̃, θ*)ᵀ Aᵀ [KAAᵀ + mδI]⁻¹ k(y)`, i.e. the DME at the
//!   observation, `μ = Σ_j v_j ℓ(θ̃_j, ·)` with the alternative form of Def. 4.4 (`O(n³)`, `O(m)`);
//! * kernel herding (lines 6–9): `θ̂_s = argmax_{θ*} μ(θ*) − (1/s) Σ_{t<s} ℓ'(θ*, θ̂_t)` over a
//!   candidate set, or continuously by L-BFGS from the best candidates (kept inside the candidates'
//!   bounding box);
//! * learning (line 11): `q̄ = mean(Aᵀ κ_ε)`, `κ_ε = {κ_ε(y, x_i)}`, an approximate marginal
//!   likelihood `p_ε(y) ≈ E_{θ~p}[E[κ_ε(y, X) | θ]]`, maximised over `log ℓ`, `log λ`, `log ε` with
//!   the analytic gradient (`k` and `δ` do not enter `q̄` and are not learned). Caveat (seen in
//!   the seed's Fig. 5 "global" vs "local" optima): as a kernel density estimate of `p(y)`, `q̄`
//!   grows without bound as `λ → 0` and `ε` shrinks towards the distance of the nearest
//!   simulation, so [`learn`] is best used with `λ` frozen (`opts.learn.lambda = false`).
//!
//!   The gradient is `∂q̄ = (1/m)[∂κᵀ v + uᵀ ∂L̃ 1 − uᵀ ∂L v − nλ uᵀv ∂log λ]`,
//!   `u = (L + nλI)⁻¹κ`, `v = (L + nλI)⁻¹ L̃ 1`.

use crate::DmeError;
use crate::dme::{DmeForm, DmeOperator};
use crate::error::check_same_len;
use crate::ops::{contract_params, dot, mv};
use crate::ttgp::{FitOptions, multi_start, transform};
use bke_core::optim::{LbfgsOptions, minimize};
use bke_core::{CoreError, Kernel, Points, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use rayon::prelude::*;

/// The inputs of Algorithm 8.1.
#[derive(Debug, Clone, PartialEq)]
pub struct LfiData {
    /// Simulation parameters `θ_i` (n × P).
    pub theta: Points,
    /// Simulated statistics `x_i` (n × S), paired with `theta`.
    pub stats: Points,
    /// Prior samples `θ̃_j` (m × P).
    pub prior: Points,
    /// Observed statistics `y` (S).
    pub observed: Vec<f64>,
}

impl LfiData {
    /// Validates lengths and dimensions.
    pub fn new(theta: Points, stats: Points, prior: Points, observed: Vec<f64>) -> Result<Self, DmeError> {
        theta.check_len("simulations", 1)?;
        prior.check_len("prior samples", 1)?;
        check_same_len("simulation parameters θ", theta.len(), "simulated statistics x", stats.len())?;
        theta.check_dim("prior samples (must match θ)", prior.dim())?;
        stats.check_dim("observed statistics (must match x)", observed.len())?;
        crate::error::check_finite_vec("observed statistics", &observed)?;
        Ok(Self { theta, stats, prior, observed })
    }
}

/// Hyperparameters of the DME posterior.
#[derive(Debug, Clone, PartialEq)]
pub struct LfiHyper {
    /// Kernel `ℓ` on parameters.
    pub kernel_theta: Kernel,
    /// Kernel `k` on statistics (not identified by `q̄`, so never learned by [`learn`]).
    pub kernel_stats: Kernel,
    /// Width `ε` of the ε-kernel `κ_ε` (used by `q̄`).
    pub epsilon: f64,
    /// CME regulariser `λ`.
    pub lambda: f64,
    /// DME regulariser `δ` (the seed's `ε` of Def. 4.4, renamed in §8.3).
    pub delta: f64,
}

impl LfiHyper {
    /// Errors unless ε, λ, δ are positive and finite and the kernels fit parameters of dimension
    /// `dim_theta` and statistics of dimension `dim_stats`.
    pub fn check(&self, dim_theta: usize, dim_stats: usize) -> Result<(), DmeError> {
        check_positive("epsilon", self.epsilon)?;
        check_positive("lambda", self.lambda)?;
        check_positive("delta", self.delta)?;
        self.kernel_theta.check_dim(dim_theta)?;
        self.kernel_stats.check_dim(dim_stats)?;
        Ok(())
    }

    /// `(log θ_ℓ…, log λ, log ε)`: the parameters learned through `q̄`.
    pub fn log_params(&self) -> Vec<f64> {
        let mut p = self.kernel_theta.log_params();
        p.extend([self.lambda.ln(), self.epsilon.ln()]);
        p
    }

    /// The hyperparameters at [`LfiHyper::log_params`] `p` (δ unchanged).
    pub fn with_log_params(&self, p: &[f64]) -> Result<Self, DmeError> {
        let nk = self.kernel_theta.n_params();
        if p.len() != nk + 2 {
            return Err(CoreError::DimensionMismatch {
                what: "LFI log-parameters".into(),
                expected: nk + 2,
                found: p.len(),
            }
            .into());
        }
        let h = Self {
            kernel_theta: self.kernel_theta.with_log_params(&p[..nk])?,
            kernel_stats: self.kernel_stats.clone(),
            lambda: p[nk].exp(),
            epsilon: p[nk + 1].exp(),
            delta: self.delta,
        };
        check_positive("epsilon", h.epsilon)?;
        check_positive("lambda", h.lambda)?;
        Ok(h)
    }
}

/// `κ_ε(y, x_i) = (2πε²)^{−S/2} exp(−‖y − x_i‖²/(2ε²))` and `‖y − x_i‖²`.
fn eps_kernel(stats: &Points, y: &[f64], eps: f64) -> (Vec<f64>, Vec<f64>) {
    let s = y.len() as f64;
    let lognorm = -0.5 * s * (2.0 * std::f64::consts::PI * eps * eps).ln();
    let d2: Vec<f64> = stats.iter().map(|x| x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum()).collect();
    let kappa = d2.iter().map(|d| (lognorm - d / (2.0 * eps * eps)).exp()).collect();
    (kappa, d2)
}

/// `q̄` and `∂q̄/∂(log ℓ…, log λ, log ε)`.
pub fn q_bar<B: Backend>(data: &LfiData, hyper: &LfiHyper) -> Result<(f64, Vec<f64>), DmeError> {
    hyper.check(data.theta.dim(), data.stats.dim())?;
    let (n, m) = (data.theta.len(), data.prior.len());
    let kt = &hyper.kernel_theta;
    let l = kt.gram(&data.theta)?;
    let lt = kt.cross_gram(&data.theta, &data.prior)?;
    let (rp, _) = transform::<B>(&l, &Mat::zeros(n, 0), hyper.lambda)?;
    let (kappa, d2) = eps_kernel(&data.stats, &data.observed, hyper.epsilon);
    let mut u = kappa.clone();
    B::cholesky_solve_vec_in_place(rp.as_ref(), &mut u)?;
    let ones = vec![1.0; m];
    let s = mv::<B>(&lt, Trans::No, &ones)?;
    let mut v = s.clone();
    B::cholesky_solve_vec_in_place(rp.as_ref(), &mut v)?;
    let mf = m as f64;
    let value = dot(&u, &s) / mf;
    let glt = Mat::from_fn(n, m, |i, _| u[i] / mf);
    let gl = Mat::from_fn(n, n, |i, j| -u[i] * v[j] / mf);
    let mut grad = contract_params(kt, &data.theta, &data.prior, &glt);
    let g2 = contract_params(kt, &data.theta, &data.theta, &gl);
    grad.iter_mut().zip(&g2).for_each(|(a, b)| *a += b);
    grad.push(-(n as f64) * hyper.lambda * dot(&u, &v) / mf);
    let sdim = data.observed.len() as f64;
    let e2 = hyper.epsilon * hyper.epsilon;
    grad.push(kappa.iter().zip(&d2).zip(&v).map(|((k, d), vi)| k * (-sdim + d / e2) * vi).sum::<f64>() / mf);
    Ok((value, grad))
}

/// The result of [`learn`].
#[derive(Debug, Clone, PartialEq)]
pub struct LfiFit {
    /// The hyperparameters with the largest `q̄`.
    pub hyper: LfiHyper,
    /// `q̄` there.
    pub q_bar: f64,
}

/// Maximises `log q̄` over `log ℓ`, `log λ`, `log ε` by multi-start L-BFGS (`opts.starts`,
/// `opts.spread`, `opts.seed`, `opts.lbfgs`; `opts.learn.kernel_y`, `.lambda`, `.epsilon` select the
/// free parameters). `δ` is not identified by `q̄` and is left as given.
pub fn learn<B: Backend>(data: &LfiData, init: &LfiHyper, opts: &FitOptions) -> Result<LfiFit, DmeError> {
    init.check(data.theta.dim(), data.stats.dim())?;
    opts.check()?;
    let nk = init.kernel_theta.n_params();
    let mut mask = vec![opts.learn.kernel_y; nk];
    mask.extend([opts.learn.lambda, opts.learn.epsilon]);
    let objective = |p: &[f64]| {
        let h = init.with_log_params(p).ok()?;
        let (q, g) = q_bar::<B>(data, &h).ok()?;
        if !(q > 0.0) {
            return None;
        }
        Some((q.ln(), g.iter().map(|v| v / q).collect()))
    };
    let results = multi_start(&init.log_params(), &mask, &mask, opts, &objective, None);
    let best =
        results.into_iter().filter(|r| r.1.is_finite()).max_by(|a, b| a.1.total_cmp(&b.1)).ok_or_else(
            || DmeError::Optimisation("q̄ is not positive at any start; increase epsilon".into()),
        )?;
    Ok(LfiFit { hyper: init.with_log_params(&best.0)?, q_bar: best.1.exp() })
}

/// The DME posterior embedding `μ(θ) = Σ_j v_j ℓ(θ̃_j, θ)` at the observation.
#[derive(Debug, Clone)]
pub struct PosteriorEmbedding {
    prior: Points,
    kernel: Kernel,
    weights: Vec<f64>,
}

impl PosteriorEmbedding {
    /// Builds the embedding (Algorithm 8.1 line 2–5, alternative form of Def. 4.4).
    pub fn new<B: Backend>(data: &LfiData, hyper: &LfiHyper) -> Result<Self, DmeError> {
        hyper.check(data.theta.dim(), data.stats.dim())?;
        let k_stats = &hyper.kernel_stats;
        let kt = &hyper.kernel_theta;
        let k = k_stats.gram(&data.stats)?;
        let l = kt.gram(&data.theta)?;
        let lt = kt.cross_gram(&data.theta, &data.prior)?;
        let op = DmeOperator::from_grams::<B>(&k, &l, &lt, hyper.lambda, hyper.delta, DmeForm::Alternative)?;
        let y = Points::new("observed statistics", data.observed.clone(), data.observed.len())?;
        let ky = k_stats.cross_gram(&data.stats, &y)?;
        let v = op.embedding_weights::<B>(&ky)?;
        Ok(Self { prior: data.prior.clone(), kernel: kt.clone(), weights: v.col(0).to_vec() })
    }

    /// An embedding `Σ_j w_j ℓ(p_j, ·)` from given points and weights (e.g. a known distribution).
    pub fn from_weights(points: Points, kernel: Kernel, weights: Vec<f64>) -> Result<Self, DmeError> {
        check_same_len("embedding points", points.len(), "weights", weights.len())?;
        crate::error::check_finite_vec("embedding weights", &weights)?;
        kernel.check_dim(points.dim())?;
        Ok(Self { prior: points, kernel, weights })
    }

    /// The weights `v` on the prior samples.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// `μ(θ)`.
    pub fn eval(&self, theta: &[f64]) -> f64 {
        self.weights.iter().zip(self.prior.iter()).map(|(w, t)| w * self.kernel.eval(t, theta)).sum()
    }

    /// `μ(θ)` and `∇μ(θ)`.
    pub fn eval_grad(&self, theta: &[f64], grad: &mut [f64]) -> f64 {
        grad.iter_mut().for_each(|g| *g = 0.0);
        let mut buf = vec![0.0; theta.len()];
        let mut v = 0.0;
        for (w, t) in self.weights.iter().zip(self.prior.iter()) {
            v += w * self.kernel.eval_grad_x(theta, t, &mut buf);
            grad.iter_mut().zip(&buf).for_each(|(g, b)| *g += w * b);
        }
        v
    }

    /// `μ` at every point (parallel).
    pub fn at(&self, points: &Points) -> Result<Vec<f64>, DmeError> {
        points.check_dim("query parameters (must match θ)", self.prior.dim())?;
        Ok((0..points.len()).into_par_iter().map(|r| self.eval(points.point(r))).collect())
    }
}

/// Options of [`herd`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HerdingOptions {
    /// Number of super-samples `S`. Default 100.
    pub samples: usize,
    /// Optimise each sample continuously from the best candidates. Default false.
    pub continuous: bool,
    /// Number of best candidates refined when `continuous`. Default 3.
    pub refine: usize,
    /// L-BFGS iterations per refinement. Default 50.
    pub max_iter: usize,
}

impl Default for HerdingOptions {
    fn default() -> Self {
        Self { samples: 100, continuous: false, refine: 3, max_iter: 50 }
    }
}

/// Kernel herding (Algorithm 8.1 lines 6–9) of the embedding `post` over `candidates` with herding
/// kernel `herding_kernel` (`ℓ'`). Deterministic.
pub fn herd(
    post: &PosteriorEmbedding,
    candidates: &Points,
    herding_kernel: &Kernel,
    opts: &HerdingOptions,
) -> Result<Points, DmeError> {
    candidates.check_len("herding candidates", 1)?;
    herding_kernel.check_dim(candidates.dim())?;
    let mu = post.at(candidates)?;
    let (r, d) = (candidates.len(), candidates.dim());
    let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
    for p in candidates.iter() {
        for k in 0..d {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    }
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
                let mut v = post.eval_grad(t, &mut g);
                if let Some(prev) = &prev {
                    let mut buf = vec![0.0; d];
                    for p in prev.iter() {
                        v -= herding_kernel.eval_grad_x(t, p, &mut buf) / sf;
                        g.iter_mut().zip(&buf).for_each(|(gv, b)| *gv -= b / sf);
                    }
                }
                (v, g)
            };
            let mut best_v = score[order[0]];
            let lb = LbfgsOptions { max_iter: opts.max_iter, max_step: 0.5, ..LbfgsOptions::default() };
            for &c in order.iter().take(opts.refine.max(1)) {
                let r = minimize(
                    |t| {
                        let (v, g) = objective(t);
                        Some((-v, g.iter().map(|x| -x).collect()))
                    },
                    candidates.point(c).to_vec(),
                    lb,
                );
                if let Ok(r) = r {
                    let inside = r.x.iter().enumerate().all(|(k, v)| *v >= lo[k] && *v <= hi[k]);
                    if inside && -r.f > best_v {
                        best_v = -r.f;
                        best = r.x;
                    }
                }
            }
        }
        for i in 0..r {
            a[i] += herding_kernel.eval(candidates.point(i), &best);
        }
        out.extend_from_slice(&best);
    }
    Ok(Points::new("herded samples", out, d)?)
}
