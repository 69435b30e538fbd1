//! [`Points`]: a validated set of `n` points in `ℝ^D`, stored row-major so each point is a contiguous
//! slice (kernel evaluations read whole points).

use crate::CoreError;
use bke_linalg::Mat;

/// `n` points in `D` dimensions, row-major. Always finite (checked on construction).
#[derive(Debug, Clone, PartialEq)]
pub struct Points {
    data: Vec<f64>,
    n: usize,
    dim: usize,
}

impl Points {
    /// Points from a row-major buffer of `n · dim` values. `what` names the input in errors
    /// (e.g. the file it came from). Errors on NaN/Inf (with the row and column) and ragged length.
    pub fn new(what: &str, data: Vec<f64>, dim: usize) -> Result<Self, CoreError> {
        if dim == 0 {
            return Err(CoreError::InvalidParameter {
                name: format!("dimension of {what}"),
                value: 0.0,
                reason: "points need at least one coordinate".into(),
            });
        }
        if data.len() % dim != 0 {
            return Err(CoreError::DimensionMismatch {
                what: format!("{what} (number of values)"),
                expected: data.len().div_ceil(dim) * dim,
                found: data.len(),
            });
        }
        if let Some(i) = data.iter().position(|v| !v.is_finite()) {
            return Err(CoreError::NonFinite {
                what: what.into(),
                row: i / dim,
                col: i % dim,
                value: data[i],
            });
        }
        let n = data.len() / dim;
        Ok(Self { data, n, dim })
    }

    /// Points from rows.
    pub fn from_rows(what: &str, rows: &[Vec<f64>]) -> Result<Self, CoreError> {
        let dim = rows.first().map_or(1, Vec::len);
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != dim) {
            return Err(CoreError::DimensionMismatch {
                what: format!("{what} row {i}"),
                expected: dim,
                found: r.len(),
            });
        }
        Self::new(what, rows.concat(), dim)
    }

    /// One-dimensional points.
    pub fn from_1d(what: &str, xs: &[f64]) -> Result<Self, CoreError> {
        Self::new(what, xs.to_vec(), 1)
    }

    /// Points from the rows of an `n × D` matrix.
    pub fn from_mat(what: &str, m: &Mat) -> Result<Self, CoreError> {
        let data = (0..m.nrows()).flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)])).collect();
        Self::new(what, data, m.ncols().max(1))
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Dimension `D`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Point `i`.
    #[inline]
    pub fn point(&self, i: usize) -> &[f64] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Iterator over the points.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[f64]> + '_ {
        self.data.chunks_exact(self.dim)
    }

    /// The row-major buffer.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// The points with the given indices, in that order.
    pub fn select(&self, idx: &[usize]) -> Points {
        let data = idx.iter().flat_map(|&i| self.point(i).iter().copied()).collect();
        Points { data, n: idx.len(), dim: self.dim }
    }

    /// Concatenation of two point sets of the same dimension.
    pub fn concat(&self, other: &Points) -> Result<Points, CoreError> {
        self.check_dim("second sample", other.dim)?;
        let mut data = self.data.clone();
        data.extend_from_slice(&other.data);
        Ok(Points { data, n: self.n + other.n, dim: self.dim })
    }

    /// The `n × D` matrix of the points.
    pub fn to_mat(&self) -> Mat {
        Mat::from_fn(self.n, self.dim, |i, j| self.data[i * self.dim + j])
    }

    /// Errors unless there are at least `needed` points.
    pub fn check_len(&self, what: &str, needed: usize) -> Result<(), CoreError> {
        if self.n < needed {
            return Err(CoreError::Empty { what: format!("{what} ({} points)", self.n), needed });
        }
        Ok(())
    }

    /// Errors unless `dim` equals this set's dimension.
    pub fn check_dim(&self, what: &str, dim: usize) -> Result<(), CoreError> {
        if dim != self.dim {
            return Err(CoreError::DimensionMismatch {
                what: format!("{what} dimension"),
                expected: self.dim,
                found: dim,
            });
        }
        Ok(())
    }
}
