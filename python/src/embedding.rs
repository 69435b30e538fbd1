//! Bayesian kernel embeddings (seed 000): ML-II kernel learning, the marginal pseudolikelihood
//! (eq. (15)) with its gradient, and the posterior of the embedding (eq. (7)–(8)). Stateless: the
//! Python class `bke.KernelEmbedding` keeps the fitted hyperparameters (so it pickles as plain
//! numbers and arrays) and passes them back in.

use crate::convert::{ArrayPair, array1, array2, points, points_array};
use crate::exec::{Exec, Failure, add_functions, fit, run_job};
use bke_core::bayes::{HyperPrior, SampleParams};
use bke_core::embedding::{
    BkeParams, BkePosterior, EmbeddingParams, EmbeddingPrior, Learned, LengthscaleGrid,
    default_num_landmarks, marginal_pseudolikelihood,
};
use bke_core::nuts::NutsParams;
use bke_core::{Params, Points, Predict};
use bke_linalg::Backend;
use numpy::PyArrayMethods;
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Registers the embedding functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, embedding_fit, embedding_log_marginal, embedding_posterior, embedding_sample)
}

/// The BKE hyperparameters from the Python keywords.
pub(crate) fn bke_params(
    lengthscales: Vec<f64>,
    tau2: f64,
    prior: &str,
    jacobian: bool,
) -> Result<BkeParams, Failure> {
    Ok(BkeParams { lengthscales, tau2, prior: EmbeddingPrior::parse(prior)?, jacobian })
}

/// ML-II: learns the lengthscale(s) (and optionally τ²) by maximising the marginal
/// pseudolikelihood; returns a dict of the fitted quantities.
#[pyfunction]
#[pyo3(signature = (x, *, num_landmarks, landmarks, tau2, learn_tau2, prior, jacobian, ard, grid, grid_points, max_starts, seed, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn embedding_fit<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    num_landmarks: Option<usize>,
    landmarks: Option<PyReadonlyArray2<'py, f64>>,
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
    let x = points("X", &x)?;
    let params = EmbeddingParams {
        num_landmarks: num_landmarks.unwrap_or_else(|| default_num_landmarks(x.len(), x.dim())),
        landmarks: landmarks.map(|z| points("landmarks", &z)).transpose()?,
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
    let r = run_job!(exec, py, |B, progress| fit::<B, _>(&params, &x, progress))?;
    let learned = Learned {
        params: r.params.clone(),
        log_marginal: r.log_marginal,
        local_optima: r.local_optima.clone(),
        scan: r.scan.clone(),
        evaluations: r.evaluations,
    };
    fitted_dict(py, &learned, r.median_heuristic, &r.landmarks, r.landmark_indices.clone(), r.n_data)
}

/// The fitted quantities of ML-II as the dict the Python `KernelEmbedding` reads.
pub fn fitted_dict<'py>(
    py: Python<'py>,
    r: &Learned,
    median: f64,
    landmarks: &Points,
    landmark_indices: Option<Vec<usize>>,
    n_data: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("lengthscales", array1(py, r.params.lengthscales.clone()))?;
    d.set_item("tau2", r.params.tau2)?;
    d.set_item("log_marginal", r.log_marginal)?;
    let optima = r
        .local_optima
        .iter()
        .map(|o| {
            let e = PyDict::new(py);
            e.set_item("lengthscales", o.lengthscales.clone())?;
            e.set_item("tau2", o.tau2)?;
            e.set_item("log_marginal", o.log_marginal)?;
            e.set_item("grad_norm", o.grad_norm)?;
            e.set_item("converged", o.converged)?;
            e.set_item("at_boundary", o.at_boundary)?;
            Ok(e)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("local_optima", optima)?;
    d.set_item("median_heuristic", median)?;
    let scan: Vec<f64> = r.scan.iter().flat_map(|p| [p.lengthscale, p.log_marginal]).collect();
    d.set_item("scan", array2(py, r.scan.len(), 2, scan)?)?;
    d.set_item("landmarks", points_array(py, landmarks)?)?;
    d.set_item("landmark_indices", landmark_indices)?;
    d.set_item("n_data", n_data)?;
    d.set_item("evaluations", r.evaluations)?;
    Ok(d)
}

/// The marginal pseudolikelihood (seed 000 eq. (15)) at landmarks `z` and its gradient:
/// `(log_marginal, grad_log_lengthscale, grad_log_tau2, log_gaussian, log_jacobian)`.
#[pyfunction]
#[pyo3(signature = (x, z, *, lengthscales, tau2, prior, jacobian, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn embedding_log_marginal<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    z: PyReadonlyArray2<'py, f64>,
    lengthscales: PyReadonlyArray1<'py, f64>,
    tau2: f64,
    prior: &str,
    jacobian: bool,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let exec = Exec::new(backend, n_jobs)?;
    let params = bke_params(crate::convert::values(&lengthscales)?, tau2, prior, jacobian)?;
    let (x, z) = (points("X", &x)?, points("landmarks", &z)?);
    let ml = run_job!(exec, py, |B, _progress| Ok(marginal_pseudolikelihood::<B>(&x, &z, &params)?))?;
    let d = PyDict::new(py);
    d.set_item("log_marginal", ml.log_marginal)?;
    d.set_item("grad_log_lengthscale", array1(py, ml.grad_log_lengthscale))?;
    d.set_item("grad_log_tau2", ml.grad_log_tau2)?;
    d.set_item("log_gaussian", ml.log_gaussian)?;
    d.set_item("log_jacobian", ml.log_jacobian)?;
    Ok(d)
}

/// The posterior mean and variance of the embedding at `at` with backend `B`, conditioned at the
/// data `x`, or at `conditioning` when given.
fn posterior<B: Backend>(
    params: &BkeParams,
    x: &Points,
    conditioning: Option<&Points>,
    at: &Points,
) -> Result<(Vec<f64>, Vec<f64>), Failure> {
    let post = match conditioning {
        Some(w) => BkePosterior::conditioned_at::<B>(params, x, w)?,
        None => params.check()?.fit::<B>(x)?,
    };
    let pred = post.predict::<B>(at)?;
    Ok((pred.mean, pred.variance))
}

/// Posterior mean and variance of the embedding `μ` at `at` (seed 000 eq. (7)–(8)), conditioning
/// on the empirical embedding at `conditioning` (default: the data).
#[pyfunction]
#[pyo3(signature = (x, at, conditioning, *, lengthscales, tau2, prior, jacobian, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn embedding_posterior<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    at: PyReadonlyArray2<'py, f64>,
    conditioning: Option<PyReadonlyArray2<'py, f64>>,
    lengthscales: PyReadonlyArray1<'py, f64>,
    tau2: f64,
    prior: &str,
    jacobian: bool,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<ArrayPair<'py>> {
    let exec = Exec::new(backend, n_jobs)?;
    let params = bke_params(crate::convert::values(&lengthscales)?, tau2, prior, jacobian)?;
    let x = points("X", &x)?;
    let conditioning = conditioning.map(|c| points("conditioning points", &c)).transpose()?;
    let at = points("at", &at)?;
    let (mean, var) =
        run_job!(exec, py, |B, _progress| posterior::<B>(&params, &x, conditioning.as_ref(), &at))?;
    Ok((array1(py, mean), array1(py, var)))
}

/// NUTS draws of the BKE hyperparameters (`bke embed sample`; seed 000 §5): a dict with `summary`
/// (the CLI's JSON as text, without `backend` and `seconds`), `lengthscales` (chains × draws × k),
/// `tau2` (chains × draws), `divergent` (chains × draws), `landmarks` and `landmark_indices`.
#[pyfunction]
#[pyo3(signature = (x, *, num_landmarks, landmarks, chains, draws, warmup, seed, lengthscale_prior,
    tau2_prior, tau2, ard, prior, jacobian, max_depth, target_accept, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn embedding_sample<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    num_landmarks: Option<usize>,
    landmarks: Option<PyReadonlyArray2<'py, f64>>,
    chains: usize,
    draws: usize,
    warmup: usize,
    seed: u64,
    lengthscale_prior: &str,
    tau2_prior: &str,
    tau2: Option<f64>,
    ard: bool,
    prior: &str,
    jacobian: bool,
    max_depth: usize,
    target_accept: f64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Bound<'py, PyDict>> {
    let exec = Exec::new(backend, n_jobs)?;
    let x = points("X", &x)?;
    let params = SampleParams {
        lengthscale_prior: HyperPrior::parse(lengthscale_prior).map_err(Failure::from)?,
        tau2_prior: HyperPrior::parse(tau2_prior).map_err(Failure::from)?,
        fixed_tau2: tau2,
        ard,
        prior: EmbeddingPrior::parse(prior).map_err(Failure::from)?,
        jacobian,
        num_landmarks: num_landmarks.unwrap_or_else(|| default_num_landmarks(x.len(), x.dim())),
        landmarks: landmarks.map(|z| points("landmarks", &z)).transpose()?,
        nuts: NutsParams { chains, warmup, draws, seed, max_depth, target_accept, ..NutsParams::default() },
    };
    let r = run_job!(exec, py, |B, progress| fit::<B, _>(&params, &x, progress))?;
    let (c, t, k) = (r.nuts.chains.len(), r.nuts.draws_per_chain(), r.num_lengthscales);
    let per_dim: Vec<Vec<Vec<f64>>> = (0..k).map(|d| r.lengthscale(d)).collect();
    let ls: Vec<f64> = (0..c)
        .flat_map(|ci| (0..t).flat_map(|ti| per_dim.iter().map(move |v| v[ci][ti])).collect::<Vec<_>>())
        .collect();
    let tau2: Vec<f64> = r.tau2().concat();
    let divergent: Vec<bool> = r.nuts.chains.iter().flat_map(|ch| ch.divergent.iter().copied()).collect();
    let d = PyDict::new(py);
    let summary =
        serde_json::to_string(&r).map_err(|e| Failure::Runtime(format!("cannot encode the draws: {e}")))?;
    d.set_item("summary", summary)?;
    d.set_item("lengthscales", array1(py, ls).reshape([c, t, k])?)?;
    d.set_item("tau2", array2(py, c, t, tau2)?)?;
    d.set_item("divergent", numpy::PyArray1::from_vec(py, divergent).reshape([c, t])?)?;
    d.set_item("landmarks", points_array(py, &r.landmarks)?)?;
    d.set_item("landmark_indices", r.landmark_indices.clone())?;
    Ok(d)
}
