//! `bke causal pc` (seed 000 §5, Fig. 4) on the library estimator: [`PcParams`] → `check` →
//! `fit::<B>` on [`CausalData`]. Returns the result's JSON ([`bke_core::causal::PcResult`], the
//! CLI's JSON less the fields naming its input file). The keywords are the CLI's flags with dashes
//! as underscores; names are parsed by the library, as the CLI does.

use crate::convert::{points, values};
use crate::exec::{Exec, Failure, add_functions, run_job};
use bke_core::causal::{CausalData, CiMethod, KciNull, Orientation, PcParams, Prewhitening, ZRule};
use bke_core::hypothesis::LengthscaleSelection;
use bke_core::hypothesis::select::{SelectRule, TestKind};
use bke_core::{Params, Progress};
use bke_linalg::Backend;
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

/// Registers the causal-discovery functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, causal_pc)
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
    let mut params = PcParams { alpha, max_condition, ..PcParams::default() };
    params.ci.method = CiMethod::parse(ci).map_err(Failure::from)?;
    let mut selection = match select {
        Some(s) => {
            LengthscaleSelection::new(SelectRule::parse(s, TestKind::Independence).map_err(Failure::from)?)
        }
        None => params.ci.method.default_selection(),
    };
    selection.bkl.seed = seed;
    params.ci.selection = selection;
    params.prewhiten = Prewhitening::parse(prewhiten).map_err(Failure::from)?;
    params.orientation = Orientation::parse(orientation).map_err(Failure::from)?;
    params.ci.kci.null = KciNull::parse(kci_null).map_err(Failure::from)?;
    params.ci.kci.z_rule = ZRule::parse(kci_z).map_err(Failure::from)?;
    params.ci.kci.hyper_points = kci_hyper_points;
    params.ci.hsic.permutations = permutations;
    params.ci.hsic.seed = seed;
    let time = time.as_ref().map(values).transpose()?;
    let data = CausalData::new(names, points("data", &data)?, time).map_err(Failure::from)?;
    run_job!(exec, py, |B, progress| pc_report::<B>(&params, &data, progress))
}
