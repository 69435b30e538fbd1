//! The fitted TTGP: [`TtgpParams`] → `check()` → `fit::<B>(&TaskData)` conditions the process on the
//! data (learning the hyperparameters first when `learn` selects any), and the result predicts `f`
//! (seed 004 Thm 5.3) and is written to and read from model files (kind `ttgp`).

use super::marginal::{Grams, LogMarginal, Mode, evaluate, log_marginal, scalars, validate};
use super::params::{MarginalForm, TtgpParams};
use crate::DmeError;
use crate::data::TaskData;
use crate::learn::{Report, best_start, multi_start, tie_lambda_grad, tie_lambda_map};
use crate::ops::{mm, mv};
use bke_core::model_file::{ModelFile, Saved, fields};
use bke_core::numeric::dot;
use bke_core::{CoreError, Estimator, Points, Predict, Prediction, Progress, Valid};
use bke_linalg::{Backend, Mat, Trans};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// One local optimum of the hyperparameter search.
#[derive(Debug, Clone, PartialEq)]
pub struct StartResult {
    /// The hyperparameters reached.
    pub params: TtgpParams,
    /// `log p(z̃)` there.
    pub log_marginal: f64,
    /// L-BFGS iterations.
    pub iterations: usize,
    /// Whether a tolerance stopped L-BFGS.
    pub converged: bool,
}

/// What conditioning computes once: `log p(z̃)`, `γ²`, `a = Aα` and `M = A C⁻¹ Aᵀ`.
#[derive(Debug, Clone)]
struct Conditioned {
    log_marginal: f64,
    gamma2: f64,
    a: Vec<f64>,
    m: Mat,
}

/// A TTGP conditioned on its data: predicts `f` at new inputs. Carries no backend; the
/// conditioning is computed at fit time (or on first use after loading a model file).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "TtgpRecord", try_from = "TtgpRecord")]
pub struct Ttgp {
    data: TaskData,
    params: TtgpParams,
    starts: Vec<StartResult>,
    conditioned: OnceLock<Conditioned>,
}

impl Estimator for TtgpParams {
    type Data = TaskData;
    type Fitted = Ttgp;

    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TaskData,
        progress: &dyn Progress,
    ) -> Result<Ttgp, DmeError> {
        validate(data, params)?;
        let (params, starts) = if params.learn.any() {
            learn::<B>(data, params, (progress, "learning TTGP hyperparameters"))?
        } else {
            ((**params).clone(), Vec::new())
        };
        let model = Ttgp { data: data.clone(), params, starts, conditioned: OnceLock::new() };
        model.conditioned::<B>()?;
        Ok(model)
    }
}

/// Maximises the marginal likelihood of `init.form` by multi-start L-BFGS over the hyperparameters
/// selected by `init.learn` (seed 004 §5).
fn learn<B: Backend>(
    data: &TaskData,
    init: &TtgpParams,
    report: Report<'_>,
) -> Result<(TtgpParams, Vec<StartResult>), DmeError> {
    let (nx, ny) = (init.kernel_x.n_params(), init.kernel_y.n_params());
    let mut mask = init.learn.mask(nx, ny);
    let is = nx + ny;
    if init.tie_lambda {
        mask[is + 1] = false;
    }
    let tie = tie_lambda_map(init.tie_lambda, is, data.n());
    let objective = |p: &[f64]| {
        let h = init.with_log_params(&tie(p)).ok()?;
        let r = log_marginal::<B>(data, &h).ok()?;
        let mut g = r.gradient;
        tie_lambda_grad(init.tie_lambda, is, &mut g);
        Some((r.value, g))
    };
    let results =
        multi_start(&tie(&init.log_params()), &mask, &mask, &init.search, &objective, None, report)?;
    let best = best_start(
        &results,
        "the initial hyperparameters give a covariance that is not positive definite; increase sigma, \
         lambda or epsilon",
    )?;
    let starts = results
        .iter()
        .map(|(p, v, iterations, converged)| {
            Ok(StartResult {
                params: init.with_log_params(&tie(p))?,
                log_marginal: *v,
                iterations: *iterations,
                converged: *converged,
            })
        })
        .collect::<Result<Vec<_>, DmeError>>()?;
    Ok((init.with_log_params(&tie(&best.0))?, starts))
}

impl Ttgp {
    /// The hyperparameters (learned ones if learning was asked for).
    pub fn params(&self) -> &TtgpParams {
        &self.params
    }

    /// The data the model is conditioned on.
    pub fn data(&self) -> &TaskData {
        &self.data
    }

    /// Every start of the hyperparameter search, in start order (empty when nothing was learned
    /// or the model was read from a file).
    pub fn starts(&self) -> &[StartResult] {
        &self.starts
    }

    /// The same model recording the starts of a search that chose its hyperparameters elsewhere
    /// (the sparse TTGP's joint search over inducing points).
    pub(crate) fn with_starts(mut self, starts: Vec<StartResult>) -> Self {
        self.starts = starts;
        self
    }

    fn conditioned<B: Backend>(&self) -> Result<&Conditioned, DmeError> {
        if let Some(c) = self.conditioned.get() {
            return Ok(c);
        }
        let h = &self.params;
        let g = Grams::new(&self.data, h, h.form)?;
        let e = evaluate::<B>(&g, &self.data.z_tilde, scalars(h), h.form, Mode::Predictive)?;
        let c = Conditioned { log_marginal: e.value, gamma2: h.gamma2(self.data.m()), a: e.a, m: e.m };
        Ok(self.conditioned.get_or_init(|| c))
    }

    /// `log p(z̃)` at the model's hyperparameters.
    pub fn log_marginal<B: Backend>(&self) -> Result<f64, DmeError> {
        Ok(self.conditioned::<B>()?.log_marginal)
    }

    /// `log p(z̃)` and its gradient with respect to the log-hyperparameters.
    pub fn log_marginal_gradient<B: Backend>(&self) -> Result<LogMarginal, DmeError> {
        log_marginal::<B>(&self.data, &self.params)
    }

    /// DME weights `ᾱ = γ² A α` with `f̄(x) = Σ_i ᾱ_i k(x_i, x)` (seed 004 Def. 4.4 in the MAP
    /// forms).
    pub fn weights<B: Backend>(&self) -> Result<Vec<f64>, DmeError> {
        let c = self.conditioned::<B>()?;
        Ok(c.a.iter().map(|v| v * c.gamma2).collect())
    }

    fn cross<B: Backend>(&self, at: &Points) -> Result<(&Conditioned, Mat), DmeError> {
        at.check_dim("prediction points (must match x)", self.data.x.dim())?;
        let c = self.conditioned::<B>()?;
        Ok((c, self.params.kernel_x.cross_gram(&self.data.x, at)?))
    }

    /// Predictive covariance matrix of `f` at `at` (`q × q`).
    pub fn predict_covariance<B: Backend>(&self, at: &Points) -> Result<Mat, DmeError> {
        let (c, ks) = self.cross::<B>(at)?;
        let mk = mm::<B>(&c.m, Trans::No, &ks, Trans::No)?;
        let quad = mm::<B>(&ks, Trans::Yes, &mk, Trans::No)?;
        let kss = self.params.kernel_x.gram(at)?;
        Ok(Mat::from_fn(at.len(), at.len(), |i, j| c.gamma2 * (kss[(i, j)] - c.gamma2 * quad[(i, j)])))
    }
}

impl Predict for Ttgp {
    type Output = Prediction;
    type Error = DmeError;

    /// Predictive mean and variance of the latent `f` (no observation noise) at `at`.
    fn predict<B: Backend>(&self, at: &Points) -> Result<Prediction, DmeError> {
        let (c, ks) = self.cross::<B>(at)?;
        let mean: Vec<f64> = mv::<B>(&ks, Trans::Yes, &c.a)?.iter().map(|v| v * c.gamma2).collect();
        let mk = mm::<B>(&c.m, Trans::No, &ks, Trans::No)?;
        let variance = (0..at.len())
            .map(|j| {
                let kss = self.params.kernel_x.eval(at.point(j), at.point(j));
                (c.gamma2 * (kss - c.gamma2 * dot(ks.col(j), mk.col(j)))).max(0.0)
            })
            .collect();
        Ok(Prediction { mean, variance })
    }
}

/// The model-file layout (that of the bke 0.1 CLI, whose files carried
/// `"format": "bke-dme-ttgp-1"` beside these fields).
#[derive(Serialize, Deserialize)]
struct TtgpRecord {
    form: MarginalForm,
    hyperparameters: TtgpParams,
    x: Vec<Vec<f64>>,
    y: Vec<Vec<f64>>,
    y_tilde: Vec<Vec<f64>>,
    z_tilde: Vec<f64>,
}

fn rows(p: &Points) -> Vec<Vec<f64>> {
    p.iter().map(<[f64]>::to_vec).collect()
}

impl From<Ttgp> for TtgpRecord {
    fn from(t: Ttgp) -> Self {
        Self {
            form: t.params.form,
            x: rows(&t.data.x),
            y: rows(&t.data.y),
            y_tilde: rows(&t.data.y_tilde),
            z_tilde: t.data.z_tilde,
            hyperparameters: t.params,
        }
    }
}

impl TryFrom<TtgpRecord> for Ttgp {
    type Error = DmeError;

    fn try_from(r: TtgpRecord) -> Result<Self, DmeError> {
        let data = TaskData::new(
            Points::from_rows("x", &r.x)?,
            Points::from_rows("y", &r.y)?,
            Points::from_rows("y_tilde", &r.y_tilde)?,
            r.z_tilde,
        )?;
        let params = TtgpParams { form: r.form, ..r.hyperparameters };
        Ok(Self { data, params, starts: Vec::new(), conditioned: OnceLock::new() })
    }
}

/// Errors unless the prior amplitude `value` (named `what`, set by `field`) is a normal number:
/// an amplitude that overflows or underflows makes the covariance `∞` or `0`.
fn amplitude(field: &str, what: &str, value: f64) -> Result<(), CoreError> {
    if !value.is_normal() {
        return Err(fields::refuse(
            field,
            format_args!("it makes the prior amplitude {what} = {value:e}, which over- or underflows"),
        ));
    }
    Ok(())
}

/// A model-file error from a crate error.
pub(crate) fn to_core(e: DmeError) -> CoreError {
    match e {
        DmeError::Core(c) => c,
        other => CoreError::ModelFile(other.to_string()),
    }
}

impl ModelFile for Ttgp {
    const KINDS: &'static [&'static str] = &["ttgp"];
    const VERSION: u32 = 1;

    fn kind(&self) -> &'static str {
        "ttgp"
    }

    /// Every field ([`fields`]): the hyperparameters `σ, λ, ε` and the lengthscales are
    /// [`fields::scale`]s, the prior amplitudes `β² = σ²/(nλ)` and `γ² = σ²/(mε)` normal numbers,
    /// the lengthscales one or one per column of their kernel's inputs, the data `x, y, ỹ, z̃`
    /// [`fields::bounded`] (their shapes are checked as the file is read).
    fn validate(&self) -> Result<(), CoreError> {
        let (h, d) = (&self.params, &self.data);
        fields::scale("hyperparameters.sigma", h.sigma)?;
        fields::scale("hyperparameters.lambda", h.lambda)?;
        fields::scale("hyperparameters.epsilon", h.epsilon)?;
        amplitude("hyperparameters.lambda", "β² = σ²/(nλ)", h.beta2(d.n()))?;
        amplitude("hyperparameters.epsilon", "γ² = σ²/(mε)", h.gamma2(d.m()))?;
        for (field, k, dim) in [
            ("hyperparameters.lengthscale_x", &h.kernel_x, d.x.dim()),
            ("hyperparameters.lengthscale_y", &h.kernel_y, d.y.dim()),
        ] {
            fields::scales(field, k.lengthscales())?;
            k.check_dim(dim).map_err(|e| fields::refuse(field, e))?;
        }
        fields::bounded("x", d.x.as_slice())?;
        fields::bounded("y", d.y.as_slice())?;
        fields::bounded("y_tilde", d.y_tilde.as_slice())?;
        fields::bounded("z_tilde", &d.z_tilde)?;
        validate(d, h).map_err(to_core)
    }

    /// Reads `{"format": "bke-dme-ttgp-1", "form", "hyperparameters", "x", "y", "y_tilde",
    /// "z_tilde"}` as written by `bke dme fit --model-out` of bke 0.1.
    fn from_legacy(file: &serde_json::Value) -> Option<Result<Saved<Self>, String>> {
        if file.get("format")?.as_str()? != "bke-dme-ttgp-1" {
            return None;
        }
        Some(
            serde_json::from_value::<Ttgp>(file.clone())
                .map(Saved::new)
                .map_err(|e| format!("malformed bke 0.1 TTGP model: {e}")),
        )
    }
}
