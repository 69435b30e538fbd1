//! `bke test mmd`, `bke test hsic`: kernel two-sample and independence tests, and `bke witness`: the
//! witness function μ_P − μ_Q with BKE posterior bands. A thin layer over
//! [`bke_core::hypothesis`]: the library chooses the kernels and runs the test, and its report
//! serialises to the JSON printed here.
//!
//! `--select`: `median` (default; `--median-convention muandet` θ = median distance, `mooij` θ =
//! median/√2, seed 000 §2.4), `bkl` (ML-II on the BKE marginal pseudolikelihood: on the pooled sample
//! for MMD and the witness, on each variable for HSIC), the aggregated tests `mmdagg` (MMD) /
//! `hsicagg` (HSIC), `fuse` (MMD-FUSE, MMD only) and `bkl-bayes` (a kernel collection weighted half by the
//! BKE posterior over the lengthscale, half uniformly over the MMDAgg ∪ MMD-FUSE collection for MMD and
//! the HSICAgg bandwidths for HSIC; for MMD it is MMD-FUSE's statistic with those weights as its prior).

use crate::exec::{Bar, ExecArgs, choice, run_with_backend};
use anyhow::bail;
use bke_core::embedding::EmbeddingPrior;
use bke_core::hypothesis::report::SelectionFields;
use bke_core::hypothesis::select::{SelectRule, TestKind};
use bke_core::hypothesis::{
    AggParams, BandwidthWeights, BklParams, Families, HsicParams, HsicStatistic, LengthscaleSelection,
    MedianConvention, MmdParams, MmdStatistic, NullDistribution, WitnessParams,
};
use bke_core::{Choice, Params, Points, TwoSamples};
use bke_io as io;
use bke_linalg::Backend;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The kernel tests.
#[derive(Subcommand)]
pub enum TestCommand {
    /// Two-sample test H₀: P = Q with the maximum mean discrepancy (MMD²).
    Mmd(Box<MmdArgs>),
    /// Independence test H₀: X ⫫ Y with the Hilbert–Schmidt independence criterion (HSIC).
    Hsic(Box<HsicArgs>),
}

/// How the lengthscale is chosen (shared by the tests and the witness).
#[derive(Args, Clone, Debug)]
pub struct Selection {
    /// How to choose the kernel(s) when no lengthscale is given [default: bkl-bayes].
    #[arg(long, value_parser = choice::<SelectRule>())]
    pub select: Option<SelectRule>,
    /// Median-heuristic convention.
    #[arg(long, value_parser = choice::<MedianConvention>(), default_value = MedianConvention::default().name())]
    pub median_convention: MedianConvention,
    /// BKL / BKL-Bayes: number of landmarks held out at random (default 100; max(D, n/5) when n ≤ 100).
    #[arg(long, default_value_t = BklParams::default().landmarks)]
    pub bkl_landmarks: usize,
    /// BKL / BKL-Bayes: τ² of the BKE likelihood (the seed uses 1).
    #[arg(long, default_value_t = BklParams::default().tau2)]
    pub bkl_tau2: f64,
    /// BKL / BKL-Bayes: prior measure of r_θ: lebesgue (default), unit or gaussian:ETA.
    #[arg(long, default_value_t = BklParams::default().prior.name())]
    pub bkl_prior: String,
    /// mmdagg / hsicagg: weights of the bandwidths: uniform, centred, increasing or decreasing.
    #[arg(long, default_value = AggParams::default().weights.name())]
    pub agg_weights: String,
    /// mmdagg / fuse: kernel families.
    #[arg(long, value_parser = choice::<Families>(), default_value = Families::default().name())]
    pub agg_kernels: Families,
}

impl Selection {
    /// The selection rule for a fixed lengthscale (if any) and these options; `seed` seeds BKL's
    /// landmark hold-out. `two_sample` tells which aggregate `--select` may name.
    pub fn rule(
        &self,
        fixed: Option<f64>,
        seed: u64,
        two_sample: bool,
    ) -> anyhow::Result<LengthscaleSelection> {
        if let Some(l) = fixed {
            bke_core::check_positive("--lengthscale", l)?;
            return Ok(LengthscaleSelection::fixed(l));
        }
        let selection = LengthscaleSelection {
            rule: self.select.unwrap_or_default(),
            fixed: None,
            median_convention: self.median_convention,
            bkl: BklParams {
                landmarks: self.bkl_landmarks,
                tau2: self.bkl_tau2,
                prior: EmbeddingPrior::parse(&self.bkl_prior)?,
                seed,
            },
            agg: AggParams {
                families: self.agg_kernels,
                weights: BandwidthWeights::parse(&self.agg_weights)?,
            },
        };
        let test = if two_sample { TestKind::TwoSample } else { TestKind::Independence };
        selection.validate(test)?;
        Ok(selection)
    }
}

/// Options shared by both tests.
#[derive(Args, Clone, Debug)]
pub struct Common {
    #[command(flatten)]
    pub selection: Selection,
    /// Number of permutations / bootstrap draws B (mmdagg, hsicagg: B₁ = B₂ = B).
    #[arg(long, default_value_t = MmdParams::default().permutations)]
    pub permutations: usize,
    /// Test level α in (0, 1).
    #[arg(long, default_value_t = MmdParams::default().alpha, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Seed of the resampling streams (the p-value does not depend on --threads).
    #[arg(long, default_value_t = MmdParams::default().seed)]
    pub seed: u64,
    #[command(flatten)]
    pub exec: ExecArgs,
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
    #[arg(long, default_value = MmdParams::default().statistic.name())]
    pub statistic: String,
    /// Null distribution: permutation (default), gamma, wild (equal sizes), normal (linear only).
    #[arg(long, default_value = MmdParams::default().null.name())]
    pub null: String,
    /// Aggregated tests: dense Gram matrices at every size (the published MMDAgg/MMD-FUSE statistics,
    /// O(N²B) per kernel) instead of Nyström factors above 512 pooled points.
    #[arg(long)]
    pub dense: bool,
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
    #[arg(long, default_value = HsicParams::default().statistic.name())]
    pub statistic: String,
    /// Null distribution: permutation (default; exact), wild (pairs of pairs) or gamma (an
    /// approximation: at n = 100 it rejects 5.4% (biased) and 6.1% (unbiased) of independent data
    /// sets at α = 0.05, `cargo xtask repro level`).
    #[arg(long, default_value = HsicParams::default().null.name())]
    pub null: String,
    /// Aggregated tests: dense Gram matrices at every size (the published HSICAgg statistics,
    /// O(n²B) per kernel pair) instead of Nyström factors above 256 observations.
    #[arg(long)]
    pub dense: bool,
    #[command(flatten)]
    pub common: Common,
}

/// Runs a `bke test …` command.
pub fn run(cmd: TestCommand) -> anyhow::Result<()> {
    let out = match cmd {
        TestCommand::Mmd(a) => mmd(&a)?,
        TestCommand::Hsic(a) => hsic(&a)?,
    };
    io::emit(&out)
}

/// Errors unless the file gave at least 2 points.
pub fn at_least_two(path: &Path, p: &Points) -> anyhow::Result<()> {
    if p.len() < 2 {
        bail!("{}: {} data row(s); the test needs at least 2", path.display(), p.len());
    }
    Ok(())
}

/// Fits and runs the MMD test with backend `B`, printing progress.
fn mmd_report<B: Backend>(params: &MmdParams, data: &TwoSamples) -> anyhow::Result<Value> {
    let bar = Bar::new("mmd");
    let fitted = params.check()?.fit_with_progress::<B>(data, &bar)?;
    let report = fitted.test_with_progress::<B>(&bar)?;
    bar.finish();
    Ok(serde_json::to_value(report)?)
}

/// Fits and runs the HSIC test with backend `B`, printing progress.
fn hsic_report<B: Backend>(params: &HsicParams, data: &TwoSamples) -> anyhow::Result<Value> {
    let bar = Bar::new("hsic");
    let fitted = params.check()?.fit_with_progress::<B>(data, &bar)?;
    let report = fitted.test_with_progress::<B>(&bar)?;
    bar.finish();
    Ok(serde_json::to_value(report)?)
}

fn mmd(a: &MmdArgs) -> anyhow::Result<Value> {
    let c = &a.common;
    let params = MmdParams {
        statistic: MmdStatistic::parse(&a.statistic)?,
        null: NullDistribution::parse(&a.null)?,
        permutations: c.permutations,
        alpha: c.alpha,
        seed: c.seed,
        selection: c.selection.rule(a.lengthscale, c.seed, true)?,
        dense: a.dense,
    };
    params.check()?;
    c.exec.kind()?;
    let cols = a.columns.as_deref();
    let (x, y) = (io::read_points(&a.x, cols)?, io::read_points(&a.y, cols)?);
    at_least_two(&a.x, &x)?;
    at_least_two(&a.y, &y)?;
    x.check_dim(&format!("{} (number of columns)", a.y.display()), y.dim())?;
    let data = TwoSamples { x, y };
    run_with_backend!(c.exec, B => mmd_report::<B>(&params, &data))
}

fn hsic(a: &HsicArgs) -> anyhow::Result<Value> {
    let c = &a.common;
    let params = HsicParams {
        statistic: HsicStatistic::parse(&a.statistic)?,
        null: NullDistribution::parse(&a.null)?,
        permutations: c.permutations,
        alpha: c.alpha,
        seed: c.seed,
        selection: c.selection.rule(a.lengthscale_x, c.seed, false)?,
        selection_y: a.lengthscale_y.map(|l| c.selection.rule(Some(l), c.seed, false)).transpose()?,
        dense: a.dense,
    };
    params.check()?;
    c.exec.kind()?;
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
    let data = TwoSamples { x, y };
    run_with_backend!(c.exec, B => hsic_report::<B>(&params, &data))
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
    #[arg(long, default_value_t = WitnessParams::default().tau2, allow_negative_numbers = true)]
    pub tau2: f64,
    /// Prior measure of r_θ for the posterior: lebesgue (default), unit or gaussian:ETA.
    #[arg(long, default_value_t = WitnessParams::default().prior.name())]
    pub prior: String,
    /// Credible level of the band, in (0, 1).
    #[arg(long, default_value_t = WitnessParams::default().level, allow_negative_numbers = true)]
    pub level: f64,
    /// Seed (BKL's landmark hold-out).
    #[arg(long, default_value_t = BklParams::default().seed)]
    pub seed: u64,
    #[command(flatten)]
    pub exec: ExecArgs,
    /// `--bayes`: integrate the hyperparameters out by NUTS (bke-cli/src/sample.rs).
    #[command(flatten)]
    pub bayes: crate::sample::BayesWitnessArgs,
    #[command(flatten)]
    pub out: crate::table_out::OutArgs,
}

/// The witness JSON with backend `B`.
fn witness_json<B: Backend>(
    params: &WitnessParams,
    data: &TwoSamples,
    grid: &Points,
) -> anyhow::Result<Value> {
    let bar = Bar::new("witness");
    let fitted = params.check()?.fit_with_progress::<B>(data, &bar)?;
    let w = fitted.witness::<B>(grid)?;
    bar.finish();
    let mut m = json!({
        "mean": w.mean, "lower": w.lower, "upper": w.upper, "sd": w.sd, "empirical": w.empirical,
        "level": params.level,
        "lengthscale": fitted.lengthscale(),
        "selection": params.selection.name(),
        "tau2": params.tau2,
        "prior": params.prior.name(),
        "posterior": "bke",
        "n_x": data.x.len(),
        "n_y": data.y.len(),
        "backend": B::name(),
    });
    if let Value::Object(fields) = serde_json::to_value(SelectionFields::new(fitted.selected(), "", true))? {
        m.as_object_mut().expect("object").extend(fields);
    }
    Ok(m)
}

/// Runs `bke witness`.
pub fn run_witness(args: WitnessArgs) -> anyhow::Result<()> {
    let mut out = witness(&args)?;
    let rows = out["mean"].as_array().map_or(0, Vec::len); // one entry per grid point
    args.out.divert(&mut out, rows, &["mean", "lower", "upper", "sd", "empirical"])?;
    io::emit(&out)
}

/// The `bke witness` JSON: `mean`, `lower`, `upper` (+ `sd`, `empirical`, and what was used).
pub fn witness(a: &WitnessArgs) -> anyhow::Result<Value> {
    let backend = a.exec.kind()?;
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
        return a.exec.install(|| {
            crate::sample::bayes_witness(&a.bayes, x, y, grid, a.tau2, prior, a.level, a.seed, backend)
        });
    }
    let params = WitnessParams {
        selection: a.selection.rule(a.lengthscale, a.seed, true)?,
        tau2: a.tau2,
        prior,
        level: a.level,
    };
    params.check()?;
    let data = TwoSamples { x, y };
    run_with_backend!(a.exec, B => witness_json::<B>(&params, &data, &grid))
}
