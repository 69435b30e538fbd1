//! Bayesian logistic regression on a fixed feature matrix: the posterior mode and its Laplace
//! approximation, shared by the RKS/MKL classification baselines ([`crate::baselines`]) and BaNK's
//! joint weight move ([`crate::classification::ClassificationState::joint_weight_move`]).
//!
//! With features `Φ` (`N × F`), weights `β ~ N(0, s² I)`, intercept `β₀ ~ N(0, v₀)` and
//! `η = Φβ + β₀`, the log posterior is, up to a constant,
//! `L(β, β₀) = Σ_i [y_i η_i − log(1 + e^{η_i})] − ‖β‖²/(2s²) − β₀²/(2v₀)` (seed 001 §3.3.2). It is
//! strictly concave; its gradient is `Φ̃ᵀ(y − σ(η)) − P b` and its negative Hessian
//! `H = Φ̃ᵀ D Φ̃ + P` with `Φ̃ = [Φ, 1]`, `D = diag(σ(η_i)(1 − σ(η_i)))`, `P = diag(s⁻², …, s⁻², v₀⁻¹)`
//! and `b = (β, β₀)`. Damped Newton from a given start reaches the unique mode `b̂`; the Laplace
//! approximation is `N(b̂, H(b̂)⁻¹)`.

use crate::anderson::Anderson;
use crate::error::BankError;
use bke_core::simd::{exp_nonpos, ln_1p_unit};
use bke_linalg::{Backend, Mat, MatMut, Trans};
use rayon::prelude::*;

/// The logistic function `σ(t) = 1/(1 + e^{−t})`, without overflow: with `e = e^{−|t|}`, `1/(1 + e)`
/// for `t ≥ 0` and `e/(1 + e)` otherwise. Branch-free apart from a select (the exponential is
/// [`bke_core::simd::exp_nonpos`], within 2 ulp of libm's), so loops over it vectorise.
#[inline]
pub fn sigmoid(t: f64) -> f64 {
    let e = exp_nonpos(-t.abs());
    let inv = 1.0 / (1.0 + e);
    if t >= 0.0 { inv } else { e * inv }
}

/// `log(1 + e^t) = max(t, 0) + log(1 + e^{−|t|})` without overflow, vectorisable as [`sigmoid`]
/// ([`bke_core::simd::ln_1p_unit`], within 2 ulp of libm's `ln_1p`).
#[inline]
pub fn softplus(t: f64) -> f64 {
    t.max(0.0) + ln_1p_unit(exp_nonpos(-t.abs()))
}

/// `Σ_i [y_i η_i − log(1 + e^{η_i})]`, the logistic log-likelihood (eight independent partial sums,
/// so the loop vectorises; their order is fixed).
pub fn log_likelihood(y: &[f64], eta: &[f64]) -> f64 {
    const LANES: usize = 8;
    let n = y.len().min(eta.len());
    let (yc, ec) = (y[..n].chunks_exact(LANES), eta[..n].chunks_exact(LANES));
    let tail: f64 = yc.remainder().iter().zip(ec.remainder()).map(|(yi, e)| yi * e - softplus(*e)).sum();
    let mut acc = [0.0; LANES];
    for (yb, eb) in yc.zip(ec) {
        for l in 0..LANES {
            acc[l] += yb[l] * eb[l] - softplus(eb[l]);
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// The Laplace approximation `N(mode, H⁻¹)` of the posterior of `(β, β₀)` (module docs).
#[derive(Debug, Clone)]
pub struct WeightLaplace {
    /// The posterior mode `(β̂, β̂₀)` (intercept last, length `F + 1`).
    pub mode: Vec<f64>,
    /// Lower Cholesky factor `L` of the negative Hessian `H = L Lᵀ` at the mode.
    pub chol: Mat,
    /// The log posterior `L(b̂)` at the mode (without the normalising constants of the priors).
    pub log_posterior: f64,
    /// Negative Hessians evaluated (one `O(N F²)` symmetric product each).
    pub hessians: usize,
    /// Points evaluated (one pass over `Φ` each, [`evaluate`]).
    pub evaluations: usize,
}

/// `L(b)` (module docs) given `η`.
pub fn log_posterior(y: &[f64], eta: &[f64], b: &[f64], s2: f64, v0: f64) -> f64 {
    log_likelihood(y, eta) + log_prior(b, s2, v0)
}

/// `−‖β‖²/(2s²) − β₀²/(2v₀)`, the log prior of `b = (β, β₀)` without its normalising constants.
fn log_prior(b: &[f64], s2: f64, v0: f64) -> f64 {
    let f = b.len() - 1;
    -b[..f].iter().map(|v| v * v).sum::<f64>() / (2.0 * s2) - b[f] * b[f] / (2.0 * v0)
}

/// `η = Φβ + β₀` into `eta`. The product with `Φ` runs on the calling thread: it is memory-bound
/// and shorter than a parallel region's synchronisation costs (as are the mode search's, [`evaluate`]).
pub fn linear_predictor<B: Backend>(phi: &Mat, b: &[f64], eta: &mut [f64]) -> Result<(), BankError> {
    let f = phi.ncols();
    bke_linalg::sequential(|| B::gemv(1.0, phi.as_ref(), Trans::No, &b[..f], 0.0, eta))?;
    for e in eta.iter_mut() {
        *e += b[f];
    }
    Ok(())
}

/// `L`, `η` and the gradient of `L` at one point `b` of the mode search.
struct Evaluation {
    eta: Vec<f64>,
    objective: f64,
    gradient: Vec<f64>,
}

/// Rows of `Φ` per block of [`evaluate`]: `2M` columns of this many rows stay in the L2 cache
/// between the two products that read them (256 KB at `2M = 256`).
const EVALUATION_ROWS: usize = 128;

/// Rows per parallel chunk of [`evaluate`]: fixed, so the order of every sum, and so the result,
/// does not depend on the number of threads.
const EVALUATION_CHUNK: usize = 32 * EVALUATION_ROWS;

/// `η = Φβ + β₀`, `L(b)` and its gradient `Φ̃ᵀ(y − σ(η)) − P b` in one pass over `Φ`, a block of
/// [`EVALUATION_ROWS`] rows at a time: each block's rows of `Φ` are read from memory once for `η`
/// and again from cache for `Φᵀr` — two products with `Φ` at the memory traffic of one, and the
/// chord steps of the mode search are memory-bound (an `N × 2M` matrix larger than the cache, two
/// products per step). Chunks of [`EVALUATION_CHUNK`] rows run in parallel; each keeps eight
/// partial sums per product, and the chunks' sums are added in chunk order.
fn evaluate(phi: &Mat, y: &[f64], b: &[f64], prior: (f64, f64)) -> Evaluation {
    let (n, f) = (phi.nrows(), phi.ncols());
    let mut eta = vec![b[f]; n];
    let chunks: Vec<ChunkSums> = eta
        .par_chunks_mut(EVALUATION_CHUNK)
        .enumerate()
        .map(|(k, e)| chunk_sums(phi, y, b, k * EVALUATION_CHUNK, e))
        .collect();
    let mut total = ChunkSums { acc: vec![[0.0; LANES]; f], loglik: 0.0, residual_sum: 0.0 };
    for c in &chunks {
        total.loglik += c.loglik;
        total.residual_sum += c.residual_sum;
        for (t, a) in total.acc.iter_mut().zip(&c.acc) {
            t.iter_mut().zip(a).for_each(|(t, a)| *t += a);
        }
    }
    let mut gradient: Vec<f64> = total.acc.iter().map(|a| a.iter().sum()).collect();
    gradient.push(total.residual_sum);
    for (c, g) in gradient.iter_mut().enumerate() {
        *g -= b[c] / if c < f { prior.0 } else { prior.1 };
    }
    Evaluation { eta, objective: total.loglik + log_prior(b, prior.0, prior.1), gradient }
}

/// Partial sums per product of [`evaluate`].
const LANES: usize = 8;

/// One chunk's share of [`evaluate`]: `Φᵀr` in [`LANES`] partial sums per column, `ℓ` and `Σ r`.
struct ChunkSums {
    acc: Vec<[f64; LANES]>,
    loglik: f64,
    residual_sum: f64,
}

/// [`evaluate`] on rows `first..first + eta.len()` (`eta` holds `β₀` on entry and `η` on return).
fn chunk_sums(phi: &Mat, y: &[f64], b: &[f64], first: usize, eta: &mut [f64]) -> ChunkSums {
    let f = phi.ncols();
    let mut sums = ChunkSums { acc: vec![[0.0; LANES]; f], loglik: 0.0, residual_sum: 0.0 };
    let mut r = [0.0; EVALUATION_ROWS];
    for (k, e) in eta.chunks_mut(EVALUATION_ROWS).enumerate() {
        let (start, rows) = (first + k * EVALUATION_ROWS, e.len());
        let end = start + rows;
        for c in 0..f {
            let bc = b[c];
            e.iter_mut().zip(&phi.col(c)[start..end]).for_each(|(ei, p)| *ei += p * bc);
        }
        sums.loglik += log_likelihood(&y[start..end], e);
        r[..rows]
            .iter_mut()
            .zip(&y[start..end])
            .zip(e.iter())
            .for_each(|((ri, yi), ei)| *ri = yi - sigmoid(*ei));
        sums.residual_sum += r[..rows].iter().sum::<f64>();
        for (c, a) in sums.acc.iter_mut().enumerate() {
            let col = &phi.col(c)[start..end];
            let (pc, rc) = (col.chunks_exact(LANES), r[..rows].chunks_exact(LANES));
            let tail: f64 = pc.remainder().iter().zip(rc.remainder()).map(|(p, q)| p * q).sum();
            for (pb, rb) in pc.zip(rc) {
                for l in 0..LANES {
                    a[l] += pb[l] * rb[l];
                }
            }
            a[0] += tail;
        }
    }
    sums
}

/// The Cholesky factor of the negative Hessian `H = Φ̃ᵀDΦ̃ + P` at `η`, the product formed as a
/// symmetric product (lower triangle only) of `D^{½}Φ̃`, which is written into `design`.
fn hessian_factor<B: Backend>(
    phi: &Mat,
    eta: &[f64],
    prior: (f64, f64),
    design: &mut Mat,
) -> Result<Mat, BankError> {
    let (n, f) = (phi.nrows(), phi.ncols());
    let sw: Vec<f64> = eta
        .iter()
        .map(|e| {
            let p = sigmoid(*e);
            (p * (1.0 - p)).sqrt()
        })
        .collect();
    for c in 0..f {
        let (src, dst) = (phi.col(c), design.col_mut(c));
        for i in 0..n {
            dst[i] = src[i] * sw[i];
        }
    }
    design.col_mut(f).copy_from_slice(&sw);
    let mut h = Mat::zeros(f + 1, f + 1);
    B::gemm_symmetric(1.0, design.as_ref(), Trans::Yes, design.as_ref(), Trans::No, 0.0, h.as_mut())?;
    for c in 0..=f {
        h[(c, c)] += if c < f { 1.0 / prior.0 } else { 1.0 / prior.1 };
    }
    Ok(B::cholesky(h.as_ref())?)
}

/// Chord steps (with a Hessian from an earlier point) allowed per mode search.
const CHORD_STEPS: usize = 100;

/// A point of the mode search: `b`, its evaluation, and the Newton direction `H⁻¹g` and decrement
/// `gᵀH⁻¹g` under the current factor.
struct Iterate {
    b: Vec<f64>,
    at: Evaluation,
    step: Vec<f64>,
    decrement: f64,
}

impl Iterate {
    fn new<B: Backend>(l: &Mat, b: Vec<f64>, at: Evaluation) -> Result<Self, BankError> {
        let mut step = at.gradient.clone();
        B::cholesky_solve_vec_in_place(l.as_ref(), &mut step)?;
        let decrement = step.iter().zip(&at.gradient).map(|(s, g)| s * g).sum();
        Ok(Iterate { b, at, step, decrement })
    }
}

/// The mode search's problem and work counters.
struct Search<'a> {
    phi: &'a Mat,
    y: &'a [f64],
    prior: (f64, f64),
    design: &'a mut Mat,
    hessians: usize,
    evaluations: usize,
}

impl Search<'_> {
    fn evaluate(&mut self, b: &[f64]) -> Evaluation {
        self.evaluations += 1;
        evaluate(self.phi, self.y, b, self.prior)
    }

    fn hessian<B: Backend>(&mut self, eta: &[f64]) -> Result<Mat, BankError> {
        self.hessians += 1;
        hessian_factor::<B>(self.phi, eta, self.prior, self.design)
    }

    /// The chord step `b + t H⁻¹g` with `t` halved until `L` does not fall (`small`: the full step),
    /// or `None` where 30 halvings do not help.
    fn damped_step<B: Backend>(
        &mut self,
        l: &Mat,
        cur: &Iterate,
        small: bool,
    ) -> Result<Option<Iterate>, BankError> {
        let mut t = 1.0;
        for _ in 0..30 {
            let cand: Vec<f64> = cur.b.iter().zip(&cur.step).map(|(v, s)| v + t * s).collect();
            let next = self.evaluate(&cand);
            if small || next.objective >= cur.at.objective {
                return Iterate::new::<B>(l, cand, next).map(Some);
            }
            t *= 0.5;
        }
        Ok(None)
    }

    fn done(self, cur: Iterate, chol: Mat) -> WeightLaplace {
        let (hessians, evaluations) = (self.hessians, self.evaluations);
        WeightLaplace { mode: cur.b, chol, log_posterior: cur.at.objective, hessians, evaluations }
    }
}

/// The Laplace approximation of the posterior of `(β, β₀)` given features `phi`, labels `y`, weight
/// prior variance `s2` and intercept prior variance `v0`, from `start` (length `F + 1`).
///
/// The mode search is Newton's method with chord steps: a Hessian is formed (`O(N F²)`) and then
/// reused for steps `b ← b + t H⁻¹g` (`O(N F)` each, `t` halved until `L` does not fall),
/// Anderson-accelerated ([`crate::anderson`]: the extrapolated point is taken when it lowers the
/// decrement `gᵀH⁻¹g` and not `L`), for as long as each step shrinks the decrement at least
/// fourfold; a slower step forms a new Hessian at the current point (at most `iters` Hessians). The
/// search stops once the decrement falls below `1e-20` relative to `max(1, |L|)` — one Newton step
/// past the usual tolerance, so the mode does not depend on the start beyond round-off — or the line
/// search can no longer raise `L`; the returned factor is always the Hessian at the returned mode.
/// Each point's `η`, `L` and gradient come from one pass over `Φ` ([`evaluate`]). `design` is
/// scratch for the Hessians' weighted design `D^{½}Φ̃` (`N × (F + 1)`; reallocated if it has another
/// shape), so a sampler calling this every sweep allocates it once.
pub fn weight_laplace<B: Backend>(
    phi: &Mat,
    y: &[f64],
    s2: f64,
    v0: f64,
    start: &[f64],
    iters: usize,
    design: &mut Mat,
) -> Result<WeightLaplace, BankError> {
    if (design.nrows(), design.ncols()) != (phi.nrows(), phi.ncols() + 1) {
        *design = Mat::zeros(phi.nrows(), phi.ncols() + 1);
    }
    let mut search = Search { phi, y, prior: (s2, v0), design, hessians: 0, evaluations: 0 };
    let first = search.evaluate(start);
    let mut l = search.hessian::<B>(&first.eta)?;
    let mut cur = Iterate::new::<B>(&l, start.to_vec(), first)?;
    let mut fresh = true; // `l` is the Hessian at `cur.b`
    let mut previous = f64::INFINITY;
    let mut chords = 0;
    let mut anderson = Anderson::default();
    loop {
        let scale = cur.at.objective.abs().max(1.0);
        let converged = cur.decrement < 1e-20 * scale;
        let out_of_steps = search.hessians > iters || chords >= CHORD_STEPS;
        if fresh && (converged || out_of_steps) {
            return Ok(search.done(cur, l));
        }
        if !fresh && (converged || out_of_steps || cur.decrement > 0.25 * previous) {
            l = search.hessian::<B>(&cur.at.eta)?;
            cur = Iterate::new::<B>(&l, cur.b, cur.at)?;
            fresh = true;
            previous = f64::INFINITY;
            anderson.reset();
            continue;
        }
        // Below this decrement the rise of `L` a step promises is near the round-off of `L`
        // itself, which cannot judge it: the full step is taken (quadratic region).
        let small = cur.decrement < 1e-10 * scale;
        let mut moved = None;
        if let Some(cand) = anderson.candidate(&cur.b, &cur.step, &cur.at.gradient) {
            let next = search.evaluate(&cand);
            let next = Iterate::new::<B>(&l, cand, next)?;
            if next.decrement < cur.decrement && (small || next.at.objective >= cur.at.objective) {
                moved = Some(next);
            } else {
                anderson.forget();
            }
        }
        if moved.is_none() {
            moved = search.damped_step::<B>(&l, &cur, small)?;
        }
        let Some(next) = moved else {
            // round-off level: the Hessian at the current b is the answer
            if !fresh {
                l = search.hessian::<B>(&cur.at.eta)?;
            }
            return Ok(search.done(cur, l));
        };
        chords += usize::from(!fresh);
        fresh = false;
        previous = cur.decrement;
        cur = next;
    }
}

impl WeightLaplace {
    /// `log N(b | mode, H⁻¹)` up to the constant `−(F + 1)/2 · log 2π`:
    /// `Σ log L_kk − ½‖Lᵀ(b − mode)‖²`.
    pub fn log_density<B: Backend>(&self, b: &[f64]) -> Result<f64, BankError> {
        let r: Vec<f64> = b.iter().zip(&self.mode).map(|(v, m)| v - m).collect();
        let mut q = vec![0.0; r.len()];
        B::gemv(1.0, self.chol.as_ref(), Trans::Yes, &r, 0.0, &mut q)?;
        Ok(0.5 * B::cholesky_logdet(self.chol.as_ref()) - 0.5 * q.iter().map(|v| v * v).sum::<f64>())
    }

    /// `b = mode + L⁻ᵀ ξ` for standard normal `ξ` (a draw from `N(mode, H⁻¹)`).
    pub fn draw<B: Backend>(&self, xi: &mut [f64]) -> Result<Vec<f64>, BankError> {
        B::solve_lower_transpose_in_place(self.chol.as_ref(), MatMut::col_vector(xi))?;
        Ok(self.mode.iter().zip(xi.iter()).map(|(m, z)| m + z).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend as B;

    fn problem() -> (Mat, Vec<f64>) {
        let n = 80;
        let phi = Mat::from_fn(n, 3, |i, c| ((i * (c + 2)) as f64 * 0.37).cos());
        let y = (0..n)
            .map(|i| if ((i as f64) * 0.61).sin() + 0.3 * phi[(i, 0)] > 0.0 { 1.0 } else { 0.0 })
            .collect();
        (phi, y)
    }

    /// One pass of [`evaluate`] over row blocks (300 rows: two full blocks and a partial one) against
    /// the separate products: `η` from [`linear_predictor`], `L` from [`log_posterior`] and the
    /// gradient `Φ̃ᵀ(y − σ(η)) − P b` summed row by row.
    #[test]
    fn evaluation_in_one_pass_matches_the_separate_products() {
        // one chunk with a partial block; several parallel chunks with a partial last one
        for n in [2 * EVALUATION_ROWS + 44, 2 * EVALUATION_CHUNK + 3 * EVALUATION_ROWS + 5] {
            let phi = Mat::from_fn(n, 5, |i, c| ((i * (c + 3)) as f64 * 0.29).sin());
            let y: Vec<f64> = (0..n).map(|i| f64::from(u8::from((i as f64 * 0.47).cos() > 0.1))).collect();
            let (b, prior) = (vec![0.3, -0.7, 1.1, 0.05, -0.4, 0.2], (1.5, 4.0));
            let e = evaluate(&phi, &y, &b, prior);
            let mut eta = vec![0.0; n];
            linear_predictor::<B>(&phi, &b, &mut eta).unwrap();
            assert!(e.eta.iter().zip(&eta).all(|(a, c)| (a - c).abs() < 1e-13));
            let tol = 1e-13 * n as f64;
            assert!((e.objective - log_posterior(&y, &eta, &b, prior.0, prior.1)).abs() < tol);
            for c in 0..6 {
                let column = |i: usize| if c < 5 { phi[(i, c)] } else { 1.0 };
                let g: f64 = (0..n).map(|i| column(i) * (y[i] - sigmoid(eta[i]))).sum::<f64>()
                    - b[c] / if c < 5 { prior.0 } else { prior.1 };
                assert!((e.gradient[c] - g).abs() < tol, "n = {n}, gradient {c}: {} vs {g}", e.gradient[c]);
            }
            // the same bits on one thread as on the pool
            let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
            let serial = one.install(|| evaluate(&phi, &y, &b, prior));
            assert_eq!((serial.objective, &serial.gradient, &serial.eta), (e.objective, &e.gradient, &e.eta));
        }
    }

    /// The mode is stationary (central differences of `L`), `H` is the finite-difference Hessian, and
    /// two different starts reach the same mode.
    #[test]
    fn mode_is_stationary_and_hessian_matches_finite_differences() {
        let (phi, y) = problem();
        let (s2, v0) = (2.0, 5.0);
        let lap = weight_laplace::<B>(&phi, &y, s2, v0, &[0.0; 4], 50, &mut Mat::default()).unwrap();
        let other =
            weight_laplace::<B>(&phi, &y, s2, v0, &[1.0, -2.0, 0.5, 3.0], 50, &mut Mat::default()).unwrap();
        let obj = |b: &[f64]| {
            let mut eta = vec![0.0; y.len()];
            linear_predictor::<B>(&phi, b, &mut eta).unwrap();
            log_posterior(&y, &eta, b, s2, v0)
        };
        assert!((obj(&lap.mode) - lap.log_posterior).abs() < 1e-12);
        let h = 1e-4;
        let mut hess = Mat::zeros(4, 4);
        let mut hl = lap.chol.clone();
        B::gemm(1.0, lap.chol.as_ref(), Trans::No, lap.chol.as_ref(), Trans::Yes, 0.0, hl.as_mut()).unwrap();
        for a in 0..4 {
            assert!((lap.mode[a] - other.mode[a]).abs() < 1e-8, "start dependence");
            let mut bp = lap.mode.clone();
            let mut bm = lap.mode.clone();
            bp[a] += h;
            bm[a] -= h;
            let g = (obj(&bp) - obj(&bm)) / (2.0 * h);
            assert!(g.abs() < 1e-6, "gradient {a} = {g}");
            for c in 0..4 {
                let mut pp = lap.mode.clone();
                let mut pm = lap.mode.clone();
                let mut mp = lap.mode.clone();
                let mut mm = lap.mode.clone();
                pp[a] += h;
                pp[c] += h;
                pm[a] += h;
                pm[c] -= h;
                mp[a] -= h;
                mp[c] += h;
                mm[a] -= h;
                mm[c] -= h;
                hess[(a, c)] = -(obj(&pp) - obj(&pm) - obj(&mp) + obj(&mm)) / (4.0 * h * h);
                assert!((hess[(a, c)] - hl[(a, c)]).abs() < 1e-4 * hl[(a, a)].max(1.0), "H[{a},{c}]");
            }
        }
    }

    /// The branch-free `sigmoid`, `softplus` and `log_likelihood` against libm forms, across the
    /// flush at `|t| = 700` (below `e^{−700} ≈ 1e−304` the exponential is 0), at ±∞ and NaN.
    #[test]
    fn logistic_functions_match_libm() {
        for t in
            [-1e300f64, -701.0, -700.0, -36.5, -1.0, -1e-9, -0.0, 0.0, 1e-9, 0.7, 36.5, 700.0, 701.0, 1e300]
        {
            let s_ref = if t >= 0.0 { 1.0 / (1.0 + (-t).exp()) } else { t.exp() / (1.0 + t.exp()) };
            let sp_ref = t.max(0.0) + (-t.abs()).exp().ln_1p();
            assert!((sigmoid(t) - s_ref).abs() <= 4.0 * f64::EPSILON * s_ref + 1e-300, "sigmoid({t})");
            assert!((softplus(t) - sp_ref).abs() <= 4.0 * f64::EPSILON * sp_ref + 1e-300, "softplus({t})");
        }
        assert_eq!((sigmoid(f64::INFINITY), sigmoid(f64::NEG_INFINITY)), (1.0, 0.0));
        assert_eq!(softplus(f64::NEG_INFINITY), 0.0);
        assert!(sigmoid(f64::NAN).is_nan() && softplus(f64::NAN).is_nan());
        let eta: Vec<f64> = (0..37).map(|i| (i as f64 * 0.9).sin() * 8.0).collect();
        let y: Vec<f64> = (0..37).map(|i| f64::from(u8::from(i % 3 == 0))).collect();
        let naive: f64 =
            y.iter().zip(&eta).map(|(y, e)| y * e - (e.max(0.0) + (-e.abs()).exp().ln_1p())).sum();
        assert!((log_likelihood(&y, &eta) - naive).abs() < 1e-12 * naive.abs());
    }

    /// Draws from the approximation have its mean and covariance `H⁻¹`, and `log_density` is the
    /// Gaussian log density (difference between two points against the dense quadratic form).
    #[test]
    fn draws_and_density_match_the_gaussian() {
        use rand::SeedableRng;
        use rand_distr::{Distribution, StandardNormal};
        let (phi, y) = problem();
        let lap = weight_laplace::<B>(&phi, &y, 1.0, 1.0, &[0.0; 4], 50, &mut Mat::default()).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let k = 20_000;
        let mut sum = [0.0; 4];
        let mut sq = [0.0; 4];
        for _ in 0..k {
            let mut xi: Vec<f64> = (0..4).map(|_| StandardNormal.sample(&mut rng)).collect();
            let b = lap.draw::<B>(&mut xi).unwrap();
            for a in 0..4 {
                sum[a] += b[a] - lap.mode[a];
                sq[a] += (b[a] - lap.mode[a]).powi(2);
            }
        }
        let mut cov = Mat::identity(4);
        B::cholesky_solve_in_place(lap.chol.as_ref(), cov.as_mut()).unwrap();
        for a in 0..4 {
            let sd = cov[(a, a)].sqrt();
            assert!((sum[a] / k as f64).abs() < 5.0 * sd / (k as f64).sqrt());
            assert!((sq[a] / k as f64 / cov[(a, a)] - 1.0).abs() < 5.0 * (2.0 / k as f64).sqrt());
        }
        let b = [0.3, -0.2, 0.1, 0.4];
        let r: Vec<f64> = b.iter().zip(&lap.mode).map(|(v, m)| v - m).collect();
        let mut hl = Mat::zeros(4, 4);
        B::gemm(1.0, lap.chol.as_ref(), Trans::No, lap.chol.as_ref(), Trans::Yes, 0.0, hl.as_mut()).unwrap();
        let quad: f64 = (0..4).map(|a| (0..4).map(|c| r[a] * hl[(a, c)] * r[c]).sum::<f64>()).sum();
        let diff = lap.log_density::<B>(&b).unwrap() - lap.log_density::<B>(&lap.mode).unwrap();
        assert!((diff + 0.5 * quad).abs() < 1e-10);
    }
}
