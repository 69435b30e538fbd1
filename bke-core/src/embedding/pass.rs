//! The fused streaming pass of the marginal pseudolikelihood over one block of data points: every
//! sum over the data that [`super::marginal`] needs, computed in one sweep per point over the
//! landmarks with no `n × m` matrix ever formed.
//!
//! **Layout.** Landmarks scaled by the lengthscales, `z̃_{l,d} = z_{l,d}/θ_d`, are stored
//! dimension-major in [`Lane`]s of `W` landmarks (padded with zero-weight landmarks), so every
//! per-pair operation is a lane-wise operation the compiler vectorises. Per point `x`
//! (`x̃_d = x_d/θ_d`):
//!
//! 1. *Features and Gaussian sums* (one pass): `u_{l,d} = x̃_d − z̃_{l,d}`, `q_l = ‖u_l‖²`,
//!    `k_l = exp(−q_l/2)` (vectorised [`exp_nonpos`]), and the per-landmark sums of the block,
//!    shifted by the block's first point `c_l` (so the centred sum of squares never cancels):
//!    `Σ(k−c)`, `Σ(k−c)²`, `Σ k t_g`, `Σ (k−c) k t_g` with `t_g = u_{l,g}²` (ARD) or `q_l`
//!    (one lengthscale: only the sum over dimensions of the gradient is needed, a `D`-fold saving).
//!    The differences are formed explicitly rather than as `‖x̃‖² + ‖z̃‖² − 2x̃ᵀz̃`: the gradient and
//!    the Jacobian need every `u_{l,d}` anyway, and the explicit form has no cancellation when the
//!    data sit far from the origin in units of `θ`.
//! 2. *Jacobian Gram* `G = Σ_l k_l² u_l u_lᵀ` (`D × D`, see `jacobian.rs`): a register-tiled
//!    weighted SYRK over the stored `u` (4 × 4 tiles of lane accumulators, `D²m` flops).
//! 3. *Leverages* `p_l = k_l² ‖L⁻¹u_l‖²` by forward substitution with the Cholesky factor `G = LLᵀ`
//!    (right-looking, so its updates vectorise; 8 rows of `L⁻¹u` at a time) and the gradient sums
//!    `Σ_l p_l t_{l,g}` (`D²m/2` flops).
//!
//! Points where the Gram path is not accurate (tiny weights, a nearly singular `G`: see
//! [`super::jacobian::gram_factor`]) take the Gram–Schmidt or log-scaled Givens path of
//! `jacobian.rs`, per point. Every sum runs in a fixed order, so a block's result does not depend on
//! the thread that computes it.

use super::jacobian::{GRAM_MIN_KMAX, GRAM_MIN_WEIGHT, JacScratch, gram_factor, log_volume_raw};
use super::stats::PartialStats;
use crate::simd::{Lane, W, exp_nonpos, fma, hsum};

/// Landmarks prepared for the pass (scaled, dimension-major, padded to whole lanes).
#[derive(Debug, Clone)]
pub(crate) struct Landmarks {
    /// `z̃_{l,d}`, lane block `b` of dimension `d` at `d · nb + b`.
    z: Vec<Lane>,
    /// 1 for real landmarks, 0 for the padding.
    mask: Vec<Lane>,
    /// `1/θ_d`.
    inv_ls: Vec<f64>,
    /// Number of landmarks `m`.
    pub(crate) m: usize,
    /// Number of lane blocks `⌈m/W⌉`.
    nb: usize,
    /// Dimension `D`.
    pub(crate) dim: usize,
    /// Gradient coordinates: 1 (one lengthscale) or `D` (ARD).
    pub(crate) gd: usize,
    /// Whether the log-Jacobian term is included.
    jacobian: bool,
    /// Whether the gradient sums are accumulated (off for a value-only plan: the scan).
    pub(crate) gradient: bool,
    /// Whether the log-Jacobian is replaced by its upper bound ([`Landmarks::log_volume_bound`]).
    pub(crate) bound: bool,
}

impl Landmarks {
    /// Landmarks `z` (row-major, `m × dim`) for lengthscales `ls` (length `dim`).
    pub(crate) fn new(z: &[f64], dim: usize, ls: &[f64], ard: bool, jacobian: bool) -> Self {
        let m = z.len() / dim;
        let nb = m.div_ceil(W);
        let inv_ls: Vec<f64> = ls.iter().map(|l| 1.0 / l).collect();
        let mut zl = vec![[0.0; W]; dim * nb];
        let mut mask = vec![[0.0; W]; nb];
        for l in 0..m {
            mask[l / W][l % W] = 1.0;
            for d in 0..dim {
                zl[d * nb + l / W][l % W] = z[l * dim + d] * inv_ls[d];
            }
        }
        Self {
            z: zl,
            mask,
            inv_ls,
            m,
            nb,
            dim,
            gd: if ard { dim } else { 1 },
            jacobian,
            gradient: true,
            bound: false,
        }
    }

    /// The sums of one block of points (row-major, at least one point).
    pub(crate) fn block(&self, x: &[f64], s: &mut Scratch) -> PartialStats {
        // Small dimensions get their own copy of the per-pair loops with `D` known at compile
        // time (fully unrolled, lanes kept in registers); `0` is the general code.
        match self.dim {
            1 => self.block_in::<1>(x, s),
            2 => self.block_in::<2>(x, s),
            3 => self.block_in::<3>(x, s),
            _ => self.block_in::<0>(x, s),
        }
    }

    /// [`Self::block`] with the dimension `DIM` fixed at compile time (`0`: read from `self`).
    fn block_in<const DIM: usize>(&self, x: &[f64], s: &mut Scratch) -> PartialStats {
        let (dim, nb, gd) = (self.dim, self.nb, self.gd);
        s.prepare(self);
        let npts = x.len() / dim;
        let mut xs = vec![0.0; dim];
        self.scale(&x[..dim], &mut xs);
        self.gaussian_pass::<DIM>(&xs, s, false);
        s.c.copy_from_slice(&s.k);
        let mut logvol = 0.0;
        let mut dlogvol = vec![0.0; gd];
        for i in 0..npts {
            self.scale(&x[i * dim..(i + 1) * dim], &mut xs);
            let kmax = self.gaussian_pass::<DIM>(&xs, s, true);
            if self.jacobian && self.bound {
                logvol += self.log_volume_bound(s);
            } else if self.jacobian {
                logvol += self.log_volume::<DIM>(s, kmax, &mut dlogvol);
            }
        }
        self.finish_block(s, npts, logvol, dlogvol, nb)
    }

    fn scale(&self, x: &[f64], xs: &mut [f64]) {
        for ((o, v), il) in xs.iter_mut().zip(x).zip(&self.inv_ls) {
            *o = v * il;
        }
    }

    /// Step 1 for the scaled point `xs`: fills `s.u`, `s.q`, `s.k`, the Gram weights `s.w` and (with `accumulate`) adds the
    /// point's terms to the block sums. Returns `max_l k_l`.
    #[inline(always)]
    fn gaussian_pass<const DIM: usize>(&self, xs: &[f64], s: &mut Scratch, accumulate: bool) -> f64 {
        let (nb, dim) = (self.nb, if DIM == 0 { self.dim } else { DIM });
        let xs = &xs[..dim];
        let mut kmax = [0.0; W];
        for b in 0..nb {
            let mut q = [0.0; W];
            for (d, &xd) in xs.iter().enumerate() {
                let z = self.z[d * nb + b];
                let mut u = [0.0; W];
                for j in 0..W {
                    u[j] = xd - z[j];
                    q[j] = fma(u[j], u[j], q[j]);
                }
                s.u[d * nb + b] = u;
            }
            let (mask, mut k, mut w) = (self.mask[b], [0.0; W], [0.0; W]);
            for j in 0..W {
                k[j] = exp_nonpos(-0.5 * q[j]) * mask[j];
                kmax[j] = if k[j] > kmax[j] { k[j] } else { kmax[j] };
                w[j] = if k[j] > GRAM_MIN_WEIGHT { k[j] * k[j] } else { 0.0 };
            }
            s.k[b] = k;
            s.w[b] = w;
            s.q[b] = q;
            if accumulate {
                self.accumulate::<DIM>(s, b, &k, &q);
            }
        }
        kmax.iter().fold(0.0, |a, &b| if b > a { b } else { a })
    }

    /// The Gaussian-term sums of lane block `b`.
    #[inline(always)]
    fn accumulate<const DIM: usize>(&self, s: &mut Scratch, b: usize, k: &Lane, q: &Lane) {
        let nb = self.nb;
        let gd = if DIM != 0 && self.gd != 1 { DIM } else { self.gd };
        let (c, mut s1, mut s2) = (s.c[b], s.s1[b], s.s2[b]);
        let mut e = [0.0; W];
        for j in 0..W {
            e[j] = k[j] - c[j];
            s1[j] += e[j];
            s2[j] = fma(e[j], e[j], s2[j]);
        }
        s.s1[b] = s1;
        s.s2[b] = s2;
        if !self.gradient {
            return;
        }
        for g in 0..gd {
            let t = if gd == 1 { *q } else { sq(&s.u[g * nb + b]) };
            let (mut ds1, mut ds2) = (s.ds1[g * nb + b], s.ds2[g * nb + b]);
            for j in 0..W {
                let kt = k[j] * t[j];
                ds1[j] += kt;
                ds2[j] = fma(e[j], kt, ds2[j]);
            }
            s.ds1[g * nb + b] = ds1;
            s.ds2[g * nb + b] = ds2;
        }
    }

    /// `½ log det G` of the point in `s` (steps 2–3, or the fallback paths); adds
    /// `Σ_l p_l t_{l,g}` to `grad`.
    #[inline(always)]
    fn log_volume<const DIM: usize>(&self, s: &mut Scratch, kmax: f64, grad: &mut [f64]) -> f64 {
        if kmax >= GRAM_MIN_KMAX {
            if DIM == 0 {
                gram(&s.u, &s.w, self.nb, self.dim, &mut s.g);
            } else {
                gram_tile::<DIM, DIM>(&s.u, &s.w, self.nb, (0, 0), DIM, &mut s.g);
            }
            if let Some(half_logdet) = gram_factor(&mut s.g, self.dim, &mut s.rdiag, &mut s.col) {
                if self.gradient {
                    self.leverage_sums::<DIM>(s, grad);
                }
                return half_logdet;
            }
        }
        self.log_volume_fallback(s, grad)
    }

    /// An upper bound of `½ log det G` for the point in `s` at `O(m)` cost instead of `O(mD²)`: by
    /// the arithmetic–geometric mean inequality on the eigenvalues of `G`,
    /// `½ log det G ≤ ½ D log(tr G / D)`, with `tr G = Σ_l k_l² ‖u_l‖² = Σ_l e^{−q_l} q_l` summed
    /// shifted by `q_min = min_l q_l` (so it does not underflow where every `k_l` does). The terms
    /// [`exp_nonpos`] flushes to 0 are bounded by `e^{−700} q_max` each and added back, so the result
    /// bounds every path of [`Self::log_volume`], whose Gram path only drops weights. Tight where
    /// `G` is nearly isotropic (lengthscales above the landmark spacing), loose by the spread of
    /// the `D` nearest landmarks' distances where one landmark dominates; NaN for NaN data.
    fn log_volume_bound(&self, s: &Scratch) -> f64 {
        let (mut lo, mut hi) = ([f64::INFINITY; W], [0.0_f64; W]);
        for (q, mask) in s.q.iter().zip(&self.mask) {
            for j in 0..W {
                let real = mask[j] > 0.0;
                lo[j] = if real && q[j] < lo[j] { q[j] } else { lo[j] };
                hi[j] = if real && q[j] > hi[j] { q[j] } else { hi[j] };
            }
        }
        let q_min = lo.iter().fold(f64::INFINITY, |a, &b| a.min(b));
        let q_max = hi.iter().fold(0.0_f64, |a, &b| a.max(b));
        let mut acc = [0.0; W];
        for (q, mask) in s.q.iter().zip(&self.mask) {
            for j in 0..W {
                let x = if mask[j] > 0.0 { q_min - q[j] } else { -800.0 };
                acc[j] = fma(exp_nonpos(x), q[j] * mask[j], acc[j]);
            }
        }
        let flushed = self.m as f64 * (-700.0_f64).exp() * q_max;
        let d = self.dim as f64;
        0.5 * d * (((hsum(&acc) + flushed) / d).ln() - q_min)
    }

    /// `grad[g] += Σ_l p_l t_{l,g}` with `p_l = k_l² ‖L⁻¹ u_l‖²` (`s.g` holds `L`, `s.rdiag` `1/L_jj`):
    /// `y_l = L⁻¹u_l` by forward substitution, 8 rows at a time.
    #[inline(always)]
    fn leverage_sums<const DIM: usize>(&self, s: &mut Scratch, grad: &mut [f64]) {
        let (nb, dim) = (self.nb, self.dim);
        let gd = if DIM != 0 && self.gd != 1 { DIM } else { self.gd };
        s.lev.iter_mut().for_each(|a| *a = [0.0; W]);
        macro_rules! tile {
            ($ta:expr, $a0:expr; $($t:literal),*) => {
                match $ta {
                    $($t => leverage_tile::<$t>(&s.u, (&s.g, &s.rdiag), nb, dim, $a0, (&mut s.y, &mut s.lev)),)*
                    _ => unreachable!("tiles are at most 8 rows"),
                }
            };
        }
        if DIM != 0 {
            leverage_tile::<DIM>(&s.u, (&s.g, &s.rdiag), nb, DIM, 0, (&mut s.y, &mut s.lev));
        } else {
            for a0 in (0..dim).step_by(8) {
                tile!((dim - a0).min(8), a0; 1, 2, 3, 4, 5, 6, 7, 8);
            }
        }
        for (g, grad_g) in grad.iter_mut().enumerate().take(gd) {
            let mut acc = [0.0; W];
            for b in 0..nb {
                let (w, lev) = (s.w[b], s.lev[b]);
                let t = if gd == 1 { s.q[b] } else { sq(&s.u[g * nb + b]) };
                for j in 0..W {
                    acc[j] = fma(w[j] * lev[j], t[j], acc[j]);
                }
            }
            *grad_g += hsum(&acc);
        }
    }

    /// The Gram–Schmidt / Givens paths of `jacobian.rs` on compact copies of `u`, `q`, `k`.
    fn log_volume_fallback(&self, s: &mut Scratch, grad: &mut [f64]) -> f64 {
        let (m, nb, dim, gd) = (self.m, self.nb, self.dim, self.gd);
        let lane = |v: &[Lane], l: usize| v[l / W][l % W];
        for l in 0..m {
            s.qc[l] = lane(&s.q, l);
            s.kc[l] = lane(&s.k, l);
            for d in 0..dim {
                s.uc[d * m + l] = lane(&s.u[d * nb..], l);
            }
        }
        s.robust_grad.iter_mut().for_each(|v| *v = 0.0);
        let want_grad = self.gradient;
        let (v, fast) =
            log_volume_raw(&s.uc, &s.qc, &s.kc, m, dim, want_grad, &mut s.robust_grad, &mut s.jac);
        if !want_grad {
            return v;
        }
        if fast {
            let p = &s.jac.p[..m];
            for g in 0..gd {
                grad[g] += (0..m)
                    .map(|l| if gd == 1 { p[l] * s.qc[l] } else { p[l] * s.uc[g * m + l] * s.uc[g * m + l] })
                    .sum::<f64>();
            }
        } else if gd == 1 {
            grad[0] += s.robust_grad.iter().sum::<f64>();
        } else {
            grad.iter_mut().zip(&s.robust_grad).for_each(|(g, r)| *g += r);
        }
        v
    }

    /// Converts the shifted per-landmark sums of a block of `n` points into its [`PartialStats`].
    fn finish_block(&self, s: &Scratch, n: usize, logvol: f64, dlogvol: Vec<f64>, nb: usize) -> PartialStats {
        let (m, gd) = (self.m, self.gd);
        let nf = n as f64;
        let lane = |v: &[Lane], l: usize| v[l / W][l % W];
        let mut mean = vec![0.0; m];
        let mut m2 = 0.0;
        for l in 0..m {
            let s1 = lane(&s.s1, l);
            mean[l] = lane(&s.c, l) + s1 / nf;
            m2 += lane(&s.s2, l) - s1 * s1 / nf;
        }
        let mut dmean = vec![0.0; gd * m];
        let mut dm2 = vec![0.0; gd];
        for g in 0..gd {
            for l in 0..m {
                let ds1 = lane(&s.ds1[g * nb..], l);
                dmean[g * m + l] = ds1 / nf;
                dm2[g] += 2.0 * (lane(&s.ds2[g * nb..], l) - lane(&s.s1, l) * ds1 / nf);
            }
        }
        PartialStats { n, m, gd, mean, dmean, m2: m2.max(0.0), dm2, log_volume: logvol, dlog_volume: dlogvol }
    }
}

/// `v²` lane-wise.
#[inline(always)]
fn sq(v: &Lane) -> Lane {
    let mut o = [0.0; W];
    for j in 0..W {
        o[j] = v[j] * v[j];
    }
    o
}

/// Per-task buffers, reused for every point of a block.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    u: Vec<Lane>,
    q: Vec<Lane>,
    k: Vec<Lane>,
    w: Vec<Lane>,
    c: Vec<Lane>,
    s1: Vec<Lane>,
    s2: Vec<Lane>,
    ds1: Vec<Lane>,
    ds2: Vec<Lane>,
    lev: Vec<Lane>,
    y: Vec<Lane>,
    g: Vec<f64>,
    rdiag: Vec<f64>,
    col: Vec<f64>,
    uc: Vec<f64>,
    qc: Vec<f64>,
    kc: Vec<f64>,
    robust_grad: Vec<f64>,
    jac: JacScratch,
}

impl Scratch {
    /// Sizes the buffers for `lm` and zeroes the block sums.
    fn prepare(&mut self, lm: &Landmarks) {
        let (m, nb, dim, gd) = (lm.m, lm.nb, lm.dim, lm.gd);
        let lanes = |v: &mut Vec<Lane>, len: usize| {
            v.clear();
            v.resize(len, [0.0; W]);
        };
        for v in
            [&mut self.q, &mut self.k, &mut self.w, &mut self.c, &mut self.s1, &mut self.s2, &mut self.lev]
        {
            lanes(v, nb);
        }
        lanes(&mut self.u, dim * nb);
        lanes(&mut self.y, dim * nb);
        lanes(&mut self.ds1, gd * nb);
        lanes(&mut self.ds2, gd * nb);
        self.g.resize(dim * dim, 0.0);
        self.rdiag.resize(dim, 0.0);
        self.col.resize(dim, 0.0);
        self.uc.resize(dim * m, 0.0);
        self.qc.resize(m, 0.0);
        self.kc.resize(m, 0.0);
        self.robust_grad.resize(dim, 0.0);
    }
}

/// Rows `a0..a0+TA` of `y = L⁻¹u` by forward substitution for every lane block `b` (rows `< a0`
/// already in `y`), and `lev_b += Σ_a y_a²`. The `TA` rows are independent FMA chains sharing each
/// load of `y_c`, `c < a0`; inside the tile the substitution is sequential.
#[inline(always)]
fn leverage_tile<const TA: usize>(
    u: &[Lane],
    (l, rdiag): (&[f64], &[f64]),
    nb: usize,
    dim: usize,
    a0: usize,
    (y, lev): (&mut [Lane], &mut [Lane]),
) {
    for b in 0..nb {
        let mut acc = [[0.0; W]; TA];
        for (i, ai) in acc.iter_mut().enumerate() {
            *ai = u[(a0 + i) * nb + b];
        }
        for c in 0..a0 {
            let yc = y[c * nb + b];
            for (i, ai) in acc.iter_mut().enumerate() {
                let lv = l[(a0 + i) * dim + c];
                for j in 0..W {
                    ai[j] = fma(-lv, yc[j], ai[j]);
                }
            }
        }
        let mut lv_b = lev[b];
        for i in 0..TA {
            let r = rdiag[a0 + i];
            let mut yi = [0.0; W];
            for j in 0..W {
                yi[j] = acc[i][j] * r;
                lv_b[j] = fma(yi[j], yi[j], lv_b[j]);
            }
            for i2 in 0..TA {
                if i2 > i {
                    let lv = l[(a0 + i2) * dim + a0 + i];
                    for j in 0..W {
                        acc[i2][j] = fma(-lv, yi[j], acc[i2][j]);
                    }
                }
            }
            y[(a0 + i) * nb + b] = yi;
        }
        lev[b] = lv_b;
    }
}

/// One tile `G[a0..a0+TA, b0..b0+TB] = Σ_l w_l u_{l,a} u_{l,b}` with `TA · TB` lane accumulators.
#[inline(always)]
fn gram_tile<const TA: usize, const TB: usize>(
    u: &[Lane],
    w: &[Lane],
    nb: usize,
    (a0, b0): (usize, usize),
    dim: usize,
    g: &mut [f64],
) {
    let mut acc = [[[0.0; W]; TB]; TA];
    for blk in 0..nb {
        let mut wa = [[0.0; W]; TA];
        for i in 0..TA {
            let ua = &u[(a0 + i) * nb + blk];
            for j in 0..W {
                wa[i][j] = w[blk][j] * ua[j];
            }
        }
        for t in 0..TB {
            let ub = &u[(b0 + t) * nb + blk];
            for i in 0..TA {
                for j in 0..W {
                    acc[i][t][j] = fma(wa[i][j], ub[j], acc[i][t][j]);
                }
            }
        }
    }
    for i in 0..TA {
        for t in 0..TB {
            g[(a0 + i) * dim + b0 + t] = hsum(&acc[i][t]);
        }
    }
}

/// The lower triangle (row-major, `g[a·D + b]`, `a ≥ b`) of `G = Σ_l w_l u_l u_lᵀ`, by 4 × 4 tiles.
fn gram(u: &[Lane], w: &[Lane], nb: usize, dim: usize, g: &mut [f64]) {
    macro_rules! tile {
        ($ta:expr, $tb:expr, $at:expr; $($a:literal $b:literal),*) => {
            match ($ta, $tb) {
                $(($a, $b) => gram_tile::<$a, $b>(u, w, nb, $at, dim, g),)*
                _ => unreachable!("tiles are at most 4 × 4"),
            }
        };
    }
    for a0 in (0..dim).step_by(4) {
        for b0 in (0..=a0).step_by(4) {
            let (ta, tb) = ((dim - a0).min(4), (dim - b0).min(4));
            tile!(ta, tb, (a0, b0); 1 1, 1 2, 1 3, 1 4, 2 1, 2 2, 2 3, 2 4, 3 1, 3 2, 3 3, 3 4, 4 1, 4 2, 4 3, 4 4);
        }
    }
}
