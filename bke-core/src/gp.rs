//! # Exact Gaussian-process regression (squared exponential kernel, isotropic or ARD)
//!
//! The regression behind the kernel conditional-independence test of seed 000 §5 (Flaxman et al.
//! 2015: "use Gaussian process regression to control for certain variables and to obtain residuals")
//! and behind pre-whitening against a time index ([`crate::causal`]).
//!
//! **Model** (Rasmussen & Williams 2006, §2.2): `y_i = m + f(x_i) + ε_i`, `f ~ GP(0, σ_f² k_ℓ)`,
//! `k_ℓ(x, x') = exp(−½ Σ_d (x_d − x'_d)²/ℓ_d²)` (one `ℓ` shared by every input, or one per input:
//! ARD), `ε_i ~ N(0, σ_n²)`. The constant mean `m` is the sample mean of `y`. With
//! `K = σ_f² K_ℓ + σ_n² I` and `α = K⁻¹(y − m)`:
//!
//! - log marginal likelihood (R&W eq. (5.8)): `log p(y) = −½ (y − m)ᵀα − ½ log det K − (n/2) log 2π`;
//! - its gradient (R&W eq. (5.9)), with `W = ααᵀ − K⁻¹`: `∂/∂θ = ½ tr(W ∂K/∂θ)`, where
//!   `∂K_ij/∂log ℓ_d = σ_f² k_ij (x_id − x_jd)²/ℓ_d²`, `∂K/∂log σ_f² = σ_f² K_ℓ`,
//!   `∂K/∂log σ_n² = σ_n² I`;
//! - prediction of the latent function (R&W eqs. (2.25)–(2.26)): `E[f(x*)] = m + k*ᵀα`,
//!   `Var[f(x*)] = σ_f² − k*ᵀK⁻¹k*`, `k* = σ_f² (k_ℓ(x*, x_i))_i` (add `σ_n²` for a new observation);
//! - residuals at the training inputs: `y − E[f(X)] = y − m − (K − σ_n² I)α = σ_n² α`.
//!
//! **Learning** (ML-II): the hyperparameters maximise `log p(y)` by L-BFGS ([`crate::optim`]) on
//! `(log ℓ_1..ℓ_D, log σ_f², log(σ_n² − σ²_min))`, from several starts (the likelihood can have an
//! "all noise" and a "fit" mode); the best optimum is kept. The targets are standardised for the
//! search (unit variance), the inputs are not: the starts scale the lengthscales by each input's
//! standard deviation. `σ²_min = min_noise · var(y)` keeps `K` well conditioned and the residuals
//! from collapsing onto zero when the data interpolate exactly.
//!
//! ```
//! use bke_core::gp::GpParams;
//! use bke_core::{Dataset, Params, Points, Predict};
//! use bke_linalg::DefaultBackend;
//! let xs: Vec<f64> = (0..40).map(|i| i as f64 / 8.0).collect();
//! let y: Vec<f64> = xs.iter().map(|x| x.sin() + 0.05 * (7.0 * x).cos()).collect();
//! let data = Dataset::new(Points::from_1d("x", &xs)?, y)?;
//! let gp = GpParams::default().check()?.fit::<DefaultBackend>(&data)?;
//! let p = gp.predict::<DefaultBackend>(&Points::from_1d("x*", &[1.0])?)?;
//! assert!((p.mean[0] - 1f64.sin()).abs() < 0.1);
//! assert_eq!(gp.residuals().len(), 40);
//! # Ok::<(), bke_core::CoreError>(())
//! ```

use crate::estimator::{Dataset, Estimator, Params, Predict, Prediction, Progress, Valid};
use crate::numeric::LN_2PI;
use crate::optim::{LbfgsOptions, minimize};
use crate::{CoreError, Points, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use serde::{Deserialize, Serialize};

/// Settings of GP regression ([`GpParams::check`] → `fit::<B>(&Dataset)` → [`FittedGp`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GpParams {
    /// One lengthscale per input (ARD, the default) or one shared by all inputs.
    pub ard: bool,
    /// Use these hyperparameters instead of learning them (`None`, the default: ML-II).
    pub fixed: Option<GpKernel>,
    /// Number of optimiser starts, 1–3 (default 3): lengthscales `(1, 0.3, 3) × sd(x_d)` with noise
    /// `(0.1, 0.01, 0.5) × var(y)`; the best optimum is kept.
    pub starts: usize,
    /// Smallest noise variance relative to `var(y)` (default `1e-6`), in `[0, 1)`.
    pub min_noise: f64,
    /// The optimiser's options (default: 200 iterations, gradient tolerance `1e-5`).
    pub lbfgs: LbfgsOptions,
}

impl Default for GpParams {
    fn default() -> Self {
        Self { ard: true, fixed: None, starts: 3, min_noise: 1e-6, lbfgs: LbfgsOptions::default() }
    }
}

/// The covariance hyperparameters of a GP, in the units of the data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpKernel {
    /// Lengthscales `ℓ`: one (isotropic) or one per input.
    pub lengthscales: Vec<f64>,
    /// Signal variance `σ_f²`.
    pub signal_variance: f64,
    /// Noise variance `σ_n²`.
    pub noise_variance: f64,
}

impl GpKernel {
    /// Errors unless every value is finite and positive.
    pub fn validate(&self) -> Result<(), CoreError> {
        if self.lengthscales.is_empty() {
            return Err(CoreError::Empty { what: "GP lengthscales".into(), needed: 1 });
        }
        for &l in &self.lengthscales {
            check_positive("GP lengthscale", l)?;
        }
        check_positive("GP signal variance", self.signal_variance)?;
        check_positive("GP noise variance", self.noise_variance)
    }

    pub(crate) fn full_lengthscales(&self, dim: usize) -> Result<Vec<f64>, CoreError> {
        match self.lengthscales.len() {
            1 => Ok(vec![self.lengthscales[0]; dim]),
            d if d == dim => Ok(self.lengthscales.clone()),
            d => Err(CoreError::DimensionMismatch {
                what: "GP lengthscales (one, or one per input)".into(),
                expected: dim,
                found: d,
            }),
        }
    }

    /// The log marginal likelihood of `data` (targets centred at their mean) and its gradient
    /// with respect to `(log ℓ…, log σ_f², log σ_n²)` (module docs; one lengthscale entry per entry of
    /// [`GpKernel::lengthscales`]).
    pub fn log_marginal<B: Backend>(&self, data: &Dataset) -> Result<GpEvidence, CoreError> {
        self.validate()?;
        let x = data.x();
        x.check_len("GP training inputs", 1)?;
        let ls = self.full_lengthscales(x.dim())?;
        let m = mean(data.y());
        let yc: Vec<f64> = data.y().iter().map(|v| v - m).collect();
        let (e, _) = evidence::<B>(x, &yc, &ls, self.signal_variance, self.noise_variance, true)?;
        let grad_log_lengthscales =
            if self.lengthscales.len() == 1 { vec![e.grad_ls.iter().sum()] } else { e.grad_ls.clone() };
        Ok(GpEvidence {
            log_marginal: e.value,
            grad_log_lengthscales,
            grad_log_signal_variance: e.grad_sf2,
            grad_log_noise_variance: e.grad_sn2,
        })
    }
}

/// The log marginal likelihood and its gradient on the log scale ([`GpKernel::log_marginal`]).
#[derive(Debug, Clone, PartialEq)]
pub struct GpEvidence {
    /// `log p(y | X, θ)`.
    pub log_marginal: f64,
    /// `∂/∂log ℓ_d`.
    pub grad_log_lengthscales: Vec<f64>,
    /// `∂/∂log σ_f²`.
    pub grad_log_signal_variance: f64,
    /// `∂/∂log σ_n²`.
    pub grad_log_noise_variance: f64,
}

impl Params for GpParams {
    type Error = CoreError;

    fn validate(&self) -> Result<(), CoreError> {
        if !(1..=3).contains(&self.starts) {
            return Err(CoreError::InvalidParameter {
                name: "GP optimiser starts".into(),
                value: self.starts as f64,
                reason: "must be 1, 2 or 3".into(),
            });
        }
        if !(self.min_noise >= 0.0 && self.min_noise < 1.0) {
            return Err(CoreError::InvalidParameter {
                name: "GP min_noise".into(),
                value: self.min_noise,
                reason: "must lie in [0, 1) (a fraction of the target variance; 1e-6 is the default)".into(),
            });
        }
        if self.lbfgs.max_iter == 0 {
            return Err(CoreError::InvalidParameter {
                name: "GP optimiser max_iter".into(),
                value: 0.0,
                reason: "must be at least 1".into(),
            });
        }
        if let Some(k) = &self.fixed {
            k.validate()?;
        }
        Ok(())
    }
}

/// A fitted GP regression: the hyperparameters, the weights `α` and the Cholesky factor of `K`.
#[derive(Debug, Clone, PartialEq)]
pub struct FittedGp {
    x: Points,
    kernel: GpKernel,
    mean: f64,
    alpha: Vec<f64>,
    chol: Mat,
    log_marginal: f64,
    converged: bool,
    evaluations: usize,
}

impl FittedGp {
    /// The hyperparameters (learned or fixed), in the units of the data.
    pub fn kernel(&self) -> &GpKernel {
        &self.kernel
    }

    /// The constant mean `m` (the sample mean of the targets).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// `log p(y | X, θ)` at the hyperparameters.
    pub fn log_marginal(&self) -> f64 {
        self.log_marginal
    }

    /// Whether the best start's optimiser stopped on a tolerance (always true for fixed hyperparameters).
    pub fn converged(&self) -> bool {
        self.converged
    }

    /// Objective evaluations over all starts.
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// The residuals `y_i − E[f(x_i) | y]` at the training inputs (`σ_n² α`, module docs).
    pub fn residuals(&self) -> Vec<f64> {
        self.alpha.iter().map(|a| self.kernel.noise_variance * a).collect()
    }
}

impl Predict for FittedGp {
    type Output = Prediction;
    type Error = CoreError;

    /// Mean and variance of the latent `m + f(x*)` (add [`GpKernel::noise_variance`] for a new
    /// observation).
    fn predict<B: Backend>(&self, q: &Points) -> Result<Prediction, CoreError> {
        self.x.check_dim("GP prediction inputs", q.dim())?;
        let ls = self.kernel.full_lengthscales(self.x.dim())?;
        let sf2 = self.kernel.signal_variance;
        let mut ks = Mat::from_fn(self.x.len(), q.len(), |i, j| sf2 * se(self.x.point(i), q.point(j), &ls));
        let mean = (0..q.len())
            .map(|j| self.mean + ks.col(j).iter().zip(&self.alpha).map(|(a, b)| a * b).sum::<f64>())
            .collect();
        B::solve_lower_in_place(self.chol.as_ref(), ks.as_mut())?;
        let variance =
            (0..q.len()).map(|j| (sf2 - ks.col(j).iter().map(|v| v * v).sum::<f64>()).max(0.0)).collect();
        Ok(Prediction { mean, variance })
    }
}

impl Estimator for GpParams {
    type Data = Dataset;
    type Fitted = FittedGp;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<FittedGp, CoreError> {
        let x = data.x();
        x.check_len("GP training data", 2)?;
        let m = mean(data.y());
        let sd = (data.y().iter().map(|v| (v - m) * (v - m)).sum::<f64>() / data.len() as f64).sqrt();
        let scale = if sd > 0.0 { sd } else { 1.0 };
        let ys: Vec<f64> = data.y().iter().map(|v| (v - m) / scale).collect();
        let (std_kernel, converged, evaluations) = match &params.fixed {
            Some(k) => {
                let ls = k.full_lengthscales(x.dim())?;
                let s2 = scale * scale;
                let kernel = GpKernel {
                    lengthscales: ls,
                    signal_variance: k.signal_variance / s2,
                    noise_variance: k.noise_variance / s2,
                };
                (kernel, true, 1)
            }
            None => learn::<B>(params, x, &ys, progress)?,
        };
        let ls = std_kernel.full_lengthscales(x.dim())?;
        let (e, chol) =
            evidence::<B>(x, &ys, &ls, std_kernel.signal_variance, std_kernel.noise_variance, false)?;
        let s2 = scale * scale;
        let lengthscales = if params.ard || params.fixed.as_ref().is_some_and(|k| k.lengthscales.len() > 1) {
            ls
        } else {
            vec![ls[0]]
        };
        let kernel = GpKernel {
            lengthscales,
            signal_variance: std_kernel.signal_variance * s2,
            noise_variance: std_kernel.noise_variance * s2,
        };
        let mut chol = chol.expect("evidence returns the factor");
        chol.as_mut_slice().iter_mut().for_each(|v| *v *= scale);
        Ok(FittedGp {
            x: x.clone(),
            kernel,
            mean: m,
            alpha: e.alpha.iter().map(|a| a / scale).collect(),
            chol,
            log_marginal: e.value - data.len() as f64 * scale.ln(),
            converged,
            evaluations,
        })
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// `exp(−½ Σ_d (a_d − b_d)²/ℓ_d²)`.
#[inline]
pub(crate) fn se(a: &[f64], b: &[f64], ls: &[f64]) -> f64 {
    let r2: f64 = a.iter().zip(b).zip(ls).map(|((u, v), l)| ((u - v) / l).powi(2)).sum();
    (-0.5 * r2).exp()
}

/// The standard deviation of each input column (1 for a constant column).
fn column_scales(x: &Points) -> Vec<f64> {
    let n = x.len() as f64;
    (0..x.dim())
        .map(|d| {
            let m = x.iter().map(|p| p[d]).sum::<f64>() / n;
            let sd = (x.iter().map(|p| (p[d] - m).powi(2)).sum::<f64>() / n).sqrt();
            if sd > 0.0 { sd } else { 1.0 }
        })
        .collect()
}

/// Learns standardised-scale hyperparameters by ML-II from up to three starts.
fn learn<B: Backend>(
    params: &GpParams,
    x: &Points,
    ys: &[f64],
    progress: &dyn Progress,
) -> Result<(GpKernel, bool, usize), CoreError> {
    let dim = x.dim();
    let scales = column_scales(x);
    let iso_scale = (scales.iter().map(|s| s * s).sum::<f64>() / dim as f64).sqrt();
    let nl = if params.ard { dim } else { 1 };
    let floor = params.min_noise;
    let unpack = |p: &[f64]| -> Vec<f64> {
        let ls: Vec<f64> =
            if params.ard { p[..dim].iter().map(|v| v.exp()).collect() } else { vec![p[0].exp(); dim] };
        ls
    };
    let objective = |p: &[f64]| -> Option<(f64, Vec<f64>)> {
        let ls = unpack(p);
        let sf2 = p[nl].exp();
        let extra = p[nl + 1].exp();
        let sn2 = floor + extra;
        let (e, _) = evidence::<B>(x, ys, &ls, sf2, sn2, true).ok()?;
        let mut g: Vec<f64> = if params.ard { e.grad_ls.clone() } else { vec![e.grad_ls.iter().sum()] };
        g.push(e.grad_sf2);
        g.push(e.grad_sn2 * extra / sn2);
        Some((-e.value, g.iter().map(|v| -v).collect()))
    };
    const STARTS: [(f64, f64); 3] = [(1.0, 0.1), (0.3, 0.01), (3.0, 0.5)];
    let mut best: Option<(f64, Vec<f64>, bool)> = None;
    let mut evaluations = 0;
    for (s, &(lscale, noise)) in STARTS.iter().take(params.starts).enumerate() {
        progress.checkpoint()?;
        progress.update("GP hyperparameters", s as u64, params.starts as u64);
        let mut p0: Vec<f64> = if params.ard {
            scales.iter().map(|v| (lscale * v).ln()).collect()
        } else {
            vec![(lscale * iso_scale).ln()]
        };
        p0.push(0.0);
        p0.push((noise - floor).max(1e-12).ln());
        let Ok(r) = minimize(&objective, p0, params.lbfgs) else { continue };
        evaluations += r.evaluations;
        if best.as_ref().is_none_or(|b| r.f < b.0) {
            best = Some((r.f, r.x, r.converged));
        }
    }
    progress.update("GP hyperparameters", params.starts as u64, params.starts as u64);
    let (_, p, converged) = best.ok_or_else(|| CoreError::InvalidChoice {
        what: "GP regression".into(),
        reason: "the marginal likelihood cannot be evaluated at any starting point; check the inputs for \
                 extreme values and rescale them"
            .into(),
    })?;
    let kernel = GpKernel {
        lengthscales: unpack(&p),
        signal_variance: p[nl].exp(),
        noise_variance: floor + p[nl + 1].exp(),
    };
    Ok((kernel, converged, evaluations))
}

/// The pieces of one evaluation of the evidence.
struct Evaluation {
    value: f64,
    alpha: Vec<f64>,
    grad_ls: Vec<f64>,
    grad_sf2: f64,
    grad_sn2: f64,
}

/// `log p(y)` for centred `y` and full lengthscales `ls`, with the gradient when `grad` (module
/// docs), and the Cholesky factor of `K` when not.
fn evidence<B: Backend>(
    x: &Points,
    y: &[f64],
    ls: &[f64],
    sf2: f64,
    sn2: f64,
    grad: bool,
) -> Result<(Evaluation, Option<Mat>), CoreError> {
    let n = x.len();
    let dim = x.dim();
    // Scaled inputs z_i = x_i / ℓ; ‖z_i − z_j‖² = ‖z_i‖² + ‖z_j‖² − 2 z_iᵀz_j from one symmetric
    // product (clamped at 0 against cancellation), and each pair's exponential once.
    let z = Mat::from_fn(n, dim, |i, k| x.point(i)[k] / ls[k]);
    let sq: Vec<f64> = (0..n).map(|i| (0..dim).map(|k| z[(i, k)] * z[(i, k)]).sum()).collect();
    let mut kl = Mat::zeros(n, n);
    B::gemm_symmetric(1.0, z.as_ref(), Trans::No, z.as_ref(), Trans::Yes, 0.0, kl.as_mut())?;
    for j in 0..n {
        kl[(j, j)] = 1.0;
        for i in j + 1..n {
            let v = (-0.5 * (sq[i] + sq[j] - 2.0 * kl[(i, j)]).max(0.0)).exp();
            kl[(i, j)] = v;
            kl[(j, i)] = v;
        }
    }
    let mut k = Mat::from_fn(n, n, |i, j| sf2 * kl[(i, j)] + if i == j { sn2 } else { 0.0 });
    B::cholesky_in_place(k.as_mut())?;
    let l = k;
    let mut alpha = y.to_vec();
    B::cholesky_solve_vec_in_place(l.as_ref(), &mut alpha)?;
    let quad: f64 = y.iter().zip(&alpha).map(|(a, b)| a * b).sum();
    let value = -0.5 * quad - 0.5 * B::cholesky_logdet(l.as_ref()) - 0.5 * n as f64 * LN_2PI;
    if !value.is_finite() {
        return Err(CoreError::NonFinite {
            what: "GP log marginal likelihood".into(),
            row: 0,
            col: 0,
            value,
        });
    }
    if !grad {
        let e = Evaluation { value, alpha, grad_ls: Vec::new(), grad_sf2: 0.0, grad_sn2: 0.0 };
        return Ok((e, Some(l)));
    }
    let kinv = B::cholesky_inverse(l.as_ref())?;
    // W̃ = (ααᵀ − K⁻¹) ∘ σ_f² K_ℓ (symmetric). ∂/∂log ℓ_d = ½ Σ_ij W̃_ij (z_id − z_jd)²
    // = Σ_i z_id (r_i z_id − (W̃Z)_id) with r = W̃1 (one product instead of a loop over pairs and
    // inputs); ∂/∂log σ_f² = ½ Σ_ij W̃_ij.
    let mut w = kinv;
    for j in 0..n {
        for i in 0..n {
            w[(i, j)] = (alpha[i] * alpha[j] - w[(i, j)]) * sf2 * kl[(i, j)];
        }
    }
    let r: Vec<f64> = (0..n).map(|i| w.col(i).iter().sum()).collect();
    let mut wz = Mat::zeros(n, dim);
    B::gemm(1.0, w.as_ref(), Trans::No, z.as_ref(), Trans::No, 0.0, wz.as_mut())?;
    let grad_ls: Vec<f64> =
        (0..dim).map(|k| (0..n).map(|i| z[(i, k)] * (r[i] * z[(i, k)] - wz[(i, k)])).sum()).collect();
    let grad_sf2 = 0.5 * r.iter().sum::<f64>();
    let trace_w: f64 = (0..n).map(|i| w[(i, i)] / sf2).sum();
    let e = Evaluation { value, alpha, grad_ls, grad_sf2, grad_sn2: 0.5 * sn2 * trace_w };
    Ok((e, None))
}

#[cfg(test)]
mod tests;
