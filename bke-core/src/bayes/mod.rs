//! # Fully Bayesian kernel learning
//!
//! Seed 000 §5 (Fig. 3) and Appendix B: instead of maximising the marginal pseudolikelihood of the
//! Bayesian Kernel Embedding over the kernel hyperparameters (ML-II), put priors on them and sample
//! their posterior with NUTS ([`crate::nuts`]), then integrate them out of the witness function.
//!
//! **Posterior.** With the marginal pseudolikelihood `p(x | θ, τ²)` of seed 000 eq. (15) (computed by
//! [`marginal_pseudolikelihood`], eq. (33) plus the corrected log-Jacobian of DESIGN §3.1),
//! `p(θ, τ² | x) ∝ p(x | θ, τ²) p(θ) p(τ²)`, with `Gamma(1, 1)` priors on `θ` and `τ²` by default (seed
//! §5; shape/rate, configurable, see [`HyperPrior`]). NUTS runs on the unconstrained scale
//! `u = (log θ_1, …, log θ_k, log τ²)` (`k = 1` isotropic, `k = D` ARD), so the target is
//! `log p(x | e^u) + Σ_j [log p_j(e^{u_j}) + u_j]` — the `+ u_j` is the log-Jacobian of `θ = e^u`
//! (Stan adds it implicitly for its `<lower=0>` parameters). Gradients are analytic:
//! `∂/∂u_j = ∂ log p(x | ·)/∂ log θ_j + ∂/∂u_j [log p_j(e^{u_j}) + u_j]`, with `a − b e^u` for a
//! `Gamma(a, b)` prior. Note the seed's Stan listing uses the unscaled prior covariance
//! ([`EmbeddingPrior::Unit`]) and the wrong Jacobian line; this module uses [`BayesOptions::prior`]
//! (default Lebesgue) and the corrected `½ log det(JᵀJ)`.
//!
//! **A degenerate ridge when `τ²` is sampled.** Along `τ² ∝ θ⁻⁴`, `θ → ∞` the features
//! `k_θ(x_i, z_l) ≈ 1 − ‖x_i − z_l‖²/(2θ²)` have residuals `φ_i − μ̂` of size `O(θ⁻²)`, so with
//! `τ²` at its conditional optimum `Σ_i‖φ_i − μ̂‖²/(m(n−1)) = O(θ⁻⁴)` the Gaussian term of eq. (33)
//! grows like `+2m(n−1) log θ` while the log-Jacobian falls only like `−2nD log θ`: the
//! pseudolikelihood is unbounded along the ridge whenever `m(n−1) > nD` (any `m > D`), see
//! [`ridge_exponent`]. The `Gamma(1, 1)` prior on `θ` then alone bounds the posterior, whose mass sits
//! near `θ ≈ 2m(n−1) − 2nD` with `τ² ≈ 10⁻¹⁰`, far from any data scale, where `R_zz + (τ²/n)I` is
//! numerically singular (NUTS reports tiny step sizes, maximal trees and R̂ ≫ 1). This is a property
//! of the pseudolikelihood (it is not a density in `x`), not of the sampler; holding `τ²` fixed
//! ([`BayesOptions::fixed_tau2`], as the seed's ML-II experiments do with `τ² = 1`) gives a proper,
//! data-driven posterior for `θ` (its log-likelihood falls like `−2nD log θ`), and so does `m = D`.
//!
//! **Witness function with the hyperparameters integrated out.** For each posterior draw
//! `(θ_s, τ²_s)`, one joint draw of `μ_P` and one of `μ_Q` on a grid from their BKE posteriors
//! (seed 000 eq. (7)–(8), [`BkePosterior`]) at that draw; their difference is a draw of the witness
//! `μ_P − μ_Q` from its posterior marginalised over `(θ, τ²)`. [`witness_posterior`] reports its
//! pointwise mean and quantiles.
//!
//! ```
//! use bke_core::bayes::{BayesOptions, sample_hyperparameters};
//! use bke_core::nuts::NutsParams;
//! use bke_core::Points;
//! use bke_linalg::Faer;
//! let x = Points::from_1d("x", &[-1.2, -0.4, 0.1, 0.3, 0.8, 1.5, -0.9, 0.6, 2.0, -1.7]).unwrap();
//! let z = Points::from_1d("z", &[-1.0, 0.0, 1.0]).unwrap();
//! let opts = BayesOptions {
//!     nuts: NutsParams { chains: 2, warmup: 100, draws: 100, seed: 3, ..NutsParams::default() },
//!     ..BayesOptions::default()
//! };
//! let post = sample_hyperparameters::<Faer>(&x, &z, &opts, &|| {}).unwrap();
//! let theta = post.lengthscale_summary(0);
//! assert!(theta.mean > 0.0 && theta.q05 < theta.q95);
//! ```

use crate::embedding::{BkeParams, BkePosterior, EmbeddingPrior, marginal_pseudolikelihood};
use crate::nuts::{self, LogDensity, NutsOutput, NutsParams, Summary};
use crate::special::ln_gamma;
use crate::{CoreError, Points, check_positive};
use bke_linalg::Backend;
use rayon::prelude::*;
use std::marker::PhantomData;

/// A prior on a positive hyperparameter `x` (a lengthscale or `τ²`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HyperPrior {
    /// `Gamma(shape a, rate b)`: density `b^a x^{a−1} e^{−bx} / Γ(a)` (seed §5 uses `Gamma(1, 1)`).
    Gamma {
        /// Shape `a > 0`.
        shape: f64,
        /// Rate `b > 0` (mean `a/b`).
        rate: f64,
    },
    /// `log x ~ N(mu, sigma²)`.
    LogNormal {
        /// Mean of `log x`.
        mu: f64,
        /// Standard deviation of `log x`, `> 0`.
        sigma: f64,
    },
}

impl Default for HyperPrior {
    fn default() -> Self {
        HyperPrior::Gamma { shape: 1.0, rate: 1.0 }
    }
}

impl HyperPrior {
    /// Errors unless the parameters are valid.
    pub fn check(&self) -> Result<(), CoreError> {
        match *self {
            HyperPrior::Gamma { shape, rate } => {
                check_positive("gamma prior shape", shape)?;
                check_positive("gamma prior rate", rate)
            }
            HyperPrior::LogNormal { mu, sigma } => {
                if !mu.is_finite() {
                    return Err(CoreError::InvalidParameter {
                        name: "lognormal prior mu".into(),
                        value: mu,
                        reason: "must be finite".into(),
                    });
                }
                check_positive("lognormal prior sigma", sigma)
            }
        }
    }

    /// Parses `gamma:SHAPE,RATE` or `lognormal:MU,SIGMA` (the CLI's prior flags).
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        let bad = || CoreError::InvalidParameter {
            name: format!("hyperparameter prior '{s}'"),
            value: f64::NAN,
            reason: "expected gamma:SHAPE,RATE (e.g. gamma:1,1) or lognormal:MU,SIGMA".into(),
        };
        let t = s.trim().to_ascii_lowercase();
        let (kind, args) = t.split_once(':').ok_or_else(bad)?;
        let nums: Vec<f64> =
            args.split(',').map(|v| v.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| bad())?;
        if nums.len() != 2 {
            return Err(bad());
        }
        let p = match kind.trim() {
            "gamma" => HyperPrior::Gamma { shape: nums[0], rate: nums[1] },
            "lognormal" => HyperPrior::LogNormal { mu: nums[0], sigma: nums[1] },
            _ => return Err(bad()),
        };
        p.check()?;
        Ok(p)
    }

    /// The name as [`HyperPrior::parse`] reads it.
    pub fn name(&self) -> String {
        match self {
            HyperPrior::Gamma { shape, rate } => format!("gamma:{shape},{rate}"),
            HyperPrior::LogNormal { mu, sigma } => format!("lognormal:{mu},{sigma}"),
        }
    }

    /// The normalised log density of `u = log x` (the prior density of `x` times the Jacobian `e^u`)
    /// and its derivative with respect to `u`.
    /// Gamma: `a log b − log Γ(a) + a u − b e^u`; log-normal: `log N(u; mu, sigma²)`.
    pub fn log_density_log_scale(&self, u: f64) -> (f64, f64) {
        match *self {
            HyperPrior::Gamma { shape: a, rate: b } => {
                let e = u.exp();
                (a * b.ln() - ln_gamma(a) + a * u - b * e, a - b * e)
            }
            HyperPrior::LogNormal { mu, sigma } => {
                let d = (u - mu) / sigma;
                (-0.5 * d * d - sigma.ln() - 0.5 * (2.0 * std::f64::consts::PI).ln(), -d / sigma)
            }
        }
    }
}

/// The exponent `e` of the growth `θ^e` of the marginal pseudolikelihood along the ridge
/// `τ² ∝ θ⁻⁴`, `θ → ∞` (leading order, see the module docs): `2m(n−1) − 2nD` with the Jacobian term,
/// `2m(n−1)` without. Positive means the likelihood is unbounded there and, with `τ²` sampled, the
/// posterior is held only by the prior on `θ`.
pub fn ridge_exponent(n: usize, m: usize, dim: usize, jacobian: bool) -> f64 {
    let gauss = 2.0 * m as f64 * (n as f64 - 1.0);
    if jacobian { gauss - 2.0 * (n * dim) as f64 } else { gauss }
}

/// Human-readable warnings about a hyperparameter posterior: the degenerate ridge (τ² sampled and
/// [`ridge_exponent`] > 0), step sizes so small that the log density is numerically rough, R̂ > 1.01,
/// and divergences.
pub fn warnings(draws: &HyperDraws, n: usize, m: usize, dim: usize) -> Vec<String> {
    let mut w = vec![];
    let e = ridge_exponent(n, m, dim, draws.jacobian);
    if draws.fixed_tau2.is_none() && e > 0.0 {
        w.push(format!(
            "with tau2 sampled and m = {m} landmarks (n = {n}, D = {dim}) the pseudolikelihood grows like \
             theta^{e} along tau2 ~ theta^-4 (theta -> inf, tau2 -> 0): only the lengthscale prior bounds \
             the posterior, which then sits at lengthscales far above the data scale; fix tau2 (--tau2 1) \
             or use m = D landmarks for a data-driven lengthscale posterior"
        ));
    }
    let min_eps = draws.nuts.chains.iter().map(|c| c.step_size).fold(f64::INFINITY, f64::min);
    if min_eps < 1e-8 {
        w.push(format!(
            "adapted step size {min_eps:.1e}: the log density is numerically rough where the chains are \
             (near-singular R_zz + tau2/n I); the draws are unreliable"
        ));
    }
    let mut rhats: Vec<f64> =
        (0..draws.num_lengthscales).map(|d| draws.lengthscale_summary(d).rhat).collect();
    if draws.fixed_tau2.is_none() {
        rhats.push(draws.tau2_summary().rhat);
    }
    let worst = rhats.iter().cloned().fold(f64::NAN, f64::max);
    if worst > 1.01 {
        w.push(format!(
            "split-Rhat {worst:.3} > 1.01: the chains disagree; run longer or check for several modes"
        ));
    }
    let div = draws.nuts.divergences();
    if div > 0 {
        w.push(format!("{div} divergent transitions after warmup: raise --target-accept (e.g. 0.95)"));
    }
    w
}

/// Options of [`sample_hyperparameters`]. Defaults: `Gamma(1, 1)` priors on `θ` and `τ²` (seed §5),
/// `τ²` sampled, one isotropic lengthscale, Lebesgue prior measure, Jacobian term on, NUTS defaults
/// (4 chains, 1000 warmup + 1000 draws each).
#[derive(Debug, Clone, PartialEq)]
pub struct BayesOptions {
    /// Prior on each lengthscale `θ_d`.
    pub lengthscale_prior: HyperPrior,
    /// Prior on `τ²` (unused when `fixed_tau2` is set).
    pub tau2_prior: HyperPrior,
    /// Hold `τ²` at this value instead of sampling it.
    pub fixed_tau2: Option<f64>,
    /// One lengthscale per dimension (ARD) instead of one for all.
    pub ard: bool,
    /// The measure `ν` defining the prior covariance `r_θ` of the embedding.
    pub prior: EmbeddingPrior,
    /// Include the log-Jacobian `Σ_i log γ_θ(x_i)` in the pseudolikelihood.
    pub jacobian: bool,
    /// Sampler settings (chains, warmup, draws, seed, …).
    pub nuts: NutsParams,
}

impl Default for BayesOptions {
    fn default() -> Self {
        Self {
            lengthscale_prior: HyperPrior::default(),
            tau2_prior: HyperPrior::default(),
            fixed_tau2: None,
            ard: false,
            prior: EmbeddingPrior::Lebesgue,
            jacobian: true,
            nuts: NutsParams::default(),
        }
    }
}

impl BayesOptions {
    /// Validates priors, the fixed `τ²`, the prior measure and the sampler settings.
    pub fn check(&self) -> Result<(), CoreError> {
        self.lengthscale_prior.check()?;
        self.tau2_prior.check()?;
        if let Some(t) = self.fixed_tau2 {
            check_positive("fixed tau2", t)?;
        }
        self.prior.check()?;
        self.nuts.check()
    }
}

/// The log posterior of the BKE hyperparameters on the log scale, `u = (log θ_1..k, [log τ²])`:
/// the target that [`sample_hyperparameters`] hands to NUTS. Public so it can be evaluated directly
/// (e.g. on a grid, for quadrature).
pub struct HyperPosterior<'a, B: Backend> {
    x: &'a Points,
    z: &'a Points,
    opts: &'a BayesOptions,
    k: usize,
    _backend: PhantomData<fn() -> B>,
}

impl<'a, B: Backend> HyperPosterior<'a, B> {
    /// The target for data `x` and landmarks `z` (`m ≥ D`). Validates the inputs.
    pub fn new(x: &'a Points, z: &'a Points, opts: &'a BayesOptions) -> Result<Self, CoreError> {
        crate::embedding::validate_data_landmarks(x, z)?;
        opts.check()?;
        let k = if opts.ard { x.dim() } else { 1 };
        Ok(Self { x, z, opts, k, _backend: PhantomData })
    }

    /// Number of lengthscales `k` (1, or `D` with ARD).
    pub fn num_lengthscales(&self) -> usize {
        self.k
    }

    /// The BKE parameters at the unconstrained point `u`.
    pub fn params_at(&self, u: &[f64]) -> BkeParams {
        let tau2 = self.opts.fixed_tau2.unwrap_or_else(|| u[self.k].exp());
        BkeParams {
            lengthscales: u[..self.k].iter().map(|v| v.exp()).collect(),
            tau2,
            prior: self.opts.prior,
            jacobian: self.opts.jacobian,
        }
    }
}

impl<B: Backend> LogDensity for HyperPosterior<'_, B> {
    fn dim(&self) -> usize {
        self.k + usize::from(self.opts.fixed_tau2.is_none())
    }

    fn log_density_grad(&self, u: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        let p = self.params_at(u);
        let ml = marginal_pseudolikelihood::<B>(self.x, self.z, &p)?;
        let mut lp = ml.log_marginal;
        for j in 0..self.k {
            let (l, g) = self.opts.lengthscale_prior.log_density_log_scale(u[j]);
            lp += l;
            grad[j] = ml.grad_log_lengthscale[j] + g;
        }
        if self.opts.fixed_tau2.is_none() {
            let (l, g) = self.opts.tau2_prior.log_density_log_scale(u[self.k]);
            lp += l;
            grad[self.k] = ml.grad_log_tau2 + g;
        }
        Ok(lp)
    }
}

/// Posterior draws of the BKE hyperparameters.
#[derive(Debug, Clone)]
pub struct HyperDraws {
    /// The sampler output on the log scale `u = (log θ_1..k, [log τ²])`.
    pub nuts: NutsOutput,
    /// Number of lengthscales `k`.
    pub num_lengthscales: usize,
    /// `τ²` when it was held fixed.
    pub fixed_tau2: Option<f64>,
    /// The prior measure and Jacobian setting the draws were made with.
    pub prior: EmbeddingPrior,
    /// Whether the pseudolikelihood included the Jacobian term.
    pub jacobian: bool,
}

impl HyperDraws {
    /// Draws of lengthscale `d` (natural scale), one vector per chain.
    pub fn lengthscale(&self, d: usize) -> Vec<Vec<f64>> {
        self.nuts.map_draws(|u| u[d].exp())
    }

    /// Draws of `τ²` (natural scale), one vector per chain (constant when fixed).
    pub fn tau2(&self) -> Vec<Vec<f64>> {
        let k = self.num_lengthscales;
        match self.fixed_tau2 {
            Some(t) => self.nuts.map_draws(|_| t),
            None => self.nuts.map_draws(|u| u[k].exp()),
        }
    }

    /// Summary of lengthscale `d` on the natural scale (R̂ and ESS are rank-based, so the same as on
    /// the log scale).
    pub fn lengthscale_summary(&self, d: usize) -> Summary {
        let c = self.lengthscale(d);
        Summary::new(&c.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }

    /// Summary of `τ²` on the natural scale.
    pub fn tau2_summary(&self) -> Summary {
        let c = self.tau2();
        Summary::new(&c.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }

    /// Every draw as BKE parameters, chain by chain.
    pub fn params(&self) -> Vec<BkeParams> {
        let k = self.num_lengthscales;
        self.nuts
            .chains
            .iter()
            .flat_map(|c| c.draws.chunks(self.nuts.dim))
            .map(|u| BkeParams {
                lengthscales: u[..k].iter().map(|v| v.exp()).collect(),
                tau2: self.fixed_tau2.unwrap_or_else(|| u[k].exp()),
                prior: self.prior,
                jacobian: self.jacobian,
            })
            .collect()
    }
}

/// Samples the posterior of the BKE hyperparameters `(θ, τ²)` given data `x` and landmarks `z` with
/// NUTS on the log scale (see the module docs). `progress` is called once per iteration of every
/// chain. A sampler that cannot start says why (the error of the pseudolikelihood at the last
/// initial point tried).
pub fn sample_hyperparameters<B: Backend>(
    x: &Points,
    z: &Points,
    opts: &BayesOptions,
    progress: &(dyn Fn() + Sync),
) -> Result<HyperDraws, CoreError> {
    let target = HyperPosterior::<B>::new(x, z, opts)?;
    let out = nuts::sample_with(&target, &opts.nuts, None, progress)?;
    Ok(HyperDraws {
        nuts: out,
        num_lengthscales: target.k,
        fixed_tau2: opts.fixed_tau2,
        prior: opts.prior,
        jacobian: opts.jacobian,
    })
}

/// The posterior of the witness function `μ_P − μ_Q` on a grid with the hyperparameters integrated
/// out (seed 000 Fig. 3).
#[derive(Debug, Clone)]
pub struct WitnessPosterior {
    /// Pointwise posterior mean.
    pub mean: Vec<f64>,
    /// Pointwise median.
    pub median: Vec<f64>,
    /// Pointwise `(1 − level)/2` quantile.
    pub lower: Vec<f64>,
    /// Pointwise `(1 + level)/2` quantile.
    pub upper: Vec<f64>,
    /// Pointwise posterior probability that the witness is positive.
    pub prob_positive: Vec<f64>,
    /// The central credible level of `lower`/`upper`.
    pub level: f64,
    /// The witness draws, row-major `draws × grid` (one row per hyperparameter draw).
    pub draws: Vec<f64>,
}

impl WitnessPosterior {
    /// Fraction of grid points whose credible band excludes 0.
    pub fn fraction_excluding_zero(&self) -> f64 {
        let n = self.lower.len();
        let k = self.lower.iter().zip(&self.upper).filter(|(l, u)| **l > 0.0 || **u < 0.0).count();
        k as f64 / n as f64
    }
}

/// SplitMix64 finaliser: decorrelated seeds for the per-draw posterior samples.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The witness posterior on `grid`: for each hyperparameter draw `s` (e.g. [`HyperDraws::params`]),
/// one joint draw of `μ_P` from the BKE posterior given `x_p` and one of `μ_Q` given `x_q` (each
/// conditioned on its own data, seed eq. (7), or on the common points `at`), differenced; then the
/// pointwise mean, median, central `level` band and `P(witness > 0)`.
///
/// Draw `s` uses seeds derived from `(seed, s)` only and the draws run in parallel, so the result does
/// not depend on the thread count.
pub fn witness_posterior<B: Backend>(
    x_p: &Points,
    x_q: &Points,
    grid: &Points,
    at: Option<&Points>,
    draws: &[BkeParams],
    level: f64,
    seed: u64,
) -> Result<WitnessPosterior, CoreError> {
    x_p.check_len("sample x (P)", 1)?;
    x_q.check_len("sample y (Q)", 1)?;
    grid.check_len("grid", 1)?;
    x_p.check_dim("sample y (Q)", x_q.dim())?;
    x_p.check_dim("grid", grid.dim())?;
    if draws.is_empty() {
        return Err(CoreError::Empty { what: "hyperparameter draws".into(), needed: 1 });
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(CoreError::InvalidParameter {
            name: "level".into(),
            value: level,
            reason: "the credible level must lie strictly between 0 and 1 (e.g. 0.8)".into(),
        });
    }
    let g = grid.len();
    let rows: Vec<Vec<f64>> = draws
        .par_iter()
        .enumerate()
        .map(|(s, p)| {
            let pp = BkePosterior::fit::<B>(x_p, at, p)?;
            let pq = BkePosterior::fit::<B>(x_q, at, p)?;
            let a = pp.sample::<B>(grid, 1, mix(seed ^ mix(2 * s as u64)))?;
            let b = pq.sample::<B>(grid, 1, mix(seed ^ mix(2 * s as u64 + 1)))?;
            Ok((0..g).map(|i| a[(i, 0)] - b[(i, 0)]).collect())
        })
        .collect::<Result<_, CoreError>>()?;
    let s = rows.len();
    let mut out = WitnessPosterior {
        mean: vec![0.0; g],
        median: vec![0.0; g],
        lower: vec![0.0; g],
        upper: vec![0.0; g],
        prob_positive: vec![0.0; g],
        level,
        draws: rows.concat(),
    };
    let mut col = vec![0.0; s];
    for i in 0..g {
        for (r, c) in rows.iter().zip(col.iter_mut()) {
            *c = r[i];
        }
        out.mean[i] = col.iter().sum::<f64>() / s as f64;
        out.prob_positive[i] = col.iter().filter(|&&v| v > 0.0).count() as f64 / s as f64;
        col.sort_by(f64::total_cmp);
        out.median[i] = nuts::diagnostics::quantile_sorted(&col, 0.5);
        out.lower[i] = nuts::diagnostics::quantile_sorted(&col, (1.0 - level) / 2.0);
        out.upper[i] = nuts::diagnostics::quantile_sorted(&col, (1.0 + level) / 2.0);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
