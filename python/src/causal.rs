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

/// `bke causal pc`: the CPDAG, every test and its p-value, as JSON text.
#[pyfunction]
#[pyo3(signature = (data, *, names, time, prewhiten, alpha, orientation, max_condition, test, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn causal_pc(
    py: Python<'_>,
    data: PyReadonlyArray2<'_, f64>,
    names: Vec<String>,
    time: Option<PyReadonlyArray1<'_, f64>>,
    prewhiten: &str,
    alpha: f64,
    orientation: &str,
    max_condition: Option<usize>,
    test: TestOptions,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<String> {
    let exec = Exec::new(backend, n_jobs)?;
    let mut params = PcParams { alpha, max_condition, ci: test.params()?, ..PcParams::default() };
    params.prewhiten = Prewhitening::parse(prewhiten).map_err(Failure::from)?;
    params.orientation = Orientation::parse(orientation).map_err(Failure::from)?;
    let time = time.as_ref().map(values).transpose()?;
    let data = CausalData::new(names, points("data", &data)?, time).map_err(Failure::from)?;
    run_job!(exec, py, |B, progress| pc_report::<B>(&params, &data, progress))
}

/// The conditional-independence test's keywords shared by [`causal_pc`] and [`ci_test`] (the
/// CLI's flags), passed as a dict.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct TestOptions {
    ci: String,
    kci_null: String,
    kci_z: String,
    kci_hyper_points: usize,
    /// `None`: the test's own default kernel choice ([`CiMethod::default_selection`]), as in the CLI.
    select: Option<String>,
    permutations: usize,
    seed: u64,
}

impl TestOptions {
    /// The test's settings, each name parsed by the library.
    fn params(&self) -> Result<CiParams, Failure> {
        let mut params = CiParams { method: CiMethod::parse(&self.ci)?, ..CiParams::default() };
        let mut selection = match &self.select {
            Some(s) => LengthscaleSelection::new(SelectRule::parse(s, TestKind::Independence)?),
            None => params.method.default_selection(),
        };
        selection.bkl.seed = self.seed;
        params.selection = selection;
        params.kci.null = KciNull::parse(&self.kci_null)?;
        params.kci.z_rule = ZRule::parse(&self.kci_z)?;
        params.kci.hyper_points = self.kci_hyper_points;
        params.hsic.permutations = self.permutations;
        params.hsic.seed = self.seed;
        Ok(params)
    }
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
#[pyo3(signature = (data, *, alpha, test, backend, n_jobs))]
fn ci_test(
    py: Python<'_>,
    data: PyReadonlyArray2<'_, f64>,
    alpha: f64,
    test: TestOptions,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<String> {
    let exec = Exec::new(backend, n_jobs)?;
    let params = test.params()?;
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
