//! `bke bank …`: BaNK (bke-bank), Bayesian nonparametric kernel learning with random Fourier
//! features: `fit` (MCMC, model JSON out), `predict` (posterior predictive), `cv` (K-fold
//! cross-validation of BaNK or the RKS / MKL baselines).

use crate::io;
use anyhow::{Context, bail};
use bke_bank::baselines::BaselineParams;
use bke_bank::cv::{Method, cross_validate};
use bke_bank::{BankModel, BankParams, Task, fit};
use bke_core::Points;
use bke_linalg::{Backend, BackendKind, WithBackend};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::PathBuf;

/// `bke bank` subcommands.
#[derive(Subcommand)]
pub enum BankCommand {
    /// Fit BaNK by MCMC and write the model JSON.
    Fit(Box<FitArgs>),
    /// Posterior predictive of a fitted model at new inputs.
    Predict(Box<PredictArgs>),
    /// K-fold cross-validation of BaNK, RKS or MKL (MSE on standardised targets, or error rate).
    Cv(Box<CvArgs>),
}

/// Options shared by `fit` and `cv`.
#[derive(Args)]
pub struct DataArgs {
    /// Data CSV (header row, numeric columns).
    #[arg(long)]
    data: PathBuf,
    /// Target column name; every other column is an input.
    #[arg(long)]
    target: String,
    /// regression or classification (0/1 labels).
    #[arg(long, default_value = "regression")]
    task: String,
    /// Number of random frequencies M (2M features).
    #[arg(long, default_value_t = 128)]
    frequencies: usize,
    /// MCMC iterations (sweeps).
    #[arg(long, default_value_t = 100)]
    iterations: usize,
    /// Burn-in sweeps (default: half the iterations).
    #[arg(long)]
    burn_in: Option<usize>,
    /// Retained post-burn-in states used for prediction.
    #[arg(long, default_value_t = 10)]
    samples: usize,
    /// Random seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// DP concentration α.
    #[arg(long)]
    alpha: Option<f64>,
    /// Regression prior precision λ₀ of the weights (β | σ² ~ N(0, σ²/λ₀ I)).
    #[arg(long)]
    prior_precision: Option<f64>,
    /// Classification prior variance of the weights.
    #[arg(long)]
    weight_prior_variance: Option<f64>,
    /// Linear-algebra backend (compiled-in ones: see `bke backends`).
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// `bke bank fit`.
#[derive(Args)]
pub struct FitArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Where to write the model JSON.
    #[arg(long)]
    model_out: PathBuf,
}

/// `bke bank predict`.
#[derive(Args)]
pub struct PredictArgs {
    /// Model JSON written by `bke bank fit`.
    #[arg(long)]
    model: PathBuf,
    /// CSV with the model's input columns (other columns are ignored).
    #[arg(long)]
    data: PathBuf,
    /// Linear-algebra backend.
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// `bke bank cv`.
#[derive(Args)]
pub struct CvArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Number of folds.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// bank, rks or mkl.
    #[arg(long, default_value = "bank")]
    method: String,
}

/// The model file: the input column names, the target name and the model.
#[derive(Serialize, Deserialize)]
struct ModelFile {
    columns: Vec<String>,
    target: String,
    model: BankModel,
}

/// Runs a `bke bank` subcommand.
pub fn run(cmd: BankCommand) -> anyhow::Result<()> {
    match cmd {
        BankCommand::Fit(a) => run_fit(*a),
        BankCommand::Predict(a) => run_predict(*a),
        BankCommand::Cv(a) => run_cv(*a),
    }
}

fn set_threads(t: Option<usize>) {
    if let Some(t) = t {
        rayon::ThreadPoolBuilder::new().num_threads(t.max(1)).build_global().ok();
    }
}

fn parse_task(s: &str) -> anyhow::Result<Task> {
    match s.to_ascii_lowercase().as_str() {
        "regression" => Ok(Task::Regression),
        "classification" => Ok(Task::Classification),
        _ => bail!("--task must be 'regression' or 'classification', not '{s}'"),
    }
}

/// Reads the inputs (all columns but the target) and the target; for classification every label must
/// be 0 or 1 (the error names the line).
fn read_xy(a: &DataArgs, task: Task) -> anyhow::Result<(Points, Vec<f64>, Vec<String>)> {
    let table = io::CsvTable::read(&a.data)?;
    let t = table.column_index(&a.target).with_context(|| "--target".to_string())?;
    let cols: Vec<usize> = (0..table.names.len()).filter(|&j| j != t).collect();
    if cols.is_empty() {
        bail!(
            "{}: the target '{}' is the only column; BaNK needs at least one input column",
            table.path,
            a.target
        );
    }
    let y = table.column(t);
    if task == Task::Classification {
        if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| **v != 0.0 && **v != 1.0) {
            bail!(
                "{}, line {}, column {} ('{}'): classification labels must be 0 or 1, found {v}",
                table.path,
                i + 2,
                t + 1,
                a.target
            );
        }
    }
    let x = table.points_at(&cols)?;
    let names = cols.iter().map(|&j| table.names[j].clone()).collect();
    Ok((x, y, names))
}

fn bank_params(a: &DataArgs) -> BankParams {
    let mut p = BankParams {
        frequencies: a.frequencies,
        iterations: a.iterations,
        burn_in: a.burn_in,
        samples: a.samples,
        seed: a.seed,
        ..Default::default()
    };
    if let Some(v) = a.alpha {
        p.mixture.alpha = v;
    }
    if let Some(v) = a.prior_precision {
        p.nig.prior_precision = v;
    }
    if let Some(v) = a.weight_prior_variance {
        p.weight_prior_variance = v;
    }
    p
}

enum Job {
    Fit {
        x: Points,
        y: Vec<f64>,
        task: Task,
        params: BankParams,
    },
    Predict {
        model: BankModel,
        x: Points,
    },
    Cv {
        x: Points,
        y: Vec<f64>,
        task: Task,
        method: Method,
        folds: usize,
        params: BankParams,
        baseline: BaselineParams,
    },
}

enum JobOut {
    Model(Box<BankModel>),
    Json(Value),
}

impl WithBackend for Job {
    type Output = Result<JobOut, bke_bank::BankError>;
    fn run<B: Backend>(self) -> Self::Output {
        match self {
            Job::Fit { x, y, task, params } => {
                let bar = io::progress(params.iterations as u64, "bank fit");
                let model = fit::<B>(&x, &y, task, &params, |_| bar.inc(1))?;
                bar.finish_and_clear();
                Ok(JobOut::Model(Box::new(model)))
            }
            Job::Predict { model, x } => Ok(JobOut::Json(match model.task() {
                Task::Regression => {
                    let p = model.predict_regression::<B>(&x)?;
                    json!({ "mean": p.mean, "variance": p.variance })
                }
                Task::Classification => json!({ "probability": model.predict_probability::<B>(&x)? }),
            })),
            Job::Cv { x, y, task, method, folds, params, baseline } => {
                let steps = if method == Method::Bank { folds * params.iterations } else { folds };
                let bar = io::progress(steps as u64, &format!("cv {}", method.name()));
                let r = cross_validate::<B>(
                    &x,
                    &y,
                    task,
                    method,
                    folds,
                    &params,
                    &baseline,
                    params.seed,
                    || bar.inc(1),
                )?;
                bar.finish_and_clear();
                Ok(JobOut::Json(json!({
                    "metric": r.metric,
                    "mean": r.mean,
                    "stderr": r.stderr,
                    "folds": r.folds,
                    "method": method.name(),
                    "task": task,
                    "frequencies": params.frequencies,
                })))
            }
        }
    }
}

fn run_fit(a: FitArgs) -> anyhow::Result<()> {
    set_threads(a.data.threads);
    let kind = BackendKind::parse(&a.data.backend).map_err(anyhow::Error::msg)?;
    let task = parse_task(&a.data.task)?;
    let (x, y, columns) = read_xy(&a.data, task)?;
    let params = bank_params(&a.data);
    let (n, d) = (x.len(), x.dim());
    let JobOut::Model(model) = kind.dispatch(Job::Fit { x, y, task, params })?? else {
        unreachable!("fit returns a model")
    };
    let st = model.stats.clone();
    let spectral = model.spectral_mixture();
    let file = ModelFile { columns, target: a.data.target.clone(), model: *model };
    let text = serde_json::to_string(&file)?;
    std::fs::write(&a.model_out, text).with_context(|| format!("cannot write {}", a.model_out.display()))?;
    let out = json!({
        "model": a.model_out.display().to_string(),
        "task": task,
        "rows": n,
        "inputs": d,
        "frequencies": file.model.frequencies,
        "iterations": file.model.params.iterations,
        "acceptance_rate": st.sweep.accepted as f64 / st.sweep.proposals.max(1) as f64,
        "components": st.components.last(),
        "final_log_target": st.log_target.last(),
        "max_factor_drift": st.sweep.max_factor_drift,
        "spectral_mixture": spectral,
    });
    io::emit(&out)
}

fn run_predict(a: PredictArgs) -> anyhow::Result<()> {
    set_threads(a.threads);
    let kind = BackendKind::parse(&a.backend).map_err(anyhow::Error::msg)?;
    let text = std::fs::read_to_string(&a.model)
        .with_context(|| format!("cannot read model {}", a.model.display()))?;
    let mut file: ModelFile = serde_json::from_str(&text).with_context(|| {
        format!("{}: not a BaNK model file (write one with `bke bank fit`)", a.model.display())
    })?;
    file.model.validate().with_context(|| format!("{}", a.model.display()))?;
    let x = io::read_points(&a.data, Some(&file.columns))?;
    let JobOut::Json(out) = kind.dispatch(Job::Predict { model: file.model, x })?? else {
        unreachable!("predict returns JSON")
    };
    io::emit(&out)
}

fn run_cv(a: CvArgs) -> anyhow::Result<()> {
    set_threads(a.data.threads);
    let kind = BackendKind::parse(&a.data.backend).map_err(anyhow::Error::msg)?;
    let task = parse_task(&a.data.task)?;
    let method = Method::parse(&a.method)?;
    let (x, y, _) = read_xy(&a.data, task)?;
    let params = bank_params(&a.data);
    let baseline =
        BaselineParams { frequencies: a.data.frequencies, seed: a.data.seed, ..Default::default() };
    let JobOut::Json(out) =
        kind.dispatch(Job::Cv { x, y, task, method, folds: a.folds, params, baseline })??
    else {
        unreachable!("cv returns JSON")
    };
    io::emit(&out)
}
