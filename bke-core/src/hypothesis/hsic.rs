//! The kernel independence test with the Hilbert–Schmidt independence criterion (Gretton et al. 2005,
//! 2008; seed 000 §2.2): `H₀: X ⫫ Y` from paired observations `(x_i, y_i)`, `i = 1…n`, with kernels
//! `k` on `x` and `l` on `y` (Gram matrices `K`, `L`).
//!
//! ```
//! use bke_core::hypothesis::{HsicParams, LengthscaleSelection};
//! use bke_core::{Params, Points, TwoSamples};
//! use bke_linalg::DefaultBackend;
//! let t: Vec<f64> = (0..60).map(|i| i as f64 / 59.0 * 4.0 - 2.0).collect();
//! let x = Points::from_1d("x", &t)?;
//! let y = Points::from_1d("y", &t.iter().map(|v| v * v).collect::<Vec<_>>())?;
//! let params = HsicParams { permutations: 200, ..HsicParams::default() };
//! let report = params.check()?.fit::<DefaultBackend>(&TwoSamples { x, y })?.test::<DefaultBackend>()?;
//! assert!(report.outcome.reject);
//! # Ok::<(), bke_core::CoreError>(())
//! ```
//!
//! Statistics ([`HsicStatistic`]):
//! - biased (default; Gretton et al. 2008): `HSIC_b = tr(KHLH)/n² = Σ_ij K̄_ij L_ij / n²`,
//!   `K̄ = HKH`, `H = I − 11ᵀ/n`;
//! - unbiased (Song et al. 2012, Thm. 2): `HSIC_u = [tr(K̃L̃) + 1ᵀK̃1·1ᵀL̃1/((n−1)(n−2))
//!   − 2·1ᵀK̃L̃1/(n−2)] / (n(n−3))`, `K̃`, `L̃` with zeroed diagonals (needs `n ≥ 4`);
//! - with the wild-bootstrap null, the pairs-of-pairs U-statistic of HSICAgg (its own unbiased
//!   estimator of HSIC, [`NullDistribution::WildBootstrap`]; `statistic_kind` "pairs").
//!
//! Nulls: permutation of `y` against `x` (batched GEMMs through the backend, details in the null
//! module's docs), wild bootstrap on pairs of pairs, and the gamma approximation (Gretton et al. 2008,
//! §4): `n·HSIC_b` is approximately Gamma with mean `E = (d_x − μ_x)(d_y − μ_y)` and variance
//! `Var = 72(n−4)(n−5)/((n)_4) · 1/(n(n−1)) Σ_{i≠j} (K̄_ij L̄_ij / 6)² · n²`, where `μ_x` is the mean
//! off-diagonal entry of `K` and `d_x` the mean diagonal entry (1 for bke's unit-amplitude kernels, which
//! is the paper's `1 + μ_xμ_y − μ_x − μ_y`). Needs `n ≥ 6`. For the unbiased statistic (null mean ≈ 0)
//! the p-value is `P(G ≥ n·HSIC_u + E)`.
//!
//! Aggregated tests: HSICAgg (Schrab et al. 2022; 5 × 5 Gaussian bandwidths around each variable's
//! median, weighted min-p with the corrected level, `B₁ = B₂ = B`) and BKL-Bayes (the product of the
//! two variables' collections, each half posterior and half the HSICAgg bandwidths, studentised statistics, soft maximum with
//! `λ = 1`, [`super::aggregate::STUDENTISED_TEMPERATURE`]). Kernels are chosen on each variable separately, which permuting `y` leaves
//! unchanged: the tests are exact ([`super::select`]).
//!
//! Above [`EXACT_MAX_OBSERVATIONS`] observations the biased permutation null of
//! an aggregated test uses each kernel's Nyström factor on landmarks of its own variable, one GEMM
//! per draw for all the low-rank pairs, and the exact Gram matrix for the kernels the landmarks do
//! not resolve or whose rank would cost more than their gather (`super::hsic_low_rank`; still an
//! exact test, `cargo xtask repro level` checks it at n = 400). `HsicParams::dense` (`--dense`) keeps
//! the exact Gram matrices at every size: the published HSICAgg statistic.

use super::aggregate::{KernelStatistics, STUDENTISED_TEMPERATURE, min_p, soft_max_test, studentise};
use super::hsic_low_rank::low_rank_stats;
use super::hsic_null::{gamma_moments, observed, permutation_stats, wild_stats};
// The estimator choice lives with the statistics it selects; re-exported for the public path.
pub use super::hsic_null::HsicStatistic;
use super::kernels::{Distances, WeightedKernel};
use super::report::{HsicReport, KernelReport, Outcome, SelectionFields};
use super::resampling::{NullDistribution, check_alpha, check_draws, choice, invalid};
use super::select::{LengthscaleSelection, SelectRule, SelectedKernels, TestKind, select_kernels};
use crate::estimator::{Estimator, Params, Progress, TwoSamples, Valid};
use crate::special::gamma_sf;
use crate::{CoreError, Points};
use bke_linalg::{Backend, Mat};

/// Observations up to this use the exact Gram matrices in every test; above, the biased permutation
/// null of an aggregated test uses Nyström factors unless [`HsicParams::dense`] (module docs). Lower
/// than the MMD's [`super::nystrom::EXACT_MAX_POINTS`] pooled points: HSIC has `K × L` kernel pairs
/// (100 for BKL-Bayes) where MMD has `K` kernels, so the dense null costs more per observation.
pub const EXACT_MAX_OBSERVATIONS: usize = 256;

/// Parameters of the HSIC independence test: `HsicParams { .. }.check()?.fit::<B>(&TwoSamples { x, y })?`
/// (`x` and `y` paired by row, any dimensions) chooses a kernel per variable, and
/// [`FittedHsic::test`] runs the test.
#[derive(Debug, Clone, PartialEq)]
pub struct HsicParams {
    /// The estimator. Default [`HsicStatistic::Biased`].
    pub statistic: HsicStatistic,
    /// The null: [`NullDistribution::Permutation`] (default), `Gamma` or `WildBootstrap`.
    pub null: NullDistribution,
    /// Number of permutations / bootstrap draws `B` (HSICAgg: `B₁ = B₂ = B`). Default 1000.
    pub permutations: usize,
    /// Test level α ∈ (0, 1). Default 0.05.
    pub alpha: f64,
    /// Seed of the resampling streams. Default 0.
    pub seed: u64,
    /// How each variable's kernel(s) are chosen. Default: BKL-Bayes.
    pub selection: LengthscaleSelection,
    /// Another single-kernel rule for `y` (e.g. its own fixed lengthscale); `None`: `selection`.
    pub selection_y: Option<LengthscaleSelection>,
    /// Aggregated tests: the exact Gram matrices at every size. Default `false`: above
    /// [`EXACT_MAX_OBSERVATIONS`] observations the biased permutation null uses each
    /// kernel's Nyström factor (the module docs; still an exact test).
    pub dense: bool,
}

impl Default for HsicParams {
    fn default() -> Self {
        Self {
            statistic: HsicStatistic::Biased,
            null: NullDistribution::Permutation,
            permutations: 1000,
            alpha: 0.05,
            seed: 0,
            selection: LengthscaleSelection::default(),
            selection_y: None,
            dense: false,
        }
    }
}

impl HsicParams {
    fn selection_y(&self) -> &LengthscaleSelection {
        self.selection_y.as_ref().unwrap_or(&self.selection)
    }

    fn min_points(&self) -> usize {
        let null_needs = match self.null {
            NullDistribution::Gamma => 6,
            NullDistribution::WildBootstrap => 4,
            _ => 0,
        };
        self.statistic.min_points().max(null_needs)
    }
}

impl Params for HsicParams {
    type Error = CoreError;

    /// Validates α, `B`, the null (permutation, wild or gamma) and the selection.
    fn validate(&self) -> Result<(), CoreError> {
        check_alpha(self.alpha)?;
        match self.null {
            NullDistribution::Permutation | NullDistribution::WildBootstrap => {
                check_draws(self.permutations)?
            }
            NullDistribution::Gamma => {}
            other => {
                return Err(choice(
                    &format!("null distribution '{}' for HSIC", other.name()),
                    "the HSIC test supports the permutation, wild and gamma nulls",
                ));
            }
        }
        self.selection.validate(TestKind::Independence)?;
        if let Some(sy) = &self.selection_y {
            sy.validate(TestKind::Independence)?;
            if sy.is_aggregated() || self.selection.is_aggregated() {
                return Err(choice(
                    "a separate selection for y with an aggregated test",
                    "aggregated tests (bkl-bayes, the default, hsicagg) choose both variables' collections by one \
                     rule: leave selection_y unset, or choose one kernel for x too (select median or bkl, or a \
                     lengthscale for x)",
                ));
            }
        }
        if self.selection.is_aggregated() && !self.null.is_resampling() {
            return Err(choice(
                &format!("null 'gamma' for the aggregated selection '{}'", self.selection.name()),
                "aggregated tests (bkl-bayes, the default, hsicagg) need a resampled null: use permutation or \
                 wild, or choose one kernel (select median or bkl, or fixed lengthscales)",
            ));
        }
        Ok(())
    }
}

fn check_pair(x: &Points, y: &Points, needed: usize) -> Result<(), CoreError> {
    x.check_len("sample x", needed)?;
    if x.len() != y.len() {
        return Err(CoreError::DimensionMismatch {
            what: "number of y observations (HSIC needs paired samples: row i of x goes with row i of y)"
                .into(),
            expected: x.len(),
            found: y.len(),
        });
    }
    for (name, sample) in [("x", x), ("y", y)] {
        if sample.iter().all(|p| p == sample.point(0)) {
            return Err(choice(
                &format!("sample {name}"),
                "every observation is the same (a constant variable), so it cannot depend on anything; remove it",
            ));
        }
    }
    Ok(())
}

impl Estimator for HsicParams {
    type Data = TwoSamples;
    type Fitted = FittedHsic;

    /// Checks the pairing and chooses each variable's kernels on its own sample.
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TwoSamples,
        progress: &dyn Progress,
    ) -> Result<FittedHsic, CoreError> {
        check_pair(&data.x, &data.y, params.min_points())?;
        progress.update("choosing kernels", 0, 2);
        let x_kernels = select_kernels::<B>(&data.x, &params.selection, TestKind::Independence, progress)?;
        progress.update("choosing kernels", 1, 2);
        let y_kernels = select_kernels::<B>(&data.y, params.selection_y(), TestKind::Independence, progress)?;
        progress.update("choosing kernels", 2, 2);
        Ok(FittedHsic { params: params.clone(), x_kernels, y_kernels, data: data.clone() })
    }
}

/// An HSIC test with its kernels chosen: run it with [`FittedHsic::test`].
#[derive(Debug, Clone)]
pub struct FittedHsic {
    params: Valid<HsicParams>,
    x_kernels: SelectedKernels,
    y_kernels: SelectedKernels,
    data: TwoSamples,
}

impl FittedHsic {
    /// The parameters.
    pub fn params(&self) -> &HsicParams {
        &self.params
    }

    /// The kernels chosen for `x` and for `y`.
    pub fn selected(&self) -> (&SelectedKernels, &SelectedKernels) {
        (&self.x_kernels, &self.y_kernels)
    }

    /// Runs the test with backend `B`.
    pub fn test<B: Backend>(&self) -> Result<HsicReport, CoreError> {
        self.test_with_progress::<B>(&())
    }

    /// Whether the null uses Nyström factors (`super::hsic_low_rank`): an aggregated test with the
    /// biased statistic's permutation null above [`EXACT_MAX_OBSERVATIONS`] observations,
    /// unless `dense`.
    fn low_rank(&self) -> bool {
        let p = &self.params;
        p.selection.is_aggregated()
            && p.null == NullDistribution::Permutation
            && p.statistic == HsicStatistic::Biased
            && !p.dense
            && self.data.x.len() > EXACT_MAX_OBSERVATIONS
    }

    /// Runs the test with backend `B`, reporting progress.
    pub fn test_with_progress<B: Backend>(&self, progress: &dyn Progress) -> Result<HsicReport, CoreError> {
        let p = &self.params;
        let grams = |s: &SelectedKernels, pts: &Points| -> Vec<Mat> {
            let mut d = Distances::new(pts);
            s.kernels.iter().map(|k| d.gram(k)).collect()
        };
        progress.checkpoint()?;
        // the permutation null reports its own batches
        let whole = p.null != NullDistribution::Permutation;
        if whole {
            progress.update("null distribution", 0, 1);
        }
        let (outcome, stats, p_values, leading, u_alpha) = if self.low_rank() {
            let (x, y) = (&self.data.x, &self.data.y);
            let (xk, yk) = (&self.x_kernels.kernels, &self.y_kernels.kernels);
            let draws = self.aggregated_draws();
            self.aggregated(low_rank_stats::<B>(x, y, xk, yk, draws, p.seed, progress)?)
        } else {
            check_memory(self.data.x.len(), self.x_kernels.kernels.len(), self.y_kernels.kernels.len())?;
            let (ks, ls) = (grams(&self.x_kernels, &self.data.x), grams(&self.y_kernels, &self.data.y));
            if p.selection.is_aggregated() {
                let draws = self.aggregated_draws();
                let stats = match p.null {
                    NullDistribution::WildBootstrap => wild_stats::<B>(&ks, &ls, draws, p.seed)?,
                    _ => permutation_stats::<B>(&ks, &ls, p.statistic, draws, p.seed, None, progress)?,
                };
                self.aggregated(stats)
            } else {
                self.single_outcome::<B>(&ks[0], &ls[0], progress)?
            }
        };
        if whole {
            progress.update("null distribution", 1, 1);
        }
        let ny = self.y_kernels.kernels.len();
        let pair = |i: usize| (self.x_kernels.kernels[i / ny], self.y_kernels.kernels[i % ny]);
        let kernels = (0..stats.observed.len())
            .map(|i| {
                let (kx, ky) = pair(i);
                KernelReport {
                    family: kx.family,
                    lengthscale: kx.lengthscale,
                    lengthscale_y: Some(ky.lengthscale),
                    weight: kx.weight * ky.weight,
                    statistic: stats.observed[i],
                    p_value: p_values[i],
                }
            })
            .collect();
        let (lx, ly) = pair(leading);
        let resampled = p.null.is_resampling();
        Ok(HsicReport {
            outcome,
            lengthscale_x: lx.lengthscale,
            lengthscale_y: ly.lengthscale,
            selection: p.selection.name(),
            selection_x: SelectionFields::new(&self.x_kernels, "_x", true),
            selection_y: SelectionFields::new(&self.y_kernels, "_y", false),
            statistic_kind: if p.null == NullDistribution::WildBootstrap {
                "pairs"
            } else {
                p.statistic.name()
            },
            kernel: lx.family.name(),
            null_grams: if self.low_rank() { "nystrom" } else { "exact" },
            n: self.data.x.len(),
            permutations: resampled.then_some(p.permutations),
            seed: resampled.then_some(p.seed),
            u_alpha,
            backend: B::name(),
            kernels,
        })
    }

    fn single<B: Backend>(&self, k: &Mat, l: &Mat, progress: &dyn Progress) -> Result<Outcome, CoreError> {
        let p = &self.params;
        let n = k.nrows();
        match p.null {
            NullDistribution::Gamma => gamma_test(k, l, p),
            NullDistribution::WildBootstrap => {
                let s = wild_stats::<B>(
                    std::slice::from_ref(k),
                    std::slice::from_ref(l),
                    p.permutations,
                    p.seed,
                )?;
                Ok(Outcome::from_samples(s.observed[0], s.draws[0].clone(), p.alpha, p.null))
            }
            _ => {
                let s = permutation_stats::<B>(
                    std::slice::from_ref(k),
                    std::slice::from_ref(l),
                    p.statistic,
                    p.permutations,
                    p.seed,
                    None,
                    progress,
                )?;
                debug_assert_eq!(n, l.nrows());
                Ok(Outcome::from_samples(s.observed[0], s.draws[0].clone(), p.alpha, p.null))
            }
        }
    }

    /// The single-kernel test as the pieces of a report.
    fn single_outcome<B: Backend>(
        &self,
        k: &Mat,
        l: &Mat,
        progress: &dyn Progress,
    ) -> Result<Pieces, CoreError> {
        let o = self.single::<B>(k, l, progress)?;
        let stats = KernelStatistics { observed: vec![o.statistic], draws: vec![o.null_samples.clone()] };
        Ok((o.clone(), stats, vec![o.p_value], 0, None))
    }

    /// Whether the aggregated rule is a min-p test with a second set of draws (HSICAgg, MMDAgg).
    fn is_min_p(&self) -> bool {
        matches!(self.params.selection.rule(), Some(SelectRule::Mmdagg | SelectRule::Hsicagg))
    }

    /// The draws an aggregated test needs: `B₁ + B₂ = 2B` for the min-p tests, `B` otherwise.
    fn aggregated_draws(&self) -> usize {
        if self.is_min_p() { 2 * self.params.permutations } else { self.params.permutations }
    }

    /// The aggregated test from every pair's statistics and draws ([`Self::aggregated_draws`]).
    fn aggregated(&self, mut stats: KernelStatistics) -> Pieces {
        let p = &self.params;
        let is_agg = self.is_min_p();
        let weights: Vec<f64> = self
            .x_kernels
            .kernels
            .iter()
            .flat_map(|kx| self.y_kernels.kernels.iter().map(move |ky| kx.weight * ky.weight))
            .collect();
        let (agg, p_values) = if is_agg {
            let reference = KernelStatistics {
                observed: stats.observed.clone(),
                draws: stats.draws.iter().map(|d| d[..p.permutations].to_vec()).collect(),
            };
            (min_p(&stats, &weights, p.permutations, p.alpha), reference.kernel_p_values())
        } else {
            let p_values = stats.kernel_p_values();
            studentise(&mut stats);
            (soft_max_test(&stats, &weights, STUDENTISED_TEMPERATURE), p_values)
        };
        let outcome = Outcome::from_draws(agg.statistic, agg.p_value, agg.null.clone(), p.alpha, p.null);
        (outcome, stats, p_values, agg.leading, agg.u_alpha)
    }
}

/// A test's outcome, every pair's statistics, their p-values, the leading pair and HSICAgg's `û_α`.
type Pieces = (Outcome, KernelStatistics, Vec<f64>, usize, Option<f64>);

/// Refuses the test's dense `n × n` matrices beyond the memory limit ([`crate::budget`]) with the
/// settings that need less: the Gram matrices of the `nx + ny` kernels and each variable's
/// distances, the `nx` centred (or zero-diagonal) copies of the null, and its operands — at most
/// `(2 nx + ny + 4) · 8n²` bytes.
fn check_memory(n: usize, nx: usize, ny: usize) -> Result<(), CoreError> {
    let setting = format!(
        "n = {n} observations with {nx} × {ny} kernels (the test holds dense n × n matrices per \
         kernel: --select median uses one kernel per variable; or test a random subsample)"
    );
    crate::budget::check(&setting, crate::budget::Bytes::f64s(n).times(n).times(2 * nx + ny + 4))
}

/// HSIC between paired samples `x` and `y` under Gaussian kernels `kx` and `ky` (by the definitions).
pub fn hsic_statistic(
    x: &Points,
    y: &Points,
    kx: &WeightedKernel,
    ky: &WeightedKernel,
    statistic: HsicStatistic,
) -> Result<f64, CoreError> {
    check_pair(x, y, statistic.min_points())?;
    Ok(observed(&Distances::new(x).gram(kx), &Distances::new(y).gram(ky), statistic))
}

fn gamma_test(k: &Mat, l: &Mat, p: &HsicParams) -> Result<Outcome, CoreError> {
    let n = k.nrows();
    let stat = observed(k, l, p.statistic);
    let (mean, var) = gamma_moments(k, l);
    if !(mean > 0.0 && var > 0.0) {
        return Err(invalid(
            "null variance of n·HSIC",
            var,
            "a Gram matrix is (numerically) constant, so the gamma fit is undefined: the lengthscale is far too large or too small for the data; use the permutation null or another lengthscale",
        ));
    }
    let nf = n as f64;
    let (shape, scale) = (mean * mean / var, var / mean);
    let shifted = match p.statistic {
        HsicStatistic::Biased => nf * stat,
        HsicStatistic::Unbiased => nf * stat + mean,
    };
    let null_mean = if p.statistic == HsicStatistic::Biased { mean / nf } else { 0.0 };
    Ok(Outcome::from_p(stat, gamma_sf(shifted, shape, scale), p.alpha, p.null, null_mean, var.sqrt() / nf))
}

#[cfg(test)]
mod tests;
