//! Options with a fixed list of named values ([`Choice`]): the one list of names and help lines
//! that the CLI's value parser (`--select`, `--median-convention`, `--agg-kernels`) and the Python
//! keywords read, so a new value is one enum variant here and nothing in a front end.

use crate::CoreError;
use crate::hypothesis::{BandwidthWeights, Families, MedianConvention};

/// An option with a fixed list of named values. Parsing (`FromStr`) accepts exactly the names of
/// [`Choice::ALL`] and errors with the library's message otherwise.
pub trait Choice: Copy + PartialEq + std::str::FromStr<Err = CoreError> + Send + Sync + 'static {
    /// `(value, name, one line of help)`, in the order help lists them.
    const ALL: &'static [(Self, &'static str, &'static str)];

    /// The name users type and outputs print.
    fn name(self) -> &'static str {
        Self::entry(self).1
    }

    /// One line of help.
    fn help(self) -> &'static str {
        Self::entry(self).2
    }

    /// The names of the values that `keep` keeps, as "a, b or c".
    fn names_where(keep: impl Fn(Self) -> bool) -> String {
        let names: Vec<&str> = Self::ALL.iter().filter(|(v, _, _)| keep(*v)).map(|(_, n, _)| *n).collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.join(""),
        }
    }

    /// The value named `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n, _)| *n == name).map(|(v, _, _)| *v)
    }

    /// This value's entry of [`Choice::ALL`].
    fn entry(self) -> &'static (Self, &'static str, &'static str) {
        Self::ALL.iter().find(|(v, _, _)| *v == self).expect("every value is listed in ALL")
    }
}

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
