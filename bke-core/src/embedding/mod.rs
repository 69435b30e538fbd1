//! # The Bayesian Kernel Embedding (BKE) model
//!
//! Flaxman, Sejdinovic, Cunningham, Filippi (UAI 2016), seeds 000 (paper) and 002 (appendix), with
//! the corrections of `docs/DESIGN.md` §3.1. Squared exponential kernel
//! `k_θ(x, y) = exp(−½ Σ_d (x_d − y_d)²/θ_d²)` (one `θ`: isotropic; one per dimension: ARD).
//!
//! **Model.** `μ_θ ~ GP(0, r_θ)` with `r_θ(x, y) = ∫ k_θ(x, u) k_θ(u, y) ν(du)` (seed 000 eq. (3)–(4); the
//! measure `ν` is [`EmbeddingPrior`]), and `μ̂_θ(x) | μ_θ ~ N(μ_θ(x), τ²/n)` (seed 000 eq. (5)) for the
//! empirical embedding `μ̂_θ = (1/n) Σ_i k_θ(·, x_i)` (seed 000 eq. (2)).
//!
//! **Posterior** (seed 000 eq. (7)–(8)), conditioning on `μ̂` at points `w_1..w_p` (the data, as in the seed, or
//! any other set such as landmarks): with `A = R_ww + (τ²/n) I` and the S-KMSE weights
//! `β = A⁻¹ μ̂(w)` (§4.2, here with kernel `r`),
//! `E[μ(x*)] = r(x*, w)ᵀ β`, `Cov[μ(x*), μ(y*)] = r(x*, y*) − r(x*, w)ᵀ A⁻¹ r(w, y*)`.
//!
//! **Marginal pseudolikelihood** (seed 000 eq. (15)) at landmarks `z_1..z_m` (`m ≥ D`):
//! `log p(x | θ, τ²) = log N(vec K_zx; 0, 1 1ᵀ ⊗ R_zz + τ² I_mn) + Σ_i log γ_θ(x_i)`, the Gaussian by
//! seed 002 eq. (33):
//! `−½{ log det A + μ̂ᵀA⁻¹μ̂ + ‖K_xz‖²_F/τ² − n‖μ̂‖²/τ² + m log n + m(n−1) log τ² + mn log 2π }`,
//! `A = R_zz + (τ²/n) I_m`, `μ̂ = (1/n) Σ_i k(x_i, z_·)`; `‖K‖²_F − n‖μ̂‖² = Σ_i ‖φ_i − μ̂‖²` is
//! accumulated around a pilot shift so it never cancels. The Jacobian `γ_θ = det(JᵀJ)^{1/2}` is
//! computed in log space with a QR fallback (see `jacobian.rs`; seed 000 eq. (17) and the Stan listing
//! are corrected). Gradients: with `α = A⁻¹μ̂`, `Ṙ = ∂R/∂log θ_d`,
//! `∂/∂log θ_d = −½{tr(A⁻¹Ṙ) + 2αᵀ∂μ̂ − αᵀṘα + ∂SS/τ²} + Σ_i(Σ_l p_il u_ild² − 2)`,
//! `∂/∂log τ² = −½{(τ²/n)(tr A⁻¹ − αᵀα) − SS/τ² + m(n−1)}`.
//!
//! ## Usage (the estimator convention of [`crate::estimator`])
//!
//! - [`BkeParams`] (`θ`, `τ²`, prior measure, Jacobian switch) `.check()?.fit::<B>(&x)` conditions
//!   the posterior on the data (seed 000 eq. (7)–(8)) and returns a [`BkePosterior`] ([`crate::Predict`]:
//!   posterior mean and variance of `μ`); [`BkePosterior::conditioned_at`] conditions at other
//!   points (landmarks: `O(p³ + np)` instead of `O(n³)`).
//! - [`EmbeddingParams`] (ML-II settings) `.check()?.fit::<B>(&x)` learns `θ` (and optionally `τ²`)
//!   and returns a [`FittedEmbedding`]: the learned hyperparameters, every local optimum, the scan,
//!   the median heuristic, the landmarks, and the posterior conditioned at the landmarks
//!   ([`crate::Predict`]).
//! - [`marginal_pseudolikelihood`] evaluates seed 000 eq. (15) and its gradient at given `θ`, `τ²`.
//!
//! ```
//! use bke_core::embedding::{BkeParams, EmbeddingParams, marginal_pseudolikelihood};
//! use bke_core::{Params, Points, Predict};
//! use bke_linalg::DefaultBackend;
//! let x = Points::from_1d("x", &[-1.0, -0.3, 0.2, 0.9, 1.4, -2.0, 0.5, -0.7]).unwrap();
//! let z = Points::from_1d("z", &[-1.5, 0.0, 1.0]).unwrap();
//! let p = BkeParams::new(vec![0.8], 1.0);
//! let ml = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap();
//! assert!(ml.log_marginal.is_finite() && ml.grad_log_lengthscale.len() == 1);
//! let post = p.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
//! let pred = post.predict::<DefaultBackend>(&z).unwrap();
//! assert!(pred.variance.iter().all(|v| *v >= 0.0) && pred.mean.len() == 3);
//! // ML-II: learn θ with 3 held-out landmarks.
//! let fitted = EmbeddingParams { num_landmarks: 3, ..Default::default() }.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
//! assert!(fitted.params.lengthscales[0] > 0.0 && fitted.predict::<DefaultBackend>(&z).unwrap().mean.len() == 3);
//! ```

mod jacobian;
mod learn;
mod marginal;
mod pass;
mod posterior;
mod prior;
mod simd;
mod stats;
#[cfg(test)]
mod tests;

pub use learn::{
    EmbeddingParams, FittedEmbedding, Learned, LengthscaleGrid, LocalOptimum, MEDIAN_HEURISTIC_CONVENTION,
    ScanPoint, StatsSource, default_num_landmarks, hold_out_landmarks, landmark_indices, learn_from_stats,
};
pub use marginal::{
    MarginalLikelihood, PseudolikelihoodPlan, PseudolikelihoodStream, marginal_pseudolikelihood,
};
pub use posterior::BkePosterior;
pub use prior::EmbeddingPrior;
pub use stats::PartialStats;

use crate::estimator::{Estimator, Params, Progress, Valid};
use crate::{CoreError, Kernel, Points, check_positive};
use bke_linalg::Backend;
use serde::{Deserialize, Serialize};

/// Hyperparameters of the BKE model. Defaults: `θ = 1` (isotropic), `τ² = 1`, Lebesgue prior
/// measure, Jacobian term included.
///
/// As an [`Estimator`] on [`Points`], it conditions the posterior of the embedding on the data
/// (seed 000 eq. (7)–(8)): [`BkePosterior`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BkeParams {
    /// Lengthscale(s) `θ > 0` of `k_θ`: one value (isotropic) or one per dimension (ARD).
    pub lengthscales: Vec<f64>,
    /// Noise level `τ² > 0` of the likelihood `μ̂(x) | μ(x) ~ N(μ(x), τ²/n)` (seed 000 eq. (5)).
    pub tau2: f64,
    /// The measure `ν` defining the prior covariance `r_θ`.
    pub prior: EmbeddingPrior,
    /// Whether the marginal pseudolikelihood includes `Σ_i log γ_θ(x_i)` (seed 000 eq. (14)–(15)).
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

    /// [`Params::validate`], and the data-dependent rule: one lengthscale, or one per dimension of
    /// `dim`-dimensional data.
    pub fn validate_for_dim(&self, dim: usize) -> Result<(), CoreError> {
        self.validate()?;
        if self.lengthscales.len() != 1 && self.lengthscales.len() != dim {
            return Err(CoreError::DimensionMismatch {
                what: "lengthscales (give one, or one per dimension)".into(),
                expected: dim,
                found: self.lengthscales.len(),
            });
        }
        Ok(())
    }

    /// The kernel `k_θ` (squared exponential, iso or ARD).
    pub fn kernel(&self) -> Result<Kernel, CoreError> {
        Kernel::se_ard(self.lengthscales.clone())
    }
}

impl Params for BkeParams {
    type Error = CoreError;

    /// At least one lengthscale, every lengthscale and `τ²` finite and positive, a valid prior
    /// measure.
    fn validate(&self) -> Result<(), CoreError> {
        if self.lengthscales.is_empty() {
            return Err(CoreError::Empty { what: "lengthscales".into(), needed: 1 });
        }
        for &l in &self.lengthscales {
            check_positive("lengthscale", l)?;
        }
        check_positive("tau2", self.tau2)?;
        self.prior.check()
    }
}

impl Estimator for BkeParams {
    type Data = Points;
    type Fitted = BkePosterior;

    /// The posterior of `μ_θ` conditioned on `μ̂_θ` at the data themselves (seed 000 eq. (7)).
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        x: &Points,
        _progress: &dyn Progress,
    ) -> Result<BkePosterior, CoreError> {
        BkePosterior::conditioned_at::<B>(params, x, x)
    }
}

/// Serialises one value as itself and several as an array (an isotropic lengthscale is a number in
/// JSON, ARD lengthscales an array).
pub(crate) fn one_or_many<T: Serialize, S: serde::Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    match v {
        [one] => one.serialize(s),
        many => many.serialize(s),
    }
}

/// One lengthscale per dimension (an isotropic value repeated).
pub(crate) fn full_lengthscales(ls: &[f64], dim: usize) -> Vec<f64> {
    if ls.len() == 1 { vec![ls[0]; dim] } else { ls.to_vec() }
}

/// Largest magnitude of a data value for which squared distances (and so kernel values and the
/// median heuristic) stay finite with room to spare.
const MAX_ABS_VALUE: f64 = 1e150;

/// Errors on data the model cannot use, naming the column: values beyond ±1e150 (squared
/// distances overflow: standardise the columns), and, when the log-Jacobian is included, a
/// constant column (the feature map's Jacobian is then rank-deficient everywhere: the log-Jacobian
/// is −∞).
pub(crate) fn check_data_scale(x: &Points, jacobian: bool) -> Result<(), CoreError> {
    let ranges: Vec<(f64, f64)> = (0..x.dim())
        .map(|k| {
            x.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| (lo.min(p[k]), hi.max(p[k])))
        })
        .collect();
    check_column_ranges(&ranges, x.len(), jacobian)
}

/// The data checks of the ML-II fit (values beyond ±1e150; with the Jacobian, a constant column)
/// from each column's `(min, max)` over `n` points, for data held elsewhere (e.g. the chunks of a
/// Dask array).
pub fn check_column_ranges(ranges: &[(f64, f64)], n: usize, jacobian: bool) -> Result<(), CoreError> {
    for (k, &(lo, hi)) in ranges.iter().enumerate() {
        if lo.abs().max(hi.abs()) > MAX_ABS_VALUE {
            return Err(CoreError::NonFiniteResult {
                what: "the kernel on the data".into(),
                reason: format!(
                    "column {} has values up to {:e}, so squared distances overflow; standardise the \
                     columns (subtract the mean, divide by the standard deviation) first",
                    k + 1,
                    lo.abs().max(hi.abs())
                ),
            });
        }
        if jacobian && n > 1 && lo == hi {
            return Err(CoreError::NonFiniteResult {
                what: "the log-Jacobian of the pseudolikelihood".into(),
                reason: format!(
                    "column {} is constant (every value is {lo}), so the density of the data is \
                     degenerate; drop the column, or leave the Jacobian term out",
                    k + 1
                ),
            });
        }
    }
    Ok(())
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

/// `MarginalLikelihood` as JSON: `{"log_marginal", "log_gaussian", "log_jacobian",
/// "grad_log_lengthscale", "grad_log_tau2"}` (the fields of `bke embed loglik`).
impl Serialize for MarginalLikelihood {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("MarginalLikelihood", 5)?;
        st.serialize_field("log_marginal", &self.log_marginal)?;
        st.serialize_field("log_gaussian", &self.log_gaussian)?;
        st.serialize_field("log_jacobian", &self.log_jacobian)?;
        st.serialize_field("grad_log_lengthscale", &self.grad_log_lengthscale)?;
        st.serialize_field("grad_log_tau2", &self.grad_log_tau2)?;
        st.end()
    }
}
