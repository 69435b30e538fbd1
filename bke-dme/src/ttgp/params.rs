//! The TTGP's hyperparameters ([`TtgpParams`]: kernels, noise, regularisers, what is learned), their
//! serde form (the model-file and JSON layout) and the marginal likelihood forms ([`MarginalForm`]).

use crate::DmeError;
use crate::learn::{Learn, MultiStartOptions};
use bke_core::numeric::LogParams;
use bke_core::{Kernel, KernelFamily, check_positive};
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
        if s.trim().eq_ignore_ascii_case("alt") {
            return Ok(Self::Alternative);
        }
        crate::error::parse_named(s, "marginal likelihood form", Self::NAMES)
    }
}

impl MarginalForm {
    const NAMES: &[(Self, &'static str)] =
        &[(Self::Full, "full"), (Self::Map, "map"), (Self::Alternative, "alternative")];

    /// The name accepted by `str::parse`.
    pub fn name(self) -> &'static str {
        crate::error::name_of(self, Self::NAMES)
    }
}
