//! ML-II of the BKE lengthscale on data held elsewhere (`bke.dask.KernelEmbedding`): the marginal
//! pseudolikelihood (seed 000 eq. (15)) is a sum over data points, so each objective evaluation
//! asks Python for the per-chunk [`PartialStats`] (computed on the Dask workers by
//! [`embedding_partial`]), merges them in chunk order and finishes the `O(m³)` step here
//! ([`bke_core::embedding::learn_from_stats`], the same scan and polish as the in-memory fit).
//! The helpers [`landmark_indices`], [`median_subsample`] and [`median_distance`] let the Python
//! side gather exactly the rows the in-memory fit would use.

use crate::convert::{array1, points, values};
use crate::embedding::{bke_params, fitted_dict};
use crate::exec::{Exec, Failure, add_functions, run_job};
use bke_core::embedding::{
    EmbeddingParams, EmbeddingPrior, LengthscaleGrid, PartialStats, PseudolikelihoodPlan,
    check_column_ranges, learn_from_stats,
};
use bke_core::{CoreError, Params, Points, Progress};
use bke_linalg::{Backend, BackendKind};
use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// Registers the chunked-fit functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(
        m,
        embedding_partial,
        embedding_fit_chunked,
        landmark_indices,
        median_subsample,
        median_distance,
        default_num_landmarks
    )
}

/// The partial statistics of the data chunk `x` at landmarks `z` ([`PartialStats::to_vec`]).
#[pyfunction]
#[pyo3(signature = (x, z, *, lengthscales, tau2, prior, jacobian, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn embedding_partial<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray2<'py, f64>,
    lengthscales: PyReadonlyArray1<'py, f64>,
    tau2: f64,
    prior: &str,
    jacobian: bool,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let exec = Exec::new(BackendKind::default_kind().name(), n_jobs)?;
    let params = bke_params(values(&lengthscales)?, tau2, prior, jacobian)?;
    let (x, z) = (points_or_empty("X chunk", &x)?, points("landmarks", &z)?);
    let partial = exec.run(py, move |_| Ok(PseudolikelihoodPlan::new(&z, &params)?.partial(&x)?.to_vec()))?;
    Ok(array1(py, partial))
}

/// A chunk's points; a chunk may be empty (every row a landmark).
fn points_or_empty(what: &str, a: &PyReadonlyArray2<'_, f64>) -> Result<Points, Failure> {
    use numpy::PyUntypedArrayMethods;
    if a.shape()[0] == 0 {
        return Ok(Points::new(what, Vec::new(), a.shape()[1].max(1))?);
    }
    points(what, a)
}

/// The data of a chunked fit: the Python callback `stats(lengthscales, tau2)`.
struct ChunkStats(Py<PyAny>);

impl ChunkStats {
    /// Calls the Python `stats(lengthscales, tau2)` and merges the chunks' statistics in order;
    /// a Python exception is kept in `raised` (and stops the fit).
    fn stats(
        &self,
        plan: &PseudolikelihoodPlan,
        raised: &Mutex<Option<PyErr>>,
    ) -> Result<PartialStats, CoreError> {
        let p = plan.params();
        let call = Python::attach(|py| -> PyResult<Vec<Vec<f64>>> {
            let ls = PyArray1::from_vec(py, p.lengthscales.clone());
            self.0.call1(py, (ls, p.tau2))?.extract(py)
        });
        let chunks = call.map_err(|e| {
            *raised.lock().expect("not poisoned") = Some(e);
            CoreError::Cancelled
        })?;
        let mut total = plan.empty_stats();
        for c in &chunks {
            total.merge(&PartialStats::from_slice(c)?)?;
        }
        Ok(total)
    }
}

/// ML-II with backend `B` on the statistics `data` returns; a Python exception it raised is raised
/// again.
fn fit_chunked<B: Backend>(
    data: &ChunkStats,
    landmarks: &Points,
    median: f64,
    params: &EmbeddingParams,
    progress: &dyn Progress,
) -> Result<bke_core::embedding::Learned, Failure> {
    let raised = Mutex::new(None);
    let valid = params.check()?;
    let source = |plan: &PseudolikelihoodPlan| data.stats(plan, &raised);
    let out = learn_from_stats::<B>(&valid, landmarks, median, &source, progress);
    if let Some(e) = raised.lock().expect("not poisoned").take() {
        return Err(Failure::Python(e));
    }
    Ok(out?)
}

/// ML-II (`bke embed fit`) on data reached through `stats(lengthscales, tau2)` → list of per-chunk
/// encoded [`PartialStats`] (in chunk order). `n` points in all (landmarks included), `ranges` the
/// `(min, max)` of each column, `median` the median heuristic of the input, `landmarks` the
/// held-out (or given) landmarks. Returns the dict of `embedding_fit` (without the posterior).
#[pyfunction]
#[pyo3(signature = (landmarks, stats, *, n, n_data, ranges, median, landmark_indices, tau2, learn_tau2,
    prior, jacobian, ard, grid, grid_points, max_starts, seed, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn embedding_fit_chunked<'py>(
    py: Python<'py>,
    landmarks: PyReadonlyArray2<'py, f64>,
    stats: Py<PyAny>,
    n: usize,
    n_data: usize,
    ranges: Vec<(f64, f64)>,
    median: f64,
    landmark_indices: Option<Vec<usize>>,
    tau2: f64,
    learn_tau2: bool,
    prior: &str,
    jacobian: bool,
    ard: bool,
    grid: Option<(f64, f64, usize)>,
    grid_points: usize,
    max_starts: usize,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let exec = Exec::new(backend, n_jobs)?;
    if n < 2 {
        return Err(Failure::Value(format!("X has {n} row(s); ML-II needs at least 2")).into());
    }
    check_column_ranges(&ranges, n, jacobian).map_err(Failure::from)?;
    let landmarks = points("landmarks", &landmarks)?;
    let params = EmbeddingParams {
        num_landmarks: landmarks.len(),
        landmarks: None,
        tau2,
        learn_tau2,
        prior: EmbeddingPrior::parse(prior).map_err(Failure::from)?,
        jacobian,
        ard,
        grid: grid.map(|(min, max, points)| LengthscaleGrid { min, max, points }),
        grid_points,
        max_starts,
        seed,
    };
    let (data, held_out) = (ChunkStats(stats), landmarks.clone());
    let r = run_job!(exec, py, |B, progress| fit_chunked::<B>(&data, &held_out, median, &params, progress))?;
    fitted_dict(py, &r, median, &landmarks, landmark_indices, n_data)
}

/// The rows `hold_out_landmarks` takes from `n` points in `dim` dimensions (ascending).
#[pyfunction]
fn landmark_indices(n: usize, dim: usize, m: usize, seed: u64) -> PyResult<Vec<usize>> {
    Ok(bke_core::embedding::landmark_indices(n, dim, m, seed).map_err(Failure::from)?)
}

/// The rows of `n` points whose pairwise distances give the median heuristic.
#[pyfunction]
fn median_subsample(n: usize) -> Vec<usize> {
    bke_core::hypothesis::median::median_subsample(n)
}

/// The median pairwise distance of the rows of `x`.
#[pyfunction]
fn median_distance(x: PyReadonlyArray2<'_, f64>) -> PyResult<f64> {
    Ok(bke_core::median_distance(&points("X", &x)?).map_err(Failure::from)?)
}

/// The default number of held-out landmarks for `n` points in `dim` dimensions.
#[pyfunction]
fn default_num_landmarks(n: usize, dim: usize) -> usize {
    bke_core::embedding::default_num_landmarks(n, dim)
}
