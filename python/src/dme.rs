//! Task-transformed Gaussian processes (bke-dme `ttgp`; seed 004 Thm 5.3): `bke dme fit` with
//! `--model gp` on dense transformation pairs. The fitted model is a [`Model`] of kind `ttgp` (the
//! library's model file, readable by `bke dme predict --model`), so it predicts, saves and pickles
//! as every other model of the package. And likelihood-free inference (`bke lfi`, seed 004
//! Algorithm 8.1) through [`bke_dme::infer`], whose report is the command's JSON.

use crate::convert::{points, values};
use crate::exec::{Exec, Failure, add_functions, run_job};
use crate::models::{Fitted, Model};
use bke_core::optim::LbfgsOptions;
use bke_core::{Kernel, KernelFamily, Params, Points, Progress};
use bke_dme::TaskData;
use bke_dme::herding::HerdingParams;
use bke_dme::infer::{LfiMethod, LfiSpec, infer};
use bke_dme::learn::{Learn, MultiStartOptions};
use bke_dme::lfi::LfiData;
use bke_dme::ttgp::{MarginalForm, Ttgp, TtgpParams};
use bke_linalg::Backend;
use numpy::{PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use serde_json::json;

/// Registers the TTGP functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, ttgp_fit, lfi)
}

/// Fits a TTGP with backend `B`: the model and its log marginal likelihood.
fn fit_ttgp<B: Backend>(
    params: &TtgpParams,
    data: &TaskData,
    progress: &dyn Progress,
) -> Result<(Ttgp, f64), Failure> {
    let model = params.check()?.fit_with_progress::<B>(data, progress)?;
    let log_marginal = model.log_marginal::<B>()?;
    Ok((model, log_marginal))
}

/// `bke dme fit --model gp`: learns every hyperparameter (multi-start L-BFGS on the log scale) from
/// the initial values given, or keeps them with `learn=False`. Returns the model and the JSON the
/// CLI prints (`hyperparameters`, `log_marginal`, `form`, `start_log_marginals`).
#[pyfunction]
#[pyo3(signature = (x, y, ytilde, ztilde, *, kernel, lengthscale_x, lengthscale_y, sigma, lambda_,
    epsilon, form, learn, starts, spread, max_iter, seed, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn ttgp_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray2<'_, f64>,
    ytilde: PyReadonlyArray2<'_, f64>,
    ztilde: PyReadonlyArray1<'_, f64>,
    kernel: &str,
    lengthscale_x: Vec<f64>,
    lengthscale_y: Vec<f64>,
    sigma: f64,
    lambda_: Option<f64>,
    epsilon: Option<f64>,
    form: &str,
    learn: bool,
    starts: usize,
    spread: f64,
    max_iter: usize,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<(Model, String)> {
    let exec = Exec::new(backend, n_jobs)?;
    let value = |e: String| Failure::Value(e);
    let family: KernelFamily =
        kernel.parse().map_err(|e: bke_core::CoreError| value(format!("kernel: {e}")))?;
    let kx = Kernel::new(family, lengthscale_x).map_err(|e| value(format!("lengthscale_x: {e}")))?;
    let ky = Kernel::new(family, lengthscale_y).map_err(|e| value(format!("lengthscale_y: {e}")))?;
    let form: MarginalForm = form.parse().map_err(|e: bke_dme::DmeError| value(format!("form: {e}")))?;
    bke_core::check_positive("sigma", sigma).map_err(Failure::from)?;
    let data =
        TaskData::new(points("X", &x)?, points("Y", &y)?, points("Ytilde", &ytilde)?, values(&ztilde)?)
            .map_err(Failure::from)?;
    let mut params = TtgpParams { form, ..TtgpParams::tied(kx, ky, sigma, data.n(), data.m()) };
    params.lambda = lambda_.unwrap_or(params.lambda);
    params.epsilon = epsilon.unwrap_or(params.epsilon);
    if learn {
        params.learn = Learn::all();
    }
    params.search = MultiStartOptions {
        starts,
        spread,
        seed,
        lbfgs: LbfgsOptions { max_iter, ..LbfgsOptions::default() },
    };
    let (model, log_marginal) = run_job!(exec, py, |B, progress| fit_ttgp::<B>(&params, &data, progress))?;
    let starts: Vec<f64> = model.starts().iter().map(|s| s.log_marginal).collect();
    let summary = json!({
        "hyperparameters": model.params(),
        "log_marginal": log_marginal,
        "form": model.params().form.name(),
        "start_log_marginals": starts,
    });
    Ok((
        Model { fitted: Fitted::Ttgp(Box::new(model)), columns: Vec::new(), target: None },
        summary.to_string(),
    ))
}

/// The `bke lfi` JSON with backend `B`.
fn lfi_json<B: Backend>(
    data: &LfiData,
    method: &LfiMethod,
    candidates: &Points,
    herding: &HerdingParams,
    progress: &dyn Progress,
) -> Result<String, Failure> {
    let report = infer::<B>(data, method, candidates, herding, progress)?;
    serde_json::to_string(&report).map_err(|e| Failure::Runtime(format!("cannot encode the result: {e}")))
}

/// `bke lfi`: the posterior by the DME or KBR, herded; returns the command's JSON. The keywords
/// are its flags (`lambda_` for `--lambda`); `None` keeps the library's data-scaled default.
#[pyfunction]
#[pyo3(signature = (theta, stats, prior_samples, observed, candidates, *, method, herd, continuous,
    lengthscale_theta, lengthscale_stat, lengthscale_herding, epsilon, lambda_, delta, learn,
    learn_lambda, starts, seed, kbr_variant, kbr_inverse, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn lfi(
    py: Python<'_>,
    theta: PyReadonlyArray2<'_, f64>,
    stats: PyReadonlyArray2<'_, f64>,
    prior_samples: PyReadonlyArray2<'_, f64>,
    observed: PyReadonlyArray1<'_, f64>,
    candidates: Option<PyReadonlyArray2<'_, f64>>,
    method: &str,
    herd: usize,
    continuous: bool,
    lengthscale_theta: Option<Vec<f64>>,
    lengthscale_stat: Option<Vec<f64>>,
    lengthscale_herding: Option<Vec<f64>>,
    epsilon: Option<Vec<f64>>,
    lambda_: Option<f64>,
    delta: Option<f64>,
    learn: bool,
    learn_lambda: bool,
    starts: usize,
    seed: u64,
    kbr_variant: &str,
    kbr_inverse: &str,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<String> {
    let exec = Exec::new(backend, n_jobs)?;
    let method = LfiMethod::parse(&LfiSpec {
        method,
        lengthscale_theta,
        lengthscale_stat,
        epsilon,
        lambda: lambda_,
        delta,
        learn,
        learn_lambda,
        starts,
        seed,
        kbr_variant,
        kbr_inverse,
    })
    .map_err(Failure::from)?;
    let prior = points("prior_samples", &prior_samples)?;
    let candidates =
        candidates.map(|c| points("candidates", &c)).transpose()?.unwrap_or_else(|| prior.clone());
    let data = LfiData::new(points("theta", &theta)?, points("stats", &stats)?, prior, values(&observed)?)
        .map_err(Failure::from)?;
    let kernel = lengthscale_herding
        .map(|l| Kernel::se_ard(l).map_err(|e| Failure::Value(format!("lengthscale_herding: {e}"))))
        .transpose()?;
    let herding = HerdingParams { samples: herd, continuous, kernel, ..HerdingParams::default() };
    run_job!(exec, py, |B, progress| lfi_json::<B>(&data, &method, &candidates, &herding, progress))
}
