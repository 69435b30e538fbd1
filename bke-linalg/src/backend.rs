//! The `Backend` trait: the dense operations the models spend their time in, over [`Mat`] views.
//!
//! Backends are zero-sized unit structs with associated functions only (no `self`), so model code is
//! written once as `fn f<B: Backend>(…)` and monomorphised per backend. The required functions are
//! the kernels a library does well (products, factorisation, triangular solves, eigendecomposition),
//! called only on operands the provided entry points (`gemm`, `cholesky_in_place`, …) have checked,
//! with the empty cases done; everything else (Cholesky solves, log-determinants, jitter, rank
//! updates) is provided once here on top of them.

use crate::mat::{check_finite, check_square};
use crate::{LinalgError, Mat, MatMut, MatRef, update};

/// Whether an operand of a product is used as is or transposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trans {
    /// Use `A`.
    No,
    /// Use `Aᵀ`.
    Yes,
}

impl Trans {
    /// The shape of `op(A)` for an `r × c` matrix `A`.
    pub fn shape(self, r: usize, c: usize) -> (usize, usize) {
        match self {
            Trans::No => (r, c),
            Trans::Yes => (c, r),
        }
    }
}

/// A symmetric eigendecomposition `A = V diag(λ) Vᵀ`, eigenvalues ascending, `V` orthonormal.
#[derive(Debug, Clone)]
pub struct SymEigen {
    /// Eigenvalues in ascending order.
    pub values: Vec<f64>,
    /// Orthonormal eigenvectors, one per column, in the order of `values`.
    pub vectors: Mat,
}

/// Options of [`Backend::cholesky_jittered`]: jitter `δ = scale · mean(diag A)` starts at
/// `initial` and grows by `growth` until the factorisation succeeds or `δ` exceeds `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterOptions {
    /// First relative jitter tried after the plain factorisation fails. Default `1e-10`.
    pub initial: f64,
    /// Multiplicative growth between tries. Default `10`.
    pub growth: f64,
    /// Largest relative jitter tried. Default `1e-2`.
    pub max: f64,
}

impl Default for JitterOptions {
    fn default() -> Self {
        Self { initial: 1e-10, growth: 10.0, max: 1e-2 }
    }
}

/// The operands of a product `α op(A) op(B)`, as [`Backend::gemm`] hands them to
/// [`Backend::gemm_kernel`] once it has checked them.
#[derive(Debug, Clone, Copy)]
pub struct Product<'a> {
    /// The scale `α`.
    pub alpha: f64,
    /// The left operand `A`.
    pub a: MatRef<'a>,
    /// Whether `A` is transposed.
    pub ta: Trans,
    /// The right operand `B`.
    pub b: MatRef<'a>,
    /// Whether `B` is transposed.
    pub tb: Trans,
}

/// A linear-algebra backend. See the module docs.
pub trait Backend: Copy + Default + Send + Sync + std::fmt::Debug + 'static {
    /// Human-readable name ("faer", "nalgebra", "openblas").
    const NAME: &'static str;

    /// The name of the backend that runs: [`Backend::NAME`], except for [`Selected`](crate::Selected),
    /// where it is the selected backend's. Reports and JSON output use this.
    fn name() -> &'static str {
        Self::NAME
    }

    /// `C ← α op(A) op(B) + β C`. With `β = 0`, `C` is overwritten (NaN in `C` does not propagate).
    fn gemm(
        alpha: f64,
        a: MatRef<'_>,
        ta: Trans,
        b: MatRef<'_>,
        tb: Trans,
        beta: f64,
        mut c: MatMut<'_>,
    ) -> Result<(), LinalgError> {
        let p = Product { alpha, a, ta, b, tb };
        if !prepare_gemm(&p, beta, &mut c)? {
            Self::gemm_kernel(p, beta, c);
        }
        Ok(())
    }

    /// [`Backend::gemm`] on operands it has checked: shapes agree and no dimension is empty.
    fn gemm_kernel(p: Product<'_>, beta: f64, c: MatMut<'_>);

    /// Single-precision `C ← A B` of contiguous column-major operands: `A` is `m × k`, `B` is
    /// `k × n` and `C` (`m × n`) is overwritten, `(m, k, n) = shape`. About twice the throughput of
    /// [`Backend::gemm`] (a SIMD register holds twice as many `f32`), for products whose rounding
    /// (~1e-7 relative) is far below the error of what they estimate: the permutation nulls of the
    /// kernel tests. Bit-identical for any rayon thread count.
    fn gemm_f32(
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        shape: (usize, usize, usize),
    ) -> Result<(), LinalgError> {
        let (m, k, n) = shape;
        if a.len() != m * k || b.len() != k * n || c.len() != m * n {
            return Err(LinalgError::ShapeMismatch {
                op: "gemm_f32",
                expected: format!("A {m}x{k}, B {k}x{n} and C {m}x{n} entries"),
                found: format!("{}, {} and {} entries", a.len(), b.len(), c.len()),
            });
        }
        if k == 0 {
            c.fill(0.0);
        } else if m > 0 && n > 0 {
            Self::gemm_f32_kernel(a, b, c, shape);
        }
        Ok(())
    }

    /// [`Backend::gemm_f32`] on operands it has checked: lengths agree and no dimension is empty.
    fn gemm_f32_kernel(a: &[f32], b: &[f32], c: &mut [f32], shape: (usize, usize, usize));

    /// `y ← α op(A) x + β y`.
    fn gemv(
        alpha: f64,
        a: MatRef<'_>,
        ta: Trans,
        x: &[f64],
        beta: f64,
        y: &mut [f64],
    ) -> Result<(), LinalgError> {
        if !prepare_gemv(a, ta, x, beta, y)? {
            let p = Product { alpha, a, ta, b: MatRef::col_vector(x), tb: Trans::No };
            Self::gemv_kernel(p, beta, y);
        }
        Ok(())
    }

    /// [`Backend::gemv`] on operands it has checked, with `x` as the column `p.b`: by default the
    /// matrix product [`Backend::gemm_kernel`] with one column.
    fn gemv_kernel(p: Product<'_>, beta: f64, y: &mut [f64]) {
        Self::gemm_kernel(p, beta, MatMut::col_vector(y));
    }

    /// The Gram matrix `AᵀA` (full, symmetric).
    fn gram(a: MatRef<'_>) -> Mat {
        let mut g = Mat::zeros(a.ncols(), a.ncols());
        Self::gemm(1.0, a, Trans::Yes, a, Trans::No, 0.0, g.as_mut()).expect("shapes agree by construction");
        g
    }

    /// `C ← α op(A) op(B) + β C` for a product known to be symmetric (`op(A) op(B) = (op(A) op(B))ᵀ`,
    /// e.g. `AᵀKA` with symmetric `K` given as `Aᵀ(KA)`), with `C` square and symmetric on entry: only
    /// the lower triangle is computed (half the flops of [`Backend::gemm`] where the backend supports
    /// it, see [`Backend::gemm_lower_kernel`]) and mirrored into the upper one, so `C` comes out
    /// exactly symmetric.
    fn gemm_symmetric(
        alpha: f64,
        a: MatRef<'_>,
        ta: Trans,
        b: MatRef<'_>,
        tb: Trans,
        beta: f64,
        mut c: MatMut<'_>,
    ) -> Result<(), LinalgError> {
        check_square("gemm_symmetric", c.as_ref())?;
        let p = Product { alpha, a, ta, b, tb };
        if !prepare_gemm(&p, beta, &mut c)? {
            Self::gemm_lower_kernel(p, beta, c.rb_mut());
            c.mirror_lower();
        }
        Ok(())
    }

    /// The lower triangle of [`Backend::gemm_kernel`]'s result (the strict upper one of `C` is
    /// overwritten afterwards); by default the full product.
    fn gemm_lower_kernel(p: Product<'_>, beta: f64, c: MatMut<'_>) {
        Self::gemm_kernel(p, beta, c);
    }

    /// Lower Cholesky factor in place: reads the lower triangle of `A`, leaves `L` there and zeros the
    /// strict upper triangle. Errors name the failing pivot; non-finite input is an error.
    fn cholesky_in_place(a: MatMut<'_>) -> Result<(), LinalgError> {
        if check_square("cholesky", a.as_ref())? == 0 {
            return Ok(());
        }
        check_finite("matrix to factorise", a.as_ref())?;
        Self::cholesky_kernel(a)
    }

    /// [`Backend::cholesky_in_place`] on a square, finite, non-empty matrix.
    fn cholesky_kernel(a: MatMut<'_>) -> Result<(), LinalgError>;

    /// `B ← L⁻¹ B` for lower-triangular `L`.
    fn solve_lower_in_place(l: MatRef<'_>, b: MatMut<'_>) -> Result<(), LinalgError> {
        if prepare_tri_solve("solve_lower", l, &b)? {
            return Ok(());
        }
        Self::tri_solve_kernel(l, Trans::No, b)
    }

    /// `B ← L⁻ᵀ B` for lower-triangular `L`.
    fn solve_lower_transpose_in_place(l: MatRef<'_>, b: MatMut<'_>) -> Result<(), LinalgError> {
        if prepare_tri_solve("solve_lower_transpose", l, &b)? {
            return Ok(());
        }
        Self::tri_solve_kernel(l, Trans::Yes, b)
    }

    /// `B ← op(L)⁻¹ B` for the lower triangle `L` of `l`, on operands checked by the two solves
    /// above: shapes agree and none is empty.
    fn tri_solve_kernel(l: MatRef<'_>, tl: Trans, b: MatMut<'_>) -> Result<(), LinalgError>;

    /// `A⁻¹` (full and exactly symmetric) given the lower factor `L` of `A = L Lᵀ`.
    fn cholesky_inverse(l: MatRef<'_>) -> Result<Mat, LinalgError> {
        if check_square("cholesky_inverse", l)? == 0 {
            return Ok(Mat::zeros(0, 0));
        }
        Self::cholesky_inverse_kernel(l)
    }

    /// [`Backend::cholesky_inverse`] of a square, non-empty factor. By default two triangular
    /// solves against the identity (`n³` multiply-adds), the lower triangle mirrored; a backend
    /// that inverts `L` as a triangle and forms the triangle of `L⁻ᵀL⁻¹` needs `n³/3`.
    fn cholesky_inverse_kernel(l: MatRef<'_>) -> Result<Mat, LinalgError> {
        let mut x = Mat::identity(l.nrows());
        Self::cholesky_solve_in_place(l, x.as_mut())?;
        mirror_lower(&mut x);
        Ok(x)
    }

    /// Symmetric eigendecomposition from the lower triangle of `A`.
    fn sym_eigen(a: MatRef<'_>) -> Result<SymEigen, LinalgError> {
        if check_square("sym_eigen", a)? == 0 {
            return Ok(SymEigen { values: vec![], vectors: Mat::zeros(0, 0) });
        }
        check_finite("matrix to decompose", a)?;
        Self::sym_eigen_kernel(a)
    }

    /// [`Backend::sym_eigen`] of a square, finite, non-empty matrix.
    fn sym_eigen_kernel(a: MatRef<'_>) -> Result<SymEigen, LinalgError>;

    /// `L ← chol(L Lᵀ + W Wᵀ)`.
    fn cholesky_update(l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
        update::rank_k_update(l, w)
    }

    /// `L ← chol(L Lᵀ − W Wᵀ)`; on error the factor is unchanged.
    fn cholesky_downdate(l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
        update::rank_k_downdate(l, w)
    }

    // ---- provided -------------------------------------------------------------------------------

    /// The lower Cholesky factor of `A` as a new matrix.
    fn cholesky(a: MatRef<'_>) -> Result<Mat, LinalgError> {
        let mut l = a.to_owned();
        Self::cholesky_in_place(l.as_mut())?;
        Ok(l)
    }

    /// Factorises `A + δI` with the smallest `δ` of the escalation in `opts` (`δ = 0` first) that
    /// succeeds; returns the factor and the jitter `δ` that was added.
    fn cholesky_jittered(a: MatRef<'_>, opts: JitterOptions) -> Result<(Mat, f64), LinalgError> {
        let n = check_square("cholesky_jittered", a)?;
        check_finite("matrix to factorise", a)?;
        let pivot = match Self::cholesky(a) {
            Ok(l) => return Ok((l, 0.0)),
            Err(LinalgError::NotPositiveDefinite { pivot }) => pivot,
            Err(e) => return Err(e),
        };
        let mean_diag =
            ((0..n).map(|i| a.at(i, i).abs()).sum::<f64>() / n.max(1) as f64).max(f64::MIN_POSITIVE);
        let (mut rel, mut last) = (opts.initial, (0.0, pivot));
        while rel <= opts.max * (1.0 + 1e-12) {
            let jitter = rel * mean_diag;
            let mut l = a.to_owned();
            for i in 0..n {
                l[(i, i)] += jitter;
            }
            match Self::cholesky_in_place(l.as_mut()) {
                Ok(()) => return Ok((l, jitter)),
                Err(LinalgError::NotPositiveDefinite { pivot }) => last = (jitter, pivot),
                Err(e) => return Err(e),
            }
            rel *= opts.growth;
        }
        Err(LinalgError::JitterExhausted { jitter: last.0, pivot: last.1 })
    }

    /// `B ← A⁻¹ B` given the lower factor `L` of `A = L Lᵀ`.
    fn cholesky_solve_in_place(l: MatRef<'_>, mut b: MatMut<'_>) -> Result<(), LinalgError> {
        Self::solve_lower_in_place(l, b.rb_mut())?;
        Self::solve_lower_transpose_in_place(l, b)
    }

    /// `x ← A⁻¹ x` given the lower factor `L` of `A = L Lᵀ`.
    fn cholesky_solve_vec_in_place(l: MatRef<'_>, x: &mut [f64]) -> Result<(), LinalgError> {
        Self::cholesky_solve_in_place(l, MatMut::col_vector(x))
    }

    /// `log det A = 2 Σ log L_ii` given the lower factor `L`.
    fn cholesky_logdet(l: MatRef<'_>) -> f64 {
        2.0 * (0..l.nrows().min(l.ncols())).map(|i| l.at(i, i).ln()).sum::<f64>()
    }
}

/// Copies the strict lower triangle of the square `a` onto its upper triangle.
pub(crate) fn mirror_lower(a: &mut Mat) {
    for j in 0..a.ncols() {
        for i in j + 1..a.nrows() {
            a[(j, i)] = a[(i, j)];
        }
    }
}

/// Validates the operands of `C ← α op(A) op(B) + β C` and completes the degenerate cases (an empty
/// dimension) itself, so backends only see non-empty operands. Returns whether the product is done.
fn prepare_gemm(p: &Product<'_>, beta: f64, c: &mut MatMut<'_>) -> Result<bool, LinalgError> {
    let (m, k) = p.ta.shape(p.a.nrows(), p.a.ncols());
    let (k2, n) = p.tb.shape(p.b.nrows(), p.b.ncols());
    if k != k2 || (c.nrows(), c.ncols()) != (m, n) {
        return Err(LinalgError::ShapeMismatch {
            op: "gemm",
            expected: format!("op(A) m x k, op(B) k x n, C m x n with op(A) = {m}x{k}"),
            found: format!("op(B) = {k2}x{n}, C = {}x{}", c.nrows(), c.ncols()),
        });
    }
    if m == 0 || n == 0 || k == 0 {
        for j in 0..n {
            c.col_mut(j).iter_mut().for_each(|v| *v = if beta == 0.0 { 0.0 } else { beta * *v });
        }
        return Ok(true);
    }
    Ok(false)
}

/// Zeros `C` when `β = 0`, for the kernels that read `C` even then: NaN in it must not propagate.
#[cfg(any(feature = "nalgebra", feature = "openblas"))]
pub(crate) fn clear_if_overwritten(beta: f64, c: &mut MatMut<'_>) {
    if beta == 0.0 {
        (0..c.ncols()).for_each(|j| c.col_mut(j).fill(0.0));
    }
}

/// Validates the operands of `y ← α op(A) x + β y`; completes the degenerate cases like
/// [`prepare_gemm`] and returns whether the product is done.
fn prepare_gemv(a: MatRef<'_>, ta: Trans, x: &[f64], beta: f64, y: &mut [f64]) -> Result<bool, LinalgError> {
    let (m, n) = ta.shape(a.nrows(), a.ncols());
    if x.len() != n || y.len() != m {
        return Err(LinalgError::ShapeMismatch {
            op: "gemv",
            expected: format!("x of length {n}, y of length {m}"),
            found: format!("x of length {}, y of length {}", x.len(), y.len()),
        });
    }
    if m == 0 || n == 0 {
        y.iter_mut().for_each(|v| *v = if beta == 0.0 { 0.0 } else { beta * *v });
        return Ok(true);
    }
    Ok(false)
}

/// Validates a triangular solve `L X = B`; returns whether it is empty (nothing to do).
fn prepare_tri_solve(op: &'static str, l: MatRef<'_>, b: &MatMut<'_>) -> Result<bool, LinalgError> {
    let n = check_square(op, l)?;
    if b.nrows() != n {
        return Err(LinalgError::ShapeMismatch {
            op,
            expected: format!("right-hand side with {n} rows"),
            found: format!("{} rows", b.nrows()),
        });
    }
    Ok(n == 0 || b.ncols() == 0)
}

/// Sorts an eigendecomposition into ascending order of eigenvalues.
pub(crate) fn sort_ascending(values: Vec<f64>, vectors: Mat) -> SymEigen {
    let n = values.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| values[i].total_cmp(&values[j]));
    let sorted = order.iter().map(|&i| values[i]).collect();
    let v = Mat::from_fn(vectors.nrows(), n, |r, c| vectors[(r, order[c])]);
    SymEigen { values: sorted, vectors: v }
}
