//! The named values of the tests' options ([`MedianConvention`], [`Families`], [`BandwidthWeights`]);
//! the selection rule's are with it in `hypothesis::select`.

use super::Choice;
use crate::CoreError;
use crate::hypothesis::{BandwidthWeights, Families, MedianConvention};

impl Choice for MedianConvention {
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (
            MedianConvention::Muandet,
            "muandet",
            "θ = median pairwise distance, k = exp(−d²/(2m²)) (Muandet et al. 2014). Default",
        ),
        (MedianConvention::Mooij, "mooij", "θ = median/√2, k = exp(−d²/m²) (Mooij et al. 2015)"),
    ];
}

impl std::str::FromStr for MedianConvention {
    type Err = CoreError;
    fn from_str(name: &str) -> Result<Self, CoreError> {
        MedianConvention::parse(name)
    }
}

impl Choice for Families {
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (Families::Both, "both", "Gaussian and Laplace (ℓ₁), as the papers"),
        (Families::Gaussian, "gaussian", "Gaussian only"),
        (Families::Laplace, "laplace", "Laplace (ℓ₁) only"),
    ];
}

impl std::str::FromStr for Families {
    type Err = CoreError;
    fn from_str(name: &str) -> Result<Self, CoreError> {
        Families::parse(name)
    }
}

impl Choice for BandwidthWeights {
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (BandwidthWeights::Uniform, "uniform", "Equal weights"),
        (BandwidthWeights::Centred, "centred", "Largest in the middle of the collection"),
        (BandwidthWeights::Increasing, "increasing", "Growing with the bandwidth"),
        (BandwidthWeights::Decreasing, "decreasing", "Falling with the bandwidth"),
    ];
}

impl std::str::FromStr for BandwidthWeights {
    type Err = CoreError;
    /// Also accepts "centered".
    fn from_str(name: &str) -> Result<Self, CoreError> {
        BandwidthWeights::parse(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hypothesis::select::SelectRule;

    fn round_trips<T: Choice + std::fmt::Debug>() {
        for (v, name, help) in T::ALL {
            assert_eq!(v.name(), *name);
            assert_eq!(v.help(), *help);
            assert_eq!(name.parse::<T>().unwrap(), *v);
            assert_eq!(T::from_name(name), Some(*v));
        }
        assert!("no-such-value".parse::<T>().is_err());
    }

    #[test]
    fn every_name_parses_back_to_its_value() {
        round_trips::<SelectRule>();
        round_trips::<MedianConvention>();
        round_trips::<Families>();
        round_trips::<BandwidthWeights>();
    }

    #[test]
    fn names_agree_with_the_enums_own() {
        for (v, name, _) in MedianConvention::ALL {
            assert_eq!(MedianConvention::name(*v), *name);
        }
    }
}
