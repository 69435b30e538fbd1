//! The marginal pseudolikelihood of the BKE model (seed 000 eq. (15)) computed by seed 002 eq. (33),
//! with the corrected log-Jacobian term and analytic gradients. See the [module docs](super).

use super::jacobian::{JacScratch, log_volume_raw};
use super::simd::{exp_nonpos, lane_sum};
use super::{BkeParams, full_lengthscales, validate_data_landmarks};
use crate::numeric::LN_2PI;
use crate::{CoreError, Points};
use bke_linalg::{Backend, LinalgError, Mat};
use rayon::prelude::*;

/// Points per parallel task of the streaming pass.
const CHUNK: usize = 256;
/// Tasks per round: the partial sums of one round are merged in task order, rounds in order, so the
/// result does not depend on the number of threads, and memory is `O(ROUND · m · D)` whatever `n`.
const ROUND: usize = 64;
/// Points used for the shift `c ≈ μ̂` that keeps `‖K_zx‖²_F − n‖μ̂‖²` free of cancellation.
const PILOT: usize = 128;

/// The value of the log marginal pseudolikelihood and its gradient.
#[derive(Debug, Clone, PartialEq)]
pub struct MarginalLikelihood {
    /// `log p(x_1..x_n | θ, τ²) = log_gaussian + log_jacobian` (seed 000 eq. (15)).
    pub log_marginal: f64,
    /// The Gaussian term `log N(vec K_zx; 0, 1 1ᵀ ⊗ R_zz + τ² I_mn)` of seed 002 eq. (33).
    pub log_gaussian: f64,
    /// `Σ_i log γ_θ(x_i)` (0 when [`BkeParams::jacobian`] is off).
    pub log_jacobian: f64,
    /// `∂ log_marginal / ∂ log θ`: one entry for an isotropic lengthscale, one per dimension for ARD.
    pub grad_log_lengthscale: Vec<f64>,
    /// `∂ log_marginal / ∂ log τ²`.
    pub grad_log_tau2: f64,
}

/// Streaming sums over the data (one per task, merged in order).
#[derive(Debug, Clone)]
struct Sums {
    /// Σ_i φ_i (m)
    phi: Vec<f64>,
    /// Σ_i ∂φ_i/∂log θ_d, dimension-major (D·m)
    dphi: Vec<f64>,
    /// Σ_i ‖φ_i − c‖²
    ss: f64,
    /// Σ_i 2 (φ_i − c)·∂φ_i/∂log θ_d (D)
    dss: Vec<f64>,
    /// Σ_i ½ log det G(x_i)
    logvol: f64,
    /// Σ_i Σ_l p_il u_ild² (D)
    dlogvol: Vec<f64>,
}

/// Per-landmark accumulators of one task (no reduction chains in the inner loops), folded into a
/// [`Sums`] at the end of the task in a fixed order.
struct LandmarkAcc {
    /// Σ_i (φ_il − c_l)²
    ss: Vec<f64>,
    /// Σ_i 2 (φ_il − c_l) ∂φ_il/∂log θ_d, dimension-major
    dss: Vec<f64>,
    /// Σ_i p_il u_ild² (fast Jacobian path), dimension-major
    dlv: Vec<f64>,
}

impl Sums {
    fn zeros(m: usize, dim: usize) -> Self {
        Sums {
            phi: vec![0.0; m],
            dphi: vec![0.0; m * dim],
            ss: 0.0,
            dss: vec![0.0; dim],
            logvol: 0.0,
            dlogvol: vec![0.0; dim],
        }
    }

    fn add(&mut self, o: &Sums) {
        for (a, b) in self.phi.iter_mut().zip(&o.phi) {
            *a += b;
        }
        for (a, b) in self.dphi.iter_mut().zip(&o.dphi) {
            *a += b;
        }
        self.ss += o.ss;
        for (a, b) in self.dss.iter_mut().zip(&o.dss) {
            *a += b;
        }
        self.logvol += o.logvol;
        for (a, b) in self.dlogvol.iter_mut().zip(&o.dlogvol) {
            *a += b;
        }
    }
}

/// Per-task buffers (allocated once per task, reused for every point of the chunk).
struct Work {
    u: Vec<f64>,
    q: Vec<f64>,
    k: Vec<f64>,
    jac: JacScratch,
}

/// Landmarks divided by the lengthscales, dimension-major, and `x` scaling.
struct Scaled<'a> {
    zt: Vec<f64>,
    inv_ls: &'a [f64],
    m: usize,
    dim: usize,
}

impl Scaled<'_> {
    /// Fills `u`, `q`, `k` for point `x`.
    #[inline]
    fn features(&self, x: &[f64], w: &mut Work) {
        let (m, dim) = (self.m, self.dim);
        let q = &mut w.q[..m];
        q.iter_mut().for_each(|v| *v = 0.0);
        for d in 0..dim {
            let xd = x[d] * self.inv_ls[d];
            let zt = &self.zt[d * m..(d + 1) * m];
            let ud = &mut w.u[d * m..(d + 1) * m];
            for ((u, z), qq) in ud.iter_mut().zip(zt).zip(q.iter_mut()) {
                let t = xd - z;
                *u = t;
                *qq += t * t;
            }
        }
        for (k, qq) in w.k[..m].iter_mut().zip(q.iter()) {
            *k = exp_nonpos(-0.5 * qq);
        }
    }
}

/// The log marginal pseudolikelihood `log p(x | θ, τ²)` of seed 000 eq. (15), computed by seed 002
/// eq. (33) plus the corrected log-Jacobian, and its gradient with respect to `log θ` and `log τ²`.
///
/// `x`: the `n` data points; `z`: the `m ≥ D` landmarks (not treated as data). Time `O(m³ + nmD²)`
/// (`nmD` for the Gaussian term, `nmD²` for the Jacobian), memory `O(m²D + (n + m)D)`: `K_zx` is never
/// formed, the data are streamed in parallel chunks whose partial sums are merged in a fixed order
/// (bitwise identical results for any thread count).
///
/// Errors: empty `x` or `z`, dimension mismatch, `m < D`, invalid parameters (see
/// [`BkeParams::validate_for_dim`]), or `R_zz + (τ²/n)I` not positive definite even after the eigenvalue
/// fallback (practically impossible: its eigenvalues are `≥ τ²/n`).
pub fn marginal_pseudolikelihood<B: Backend>(
    x: &Points,
    z: &Points,
    params: &BkeParams,
) -> Result<MarginalLikelihood, CoreError> {
    validate_data_landmarks(x, z)?;
    params.validate_for_dim(x.dim())?;
    let (n, m, dim) = (x.len(), z.len(), x.dim());
    let ls = full_lengthscales(&params.lengthscales, dim);
    let inv_ls: Vec<f64> = ls.iter().map(|l| 1.0 / l).collect();
    let mut zt = vec![0.0; dim * m];
    for l in 0..m {
        for d in 0..dim {
            zt[d * m + l] = z.point(l)[d] * inv_ls[d];
        }
    }
    let sc = Scaled { zt, inv_ls: &inv_ls, m, dim };
    let new_work =
        || Work { u: vec![0.0; m * dim], q: vec![0.0; m], k: vec![0.0; m], jac: JacScratch::default() };

    // Shift c ≈ μ̂ from a pilot of the first points.
    let mut c = vec![0.0; m];
    {
        let mut w = new_work();
        let np = n.min(PILOT);
        for i in 0..np {
            sc.features(x.point(i), &mut w);
            for l in 0..m {
                c[l] += w.k[l];
            }
        }
        c.iter_mut().for_each(|v| *v /= np as f64);
    }

    let jacobian = params.jacobian;
    let chunk_sums = |range: std::ops::Range<usize>| -> Sums {
        let mut w = new_work();
        let mut s = Sums::zeros(m, dim);
        let mut acc = LandmarkAcc { ss: vec![0.0; m], dss: vec![0.0; m * dim], dlv: vec![0.0; m * dim] };
        for i in range {
            sc.features(x.point(i), &mut w);
            let kk = &w.k[..m];
            for (((&k, cl), phi), ss) in kk.iter().zip(&c[..m]).zip(&mut s.phi[..m]).zip(&mut acc.ss[..m]) {
                *phi += k;
                let e = k - cl;
                *ss += e * e;
            }
            for d in 0..dim {
                let ud = &w.u[d * m..(d + 1) * m];
                let dphi = &mut s.dphi[d * m..(d + 1) * m];
                let dss = &mut acc.dss[d * m..(d + 1) * m];
                for ((((&k, cl), u), dp), ds) in
                    kk.iter().zip(&c[..m]).zip(ud).zip(dphi.iter_mut()).zip(dss.iter_mut())
                {
                    let t = k * u * u;
                    *dp += t;
                    *ds += 2.0 * (k - cl) * t;
                }
            }
            if jacobian {
                let (v, fast) = log_volume_raw(&w.u, &w.q, &w.k, m, dim, true, &mut s.dlogvol, &mut w.jac);
                s.logvol += v;
                if fast {
                    let p = &w.jac.p[..m];
                    for d in 0..dim {
                        let ud = &w.u[d * m..(d + 1) * m];
                        let dlv = &mut acc.dlv[d * m..(d + 1) * m];
                        for ((dl, pl), u) in dlv.iter_mut().zip(p).zip(ud) {
                            *dl += pl * u * u;
                        }
                    }
                }
            }
        }
        s.ss += lane_sum(m, |l| acc.ss[l]);
        for d in 0..dim {
            s.dss[d] += lane_sum(m, |l| acc.dss[d * m + l]);
            s.dlogvol[d] += lane_sum(m, |l| acc.dlv[d * m + l]);
        }
        s
    };

    let mut total = Sums::zeros(m, dim);
    let n_chunks = n.div_ceil(CHUNK);
    let mut first = 0;
    while first < n_chunks {
        let last = (first + ROUND).min(n_chunks);
        let parts: Vec<Sums> = (first..last)
            .into_par_iter()
            .map(|ci| chunk_sums(ci * CHUNK..((ci + 1) * CHUNK).min(n)))
            .collect();
        for p in &parts {
            total.add(p);
        }
        first = last;
    }

    let dense = DenseTerms::<B>::new(z, &ls, params, n)?;
    Ok(combine(&total, &c, &dense, params, n, m, dim, &ls))
}

/// The `m × m` quantities: `A = R + (τ²/n) I`, `A⁻¹`, `log det A`, `∂R/∂log θ_d`.
struct DenseTerms<B: Backend> {
    a_inv: Mat,
    logdet: f64,
    dr: Vec<Mat>,
    _b: std::marker::PhantomData<B>,
}

impl<B: Backend> DenseTerms<B> {
    fn new(z: &Points, ls: &[f64], params: &BkeParams, n: usize) -> Result<Self, CoreError> {
        let (m, dim) = (z.len(), z.dim());
        let mut r = Mat::zeros(m, m);
        let mut dr: Vec<Mat> = (0..dim).map(|_| Mat::zeros(m, m)).collect();
        let mut g = vec![0.0; dim];
        for j in 0..m {
            for i in j..m {
                let v = params.prior.r_grad(ls, z.point(i), z.point(j), &mut g);
                r[(i, j)] = v;
                r[(j, i)] = v;
                for d in 0..dim {
                    dr[d][(i, j)] = g[d];
                    dr[d][(j, i)] = g[d];
                }
            }
        }
        let noise = params.tau2 / n as f64;
        let mut a = r.clone();
        for i in 0..m {
            a[(i, i)] += noise;
        }
        let (a_inv, logdet) = match B::cholesky(a.as_ref()) {
            Ok(l) => {
                let logdet = B::cholesky_logdet(l.as_ref());
                let mut inv = Mat::identity(m);
                B::cholesky_solve_in_place(l.as_ref(), inv.as_mut())?;
                (inv, logdet)
            }
            Err(LinalgError::NotPositiveDefinite { .. }) => {
                // R is PSD in exact arithmetic; rounding made an eigenvalue < −τ²/n. Clip at 0.
                let e = B::sym_eigen(r.as_ref())?;
                let lam: Vec<f64> = e.values.iter().map(|v| v.max(0.0) + noise).collect();
                let logdet = lam.iter().map(|v| v.ln()).sum();
                let inv = Mat::from_fn(m, m, |i, j| {
                    (0..m).map(|k| e.vectors[(i, k)] * e.vectors[(j, k)] / lam[k]).sum()
                });
                (inv, logdet)
            }
            Err(e) => return Err(e.into()),
        };
        Ok(Self { a_inv, logdet, dr, _b: std::marker::PhantomData })
    }
}

#[allow(clippy::too_many_arguments)]
fn combine<B: Backend>(
    s: &Sums,
    c: &[f64],
    dense: &DenseTerms<B>,
    params: &BkeParams,
    n: usize,
    m: usize,
    dim: usize,
    ls: &[f64],
) -> MarginalLikelihood {
    let nf = n as f64;
    let mf = m as f64;
    let tau2 = params.tau2;
    let mu: Vec<f64> = s.phi.iter().map(|v| v / nf).collect();
    let dmu: Vec<f64> = s.dphi.iter().map(|v| v / nf).collect();
    // centred sum of squares Σ‖φ_i − μ̂‖² = Σ‖φ_i − c‖² − n‖μ̂ − c‖²
    let mc: Vec<f64> = mu.iter().zip(c).map(|(a, b)| a - b).collect();
    let ss = (s.ss - nf * mc.iter().map(|v| v * v).sum::<f64>()).max(0.0);
    let a_inv = &dense.a_inv;
    let mut alpha = vec![0.0; m];
    for j in 0..m {
        let col = a_inv.col(j);
        for i in 0..m {
            alpha[i] += col[i] * mu[j];
        }
    }
    let quad: f64 = alpha.iter().zip(&mu).map(|(a, b)| a * b).sum();
    let log_gaussian = -0.5
        * (dense.logdet + quad + ss / tau2 + mf * nf.ln() + mf * (nf - 1.0) * tau2.ln() + mf * nf * LN_2PI);
    let tr_ainv: f64 = (0..m).map(|i| a_inv[(i, i)]).sum();
    let alpha2: f64 = alpha.iter().map(|v| v * v).sum();
    let grad_log_tau2 = -0.5 * ((tau2 / nf) * (tr_ainv - alpha2) - ss / tau2 + mf * (nf - 1.0));

    let mut g_gauss = vec![0.0; dim];
    for d in 0..dim {
        let dr = &dense.dr[d];
        let mut tr = 0.0;
        let mut a_dr_a = 0.0;
        for j in 0..m {
            let (cj, ai) = (dr.col(j), a_inv.col(j));
            let mut t = 0.0;
            for i in 0..m {
                tr += ai[i] * cj[i];
                t += cj[i] * alpha[i];
            }
            a_dr_a += t * alpha[j];
        }
        let dmu_d = &dmu[d * m..(d + 1) * m];
        let a_dmu: f64 = alpha.iter().zip(dmu_d).map(|(a, b)| a * b).sum();
        let dss = s.dss[d] - 2.0 * nf * mc.iter().zip(dmu_d).map(|(a, b)| a * b).sum::<f64>();
        g_gauss[d] = -0.5 * (tr + 2.0 * a_dmu - a_dr_a + dss / tau2);
    }
    let (log_jacobian, g_jac) = if params.jacobian {
        let lj = s.logvol - nf * ls.iter().map(|l| l.ln()).sum::<f64>();
        (lj, s.dlogvol.iter().map(|v| v - 2.0 * nf).collect::<Vec<_>>())
    } else {
        (0.0, vec![0.0; dim])
    };
    let per_dim: Vec<f64> = g_gauss.iter().zip(&g_jac).map(|(a, b)| a + b).collect();
    let mut grad_log_lengthscale =
        if params.lengthscales.len() == 1 { vec![per_dim.iter().sum()] } else { per_dim };
    let log_marginal = log_gaussian + log_jacobian;
    if log_marginal == f64::NEG_INFINITY {
        grad_log_lengthscale.iter_mut().for_each(|g| *g = f64::NAN);
    }
    MarginalLikelihood { log_marginal, log_gaussian, log_jacobian, grad_log_lengthscale, grad_log_tau2 }
}
