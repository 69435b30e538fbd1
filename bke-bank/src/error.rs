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

/// Errors unless a spectral-mixture baseline (A la Carte, RFO) has a positive number of frequencies
/// and of mixture components, and its `2 × frequencies` features fit in memory.
pub(crate) fn check_frequencies(frequencies: usize, components: usize) -> Result<(), BankError> {
    check_count("frequencies", frequencies)?;
    check_features(frequencies, 1, 1, 1)?;
    check_count("components", components)
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

/// Refuses `frequencies` random features for `n` rows of `d` inputs, kept for `samples` posterior
/// samples, when the work would not fit in memory ([`bke_core::budget`]): three feature-sized
/// matrices (`n × (2M + 1)`: classification keeps `Φ`, the proposals' features and the joint weight
/// move's weighted design; regression `Φ` and a block of proposals), the normal-equation matrices
/// (`3 min(n, 2M + 1)²`), and the stored samples (`samples × M (d + 2)`). Checked before anything is allocated.
pub(crate) fn check_features(
    frequencies: usize,
    samples: usize,
    n: usize,
    d: usize,
) -> Result<(), BankError> {
    use bke_core::budget::{Bytes, check};
    let width = frequencies.saturating_mul(2).saturating_add(1);
    let side = width.min(n.max(1)).max(1);
    let bytes = Bytes::f64s(n)
        .times(width)
        .times(3)
        .plus(Bytes::f64s(side).times(side).times(3))
        .plus(Bytes::f64s(frequencies).times(d.saturating_add(2)).times(samples.max(1)));
    let setting = if n > 1 {
        format!("frequencies = {frequencies} (samples = {samples}, {n} rows of {d} inputs)")
    } else {
        format!("frequencies = {frequencies} (samples = {samples})")
    };
    Ok(check(&setting, bytes)?)
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
