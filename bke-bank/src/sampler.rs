//! The BaNK sampler (seed 001 §3): the fitting driver behind [`BankParams`]' [`Estimator`] impl and
//! one iteration (*sweep*) of each task.
//!
//! One sweep is: Gibbs for every `Z_j` (seed 001 eq. (8)), an NIW posterior draw for every component (§3.2), a
//! Gibbs draw of the base scale `ψ₀` when it is learned ([`crate::dpmix`]), then one MH pass over the
//! frequencies — regression: seed 001 eq. (12) with the evidence of seed 001 eq. (11) ([`crate::regression`]), followed by
//! a slice update of `log λ₀`; classification: the joint `(W_j, β_j)` moves of §3.3.2
//! ([`crate::classification`]) and the joint weight move, followed by the update of `s²`. Everything is driven by one seeded
//! ChaCha8 stream; parallel parts draw no random numbers, so results do not depend on the thread
//! count.

use crate::classification::ClassificationState;
use crate::dpmix::{GammaPrior, Mixture, MixtureParams};
use crate::error::{BankError, check_labels};
use crate::features::{Standardizer, target_moments};
use crate::model::{
    BankModel, ClassificationSample, FitStats, RegressionSample, Samples, SpectralSample, pack_lower,
};
use crate::params::{BankParams, Resolved, SweepMethod, Task};
use crate::priors::{InvGammaPrior, LogNormalPrior};
use crate::regression::RegressionState;
use bke_core::{Dataset, Estimator, Points, Progress, Valid};
use bke_linalg::{Backend, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// The hyperpriors of the learned hyperparameters (`None`: that one is fixed).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Hyperpriors {
    /// Gamma hyperprior of the DP base scale `ψ₀`.
    pub psi0: Option<GammaPrior>,
    /// Log-normal hyperprior of the regression prior precision `λ₀`.
    pub prior_precision: Option<LogNormalPrior>,
    /// Inverse-gamma hyperprior of the classification weight variance `s²`.
    pub weight_variance: Option<InvGammaPrior>,
}

impl Hyperpriors {
    /// The hyperpriors of the learned hyperparameters of `params` once resolved.
    pub fn of(params: &BankParams, resolved: &Resolved) -> Self {
        Self {
            psi0: resolved.psi0_prior,
            prior_precision: resolved.learn_prior_precision.then_some(params.prior.prior_precision_prior),
            weight_variance: resolved
                .learn_weight_variance
                .then_some(params.prior.weight_prior_variance_prior),
        }
    }
}

/// The settings of the regression sweep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepSettings {
    /// Proposals per bulk Gram-row product.
    pub block: usize,
    /// Refactorise every this many sweeps.
    pub refactor_every: usize,
    /// Low-rank or refactorising evaluation.
    pub method: SweepMethod,
}

impl SweepSettings {
    /// The settings of `params`.
    pub fn of(params: &BankParams) -> Self {
        Self { block: params.block, refactor_every: params.refactor_every, method: params.method }
    }
}

impl Estimator for BankParams {
    type Data = Dataset;
    type Fitted = BankModel;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &Dataset,
        progress: &dyn Progress,
    ) -> Result<BankModel, BankError> {
        fit::<B>(params, data.x(), data.y(), progress)
    }
}

/// The median pairwise distance of the (standardised) inputs ([`bke_core::median_distance`]), or
/// the root-mean-square distance `√(2 Σ_k var_k)` when it has none (every row the same).
fn length_scale(xs: &Mat) -> f64 {
    let pts = Points::from_mat("inputs", xs).ok();
    if let Some(m) = pts.and_then(|p| bke_core::median_distance(&p).ok()) {
        return m;
    }
    let n = xs.nrows() as f64;
    let total: f64 = (0..xs.ncols())
        .map(|k| {
            let c = xs.col(k);
            let mean = c.iter().sum::<f64>() / n;
            c.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n
        })
        .sum();
    let rms = (2.0 * total).sqrt();
    if rms > 0.0 { rms } else { 1.0 }
}

fn fit<B: Backend>(
    params: &BankParams,
    x: &Points,
    y: &[f64],
    progress: &dyn Progress,
) -> Result<BankModel, BankError> {
    if x.len() < 2 {
        return Err(BankError::TooFewRows { what: "fitting BaNK".into(), needed: 2, found: x.len() });
    }
    if params.task == Task::Classification {
        check_labels(y)?;
    }
    let d = x.dim();
    crate::error::check_features(params.frequencies, params.samples, x.len(), d)?;
    params.check_dim(d)?;
    let m = params.frequencies;
    let mut inputs = if params.standardize_inputs { Standardizer::fit(x) } else { Standardizer::identity(d) };
    let mut xs = inputs.apply(x);
    progress.update("bank fit: input relevance", 0, 1);
    let relevance = crate::relevance::fit::<B>(params.relevance, &xs, y)?;
    if let Some(r) = relevance.as_ref().filter(|r| r.used) {
        for (s, l) in inputs.scale.iter_mut().zip(&r.lengthscales) {
            *s *= l;
        }
        xs = inputs.apply(x);
    }
    let isotropic_suffices = relevance.as_ref().is_some_and(|r| !r.used);
    let nu0 = crate::params::default_nu0(params.task, d, m, isotropic_suffices);
    let mut resolved = params.prior.resolve(d, length_scale(&xs), nu0)?;
    resolved.relevance = relevance;
    let hyper = Hyperpriors::of(params, &resolved);
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let s = resolved.init_scale;
    let w: Vec<f64> = (0..m * d).map(|_| s * rng.sample::<f64, _>(StandardNormal)).collect();
    let mut chain = Chain {
        mixture: Mixture::single(d, m, s)?,
        mix: resolved.mixture.clone(),
        hyper,
        learn: false,
        rng,
        stats: FitStats::default(),
    };
    let retained = params.retained_iterations();
    let total = params.iterations as u64;
    // a stage of its own, so the chain's time estimate does not count the setup above
    progress.update("bank fit", 0, total);
    let warmup = params.warmup();
    let (y_mean, y_scale, samples) = match params.task {
        Task::Regression => {
            let (y_mean, y_scale) = target_moments(y);
            let ys: Vec<f64> = y.iter().map(|v| (v - y_mean) / y_scale).collect();
            let mut st = RegressionState::<B>::new(xs, ys, w, resolved.nig)?;
            let mut samples = Vec::new();
            for it in 0..params.iterations {
                progress.checkpoint()?;
                chain.learn = it >= warmup;
                chain.regression(&mut st, SweepSettings::of(params), it)?;
                if retained.contains(&it) {
                    samples.push(chain.regression_sample(&st)?);
                }
                progress.update("bank fit", it as u64 + 1, total);
            }
            chain.stats.sweep = st.stats.clone();
            (y_mean, y_scale, Samples::Regression(samples))
        }
        Task::Classification => {
            let p = &params.prior;
            let mut st = ClassificationState::new(
                xs,
                y.to_vec(),
                w,
                resolved.weight_variance,
                p.intercept_prior_variance,
                params.newton_iterations,
            )?;
            let mut samples = Vec::new();
            for it in 0..params.iterations {
                progress.checkpoint()?;
                chain.learn = it >= warmup;
                chain.classification::<B>(&mut st)?;
                if retained.contains(&it) {
                    samples.push(ClassificationSample {
                        spectral: chain.spectral(st.w()),
                        beta: st.beta().to_vec(),
                        weight_mode: st.weight_mode().map(<[f64]>::to_vec),
                        weight_variance: Some(st.weight_variance()),
                    });
                }
                progress.update("bank fit", it as u64 + 1, total);
            }
            chain.stats.sweep = st.stats.clone();
            (0.0, 1.0, Samples::Classification(samples))
        }
    };
    Ok(BankModel {
        dim: d,
        frequencies: m,
        inputs,
        y_mean,
        y_scale,
        params: params.clone(),
        samples,
        stats: chain.stats,
        resolved: Some(resolved),
    })
}

/// The sampler state shared by both tasks: the mixture, its current base measure, the hyperpriors
/// (used once `learn` is set, after the warm-up), the random stream and the traces.
struct Chain {
    mixture: Mixture,
    mix: MixtureParams,
    hyper: Hyperpriors,
    learn: bool,
    rng: ChaCha8Rng,
    stats: FitStats,
}

impl Chain {
    fn hyper(&self) -> Hyperpriors {
        if self.learn { self.hyper } else { Hyperpriors::default() }
    }

    fn spectral(&self, w: &[f64]) -> SpectralSample {
        SpectralSample { w: w.to_vec(), mixture: self.mixture.clone(), psi0: Some(self.mix.psi0) }
    }

    fn regression<B: Backend>(
        &mut self,
        st: &mut RegressionState<B>,
        settings: SweepSettings,
        it: usize,
    ) -> Result<(), BankError> {
        let hyper = self.hyper();
        regression_sweep(st, &mut self.mixture, &mut self.mix, &hyper, settings, it, &mut self.rng)?;
        self.stats.components.push(self.mixture.components.len());
        self.stats.log_target.push(st.log_evidence());
        self.stats.psi0.push(self.mix.psi0);
        self.stats.prior_precision.push(st.nig().prior_precision);
        Ok(())
    }

    fn regression_sample<B: Backend>(&self, st: &RegressionState<B>) -> Result<RegressionSample, BankError> {
        let (mean, an, bn) = st.posterior()?;
        Ok(RegressionSample {
            spectral: self.spectral(st.w()),
            mean,
            factor: pack_lower(st.factor()),
            an,
            bn,
            prior_precision: Some(st.nig().prior_precision),
        })
    }

    fn classification<B: Backend>(&mut self, st: &mut ClassificationState) -> Result<(), BankError> {
        let hyper = self.hyper();
        classification_sweep::<B, _>(st, &mut self.mixture, &mut self.mix, &hyper, &mut self.rng)?;
        self.stats.components.push(self.mixture.components.len());
        self.stats.log_target.push(st.log_joint());
        self.stats.psi0.push(self.mix.psi0);
        self.stats.weight_variance.push(st.weight_variance());
        Ok(())
    }
}

/// Gibbs for `Z` (seed 001 eq. (8)), NIW draws (§3.2), the `ψ₀` draw when learned, then one proposal per
/// frequency from its component. Returns the proposals (row-major `M × d`).
fn mixture_moves<R: Rng>(
    mixture: &mut Mixture,
    mix: &mut MixtureParams,
    psi0_prior: Option<&GammaPrior>,
    w: &[f64],
    rng: &mut R,
) -> Result<Vec<f64>, BankError> {
    let d = mixture.dim;
    let m = mixture.assignments.len();
    mixture.gibbs_assignments(w, mix, rng)?;
    mixture.draw_components(w, mix, rng)?;
    if let Some(prior) = psi0_prior {
        mix.psi0 = mixture.draw_psi0(mix, prior, rng);
    }
    let mut props = vec![0.0; m * d];
    for j in 0..m {
        mixture.component_of(j).sample(rng, &mut props[j * d..(j + 1) * d]);
    }
    Ok(props)
}

/// One regression iteration: the mixture moves, the MH sweep over the frequencies (seed 001 eq. (12)) with
/// proposals and uniforms drawn up front from `rng`, a refactorisation every
/// `settings.refactor_every` iterations (`it` counts from 0), then the slice update of `log λ₀` when
/// it is learned. `mix.psi0` holds the current base scale. Returns the number of accepted proposals.
pub fn regression_sweep<B: Backend, R: Rng>(
    st: &mut RegressionState<B>,
    mixture: &mut Mixture,
    mix: &mut MixtureParams,
    hyper: &Hyperpriors,
    settings: SweepSettings,
    it: usize,
    rng: &mut R,
) -> Result<usize, BankError> {
    let props = mixture_moves(mixture, mix, hyper.psi0.as_ref(), st.w(), rng)?;
    let log_u: Vec<f64> = (0..st.frequencies()).map(|_| rng.random::<f64>().ln()).collect();
    let accepted = match settings.method {
        SweepMethod::LowRank => {
            let a = st.sweep(&props, &log_u, settings.block)?;
            if (it + 1) % settings.refactor_every == 0 {
                st.refactorise()?;
            }
            a
        }
        SweepMethod::Refactorise => st.sweep_refactorising(&props, &log_u)?,
    };
    if let Some(prior) = &hyper.prior_precision {
        st.resample_prior_precision(prior, rng)?;
    }
    Ok(accepted)
}

/// One classification iteration: the mixture moves, the joint `(W_j, β_j)` moves (§3.3.2), the joint
/// weight move ([`ClassificationState::joint_weight_move`]), then the update of `s²` when it is
/// learned. Returns the number of accepted frequency moves.
pub fn classification_sweep<B: Backend, R: Rng>(
    st: &mut ClassificationState,
    mixture: &mut Mixture,
    mix: &mut MixtureParams,
    hyper: &Hyperpriors,
    rng: &mut R,
) -> Result<usize, BankError> {
    let props = mixture_moves(mixture, mix, hyper.psi0.as_ref(), st.w(), rng)?;
    let accepted = st.sweep(&props, rng)?;
    st.joint_weight_move::<B, R>(rng)?;
    if let Some(prior) = &hyper.weight_variance {
        st.resample_weight_variance(prior, rng);
    }
    Ok(accepted)
}
