//! The change-of-variables volume `γ_θ(x) = det(J_θ(x)ᵀ J_θ(x))^{1/2}` of seed 000 eq. (12)–(13),
//! `J_θ(x)_{l,d} = ∂k_θ(x, z_l)/∂x_d = −k_θ(x, z_l)(x_d − z_{l,d})/θ_d²` (an `m × D` matrix).
//!
//! Seed 000 eq. (17) writes `(x⁽ⁱ⁾ − z_l⁽ʲ⁾)²` where the product `(x_i − z_{l,i})(x_j − z_{l,j})` is meant,
//! and the Stan listing adds `log(½ Σ J)` where `½ log det(JᵀJ)` is meant; this module computes the
//! corrected `½ log det(JᵀJ)`.
//!
//! With scaled offsets `u_{l,d} = (x_d − z_{l,d})/θ_d` and `k_l = exp(−½‖u_l‖²)`,
//! `JᵀJ = Θ⁻¹ G Θ⁻¹` with `Θ = diag(θ)` and `G = Σ_l k_l² u_l u_lᵀ` (dimensionless, entries ≤ m/e), so
//!
//! `log γ = ½ log det G − Σ_d log θ_d`,  `∂ log γ/∂ log θ_d = Σ_l p_l u_{l,d}² − 2`,
//!
//! where `p_l = k_l² u_lᵀ G⁻¹ u_l` is the leverage of row `l` of the weighted matrix `W = [k_l u_lᵀ]`
//! (`Σ_l p_l = D`). Derivation: `∂G/∂log θ_d = Σ_l k_l² u_l u_lᵀ (2u_{l,d}² − e_d-terms)`, and
//! `½ tr(G⁻¹ ∂G) = Σ_l p_l u_{l,d}² − 1`.
//!
//! Three paths, chosen per point:
//! - **Gram** (the streaming pass's default, `O(mD²)` in register-tiled lanes, see `pass.rs`): `G`
//!   accumulated directly, factorised `G = LLᵀ`, leverages `p_l = k_l² ‖L⁻¹u_l‖²`. Forming `G`
//!   squares the condition number, so [`gram_factor`] accepts a point only when every Schur
//!   complement keeps at least `GRAM_MIN_SCHUR_RATIO` of its diagonal entry (relative error of
//!   `½ log det G` then `≲ 1e-12`); the others (one landmark dominating, near-collinear geometry,
//!   tiny weights) take the next two paths.
//! - **fast** (`O(mD²)`, vectorised): weighted modified Gram–Schmidt on `W = [k_l u_l]` with rows
//!   scaled by the largest weight, each Schur complement summed from explicit residuals (no
//!   cancellation even when one landmark dominates: see `fast`); the leverages fall out as
//!   `p_l = k_l² Σ_j r_{l,j}²/R_jj²`. Used unless a complement is near underflow or loses too
//!   much of its diagonal entry (the weights are scaled from their logarithms when all are tiny).
//! - **robust** (one dominating landmark, near-degenerate geometry): the rows
//!   `k_l u_l` are held as `2^{a_l} ν_l` (`‖ν_l‖_∞ ∈ [1, 2)`, `a_l` an integer kept as an `f64`),
//!   sorted by weight, and triangularised by Givens rotations whose rows carry their own binary
//!   scale, so no weight underflows however small `θ` is and every rescaling is exact; `log det R`
//!   is a sum of logs. Rows are taken in until the ones left provably change `½ log det G` by less
//!   than `1e-16` (see `robust`). `log γ = −∞` is returned only when the weighted Jacobian has rank
//!   `< D` exactly (e.g. all landmarks on a line through `x` in 2-D).

use crate::simd::{fma, lane_dot3, lane_max, max_abs};
use std::f64::consts::LN_2;

/// Below this largest weight `k_max`, the fast path scales the weights from their logarithms.
const FAST_MIN_KMAX: f64 = 1e-100;
/// Scaled weights `k_l/k_max` below this are dropped on the fast path (their squares would be
/// subnormal); this is exact to ~1e-300 relative unless a Schur complement is tiny, checked below.
const FAST_MIN_SCALED_WEIGHT: f64 = 1e-150;
/// Smallest Schur complement `R_jj²` (scaled so the largest weight is 1) the fast path accepts.
const FAST_MIN_RJJ2: f64 = 1e-250;
/// Smallest ratio `R_jj² / Σ_l w_l² u_{l,j}²` the fast path accepts: a relative error `ε` in a
/// projection coefficient perturbs `R_jj²` by about `ε² Σ_l w_l² u_{l,j}²`, so this keeps the
/// complement's relative error near `1e-32/1e-16`.
const FAST_MIN_SCHUR_RATIO: f64 = 1e-16;

/// The Gram path needs a largest weight `k_max` at least this (so `k_max²` is far from underflow).
pub(crate) const GRAM_MIN_KMAX: f64 = 1e-100;
/// Weights `k_l` below this are dropped from the Gram matrix (their squares would be subnormal);
/// relative to `k_max ≥ GRAM_MIN_KMAX` they change `G` by less than 1e-100.
pub(crate) const GRAM_MIN_WEIGHT: f64 = 1e-150;
/// Smallest ratio `L_jj² / G_jj` (Schur complement over diagonal entry) the Gram path accepts: the
/// rounding of `G`'s entries perturbs `L_jj²` by about `ε G_jj`, a relative error `ε/ratio ≈ 1e-12`.
const GRAM_MIN_SCHUR_RATIO: f64 = 1e-4;
/// Smallest pivot `L_jj²` the Gram path accepts.
const GRAM_MIN_PIVOT: f64 = 1e-280;

/// Cholesky factor of the `D × D` Gram matrix `G` (lower triangle of `g`, row-major, overwritten by
/// `L`; `rdiag` receives `1/L_jj`), right-looking so every update is a contiguous AXPY the compiler
/// vectorises (`col`: scratch of length `D`); returns `½ log det G = ½ Σ_j log L_jj²`, or `None`
/// when a Schur complement is below `GRAM_MIN_SCHUR_RATIO` of its diagonal entry (or tiny, or not
/// finite): then the caller takes the Gram–Schmidt path.
pub(crate) fn gram_factor(g: &mut [f64], dim: usize, rdiag: &mut [f64], col: &mut [f64]) -> Option<f64> {
    for j in 0..dim {
        rdiag[j] = g[j * dim + j];
    }
    // ½ log det G = ½ Σ_j log s_j, with the pivots multiplied together and one `ln` per run of
    // pivots whose product stays well inside the normal range.
    let (mut half_logdet, mut pivots) = (0.0, 1.0);
    for j in 0..dim {
        let s = g[j * dim + j];
        if !(s >= GRAM_MIN_SCHUR_RATIO * rdiag[j] && s > GRAM_MIN_PIVOT && s.is_finite()) {
            return None;
        }
        let ljj = s.sqrt();
        let inv = 1.0 / ljj;
        g[j * dim + j] = ljj;
        rdiag[j] = inv;
        pivots *= s;
        if !(1e-150..=1e150).contains(&pivots) {
            half_logdet += 0.5 * pivots.ln();
            pivots = 1.0;
        }
        for i in j + 1..dim {
            g[i * dim + j] *= inv;
            col[i] = g[i * dim + j];
        }
        // Trailing update of the lower triangle: G[i, j+1..=i] −= L_ij · L[j+1..=i, j].
        for i in j + 1..dim {
            let lij = col[i];
            let row = &mut g[i * dim + j + 1..=i * dim + i];
            for (gik, lkj) in row.iter_mut().zip(&col[j + 1..=i]) {
                *gik = fma(-lij, *lkj, *gik);
            }
        }
    }
    Some(half_logdet + 0.5 * pivots.ln())
}

/// Per-thread scratch for [`log_volume_raw`].
#[derive(Debug, Default)]
pub(crate) struct JacScratch {
    order: Vec<(f64, usize)>,
    row_max: Vec<f64>,
    rho: Vec<f64>,
    s: Vec<f64>,
    rho_exp: Vec<f64>,
    filled: Vec<bool>,
    v: Vec<f64>,
    ops: Vec<Op>,
    qbuf: Vec<f64>,
    w2: Vec<f64>,
    r: Vec<f64>,
    rjj2: Vec<f64>,
    /// Leverages `p_l` left by the fast path.
    pub(crate) p: Vec<f64>,
}

#[cfg(test)]
impl JacScratch {
    /// How many landmark rows the last robust triangularisation took in.
    pub(crate) fn robust_rows_used(&self) -> usize {
        let rows = self.ops.iter().map(|op| match *op {
            Op::Fill { l, .. } | Op::Rot { l, .. } => l,
        });
        rows.collect::<std::collections::HashSet<_>>().len()
    }
}

/// One orthogonal step of the robust triangularisation, replayed backwards to form `Q`.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// Row slot `k` of `R` (empty) takes landmark row `l`: a swap.
    Fill { k: usize, l: usize },
    /// `[R_k; v_l] ← [[c, s], [−s, c]] [R_k; v_l]`.
    Rot { k: usize, l: usize, c: f64, s: f64 },
}

/// `½ log det G` for one point, and (if `grad` is given) `grad[d] += Σ_l p_l u_{l,d}²`.
///
/// `u` is dimension-major (`u[d * m + l] = u_{l,d}`), `q[l] = ‖u_l‖²`, `k[l] = exp(−q[l]/2)`.
/// Returns `−∞` when `G` is exactly singular (then `grad` is left untouched).
#[cfg(test)]
pub(crate) fn log_volume(
    u: &[f64],
    q: &[f64],
    k: &[f64],
    m: usize,
    dim: usize,
    grad: Option<&mut [f64]>,
    scratch: &mut JacScratch,
) -> f64 {
    let want = grad.is_some();
    let mut tmp = vec![0.0; dim];
    let (v, fast) = log_volume_raw(u, q, k, m, dim, want, &mut tmp, scratch);
    if let Some(g) = grad {
        if fast {
            for d in 0..dim {
                g[d] += (0..m).map(|l| scratch.p[l] * u[d * m + l] * u[d * m + l]).sum::<f64>();
            }
        } else {
            for d in 0..dim {
                g[d] += tmp[d];
            }
        }
    }
    v
}

/// `(½ log det G, fast)`. With `want_grad`: on the fast path the leverages `p_l` are left in
/// `scratch.p` (the caller accumulates `p_l u_{l,d}²` per landmark, vectorised); on the robust path
/// `Σ_l p_l u_{l,d}²` is added to `grad_robust[d]`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn log_volume_raw(
    u: &[f64],
    q: &[f64],
    k: &[f64],
    m: usize,
    dim: usize,
    want_grad: bool,
    grad_robust: &mut [f64],
    scratch: &mut JacScratch,
) -> (f64, bool) {
    if let Some(v) = fast(u, q, k, m, dim, want_grad, scratch) {
        return (v, true);
    }
    (robust(u, q, m, dim, want_grad.then_some(grad_robust), scratch), false)
}

/// Fast path: weighted modified Gram–Schmidt on the columns of `W = [k_l u_l]` (scaled so the largest
/// weight is 1), with every Schur complement `R_jj² = ‖P⊥ w∘u_j‖²` summed from explicit residuals:
/// an error `δc` in a projection coefficient changes it only by `O(δc²)` (the residual norm is
/// stationary in the coefficient), so no digits are lost to cancellation even when one landmark
/// dominates. `None` when a complement is near underflow or fails the accuracy check.
///
/// The scaled weights `k_l/k_max` are read from `k` when `k_max ≥ FAST_MIN_KMAX`, and otherwise
/// from the log-weights, `exp(−(q_l − q_min)/2)` (`k = exp(−q/2)` underflows there): tiny
/// lengthscales, and every lengthscale below the nearest-landmark distance in high dimensions,
/// where every weight is below `1e-100` (`q > 460`) at every point. Only the scale `k_max` is
/// then far from 1; the geometry the Gram–Schmidt sees is the same.
fn fast(
    u: &[f64],
    q: &[f64],
    k: &[f64],
    m: usize,
    dim: usize,
    want_grad: bool,
    scratch: &mut JacScratch,
) -> Option<f64> {
    let kmax = lane_max(k);
    let JacScratch { w2, r, rjj2, p, .. } = scratch;
    w2.resize(m, 0.0);
    let scaled = |t: f64| if t < FAST_MIN_SCALED_WEIGHT { 0.0 } else { t * t };
    let log_kmax = if kmax >= FAST_MIN_KMAX {
        let inv = 1.0 / kmax;
        w2.iter_mut().zip(&k[..m]).for_each(|(w, &kl)| *w = scaled(kl * inv));
        kmax.ln()
    } else {
        let qmin = q[..m].iter().copied().fold(f64::INFINITY, f64::min);
        if !qmin.is_finite() {
            return None;
        }
        w2.iter_mut().zip(&q[..m]).for_each(|(w, &ql)| *w = scaled((-0.5 * (ql - qmin)).exp()));
        -0.5 * qmin
    };
    r.resize(dim * m, 0.0);
    r.copy_from_slice(&u[..dim * m]);
    rjj2.resize(dim, 0.0);
    let mut half_logdet = dim as f64 * log_kmax;
    for j in 0..dim {
        let (done, rest) = r.split_at_mut(j * m);
        let rj = &mut rest[..m];
        let w2 = &w2[..m];
        let diag = lane_dot3(w2, rj, rj);
        for i in 0..j {
            let ri = &done[i * m..(i + 1) * m];
            let c = lane_dot3(w2, rj, ri) / rjj2[i];
            for (a, b) in rj.iter_mut().zip(ri) {
                *a -= c * b;
            }
        }
        let s = lane_dot3(w2, rj, rj);
        if !(s > FAST_MIN_RJJ2 && s >= FAST_MIN_SCHUR_RATIO * diag && s.is_finite()) {
            return None;
        }
        rjj2[j] = s;
        half_logdet += 0.5 * s.ln();
    }
    if want_grad {
        p.resize(m, 0.0);
        p.iter_mut().for_each(|v| *v = 0.0);
        for j in 0..dim {
            let (rj, inv_s) = (&r[j * m..(j + 1) * m], 1.0 / rjj2[j]);
            for (pl, a) in p.iter_mut().zip(rj) {
                *pl += a * a * inv_s;
            }
        }
        for (pl, w) in p.iter_mut().zip(w2.iter()) {
            *pl *= w;
        }
    }
    Some(half_logdet)
}

/// Scales `row` (largest magnitude `max`) by a power of two that brings `max` into `[1, 2)` (an
/// exact multiplication) and returns the binary exponent removed; NaN when `max` is not finite and
/// positive. (Dividing by `max`, with its logarithm for the scale, cost half of the robust path's
/// time.)
fn rescale(row: &mut [f64], max: f64) -> f64 {
    if !(max > 0.0 && max.is_finite()) {
        return f64::NAN;
    }
    let e = binary_exponent(max);
    if e.abs() < 1000.0 {
        let factor = ldexp(1.0, -e);
        row.iter_mut().for_each(|v| *v *= factor);
    } else {
        row.iter_mut().for_each(|v| *v = ldexp(*v, -e));
    }
    e
}

/// `⌊log₂ |x|⌋` for a finite `x` (subnormals included; `−∞` for 0), as an `f64`.
pub(super) fn binary_exponent(x: f64) -> f64 {
    let biased = |x: f64| ((x.to_bits() >> 52) & 0x7ff) as f64 - 1023.0;
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x.is_normal() {
        biased(x)
    } else {
        biased(x * 2f64.powi(64)) - 64.0
    }
}

/// `x · 2^k` for an integer `k` (as an `f64`), exact unless the result is subnormal or out of range.
pub(super) fn ldexp(mut x: f64, mut k: f64) -> f64 {
    let pow2 = |k: f64| f64::from_bits(((k + 1023.0) as u64) << 52);
    while k > 1000.0 {
        x *= pow2(1000.0);
        k -= 1000.0;
    }
    while k < -1000.0 {
        if x == 0.0 {
            return 0.0;
        }
        x *= pow2(-1000.0);
        k += 1000.0;
    }
    x * pow2(k)
}

/// A row of the robust path is rescaled (exactly, by a power of two) only when its largest entry's
/// binary exponent leaves `±` this: products of two entries stay far inside the normal range, and
/// most rotations need no rescaling pass.
const LAZY_EXPONENT: f64 = 256.0;

/// One step of the robust path on the trailing parts `row = ρ_k[k..]`, `v = ν[k..]` (`row[0] = ρ_kk`,
/// `v[0] = ν_k`): `ρ_k ← f_ρ ρ_k + f_ν ν` and `ν_j ← (ρ_kk ν_j − ν_k ρ_kj)·inv` for `j > k`; returns the
/// largest magnitudes of the new `ρ_k` and `ν[k + 1..]`. (Taking them in the rotation's own pass
/// kept it from vectorising and was slower.)
#[inline(always)]
fn rotate(
    row: &mut [f64],
    v: &mut [f64],
    (fr, fv): (f64, f64),
    (rkk, vk, inv): (f64, f64, f64),
) -> (f64, f64) {
    row[0] = fr * row[0] + fv * vk;
    for (r, w) in row[1..].iter_mut().zip(&mut v[1..]) {
        let (r_old, v_old) = (*r, *w);
        *r = fr * r_old + fv * v_old;
        *w = (rkk * v_old - vk * r_old) * inv;
    }
    (max_abs(row), max_abs(&v[1..]))
}

/// The robust path stops when the rows left can change `½ log det G` by less than `e^{this}`
/// (`1e-16`, below the rounding of the sum of logs).
const LOG_NEGLIGIBLE: f64 = -36.8;

/// `log ‖R⁻¹‖²_F` for `R = diag(2^{s}) ρ` (`ρ` upper triangular, row-major `D × D`): column `k` of
/// `R⁻¹` is column `k` of `X = ρ⁻¹` times `2^{−s_k}`, summed in logs. `X` row by row from the last,
/// `ρ_ii X_i = e_i − Σ_{j>i} ρ_ij X_j` (contiguous row updates). `+∞` when `ρ` is singular or its
/// inverse overflows.
fn log_inverse_frobenius2(rho: &[f64], s: &[f64], dim: usize) -> f64 {
    let mut x = vec![0.0; dim * dim];
    for i in (0..dim).rev() {
        let (head, tail) = x.split_at_mut((i + 1) * dim);
        let xi = &mut head[i * dim..];
        xi[i] = 1.0;
        for (j, xj) in (i + 1..dim).zip(tail.chunks_exact(dim)) {
            let f = rho[i * dim + j];
            for (a, b) in xi[j..].iter_mut().zip(&xj[j..]) {
                *a -= f * b;
            }
        }
        let inv = 1.0 / rho[i * dim + i];
        xi[i..].iter_mut().for_each(|a| *a *= inv);
    }
    let mut columns = vec![0.0; dim];
    for row in x.chunks_exact(dim) {
        for (c, a) in columns.iter_mut().zip(row) {
            *c += a * a;
        }
    }
    let terms: Vec<f64> = columns.iter().zip(s).map(|(c, sk)| c.ln() - 2.0 * sk * LN_2).collect();
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return f64::INFINITY;
    }
    top + terms.iter().map(|t| (t - top).exp()).sum::<f64>().ln()
}

/// Robust binary-scaled Givens path (see the module docs). Once `R` has full rank, the rows not yet
/// taken in change `½ log det G` by at most `½ tr(W R⁻¹ R⁻ᵀ Wᵀ) ≤ ½ ‖W‖²_F ‖R⁻¹‖²_F` (`log det(I + M) ≤
/// tr M`), with `‖W‖²_F ≤ D · #rows · e^{2a}` for the largest weight `e^{a}` left, and `‖R⁻¹‖` only
/// falls as rows are added; the path stops when that bound is below [`LOG_NEGLIGIBLE`]. Visible to
/// the tests, which check it alone.
pub(super) fn robust(
    u: &[f64],
    q: &[f64],
    m: usize,
    dim: usize,
    grad: Option<&mut [f64]>,
    scratch: &mut JacScratch,
) -> f64 {
    let JacScratch { order, row_max, rho, s, rho_exp, filled, v, ops, qbuf, .. } = scratch;
    ops.clear();
    // the steps are recorded only to form the leverages of the gradient
    let record = grad.is_some();
    // row l is ν_l = u_l/‖u_l‖_∞, formed when it is taken in; order: (a_l, l) for the non-zero rows
    row_max.clear();
    row_max.resize(m, 0.0);
    for d in 0..dim {
        for (mx, ud) in row_max.iter_mut().zip(&u[d * m..(d + 1) * m]) {
            *mx = if ud.abs() > *mx { ud.abs() } else { *mx };
        }
    }
    order.clear();
    order.extend((0..m).filter(|&l| row_max[l] > 0.0).map(|l| (-0.5 * q[l] + row_max[l].ln(), l)));
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    rho.clear();
    rho.resize(dim * dim, 0.0);
    s.clear();
    s.resize(dim, 0.0);
    rho_exp.clear();
    rho_exp.resize(dim, 0.0);
    filled.clear();
    filled.resize(dim, false);
    v.clear();
    v.resize(dim, 0.0);
    // log ‖R⁻¹‖²_F once every slot is filled, and the row at which it was computed
    let (mut filled_count, mut inverse_norm) = (0, None::<(usize, f64)>);
    for (at, &(a0, l)) in order.iter().enumerate() {
        if filled_count == dim {
            let stale = inverse_norm.is_none_or(|(since, _)| at >= since + dim);
            if stale {
                for (kk, row) in rho.chunks_exact_mut(dim).enumerate() {
                    s[kk] += rescale(row, max_abs(row));
                    rho_exp[kk] = 0.0;
                }
                inverse_norm = Some((at, log_inverse_frobenius2(rho, s, dim)));
            }
            let log_rest = (0.5 * dim as f64 * (order.len() - at) as f64).ln() + 2.0 * a0;
            if inverse_norm.is_some_and(|(_, log_inv)| log_rest + log_inv < LOG_NEGLIGIBLE) {
                break;
            }
        }
        // e^{a0} = 2^{a} e^{f}, f ∈ [0, ln 2): the row is e^{f} ν_l at binary scale a
        let a_bin = (a0 / LN_2).floor();
        let factor = (a0 - a_bin * LN_2).exp() / row_max[l];
        for (d, vd) in v.iter_mut().enumerate() {
            *vd = u[d * m + l] * factor;
        }
        // v = 2^{a} ν with max |ν| = 2^{v_exp}·[1, 2); each row k of R is 2^{s_k} ρ_k with
        // max |ρ_k| = 2^{rho_exp_k}·[1, 2): rows are rescaled only when that exponent leaves
        // ±LAZY_EXPONENT (the scale decisions below use the true exponents s + rho_exp, a + v_exp)
        let (mut a, mut v_exp) = (a_bin, 0.0);
        for kk in 0..dim {
            if v[kk] == 0.0 {
                continue;
            }
            if !filled[kk] {
                rho[kk * dim..(kk + 1) * dim].copy_from_slice(v);
                (s[kk], rho_exp[kk]) = (a, v_exp);
                filled[kk] = true;
                filled_count += 1;
                if record {
                    ops.push(Op::Fill { k: kk, l });
                }
                break;
            }
            let (rkk, vk) = (rho[kk * dim + kk], v[kk]);
            let row = &mut rho[kk * dim + kk..(kk + 1) * dim];
            // the binary exponents of R_kk = 2^{s_k} ρ_kk (−∞ when 0) and of v_k = 2^{a} ν_k ≠ 0
            let (er, ev) = (s[kk] + binary_exponent(rkk), a + binary_exponent(vk));
            let (row_max, v_max) = if ev + 1.0 < er - 65.0 {
                // |v_k| < 2⁻⁶⁵ |R_kk|, a rotation angle t < 2⁻⁶⁵: to rounding c = sign ρ_kk, sn = 0 for
                // R_k (its change, below 2⁻⁶⁵ of its entries, is dropped, and so is its O(t) part of
                // Q), and v ← (ρ_kk ν − ν_k ρ_k)/|ρ_kk| (one elimination step; |ρ_kk| = x 2^{e},
                // x ∈ [1, 2), the 2^{e} moved to v's scale)
                let c = rkk.signum();
                if record {
                    ops.push(Op::Rot { k: kk, l, c, s: 0.0 });
                }
                let e = er - s[kk];
                a -= e;
                rotate(row, &mut v[kk..], (c, 0.0), (rkk, vk, 1.0 / ldexp(rkk.abs(), -e)))
            } else {
                // r = hypot of the leading entries, each scaled by a power of two so that the larger
                // of them (binary scale e_max) lies in [1, 2): no logarithm, no overflow
                let e_max = er.max(ev);
                let (x, y) = (ldexp(rkk.abs(), s[kk] - e_max), ldexp(vk.abs(), a - e_max));
                let r = (x * x + y * y).sqrt();
                let (c, sn) = (rkk.signum() * x / r, vk.signum() * y / r);
                if record {
                    ops.push(Op::Rot { k: kk, l, c, s: sn });
                }
                // R_k ← c R_k + sn v at the scale 2^{big} of the larger row; v ← (ρ_kk ν − ν_k ρ_k)/r
                // at the scale 2^{a + s_k − e_max}
                let big = (s[kk] + rho_exp[kk]).max(a + v_exp);
                let (fr, fv) = (ldexp(c, s[kk] - big), ldexp(sn, a - big));
                (s[kk], a) = (big, a + s[kk] - e_max);
                rotate(row, &mut v[kk..], (fr, fv), (rkk, vk, 1.0 / r))
            };
            v[kk] = 0.0;
            rho_exp[kk] = binary_exponent(row_max);
            if rho_exp[kk].abs() > LAZY_EXPONENT {
                s[kk] += rescale(row, row_max);
                rho_exp[kk] = 0.0;
            }
            if v_max == 0.0 {
                break;
            }
            v_exp = binary_exponent(v_max);
            if v_exp.abs() > LAZY_EXPONENT {
                a += rescale(&mut v[kk + 1..], v_max);
                v_exp = 0.0;
            }
        }
    }
    if filled.iter().any(|f| !f) {
        return f64::NEG_INFINITY;
    }
    let mut half_logdet = 0.0;
    for kk in 0..dim {
        let r = rho[kk * dim + kk];
        if r == 0.0 {
            return f64::NEG_INFINITY;
        }
        half_logdet += s[kk] * LN_2 + r.abs().ln();
    }
    if let Some(g) = grad {
        // Leverages p_l = ‖row l of Q‖², Q = Hᵀ [I_D; 0] with H the product of the recorded steps
        // (slots 0..D are the rows of R, slot D + l is landmark l). Q is orthonormal, so no scaling issue.
        qbuf.clear();
        qbuf.resize((dim + m) * dim, 0.0);
        for kk in 0..dim {
            qbuf[kk * dim + kk] = 1.0;
        }
        for op in ops.iter().rev() {
            match *op {
                Op::Fill { k, l } => {
                    for j in 0..dim {
                        qbuf.swap(k * dim + j, (dim + l) * dim + j);
                    }
                }
                Op::Rot { k, l, c, s: sn } => {
                    let (ik, il) = (k * dim, (dim + l) * dim);
                    for j in 0..dim {
                        let (ek, el) = (qbuf[ik + j], qbuf[il + j]);
                        qbuf[ik + j] = c * ek - sn * el;
                        qbuf[il + j] = sn * ek + c * el;
                    }
                }
            }
        }
        for &(_, l) in order.iter() {
            let p: f64 = qbuf[(dim + l) * dim..(dim + l + 1) * dim].iter().map(|t| t * t).sum();
            for d in 0..dim {
                let ud = u[d * m + l];
                g[d] += p * ud * ud;
            }
        }
    }
    half_logdet
}
