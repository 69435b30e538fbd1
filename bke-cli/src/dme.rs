// tidy: long because it still holds the DME/TTGP model-file structs that the `dme` branch (issue 13's DME part) moves into bke-dme; drop this line then.
//! `bke dme loglik|fit|predict` and `bke lfi`: deconditional mean embeddings, task-transformed GPs
//! and likelihood-free inference (bke-dme).

use crate::io::{self, CsvTable};
use anyhow::{Context, bail};
use bke_core::optim::LbfgsOptions;
use bke_core::{Kernel, KernelFamily, Points};
use bke_dme::lfi::{HerdingOptions, LfiData, LfiHyper, PosteriorEmbedding, herd, learn, q_bar};
use bke_dme::sparse::{SparseOptions, fit_inducing, initial_inducing, sparse_log_marginal};
use bke_dme::ttgp::{FitOptions, Learn, MarginalForm, Ttgp, TtgpData, TtgpHyper, fit, log_marginal};
use bke_linalg::{Backend, BackendKind, WithBackend};
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
    /// Log marginal likelihood of a task-transformed GP (seed Thm 5.3) and its gradient with
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
    #[arg(long, value_delimiter = ',', default_value = "1", allow_hyphen_values = true)]
    lengthscale_x: Vec<f64>,
    /// Lengthscale(s) of the kernel ℓ on y: one value, or one per column (ARD), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1", allow_hyphen_values = true)]
    lengthscale_y: Vec<f64>,
    /// Observation noise standard deviation σ.
    #[arg(long, default_value_t = 0.1, allow_hyphen_values = true)]
    sigma: f64,
    /// CME regulariser λ [default: σ²/n, the seed's unit prior amplitude].
    #[arg(long, allow_hyphen_values = true)]
    lambda: Option<f64>,
    /// DME regulariser ε [default: σ²/m, the seed's unit prior amplitude].
    #[arg(long, allow_hyphen_values = true)]
    epsilon: Option<f64>,
    /// Kernel family of both kernels: se, laplace, matern32, matern52, rq (rational quadratic, α = 1).
    #[arg(long, default_value = "se")]
    kernel: String,
}

/// Execution options.
#[derive(Args)]
struct ExecArgs {
    /// Linear-algebra backend (see `bke backends`).
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads [default: all cores].
    #[arg(long)]
    threads: Option<usize>,
}

#[derive(Args)]
struct LoglikArgs {
    #[command(flatten)]
    data: DataArgs,
    #[command(flatten)]
    hyper: HyperArgs,
    /// Marginal likelihood: full (Thm 5.3 (3)), map (5.3 (4)) or alternative (same density as map,
    /// O(n³ + n²m)). With --inducing only alternative applies.
    #[arg(long, default_value = "map")]
    form: String,
    /// Inducing-point mode (§8.2): a CSV of inducing points u (columns as --y-cols); x = y = u.
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
    /// Marginal likelihood maximised: full, map or alternative (ignored with --inducing).
    #[arg(long, default_value = "map")]
    form: String,
    /// Learn K inducing points jointly with the hyperparameters (§8.2, alternative form, k = ℓ);
    /// --x/--y are then not needed. Initial points: K rows of --ytilde drawn with --seed.
    #[arg(long)]
    inducing: Option<usize>,
    /// Seed of the random starts (and of the initial inducing points).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Number of L-BFGS starts (the initial values, then random perturbations of them).
    #[arg(long, default_value_t = 5)]
    starts: usize,
    /// Half-width of the uniform perturbation of the log-hyperparameters of the random starts.
    #[arg(long, default_value_t = 1.5)]
    spread: f64,
    /// Maximum L-BFGS iterations per start.
    #[arg(long, default_value_t = 200)]
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
    exec: ExecArgs,
}

/// `bke lfi`: likelihood-free inference with deconditional mean embeddings (seed Algorithm 8.1).
#[derive(Args)]
pub struct LfiArgs {
    /// CSV of simulations: parameters θ_i and simulated statistics x_i, one simulation per row.
    #[arg(long)]
    simulations: PathBuf,
    /// Columns of --simulations holding the parameters θ (comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    theta_cols: Vec<String>,
    /// Columns of --simulations holding the statistics x (comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    stat_cols: Vec<String>,
    /// CSV of prior samples θ̃ (columns named as --theta-cols, else all columns); they are also the
    /// herding candidates unless --candidates is given.
    #[arg(long)]
    prior_samples: PathBuf,
    /// CSV of the observed statistics y (columns named as --stat-cols, else all columns; first row).
    #[arg(long)]
    observed: PathBuf,
    /// Number of posterior super-samples drawn by kernel herding.
    #[arg(long, default_value_t = 100)]
    herd: usize,
    /// CSV of herding candidates (query points θ*) [default: the prior samples].
    #[arg(long)]
    candidates: Option<PathBuf>,
    /// Refine every super-sample continuously by L-BFGS from the best candidates.
    #[arg(long)]
    continuous: bool,
    /// Lengthscale(s) of the kernel ℓ on θ (also the herding kernel), comma-separated for ARD.
    #[arg(long, value_delimiter = ',', default_value = "1", allow_hyphen_values = true)]
    lengthscale_theta: Vec<f64>,
    /// Lengthscale(s) of the SE kernel k on the statistics, comma-separated for ARD.
    #[arg(long, value_delimiter = ',', default_value = "1", allow_hyphen_values = true)]
    lengthscale_stat: Vec<f64>,
    /// Lengthscale(s) of the herding kernel ℓ' [default: those of ℓ].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    lengthscale_herding: Option<Vec<f64>>,
    /// Width ε of the ε-kernel κ_ε(y, x) = N(y; x, ε²I) of q̄.
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    epsilon: f64,
    /// CME regulariser λ.
    #[arg(long, default_value_t = 1e-2, allow_hyphen_values = true)]
    lambda: f64,
    /// DME regulariser δ.
    #[arg(long, default_value_t = 1e-2, allow_hyphen_values = true)]
    delta: f64,
    /// Learn ℓ's lengthscales and ε by maximising q̄ (multi-start L-BFGS) before herding. q̄
    /// estimates p(y): it does not identify k or δ, and tends to pick wide ℓ.
    #[arg(long)]
    learn: bool,
    /// With --learn, learn λ too (q̄ grows without bound as λ → 0, so it is frozen by default).
    #[arg(long)]
    learn_lambda: bool,
    /// Number of L-BFGS starts for --learn.
    #[arg(long, default_value_t = 5)]
    starts: usize,
    /// Seed of the random starts of --learn.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    exec: ExecArgs,
}

fn setup(exec: &ExecArgs) -> anyhow::Result<BackendKind> {
    if let Some(t) = exec.threads {
        if t == 0 {
            bail!("--threads must be at least 1");
        }
        // Fails only if a pool exists already, which is harmless here.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(t).build_global();
    }
    let kind = BackendKind::parse(&exec.backend).map_err(anyhow::Error::msg)?;
    Ok(kind)
}

fn family(name: &str) -> anyhow::Result<KernelFamily> {
    Ok(match name {
        "se" => KernelFamily::SquaredExponential,
        "laplace" => KernelFamily::Laplace,
        "matern32" => KernelFamily::Matern32,
        "matern52" => KernelFamily::Matern52,
        "rq" => KernelFamily::RationalQuadratic { alpha: 1.0 },
        other => bail!("unknown --kernel '{other}'; use se, laplace, matern32, matern52 or rq"),
    })
}

fn family_name(f: KernelFamily) -> String {
    f.name().to_string()
}

struct Loaded {
    x: Option<Points>,
    y: Option<Points>,
    y_tilde: Points,
    z_tilde: Vec<f64>,
}

fn read_cols(path: &Path, cols: Option<&[String]>) -> anyhow::Result<Points> {
    let t = CsvTable::read(path)?;
    if t.rows == 0 {
        bail!("{}: no data rows", path.display());
    }
    t.points(cols)
}

fn load(d: &DataArgs, need_xy: bool) -> anyhow::Result<Loaded> {
    let y_tilde = read_cols(&d.ytilde, d.y_cols.as_deref())?;
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
        let y = read_cols(yp, d.y_cols.as_deref())?;
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
    Ok(Loaded { x, y, y_tilde, z_tilde })
}

fn build_hyper(h: &HyperArgs, n: usize, m: usize) -> anyhow::Result<TtgpHyper> {
    let fam = family(&h.kernel)?;
    let kx = Kernel::new(fam, h.lengthscale_x.clone()).context("--lengthscale-x")?;
    let ky = Kernel::new(fam, h.lengthscale_y.clone()).context("--lengthscale-y")?;
    let mut hy = TtgpHyper::tied(kx, ky, h.sigma, n, m);
    bke_core::check_positive("--sigma", h.sigma)?;
    if let Some(l) = h.lambda {
        hy.lambda = l;
    }
    if let Some(e) = h.epsilon {
        hy.epsilon = e;
    }
    Ok(hy)
}

fn hyper_json(h: &TtgpHyper) -> Value {
    let mut v = json!({
        "kernel": family_name(h.kernel_x.family()),
        "lengthscale_x": h.kernel_x.lengthscales(),
        "lengthscale_y": h.kernel_y.lengthscales(),
        "sigma": h.sigma,
        "lambda": h.lambda,
        "epsilon": h.epsilon,
    });
    if let KernelFamily::RationalQuadratic { alpha } = h.kernel_x.family() {
        v["alpha_x"] = json!(alpha);
    }
    if let KernelFamily::RationalQuadratic { alpha } = h.kernel_y.family() {
        v["alpha_y"] = json!(alpha);
    }
    v
}

/// Splits a log-parameter gradient into named entries; `natural` divides by the parameter (∂/∂θ).
fn gradient_json(h: &TtgpHyper, g: &[f64], natural: bool) -> Value {
    let p: Vec<f64> = h.log_params().iter().map(|v| v.exp()).collect();
    let val = |i: usize| if natural { g[i] / p[i] } else { g[i] };
    let (nx, ny) = (h.kernel_x.n_params(), h.kernel_y.n_params());
    let (lx, ly) = (h.kernel_x.lengthscales().len(), h.kernel_y.lengthscales().len());
    let mut v = json!({
        "lengthscale_x": (0..lx).map(val).collect::<Vec<_>>(),
        "lengthscale_y": (nx..nx + ly).map(val).collect::<Vec<_>>(),
        "sigma": val(nx + ny),
        "lambda": val(nx + ny + 1),
        "epsilon": val(nx + ny + 2),
    });
    if nx > lx {
        v["alpha_x"] = json!(val(lx));
    }
    if ny > ly {
        v["alpha_y"] = json!(val(nx + ly));
    }
    v
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

enum Problem {
    Dense(TtgpData),
    Sparse { u: Points, y_tilde: Points, z_tilde: Vec<f64> },
}

struct LoglikJob {
    problem: Problem,
    hyper: TtgpHyper,
    form: MarginalForm,
}

impl WithBackend for LoglikJob {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> anyhow::Result<Value> {
        let h = &self.hyper;
        let (value, grad, extra) = match &self.problem {
            Problem::Dense(d) => {
                let r = log_marginal::<B>(d, h, self.form)?;
                (r.value, r.gradient, json!({"n": d.n(), "m": d.m(), "form": self.form.name()}))
            }
            Problem::Sparse { u, y_tilde, z_tilde } => {
                let r = sparse_log_marginal::<B>(u, y_tilde, z_tilde, h)?;
                let gu: Vec<Vec<f64>> = r.gradient_inducing.chunks(u.dim()).map(<[f64]>::to_vec).collect();
                (
                    r.value,
                    r.gradient,
                    json!({"n": u.len(), "m": y_tilde.len(), "form": "alternative", "gradient_inducing": gu}),
                )
            }
        };
        let mut out = json!({
            "log_marginal": value,
            "gradient": gradient_json(h, &grad, true),
            "gradient_log": gradient_json(h, &grad, false),
            "hyperparameters": hyper_json(h),
            "backend": B::NAME,
        });
        for (k, v) in extra.as_object().expect("object") {
            out[k] = v.clone();
        }
        Ok(out)
    }
}

fn loglik(a: LoglikArgs) -> anyhow::Result<Value> {
    let kind = setup(&a.exec)?;
    let form = MarginalForm::parse(&a.form)?;
    let d = load(&a.data, a.inducing_points.is_none())?;
    let (problem, n) = match &a.inducing_points {
        Some(path) => {
            let u = read_cols(path, a.data.y_cols.as_deref())?;
            let n = u.len();
            (Problem::Sparse { u, y_tilde: d.y_tilde.clone(), z_tilde: d.z_tilde.clone() }, n)
        }
        None => {
            let (x, y) = (d.x.expect("loaded"), d.y.expect("loaded"));
            let n = x.len();
            (Problem::Dense(TtgpData::new(x, y, d.y_tilde.clone(), d.z_tilde.clone())?), n)
        }
    };
    let hyper = build_hyper(&a.hyper, n, d.y_tilde.len())?;
    kind.dispatch(LoglikJob { problem, hyper, form })?
}

struct FitJob {
    problem: Problem,
    hyper: TtgpHyper,
    opts: FitOptions,
    model_out: Option<PathBuf>,
}

impl WithBackend for FitJob {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> anyhow::Result<Value> {
        let bar = io::progress(self.opts.starts as u64, "fitting");
        bar.set_position(0);
        let (model, out) = match self.problem {
            Problem::Dense(d) => {
                let r = fit::<B>(&d, &self.hyper, &self.opts)?;
                let starts: Vec<f64> = r.starts.iter().map(|s| s.log_marginal).collect();
                let out = json!({
                    "hyperparameters": hyper_json(&r.hyper),
                    "log_marginal": r.log_marginal,
                    "form": self.opts.form.name(),
                    "start_log_marginals": starts,
                });
                let model = json!({
                    "format": "bke-dme-ttgp-1",
                    "form": self.opts.form.name(),
                    "hyperparameters": hyper_json(&r.hyper),
                    "x": rows(&d.x), "y": rows(&d.y), "y_tilde": rows(&d.y_tilde), "z_tilde": d.z_tilde,
                });
                (model, out)
            }
            Problem::Sparse { u, y_tilde, z_tilde } => {
                let r = fit_inducing::<B>(
                    &y_tilde,
                    &z_tilde,
                    &self.hyper,
                    &u,
                    SparseOptions::default(),
                    &self.opts,
                )?;
                let mut hj = hyper_json(&r.hyper);
                hj["inducing"] = json!(rows(&r.inducing));
                let out = json!({
                    "hyperparameters": hj,
                    "log_marginal": r.log_marginal,
                    "form": "alternative",
                    "start_log_marginals": r.start_values,
                });
                let model = json!({
                    "format": "bke-dme-ttgp-1",
                    "form": "alternative",
                    "hyperparameters": hyper_json(&r.hyper),
                    "x": rows(&r.inducing), "y": rows(&r.inducing), "y_tilde": rows(&y_tilde), "z_tilde": z_tilde,
                });
                (model, out)
            }
        };
        bar.finish_and_clear();
        if let Some(path) = &self.model_out {
            std::fs::write(path, serde_json::to_string_pretty(&model)?)
                .with_context(|| format!("cannot write the model file {}", path.display()))?;
        }
        Ok(out)
    }
}

fn fit_cmd(a: FitArgs) -> anyhow::Result<Value> {
    let kind = setup(&a.exec)?;
    let form = MarginalForm::parse(&a.form)?;
    let d = load(&a.data, a.inducing.is_none())?;
    let m = d.y_tilde.len();
    let (problem, n) = match a.inducing {
        Some(k) => {
            let u = initial_inducing(&d.y_tilde, k, a.seed)?;
            (Problem::Sparse { u, y_tilde: d.y_tilde, z_tilde: d.z_tilde }, k)
        }
        None => {
            let (x, y) = (d.x.expect("loaded"), d.y.expect("loaded"));
            let n = x.len();
            (Problem::Dense(TtgpData::new(x, y, d.y_tilde, d.z_tilde)?), n)
        }
    };
    let hyper = build_hyper(&a.hyper, n, m)?;
    let opts = FitOptions {
        form,
        starts: a.starts,
        spread: a.spread,
        seed: a.seed,
        lbfgs: LbfgsOptions { max_iter: a.max_iter, ..LbfgsOptions::default() },
        ..FitOptions::default()
    };
    kind.dispatch(FitJob { problem, hyper, opts, model_out: a.model_out })?
}

fn json_points(v: &Value, what: &str, path: &Path) -> anyhow::Result<Points> {
    let rows: Vec<Vec<f64>> = serde_json::from_value(v.get(what).cloned().unwrap_or(Value::Null))
        .with_context(|| {
            format!("model file {}: field '{what}' is missing or not a list of rows", path.display())
        })?;
    Ok(Points::from_rows(what, &rows)?)
}

fn model_hyper(v: &Value, path: &Path) -> anyhow::Result<TtgpHyper> {
    let h = v
        .get("hyperparameters")
        .with_context(|| format!("model file {}: no 'hyperparameters'", path.display()))?;
    let get = |k: &str| -> anyhow::Result<Value> {
        h.get(k)
            .cloned()
            .with_context(|| format!("model file {}: hyperparameter '{k}' is missing", path.display()))
    };
    let fam = |alpha: &str| -> anyhow::Result<KernelFamily> {
        let name: String = serde_json::from_value(get("kernel")?)?;
        Ok(match family(&name)? {
            KernelFamily::RationalQuadratic { .. } => {
                KernelFamily::RationalQuadratic { alpha: serde_json::from_value(get(alpha)?)? }
            }
            f => f,
        })
    };
    Ok(TtgpHyper {
        kernel_x: Kernel::new(fam("alpha_x")?, serde_json::from_value(get("lengthscale_x")?)?)?,
        kernel_y: Kernel::new(fam("alpha_y")?, serde_json::from_value(get("lengthscale_y")?)?)?,
        sigma: serde_json::from_value(get("sigma")?)?,
        lambda: serde_json::from_value(get("lambda")?)?,
        epsilon: serde_json::from_value(get("epsilon")?)?,
    })
}

struct PredictJob {
    data: TtgpData,
    hyper: TtgpHyper,
    form: MarginalForm,
    at: Points,
}

impl WithBackend for PredictJob {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> anyhow::Result<Value> {
        let gp = Ttgp::new::<B>(self.data, self.hyper, self.form)?;
        let p = gp.predict::<B>(&self.at)?;
        Ok(json!({"mean": p.mean, "variance": p.variance, "log_marginal": gp.log_marginal()}))
    }
}

fn predict(a: PredictArgs) -> anyhow::Result<Value> {
    let kind = setup(&a.exec)?;
    let text = std::fs::read_to_string(&a.model)
        .with_context(|| format!("cannot read the model file {}", a.model.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", a.model.display()))?;
    if v.get("format").and_then(Value::as_str) != Some("bke-dme-ttgp-1") {
        bail!("{} is not a model written by `bke dme fit --model-out`", a.model.display());
    }
    let form = MarginalForm::parse(v.get("form").and_then(Value::as_str).unwrap_or("map"))?;
    let z: Vec<f64> = serde_json::from_value(v.get("z_tilde").cloned().unwrap_or(Value::Null))
        .with_context(|| format!("model file {}: 'z_tilde' is missing", a.model.display()))?;
    let data = TtgpData::new(
        json_points(&v, "x", &a.model)?,
        json_points(&v, "y", &a.model)?,
        json_points(&v, "y_tilde", &a.model)?,
        z,
    )?;
    let hyper = model_hyper(&v, &a.model)?;
    let at = read_cols(&a.at, a.at_cols.as_deref())?;
    if at.dim() != data.x.dim() {
        bail!(
            "--at {} has {} columns but the model's x has {}; choose columns with --at-cols",
            a.at.display(),
            at.dim(),
            data.x.dim()
        );
    }
    kind.dispatch(PredictJob { data, hyper, form, at })?
}

struct LfiJob {
    data: LfiData,
    hyper: LfiHyper,
    herding_lengthscale: Option<Vec<f64>>,
    learn: Option<FitOptions>,
    candidates: Points,
    herding: HerdingOptions,
}

impl WithBackend for LfiJob {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> anyhow::Result<Value> {
        let hyper = match &self.learn {
            Some(opts) => learn::<B>(&self.data, &self.hyper, opts)?.hyper,
            None => self.hyper,
        };
        let (q, _) = q_bar::<B>(&self.data, &hyper)?;
        let post = PosteriorEmbedding::new::<B>(&self.data, &hyper)?;
        let herding_kernel = match &self.herding_lengthscale {
            Some(l) => Kernel::se_ard(l.clone()).context("--lengthscale-herding")?,
            None => hyper.kernel_theta.clone(),
        };
        let samples = herd(&post, &self.candidates, &herding_kernel, &self.herding)?;
        Ok(json!({
            "samples": rows(&samples),
            "q_bar": q,
            "hyperparameters": {
                "lengthscale_theta": hyper.kernel_theta.lengthscales(),
                "lengthscale_stat": hyper.kernel_stats.lengthscales(),
                "epsilon": hyper.epsilon,
                "lambda": hyper.lambda,
                "delta": hyper.delta,
            },
            "n_simulations": self.data.theta.len(),
            "n_prior": self.data.prior.len(),
        }))
    }
}

/// Columns `names` if the table has all of them, else all columns.
fn named_or_all(t: &CsvTable, names: &[String]) -> anyhow::Result<Points> {
    if names.iter().all(|n| t.names.contains(n)) { t.points(Some(names)) } else { t.points(None) }
}

/// Runs `bke lfi`.
pub fn run_lfi(a: LfiArgs) -> anyhow::Result<()> {
    let kind = setup(&a.exec)?;
    let sims = CsvTable::read(&a.simulations)?;
    let theta = sims.points(Some(&a.theta_cols))?;
    let stats = sims.points(Some(&a.stat_cols))?;
    let prior_t = CsvTable::read(&a.prior_samples)?;
    let prior = named_or_all(&prior_t, &a.theta_cols)?;
    let obs_t = CsvTable::read(&a.observed)?;
    if obs_t.rows == 0 {
        bail!("{}: no data rows; the first row must hold the observed statistics", a.observed.display());
    }
    let obs = named_or_all(&obs_t, &a.stat_cols)?;
    let observed = obs.point(0).to_vec();
    let candidates = match &a.candidates {
        Some(p) => named_or_all(&CsvTable::read(p)?, &a.theta_cols)?,
        None => prior.clone(),
    };
    let data = LfiData::new(theta, stats, prior, observed)?;
    let hyper = LfiHyper {
        kernel_theta: Kernel::se_ard(a.lengthscale_theta.clone()).context("--lengthscale-theta")?,
        kernel_stats: Kernel::se_ard(a.lengthscale_stat.clone()).context("--lengthscale-stat")?,
        epsilon: a.epsilon,
        lambda: a.lambda,
        delta: a.delta,
    };
    let learn = a.learn.then(|| FitOptions {
        starts: a.starts,
        seed: a.seed,
        learn: Learn { lambda: a.learn_lambda, ..Learn::default() },
        ..FitOptions::default()
    });
    let herding = HerdingOptions { samples: a.herd, continuous: a.continuous, ..HerdingOptions::default() };
    let job = LfiJob { data, hyper, herding_lengthscale: a.lengthscale_herding, learn, candidates, herding };
    let out = kind.dispatch(job)??;
    io::emit(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::Faer;

    fn dir(test: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bke-dme-cli-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(test: &str, name: &str, header: &str, v: &[f64]) -> PathBuf {
        let p = dir(test).join(name);
        let body: Vec<String> = v.iter().map(f64::to_string).collect();
        std::fs::write(&p, format!("{header}\n{}\n", body.join("\n"))).unwrap();
        p
    }

    fn data_args(test: &str, zt: &str) -> DataArgs {
        let y: Vec<f64> = (0..12).map(|i| -2.0 + 0.35 * i as f64).collect();
        let x: Vec<f64> = y.iter().map(|v| 0.8 * v + 0.05).collect();
        let yt: Vec<f64> = (0..9).map(|j| -1.9 + 0.45 * j as f64).collect();
        // Deterministic pseudo-noise keeps the optimum away from σ → 0.
        let z: Vec<f64> =
            yt.iter().enumerate().map(|(j, v)| (0.8 * v).sin() + 0.1 * (7.3 * j as f64).sin()).collect();
        DataArgs {
            x: Some(write(test, "x.csv", "x", &x)),
            y: Some(write(test, "y.csv", "y", &y)),
            ytilde: write(test, "yt.csv", "y", &yt),
            ztilde: if zt == "bad" {
                write(test, "zbad.csv", "z", &z[..4])
            } else {
                write(test, "zt.csv", "z", &z)
            },
            x_cols: None,
            y_cols: None,
            z_col: None,
        }
    }

    fn hyper_args() -> HyperArgs {
        HyperArgs {
            lengthscale_x: vec![0.9],
            lengthscale_y: vec![0.7],
            sigma: 0.2,
            lambda: None,
            epsilon: None,
            kernel: "se".into(),
        }
    }

    fn exec() -> ExecArgs {
        ExecArgs { backend: "faer".into(), threads: None }
    }

    #[test]
    fn loglik_reports_the_library_value_and_natural_scale_gradient() {
        const T: &str = "loglik";
        let out = loglik(LoglikArgs {
            data: data_args(T, "ok"),
            hyper: hyper_args(),
            form: "alternative".into(),
            inducing_points: None,
            exec: exec(),
        })
        .unwrap();
        let d = load(&data_args(T, "ok"), true).unwrap();
        let data = TtgpData::new(d.x.unwrap(), d.y.unwrap(), d.y_tilde, d.z_tilde).unwrap();
        let h = build_hyper(&hyper_args(), 12, 9).unwrap();
        assert!((h.lambda - 0.04 / 12.0).abs() < 1e-15 && (h.epsilon - 0.04 / 9.0).abs() < 1e-15);
        let want = log_marginal::<Faer>(&data, &h, MarginalForm::Alternative).unwrap();
        assert!((out["log_marginal"].as_f64().unwrap() - want.value).abs() < 1e-12);
        let gs = out["gradient"]["sigma"].as_f64().unwrap();
        assert!((gs - want.gradient[2] / 0.2).abs() < 1e-9 * gs.abs());
        assert!((out["gradient_log"]["lengthscale_x"][0].as_f64().unwrap() - want.gradient[0]).abs() < 1e-12);
    }

    #[test]
    fn mismatched_files_and_bad_hyperparameters_are_reported() {
        const T: &str = "bad";
        let args = |data, sigma| LoglikArgs {
            data,
            hyper: HyperArgs { sigma, ..hyper_args() },
            form: "map".into(),
            inducing_points: None,
            exec: exec(),
        };
        let e = loglik(args(data_args(T, "bad"), 0.2)).unwrap_err().to_string();
        assert!(e.contains("9 rows") && e.contains("4"), "{e}");
        let e = loglik(args(data_args(T, "ok"), -1.0)).unwrap_err().to_string();
        assert!(e.contains("sigma") && e.contains("positive"), "{e}");
        let mut d = data_args(T, "ok");
        d.x = None;
        let e = loglik(args(d, 0.2)).unwrap_err().to_string();
        assert!(e.contains("--x and --y are required"), "{e}");
    }

    #[test]
    fn fit_writes_a_model_that_predict_reads_back() {
        const T: &str = "fit";
        let model = dir("fit").join("model.json");
        let out = fit_cmd(FitArgs {
            data: data_args(T, "ok"),
            hyper: hyper_args(),
            form: "map".into(),
            inducing: None,
            seed: 1,
            starts: 2,
            spread: 1.0,
            max_iter: 50,
            model_out: Some(model.clone()),
            exec: exec(),
        })
        .unwrap();
        let at = write("fit", "at.csv", "x", &[-0.5, 0.0, 0.5]);
        let pred = predict(PredictArgs { model, at, at_cols: None, exec: exec() }).unwrap();
        assert!(
            (pred["log_marginal"].as_f64().unwrap() - out["log_marginal"].as_f64().unwrap()).abs() < 1e-8,
            "{pred} {out}"
        );
        assert_eq!(pred["mean"].as_array().unwrap().len(), 3);
        assert!(pred["variance"].as_array().unwrap().iter().all(|v| v.as_f64().unwrap() >= 0.0));
    }
}
