//! `bke test mmd`, `bke test hsic`: kernel two-sample and independence tests with a fixed, median-
//! heuristic or learned lengthscale (squared exponential kernel `exp(−‖x − y‖²/(2θ²))`).
//!
//! The median heuristic's default convention is `muandet` (θ = median pairwise distance); `mooij` is
//! θ = median/√2 (seed 000 §2.4). Every output names the selection, the convention, the statistic and
//! the null it used.

use crate::io;
use anyhow::{Context, bail};
use bke_core::hypothesis::hsic::{HsicParams, HsicStatistic};
use bke_core::hypothesis::mmd::{MmdParams, MmdStatistic};
use bke_core::hypothesis::{MedianConvention, NullDistribution, TestOutcome, median_lengthscale};
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
}

impl Select {
    fn name(self) -> &'static str {
        match self {
            Select::Median => "median",
        }
    }
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

/// Options shared by both tests.
#[derive(Args, Clone, Debug)]
pub struct Common {
    /// How to choose a lengthscale that is not given: median (default).
    #[arg(long, value_enum)]
    pub select: Option<Select>,
    /// Median-heuristic convention.
    #[arg(long, value_enum, default_value = "muandet")]
    pub median_convention: Convention,
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

/// A chosen lengthscale and how it was chosen, for the JSON output.
pub struct Chosen {
    /// The lengthscale θ.
    pub lengthscale: f64,
    /// "fixed", "median", "bkl".
    pub selection: &'static str,
    /// Extra output fields describing the selection.
    pub details: serde_json::Map<String, Value>,
}

/// Chooses the lengthscale for `points`: the fixed one if given, else by `common.select`.
pub fn choose(points: &Points, fixed: Option<f64>, common: &Common) -> anyhow::Result<Chosen> {
    let mut details = serde_json::Map::new();
    if let Some(l) = fixed {
        bke_core::check_positive("--lengthscale", l)?;
        return Ok(Chosen { lengthscale: l, selection: "fixed", details });
    }
    let select = common.select.unwrap_or(Select::Median);
    match select {
        Select::Median => {
            let conv: MedianConvention = common.median_convention.into();
            let l = median_lengthscale(points, conv).context("median heuristic")?;
            details.insert("median_convention".into(), json!(conv.name()));
            Ok(Chosen { lengthscale: l, selection: select.name(), details })
        }
    }
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
    let chosen = choose(&pooled, a.lengthscale, &a.common)?;
    let kernel = Kernel::se(chosen.lengthscale)?;
    let outcome = backend.dispatch(MmdRun { x: &x, y: &y, kernel: &kernel, params: &params })??;
    let mut m = outcome_json(&outcome);
    m.insert("lengthscale".into(), json!(chosen.lengthscale));
    m.insert("selection".into(), json!(chosen.selection));
    m.extend(chosen.details);
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
    let cx = choose(&x, a.lengthscale_x, &a.common).context("lengthscale of x")?;
    let cy = choose(&y, a.lengthscale_y, &a.common).context("lengthscale of y")?;
    let (kx, ky) = (Kernel::se(cx.lengthscale)?, Kernel::se(cy.lengthscale)?);
    let outcome = bke_core::hypothesis::hsic_test(&x, &y, &kx, &ky, &params)?;
    let mut m = outcome_json(&outcome);
    m.insert("lengthscale_x".into(), json!(cx.lengthscale));
    m.insert("lengthscale_y".into(), json!(cy.lengthscale));
    m.insert("selection".into(), json!(cx.selection));
    m.extend(cx.details);
    m.insert("statistic_kind".into(), json!(params.statistic.name()));
    m.insert("kernel".into(), json!("se"));
    m.insert("n".into(), json!(x.len()));
    if params.null.is_resampling() {
        m.insert("permutations".into(), json!(params.permutations));
        m.insert("seed".into(), json!(params.seed));
    }
    Ok(Value::Object(m))
}
