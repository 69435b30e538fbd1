//! The TTBLR on random Fourier features of `k` and `ℓ` ([`bke_core::rff`]): [`TtblrParams`] →
//! `check()` → `fit::<B>(&TaskData)` (learning the lengthscales, `σ`, `β`, `γ` by multi-start
//! L-BFGS on the marginal likelihood when asked), prediction of `f`, and model files (kind
//! `ttblr`).

use super::features::{
    FeatureData, Scales, TtblrForm, WeightPosterior, feature_log_marginal, feature_log_marginal_value,
    weight_posterior,
};
use crate::DmeError;
use crate::data::TaskData;
use crate::dme::fourier_pair;
use crate::error::invalid;
use crate::learn::{MultiStartOptions, best_start, multi_start};
use crate::ops::mv;
use crate::ttgp::fitted::to_core;
use bke_core::budget::Bytes;
use bke_core::model_file::{ModelFile, fields};
use bke_core::rff::FourierFeatures;
use bke_core::{
    CoreError, Estimator, Kernel, KernelFamily, Params, Points, Predict, Prediction, Progress, Valid,
};
use bke_linalg::{Backend, Mat, Trans};
use serde::{Deserialize, Serialize};

/// Which TTBLR hyperparameters are learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TtblrLearn {
    /// Lengthscales of `k` (the features `φ`).
    pub kernel_x: bool,
    /// Lengthscales of `ℓ` (the features `ψ`).
    pub kernel_y: bool,
    /// Noise `σ`.
    pub sigma: bool,
    /// Prior scale `β` of `g`.
    pub beta: bool,
    /// Prior scale `γ` of `f`.
    pub gamma: bool,
}

impl TtblrLearn {
    /// Every hyperparameter.
    pub fn all() -> Self {
        Self { kernel_x: true, kernel_y: true, sigma: true, beta: true, gamma: true }
    }

    /// Whether anything is learned.
    pub fn any(&self) -> bool {
        self.kernel_x || self.kernel_y || self.sigma || self.beta || self.gamma
    }

    fn mask(&self, nx: usize, ny: usize) -> Vec<bool> {
        let mut m = vec![self.kernel_x; nx];
        m.extend(vec![self.kernel_y; ny]);
        m.extend([self.sigma, self.beta, self.gamma]);
        m
    }
}

/// A TTBLR on `features` random Fourier frequencies of `k` and of `ℓ` each (`2 × features`
/// columns), drawn with `seed` (the same features as [`crate::dme::ParametricDmeParams`] with the
/// same kernels and seed). The rational quadratic's shape α is not learned.
#[derive(Debug, Clone, PartialEq)]
pub struct TtblrParams {
    /// Kernel `k` on X (initial lengthscales when learned). Default SE, lengthscale 1.
    pub kernel_x: Kernel,
    /// Kernel `ℓ` on Y. Default SE, lengthscale 1.
    pub kernel_y: Kernel,
    /// Frequencies per feature map. Default 100.
    pub features: usize,
    /// Seed of the frequencies. Default 0.
    pub seed: u64,
    /// Noise `σ > 0`. Default 0.1.
    pub sigma: f64,
    /// Prior scale `β > 0` of the weights of `g`. Default 1.
    pub beta: f64,
    /// Prior scale `γ > 0` of the weights of `f`. Default 1.
    pub gamma: f64,
    /// Marginal likelihood. Default [`TtblrForm::Full`].
    pub form: TtblrForm,
    /// What is learned. Default: nothing.
    pub learn: TtblrLearn,
    /// Multi-start L-BFGS settings of the learning.
    pub search: MultiStartOptions,
}

impl Default for TtblrParams {
    fn default() -> Self {
        Self {
            kernel_x: Kernel::se(1.0).expect("positive lengthscale"),
            kernel_y: Kernel::se(1.0).expect("positive lengthscale"),
            features: 100,
            seed: 0,
            sigma: 0.1,
            beta: 1.0,
            gamma: 1.0,
            form: TtblrForm::Full,
            learn: TtblrLearn::default(),
            search: MultiStartOptions::default(),
        }
    }
}

impl Params for TtblrParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        self.scales().check()?;
        if self.features == 0 {
            return Err(invalid("features", 0.0, "at least one random Fourier frequency is needed"));
        }
        self.search.validate()
    }
}

impl TtblrParams {
    /// `(σ, β, γ)`.
    pub fn scales(&self) -> Scales {
        Scales { sigma: self.sigma, beta: self.beta, gamma: self.gamma }
    }

    /// The DME regulariser `λ = σ²/(nβ²)` these scales correspond to (seed 004 Thm 5.3 (4)).
    pub fn lambda(&self, n: usize) -> f64 {
        (self.sigma / self.beta).powi(2) / n as f64
    }

    /// The DME regulariser `ε = σ²/(mγ²)` these scales correspond to (seed 004 Thm 5.3 (4)).
    pub fn epsilon(&self, m: usize) -> f64 {
        (self.sigma / self.gamma).powi(2) / m as f64
    }

    /// `(log ℓ_k…, log ℓ_ℓ…, log σ, log β, log γ)`.
    pub fn log_params(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self.kernel_x.lengthscales().iter().map(|l| l.ln()).collect();
        p.extend(self.kernel_y.lengthscales().iter().map(|l| l.ln()));
        p.extend([self.sigma.ln(), self.beta.ln(), self.gamma.ln()]);
        p
    }

    /// The same settings at log-parameters `p` (layout of [`TtblrParams::log_params`]).
    pub fn with_log_params(&self, p: &[f64]) -> Result<Self, DmeError> {
        let (nx, ny) = (self.kernel_x.lengthscales().len(), self.kernel_y.lengthscales().len());
        if p.len() != nx + ny + 3 {
            return Err(CoreError::DimensionMismatch {
                what: "TTBLR log-parameters".into(),
                expected: nx + ny + 3,
                found: p.len(),
            }
            .into());
        }
        let exp = |s: &[f64]| s.iter().map(|v| v.exp()).collect::<Vec<_>>();
        let out = Self {
            kernel_x: Kernel::new(self.kernel_x.family(), exp(&p[..nx]))?,
            kernel_y: Kernel::new(self.kernel_y.family(), exp(&p[nx..nx + ny]))?,
            sigma: p[nx + ny].exp(),
            beta: p[nx + ny + 1].exp(),
            gamma: p[nx + ny + 2].exp(),
            ..self.clone()
        };
        out.scales().check()?;
        Ok(out)
    }
}

/// Frequencies drawn at unit lengthscales; the features at lengthscales `ℓ` divide them by `ℓ_d`.
struct UnitFeatures {
    x: FourierFeatures,
    y: FourierFeatures,
}

fn unit(k: &Kernel) -> Result<Kernel, DmeError> {
    Ok(Kernel::new(k.family(), vec![1.0; k.lengthscales().len()])?)
}

/// `f0` at the lengthscales of `k`.
fn scaled(f0: &FourierFeatures, k: &Kernel) -> Result<FourierFeatures, DmeError> {
    let (d, ls) = (f0.dim(), k.lengthscales());
    let w = f0
        .frequencies()
        .iter()
        .enumerate()
        .map(|(i, w)| w / ls[if ls.len() == 1 { 0 } else { i % d }])
        .collect();
    Ok(FourierFeatures::new(w, d)?)
}

impl UnitFeatures {
    fn new(p: &TtblrParams, dims: (usize, usize)) -> Result<Self, DmeError> {
        let (x, y) = fourier_pair(&unit(&p.kernel_x)?, &unit(&p.kernel_y)?, dims, p.features, p.seed)?;
        Ok(Self { x, y })
    }

    fn at(
        &self,
        p: &TtblrParams,
        data: &TaskData,
    ) -> Result<(FourierFeatures, FourierFeatures, FeatureData), DmeError> {
        let (fx, fy) = (scaled(&self.x, &p.kernel_x)?, scaled(&self.y, &p.kernel_y)?);
        let fd = FeatureData::new(
            fx.features(&data.x)?,
            fy.features(&data.y)?,
            fy.features(&data.y_tilde)?,
            data.z_tilde.clone(),
        )?;
        Ok((fx, fy, fd))
    }
}

/// `Σ_{i,c} F̄_ic ∂F_ic/∂log ℓ_d` for the Fourier features `F` of `f` at `x` (module docs), one entry
/// per lengthscale of the kernel (summed over the dimensions when isotropic).
fn lengthscale_grad(f: &FourierFeatures, x: &Points, feat: &Mat, bar: &Mat, n_ls: usize) -> Vec<f64> {
    let (m, d) = (f.len(), f.dim());
    let w = f.frequencies();
    let mut g = vec![0.0; d];
    for c in 0..m {
        let (cc, sc, bc, bs) = (feat.col(c), feat.col(m + c), bar.col(c), bar.col(m + c));
        for (i, xi) in x.iter().enumerate() {
            let a = bc[i] * sc[i] - bs[i] * cc[i];
            for k in 0..d {
                g[k] += a * w[c * d + k] * xi[k];
            }
        }
    }
    if n_ls == 1 { vec![g.iter().sum()] } else { g }
}

/// `log p(z̃)` and its gradient in the layout of [`TtblrParams::log_params`].
fn objective<B: Backend>(
    unit: &UnitFeatures,
    h: &TtblrParams,
    data: &TaskData,
) -> Result<(f64, Vec<f64>), DmeError> {
    let (fx, fy, fd) = unit.at(h, data)?;
    let r = feature_log_marginal::<B>(&fd, h.scales(), h.form)?;
    let (nx, ny) = (h.kernel_x.lengthscales().len(), h.kernel_y.lengthscales().len());
    let mut g = lengthscale_grad(&fx, &data.x, &fd.phi, &r.phi_bar, nx);
    let gy = lengthscale_grad(&fy, &data.y, &fd.psi, &r.psi_bar, ny);
    let gyt = lengthscale_grad(&fy, &data.y_tilde, &fd.psi_tilde, &r.psi_tilde_bar, ny);
    g.extend(gy.iter().zip(&gyt).map(|(a, b)| a + b));
    g.extend(r.d_log_scales);
    Ok((r.value, g))
}

/// `log p(z̃)` of the TTBLR with random Fourier features at `params`, and its gradient with respect
/// to [`TtblrParams::log_params`].
pub fn log_marginal<B: Backend>(data: &TaskData, params: &TtblrParams) -> Result<(f64, Vec<f64>), DmeError> {
    params.validate()?;
    let unit = UnitFeatures::new(params, (data.x.dim(), data.y.dim()))?;
    objective::<B>(&unit, params, data)
}

/// A fitted TTBLR: the feature map `φ` of `k` and the posterior of the weights of `f`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "TtblrRecord", try_from = "TtblrRecord")]
pub struct Ttblr {
    params: TtblrParams,
    features: FourierFeatures,
    posterior: WeightPosterior,
    log_marginal: f64,
    starts: Vec<f64>,
}

/// Refuses a TTBLR whose feature matrices cannot fit in memory: the frequencies, the `2N` feature
/// columns at the `n + 2m` inputs (and their derivatives), and the `2N × 2N` posterior matrices.
fn check_budget(features: usize, data: &TaskData) -> Result<(), DmeError> {
    let cols = features.saturating_mul(2);
    let rows = data.n().saturating_add(data.m().saturating_mul(2));
    let dims = data.x.dim() + data.y.dim();
    let bytes = Bytes::f64s(cols.saturating_mul(rows))
        .times(2)
        .plus(Bytes::f64s(cols.saturating_mul(cols)).times(4))
        .plus(Bytes::f64s(features.saturating_mul(dims)));
    Ok(bke_core::budget::check(&format!("features = {features}"), bytes)?)
}

impl Estimator for TtblrParams {
    type Data = TaskData;
    type Fitted = Ttblr;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TaskData,
        progress: &dyn Progress,
    ) -> Result<Ttblr, DmeError> {
        params.kernel_x.check_dim(data.x.dim())?;
        params.kernel_y.check_dim(data.y.dim())?;
        check_budget(params.features, data)?;
        let unit = UnitFeatures::new(params, (data.x.dim(), data.y.dim()))?;
        let (h, starts) = if params.learn.any() {
            let init = &**params;
            let (nx, ny) = (init.kernel_x.lengthscales().len(), init.kernel_y.lengthscales().len());
            let mask = init.learn.mask(nx, ny);
            let f = |p: &[f64]| objective::<B>(&unit, &init.with_log_params(p).ok()?, data).ok();
            let results = multi_start(
                &init.log_params(),
                &mask,
                &mask,
                &init.search,
                &f,
                None,
                (progress, "learning TTBLR hyperparameters"),
            )?;
            let best = best_start(&results, "increase sigma or gamma")?;
            (init.with_log_params(&best.0)?, results.iter().map(|r| r.1).collect())
        } else {
            ((**params).clone(), Vec::new())
        };
        let (fx, _, fd) = unit.at(&h, data)?;
        let posterior = weight_posterior::<B>(&fd, h.scales(), h.form)?;
        let log_marginal = feature_log_marginal_value::<B>(&fd, h.scales(), h.form)?;
        Ok(Ttblr { params: h, features: fx, posterior, log_marginal, starts })
    }
}

impl Ttblr {
    /// The hyperparameters (learned ones if learning was asked for).
    pub fn params(&self) -> &TtblrParams {
        &self.params
    }

    /// The feature map `φ` of `k` at the model's lengthscales.
    pub fn features(&self) -> &FourierFeatures {
        &self.features
    }

    /// The posterior of the weights of `f`.
    pub fn posterior(&self) -> &WeightPosterior {
        &self.posterior
    }

    /// `log p(z̃)` at the model's hyperparameters.
    pub fn log_marginal(&self) -> f64 {
        self.log_marginal
    }

    /// `log p(z̃)` reached by each start of the learning (empty when nothing was learned).
    pub fn starts(&self) -> &[f64] {
        &self.starts
    }
}

impl Predict for Ttblr {
    type Output = Prediction;
    type Error = DmeError;

    /// `f(x*) | z̃ ~ N(φ*ᵀw̄, φ*ᵀCφ*)`.
    fn predict<B: Backend>(&self, at: &Points) -> Result<Prediction, DmeError> {
        let phi = self.features.features(at)?;
        let mean = mv::<B>(&phi, Trans::No, &self.posterior.mean)?;
        let pc = crate::ops::mm::<B>(&phi, Trans::No, &self.posterior.covariance, Trans::No)?;
        let variance = (0..at.len())
            .map(|i| (0..phi.ncols()).map(|c| pc[(i, c)] * phi[(i, c)]).sum::<f64>().max(0.0))
            .collect();
        Ok(Prediction { mean, variance })
    }
}

/// The model-file layout of a TTBLR.
#[derive(Serialize, Deserialize)]
struct TtblrRecord {
    kernel: String,
    kernel_y: String,
    lengthscale_x: Vec<f64>,
    lengthscale_y: Vec<f64>,
    sigma: f64,
    beta: f64,
    gamma: f64,
    form: TtblrForm,
    features: usize,
    seed: u64,
    /// Frequencies of `φ`, one row per frequency.
    frequencies: Vec<Vec<f64>>,
    weights_mean: Vec<f64>,
    weights_covariance: Vec<Vec<f64>>,
    log_marginal: f64,
}

impl From<Ttblr> for TtblrRecord {
    fn from(t: Ttblr) -> Self {
        let d = t.features.dim();
        let p = &t.params;
        Self {
            kernel: p.kernel_x.family().spec(),
            kernel_y: p.kernel_y.family().spec(),
            lengthscale_x: p.kernel_x.lengthscales().to_vec(),
            lengthscale_y: p.kernel_y.lengthscales().to_vec(),
            sigma: p.sigma,
            beta: p.beta,
            gamma: p.gamma,
            form: p.form,
            features: p.features,
            seed: p.seed,
            frequencies: t.features.frequencies().chunks(d).map(<[f64]>::to_vec).collect(),
            weights_covariance: (0..t.posterior.covariance.nrows())
                .map(|i| {
                    (0..t.posterior.covariance.ncols()).map(|j| t.posterior.covariance[(i, j)]).collect()
                })
                .collect(),
            weights_mean: t.posterior.mean,
            log_marginal: t.log_marginal,
        }
    }
}

impl TryFrom<TtblrRecord> for Ttblr {
    type Error = DmeError;

    fn try_from(r: TtblrRecord) -> Result<Self, DmeError> {
        let family = |s: &str| s.parse::<KernelFamily>();
        let params = TtblrParams {
            kernel_x: Kernel::new(family(&r.kernel)?, r.lengthscale_x)?,
            kernel_y: Kernel::new(family(&r.kernel_y)?, r.lengthscale_y)?,
            features: r.features,
            seed: r.seed,
            sigma: r.sigma,
            beta: r.beta,
            gamma: r.gamma,
            form: r.form,
            ..TtblrParams::default()
        };
        let w = Points::from_rows("frequencies", &r.frequencies)?;
        let features = FourierFeatures::new(w.as_slice().to_vec(), w.dim())?;
        let covariance = Mat::from_rows(&r.weights_covariance)?;
        let posterior = WeightPosterior { mean: r.weights_mean, covariance };
        Ok(Self { params, features, posterior, log_marginal: r.log_marginal, starts: Vec::new() })
    }
}

impl ModelFile for Ttblr {
    const KINDS: &'static [&'static str] = &["ttblr"];
    const VERSION: u32 = 1;

    fn kind(&self) -> &'static str {
        "ttblr"
    }

    /// Every field ([`fields`]): `σ, β, γ` and the lengthscales are [`fields::scale`]s, the
    /// lengthscales of `k` one or one per column of the frequencies, `features` frequencies of
    /// [`fields::bounded`] values, `2 × features` weights with a bounded mean and a
    /// [`fields::covariance`], a finite `log_marginal`.
    fn validate(&self) -> Result<(), CoreError> {
        let p = &self.params;
        fields::scale("sigma", p.sigma)?;
        fields::scale("beta", p.beta)?;
        fields::scale("gamma", p.gamma)?;
        fields::scales("lengthscale_x", p.kernel_x.lengthscales())?;
        fields::scales("lengthscale_y", p.kernel_y.lengthscales())?;
        p.kernel_x.check_dim(self.features.dim()).map_err(|e| fields::refuse("lengthscale_x", e))?;
        if p.features == 0 {
            return Err(fields::refuse("features", "at least one random Fourier frequency is needed"));
        }
        fields::same_len("frequencies", self.features.len(), p.features, "the field `features`")?;
        fields::bounded("frequencies", self.features.frequencies())?;
        let width = 2 * self.features.len();
        let two = "two weights per frequency";
        fields::same_len("weights_mean", self.posterior.mean.len(), width, two)?;
        fields::bounded("weights_mean", &self.posterior.mean)?;
        fields::same_len("weights_covariance", self.posterior.covariance.nrows(), width, two)?;
        fields::covariance("weights_covariance", &self.posterior.covariance)?;
        fields::bounded("log_marginal", &[self.log_marginal])?;
        self.params.validate().map_err(to_core)
    }
}
