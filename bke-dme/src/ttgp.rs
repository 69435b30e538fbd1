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
mod params;

pub use fitted::{StartResult, Ttgp};
pub(crate) use marginal::{Grams, Mode, Scalars, check_budget, evaluate, sqrt_factor, transform};
pub use marginal::{LogMarginal, flops, log_marginal, log_marginal_value, marginal_covariance};
pub use params::{MarginalForm, TtgpGradient, TtgpParams};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::mm;
    use bke_linalg::{Backend, DefaultBackend, Mat, Trans};

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
