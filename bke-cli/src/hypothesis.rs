//! `bke test mmd`, `bke test hsic`: kernel two-sample and independence tests with a fixed, median-
//! heuristic or learned (BKL) lengthscale (squared exponential kernel `exp(−‖x − y‖²/(2θ²))`), and
//! `bke witness`: the witness function μ_P − μ_Q with BKE posterior bands.
//!
//! The median heuristic's default convention is `muandet` (θ = median pairwise distance); `mooij` is
//! θ = median/√2 (seed 000 §2.4). BKL learns θ by ML-II on the BKE marginal pseudolikelihood: on the
//! pooled sample for MMD and the witness, on each marginal for HSIC. Every output names the selection,
//! the convention, the statistic and the null it used.

use crate::io;
use anyhow::{Context, bail};
use bke_core::embedding::{EmbeddingParams, EmbeddingPrior};
use bke_core::hypothesis::hsic::{HsicParams, HsicStatistic};
use bke_core::hypothesis::mmd::{MmdParams, MmdStatistic};
use bke_core::hypothesis::{
    LengthscaleSelection, MedianConvention, NullDistribution, SelectedLengthscale, TestOutcome,
    WitnessParams, select_lengthscale,
};
use bke_core::{Kernel, Points};
use bke_linalg::{Backend, BackendKind, WithBackend};
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The kernel tests.
#[derive(Subcommand)]
pub enum TestCommand {
    /// Two-sample test H₀: P = Q with the maximum mean discrepancy (MMD²).
    Mmd(Box<MmdArgs>),
    /// Independence test H₀: X ⫫ Y with the Hilbert–Schmidt independence criterion (HSIC).
    Hsic(Box<HsicArgs>),
}

/// How the lengthscale is chosen when none is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Select {
    /// Median heuristic (convention set by --median-convention, default muandet: θ = median distance).
    Median,
    /// BKL: maximise the BKE marginal pseudolikelihood (ML-II; pooled sample for MMD, each marginal
    /// for HSIC).
    Bkl,
}

/// Median-heuristic convention (seed 000 §2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Convention {
    /// θ = median pairwise distance, k = exp(−d²/(2m²)) (Muandet et al. 2014). Default.
    Muandet,
    /// θ = median/√2, k = exp(−d²/m²) (Mooij et al. 2015).
    Mooij,
}

impl From<Convention> for MedianConvention {
    fn from(c: Convention) -> Self {
        match c {
            Convention::Muandet => MedianConvention::Muandet,
            Convention::Mooij => MedianConvention::Mooij,
        }
    }
}

/// How the lengthscale is chosen (shared by the tests and the witness).
#[derive(Args, Clone, Debug)]
pub struct Selection {
    /// How to choose a lengthscale that is not given: median (default) or bkl.
    #[arg(long, value_enum)]
    pub select: Option<Select>,
    /// Median-heuristic convention.
    #[arg(long, value_enum, default_value = "muandet")]
    pub median_convention: Convention,
    /// BKL: number of landmarks held out at random (default 100; max(D, n/5) when n ≤ 100).
    #[arg(long, default_value_t = 100)]
    pub bkl_landmarks: usize,
    /// BKL: τ² of the BKE likelihood (the seed uses 1).
    #[arg(long, default_value_t = 1.0)]
    pub bkl_tau2: f64,
    /// BKL: prior measure of r_θ: lebesgue (default), unit or gaussian:ETA.
    #[arg(long, default_value = "lebesgue")]
    pub bkl_prior: String,
}

impl Selection {
    /// The selection rule for a fixed lengthscale (if any) and these options; `seed` seeds BKL's
    /// landmark hold-out.
    pub fn rule(&self, fixed: Option<f64>, seed: u64) -> anyhow::Result<LengthscaleSelection> {
        if let Some(l) = fixed {
            bke_core::check_positive("--lengthscale", l)?;
            return Ok(LengthscaleSelection::Fixed(l));
        }
        Ok(match self.select.unwrap_or(Select::Median) {
            Select::Median => LengthscaleSelection::Median(self.median_convention.into()),
            Select::Bkl => LengthscaleSelection::Bkl(Box::new(EmbeddingParams {
                num_landmarks: self.bkl_landmarks,
                tau2: self.bkl_tau2,
                prior: EmbeddingPrior::parse(&self.bkl_prior)?,
                seed,
                ..EmbeddingParams::default()
            })),
        })
    }
}

/// Options shared by both tests.
#[derive(Args, Clone, Debug)]
pub struct Common {
    #[command(flatten)]
    pub selection: Selection,
    /// Number of permutations / bootstrap draws B.
    #[arg(long, default_value_t = 1000)]
    pub permutations: usize,
    /// Test level α in (0, 1).
    #[arg(long, default_value_t = 0.05, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Seed of the resampling streams (the p-value does not depend on --threads).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Linear-algebra backend (see `bke backends`).
    #[arg(long, default_value = "faer")]
    pub backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// `bke test mmd`.
#[derive(Args, Clone, Debug)]
pub struct MmdArgs {
    /// CSV file with the sample from P (header row).
    #[arg(long)]
    pub x: PathBuf,
    /// CSV file with the sample from Q (header row).
    #[arg(long)]
    pub y: PathBuf,
    /// Columns to use from both files (comma-separated names; default: all).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Fixed lengthscale θ (instead of --select).
    #[arg(long, conflicts_with = "select", allow_negative_numbers = true)]
    pub lengthscale: Option<f64>,
    /// Statistic: unbiased (default), biased or linear (linear-time, needs equal sample sizes).
    #[arg(long, default_value = "unbiased")]
    pub statistic: String,
    /// Null distribution: permutation (default), gamma, wild (equal sizes), normal (linear only).
    #[arg(long, default_value = "permutation")]
    pub null: String,
    #[command(flatten)]
    pub common: Common,
}

/// `bke test hsic`.
#[derive(Args, Clone, Debug)]
pub struct HsicArgs {
    /// CSV file with the x observations (header row).
    #[arg(long)]
    pub x: PathBuf,
    /// CSV file with the y observations, row i paired with row i of --x (may be the same file).
    #[arg(long)]
    pub y: PathBuf,
    /// Columns of --x to use (default: all).
    #[arg(long, value_delimiter = ',')]
    pub x_columns: Option<Vec<String>>,
    /// Columns of --y to use (default: all).
    #[arg(long, value_delimiter = ',')]
    pub y_columns: Option<Vec<String>>,
    /// Fixed lengthscale of the kernel on x (with --lengthscale-y, instead of --select).
    #[arg(long, requires = "lengthscale_y", conflicts_with = "select", allow_negative_numbers = true)]
    pub lengthscale_x: Option<f64>,
    /// Fixed lengthscale of the kernel on y (with --lengthscale-x).
    #[arg(long, requires = "lengthscale_x", conflicts_with = "select", allow_negative_numbers = true)]
    pub lengthscale_y: Option<f64>,
    /// Statistic: biased (default, Gretton et al. 2008) or unbiased (Song et al. 2012).
    #[arg(long, default_value = "biased")]
    pub statistic: String,
    /// Null distribution: permutation (default) or gamma.
    #[arg(long, default_value = "permutation")]
    pub null: String,
    #[command(flatten)]
    pub common: Common,
}

/// Runs a `bke test …` command.
pub fn run(cmd: TestCommand) -> anyhow::Result<()> {
    let out = match cmd {
        TestCommand::Mmd(a) => with_threads(a.common.threads, || mmd(&a))?,
        TestCommand::Hsic(a) => with_threads(a.common.threads, || hsic(&a))?,
    };
    io::emit(&out)
}

/// Runs `f` in a rayon pool with `threads` workers (the global pool when `None`).
pub fn with_threads<T: Send>(
    threads: Option<usize>,
    f: impl FnOnce() -> anyhow::Result<T> + Send,
) -> anyhow::Result<T> {
    match threads {
        None => f(),
        Some(0) => bail!("--threads must be at least 1"),
        Some(t) => rayon::ThreadPoolBuilder::new().num_threads(t).build()?.install(f),
    }
}

struct SelectJob<'a> {
    points: &'a Points,
    rule: &'a LengthscaleSelection,
}

impl WithBackend for SelectJob<'_> {
    type Output = Result<SelectedLengthscale, bke_core::CoreError>;
    fn run<B: Backend>(self) -> Self::Output {
        select_lengthscale::<B>(self.points, self.rule)
    }
}

/// Chooses θ for `points` by `rule` on `backend`.
pub fn choose(
    points: &Points,
    rule: &LengthscaleSelection,
    backend: BackendKind,
) -> anyhow::Result<SelectedLengthscale> {
    Ok(backend.dispatch(SelectJob { points, rule })??)
}

/// JSON fields describing a selection; `suffix` distinguishes the variables of HSIC ("", "_x", "_y").
pub fn selection_json(sel: &SelectedLengthscale, suffix: &str) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    if let Some(c) = sel.median_convention {
        m.insert("median_convention".into(), json!(c.name()));
    }
    if let Some(b) = &sel.bkl {
        m.insert(format!("bkl_log_marginal{suffix}"), json!(b.log_marginal));
        m.insert(
            format!("bkl_local_optima{suffix}"),
            json!(
                b.local_optima
                    .iter()
                    .map(|(t, v)| json!({"lengthscale": t, "log_marginal": v}))
                    .collect::<Vec<_>>()
            ),
        );
        m.insert(format!("bkl_landmarks{suffix}"), json!(b.landmarks));
        m.insert(format!("median_distance{suffix}"), json!(b.median_distance));
        m.insert("bkl_tau2".into(), json!(b.tau2));
    }
    m
}

/// Errors unless the file gave at least 2 points.
pub fn at_least_two(path: &std::path::Path, p: &Points) -> anyhow::Result<()> {
    if p.len() < 2 {
        bail!("{}: {} data row(s); the test needs at least 2", path.display(), p.len());
    }
    Ok(())
}

fn outcome_json(o: &TestOutcome) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("statistic".into(), json!(o.statistic));
    m.insert("p_value".into(), json!(o.p_value));
    m.insert("reject".into(), json!(o.reject));
    m.insert("null".into(), json!(o.null.name()));
    m.insert("alpha".into(), json!(o.alpha));
    m.insert("null_mean".into(), json!(o.null_mean));
    m.insert("null_sd".into(), json!(o.null_sd));
    m
}

struct MmdRun<'a> {
    x: &'a Points,
    y: &'a Points,
    kernel: &'a Kernel,
    params: &'a MmdParams,
}

impl WithBackend for MmdRun<'_> {
    type Output = Result<TestOutcome, bke_core::CoreError>;
    fn run<B: Backend>(self) -> Self::Output {
        bke_core::hypothesis::mmd_test::<B>(self.x, self.y, self.kernel, self.params)
    }
}

fn mmd(a: &MmdArgs) -> anyhow::Result<Value> {
    let params = MmdParams {
        statistic: MmdStatistic::parse(&a.statistic)?,
        null: NullDistribution::parse(&a.null)?,
        permutations: a.common.permutations,
        alpha: a.common.alpha,
        seed: a.common.seed,
    };
    params.check()?;
    let backend = BackendKind::parse(&a.common.backend).map_err(anyhow::Error::msg)?;
    let cols = a.columns.as_deref();
    let x = io::read_points(&a.x, cols)?;
    let y = io::read_points(&a.y, cols)?;
    at_least_two(&a.x, &x)?;
    at_least_two(&a.y, &y)?;
    x.check_dim(&format!("{} (number of columns)", a.y.display()), y.dim())?;
    let pooled = x.concat(&y)?;
    let rule = a.common.selection.rule(a.lengthscale, a.common.seed)?;
    let chosen = choose(&pooled, &rule, backend).context("choosing the lengthscale on the pooled sample")?;
    let kernel = Kernel::se(chosen.lengthscale)?;
    let outcome = backend.dispatch(MmdRun { x: &x, y: &y, kernel: &kernel, params: &params })??;
    let mut m = outcome_json(&outcome);
    m.insert("lengthscale".into(), json!(chosen.lengthscale));
    m.insert("selection".into(), json!(chosen.method));
    m.extend(selection_json(&chosen, ""));
    m.insert("statistic_kind".into(), json!(params.statistic.name()));
    m.insert("kernel".into(), json!("se"));
    m.insert("n_x".into(), json!(x.len()));
    m.insert("n_y".into(), json!(y.len()));
    if params.null.is_resampling() {
        m.insert("permutations".into(), json!(params.permutations));
        m.insert("seed".into(), json!(params.seed));
    }
    m.insert("backend".into(), json!(backend.name()));
    Ok(Value::Object(m))
}

fn hsic(a: &HsicArgs) -> anyhow::Result<Value> {
    let params = HsicParams {
        statistic: HsicStatistic::parse(&a.statistic)?,
        null: NullDistribution::parse(&a.null)?,
        permutations: a.common.permutations,
        alpha: a.common.alpha,
        seed: a.common.seed,
    };
    params.check()?;
    let x = io::read_points(&a.x, a.x_columns.as_deref())?;
    let y = io::read_points(&a.y, a.y_columns.as_deref())?;
    at_least_two(&a.x, &x)?;
    if x.len() != y.len() {
        bail!(
            "HSIC needs paired observations: {} has {} rows but {} has {}",
            a.x.display(),
            x.len(),
            a.y.display(),
            y.len()
        );
    }
    let backend = BackendKind::parse(&a.common.backend).map_err(anyhow::Error::msg)?;
    let rule_x = a.common.selection.rule(a.lengthscale_x, a.common.seed)?;
    let rule_y = a.common.selection.rule(a.lengthscale_y, a.common.seed)?;
    let cx = choose(&x, &rule_x, backend).context("choosing the lengthscale of x")?;
    let cy = choose(&y, &rule_y, backend).context("choosing the lengthscale of y")?;
    let (kx, ky) = (Kernel::se(cx.lengthscale)?, Kernel::se(cy.lengthscale)?);
    let outcome = bke_core::hypothesis::hsic_test(&x, &y, &kx, &ky, &params)?;
    let mut m = outcome_json(&outcome);
    m.insert("lengthscale_x".into(), json!(cx.lengthscale));
    m.insert("lengthscale_y".into(), json!(cy.lengthscale));
    m.insert("selection".into(), json!(cx.method));
    m.extend(selection_json(&cx, "_x"));
    m.extend(selection_json(&cy, "_y"));
    m.insert("statistic_kind".into(), json!(params.statistic.name()));
    m.insert("kernel".into(), json!("se"));
    m.insert("n".into(), json!(x.len()));
    if params.null.is_resampling() {
        m.insert("permutations".into(), json!(params.permutations));
        m.insert("seed".into(), json!(params.seed));
    }
    Ok(Value::Object(m))
}

/// `bke witness`: the witness function μ_P − μ_Q on a grid, with the BKE posterior mean and a
/// pointwise credible band (seed 000 Fig. 2E, 3), for one lengthscale (fixed, median or BKL on the
/// pooled sample) and τ².
///
/// New ways of computing the posterior (e.g. integrating θ and τ² out by NUTS) add a flag here and a
/// branch in [`witness`]; the output keeps the fields `mean`, `lower`, `upper`.
#[derive(Args, Clone, Debug)]
pub struct WitnessArgs {
    /// CSV file with the sample from P (header row).
    #[arg(long)]
    pub x: PathBuf,
    /// CSV file with the sample from Q (header row).
    #[arg(long)]
    pub y: PathBuf,
    /// CSV file with the grid points to evaluate the witness at (same columns).
    #[arg(long)]
    pub grid: PathBuf,
    /// Columns to use from all three files (comma-separated names; default: all).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Fixed lengthscale θ (instead of --select).
    #[arg(long, conflicts_with = "select", allow_negative_numbers = true)]
    pub lengthscale: Option<f64>,
    #[command(flatten)]
    pub selection: Selection,
    /// τ² of the BKE posterior of each embedding.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub tau2: f64,
    /// Prior measure of r_θ for the posterior: lebesgue (default), unit or gaussian:ETA.
    #[arg(long, default_value = "lebesgue")]
    pub prior: String,
    /// Credible level of the band, in (0, 1).
    #[arg(long, default_value_t = 0.8, allow_negative_numbers = true)]
    pub level: f64,
    /// Seed (BKL's landmark hold-out).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Linear-algebra backend (see `bke backends`).
    #[arg(long, default_value = "faer")]
    pub backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// `--bayes`: integrate the hyperparameters out by NUTS (bke-cli/src/sample.rs).
    #[command(flatten)]
    pub bayes: crate::sample::BayesWitnessArgs,
}

struct WitnessJob<'a> {
    x: &'a Points,
    y: &'a Points,
    grid: &'a Points,
    params: WitnessParams,
}

impl WithBackend for WitnessJob<'_> {
    type Output = Result<bke_core::hypothesis::Witness, bke_core::CoreError>;
    fn run<B: Backend>(self) -> Self::Output {
        bke_core::hypothesis::witness::<B>(self.x, self.y, self.grid, &self.params)
    }
}

/// Runs `bke witness`.
pub fn run_witness(args: WitnessArgs) -> anyhow::Result<()> {
    let out = with_threads(args.threads, || witness(&args))?;
    io::emit(&out)
}

/// The `bke witness` JSON: `mean`, `lower`, `upper` (+ `sd`, `empirical`, and what was used).
pub fn witness(a: &WitnessArgs) -> anyhow::Result<Value> {
    let backend = BackendKind::parse(&a.backend).map_err(anyhow::Error::msg)?;
    let cols = a.columns.as_deref();
    let x = io::read_points(&a.x, cols)?;
    let y = io::read_points(&a.y, cols)?;
    let grid = io::read_points(&a.grid, cols)?;
    at_least_two(&a.x, &x)?;
    at_least_two(&a.y, &y)?;
    x.check_dim(&format!("{} (number of columns)", a.y.display()), y.dim())?;
    x.check_dim(&format!("{} (number of columns)", a.grid.display()), grid.dim())?;
    let prior = EmbeddingPrior::parse(&a.prior)?;
    if a.bayes.bayes {
        return crate::sample::bayes_witness(&a.bayes, x, y, grid, a.tau2, prior, a.level, a.seed, backend);
    }
    // validate the cheap parameters before a possibly slow selection
    WitnessParams { lengthscale: 1.0, tau2: a.tau2, prior, level: a.level }.check()?;
    let rule = a.selection.rule(a.lengthscale, a.seed)?;
    let chosen =
        choose(&x.concat(&y)?, &rule, backend).context("choosing the lengthscale on the pooled sample")?;
    let params = WitnessParams { lengthscale: chosen.lengthscale, tau2: a.tau2, prior, level: a.level };
    let w = backend.dispatch(WitnessJob { x: &x, y: &y, grid: &grid, params })??;
    let mut m = serde_json::Map::new();
    m.insert("mean".into(), json!(w.mean));
    m.insert("lower".into(), json!(w.lower));
    m.insert("upper".into(), json!(w.upper));
    m.insert("sd".into(), json!(w.sd));
    m.insert("empirical".into(), json!(w.empirical));
    m.insert("level".into(), json!(a.level));
    m.insert("lengthscale".into(), json!(chosen.lengthscale));
    m.insert("selection".into(), json!(chosen.method));
    m.extend(selection_json(&chosen, ""));
    m.insert("tau2".into(), json!(a.tau2));
    m.insert("prior".into(), json!(prior.name()));
    m.insert("posterior".into(), json!("bke"));
    m.insert("n_x".into(), json!(x.len()));
    m.insert("n_y".into(), json!(y.len()));
    m.insert("backend".into(), json!(backend.name()));
    Ok(Value::Object(m))
}
