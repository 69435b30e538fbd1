//! Gaussian-process classification with the Laplace approximation (Rasmussen & Williams 2006,
//! §3.4, Algorithms 3.1 and 3.2), the exact-kernel baseline of BaNK's classification tables.
//!
//! Model: latent `f ~ GP(0, σ_f² k)` with the squared-exponential kernel
//! `k(x, x') = exp(−‖x − x'‖²/(2ℓ²))` on standardised inputs, `y_i | f_i ~ Bernoulli(σ(f_i))`.
//!
//! * **Mode** (Alg. 3.1): Newton on `Ψ(f) = log p(y | f) − ½ fᵀK⁻¹f` in the stable form
//!   `W = diag(π(1 − π))`, `B = I + W^{½}KW^{½} = LLᵀ`, `b = Wf + (y − π)`,
//!   `a = b − W^{½}L⁻ᵀL⁻¹(W^{½}Kb)`, `f ← Ka`; a step that lowers `Ψ = −½aᵀf + log p(y|f)` is
//!   halved (in `a`). Stops when `Ψ` changes by less than `10⁻¹⁰ max(1, |Ψ|)`.
//! * **Evidence**: `log q(y) = −½ âᵀf̂ + log p(y | f̂) − Σ log L_ii` (R&W eq. (3.32)).
//! * **Hyperparameters**: the grid `ℓ ∈ ℓ̄ × {¼, ½, 1, 2, 4}` (`ℓ̄` the median pairwise distance)
//!   × `σ_f² ∈ {1, 4, 16}`, the point of highest evidence (type-II maximum likelihood on a grid).
//! * **Prediction** (Alg. 3.2): `f̄_* = k_*ᵀ(y − π̂)`, `V_* = σ_f² − ‖L⁻¹W^{½}k_*‖²`, and
//!   `P(y_* = 1) ≈ σ(f̄_* / √(1 + πV_*/8))` (MacKay's probit approximation of `E σ(f_*)`).
//!
//! Exact for `N ≤ max_rows`; above it, a subset of data of `max_rows` evenly spaced rows
//! (`O(max_rows³)` per Newton step).

use crate::error::{BankError, check_count, check_labels, mismatch};
use crate::features::Standardizer;
use crate::logistic::sigmoid;
use bke_core::{Dataset, Estimator, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::{Backend, Mat, Trans};

/// Parameters of the GP classification baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct GpClassParams {
    /// Largest number of training rows used exactly. Default 2000.
    pub max_rows: usize,
    /// Length scales tried, as multiples of the median pairwise distance. Default `[¼, ½, 1, 2, 4]`.
    pub length_factors: Vec<f64>,
    /// Signal variances `σ_f²` tried. Default `[1, 4, 16]`.
    pub signal_variances: Vec<f64>,
    /// Newton iterations (at most) per Laplace fit. Default 50.
    pub newton_iterations: usize,
}

impl Default for GpClassParams {
    fn default() -> Self {
        Self {
            max_rows: 2000,
            length_factors: vec![0.25, 0.5, 1.0, 2.0, 4.0],
            signal_variances: vec![1.0, 4.0, 16.0],
            newton_iterations: 50,
        }
    }
}

impl bke_core::Params for GpClassParams {
    type Error = BankError;
    fn validate(&self) -> Result<(), BankError> {
        check_count("max_rows", self.max_rows)?;
        check_count("newton_iterations", self.newton_iterations)?;
        check_count("length_factors (values)", self.length_factors.len())?;
        check_count("signal_variances (values)", self.signal_variances.len())?;
        for &v in self.length_factors.iter().chain(&self.signal_variances) {
            crate::error::check_positive("GP classification grid value", v)?;
        }
        Ok(())
    }
}

/// The Laplace approximation at one kernel: the mode, `y − π̂`, `W^{½}`, `L` and the evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct LaplaceFit {
    /// The mode `f̂`.
    pub mode: Vec<f64>,
    /// `y − σ(f̂)`.
    pub residual: Vec<f64>,
    /// `W^{½}` at the mode.
    pub sqrt_w: Vec<f64>,
    /// Lower Cholesky factor of `B = I + W^{½}KW^{½}` at the mode.
    pub chol: Mat,
    /// Approximate log evidence `log q(y)`.
    pub log_evidence: f64,
}

/// `B = I + W^{½}KW^{½}` and its Cholesky factor.
fn b_factor<B: Backend>(k: &Mat, sw: &[f64]) -> Result<Mat, BankError> {
    let n = sw.len();
    let b = Mat::from_fn(n, n, |i, j| sw[i] * k[(i, j)] * sw[j] + if i == j { 1.0 } else { 0.0 });
    Ok(B::cholesky(b.as_ref())?)
}

/// `K v`.
fn kv<B: Backend>(k: &Mat, v: &[f64]) -> Result<Vec<f64>, BankError> {
    let mut out = vec![0.0; v.len()];
    B::gemv(1.0, k.as_ref(), Trans::No, v, 0.0, &mut out)?;
    Ok(out)
}

/// The Laplace approximation of `p(f | y)` with kernel matrix `k` (Alg. 3.1, module docs), Newton
/// from `start` (length `N`).
pub fn laplace_mode<B: Backend>(
    k: &Mat,
    y: &[f64],
    start: &[f64],
    iters: usize,
) -> Result<LaplaceFit, BankError> {
    let n = y.len();
    let mut f = start.to_vec();
    // a with f = K a: solve from the start by the Newton update itself (first iteration below).
    let mut a_cur: Option<Vec<f64>> = None;
    let mut psi = f64::NEG_INFINITY;
    for _ in 0..iters {
        let pi: Vec<f64> = f.iter().map(|v| sigmoid(*v)).collect();
        let sw: Vec<f64> = pi.iter().map(|p| (p * (1.0 - p)).sqrt()).collect();
        let l = b_factor::<B>(k, &sw)?;
        let b: Vec<f64> = (0..n).map(|i| sw[i] * sw[i] * f[i] + (y[i] - pi[i])).collect();
        let kb = kv::<B>(k, &b)?;
        let mut c: Vec<f64> = (0..n).map(|i| sw[i] * kb[i]).collect();
        B::cholesky_solve_vec_in_place(l.as_ref(), &mut c)?;
        let a_new: Vec<f64> = (0..n).map(|i| b[i] - sw[i] * c[i]).collect();
        let mut a = a_new.clone();
        let mut f_new = kv::<B>(k, &a)?;
        let mut psi_new = -0.5 * dot(&a, &f_new) + crate::logistic::log_likelihood(y, &f_new);
        if let Some(prev) = &a_cur {
            let mut t = 1.0;
            while psi_new < psi && t > 1e-6 {
                t *= 0.5;
                a = prev.iter().zip(&a_new).map(|(p, q)| p + t * (q - p)).collect();
                f_new = kv::<B>(k, &a)?;
                psi_new = -0.5 * dot(&a, &f_new) + crate::logistic::log_likelihood(y, &f_new);
            }
            if psi_new < psi {
                break;
            }
        }
        let done = a_cur.is_some() && (psi_new - psi).abs() < 1e-10 * psi_new.abs().max(1.0);
        f = f_new;
        a_cur = Some(a);
        psi = psi_new;
        if done {
            break;
        }
    }
    let pi: Vec<f64> = f.iter().map(|v| sigmoid(*v)).collect();
    let sw: Vec<f64> = pi.iter().map(|p| (p * (1.0 - p)).sqrt()).collect();
    let chol = b_factor::<B>(k, &sw)?;
    let residual: Vec<f64> = y.iter().zip(&pi).map(|(yi, p)| yi - p).collect();
    // at the mode f = K(y − π), so −½ aᵀf with a = y − π
    let log_det_half: f64 = (0..n).map(|i| chol[(i, i)].ln()).sum();
    let log_evidence = -0.5 * dot(&residual, &f) + crate::logistic::log_likelihood(y, &f) - log_det_half;
    Ok(LaplaceFit { mode: f, residual, sqrt_w: sw, chol, log_evidence })
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `σ_f² exp(−D/(2ℓ²))`.
fn kernel_of(d2: &Mat, length: f64, signal: f64) -> Mat {
    Mat::from_fn(d2.nrows(), d2.ncols(), |i, j| signal * (-d2[(i, j)] / (2.0 * length * length)).exp())
}

/// A fitted GP classifier.
#[derive(Debug, Clone, PartialEq)]
pub struct GpClassModel {
    /// Input standardisation.
    pub inputs: Standardizer,
    /// Standardised training inputs (`n × d`).
    pub x: Mat,
    /// The chosen length scale (standardised units).
    pub length: f64,
    /// The chosen signal variance.
    pub signal: f64,
    /// The Laplace approximation at the chosen kernel.
    pub fit: LaplaceFit,
}

impl Estimator for GpClassParams {
    type Data = Dataset;
    type Fitted = GpClassModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<GpClassModel, BankError> {
        let n0 = data.len();
        if n0 < 2 {
            return Err(BankError::TooFewRows { what: "GP classification".into(), needed: 2, found: n0 });
        }
        check_labels(data.y())?;
        let m = params.max_rows;
        let rows: Vec<usize> = if n0 > m { (0..m).map(|k| k * n0 / m).collect() } else { (0..n0).collect() };
        let data = data.select(&rows);
        let inputs = Standardizer::fit(data.x());
        let x = inputs.apply(data.x());
        let ell = bke_core::median_distance(&Points::from_mat("inputs", &x)?).unwrap_or(1.0);
        let d2 = crate::distances::pairwise::<B>(&x)?;
        let y = data.y();
        let mut best: Option<(f64, f64, LaplaceFit)> = None;
        let total = (params.length_factors.len() * params.signal_variances.len()) as u64;
        let mut done = 0;
        for &lf in &params.length_factors {
            let mut start = vec![0.0; y.len()];
            for &signal in &params.signal_variances {
                progress.checkpoint()?;
                let k = kernel_of(&d2, lf * ell, signal);
                let fit = laplace_mode::<B>(&k, y, &start, params.newton_iterations)?;
                start.clone_from(&fit.mode);
                if best.as_ref().is_none_or(|b| fit.log_evidence > b.2.log_evidence) {
                    best = Some((lf * ell, signal, fit));
                }
                done += 1;
                progress.update("GP classification grid", done, total);
            }
        }
        let (length, signal, fit) = best.expect("the grid is not empty (validated)");
        Ok(GpClassModel { inputs, x, length, signal, fit })
    }
}

impl GpClassModel {
    /// The latent predictive mean and variance at `x` (original units; Alg. 3.2).
    pub fn latent<B: Backend>(&self, x: &Points) -> Result<(Vec<f64>, Vec<f64>), BankError> {
        if x.dim() != self.x.ncols() {
            return Err(mismatch("prediction inputs (columns)", self.x.ncols(), x.dim()));
        }
        let xt = self.inputs.apply(x);
        let ks = kernel_of(&crate::distances::between::<B>(&self.x, &xt)?, self.length, self.signal);
        let mut mean = vec![0.0; xt.nrows()];
        B::gemv(1.0, ks.as_ref(), Trans::Yes, &self.fit.residual, 0.0, &mut mean)?;
        let sw = &self.fit.sqrt_w;
        let mut v = Mat::from_fn(ks.nrows(), ks.ncols(), |i, j| sw[i] * ks[(i, j)]);
        B::solve_lower_in_place(self.fit.chol.as_ref(), v.as_mut())?;
        let var =
            (0..v.ncols()).map(|j| (self.signal - v.col(j).iter().map(|t| t * t).sum::<f64>()).max(0.0));
        Ok((mean, var.collect()))
    }
}

impl Predict for GpClassModel {
    type Output = Prediction;
    type Error = BankError;

    /// `P(y = 1 | x)` by the probit approximation (module docs) and its Bernoulli variance.
    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, BankError> {
        let (mean, var) = self.latent::<B>(x)?;
        let p: Vec<f64> = mean
            .iter()
            .zip(&var)
            .map(|(m, v)| sigmoid(m / (1.0 + std::f64::consts::PI * v / 8.0).sqrt()))
            .collect();
        let variance = p.iter().map(|q| q * (1.0 - q)).collect();
        Ok(Prediction { mean: p, variance })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_core::Params;
    use bke_linalg::DefaultBackend as B;

    fn problem() -> (Mat, Vec<f64>, Mat) {
        let n = 25;
        let x = Mat::from_fn(n, 2, |i, k| ((i * (k + 2)) as f64 * 0.61).sin() * 1.5);
        let y: Vec<f64> =
            (0..n).map(|i| if x[(i, 0)] + 0.5 * x[(i, 1)].powi(2) > 0.3 { 1.0 } else { 0.0 }).collect();
        let k = kernel_of(&crate::distances::pairwise::<B>(&x).unwrap(), 0.9, 2.0);
        (x, y, k)
    }

    /// The mode is stationary, `f̂ = K(y − π̂)`; the evidence equals
    /// `Ψ(f̂) − ½ log|I + KW|` computed from an independent factorisation: `Ψ` with `K⁻¹f̂` by a
    /// Cholesky solve of `K`, and `log|I + KW| = log|K + W⁻¹| + log|W|`.
    #[test]
    fn mode_and_evidence_match_dense_oracles() {
        let (_, y, k) = problem();
        let n = y.len();
        let fit = laplace_mode::<B>(&k, &y, &vec![0.0; n], 100).unwrap();
        let kr = kv::<B>(&k, &fit.residual).unwrap();
        for i in 0..n {
            assert!((kr[i] - fit.mode[i]).abs() < 1e-8, "{i}: {} vs {}", kr[i], fit.mode[i]);
        }
        let lk = B::cholesky(k.as_ref()).unwrap();
        let mut kinv_f = fit.mode.clone();
        B::cholesky_solve_vec_in_place(lk.as_ref(), &mut kinv_f).unwrap();
        let psi = crate::logistic::log_likelihood(&y, &fit.mode) - 0.5 * dot(&fit.mode, &kinv_f);
        let w: Vec<f64> = fit.sqrt_w.iter().map(|s| s * s).collect();
        let kw = Mat::from_fn(n, n, |i, j| k[(i, j)] + if i == j { 1.0 / w[i] } else { 0.0 });
        let l2 = B::cholesky(kw.as_ref()).unwrap();
        let logdet = B::cholesky_logdet(l2.as_ref()) + w.iter().map(|v| v.ln()).sum::<f64>();
        let oracle = psi - 0.5 * logdet;
        assert!((fit.log_evidence - oracle).abs() < 1e-7 * oracle.abs(), "{} vs {oracle}", fit.log_evidence);
        // a different start reaches the same mode
        let other = laplace_mode::<B>(&k, &y, &vec![1.0; n], 100).unwrap();
        assert!(other.mode.iter().zip(&fit.mode).all(|(a, b)| (a - b).abs() < 1e-6));
    }

    /// At a training input the latent mean is `f̂_i`; the variance matches `σ_f² − k_*ᵀ(K + W⁻¹)⁻¹k_*`
    /// (R&W eq. (3.24)); fitting picks a grid point and classifies the training data.
    #[test]
    fn prediction_matches_the_formulas_and_fits() {
        let (x, y, _) = problem();
        let n = y.len();
        let pts = Points::from_mat("x", &x).unwrap();
        let data = Dataset::new(pts.clone(), y.clone()).unwrap();
        let model = GpClassParams::default().check().unwrap().fit::<B>(&data).unwrap();
        let (mean, var) = model.latent::<B>(&pts).unwrap();
        let k = kernel_of(&crate::distances::pairwise::<B>(&model.x).unwrap(), model.length, model.signal);
        let w: Vec<f64> = model.fit.sqrt_w.iter().map(|s| s * s).collect();
        let kw = Mat::from_fn(n, n, |i, j| k[(i, j)] + if i == j { 1.0 / w[i] } else { 0.0 });
        let l2 = B::cholesky(kw.as_ref()).unwrap();
        for i in 0..n {
            assert!((mean[i] - model.fit.mode[i]).abs() < 1e-8);
            let mut s = k.col(i).to_vec();
            B::cholesky_solve_vec_in_place(l2.as_ref(), &mut s).unwrap();
            let v = model.signal - dot(k.col(i), &s);
            assert!((var[i] - v).abs() < 1e-8 * model.signal, "{i}: {} vs {v}", var[i]);
        }
        let p = model.predict::<B>(&pts).unwrap().mean;
        let errors = p.iter().zip(&y).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count();
        assert!(errors <= 5, "{errors} training errors");
        let bad = GpClassParams { signal_variances: vec![], ..Default::default() };
        assert!(bad.check().is_err());
        let e = model.predict::<B>(&Points::from_1d("z", &[0.0]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("columns"), "{e}");
    }
}
