//! The error type of bke-core.

use bke_linalg::LinalgError;

/// Errors from validation and from the numerical routines of bke-core.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// An input contained NaN or ±∞.
    #[error("non-finite value {value} in {what} at row {row}, column {col}")]
    NonFinite {
        /// Which input.
        what: String,
        /// Zero-based row (point index).
        row: usize,
        /// Zero-based column (coordinate).
        col: usize,
        /// The offending value.
        value: f64,
    },
    /// An input that needs data had none.
    #[error("{what} is empty: at least {needed} point(s) are needed")]
    Empty {
        /// Which input.
        what: String,
        /// How many points the operation needs.
        needed: usize,
    },
    /// Two inputs do not fit together.
    #[error("dimension mismatch: {what} has {found}, expected {expected}")]
    DimensionMismatch {
        /// Which input.
        what: String,
        /// What was expected.
        expected: usize,
        /// What was given.
        found: usize,
    },
    /// A parameter is outside its domain.
    #[error("invalid {name} = {value}: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: String,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        reason: String,
    },
    /// An MCMC sampler could not start or run (the message says why and what to try).
    #[error("sampler: {0}")]
    Sampler(String),
    /// An option (a named choice, not a number) that is unknown or does not fit the other options.
    #[error("{what}: {reason}")]
    InvalidChoice {
        /// The option and its value.
        what: String,
        /// What to use instead.
        reason: String,
    },
    /// A linear-algebra failure (e.g. a matrix that is not positive definite).
    #[error(transparent)]
    Linalg(#[from] LinalgError),
    /// The caller asked to stop (see [`crate::Progress::cancelled`]).
    #[error("cancelled")]
    Cancelled,
    /// A computed result that is not finite (degenerate data or parameters; the message says which
    /// and what to do).
    #[error("{what} is not finite: {reason}")]
    NonFiniteResult {
        /// The quantity.
        what: String,
        /// Why, and what to change.
        reason: String,
    },
    /// Planned work that needs more memory than the limit ([`crate::budget`]).
    #[error(
        "{setting}: the planned work needs about {needed}, more than {limit}; lower it, or raise the \
         limit with --max-memory (BKE_MAX_MEMORY in the environment)"
    )]
    TooLarge {
        /// The setting that made it large, with its value (e.g. `draws = 1000000`).
        setting: String,
        /// The estimate, e.g. `7.5 GiB`.
        needed: String,
        /// The limit and where it came from.
        limit: String,
    },
    /// A model file that cannot be read, written or used (the message names the file and why).
    #[error("{0}")]
    ModelFile(String),
}

/// Errors unless `value` is finite and strictly positive.
pub fn check_positive(name: &str, value: f64) -> Result<(), CoreError> {
    if !(value.is_finite() && value > 0.0) {
        return Err(CoreError::InvalidParameter {
            name: name.into(),
            value,
            reason: "must be finite and strictly positive".into(),
        });
    }
    Ok(())
}
