//! Fitted models held by the Python estimators: BaNK (seed 001), the RKS/MKL random-feature
//! baselines (seed 001 §4.2) and the kernel student-t density (seed 003); and the stateless Gaussian
//! KDE baseline ([`kde`]).
//!
//! [`Model`] is the one Python type (`bke._bke.Model`) that holds any of them; the scikit-learn
//! classes of `python/bke/` keep one in their fitted attribute `model_`. It pickles as the text of
//! the library's model file (`bke_core::model_file`, the format `bke bank fit` and `bke density
//! fit` write), and `save`/`load` read and write those files, so a model fitted in Python is used
//! by the CLI and the reverse. Fitting and using take the keywords `backend=`/`n_jobs=` and run
//! with the GIL released ([`crate::exec`]).

use crate::convert::{ArrayPair, array1, points, points_array, values};
use crate::exec::{Exec, Failure, add_functions, fit, run_job};
use bke_bank::baselines::{Baseline, BaselineModel, BaselineParams};
use bke_bank::{BankModel, BankParams, Relevance, Task};
use bke_core::density::{
    Bandwidth, KdeBandwidth, KdeParams, KernelStudentT, KernelStudentTParams, SelectOptions,
};
use bke_core::model_file::{self, ModelFile, Saved};
use bke_core::{Dataset, KernelFamily, LogDensity, Points, Predict, Prediction, Progress};
use bke_dme::ttgp::Ttgp;
use bke_linalg::Backend;
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use std::path::PathBuf;

/// Registers [`Model`] and the fitting functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Model>()?;
    add_functions!(m, bank_fit, baseline_fit, density_fit, model_from_text, model_load, kde)
}

/// One fitted model of any kind.
#[derive(Debug, Clone)]
pub(crate) enum Fitted {
    Bank(Box<BankModel>),
    Baseline(Box<BaselineModel>),
    Density(Box<KernelStudentT>),
    Ttgp(Box<Ttgp>),
}

/// A fitted model with the columns (and target) it was fitted on.
#[pyclass(module = "bke._bke", frozen)]
pub struct Model {
    pub(crate) fitted: Fitted,
    pub(crate) columns: Vec<String>,
    pub(crate) target: Option<String>,
}

impl Fitted {
    /// The model file's text.
    fn to_text(&self, columns: &[String], target: Option<String>) -> Result<String, Failure> {
        fn text<M: ModelFile + Clone>(
            m: &M,
            columns: &[String],
            target: Option<String>,
        ) -> Result<String, Failure> {
            Ok(model_file::to_string(&Saved { columns: columns.to_vec(), target, model: m.clone() })?)
        }
        match self {
            Fitted::Bank(m) => text(&**m, columns, target),
            Fitted::Baseline(m) => text(&**m, columns, target),
            Fitted::Density(m) => text(&**m, columns, target),
            Fitted::Ttgp(m) => text(&**m, columns, target),
        }
    }

    /// Reads a model file's text of any of the kinds; `source` names it in errors.
    fn from_text(text: &str, source: &str) -> Result<Model, Failure> {
        let kind = serde_json::from_str::<serde_json::Value>(text)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(str::to_string));
        let model = |fitted, columns, target| Model { fitted, columns, target };
        Ok(match kind.as_deref() {
            Some(k) if BaselineModel::KINDS.contains(&k) => {
                let s = model_file::from_str::<BaselineModel>(text, source)?;
                model(Fitted::Baseline(Box::new(s.model)), s.columns, s.target)
            }
            Some(k) if Ttgp::KINDS.contains(&k) => {
                let s = model_file::from_str::<Ttgp>(text, source)?;
                model(Fitted::Ttgp(Box::new(s.model)), s.columns, s.target)
            }
            Some(k) if KernelStudentT::KINDS.contains(&k) => {
                let s = model_file::from_str::<KernelStudentT>(text, source)?;
                model(Fitted::Density(Box::new(s.model)), s.columns, s.target)
            }
            // BaNK, also for files of bke 0.1 (no kind), whose errors then name what was expected
            _ => {
                let s = model_file::from_str::<BankModel>(text, source)?;
                model(Fitted::Bank(Box::new(s.model)), s.columns, s.target)
            }
        })
    }
}

/// The prediction of `model` at `x` with backend `B` (not for a density model).
fn predict<B: Backend>(model: &Fitted, x: &Points) -> Result<Prediction, Failure> {
    Ok(match model {
        Fitted::Bank(m) => m.predict::<B>(x)?,
        Fitted::Baseline(m) => m.predict::<B>(x)?,
        Fitted::Ttgp(m) => m.predict::<B>(x)?,
        Fitted::Density(_) => {
            return Err(Failure::Value("a density model has no predictions: use log_density".into()));
        }
    })
}

impl Model {
    fn density(&self) -> Result<&KernelStudentT, Failure> {
        match &self.fitted {
            Fitted::Density(m) => Ok(m),
            _ => Err(Failure::Value("not a density model".into())),
        }
    }
}

#[pymethods]
impl Model {
    /// The model file kind, e.g. "bank-regression", "baseline-classification", "density".
    #[getter]
    fn kind(&self) -> &'static str {
        match &self.fitted {
            Fitted::Bank(m) => m.kind(),
            Fitted::Baseline(m) => m.kind(),
            Fitted::Density(m) => m.kind(),
            Fitted::Ttgp(m) => m.kind(),
        }
    }

    /// The input column names recorded with the model.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.columns.clone()
    }

    /// The target column recorded with the model.
    #[getter]
    fn target(&self) -> Option<String> {
        self.target.clone()
    }

    /// The number of input features.
    #[getter]
    fn n_features(&self) -> usize {
        match &self.fitted {
            Fitted::Bank(m) => m.dim,
            Fitted::Baseline(m) => m.inputs.shift.len(),
            Fitted::Density(m) => m.dim(),
            Fitted::Ttgp(m) => m.data().x.dim(),
        }
    }

    /// Predictive mean and variance at the rows of `x` (classification: `P(y = 1 | x)` and
    /// `p(1 − p)`).
    #[pyo3(signature = (x, *, backend, n_jobs))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        backend: &str,
        n_jobs: Option<i64>,
    ) -> PyResult<ArrayPair<'py>> {
        let exec = Exec::new(backend, n_jobs)?;
        let x = points("X", &x)?;
        let fitted = &self.fitted;
        let p = run_job!(exec, py, |B, _progress| predict::<B>(fitted, &x))?;
        Ok((array1(py, p.mean), array1(py, p.variance)))
    }

    /// `log p(x)` at the rows of `x` (a density model; finite everywhere when normalised, −inf outside
    /// the box only for a model file written before the density had tails).
    #[pyo3(signature = (x, *, backend, n_jobs))]
    fn log_density<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        backend: &str,
        n_jobs: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let exec = Exec::new(backend, n_jobs)?;
        let x = points("X", &x)?;
        let density = self.density()?;
        Ok(array1(py, run_job!(exec, py, |B, _progress| Ok(density.log_density::<B>(&x)?))?))
    }

    /// `n` draws from a normalised density model (seeded; independent of `n_jobs`).
    #[pyo3(signature = (n, seed, *, backend, n_jobs))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        seed: u64,
        backend: &str,
        n_jobs: Option<i64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let exec = Exec::new(backend, n_jobs)?;
        let density = self.density()?;
        points_array(py, &run_job!(exec, py, |B, _progress| Ok(density.sample::<B>(n, seed)?.points))?)
    }

    /// The fit summary as JSON text (the fields `bke bank fit` / `bke density fit` print).
    fn summary(&self, rows: usize) -> PyResult<String> {
        let v = match &self.fitted {
            Fitted::Bank(m) => serde_json::to_string(&m.summary(rows)),
            Fitted::Baseline(m) => serde_json::to_string(m),
            Fitted::Density(m) => serde_json::to_string(&m.summary()),
            Fitted::Ttgp(m) => serde_json::to_string(m.params()),
        };
        v.map_err(|e| Failure::Runtime(format!("cannot encode the summary: {e}")).into())
    }

    /// The model file's text.
    fn to_text(&self) -> PyResult<String> {
        Ok(self.fitted.to_text(&self.columns, self.target.clone())?)
    }

    /// Writes the model file (atomically) to `path`.
    fn save(&self, path: PathBuf) -> PyResult<()> {
        let text = self.fitted.to_text(&self.columns, self.target.clone())?;
        model_file::write_atomic(&path, text.as_bytes()).map_err(Failure::from)?;
        Ok(())
    }

    /// The same model with other column names and target.
    #[pyo3(signature = (columns, target=None))]
    fn with_columns(&self, columns: Vec<String>, target: Option<String>) -> PyResult<Model> {
        if !columns.is_empty() && columns.len() != self.n_features() {
            return Err(Failure::Value(format!(
                "{} column names for a model of {} features",
                columns.len(),
                self.n_features()
            ))
            .into());
        }
        Ok(Model { fitted: self.fitted.clone(), columns, target })
    }

    /// Pickling: the model file's text.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let f = slf.py().import("bke._bke")?.getattr("model_from_text")?;
        Ok((f, (slf.get().to_text()?,)))
    }
}

/// A model from the text of a model file.
#[pyfunction]
fn model_from_text(text: &str) -> PyResult<Model> {
    Ok(Fitted::from_text(text, "the model text")?)
}

/// A model from a model file.
#[pyfunction]
fn model_load(path: PathBuf) -> PyResult<Model> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::Value(format!("cannot read the model file {shown}: {e}")))?;
    Ok(Fitted::from_text(&text, &shown)?)
}

/// The supervised data: `X` and `y` (0/1 labels for classification, named in the error).
fn dataset(
    x: &PyReadonlyArray2<'_, f64>,
    y: &PyReadonlyArray1<'_, f64>,
    task: Task,
) -> Result<Dataset, Failure> {
    let y = values(y).map_err(Failure::Python)?;
    if task == Task::Classification {
        if let Some((i, v)) = y.iter().enumerate().find(|(_, v)| **v != 0.0 && **v != 1.0) {
            return Err(Failure::Value(format!(
                "classification labels must be 0 or 1, found {v} at index {i}"
            )));
        }
    }
    Ok(Dataset::new(points("X", x)?, y)?)
}

/// BaNK (`bke bank fit`): the keywords are the CLI's flags; `None` keeps the library default (a
/// learned or data-derived value).
#[pyfunction]
#[pyo3(signature = (x, y, *, task, frequencies, iterations, burn_in, samples, warmup, seed, alpha,
    prior_precision, weight_prior_variance, intercept_prior_variance, kappa0, nu0, psi0, init_scale,
    a0, b0, relevance, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn bank_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    task: &str,
    frequencies: usize,
    iterations: usize,
    burn_in: Option<usize>,
    samples: usize,
    warmup: Option<usize>,
    seed: u64,
    alpha: Option<f64>,
    prior_precision: Option<f64>,
    weight_prior_variance: Option<f64>,
    intercept_prior_variance: Option<f64>,
    kappa0: Option<f64>,
    nu0: Option<f64>,
    psi0: Option<f64>,
    init_scale: Option<f64>,
    a0: Option<f64>,
    b0: Option<f64>,
    relevance: &str,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Model> {
    let exec = Exec::new(backend, n_jobs)?;
    let task = Task::parse(task).map_err(|e| Failure::Value(e.to_string()))?;
    let relevance = Relevance::parse(relevance).map_err(|e| Failure::Value(e.to_string()))?;
    let data = dataset(&x, &y, task)?;
    let mut p = BankParams {
        task,
        frequencies,
        iterations,
        burn_in,
        samples,
        warmup,
        seed,
        relevance,
        ..Default::default()
    };
    let q = &mut p.prior;
    q.prior_precision = prior_precision;
    q.weight_prior_variance = weight_prior_variance;
    q.psi0 = psi0;
    q.init_scale = init_scale;
    q.nu0 = nu0;
    for (slot, v) in [
        (&mut q.alpha, alpha),
        (&mut q.kappa0, kappa0),
        (&mut q.a0, a0),
        (&mut q.b0, b0),
        (&mut q.intercept_prior_variance, intercept_prior_variance),
    ] {
        if let Some(v) = v {
            *slot = v;
        }
    }
    let model = run_job!(exec, py, |B, progress| fit::<B, _>(&p, &data, progress))?;
    Ok(Model { fitted: Fitted::Bank(Box::new(model)), columns: Vec::new(), target: None })
}

/// The RKS or MKL random-feature baseline (`bke bank cv --method rks|mkl`, one fit).
#[pyfunction]
#[pyo3(signature = (x, y, *, kind, task, frequencies, lengthscale, scales, standardize_inputs, seed,
    backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn baseline_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    kind: &str,
    task: &str,
    frequencies: usize,
    lengthscale: Option<f64>,
    scales: Option<Vec<f64>>,
    standardize_inputs: bool,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Model> {
    let exec = Exec::new(backend, n_jobs)?;
    let task = Task::parse(task).map_err(|e| Failure::Value(e.to_string()))?;
    let kind = match kind {
        "rks" => Baseline::Rks,
        "mkl" => Baseline::Mkl,
        other => return Err(Failure::Value(format!("unknown baseline '{other}': use 'rks' or 'mkl'")).into()),
    };
    let data = dataset(&x, &y, task)?;
    let defaults = BaselineParams::default();
    let p = BaselineParams {
        kind,
        task,
        frequencies,
        lengthscale,
        scales: scales.unwrap_or(defaults.scales.clone()),
        standardize_inputs,
        seed,
        ..defaults
    };
    let model = run_job!(exec, py, |B, progress| fit::<B, _>(&p, &data, progress))?;
    Ok(Model { fitted: Fitted::Baseline(Box::new(model)), columns: Vec::new(), target: None })
}

/// The kernel student-t density (`bke density fit`): the keywords are the CLI's flags.
#[pyfunction]
#[pyo3(signature = (x, *, kernel, lengthscale, alpha, beta, sigma0_sq, normalise, folds, margin, seed,
    backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn density_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    kernel: &str,
    lengthscale: Option<Vec<f64>>,
    alpha: Option<f64>,
    beta: Option<f64>,
    sigma0_sq: Option<f64>,
    normalise: bool,
    folds: usize,
    margin: f64,
    seed: u64,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<Model> {
    let exec = Exec::new(backend, n_jobs)?;
    let x = points("X", &x)?;
    let family = kernel.parse::<KernelFamily>().map_err(|e| Failure::Value(e.to_string()))?;
    let params = KernelStudentTParams {
        family,
        lengthscales: lengthscale,
        alpha,
        beta,
        sigma0_sq,
        normalise: normalise && x.dim() <= 2,
        select: SelectOptions { folds, seed, margin, ..SelectOptions::default() },
        ..KernelStudentTParams::default()
    };
    let model = run_job!(exec, py, |B, progress| fit::<B, _>(&params, &x, progress))?;
    Ok(Model { fitted: Fitted::Density(Box::new(model)), columns: Vec::new(), target: None })
}

/// What [`kde`] returns: bandwidths, LOO log-likelihood, log density at the query points.
type KdeFit<'py> = (Bound<'py, PyArray1<f64>>, Option<f64>, Option<Bound<'py, PyArray1<f64>>>);

/// A KDE fit before conversion to numpy: bandwidths, LOO log-likelihood, log density at the
/// query points.
type KdeValues = (Vec<f64>, Option<f64>, Option<Vec<f64>>);

/// The KDE of `x` with backend `B`: bandwidths, LOO log-likelihood, log density at `at`.
fn kde_fit<B: Backend>(
    params: &KdeParams,
    x: &Points,
    at: Option<&Points>,
    progress: &dyn Progress,
) -> Result<KdeValues, Failure> {
    let kde = fit::<B, _>(params, x, progress)?;
    let loo = match kde.rule() {
        KdeBandwidth::CrossValidated { loo_log_lik } => Some(loo_log_lik),
        _ => None,
    };
    let density = at.map(|q| kde.log_density::<B>(q)).transpose()?;
    Ok((kde.bandwidths().to_vec(), loo, density))
}

/// The Gaussian KDE baseline of seed 003's comparisons: fits the bandwidths of `x` (`rule`:
/// "cv" — leave-one-out over `factors` × the column standard deviations —, "silverman", or
/// "fixed" with `bandwidths`) and, given `at`, the log density there. Returns `(bandwidths,
/// mean leave-one-out log-likelihood or None, log density at `at` or None)`.
#[pyfunction]
#[pyo3(signature = (x, at, *, rule, bandwidths, factors, backend, n_jobs))]
#[allow(clippy::too_many_arguments)]
fn kde<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    at: Option<PyReadonlyArray2<'py, f64>>,
    rule: &str,
    bandwidths: Option<Vec<f64>>,
    factors: Option<Vec<f64>>,
    backend: &str,
    n_jobs: Option<i64>,
) -> PyResult<KdeFit<'py>> {
    let exec = Exec::new(backend, n_jobs)?;
    let bandwidth = match (rule, bandwidths) {
        ("fixed", Some(h)) => Bandwidth::Fixed(h),
        ("silverman", _) => Bandwidth::NormalReference,
        ("cv", _) => match factors {
            Some(factors) => Bandwidth::CrossValidated { factors },
            None => KdeParams::default().bandwidth,
        },
        _ => {
            return Err(Failure::Value(format!(
                "bandwidth must be 'cv', 'silverman', a number or one number per feature; got '{rule}'"
            ))
            .into());
        }
    };
    let (params, x) = (KdeParams { bandwidth }, points("X", &x)?);
    let at = at.map(|q| points("X", &q)).transpose()?;
    let (h, loo, density) =
        run_job!(exec, py, |B, progress| kde_fit::<B>(&params, &x, at.as_ref(), progress))?;
    Ok((array1(py, h), loo, density.map(|d| array1(py, d))))
}
