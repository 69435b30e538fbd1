//! The target of the sampler: a log density on `ℝ^d` with its gradient, the one thing [`super`]
//! needs from a model.

use crate::CoreError;

/// A log density on `ℝ^d` with its gradient: the target of [`super::sample`] (not to be confused with
/// [`crate::LogDensity`], the trait of fitted density models).
///
/// Implementations are shared by the chains running in parallel (hence `Sync`).
pub trait Target: Sync {
    /// The dimension `d`.
    fn dim(&self) -> usize;

    /// Returns `log π(q)` (up to an additive constant) and writes `∇ log π(q)` into `grad`
    /// (`grad.len() == q.len() == dim()`).
    ///
    /// An error, or a non-finite value or gradient, marks `q` as outside the support: during sampling
    /// the trajectory ends there as a divergence; during initialisation the point is rejected, and the
    /// error is reported if no acceptable initial point is found.
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError>;
}
