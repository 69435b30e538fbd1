//! The selection rules' settings: what each rule carries ([`LengthscaleSelection`]), BKL's and the
//! aggregated tests' parameters, and which test a selection serves ([`TestKind`]). The rules
//! themselves are in the [parent module](super).

use crate::embedding::{EmbeddingParams, EmbeddingPrior, FittedEmbedding};
use crate::estimator::Params;
use crate::hypothesis::kernels::BandwidthWeights;
use crate::hypothesis::kernels::TestFamily;
use crate::hypothesis::median::MedianConvention;
use crate::hypothesis::resampling::{choice, invalid};
use crate::{CoreError, Points, Progress, check_positive};

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

    pub(super) fn fit<B: bke_linalg::Backend>(
        &self,
        x: &Points,
        progress: &dyn Progress,
    ) -> Result<FittedEmbedding, CoreError> {
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
        opts.check()?.fit_with_progress::<B>(x, progress)
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

/// How the kernel(s) of a test are chosen.
#[derive(Debug, Clone, PartialEq)]
pub enum LengthscaleSelection {
    /// A given lengthscale of the Gaussian kernel.
    Fixed(f64),
    /// The median heuristic with the given convention.
    Median(MedianConvention),
    /// BKL: one Gaussian kernel, ML-II (module docs for the rule among optima).
    Bkl(BklParams),
    /// The seed's ML-II: one Gaussian kernel at the global optimum of the pseudolikelihood over the
    /// whole scan (module docs: it may be the degenerate optimum below the landmark spacing).
    MlIi(BklParams),
    /// MMDAgg (two-sample) / HSICAgg (independence): a collection, weighted min-p with a corrected level.
    Agg(AggParams),
    /// MMD-FUSE: a collection, soft maximum of normalised statistics (two-sample only).
    Fuse(Families),
    /// BKL-Bayes: Gaussian kernels weighted by the BKE posterior over the lengthscale, mixed half and
    /// half with the union of the MMDAgg and MMD-FUSE collections (HSIC: the HSICAgg collection) under
    /// uniform weights (module docs).
    BklBayes(BklParams),
}

impl Default for LengthscaleSelection {
    /// BKL-Bayes with the default [`BklParams`]: the most powerful rule measured by
    /// `cargo xtask repro power`, at a few times the median heuristic's cost ([`crate::hypothesis::nystrom`]).
    fn default() -> Self {
        LengthscaleSelection::BklBayes(BklParams::default())
    }
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
    /// BKL with default settings and the given landmark seed.
    pub fn bkl(seed: u64) -> Self {
        LengthscaleSelection::Bkl(BklParams { seed, ..BklParams::default() })
    }

    /// Whether the test aggregates a collection of kernels.
    pub fn is_aggregated(&self) -> bool {
        matches!(self, Self::Agg(_) | Self::Fuse(_) | Self::BklBayes(_))
    }

    /// Errors on invalid settings, or a selection the test does not offer.
    pub fn validate(&self, test: TestKind) -> Result<(), CoreError> {
        match self {
            Self::Fixed(l) => check_positive("lengthscale", *l),
            Self::Bkl(p) | Self::MlIi(p) | Self::BklBayes(p) => p.validate(),
            Self::Fuse(_) if test == TestKind::Independence => Err(choice(
                "selection 'fuse' for the independence test",
                "MMD-FUSE is a two-sample test; use hsicagg or bkl-bayes for HSIC",
            )),
            _ => Ok(()),
        }
    }
}
