//! The selection rules' settings: what each rule carries ([`LengthscaleSelection`]), BKL's and the
//! aggregated tests' parameters, and which test a selection serves ([`TestKind`]). The rules
//! themselves are in the [parent module](super).

use super::rule::SelectRule;
use crate::embedding::{
    EmbeddingParams, EmbeddingPrior, FittedEmbedding, PseudolikelihoodScan, scan_pseudolikelihood,
};
use crate::estimator::{Params, Valid};
use crate::hypothesis::kernels::BandwidthWeights;
use crate::hypothesis::kernels::TestFamily;
use crate::hypothesis::median::MedianConvention;
use crate::hypothesis::resampling::{choice, invalid};
use crate::{Choice, CoreError, Points, Progress, check_positive};

/// Settings of BKL (ML-II on the BKE marginal pseudolikelihood, isotropic).
#[derive(Debug, Clone, PartialEq)]
pub struct BklParams {
    /// Landmarks held out at random (default 100; `max(D, n/5)` when the sample has at most this many
    /// points).
    pub landmarks: usize,
    /// `τ²` of the BKE likelihood (the seed uses 1).
    pub tau2: f64,
    /// The prior measure of `r_θ`.
    pub prior: EmbeddingPrior,
    /// Seed of the landmark hold-out.
    pub seed: u64,
}

impl Default for BklParams {
    fn default() -> Self {
        Self { landmarks: 100, tau2: 1.0, prior: EmbeddingPrior::Lebesgue, seed: 0 }
    }
}

impl BklParams {
    pub(super) fn validate(&self) -> Result<(), CoreError> {
        check_positive("BKL tau2", self.tau2)?;
        self.prior.check()?;
        if self.landmarks == 0 {
            return Err(invalid("BKL landmarks", 0.0, "need at least one landmark (100 is the default)"));
        }
        Ok(())
    }

    /// The whole ML-II fit (scan and polished optima; BKL and the seed's ML-II).
    pub(super) fn fit<B: bke_linalg::Backend>(
        &self,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<FittedEmbedding, CoreError> {
        self.embedding(x)?.fit_with_progress::<B>(x, progress)
    }

    /// The ML-II scan alone (BKL-Bayes weighs its grid points), without the points whose tempered
    /// posterior mass is provably negligible ([`super::NEGLIGIBLE_NATS`]).
    pub(super) fn scan<B: bke_linalg::Backend>(
        &self,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<PseudolikelihoodScan, CoreError> {
        scan_pseudolikelihood::<B>(&self.embedding(x)?, x, Some(super::NEGLIGIBLE_NATS), progress)
    }

    /// The ML-II settings for the sample `x`.
    fn embedding(&self, x: &Points) -> Result<Valid<EmbeddingParams>, CoreError> {
        x.check_len("sample for BKL", 2)?;
        let mut opts = EmbeddingParams {
            num_landmarks: self.landmarks,
            tau2: self.tau2,
            prior: self.prior,
            seed: self.seed,
            ..EmbeddingParams::default()
        };
        if opts.num_landmarks >= x.len() {
            opts.num_landmarks = (x.len() / 5).max(x.dim()).max(1);
        }
        opts.check()
    }
}

/// Which kernel families an aggregated test uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Families {
    /// Gaussian only.
    Gaussian,
    /// Laplace (ℓ₁) only.
    Laplace,
    /// Both, as the papers' defaults.
    #[default]
    Both,
}

impl Families {
    /// Parses "both" (the default), "gaussian" or "laplace".
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        match name {
            "both" => Ok(Families::Both),
            "gaussian" => Ok(Families::Gaussian),
            "laplace" => Ok(Families::Laplace),
            other => Err(choice(&format!("kernel families '{other}'"), "use both, gaussian or laplace")),
        }
    }

    pub(super) fn list(self) -> Vec<TestFamily> {
        match self {
            Families::Gaussian => vec![TestFamily::Gaussian],
            Families::Laplace => vec![TestFamily::LaplaceL1],
            Families::Both => vec![TestFamily::LaplaceL1, TestFamily::Gaussian],
        }
    }
}

/// Settings of MMDAgg / HSICAgg.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AggParams {
    /// Families (MMDAgg; HSICAgg uses the Gaussian kernel of its paper).
    pub families: Families,
    /// Bandwidth weights.
    pub weights: BandwidthWeights,
}

/// How the kernel(s) of a test are chosen: a named rule ([`SelectRule`]) and the settings the rules
/// read, or a given lengthscale. A rule reads only its own settings (median: `median_convention`;
/// bkl, ml-ii, bkl-bayes: `bkl`; mmdagg, hsicagg: `agg`; fuse: `agg.families`); the others are
/// carried unused, so a front end fills every setting from its options and names the rule.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LengthscaleSelection {
    /// The rule (default BKL-Bayes: the most powerful rule measured by `cargo xtask repro power`,
    /// at a few times the median heuristic's cost, [`crate::hypothesis::nystrom`]).
    pub rule: SelectRule,
    /// A given lengthscale of one Gaussian kernel; when set, it is used and `rule` is not.
    pub fixed: Option<f64>,
    /// The median heuristic's convention.
    pub median_convention: MedianConvention,
    /// BKL / ML-II / BKL-Bayes settings.
    pub bkl: BklParams,
    /// MMDAgg / HSICAgg settings (MMD-FUSE uses its families).
    pub agg: AggParams,
}

/// Which test a selection serves (names and collections differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestKind {
    /// The MMD two-sample test (selection on the pooled sample).
    TwoSample,
    /// The HSIC independence test (selection on each variable).
    Independence,
}

impl LengthscaleSelection {
    /// The rule with default settings.
    pub fn new(rule: SelectRule) -> Self {
        Self { rule, ..Self::default() }
    }

    /// One Gaussian kernel of lengthscale `l`.
    pub fn fixed(l: f64) -> Self {
        Self { fixed: Some(l), ..Self::default() }
    }

    /// The median heuristic with convention `c`.
    pub fn median(c: MedianConvention) -> Self {
        Self { median_convention: c, ..Self::new(SelectRule::Median) }
    }

    /// A rule of the BKE pseudolikelihood (bkl, ml-ii or bkl-bayes) with settings `bkl`.
    pub fn with_bkl(rule: SelectRule, bkl: BklParams) -> Self {
        Self { bkl, ..Self::new(rule) }
    }

    /// BKL with default settings and the given landmark seed.
    pub fn bkl(seed: u64) -> Self {
        Self::with_bkl(SelectRule::Bkl, BklParams { seed, ..BklParams::default() })
    }

    /// The named rule this selection follows (`None` for a fixed lengthscale).
    pub fn rule(&self) -> Option<SelectRule> {
        if self.fixed.is_some() { None } else { Some(self.rule) }
    }

    /// The name in outputs: "fixed", or the rule's name.
    pub fn name(&self) -> &'static str {
        self.rule().map_or("fixed", Choice::name)
    }

    /// Whether the test aggregates a collection of kernels.
    pub fn is_aggregated(&self) -> bool {
        self.rule().is_some_and(SelectRule::is_aggregated)
    }

    /// Errors on invalid settings of the rule, or a rule `test` does not offer (saying which to use).
    pub fn validate(&self, test: TestKind) -> Result<(), CoreError> {
        if let Some(l) = self.fixed {
            return check_positive("lengthscale", l);
        }
        self.rule.check_offered(test)?;
        match self.rule {
            SelectRule::Bkl | SelectRule::MlIi | SelectRule::BklBayes => self.bkl.validate(),
            _ => Ok(()),
        }
    }
}
