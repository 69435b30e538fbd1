//! The OpenBLAS backend (feature `openblas`): BLAS-3 products through ndarray's BLAS path
//! (`cblas_dgemm`); the Cholesky factorisation (LAPACK `dpotrf`), the triangular solves (BLAS
//! `dtrsm`) and the symmetric eigendecomposition (LAPACK's divide and conquer `dsyevd`;
//! ndarray-linalg's `eigh` calls the QR-iteration `dsyev`, several times slower at `n` in the
//! thousands) called directly on the matrices' own column-major memory, with no copy; linked against
//! the system OpenBLAS (Debian's `libopenblas-dev`). LAPACK has no Cholesky update, so rank updates
//! use the shared routines of [`crate::update`].

use crate::backend::clear_if_overwritten;
use crate::{Backend, LinalgError, MatMut, MatRef, Product, SymEigen, Trans};
use ndarray::{ArrayView2, ArrayViewMut2, ShapeBuilder};
// Links the system OpenBLAS (ndarray-linalg's `openblas-system` feature) for the direct LAPACK and BLAS calls.
use ndarray_linalg as _;

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

/// `B ← L⁻¹ B` (or `L⁻ᵀ B` when `transpose`) for the lower triangle of `l`, in place by BLAS
/// `dtrsm` on both operands' own memory (column-major, leading dimensions as they are): no copy
/// (the earlier path through ndarray-linalg copied `L` and `B` into owned Fortran arrays and `B`
/// back, issue 20). Shapes are checked by the caller ([`Backend::solve_lower_in_place`]).
fn tri_solve(l: MatRef<'_>, transpose: bool, b: MatMut<'_>) -> Result<(), LinalgError> {
    use cblas_sys::{CBLAS_DIAG, CBLAS_LAYOUT, CBLAS_SIDE, CBLAS_TRANSPOSE, CBLAS_UPLO, cblas_dtrsm};
    use std::os::raw::c_int;
    let (n, k) = (b.nrows(), b.ncols());
    let (lda, ldb) = (l.ld().max(n), b.ld().max(n));
    let int = |v: usize| {
        c_int::try_from(v).map_err(|_| LinalgError::Backend {
            backend: OpenBlas::NAME,
            message: format!("size {v} exceeds BLAS's 32-bit indices"),
        })
    };
    let trans = if transpose { CBLAS_TRANSPOSE::CblasTrans } else { CBLAS_TRANSPOSE::CblasNoTrans };
    let (a, bs) = (l.as_slice(), b.into_slice());
    assert!(a.len() >= lda * (n - 1) + n && bs.len() >= ldb * (k - 1) + n, "dtrsm operands too short");
    // SAFETY: `a` holds the n × n matrix at stride lda, `bs` the n × k matrix at stride ldb (checked
    // above); dtrsm reads the lower triangle of the first and overwrites the second.
    unsafe {
        cblas_dtrsm(
            CBLAS_LAYOUT::CblasColMajor,
            CBLAS_SIDE::CblasLeft,
            CBLAS_UPLO::CblasLower,
            trans,
            CBLAS_DIAG::CblasNonUnit,
            int(n)?,
            int(k)?,
            1.0,
            a.as_ptr(),
            int(lda)?,
            bs.as_mut_ptr(),
            int(ldb)?,
        );
    }
    Ok(())
}

impl Backend for OpenBlas {
    const NAME: &'static str = "openblas";

    fn gemm_kernel(p: Product<'_>, beta: f64, mut c: MatMut<'_>) {
        clear_if_overwritten(beta, &mut c);
        let (a, b) = (op(view(p.a), p.ta), op(view(p.b), p.tb));
        ndarray::linalg::general_mat_mul(p.alpha, &a, &b, beta, &mut view_mut(c));
    }

    fn gemm_f32_kernel(a: &[f32], b: &[f32], c: &mut [f32], (m, k, n): (usize, usize, usize)) {
        use cblas_sys::{CBLAS_LAYOUT, CBLAS_TRANSPOSE, cblas_sgemm};
        let int =
            |v: usize| std::os::raw::c_int::try_from(v).expect("gemm_f32 sizes fit BLAS's 32-bit indices");
        // SAFETY: the caller checked a.len() = m k, b.len() = k n, c.len() = m n, all non-zero; the
        // operands are contiguous column-major with leading dimensions m, k and m.
        unsafe {
            cblas_sgemm(
                CBLAS_LAYOUT::CblasColMajor,
                CBLAS_TRANSPOSE::CblasNoTrans,
                CBLAS_TRANSPOSE::CblasNoTrans,
                int(m),
                int(n),
                int(k),
                1.0,
                a.as_ptr(),
                int(m),
                b.as_ptr(),
                int(k),
                0.0,
                c.as_mut_ptr(),
                int(m),
            );
        }
    }

    fn gemv_kernel(p: Product<'_>, beta: f64, y: &mut [f64]) {
        if beta == 0.0 {
            y.fill(0.0);
        }
        let x = ndarray::ArrayView1::from(p.b.as_slice());
        let mut y = ndarray::ArrayViewMut1::from(y);
        ndarray::linalg::general_mat_vec_mul(p.alpha, &op(view(p.a), p.ta), &x, beta, &mut y);
    }

    fn cholesky_kernel(mut a: MatMut<'_>) -> Result<(), LinalgError> {
        let n = a.nrows();
        let ld = a.ld().max(n);
        dpotrf_lower(n, ld, a.rb_mut().into_slice())?;
        a.zero_strict_upper();
        Ok(())
    }

    fn tri_solve_kernel(l: MatRef<'_>, tl: Trans, b: MatMut<'_>) -> Result<(), LinalgError> {
        tri_solve(l, tl == Trans::Yes, b)
    }

    fn sym_eigen_kernel(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        let mut vectors = a.to_owned();
        let values = dsyevd(a.nrows(), vectors.as_mut_slice())?;
        Ok(SymEigen { values, vectors })
    }
}

/// LAPACK `dpotrf` on the lower triangle of the column-major `n × n` matrix at the start of `a`
/// (leading dimension `ld ≥ n`), in place: `A = L Lᵀ`, `L` over `A`'s lower triangle, the strict
/// upper triangle neither read nor written. No copy: the earlier path through ndarray-linalg copied
/// the matrix into an owned Fortran array and back, which cost 2.6× faer's time (issue 20). A
/// non-positive leading minor `k` (LAPACK's `info = k > 0`) is the failing pivot `k − 1`.
fn dpotrf_lower(n: usize, ld: usize, a: &mut [f64]) -> Result<(), LinalgError> {
    use std::os::raw::{c_char, c_int};
    let too_big = || LinalgError::Backend {
        backend: OpenBlas::NAME,
        message: format!("order {n} (leading dimension {ld}) exceeds LAPACK's 32-bit indices"),
    };
    let (ni, ldi) = (c_int::try_from(n).map_err(|_| too_big())?, c_int::try_from(ld).map_err(|_| too_big())?);
    assert!(ld >= n && a.len() >= ld * (n - 1) + n, "dpotrf wants an n × n column-major matrix with ld ≥ n");
    let uplo = b'L' as c_char;
    let mut info: c_int = 0;
    // SAFETY: `a` holds the n columns of length n at stride ld that LAPACK reads and writes.
    unsafe { lapack_sys::dpotrf_(&uplo, &ni, a.as_mut_ptr(), &ldi, &mut info) };
    match info {
        0 => Ok(()),
        i if i > 0 => Err(LinalgError::NotPositiveDefinite { pivot: i as usize - 1 }),
        i => Err(LinalgError::Backend {
            backend: OpenBlas::NAME,
            message: format!("dpotrf: argument {} is invalid", -i),
        }),
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
    // One dsyevd call with workspaces of the sizes `lwork` and `liwork` it is told (`-1`: a query that
    // writes the sizes it wants into their first elements); returns LAPACK's `info`.
    let mut call = |work: &mut [f64], lwork: c_int, iwork: &mut [c_int], liwork: c_int| {
        assert!(work.len() >= lwork.max(1) as usize && iwork.len() >= liwork.max(1) as usize);
        let mut info: c_int = 0;
        // SAFETY: every pointer is valid for the lengths LAPACK reads (a: n², w: n, work and iwork:
        // the sizes it is told, checked above, one element each for the query).
        unsafe {
            lapack_sys::dsyevd_(
                &jobz,
                &uplo,
                &ni,
                a.as_mut_ptr(),
                &ni,
                w.as_mut_ptr(),
                work.as_mut_ptr(),
                &lwork,
                iwork.as_mut_ptr(),
                &liwork,
                &mut info,
            );
        }
        info
    };
    let (mut work_size, mut iwork_size) = (0.0f64, 0 as c_int);
    let info = call(std::slice::from_mut(&mut work_size), -1, std::slice::from_mut(&mut iwork_size), -1);
    if info != 0 {
        return Err(LinalgError::EigenFailed(format!("dsyevd workspace query: info = {info}")));
    }
    let lwork = (work_size as usize).max(1);
    let liwork = (iwork_size as usize).max(1);
    let (lw, liw) =
        (c_int::try_from(lwork).map_err(|_| too_big())?, c_int::try_from(liwork).map_err(|_| too_big())?);
    let info = call(&mut vec![0.0; lwork][..], lw, &mut vec![0; liwork][..], liw);
    match info {
        0 => Ok(w),
        i if i < 0 => Err(LinalgError::EigenFailed(format!("dsyevd: argument {} is invalid", -i))),
        i => Err(LinalgError::EigenFailed(format!("dsyevd: {i} eigenvalues failed to converge"))),
    }
}
