//! The pure-Rust [nalgebra](https://docs.rs/nalgebra) backend (single-threaded `matrixmultiply`
//! products, unblocked factorisations). Rank updates use the shared routines of [`crate::update`]:
//! nalgebra's own `Cholesky::rank_one_update` works only on its owned type, so it would need two extra
//! copies of the factor per call and cannot report a failed downdate.

use crate::backend::{prepare_gemm, prepare_gemv, prepare_tri_solve, sort_ascending};
use crate::error::{check_finite, check_square};
use crate::{Backend, LinalgError, Mat, MatMut, MatRef, SymEigen, Trans, update};
use nalgebra::{DMatrix, DMatrixView, DMatrixViewMut, Dyn};

/// The nalgebra backend (feature `nalgebra`, on by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Nalgebra;

fn view(
    a: MatRef<'_>,
) -> nalgebra::Matrix<f64, Dyn, Dyn, nalgebra::ViewStorage<'_, f64, Dyn, Dyn, Dyn, Dyn>> {
    DMatrixView::from_slice_with_strides(a.as_slice(), a.nrows(), a.ncols(), 1, a.ld())
}

fn view_mut(
    a: MatMut<'_>,
) -> nalgebra::Matrix<f64, Dyn, Dyn, nalgebra::ViewStorageMut<'_, f64, Dyn, Dyn, Dyn, Dyn>> {
    let (r, c, ld) = (a.nrows(), a.ncols(), a.ld());
    DMatrixViewMut::from_slice_with_strides_mut(a.into_slice(), r, c, 1, ld)
}

fn owned_op(a: MatRef<'_>, t: Trans) -> DMatrix<f64> {
    match t {
        Trans::No => view(a).into_owned(),
        Trans::Yes => view(a).transpose(),
    }
}

impl Backend for Nalgebra {
    const NAME: &'static str = "nalgebra";

    fn gemm(
        alpha: f64,
        a: MatRef<'_>,
        ta: Trans,
        b: MatRef<'_>,
        tb: Trans,
        beta: f64,
        mut c: MatMut<'_>,
    ) -> Result<(), LinalgError> {
        if prepare_gemm(a, ta, b, tb, beta, &mut c)? {
            return Ok(());
        }
        let mut c = view_mut(c);
        if beta == 0.0 {
            c.fill(0.0);
        }
        match (ta, tb) {
            (Trans::No, Trans::No) => c.gemm(alpha, &view(a), &view(b), beta),
            // nalgebra's gemm_tr is a loop of dot products; a transposed copy (O(mk)) keeps the fast kernel.
            (Trans::Yes, Trans::No) => c.gemm(alpha, &owned_op(a, ta), &view(b), beta),
            (Trans::No, Trans::Yes) => c.gemm(alpha, &view(a), &owned_op(b, tb), beta),
            (Trans::Yes, Trans::Yes) => c.gemm(alpha, &owned_op(a, ta), &owned_op(b, tb), beta),
        }
        Ok(())
    }

    fn gemv(
        alpha: f64,
        a: MatRef<'_>,
        ta: Trans,
        x: &[f64],
        beta: f64,
        y: &mut [f64],
    ) -> Result<(), LinalgError> {
        if prepare_gemv(a, ta, x, beta, y)? {
            return Ok(());
        }
        if beta == 0.0 {
            y.fill(0.0);
        }
        let x = nalgebra::DVectorView::from_slice(x, x.len());
        let n = y.len();
        let mut y = nalgebra::DVectorViewMut::from_slice(y, n);
        match ta {
            Trans::No => y.gemv(alpha, &view(a), &x, beta),
            Trans::Yes => y.gemv_tr(alpha, &view(a), &x, beta),
        }
        Ok(())
    }

    fn cholesky_in_place(mut a: MatMut<'_>) -> Result<(), LinalgError> {
        if check_square("cholesky", a.as_ref())? == 0 {
            return Ok(());
        }
        check_finite("matrix to factorise", a.as_ref())?;
        let owned = view(a.as_ref()).into_owned();
        match nalgebra::Cholesky::new(owned) {
            Some(chol) => {
                view_mut(a.rb_mut()).copy_from(&chol.unpack());
                Ok(())
            }
            // nalgebra reports failure only: name the pivot with the reference factorisation.
            None => {
                let pivot = update::cholesky_unblocked(a).err().unwrap_or(0);
                Err(LinalgError::NotPositiveDefinite { pivot })
            }
        }
    }

    fn solve_lower_in_place(l: MatRef<'_>, b: MatMut<'_>) -> Result<(), LinalgError> {
        if prepare_tri_solve("solve_lower", l, &b)? {
            return Ok(());
        }
        view(l).solve_lower_triangular_mut(&mut view_mut(b));
        Ok(())
    }

    fn solve_lower_transpose_in_place(l: MatRef<'_>, b: MatMut<'_>) -> Result<(), LinalgError> {
        if prepare_tri_solve("solve_lower_transpose", l, &b)? {
            return Ok(());
        }
        view(l).tr_solve_lower_triangular_mut(&mut view_mut(b));
        Ok(())
    }

    fn sym_eigen(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        let n = check_square("sym_eigen", a)?;
        check_finite("matrix to decompose", a)?;
        if n == 0 {
            return Ok(SymEigen { values: vec![], vectors: Mat::zeros(0, 0) });
        }
        // nalgebra reads the lower triangle.
        let eig = nalgebra::SymmetricEigen::try_new(view(a).into_owned(), f64::EPSILON, 0)
            .ok_or_else(|| LinalgError::EigenFailed("nalgebra: no convergence".into()))?;
        let vectors = Mat::from_col_major(n, n, eig.eigenvectors.as_slice().to_vec())?;
        Ok(sort_ascending(eig.eigenvalues.as_slice().to_vec(), vectors))
    }
}
