//! `bke bank …`: BaNK (bke-bank), Bayesian nonparametric kernel learning with random Fourier
//! features: `fit` (MCMC, model file out), `predict` (posterior predictive), `cv` (K-fold
//! cross-validation of BaNK or a baseline). Argument parsing, CSV in, JSON out; the model, its file
//! and every JSON shape belong to the library.

use crate::exec::{ExecArgs, fit, run_with_backend};
use anyhow::{Context, bail};
use bke_bank::cv::{CvParams, Method};
use bke_bank::{BankModel, BankParams, Relevance, Task};
use bke_core::Dataset;
use bke_core::model_file::{self, Saved};
use bke_io as io;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `bke bank` subcommands.
#[derive(Subcommand)]
pub enum BankCommand {
    /// Fit BaNK by MCMC and write the model file.
    Fit(Box<FitArgs>),
    /// Posterior predictive of a fitted model at new inputs.
    Predict(Box<PredictArgs>),
    /// K-fold cross-validation of BaNK or a baseline (MSE on standardised targets, or error rate).
    Cv(Box<CvArgs>),
}

/// Options shared by `fit` and `cv`. Hyperparameter flags fix a value; without them the value is
/// learned by the sampler (λ₀, ψ₀, the classification weight variance) or set from the data.
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
    #[arg(long, default_value_t = BankParams::default().frequencies)]
    frequencies: usize,
    /// MCMC iterations (sweeps).
    #[arg(long, default_value_t = BankParams::default().iterations)]
    iterations: usize,
    /// Burn-in sweeps (default: half the iterations).
    #[arg(long)]
    burn_in: Option<usize>,
    /// Retained post-burn-in states averaged for prediction.
    #[arg(long, default_value_t = BankParams::default().samples)]
    samples: usize,
    /// Burn-in sweeps before the learned hyperparameters start moving (default: half the burn-in).
    #[arg(long)]
    warmup: Option<usize>,
    /// Random seed.
    #[arg(long, default_value_t = BankParams::default().seed)]
    seed: u64,
    /// DP concentration α.
    #[arg(long)]
    alpha: Option<f64>,
    /// Fix the regression prior precision λ₀ of the weights (β | σ² ~ N(0, σ²/λ₀ I)) [default: learned].
    #[arg(long)]
    prior_precision: Option<f64>,
    /// Fix the classification prior variance of the weights [default: learned].
    #[arg(long)]
    weight_prior_variance: Option<f64>,
    /// Classification intercept prior variance.
    #[arg(long)]
    intercept_prior_variance: Option<f64>,
    /// NIW pseudo-count κ₀ of the component means [default: 10].
    #[arg(long)]
    kappa0: Option<f64>,
    /// Inverse-Wishart degrees of freedom ν₀ [default: d + 1 + M for classification where the
    /// relevance test finds one shared lengthscale enough, else d + 2]
    #[arg(long)]
    nu0: Option<f64>,
    /// Fix the DP base scale Ψ₀ = ψ₀ I [default: learned, centred on the median heuristic].
    #[arg(long)]
    psi0: Option<f64>,
    /// Initial frequency scale (standardised units) [default: 1 / median pairwise distance].
    #[arg(long)]
    init_scale: Option<f64>,
    /// Per-input lengthscales (ARD) for the spectral prior, from a GP's evidence on up to 1000 rows:
    /// auto (used when they predict held-out rows better than one shared lengthscale, by 3 standard
    /// errors), ard (always) or off (seed 001).
    #[arg(long, default_value = "auto", value_parser = Relevance::parse)]
    relevance: Relevance,
    /// Inverse-gamma shape a₀ of the regression noise variance.
    #[arg(long)]
    a0: Option<f64>,
    /// Inverse-gamma scale b₀ of the regression noise variance.
    #[arg(long)]
    b0: Option<f64>,
    #[command(flatten)]
    exec: ExecArgs,
}

/// `bke bank fit`.
#[derive(Args)]
pub struct FitArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Where to write the model file.
    #[arg(long)]
    model_out: PathBuf,
}

/// `bke bank predict`.
#[derive(Args)]
pub struct PredictArgs {
    /// Model file written by `bke bank fit`.
    #[arg(long)]
    model: PathBuf,
    /// CSV with the model's input columns (other columns are ignored).
    #[arg(long)]
    data: PathBuf,
    #[command(flatten)]
    out: crate::table_out::OutArgs,
    #[command(flatten)]
    exec: ExecArgs,
}

/// `bke bank cv`.
#[derive(Args)]
pub struct CvArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Number of folds.
    #[arg(long, default_value_t = CvParams::new(Method::Bank, Task::default()).folds)]
    folds: usize,
    /// The method (see `bke_bank::cv::Method`): bank, rks, mkl, alac (regression), rfo
    /// (classification), gbdt, gp (regression), gpc (GP classification, Laplace) or svc (RBF
    /// support-vector classification, C and width tuned by inner CV, Platt probabilities).
    #[arg(long, default_value = Method::Bank.name())]
    method: String,
}

/// Runs a `bke bank` subcommand.
pub fn run(cmd: BankCommand) -> anyhow::Result<()> {
    match cmd {
        BankCommand::Fit(a) => run_fit(*a),
        BankCommand::Predict(a) => run_predict(*a),
        BankCommand::Cv(a) => run_cv(*a),
    }
}

/// Reads the inputs (all columns but the target) and the target; for classification every label must
/// be 0 or 1 (the error names the line).
fn read_xy(a: &DataArgs, task: Task) -> anyhow::Result<(Dataset, Vec<String>)> {
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
    Ok((Dataset::new(x, y)?, names))
}

fn bank_params(a: &DataArgs, task: Task) -> BankParams {
    let mut p = BankParams {
        task,
        frequencies: a.frequencies,
        iterations: a.iterations,
        burn_in: a.burn_in,
        samples: a.samples,
        warmup: a.warmup,
        seed: a.seed,
        relevance: a.relevance,
        ..Default::default()
    };
    let q = &mut p.prior;
    q.prior_precision = a.prior_precision;
    q.weight_prior_variance = a.weight_prior_variance;
    q.psi0 = a.psi0;
    q.init_scale = a.init_scale;
    q.nu0 = a.nu0;
    for (slot, v) in [
        (&mut q.alpha, a.alpha),
        (&mut q.kappa0, a.kappa0),
        (&mut q.a0, a.a0),
        (&mut q.b0, a.b0),
        (&mut q.intercept_prior_variance, a.intercept_prior_variance),
    ] {
        if let Some(v) = v {
            *slot = v;
        }
    }
    p
}

fn run_fit(a: FitArgs) -> anyhow::Result<()> {
    let task = Task::parse(&a.data.task)?;
    let (data, columns) = read_xy(&a.data, task)?;
    let rows = data.len();
    let params = bank_params(&a.data, task);
    let model = run_with_backend!(a.data.exec, B => fit::<B, _>("bank fit", &params, &data))?;
    let mut out = serde_json::to_value(model.summary(rows))?;
    let saved = Saved { columns, target: Some(a.data.target.clone()), model };
    model_file::save(&saved, &a.model_out)?;
    out["model"] = a.model_out.display().to_string().into();
    io::emit(&out)
}

fn run_predict(a: PredictArgs) -> anyhow::Result<()> {
    let saved = model_file::load::<BankModel>(&a.model)?;
    let x = io::read_points(&a.data, Some(&saved.columns))?;
    let rows = x.len();
    let mut out =
        run_with_backend!(a.exec, B => Ok(serde_json::to_value(saved.model.predict_output::<B>(&x)?)?))?;
    a.out.divert(&mut out, rows, &["mean", "variance", "probability"])?;
    io::emit(&out)
}

fn run_cv(a: CvArgs) -> anyhow::Result<()> {
    let task = Task::parse(&a.data.task)?;
    let method = Method::parse(&a.method)?;
    let (data, _) = read_xy(&a.data, task)?;
    let mut params = CvParams::new(method, task);
    params.folds = a.folds;
    params.seed = a.data.seed;
    params.bank = bank_params(&a.data, task);
    params.baseline.frequencies = a.data.frequencies;
    params.alac.frequencies = a.data.frequencies;
    params.rfo.frequencies = a.data.frequencies;
    let what = format!("cv {}", params.method.map_or("bank", Method::name));
    let report = run_with_backend!(a.data.exec, B => fit::<B, _>(&what, &params, &data))?;
    io::emit(&serde_json::to_value(report)?)
}
