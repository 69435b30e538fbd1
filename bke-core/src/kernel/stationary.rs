//! Stationary kernels: the families [`KernelFamily`] and the kernel with its lengthscales [`Kernel`].
//!
//! Stationary kernels `k(x, y) = f(r²)` of the scaled squared distance
//! `r² = Σ_d (x_d − y_d)² / ℓ_d²` (one lengthscale: isotropic; one per dimension: ARD), all with unit
//! amplitude `k(x, x) = 1`, with derivatives with respect to the inputs and to the log-hyperparameters.
//!
//! | family | `f(r²)` | `f'(r²) = ∂f/∂(r²)` |
//! |---|---|---|
//! | squared exponential | `exp(−r²/2)` | `−f/2` |
//! | Laplace (exponential) | `exp(−r)` | `−exp(−r)/(2r)` (0 at r = 0: subgradient) |
//! | Matérn 3/2 | `(1 + √3 r) exp(−√3 r)` | `−(3/2) exp(−√3 r)` |
//! | Matérn 5/2 | `(1 + √5 r + 5r²/3) exp(−√5 r)` | `−(5/6)(1 + √5 r) exp(−√5 r)` |
//! | rational quadratic (α) | `(1 + r²/(2α))^(−α)` | `−½ (1 + r²/(2α))^(−α−1)` |
//!
//! Chain rule: `∂k/∂x_d = 2 f'(r²)(x_d − y_d)/ℓ_d²`, `∂k/∂log ℓ_d = −2 f'(r²)(x_d − y_d)²/ℓ_d²`
//! (summed over d for an isotropic lengthscale), and for the rational quadratic
//! `∂k/∂log α = α k [u/(1+u) − log(1+u)]`, `u = r²/(2α)`.

use crate::{CoreError, Points, error::check_positive};
use bke_linalg::Mat;
use rayon::prelude::*;

/// The shape `f` of a stationary kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelFamily {
    /// Squared exponential (Gaussian, RBF).
    SquaredExponential,
    /// Laplace / exponential, Matérn 1/2.
    Laplace,
    /// Matérn ν = 3/2.
    Matern32,
    /// Matérn ν = 5/2.
    Matern52,
    /// Rational quadratic with shape `alpha > 0`.
    RationalQuadratic {
        /// Shape parameter α (α → ∞ gives the squared exponential).
        alpha: f64,
    },
}

impl KernelFamily {
    /// Name used in outputs ("se", "laplace", "matern32", "matern52", "rq").
    pub fn name(&self) -> &'static str {
        match self {
            KernelFamily::SquaredExponential => "se",
            KernelFamily::Laplace => "laplace",
            KernelFamily::Matern32 => "matern32",
            KernelFamily::Matern52 => "matern52",
            KernelFamily::RationalQuadratic { .. } => "rq",
        }
    }

    /// The family's spelling in every bke interface: [`KernelFamily::name`], with the rational
    /// quadratic's shape appended (`rq:0.5`) unless it is 1.
    pub fn spec(&self) -> String {
        match *self {
            KernelFamily::RationalQuadratic { alpha } if alpha != 1.0 => format!("rq:{alpha}"),
            f => f.name().to_string(),
        }
    }

    /// `(f(r²), f'(r²))`.
    #[inline]
    pub fn profile(&self, r2: f64) -> (f64, f64) {
        match *self {
            KernelFamily::SquaredExponential => {
                let f = crate::special::exp_neg(0.5 * r2);
                (f, -0.5 * f)
            }
            KernelFamily::Laplace => {
                let r = r2.sqrt();
                let f = (-r).exp();
                (f, if r > 0.0 { -f / (2.0 * r) } else { 0.0 })
            }
            KernelFamily::Matern32 => {
                let s = (3.0 * r2).sqrt();
                let e = (-s).exp();
                ((1.0 + s) * e, -1.5 * e)
            }
            KernelFamily::Matern52 => {
                let s = (5.0 * r2).sqrt();
                let e = (-s).exp();
                ((1.0 + s + 5.0 * r2 / 3.0) * e, -(5.0 / 6.0) * (1.0 + s) * e)
            }
            KernelFamily::RationalQuadratic { alpha } => {
                let b = 1.0 + r2 / (2.0 * alpha);
                let f = b.powf(-alpha);
                (f, -0.5 * f / b)
            }
        }
    }
}

/// The one kernel-name parser of bke (CLI flags, model files, Python): `se` (also `rbf`,
/// `gaussian`), `laplace` (also `exponential`, `matern12`), `matern32`, `matern52`, `rq` (α = 1) or
/// `rq:ALPHA`. Case-insensitive. Inverse of [`KernelFamily::spec`].
impl std::str::FromStr for KernelFamily {
    type Err = CoreError;

    fn from_str(s: &str) -> Result<Self, CoreError> {
        let lower = s.trim().to_ascii_lowercase();
        let bad = || CoreError::InvalidChoice {
            what: format!("kernel '{s}'"),
            reason: "use se, laplace, matern32, matern52, rq or rq:ALPHA (ALPHA > 0)".into(),
        };
        Ok(match lower.as_str() {
            "se" | "rbf" | "gaussian" | "squared-exponential" => KernelFamily::SquaredExponential,
            "laplace" | "exponential" | "matern12" => KernelFamily::Laplace,
            "matern32" => KernelFamily::Matern32,
            "matern52" => KernelFamily::Matern52,
            "rq" => KernelFamily::RationalQuadratic { alpha: 1.0 },
            other => {
                let alpha: f64 = other.strip_prefix("rq:").ok_or_else(bad)?.parse().map_err(|_| bad())?;
                if !(alpha.is_finite() && alpha > 0.0) {
                    return Err(bad());
                }
                KernelFamily::RationalQuadratic { alpha }
            }
        })
    }
}

/// A stationary kernel: a family and its lengthscale(s).
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    family: KernelFamily,
    lengthscales: Vec<f64>,
}

impl Kernel {
    /// A kernel with one lengthscale (isotropic) or one per dimension (ARD). Errors on non-positive
    /// or non-finite lengthscales or α.
    pub fn new(family: KernelFamily, lengthscales: Vec<f64>) -> Result<Self, CoreError> {
        if lengthscales.is_empty() {
            return Err(CoreError::Empty { what: "lengthscales".into(), needed: 1 });
        }
        for &l in &lengthscales {
            check_positive("lengthscale", l)?;
        }
        if let KernelFamily::RationalQuadratic { alpha } = family {
            check_positive("rational quadratic alpha", alpha)?;
        }
        Ok(Self { family, lengthscales })
    }

    /// Isotropic squared exponential `exp(−‖x − y‖²/(2ℓ²))`.
    pub fn se(lengthscale: f64) -> Result<Self, CoreError> {
        Self::new(KernelFamily::SquaredExponential, vec![lengthscale])
    }

    /// ARD squared exponential `exp(−½ Σ_d (x_d − y_d)²/ℓ_d²)`.
    pub fn se_ard(lengthscales: Vec<f64>) -> Result<Self, CoreError> {
        Self::new(KernelFamily::SquaredExponential, lengthscales)
    }

    /// The family.
    pub fn family(&self) -> KernelFamily {
        self.family
    }

    /// The lengthscales (one, or one per dimension).
    pub fn lengthscales(&self) -> &[f64] {
        &self.lengthscales
    }

    /// Whether there is one lengthscale per dimension.
    pub fn is_ard(&self) -> bool {
        self.lengthscales.len() > 1
    }

    /// Errors unless the kernel can be applied to points of dimension `dim`.
    pub fn check_dim(&self, dim: usize) -> Result<(), CoreError> {
        if self.is_ard() && self.lengthscales.len() != dim {
            return Err(CoreError::DimensionMismatch {
                what: "ARD lengthscales".into(),
                expected: dim,
                found: self.lengthscales.len(),
            });
        }
        Ok(())
    }

    #[inline]
    fn ell(&self, d: usize) -> f64 {
        if self.is_ard() { self.lengthscales[d] } else { self.lengthscales[0] }
    }

    /// `r² = Σ_d (x_d − y_d)²/ℓ_d²`.
    #[inline]
    pub fn scaled_sqdist(&self, x: &[f64], y: &[f64]) -> f64 {
        if self.is_ard() {
            x.iter().zip(y).zip(&self.lengthscales).map(|((a, b), l)| ((a - b) / l).powi(2)).sum()
        } else {
            let l = self.lengthscales[0];
            x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / (l * l)
        }
    }

    /// `k(x, y)`.
    #[inline]
    pub fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        self.family.profile(self.scaled_sqdist(x, y)).0
    }

    /// `k(x, y)`, and `∂k/∂x` written to `grad` (length D).
    pub fn eval_grad_x(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let (f, fp) = self.family.profile(self.scaled_sqdist(x, y));
        for (d, g) in grad.iter_mut().enumerate() {
            let l = self.ell(d);
            *g = 2.0 * fp * (x[d] - y[d]) / (l * l);
        }
        f
    }

    /// Number of log-hyperparameters: the lengthscales, then α for the rational quadratic.
    pub fn n_params(&self) -> usize {
        self.lengthscales.len() + usize::from(matches!(self.family, KernelFamily::RationalQuadratic { .. }))
    }

    /// `k(x, y)`, and `∂k/∂log θ_p` for every log-hyperparameter (see [`Kernel::n_params`]) written
    /// to `grad`.
    pub fn eval_grad_params(&self, x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let r2 = self.scaled_sqdist(x, y);
        let (f, fp) = self.family.profile(r2);
        let nl = self.lengthscales.len();
        if self.is_ard() {
            for d in 0..nl {
                let l = self.lengthscales[d];
                grad[d] = -2.0 * fp * (x[d] - y[d]).powi(2) / (l * l);
            }
        } else {
            grad[0] = -2.0 * fp * r2;
        }
        if let KernelFamily::RationalQuadratic { alpha } = self.family {
            let u = r2 / (2.0 * alpha);
            grad[nl] = alpha * f * (u / (1.0 + u) - u.ln_1p());
        }
        f
    }

    /// The log-hyperparameters `(log ℓ…, [log α])`.
    pub fn log_params(&self) -> Vec<f64> {
        let mut p: Vec<f64> = self.lengthscales.iter().map(|l| l.ln()).collect();
        if let KernelFamily::RationalQuadratic { alpha } = self.family {
            p.push(alpha.ln());
        }
        p
    }

    /// The same family with log-hyperparameters `p` (as in [`Kernel::log_params`]).
    pub fn with_log_params(&self, p: &[f64]) -> Result<Self, CoreError> {
        if p.len() != self.n_params() {
            return Err(CoreError::DimensionMismatch {
                what: "log-hyperparameters".into(),
                expected: self.n_params(),
                found: p.len(),
            });
        }
        let nl = self.lengthscales.len();
        let family = match self.family {
            KernelFamily::RationalQuadratic { .. } => KernelFamily::RationalQuadratic { alpha: p[nl].exp() },
            f => f,
        };
        Self::new(family, p[..nl].iter().map(|v| v.exp()).collect())
    }

    /// The cross Gram matrix `K[i, j] = k(x_i, y_j)` (`|xs| × |ys|`), computed in parallel over columns.
    pub fn cross_gram(&self, xs: &Points, ys: &Points) -> Result<Mat, CoreError> {
        xs.check_dim("second point set", ys.dim())?;
        self.check_dim(xs.dim())?;
        let (n, m) = (xs.len(), ys.len());
        let bytes = crate::budget::Bytes::f64s(n).times(m);
        crate::budget::check(&format!("a {n} × {m} Gram matrix ({n} and {m} points)"), bytes)?;
        let mut k = Mat::zeros(n, m);
        if n > 0 {
            k.as_mut_slice().par_chunks_mut(n).enumerate().for_each(|(j, col)| {
                let y = ys.point(j);
                for (i, v) in col.iter_mut().enumerate() {
                    *v = self.eval(xs.point(i), y);
                }
            });
        }
        Ok(k)
    }

    /// The symmetric Gram matrix `K[i, j] = k(x_i, x_j)`.
    pub fn gram(&self, xs: &Points) -> Result<Mat, CoreError> {
        self.cross_gram(xs, xs)
    }
}
