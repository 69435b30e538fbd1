//! # The Bayesian Kernel Embedding (BKE) model
//!
//! Flaxman, Sejdinovic, Cunningham, Filippi (UAI 2016), seeds 000 (paper) and 002 (appendix), with
//! the corrections of `DESIGN.md` §3.1. Squared exponential kernel
//! `k_θ(x, y) = exp(−½ Σ_d (x_d − y_d)²/θ_d²)` (one `θ`: isotropic; one per dimension: ARD).
//!
//! **Model.** `μ_θ ~ GP(0, r_θ)` with `r_θ(x, y) = ∫ k_θ(x, u) k_θ(u, y) ν(du)` (eq. (3)–(4); the
//! measure `ν` is [`EmbeddingPrior`]), and `μ̂_θ(x) | μ_θ ~ N(μ_θ(x), τ²/n)` (eq. (5)) for the
//! empirical embedding `μ̂_θ = (1/n) Σ_i k_θ(·, x_i)` (eq. (2)).
//!
//! **Posterior** (eq. (7)–(8)), conditioning on `μ̂` at points `w_1..w_p` (the data, as in the seed, or
//! any other set such as landmarks): with `A = R_ww + (τ²/n) I` and the S-KMSE weights
//! `β = A⁻¹ μ̂(w)` (§4.2, here with kernel `r`),
//! `E[μ(x*)] = r(x*, w)ᵀ β`, `Cov[μ(x*), μ(y*)] = r(x*, y*) − r(x*, w)ᵀ A⁻¹ r(w, y*)`.
//!
//! **Marginal pseudolikelihood** (eq. (15)) at landmarks `z_1..z_m` (`m ≥ D`):
//! `log p(x | θ, τ²) = log N(vec K_zx; 0, 1 1ᵀ ⊗ R_zz + τ² I_mn) + Σ_i log γ_θ(x_i)`, the Gaussian by
//! eq. (33):
//! `−½{ log det A + μ̂ᵀA⁻¹μ̂ + ‖K_xz‖²_F/τ² − n‖μ̂‖²/τ² + m log n + m(n−1) log τ² + mn log 2π }`,
//! `A = R_zz + (τ²/n) I_m`, `μ̂ = (1/n) Σ_i k(x_i, z_·)`; `‖K‖²_F − n‖μ̂‖² = Σ_i ‖φ_i − μ̂‖²` is
//! accumulated around a pilot shift so it never cancels. The Jacobian `γ_θ = det(JᵀJ)^{1/2}` is
//! computed in log space with a QR fallback (see `jacobian.rs`; seed eq. (17) and the Stan listing
//! are corrected). Gradients: with `α = A⁻¹μ̂`, `Ṙ = ∂R/∂log θ_d`,
//! `∂/∂log θ_d = −½{tr(A⁻¹Ṙ) + 2αᵀ∂μ̂ − αᵀṘα + ∂SS/τ²} + Σ_i(Σ_l p_il u_ild² − 2)`,
//! `∂/∂log τ² = −½{(τ²/n)(tr A⁻¹ − αᵀα) − SS/τ² + m(n−1)}`.
//!
//! ## API (stable: other modules and the CLI code against it)
//!
//! ```text
//! pub enum EmbeddingPrior { Lebesgue /*default*/, Unit, Gaussian { eta: f64 } }
//!     fn parse(&str) -> Result<Self>          // "lebesgue" | "unit" | "gaussian:ETA"
//!     fn log_r(&self, ls: &[f64; D], x, y) -> f64;  fn r(..) -> f64;  fn r_grad(.., grad: &mut [f64]) -> f64
//! pub struct BkeParams { lengthscales: Vec<f64> /*1 or D*/, tau2: f64, prior: EmbeddingPrior, jacobian: bool }
//!     fn new(lengthscales, tau2) -> Self;  fn check(&self, dim) -> Result<()>;  fn kernel(&self) -> Result<Kernel>
//! pub struct MarginalLikelihood { log_marginal, log_gaussian, log_jacobian,
//!                                 grad_log_lengthscale: Vec<f64>, grad_log_tau2 }
//! pub fn marginal_pseudolikelihood<B: Backend>(x: &Points, z: &Points, p: &BkeParams)
//!     -> Result<MarginalLikelihood, CoreError>
//! pub struct BkePosterior   // conditioned on μ̂ at `at` points (default: the data, eq. (7))
//!     fn fit<B: Backend>(x: &Points, at: Option<&Points>, p: &BkeParams) -> Result<Self>
//!     fn weights(&self) -> &[f64]            // S-KMSE weights β = A⁻¹ μ̂(w) (§4.2)
//!     fn empirical(&self) -> &[f64]          // μ̂(w)
//!     fn mean(&self, q: &Points) -> Result<Vec<f64>>
//!     fn mean_and_variance<B: Backend>(&self, q: &Points) -> Result<(Vec<f64>, Vec<f64>)>
//!     fn covariance<B: Backend>(&self, q: &Points) -> Result<Mat>          // |q| × |q|
//!     fn sample<B: Backend>(&self, q: &Points, draws: usize, seed: u64) -> Result<Mat>  // |q| × draws
//! // ML-II (learn.rs): grid scan + L-BFGS polishing, all local optima
//! pub struct FitOptions { num_landmarks, landmarks: Option<Points>, tau2, learn_tau2, prior, jacobian,
//!                         ard, grid: Option<LengthscaleGrid>, max_starts, seed }
//! pub fn fit<B: Backend>(x: &Points, o: &FitOptions) -> Result<FitResult>  // params, log_marginal,
//!                         // local_optima (best first), median_heuristic, scan, landmarks, ...
//! pub fn hold_out_landmarks(x: &Points, m: usize, seed: u64) -> Result<(data, landmarks, indices)>
//! ```
//!
//! ```
//! use bke_core::embedding::{BkeParams, BkePosterior, marginal_pseudolikelihood};
//! use bke_core::Points;
//! use bke_linalg::Faer;
//! let x = Points::from_1d("x", &[-1.0, -0.3, 0.2, 0.9, 1.4, -2.0]).unwrap();
//! let z = Points::from_1d("z", &[-1.5, 0.0, 1.0]).unwrap();
//! let p = BkeParams::new(vec![0.8], 1.0);
//! let ml = marginal_pseudolikelihood::<Faer>(&x, &z, &p).unwrap();
//! assert!(ml.log_marginal.is_finite() && ml.grad_log_lengthscale.len() == 1);
//! let post = BkePosterior::fit::<Faer>(&x, None, &p).unwrap();
//! let (mean, var) = post.mean_and_variance::<Faer>(&z).unwrap();
//! assert!(var.iter().all(|v| *v >= 0.0) && mean.len() == 3);
//! ```

mod jacobian;
mod learn;
mod marginal;
mod pass;
mod posterior;
mod prior;
mod simd;
#[cfg(test)]
mod tests;

pub use learn::{FitOptions, FitResult, LengthscaleGrid, LocalOptimum, fit, hold_out_landmarks};
pub use marginal::{MarginalLikelihood, PartialStats, PseudolikelihoodPlan, marginal_pseudolikelihood};
pub use posterior::BkePosterior;
pub use prior::EmbeddingPrior;

use crate::{CoreError, Kernel, Points, check_positive};

/// Hyperparameters of the BKE model. Defaults: `θ = 1` (isotropic), `τ² = 1`, Lebesgue prior
/// measure, Jacobian term included.
#[derive(Debug, Clone, PartialEq)]
pub struct BkeParams {
    /// Lengthscale(s) `θ > 0` of `k_θ`: one value (isotropic) or one per dimension (ARD).
    pub lengthscales: Vec<f64>,
    /// Noise level `τ² > 0` of the likelihood `μ̂(x) | μ(x) ~ N(μ(x), τ²/n)` (eq. (5)).
    pub tau2: f64,
    /// The measure `ν` defining the prior covariance `r_θ`.
    pub prior: EmbeddingPrior,
    /// Whether the marginal pseudolikelihood includes `Σ_i log γ_θ(x_i)` (eq. (14)–(15)).
    pub jacobian: bool,
}

impl Default for BkeParams {
    fn default() -> Self {
        Self { lengthscales: vec![1.0], tau2: 1.0, prior: EmbeddingPrior::Lebesgue, jacobian: true }
    }
}

impl BkeParams {
    /// Parameters with the given lengthscale(s) and `τ²`, the Lebesgue prior and the Jacobian term.
    pub fn new(lengthscales: Vec<f64>, tau2: f64) -> Self {
        Self { lengthscales, tau2, ..Self::default() }
    }

    /// The same parameters with another prior measure.
    pub fn with_prior(mut self, prior: EmbeddingPrior) -> Self {
        self.prior = prior;
        self
    }

    /// The same parameters with the Jacobian term switched on or off.
    pub fn with_jacobian(mut self, jacobian: bool) -> Self {
        self.jacobian = jacobian;
        self
    }

    /// Errors unless the lengthscales are 1 or `dim` finite positive values, `τ²` is finite and
    /// positive and the prior's parameter is valid.
    pub fn check(&self, dim: usize) -> Result<(), CoreError> {
        if self.lengthscales.is_empty() {
            return Err(CoreError::Empty { what: "lengthscales".into(), needed: 1 });
        }
        if self.lengthscales.len() != 1 && self.lengthscales.len() != dim {
            return Err(CoreError::DimensionMismatch {
                what: "lengthscales (give one, or one per dimension)".into(),
                expected: dim,
                found: self.lengthscales.len(),
            });
        }
        for &l in &self.lengthscales {
            check_positive("lengthscale", l)?;
        }
        check_positive("tau2", self.tau2)?;
        self.prior.check()
    }

    /// The kernel `k_θ` (squared exponential, iso or ARD).
    pub fn kernel(&self) -> Result<Kernel, CoreError> {
        Kernel::se_ard(self.lengthscales.clone())
    }
}

/// One lengthscale per dimension (an isotropic value repeated).
pub(crate) fn full_lengthscales(ls: &[f64], dim: usize) -> Vec<f64> {
    if ls.len() == 1 { vec![ls[0]; dim] } else { ls.to_vec() }
}

/// Errors on empty data or landmarks, mismatched dimensions, or fewer landmarks than dimensions.
pub(crate) fn validate_data_landmarks(x: &Points, z: &Points) -> Result<(), CoreError> {
    x.check_len("data", 1)?;
    z.check_len("landmarks", 1)?;
    x.check_dim("landmarks", z.dim())?;
    if z.len() < x.dim() {
        return Err(CoreError::InvalidParameter {
            name: "number of landmarks m".into(),
            value: z.len() as f64,
            reason: format!(
                "the Jacobian of x ↦ (k(x, z_l))_l needs m ≥ D = {} landmarks: supply more landmarks",
                x.dim()
            ),
        });
    }
    Ok(())
}
