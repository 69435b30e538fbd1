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
//!    `k_l = exp(−q_l/2)` (the SIMD `exp` of `simd.rs`), and the per-landmark sums of the block,
//!    shifted by the block's first point `c_l` (so the centred sum of squares never cancels):
//!    `Σ(k−c)`, `Σ(k−c)²`, `Σ k t_g`, `Σ (k−c) k t_g` with `t_g = u_{l,g}²` (ARD) or `q_l`
//!    (one lengthscale: only the sum over dimensions of the gradient is needed, a `D`-fold saving).
//!    The differences are formed explicitly rather than as `‖x̃‖² + ‖z̃‖² − 2x̃ᵀz̃`: the gradient and
//!    the Jacobian need every `u_{l,d}` anyway, and the explicit form has no cancellation when the
//!    data sit far from the origin in units of `θ`.
//! 2. *Jacobian Gram* `G = Σ_l k_l² u_l u_lᵀ` (`D × D`, see `jacobian.rs`): a register-tiled
//!    weighted SYRK over the stored `u` (4 × 4 tiles of lane accumulators, `D²m` flops).
//! 3. *Leverages* `p_l = k_l² ‖L⁻¹u_l‖²` from the Cholesky factor `G = LLᵀ` and the gradient sums
//!    `Σ_l p_l t_{l,g}` (`D²m/2` flops).
//!
//! Points where the Gram path is not accurate (tiny weights, a nearly singular `G`: see
//! [`super::jacobian::gram_factor`]) take the Gram–Schmidt or log-scaled Givens path of
//! `jacobian.rs`, per point. Every sum runs in a fixed order, so a block's result does not depend on
//! the thread that computes it.

use super::jacobian::{GRAM_MIN_KMAX, GRAM_MIN_WEIGHT, JacScratch, gram_factor, log_volume_raw, tri_inverse};
use super::marginal::PartialStats;
use super::simd::{Lane, V, W, exp_v};

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
        Self { z: zl, mask, inv_ls, m, nb, dim, gd: if ard { dim } else { 1 }, jacobian }
    }

    /// The sums of one block of points (row-major, at least one point). The per-point kernels are
    /// monomorphised for `D = 1, 2, 3` (loops over dimensions unrolled, the Jacobian moments fused
    /// into the first pass) and for one lengthscale or ARD; larger `D` take the generic two-pass path.
    pub(crate) fn block(&self, x: &[f64], s: &mut Scratch) -> PartialStats {
        let iso = self.gd == 1;
        match (self.dim, iso) {
            (1, _) => self.block_d::<1, true>(x, s),
            (2, true) => self.block_d::<2, true>(x, s),
            (2, false) => self.block_d::<2, false>(x, s),
            (3, true) => self.block_d::<3, true>(x, s),
            (3, false) => self.block_d::<3, false>(x, s),
            (_, true) => self.block_d::<0, true>(x, s),
            (_, false) => self.block_d::<0, false>(x, s),
        }
    }

    /// [`Landmarks::block`] for `D` known at compile time (`0`: read from `self`); `ISO`: one
    /// gradient coordinate.
    #[inline(always)]
    fn block_d<const D: usize, const ISO: bool>(&self, x: &[f64], s: &mut Scratch) -> PartialStats {
        let (dim, gd) = (self.dim, self.gd);
        debug_assert!((D == 0 || D == dim) && ISO == (gd == 1));
        s.prepare(self);
        let npts = x.len() / dim;
        let mut xs = vec![0.0; dim];
        self.scale(&x[..dim], &mut xs);
        self.point_pass::<D, ISO>(&xs, s, false);
        s.c.copy_from_slice(&s.k);
        let mut logvol = 0.0;
        let mut dlogvol = vec![0.0; gd];
        for i in 0..npts {
            self.scale(&x[i * dim..(i + 1) * dim], &mut xs);
            let (kmax, moments) = self.point_pass::<D, ISO>(&xs, s, true);
            if !self.jacobian {
                continue;
            }
            logvol += match moments.filter(|_| kmax >= GRAM_MIN_KMAX).and_then(|mo| mo.finish::<D, ISO>(&mut dlogvol)) {
                Some(v) => v,
                None if D == 0 => self.log_volume(s, kmax, &mut dlogvol),
                None => self.log_volume_fallback(s, &mut dlogvol),
            };
        }
        self.finish_block(s, npts, logvol, dlogvol)
    }

    fn scale(&self, x: &[f64], xs: &mut [f64]) {
        for ((o, v), il) in xs.iter_mut().zip(x).zip(&self.inv_ls) {
            *o = v * il;
        }
    }

    /// Step 1 for the scaled point `xs`: fills `s.u`, `s.q`, `s.k` and (with `accumulate`) adds the
    /// point's terms to the block sums. Returns `max_l k_l` and, for `D ≤ 3` with the Jacobian,
    /// the point's Jacobian moments (steps 2–3 fused into this pass).
    #[inline(always)]
    fn point_pass<const D: usize, const ISO: bool>(
        &self,
        xs: &[f64],
        s: &mut Scratch,
        accumulate: bool,
    ) -> (f64, Option<Moments>) {
        let nb = self.nb;
        let gd = if ISO { 1 } else { self.gd };
        let dim = if D == 0 { self.dim } else { D };
        let fused = D > 0 && accumulate && self.jacobian;
        let mut mo = Moments::default();
        let mut kmax = V::zero();
        // Slices in locals: stores through one cannot make the compiler reload the others' headers.
        let Scratch { u: su, q: sq_, k: sk, c: sc, s1: ss1, s2: ss2, ds1: sds1, ds2: sds2, .. } = s;
        let (su, sq_, sk, sc) = (&mut su[..], &mut sq_[..], &mut sk[..], &sc[..]);
        let (ss1, ss2, sds1, sds2) = (&mut ss1[..], &mut ss2[..], &mut sds1[..], &mut sds2[..]);
        let (zl, mask) = (&self.z[..], &self.mask[..]);
        for b in 0..nb {
            let mut q = V::zero();
            let mut u = [V::zero(); 3];
            for d in 0..dim {
                let ud = V::splat(xs[d]).sub(V::load(&zl[d * nb + b]));
                ud.store(&mut su[d * nb + b]);
                if D > 0 {
                    u[d] = ud;
                }
                q = ud.fma(ud, q);
            }
            let k = exp_v(q.mul(V::splat(-0.5))).mul(V::load(&mask[b]));
            kmax = kmax.max(k);
            k.store(&mut sk[b]);
            q.store(&mut sq_[b]);
            if !accumulate {
                continue;
            }
            let e = k.sub(V::load(&sc[b]));
            e.add(V::load(&ss1[b])).store(&mut ss1[b]);
            e.fma(e, V::load(&ss2[b])).store(&mut ss2[b]);
            for g in 0..gd {
                let t = if ISO {
                    q
                } else if D > 0 {
                    u[g].mul(u[g])
                } else {
                    sq(&su[g * nb + b])
                };
                let (ds1, ds2) = (&mut sds1[g * nb + b], &mut sds2[g * nb + b]);
                let kt = k.mul(t);
                kt.add(V::load(ds1)).store(ds1);
                e.fma(kt, V::load(ds2)).store(ds2);
            }
            if fused {
                mo.add::<D, ISO>(&u, q, k);
            }
        }
        let mut lanes = [0.0; W];
        kmax.store(&mut lanes);
        (lanes.iter().fold(0.0, |a, &b| if b > a { b } else { a }), fused.then_some(mo))
    }

    /// `½ log det G` of the point in `s` by the generic two-pass path (steps 2–3 over the stored
    /// `u`, `k`, or the fallback paths); adds `Σ_l p_l t_{l,g}` to `grad`.
    fn log_volume(&self, s: &mut Scratch, kmax: f64, grad: &mut [f64]) -> f64 {
        if kmax >= GRAM_MIN_KMAX {
            for (w, k) in s.w.iter_mut().zip(&s.k) {
                let k = V::load(k);
                k.mul(k).zero_below(k, GRAM_MIN_WEIGHT).store(w);
            }
            gram(&s.u, &s.w, self.nb, self.dim, &mut s.g);
            if let Some(half_logdet) = gram_factor(&mut s.g, self.dim) {
                self.leverage_sums(s, grad);
                return half_logdet;
            }
        }
        self.log_volume_fallback(s, grad)
    }

    /// `grad[g] += Σ_l p_l t_{l,g}` with `p_l = k_l² ‖L⁻¹ u_l‖²` (`s.g` holds the factor `L`).
    /// `y = L⁻¹u` by forward substitution, four rows at a time: four independent chains of fused
    /// multiply-adds per loaded `y_c`, and no `D × D` inverse.
    fn leverage_sums(&self, s: &mut Scratch, grad: &mut [f64]) {
        let (nb, dim, gd) = (self.nb, self.dim, self.gd);
        for (d, (nl, inv)) in s.neg_l.chunks_exact_mut(dim).zip(s.inv_diag.iter_mut()).enumerate() {
            for (o, v) in nl.iter_mut().zip(&s.g[d * dim..(d + 1) * dim]) {
                *o = -v;
            }
            *inv = 1.0 / s.g[d * dim + d];
        }
        let (nl, inv, u, y) = (&s.neg_l[..], &s.inv_diag[..], &s.u[..], &mut s.y[..]);
        for b in 0..nb {
            let mut lev = V::zero();
            for a0 in (0..dim).step_by(4) {
                let rows = (dim - a0).min(4);
                let mut acc: [V; 4] = std::array::from_fn(|i| if i < rows { V::load(&u[(a0 + i) * nb + b]) } else { V::zero() });
                for c in 0..a0 {
                    let yc = V::load(&y[c]);
                    for (i, ai) in acc.iter_mut().enumerate().take(rows) {
                        *ai = V::splat(nl[(a0 + i) * dim + c]).fma(yc, *ai);
                    }
                }
                for i in 0..rows {
                    let a = a0 + i;
                    for c in a0..a {
                        acc[i] = V::splat(nl[a * dim + c]).fma(V::load(&y[c]), acc[i]);
                    }
                    let ya = acc[i].mul(V::splat(inv[a]));
                    ya.store(&mut y[a]);
                    lev = ya.fma(ya, lev);
                }
            }
            V::load(&s.w[b]).mul(lev).store(&mut s.p[b]);
        }
        for (g, gr) in grad.iter_mut().enumerate().take(gd) {
            let mut acc = V::zero();
            for b in 0..nb {
                let t = if gd == 1 { V::load(&s.q[b]) } else { sq(&s.u[g * nb + b]) };
                acc = V::load(&s.p[b]).fma(t, acc);
            }
            *gr += acc.sum();
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
        let (v, fast) = log_volume_raw(&s.uc, &s.qc, &s.kc, m, dim, true, &mut s.robust_grad, &mut s.jac);
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
    fn finish_block(&self, s: &Scratch, n: usize, logvol: f64, dlogvol: Vec<f64>) -> PartialStats {
        let (m, nb, gd) = (self.m, self.nb, self.gd);
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

/// Lane accumulators of the Jacobian moments of one point for `D ≤ 3`:
/// `G = Σ_l w_l u_l u_lᵀ` and `H_g = Σ_l w_l t_{l,g} u_l u_lᵀ` (`w_l = k_l²`, `t = q` or `u_g²`),
/// lower triangles packed (`(a, b)`, `a ≥ b`, at `a(a+1)/2 + b`). Then
/// `Σ_l p_l t_{l,g} = Σ_l w_l t_{l,g} u_lᵀ G⁻¹ u_l = tr(G⁻¹ H_g)`: one pass over the landmarks
/// instead of two.
#[derive(Clone, Copy, Default)]
struct Moments {
    g: [V; 6],
    h: [[V; 6]; 3],
}

impl Default for V {
    fn default() -> V {
        V::zero()
    }
}

impl Moments {
    /// Adds lane block `(u, q, k)`.
    #[inline(always)]
    fn add<const D: usize, const ISO: bool>(&mut self, u: &[V; 3], q: V, k: V) {
        let w = k.mul(k).zero_below(k, GRAM_MIN_WEIGHT);
        let gd = if ISO { 1 } else { D };
        for a in 0..D {
            let wa = w.mul(u[a]);
            for b in 0..=a {
                let i = a * (a + 1) / 2 + b;
                self.g[i] = wa.fma(u[b], self.g[i]);
            }
        }
        for g in 0..gd {
            let wt = if ISO { w.mul(q) } else { w.mul(u[g]).mul(u[g]) };
            for a in 0..D {
                let wta = wt.mul(u[a]);
                for b in 0..=a {
                    let i = a * (a + 1) / 2 + b;
                    self.h[g][i] = wta.fma(u[b], self.h[g][i]);
                }
            }
        }
    }

    /// `½ log det G`, and `grad[g] += tr(G⁻¹ H_g)`; `None` where [`gram_factor`] rejects `G`.
    #[inline(always)]
    fn finish<const D: usize, const ISO: bool>(&self, grad: &mut [f64]) -> Option<f64> {
        let gd = if ISO { 1 } else { D };
        let (mut g, mut linv) = ([0.0; 9], [0.0; 9]);
        for a in 0..D {
            for b in 0..=a {
                g[a * D + b] = self.g[a * (a + 1) / 2 + b].sum();
            }
        }
        let half_logdet = gram_factor(&mut g[..D * D], D)?;
        tri_inverse(&g[..D * D], D, &mut linv[..D * D]);
        // G⁻¹ = L⁻ᵀ L⁻¹, lower triangle.
        let mut ginv = [0.0; 9];
        for a in 0..D {
            for b in 0..=a {
                ginv[a * D + b] = (a..D).map(|c| linv[c * D + a] * linv[c * D + b]).sum();
            }
        }
        for (gg, gr) in grad.iter_mut().enumerate().take(gd) {
            let mut tr = 0.0;
            for a in 0..D {
                for b in 0..=a {
                    let h = self.h[gg][a * (a + 1) / 2 + b].sum();
                    tr += if a == b { 1.0 } else { 2.0 } * ginv[a * D + b] * h;
                }
            }
            *gr += tr;
        }
        Some(half_logdet)
    }
}

/// `v²` lane-wise.
#[inline(always)]
fn sq(v: &Lane) -> V {
    let v = V::load(v);
    v.mul(v)
}

/// Per-task buffers, reused for every point of a block.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    u: Vec<Lane>,
    q: Vec<Lane>,
    k: Vec<Lane>,
    w: Vec<Lane>,
    p: Vec<Lane>,
    c: Vec<Lane>,
    s1: Vec<Lane>,
    s2: Vec<Lane>,
    ds1: Vec<Lane>,
    ds2: Vec<Lane>,
    g: Vec<f64>,
    neg_l: Vec<f64>,
    inv_diag: Vec<f64>,
    y: Vec<Lane>,
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
        for v in [&mut self.q, &mut self.k, &mut self.w, &mut self.p, &mut self.c, &mut self.s1, &mut self.s2] {
            lanes(v, nb);
        }
        lanes(&mut self.u, dim * nb);
        lanes(&mut self.ds1, gd * nb);
        lanes(&mut self.ds2, gd * nb);
        self.g.resize(dim * dim, 0.0);
        self.neg_l.resize(dim * dim, 0.0);
        self.inv_diag.resize(dim, 0.0);
        lanes(&mut self.y, dim);
        self.uc.resize(dim * m, 0.0);
        self.qc.resize(m, 0.0);
        self.kc.resize(m, 0.0);
        self.robust_grad.resize(dim, 0.0);
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
    let mut acc = [[V::zero(); TB]; TA];
    for blk in 0..nb {
        let wl = V::load(&w[blk]);
        let wa: [V; TA] = std::array::from_fn(|i| wl.mul(V::load(&u[(a0 + i) * nb + blk])));
        for t in 0..TB {
            let ub = V::load(&u[(b0 + t) * nb + blk]);
            for i in 0..TA {
                acc[i][t] = wa[i].fma(ub, acc[i][t]);
            }
        }
    }
    for i in 0..TA {
        for t in 0..TB {
            g[(a0 + i) * dim + b0 + t] = acc[i][t].sum();
        }
    }
}

/// The lower triangle (row-major, `g[a·D + b]`, `a ≥ b`) of `G = Σ_l w_l u_l u_lᵀ`, by 4 × 4 tiles.
#[inline(always)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The fused kernels of `D ≤ 3` against the generic two-pass path on the same block.
    #[test]
    fn fused_and_generic_kernels_agree() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for dim in 1..=3 {
            for ard in [false, true] {
                for theta in [0.2, 0.9, 3.0] {
                    let x: Vec<f64> = (0..300 * dim).map(|_| rng.random_range(-2.0..2.0)).collect();
                    let z: Vec<f64> = (0..19 * dim).map(|_| rng.random_range(-2.0..2.0)).collect();
                    let ls: Vec<f64> = (0..dim).map(|d| theta * (1.0 + 0.2 * d as f64)).collect();
                    let lm = Landmarks::new(&z, dim, &ls, ard, true);
                    let mut s = Scratch::default();
                    let fused = lm.block(&x, &mut s);
                    let generic =
                        if ard { lm.block_d::<0, false>(&x, &mut s) } else { lm.block_d::<0, true>(&x, &mut s) };
                    let close = |a: f64, b: f64| (a - b).abs() <= 1e-11 * b.abs().max(1.0);
                    assert!(close(fused.log_volume, generic.log_volume), "D={dim} θ={theta}");
                    for (a, b) in fused.dlog_volume.iter().zip(&generic.dlog_volume) {
                        assert!(close(*a, *b), "D={dim} θ={theta} ard={ard}: {a} vs {b}");
                    }
                    assert_eq!(fused.mean, generic.mean);
                    assert!(close(fused.m2, generic.m2));
                }
            }
        }
    }
}
