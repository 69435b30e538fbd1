//! Likelihood-free inference with deconditional mean embeddings (seed 004 §8.3, Algorithm 8.1).
//!
//! Simulations `{θ_i, x_i}_{i=1}^n` (`x_i ~ p(x | θ_i)`, `θ_i ~ π`), prior samples
//! `{θ̃_j}_{j=1}^m ~ p(θ)`, observed statistics `y`. Kernels: `ℓ` on parameters, `k` on statistics,
//! the ε-kernel `κ_ε(y, x) = N(y; x, diag(ε²))`. With `L = ℓ(θ, θ)`, `L̃ = ℓ(θ, θ̃)`,
//! `A = (L + nλI)⁻¹ L̃`, `K = k(x, x)`:
//!
//! * posterior embedding (line 5): `μ(θ*) = ℓ(θ̃, θ*)ᵀ Aᵀ [KAAᵀ + mδI]⁻¹ k(y)`, the DME at the
//!   observation (seed 004 Def. 4.4), weights `v` on the prior samples normalised to unit mass
//!   ([`PosteriorEmbedding`]); then kernel herding (lines 6–9, [`crate::herding`]);
//! * learning (line 11): `q̄ = mean(Aᵀ κ_ε)`, `κ_ε = {κ_ε(y, x_i)}`, an estimate of the evidence
//!   `p_ε(y) = E_{θ~p} E[κ_ε(y, X) | θ]`, with the analytic gradient
//!   `∂q̄ = (1/m)[∂κᵀ v + uᵀ ∂L̃ 1 − uᵀ ∂L v − nλ uᵀv ∂log λ]`, `u = (L + nλI)⁻¹κ`,
//!   `v = (L + nλI)⁻¹ L̃ 1`.
//!
//! # Why the posterior collapsed, and the defaults
//! On a conjugate problem (θ ~ N(0, 1), x | θ ~ N(θ, 0.5²), 600 simulations) the bke 0.1 defaults
//! (`ℓ`, `k` of lengthscale 1, `λ = δ = 10⁻²`) herded samples with sd 0.003 around 0.95 instead of
//! N(0.8, 0.447²). The cause is the DME itself, not herding: its evidence operator
//! `C'_XX = C_{X|Y} C_YY C_{X|Y}ᵀ` lacks the simulator noise `E[Cov(φ(X) | θ)]` of the true
//! `C_XX` (seed 004 Thm 6.1: the DMO is the posterior operator only for noise-free simulators, or
//! empirically when the likelihood CME interpolates every simulation). With `λ` smoothing the CME
//! and a small `δ`, `[KAAᵀ + mδI]⁻¹` deconvolves the noise away and the DME tends to the
//! pseudo-inverse of the likelihood: a point mass at the θ whose mean statistic is `y`. A `δ` of
//! the order of the spectrum of `KAAᵀ/m` (whose eigenvalues are at most about 1 for unit-amplitude
//! kernels, since `AAᵀ/m ≈ I/n` when the CME interpolates) keeps the regularised inverse from
//! deconvolving: as `δ` grows, `v → Aᵀk(y)/(mδ)`, the prior samples weighted by the CME-regressed
//! likelihood `E[k(X, y) | θ̃_j]` (the kernel-means posterior of Hsu & Ramos, AISTATS 2019).
//! Hence the defaults: `δ = 1`; `k` of the ε-kernel's shape (SE with lengthscales ε), so that the
//! posterior is the ε-approximate posterior whose evidence `q̄` measures; `ℓ` by Silverman's rule on
//! the simulation parameters ([`rule_of_thumb`]), ε by half of it on the statistics
//! ([`default_epsilon`]), widened at an observation where fewer than `√n` simulations would carry
//! weight ([`adaptive_epsilon`]); `λ = 10⁻³`.
//!
//! `q̄` estimates `p_ε(y)`, a quantity that does not depend on `ℓ` or `λ`: maximising it over them
//! fits estimation error (ridge shrinkage is smallest for `ℓ → ∞`, which is where the bke 0.1
//! `--learn` went). Learning therefore maximises the posterior `log q̄ + log π(ℓ)` with a
//! log-normal hyperprior centred on the initial values ([`LfiLearnParams::prior_sd`]): a proper
//! optimum that moves the bandwidths only as far as `q̄` has evidence for.
//!
//! # Why learning leaves ε alone
//! ε is not a hyperparameter of the model but the tolerance of the approximation: the target is
//! the posterior `p(θ | y)`, the `ε → 0` limit of `p_ε(θ | y) ∝ p(θ) p_ε(y | θ)` (seed 004 §8.3),
//! and `p_ε(θ | y) → p(θ)` as ε grows. `q̄` (Algorithm 8.1 line 11) estimates the evidence
//! `p_ε(y) = ∫ p(x) N(y; x, diag(ε²)) dx` of the ε-blurred model, and maximising it over ε is
//! maximum likelihood of a noise level from one observation: `∂ log p_ε(y)/∂ log ε_d =
//! E[(y_d − x_d)²/ε_d² − 1]` under the ε-weighted simulations. It widens ε wherever the
//! observation lies where `p(x)` is convex — a tail, or any sparse region of many statistics,
//! which with finite `n` is the usual case — because explaining `y` as ε-noise raises the
//! evidence, and it narrows every statistic that does not discriminate, through the normaliser
//! `Π_d ε_d⁻¹` alone. Neither measures the posterior's accuracy. On Lotka–Volterra (9 statistics,
//! `repro lotka-volterra`) learning ε doubled the widths of the two informative statistics and
//! returned the prior (95 % widths 6.4 of the prior's 7, mean error 1.9 where the default ε gives
//! 1.0); on a 2-D conjugate problem with the observation in the tail it moved the posterior mean
//! of θ₁ from 1.30 to 0.94 (exact 1.60, prior 0). So learning keeps ε at the data-scaled width ([`adaptive_epsilon`]:
//! the narrowest at which `√n` simulations carry weight) or the given one, and learns `ℓ` (and `λ`
//! when asked). [`LfiLearnParams::epsilon`] opts in to learning ε, and then only to narrow it: a
//! width above the initial one is never taken.

use crate::DmeError;
use crate::dme::{DmeForm, DmeOperator};
use crate::error::{check_finite_vec, check_same_len};
use crate::herding::PosteriorEmbedding;
use crate::learn::{MultiStartOptions, best_start, multi_start};
use crate::ops::{contract_params, contract_params_symmetric, mv};
use crate::ttgp::transform;
use bke_core::numeric::dot;
use bke_core::{CoreError, Estimator, Kernel, KernelFamily, Params, Points, Progress, Valid, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use serde::Serialize;

/// The inputs of seed 004 Algorithm 8.1.
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
        check_finite_vec("observed statistics", &observed)?;
        Ok(Self { theta, stats, prior, observed })
    }

    /// The observation as a one-row point set.
    pub(crate) fn observed_points(&self) -> Result<Points, DmeError> {
        Ok(Points::new("observed statistics", self.observed.clone(), self.observed.len())?)
    }
}

/// Silverman's rule-of-thumb bandwidths of `points` (`n × d`), per dimension:
/// `min(sd, IQR/1.349) · (4/((d + 2) n))^{1/(d+4)}` (a dimension without spread gets spread 1).
pub fn rule_of_thumb(points: &Points) -> Vec<f64> {
    let (n, d) = (points.len(), points.dim());
    let factor = (4.0 / ((d as f64 + 2.0) * n.max(1) as f64)).powf(1.0 / (d as f64 + 4.0));
    (0..d)
        .map(|k| {
            let mut v: Vec<f64> = points.iter().map(|p| p[k]).collect();
            v.sort_by(f64::total_cmp);
            let mean = v.iter().sum::<f64>() / n as f64;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n.saturating_sub(1).max(1) as f64)
                .sqrt();
            let q = |p: f64| v[((n - 1) as f64 * p).round() as usize];
            let iqr = (q(0.75) - q(0.25)) / 1.349;
            let spread = if iqr > 0.0 { sd.min(iqr) } else { sd };
            factor * if spread > 0.0 && spread.is_finite() { spread } else { 1.0 }
        })
        .collect()
}

/// The default widths ε of the ε-kernel: half the [`rule_of_thumb`] bandwidths of the simulated
/// statistics. Undersmoothing: the ε-approximate posterior's likelihood is the true one blurred by
/// `N(0, diag(ε²))`, which inflates the posterior spread unless ε is well below the simulator noise;
/// on the conjugate and exponential–gamma problems of the tests, half of Silverman's width gives
/// sd errors of 5–9% at 600–1200 simulations where the full width gives 8–12%.
pub fn default_epsilon(stats: &Points) -> Vec<f64> {
    rule_of_thumb(stats).iter().map(|w| 0.5 * w).collect()
}

/// The effective number of simulations the default ε-kernel must weight at the observation:
/// `√n`, at least 10, at most `n/2` (a `k`-nearest-neighbour rate: `k → ∞` and `k/n → 0`).
pub fn min_effective_simulations(n: usize) -> f64 {
    (n as f64).sqrt().max(10.0).min(0.5 * n as f64)
}

/// The default widths at the observation `y`: [`default_epsilon`] widened by the smallest factor
/// `s ≥ 1` at which the ε-kernel weights `κ_i ∝ exp(−½ Σ_k ((y_k − x_ik)/(s ε_k))²)` of the
/// simulations have an effective sample size `(Σ κ_i)² / Σ κ_i²` of at least
/// [`min_effective_simulations`]. An observation in a sparse region of the simulations (a tail, or
/// many statistics) otherwise leaves the DME's weights on a handful of simulations: a posterior far
/// narrower than the data support, or none (every weight underflows). The effective sample size
/// grows with `s` (its log-derivative in `1/s²` is `E_{2t}[a] − E_t[a] ≤ 0`, with `a_i` the squared
/// scaled distances and `E_t` the mean under weights `e^{−t a_i}`), so bisection finds `s`.
pub fn adaptive_epsilon(stats: &Points, y: &[f64]) -> Vec<f64> {
    let eps = default_epsilon(stats);
    let width = |d: usize| if eps.len() == 1 { eps[0] } else { eps[d] };
    let a: Vec<f64> =
        stats.iter().map(|x| (0..y.len()).map(|d| ((y[d] - x[d]) / width(d)).powi(2)).sum()).collect();
    let a_min = a.iter().copied().fold(f64::INFINITY, f64::min);
    let ess = |s: f64| {
        let w: Vec<f64> = a.iter().map(|ai| (-(ai - a_min) / (2.0 * s * s)).exp()).collect();
        let (sum, sq) = w.iter().fold((0.0, 0.0), |(t, q), wi| (t + wi, q + wi * wi));
        sum * sum / sq
    };
    let target = min_effective_simulations(stats.len());
    if !a_min.is_finite() || ess(1.0) >= target {
        return eps;
    }
    // ESS(s) ≥ target at s = hi; bisect on log s.
    let (mut lo, mut hi) = (1.0f64, 2.0f64);
    while ess(hi) < target && hi < 1e8 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..40 {
        let mid = (lo * hi).sqrt();
        if ess(mid) >= target { hi = mid } else { lo = mid }
    }
    eps.iter().map(|e| e * hi).collect()
}

/// The DME posterior of seed 004 Algorithm 8.1. Unset kernels and widths are chosen from the data (see the
/// module docs): `ℓ` squared exponential with [`rule_of_thumb`] lengthscales of the simulation
/// parameters, ε by [`adaptive_epsilon`], `k` the ε-kernel's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct LfiParams {
    /// Kernel `ℓ` on parameters [default: SE, rule-of-thumb lengthscales].
    pub kernel_theta: Option<Kernel>,
    /// Kernel `k` on statistics [default: SE with lengthscales ε, following ε when it is learned].
    pub kernel_stats: Option<Kernel>,
    /// Widths ε of the ε-kernel: one, or one per statistic [default: [`adaptive_epsilon`]].
    pub epsilon: Option<Vec<f64>>,
    /// CME regulariser `λ > 0`. Default `10⁻³`.
    pub lambda: f64,
    /// DME regulariser `δ > 0` (`ε` in seed 004 Def. 4.4, renamed `δ` in §8.3). Default 1.
    pub delta: f64,
    /// Learn `ℓ` (and optionally `λ`, ε) by maximising `q̄` under a hyperprior. Default: none.
    pub learn: Option<LfiLearnParams>,
}

impl Default for LfiParams {
    fn default() -> Self {
        Self { kernel_theta: None, kernel_stats: None, epsilon: None, lambda: 1e-3, delta: 1.0, learn: None }
    }
}

/// How [`LfiParams`] learns hyperparameters from `q̄` (seed 004 Algorithm 8.1 line 11).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LfiLearnParams {
    /// Learn `λ` too (`q̄` grows without bound as `λ → 0`, so it is frozen by default).
    pub lambda: bool,
    /// Learn ε too, narrowing only: each width may shrink below its initial value, never grow past
    /// it (`q̄` rewards widening ε towards the prior; see the module docs). Default false: ε stays
    /// at its initial width.
    pub epsilon: bool,
    /// Standard deviation of the log-normal hyperprior on every learned hyperparameter, centred on
    /// its initial value (`∞`: plain maximisation of `q̄`, which has no proper optimum). Default 1.
    pub prior_sd: f64,
    /// Multi-start L-BFGS settings.
    pub search: MultiStartOptions,
}

impl Default for LfiLearnParams {
    fn default() -> Self {
        Self { lambda: false, epsilon: false, prior_sd: 1.0, search: MultiStartOptions::default() }
    }
}

impl Params for LfiParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        check_positive("lambda", self.lambda)?;
        check_positive("delta", self.delta)?;
        if let Some(eps) = &self.epsilon {
            if eps.is_empty() {
                return Err(CoreError::Empty { what: "epsilon".into(), needed: 1 }.into());
            }
            for &e in eps {
                check_positive("epsilon", e)?;
            }
        }
        if let Some(l) = &self.learn {
            l.search.validate()?;
            check_positive("prior_sd", l.prior_sd.min(f64::MAX))?;
        }
        Ok(())
    }
}

/// The JSON of ε: a number when isotropic, else one per statistic.
fn one_or_many<S: serde::Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
    match v {
        [one] => one.serialize(s),
        many => many.serialize(s),
    }
}

/// The hyperparameters a DME posterior was computed with (given, chosen from the data, or
/// learned). JSON: `{"kernel_theta", "lengthscale_theta", "kernel_stat", "lengthscale_stat",
/// "epsilon", "lambda", "delta"}` (`epsilon` a number when isotropic).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LfiHyperparameters {
    /// Family of `ℓ`.
    pub kernel_theta: String,
    /// Lengthscales of `ℓ`.
    pub lengthscale_theta: Vec<f64>,
    /// Family of `k`.
    pub kernel_stat: String,
    /// Lengthscales of `k`.
    pub lengthscale_stat: Vec<f64>,
    /// Widths ε of the ε-kernel.
    #[serde(serialize_with = "one_or_many")]
    pub epsilon: Vec<f64>,
    /// CME regulariser `λ`.
    pub lambda: f64,
    /// DME regulariser `δ`.
    pub delta: f64,
    #[serde(skip)]
    theta: Option<Kernel>,
    #[serde(skip)]
    stats: Option<Kernel>,
}

impl LfiHyperparameters {
    /// From kernels and values.
    pub fn new(
        kernel_theta: Kernel,
        kernel_stats: Kernel,
        epsilon: Vec<f64>,
        lambda: f64,
        delta: f64,
    ) -> Self {
        Self {
            kernel_theta: kernel_theta.family().spec(),
            lengthscale_theta: kernel_theta.lengthscales().to_vec(),
            kernel_stat: kernel_stats.family().spec(),
            lengthscale_stat: kernel_stats.lengthscales().to_vec(),
            epsilon,
            lambda,
            delta,
            theta: Some(kernel_theta),
            stats: Some(kernel_stats),
        }
    }

    /// The kernel `ℓ` on parameters.
    pub fn theta_kernel(&self) -> &Kernel {
        self.theta.as_ref().expect("built by new")
    }

    /// The kernel `k` on statistics.
    pub fn stats_kernel(&self) -> &Kernel {
        self.stats.as_ref().expect("built by new")
    }

    fn check(&self, data: &LfiData) -> Result<(), DmeError> {
        check_positive("lambda", self.lambda)?;
        check_positive("delta", self.delta)?;
        self.theta_kernel().check_dim(data.theta.dim())?;
        self.stats_kernel().check_dim(data.stats.dim())?;
        check_epsilon_len(&self.epsilon, data)
    }
}

fn check_epsilon_len(eps: &[f64], data: &LfiData) -> Result<(), DmeError> {
    if eps.len() != 1 && eps.len() != data.stats.dim() {
        return Err(CoreError::DimensionMismatch {
            what: "epsilon (one, or one per statistic)".into(),
            expected: data.stats.dim(),
            found: eps.len(),
        }
        .into());
    }
    Ok(())
}

/// `κ_ε(y, x_i) = Π_d N(y_d; x_{id}, ε_d²)` and `∂κ_ε/∂log ε_d = κ (−1 + (y_d − x_{id})²/ε_d²)`,
/// both divided by `e^c`, `c = max_i log κ_ε(y, x_i)` (returned), so that they do not underflow when
/// every simulation is far from `y` in many dimensions.
fn eps_kernel(stats: &Points, y: &[f64], eps: &[f64]) -> (Vec<f64>, Vec<Vec<f64>>, f64) {
    let width = |d: usize| if eps.len() == 1 { eps[0] } else { eps[d] };
    let s = y.len();
    let lognorm: f64 = (0..s).map(|d| -0.5 * (2.0 * std::f64::consts::PI * width(d).powi(2)).ln()).sum();
    let mut log_kappa = Vec::with_capacity(stats.len());
    let mut z2 = Vec::with_capacity(stats.len());
    for x in stats.iter() {
        let zd: Vec<f64> = (0..s).map(|d| ((y[d] - x[d]) / width(d)).powi(2)).collect();
        log_kappa.push(lognorm - 0.5 * zd.iter().sum::<f64>());
        z2.push(zd);
    }
    let shift = log_kappa.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let kappa: Vec<f64> = log_kappa.iter().map(|l| (l - shift).exp()).collect();
    let grad = (0..eps.len())
        .map(|e| {
            let dims = if eps.len() == 1 { 0..s } else { e..e + 1 };
            kappa
                .iter()
                .zip(&z2)
                .map(|(k, zd)| k * zd[dims.clone()].iter().map(|z| z - 1.0).sum::<f64>())
                .collect()
        })
        .collect();
    (kappa, grad, shift)
}

/// `q̄ = mean(Aᵀκ_ε)` and its gradient with respect to `(log θ_ℓ…, log λ, log ε…)`.
pub fn q_bar<B: Backend>(data: &LfiData, hyper: &LfiHyperparameters) -> Result<(f64, Vec<f64>), DmeError> {
    let (value, grad, shift) = scaled_q_bar::<B>(data, hyper)?;
    let scale = shift.exp();
    Ok((value * scale, grad.iter().map(|g| g * scale).collect()))
}

/// `q̄ e^{−c}`, its gradient `∂q̄ e^{−c}` and `c` (see [`eps_kernel`]): `log q̄ = log(q̄ e^{−c}) + c`
/// and `∂ log q̄ = ∂q̄ e^{−c} / (q̄ e^{−c})` without underflow.
fn scaled_q_bar<B: Backend>(
    data: &LfiData,
    hyper: &LfiHyperparameters,
) -> Result<(f64, Vec<f64>, f64), DmeError> {
    hyper.check(data)?;
    let (n, m) = (data.theta.len(), data.prior.len());
    let kt = hyper.theta_kernel();
    let l = kt.gram(&data.theta)?;
    let lt = kt.cross_gram(&data.theta, &data.prior)?;
    let (rp, _) = transform::<B>(&l, &Mat::zeros(n, 0), hyper.lambda)?;
    let (kappa, dkappa, shift) = eps_kernel(&data.stats, &data.observed, &hyper.epsilon);
    let mut u = kappa.clone();
    B::cholesky_solve_vec_in_place(rp.as_ref(), &mut u)?;
    let s = mv::<B>(&lt, Trans::No, &vec![1.0; m])?;
    let mut v = s.clone();
    B::cholesky_solve_vec_in_place(rp.as_ref(), &mut v)?;
    let mf = m as f64;
    let value = dot(&u, &s) / mf;
    let glt = Mat::from_fn(n, m, |i, _| u[i] / mf);
    let gl = Mat::from_fn(n, n, |i, j| -u[i] * v[j] / mf);
    let mut grad = contract_params(kt, &data.theta, &data.prior, &glt);
    let g2 = contract_params_symmetric(kt, &data.theta, &gl);
    grad.iter_mut().zip(&g2).for_each(|(a, b)| *a += b);
    grad.push(-(n as f64) * hyper.lambda * dot(&u, &v) / mf);
    grad.extend(dkappa.iter().map(|dk| dot(dk, &v) / mf));
    Ok((value, grad, shift))
}

/// A DME posterior for one observation: the embedding, the hyperparameters and `q̄`.
#[derive(Debug, Clone)]
pub struct LfiPosterior {
    hyper: LfiHyperparameters,
    embedding: PosteriorEmbedding,
    q_bar: f64,
}

impl LfiPosterior {
    /// The hyperparameters used.
    pub fn hyperparameters(&self) -> &LfiHyperparameters {
        &self.hyper
    }

    /// The posterior embedding (normalised weights on the prior samples).
    pub fn embedding(&self) -> &PosteriorEmbedding {
        &self.embedding
    }

    /// `q̄` at these hyperparameters.
    pub fn q_bar(&self) -> f64 {
        self.q_bar
    }
}

/// The hyperparameters of `p` with the unset ones chosen from `data`; whether `k` follows ε.
fn resolve(p: &LfiParams, data: &LfiData) -> Result<(LfiHyperparameters, bool), DmeError> {
    let eps = p.epsilon.clone().unwrap_or_else(|| adaptive_epsilon(&data.stats, &data.observed));
    check_epsilon_len(&eps, data)?;
    let theta = match &p.kernel_theta {
        Some(k) => k.clone(),
        None => Kernel::se_ard(rule_of_thumb(&data.theta))?,
    };
    let tied = p.kernel_stats.is_none();
    let stats = match &p.kernel_stats {
        Some(k) => k.clone(),
        None => Kernel::new(KernelFamily::SquaredExponential, eps.clone())?,
    };
    let h = LfiHyperparameters::new(theta, stats, eps, p.lambda, p.delta);
    h.check(data)?;
    Ok((h, tied))
}

/// Hyperparameters at learned log-parameters `(log θ_ℓ…, log λ, log ε…)`.
fn at_log_params(h: &LfiHyperparameters, tied: bool, p: &[f64]) -> Result<LfiHyperparameters, DmeError> {
    let nk = h.theta_kernel().n_params();
    let theta = h.theta_kernel().with_log_params(&p[..nk])?;
    let lambda = p[nk].exp();
    let eps: Vec<f64> = p[nk + 1..].iter().map(|v| v.exp()).collect();
    let stats =
        if tied { Kernel::new(h.stats_kernel().family(), eps.clone())? } else { h.stats_kernel().clone() };
    let out = LfiHyperparameters::new(theta, stats, eps, lambda, h.delta);
    check_positive("lambda", out.lambda)?;
    for &e in &out.epsilon {
        check_positive("epsilon", e)?;
    }
    Ok(out)
}

/// Maximises `log q̄ − Σ (log v − log v₀)²/(2 s²)` over the free log-hyperparameters (`ℓ`'s, and
/// `λ` and ε when [`LfiLearnParams`] asks; ε capped at its initial width).
fn learn<B: Backend>(
    data: &LfiData,
    init: &LfiHyperparameters,
    tied: bool,
    opts: &LfiLearnParams,
    progress: &dyn Progress,
) -> Result<LfiHyperparameters, DmeError> {
    let mut p0 = init.theta_kernel().log_params();
    let nk = p0.len();
    p0.push(init.lambda.ln());
    p0.extend(init.epsilon.iter().map(|e| e.ln()));
    let mut mask = vec![true; p0.len()];
    mask[nk] = opts.lambda;
    mask[nk + 1..].iter_mut().for_each(|m| *m = opts.epsilon);
    let inv_var = if opts.prior_sd.is_finite() { 1.0 / (opts.prior_sd * opts.prior_sd) } else { 0.0 };
    // A learned ε may narrow from its initial width, never widen (see the module docs).
    let capped = |p: &[f64]| -> Vec<f64> {
        p.iter().enumerate().map(|(i, &v)| if i > nk { v.min(p0[i]) } else { v }).collect()
    };
    let objective = |p: &[f64]| {
        let h = at_log_params(init, tied, &capped(p)).ok()?;
        let (q, g, shift) = scaled_q_bar::<B>(data, &h).ok()?;
        if !(q > 0.0) || !shift.is_finite() {
            return None;
        }
        let prior: f64 = p.iter().zip(&p0).map(|(a, b)| -0.5 * inv_var * (a - b).powi(2)).sum();
        let grad = (0..p.len())
            .map(|i| {
                // Past the cap q̄ no longer changes with log ε: only the hyperprior acts.
                let data_term = if i > nk && p[i] > p0[i] { 0.0 } else { g[i] / q };
                data_term - inv_var * (p[i] - p0[i])
            })
            .collect();
        Some((q.ln() + shift + prior, grad))
    };
    let results =
        multi_start(&p0, &mask, &mask, &opts.search, &objective, None, (progress, "learning from q̄"))?;
    let best = best_start(&results, "q̄ is not positive at any start; increase epsilon")?;
    at_log_params(init, tied, &capped(&best.0))
}

/// The DME posterior embedding weights on the prior samples at `y` (seed 004 Algorithm 8.1 lines 2–5), in
/// the cheaper of the two forms of seed 004 Def. 4.4.
fn dme_weights<B: Backend>(data: &LfiData, h: &LfiHyperparameters) -> Result<Vec<f64>, DmeError> {
    let (ks, kt) = (h.stats_kernel(), h.theta_kernel());
    let k = ks.gram(&data.stats)?;
    let l = kt.gram(&data.theta)?;
    let lt = kt.cross_gram(&data.theta, &data.prior)?;
    let form = if data.prior.len() < data.theta.len() { DmeForm::Standard } else { DmeForm::Alternative };
    let op = DmeOperator::from_grams::<B>(&k, &l, &lt, h.lambda, h.delta, form)?;
    let ky = ks.cross_gram(&data.stats, &data.observed_points()?)?;
    Ok(op.embedding_weights::<B>(&ky)?.col(0).to_vec())
}

impl Estimator for LfiParams {
    type Data = LfiData;
    type Fitted = LfiPosterior;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &LfiData,
        progress: &dyn Progress,
    ) -> Result<LfiPosterior, DmeError> {
        let (mut hyper, tied) = resolve(params, data)?;
        if let Some(opts) = &params.learn {
            hyper = learn::<B>(data, &hyper, tied, opts, progress)?;
        }
        let (q, _) = q_bar::<B>(data, &hyper)?;
        let v = dme_weights::<B>(data, &hyper)?;
        let embedding = PosteriorEmbedding::new(data.prior.clone(), hyper.theta_kernel().clone(), v)?;
        Ok(LfiPosterior { hyper, embedding, q_bar: q })
    }
}
