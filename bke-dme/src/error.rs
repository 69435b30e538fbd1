//! The error type of bke-dme: the errors of bke-core ([`CoreError`]: NaN/Inf with row and column,
//! empty data, dimension mismatches, invalid parameters, linear-algebra failures, cancellation)
//! plus what only this crate can say.

use bke_core::CoreError;
use bke_linalg::LinalgError;

/// Errors from validation and from the numerical routines of bke-dme.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DmeError {
    /// Validation, kernel and linear-algebra errors of bke-core.
    #[error(transparent)]
    Core(#[from] CoreError),
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
    /// A simulator failed or returned output of the wrong shape (the message says which).
    #[error("simulator: {0}")]
    Simulator(String),
}

impl From<LinalgError> for DmeError {
    fn from(e: LinalgError) -> Self {
        DmeError::Core(CoreError::Linalg(e))
    }
}

/// Errors unless the paired inputs `left` and `right` have the same number of rows.
pub(crate) fn check_same_len(left: &str, n_left: usize, right: &str, n_right: usize) -> Result<(), DmeError> {
    if n_left != n_right {
        return Err(CoreError::DimensionMismatch {
            what: format!("{right} (paired one to one with the {n_left} rows of {left})"),
            expected: n_left,
            found: n_right,
        }
        .into());
    }
    Ok(())
}

/// Errors on NaN/Inf in a vector of values (row = index, column 0).
pub(crate) fn check_finite_vec(what: &str, v: &[f64]) -> Result<(), DmeError> {
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(CoreError::NonFinite { what: what.into(), row: i, col: 0, value: v[i] }.into());
    }
    Ok(())
}

/// The value named `s` (trimmed, any case) in `names`, or a `CoreError::InvalidChoice` naming `what`
/// and listing the names ("use a, b or c").
pub(crate) fn parse_named<T: Copy>(s: &str, what: &str, names: &[(T, &str)]) -> Result<T, DmeError> {
    let key = s.trim().to_ascii_lowercase();
    if let Some((v, _)) = names.iter().find(|(_, n)| *n == key) {
        return Ok(*v);
    }
    let list: Vec<&str> = names.iter().map(|(_, n)| *n).collect();
    let reason = match list.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("use {} or {last}", rest.join(", ")),
        _ => format!("use {}", list.join("")),
    };
    Err(DmeError::Core(CoreError::InvalidChoice { what: format!("{what} '{s}'"), reason }))
}

/// The name of `v` in `names` (every value of the enum is listed).
pub(crate) fn name_of<T: PartialEq>(v: T, names: &[(T, &'static str)]) -> &'static str {
    names.iter().find(|(n, _)| *n == v).map(|(_, name)| *name).expect("every value is named")
}

/// An [`CoreError::InvalidParameter`] for `name = value`.
pub(crate) fn invalid(name: &str, value: f64, reason: &str) -> DmeError {
    CoreError::InvalidParameter { name: name.into(), value, reason: reason.into() }.into()
}

/// Maps a failed Cholesky factorisation to an error that names the matrix and what to change.
pub(crate) fn not_pd(what: &str, advice: &str) -> impl FnOnce(LinalgError) -> DmeError {
    let (what, advice) = (what.to_string(), advice.to_string());
    move |source| match source {
        LinalgError::NotPositiveDefinite { .. } | LinalgError::JitterExhausted { .. } => {
            DmeError::NotPositiveDefinite { what, advice, source }
        }
        other => DmeError::from(other),
    }
}
