//! The kernel-choice rules by name ([`SelectRule`]: the CLI's `--select`, the Python `select=`
//! keyword, [`LengthscaleSelection::rule`]). A new rule is a [`SelectRule`] variant with its entry in
//! [`SelectRule`]'s [`Choice`] list (name and help, which the front ends list, parse and document
//! from here) and its arm in [`super::select_kernels`] calling its function; a rule that serves one
//! test only says so in [`SelectRule::check_offered`], one that aggregates kernels in
//! [`SelectRule::is_aggregated`].

#[cfg(doc)]
use super::params::LengthscaleSelection;
use super::params::TestKind;
use crate::hypothesis::resampling::choice;
use crate::{Choice, CoreError};

/// A kernel-choice rule by name (the CLI's `--select`, the Python `select=` keyword); its names and
/// help lines are its [`Choice`] list. A new rule is a variant here, its entry in that list, and
/// its arm in [`super::select_kernels`] (module docs).
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
    /// BKL-Bayes (the default).
    #[default]
    BklBayes,
}

impl SelectRule {
    /// Whether `test` offers this rule (`mmdagg` and `fuse` are two-sample, `hsicagg` independence).
    pub fn offered(self, test: TestKind) -> bool {
        self.check_offered(test).is_ok()
    }

    /// Errors unless `test` offers this rule, saying which rule to use instead.
    pub fn check_offered(self, test: TestKind) -> Result<(), CoreError> {
        match (self, test) {
            (SelectRule::Mmdagg, TestKind::Independence) => Err(choice(
                "selection 'mmdagg' for the independence test",
                "mmdagg is the two-sample aggregate; for HSIC use hsicagg",
            )),
            (SelectRule::Hsicagg, TestKind::TwoSample) => Err(choice(
                "selection 'hsicagg' for the two-sample test",
                "hsicagg is the independence aggregate; for MMD use mmdagg",
            )),
            (SelectRule::Fuse, TestKind::Independence) => Err(choice(
                "selection 'fuse' for the independence test",
                "MMD-FUSE is a two-sample test; use hsicagg or bkl-bayes for HSIC",
            )),
            _ => Ok(()),
        }
    }

    /// Whether the rule aggregates a collection of kernels (the others choose one).
    pub fn is_aggregated(self) -> bool {
        matches!(self, SelectRule::Mmdagg | SelectRule::Hsicagg | SelectRule::Fuse | SelectRule::BklBayes)
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
