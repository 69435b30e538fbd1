//! `bke causal pc` (seed 000 §5, Fig. 4) on the library estimator: [`PcParams`] → `check` →
//! `fit::<B>` on [`CausalData`]. Returns the result's JSON ([`bke_core::causal::PcResult`], the
//! CLI's JSON less the fields naming its input file). The keywords are the CLI's flags with dashes
//! as underscores; names are parsed by the library, as the CLI does. [`ci_test`] runs one of PC's
//! conditional-independence tests on its own ([`CiParams`] → [`bke_core::causal::CiTester`]).

use crate::convert::{points, values};
use crate::exec::{Exec, Failure, add_functions, run_job};
use bke_core::causal::{CausalData, CiMethod, CiParams, KciNull, Orientation, PcParams, Prewhitening, ZRule};
use bke_core::hypothesis::LengthscaleSelection;
use bke_core::hypothesis::select::{SelectRule, TestKind};
use bke_core::{Params, Points, Progress};
use bke_linalg::Backend;
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use serde::Serialize;

/// Registers the causal-discovery functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, causal_pc, ci_test)
}

/// The PC algorithm's result as JSON text, with backend `B`.
fn pc_report<B: Backend>(
    params: &PcParams,
    data: &CausalData,
    progress: &dyn Progress,
) -> Result<String, Failure> {
    let result = params.check()?.fit_with_progress::<B>(data, progress)?;
    serde_json::to_string(&result).map_err(|e| Failure::Runtime(format!("cannot encode the result: {e}")))
}

/// `bke causal pc`: the CPDAG, every test and its p-value, as JSON text. `select` `None` is the
/// test's own default kernel choice ([`CiMethod::default_selection`]), as in the CLI.
#[pyfunction]
#[pyo3(signature = (data, *, names, time, prewhiten, alpha, ci, kci_null, kci_z, kci_hyper_points, select, orientation, max_condition, permutations, seed, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn causal_pc(
    py: Python<'_>,
    data: PyReadonlyArray2<'_, f64>,
    names: Vec<String>,
    time: Option<PyReadonlyArray1<'_, f64>>,
    prewhiten: &str,
    alpha: f64,
    ci: &str,
    kci_null: &str,
    kci_z: &str,
    kci_hyper_points: usize,
    select: Option<&str>,
    orientation: &str,
    max_condition: Option<usize>,
    permutations: usize,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<String> {
    let exec = Exec::new(backend, n_jobs)?;
    let ci = ci_params(ci, kci_null, kci_z, kci_hyper_points, select, permutations, seed)?;
    let mut params = PcParams { alpha, max_condition, ci, ..PcParams::default() };
    params.prewhiten = Prewhitening::parse(prewhiten).map_err(Failure::from)?;
    params.orientation = Orientation::parse(orientation).map_err(Failure::from)?;
    let time = time.as_ref().map(values).transpose()?;
    let data = CausalData::new(names, points("data", &data)?, time).map_err(Failure::from)?;
    run_job!(exec, py, |B, progress| pc_report::<B>(&params, &data, progress))
}

/// The conditional-independence test's settings from the keywords shared by [`causal_pc`] and
/// [`ci_test`] (`select` `None`: the test's own default, [`CiMethod::default_selection`]).
fn ci_params(
    ci: &str,
    kci_null: &str,
    kci_z: &str,
    kci_hyper_points: usize,
    select: Option<&str>,
    permutations: usize,
    seed: u64,
) -> Result<CiParams, Failure> {
    let mut params = CiParams { method: CiMethod::parse(ci)?, ..CiParams::default() };
    let mut selection = match select {
        Some(s) => LengthscaleSelection::new(SelectRule::parse(s, TestKind::Independence)?),
        None => params.method.default_selection(),
    };
    selection.bkl.seed = seed;
    params.selection = selection;
    params.kci.null = KciNull::parse(kci_null)?;
    params.kci.z_rule = ZRule::parse(kci_z)?;
    params.kci.hyper_points = kci_hyper_points;
    params.hsic.permutations = permutations;
    params.hsic.seed = seed;
    Ok(params)
}

/// The outcome of [`ci_test`] (the Python `CiResult`'s fields).
#[derive(Serialize)]
struct CiReport {
    /// The test that ran: "kci", "rcit" or "gp-hsic".
    test: &'static str,
    statistic: f64,
    p_value: f64,
    alpha: f64,
    reject: bool,
    /// The kernel selection on the variables.
    selection: &'static str,
    /// The rule of the kernel on the conditioning set (KCI and RCIT).
    kci_z: &'static str,
    /// The lengthscales of the kernels on `x` and `y` (gp-hsic: on their residuals; for a mixture,
    /// its largest-weight kernel's).
    lengthscales: [f64; 2],
    observations: usize,
    /// Columns of the conditioning set.
    conditioning: usize,
}

/// One test `x ⫫ y | z` of PC (`z` `None`: `x ⫫ y`): `data` holds `x`, `y`, then the columns of `z`.
#[pyfunction]
#[pyo3(signature = (data, *, ci, kci_null, kci_z, kci_hyper_points, select, permutations, alpha, seed, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn ci_test(
    py: Python<'_>,
    data: PyReadonlyArray2<'_, f64>,
    ci: &str,
    kci_null: &str,
    kci_z: &str,
    kci_hyper_points: usize,
    select: Option<&str>,
    permutations: usize,
    alpha: f64,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<String> {
    let exec = Exec::new(backend, n_jobs)?;
    let params = ci_params(ci, kci_null, kci_z, kci_hyper_points, select, permutations, seed)?;
    bke_core::hypothesis::check_alpha(alpha).map_err(Failure::from)?;
    let data: Points = points("data", &data)?;
    let given: Vec<usize> = (2..data.dim()).collect();
    run_job!(exec, py, |B, _progress| {
        let tester = params.check()?.fit::<B>(&data)?;
        let out = tester.test::<B>(0, 1, &given)?;
        let report = CiReport {
            test: tester.method().name(),
            statistic: out.statistic,
            p_value: out.p_value,
            alpha,
            reject: out.p_value <= alpha,
            selection: tester.params().selection_name(),
            kci_z: tester.params().kci.z_rule.name(),
            lengthscales: out.lengthscales,
            observations: data.len(),
            conditioning: given.len(),
        };
        serde_json::to_string(&report).map_err(|e| Failure::Runtime(format!("cannot encode the result: {e}")))
    })
}
