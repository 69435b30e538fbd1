//! One run of likelihood-free inference as `bke lfi` and the Python `bke.lfi` do it (seed 004
//! Algorithm 8.1): the posterior embedding by the DME ([`crate::lfi`]) or kernel Bayes' rule
//! ([`crate::kbr`]), herded into super-samples ([`crate::herding`]), reported as a value that
//! serialises to the command's JSON: `method`, `q_bar` (DME), `hyperparameters`, `samples`,
//! `embedding` (`mean`, `sd`, `negative_mass` of the weighted embedding), `n_simulations`,
//! `n_prior`.

use crate::DmeError;
use crate::herding::{HerdingParams, PosteriorEmbedding};
use crate::kbr::{EvidenceInverse, KbrParams, KbrVariant};
use crate::learn::MultiStartOptions;
use crate::lfi::{LfiData, LfiHyperparameters, LfiLearnParams, LfiParams};
use bke_core::{CoreError, Kernel, Params, Points, Progress};
use bke_linalg::Backend;
use serde::Serialize;

/// Which posterior estimator.
#[derive(Debug, Clone, PartialEq)]
pub enum LfiMethod {
    /// The deconditional mean embedding (seed 004 Algorithm 8.1).
    Dme(LfiParams),
    /// Kernel Bayes' rule (seed 004 §6, App. F).
    Kbr(KbrParams),
}

/// The settings of `bke lfi` that choose and configure the method (its flags; `None`: the library's
/// data-scaled default).
#[derive(Debug, Clone, PartialEq)]
pub struct LfiSpec<'a> {
    /// "dme" or "kbr".
    pub method: &'a str,
    /// SE lengthscale(s) of `ℓ` on θ.
    pub lengthscale_theta: Option<Vec<f64>>,
    /// SE lengthscale(s) of `k` on the statistics.
    pub lengthscale_stat: Option<Vec<f64>>,
    /// ε of the ε-kernel (DME).
    pub epsilon: Option<Vec<f64>>,
    /// CME regulariser λ.
    pub lambda: Option<f64>,
    /// DME / evidence regulariser δ.
    pub delta: Option<f64>,
    /// Learn ℓ by maximising q̄ (DME only; ε keeps its width, see `lfi`'s module docs).
    pub learn: bool,
    /// With `learn`, learn λ too.
    pub learn_lambda: bool,
    /// L-BFGS starts of the learning.
    pub starts: usize,
    /// Seed of the random starts.
    pub seed: u64,
    /// KBR variant: "a" or "b".
    pub kbr_variant: &'a str,
    /// KBR evidence inverse: "squared" or "tikhonov".
    pub kbr_inverse: &'a str,
}

fn se(lengthscales: &Option<Vec<f64>>, what: &str) -> Result<Option<Kernel>, DmeError> {
    lengthscales
        .as_ref()
        .map(|l| {
            Kernel::se_ard(l.clone()).map_err(|e| {
                DmeError::Core(CoreError::InvalidChoice { what: what.into(), reason: e.to_string() })
            })
        })
        .transpose()
}

impl LfiMethod {
    /// The method `spec` names, configured by it; errors name the setting.
    pub fn parse(spec: &LfiSpec<'_>) -> Result<Self, DmeError> {
        let defaults = LfiParams::default();
        let (lambda, delta) = (spec.lambda.unwrap_or(defaults.lambda), spec.delta.unwrap_or(defaults.delta));
        let kernel_theta = se(&spec.lengthscale_theta, "lengthscale_theta")?;
        let kernel_stats = se(&spec.lengthscale_stat, "lengthscale_stat")?;
        let choice = |what: &str, reason: &str| {
            DmeError::Core(CoreError::InvalidChoice { what: what.into(), reason: reason.into() })
        };
        Ok(match spec.method.trim().to_ascii_lowercase().as_str() {
            "dme" => LfiMethod::Dme(LfiParams {
                kernel_theta,
                kernel_stats,
                epsilon: spec.epsilon.clone(),
                lambda,
                delta,
                learn: spec.learn.then(|| LfiLearnParams {
                    lambda: spec.learn_lambda,
                    search: MultiStartOptions {
                        starts: spec.starts,
                        seed: spec.seed,
                        ..MultiStartOptions::default()
                    },
                    ..LfiLearnParams::default()
                }),
            }),
            "kbr" if spec.learn => {
                return Err(choice(
                    "learn with method kbr",
                    "learning applies to method dme only (q̄ is the DME's evidence estimate)",
                ));
            }
            "kbr" => LfiMethod::Kbr(KbrParams {
                kernel_theta,
                kernel_stats,
                lambda,
                delta,
                variant: spec.kbr_variant.parse::<KbrVariant>()?,
                inverse: spec.kbr_inverse.parse::<EvidenceInverse>()?,
            }),
            other => return Err(choice(&format!("method '{other}'"), "use dme or kbr")),
        })
    }
}

/// The kernels and regularisers KBR used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KbrHyperparameters {
    /// Kernel family of `ℓ` on θ.
    pub kernel_theta: String,
    /// Its lengthscales.
    pub lengthscale_theta: Vec<f64>,
    /// Kernel family of `k` on the statistics.
    pub kernel_stat: String,
    /// Its lengthscales.
    pub lengthscale_stat: Vec<f64>,
    /// CME regulariser.
    pub lambda: f64,
    /// Evidence regulariser.
    pub delta: f64,
    /// "a" or "b".
    pub variant: &'static str,
    /// "squared" or "tikhonov".
    pub inverse: &'static str,
}

/// The hyperparameters of either method.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MethodHyperparameters {
    /// The DME's (learned or default).
    Dme(LfiHyperparameters),
    /// KBR's.
    Kbr(KbrHyperparameters),
}

/// Moments of the posterior embedding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmbeddingMoments {
    /// Weighted mean of the parameters.
    pub mean: Vec<f64>,
    /// Weighted standard deviation per parameter.
    pub sd: Vec<f64>,
    /// Mass of the negative weights.
    pub negative_mass: f64,
}

/// The result of [`infer`] (the JSON of `bke lfi`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LfiReport {
    /// "dme" or "kbr".
    pub method: &'static str,
    /// The DME's evidence estimate `q̄`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub q_bar: Option<f64>,
    /// The hyperparameters used.
    pub hyperparameters: MethodHyperparameters,
    /// The herded super-samples, one row per sample.
    pub samples: Vec<Vec<f64>>,
    /// Moments of the posterior embedding.
    pub embedding: EmbeddingMoments,
    /// Number of simulations.
    pub n_simulations: usize,
    /// Number of prior samples.
    pub n_prior: usize,
}

fn moments(e: &PosteriorEmbedding) -> EmbeddingMoments {
    let d = e.points().dim();
    let cov = e.covariance();
    let sd = (0..d).map(|k| cov[k * d + k].max(0.0).sqrt()).collect();
    EmbeddingMoments { mean: e.mean(), sd, negative_mass: e.negative_mass() }
}

/// Fits the posterior embedding with `method` and herds `herding.samples` super-samples from
/// `candidates` (reporting the stage "herding" to `progress`).
pub fn infer<B: Backend>(
    data: &LfiData,
    method: &LfiMethod,
    candidates: &Points,
    herding: &HerdingParams,
    progress: &dyn Progress,
) -> Result<LfiReport, DmeError> {
    let (embedding, method_name, q_bar, hyperparameters) = match method {
        LfiMethod::Dme(p) => {
            let post = p.clone().check()?.fit_with_progress::<B>(data, progress)?;
            let h = MethodHyperparameters::Dme(post.hyperparameters().clone());
            (post.embedding().clone(), "dme", Some(post.q_bar()), h)
        }
        LfiMethod::Kbr(p) => {
            let post = p.clone().check()?.fit_with_progress::<B>(data, progress)?;
            let h = MethodHyperparameters::Kbr(KbrHyperparameters {
                kernel_theta: post.kernel_theta().family().spec(),
                lengthscale_theta: post.kernel_theta().lengthscales().to_vec(),
                kernel_stat: post.kernel_stats().family().spec(),
                lengthscale_stat: post.kernel_stats().lengthscales().to_vec(),
                lambda: p.lambda,
                delta: p.delta,
                variant: p.variant.name(),
                inverse: p.inverse.name(),
            });
            (post.embedding().clone(), "kbr", None, h)
        }
    };
    progress.update("herding", 0, 1);
    let samples = embedding.herd(candidates, herding)?;
    progress.update("herding", 1, 1);
    Ok(LfiReport {
        method: method_name,
        q_bar,
        hyperparameters,
        samples: samples.iter().map(<[f64]>::to_vec).collect(),
        embedding: moments(&embedding),
        n_simulations: data.theta.len(),
        n_prior: data.prior.len(),
    })
}
