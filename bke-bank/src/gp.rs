//! Exact Gaussian-process regression with an ARD squared-exponential kernel and type-II maximum
//! likelihood, the gold-standard baseline of the BaNK tables (exact for `N ≤ max_rows`; above it, a
//! subset-of-data GP on `max_rows` evenly spaced rows of the shuffled data).
//!
//! On standardised inputs and target, `k(x, x') = σ_f² exp(−½ Σ_d (x_d − x'_d)²/ℓ_d²)` and
//! `K = k(X, X) + σ_n² I`; the negative log marginal likelihood is
//! `½ yᵀK⁻¹y + ½ log|K| + (N/2) log 2π` and its gradient in `u_j = log θ_j` is
//! `−½ tr((ααᵀ − K⁻¹) ∂K/∂u_j)` with `α = K⁻¹y`, `∂K/∂ log ℓ_d = K_f ⊙ Δ_d²/ℓ_d²`,
//! `∂K/∂ log σ_f² = K_f`, `∂K/∂ log σ_n² = σ_n² I` (Rasmussen & Williams 2006, eq. (5.9)). L-BFGS
//! ([`bke_core::optim`]) from `ℓ_d = ` the median pairwise distance, `σ_f² = 1`, `σ_n² = 0.1`.
//! Prediction: mean `k_*ᵀα`, variance `σ_f² − ‖L⁻¹k_*‖² + σ_n²` (of the target).

use crate::error::{BankError, check_count, mismatch};
use crate::features::{Standardizer, target_moments};
use bke_core::numeric::{LN_2PI, LogParams};
use bke_core::optim::{LbfgsOptions, minimize};
use bke_core::{Dataset, Estimator, Kernel, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::{Backend, Mat, Trans};

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

/// A fitted GP: the training inputs, the hyperparameters, `α` and the Cholesky factor of `K`.
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
    alpha: Vec<f64>,
    chol: Mat,
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

/// `K_f` (signal kernel matrix) and the factor of `K = K_f + σ_n² I`.
fn factor<B: Backend>(x: &Points, k: &Kernel, signal: f64, noise: f64) -> Option<(Mat, Mat)> {
    let mut kf = k.gram(x).ok()?;
    for v in kf.as_mut_slice() {
        *v *= signal;
    }
    let mut kk = kf.clone();
    for i in 0..x.len() {
        kk[(i, i)] += noise.max(1e-10);
    }
    let l = B::cholesky(kk.as_ref()).ok()?;
    Some((kf, l))
}

/// The negative log marginal likelihood and its gradient in `u` (module docs).
pub fn nlml_and_gradient<B: Backend>(x: &Points, y: &[f64], u: &[f64]) -> Option<(f64, Vec<f64>)> {
    let (n, d) = (x.len(), x.dim());
    let (k, signal, noise) = unpack(u, d)?;
    let (kf, l) = factor::<B>(x, &k, signal, noise)?;
    let mut alpha = y.to_vec();
    B::cholesky_solve_vec_in_place(l.as_ref(), &mut alpha).ok()?;
    let value = 0.5 * alpha.iter().zip(y).map(|(a, b)| a * b).sum::<f64>()
        + 0.5 * B::cholesky_logdet(l.as_ref())
        + 0.5 * n as f64 * LN_2PI;
    let mut kinv = Mat::identity(n);
    B::cholesky_solve_in_place(l.as_ref(), kinv.as_mut()).ok()?;
    // W = K⁻¹ − ααᵀ; gradient_j = ½ Σ_ij W_ij ∂K_ij/∂u_j
    let ls = k.lengthscales();
    let mut grad = vec![0.0; d + 2];
    for j in 0..n {
        let xj = x.point(j);
        for i in 0..n {
            let w = kinv[(i, j)] - alpha[i] * alpha[j];
            let kw = w * kf[(i, j)];
            grad[d] += kw;
            let xi = x.point(i);
            for q in 0..d {
                grad[q] += kw * ((xi[q] - xj[q]) / ls[q]).powi(2);
            }
        }
        grad[d + 1] += kinv[(j, j)] - alpha[j] * alpha[j];
    }
    for g in &mut grad[..=d] {
        *g *= 0.5;
    }
    grad[d + 1] *= 0.5 * noise;
    Some((value, grad))
}

fn fit<B: Backend>(p: &GpArdParams, data: &Dataset) -> Result<GpArdModel, BankError> {
    let n0 = data.len();
    if n0 < 2 {
        return Err(BankError::TooFewRows { what: "GP regression".into(), needed: 2, found: n0 });
    }
    let rows: Vec<usize> = if n0 > p.max_rows {
        (0..p.max_rows).map(|k| k * n0 / p.max_rows).collect()
    } else {
        (0..n0).collect()
    };
    let data = data.select(&rows);
    let inputs = Standardizer::fit(data.x());
    let xs = Points::from_mat("inputs", &inputs.apply(data.x()))?;
    let (ym, ysd) = target_moments(data.y());
    let y: Vec<f64> = data.y().iter().map(|v| (v - ym) / ysd).collect();
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
    let (_, chol) = factor::<B>(&xs, &kernel, signal, noise).ok_or_else(|| BankError::Numerical {
        what: "GP kernel matrix".into(),
        detail: "not positive definite at the learned hyperparameters".into(),
    })?;
    let mut alpha = y;
    B::cholesky_solve_vec_in_place(chol.as_ref(), &mut alpha)?;
    Ok(GpArdModel { inputs, y_moments: (ym, ysd), x: xs, kernel, signal, noise, nlml: res.f, alpha, chol })
}

impl Predict for GpArdModel {
    type Output = Prediction;
    type Error = BankError;

    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, BankError> {
        if x.dim() != self.x.dim() {
            return Err(mismatch("prediction inputs (columns)", self.x.dim(), x.dim()));
        }
        let xt = Points::from_mat("inputs", &self.inputs.apply(x))?;
        let mut ks = self.kernel.cross_gram(&self.x, &xt)?;
        for v in ks.as_mut_slice() {
            *v *= self.signal;
        }
        let mut mean = vec![0.0; x.len()];
        B::gemv(1.0, ks.as_ref(), Trans::Yes, &self.alpha, 0.0, &mut mean)?;
        B::solve_lower_in_place(self.chol.as_ref(), ks.as_mut())?;
        let (ym, ysd) = self.y_moments;
        let variance = (0..x.len())
            .map(|j| {
                let q: f64 = ks.col(j).iter().map(|v| v * v).sum();
                (self.signal - q).max(0.0) + self.noise
            })
            .map(|v| v * ysd * ysd)
            .collect();
        Ok(Prediction { mean: mean.iter().map(|m| m * ysd + ym).collect(), variance })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_core::Params;
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
