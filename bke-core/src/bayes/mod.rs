//! # Fully Bayesian kernel learning
//!
//! Seed 000 §5 (Fig. 3) and Appendix B: instead of maximising the marginal pseudolikelihood of the
//! Bayesian Kernel Embedding over the kernel hyperparameters (ML-II), put priors on them and sample
//! their posterior with NUTS ([`crate::nuts`]), then integrate them out of the witness function.
//!
//! **Posterior.** With the marginal pseudolikelihood `p(x | θ, τ²)` of seed 000 eq. (15) (computed by
//! [`marginal_pseudolikelihood`], seed 002 eq. (33) plus the corrected log-Jacobian of `docs/DESIGN.md` §3.1),
//! `p(θ, τ² | x) ∝ p(x | θ, τ²) p(θ) p(τ²)`, with `Gamma(1, 1)` priors on `θ` and `τ²` by default (seed
//! 000 §5; shape/rate, configurable, see [`HyperPrior`]). NUTS runs on the unconstrained scale
//! `u = (log θ_1, …, log θ_k, log τ²)` (`k = 1` isotropic, `k = D` ARD), so the target is
//! `log p(x | e^u) + Σ_j [log p_j(e^{u_j}) + u_j]` — the `+ u_j` is the log-Jacobian of `θ = e^u`
//! (Stan adds it implicitly for its `<lower=0>` parameters). Gradients are analytic:
//! `∂/∂u_j = ∂ log p(x | ·)/∂ log θ_j + ∂/∂u_j [log p_j(e^{u_j}) + u_j]`, with `a − b e^u` for a
//! `Gamma(a, b)` prior. Note the seed's Stan listing uses the unscaled prior covariance
//! ([`EmbeddingPrior::Unit`]) and the wrong Jacobian line; this module uses [`SampleParams::prior`]
//! (default Lebesgue) and the corrected `½ log det(JᵀJ)`.
//!
//! **A degenerate ridge when `τ²` is sampled.** Along `τ² ∝ θ⁻⁴`, `θ → ∞` the features
//! `k_θ(x_i, z_l) ≈ 1 − ‖x_i − z_l‖²/(2θ²)` have residuals `φ_i − μ̂` of size `O(θ⁻²)`, so with
//! `τ²` at its conditional optimum `Σ_i‖φ_i − μ̂‖²/(m(n−1)) = O(θ⁻⁴)` the Gaussian term of seed 002 eq. (33)
//! grows like `+2m(n−1) log θ` while the log-Jacobian falls only like `−2nD log θ`: the
//! pseudolikelihood is unbounded along the ridge whenever `m(n−1) > nD` (any `m > D`), see
//! [`ridge_exponent`]. The `Gamma(1, 1)` prior on `θ` then alone bounds the posterior, whose mass sits
//! near `θ ≈ 2m(n−1) − 2nD` with `τ² ≈ 10⁻¹⁰`, far from any data scale, where `R_zz + (τ²/n)I` is
//! numerically singular (NUTS reports tiny step sizes, maximal trees and R̂ ≫ 1). This is a property
//! of the pseudolikelihood (it is not a density in `x`), not of the sampler; holding `τ²` fixed
//! ([`SampleParams::fixed_tau2`], as the seed's ML-II experiments do with `τ² = 1`) gives a proper,
//! data-driven posterior for `θ` (its log-likelihood falls like `−2nD log θ`), and so does `m = D`.
//!
//! **Witness function with the hyperparameters integrated out.** For each posterior draw
//! `(θ_s, τ²_s)`, one joint draw of `μ_P` and one of `μ_Q` on a grid from their BKE posteriors
//! (seed 000 eq. (7)–(8), [`BkePosterior`](crate::embedding::BkePosterior)) at that draw; their difference is a draw of the witness
//! `μ_P − μ_Q` from its posterior marginalised over `(θ, τ²)`. [`witness_posterior`] reports its
//! pointwise mean and quantiles.
//!
//! **Usage.** [`SampleParams`] `.check()?.fit::<B>(&x)` holds out landmarks (or takes given ones),
//! runs NUTS and returns [`HyperDraws`]: the draws, their summaries ([`HyperDraws::lengthscale_summary`],
//! R̂, ESS), the sampler diagnostics and [`HyperDraws::warnings`].
//!
//! ```
//! use bke_core::bayes::SampleParams;
//! use bke_core::nuts::NutsParams;
//! use bke_core::{Params, Points};
//! use bke_linalg::DefaultBackend;
//! let x = Points::from_1d("x", &[-1.2, -0.4, 0.1, 0.3, 0.8, 1.5, -0.9, 0.6, 2.0, -1.7]).unwrap();
//! let z = Points::from_1d("z", &[-1.0, 0.0, 1.0]).unwrap();
//! let params = SampleParams {
//!     landmarks: Some(z),
//!     nuts: NutsParams { chains: 2, warmup: 100, draws: 100, seed: 3, ..NutsParams::default() },
//!     ..SampleParams::default()
//! };
//! let post = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
//! let theta = post.lengthscale_summary(0);
//! assert!(theta.mean > 0.0 && theta.q05 < theta.q95);
//! ```

use crate::embedding::{BkeParams, EmbeddingPrior, hold_out_landmarks, marginal_pseudolikelihood};
use crate::estimator::{Estimator, Params, Progress, Valid};
use crate::numeric::LN_2PI;
use crate::nuts::{self, NutsOutput, NutsParams, Summary, Target};
use crate::special::ln_gamma;
use crate::{CoreError, Points, check_positive};
use bke_linalg::Backend;
use serde::{Serialize, Serializer};
use std::marker::PhantomData;

/// A prior on a positive hyperparameter `x` (a lengthscale or `τ²`). In JSON it is its name
/// ([`HyperPrior::name`], e.g. `"gamma:1,1"`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum HyperPrior {
    /// `Gamma(shape a, rate b)`: density `b^a x^{a−1} e^{−bx} / Γ(a)` (seed 000 §5 uses `Gamma(1, 1)`).
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
                (-0.5 * d * d - sigma.ln() - 0.5 * LN_2PI, -d / sigma)
            }
        }
    }
}

impl From<HyperPrior> for String {
    fn from(p: HyperPrior) -> String {
        p.name()
    }
}

impl TryFrom<String> for HyperPrior {
    type Error = CoreError;
    fn try_from(s: String) -> Result<Self, CoreError> {
        HyperPrior::parse(&s)
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

/// Fully Bayesian kernel learning: priors on the BKE hyperparameters, landmarks, and the NUTS
/// settings. Defaults: `Gamma(1, 1)` priors on `θ` and `τ²` (seed 000 §5), `τ²` sampled, one
/// isotropic lengthscale, Lebesgue prior measure, Jacobian term on, 100 held-out landmarks, NUTS
/// defaults (4 chains, 1000 warmup + 1000 draws each; its seed also seeds the landmark hold-out).
///
/// As an [`Estimator`] on [`Points`], it returns the posterior draws [`HyperDraws`].
#[derive(Debug, Clone, PartialEq)]
pub struct SampleParams {
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
    /// Number `m` of landmarks held out of the data at random (ignored when `landmarks` is given);
    /// `D ≤ m < n`. See [`crate::embedding::default_num_landmarks`] for a rule by data size.
    pub num_landmarks: usize,
    /// User landmarks; then all data points are used as data.
    pub landmarks: Option<Points>,
    /// Sampler settings (chains, warmup, draws, seed, …).
    pub nuts: NutsParams,
}

impl Default for SampleParams {
    fn default() -> Self {
        Self {
            lengthscale_prior: HyperPrior::default(),
            tau2_prior: HyperPrior::default(),
            fixed_tau2: None,
            ard: false,
            prior: EmbeddingPrior::Lebesgue,
            jacobian: true,
            num_landmarks: 100,
            landmarks: None,
            nuts: NutsParams::default(),
        }
    }
}

impl Params for SampleParams {
    type Error = CoreError;

    /// Valid priors, a positive fixed `τ²`, a valid prior measure, at least one landmark, and valid
    /// sampler settings.
    fn validate(&self) -> Result<(), CoreError> {
        self.lengthscale_prior.check()?;
        self.tau2_prior.check()?;
        if let Some(t) = self.fixed_tau2 {
            check_positive("fixed tau2", t)?;
        }
        self.prior.check()?;
        if self.num_landmarks == 0 && self.landmarks.is_none() {
            return Err(CoreError::InvalidParameter {
                name: "number of landmarks".into(),
                value: 0.0,
                reason: "need at least D landmarks".into(),
            });
        }
        self.nuts.validate()
    }
}

impl Estimator for SampleParams {
    type Data = Points;
    type Fitted = HyperDraws;

    /// Holds out the landmarks (seeded by `nuts.seed`) unless given, and samples the posterior of
    /// `(θ, τ²)` with NUTS on the log scale (see the module docs). Reports stage `NUTS`, one unit per
    /// iteration of every chain. A sampler that cannot start says why.
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<HyperDraws, CoreError> {
        sample_hyperparameters::<B>(params, x, progress, None)
    }
}

impl SampleParams {
    /// Number of lengthscales `k` for data of dimension `dim`: `dim` with ARD, else 1. The draws
    /// are `u = (log θ_1..k, [log τ²])`.
    pub fn num_lengthscales(&self, dim: usize) -> usize {
        if self.ard { dim } else { 1 }
    }
}

/// Fits [`SampleParams`] like [`Estimator::fit_valid`], handing every draw after warmup to `sink`
/// as it is made (on the log scale `u`, see [`SampleParams::num_lengthscales`]); the returned
/// [`HyperDraws`] then hold the draws' coordinates but not the per-draw sampler statistics
/// ([`nuts::DrawSink`]), so only the coordinates count against the memory budget.
pub fn sample_hyperparameters<B: Backend>(
    params: &Valid<SampleParams>,
    x: &Points,
    progress: &dyn Progress,
    sink: Option<&dyn nuts::DrawSink>,
) -> Result<HyperDraws, CoreError> {
    crate::embedding::check_data_scale(x, params.jacobian)?;
    let (data, landmarks, landmark_indices) = match &params.landmarks {
        Some(z) => (x.clone(), z.clone(), None),
        None => {
            x.check_len("data", 2)?;
            let (d, z, idx) = hold_out_landmarks(x, params.num_landmarks, params.nuts.seed)?;
            (d, z, Some(idx))
        }
    };
    let target = HyperPosterior::<B>::new(&data, &landmarks, params)?;
    let out = nuts::sample_with(&target, &params.nuts, None, progress, sink)?;
    Ok(HyperDraws {
        nuts: out,
        num_lengthscales: target.k,
        settings: (**params).clone(),
        n_data: data.len(),
        dim: data.dim(),
        landmarks,
        landmark_indices,
    })
}

/// The log posterior of the BKE hyperparameters on the log scale, `u = (log θ_1..k, [log τ²])`:
/// the target that fitting [`SampleParams`] hands to NUTS. Public so it can be evaluated directly
/// (e.g. on a grid, for quadrature).
pub struct HyperPosterior<'a, B: Backend> {
    x: &'a Points,
    z: &'a Points,
    opts: &'a SampleParams,
    k: usize,
    _backend: PhantomData<fn() -> B>,
}

impl<'a, B: Backend> HyperPosterior<'a, B> {
    /// The target for data `x` and landmarks `z` (`m ≥ D`; `opts.landmarks` and
    /// `opts.num_landmarks` are not used here). Validates the inputs.
    pub fn new(x: &'a Points, z: &'a Points, opts: &'a SampleParams) -> Result<Self, CoreError> {
        crate::embedding::validate_data_landmarks(x, z)?;
        opts.validate()?;
        let k = opts.num_lengthscales(x.dim());
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

impl<B: Backend> Target for HyperPosterior<'_, B> {
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

/// Posterior draws of the BKE hyperparameters, with the landmarks and settings they were drawn
/// with.
///
/// Its JSON (`bke embed sample`) has the fields `lengthscale` (a summary `{mean, sd, q05, q50, q95,
/// rhat, ess, ess_tail, mcse_mean}`, or an array of them with ARD), `tau2` (a summary, or
/// `{mean, …, "fixed": true}` when held fixed), `divergences`, `warnings`, `warmup_divergences`,
/// `max_depth_hits`, `step_size`, `e_bfmi`, `mean_accept_stat`, `chains`, `draws`, `warmup`, `seed`,
/// `n_data`, `num_landmarks`, `landmark_indices`, `lengthscale_prior`, `tau2_prior`, `prior`,
/// `jacobian`, `scale`.
#[derive(Debug, Clone)]
pub struct HyperDraws {
    /// The sampler output on the log scale `u = (log θ_1..k, [log τ²])`.
    pub nuts: NutsOutput,
    /// Number of lengthscales `k`.
    pub num_lengthscales: usize,
    /// The settings the draws were made with.
    pub settings: SampleParams,
    /// The landmarks used.
    pub landmarks: Points,
    /// Indices of the held-out landmarks in the input (None for user landmarks).
    pub landmark_indices: Option<Vec<usize>>,
    /// Number of data points in the pseudolikelihood (input minus held-out landmarks).
    pub n_data: usize,
    /// Dimension `D` of the data.
    pub dim: usize,
}

impl HyperDraws {
    /// Draws of lengthscale `d` (natural scale), one vector per chain.
    pub fn lengthscale(&self, d: usize) -> Vec<Vec<f64>> {
        self.nuts.map_draws(|u| u[d].exp())
    }

    /// Draws of `τ²` (natural scale), one vector per chain (constant when fixed).
    pub fn tau2(&self) -> Vec<Vec<f64>> {
        let k = self.num_lengthscales;
        match self.settings.fixed_tau2 {
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
                tau2: self.settings.fixed_tau2.unwrap_or_else(|| u[k].exp()),
                prior: self.settings.prior,
                jacobian: self.settings.jacobian,
            })
            .collect()
    }
}

impl HyperDraws {
    /// Human-readable warnings: the degenerate ridge (`τ²` sampled and [`ridge_exponent`] > 0), step
    /// sizes so small that the log density is numerically rough, R̂ > 1.01, and divergences.
    pub fn warnings(&self) -> Vec<String> {
        let (n, m, dim) = (self.n_data, self.landmarks.len(), self.dim);
        let mut w = vec![];
        let e = ridge_exponent(n, m, dim, self.settings.jacobian);
        if self.settings.fixed_tau2.is_none() && e > 0.0 {
            w.push(format!(
                "with tau2 sampled and m = {m} landmarks (n = {n}, D = {dim}) the pseudolikelihood grows like \
                 theta^{e} along tau2 ~ theta^-4 (theta -> inf, tau2 -> 0): only the lengthscale prior bounds \
                 the posterior, which then sits at lengthscales far above the data scale; fix tau2 (--tau2 1) \
                 or use m = D landmarks for a data-driven lengthscale posterior"
            ));
        }
        let min_eps = self.nuts.chains.iter().map(|c| c.step_size).fold(f64::INFINITY, f64::min);
        if min_eps < 1e-8 {
            w.push(format!(
                "adapted step size {min_eps:.1e}: the log density is numerically rough where the chains are \
                 (near-singular R_zz + tau2/n I); the draws are unreliable"
            ));
        }
        let mut rhats: Vec<f64> =
            (0..self.num_lengthscales).map(|d| self.lengthscale_summary(d).rhat).collect();
        if self.settings.fixed_tau2.is_none() {
            rhats.push(self.tau2_summary().rhat);
        }
        let worst = rhats.iter().cloned().fold(f64::NAN, f64::max);
        if worst > 1.01 {
            w.push(format!(
                "split-Rhat {worst:.3} > 1.01: the chains disagree; run longer or check for several modes"
            ));
        }
        let div = self.nuts.divergences();
        if div > 0 {
            w.push(format!("{div} divergent transitions after warmup: raise --target-accept (e.g. 0.95)"));
        }
        w
    }

    /// Mean acceptance statistic over every draw of every chain.
    pub fn mean_accept_stat(&self) -> f64 {
        self.nuts.mean_accept_stat()
    }
}

/// `τ²` in the JSON of [`HyperDraws`] when it was held fixed: a degenerate summary.
#[derive(Serialize)]
struct FixedTau2 {
    mean: f64,
    sd: f64,
    q05: f64,
    q50: f64,
    q95: f64,
    rhat: Option<f64>,
    ess: Option<f64>,
    fixed: bool,
}

/// A summary, or the fixed value as a degenerate one.
#[derive(Serialize)]
#[serde(untagged)]
enum Tau2Json {
    Sampled(Summary),
    Fixed(FixedTau2),
}

impl Serialize for HyperDraws {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Report<'a> {
            #[serde(serialize_with = "crate::embedding::one_or_many")]
            lengthscale: &'a [Summary],
            tau2: Tau2Json,
            divergences: usize,
            warnings: Vec<String>,
            warmup_divergences: usize,
            max_depth_hits: usize,
            step_size: Vec<f64>,
            e_bfmi: Vec<f64>,
            mean_accept_stat: f64,
            chains: usize,
            draws: usize,
            warmup: usize,
            seed: u64,
            n_data: usize,
            num_landmarks: usize,
            landmark_indices: &'a Option<Vec<usize>>,
            lengthscale_prior: HyperPrior,
            tau2_prior: Option<HyperPrior>,
            prior: EmbeddingPrior,
            jacobian: bool,
            scale: &'static str,
        }
        let st = &self.settings;
        let tau2 = match st.fixed_tau2 {
            Some(t) => Tau2Json::Fixed(FixedTau2 {
                mean: t,
                sd: 0.0,
                q05: t,
                q50: t,
                q95: t,
                rhat: None,
                ess: None,
                fixed: true,
            }),
            None => Tau2Json::Sampled(self.tau2_summary()),
        };
        let summaries: Vec<Summary> =
            (0..self.num_lengthscales).map(|d| self.lengthscale_summary(d)).collect();
        Report {
            lengthscale: &summaries,
            tau2,
            divergences: self.nuts.divergences(),
            warnings: self.warnings(),
            warmup_divergences: self.nuts.chains.iter().map(|c| c.warmup_divergences).sum(),
            max_depth_hits: self.nuts.max_depth_hits(st.nuts.max_depth),
            step_size: self.nuts.chains.iter().map(|c| c.step_size).collect(),
            e_bfmi: self.nuts.e_bfmi(),
            mean_accept_stat: self.mean_accept_stat(),
            chains: st.nuts.chains,
            draws: st.nuts.draws,
            warmup: st.nuts.warmup,
            seed: st.nuts.seed,
            n_data: self.n_data,
            num_landmarks: self.landmarks.len(),
            landmark_indices: &self.landmark_indices,
            lengthscale_prior: st.lengthscale_prior,
            tau2_prior: st.fixed_tau2.is_none().then_some(st.tau2_prior),
            prior: st.prior,
            jacobian: st.jacobian,
            scale: "NUTS on log lengthscale and log tau2 (log-Jacobian of the transform included); \
                    summaries on the natural scale",
        }
        .serialize(s)
    }
}

mod witness;
pub use witness::{WitnessPosterior, witness_posterior};

#[cfg(test)]
mod tests;
