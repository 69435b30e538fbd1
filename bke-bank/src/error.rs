//! The error type of bke-bank.

use bke_core::CoreError;
use bke_linalg::LinalgError;

/// Errors from BaNK's validation, samplers and baselines.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BankError {
    /// A hyperparameter is outside its domain.
    #[error("invalid {name} = {value}: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: String,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        reason: String,
    },
    /// Inputs and targets (or two inputs) do not fit together.
    #[error("shape mismatch: {what} has {found}, expected {expected}")]
    ShapeMismatch {
        /// Which input.
        what: String,
        /// What was expected.
        expected: usize,
        /// What was given.
        found: usize,
    },
    /// A target value is NaN or ±∞.
    #[error("target value {value} at row {row} is not finite; remove or impute that row")]
    NonFiniteTarget {
        /// Zero-based row.
        row: usize,
        /// The value.
        value: f64,
    },
    /// A classification label is not 0 or 1.
    #[error("classification labels must be 0 or 1, but row {row} has {value}; recode the target column")]
    BadLabel {
        /// Zero-based row.
        row: usize,
        /// The value.
        value: f64,
    },
    /// Too few rows for what was asked (fitting, or cross-validation folds).
    #[error("too few rows: {what} needs at least {needed}, but the data has {found}")]
    TooFewRows {
        /// What needs the rows.
        what: String,
        /// How many are needed.
        needed: usize,
        /// How many there are.
        found: usize,
    },
    /// A numerical failure that persisted after the sampler's own recovery (refactorisation).
    #[error("numerical failure in {what}: {detail} (try a larger prior precision or standardised inputs)")]
    Numerical {
        /// Where.
        what: String,
        /// What happened.
        detail: String,
    },
    /// A model read from JSON is inconsistent.
    #[error("invalid model: {0}")]
    InvalidModel(String),
    /// An error from bke-core (validation of points).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// A linear-algebra error.
    #[error(transparent)]
    Linalg(#[from] LinalgError),
}

/// Errors unless `value` is finite and strictly positive.
pub(crate) fn check_positive(name: &str, value: f64) -> Result<(), BankError> {
    if !(value.is_finite() && value > 0.0) {
        return Err(BankError::InvalidParameter {
            name: name.into(),
            value,
            reason: "must be finite and strictly positive".into(),
        });
    }
    Ok(())
}

/// Errors on the first non-finite target.
pub(crate) fn check_targets(y: &[f64]) -> Result<(), BankError> {
    match y.iter().position(|v| !v.is_finite()) {
        Some(row) => Err(BankError::NonFiniteTarget { row, value: y[row] }),
        None => Ok(()),
    }
}

/// Errors on the first label that is not 0 or 1.
pub(crate) fn check_labels(y: &[f64]) -> Result<(), BankError> {
    match y.iter().position(|&v| v != 0.0 && v != 1.0) {
        Some(row) => Err(BankError::BadLabel { row, value: y[row] }),
        None => Ok(()),
    }
}
