//! The pure-Rust [faer](https://docs.rs/faer) backend: blocked, SIMD, multithreaded through rayon.
//! Rank-`k` updates use faer's own blocked routine; downdates use the shared LINPACK-style routine
//! of [`crate::update`] because faer's leaves the factor clobbered on failure.

use crate::mat::{check_finite, check_square};
use crate::{Backend, LinalgError, Mat, MatMut, MatRef, Product, SymEigen, Trans};
use faer::linalg::cholesky::llt::factor::{
    LltError, LltRegularization, cholesky_in_place, cholesky_in_place_scratch,
};
use faer::{Accum, Par};

/// The faer backend (feature `faer`, on by default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faer;

fn view(a: MatRef<'_>) -> faer::MatRef<'_, f64> {
    faer::MatRef::from_column_major_slice_with_stride(a.as_slice(), a.nrows(), a.ncols(), a.ld())
}

fn view_mut(a: MatMut<'_>) -> faer::MatMut<'_, f64> {
    let (r, c, ld) = (a.nrows(), a.ncols(), a.ld());
    faer::MatMut::from_column_major_slice_with_stride_mut(a.into_slice(), r, c, ld)
}

fn par() -> Par {
    if rayon::current_num_threads() > 1 && !crate::threads::is_sequential() {
        Par::rayon(0)
    } else {
        Par::Seq
    }
}

/// Rows of the output each task of a parallel matrix–vector product computes.
const MATVEC_CHUNK: usize = 256;

/// `c ← accum(c) + alpha · a · b`, bit-identical for any rayon thread count.
///
/// faer's parallel matrix–vector product with a column-major matrix splits the inner dimension
/// among the threads and adds their partial sums, so its result depends on the thread count. A
/// product with a single output column (or row, by transposition) is instead split into fixed
/// blocks of output rows, each computed sequentially over the whole inner dimension.
fn matmul(
    c: faer::MatMut<'_, f64>,
    accum: Accum,
    a: faer::MatRef<'_, f64>,
    b: faer::MatRef<'_, f64>,
    alpha: f64,
) {
    use faer::linalg::matmul::matmul as faer_matmul;
    use rayon::prelude::*;
    let par = par();
    if c.ncols() == 1 && matches!(par, Par::Rayon(_)) {
        c.par_row_chunks_mut(MATVEC_CHUNK)
            .zip(a.par_row_chunks(MATVEC_CHUNK))
            .for_each(|(c, a)| faer_matmul(c, accum, a, b, alpha, Par::Seq));
    } else if c.nrows() == 1 && matches!(par, Par::Rayon(_)) {
        matmul(c.transpose_mut(), accum, b.transpose(), a.transpose(), alpha);
    } else {
        faer_matmul(c, accum, a, b, alpha, par);
    }
}

/// Parallelism of a triangular solve with `rhs_cols` right-hand sides: sequential for a single
/// vector, whose parallel solve goes through faer's thread-count-dependent matrix–vector product
/// (see [`matmul`]).
fn solve_par(rhs_cols: usize) -> Par {
    if rhs_cols == 1 { Par::Seq } else { par() }
}

fn op(a: faer::MatRef<'_, f64>, t: Trans) -> faer::MatRef<'_, f64> {
    match t {
        Trans::No => a,
        Trans::Yes => a.transpose(),
    }
}

/// The accumulation of `C ← … + β C` in faer's terms: `C` is overwritten when `β = 0`, otherwise
/// scaled by `β` here (only on and below the diagonal when `lower_only`) and added to.
fn accumulate(beta: f64, c: &mut MatMut<'_>, lower_only: bool) -> Accum {
    if beta == 0.0 {
        return Accum::Replace;
    }
    if beta != 1.0 {
        for j in 0..c.ncols() {
            let first = if lower_only { j } else { 0 };
            c.col_mut(j)[first..].iter_mut().for_each(|v| *v *= beta);
        }
    }
    Accum::Add
}

impl Backend for Faer {
    const NAME: &'static str = "faer";

    fn gemm_kernel(p: Product<'_>, beta: f64, mut c: MatMut<'_>) {
        let accum = accumulate(beta, &mut c, false);
        matmul(view_mut(c), accum, op(view(p.a), p.ta), op(view(p.b), p.tb), p.alpha);
    }

    fn gemm_f32_kernel(a: &[f32], b: &[f32], c: &mut [f32], (m, k, n): (usize, usize, usize)) {
        let (a, b) =
            (faer::MatRef::from_column_major_slice(a, m, k), faer::MatRef::from_column_major_slice(b, k, n));
        // a matrix–vector product stays sequential to be thread-invariant (see `matmul`)
        let par = if m == 1 || n == 1 { Par::Seq } else { par() };
        let c = faer::MatMut::from_column_major_slice_mut(c, m, n);
        faer::linalg::matmul::matmul(c, Accum::Replace, a, b, 1.0f32, par);
    }

    fn gram(a: MatRef<'_>) -> Mat {
        let n = a.ncols();
        let mut g = Mat::zeros(n, n);
        Self::gemm_symmetric(1.0, a, Trans::Yes, a, Trans::No, 0.0, g.as_mut())
            .expect("shapes agree by construction");
        g
    }

    fn gemm_lower_kernel(p: Product<'_>, beta: f64, mut c: MatMut<'_>) {
        use faer::linalg::matmul::triangular::{BlockStructure, matmul as tri_matmul};
        let accum = accumulate(beta, &mut c, true);
        // A single output column is a matrix–vector product: keep it thread-invariant (see matmul).
        let par = if c.ncols() == 1 { Par::Seq } else { par() };
        tri_matmul(
            view_mut(c),
            BlockStructure::TriangularLower,
            accum,
            op(view(p.a), p.ta),
            BlockStructure::Rectangular,
            op(view(p.b), p.tb),
            BlockStructure::Rectangular,
            p.alpha,
            par,
        );
    }

    fn cholesky_kernel(mut a: MatMut<'_>) -> Result<(), LinalgError> {
        let par = par();
        let scratch = cholesky_in_place_scratch::<f64>(a.nrows(), par, Default::default());
        let mut mem = dyn_stack::MemBuffer::new(scratch);
        let stack = dyn_stack::MemStack::new(&mut mem);
        let res = cholesky_in_place(
            view_mut(a.rb_mut()),
            LltRegularization::default(),
            par,
            stack,
            Default::default(),
        );
        match res {
            Ok(_) => {
                a.zero_strict_upper();
                Ok(())
            }
            Err(LltError::NonPositivePivot { index }) => {
                Err(LinalgError::NotPositiveDefinite { pivot: index })
            }
        }
    }

    fn tri_solve_kernel(l: MatRef<'_>, tl: Trans, b: MatMut<'_>) -> Result<(), LinalgError> {
        use faer::linalg::triangular_solve::{
            solve_lower_triangular_in_place, solve_upper_triangular_in_place,
        };
        let par = solve_par(b.ncols());
        match tl {
            Trans::No => solve_lower_triangular_in_place(view(l), view_mut(b), par),
            Trans::Yes => solve_upper_triangular_in_place(view(l).transpose(), view_mut(b), par),
        }
        Ok(())
    }

    /// faer's triangular inverse of `L` and the lower triangle of `L⁻ᵀL⁻¹` (`n³/3` multiply-adds,
    /// against `n³` for the default's solves: 7 against 13 ms at n = 500 on 2 threads), mirrored.
    fn cholesky_inverse_kernel(l: MatRef<'_>) -> Result<Mat, LinalgError> {
        use faer::linalg::cholesky::llt::inverse::{inverse, inverse_scratch};
        let n = l.nrows();
        let par = par();
        let mut out = Mat::zeros(n, n);
        let mut mem = dyn_stack::MemBuffer::new(inverse_scratch::<f64>(n, par));
        inverse(view_mut(out.as_mut()), view(l), par, dyn_stack::MemStack::new(&mut mem));
        crate::backend::mirror_lower(&mut out);
        Ok(out)
    }

    fn sym_eigen_kernel(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        let n = a.nrows();
        let evd = view(a)
            .self_adjoint_eigen(faer::Side::Lower)
            .map_err(|e| LinalgError::EigenFailed(format!("faer: {e:?}")))?;
        let values: Vec<f64> = (0..n).map(|i| evd.S()[i]).collect();
        let u = evd.U();
        let vectors = Mat::from_fn(n, n, |i, j| u[(i, j)]);
        Ok(crate::backend::sort_ascending(values, vectors))
    }

    fn cholesky_update(mut l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
        let n = check_square("cholesky_update", l.as_ref())?;
        if w.nrows() != n {
            return Err(LinalgError::ShapeMismatch {
                op: "cholesky_update",
                expected: format!("W with {n} rows"),
                found: format!("{} rows", w.nrows()),
            });
        }
        check_finite("update W", w)?;
        if n == 0 || w.ncols() == 0 {
            return Ok(());
        }
        let mut work = w.to_owned();
        let mut alpha = faer::Col::<f64>::ones(w.ncols());
        faer::linalg::cholesky::llt::update::rank_r_update_clobber(
            view_mut(l.rb_mut()),
            view_mut(work.as_mut()),
            alpha.as_diagonal_mut(),
        )
        .map_err(|e| LinalgError::Backend { backend: Self::NAME, message: format!("{e:?}") })
    }
}
