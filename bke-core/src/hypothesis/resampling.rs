//! What every test shares: the null distributions ([`NullDistribution`]), the permutation p-value, the
//! per-draw random streams and batch sizes of the resampled nulls, and the checks and errors of the
//! tests' settings (the math is in the [parent module](super)'s docs).

use crate::CoreError;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// How the distribution of the statistic under the null hypothesis is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum NullDistribution {
    /// Random permutations of the sample labels (MMD) or of `y` against `x` (HSIC). The default.
    #[default]
    #[serde(rename = "permutation")]
    Permutation,
    /// Gamma distribution matched to the null mean and variance.
    #[serde(rename = "gamma")]
    Gamma,
    /// Wild bootstrap with Rademacher signs (MMD with equal sample sizes; HSIC on pairs of pairs).
    #[serde(rename = "wild")]
    WildBootstrap,
    /// Asymptotic normal null (linear-time MMD only).
    #[serde(rename = "normal")]
    Normal,
}

impl NullDistribution {
    /// Name used in outputs and on the command line: "permutation", "gamma", "wild", "normal".
    pub fn name(self) -> &'static str {
        match self {
            NullDistribution::Permutation => "permutation",
            NullDistribution::Gamma => "gamma",
            NullDistribution::WildBootstrap => "wild",
            NullDistribution::Normal => "normal",
        }
    }

    /// Parses a name as written by [`NullDistribution::name`].
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        match name {
            "permutation" => Ok(Self::Permutation),
            "gamma" => Ok(Self::Gamma),
            "wild" => Ok(Self::WildBootstrap),
            "normal" => Ok(Self::Normal),
            other => {
                Err(choice(&format!("null distribution '{other}'"), "use permutation, gamma, wild or normal"))
            }
        }
    }

    /// Whether the null is sampled (and so uses the number of draws and the seed).
    pub fn is_resampling(self) -> bool {
        matches!(self, Self::Permutation | Self::WildBootstrap)
    }
}

/// Mean and standard deviation (`1/(B − 1)`) of the draws `v`.
pub(crate) fn mean_sd(v: &[f64]) -> (f64, f64) {
    let b = v.len() as f64;
    let mean = v.iter().sum::<f64>() / b;
    let var = v.iter().map(|t| (t - mean) * (t - mean)).sum::<f64>() / (b - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// `p = (1 + #{T_b ≥ T})/(1 + B)`, with ties within a relative `1e-10` of the statistic's scale
/// counted as `≥` (see the module docs).
pub fn resampling_p_value(observed: f64, null: &[f64]) -> f64 {
    let scale = observed.abs() + null.iter().map(|v| v.abs()).sum::<f64>() / null.len().max(1) as f64;
    let tol = 1e-10 * scale;
    let count = null.iter().filter(|&&v| v >= observed - tol).count();
    (1 + count) as f64 / (1 + null.len()) as f64
}

/// Errors unless `0 < α < 1`.
pub fn check_alpha(alpha: f64) -> Result<(), CoreError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(invalid("alpha (test level)", alpha, "must lie strictly between 0 and 1, e.g. 0.05"));
    }
    Ok(())
}

/// Errors unless at least one resampling draw is asked for.
pub fn check_draws(draws: usize) -> Result<(), CoreError> {
    if draws == 0 {
        return Err(invalid(
            "number of permutations / bootstrap draws",
            0.0,
            "must be at least 1 (1000 is a good default; the smallest attainable p-value is 1/(1 + B))",
        ));
    }
    // The null sample and a batch of resampled statistics per draw.
    let setting = format!("permutations / bootstrap draws = {draws}");
    crate::budget::check(&setting, crate::budget::Bytes::f64s(draws).times(4))
}

pub(crate) fn choice(what: &str, reason: &str) -> CoreError {
    CoreError::InvalidChoice { what: what.into(), reason: reason.into() }
}

pub(crate) fn invalid(name: &str, value: f64, reason: &str) -> CoreError {
    CoreError::InvalidParameter { name: name.into(), value, reason: reason.into() }
}

/// The random stream of resampling draw `b`: ChaCha8 keyed by `seed`, stream `b`. Independent of
/// which thread runs the draw.
pub(crate) fn draw_rng(seed: u64, b: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(b as u64);
    rng
}

/// Number of resampling draws processed per batch so that an `n × batch` matrix holds at most
/// ~`4·10⁶` values (32 MB).
pub(crate) fn batch_size(n: usize, draws: usize) -> usize {
    (4_000_000 / n.max(1)).clamp(16, draws.max(16)).min(draws.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_value_counts_ties_and_adds_one() {
        let null = [0.1, 0.2, 0.3, 0.4];
        assert_eq!(resampling_p_value(0.5, &null), 1.0 / 5.0);
        assert_eq!(resampling_p_value(0.3, &null), 3.0 / 5.0);
        assert_eq!(resampling_p_value(0.3 * (1.0 + 1e-13), &null), 3.0 / 5.0);
        assert_eq!(resampling_p_value(-1.0, &null), 1.0);
    }

    #[test]
    fn parameter_checks() {
        assert!(check_alpha(0.05).is_ok());
        for a in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            assert!(check_alpha(a).is_err(), "{a}");
        }
        assert!(check_draws(0).unwrap_err().to_string().contains("at least 1"));
        assert_eq!(NullDistribution::parse("wild").unwrap(), NullDistribution::WildBootstrap);
        assert!(NullDistribution::parse("bootstrap").is_err());
    }
}
