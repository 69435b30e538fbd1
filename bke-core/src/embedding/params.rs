//! The hyperparameters of the BKE model ([`BkeParams`]) and the checks of the data it is fitted to.

use super::prior::EmbeddingPrior;
use crate::estimator::Params;
use crate::{CoreError, Kernel, Points, check_positive};
use serde::{Deserialize, Serialize};

/// Hyperparameters of the BKE model. Defaults: `θ = 1` (isotropic), `τ² = 1`, Lebesgue prior
/// measure, Jacobian term included.
///
/// As an [`Estimator`](crate::estimator::Estimator) on [`Points`], it conditions the posterior of the embedding on the data
/// (seed 000 eq. (7)–(8)): [`BkePosterior`](crate::embedding::BkePosterior).
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
