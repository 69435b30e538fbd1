//! The error type of bke-bank: BaNK-specific failures beside [`CoreError`] (which carries invalid
//! parameters, shape mismatches, non-finite values, linear-algebra failures and model-file problems).

use bke_core::CoreError;
use bke_linalg::LinalgError;

/// Errors from BaNK's validation, samplers and baselines.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BankError {
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
    #[error("numerical failure in {what}: {detail} (try standardised inputs or fix the prior precision)")]
    Numerical {
        /// Where.
        what: String,
        /// What happened.
        detail: String,
    },
    /// Validation, shapes, linear algebra, model files (bke-core).
    #[error(transparent)]
    Core(#[from] CoreError),
}

impl From<LinalgError> for BankError {
    fn from(e: LinalgError) -> Self {
        BankError::Core(CoreError::Linalg(e))
    }
}

/// `CoreError::InvalidParameter` for `name = value` with `reason`.
pub(crate) fn invalid(name: &str, value: f64, reason: impl Into<String>) -> BankError {
    BankError::Core(CoreError::InvalidParameter { name: name.into(), value, reason: reason.into() })
}

/// `CoreError::DimensionMismatch` for `what`.
pub(crate) fn mismatch(what: &str, expected: usize, found: usize) -> BankError {
    BankError::Core(CoreError::DimensionMismatch { what: what.into(), expected, found })
}

/// An inconsistent model (e.g. a hand-edited model file).
pub(crate) fn bad_model(msg: impl Into<String>) -> CoreError {
    CoreError::ModelFile(format!("invalid BaNK model: {}", msg.into()))
}

/// Errors unless `value` is finite and strictly positive.
pub(crate) fn check_positive(name: &str, value: f64) -> Result<(), BankError> {
    Ok(bke_core::check_positive(name, value)?)
}

/// Errors unless `v ≥ 1`.
pub(crate) fn check_count(name: &str, v: usize) -> Result<(), BankError> {
    if v == 0 {
        return Err(invalid(name, 0.0, "must be at least 1"));
    }
    Ok(())
}

/// Errors on the first non-finite target.
pub(crate) fn check_targets(y: &[f64]) -> Result<(), BankError> {
    match y.iter().position(|v| !v.is_finite()) {
        Some(row) => Err(CoreError::NonFinite { what: "targets".into(), row, col: 0, value: y[row] }.into()),
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
