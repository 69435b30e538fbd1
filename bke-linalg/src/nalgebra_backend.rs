//! The pure-Rust [nalgebra](https://docs.rs/nalgebra) backend (single-threaded `matrixmultiply`
//! products, unblocked factorisations). Rank updates use the shared routines of [`crate::update`]:
//! nalgebra's own `Cholesky::rank_one_update` works only on its owned type, so it would need two extra
//! copies of the factor per call and cannot report a failed downdate.

use crate::backend::{clear_if_overwritten, sort_ascending};
use crate::{Backend, LinalgError, Mat, MatMut, MatRef, Product, SymEigen, Trans, update};
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

    fn gemm_kernel(p: Product<'_>, beta: f64, mut c: MatMut<'_>) {
        clear_if_overwritten(beta, &mut c);
        let (mut c, alpha) = (view_mut(c), p.alpha);
        match (p.ta, p.tb) {
            (Trans::No, Trans::No) => c.gemm(alpha, &view(p.a), &view(p.b), beta),
            // nalgebra's gemm_tr is a loop of dot products; a transposed copy (O(mk)) keeps the fast kernel.
            (Trans::Yes, Trans::No) => c.gemm(alpha, &owned_op(p.a, p.ta), &view(p.b), beta),
            (Trans::No, Trans::Yes) => c.gemm(alpha, &view(p.a), &owned_op(p.b, p.tb), beta),
            (Trans::Yes, Trans::Yes) => c.gemm(alpha, &owned_op(p.a, p.ta), &owned_op(p.b, p.tb), beta),
        }
    }

    fn gemm_f32_kernel(a: &[f32], b: &[f32], c: &mut [f32], (m, k, n): (usize, usize, usize)) {
        c.fill(0.0);
        let (a, b) = (DMatrixView::from_slice(a, m, k), DMatrixView::from_slice(b, k, n));
        DMatrixViewMut::from_slice(c, m, n).gemm(1.0, &a, &b, 0.0);
    }

    fn gemv_kernel(p: Product<'_>, beta: f64, y: &mut [f64]) {
        if beta == 0.0 {
            y.fill(0.0);
        }
        let x = nalgebra::DVectorView::from_slice(p.b.as_slice(), p.b.nrows());
        let n = y.len();
        let mut y = nalgebra::DVectorViewMut::from_slice(y, n);
        match p.ta {
            Trans::No => y.gemv(p.alpha, &view(p.a), &x, beta),
            Trans::Yes => y.gemv_tr(p.alpha, &view(p.a), &x, beta),
        }
    }

    fn cholesky_kernel(mut a: MatMut<'_>) -> Result<(), LinalgError> {
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

    fn tri_solve_kernel(l: MatRef<'_>, tl: Trans, b: MatMut<'_>) -> Result<(), LinalgError> {
        match tl {
            Trans::No => view(l).solve_lower_triangular_mut(&mut view_mut(b)),
            Trans::Yes => view(l).tr_solve_lower_triangular_mut(&mut view_mut(b)),
        };
        Ok(())
    }

    fn sym_eigen_kernel(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        let n = a.nrows();
        // nalgebra reads the lower triangle.
        let eig = nalgebra::SymmetricEigen::try_new(view(a).into_owned(), f64::EPSILON, 0)
            .ok_or_else(|| LinalgError::EigenFailed("nalgebra: no convergence".into()))?;
        let vectors = Mat::from_col_major(n, n, eig.eigenvectors.as_slice().to_vec())?;
        Ok(sort_ascending(eig.eigenvalues.as_slice().to_vec(), vectors))
    }
}
