//! The results of the tests as library types that serialise (serde) to exactly the JSON of
//! `bke test mmd` and `bke test hsic`: the CLI prints `serde_json::to_value(&report)`, and the Python
//! package's `to_dict()` is the same value.
//!
//! Common fields: `statistic`, `p_value`, `reject`, `null`, `alpha`, `null_mean`, `null_sd`,
//! `selection`, `statistic_kind`, `kernel`, `permutations` and `seed` (resampled nulls),
//! `backend`, and `kernels`: one entry `{family, lengthscale, weight, statistic, p_value}` per kernel
//! of the test (HSIC entries add `lengthscale_y`). For a single kernel `statistic` is the test's
//! statistic; for an aggregated test it is the kernel's own statistic that entered the aggregate
//! (MMD²/HSIC for MMDAgg/HSICAgg; the normalised statistic for MMD-FUSE and BKL-Bayes) and `p_value`
//! is that kernel's own permutation p-value. The top-level `statistic` of an aggregated test is the
//! aggregate (MMDAgg/HSICAgg: the weighted minimum p-value `min_k p_k/w_k`, *smaller* is more
//! significant; MMD-FUSE/BKL-Bayes: the soft maximum), and `lengthscale` / `kernel` name the kernel
//! that decides it ([`super::aggregate::AggregateOutcome::leading`]). MMDAgg/HSICAgg add `u_alpha`.
//! BKL adds `bkl_log_marginal`, `bkl_local_optima`, `bkl_landmarks`, `bkl_resolution`, `bkl_upper_limit`,
//! `median_distance` (suffixed `_x`, `_y` for HSIC) and `bkl_tau2` (BKL-Bayes, which weighs the
//! scan's grid points and polishes nothing, reports the scan's local maxima as `bkl_local_optima`;
//! where its pseudolikelihood is nowhere finite it uses its prior collection alone and leaves out
//! `bkl_log_marginal`); the median heuristic adds `median_convention`.

use super::kernels::TestFamily;
use super::median::MedianConvention;
use super::resampling::{NullDistribution, mean_sd, resampling_p_value};
use super::select::{BklSummary, SelectedKernels};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// One kernel of a test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelReport {
    /// The family.
    pub family: TestFamily,
    /// The lengthscale (of `x`'s kernel for HSIC).
    pub lengthscale: f64,
    /// HSIC: the lengthscale of `y`'s kernel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lengthscale_y: Option<f64>,
    /// Its weight in the aggregate (1 for a single kernel).
    pub weight: f64,
    /// Its statistic (see the module docs).
    pub statistic: f64,
    /// Its own p-value.
    pub p_value: f64,
}

/// The outcome fields shared by both tests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// The test statistic (the aggregate for aggregated tests; see the module docs).
    pub statistic: f64,
    /// The p-value.
    pub p_value: f64,
    /// Whether `p ≤ α`.
    pub reject: bool,
    /// The null distribution.
    pub null: NullDistribution,
    /// The level α.
    pub alpha: f64,
    /// Mean of the null distribution of `statistic` (of the draws, or of the fitted gamma/normal).
    pub null_mean: f64,
    /// Its standard deviation.
    pub null_sd: f64,
    /// The resampled values of `statistic`, in draw order (empty for the gamma and normal nulls;
    /// not written to JSON).
    #[serde(skip)]
    pub null_samples: Vec<f64>,
}

impl Outcome {
    /// A resampled null: the p-value of [`resampling_p_value`], the null's mean and sd of the draws.
    pub(crate) fn from_samples(
        statistic: f64,
        null_samples: Vec<f64>,
        alpha: f64,
        null: NullDistribution,
    ) -> Self {
        let p_value = resampling_p_value(statistic, &null_samples);
        Self::from_draws(statistic, p_value, null_samples, alpha, null)
    }

    /// Draws of the null with a p-value computed from them elsewhere (the aggregated tests).
    pub(crate) fn from_draws(
        statistic: f64,
        p_value: f64,
        null_samples: Vec<f64>,
        alpha: f64,
        null: NullDistribution,
    ) -> Self {
        let (mean, sd) = mean_sd(&null_samples);
        Self { null_samples, ..Self::from_p(statistic, p_value, alpha, null, mean, sd) }
    }

    /// A fitted null (gamma, normal) of mean `mean` and standard deviation `sd`: no draws.
    pub(crate) fn from_p(
        statistic: f64,
        p_value: f64,
        alpha: f64,
        null: NullDistribution,
        mean: f64,
        sd: f64,
    ) -> Self {
        Self {
            statistic,
            p_value,
            reject: p_value <= alpha,
            alpha,
            null,
            null_samples: Vec::new(),
            null_mean: mean,
            null_sd: sd,
        }
    }
}

/// How a sample's kernels were chosen, written as the flat JSON fields of the module docs with a
/// suffix (`""` for MMD, `"_x"`/`"_y"` for HSIC).
#[derive(Debug, Clone, PartialEq)]
pub struct SelectionFields {
    /// The median convention (median heuristic).
    pub median_convention: Option<MedianConvention>,
    /// BKL's details (BKL, BKL-Bayes).
    pub bkl: Option<BklSummary>,
    /// Appended to the per-sample field names.
    pub suffix: &'static str,
    /// Whether to write the fields shared by both variables (`median_convention`, `bkl_tau2`).
    pub shared: bool,
}

impl SelectionFields {
    /// The fields of `selected`.
    pub fn new(selected: &SelectedKernels, suffix: &'static str, shared: bool) -> Self {
        Self { median_convention: selected.median_convention, bkl: selected.bkl.clone(), suffix, shared }
    }
}

#[derive(Serialize)]
struct Optimum {
    lengthscale: f64,
    log_marginal: f64,
}

impl Serialize for SelectionFields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if self.shared {
            if let Some(c) = self.median_convention {
                m.serialize_entry("median_convention", &c)?;
            }
        }
        if let Some(b) = &self.bkl {
            let key = |k: &str| format!("{k}{}", self.suffix);
            // not finite where BKL-Bayes had no posterior (its prior collection alone): left out
            if b.log_marginal.is_finite() {
                m.serialize_entry(&key("bkl_log_marginal"), &b.log_marginal)?;
            }
            let optima: Vec<Optimum> = b
                .local_optima
                .iter()
                .filter(|o| o.1.is_finite())
                .map(|&(lengthscale, log_marginal)| Optimum { lengthscale, log_marginal })
                .collect();
            m.serialize_entry(&key("bkl_local_optima"), &optima)?;
            m.serialize_entry(&key("bkl_landmarks"), &b.landmarks)?;
            m.serialize_entry(&key("bkl_resolution"), &b.resolution)?;
            m.serialize_entry(&key("bkl_upper_limit"), &b.upper_limit)?;
            m.serialize_entry(&key("median_distance"), &b.median_distance)?;
            if self.shared {
                m.serialize_entry("bkl_tau2", &b.tau2)?;
            }
        }
        m.end()
    }
}

/// The result of the MMD two-sample test (`bke test mmd`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MmdReport {
    /// Statistic, p-value, decision and null summary.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The lengthscale of the (deciding) kernel.
    pub lengthscale: f64,
    /// "fixed", "median", "bkl", "mmdagg", "fuse" or "bkl-bayes".
    pub selection: &'static str,
    /// Median convention / BKL details.
    #[serde(flatten)]
    pub selection_fields: SelectionFields,
    /// "unbiased", "biased" or "linear".
    pub statistic_kind: &'static str,
    /// The family of the (deciding) kernel: "se" or "laplace-l1".
    pub kernel: &'static str,
    /// Size of `x`.
    pub n_x: usize,
    /// Size of `y`.
    pub n_y: usize,
    /// Resampling draws `B` (resampled nulls only; MMDAgg draws `B₁ = B₂ = B`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permutations: Option<usize>,
    /// Seed of the draws (resampled nulls only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// MMDAgg's corrected level `û_α`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub u_alpha: Option<f64>,
    /// The linear-algebra backend.
    pub backend: &'static str,
    /// Every kernel of the test.
    pub kernels: Vec<KernelReport>,
}

/// The result of the HSIC independence test (`bke test hsic`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HsicReport {
    /// Statistic, p-value, decision and null summary.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// The lengthscale of `x`'s (deciding) kernel.
    pub lengthscale_x: f64,
    /// The lengthscale of `y`'s (deciding) kernel.
    pub lengthscale_y: f64,
    /// "fixed", "median", "bkl", "hsicagg" or "bkl-bayes".
    pub selection: &'static str,
    /// Median convention / BKL details of `x`.
    #[serde(flatten)]
    pub selection_x: SelectionFields,
    /// BKL details of `y`.
    #[serde(flatten)]
    pub selection_y: SelectionFields,
    /// "biased" or "unbiased".
    pub statistic_kind: &'static str,
    /// The kernel family: "se".
    pub kernel: &'static str,
    /// The Gram matrices of the null: "exact", or "nystrom" (low-rank factors for the kernels the
    /// landmarks resolve; the aggregated tests above 256 pairs unless `dense`).
    pub null_grams: &'static str,
    /// Number of pairs.
    pub n: usize,
    /// Resampling draws `B` (resampled nulls only; HSICAgg draws `B₁ = B₂ = B`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permutations: Option<usize>,
    /// Seed of the draws (resampled nulls only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// HSICAgg's corrected level `û_α`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub u_alpha: Option<f64>,
    /// The linear-algebra backend.
    pub backend: &'static str,
    /// Every kernel pair of the test.
    pub kernels: Vec<KernelReport>,
}
