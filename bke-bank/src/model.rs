//! BaNK fitting and prediction: the sampler parameters, the Gibbs/MH driver (seed 001 §3), the fitted
//! models and the learned kernel (eq. 4, 5).
//!
//! One iteration (a *sweep*) is: Gibbs for every `Z_j` (eq. 8), an NIW posterior draw for every
//! component (§3.2), then one MH pass over the frequencies — regression: eq. 12 with the evidence of
//! eq. 11 ([`crate::regression`]); classification: the joint `(W_j, β_j)` moves of §3.3.2
//! ([`crate::classification`]). Everything is driven by one seeded ChaCha8 stream; parallel parts
//! draw no random numbers, so results do not depend on the thread count.

use crate::classification::ClassificationState;
use crate::dpmix::{Mixture, MixtureParams};
use crate::error::{BankError, check_labels, check_targets};
use crate::evidence::NigParams;
use crate::features::{Standardizer, feature_matrix, target_moments};
use crate::regression::{RegressionState, SweepStats};
use bke_core::Points;
use bke_linalg::{Backend, Mat, Trans};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

/// Regression or (binary, 0/1 labels) classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Gaussian likelihood, conjugate NIG evidence (§3.3.1).
    Regression,
    /// Logistic likelihood, joint `(W_j, β_j)` MH with a Laplace proposal (§3.3.2).
    Classification,
}

/// How the regression sweep evaluates the evidence of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SweepMethod {
    /// Bulk Gram rows, Woodbury evaluation, rank-2 update + downdate on acceptance: `O(NM²)` a sweep.
    LowRank,
    /// Rebuild and refactorise `Λ_n` per proposal: `O(NM³ + M⁴)` a sweep (reference only).
    Refactorise,
}

/// Parameters of a BaNK fit. Frequencies live in the space of the standardised inputs unless
/// `standardize_inputs` is off; the exported kernel is always in the original units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankParams {
    /// Number of frequencies `M` (`2M` features). Default `128`.
    pub frequencies: usize,
    /// MCMC iterations (sweeps). Default `100`.
    pub iterations: usize,
    /// Burn-in sweeps discarded (`None`: half of `iterations`). Default `None`.
    pub burn_in: Option<usize>,
    /// Number of post-burn-in states retained (evenly spaced) for prediction. Default `10`.
    pub samples: usize,
    /// DP-mixture hyperparameters.
    pub mixture: MixtureParams,
    /// Regression evidence hyperparameters.
    pub nig: NigParams,
    /// Classification: prior variance `s²` of each weight, `β ~ N(0, s² I)`. Default `10`.
    pub weight_prior_variance: f64,
    /// Classification: Newton iterations of each 2-D Laplace approximation. Default `12`.
    pub newton_iterations: usize,
    /// Initial frequencies `W_j ~ N(0, s² I)` with `s = init_scale` (standardised units). Default `1`.
    pub init_scale: f64,
    /// Standardise inputs (per column) before learning. Default `true`.
    pub standardize_inputs: bool,
    /// Proposals per bulk Gram-row product in the regression sweep. Default `64`.
    pub block: usize,
    /// Refactorise `Λ_n` (and check the drift) every this many sweeps. Default `1` (`O(M³)`, small
    /// beside the sweep's `O(NM²)`).
    pub refactor_every: usize,
    /// Regression sweep method. Default [`SweepMethod::LowRank`].
    pub method: SweepMethod,
    /// Seed of the random stream. Default `0`.
    pub seed: u64,
}

impl Default for BankParams {
    fn default() -> Self {
        Self {
            frequencies: 128,
            iterations: 100,
            burn_in: None,
            samples: 10,
            mixture: MixtureParams::default(),
            nig: NigParams::default(),
            weight_prior_variance: 10.0,
            newton_iterations: 12,
            init_scale: 1.0,
            standardize_inputs: true,
            block: 64,
            refactor_every: 1,
            method: SweepMethod::LowRank,
            seed: 0,
        }
    }
}

fn positive_count(name: &str, v: usize) -> Result<(), BankError> {
    if v == 0 {
        return Err(BankError::InvalidParameter {
            name: name.into(),
            value: 0.0,
            reason: "must be at least 1".into(),
        });
    }
    Ok(())
}

impl BankParams {
    /// Validates the parameters for inputs in `d` dimensions.
    pub fn check(&self, d: usize) -> Result<(), BankError> {
        positive_count("frequencies", self.frequencies)?;
        positive_count("iterations", self.iterations)?;
        positive_count("samples", self.samples)?;
        positive_count("block", self.block)?;
        positive_count("refactor_every", self.refactor_every)?;
        positive_count("newton_iterations", self.newton_iterations)?;
        if self.burn_in() >= self.iterations {
            return Err(BankError::InvalidParameter {
                name: "burn_in".into(),
                value: self.burn_in() as f64,
                reason: format!("must be smaller than iterations = {}", self.iterations),
            });
        }
        crate::error::check_positive("init_scale", self.init_scale)?;
        crate::error::check_positive("weight_prior_variance", self.weight_prior_variance)?;
        self.mixture.check(d)?;
        self.nig.check()
    }

    /// The burn-in actually used.
    pub fn burn_in(&self) -> usize {
        self.burn_in.unwrap_or(self.iterations / 2)
    }

    /// The iterations whose states are retained: `samples` evenly spaced after burn-in, ending at the
    /// last iteration.
    pub fn retained_iterations(&self) -> Vec<usize> {
        let b = self.burn_in();
        let post = self.iterations - b;
        let k = self.samples.min(post);
        let mut v: Vec<usize> = (1..=k).map(|i| b + (i * post) / k - 1).collect();
        v.dedup();
        v
    }
}

/// The frequencies and mixture of one retained state (shared by both tasks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpectralSample {
    /// Frequencies, row-major `M × d` (standardised units).
    pub w: Vec<f64>,
    /// The DP-mixture state.
    pub mixture: Mixture,
}

/// A retained regression state: the frequencies and the conjugate posterior of the weights and noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionSample {
    /// Frequencies and mixture.
    pub spectral: SpectralSample,
    /// `μ_n` (length `2M`).
    pub mean: Vec<f64>,
    /// Lower factor of `Λ_n`, packed column by column (`c = 0..2M`, rows `c..2M`).
    pub factor: Vec<f64>,
    /// `a_n`.
    pub an: f64,
    /// `b_n`.
    pub bn: f64,
}

/// A retained classification state: frequencies and weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassificationSample {
    /// Frequencies and mixture.
    pub spectral: SpectralSample,
    /// Weights `β` (length `2M`) and the intercept last (length `2M + 1`).
    pub beta: Vec<f64>,
}

/// The retained states of either task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "task", content = "samples", rename_all = "lowercase")]
pub enum Samples {
    /// Regression states.
    Regression(Vec<RegressionSample>),
    /// Classification states.
    Classification(Vec<ClassificationSample>),
}

/// Diagnostics of a fit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FitStats {
    /// Sweep counters (proposals, acceptances, refactorisations, drift).
    pub sweep: SweepStats,
    /// Number of mixture components after each iteration.
    pub components: Vec<usize>,
    /// Regression: log evidence after each iteration; classification: log joint density of `(y, β)`.
    pub log_target: Vec<f64>,
}

/// A fitted BaNK model (serde-serialisable: the CLI's model JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BankModel {
    /// Input dimension `d`.
    pub dim: usize,
    /// Frequencies `M`.
    pub frequencies: usize,
    /// Input standardisation (identity if it was off).
    pub inputs: Standardizer,
    /// Regression target mean (0 for classification).
    pub y_mean: f64,
    /// Regression target standard deviation (1 for classification).
    pub y_scale: f64,
    /// The parameters of the fit.
    pub params: BankParams,
    /// The retained states.
    pub samples: Samples,
    /// Diagnostics.
    pub stats: FitStats,
}

/// Regression predictions: the mean and variance of the posterior predictive (a mixture over retained
/// states of Student-t distributions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegressionPrediction {
    /// Predictive means.
    pub mean: Vec<f64>,
    /// Predictive variances (including the noise).
    pub variance: Vec<f64>,
}

/// The learned spectral mixture `ρ(ω) = Σ_k π_k N(ω | μ_k, Σ_k)` (eq. 4) in the original input units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpectralMixture {
    /// Weights `π_k = m_k / M`.
    pub weights: Vec<f64>,
    /// Means `μ_k` (length `d` each).
    pub means: Vec<Vec<f64>>,
    /// Covariances `Σ_k` (`d × d` row-major each).
    pub covariances: Vec<Vec<f64>>,
}

/// Validates inputs and targets.
fn check_data(x: &Points, y: &[f64], task: Task) -> Result<(), BankError> {
    if y.len() != x.len() {
        return Err(BankError::ShapeMismatch { what: "targets".into(), expected: x.len(), found: y.len() });
    }
    if x.len() < 2 {
        return Err(BankError::TooFewRows { what: "fitting BaNK".into(), needed: 2, found: x.len() });
    }
    check_targets(y)?;
    if task == Task::Classification {
        check_labels(y)?;
    }
    Ok(())
}

/// Fits BaNK with backend `B`; `on_iteration(i)` is called after sweep `i` (for progress bars).
pub fn fit<B: Backend>(
    x: &Points,
    y: &[f64],
    task: Task,
    params: &BankParams,
    mut on_iteration: impl FnMut(usize),
) -> Result<BankModel, BankError> {
    params.check(x.dim())?;
    check_data(x, y, task)?;
    let d = x.dim();
    let m = params.frequencies;
    let inputs = if params.standardize_inputs { Standardizer::fit(x) } else { Standardizer::identity(d) };
    let xs = inputs.apply(x);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let w: Vec<f64> = (0..m * d).map(|_| params.init_scale * rng.sample::<f64, _>(StandardNormal)).collect();
    let mut mixture = Mixture::single(d, m, params.init_scale)?;
    let retained = params.retained_iterations();
    let mut stats = FitStats::default();
    match task {
        Task::Regression => {
            let (y_mean, y_scale) = target_moments(y);
            let ys: Vec<f64> = y.iter().map(|v| (v - y_mean) / y_scale).collect();
            let mut st = RegressionState::<B>::new(xs, ys, w, params.nig)?;
            let mut samples = Vec::new();
            for it in 0..params.iterations {
                regression_sweep(&mut st, &mut mixture, params, it, &mut rng)?;
                stats.components.push(mixture.components.len());
                stats.log_target.push(st.log_evidence());
                if retained.contains(&it) {
                    let (mean, an, bn) = st.posterior()?;
                    samples.push(RegressionSample {
                        spectral: SpectralSample { w: st.w().to_vec(), mixture: mixture.clone() },
                        mean,
                        factor: pack_lower(st.factor()),
                        an,
                        bn,
                    });
                }
                on_iteration(it);
            }
            stats.sweep = st.stats.clone();
            Ok(BankModel {
                dim: d,
                frequencies: m,
                inputs,
                y_mean,
                y_scale,
                params: params.clone(),
                samples: Samples::Regression(samples),
                stats,
            })
        }
        Task::Classification => {
            let mut st = ClassificationState::new(xs, y.to_vec(), w, params)?;
            let mut samples = Vec::new();
            for it in 0..params.iterations {
                classification_sweep(&mut st, &mut mixture, params, &mut rng)?;
                stats.components.push(mixture.components.len());
                stats.log_target.push(st.log_joint());
                if retained.contains(&it) {
                    samples.push(ClassificationSample {
                        spectral: SpectralSample { w: st.w().to_vec(), mixture: mixture.clone() },
                        beta: st.beta().to_vec(),
                    });
                }
                on_iteration(it);
            }
            stats.sweep = st.stats.clone();
            Ok(BankModel {
                dim: d,
                frequencies: m,
                inputs,
                y_mean: 0.0,
                y_scale: 1.0,
                params: params.clone(),
                samples: Samples::Classification(samples),
                stats,
            })
        }
    }
}

/// One regression iteration: Gibbs for `Z` (eq. 8), NIW draws (§3.2), then the MH sweep over the
/// frequencies (eq. 12) with proposals and uniforms drawn up front from `rng`; refactorises every
/// `params.refactor_every` iterations (`it` counts from 0). Returns the number of accepted proposals.
pub fn regression_sweep<B: Backend, R: Rng>(
    st: &mut RegressionState<B>,
    mixture: &mut Mixture,
    params: &BankParams,
    it: usize,
    rng: &mut R,
) -> Result<usize, BankError> {
    let (m, d) = (st.frequencies(), st.dim());
    mixture.gibbs_assignments(st.w(), &params.mixture, rng)?;
    mixture.draw_components(st.w(), &params.mixture, rng)?;
    let mut props = vec![0.0; m * d];
    for j in 0..m {
        mixture.component_of(j).sample(rng, &mut props[j * d..(j + 1) * d]);
    }
    let log_u: Vec<f64> = (0..m).map(|_| rng.random::<f64>().ln()).collect();
    match params.method {
        SweepMethod::LowRank => {
            let a = st.sweep(&props, &log_u, params.block)?;
            if (it + 1) % params.refactor_every == 0 {
                st.refactorise()?;
            }
            Ok(a)
        }
        SweepMethod::Refactorise => st.sweep_refactorising(&props, &log_u),
    }
}

/// One classification iteration: Gibbs for `Z`, NIW draws, then the joint `(W_j, β_j)` moves (§3.3.2).
pub fn classification_sweep<R: Rng>(
    st: &mut ClassificationState,
    mixture: &mut Mixture,
    params: &BankParams,
    rng: &mut R,
) -> Result<usize, BankError> {
    let d = mixture.dim;
    let m = mixture.assignments.len();
    mixture.gibbs_assignments(st.w(), &params.mixture, rng)?;
    mixture.draw_components(st.w(), &params.mixture, rng)?;
    let mut props = vec![0.0; m * d];
    for j in 0..m {
        mixture.component_of(j).sample(rng, &mut props[j * d..(j + 1) * d]);
    }
    st.sweep(&props, rng)
}

fn pack_lower(l: bke_linalg::MatRef<'_>) -> Vec<f64> {
    let f = l.nrows();
    let mut v = Vec::with_capacity(f * (f + 1) / 2);
    for c in 0..f {
        v.extend_from_slice(&l.col(c)[c..]);
    }
    v
}

fn unpack_lower(v: &[f64], f: usize) -> Result<Mat, BankError> {
    if v.len() != f * (f + 1) / 2 {
        return Err(BankError::InvalidModel(format!(
            "packed factor has {} values, expected {} for {f} features",
            v.len(),
            f * (f + 1) / 2
        )));
    }
    let mut l = Mat::zeros(f, f);
    let mut k = 0;
    for c in 0..f {
        let n = f - c;
        l.col_mut(c)[c..].copy_from_slice(&v[k..k + n]);
        k += n;
    }
    Ok(l)
}

impl BankModel {
    /// The task the model was fitted for.
    pub fn task(&self) -> Task {
        match self.samples {
            Samples::Regression(_) => Task::Regression,
            Samples::Classification(_) => Task::Classification,
        }
    }

    fn spectral_samples(&self) -> Vec<&SpectralSample> {
        match &self.samples {
            Samples::Regression(s) => s.iter().map(|s| &s.spectral).collect(),
            Samples::Classification(s) => s.iter().map(|s| &s.spectral).collect(),
        }
    }

    /// Checks the internal consistency of a model (e.g. one read from JSON) and rebuilds caches.
    pub fn validate(&mut self) -> Result<(), BankError> {
        let (d, m) = (self.dim, self.frequencies);
        if self.inputs.shift.len() != d || self.inputs.scale.len() != d {
            return Err(BankError::InvalidModel("input standardisation does not match the dimension".into()));
        }
        let f = 2 * m;
        let check_spectral = |s: &mut SpectralSample| -> Result<(), BankError> {
            if s.w.len() != m * d || s.mixture.dim != d || s.mixture.assignments.len() != m {
                return Err(BankError::InvalidModel("a sample's frequencies do not match M × d".into()));
            }
            s.mixture.refresh()
        };
        let n = match &mut self.samples {
            Samples::Regression(v) => {
                for s in v.iter_mut() {
                    check_spectral(&mut s.spectral)?;
                    if s.mean.len() != f || s.factor.len() != f * (f + 1) / 2 {
                        return Err(BankError::InvalidModel("a regression sample has the wrong size".into()));
                    }
                }
                v.len()
            }
            Samples::Classification(v) => {
                for s in v.iter_mut() {
                    check_spectral(&mut s.spectral)?;
                    if s.beta.len() != f + 1 {
                        return Err(BankError::InvalidModel(
                            "a classification sample has the wrong size".into(),
                        ));
                    }
                }
                v.len()
            }
        };
        if n == 0 {
            return Err(BankError::InvalidModel("the model has no retained samples".into()));
        }
        Ok(())
    }

    fn check_inputs(&self, x: &Points) -> Result<(), BankError> {
        if x.dim() != self.dim {
            return Err(BankError::ShapeMismatch {
                what: "prediction inputs (columns)".into(),
                expected: self.dim,
                found: x.dim(),
            });
        }
        Ok(())
    }

    /// Regression: the posterior predictive mean and variance at `x`, averaged over retained states.
    /// State `s` gives a Student-t with `2a_n` degrees of freedom, location `φ(x)ᵀμ_n` and squared
    /// scale `(b_n/a_n)(1 + φ(x)ᵀΛ_n⁻¹φ(x))` (variance `scale² · a_n/(a_n − 1)`); the mixture's mean is
    /// the average of the means and its variance the average second moment minus the squared mean.
    pub fn predict_regression<B: Backend>(&self, x: &Points) -> Result<RegressionPrediction, BankError> {
        self.check_inputs(x)?;
        let Samples::Regression(samples) = &self.samples else {
            return Err(BankError::InvalidModel(
                "predict_regression called on a classification model".into(),
            ));
        };
        let xs = self.inputs.apply(x);
        let t = x.len();
        let f = 2 * self.frequencies;
        let mut mean = vec![0.0; t];
        let mut second = vec![0.0; t];
        let mut mu = vec![0.0; t];
        for s in samples {
            let phi = feature_matrix(&xs, &s.spectral.w);
            B::gemv(1.0, phi.as_ref(), Trans::No, &s.mean, 0.0, &mut mu)?;
            let l = unpack_lower(&s.factor, f)?;
            let mut v = phi.transpose();
            B::solve_lower_in_place(l.as_ref(), v.as_mut())?;
            let ratio = s.an / (s.an - 1.0);
            for i in 0..t {
                let q: f64 = v.col(i).iter().map(|a| a * a).sum();
                let var = s.bn / s.an * (1.0 + q) * ratio;
                mean[i] += mu[i];
                second[i] += var + mu[i] * mu[i];
            }
        }
        let k = samples.len() as f64;
        let ys = self.y_scale;
        let variance =
            mean.iter().zip(&second).map(|(m, s)| ((s / k) - (m / k).powi(2)).max(0.0) * ys * ys).collect();
        let mean = mean.iter().map(|m| m / k * ys + self.y_mean).collect();
        Ok(RegressionPrediction { mean, variance })
    }

    /// Classification: `P(y = 1 | x)` averaged over retained states, `σ(φ(x)ᵀβ + β₀)`.
    pub fn predict_probability<B: Backend>(&self, x: &Points) -> Result<Vec<f64>, BankError> {
        self.check_inputs(x)?;
        let Samples::Classification(samples) = &self.samples else {
            return Err(BankError::InvalidModel("predict_probability called on a regression model".into()));
        };
        let xs = self.inputs.apply(x);
        let t = x.len();
        let f = 2 * self.frequencies;
        let mut p = vec![0.0; t];
        let mut eta = vec![0.0; t];
        for s in samples {
            let phi = feature_matrix(&xs, &s.spectral.w);
            B::gemv(1.0, phi.as_ref(), Trans::No, &s.beta[..f], 0.0, &mut eta)?;
            for i in 0..t {
                p[i] += crate::classification::sigmoid(eta[i] + s.beta[f]);
            }
        }
        let k = samples.len() as f64;
        Ok(p.into_iter().map(|v| v / k).collect())
    }

    /// The spectral mixture of the last retained state, in the original input units
    /// (`ω = ω_std / scale`: `μ_k / scale`, `Σ_k,ab / (scale_a scale_b)`).
    pub fn spectral_mixture(&self) -> SpectralMixture {
        let s = self.spectral_samples();
        let last = s.last().expect("a fitted model has samples");
        let d = self.dim;
        let sc = &self.inputs.scale;
        let mix = &last.mixture;
        SpectralMixture {
            weights: mix.weights(),
            means: mix.components.iter().map(|c| (0..d).map(|a| c.mean[a] / sc[a]).collect()).collect(),
            covariances: mix
                .components
                .iter()
                .map(|c| (0..d * d).map(|ab| c.cov[ab] / (sc[ab / d] * sc[ab % d])).collect())
                .collect(),
        }
    }

    /// The learned spectral density `ρ(ω)` (original units), averaged over retained states, at the
    /// frequencies `omegas`.
    pub fn spectral_density(&self, omegas: &Points) -> Result<Vec<f64>, BankError> {
        self.check_inputs(omegas)?;
        let d = self.dim;
        let sc = &self.inputs.scale;
        let jac: f64 = sc.iter().product();
        let samples = self.spectral_samples();
        let k = samples.len() as f64;
        Ok(omegas
            .iter()
            .map(|om| {
                let os: Vec<f64> = (0..d).map(|a| om[a] * sc[a]).collect();
                samples
                    .iter()
                    .map(|s| {
                        let w = s.mixture.weights();
                        s.mixture
                            .components
                            .iter()
                            .zip(&w)
                            .map(|(c, p)| p * c.log_density(&os).exp())
                            .sum::<f64>()
                    })
                    .sum::<f64>()
                    * jac
                    / k
            })
            .collect())
    }

    /// The learned kernel `k(t)` at the lags `ts` (original units), averaged over retained states, two
    /// ways: from the sampled frequencies, `M⁻¹ Σ_j cos(ω_jᵀt)` (the kernel the features realise), and
    /// from the mixture, `Σ_k π_k exp(−½ tᵀΣ_k t) cos(μ_kᵀt)` (eq. 5). Returns `(features, mixture)`.
    pub fn kernel(&self, ts: &Points) -> Result<(Vec<f64>, Vec<f64>), BankError> {
        self.check_inputs(ts)?;
        let d = self.dim;
        let m = self.frequencies;
        let sc = &self.inputs.scale;
        let samples = self.spectral_samples();
        let k = samples.len() as f64;
        let mut feat = Vec::with_capacity(ts.len());
        let mut mixk = Vec::with_capacity(ts.len());
        for t in ts.iter() {
            let tsd: Vec<f64> = (0..d).map(|a| t[a] / sc[a]).collect();
            let (mut a, mut b) = (0.0, 0.0);
            for s in &samples {
                a += (0..m).map(|j| (0..d).map(|q| s.w[j * d + q] * tsd[q]).sum::<f64>().cos()).sum::<f64>()
                    / m as f64;
                let w = s.mixture.weights();
                for (c, p) in s.mixture.components.iter().zip(&w) {
                    let mut quad = 0.0;
                    for r in 0..d {
                        for q in 0..d {
                            quad += tsd[r] * c.cov[r * d + q] * tsd[q];
                        }
                    }
                    let phase: f64 = (0..d).map(|q| c.mean[q] * tsd[q]).sum();
                    b += p * (-0.5 * quad).exp() * phase.cos();
                }
            }
            feat.push(a / k);
            mixk.push(b / k);
        }
        Ok((feat, mixk))
    }
}
