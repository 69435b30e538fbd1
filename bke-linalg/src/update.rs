//! Low-rank updates and downdates of a lower Cholesky factor, written once in Rust and shared by
//! every backend whose library has none (LAPACK has none; nalgebra's works only on its own owned type).
//!
//! Given `A = L Lᵀ`, these overwrite `L` with the factor of `A + w wᵀ` (update) or `A − w wᵀ`
//! (downdate) in `O(n²)` per column of `W`, against `O(n³/3)` for refactorising.
//!
//! * **Update** (hyperbolic-free Givens sweep, column-oriented so every inner loop is a contiguous
//!   column): for k = 0..n, `r = hypot(L_kk, x_k)`, `c = r / L_kk`, `s = x_k / L_kk`, `L_kk = r`,
//!   then for i > k: `L_ik ← (L_ik + s x_i)/c`, `x_i ← c x_i − s L_ik`. It cannot fail for finite input.
//! * **Downdate** (LINPACK `dchdd`): solve `L p = x`; the downdate is positive definite iff
//!   `ρ² = 1 − ‖p‖² > 0`, which is decided *before* anything is written, so on failure the factor is
//!   untouched. Then the Givens rotations that fold `p` into `ρ` (from the last entry up) are applied
//!   column by column. This form is backward stable, unlike the hyperbolic-rotation downdate.
//! * **Rank k**: `k` successive rank-1 sweeps. For a downdate, feasibility of the whole batch is
//!   checked first through the `k × k` Cholesky of `I − PᵀP`, `P = L⁻¹W`; should rounding still defeat
//!   a later column, the columns already applied are undone by updates and the error is returned.

use crate::{LinalgError, MatMut, MatRef, mat::check_square};

fn check_factor_and_vector(op: &'static str, l: &MatMut<'_>, x_len: usize) -> Result<usize, LinalgError> {
    let n = check_square(op, l.as_ref())?;
    if x_len != n {
        return Err(LinalgError::ShapeMismatch {
            op,
            expected: format!("vector of length {n}"),
            found: format!("length {x_len}"),
        });
    }
    Ok(n)
}

fn check_vector_finite(what: &'static str, x: &[f64], col: usize) -> Result<(), LinalgError> {
    match x.iter().position(|v| !v.is_finite()) {
        Some(row) => Err(LinalgError::NonFinite { what, row, col, value: x[row] }),
        None => Ok(()),
    }
}

/// `L ← chol(L Lᵀ + x xᵀ)`; `x` is used as workspace and left overwritten.
pub fn rank1_update(mut l: MatMut<'_>, x: &mut [f64]) -> Result<(), LinalgError> {
    let n = check_factor_and_vector("rank-1 update", &l, x.len())?;
    check_vector_finite("rank-1 update vector", x, 0)?;
    for k in 0..n {
        let col = l.col_mut(k);
        let lkk = col[k];
        let r = lkk.hypot(x[k]);
        let c = r / lkk;
        let s = x[k] / lkk;
        col[k] = r;
        let inv_c = 1.0 / c;
        for (lik, xi) in col[k + 1..].iter_mut().zip(x[k + 1..].iter_mut()) {
            let new = (*lik + s * *xi) * inv_c;
            *xi = c * *xi - s * new;
            *lik = new;
        }
    }
    Ok(())
}

/// Forward substitution `x ← L⁻¹ x` for a lower-triangular `L` (column-oriented).
pub fn forward_substitute(l: MatRef<'_>, x: &mut [f64]) {
    let n = x.len();
    for j in 0..n {
        let col = l.col(j);
        let xj = x[j] / col[j];
        x[j] = xj;
        for (xi, lij) in x[j + 1..].iter_mut().zip(&col[j + 1..n]) {
            *xi -= xj * lij;
        }
    }
}

/// `L ← chol(L Lᵀ − x xᵀ)`. On error the factor is unchanged.
pub fn rank1_downdate(l: MatMut<'_>, x: &[f64]) -> Result<(), LinalgError> {
    rank1_downdate_col(l, x, 0)
}

fn rank1_downdate_col(mut l: MatMut<'_>, x: &[f64], column: usize) -> Result<(), LinalgError> {
    let n = check_factor_and_vector("rank-1 downdate", &l, x.len())?;
    check_vector_finite("rank-1 downdate vector", x, column)?;
    let mut p = x.to_vec();
    forward_substitute(l.as_ref(), &mut p);
    let norm2: f64 = p.iter().map(|v| v * v).sum();
    let rho2 = 1.0 - norm2;
    if !(rho2 > 0.0) {
        return Err(LinalgError::DowndateNotPositiveDefinite { column });
    }
    // Rotations G_i (acting on (ρ, p_i)) that fold p into ρ, from the last entry up.
    let mut cs = vec![0.0; n];
    let mut ss = vec![0.0; n];
    let mut rho = rho2.sqrt();
    for i in (0..n).rev() {
        let t = rho.hypot(p[i]);
        cs[i] = rho / t;
        ss[i] = p[i] / t;
        rho = t;
    }
    // Apply the rotations to the rows of Lᵀ: for each column i of L (from the last), mix it with
    // the running vector xx (one entry per row of L).
    let mut xx = vec![0.0; n];
    for i in (0..n).rev() {
        let (c, s) = (cs[i], ss[i]);
        let col = l.col_mut(i);
        for (lji, xj) in col[i..].iter_mut().zip(xx[i..].iter_mut()) {
            let t = c * *xj + s * *lji;
            *lji = c * *lji - s * *xj;
            *xj = t;
        }
    }
    Ok(())
}

/// `L ← chol(L Lᵀ + W Wᵀ)` by `W.ncols()` rank-1 sweeps.
pub fn rank_k_update(mut l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
    check_factor_and_vector("rank-k update", &l, w.nrows())?;
    crate::mat::check_finite("rank-k update W", w)?;
    let mut x = vec![0.0; w.nrows()];
    for j in 0..w.ncols() {
        x.copy_from_slice(w.col(j));
        rank1_update(l.rb_mut(), &mut x)?;
    }
    Ok(())
}

/// `L ← chol(L Lᵀ − W Wᵀ)`; on error the factor is unchanged (up to rounding, if a late column
/// fails through rounding after the batch check passed and earlier columns must be re-added).
pub fn rank_k_downdate(mut l: MatMut<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
    let n = check_factor_and_vector("rank-k downdate", &l, w.nrows())?;
    crate::mat::check_finite("rank-k downdate W", w)?;
    let k = w.ncols();
    if k > 1 {
        check_downdate_feasible(l.as_ref(), w)?;
    }
    let mut x = vec![0.0; n];
    for j in 0..k {
        if let Err(e) = rank1_downdate_col(l.rb_mut(), w.col(j), j) {
            for jj in (0..j).rev() {
                x.copy_from_slice(w.col(jj));
                rank1_update(l.rb_mut(), &mut x)?;
            }
            return Err(e);
        }
    }
    Ok(())
}

/// Errors unless `L Lᵀ − W Wᵀ` is positive definite, i.e. unless `I − PᵀP ≻ 0` with `P = L⁻¹W`.
fn check_downdate_feasible(l: MatRef<'_>, w: MatRef<'_>) -> Result<(), LinalgError> {
    let (n, k) = (w.nrows(), w.ncols());
    let mut p = crate::Mat::zeros(n, k);
    for j in 0..k {
        let col = p.col_mut(j);
        col.copy_from_slice(w.col(j));
        forward_substitute(l, col);
    }
    let mut s = crate::Mat::from_fn(k, k, |a, b| {
        let dot: f64 = p.col(a).iter().zip(p.col(b)).map(|(u, v)| u * v).sum();
        f64::from(u8::from(a == b)) - dot
    });
    cholesky_unblocked(s.as_mut()).map_err(|pivot| LinalgError::DowndateNotPositiveDefinite { column: pivot })
}

/// Reference unblocked left-looking Cholesky of the lower triangle, in place; returns the failing
/// pivot. Used for small matrices and to name the pivot where a library reports only failure.
pub fn cholesky_unblocked(mut a: MatMut<'_>) -> Result<(), usize> {
    let n = a.nrows();
    for j in 0..n {
        for k in 0..j {
            let ljk = a.at(j, k);
            if ljk != 0.0 {
                for i in j..n {
                    let v = a.at(i, k);
                    *a.at_mut(i, j) -= ljk * v;
                }
            }
        }
        let d = a.at(j, j);
        if !(d > 0.0) || !d.is_finite() {
            return Err(j);
        }
        let d = d.sqrt();
        *a.at_mut(j, j) = d;
        for i in j + 1..n {
            *a.at_mut(i, j) /= d;
        }
    }
    a.zero_strict_upper();
    Ok(())
}
