//! The prior covariance `r_θ` of the Bayesian Kernel Embedding model: the squared exponential kernel
//! `k_θ` convolved with itself under a measure `ν` (seed 000 eq. (4), seed 002 §A.3).
//!
//! With `Σ_θ = diag(θ_d²)`, `δ = x − y`, `c = (x + y)/2`, per dimension `d`:
//!
//! | [`EmbeddingPrior`] | `log r_θ(x, y)` |
//! |---|---|
//! | `Lebesgue` (default) | `Σ_d [½ log π + log θ_d] − Σ_d δ_d²/(4θ_d²)` (seed 002 eq. (27) with `Σ = diag(θ²)`) |
//! | `Gaussian { eta }`, `ν(du) = exp(−‖u‖²/(2η²)) du` | `Σ_d [½ log π + log θ_d + ½ log(2η²/(2η² + θ_d²))] − Σ_d δ_d²/(4θ_d²) − ½ Σ_d c_d²/(θ_d²/2 + η²)` (§A.3) |
//! | `Unit` (the seed's Stan listing) | `− Σ_d δ_d²/(4θ_d²)` (no scale: `r(x, x) = 1`) |
//!
//! The Gaussian form is `(2π)^{D/2} |2Σ⁻¹ + η⁻²I|^{−1/2} exp(−½δᵀ(2Σ)⁻¹δ − ½cᵀ(Σ/2 + η²I)⁻¹c)` of
//! §A.3 rewritten so that it tends to the Lebesgue form as `η → ∞`. The scale of `r` changes the
//! marginal pseudolikelihood (and so the learned lengthscale): the prior is an explicit option.
//!
//! Derivatives `∂ log r/∂ log θ_d`:
//! Lebesgue `1 + δ_d²/(2θ_d²)`; Unit `δ_d²/(2θ_d²)`;
//! Gaussian `2η²/(2η² + θ_d²) + δ_d²/(2θ_d²) + ½ c_d² θ_d²/(θ_d²/2 + η²)²`.

use crate::{CoreError, check_positive};

/// The measure `ν` under which `k_θ` is convolved with itself to give the prior covariance `r_θ`
/// (see the module docs for the formulas). Default: [`EmbeddingPrior::Lebesgue`]. In JSON it is its
/// name ([`EmbeddingPrior::name`]: `"lebesgue"`, `"unit"`, `"gaussian:2.5"`).
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum EmbeddingPrior {
    /// `ν` = Lebesgue measure: `r_θ = π^{D/2} Π θ_d · exp(−Σ δ_d²/(4θ_d²))` (seed 002 eq. (27)).
    #[default]
    Lebesgue,
    /// The unscaled form of the seed's Stan listing: `r_θ = exp(−Σ δ_d²/(4θ_d²))`.
    Unit,
    /// `ν(du) = exp(−‖u‖²/(2η²)) du` (a finite measure): the nonstationary form of seed 002 §A.3.
    Gaussian {
        /// Standard deviation `η > 0` of the Gaussian measure (`η → ∞` gives `Lebesgue`).
        eta: f64,
    },
}

impl EmbeddingPrior {
    /// Errors unless the prior's parameter (η) is finite and positive.
    pub fn check(&self) -> Result<(), CoreError> {
        if let EmbeddingPrior::Gaussian { eta } = *self {
            check_positive("prior measure eta", eta)?;
        }
        Ok(())
    }

    /// Parses `lebesgue`, `unit` or `gaussian:ETA` (as the CLI's `--prior` flag).
    pub fn parse(s: &str) -> Result<Self, CoreError> {
        let t = s.trim().to_ascii_lowercase();
        let bad = |reason: &str| CoreError::InvalidParameter {
            name: format!("prior measure '{s}'"),
            value: f64::NAN,
            reason: reason.into(),
        };
        let p = match t.as_str() {
            "lebesgue" => EmbeddingPrior::Lebesgue,
            "unit" => EmbeddingPrior::Unit,
            _ => match t.strip_prefix("gaussian:") {
                Some(v) => {
                    let eta: f64 =
                        v.trim().parse().map_err(|_| bad("gaussian:ETA needs a number ETA > 0"))?;
                    EmbeddingPrior::Gaussian { eta }
                }
                None => return Err(bad("expected lebesgue, unit or gaussian:ETA")),
            },
        };
        p.check()?;
        Ok(p)
    }

    /// The name as [`EmbeddingPrior::parse`] reads it.
    pub fn name(&self) -> String {
        match self {
            EmbeddingPrior::Lebesgue => "lebesgue".into(),
            EmbeddingPrior::Unit => "unit".into(),
            EmbeddingPrior::Gaussian { eta } => format!("gaussian:{eta}"),
        }
    }

    /// Whether `r_θ(x, y)` depends on `x − y` only.
    pub fn is_stationary(&self) -> bool {
        !matches!(self, EmbeddingPrior::Gaussian { .. })
    }

    /// `log r_θ(x, y)` with per-dimension lengthscales `ls` (length D; repeat an isotropic θ).
    #[inline]
    pub fn log_r(&self, ls: &[f64], x: &[f64], y: &[f64]) -> f64 {
        let mut s = 0.0;
        for d in 0..ls.len() {
            let t2 = ls[d] * ls[d];
            let dd = x[d] - y[d];
            s -= dd * dd / (4.0 * t2);
            match *self {
                EmbeddingPrior::Lebesgue => s += 0.5 * std::f64::consts::PI.ln() + ls[d].ln(),
                EmbeddingPrior::Unit => {}
                EmbeddingPrior::Gaussian { eta } => {
                    let e2 = eta * eta;
                    let c = 0.5 * (x[d] + y[d]);
                    s += 0.5 * std::f64::consts::PI.ln()
                        + ls[d].ln()
                        + 0.5 * (2.0 * e2 / (2.0 * e2 + t2)).ln()
                        - 0.5 * c * c / (0.5 * t2 + e2);
                }
            }
        }
        s
    }

    /// `r_θ(x, y)`.
    #[inline]
    pub fn r(&self, ls: &[f64], x: &[f64], y: &[f64]) -> f64 {
        self.log_r(ls, x, y).exp()
    }

    /// `r_θ(x, y)`, and `∂ r_θ/∂ log θ_d` for every dimension written to `grad` (length D).
    #[inline]
    pub fn r_grad(&self, ls: &[f64], x: &[f64], y: &[f64], grad: &mut [f64]) -> f64 {
        let r = self.r(ls, x, y);
        for d in 0..ls.len() {
            let t2 = ls[d] * ls[d];
            let dd = x[d] - y[d];
            let mut g = dd * dd / (2.0 * t2);
            match *self {
                EmbeddingPrior::Lebesgue => g += 1.0,
                EmbeddingPrior::Unit => {}
                EmbeddingPrior::Gaussian { eta } => {
                    let e2 = eta * eta;
                    let c = 0.5 * (x[d] + y[d]);
                    let h = 0.5 * t2 + e2;
                    g += 2.0 * e2 / (2.0 * e2 + t2) + 0.5 * c * c * t2 / (h * h);
                }
            }
            grad[d] = r * g;
        }
        r
    }
}

impl From<EmbeddingPrior> for String {
    fn from(p: EmbeddingPrior) -> String {
        p.name()
    }
}

impl TryFrom<String> for EmbeddingPrior {
    type Error = CoreError;
    fn try_from(s: String) -> Result<Self, CoreError> {
        EmbeddingPrior::parse(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The closed forms against a numerical convolution `∫ k(x,u) k(u,y) ν(du)` in 1-D and a product
    /// of 1-D integrals in 2-D (the SE kernel and both measures factorise over dimensions).
    #[test]
    fn closed_forms_match_numerical_convolution() {
        let quad = |theta: f64, x: f64, y: f64, eta: Option<f64>| {
            // trapezoid on a wide fine grid: the integrand is smooth and decays like a Gaussian
            let (lo, hi, n) = (-40.0, 40.0, 400_000);
            let h = (hi - lo) / n as f64;
            let mut s = 0.0;
            for i in 0..=n {
                let u = lo + i as f64 * h;
                let w = if i == 0 || i == n { 0.5 } else { 1.0 };
                let nu = eta.map_or(1.0, |e| (-u * u / (2.0 * e * e)).exp());
                s += w
                    * (-(x - u).powi(2) / (2.0 * theta * theta)).exp()
                    * (-(u - y).powi(2) / (2.0 * theta * theta)).exp()
                    * nu;
            }
            s * h
        };
        for &(theta, x, y) in &[(0.7, 0.3, -0.4), (2.0, 1.5, 2.5), (0.3, 0.0, 0.1)] {
            let leb = EmbeddingPrior::Lebesgue.r(&[theta], &[x], &[y]);
            let num = quad(theta, x, y, None);
            assert!((leb - num).abs() < 1e-9 * num, "lebesgue {leb} vs {num}");
            for eta in [0.8, 3.0] {
                let g = EmbeddingPrior::Gaussian { eta }.r(&[theta], &[x], &[y]);
                let num = quad(theta, x, y, Some(eta));
                assert!((g - num).abs() < 1e-9 * num, "gaussian {g} vs {num}");
            }
            let unit = EmbeddingPrior::Unit.r(&[theta], &[x], &[y]);
            assert!((unit - (-(x - y).powi(2) / (4.0 * theta * theta)).exp()).abs() < 1e-15);
        }
        // 2-D ARD: product of the 1-D convolutions.
        let ls = [0.7, 1.9];
        let (x, y) = ([0.3, 1.0], [-0.4, 0.2]);
        for prior in [EmbeddingPrior::Lebesgue, EmbeddingPrior::Gaussian { eta: 1.3 }] {
            let eta = match prior {
                EmbeddingPrior::Gaussian { eta } => Some(eta),
                _ => None,
            };
            let prod = quad(ls[0], x[0], y[0], eta) * quad(ls[1], x[1], y[1], eta);
            let r = prior.r(&ls, &x, &y);
            assert!((r - prod).abs() < 1e-9 * prod, "{prior:?}: {r} vs {prod}");
        }
        // η → ∞ recovers Lebesgue.
        let a = EmbeddingPrior::Gaussian { eta: 1e7 }.r(&ls, &x, &y);
        let b = EmbeddingPrior::Lebesgue.r(&ls, &x, &y);
        assert!((a - b).abs() < 1e-9 * b);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (x, y) = ([0.3, -1.0, 2.0], [1.1, 0.4, 1.5]);
        let h: f64 = 1e-6;
        for prior in [EmbeddingPrior::Lebesgue, EmbeddingPrior::Unit, EmbeddingPrior::Gaussian { eta: 1.7 }] {
            let ls = [0.8, 1.3, 2.1];
            let mut g = [0.0; 3];
            prior.r_grad(&ls, &x, &y, &mut g);
            for d in 0..3 {
                let (mut lp, mut lm) = (ls, ls);
                lp[d] *= h.exp();
                lm[d] *= (-h).exp();
                let fd = (prior.r(&lp, &x, &y) - prior.r(&lm, &x, &y)) / (2.0 * h);
                assert!((fd - g[d]).abs() <= 1e-7 * (fd.abs() + 1e-3), "{prior:?} d{d}: {fd} vs {}", g[d]);
            }
        }
    }

    #[test]
    fn parse_and_check() {
        assert_eq!(EmbeddingPrior::parse("lebesgue").unwrap(), EmbeddingPrior::Lebesgue);
        assert_eq!(EmbeddingPrior::parse("Unit").unwrap(), EmbeddingPrior::Unit);
        assert_eq!(EmbeddingPrior::parse("gaussian:2.5").unwrap(), EmbeddingPrior::Gaussian { eta: 2.5 });
        assert!(EmbeddingPrior::parse("gaussian:-1").is_err());
        assert!(EmbeddingPrior::parse("gaussian:abc").is_err());
        assert!(EmbeddingPrior::parse("cauchy").is_err());
        assert_eq!(
            EmbeddingPrior::parse(&EmbeddingPrior::Gaussian { eta: 0.5 }.name()).unwrap(),
            EmbeddingPrior::Gaussian { eta: 0.5 }
        );
        let json = serde_json::to_string(&EmbeddingPrior::Gaussian { eta: 2.5 }).unwrap();
        assert_eq!(json, "\"gaussian:2.5\"");
        assert_eq!(
            serde_json::from_str::<EmbeddingPrior>(&json).unwrap(),
            EmbeddingPrior::Gaussian { eta: 2.5 }
        );
        assert!(serde_json::from_str::<EmbeddingPrior>("\"gaussian:-1\"").is_err());
    }
}
