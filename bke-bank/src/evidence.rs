//! The conjugate Normal–inverse-gamma evidence of Bayesian linear regression on the random features
//! (seed 001 eq. (11), in its standard conjugate form; the seed's `Λ₀ = σ_ε⁻² I` is a typo for a
//! prior precision that does not involve the noise twice).
//!
//! With `β | σ² ~ N(0, σ² Λ₀⁻¹)`, `Λ₀ = λ₀ I`, `σ² ~ IG(a₀, b₀)` and `y | β, σ² ~ N(Φβ, σ² I)`:
//! `Λ_n = ΦᵀΦ + Λ₀`, `μ_n = Λ_n⁻¹ Φᵀy`, `a_n = a₀ + N/2`, `b_n = b₀ + ½(yᵀy − μ_nᵀΛ_nμ_n)` and
//! `log p(y) = −(N/2) log 2π + ½(log|Λ₀| − log|Λ_n|) + a₀ log b₀ − a_n log b_n + log Γ(a_n) − log Γ(a₀)`.
//! Given the lower factor `L` of `Λ_n`, `μ_nᵀΛ_nμ_n = ‖L⁻¹Φᵀy‖²` and `log|Λ_n| = 2 Σ log L_ii`.

use crate::error::{BankError, check_positive};
pub use crate::priors::LogNormalPrior;
use bke_core::numeric::LN_2PI;
use bke_core::special::ln_gamma;
use bke_linalg::{Backend, MatRef, Trans};
use serde::{Deserialize, Serialize};

/// The Normal–inverse-gamma prior on the feature weights and the noise at given values (the sampler's
/// current state; [`crate::BankParams`] says which are learned).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NigParams {
    /// Inverse-gamma shape `a₀ > 0` of the noise variance. Default `1`.
    pub a0: f64,
    /// Inverse-gamma scale `b₀ > 0` of the noise variance. Default `0.1` (noise variance around a
    /// tenth of a standardised target's).
    pub b0: f64,
    /// Prior precision `λ₀ > 0` of the weights relative to the noise: `β | σ² ~ N(0, σ²/λ₀ I)`.
    /// With the `1/√M` feature scaling the prior signal variance is `σ²/λ₀` for every `M`. Default `1`.
    pub prior_precision: f64,
}

impl Default for NigParams {
    fn default() -> Self {
        Self { a0: 1.0, b0: 0.1, prior_precision: 1.0 }
    }
}

impl NigParams {
    /// Validates the hyperparameters.
    pub fn check(&self) -> Result<(), BankError> {
        check_positive("inverse-gamma shape a0", self.a0)?;
        check_positive("inverse-gamma scale b0", self.b0)?;
        check_positive("prior precision", self.prior_precision)
    }

    /// `(a_n, b_n)` from `N`, `yᵀy` and `μ_nᵀΛ_nμ_n`. `b_n ≥ b₀` in exact arithmetic; rounding is
    /// clamped there.
    pub fn posterior_ig(&self, n: usize, yty: f64, quad: f64) -> (f64, f64) {
        let an = self.a0 + 0.5 * n as f64;
        let bn = self.b0 + 0.5 * (yty - quad).max(0.0);
        (an, bn)
    }

    /// `log p(y)` from `N`, the number of features `2M`, `log|Λ_n|`, `yᵀy` and `μ_nᵀΛ_nμ_n`.
    pub fn log_evidence(&self, n: usize, features: usize, logdet: f64, yty: f64, quad: f64) -> f64 {
        let (an, bn) = self.posterior_ig(n, yty, quad);
        -0.5 * n as f64 * LN_2PI
            + 0.5 * (features as f64 * self.prior_precision.ln() - logdet)
            + self.a0 * self.b0.ln()
            - an * bn.ln()
            + ln_gamma(an)
            - ln_gamma(self.a0)
    }
}

/// The evidence computed densely from `Φ` and `y`: `Λ_n = ΦᵀΦ + λ₀I` is formed and factorised, and
/// `μ_nᵀΛ_nμ_n` is taken as `(Φᵀy)ᵀ μ_n` with `μ_n` from a full solve. `O(NM² + M³)`; the oracle of
/// the sampler's low-rank bookkeeping.
pub fn log_evidence_dense<B: Backend>(phi: MatRef<'_>, y: &[f64], nig: &NigParams) -> Result<f64, BankError> {
    let f = phi.ncols();
    let mut lam = B::gram(phi);
    for i in 0..f {
        lam[(i, i)] += nig.prior_precision;
    }
    let l = B::cholesky(lam.as_ref())?;
    let mut b = vec![0.0; f];
    B::gemv(1.0, phi, Trans::Yes, y, 0.0, &mut b)?;
    let mut mu = b.clone();
    B::cholesky_solve_vec_in_place(l.as_ref(), &mut mu)?;
    let quad: f64 = b.iter().zip(&mu).map(|(a, c)| a * c).sum();
    let yty: f64 = y.iter().map(|v| v * v).sum();
    Ok(nig.log_evidence(y.len(), f, B::cholesky_logdet(l.as_ref()), yty, quad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::{DefaultBackend as B, Mat};

    /// The evidence must equal the marginal density of y computed directly: y ~ multivariate t with
    /// 2a₀ dof, location 0 and shape (b₀/a₀)(I + ΦΦᵀ/λ₀).
    #[test]
    fn evidence_equals_the_multivariate_t_marginal() {
        let n = 6;
        let phi = Mat::from_fn(n, 3, |i, j| ((i * 7 + j * 3) as f64 * 0.37).sin());
        let y: Vec<f64> = (0..n).map(|i| (i as f64 * 0.9).cos() + 0.1 * i as f64).collect();
        let nig = NigParams { a0: 2.5, b0: 0.7, prior_precision: 0.4 };
        let ev = log_evidence_dense::<B>(phi.as_ref(), &y, &nig).unwrap();
        let mut s = Mat::from_fn(n, n, |i, j| {
            let k: f64 = (0..3).map(|c| phi[(i, c)] * phi[(j, c)]).sum::<f64>() / nig.prior_precision;
            (k + if i == j { 1.0 } else { 0.0 }) * nig.b0 / nig.a0
        });
        let l = B::cholesky(s.as_ref()).unwrap();
        let mut z = y.clone();
        bke_linalg::update::forward_substitute(l.as_ref(), &mut z);
        let q: f64 = z.iter().map(|v| v * v).sum();
        let nu = 2.0 * nig.a0;
        let nf = n as f64;
        let t = ln_gamma((nu + nf) / 2.0)
            - ln_gamma(nu / 2.0)
            - 0.5 * nf * (nu * std::f64::consts::PI).ln()
            - 0.5 * B::cholesky_logdet(l.as_ref())
            - 0.5 * (nu + nf) * (q / nu).ln_1p();
        assert!((ev - t).abs() < 1e-10, "{ev} vs {t}");
        s[(0, 0)] += 0.0;
    }
}
