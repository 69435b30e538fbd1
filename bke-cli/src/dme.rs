//! `bke dme loglik|fit|predict`: task-transformed GPs (bke-dme `ttgp`, `sparse`; seed 004 Thm 5.3,
//! §8.2). Reads the CSVs, builds [`TtgpParams`] / [`SparseTtgpParams`], calls the library, writes
//! JSON and library model files (kind `ttgp`; files of bke 0.1 still load).

use crate::exec::{ExecArgs, fit, run_with_backend};
use anyhow::{Context, bail};
use bke_core::model_file::{self, Saved};
use bke_core::optim::LbfgsOptions;
use bke_core::{Dataset, Kernel, KernelFamily, Params, Points, Predict};
use bke_dme::TaskData;
use bke_dme::learn::{Learn, MultiStartOptions};
use bke_dme::sparse::{SparseTtgpParams, sparse_log_marginal};
use bke_dme::ttblr::{Ttblr, TtblrForm, TtblrLearn, TtblrParams};
use bke_dme::ttgp::{MarginalForm, Ttgp, TtgpParams, log_marginal};
use bke_io::{self as io, CsvTable};
use bke_linalg::Backend;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `bke dme …`
#[derive(Args)]
pub struct DmeArgs {
    #[command(subcommand)]
    command: DmeCommand,
}

#[derive(Subcommand)]
enum DmeCommand {
    /// Log marginal likelihood of a task-transformed GP (seed 004 Thm 5.3) and its gradient with
    /// respect to every hyperparameter.
    Loglik(LoglikArgs),
    /// Learn the hyperparameters (and, with --inducing, inducing points) by multi-start L-BFGS on
    /// the log scale; optionally write a model file for `bke dme predict`.
    Fit(FitArgs),
    /// Predictive mean and variance of the latent function f of a fitted model.
    Predict(PredictArgs),
}

/// Data of a task-transformed regression problem.
#[derive(Args)]
struct DataArgs {
    /// CSV of the transformation inputs x (paired row by row with --y). Not needed with --inducing.
    #[arg(long)]
    x: Option<PathBuf>,
    /// CSV of the mediating inputs y paired with x. Not needed with --inducing.
    #[arg(long)]
    y: Option<PathBuf>,
    /// CSV of the task inputs ỹ (same columns as y).
    #[arg(long)]
    ytilde: PathBuf,
    /// CSV of the task targets z̃ (one row per row of --ytilde).
    #[arg(long)]
    ztilde: PathBuf,
    /// Columns of --x to use, comma-separated [default: all].
    #[arg(long, value_delimiter = ',')]
    x_cols: Option<Vec<String>>,
    /// Columns of --y and --ytilde to use, comma-separated [default: all].
    #[arg(long, value_delimiter = ',')]
    y_cols: Option<Vec<String>>,
    /// Column of --ztilde holding the targets [default: its only column].
    #[arg(long)]
    z_col: Option<String>,
}

/// Hyperparameters of a TTGP.
#[derive(Args)]
struct HyperArgs {
    /// Lengthscale(s) of the kernel k on x: one value, or one per column (ARD), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = TtgpParams::default().kernel_x.lengthscales().to_vec(), allow_hyphen_values = true)]
    lengthscale_x: Vec<f64>,
    /// Lengthscale(s) of the kernel ℓ on y: one value, or one per column (ARD), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = TtgpParams::default().kernel_y.lengthscales().to_vec(), allow_hyphen_values = true)]
    lengthscale_y: Vec<f64>,
    /// Observation noise standard deviation σ.
    #[arg(long, default_value_t = TtgpParams::default().sigma, allow_hyphen_values = true)]
    sigma: f64,
    /// CME regulariser λ [default: σ²/n, the seed's unit prior amplitude].
    #[arg(long, allow_hyphen_values = true)]
    lambda: Option<f64>,
    /// DME regulariser ε [default: σ²/m, the seed's unit prior amplitude].
    #[arg(long, allow_hyphen_values = true)]
    epsilon: Option<f64>,
    /// Kernel family of both kernels: se, laplace, matern32, matern52, rq (rational quadratic,
    /// α = 1) or rq:ALPHA.
    #[arg(long, default_value_t = TtgpParams::default().kernel_x.family().spec())]
    kernel: String,
}

#[derive(Args)]
struct LoglikArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    hyper: HyperArgs,
    /// Marginal likelihood: full (seed 004 Thm 5.3 (3)), map (Thm 5.3 (4)) or alternative (same density as map,
    /// O(n³ + n²m)). With --inducing only alternative applies.
    #[arg(long, default_value = TtgpParams::default().form.name())]
    form: String,
    /// Inducing-point mode (seed 004 §8.2): a CSV of inducing points u (columns as --y-cols); x = y = u.
    #[arg(long)]
    inducing_points: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
}

#[derive(Args)]
struct FitArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Initial hyperparameters.
    #[command(flatten)]
    hyper: HyperArgs,
    /// Marginal likelihood maximised: full, map or alternative (ignored with --inducing; full or
    /// map with --model parametric).
    #[arg(long, default_value = TtgpParams::default().form.name())]
    form: String,
    /// Model: gp (the TTGP, seed 004 Thm 5.3) or parametric (the task-transformed Bayesian linear
    /// regression on --features random Fourier frequencies of each kernel, Thm 5.3 (1), (3), (4);
    /// cost linear in n and m; λ, ε give the prior scales β = σ/√(nλ), γ = σ/√(mε)).
    #[arg(long, default_value = "gp")]
    model: String,
    /// Random Fourier frequencies per kernel for --model parametric (2 × N feature columns each),
    /// drawn with --seed.
    #[arg(long, default_value_t = TtblrParams::default().features)]
    features: usize,
    /// Learn K inducing points jointly with the hyperparameters (seed 004 §8.2, alternative form, k = ℓ);
    /// --x/--y are then not needed. Initial points: K rows of --ytilde drawn with --seed.
    #[arg(long)]
    inducing: Option<usize>,
    /// Seed of the random starts (and of the initial inducing points).
    #[arg(long, default_value_t = MultiStartOptions::default().seed)]
    seed: u64,
    /// Number of L-BFGS starts (the initial values, then random perturbations of them).
    #[arg(long, default_value_t = MultiStartOptions::default().starts)]
    starts: usize,
    /// Half-width of the uniform perturbation of the log-hyperparameters of the random starts.
    #[arg(long, default_value_t = MultiStartOptions::default().spread)]
    spread: f64,
    /// Maximum L-BFGS iterations per start.
    #[arg(long, default_value_t = MultiStartOptions::default().lbfgs.max_iter)]
    max_iter: usize,
    /// Write the fitted model (data + hyperparameters, JSON) here for `bke dme predict --model`.
    #[arg(long)]
    model_out: Option<PathBuf>,
    #[command(flatten)]
    exec: ExecArgs,
}

#[derive(Args)]
struct PredictArgs {
    /// Model file written by `bke dme fit --model-out`.
    #[arg(long)]
    model: PathBuf,
    /// CSV of the points x* to predict at.
    #[arg(long)]
    at: PathBuf,
    /// Columns of --at to use [default: all].
    #[arg(long, value_delimiter = ',')]
    at_cols: Option<Vec<String>>,
    #[command(flatten)]
    out: crate::table_out::OutArgs,
    #[command(flatten)]
    exec: ExecArgs,
}

struct Loaded {
    x: Option<Points>,
    y: Option<Points>,
    y_tilde: Points,
    /// The column names of `y_tilde`.
    y_tilde_names: Vec<String>,
    z_tilde: Vec<f64>,
}

fn read_cols(path: &Path, cols: Option<&[String]>) -> anyhow::Result<Points> {
    Ok(io::read_named(path, cols)?.0)
}
fn load(d: &DataArgs, need_xy: bool) -> anyhow::Result<Loaded> {
    let (y_tilde, y_tilde_names) = io::read_named(&d.ytilde, d.y_cols.as_deref())?;
    let zt = CsvTable::read(&d.ztilde)?;
    let zj = match &d.z_col {
        Some(c) => zt.column_index(c)?,
        None if zt.names.len() == 1 => 0,
        None => bail!(
            "{}: {} columns ({}); choose the target column with --z-col",
            d.ztilde.display(),
            zt.names.len(),
            zt.names.join(", ")
        ),
    };
    let z_tilde = zt.column(zj);
    let (lo, hi) = z_tilde.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
    io::table::check_scale(&zt.path, &zt.names[zj], lo, hi)?;
    if z_tilde.len() != y_tilde.len() {
        bail!(
            "--ytilde {} has {} rows but --ztilde {} has {}: they must pair up row by row",
            d.ytilde.display(),
            y_tilde.len(),
            d.ztilde.display(),
            z_tilde.len()
        );
    }
    let (x, y) = if need_xy {
        let (Some(xp), Some(yp)) = (&d.x, &d.y) else {
            bail!("--x and --y are required (the transformation pairs), unless --inducing is used");
        };
        let x = read_cols(xp, d.x_cols.as_deref())?;
        let (y, y_names) = io::read_named(yp, d.y_cols.as_deref())?;
        io::check_same_columns(("--y", &y_names), ("--ytilde", &d.ytilde, &y_tilde_names))?;
        if x.len() != y.len() {
            bail!(
                "--x {} has {} rows but --y {} has {}: they must pair up row by row",
                xp.display(),
                x.len(),
                yp.display(),
                y.len()
            );
        }
        (Some(x), Some(y))
    } else {
        (None, None)
    };
    Ok(Loaded { x, y, y_tilde, y_tilde_names, z_tilde })
}

impl Loaded {
    fn task_data(self) -> anyhow::Result<TaskData> {
        let (Some(x), Some(y)) = (self.x, self.y) else {
            bail!("internal error: the transformation pairs were not loaded");
        };
        Ok(TaskData::new(x, y, self.y_tilde, self.z_tilde)?)
    }
}

fn build_params(h: &HyperArgs, n: usize, m: usize, form: MarginalForm) -> anyhow::Result<TtgpParams> {
    let fam: KernelFamily = h.kernel.parse().context("--kernel")?;
    let kx = Kernel::new(fam, h.lengthscale_x.clone()).context("--lengthscale-x")?;
    let ky = Kernel::new(fam, h.lengthscale_y.clone()).context("--lengthscale-y")?;
    bke_core::check_positive("--sigma", h.sigma)?;
    let mut p = TtgpParams { form, ..TtgpParams::tied(kx, ky, h.sigma, n, m) };
    if let Some(l) = h.lambda {
        p.lambda = l;
    }
    if let Some(e) = h.epsilon {
        p.epsilon = e;
    }
    p.validate()?;
    Ok(p)
}

fn rows(p: &Points) -> Vec<Vec<f64>> {
    p.iter().map(<[f64]>::to_vec).collect()
}

/// Runs `bke dme …`.
pub fn run_dme(args: DmeArgs) -> anyhow::Result<()> {
    let out = match args.command {
        DmeCommand::Loglik(a) => loglik(a)?,
        DmeCommand::Fit(a) => fit_cmd(a)?,
        DmeCommand::Predict(a) => predict(a)?,
    };
    io::emit(&out)
}

/// Dense transformation pairs, or inducing points standing in for them.
enum Problem {
    Dense(TaskData),
    Sparse { u: Points, tasks: Dataset },
}

/// `bke dme loglik` with backend `B`.
fn loglik_json<B: Backend>(problem: &Problem, h: &TtgpParams) -> anyhow::Result<Value> {
    let (value, grad, extra) = match problem {
        Problem::Dense(d) => {
            let r = log_marginal::<B>(d, h)?;
            (r.value, r.gradient, json!({"n": d.n(), "m": d.m(), "form": h.form.name()}))
        }
        Problem::Sparse { u, tasks } => {
            let r = sparse_log_marginal::<B>(u, tasks.x(), tasks.y(), h)?;
            let gu: Vec<Vec<f64>> = r.gradient_inducing.chunks(u.dim()).map(<[f64]>::to_vec).collect();
            let extra =
                json!({"n": u.len(), "m": tasks.len(), "form": "alternative", "gradient_inducing": gu});
            (r.value, r.gradient, extra)
        }
    };
    let out = json!({
        "log_marginal": value,
        "gradient": h.named_gradient(&grad, true),
        "gradient_log": h.named_gradient(&grad, false),
        "hyperparameters": h,
        "backend": B::name(),
    });
    io::merge(&out, extra)
}

fn loglik(a: LoglikArgs) -> anyhow::Result<Value> {
    let form: MarginalForm = a.form.parse().context("--form")?;
    let d = load(&a.data, a.inducing_points.is_none())?;
    let m = d.y_tilde.len();
    let problem = match &a.inducing_points {
        Some(path) => {
            let (u, u_names) = io::read_named(path, a.data.y_cols.as_deref())?;
            io::check_same_columns(("--ytilde", &d.y_tilde_names), ("--inducing-points", path, &u_names))?;
            Problem::Sparse { u, tasks: Dataset::new(d.y_tilde, d.z_tilde)? }
        }
        None => Problem::Dense(d.task_data()?),
    };
    let n = match &problem {
        Problem::Dense(d) => d.n(),
        Problem::Sparse { u, .. } => u.len(),
    };
    let params = build_params(&a.hyper, n, m, form)?;
    run_with_backend!(a.exec, B => loglik_json::<B>(&problem, &params))
}

/// What `fit` conditions on: transformation pairs, or task data alone with `K` inducing points.
enum FitData {
    Dense(TaskData),
    Sparse { tasks: Dataset, inducing: usize },
}

/// A fitted model of either kind, as `predict` reads it back.
enum Fitted {
    Gp(Ttgp),
    Parametric(Ttblr),
}

/// Fits a TTGP with backend `B`: the model and its log marginal likelihood.
fn fit_ttgp<B: Backend>(data: &FitData, params: &TtgpParams) -> anyhow::Result<(Ttgp, f64)> {
    let model = match data {
        FitData::Dense(d) => fit::<B, _>("dme fit", params, d)?,
        FitData::Sparse { tasks, inducing } => {
            let sparse = SparseTtgpParams { ttgp: params.clone(), inducing: *inducing, ..Default::default() };
            fit::<B, _>("dme fit", &sparse, tasks)?
        }
    };
    let log_marginal = model.log_marginal::<B>()?;
    Ok((model, log_marginal))
}

fn fit_cmd(a: FitArgs) -> anyhow::Result<Value> {
    match a.model.trim().to_ascii_lowercase().as_str() {
        "gp" => {}
        "parametric" => return fit_parametric(a),
        other => bail!("unknown --model '{other}'; use gp or parametric"),
    }
    let form: MarginalForm = a.form.parse().context("--form")?;
    let d = load(&a.data, a.inducing.is_none())?;
    let m = d.y_tilde.len();
    let (data, n, form) = match a.inducing {
        Some(k) => (
            FitData::Sparse { tasks: Dataset::new(d.y_tilde, d.z_tilde)?, inducing: k },
            k,
            MarginalForm::Alternative,
        ),
        None => {
            let data = d.task_data()?;
            let n = data.n();
            (FitData::Dense(data), n, form)
        }
    };
    let mut params = build_params(&a.hyper, n, m, form)?;
    params.learn = Learn::all();
    params.search = MultiStartOptions {
        starts: a.starts,
        spread: a.spread,
        seed: a.seed,
        lbfgs: LbfgsOptions { max_iter: a.max_iter, ..LbfgsOptions::default() },
    };
    let (model, log_marginal) = run_with_backend!(a.exec, B => fit_ttgp::<B>(&data, &params))?;
    let mut hyper = serde_json::to_value(model.params())?;
    if a.inducing.is_some() {
        hyper["inducing"] = json!(rows(&model.data().x));
    }
    let starts: Vec<f64> = model.starts().iter().map(|s| s.log_marginal).collect();
    if let Some(path) = &a.model_out {
        let columns = a.data.x_cols.clone().unwrap_or_default();
        model_file::save(&Saved { columns, target: a.data.z_col.clone(), model: model.clone() }, path)?;
    }
    Ok(json!({
        "hyperparameters": hyper,
        "log_marginal": log_marginal,
        "form": model.params().form.name(),
        "start_log_marginals": starts,
    }))
}

/// `bke dme fit --model parametric`: the TTBLR with every hyperparameter learned.
fn fit_parametric(a: FitArgs) -> anyhow::Result<Value> {
    if a.inducing.is_some() {
        bail!("--inducing applies to --model gp only (the parametric model is already linear in n and m)");
    }
    let form: TtblrForm = a.form.parse().context("--form (full or map with --model parametric)")?;
    let data = load(&a.data, true)?.task_data()?;
    let (n, m) = (data.n(), data.m());
    let gp = build_params(&a.hyper, n, m, MarginalForm::Map)?;
    let params = TtblrParams {
        kernel_x: gp.kernel_x.clone(),
        kernel_y: gp.kernel_y.clone(),
        features: a.features,
        seed: a.seed,
        sigma: gp.sigma,
        beta: gp.sigma / (n as f64 * gp.lambda).sqrt(),
        gamma: gp.sigma / (m as f64 * gp.epsilon).sqrt(),
        form,
        learn: TtblrLearn::all(),
        search: MultiStartOptions {
            starts: a.starts,
            spread: a.spread,
            seed: a.seed,
            lbfgs: LbfgsOptions { max_iter: a.max_iter, ..LbfgsOptions::default() },
        },
    };
    let model = run_with_backend!(a.exec, B => fit::<B, _>("dme fit", &params, &data))?;
    let h = model.params();
    if let Some(path) = &a.model_out {
        let columns = a.data.x_cols.clone().unwrap_or_default();
        model_file::save(&Saved { columns, target: a.data.z_col.clone(), model: model.clone() }, path)?;
    }
    Ok(json!({
        "model": "parametric",
        "hyperparameters": {
            "kernel": h.kernel_x.family().spec(), "kernel_y": h.kernel_y.family().spec(),
            "lengthscale_x": h.kernel_x.lengthscales(), "lengthscale_y": h.kernel_y.lengthscales(),
            "sigma": h.sigma, "beta": h.beta, "gamma": h.gamma,
            "lambda": h.lambda(n), "epsilon": h.epsilon(m), "features": h.features, "seed": h.seed,
        },
        "log_marginal": model.log_marginal(),
        "form": a.form.trim().to_ascii_lowercase(),
        "start_log_marginals": model.starts(),
    }))
}

/// `bke dme predict` with backend `B`.
fn predict_json<B: Backend>(model: &Fitted, at: &Points) -> anyhow::Result<Value> {
    let (p, log_marginal) = match model {
        Fitted::Gp(m) => (m.predict::<B>(at)?, m.log_marginal::<B>()?),
        Fitted::Parametric(m) => (m.predict::<B>(at)?, m.log_marginal()),
    };
    Ok(json!({"mean": p.mean, "variance": p.variance, "log_marginal": log_marginal}))
}

/// The model of a file written by `bke dme fit --model-out`: a TTBLR when its kind is `ttblr`,
/// else a TTGP (bke 0.1 files included).
fn load_model(path: &Path) -> anyhow::Result<(Fitted, usize)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the model file {}", path.display()))?;
    let kind = serde_json::from_str::<Value>(&text).ok().and_then(|v| v.get("kind").cloned());
    Ok(if kind.as_ref().and_then(Value::as_str) == Some("ttblr") {
        let m = model_file::load::<Ttblr>(path)?.model;
        let d = m.features().dim();
        (Fitted::Parametric(m), d)
    } else {
        let m = model_file::load::<Ttgp>(path)?.model;
        let d = m.data().x.dim();
        (Fitted::Gp(m), d)
    })
}

fn predict(a: PredictArgs) -> anyhow::Result<Value> {
    let (model, dim) = load_model(&a.model)?;
    let at = read_cols(&a.at, a.at_cols.as_deref())?;
    if at.dim() != dim {
        bail!(
            "--at {} has {} columns but the model's x has {dim}; choose columns with --at-cols",
            a.at.display(),
            at.dim(),
        );
    }
    let rows = at.len();
    let mut out = run_with_backend!(a.exec, B => predict_json::<B>(&model, &at))?;
    a.out.divert(&mut out, rows, &["mean", "variance"])?;
    Ok(out)
}
