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
//!   `p_l = k_l² Σ_j r_{l,j}²/R_jj²`. Used unless every weight is below 1e-100 or a complement is
//!   near underflow.
//! - **robust** (tiny lengthscales, one dominating landmark, near-degenerate geometry): the rows
//!   `k_l u_l` are held in log-scaled form `e^{a_l} ν_l` (`‖ν_l‖_∞ = 1`), sorted by weight, and
//!   triangularised by Givens rotations whose rows carry their own log-scale, so no weight
//!   underflows however small `θ` is: `log det R` is a sum of logs. `log γ = −∞` is returned only when
//!   the weighted Jacobian has rank `< D` exactly (e.g. all landmarks on a line through `x` in 2-D).

use super::simd::{fma, lane_dot3, lane_max};

/// The fast path hands a point to the robust path when every weight `k_l` is below this.
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
    rows: Vec<f64>,
    rho: Vec<f64>,
    s: Vec<f64>,
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
    if let Some(v) = fast(u, k, m, dim, want_grad, scratch) {
        return (v, true);
    }
    (robust(u, q, m, dim, want_grad.then_some(grad_robust), scratch), false)
}

/// Fast path: weighted modified Gram–Schmidt on the columns of `W = [k_l u_l]` (scaled so the largest
/// weight is 1), with every Schur complement `R_jj² = ‖P⊥ w∘u_j‖²` summed from explicit residuals:
/// an error `δc` in a projection coefficient changes it only by `O(δc²)` (the residual norm is
/// stationary in the coefficient), so no digits are lost to cancellation even when one landmark
/// dominates. `None` when the weights are all tiny or a complement is near underflow.
fn fast(
    u: &[f64],
    k: &[f64],
    m: usize,
    dim: usize,
    want_grad: bool,
    scratch: &mut JacScratch,
) -> Option<f64> {
    let kmax = lane_max(k);
    if !(kmax >= FAST_MIN_KMAX) {
        return None;
    }
    let inv = 1.0 / kmax;
    let JacScratch { w2, r, rjj2, p, .. } = scratch;
    w2.resize(m, 0.0);
    for (w, &kl) in w2.iter_mut().zip(&k[..m]) {
        let t = kl * inv;
        *w = if t < FAST_MIN_SCALED_WEIGHT { 0.0 } else { t * t };
    }
    r.resize(dim * m, 0.0);
    r.copy_from_slice(&u[..dim * m]);
    rjj2.resize(dim, 0.0);
    let mut half_logdet = dim as f64 * kmax.ln();
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

/// Robust log-scaled Givens path (see the module docs). Visible to the tests, which check it alone.
pub(super) fn robust(
    u: &[f64],
    q: &[f64],
    m: usize,
    dim: usize,
    grad: Option<&mut [f64]>,
    scratch: &mut JacScratch,
) -> f64 {
    let JacScratch { order, rows, rho, s, filled, v, ops, qbuf, .. } = scratch;
    ops.clear();
    // rows: ν_l (max-abs normalised), row-major l*dim + d; order: (a_l, l) for non-zero rows.
    rows.clear();
    rows.resize(m * dim, 0.0);
    order.clear();
    for l in 0..m {
        let mut mx = 0.0f64;
        for d in 0..dim {
            mx = mx.max(u[d * m + l].abs());
        }
        if mx == 0.0 {
            continue;
        }
        for d in 0..dim {
            rows[l * dim + d] = u[d * m + l] / mx;
        }
        order.push((-0.5 * q[l] + mx.ln(), l));
    }
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    rho.clear();
    rho.resize(dim * dim, 0.0);
    s.clear();
    s.resize(dim, 0.0);
    filled.clear();
    filled.resize(dim, false);
    v.clear();
    v.resize(dim, 0.0);
    for &(a0, l) in order.iter() {
        let mut a = a0;
        v.copy_from_slice(&rows[l * dim..(l + 1) * dim]);
        for kk in 0..dim {
            if v[kk] == 0.0 {
                continue;
            }
            if !filled[kk] {
                rho[kk * dim..(kk + 1) * dim].copy_from_slice(v);
                s[kk] = a;
                filled[kk] = true;
                ops.push(Op::Fill { k: kk, l });
                break;
            }
            let rkk = rho[kk * dim + kk];
            let lr = s[kk] + rkk.abs().ln();
            let lv = a + v[kk].abs().ln();
            let (hi, lo) = if lr >= lv { (lr, lv) } else { (lv, lr) };
            let log_r = hi + 0.5 * (2.0 * (lo - hi)).exp().ln_1p();
            let c = rkk.signum() * (lr - log_r).exp();
            let sn = v[kk].signum() * (lv - log_r).exp();
            ops.push(Op::Rot { k: kk, l, c, s: sn });
            let big = s[kk].max(a);
            let (fr, fv) = ((s[kk] - big).exp() * c, (a - big).exp() * sn);
            let vk = v[kk];
            // R_k ← c R_k + sn v (scale e^{big}); v ← ρ_kk ν − ν_k ρ_k (scale e^{a + s_k − log r}).
            let (mut rmax, mut vmax) = (0.0f64, 0.0f64);
            for j in kk..dim {
                let (r_old, v_old) = (rho[kk * dim + j], v[j]);
                let nr = fr * r_old + fv * v_old;
                rho[kk * dim + j] = nr;
                rmax = rmax.max(nr.abs());
                if j > kk {
                    let nv = rkk * v_old - vk * r_old;
                    v[j] = nv;
                    vmax = vmax.max(nv.abs());
                }
            }
            v[kk] = 0.0;
            let a_new = a + s[kk] - log_r;
            for j in kk..dim {
                rho[kk * dim + j] /= rmax;
            }
            s[kk] = big + rmax.ln();
            if vmax == 0.0 {
                break;
            }
            for j in kk + 1..dim {
                v[j] /= vmax;
            }
            a = a_new + vmax.ln();
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
        half_logdet += s[kk] + r.abs().ln();
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
