//! The Laplace approximation of one frequency's two weights (or of the intercept alone) given the
//! rest of the linear predictor, the proposal of BaNK's joint `(W_j, β_j)` move (seed 001 eq. (15)).
//!
//! With offset `o` (the linear predictor without the `k ≤ 2` weights `b`), columns `c_1, …, c_k` and
//! prior `b ~ N(0, s² I)`, the target is
//! `F(b) = ℓ(η) − ‖b‖²/(2s²)`, `η = o + Σ_a b_a c_a`, `ℓ(η) = Σ_i [y_i η_i − log(1 + e^{η_i})]`,
//! with gradient `g_a = Σ_i (y_i − σ(η_i)) c_{a,i} − b_a/s²` and negative Hessian
//! `H_ab = Σ_i σ(η_i)(1 − σ(η_i)) c_{a,i} c_{b,i} + δ_ab/s²`.
//!
//! **One pass per Newton step.** [`pass`] returns `g` and `H` (and `F` on request) together from
//! one exponential per row: with `e = exp(−|η|)`, `σ(η) = 1/(1 + e)` (`η ≥ 0`) or `e/(1 + e)`, and,
//! when `F` is wanted, `log(1 + e^η) = max(η, 0) + log(1 + e)` (one logarithm more). Both are the
//! branch-free, vectorisable forms of `bke_core::simd` (within 2 ulp of libm), evaluated for blocks
//! of rows at a time. Damped Newton ([`Laplace::fit`]) decides its steps from gradients alone, so it
//! never needs `F`, and an accepted step's pass already holds the next gradient and Hessian. The two
//! fits of a frequency move start at `b = 0` from the same offset, so their first passes share
//! their exponentials ([`Laplace::fit_pair`]).
//!
//! **Deterministic in parallel.** Rows are cut into fixed chunks of [`CHUNK`] rows whose partial sums
//! are added in chunk order, so the result does not depend on the thread count; the chunks run in
//! parallel from [`PARALLEL_CHUNKS`] of them, and below that the two fits of a frequency move run in
//! parallel with each other.

use bke_core::numeric::LN_2PI;
use rand::Rng;
use rand_distr::StandardNormal;
use rayon::prelude::*;

/// Rows per chunk of a pass (fixed, so sums do not depend on the thread count).
pub const CHUNK: usize = 2048;

/// Chunks from which a pass runs them in parallel. A chunk is a few microseconds of work, about what
/// waking a sleeping thread costs, and a frequency move makes several passes in sequence: below
/// this the passes run on the calling thread and the move's two fits run in parallel instead
/// ([`Laplace::fit_pair`]), one join per move (`cargo xtask bench bank`, classification rows).
pub const PARALLEL_CHUNKS: usize = 8;

/// Partial sums of one pass: `ℓ`, `∇ℓ` and `−∇²ℓ` (lower triangle `h00, h10, h11`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pass {
    /// `ℓ(η)` (or `F(b)` once the prior is added).
    pub f: f64,
    /// Gradient.
    pub g: [f64; 2],
    /// Negative Hessian, lower triangle `[h00, h10, h11]`.
    pub h: [f64; 3],
}

impl Pass {
    fn add(mut self, o: Pass) -> Pass {
        self.f += o.f;
        for a in 0..2 {
            self.g[a] += o.g[a];
        }
        for a in 0..3 {
            self.h[a] += o.h[a];
        }
        self
    }
}

/// Rows per lane block of a pass: the exponentials of a block are independent, so the compiler
/// vectorises them ([`bke_core::simd::exp_nonpos`], [`bke_core::simd::ln_1p_unit`]).
const LANES: usize = 8;

/// Lane-wise partial sums of a pass, added in a fixed order at the end.
#[derive(Default)]
struct LaneSums {
    f: [f64; LANES],
    g: [[f64; LANES]; 2],
    h: [[f64; LANES]; 3],
}

impl LaneSums {
    fn total(&self) -> Pass {
        let sum = |v: &[f64; LANES]| v.iter().sum::<f64>();
        Pass {
            f: sum(&self.f),
            g: [sum(&self.g[0]), sum(&self.g[1])],
            h: [sum(&self.h[0]), sum(&self.h[1]), sum(&self.h[2])],
        }
    }
}

/// Two columns of a pass; a single column is `[c, c]`, its weights `[b, 0]`.
type Pair<'a> = [&'a [f64]; 2];

/// One pass over `rows` in blocks of [`LANES`] rows at `η = o + b₀c₀ + b₁c₁` (`c` the first pair of
/// `pairs`): per block the `η`, then `e = exp(−|η|)` (vectorised), then `σ(η) = 1/(1 + e)` or
/// `e/(1 + e)`, `σ(1 − σ) = e/(1 + e)²` and the sums of every pair of `pairs` at that `η` (with
/// `b = 0` both fits of a frequency move start from the same `η = o`); `ℓ` when `with_value`, with
/// `log(1 + e^η) = max(η, 0) + log(1 + e)`. A last partial block is padded with rows of weight 0.
fn pass_rows<const P: usize>(
    y: &[f64],
    o: &[f64],
    pairs: &[Pair<'_>; P],
    b: &[f64; 2],
    rows: std::ops::Range<usize>,
    with_value: bool,
) -> [Pass; P] {
    debug_assert!(P == 1 || (*b == [0.0; 2] && !with_value), "several pairs share η only at b = 0");
    let mut sums: [LaneSums; P] = std::array::from_fn(|_| LaneSums::default());
    let mut start = rows.start;
    while start < rows.end {
        let len = LANES.min(rows.end - start);
        let (mut eta, mut yy) = ([0.0; LANES], [0.0; LANES]);
        let mut cols = [[[0.0; LANES]; 2]; P];
        for l in 0..len {
            let i = start + l;
            yy[l] = y[i];
            eta[l] = o[i] + pairs[0][0][i] * b[0] + pairs[0][1][i] * b[1];
            for (c, pair) in cols.iter_mut().zip(pairs) {
                c[0][l] = pair[0][i];
                c[1][l] = pair[1][i];
            }
        }
        let mut e = [0.0; LANES];
        for l in 0..LANES {
            e[l] = bke_core::simd::exp_nonpos(-eta[l].abs());
        }
        let (mut r, mut w) = ([0.0; LANES], [0.0; LANES]);
        for l in 0..LANES {
            let inv = 1.0 / (1.0 + e[l]);
            let p = if eta[l] >= 0.0 { inv } else { e[l] * inv };
            (r[l], w[l]) = (yy[l] - p, e[l] * inv * inv);
        }
        for (s, [c0, c1]) in sums.iter_mut().zip(&cols) {
            for l in 0..LANES {
                s.g[0][l] += r[l] * c0[l];
                s.g[1][l] += r[l] * c1[l];
                s.h[0][l] += w[l] * c0[l] * c0[l];
                s.h[1][l] += w[l] * c1[l] * c0[l];
                s.h[2][l] += w[l] * c1[l] * c1[l];
            }
        }
        if with_value {
            let mut sp = [0.0; LANES];
            for l in 0..LANES {
                sp[l] = eta[l].max(0.0) + bke_core::simd::ln_1p_unit(e[l]);
            }
            for l in 0..len {
                sums[0].f[l] += yy[l] * eta[l] - sp[l];
            }
        }
        start += len;
    }
    std::array::from_fn(|k| sums[k].total())
}

/// The passes of [`pass_rows`] over all rows, in fixed chunks of [`CHUNK`] rows added in chunk order.
fn chunked<const P: usize>(
    y: &[f64],
    o: &[f64],
    pairs: &[Pair<'_>; P],
    b: &[f64; 2],
    with_value: bool,
) -> [Pass; P] {
    let n = y.len();
    let chunks = n.div_ceil(CHUNK).max(1);
    let chunk = |c: usize| pass_rows(y, o, pairs, b, c * CHUNK..((c + 1) * CHUNK).min(n), with_value);
    let parts: Vec<[Pass; P]> = if chunks < PARALLEL_CHUNKS {
        (0..chunks).map(chunk).collect()
    } else {
        (0..chunks).into_par_iter().map(chunk).collect()
    };
    parts.into_iter().fold([Pass::default(); P], |acc, p| std::array::from_fn(|k| acc[k].add(p[k])))
}

/// `cols` (one or two columns) as a [`Pair`] and the weights of the pass (`[b₀, 0]` for one column).
fn as_pair<'a>(cols: &[&'a [f64]], b: &[f64; 2]) -> (Pair<'a>, [f64; 2]) {
    assert!(matches!(cols.len(), 1 | 2), "a pass takes one or two columns, not {}", cols.len());
    if cols.len() == 2 { ([cols[0], cols[1]], *b) } else { ([cols[0], cols[0]], [b[0], 0.0]) }
}

/// Adds the prior `N(0, s² I)` of the `k` weights to a pass's sums and clears the second
/// coordinate for `k = 1`.
fn with_prior(mut s: Pass, k: usize, b: &[f64; 2], s2: f64) -> Pass {
    if k == 1 {
        s.g[1] = 0.0;
        s.h[1] = 0.0;
        s.h[2] = 0.0;
    }
    for a in 0..k {
        s.f -= b[a] * b[a] / (2.0 * s2);
        s.g[a] -= b[a] / s2;
    }
    s.h[0] += 1.0 / s2;
    if k == 2 {
        s.h[2] += 1.0 / s2;
    }
    s
}

/// `F(b)`, its gradient and negative Hessian (module docs) for `k = cols.len() ∈ {1, 2}` columns;
/// without `with_value` the returned `f` holds only the prior term (no logarithms are taken).
pub fn pass(y: &[f64], o: &[f64], cols: &[&[f64]], b: &[f64; 2], s2: f64, with_value: bool) -> Pass {
    let (pair, bp) = as_pair(cols, b);
    let [s] = chunked(y, o, &[pair], &bp, with_value);
    with_prior(s, cols.len(), b, s2)
}

/// The passes at `b = 0` of two pairs of columns with the same offset (the starts of both fits of a
/// frequency move): one exponential per row for both.
fn passes_at_zero(y: &[f64], o: &[f64], first: Pair<'_>, second: Pair<'_>, s2: f64) -> [Pass; 2] {
    let [a, b] = chunked(y, o, &[first, second], &[0.0; 2], false);
    [with_prior(a, 2, &[0.0; 2], s2), with_prior(b, 2, &[0.0; 2], s2)]
}

/// `ℓ(o + Σ_a b_a c_a) = Σ_i y_i η_i − log(1 + e^{η_i})` for `k ≤ 2` columns (with columns chunked
/// like [`pass`]; `log(1 + e^η) = max(η, 0) + log(1 + e^{−|η|})` in both cases).
pub fn log_likelihood(y: &[f64], o: &[f64], cols: &[&[f64]], b: &[f64]) -> f64 {
    if cols.is_empty() {
        return crate::logistic::log_likelihood(y, o);
    }
    let bb = [b[0], if cols.len() == 2 { b[1] } else { 0.0 }];
    let (pair, bp) = as_pair(cols, &bb);
    chunked(y, o, &[pair], &bp, true)[0].f
}

/// A Gaussian (Laplace) approximation `N(mode, H⁻¹)` in `k ≤ 2` dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Laplace {
    /// Dimension (1 or 2).
    pub k: usize,
    /// Mode.
    pub mode: [f64; 2],
    /// Lower Cholesky factor of the negative Hessian `H` (row-major 2 × 2).
    pub chol: [f64; 4],
}

impl Laplace {
    /// The Laplace approximation of `p(b | …) ∝ exp(ℓ(o + Σ b_k col_k)) N(b | 0, s² I)`, by damped
    /// Newton from `b = 0` (at most `iters` steps), stopping when the Newton decrement `gᵀH⁻¹g` falls
    /// below `10⁻¹⁴ max(1, N)`; `H` is taken at the final `b`.
    ///
    /// **Step rule.** A step `t δ` (`δ = H⁻¹g`, `t = 1, ½, ¼, …`, at most 30 halvings) is taken when
    /// the directional derivative at the candidate, `φ′(t) = g(b + tδ)ᵀδ`, is at least `−½ φ′(0)`:
    /// the objective is concave along the line, so `φ′` has not turned far past the line's maximum
    /// (for a quadratic `φ(t) − φ(0) = t(φ′(0) + φ′(t))/2 > 0`). The rule needs gradients only, so
    /// a step costs one exponential per row and no logarithm. The fit is a deterministic function of
    /// `(y, o, cols, s2, iters)`, which is all an MH move needs of its proposal: the step rule
    /// affects how close the proposal sits to the posterior, never the chain's correctness.
    pub fn fit(y: &[f64], o: &[f64], cols: &[&[f64]], s2: f64, iters: usize) -> Laplace {
        Self::fit_from(y, o, cols, s2, iters, pass(y, o, cols, &[0.0; 2], s2, false))
    }

    /// [`Laplace::fit`] for two pairs of columns with the same offset (the current and the proposed
    /// features of a frequency move): the same two approximations, their first passes (at `b = 0`)
    /// taken together.
    pub fn fit_pair(
        y: &[f64],
        o: &[f64],
        first: [&[f64]; 2],
        second: [&[f64]; 2],
        s2: f64,
        iters: usize,
    ) -> [Laplace; 2] {
        let [a, b] = passes_at_zero(y, o, first, second, s2);
        let (a, b) = rayon::join(
            || Self::fit_from(y, o, &first, s2, iters, a),
            || Self::fit_from(y, o, &second, s2, iters, b),
        );
        [a, b]
    }

    /// [`Laplace::fit`] given the pass at `b = 0`.
    fn fit_from(y: &[f64], o: &[f64], cols: &[&[f64]], s2: f64, iters: usize, first: Pass) -> Laplace {
        let k = cols.len();
        let tol = 1e-14 * (y.len() as f64).max(1.0);
        let mut b = [0.0; 2];
        let mut at = first;
        for _ in 0..iters {
            let (g, h) = (at.g, at.h);
            // Newton step δ = H⁻¹ g (H is SPD: the objective is strictly concave).
            let step = if k == 1 {
                [g[0] / h[0], 0.0]
            } else {
                let det = h[0] * h[2] - h[1] * h[1];
                [(h[2] * g[0] - h[1] * g[1]) / det, (h[0] * g[1] - h[1] * g[0]) / det]
            };
            let slope = step[0] * g[0] + step[1] * g[1];
            if !(slope >= tol) {
                break;
            }
            let mut t = 1.0;
            let mut moved = false;
            for _ in 0..30 {
                let cand = [b[0] + t * step[0], b[1] + t * step[1]];
                let next = pass(y, o, cols, &cand, s2, false);
                if next.g[0] * step[0] + next.g[1] * step[1] >= -0.5 * slope {
                    b = cand;
                    at = next;
                    moved = true;
                    break;
                }
                t *= 0.5;
            }
            if !moved || step.iter().map(|v| v.abs()).fold(0.0, f64::max) < 1e-12 {
                break;
            }
        }
        let h = at.h;
        let l00 = h[0].sqrt();
        let mut chol = [l00, 0.0, 0.0, 1.0];
        if k == 2 {
            let l10 = h[1] / l00;
            chol[2] = l10;
            chol[3] = (h[2] - l10 * l10).max(f64::MIN_POSITIVE).sqrt();
        }
        Laplace { k, mode: b, chol }
    }

    /// `log N(b | mode, H⁻¹) = −(k/2) log 2π + ½ log|H| − ½ ‖Lᵀ(b − mode)‖²`.
    pub fn log_density(&self, b: &[f64]) -> f64 {
        let k = self.k;
        let r0 = b[0] - self.mode[0];
        let r1 = if k == 2 { b[1] - self.mode[1] } else { 0.0 };
        // Lᵀ r
        let q0 = self.chol[0] * r0 + if k == 2 { self.chol[2] * r1 } else { 0.0 };
        let q1 = if k == 2 { self.chol[3] * r1 } else { 0.0 };
        let logdet_h = 2.0 * (self.chol[0].ln() + if k == 2 { self.chol[3].ln() } else { 0.0 });
        -0.5 * k as f64 * LN_2PI + 0.5 * logdet_h - 0.5 * (q0 * q0 + q1 * q1)
    }

    /// Draws `b ~ N(mode, H⁻¹)`: `b = mode + L⁻ᵀ ξ`.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> [f64; 2] {
        let xi0: f64 = rng.sample(StandardNormal);
        if self.k == 1 {
            return [self.mode[0] + xi0 / self.chol[0], 0.0];
        }
        let xi1: f64 = rng.sample(StandardNormal);
        let z1 = xi1 / self.chol[3];
        let z0 = (xi0 - self.chol[2] * z1) / self.chol[0];
        [self.mode[0] + z0, self.mode[1] + z1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn problem(n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let c0: Vec<f64> = (0..n).map(|i| (i as f64 * 0.3).cos()).collect();
        let c1: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        let o: Vec<f64> = (0..n).map(|i| 0.2 * (i as f64 * 0.11).sin()).collect();
        let y: Vec<f64> = (0..n)
            .map(|i| if (i as f64 * 0.3).cos() + 0.3 * (i as f64 * 1.3).sin() > 0.0 { 1.0 } else { 0.0 })
            .collect();
        (c0, c1, o, y)
    }

    /// The fused pass against the separate definitions: `F` by [`log_likelihood`] and the prior,
    /// `g` and `H` by central differences of `F`; chunked sums (several chunks) agree with one
    /// sequential loop.
    #[test]
    fn pass_matches_definitions_and_finite_differences() {
        let n = 2 * CHUNK + 77;
        let (c0, c1, o, y) = problem(n);
        let cols = [&c0[..], &c1[..]];
        let s2 = 3.0;
        let b = [0.4, -0.7];
        // the libm reference of `F`, one row at a time
        let f = |b: &[f64; 2]| {
            let ll: f64 = (0..n)
                .map(|i| {
                    let eta = o[i] + c0[i] * b[0] + c1[i] * b[1];
                    y[i] * eta - (eta.max(0.0) + (-eta.abs()).exp().ln_1p())
                })
                .sum();
            ll - (b[0] * b[0] + b[1] * b[1]) / (2.0 * s2)
        };
        assert!(
            (log_likelihood(&y, &o, &cols, &b) - (b[0] * b[0] + b[1] * b[1]) / (2.0 * s2) - f(&b)).abs()
                < 1e-9 * f(&b).abs()
        );
        let at = pass(&y, &o, &cols, &b, s2, true);
        let no_value = pass(&y, &o, &cols, &b, s2, false);
        assert_eq!((no_value.g, no_value.h), (at.g, at.h));
        assert!((at.f - f(&b)).abs() < 1e-9 * f(&b).abs());
        let [seq] = pass_rows(&y, &o, &[[c0.as_slice(), c1.as_slice()]], &b, 0..n, true);
        assert!((seq.f - b.iter().map(|v| v * v).sum::<f64>() / (2.0 * s2) - at.f).abs() < 1e-9 * at.f.abs());
        let h = 1e-4;
        for a in 0..2 {
            let (mut bp, mut bm) = (b, b);
            bp[a] += h;
            bm[a] -= h;
            let g = (f(&bp) - f(&bm)) / (2.0 * h);
            assert!((g - at.g[a]).abs() < 1e-5 * g.abs().max(1.0), "g[{a}] {g} vs {}", at.g[a]);
            let (gp, gm) = (pass(&y, &o, &cols, &bp, s2, false).g, pass(&y, &o, &cols, &bm, s2, false).g);
            for c in 0..2 {
                let hd = -(gp[c] - gm[c]) / (2.0 * h);
                let idx = if a == 0 && c == 0 {
                    0
                } else if a == 1 && c == 1 {
                    2
                } else {
                    1
                };
                assert!((hd - at.h[idx]).abs() < 1e-5 * hd.abs().max(1.0), "H[{a}{c}]");
            }
        }
    }

    /// A pass and a paired fit are the same bits on one thread and on three, below and above
    /// [`PARALLEL_CHUNKS`] (serial chunks with parallel fits, then parallel chunks).
    #[test]
    fn passes_and_fits_do_not_depend_on_the_thread_count() {
        for n in [3 * CHUNK + 5, PARALLEL_CHUNKS * CHUNK + 100] {
            let (c0, c1, o, y) = problem(n);
            let c2: Vec<f64> = c0.iter().zip(&c1).map(|(a, b)| 0.5 * a - b).collect();
            let run = || {
                let p = pass(&y, &o, &[&c0, &c1], &[0.4, -0.7], 2.0, true);
                (p, Laplace::fit_pair(&y, &o, [&c0, &c1], [&c2, &c1], 2.0, 12))
            };
            let on = |threads: usize| rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            assert_eq!(on(1).install(run), on(3).install(run), "n = {n}");
        }
    }

    /// The paired fits are the two separate fits, bit for bit (several chunks, a partial last lane
    /// block), and the one-column pass is the two-column pass with a zero second weight.
    #[test]
    fn paired_fits_equal_separate_fits() {
        let n = CHUNK + 13;
        let (c0, c1, o, y) = problem(n);
        let c2: Vec<f64> = c0.iter().zip(&c1).map(|(a, b)| 0.5 * a - b).collect();
        let c3: Vec<f64> = (0..n).map(|i| (i as f64 * 0.05).sin()).collect();
        let [a, b] = Laplace::fit_pair(&y, &o, [&c0, &c1], [&c2, &c3], 2.0, 12);
        assert_eq!(a, Laplace::fit(&y, &o, &[&c0, &c1], 2.0, 12));
        assert_eq!(b, Laplace::fit(&y, &o, &[&c2, &c3], 2.0, 12));
        let one = pass(&y, &o, &[&c0], &[0.3, 0.0], 2.0, true);
        let two = pass(&y, &o, &[&c0, &c0], &[0.3, 0.0], 2.0, true);
        assert_eq!((one.g[0], one.h[0]), (two.g[0], two.h[0]));
        assert_eq!((one.g[1], one.h[1], one.h[2]), (0.0, 0.0, 0.0));
        assert!((one.f - two.f).abs() < 1e-12 * one.f.abs());
    }

    #[test]
    fn laplace_mode_is_stationary_and_hessian_matches_finite_differences() {
        let n = 60;
        let (c0, c1, o, y) = problem(n);
        let s2 = 4.0;
        let lap = Laplace::fit(&y, &o, &[&c0, &c1], s2, 30);
        let obj =
            |b: &[f64]| log_likelihood(&y, &o, &[&c0, &c1], b) - (b[0] * b[0] + b[1] * b[1]) / (2.0 * s2);
        let h = 1e-4;
        let m = lap.mode;
        for a in 0..2 {
            let mut bp = m;
            let mut bm = m;
            bp[a] += h;
            bm[a] -= h;
            let g = (obj(&bp) - obj(&bm)) / (2.0 * h);
            assert!(g.abs() < 1e-6, "gradient {a} = {g}");
        }
        // −∂²/∂b0² by central differences vs L Lᵀ
        let mut bp = m;
        let mut bm = m;
        bp[0] += h;
        bm[0] -= h;
        let h00 = -(obj(&bp) - 2.0 * obj(&m) + obj(&bm)) / (h * h);
        assert!((h00 - lap.chol[0] * lap.chol[0]).abs() < 1e-4 * h00.abs().max(1.0));
        // log density integrates to one (grid over ±8 sd)
        let sd0 = 1.0 / lap.chol[0];
        let mut total = 0.0;
        let g = 200;
        let span = 12.0 * sd0.max(1.0 / lap.chol[3]);
        let step = 2.0 * span / g as f64;
        for i in 0..g {
            for k in 0..g {
                let b = [m[0] - span + (i as f64 + 0.5) * step, m[1] - span + (k as f64 + 0.5) * step];
                total += lap.log_density(&b).exp() * step * step;
            }
        }
        assert!((total - 1.0).abs() < 1e-3, "{total}");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let draws: Vec<[f64; 2]> = (0..4000).map(|_| lap.sample(&mut rng)).collect();
        let mean0 = draws.iter().map(|b| b[0]).sum::<f64>() / 4000.0;
        let var0 = draws.iter().map(|b| (b[0] - mean0).powi(2)).sum::<f64>() / 4000.0;
        // marginal variance of b0 = (H⁻¹)_00
        let hdet = lap.chol[0].powi(2) * lap.chol[3].powi(2);
        let hinv00 = (lap.chol[2].powi(2) + lap.chol[3].powi(2)) / hdet;
        assert!((mean0 - m[0]).abs() < 5.0 * (hinv00 / 4000.0).sqrt());
        assert!((var0 / hinv00 - 1.0).abs() < 5.0 * (2.0f64 / 4000.0).sqrt());
        // one column (the intercept move): the mode is stationary too
        let ones = vec![1.0; n];
        let l1 = Laplace::fit(&y, &o, &[&ones], 2.0, 30);
        let f1 = |b: f64| log_likelihood(&y, &o, &[&ones], &[b]) - b * b / 4.0;
        assert!(((f1(l1.mode[0] + h) - f1(l1.mode[0] - h)) / (2.0 * h)).abs() < 1e-6);
    }
}
