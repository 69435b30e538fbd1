//! Exact Gaussian-process regression with an ARD squared-exponential kernel and type-II maximum
//! likelihood, the gold-standard baseline of the BaNK tables (exact for `N ≤ max_rows`; above it, a
//! subset-of-data GP on `max_rows` evenly spaced rows of the shuffled data).
//!
//! The GP itself is bke-core's exact GP regression ([`bke_core::gp`]: the model, its log marginal
//! likelihood with gradient, R&W eqs. (5.8)–(5.9), and prediction); this module is the baseline's
//! policy around it. On standardised inputs and target it minimises the negative log marginal
//! likelihood over `u = (log ℓ_1..ℓ_d, log σ_f², log σ_n²)` by L-BFGS ([`bke_core::optim`]) from one
//! start, `ℓ_d = ` the median pairwise distance, `σ_f² = 1`, `σ_n² = 0.1`. Prediction: mean `k_*ᵀα`,
//! variance `σ_f² − ‖L⁻¹k_*‖² + σ_n²` (of the target, so the noise is included).

use crate::error::{BankError, check_count, mismatch};
use crate::features::{StandardisedRows, Standardizer, standardised_rows};
use bke_core::gp::{FittedGp, GpKernel, GpParams};
use bke_core::numeric::LogParams;
use bke_core::optim::{LbfgsOptions, minimize};
use bke_core::{Dataset, Estimator, Kernel, Params, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::Backend;

/// Parameters of the GP-ARD baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct GpArdParams {
    /// Largest number of training rows used exactly (`O(N³)` per likelihood evaluation). Default 2000.
    pub max_rows: usize,
    /// L-BFGS iterations. Default 100.
    pub max_iter: usize,
}

impl Default for GpArdParams {
    fn default() -> Self {
        Self { max_rows: 2000, max_iter: 100 }
    }
}

impl bke_core::Params for GpArdParams {
    type Error = BankError;
    fn validate(&self) -> Result<(), BankError> {
        check_count("max_rows", self.max_rows)?;
        check_count("max_iter", self.max_iter)
    }
}

/// A fitted GP: the input and target standardisation, the hyperparameters and bke-core's fitted GP
/// (`α` and the Cholesky factor of `K`).
#[derive(Debug, Clone, PartialEq)]
pub struct GpArdModel {
    /// Input standardisation.
    pub inputs: Standardizer,
    /// Target mean and standard deviation.
    pub y_moments: (f64, f64),
    /// Standardised training inputs.
    pub x: Points,
    /// The learned kernel `exp(−½ Σ (Δ_d/ℓ_d)²)` (standardised units).
    pub kernel: Kernel,
    /// Signal variance `σ_f²`.
    pub signal: f64,
    /// Noise variance `σ_n²`.
    pub noise: f64,
    /// The minimised negative log marginal likelihood.
    pub nlml: f64,
    gp: FittedGp,
}

impl Estimator for GpArdParams {
    type Data = Dataset;
    type Fitted = GpArdModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        _progress: &dyn Progress,
    ) -> Result<GpArdModel, BankError> {
        fit::<B>(params, data)
    }
}

/// The hyperparameters packed as logarithms ([`LogParams`]): `(ℓ_1..ℓ_d, σ_f², σ_n²)`.
fn pack(lengthscales: &[f64], signal: f64, noise: f64) -> Vec<f64> {
    let mut p = LogParams::default();
    p.extend(lengthscales);
    p.push(signal);
    p.push(noise);
    p.into_vec()
}

/// The inverse of [`pack`]; `None` outside `e^{±30}` (where the optimiser has left any sensible range).
fn unpack(u: &[f64], d: usize) -> Option<(Kernel, f64, f64)> {
    if u.iter().any(|v| !(v.abs() <= 30.0)) {
        return None;
    }
    let mut r = LogParams::reader(u);
    let k = Kernel::se_ard(r.take_n("lengthscale", d).ok()?).ok()?;
    let (signal, noise) = (r.take("signal variance").ok()?, r.take("noise variance").ok()?);
    r.finish().ok()?;
    Some((k, signal, noise))
}

/// The hyperparameters as bke-core's [`GpKernel`].
fn gp_kernel(k: &Kernel, signal: f64, noise: f64) -> GpKernel {
    GpKernel { lengthscales: k.lengthscales().to_vec(), signal_variance: signal, noise_variance: noise }
}

/// The negative log marginal likelihood and its gradient in `u` (module docs), by
/// [`GpKernel::log_marginal`]; `u` holds one log-lengthscale per input, or one shared by all.
pub fn nlml_and_gradient<B: Backend>(x: &Points, y: &[f64], u: &[f64]) -> Option<(f64, Vec<f64>)> {
    let (k, signal, noise) = unpack(u, u.len().checked_sub(2)?)?;
    let data = Dataset::new(x.clone(), y.to_vec()).ok()?;
    let e = gp_kernel(&k, signal, noise).log_marginal::<B>(&data).ok()?;
    let mut grad: Vec<f64> = e.grad_log_lengthscales.iter().map(|g| -g).collect();
    grad.push(-e.grad_log_signal_variance);
    grad.push(-e.grad_log_noise_variance);
    Some((-e.log_marginal, grad))
}

fn fit<B: Backend>(p: &GpArdParams, data: &Dataset) -> Result<GpArdModel, BankError> {
    let StandardisedRows { inputs, x, y_moments: (ym, ysd), y } =
        standardised_rows(data, p.max_rows, "GP regression")?;
    let xs = Points::from_mat("inputs", &x)?;
    let d = xs.dim();
    let ell = bke_core::median_distance(&xs).unwrap_or(1.0);
    let u0 = pack(&vec![ell; d], 1.0, 0.1);
    let opts = LbfgsOptions { max_iter: p.max_iter, ..Default::default() };
    let res = minimize(|u| nlml_and_gradient::<B>(&xs, &y, u), u0, opts)
        .map_err(|e| BankError::Numerical { what: "GP marginal likelihood".into(), detail: e })?;
    let (kernel, signal, noise) = unpack(&res.x, d).ok_or_else(|| BankError::Numerical {
        what: "GP hyperparameters".into(),
        detail: "the optimiser left the valid range".into(),
    })?;
    let fixed = GpParams { fixed: Some(gp_kernel(&kernel, signal, noise)), ..GpParams::default() };
    let gp = fixed.check()?.fit::<B>(&Dataset::new(xs.clone(), y)?).map_err(|_| BankError::Numerical {
        what: "GP kernel matrix".into(),
        detail: "not positive definite at the learned hyperparameters".into(),
    })?;
    Ok(GpArdModel { inputs, y_moments: (ym, ysd), x: xs, kernel, signal, noise, nlml: res.f, gp })
}

impl Predict for GpArdModel {
    type Output = Prediction;
    type Error = BankError;

    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, BankError> {
        if x.dim() != self.x.dim() {
            return Err(mismatch("prediction inputs (columns)", self.x.dim(), x.dim()));
        }
        let xt = Points::from_mat("inputs", &self.inputs.apply(x))?;
        let latent = self.gp.predict::<B>(&xt)?;
        let (ym, ysd) = self.y_moments;
        let variance = latent.variance.iter().map(|v| (v + self.noise) * ysd * ysd).collect();
        Ok(Prediction { mean: latent.mean.iter().map(|m| m * ysd + ym).collect(), variance })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    /// The analytic gradient against central finite differences.
    #[test]
    fn gradient_matches_finite_differences() {
        let xs: Vec<Vec<f64>> =
            (0..15).map(|i| vec![(i as f64 * 0.7).sin(), (i as f64 * 0.3).cos()]).collect();
        let x = Points::from_rows("x", &xs).unwrap();
        let y: Vec<f64> = xs.iter().map(|v| v[0] * 2.0 + (3.0 * v[1]).sin()).collect();
        let u = vec![0.2, -0.3, 0.4, -1.5];
        let (_, g) = nlml_and_gradient::<DefaultBackend>(&x, &y, &u).unwrap();
        for j in 0..4 {
            let h = 1e-5;
            let (mut up, mut um) = (u.clone(), u.clone());
            up[j] += h;
            um[j] -= h;
            let fd = (nlml_and_gradient::<DefaultBackend>(&x, &y, &up).unwrap().0
                - nlml_and_gradient::<DefaultBackend>(&x, &y, &um).unwrap().0)
                / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-6 * fd.abs().max(1.0), "component {j}: {fd} vs {}", g[j]);
        }
    }

    /// An irrelevant input gets a long lengthscale; the fit interpolates a smooth function.
    #[test]
    fn ard_switches_off_an_irrelevant_input() {
        let xs: Vec<Vec<f64>> =
            (0..80).map(|i| vec![i as f64 / 20.0, ((i * 37) % 80) as f64 / 20.0]).collect();
        let y: Vec<f64> = xs.iter().map(|v| v[0].sin() + 0.01 * ((v[0] * 91.0).sin())).collect();
        let data = Dataset::new(Points::from_rows("x", &xs).unwrap(), y.clone()).unwrap();
        let m = GpArdParams::default().check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        let ls = m.kernel.lengthscales();
        assert!(ls[1] > 5.0 * ls[0], "lengthscales {ls:?}");
        let pred = m.predict::<DefaultBackend>(data.x()).unwrap();
        let mse = pred.mean.iter().zip(&y).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 80.0;
        assert!(mse < 1e-3, "{mse}");
    }
}
