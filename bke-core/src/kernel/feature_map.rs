//! Kernels for the density estimator: anything that evaluates `k(x, y) = ⟨ϕ(x), ϕ(y)⟩` and knows the
//! Jacobian term of seed 003 eq. (6).

use super::stationary::Kernel;
use crate::{CoreError, check_positive};

/// A positive-definite kernel `k(x, y) = ⟨ϕ(x), ϕ(y)⟩` with the pull-back Jacobian of seed 003 eq. (6):
/// `½ log det G(x)`, `G_ij(x) = ⟨∂_iϕ(x), ∂_jϕ(x)⟩ = ∂²k(x, y)/∂x_i∂y_j |_{y = x}`.
pub trait DensityKernel: Sync + Send {
    /// `k(x, y)`.
    fn eval(&self, x: &[f64], y: &[f64]) -> f64;

    /// Errors unless the kernel applies to points of dimension `dim`.
    fn check_dim(&self, dim: usize) -> Result<(), CoreError>;

    /// `½ log det G(x)`, or `None` when `G` does not depend on `x` (shift-invariant kernels,
    /// seed 003 App. B): the constant is then left out of the unnormalised density and cancels on
    /// normalisation.
    fn log_jacobian(&self, x: &[f64]) -> Option<f64>;

    /// The stationary kernel `k(x, y) = κ(‖(x − y)/ℓ‖)` (`κ(0) = 1`, decreasing to 0) that `self`
    /// is, if it is one: its density has a positive floor far from the data, continues beyond the
    /// normalisation box with a Cauchy tail weight, and its normaliser has a rigorous lower bound
    /// (`density::normalise` module docs). Default `None`.
    fn stationary(&self) -> Option<&Kernel> {
        None
    }
}

/// The stationary kernels of bke-core are shift-invariant: constant Jacobian
/// `G = −2 f'(0) diag(ℓ⁻²)` (infinite for the non-differentiable Laplace kernel), omitted.
impl DensityKernel for Kernel {
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        Kernel::eval(self, x, y)
    }

    fn check_dim(&self, dim: usize) -> Result<(), CoreError> {
        Kernel::check_dim(self, dim)
    }

    fn log_jacobian(&self, _x: &[f64]) -> Option<f64> {
        None
    }

    fn stationary(&self) -> Option<&Kernel> {
        Some(self)
    }
}

/// A dot-product (polynomial) kernel `k(x, y) = g(xᵀy)`, `g(s) = Σ_p w_p s^p`, `w_p ≥ 0`.
///
/// Its feature map stacks the scaled tensor powers `√w_p x^{⊗p}`; in one dimension with weights
/// `(0, 1, 1)` it is exactly the seed's Fig. 1 map `ϕ(x) = (x, x²)`, `k(x, y) = xy + x²y²`.
/// Jacobian: `G(x) = g'(s) I + g''(s) x xᵀ` at `s = ‖x‖²`, so
/// `det G = g'(s)^{d−1} (g'(s) + s g''(s))` (for Fig. 1: `1 + 4x²`, the seed's `√(1+4x²)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Polynomial {
    weights: Vec<f64>,
}

impl Polynomial {
    /// `k(x, y) = Σ_p weights[p] (xᵀy)^p`. Errors on an empty list, negative or non-finite weights,
    /// or weights that vanish for every degree `≥ 1` (no information about `x`).
    pub fn new(weights: Vec<f64>) -> Result<Self, CoreError> {
        if weights.len() < 2 {
            return Err(CoreError::Empty {
                what: "polynomial kernel weights (degree ≥ 1)".into(),
                needed: 2,
            });
        }
        for &w in &weights {
            if !(w.is_finite() && w >= 0.0) {
                return Err(CoreError::InvalidParameter {
                    name: "polynomial weight".into(),
                    value: w,
                    reason: "must be finite and non-negative (positive-definite kernel)".into(),
                });
            }
        }
        check_positive(
            "largest polynomial weight of degree ≥ 1",
            weights[1..].iter().cloned().fold(0.0, f64::max),
        )?;
        Ok(Self { weights })
    }

    /// The seed's Fig. 1 kernel `k(x, y) = xy + x²y²`, feature map `(x, x²)` in one dimension.
    pub fn quadratic_features() -> Self {
        Self { weights: vec![0.0, 1.0, 1.0] }
    }

    /// The weights `w_p`.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// `(g(s), g'(s), g''(s))`.
    pub fn profile(&self, s: f64) -> (f64, f64, f64) {
        let (mut g, mut g1, mut g2) = (0.0, 0.0, 0.0);
        for &w in self.weights.iter().rev() {
            // Horner: g = g s + w_p, g' = g' s + g_old, g'' = g'' s + 2 g'_old.
            g2 = g2 * s + 2.0 * g1;
            g1 = g1 * s + g;
            g = g * s + w;
        }
        (g, g1, g2)
    }
}

impl DensityKernel for Polynomial {
    fn eval(&self, x: &[f64], y: &[f64]) -> f64 {
        let s: f64 = x.iter().zip(y).map(|(a, b)| a * b).sum();
        self.profile(s).0
    }

    fn check_dim(&self, _dim: usize) -> Result<(), CoreError> {
        Ok(())
    }

    fn log_jacobian(&self, x: &[f64]) -> Option<f64> {
        let s: f64 = x.iter().map(|a| a * a).sum();
        let (_, g1, g2) = self.profile(s);
        let d = x.len() as f64;
        Some(0.5 * ((d - 1.0) * g1.ln() + (g1 + s * g2).ln()))
    }
}
