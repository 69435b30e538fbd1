//! A la Carte (Yang, Smola, Song & Wilson, AISTATS 2015), the regression baseline of seed 001
//! Table 1: a Gaussian spectral mixture whose frequencies are optimised by the marginal likelihood
//! of Bayesian linear regression on their random features, with random restarts.
//!
//! `Q` components with weights `w_q`, means `μ_q` and diagonal scales `s_q`; component `q` owns
//! `m_q = M/Q` frequencies `ω_qj = μ_q + s_q ⊙ z_qj` with `z_qj ~ N(0, I)` drawn once and held fixed
//! (the reparameterisation of the paper), and features `a_q cos(ω_qjᵀx)`, `a_q sin(ω_qjᵀx)` with
//! `a_q = √(w_q/m_q)`, so `φ(x)ᵀφ(x') → Σ_q w_q k_q(x − x')`. With `β ~ N(0, I)` and noise `σ²`,
//! `y ~ N(0, ΦΦᵀ + σ²I)`; in the primal, with `A = ΦᵀΦ + σ²I`, `α = A⁻¹Φᵀy`, `r = y − Φα`:
//!
//! `log p(y) = −½[(yᵀy − yᵀΦα)/σ² + (N − F) log σ² + log|A| + N log 2π]` (`F = 2M`),
//!
//! `∂ log p/∂Φ = G = r rᵀΦ/σ⁴ − ΦA⁻¹`, `∂ log p/∂σ² = −½((N − F)/σ² + tr A⁻¹) + ½‖r‖²/σ⁴`.
//! The chain rule through `Φ` gives `∂/∂ log w_q = ½ Σ_{c∈q} Σ_i G_ic Φ_ic` and, per frequency,
//! `∂/∂ω_j = Σ_i (G_is Φ_ic − G_ic Φ_is) x_i` (columns `c`, `s` of its cosine and sine), hence
//! `∂/∂μ_q = Σ_{j∈q} ∂/∂ω_j` and `∂/∂ log s_q = Σ_{j∈q} ∂/∂ω_j ⊙ z_j ⊙ s_q`. `O(NM² + M³)` per
//! evaluation. Each of `restarts` random starts runs `restart_iterations` L-BFGS steps; the best
//! continues to `max_iterations`. The prediction is the posterior mean `φ(x)ᵀα` (as an
//! [`crate::baselines::BaselineModel`]).

use crate::baselines::{Baseline, BaselineModel};
use crate::error::{BankError, check_count};
use crate::features::{StandardisedRows, fill_features, standardised_rows};
use crate::params::Task;
use bke_core::numeric::LN_2PI;
use bke_core::optim::{LbfgsOptions, minimize};
use bke_core::{Dataset, Estimator, Progress, Valid};
use bke_linalg::{Backend, Mat, Trans};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Parameters of A la Carte.
#[derive(Debug, Clone, PartialEq)]
pub struct AlacParams {
    /// Total frequencies `M` (`2M` features). Default 128.
    pub frequencies: usize,
    /// Mixture components `Q` (each gets `M/Q` frequencies). Default 4.
    pub components: usize,
    /// Random restarts. Default 3.
    pub restarts: usize,
    /// L-BFGS iterations of each restart before the best is continued. Default 15.
    pub restart_iterations: usize,
    /// L-BFGS iterations of the continued best start. Default 100.
    pub max_iterations: usize,
    /// Training rows used (an evenly spaced subset above it). Default 10 000.
    pub max_rows: usize,
    /// Seed of the base draws and restarts.
    pub seed: u64,
}

impl Default for AlacParams {
    fn default() -> Self {
        Self {
            frequencies: 128,
            components: 4,
            restarts: 3,
            restart_iterations: 15,
            max_iterations: 100,
            max_rows: 10_000,
            seed: 0,
        }
    }
}

impl bke_core::Params for AlacParams {
    type Error = BankError;
    fn validate(&self) -> Result<(), BankError> {
        crate::error::check_frequencies(self.frequencies, self.components)?;
        check_count("restarts", self.restarts)?;
        check_count("max_iterations", self.max_iterations)?;
        check_count("max_rows", self.max_rows)?;
        if self.components > self.frequencies {
            return Err(crate::error::invalid(
                "components",
                self.components as f64,
                format!("must not exceed frequencies = {}", self.frequencies),
            ));
        }
        Ok(())
    }
}

/// The fixed parts of the problem: inputs, targets, base draws `z` and each frequency's component.
pub struct AlacProblem {
    x: Mat,
    y: Vec<f64>,
    z: Vec<f64>,
    owner: Vec<usize>,
    q: usize,
}

impl AlacProblem {
    /// A problem on standardised inputs `x` (`N × d`) and targets `y` with `m` frequencies in `q`
    /// components (frequency `j` belongs to component `j mod q`).
    pub fn new(x: Mat, y: Vec<f64>, m: usize, q: usize, rng: &mut impl Rng) -> Self {
        let d = x.ncols();
        let z = (0..m * d).map(|_| rng.sample(StandardNormal)).collect();
        Self { x, y, z, owner: (0..m).map(|j| j % q).collect(), q }
    }

    fn dim(&self) -> usize {
        self.x.ncols()
    }

    /// Number of packed parameters: `Q` log-weights, `Qd` means, `Qd` log-scales, `log σ²`.
    pub fn n_params(&self) -> usize {
        self.q * (2 * self.dim() + 1) + 1
    }

    /// The frequencies (row-major `M × d`) and each frequency's amplitude `a_q` at parameters `u`.
    fn frequencies(&self, u: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (d, q, m) = (self.dim(), self.q, self.owner.len());
        let counts: Vec<usize> = (0..q).map(|k| self.owner.iter().filter(|&&o| o == k).count()).collect();
        let mut w = vec![0.0; m * d];
        let mut amp = vec![0.0; m];
        for j in 0..m {
            let k = self.owner[j];
            amp[j] = (u[k].exp() / counts[k] as f64).sqrt();
            for a in 0..d {
                let (mu, ls) = (u[q + k * d + a], u[q + q * d + k * d + a]);
                w[j * d + a] = mu + ls.exp() * self.z[j * d + a];
            }
        }
        (w, amp)
    }

    /// `Φ` at parameters `u` (unscaled by `1/√M`: the amplitudes carry the scale).
    fn features(&self, u: &[f64]) -> (Mat, Vec<f64>, Vec<f64>) {
        let (w, amp) = self.frequencies(u);
        let m = amp.len();
        let mut phi = Mat::zeros(self.x.nrows(), 2 * m);
        fill_features(&self.x, &w, 1, &mut phi);
        for j in 0..m {
            for c in [j, m + j] {
                for v in phi.col_mut(c) {
                    *v *= amp[j];
                }
            }
        }
        (phi, w, amp)
    }

    /// `−log p(y)` and its gradient in the packed parameters (module docs); `None` where `A` is not
    /// positive definite.
    pub fn objective<B: Backend>(&self, u: &[f64]) -> Option<(f64, Vec<f64>)> {
        if u.iter().any(|v| !v.is_finite() || v.abs() > 50.0) {
            return None;
        }
        let (n, d, q) = (self.x.nrows(), self.dim(), self.q);
        let (phi, _, _) = self.features(u);
        let f = phi.ncols();
        let s2 = u[self.n_params() - 1].exp();
        let mut a = B::gram(phi.as_ref());
        for i in 0..f {
            a[(i, i)] += s2;
        }
        let l = B::cholesky(a.as_ref()).ok()?;
        let mut alpha = vec![0.0; f];
        B::gemv(1.0, phi.as_ref(), Trans::Yes, &self.y, 0.0, &mut alpha).ok()?;
        let b = alpha.clone();
        B::cholesky_solve_vec_in_place(l.as_ref(), &mut alpha).ok()?;
        let mut r = self.y.clone();
        B::gemv(-1.0, phi.as_ref(), Trans::No, &alpha, 1.0, &mut r).ok()?;
        let yty: f64 = self.y.iter().map(|v| v * v).sum();
        let ytpa: f64 = b.iter().zip(&alpha).map(|(x, y)| x * y).sum();
        let logp = -0.5
            * ((yty - ytpa) / s2
                + (n as f64 - f as f64) * s2.ln()
                + B::cholesky_logdet(l.as_ref())
                + n as f64 * LN_2PI);
        // A⁻¹Φᵀ (F × N), then G = r (rᵀΦ)/σ⁴ − ΦA⁻¹.
        let mut ainv_phit = phi.transpose();
        B::cholesky_solve_in_place(l.as_ref(), ainv_phit.as_mut()).ok()?;
        let mut rphi = vec![0.0; f];
        B::gemv(1.0, phi.as_ref(), Trans::Yes, &r, 0.0, &mut rphi).ok()?;
        let g = Mat::from_fn(n, f, |i, c| r[i] * rphi[c] / (s2 * s2) - ainv_phit[(c, i)]);
        let ainv = B::cholesky_inverse(l.as_ref()).ok()?;
        let tr_ainv: f64 = (0..f).map(|i| ainv[(i, i)]).sum();
        let m = f / 2;
        let mut grad = vec![0.0; self.n_params()];
        // per-frequency h_ij = G_is Φ_ic − G_ic Φ_is, ∂/∂ω_j = Xᵀ h_j
        let mut h = Mat::zeros(n, m);
        for j in 0..m {
            let (c, s) = (j, m + j);
            let (gc, gs, pc, ps) = (g.col(c), g.col(s), phi.col(c), phi.col(s));
            let mut wsum = 0.0;
            for i in 0..n {
                h[(i, j)] = gs[i] * pc[i] - gc[i] * ps[i];
                wsum += gc[i] * pc[i] + gs[i] * ps[i];
            }
            grad[self.owner[j]] += 0.5 * wsum;
        }
        let mut gw = Mat::zeros(d, m);
        B::gemm(1.0, self.x.as_ref(), Trans::Yes, h.as_ref(), Trans::No, 0.0, gw.as_mut()).ok()?;
        for j in 0..m {
            let k = self.owner[j];
            for a in 0..d {
                let gwa = gw[(a, j)];
                grad[q + k * d + a] += gwa;
                grad[q + q * d + k * d + a] += gwa * self.z[j * d + a] * u[q + q * d + k * d + a].exp();
            }
        }
        let ns = self.n_params() - 1;
        grad[ns] = s2
            * (-0.5 * ((n as f64 - f as f64) / s2 + tr_ainv)
                + 0.5 * r.iter().map(|v| v * v).sum::<f64>() / (s2 * s2));
        Some((-logp, grad.into_iter().map(|v| -v).collect()))
    }

    /// A random start: equal weights, means near zero (the first at zero), scales `1/ℓ` jittered on
    /// the log scale, `σ² = 0.1`.
    fn start(&self, ell: f64, rng: &mut impl Rng) -> Vec<f64> {
        let (d, q) = (self.dim(), self.q);
        let mut u = vec![(1.0 / q as f64).ln(); q];
        for k in 0..q {
            for _ in 0..d {
                let z: f64 = rng.sample(StandardNormal);
                u.push(if k == 0 { 0.0 } else { z / ell });
            }
        }
        for _ in 0..q * d {
            let z: f64 = rng.sample(StandardNormal);
            u.push((1.0 / ell).ln() + 0.5 * z);
        }
        u.push(0.1f64.ln());
        u
    }
}

impl Estimator for AlacParams {
    type Data = Dataset;
    type Fitted = BaselineModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<BaselineModel, BankError> {
        fit::<B>(params, data, progress)
    }
}

fn fit<B: Backend>(
    p: &AlacParams,
    data: &Dataset,
    progress: &dyn Progress,
) -> Result<BaselineModel, BankError> {
    let StandardisedRows { inputs, x: xs, y_moments: (y_mean, y_scale), y: ys } =
        standardised_rows(data, p.max_rows, "A la Carte")?;
    let ell = crate::baselines::median_or_one(&xs);
    let mut rng = ChaCha8Rng::seed_from_u64(p.seed);
    let prob = AlacProblem::new(xs, ys, p.frequencies, p.components, &mut rng);
    let short = LbfgsOptions { max_iter: p.restart_iterations.max(1), ..Default::default() };
    let mut best: Option<(f64, Vec<f64>)> = None;
    for r in 0..p.restarts {
        progress.checkpoint()?;
        let u0 = prob.start(ell, &mut rng);
        if let Ok(res) = minimize(|u| prob.objective::<B>(u), u0, short) {
            if best.as_ref().is_none_or(|b| res.f < b.0) {
                best = Some((res.f, res.x));
            }
        }
        progress.update("a la carte restarts", r as u64 + 1, p.restarts as u64);
    }
    let (_, u) = best.ok_or_else(|| BankError::Numerical {
        what: "A la Carte".into(),
        detail: "no restart could evaluate the marginal likelihood".into(),
    })?;
    let long = LbfgsOptions { max_iter: p.max_iterations, ..Default::default() };
    let u = minimize(|u| prob.objective::<B>(u), u.clone(), long).map(|r| r.x).unwrap_or(u);
    // posterior mean weights in the features' own scale, then in the standard 1/√M scale
    let (phi, w, amp) = prob.features(&u);
    let f = phi.ncols();
    let s2 = u[prob.n_params() - 1].exp();
    let mut a = B::gram(phi.as_ref());
    for i in 0..f {
        a[(i, i)] += s2;
    }
    let l = B::cholesky(a.as_ref())?;
    let mut beta = vec![0.0; f];
    B::gemv(1.0, phi.as_ref(), Trans::Yes, &prob.y, 0.0, &mut beta)?;
    B::cholesky_solve_vec_in_place(l.as_ref(), &mut beta)?;
    let m = amp.len();
    let root_m = (m as f64).sqrt();
    for j in 0..m {
        beta[j] *= amp[j] * root_m;
        beta[m + j] *= amp[j] * root_m;
    }
    Ok(BaselineModel {
        kind: Baseline::Alac,
        task: Task::Regression,
        inputs,
        w,
        beta,
        y_mean,
        y_scale,
        chosen_prior: s2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    /// The analytic gradient against central finite differences, and the value against the dense
    /// Gaussian log density of `y ~ N(0, ΦΦᵀ + σ²I)`.
    #[test]
    fn objective_matches_dense_and_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let x = Mat::from_fn(9, 2, |_, _| rng.sample::<f64, _>(StandardNormal));
        let y: Vec<f64> = (0..9).map(|i| (x[(i, 0)] * 1.3).sin() + 0.2 * x[(i, 1)]).collect();
        let prob = AlacProblem::new(x, y.clone(), 6, 2, &mut rng);
        let u: Vec<f64> = (0..prob.n_params()).map(|_| 0.3 * rng.sample::<f64, _>(StandardNormal)).collect();
        let (f0, g) = prob.objective::<DefaultBackend>(&u).unwrap();
        let (phi, _, _) = prob.features(&u);
        let s2 = u[prob.n_params() - 1].exp();
        let mut c = Mat::from_fn(9, 9, |i, j| (0..12).map(|k| phi[(i, k)] * phi[(j, k)]).sum::<f64>());
        for i in 0..9 {
            c[(i, i)] += s2;
        }
        let l = DefaultBackend::cholesky(c.as_ref()).unwrap();
        let mut z = y.clone();
        DefaultBackend::cholesky_solve_vec_in_place(l.as_ref(), &mut z).unwrap();
        let dense = 0.5
            * (z.iter().zip(&y).map(|(a, b)| a * b).sum::<f64>()
                + DefaultBackend::cholesky_logdet(l.as_ref())
                + 9.0 * LN_2PI);
        assert!((f0 - dense).abs() < 1e-9, "{f0} vs {dense}");
        for k in 0..u.len() {
            let h = 1e-6;
            let (mut up, mut um) = (u.clone(), u.clone());
            up[k] += h;
            um[k] -= h;
            let fd = (prob.objective::<DefaultBackend>(&up).unwrap().0
                - prob.objective::<DefaultBackend>(&um).unwrap().0)
                / (2.0 * h);
            assert!((fd - g[k]).abs() < 1e-5 * fd.abs().max(1.0), "parameter {k}: {fd} vs {}", g[k]);
        }
    }
}
