//! The hyperpriors of BaNK's learned hyperparameters (extensions of seed 001, which fixes them):
//! a Gamma prior on the DP base scale `ψ₀` ([`crate::dpmix`]), a log-normal prior on the prior
//! precision `λ₀` of the regression weights ([`crate::regression`]) and an inverse-gamma prior on the
//! prior variance `s²` of the classification weights ([`crate::classification`]).

use crate::error::{BankError, check_positive};
use bke_core::numeric::LN_2PI;
use bke_core::special::ln_gamma;
use rand::Rng;
use rand_distr::{Distribution, Gamma};
use serde::{Deserialize, Serialize};

/// A `Gamma(shape, rate)` hyperprior.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GammaPrior {
    /// Shape `a > 0`.
    pub shape: f64,
    /// Rate `b > 0` (mean `a/b`).
    pub rate: f64,
}

impl GammaPrior {
    /// Validates shape and rate (`what` names the prior in errors).
    pub fn check(&self, what: &str) -> Result<(), BankError> {
        check_positive(&format!("{what} shape"), self.shape)?;
        check_positive(&format!("{what} rate"), self.rate)
    }

    /// A draw.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> f64 {
        gamma_draw(self.shape, self.rate, rng)
    }
}

/// A `Gamma(shape, rate)` draw, kept away from zero.
pub(crate) fn gamma_draw<R: Rng>(shape: f64, rate: f64, rng: &mut R) -> f64 {
    let g = Gamma::new(shape, 1.0 / rate).expect("positive shape and rate");
    g.sample(rng).max(f64::MIN_POSITIVE)
}

/// A log-normal hyperprior: `log θ ~ N(log median, log_sd²)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LogNormalPrior {
    /// The prior median of `θ` (`> 0`).
    pub median: f64,
    /// The standard deviation of `log θ` (`> 0`).
    pub log_sd: f64,
}

impl LogNormalPrior {
    /// Validates the prior (`what` names it in errors).
    pub fn check(&self, what: &str) -> Result<(), BankError> {
        check_positive(&format!("{what} median"), self.median)?;
        check_positive(&format!("{what} log_sd"), self.log_sd)
    }

    /// `log N(u | log median, log_sd²)`, the density of `u = log θ`.
    pub fn log_density(&self, u: f64) -> f64 {
        let z = (u - self.median.ln()) / self.log_sd;
        -0.5 * (z * z + LN_2PI) - self.log_sd.ln()
    }

    /// A draw of `θ`.
    pub fn sample<R: rand::Rng>(&self, rng: &mut R) -> f64 {
        let z: f64 = rng.sample(rand_distr::StandardNormal);
        (self.median.ln() + self.log_sd * z).exp()
    }
}

/// An inverse-gamma hyperprior `IG(shape, scale)`: density `∝ θ^{−shape−1} exp(−scale/θ)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InvGammaPrior {
    /// Shape `a > 0`.
    pub shape: f64,
    /// Scale `b > 0` (mode `b/(a+1)`).
    pub scale: f64,
}

impl InvGammaPrior {
    /// Validates shape and scale (`what` names the prior in errors).
    pub fn check(&self, what: &str) -> Result<(), BankError> {
        check_positive(&format!("{what} shape"), self.shape)?;
        check_positive(&format!("{what} scale"), self.scale)
    }

    /// `log IG(θ | a, b) = a log b − log Γ(a) − (a+1) log θ − b/θ`.
    pub fn log_density(&self, theta: f64) -> f64 {
        self.shape * self.scale.ln()
            - ln_gamma(self.shape)
            - (self.shape + 1.0) * theta.ln()
            - self.scale / theta
    }

    /// A draw of `θ`.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> f64 {
        1.0 / gamma_draw(self.shape, self.scale, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each log density integrates to one on a fine grid (of θ or log θ as documented).
    #[test]
    fn densities_are_normalised() {
        let ln = LogNormalPrior { median: 0.7, log_sd: 1.3 };
        let h = 1e-3;
        let total: f64 = (-20_000..20_000).map(|i| ln.log_density(i as f64 * h).exp() * h).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let ig = InvGammaPrior { shape: 2.5, scale: 1.5 };
        let total: f64 = (-20_000..20_000)
            .map(|i| {
                let u = i as f64 * h;
                ig.log_density(u.exp()).exp() * u.exp() * h
            })
            .sum();
        assert!((total - 1.0).abs() < 1e-6, "{total}");
    }
}
