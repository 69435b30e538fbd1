//! The baselines of seed 001 §4.2–4.3, on the same random Fourier features (seed 001 eq. (3)):
//!
//! * **RKS** (random kitchen sinks): fixed RBF frequencies `ω ~ N(0, ℓ⁻² I)`, `ℓ` = the median
//!   pairwise distance of the (standardised) training inputs.
//! * **MKL** with random features (seed 001 eq. (17)): the features of a bank of kernels concatenated — Laplace
//!   `exp(−‖t‖₁/ℓ)` (per-coordinate Cauchy frequencies), RBF (Gaussian frequencies) and Cauchy
//!   `∏ 1/(1 + t_k²/ℓ²)` (per-coordinate Laplace frequencies) at the scales `ℓ ∈ {½, 1, 2} × median`,
//!   the `M` frequencies split evenly among the nine kernels. As in the seed, the kernel weights are
//!   absorbed by the linear model on the concatenated features.
//!
//! The linear model is Bayesian linear regression with the conjugate NIG prior of [`crate::evidence`]
//! (prior precision chosen by maximum evidence on a log-grid, through one eigendecomposition of
//! `ΦᵀΦ`) for regression, and MAP logistic regression (Newton/IRLS, prior variance chosen by the
//! Laplace-approximate evidence on a log-grid) for classification.

use crate::error::{BankError, check_count, check_labels, invalid, mismatch};
use crate::evidence::NigParams;
use crate::features::{Standardizer, feature_matrix, target_moments};
use crate::logistic::sigmoid;
use crate::params::Task;
use bke_core::{Dataset, Estimator, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::{Backend, Mat, Trans};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// Which fixed-feature baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Baseline {
    /// Random kitchen sinks: RBF frequencies.
    Rks,
    /// Multiple kernel learning with random features: Laplace, RBF and Cauchy kernels at 3 scales.
    Mkl,
    /// A la Carte (fitted by [`crate::alac::AlacParams`]).
    Alac,
    /// Random-frequency optimisation (fitted by [`crate::rfo::RfoParams`]).
    Rfo,
}

/// Parameters of the RKS and MKL baselines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineParams {
    /// RKS or MKL. Default RKS.
    pub kind: Baseline,
    /// Regression or classification. Default regression.
    pub task: Task,
    /// Number of frequencies `M` (`2M` features). Default `128`.
    pub frequencies: usize,
    /// Base lengthscale (standardised units; `None`: the median pairwise distance). Default `None`.
    pub lengthscale: Option<f64>,
    /// MKL scale multipliers of the base lengthscale. Default `[0.5, 1, 2]`.
    pub scales: Vec<f64>,
    /// Regression: candidate prior precisions `λ₀` (the evidence picks one). Default `10^{−4..2}`.
    pub precisions: Vec<f64>,
    /// Regression: inverse-gamma noise prior (its `prior_precision` is replaced by the grid's choice).
    pub nig: NigParams,
    /// Classification: candidate prior variances of the weights. Default `[0.1, 1, 10, 100]`.
    pub prior_variances: Vec<f64>,
    /// Classification: Newton iterations. Default `25`.
    pub newton_iterations: usize,
    /// Standardise inputs. Default `true`.
    pub standardize_inputs: bool,
    /// Seed of the frequencies. Default `0`.
    pub seed: u64,
}

impl Default for BaselineParams {
    fn default() -> Self {
        Self {
            kind: Baseline::Rks,
            task: Task::Regression,
            frequencies: 128,
            lengthscale: None,
            scales: vec![0.5, 1.0, 2.0],
            precisions: (-8..=4).map(|k| 10f64.powf(k as f64 / 2.0)).collect(),
            nig: NigParams::default(),
            prior_variances: vec![0.1, 1.0, 10.0, 100.0],
            newton_iterations: 25,
            standardize_inputs: true,
            seed: 0,
        }
    }
}

impl bke_core::Params for BaselineParams {
    type Error = BankError;

    fn validate(&self) -> Result<(), BankError> {
        if !matches!(self.kind, Baseline::Rks | Baseline::Mkl) {
            return Err(bke_core::CoreError::InvalidChoice {
                what: format!("baseline kind {:?}", self.kind),
                reason: "BaselineParams fits RKS or MKL; use AlacParams or RfoParams".into(),
            }
            .into());
        }
        check_count("frequencies", self.frequencies)?;
        crate::error::check_features(self.frequencies, 1, 1, 1)?;
        check_count("newton_iterations", self.newton_iterations)?;
        if let Some(l) = self.lengthscale {
            crate::error::check_positive("lengthscale", l)?;
        }
        for &s in &self.scales {
            crate::error::check_positive("MKL scale", s)?;
        }
        for &p in &self.precisions {
            crate::error::check_positive("candidate prior precision", p)?;
        }
        for &p in &self.prior_variances {
            crate::error::check_positive("candidate prior variance", p)?;
        }
        if self.scales.is_empty() || self.precisions.is_empty() || self.prior_variances.is_empty() {
            return Err(invalid(
                "baseline grids",
                0.0,
                "scales, precisions and prior variances need at least one value",
            ));
        }
        self.nig.check()
    }
}

impl Estimator for BaselineParams {
    type Data = Dataset;
    type Fitted = BaselineModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        _progress: &dyn Progress,
    ) -> Result<BaselineModel, BankError> {
        fit_baseline::<B>(data.x(), data.y(), params)
    }
}

/// A fitted baseline: frequencies and the linear model on their features.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineModel {
    /// Which baseline.
    pub kind: Baseline,
    /// Task.
    pub task: Task,
    /// Input standardisation.
    pub inputs: Standardizer,
    /// Frequencies, row-major `M × d` (standardised units).
    pub w: Vec<f64>,
    /// Weights (`2M`, plus the intercept for classification).
    pub beta: Vec<f64>,
    /// Regression target mean.
    pub y_mean: f64,
    /// Regression target standard deviation.
    pub y_scale: f64,
    /// The prior precision (regression) or variance (classification) that was chosen.
    pub chosen_prior: f64,
}

/// The median pairwise distance of the (standardised) inputs ([`bke_core::median_distance`]), or 1
/// when every row is the same.
pub(crate) fn median_or_one(x: &Mat) -> f64 {
    Points::from_mat("inputs", x).ok().and_then(|p| bke_core::median_distance(&p).ok()).unwrap_or(1.0)
}

/// The baseline's frequencies (row-major `M × d`) for base lengthscale `ell`.
pub fn baseline_frequencies(
    kind: Baseline,
    m: usize,
    d: usize,
    ell: f64,
    scales: &[f64],
    seed: u64,
) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut w = vec![0.0; m * d];
    match kind {
        Baseline::Rks | Baseline::Alac | Baseline::Rfo => {
            for v in &mut w {
                *v = rng.sample::<f64, _>(StandardNormal) / ell;
            }
        }
        Baseline::Mkl => {
            let kernels = 3 * scales.len();
            for j in 0..m {
                let kern = j % kernels;
                let l = ell * scales[kern / 3];
                for k in 0..d {
                    let u: f64 = rng.random::<f64>();
                    w[j * d + k] = match kern % 3 {
                        // Laplace kernel exp(−|t|/ℓ): Cauchy(0, 1/ℓ) frequencies.
                        0 => (std::f64::consts::PI * (u - 0.5)).tan() / l,
                        // RBF: N(0, 1/ℓ²).
                        1 => rng.sample::<f64, _>(StandardNormal) / l,
                        // Cauchy kernel 1/(1 + t²/ℓ²): Laplace(0, 1/ℓ) frequencies.
                        _ => {
                            let v = u - 0.5;
                            -v.signum() * (1.0 - 2.0 * v.abs()).max(f64::MIN_POSITIVE).ln() / l
                        }
                    };
                }
            }
        }
    }
    w
}

/// Fits a baseline with backend `B`.
fn fit_baseline<B: Backend>(
    x: &Points,
    y: &[f64],
    params: &BaselineParams,
) -> Result<BaselineModel, BankError> {
    let (task, kind) = (params.task, params.kind);
    if x.len() < 2 {
        return Err(BankError::TooFewRows { what: "fitting a baseline".into(), needed: 2, found: x.len() });
    }
    if task == Task::Classification {
        check_labels(y)?;
    }
    let d = x.dim();
    let inputs = if params.standardize_inputs { Standardizer::fit(x) } else { Standardizer::identity(d) };
    let xs = inputs.apply(x);
    let ell = params.lengthscale.unwrap_or_else(|| median_or_one(&xs));
    let w = baseline_frequencies(kind, params.frequencies, d, ell, &params.scales, params.seed);
    let phi = feature_matrix(&xs, &w);
    match task {
        Task::Regression => {
            let (y_mean, y_scale) = target_moments(y);
            let ys: Vec<f64> = y.iter().map(|v| (v - y_mean) / y_scale).collect();
            let (beta, chosen) = bayes_ridge::<B>(&phi, &ys, params)?;
            Ok(BaselineModel { kind, task, inputs, w, beta, y_mean, y_scale, chosen_prior: chosen })
        }
        Task::Classification => {
            let mut best: Option<(f64, Vec<f64>, f64)> = None;
            for &s2 in &params.prior_variances {
                let (beta, ev) = logistic_map::<B>(&phi, y, s2, params.newton_iterations)?;
                if best.as_ref().is_none_or(|b| ev > b.0) {
                    best = Some((ev, beta, s2));
                }
            }
            let (_, beta, s2) = best.expect("at least one prior variance");
            Ok(BaselineModel { kind, task, inputs, w, beta, y_mean: 0.0, y_scale: 1.0, chosen_prior: s2 })
        }
    }
}

/// Posterior mean of the NIG linear model with `λ₀` maximising the evidence over the grid.
fn bayes_ridge<B: Backend>(
    phi: &Mat,
    y: &[f64],
    params: &BaselineParams,
) -> Result<(Vec<f64>, f64), BankError> {
    let f = phi.ncols();
    let n = y.len();
    let g = B::gram(phi.as_ref());
    let eig = B::sym_eigen(g.as_ref())?;
    let mut b = vec![0.0; f];
    B::gemv(1.0, phi.as_ref(), Trans::Yes, y, 0.0, &mut b)?;
    let mut vb = vec![0.0; f];
    B::gemv(1.0, eig.vectors.as_ref(), Trans::Yes, &b, 0.0, &mut vb)?;
    let yty: f64 = y.iter().map(|v| v * v).sum();
    let mut best = (f64::NEG_INFINITY, params.precisions[0]);
    for &lam in &params.precisions {
        let nig = NigParams { prior_precision: lam, ..params.nig };
        let logdet: f64 = eig.values.iter().map(|e| (e.max(0.0) + lam).ln()).sum();
        let quad: f64 = eig.values.iter().zip(&vb).map(|(e, v)| v * v / (e.max(0.0) + lam)).sum();
        let ev = nig.log_evidence(n, f, logdet, yty, quad);
        if ev > best.0 {
            best = (ev, lam);
        }
    }
    let lam = best.1;
    let coef: Vec<f64> = eig.values.iter().zip(&vb).map(|(e, v)| v / (e.max(0.0) + lam)).collect();
    let mut beta = vec![0.0; f];
    B::gemv(1.0, eig.vectors.as_ref(), Trans::No, &coef, 0.0, &mut beta)?;
    Ok((beta, lam))
}

/// MAP logistic regression with weights and intercept `N(0, s² I)` (intercept last) by damped Newton
/// ([`crate::logistic::weight_laplace`]); returns the weights and the Laplace-approximate log evidence
/// `ℓ(β̂) − ‖β̂‖²/(2s²) − (F/2) log s² − ½ log|H|`.
pub fn logistic_map<B: Backend>(
    phi: &Mat,
    y: &[f64],
    s2: f64,
    iters: usize,
) -> Result<(Vec<f64>, f64), BankError> {
    let f1 = phi.ncols() + 1;
    let lap =
        crate::logistic::weight_laplace::<B>(phi, y, s2, s2, &vec![0.0; f1], iters, &mut Mat::default())?;
    let ev = lap.log_posterior - 0.5 * f1 as f64 * s2.ln() - 0.5 * B::cholesky_logdet(lap.chol.as_ref());
    Ok((lap.mode, ev))
}

impl Predict for BaselineModel {
    type Output = Prediction;
    type Error = BankError;

    /// Regression: the posterior mean (variance 0: the baselines are point estimates);
    /// classification: `p = P(y = 1 | x)` and `p(1 − p)`.
    fn predict<B: Backend>(&self, x: &Points) -> Result<Prediction, BankError> {
        let mean = self.predict_mean::<B>(x)?;
        let variance = match self.task {
            Task::Regression => vec![0.0; mean.len()],
            Task::Classification => mean.iter().map(|p| p * (1.0 - p)).collect(),
        };
        Ok(Prediction { mean, variance })
    }
}

impl BaselineModel {
    /// Regression: predictive means; classification: `P(y = 1 | x)`.
    pub fn predict_mean<B: Backend>(&self, x: &Points) -> Result<Vec<f64>, BankError> {
        let d = self.inputs.shift.len();
        if x.dim() != d {
            return Err(mismatch("prediction inputs (columns)", d, x.dim()));
        }
        let phi = feature_matrix(&self.inputs.apply(x), &self.w);
        let f = phi.ncols();
        let mut out = vec![0.0; x.len()];
        B::gemv(1.0, phi.as_ref(), Trans::No, &self.beta[..f], 0.0, &mut out)?;
        Ok(match self.task {
            Task::Regression => out.into_iter().map(|v| v * self.y_scale + self.y_mean).collect(),
            Task::Classification => out.into_iter().map(|v| sigmoid(v + self.beta[f])).collect(),
        })
    }
}

/// Model files of the RKS and MKL baselines (kinds `baseline-regression`, `baseline-classification`;
/// `kind` inside the model says RKS or MKL). Used by the Python package's save/load and pickling.
impl bke_core::model_file::ModelFile for BaselineModel {
    const KINDS: &'static [&'static str] = &["baseline-regression", "baseline-classification"];
    const VERSION: u32 = 1;

    fn kind(&self) -> &'static str {
        match self.task {
            Task::Regression => "baseline-regression",
            Task::Classification => "baseline-classification",
        }
    }

    /// Finite values, positive input scales and target scale, `M × d` frequencies and `2M` weights
    /// (plus the intercept for classification).
    fn validate(&self) -> Result<(), bke_core::CoreError> {
        let bad = |m: &str| bke_core::CoreError::ModelFile(format!("invalid baseline model: {m}"));
        let d = self.inputs.shift.len();
        if d == 0 || self.inputs.scale.len() != d {
            return Err(bad("the input standardisation needs one shift and one scale per input"));
        }
        if self.w.is_empty() || self.w.len() % d != 0 {
            return Err(bad("the frequencies must be an M × d matrix with M ≥ 1"));
        }
        let intercept = usize::from(self.task == Task::Classification);
        if self.beta.len() != 2 * (self.w.len() / d) + intercept {
            return Err(bad("the weights must number 2M (plus the intercept for classification)"));
        }
        let values = [&self.inputs.shift, &self.w, &self.beta];
        if values.iter().any(|v| v.iter().any(|x| !x.is_finite()))
            || !(self.y_mean.is_finite() && self.chosen_prior.is_finite())
        {
            return Err(bad("every value must be finite"));
        }
        if self.inputs.scale.iter().chain([&self.y_scale]).any(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(bad("the input and target scales must be finite and positive"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    #[test]
    fn mkl_frequencies_have_the_right_spectral_laws() {
        // One scale, ℓ = 1, d = 1: the empirical characteristic functions E cos(ωt) of the three
        // groups must match the kernels exp(−|t|), exp(−t²/2), 1/(1+t²) (5 standard errors).
        let m = 3 * 20000;
        let w = baseline_frequencies(Baseline::Mkl, m, 1, 1.0, &[1.0], 7);
        for t in [0.5f64, 1.0, 2.0] {
            let truth = [(-t.abs()).exp(), (-t * t / 2.0).exp(), 1.0 / (1.0 + t * t)];
            for g in 0..3 {
                let vals: Vec<f64> = (0..m).filter(|j| j % 3 == g).map(|j| (w[j] * t).cos()).collect();
                let k = vals.len() as f64;
                let mean = vals.iter().sum::<f64>() / k;
                let se = (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0) / k).sqrt();
                assert!((mean - truth[g]).abs() < 5.0 * se, "group {g}, t {t}: {mean} vs {}", truth[g]);
            }
        }
    }

    #[test]
    fn ridge_matches_dense_solution_and_logistic_is_stationary() {
        let x = Points::from_1d("x", &(0..80).map(|i| i as f64 / 10.0).collect::<Vec<_>>()).unwrap();
        let y: Vec<f64> = (0..80).map(|i| (i as f64 / 10.0).sin()).collect();
        use bke_core::Params;
        let p = BaselineParams { frequencies: 10, ..Default::default() };
        let m =
            p.check().unwrap().fit::<DefaultBackend>(&Dataset::new(x.clone(), y.clone()).unwrap()).unwrap();
        // dense check of the posterior mean at the chosen λ
        let xs = m.inputs.apply(&x);
        let phi = feature_matrix(&xs, &m.w);
        let (ym, ysd) = target_moments(&y);
        let ys: Vec<f64> = y.iter().map(|v| (v - ym) / ysd).collect();
        let mut a = DefaultBackend::gram(phi.as_ref());
        for i in 0..20 {
            a[(i, i)] += m.chosen_prior;
        }
        let mut b = vec![0.0; 20];
        DefaultBackend::gemv(1.0, phi.as_ref(), Trans::Yes, &ys, 0.0, &mut b).unwrap();
        let l = DefaultBackend::cholesky(a.as_ref()).unwrap();
        DefaultBackend::cholesky_solve_vec_in_place(l.as_ref(), &mut b).unwrap();
        for (u, v) in b.iter().zip(&m.beta) {
            assert!((u - v).abs() < 1e-8 * u.abs().max(1.0));
        }
        let pred = m.predict_mean::<DefaultBackend>(&x).unwrap();
        let mse: f64 = pred.iter().zip(&y).map(|(a, b)| (a - b).powi(2)).sum::<f64>() / 80.0;
        assert!(mse < 0.01, "{mse}");
        // logistic: gradient of the log posterior vanishes at the MAP
        let yc: Vec<f64> = (0..80).map(|i| if (i as f64 / 10.0).sin() > 0.2 { 1.0 } else { 0.0 }).collect();
        let (beta, _) = logistic_map::<DefaultBackend>(&phi, &yc, 4.0, 50).unwrap();
        let mut eta = vec![0.0; 80];
        DefaultBackend::gemv(1.0, phi.as_ref(), Trans::No, &beta[..20], 0.0, &mut eta).unwrap();
        for c in 0..21 {
            let g: f64 = (0..80)
                .map(|i| (yc[i] - sigmoid(eta[i] + beta[20])) * if c < 20 { phi[(i, c)] } else { 1.0 })
                .sum::<f64>()
                - beta[c] / 4.0;
            assert!(g.abs() < 1e-6, "gradient {c} = {g}");
        }
    }

    #[test]
    fn model_file_round_trip_and_kind_check() {
        use bke_core::Params;
        use bke_core::model_file::{Saved, from_str, to_string};
        let x = Points::from_1d("x", &(0..40).map(|i| i as f64 / 5.0).collect::<Vec<_>>()).unwrap();
        let y: Vec<f64> = (0..40).map(|i| (i as f64 / 5.0).cos()).collect();
        let p = BaselineParams { frequencies: 6, ..Default::default() };
        let m = p.check().unwrap().fit::<DefaultBackend>(&Dataset::new(x, y).unwrap()).unwrap();
        let text = to_string(&Saved::new(m.clone())).unwrap();
        assert_eq!(from_str::<BaselineModel>(&text, "t").unwrap().model, m);
        let err = from_str::<crate::BankModel>(&text, "t").unwrap_err().to_string();
        assert!(err.contains("'baseline-regression' model"), "{err}");
        let mut broken = m;
        broken.beta.pop();
        assert!(to_string(&Saved::new(broken)).unwrap_err().to_string().contains("2M"));
    }
}
