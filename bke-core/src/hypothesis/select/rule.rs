//! The kernel-choice rules by name ([`SelectRule`]: the CLI's `--select`, the Python `select=`
//! keyword) and how a named rule with its settings ([`SelectionSpec`]) becomes a
//! [`LengthscaleSelection`]. A new rule is a [`SelectRule`] variant with its entry in
//! [`SelectRule`]'s [`Choice`] list, its arms in [`LengthscaleSelection::parse`] and
//! [`LengthscaleSelection::rule`], and its [`LengthscaleSelection`] variant; the front ends list,
//! parse and document it from here.

use super::params::{AggParams, BklParams, LengthscaleSelection, TestKind};
use crate::hypothesis::median::MedianConvention;
use crate::hypothesis::resampling::choice;
use crate::{Choice, CoreError};

/// A kernel-choice rule by name (the CLI's `--select`, the Python `select=` keyword); its names and
/// help lines are its [`Choice`] list. A new rule is a variant here, its entry in that list, and
/// its [`LengthscaleSelection`] variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SelectRule {
    /// The median heuristic.
    Median,
    /// BKL (ML-II on the BKE marginal pseudolikelihood, over the lengthscales the landmarks and
    /// the data resolve).
    Bkl,
    /// The seed's ML-II: the global optimum of the pseudolikelihood over the scan, no limits.
    MlIi,
    /// MMDAgg (two-sample only).
    Mmdagg,
    /// HSICAgg (independence only).
    Hsicagg,
    /// MMD-FUSE (two-sample only).
    Fuse,
    /// BKL-Bayes (the default, as [`LengthscaleSelection::default`]).
    #[default]
    BklBayes,
}

impl SelectRule {
    /// Whether `test` offers this rule (`mmdagg` and `fuse` are two-sample, `hsicagg` independence).
    pub fn offered(self, test: TestKind) -> bool {
        match self {
            SelectRule::Mmdagg | SelectRule::Fuse => test == TestKind::TwoSample,
            SelectRule::Hsicagg => test == TestKind::Independence,
            _ => true,
        }
    }

    /// Parses a rule's name; an unknown name errors with the rules `test` offers.
    pub fn parse(name: &str, test: TestKind) -> Result<Self, CoreError> {
        Self::from_name(name).ok_or_else(|| {
            let names = Self::names_where(|r| r.offered(test));
            choice(&format!("kernel selection '{name}'"), &format!("use {names}"))
        })
    }
}

impl std::str::FromStr for SelectRule {
    type Err = CoreError;
    /// Parses a rule's name (any test's).
    fn from_str(name: &str) -> Result<Self, CoreError> {
        Self::from_name(name).ok_or_else(|| {
            let names = Self::names_where(|_| true);
            choice(&format!("kernel selection '{name}'"), &format!("use {names}"))
        })
    }
}

/// A kernel-choice rule with the settings each rule may use: [`LengthscaleSelection::parse`] turns
/// it into a [`LengthscaleSelection`].
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionSpec {
    /// The rule.
    pub select: SelectRule,
    /// The median heuristic's convention.
    pub median_convention: MedianConvention,
    /// BKL / BKL-Bayes settings.
    pub bkl: BklParams,
    /// MMDAgg / HSICAgg settings (MMD-FUSE uses its families).
    pub agg: AggParams,
}

impl Choice for SelectRule {
    const ALL: &'static [(Self, &'static str, &'static str)] = &[
        (
            SelectRule::Median,
            "median",
            "Median heuristic (convention set by --median-convention, default muandet: θ = median distance): \
             the cheapest rule, and the weakest on most problems",
        ),
        (
            SelectRule::Bkl,
            "bkl",
            "BKL: maximise the BKE marginal pseudolikelihood (ML-II; pooled sample for MMD, each variable \
             for HSIC)",
        ),
        (
            SelectRule::MlIi,
            "ml-ii",
            "The seed's ML-II (seed 000 §5): the global optimum of the BKE marginal pseudolikelihood over the \
             lengthscale scan, without bkl's resolution and median limits",
        ),
        (
            SelectRule::Mmdagg,
            "mmdagg",
            "MMDAgg (Schrab et al. 2023): Gaussian and Laplace kernels at 10 bandwidths each, weighted \
             min-p with a corrected level (MMD only)",
        ),
        (
            SelectRule::Hsicagg,
            "hsicagg",
            "HSICAgg (Schrab et al. 2022): 5 × 5 Gaussian bandwidths around each variable's median (HSIC \
             only)",
        ),
        (
            SelectRule::Fuse,
            "fuse",
            "MMD-FUSE (Biggs et al. 2023): soft maximum of normalised MMDs over 20 kernels (MMD only)",
        ),
        (
            SelectRule::BklBayes,
            "bkl-bayes",
            "BKL-Bayes (the default): Gaussian kernels weighted by the BKE posterior over the lengthscale, \
             mixed half and half with the MMDAgg/HSICAgg collection under uniform weights, soft maximum",
        ),
    ];
}

impl LengthscaleSelection {
    /// The rule `spec` names for `test`; errors on an aggregate of the other test (`mmdagg` or
    /// `fuse` for HSIC, `hsicagg` for MMD), saying which to use.
    pub fn parse(spec: SelectionSpec, test: TestKind) -> Result<Self, CoreError> {
        let two_sample = test == TestKind::TwoSample;
        let rule = match spec.select {
            SelectRule::Median => Self::Median(spec.median_convention),
            SelectRule::Bkl => Self::Bkl(spec.bkl),
            SelectRule::MlIi => Self::MlIi(spec.bkl),
            SelectRule::BklBayes => Self::BklBayes(spec.bkl),
            SelectRule::Fuse => Self::Fuse(spec.agg.families),
            SelectRule::Mmdagg if two_sample => Self::Agg(spec.agg),
            SelectRule::Hsicagg if !two_sample => Self::Agg(spec.agg),
            SelectRule::Mmdagg => {
                return Err(choice(
                    "selection 'mmdagg' for the independence test",
                    "mmdagg is the two-sample aggregate; for HSIC use hsicagg",
                ));
            }
            SelectRule::Hsicagg => {
                return Err(choice(
                    "selection 'hsicagg' for the two-sample test",
                    "hsicagg is the independence aggregate; for MMD use mmdagg",
                ));
            }
        };
        rule.validate(test)?;
        Ok(rule)
    }

    /// The name in outputs: "fixed", or the rule's name ("median", "bkl", "mmdagg" / "hsicagg",
    /// "fuse", "bkl-bayes").
    pub fn name(&self, test: TestKind) -> &'static str {
        self.rule(test).map_or("fixed", Choice::name)
    }

    /// The named rule this selection follows for `test` (`None` for a fixed lengthscale).
    pub fn rule(&self, test: TestKind) -> Option<SelectRule> {
        Some(match self {
            LengthscaleSelection::Fixed(_) => return None,
            LengthscaleSelection::Median(_) => SelectRule::Median,
            LengthscaleSelection::Bkl(_) => SelectRule::Bkl,
            LengthscaleSelection::MlIi(_) => SelectRule::MlIi,
            LengthscaleSelection::Agg(_) if test == TestKind::TwoSample => SelectRule::Mmdagg,
            LengthscaleSelection::Agg(_) => SelectRule::Hsicagg,
            LengthscaleSelection::Fuse(_) => SelectRule::Fuse,
            LengthscaleSelection::BklBayes(_) => SelectRule::BklBayes,
        })
    }
}
