//! The OpenBLAS backend (feature `openblas`): BLAS-3 products through ndarray's BLAS path
//! (`cblas_dgemm`), factorisations and eigendecomposition through ndarray-linalg (LAPACK `dpotrf`,
//! `dtrtrs`, `dsyev`), linked against the system OpenBLAS (Debian's `libopenblas-dev`). LAPACK has no
//! Cholesky update, so rank updates use the shared routines of [`crate::update`].

use crate::backend::{prepare_gemm, prepare_gemv, prepare_tri_solve};
use crate::error::{check_finite, check_square};
use crate::{Backend, LinalgError, Mat, MatMut, MatRef, SymEigen, Trans};
use ndarray::{Array2, ArrayView2, ArrayViewMut2, ShapeBuilder};
use ndarray_linalg::{Diag, UPLO};

/// The OpenBLAS backend (feature `openblas`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenBlas;

fn view(a: MatRef<'_>) -> ArrayView2<'_, f64> {
    ArrayView2::from_shape((a.nrows(), a.ncols()).strides((1, a.ld())), a.as_slice())
        .expect("MatRef invariants give a valid ndarray shape")
}

fn view_mut(a: MatMut<'_>) -> ArrayViewMut2<'_, f64> {
    let (r, c, ld) = (a.nrows(), a.ncols(), a.ld());
    ArrayViewMut2::from_shape((r, c).strides((1, ld)), a.into_slice())
        .expect("MatMut invariants give a valid ndarray shape")
}

fn op(a: ArrayView2<'_, f64>, t: Trans) -> ArrayView2<'_, f64> {
    match t {
        Trans::No => a,
        Trans::Yes => a.reversed_axes(),
    }
}

/// A Fortran-ordered owned copy (LAPACK wrappers want contiguous, owned operands).
fn fortran_copy(a: MatRef<'_>) -> Array2<f64> {
    let mut out = Array2::zeros((a.nrows(), a.ncols()).f());
    out.assign(&view(a));
    out
}

fn backend_err(e: ndarray_linalg::error::LinalgError) -> LinalgError {
    LinalgError::Backend { backend: OpenBlas::NAME, message: e.to_string() }
}

fn tri_solve(l: MatRef<'_>, transpose: bool, mut b: MatMut<'_>) -> Result<(), LinalgError> {
    use ndarray_linalg::SolveTriangularInplace;
    let lf = fortran_copy(l);
    let mut rhs = fortran_copy(b.as_ref());
    if transpose {
        // Lᵀ is upper triangular; a C-ordered view of L's memory is exactly Lᵀ.
        lf.t().solve_triangular_inplace(UPLO::Upper, Diag::NonUnit, &mut rhs).map_err(backend_err)?;
    } else {
        lf.solve_triangular_inplace(UPLO::Lower, Diag::NonUnit, &mut rhs).map_err(backend_err)?;
    }
    view_mut(b.rb_mut()).assign(&rhs);
    Ok(())
}

impl Backend for OpenBlas {
    const NAME: &'static str = "openblas";

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
        ndarray::linalg::general_mat_mul(alpha, &op(view(a), ta), &op(view(b), tb), beta, &mut c);
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
        let x = ndarray::ArrayView1::from(x);
        let mut y = ndarray::ArrayViewMut1::from(y);
        ndarray::linalg::general_mat_vec_mul(alpha, &op(view(a), ta), &x, beta, &mut y);
        Ok(())
    }

    fn cholesky_in_place(mut a: MatMut<'_>) -> Result<(), LinalgError> {
        use ndarray_linalg::cholesky::CholeskyInplace;
        let n = check_square("cholesky", a.as_ref())?;
        check_finite("matrix to factorise", a.as_ref())?;
        if n == 0 {
            return Ok(());
        }
        let mut f = fortran_copy(a.as_ref());
        match f.cholesky_inplace(UPLO::Lower) {
            Ok(_) => {
                view_mut(a.rb_mut()).assign(&f);
                a.zero_strict_upper();
                Ok(())
            }
            Err(ndarray_linalg::error::LinalgError::Lapack(
                lax::error::Error::LapackComputationalFailure { return_code },
            )) => Err(LinalgError::NotPositiveDefinite { pivot: (return_code as usize).saturating_sub(1) }),
            Err(e) => Err(backend_err(e)),
        }
    }

    fn solve_lower_in_place(l: MatRef<'_>, b: MatMut<'_>) -> Result<(), LinalgError> {
        if prepare_tri_solve("solve_lower", l, &b)? {
            return Ok(());
        }
        tri_solve(l, false, b)
    }

    fn solve_lower_transpose_in_place(l: MatRef<'_>, b: MatMut<'_>) -> Result<(), LinalgError> {
        if prepare_tri_solve("solve_lower_transpose", l, &b)? {
            return Ok(());
        }
        tri_solve(l, true, b)
    }

    fn sym_eigen(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        use ndarray_linalg::EighInto;
        let n = check_square("sym_eigen", a)?;
        check_finite("matrix to decompose", a)?;
        if n == 0 {
            return Ok(SymEigen { values: vec![], vectors: Mat::zeros(0, 0) });
        }
        let (values, vecs) = fortran_copy(a).eigh_into(UPLO::Lower).map_err(backend_err)?;
        let vectors = Mat::from_fn(n, n, |i, j| vecs[(i, j)]);
        Ok(SymEigen { values: values.to_vec(), vectors })
    }
}
