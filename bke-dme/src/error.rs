//! The error type of bke-dme.

use bke_core::CoreError;
use bke_linalg::LinalgError;

/// Errors from validation and from the numerical routines of bke-dme.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DmeError {
    /// Two inputs that must pair up one to one have different lengths.
    #[error(
        "length mismatch: {left} has {n_left} entries but {right} has {n_right}; \
         they are paired one to one and must have the same length"
    )]
    LengthMismatch {
        /// The first input.
        left: String,
        /// Its length.
        n_left: usize,
        /// The second input.
        right: String,
        /// Its length.
        n_right: usize,
    },
    /// A matrix that must be positive definite is not, for the given hyperparameters.
    #[error("{what} is not positive definite ({source}); {advice}")]
    NotPositiveDefinite {
        /// Which matrix.
        what: String,
        /// What to change.
        advice: String,
        /// The factorisation error.
        source: LinalgError,
    },
    /// The optimiser could not make progress from any start.
    #[error("hyperparameter optimisation failed: {0}")]
    Optimisation(String),
    /// Validation or kernel errors from bke-core (NaN/Inf with row and column, empty data,
    /// dimension mismatches, non-positive hyperparameters).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// Other linear-algebra failures.
    #[error(transparent)]
    Linalg(#[from] LinalgError),
}

/// Errors unless `a` and `b` have the same length.
pub(crate) fn check_same_len(left: &str, n_left: usize, right: &str, n_right: usize) -> Result<(), DmeError> {
    if n_left != n_right {
        return Err(DmeError::LengthMismatch { left: left.into(), n_left, right: right.into(), n_right });
    }
    Ok(())
}

/// Errors on NaN/Inf in a vector of targets (row = index, column 0).
pub(crate) fn check_finite_vec(what: &str, v: &[f64]) -> Result<(), DmeError> {
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(CoreError::NonFinite { what: what.into(), row: i, col: 0, value: v[i] }.into());
    }
    Ok(())
}

/// Maps a failed Cholesky factorisation to an error that names the matrix and what to change.
pub(crate) fn not_pd(what: &str, advice: &str) -> impl FnOnce(LinalgError) -> DmeError {
    let (what, advice) = (what.to_string(), advice.to_string());
    move |source| match source {
        LinalgError::NotPositiveDefinite { .. } | LinalgError::JitterExhausted { .. } => {
            DmeError::NotPositiveDefinite { what, advice, source }
        }
        other => DmeError::Linalg(other),
    }
}
