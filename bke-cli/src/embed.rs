//! `bke embed …`: the Bayesian Kernel Embedding model (bke-core `embedding`): the marginal
//! pseudolikelihood and its gradient, ML-II kernel learning, and the posterior of the embedding.

use crate::io;
use anyhow::{Context, bail};
use bke_core::Points;
use bke_core::embedding::{
    BkeParams, BkePosterior, EmbeddingPrior, FitOptions, LengthscaleGrid, fit, marginal_pseudolikelihood,
};
use bke_linalg::{Backend, BackendKind, WithBackend};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::PathBuf;

/// `bke embed` subcommands.
#[derive(Subcommand)]
pub enum EmbedCommand {
    /// Log marginal pseudolikelihood (seed eq. 15 via eq. 33, with the log-Jacobian) and its gradient
    /// w.r.t. log lengthscale(s) and log tau2.
    Loglik(Box<LoglikArgs>),
    /// ML-II kernel learning: log-grid scan plus L-BFGS polishing; reports every local optimum and the
    /// median heuristic.
    Fit(Box<FitArgs>),
    /// Posterior mean and variance of the embedding at query points (seed eq. 7-8).
    Posterior(Box<PosteriorArgs>),
    /// Fully Bayesian kernel learning: NUTS over (lengthscale, tau2) with Gamma(1,1) priors (seed §5);
    /// posterior summaries, split-R̂, bulk ESS and divergences.
    Sample(Box<crate::sample::SampleArgs>),
}

/// Options shared by the `embed` commands.
#[derive(Args)]
pub struct Common {
    /// Data CSV (header row, numeric columns).
    #[arg(long)]
    data: PathBuf,
    /// Columns to use, by name, comma-separated (default: all). Applies to every CSV read.
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Prior measure of r_θ: lebesgue (default), unit (the seed's Stan listing) or gaussian:ETA.
    #[arg(long, default_value = "lebesgue")]
    prior: String,
    /// Linear-algebra backend (compiled-in ones: see `bke backends`).
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// `bke embed loglik`.
#[derive(Args)]
pub struct LoglikArgs {
    #[command(flatten)]
    common: Common,
    /// Landmarks CSV (m ≥ D points; same columns as the data).
    #[arg(long)]
    landmarks: PathBuf,
    /// Lengthscale: one value, or a comma list with one per dimension (ARD).
    #[arg(long)]
    lengthscale: String,
    /// τ² of the likelihood μ̂(x) | μ(x) ~ N(μ(x), τ²/n).
    #[arg(long, default_value_t = 1.0)]
    tau2: f64,
    /// Leave out the log-Jacobian term Σ log γ(x_i).
    #[arg(long)]
    no_jacobian: bool,
}

/// `bke embed fit`.
#[derive(Args)]
pub struct FitArgs {
    #[command(flatten)]
    common: Common,
    /// Landmarks CSV (then all data points are data). Default: hold out a random subset.
    #[arg(long, conflicts_with = "num_landmarks")]
    landmarks: Option<PathBuf>,
    /// Number of landmarks held out of the data at random (default min(100, max(D, n/5))).
    #[arg(long)]
    num_landmarks: Option<usize>,
    /// Fixed τ² (default 1; the starting value with --learn-tau2).
    #[arg(long, conflicts_with = "learn_tau2")]
    tau2: Option<f64>,
    /// Learn τ² jointly with the lengthscale.
    #[arg(long)]
    learn_tau2: bool,
    /// One lengthscale per dimension.
    #[arg(long)]
    ard: bool,
    /// Leave out the log-Jacobian term.
    #[arg(long)]
    no_jacobian: bool,
    /// Smallest lengthscale of the scan (default: median heuristic / 100).
    #[arg(long)]
    grid_min: Option<f64>,
    /// Largest lengthscale of the scan (default: 10 × median heuristic).
    #[arg(long)]
    grid_max: Option<f64>,
    /// Number of scan points.
    #[arg(long, default_value_t = 41)]
    grid_points: usize,
    /// Seed of the landmark selection.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// `bke embed posterior`.
#[derive(Args)]
pub struct PosteriorArgs {
    #[command(flatten)]
    common: Common,
    /// Query points CSV (same columns as the data).
    #[arg(long)]
    at: PathBuf,
    /// Lengthscale: one value, or a comma list (ARD).
    #[arg(long)]
    lengthscale: String,
    /// τ².
    #[arg(long, default_value_t = 1.0)]
    tau2: f64,
    /// Condition on μ̂ at these points instead of at the data (O(p³) instead of O(n³)).
    #[arg(long)]
    landmarks: Option<PathBuf>,
}

fn parse_lengthscale(s: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',')
        .map(|t| {
            let v: f64 = t.trim().parse().with_context(|| format!("--lengthscale: '{t}' is not a number"))?;
            if !(v.is_finite() && v > 0.0) {
                bail!("--lengthscale: {v} must be finite and > 0");
            }
            Ok(v)
        })
        .collect()
}

enum Job {
    Loglik { x: Points, z: Points, params: BkeParams },
    Fit { x: Points, opts: FitOptions },
    Posterior { x: Points, q: Points, w: Option<Points>, params: BkeParams },
}

impl WithBackend for Job {
    type Output = Result<Value, bke_core::CoreError>;
    fn run<B: Backend>(self) -> Self::Output {
        match self {
            Job::Loglik { x, z, params } => {
                let ml = marginal_pseudolikelihood::<B>(&x, &z, &params)?;
                Ok(json!({
                    "log_marginal": ml.log_marginal,
                    "log_gaussian": ml.log_gaussian,
                    "log_jacobian": ml.log_jacobian,
                    "grad_log_lengthscale": ml.grad_log_lengthscale,
                    "grad_log_tau2": ml.grad_log_tau2,
                    "n": x.len(),
                    "m": z.len(),
                    "prior": params.prior.name(),
                    "jacobian": params.jacobian,
                    "backend": B::NAME,
                }))
            }
            Job::Fit { x, opts } => {
                let r = fit::<B>(&x, &opts)?;
                let ls = |v: &[f64]| if v.len() == 1 { json!(v[0]) } else { json!(v) };
                Ok(json!({
                    "lengthscale": ls(&r.params.lengthscales),
                    "tau2": r.params.tau2,
                    "log_marginal": r.log_marginal,
                    "local_optima": r.local_optima.iter().map(|o| json!({
                        "lengthscale": ls(&o.lengthscales),
                        "tau2": o.tau2,
                        "log_marginal": o.log_marginal,
                        "grad_norm": o.grad_norm,
                        "converged": o.converged,
                        "at_boundary": o.at_boundary,
                    })).collect::<Vec<_>>(),
                    "median_heuristic": r.median_heuristic,
                    "median_heuristic_convention": "median pairwise Euclidean distance, used as theta in exp(-|x-y|^2/(2 theta^2))",
                    "scan": r.scan.iter().map(|(t, v)| json!({"lengthscale": t, "log_marginal": v})).collect::<Vec<_>>(),
                    "num_landmarks": r.landmarks.len(),
                    "landmark_indices": r.landmark_indices,
                    "n_data": r.n_data,
                    "evaluations": r.evaluations,
                    "prior": opts.prior.name(),
                    "jacobian": opts.jacobian,
                    "backend": B::NAME,
                }))
            }
            Job::Posterior { x, q, w, params } => {
                let post = BkePosterior::fit::<B>(&x, w.as_ref(), &params)?;
                let (mean, variance) = post.mean_and_variance::<B>(&q)?;
                Ok(json!({
                    "mean": mean,
                    "variance": variance,
                    "conditioning_points": post.conditioning_points().len(),
                    "jitter": post.jitter(),
                    "prior": params.prior.name(),
                    "backend": B::NAME,
                }))
            }
        }
    }
}

fn setup(c: &Common) -> anyhow::Result<(BackendKind, EmbeddingPrior, Points)> {
    if let Some(t) = c.threads {
        rayon::ThreadPoolBuilder::new().num_threads(t.max(1)).build_global().ok();
    }
    let kind = BackendKind::parse(&c.backend).map_err(anyhow::Error::msg)?;
    let prior = EmbeddingPrior::parse(&c.prior).context("--prior")?;
    let x = io::read_points(&c.data, c.columns.as_deref())?;
    Ok((kind, prior, x))
}

/// Runs a `bke embed` command.
pub fn run(cmd: EmbedCommand) -> anyhow::Result<()> {
    let (kind, job) = match cmd {
        EmbedCommand::Sample(a) => return crate::sample::run(*a),
        EmbedCommand::Loglik(a) => {
            let (kind, prior, x) = setup(&a.common)?;
            let z = io::read_points(&a.landmarks, a.common.columns.as_deref())?;
            let params = BkeParams::new(parse_lengthscale(&a.lengthscale)?, a.tau2)
                .with_prior(prior)
                .with_jacobian(!a.no_jacobian);
            (kind, Job::Loglik { x, z, params })
        }
        EmbedCommand::Fit(a) => {
            let (kind, prior, x) = setup(&a.common)?;
            let landmarks =
                a.landmarks.as_ref().map(|p| io::read_points(p, a.common.columns.as_deref())).transpose()?;
            let grid = match (a.grid_min, a.grid_max) {
                (None, None) => None,
                (Some(lo), Some(hi)) => Some(LengthscaleGrid { min: lo, max: hi, points: a.grid_points }),
                _ => bail!("give both --grid-min and --grid-max, or neither"),
            };
            let num_landmarks = a.num_landmarks.unwrap_or_else(|| 100.min((x.len() / 5).max(x.dim())));
            let opts = FitOptions {
                num_landmarks,
                landmarks,
                tau2: a.tau2.unwrap_or(1.0),
                learn_tau2: a.learn_tau2,
                prior,
                jacobian: !a.no_jacobian,
                ard: a.ard,
                grid,
                grid_points: a.grid_points,
                seed: a.seed,
                ..FitOptions::default()
            };
            (kind, Job::Fit { x, opts })
        }
        EmbedCommand::Posterior(a) => {
            let (kind, prior, x) = setup(&a.common)?;
            let q = io::read_points(&a.at, a.common.columns.as_deref())?;
            let w =
                a.landmarks.as_ref().map(|p| io::read_points(p, a.common.columns.as_deref())).transpose()?;
            let params = BkeParams::new(parse_lengthscale(&a.lengthscale)?, a.tau2).with_prior(prior);
            (kind, Job::Posterior { x, q, w, params })
        }
    };
    let out = kind.dispatch(job)??;
    io::emit(&out)
}
