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
#[cfg(test)]
mod jacobian_tests;
mod learn;
mod marginal;
mod params;
mod pass;
mod posterior;
mod prior;
mod scan;
mod stats;
#[cfg(test)]
mod tests;

pub use learn::{
    EmbeddingParams, FittedEmbedding, Learned, LocalOptimum, MEDIAN_HEURISTIC_CONVENTION, ScanPoint,
    StatsSource, default_num_landmarks, hold_out_landmarks, landmark_indices, learn_from_stats,
};
pub use marginal::{
    MarginalLikelihood, PseudolikelihoodPlan, PseudolikelihoodStream, marginal_pseudolikelihood,
};
pub use params::{BkeParams, check_column_ranges};
pub(crate) use params::{check_data_scale, one_or_many, validate_data_landmarks};
pub use posterior::BkePosterior;
pub use prior::EmbeddingPrior;
pub use scan::{LengthscaleGrid, PseudolikelihoodScan, scan_pseudolikelihood};
pub use stats::PartialStats;

use crate::estimator::{Estimator, Progress, Valid};
use crate::{CoreError, Points};
use bke_linalg::Backend;
use serde::Serialize;

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
