//! The Normal-inverse-Wishart prior in feature space (seed 003 eq. (2)) and its parameter checks.

use crate::estimator::Params;
use crate::{CoreError, check_positive};
use serde::{Deserialize, Serialize};

/// Hyperparameters of the Normal-inverse-Wishart prior in feature space (seed 003 eq. (2)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NiwParams {
    /// Inverse-Wishart degrees of freedom `α`; must exceed `d − 1` (input dimension `d`).
    /// Default `2.0` (valid up to `d = 2`).
    pub alpha: f64,
    /// Prior precision multiplier of the mean, `μ | Σ ~ N(0, Σ/β)`; `> 0`. Default `0.01` (seed 003
    /// Fig. 2).
    pub beta: f64,
    /// Inverse-Wishart scale `σ₀²` (scale matrix `σ₀² I`), relative to the unit kernel amplitude;
    /// `> 0`. Default `1.0`.
    pub sigma0_sq: f64,
}

impl Default for NiwParams {
    fn default() -> Self {
        Self { alpha: 2.0, beta: 0.01, sigma0_sq: 1.0 }
    }
}

impl NiwParams {
    /// [`Params::validate`], and `α > d − 1` for `dim`-dimensional data (otherwise the pulled-back
    /// density is improper, seed 003 §2.2).
    pub fn validate_for_dim(&self, dim: usize) -> Result<(), CoreError> {
        self.validate()?;
        check_alpha(self.alpha, dim)
    }

    /// `γ = (1 + β + N)/(β + N)` (seed 003 eq. (3)).
    pub fn gamma(&self, n: usize) -> f64 {
        (1.0 + self.beta + n as f64) / (self.beta + n as f64)
    }

    /// The exponent `(1 + N + α)/2` (seed 003 eq. (3)).
    pub fn exponent(&self, n: usize) -> f64 {
        0.5 * (1.0 + n as f64 + self.alpha)
    }
}

impl Params for NiwParams {
    type Error = CoreError;

    /// `α` finite, `β > 0`, `σ₀² > 0` (the rule `α > d − 1` needs the data: [`NiwParams::validate_for_dim`]).
    fn validate(&self) -> Result<(), CoreError> {
        check_positive("beta", self.beta)?;
        check_positive("sigma0_sq", self.sigma0_sq)?;
        check_finite("alpha", self.alpha)
    }
}

/// Errors unless `α` is finite and exceeds `d − 1`.
pub(super) fn check_alpha(alpha: f64, dim: usize) -> Result<(), CoreError> {
    let min = dim as f64 - 1.0;
    if !(alpha.is_finite() && alpha > min) {
        return Err(CoreError::InvalidParameter {
            name: "alpha".into(),
            value: alpha,
            reason: format!(
                "must be finite and exceed d - 1 = {min} for {dim}-dimensional data, otherwise the density \
                 is improper"
            ),
        });
    }
    Ok(())
}

pub(super) fn check_finite(name: &str, v: f64) -> Result<(), CoreError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(CoreError::InvalidParameter { name: name.into(), value: v, reason: "must be finite".into() })
    }
}
