//! The kernel tests (`bke test mmd`, `bke test hsic`; seed 000 §2.2, §5) on the library estimators:
//! `MmdParams`/`HsicParams` → `check` → `fit::<B>` → `test::<B>`. Each call returns the report's
//! JSON text (the CLI's JSON: the Python `to_dict()`) and the resampled null draws. The keywords are
//! the CLI's flags with dashes as underscores; the kernel-choice rule is parsed by the library
//! ([`SelectRule::parse`], [`LengthscaleSelection::validate`]), as the CLI does.
//!
//! For `bke.dask`: [`mmd_null_draws`] computes a range of the permutation null's draws on a worker
//! (the kernel fixed to the lengthscale chosen on the client), and [`mmd_test`] with `null_draws`
//! finishes the test from the concatenated draws ([`bke_core::hypothesis::FittedMmd::test_with_null`]).

use crate::convert::{array1, points};
use crate::exec::{Exec, Failure, add_functions, run_job};
use bke_core::embedding::EmbeddingPrior;
use bke_core::hypothesis::select::{SelectRule, TestKind};
use bke_core::hypothesis::{
    AggParams, BklParams, HsicParams, HsicStatistic, LengthscaleSelection, MmdParams, MmdStatistic,
    NullDistribution,
};
use bke_core::{Params, Progress, TwoSamples, check_positive};
use bke_linalg::Backend;
use numpy::{PyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use serde::Serialize;

/// Registers the test functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, mmd_test, hsic_test, mmd_null_draws)
}

/// The kernel-choice keywords shared by both tests (the CLI's `Selection` flags), passed as a dict.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Selection {
    select: String,
    median_convention: String,
    bkl_landmarks: usize,
    bkl_tau2: f64,
    bkl_prior: String,
    agg_weights: String,
    agg_kernels: String,
}

impl Selection {
    /// The rule: a fixed lengthscale when given, else the named rule.
    fn rule(&self, fixed: Option<f64>, seed: u64, test: TestKind) -> Result<LengthscaleSelection, Failure> {
        if let Some(l) = fixed {
            check_positive("lengthscale", l)?;
            return Ok(LengthscaleSelection::fixed(l));
        }
        // Field order = evaluation order: the rule's name is checked last, as it always was.
        let selection = LengthscaleSelection {
            fixed: None,
            median_convention: self.median_convention.parse()?,
            bkl: BklParams {
                landmarks: self.bkl_landmarks,
                tau2: self.bkl_tau2,
                prior: EmbeddingPrior::parse(&self.bkl_prior)?,
                seed,
            },
            agg: AggParams { families: self.agg_kernels.parse()?, weights: self.agg_weights.parse()? },
            rule: SelectRule::parse(&self.select, test)?,
        };
        selection.validate(test)?;
        Ok(selection)
    }
}

/// A test's report as JSON text with its resampled null draws.
type ReportOut = (String, Vec<f64>);

fn json<T: Serialize>(report: &T) -> Result<String, Failure> {
    serde_json::to_string(report).map_err(|e| Failure::Runtime(format!("cannot encode the report: {e}")))
}

/// The MMD test with backend `B`, finished from `null_draws` when given.
fn mmd_report<B: Backend>(
    params: &MmdParams,
    data: &TwoSamples,
    null_draws: Option<Vec<f64>>,
    progress: &dyn Progress,
) -> Result<ReportOut, Failure> {
    let fitted = params.check()?.fit_with_progress::<B>(data, progress)?;
    let report = match null_draws {
        Some(null) => fitted.test_with_null::<B>(null)?,
        None => fitted.test_with_progress::<B>(progress)?,
    };
    Ok((json(&report)?, report.outcome.null_samples.clone()))
}

/// The two-sample data after the CLI's checks (at least 2 rows each, same columns).
fn two_samples(x: &PyReadonlyArray2<'_, f64>, y: &PyReadonlyArray2<'_, f64>) -> Result<TwoSamples, Failure> {
    let (x, y) = (points("x", x)?, points("y", y)?);
    Ok(TwoSamples { x, y })
}

/// `bke test mmd`: `(report JSON, null draws)`. With `null_draws` (the permutation null computed
/// elsewhere by [`mmd_null_draws`]), the test is finished from them.
#[pyfunction]
#[pyo3(signature = (x, y, *, lengthscale, selection, statistic, null, permutations, alpha, seed, null_draws, backend, n_jobs, dense = false))]
#[allow(clippy::too_many_arguments)]
fn mmd_test(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray2<'_, f64>,
    lengthscale: Option<f64>,
    selection: Selection,
    statistic: &str,
    null: &str,
    permutations: usize,
    alpha: f64,
    seed: u64,
    null_draws: Option<Vec<f64>>,
    backend: &str,
    n_jobs: Option<i64>,
    dense: bool,
) -> PyResult<ReportOut> {
    let exec = Exec::new(backend, n_jobs)?;
    let params = MmdParams {
        statistic: MmdStatistic::parse(statistic).map_err(Failure::from)?,
        null: NullDistribution::parse(null).map_err(Failure::from)?,
        permutations,
        alpha,
        seed,
        selection: selection.rule(lengthscale, seed, TestKind::TwoSample)?,
        dense,
    };
    let data = two_samples(&x, &y)?;
    run_job!(exec, py, |B, progress| mmd_report::<B>(&params, &data, null_draws, progress))
}

/// Draws `start..stop` of the permutation null of the MMD test with the Gaussian kernel of
/// `lengthscale` (the one chosen on the client): a piece of the null for a Dask worker.
#[pyfunction]
#[pyo3(signature = (x, y, *, lengthscale, statistic, seed, start, stop, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn mmd_null_draws<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray2<'py, f64>,
    lengthscale: f64,
    statistic: &str,
    seed: u64,
    start: usize,
    stop: usize,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let exec = Exec::new(backend, n_jobs)?;
    check_positive("lengthscale", lengthscale).map_err(Failure::from)?;
    let params = MmdParams {
        statistic: MmdStatistic::parse(statistic).map_err(Failure::from)?,
        permutations: stop.max(1),
        seed,
        selection: LengthscaleSelection::fixed(lengthscale),
        ..MmdParams::default()
    };
    let data = two_samples(&x, &y)?;
    let range = start..stop.max(start);
    let draws =
        run_job!(exec, py, |B, _progress| Ok(params.check()?.fit::<B>(&data)?.null_draws::<B>(range)?))?;
    Ok(array1(py, draws))
}

/// The HSIC test with backend `B`.
fn hsic_report<B: Backend>(
    params: &HsicParams,
    data: &TwoSamples,
    progress: &dyn Progress,
) -> Result<ReportOut, Failure> {
    let fitted = params.check()?.fit_with_progress::<B>(data, progress)?;
    let report = fitted.test_with_progress::<B>(progress)?;
    Ok((json(&report)?, report.outcome.null_samples.clone()))
}

/// `bke test hsic`: `(report JSON, null draws)`.
#[pyfunction]
#[pyo3(signature = (x, y, *, lengthscale_x, lengthscale_y, selection, statistic, null, permutations, alpha, seed, backend, n_jobs, dense = false))]
#[allow(clippy::too_many_arguments)]
fn hsic_test(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray2<'_, f64>,
    lengthscale_x: Option<f64>,
    lengthscale_y: Option<f64>,
    selection: Selection,
    statistic: &str,
    null: &str,
    permutations: usize,
    alpha: f64,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
    dense: bool,
) -> PyResult<ReportOut> {
    let exec = Exec::new(backend, n_jobs)?;
    let test = TestKind::Independence;
    let params = HsicParams {
        statistic: HsicStatistic::parse(statistic).map_err(Failure::from)?,
        null: NullDistribution::parse(null).map_err(Failure::from)?,
        permutations,
        alpha,
        seed,
        selection: selection.rule(lengthscale_x, seed, test)?,
        selection_y: lengthscale_y.map(|l| selection.rule(Some(l), seed, test)).transpose()?,
        dense,
    };
    let data = two_samples(&x, &y)?;
    run_job!(exec, py, |B, progress| hsic_report::<B>(&params, &data, progress))
}
