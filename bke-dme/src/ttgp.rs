//! Task-transformed Gaussian processes (seed 004 Thm 5.3): marginal likelihoods with analytic
//! gradients. The fitted model (conditioning, hyperparameter learning, prediction, model files) is
//! [`Ttgp`], fitted by [`TtgpParams`].
//!
//! # Model
//! Transformation data `{x_i, y_i}_{i=1}^n`, task data `{ỹ_j, z̃_j}_{j=1}^m`, kernels `k` on X and `ℓ`
//! on Y (unit amplitude, from bke-core). Priors `f ~ GP(0, γ² k)` and `g ~ GP(0, β² ℓ)`, likelihoods
//! `z = g(y) + N(0, σ²)` and `z = f(x)` (noise-free). The regularisers of the DME fix the amplitudes:
//! `λ = σ²/(nβ²)`, `ε = σ²/(mγ²)` (seed 004 Thm 5.3 (4)); the seed's unit amplitudes are
//! `λ = σ²/n`, `ε = σ²/m` ([`TtgpParams::tied`]). With `A = (L + nλI)⁻¹ L̃`, `L = ℓ(y, y)`,
//! `L̃ = ℓ(y, ỹ)`, `Ľ = ℓ(ỹ, ỹ)`, `K = k(x, x)`, the task targets are `z̃ | f ~ N(Aᵀ f, Σ)` and
//!
//! * [`MarginalForm::Full`], seed 004 Thm 5.3 (3): `z̃ ~ N(0, γ² AᵀKA + Σ)`, `Σ = β²(Ľ − L̃ᵀA) + σ²I`
//!   (the posterior of `g` integrated out; the seed's `Σ = L̃ + σ²I − …` means `Ľ`);
//! * [`MarginalForm::Map`], seed 004 Thm 5.3 (4): `g` at its MAP, `Σ = σ²I`:
//!   `z̃ ~ N(0, σ²(I + AᵀKA/(mε)))`, cost `O(n³ + m³)`;
//! * [`MarginalForm::Alternative`], seed 004 Thm 5.3 (4), alternative form: the same density as `Map`,
//!   `C⁻¹ = σ⁻²[I − Aᵀ(KAAᵀ + mεI)⁻¹KA]`, computed in `O(n³ + n²m)` without any `m × m` matrix.
//!   The non-symmetric `(KAAᵀ + mεI)⁻¹K` is evaluated as `U (UᵀSU + mεI)⁻¹ Uᵀ` with `S = AAᵀ` and
//!   `K = UUᵀ` (Cholesky factor, or a symmetric eigendecomposition with eigenvalues clamped at 0
//!   when `K` is numerically singular), so it stays exact and symmetric.
//!
//! # Gradients
//! `∂ log p/∂θ = ½ tr((ααᵀ − C⁻¹) ∂C/∂θ)`, `α = C⁻¹z̃`, pushed back through `A` by the adjoint
//! `R = (L + nλI)⁻¹ γ² K A W` (`W = ααᵀ − C⁻¹`, never formed in the alternative form), then
//! contracted with `∂k/∂log θ` pair by pair. Parameters are the log lengthscales of `k`, of `ℓ`,
//! then `log σ`, `log λ`, `log ε` (see [`TtgpParams::log_params`]). Since `C` is homogeneous of
//! degree 2 in `σ` at fixed `λ, ε`: `∂/∂log σ = z̃ᵀα − m`.
//!
//! # Prediction
//! `f(x*) | z̃ ~ N(γ² k*ᵀ A α, γ² k** − γ⁴ k*ᵀ A C⁻¹ Aᵀ k*)`. In the `Map`/`Alternative` forms the
//! mean is exactly the nonparametric DME of seed 004 Def. 4.4 with these `λ, ε`.

pub(crate) mod fitted;
mod marginal;

pub use fitted::{StartResult, Ttgp};
pub use marginal::flops;
pub(crate) use marginal::{Grams, Mode, Scalars, evaluate, sqrt_factor, transform};

use crate::DmeError;
use crate::data::TaskData;
use crate::learn::{Learn, MultiStartOptions};
use crate::ops::{add_diag, contract_params, contract_params_symmetric, mm};
use bke_core::budget::Bytes;
use bke_core::numeric::LogParams;
use bke_core::{Kernel, KernelFamily, check_positive};
use bke_linalg::{Backend, Mat, Trans};
use serde::{Deserialize, Serialize};

/// The TTGP: kernels `k` (on X) and `ℓ` (on Y), noise `σ`, regularisers `λ`, `ε`, the marginal
/// likelihood form, and which of them [`TtgpParams`]'s fit learns (by multi-start L-BFGS on the
/// marginal likelihood; by default nothing is learned and the model is conditioned at these
/// values).
///
/// Its serde form holds the values only (the model-file and JSON layout):
/// `{"kernel", "lengthscale_x", "lengthscale_y", "sigma", "lambda", "epsilon"}`, plus `"alpha_x"`,
/// `"alpha_y"` for rational quadratic kernels and `"kernel_y"` when `ℓ`'s family differs from `k`'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "HyperRecord", try_from = "HyperRecord")]
pub struct TtgpParams {
    /// Kernel `k` on X (the initial value when learned).
    pub kernel_x: Kernel,
    /// Kernel `ℓ` on Y.
    pub kernel_y: Kernel,
    /// Observation noise standard deviation `σ > 0`.
    pub sigma: f64,
    /// Regulariser `λ > 0` of the CME inverse `(L + nλI)⁻¹`.
    pub lambda: f64,
    /// Regulariser `ε > 0` of the DME inverse `(AᵀKA + mεI)⁻¹`.
    pub epsilon: f64,
    /// Marginal likelihood (and predictive) form. Default [`MarginalForm::Map`].
    pub form: MarginalForm,
    /// Which hyperparameters are learned. Default: none.
    pub learn: Learn,
    /// When learning, keep `λ = σ²/n` (unit prior amplitude `β = 1` of `g`, seed 004 Thm 5.3 (4))
    /// while `σ` moves, instead of learning `λ` freely. Default true: the MAP forms identify `λ` only
    /// weakly (a larger `λ` shrinks `A`, which a larger amplitude `γ²` of `f` compensates exactly in
    /// the limit), so a free `λ` lets the scale of the recovered `f` drift. Overrides
    /// `learn.lambda`.
    pub tie_lambda: bool,
    /// Multi-start L-BFGS settings of the learning.
    pub search: MultiStartOptions,
}

impl Default for TtgpParams {
    /// Squared-exponential kernels of lengthscale 1, `σ = 0.1`, `λ = ε = 10⁻³`, MAP form, nothing
    /// learned.
    fn default() -> Self {
        Self {
            kernel_x: Kernel::se(1.0).expect("positive lengthscale"),
            kernel_y: Kernel::se(1.0).expect("positive lengthscale"),
            sigma: 0.1,
            lambda: 1e-3,
            epsilon: 1e-3,
            form: MarginalForm::Map,
            learn: Learn::none(),
            tie_lambda: true,
            search: MultiStartOptions::default(),
        }
    }
}

impl TtgpParams {
    /// The seed's parametrisation with unit prior amplitudes: `λ = σ²/n`, `ε = σ²/m` (other
    /// settings at their defaults).
    pub fn tied(kernel_x: Kernel, kernel_y: Kernel, sigma: f64, n: usize, m: usize) -> Self {
        let s2 = sigma * sigma;
        Self {
            kernel_x,
            kernel_y,
            sigma,
            lambda: s2 / n.max(1) as f64,
            epsilon: s2 / m.max(1) as f64,
            ..Self::default()
        }
    }

    /// Errors unless the kernels fit inputs of dimension `dim_x` (X) and `dim_y` (Y).
    pub fn check_dims(&self, dim_x: usize, dim_y: usize) -> Result<(), DmeError> {
        self.kernel_x.check_dim(dim_x)?;
        self.kernel_y.check_dim(dim_y)?;
        Ok(())
    }

    /// Number of log-parameters.
    pub fn n_params(&self) -> usize {
        self.kernel_x.n_params() + self.kernel_y.n_params() + 3
    }

    /// `(log θ_k…, log θ_ℓ…, log σ, log λ, log ε)`.
    pub fn log_params(&self) -> Vec<f64> {
        let mut p = LogParams::default();
        p.push_kernel(&self.kernel_x);
        p.push_kernel(&self.kernel_y);
        p.extend(&[self.sigma, self.lambda, self.epsilon]);
        p.into_vec()
    }

    /// The same settings with the values at log-parameters `p` (layout of
    /// [`TtgpParams::log_params`]).
    pub fn with_log_params(&self, p: &[f64]) -> Result<Self, DmeError> {
        let mut r = LogParams::reader(p);
        let h = Self {
            kernel_x: r.kernel(&self.kernel_x)?,
            kernel_y: r.kernel(&self.kernel_y)?,
            sigma: r.take("sigma")?,
            lambda: r.take("lambda")?,
            epsilon: r.take("epsilon")?,
            ..self.clone()
        };
        r.finish()?;
        Ok(h)
    }

    /// Prior amplitude `γ² = σ²/(mε)` of `f`.
    pub fn gamma2(&self, m: usize) -> f64 {
        self.sigma * self.sigma / (m as f64 * self.epsilon)
    }

    /// Prior amplitude `β² = σ²/(nλ)` of `g`.
    pub fn beta2(&self, n: usize) -> f64 {
        self.sigma * self.sigma / (n as f64 * self.lambda)
    }

    /// A gradient in the layout of [`TtgpParams::log_params`] split into named entries;
    /// `natural` gives `∂/∂θ` (divided by the parameter) instead of `∂/∂log θ`.
    pub fn named_gradient(&self, g: &[f64], natural: bool) -> TtgpGradient {
        let p: Vec<f64> = self.log_params().iter().map(|v| v.exp()).collect();
        let val = |i: usize| if natural { g[i] / p[i] } else { g[i] };
        let (nx, ny) = (self.kernel_x.n_params(), self.kernel_y.n_params());
        let (lx, ly) = (self.kernel_x.lengthscales().len(), self.kernel_y.lengthscales().len());
        TtgpGradient {
            lengthscale_x: (0..lx).map(val).collect(),
            lengthscale_y: (nx..nx + ly).map(val).collect(),
            sigma: val(nx + ny),
            lambda: val(nx + ny + 1),
            epsilon: val(nx + ny + 2),
            alpha_x: (nx > lx).then(|| val(lx)),
            alpha_y: (ny > ly).then(|| val(nx + ly)),
        }
    }
}

impl bke_core::Params for TtgpParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        check_positive("sigma", self.sigma)?;
        check_positive("lambda", self.lambda)?;
        check_positive("epsilon", self.epsilon)?;
        self.search.validate()
    }
}

/// A TTGP log-marginal-likelihood gradient by hyperparameter name (see
/// [`TtgpParams::named_gradient`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TtgpGradient {
    /// With respect to the lengthscales of `k`.
    pub lengthscale_x: Vec<f64>,
    /// With respect to the lengthscales of `ℓ`.
    pub lengthscale_y: Vec<f64>,
    /// With respect to `σ`.
    pub sigma: f64,
    /// With respect to `λ`.
    pub lambda: f64,
    /// With respect to `ε`.
    pub epsilon: f64,
    /// With respect to `k`'s rational-quadratic shape α.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub alpha_x: Option<f64>,
    /// With respect to `ℓ`'s rational-quadratic shape α.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub alpha_y: Option<f64>,
}

/// The serde layout of [`TtgpParams`] (that of the bke 0.1 CLI's model files and JSON).
#[derive(Serialize, Deserialize)]
struct HyperRecord {
    kernel: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    kernel_y: Option<String>,
    lengthscale_x: Vec<f64>,
    lengthscale_y: Vec<f64>,
    sigma: f64,
    lambda: f64,
    epsilon: f64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    alpha_x: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    alpha_y: Option<f64>,
}

fn alpha_of(k: &Kernel) -> Option<f64> {
    match k.family() {
        KernelFamily::RationalQuadratic { alpha } => Some(alpha),
        _ => None,
    }
}

impl From<TtgpParams> for HyperRecord {
    fn from(h: TtgpParams) -> Self {
        let (fx, fy) = (h.kernel_x.family(), h.kernel_y.family());
        Self {
            kernel: fx.name().into(),
            kernel_y: (fy.name() != fx.name()).then(|| fy.name().to_string()),
            lengthscale_x: h.kernel_x.lengthscales().to_vec(),
            lengthscale_y: h.kernel_y.lengthscales().to_vec(),
            sigma: h.sigma,
            lambda: h.lambda,
            epsilon: h.epsilon,
            alpha_x: alpha_of(&h.kernel_x),
            alpha_y: alpha_of(&h.kernel_y),
        }
    }
}

impl TryFrom<HyperRecord> for TtgpParams {
    type Error = DmeError;

    fn try_from(r: HyperRecord) -> Result<Self, DmeError> {
        let family = |name: &str, alpha: Option<f64>| -> Result<KernelFamily, DmeError> {
            Ok(match name.parse::<KernelFamily>()? {
                KernelFamily::RationalQuadratic { alpha: a } => {
                    KernelFamily::RationalQuadratic { alpha: alpha.unwrap_or(a) }
                }
                f => f,
            })
        };
        let fx = family(&r.kernel, r.alpha_x)?;
        let fy = family(r.kernel_y.as_deref().unwrap_or(&r.kernel), r.alpha_y)?;
        Ok(Self {
            kernel_x: Kernel::new(fx, r.lengthscale_x)?,
            kernel_y: Kernel::new(fy, r.lengthscale_y)?,
            sigma: r.sigma,
            lambda: r.lambda,
            epsilon: r.epsilon,
            ..Self::default()
        })
    }
}

/// Which TTGP marginal likelihood (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MarginalForm {
    /// seed 004 Thm 5.3 (3): the posterior of `g` integrated out.
    Full,
    /// seed 004 Thm 5.3 (4): `g` at its MAP, dense `m × m` computation.
    #[default]
    Map,
    /// seed 004 Thm 5.3 (4), alternative form: same density as `Map`, `O(n³ + n²m)`.
    Alternative,
}

impl std::str::FromStr for MarginalForm {
    type Err = DmeError;

    /// Parses "full", "map" or "alternative" (also "alt").
    fn from_str(s: &str) -> Result<Self, DmeError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Ok(Self::Full),
            "map" => Ok(Self::Map),
            "alternative" | "alt" => Ok(Self::Alternative),
            _ => Err(crate::error::unknown_choice(
                format!("marginal likelihood form '{s}'"),
                "use full, map or alternative",
            )),
        }
    }
}

impl MarginalForm {
    /// The name accepted by `str::parse`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Map => "map",
            Self::Alternative => "alternative",
        }
    }
}

/// A log marginal likelihood and its gradient with respect to the log-parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct LogMarginal {
    /// `log p(z̃)`.
    pub value: f64,
    /// `∂ log p(z̃)/∂ log θ` in the layout of [`TtgpParams::log_params`].
    pub gradient: Vec<f64>,
}

fn scalars(h: &TtgpParams) -> Scalars {
    Scalars { sigma: h.sigma, lambda: h.lambda, epsilon: h.epsilon }
}

fn validate(data: &TaskData, h: &TtgpParams) -> Result<(), DmeError> {
    bke_core::Params::validate(h)?;
    h.check_dims(data.x.dim(), data.y.dim())?;
    check_budget(data.n(), data.m())
}

/// Refuses a TTGP whose dense matrices cannot fit in memory: the `n × n` Gram matrices of `k` and
/// `ℓ`, their factors and adjoints, the `n × m` cross-covariance and its adjoint, the `m × m`
/// task covariance and its factor.
pub(crate) fn check_budget(n: usize, m: usize) -> Result<(), DmeError> {
    let setting = format!("n = {n} transformation pairs (or inducing points) and m = {m} task points");
    let (nn, nm, mm) = (n.saturating_mul(n), n.saturating_mul(m), m.saturating_mul(m));
    let bytes = Bytes::f64s(nn).times(6).plus(Bytes::f64s(nm).times(3)).plus(Bytes::f64s(mm).times(3));
    Ok(bke_core::budget::check(&setting, bytes)?)
}

/// `log p(z̃)` of the form `hyper.form` (no gradient).
pub fn log_marginal_value<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> Result<f64, DmeError> {
    validate(data, hyper)?;
    let form = hyper.form;
    let g = Grams::new(data, hyper, form)?;
    Ok(evaluate::<B>(&g, &data.z_tilde, scalars(hyper), form, Mode::Value)?.value)
}

/// `log p(z̃)` of the form `hyper.form` and its gradient with respect to the log-parameters.
pub fn log_marginal<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> Result<LogMarginal, DmeError> {
    validate(data, hyper)?;
    let form = hyper.form;
    let g = Grams::new(data, hyper, form)?;
    let e = evaluate::<B>(&g, &data.z_tilde, scalars(hyper), form, Mode::Gradient)?;
    let adj = e.adj.expect("gradient mode");
    let mut grad = contract_params_symmetric(&hyper.kernel_x, &data.x, &adj.gk);
    let mut gy = contract_params_symmetric(&hyper.kernel_y, &data.y, &adj.gl);
    let gyt = contract_params(&hyper.kernel_y, &data.y, &data.y_tilde, &adj.glt);
    gy.iter_mut().zip(&gyt).for_each(|(a, b)| *a += b);
    if let Some(gltt) = &adj.gltt {
        let g3 = contract_params_symmetric(&hyper.kernel_y, &data.y_tilde, gltt);
        gy.iter_mut().zip(&g3).for_each(|(a, b)| *a += b);
    }
    grad.extend(gy);
    grad.extend([adj.d_log_sigma, adj.d_log_lambda, adj.d_log_epsilon]);
    Ok(LogMarginal { value: e.value, gradient: grad })
}

/// The dense `m × m` covariance of `z̃` under `hyper.form` (`Alternative` gives the `Map`
/// covariance, which it represents). For tests and small problems: `O(m²)` memory.
pub fn marginal_covariance<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> Result<Mat, DmeError> {
    validate(data, hyper)?;
    let g = Grams::new(data, hyper, MarginalForm::Full)?;
    let (n, m) = (data.n(), data.m());
    let (_, a) = transform::<B>(&g.l, &g.lt, hyper.lambda)?;
    let ka = mm::<B>(&g.k, Trans::No, &a, Trans::No)?;
    let mut c = mm::<B>(&a, Trans::Yes, &ka, Trans::No)?;
    c.as_mut_slice().iter_mut().for_each(|v| *v *= hyper.gamma2(m));
    if hyper.form == MarginalForm::Full {
        let beta2 = hyper.beta2(n);
        let lta = mm::<B>(&g.lt, Trans::Yes, &a, Trans::No)?;
        let ltt = g.ltt.as_ref().expect("built with Full");
        for ((cv, l), q) in c.as_mut_slice().iter_mut().zip(ltt.as_slice()).zip(lta.as_slice()) {
            *cv += beta2 * (l - q);
        }
    }
    add_diag(&mut c, hyper.sigma * hyper.sigma);
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    #[test]
    fn sqrt_factor_reproduces_definite_and_singular_matrices() {
        // Positive definite: the Cholesky path; rank one (all ones): the eigendecomposition path.
        let pd = Mat::from_rows(&[vec![2.0, 0.5, 0.1], vec![0.5, 1.0, 0.2], vec![0.1, 0.2, 0.7]]).unwrap();
        let ones = Mat::from_fn(3, 3, |_, _| 1.0);
        assert!(DefaultBackend::cholesky(ones.as_ref()).is_err());
        for k in [pd, ones] {
            let u = sqrt_factor::<DefaultBackend>(&k).unwrap();
            let uut = mm::<DefaultBackend>(&u, Trans::No, &u, Trans::Yes).unwrap();
            for (a, b) in uut.as_slice().iter().zip(k.as_slice()) {
                assert!((a - b).abs() < 1e-12, "{a} vs {b}");
            }
        }
    }
}
