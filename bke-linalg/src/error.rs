//! The error type of bke-linalg. Every variant says what went wrong and where.

/// Errors from matrix construction, factorisations and updates.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LinalgError {
    /// The Cholesky factorisation met a non-positive pivot.
    #[error(
        "matrix is not positive definite: the Cholesky factorisation failed at pivot {pivot} \
         (add jitter to the diagonal, or rescale the inputs)"
    )]
    NotPositiveDefinite {
        /// Zero-based index of the first pivot that was not positive.
        pivot: usize,
    },
    /// Even the largest allowed jitter did not make the matrix positive definite.
    #[error(
        "matrix is not positive definite even with jitter {jitter:e} added to the diagonal \
         (failing pivot {pivot}); the matrix is far from positive definite: check its construction"
    )]
    JitterExhausted {
        /// The last (largest) jitter tried.
        jitter: f64,
        /// The failing pivot at that jitter.
        pivot: usize,
    },
    /// A downdate `L Lᵀ − W Wᵀ` would not be positive definite. The factor is left unchanged.
    #[error(
        "Cholesky downdate would make the matrix indefinite at column {column} of W; \
         the factor was left unchanged"
    )]
    DowndateNotPositiveDefinite {
        /// Zero-based column of `W` at which positive definiteness is lost.
        column: usize,
    },
    /// An input contained NaN or ±∞.
    #[error("non-finite value {value} at row {row}, column {col} of {what}")]
    NonFinite {
        /// Which operand.
        what: &'static str,
        /// Zero-based row.
        row: usize,
        /// Zero-based column.
        col: usize,
        /// The offending value.
        value: f64,
    },
    /// Operand shapes do not fit the operation.
    #[error("shape mismatch in {op}: expected {expected}, found {found}")]
    ShapeMismatch {
        /// The operation.
        op: &'static str,
        /// What was expected.
        expected: String,
        /// What was given.
        found: String,
    },
    /// The symmetric eigensolver did not converge.
    #[error("symmetric eigendecomposition did not converge ({0})")]
    EigenFailed(String),
    /// A backend library reported an error it does not explain further.
    #[error("{backend} backend error: {message}")]
    Backend {
        /// The backend's name.
        backend: &'static str,
        /// Its message.
        message: String,
    },
}

/// Checks that two shapes are equal.
pub(crate) fn check_same_shape(
    op: &'static str,
    expected: (usize, usize),
    found: (usize, usize),
) -> Result<(), LinalgError> {
    if expected != found {
        return Err(LinalgError::ShapeMismatch {
            op,
            expected: format!("{}x{}", expected.0, expected.1),
            found: format!("{}x{}", found.0, found.1),
        });
    }
    Ok(())
}
