//! The OpenBLAS backend (feature `openblas`): BLAS-3 products through ndarray's BLAS path
//! (`cblas_dgemm`), factorisations through ndarray-linalg (LAPACK `dpotrf`, `dtrtrs`), the symmetric
//! eigendecomposition by LAPACK's divide and conquer `dsyevd` called directly (ndarray-linalg's
//! `eigh` calls the QR-iteration `dsyev`, several times slower at `n` in the thousands), linked against
//! the system OpenBLAS (Debian's `libopenblas-dev`). LAPACK has no Cholesky update, so rank updates
//! use the shared routines of [`crate::update`].

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
        let n = check_square("sym_eigen", a)?;
        check_finite("matrix to decompose", a)?;
        if n == 0 {
            return Ok(SymEigen { values: vec![], vectors: Mat::zeros(0, 0) });
        }
        let mut vectors = a.to_owned();
        let values = dsyevd(n, vectors.as_mut_slice())?;
        Ok(SymEigen { values, vectors })
    }
}

/// LAPACK `dsyevd` (divide and conquer) on the lower triangle of the column-major `n × n` matrix in
/// `a`, which it overwrites with the orthonormal eigenvectors; returns the eigenvalues, ascending.
/// The workspace sizes come from LAPACK's own query (`lwork = liwork = -1`).
fn dsyevd(n: usize, a: &mut [f64]) -> Result<Vec<f64>, LinalgError> {
    use std::os::raw::{c_char, c_int};
    let too_big = || LinalgError::Backend {
        backend: OpenBlas::NAME,
        message: format!("order {n} exceeds LAPACK's 32-bit indices"),
    };
    let ni = c_int::try_from(n).map_err(|_| too_big())?;
    assert_eq!(a.len(), n * n, "dsyevd wants a contiguous square matrix");
    let (jobz, uplo) = (b'V' as c_char, b'L' as c_char);
    let mut w = vec![0.0; n];
    let mut info: c_int = 0;
    let (mut work_size, mut iwork_size) = (0.0f64, 0 as c_int);
    let query: c_int = -1;
    // SAFETY: every pointer is valid for the lengths LAPACK reads (a: n², w: n, one-element queries).
    unsafe {
        lapack_sys::dsyevd_(
            &jobz,
            &uplo,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            &mut work_size,
            &query,
            &mut iwork_size,
            &query,
            &mut info,
        );
    }
    if info != 0 {
        return Err(LinalgError::EigenFailed(format!("dsyevd workspace query: info = {info}")));
    }
    let lwork = (work_size as usize).max(1);
    let liwork = (iwork_size as usize).max(1);
    let mut work = vec![0.0; lwork];
    let mut iwork: Vec<c_int> = vec![0; liwork];
    let (lw, liw) =
        (c_int::try_from(lwork).map_err(|_| too_big())?, c_int::try_from(liwork).map_err(|_| too_big())?);
    // SAFETY: as above, with work and iwork of the sizes LAPACK asked for.
    unsafe {
        lapack_sys::dsyevd_(
            &jobz,
            &uplo,
            &ni,
            a.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &lw,
            iwork.as_mut_ptr(),
            &liw,
            &mut info,
        );
    }
    match info {
        0 => Ok(w),
        i if i < 0 => Err(LinalgError::EigenFailed(format!("dsyevd: argument {} is invalid", -i))),
        i => Err(LinalgError::EigenFailed(format!("dsyevd: {i} eigenvalues failed to converge"))),
    }
}
