//! The one storage type of bke: a dense, column-major `f64` matrix and its borrowed views.
//!
//! Element `(i, j)` of a view with leading dimension `ld` lives at `data[i + j * ld]`, so every
//! backend can look at the same memory without copying (faer `MatRef`, nalgebra `DMatrixView`,
//! ndarray `ArrayView2` in Fortran order).

use crate::LinalgError;

/// An owned dense column-major `f64` matrix.
#[derive(Clone, PartialEq, Default)]
pub struct Mat {
    data: Vec<f64>,
    nrows: usize,
    ncols: usize,
}

/// A borrowed, read-only column-major view with leading dimension `ld >= nrows`.
#[derive(Clone, Copy)]
pub struct MatRef<'a> {
    data: &'a [f64],
    nrows: usize,
    ncols: usize,
    ld: usize,
}

/// A borrowed, mutable column-major view with leading dimension `ld >= nrows`.
pub struct MatMut<'a> {
    data: &'a mut [f64],
    nrows: usize,
    ncols: usize,
    ld: usize,
}

fn needed_len(nrows: usize, ncols: usize, ld: usize) -> usize {
    if nrows == 0 || ncols == 0 { 0 } else { (ncols - 1) * ld + nrows }
}

impl Mat {
    /// The `nrows × ncols` zero matrix.
    pub fn zeros(nrows: usize, ncols: usize) -> Self {
        Self { data: vec![0.0; nrows * ncols], nrows, ncols }
    }

    /// The `n × n` identity.
    pub fn identity(n: usize) -> Self {
        let mut m = Self::zeros(n, n);
        for i in 0..n {
            m[(i, i)] = 1.0;
        }
        m
    }

    /// Wraps a column-major buffer; errors unless `data.len() == nrows * ncols`.
    pub fn from_col_major(nrows: usize, ncols: usize, data: Vec<f64>) -> Result<Self, LinalgError> {
        if data.len() != nrows * ncols {
            return Err(LinalgError::ShapeMismatch {
                op: "Mat::from_col_major",
                expected: format!("{} elements for {nrows}x{ncols}", nrows * ncols),
                found: format!("{} elements", data.len()),
            });
        }
        Ok(Self { data, nrows, ncols })
    }

    /// Builds a matrix from row slices (convenient in tests and examples); errors on ragged rows.
    pub fn from_rows(rows: &[Vec<f64>]) -> Result<Self, LinalgError> {
        let nrows = rows.len();
        let ncols = rows.first().map_or(0, Vec::len);
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != ncols) {
            return Err(LinalgError::ShapeMismatch {
                op: "Mat::from_rows",
                expected: format!("{ncols} columns in every row"),
                found: format!("{} columns in row {i}", r.len()),
            });
        }
        Ok(Self::from_fn(nrows, ncols, |i, j| rows[i][j]))
    }

    /// The matrix with entries `f(i, j)`.
    pub fn from_fn(nrows: usize, ncols: usize, mut f: impl FnMut(usize, usize) -> f64) -> Self {
        let mut data = Vec::with_capacity(nrows * ncols);
        for j in 0..ncols {
            for i in 0..nrows {
                data.push(f(i, j));
            }
        }
        Self { data, nrows, ncols }
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The column-major buffer.
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// The column-major buffer, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        &mut self.data
    }

    /// Consumes the matrix and returns its column-major buffer.
    pub fn into_vec(self) -> Vec<f64> {
        self.data
    }

    /// A read-only view of the whole matrix.
    pub fn as_ref(&self) -> MatRef<'_> {
        MatRef { data: &self.data, nrows: self.nrows, ncols: self.ncols, ld: self.nrows.max(1) }
    }

    /// A mutable view of the whole matrix.
    pub fn as_mut(&mut self) -> MatMut<'_> {
        let ld = self.nrows.max(1);
        MatMut { data: &mut self.data, nrows: self.nrows, ncols: self.ncols, ld }
    }

    /// Column `j` as a contiguous slice.
    pub fn col(&self, j: usize) -> &[f64] {
        &self.data[j * self.nrows..(j + 1) * self.nrows]
    }

    /// Column `j` as a contiguous mutable slice.
    pub fn col_mut(&mut self, j: usize) -> &mut [f64] {
        &mut self.data[j * self.nrows..(j + 1) * self.nrows]
    }

    /// The transpose, as a new matrix.
    pub fn transpose(&self) -> Mat {
        self.as_ref().transpose_to_owned()
    }

    /// Frobenius norm ‖A‖_F.
    pub fn norm_fro(&self) -> f64 {
        self.as_ref().norm_fro()
    }
}

impl std::fmt::Debug for Mat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl std::ops::Index<(usize, usize)> for Mat {
    type Output = f64;
    fn index(&self, (i, j): (usize, usize)) -> &f64 {
        debug_assert!(i < self.nrows && j < self.ncols);
        &self.data[i + j * self.nrows]
    }
}

impl std::ops::IndexMut<(usize, usize)> for Mat {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut f64 {
        debug_assert!(i < self.nrows && j < self.ncols);
        &mut self.data[i + j * self.nrows]
    }
}

/// The read accessors of the two views ([`MatRef`], [`MatMut`]), written once.
macro_rules! view_accessors {
    () => {
        /// Number of rows.
        pub fn nrows(&self) -> usize {
            self.nrows
        }

        /// Number of columns.
        pub fn ncols(&self) -> usize {
            self.ncols
        }

        /// Leading dimension (distance between the starts of two columns).
        pub fn ld(&self) -> usize {
            self.ld
        }

        /// Element `(i, j)`.
        #[inline]
        pub fn at(&self, i: usize, j: usize) -> f64 {
            debug_assert!(i < self.nrows && j < self.ncols);
            self.data[i + j * self.ld]
        }
    };
}

impl<'a> MatRef<'a> {
    /// A view of `data` as an `nrows × ncols` column-major matrix with leading dimension `ld`.
    pub fn from_slice(data: &'a [f64], nrows: usize, ncols: usize, ld: usize) -> Result<Self, LinalgError> {
        check_view(data.len(), nrows, ncols, ld)?;
        Ok(Self { data, nrows, ncols, ld: ld.max(1) })
    }

    /// A column vector view (`n × 1`) of a slice.
    pub fn col_vector(data: &'a [f64]) -> Self {
        Self { data, nrows: data.len(), ncols: 1, ld: data.len().max(1) }
    }

    view_accessors!();

    /// The underlying slice, starting at element `(0, 0)`.
    pub fn as_slice(&self) -> &'a [f64] {
        self.data
    }

    /// Column `j` as a contiguous slice.
    #[inline]
    pub fn col(&self, j: usize) -> &'a [f64] {
        debug_assert!(j < self.ncols);
        if self.nrows == 0 {
            return &[];
        }
        &self.data[j * self.ld..j * self.ld + self.nrows]
    }

    /// The sub-block of `nrows × ncols` starting at `(i0, j0)`.
    pub fn submatrix(&self, i0: usize, j0: usize, nrows: usize, ncols: usize) -> MatRef<'a> {
        assert!(i0 + nrows <= self.nrows && j0 + ncols <= self.ncols, "submatrix out of bounds");
        let start = if nrows == 0 || ncols == 0 { 0 } else { i0 + j0 * self.ld };
        let data = &self.data[start..start + needed_len(nrows, ncols, self.ld)];
        MatRef { data, nrows, ncols, ld: self.ld }
    }

    /// A contiguous copy.
    pub fn to_owned(&self) -> Mat {
        Mat::from_fn(self.nrows, self.ncols, |i, j| self.at(i, j))
    }

    /// The transpose, as a new matrix.
    pub fn transpose_to_owned(&self) -> Mat {
        Mat::from_fn(self.ncols, self.nrows, |i, j| self.at(j, i))
    }

    /// Frobenius norm, computed with scaling so that it neither overflows nor underflows.
    pub fn norm_fro(&self) -> f64 {
        let scale = (0..self.ncols).flat_map(|j| self.col(j)).fold(0.0f64, |m, x| m.max(x.abs()));
        if scale == 0.0 || !scale.is_finite() {
            return scale;
        }
        let s: f64 = (0..self.ncols).flat_map(|j| self.col(j)).map(|x| (x / scale).powi(2)).sum();
        scale * s.sqrt()
    }

    /// The first non-finite entry, as `(row, col)`.
    pub fn find_non_finite(&self) -> Option<(usize, usize)> {
        (0..self.ncols).find_map(|j| self.col(j).iter().position(|x| !x.is_finite()).map(|i| (i, j)))
    }
}

impl std::fmt::Debug for MatRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "[{} x {}]", self.nrows, self.ncols)?;
        for i in 0..self.nrows.min(12) {
            let row: Vec<String> =
                (0..self.ncols.min(12)).map(|j| format!("{:>11.4e}", self.at(i, j))).collect();
            writeln!(f, "  {}", row.join(" "))?;
        }
        Ok(())
    }
}

impl<'a> MatMut<'a> {
    /// A mutable view of `data` as an `nrows × ncols` column-major matrix with leading dimension `ld`.
    pub fn from_slice(
        data: &'a mut [f64],
        nrows: usize,
        ncols: usize,
        ld: usize,
    ) -> Result<Self, LinalgError> {
        check_view(data.len(), nrows, ncols, ld)?;
        Ok(Self { data, nrows, ncols, ld: ld.max(1) })
    }

    /// A mutable column vector view (`n × 1`) of a slice.
    pub fn col_vector(data: &'a mut [f64]) -> Self {
        let n = data.len();
        Self { data, nrows: n, ncols: 1, ld: n.max(1) }
    }

    view_accessors!();

    /// A read-only view of the same memory.
    pub fn as_ref(&self) -> MatRef<'_> {
        MatRef { data: self.data, nrows: self.nrows, ncols: self.ncols, ld: self.ld }
    }

    /// Reborrows the view for a shorter lifetime.
    pub fn rb_mut(&mut self) -> MatMut<'_> {
        MatMut { data: self.data, nrows: self.nrows, ncols: self.ncols, ld: self.ld }
    }

    /// The underlying slice, starting at element `(0, 0)`.
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        self.data
    }

    /// Consumes the view and returns its slice with the view's lifetime.
    pub fn into_slice(self) -> &'a mut [f64] {
        self.data
    }

    /// Mutable reference to element `(i, j)`.
    #[inline]
    pub fn at_mut(&mut self, i: usize, j: usize) -> &mut f64 {
        debug_assert!(i < self.nrows && j < self.ncols);
        &mut self.data[i + j * self.ld]
    }

    /// Column `j` as a contiguous mutable slice.
    #[inline]
    pub fn col_mut(&mut self, j: usize) -> &mut [f64] {
        debug_assert!(j < self.ncols);
        if self.nrows == 0 {
            return &mut [];
        }
        let ld = self.ld;
        &mut self.data[j * ld..j * ld + self.nrows]
    }

    /// Copies `src` (same shape) into this view.
    pub fn copy_from(&mut self, src: MatRef<'_>) -> Result<(), LinalgError> {
        crate::check_same_shape("MatMut::copy_from", (self.nrows, self.ncols), (src.nrows(), src.ncols()))?;
        for j in 0..self.ncols {
            self.col_mut(j).copy_from_slice(src.col(j));
        }
        Ok(())
    }

    /// Copies the strict lower triangle onto the strict upper one (square views), making the matrix
    /// exactly symmetric.
    pub fn mirror_lower(&mut self) {
        let n = self.nrows.min(self.ncols);
        for j in 1..n {
            for i in 0..j {
                let v = self.at(j, i);
                *self.at_mut(i, j) = v;
            }
        }
    }

    /// Sets the strict upper triangle to zero (Cholesky factors are returned lower-triangular).
    pub fn zero_strict_upper(&mut self) {
        for j in 1..self.ncols {
            let n = j.min(self.nrows);
            self.col_mut(j)[..n].fill(0.0);
        }
    }
}

fn check_view(len: usize, nrows: usize, ncols: usize, ld: usize) -> Result<(), LinalgError> {
    if (ncols > 1 && ld < nrows) || len < needed_len(nrows, ncols, ld) {
        return Err(LinalgError::ShapeMismatch {
            op: "matrix view",
            expected: format!("ld >= {nrows} and at least {} elements", needed_len(nrows, ncols, ld)),
            found: format!("ld = {ld}, {len} elements"),
        });
    }
    Ok(())
}

/// Errors unless the matrix is square.
pub(crate) fn check_square(op: &'static str, a: MatRef<'_>) -> Result<usize, LinalgError> {
    if a.nrows() != a.ncols() {
        return Err(LinalgError::ShapeMismatch {
            op,
            expected: "a square matrix".into(),
            found: format!("{}x{}", a.nrows(), a.ncols()),
        });
    }
    Ok(a.nrows())
}

/// Errors on the first non-finite entry.
pub(crate) fn check_finite(what: &'static str, a: MatRef<'_>) -> Result<(), LinalgError> {
    match a.find_non_finite() {
        Some((row, col)) => Err(LinalgError::NonFinite { what, row, col, value: a.at(row, col) }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_column_major() {
        let m = Mat::from_rows(&[vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]).unwrap();
        assert_eq!(m.as_slice(), &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(m.col(1), &[2.0, 5.0]);
        let s = m.as_ref().submatrix(0, 1, 2, 2);
        assert_eq!((s.at(0, 0), s.at(1, 1)), (2.0, 6.0));
        assert_eq!(m.transpose()[(2, 1)], 6.0);
    }

    #[test]
    fn bad_shapes_are_errors() {
        assert!(Mat::from_col_major(2, 2, vec![0.0; 3]).is_err());
        assert!(Mat::from_rows(&[vec![1.0], vec![1.0, 2.0]]).is_err());
        assert!(MatRef::from_slice(&[0.0; 5], 3, 2, 3).is_err());
        assert!(MatRef::from_slice(&[0.0; 0], 0, 0, 0).is_ok());
    }

    #[test]
    fn norm_fro_survives_extreme_scales() {
        let m = Mat::from_rows(&[vec![3e200, 4e200]]).unwrap();
        assert!((m.norm_fro() / 5e200 - 1.0).abs() < 1e-15);
        let t = Mat::from_rows(&[vec![3e-200, 4e-200]]).unwrap();
        assert!((t.norm_fro() / 5e-200 - 1.0).abs() < 1e-15);
    }
}
