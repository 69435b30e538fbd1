//! Small dense helpers over a [`Backend`] and the streaming contractions of adjoint matrices with
//! kernel derivatives that turn `∂ log p/∂K` into gradients with respect to kernel hyperparameters
//! and inputs without ever forming a derivative Gram matrix.

use crate::DmeError;
use crate::error::not_pd;
use bke_core::{Kernel, Points};
use bke_linalg::{Backend, Mat, Trans};
use rayon::prelude::*;

/// `op(A) op(B)` as a new matrix.
pub(crate) fn mm<B: Backend>(a: &Mat, ta: Trans, b: &Mat, tb: Trans) -> Result<Mat, DmeError> {
    let (r, _) = ta.shape(a.nrows(), a.ncols());
    let (_, c) = tb.shape(b.nrows(), b.ncols());
    let mut out = Mat::zeros(r, c);
    B::gemm(1.0, a.as_ref(), ta, b.as_ref(), tb, 0.0, out.as_mut())?;
    Ok(out)
}

/// `A x` (or `Aᵀ x`) as a new vector.
pub(crate) fn mv<B: Backend>(a: &Mat, ta: Trans, x: &[f64]) -> Result<Vec<f64>, DmeError> {
    let (r, _) = ta.shape(a.nrows(), a.ncols());
    let mut y = vec![0.0; r];
    B::gemv(1.0, a.as_ref(), ta, x, 0.0, &mut y)?;
    Ok(y)
}

/// Adds `v` to the diagonal.
pub(crate) fn add_diag(a: &mut Mat, v: f64) {
    for i in 0..a.nrows().min(a.ncols()) {
        a[(i, i)] += v;
    }
}

/// Replaces the square `a` by `(a + aᵀ)/2`, so it is exactly symmetric.
pub(crate) fn symmetrize(a: &mut Mat) {
    for j in 0..a.ncols() {
        for i in j + 1..a.nrows() {
            let v = 0.5 * (a[(i, j)] + a[(j, i)]);
            a[(i, j)] = v;
            a[(j, i)] = v;
        }
    }
}

/// Lower Cholesky factor, with an error that names the matrix and says what to change.
pub(crate) fn chol<B: Backend>(mut a: Mat, what: &str, advice: &str) -> Result<Mat, DmeError> {
    B::cholesky_in_place(a.as_mut()).map_err(not_pd(what, advice))?;
    Ok(a)
}

/// `A⁻¹` from the lower factor `L` of `A = L Lᵀ`.
pub(crate) fn chol_inverse<B: Backend>(l: &Mat) -> Result<Mat, DmeError> {
    Ok(B::cholesky_inverse(l.as_ref())?)
}

/// Frobenius inner product `⟨A, B⟩ = Σ_ij A_ij B_ij`.
pub(crate) fn frob(a: &Mat, b: &Mat) -> f64 {
    a.as_slice().iter().zip(b.as_slice()).map(|(x, y)| x * y).sum()
}

/// Trace.
pub(crate) fn trace(a: &Mat) -> f64 {
    (0..a.nrows().min(a.ncols())).map(|i| a[(i, i)]).sum()
}

/// `Σ_ij G_ij ∂k(x_i, y_j)/∂ log θ_p` for every log-hyperparameter `θ_p` of `kernel`
/// (`G` is `|xs| × |ys|`). Parallel over columns, no derivative matrix is formed.
pub(crate) fn contract_params(kernel: &Kernel, xs: &Points, ys: &Points, g: &Mat) -> Vec<f64> {
    let np = kernel.n_params();
    let n = xs.len();
    if n == 0 || ys.is_empty() {
        return vec![0.0; np];
    }
    // Per-column partial sums, added in column order: the result does not depend on scheduling.
    let partials: Vec<Vec<f64>> = g
        .as_slice()
        .par_chunks(n)
        .enumerate()
        .map(|(j, col)| column_params(kernel, xs, ys.point(j), col.iter().copied().enumerate()))
        .collect();
    add_in_order(partials, np)
}

/// [`contract_params`] for a symmetric pair set (`ys = xs`): `Σ_ij G_ij ∂k(x_i, x_j)/∂ log θ_p` for
/// a square `G` (not necessarily symmetric), evaluating each unordered pair once with weight
/// `G_ij + G_ji` since `k(x_i, x_j) = k(x_j, x_i)`: half the kernel evaluations.
pub(crate) fn contract_params_symmetric(kernel: &Kernel, xs: &Points, g: &Mat) -> Vec<f64> {
    let np = kernel.n_params();
    let n = xs.len();
    let partials: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|j| {
            let col = g.col(j);
            let weights = col
                .iter()
                .enumerate()
                .skip(j)
                .map(|(i, &gij)| (i, if i == j { gij } else { gij + g[(j, i)] }));
            column_params(kernel, xs, xs.point(j), weights)
        })
        .collect();
    add_in_order(partials, np)
}

/// `Σ_i w_i ∂k(x_i, y)/∂ log θ` over the `(i, w_i)` given (zero weights skipped: no evaluation).
fn column_params(
    kernel: &Kernel,
    xs: &Points,
    y: &[f64],
    weights: impl Iterator<Item = (usize, f64)>,
) -> Vec<f64> {
    let np = kernel.n_params();
    let mut acc = vec![0.0; np];
    let mut buf = vec![0.0; np];
    for (i, w) in weights {
        if w != 0.0 {
            kernel.eval_grad_params(xs.point(i), y, &mut buf);
            for (a, b) in acc.iter_mut().zip(&buf) {
                *a += w * b;
            }
        }
    }
    acc
}

/// The per-column partial sums added in column order: the result does not depend on scheduling.
fn add_in_order(partials: Vec<Vec<f64>>, np: usize) -> Vec<f64> {
    let mut out = vec![0.0; np];
    for p in partials {
        out.iter_mut().zip(&p).for_each(|(a, b)| *a += b);
    }
    out
}

/// `∂/∂u_a Σ_ij G_ij k(u_i, v_j)` with respect to the first argument only: row `a` of the result
/// (`|us| × D`, row-major) is `Σ_j G_aj ∂₁k(u_a, v_j)`. When `symmetric` (then `vs = us`), both
/// arguments move: `Σ_j (G_aj + G_ja) ∂₁k(u_a, u_j)`.
pub(crate) fn contract_inputs(
    kernel: &Kernel,
    us: &Points,
    vs: &Points,
    g: &Mat,
    symmetric: bool,
) -> Vec<f64> {
    let d = us.dim();
    let mut out = vec![0.0; us.len() * d];
    out.par_chunks_mut(d).enumerate().for_each(|(a, row)| {
        let mut buf = vec![0.0; d];
        let u = us.point(a);
        for j in 0..vs.len() {
            let w = if symmetric { g[(a, j)] + g[(j, a)] } else { g[(a, j)] };
            if w != 0.0 {
                kernel.eval_grad_x(u, vs.point(j), &mut buf);
                for (r, b) in row.iter_mut().zip(&buf) {
                    *r += w * b;
                }
            }
        }
    });
    out
}
