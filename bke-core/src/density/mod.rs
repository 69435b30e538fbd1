//! Kernel student-t density estimation (Huszár & Lacoste-Julien, "A Kernel Approach to Tractable
//! Bayesian Nonparametrics", seed 003): a Normal-inverse-Wishart model in feature space, whose
//! posterior predictive (a Student-t) is kernelised and pulled back to the input space.
//!
//! # Derivation (seed eq. 1–6, re-derived; it corrects `DESIGN.md` §3.4)
//!
//! **Model (eq. 1–2).** Features `φ_n = ϕ(x_n) ∈ ℝ^D`, `φ_{1:N} | μ, Σ ~ N(μ, Σ)` i.i.d.,
//! `Σ ~ W⁻¹(σ₀² I, α)` (scale `σ₀² I`, `α` degrees of freedom), `μ | Σ ~ N(0, Σ/β)`: a
//! Normal-inverse-Wishart prior `NIW(m₀ = 0, κ₀ = β, ν₀ = α, Ψ₀ = σ₀² I)`.
//!
//! **Posterior.** By conjugacy it is `NIW(m_N, κ_N, ν_N, Ψ_N)` with `κ_N = β + N`, `ν_N = α + N`,
//! `m_N = N φ̄ /(N + β)` and
//!
//! ```text
//! Ψ_N = σ₀² I + Σ_n (φ_n − φ̄)(φ_n − φ̄)ᵀ + βN/(β+N) φ̄ φ̄ᵀ  =  σ₀² I + Φ (I − 11ᵀ/(N+β)) Φᵀ,
//! ```
//!
//! where `Φ = [φ_1, …, φ_N]` is the **uncentred** feature matrix (expand `ΦΦᵀ = Σ_n φ_nφ_nᵀ` and
//! `Φ11ᵀΦᵀ = N² φ̄φ̄ᵀ`: `ΦΦᵀ − N²φ̄φ̄ᵀ/(N+β) = Σ_n(φ_n−φ̄)(φ_n−φ̄)ᵀ + (N − N²/(N+β)) φ̄φ̄ᵀ`).
//!
//! **Predictive (eq. 3).** Integrating `N(φ | μ, Σ)` against the posterior gives the Student-t
//! `t_{ν'}(m_N, (κ_N+1)/(κ_N ν') Ψ_N)` with `ν' = ν_N − D + 1`, whose density is
//! `∝ [1 + κ_N/(κ_N+1) · φ̃ᵀ Ψ_N⁻¹ φ̃]^{−(ν'+D)/2}`, and `ν' + D = 1 + N + α`, so
//!
//! ```text
//! p(φ | φ_{1:N}) ∝ (γ + φ̃ᵀ Ψ_N⁻¹ φ̃)^{−(1+N+α)/2},   γ = (1+β+N)/(β+N),   φ̃ = φ − N φ̄/(N+β).
//! ```
//!
//! The exponent does not involve `D`, which is what lets the kernel trick through.
//!
//! **Woodbury (eq. 4).** With `M = I − 11ᵀ/(N+β)`, Sherman–Morrison gives `M⁻¹ = I + 11ᵀ/β`, and
//! Woodbury gives `Ψ_N⁻¹ = I/σ₀² − Φ (σ₀⁴ M⁻¹ + σ₀² ΦᵀΦ)⁻¹ Φᵀ`, so with `v = Φᵀφ̃`
//!
//! ```text
//! Q(x) := φ̃ᵀ Ψ_N⁻¹ φ̃ = [ φ̃ᵀφ̃ − vᵀ (σ₀² I + K + (σ₀²/β) 11ᵀ)⁻¹ v ] / σ₀².
//! ```
//!
//! We factor `A = σ₀² I + K = L Lᵀ` once (O(N³)) and treat the rank-one `(σ₀²/β) 11ᵀ` by
//! Sherman–Morrison (better conditioned than folding it into the factor when `β` is small):
//! with `w = L⁻¹v`, `u = L⁻¹1`, `ρ = σ₀²/β`,
//! `vᵀ(A + ρ11ᵀ)⁻¹v = ‖w‖² − ρ (wᵀu)² / (1 + ρ‖u‖²)`. Each query costs one triangular solve, O(N²);
//! queries are batched into matrix triangular solves of the backend.
//!
//! **Kernel trick (eq. 5).** With `k_x = (k(x, x_n))_n`, `K = ΦᵀΦ`, row sums `s = K1`, `T = 1ᵀK1`:
//!
//! ```text
//! φ̃ᵀφ̃ = k(x,x) − 2 Σ_n k(x,x_n)/(N+β) + T/(N+β)²,     v = Φᵀφ̃ = k_x − s/(N+β),     ΦᵀΦ = K.
//! ```
//!
//! **Correction to `DESIGN.md` §3.4 (and to the extraction of the seed).** There, `Φ̃` is the
//! *centred* matrix `[φ_1 − φ̄, …]`, and eq. (5) gives its centred Gram `Φ̃ᵀΦ̃`. But `Φ̃1 = 0`, so the
//! factor `(I − 11ᵀ/(N+β))` acts trivially and that reconstruction equals `σ₀²I + Φ̃Φ̃ᵀ`: it drops
//! the term `βN/(β+N) φ̄φ̄ᵀ` of `Ψ_N` (the pull of the prior mean 0). The correct expression uses the
//! uncentred `Φ` as above (equivalently, centred `Φ̃` plus that rank-one term). The two agree only as
//! `β → 0` (the seed's figures use `β = 0.01`, where the difference is small). The first formula of
//! eq. (5), for `φ̃ᵀφ̃`, is right as printed. The test `explicit_feature_map_agrees` checks the
//! kernelised computation against the textbook NIW update in an explicit feature space to 1e-10,
//! and `design_reconstruction_differs_unless_beta_small` shows the discrepancy.
//!
//! **Pull-back (eq. 6).** `q_k(x) = q(ϕ(x)) · det(G(x))^{1/2}`, `G_ij = ⟨∂_iϕ(x), ∂_jϕ(x)⟩ =
//! ∂²k(x, y)/∂x_i∂y_j |_{y=x}`. For a stationary kernel `k = f(r²)`, `G = −2f'(0) diag(ℓ⁻²)` is
//! constant (seed Appendix B) and is omitted ([`DensityKernel::log_jacobian`] returns `None`); it
//! cancels on normalisation. For the dot-product kernels of [`Polynomial`] it is computed.
//!
//! **Normalisability.** For a stationary kernel `k(x, x_n) → 0` as `‖x‖ → ∞`, so `Q(x)` tends to a
//! positive constant and `q_k` to a positive floor: `q_k` is *not* integrable on `ℝ^d`, whatever α
//! (the seed's remark that it is for `α > d − 1` holds for the parabola of its Fig. 1, not here).
//! A normalised density therefore needs a bounded domain: [`normalise()`] uses a box (the data range
//! widened by a margin) and integrates numerically in 1 and 2 dimensions. We still require
//! `α > d − 1`, the seed's condition (eq. §2.2), in [`DensityParams::check`].
//!
//! ```
//! use bke_core::density::{DensityParams, KernelStudentT};
//! use bke_core::{Kernel, Points};
//! use bke_linalg::Faer;
//! let x = Points::from_1d("x", &[-1.0, -0.8, 0.9, 1.1, 1.3]).unwrap();
//! let model = KernelStudentT::<Kernel, Faer>::fit(Kernel::se(0.5).unwrap(), &x, DensityParams::default())
//!     .unwrap();
//! let q = Points::from_1d("q", &[1.0, 5.0]).unwrap();
//! let lq = model.log_unnormalised(&q).unwrap();
//! assert!(lq[0] > lq[1]); // denser near the data
//! ```

mod kde;
mod kernels;
mod normalise;
mod select;

pub use kde::{GaussianKde, KdeBandwidth};
pub use kernels::{DensityKernel, Polynomial};
pub use normalise::{Domain, Normalisation, NormaliseOptions, NormalisedDensity, gauss_legendre, normalise};
pub use select::{Candidate, SelectOptions, Selection, select_hyperparameters};

use crate::{CoreError, Kernel, Points, check_positive};
use bke_linalg::{Backend, DefaultBackend, LinalgError, Mat};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Hyperparameters of the NIW prior (seed eq. 2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DensityParams {
    /// Inverse-Wishart degrees of freedom `α`; must exceed `d − 1` (input dimension `d`).
    /// Default `2.0` (valid up to `d = 2`).
    pub alpha: f64,
    /// Prior precision multiplier of the mean, `μ | Σ ~ N(0, Σ/β)`; `> 0`. Default `0.01` (seed Fig. 2).
    pub beta: f64,
    /// Inverse-Wishart scale `σ₀²` (scale matrix `σ₀² I`), relative to the unit kernel amplitude;
    /// `> 0`. Default `1.0`.
    pub sigma0_sq: f64,
}

impl Default for DensityParams {
    fn default() -> Self {
        Self { alpha: 2.0, beta: 0.01, sigma0_sq: 1.0 }
    }
}

impl DensityParams {
    /// Validates for input dimension `dim`: `α > d − 1` (otherwise the pulled-back density is
    /// improper, seed §2.2), `β > 0`, `σ₀² > 0`, all finite.
    pub fn check(&self, dim: usize) -> Result<(), CoreError> {
        check_positive("beta", self.beta)?;
        check_positive("sigma0_sq", self.sigma0_sq)?;
        let min = dim as f64 - 1.0;
        if !(self.alpha.is_finite() && self.alpha > min) {
            return Err(CoreError::InvalidParameter {
                name: "alpha".into(),
                value: self.alpha,
                reason: format!(
                    "must be finite and exceed d - 1 = {min} for {dim}-dimensional data, \
                     otherwise the density is improper"
                ),
            });
        }
        Ok(())
    }

    /// `γ = (1 + β + N)/(β + N)` (eq. 3).
    pub fn gamma(&self, n: usize) -> f64 {
        (1.0 + self.beta + n as f64) / (self.beta + n as f64)
    }

    /// The exponent `(1 + N + α)/2` (eq. 3).
    pub fn exponent(&self, n: usize) -> f64 {
        0.5 * (1.0 + n as f64 + self.alpha)
    }
}

/// The fitted kernel student-t density: `log q_k(x) = −(1+N+α)/2 · log(γ + Q(x)) + log J(x)`
/// (eq. 3–6), fitted once in O(N³), O(N²) per query. See the module docs for the formulas.
#[derive(Debug, Clone)]
pub struct KernelStudentT<K: DensityKernel = Kernel, B: Backend = DefaultBackend> {
    kernel: K,
    params: DensityParams,
    x: Points,
    /// Lower Cholesky factor of `A = σ₀² I + K`.
    chol: Mat,
    /// `u = L⁻¹ 1`.
    u: Vec<f64>,
    /// `‖u‖² = 1ᵀA⁻¹1`.
    uu: f64,
    /// Row sums `s = K1`.
    row_sums: Vec<f64>,
    /// `T = 1ᵀK1`.
    total: f64,
    _backend: PhantomData<B>,
}

/// Queries per batched triangular solve.
const BATCH: usize = 256;

impl<K: DensityKernel, B: Backend> KernelStudentT<K, B> {
    /// Fits the model to the points `x` (at least one): builds `K`, factors `σ₀² I + K`.
    /// Errors on invalid hyperparameters ([`DensityParams::check`]), a kernel that does not fit the
    /// dimension, or a factorisation failure (then increase `σ₀²`).
    pub fn fit(kernel: K, x: &Points, params: DensityParams) -> Result<Self, CoreError> {
        x.check_len("density training data", 1)?;
        kernel.check_dim(x.dim())?;
        params.check(x.dim())?;
        let n = x.len();
        let mut a = kernel_gram(&kernel, x);
        let row_sums: Vec<f64> = (0..n).map(|j| a.col(j).iter().sum()).collect();
        let total = row_sums.iter().sum();
        for i in 0..n {
            a[(i, i)] += params.sigma0_sq;
        }
        let chol = B::cholesky(a.as_ref()).map_err(|e| match e {
            LinalgError::NotPositiveDefinite { pivot } => CoreError::InvalidParameter {
                name: "sigma0_sq".into(),
                value: params.sigma0_sq,
                reason: format!(
                    "σ₀² I + K is numerically not positive definite (pivot {pivot}); increase sigma0_sq"
                ),
            },
            e => CoreError::Linalg(e),
        })?;
        let mut u = vec![1.0; n];
        B::solve_lower_in_place(chol.as_ref(), bke_linalg::MatMut::col_vector(&mut u))?;
        let uu = u.iter().map(|v| v * v).sum();
        Ok(Self { kernel, params, x: x.clone(), chol, u, uu, row_sums, total, _backend: PhantomData })
    }

    /// The kernel.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The hyperparameters.
    pub fn params(&self) -> DensityParams {
        self.params
    }

    /// The training points.
    pub fn data(&self) -> &Points {
        &self.x
    }

    /// Input dimension `d`.
    pub fn dim(&self) -> usize {
        self.x.dim()
    }

    /// `Q(x) = φ̃ᵀ Ψ_N⁻¹ φ̃` (eq. 4–5) at every query point, O(N²) each, batched and parallel.
    pub fn mahalanobis(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        self.x.check_dim("query points", q.dim())?;
        let n = self.x.len();
        let nb = self.params.beta + n as f64;
        let rho = self.params.sigma0_sq / self.params.beta;
        let mut out = vec![0.0; q.len()];
        out.par_chunks_mut(BATCH).enumerate().try_for_each(|(c, chunk)| -> Result<(), CoreError> {
            let start = c * BATCH;
            let m = chunk.len();
            let mut v = Mat::zeros(n, m);
            let mut ptp = vec![0.0; m];
            for j in 0..m {
                let xq = q.point(start + j);
                let col = v.col_mut(j);
                let mut sum = 0.0;
                for i in 0..n {
                    let k = self.kernel.eval(xq, self.x.point(i));
                    sum += k;
                    col[i] = k - self.row_sums[i] / nb;
                }
                ptp[j] = self.kernel.eval(xq, xq) - 2.0 * sum / nb + self.total / (nb * nb);
            }
            B::solve_lower_in_place(self.chol.as_ref(), v.as_mut())?;
            for j in 0..m {
                let w = v.col(j);
                let ww: f64 = w.iter().map(|a| a * a).sum();
                let wu: f64 = w.iter().zip(&self.u).map(|(a, b)| a * b).sum();
                let quad = ww - rho * wu * wu / (1.0 + rho * self.uu);
                chunk[j] = ((ptp[j] - quad) / self.params.sigma0_sq).max(0.0);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// `log q(ϕ(x))`, the restricted feature-space predictive (eq. 4) without the Jacobian:
    /// `−(1+N+α)/2 · log(γ + Q(x))`.
    pub fn log_restricted(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        let n = self.x.len();
        let (g, e) = (self.params.gamma(n), self.params.exponent(n));
        Ok(self.mahalanobis(q)?.into_iter().map(|m| -e * (g + m).ln()).collect())
    }

    /// The unnormalised log density `log q_k(x)` of eq. (6): [`Self::log_restricted`] plus
    /// `½ log det G(x)` where the kernel's Jacobian varies (omitted where it is constant).
    pub fn log_unnormalised(&self, q: &Points) -> Result<Vec<f64>, CoreError> {
        let mut out = self.log_restricted(q)?;
        out.par_iter_mut().enumerate().for_each(|(i, v)| {
            if let Some(j) = self.kernel.log_jacobian(q.point(i)) {
                *v += j;
            }
        });
        Ok(out)
    }
}

/// The Gram matrix `K[i, j] = k(x_i, x_j)` of any density kernel (parallel over columns).
pub fn kernel_gram<K: DensityKernel>(kernel: &K, x: &Points) -> Mat {
    let n = x.len();
    let mut k = Mat::zeros(n, n);
    if n > 0 {
        k.as_mut_slice().par_chunks_mut(n).enumerate().for_each(|(j, col)| {
            let y = x.point(j);
            for (i, v) in col.iter_mut().enumerate() {
                *v = kernel.eval(x.point(i), y);
            }
        });
    }
    k
}

/// `log Σ exp(v_i)` (−∞ for an empty slice or all −∞).
pub(crate) fn log_sum_exp(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = v.clone().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + v.map(|a| (a - m).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests;
