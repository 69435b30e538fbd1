//! The kernel two-sample test with the maximum mean discrepancy (Gretton et al. 2012; seed 000 §2.2):
//! `H₀: P = Q` against `H₁: P ≠ Q`, from `x_1…x_n ~ P` and `y_1…y_m ~ Q`.
//!
//! Statistics ([`MmdStatistic`]): unbiased U-statistic (default), biased V-statistic, linear-time
//! (formulas in the [module docs](super)).
//!
//! ```
//! use bke_core::hypothesis::{LengthscaleSelection, MmdParams};
//! use bke_core::{Params, Points, TwoSamples};
//! use bke_linalg::DefaultBackend;
//! let x = Points::from_1d("x", &(0..40).map(|i| (i as f64 * 0.37).sin()).collect::<Vec<_>>())?;
//! let y = Points::from_1d("y", &(0..40).map(|i| 1.0 + (i as f64 * 0.53).cos()).collect::<Vec<_>>())?;
//! let params = MmdParams { selection: LengthscaleSelection::bkl(0), permutations: 200, ..MmdParams::default() };
//! let report = params.check()?.fit::<DefaultBackend>(&TwoSamples { x, y })?.test::<DefaultBackend>()?;
//! assert!(report.outcome.reject);
//! assert_eq!(report.selection, "bkl");
//! # Ok::<(), bke_core::CoreError>(())
//! ```
//!
//! # Permutation null as one matrix product
//! With the pooled Gram matrix `K` (`N = n + m`), a relabelling is an indicator `u ∈ {0,1}^N` with `n`
//! ones (the points called `x`). Everything the statistics need follows from `q = uᵀKu`,
//! `s = uᵀr` (`r = K1`, row sums), `d_x = uᵀ diag K`, `T = 1ᵀK1` and `D = tr K`:
//! `Σ_xx = q`, `Σ_yy = T − 2s + q`, `Σ_xy = s − q`, so
//! - biased: `q/n² + (T − 2s + q)/m² − 2(s − q)/(nm)`,
//! - unbiased: `(q − d_x)/(n(n−1)) + (T − 2s + q − D + d_x)/(m(m−1)) − 2(s − q)/(nm)`.
//!
//! `B` relabellings are `B` columns of `U`; `q_b = u_bᵀ(KU)_b` needs one GEMM `K·U` through the
//! [`Backend`] (`2N²B` flops), after which each draw costs `O(N)`. The Gram matrix is computed once and
//! nothing is allocated per draw. The GEMM runs on the doubly centred `K̃ = HKH` (which leaves both
//! statistics unchanged and makes `s`, `T` vanish) in single precision, except for pooled samples with
//! repeated points, whose exact ties need `f64` ([`super::MmdPermutation::null_of`] says why). [`super::MmdPermutation::null_naive`] recomputes the three block sums per
//! draw from the definitions instead (same draws, same numbers): it is the oracle and the baseline of
//! `cargo xtask bench tests`.
//!
//! # Gamma null by moment matching
//! Under relabelling the biased statistic is `wᵀK̃w` with `w = ±1/n, 1/m` weights and
//! `K̃ = HKH` the pooled-centred Gram matrix. Its exact permutation mean is
//! `E = c tr K̃`, `c = N/(nm(N−1))`, and treating `w` as Gaussian with the same covariance `cH` gives
//! `Var = 2c² ‖K̃‖²_F`; for `n = m` these are Gretton et al. (2012, §5)'s moments. The gamma with this
//! mean and variance (shape `E²/Var`, scale `Var/E`) is the null of the biased statistic. The unbiased
//! statistic has null mean 0 and differs from the biased one by `O(n^{-3/2})` under `H₀` beyond that
//! shift, so its p-value is `P(G ≥ T_u + E)`.
//!
//! # Wild bootstrap (`n = m`)
//! With pairs `z_i = (x_i, y_i)` and `h_ij = k(x_i,x_j) + k(y_i,y_j) − k(x_i,y_j) − k(x_j,y_i)`, the
//! bootstrap statistic is `εᵀHε/n²` (biased) or `(εᵀHε − tr H)/(n(n−1))` (unbiased) for Rademacher
//! signs `ε`, batched as one GEMM `H·E`. With the wild bootstrap the unbiased statistic is the
//! U-statistic over pairs, Gretton et al. (2012) eq. (4), which omits the `k(x_i, y_i)` terms; that is
//! the statistic reported.
//!
//! # Aggregated tests (MMDAgg, MMD-FUSE, BKL-Bayes)
//! With a collection of kernels ([`super::select`]), every kernel's unbiased statistic is computed
//! under the *same* relabellings (or sign flips: the wild bootstrap swaps `x_i ↔ y_i`, a relabelling
//! too), one batched GEMM per kernel, and [`super::aggregate`] combines them. MMDAgg draws
//! `B₁ = B₂ = B` (the reference code: `B₁ = B₂ = 2000`, and the wild bootstrap when `n = m` unless
//! asked for permutations; bke's default null is the permutation one for every test). MMD-FUSE and
//! BKL-Bayes normalise each kernel's statistic by the relabelling-invariant
//! `N̂_k = Σ_{i≠j} k(z_i, z_j)²` over the pooled sample:
//! `S_k = n(n−1) MMD²_k / √N̂_k` with `n = min(#x, #y)` (the reference code's normalisation, which the
//! paper writes `MMD²_k/√N̂_k` with `N̂_k` scaled by `1/(n(n−1))²`), and aggregate by the soft maximum
//! `(1/λ) log Σ_k π_k exp(λ S_k)` with `λ = √(n(n−1))` (the paper's default): MMD-FUSE with uniform
//! `π_k` over its collection, BKL-Bayes with its weights (half BKE posterior, half uniform over the
//! union of the MMDAgg and MMD-FUSE collections, [`super::select`]) — BKL-Bayes is MMD-FUSE with the
//! BKE posterior as its prior. Aggregated tests need the unbiased statistic and a resampled null.
//!
//! Above [`super::nystrom::EXACT_MAX_POINTS`] pooled points the permutation null of an aggregated test
//! uses every kernel's Nyström approximation `K̃ = ΦΦᵀ` on shared landmarks ([`super::nystrom`]) for the
//! observed statistic, the normaliser and every relabelling alike, so the test stays exact and each
//! kernel's null costs `2NrB` flops (`r ≤ N/6` to start) instead of `2N²B`; a kernel the landmarks
//! cannot resolve gets more of them, or its exact Gram matrix ([`super::nystrom`]).
//! `MmdParams::dense` (`--dense`) keeps the dense Gram matrices at every size.
//!
//! # Large samples: the Gram matrix in tiles
//! Above [`Blocking::above`] pooled points (default 4096), or where the dense `K` would not fit the
//! memory limit ([`crate::budget`]), the exact Gram matrices are never held whole: the single-kernel
//! test with the permutation or gamma null, and the aggregated tests' exact permutation null
//! (`--dense`, or the sizes at or below [`super::nystrom::EXACT_MAX_POINTS`]), evaluate `K` tile by
//! tile from the points, once per pass over a batch of relabellings ([`BlockedMmd`]: `q_b`, the row
//! sums, the gamma moments and `N̂_k` from the same tiles). Memory is linear in `N`; the relabellings
//! are the dense path's (draw `b` from stream `(seed, b)`), so the null sample and the p-value are
//! the same up to rounding. The wild bootstrap keeps the dense matrices and is refused, with the
//! reason, where they do not fit.
//!
//! # Linear time
//! `(1/⌊n/2⌋) Σ_i h(z_{2i−1}, z_{2i})` never forms a Gram matrix. Its nulls: permutation (relabel,
//! re-pair, `O(N)` kernel evaluations per draw), wild bootstrap `Σ ε_i h_i/⌊n/2⌋`, or the asymptotic
//! normal `N(0, s_h²/⌊n/2⌋)` ([`NullDistribution::Normal`]).

use super::aggregate::{AggregateOutcome, KernelStatistics, min_p, soft_max_test};
use super::kernels::{Distances, WeightedKernel};
use super::mmd_blocked::{BlockedMmd, Blocking};
use super::mmd_null::{
    MmdPermutation, Relabellings, gamma_moments, linear_normal, linear_permutation, linear_wild, wild_null,
};
use super::mmd_statistic::{check_gram, linear_h};
use super::nystrom::NystromLandmarks;
use rayon::prelude::*;
// The statistic lives in its own module (shared with the nulls); these keep the public paths.
pub use super::mmd_statistic::{MmdStatistic, check_samples, mmd_from_gram, mmd_statistic};
use super::report::{KernelReport, MmdReport, Outcome, SelectionFields};
use super::resampling::{NullDistribution, batch_size, check_alpha, check_draws, choice, invalid};
use super::select::{LengthscaleSelection, SelectRule, SelectedKernels, TestKind, select_kernels};
use crate::estimator::{Estimator, Params, Progress, TwoSamples, Valid};
use crate::special::gamma_sf;
use crate::{CoreError, Points};
use bke_linalg::{Backend, Mat};

/// Parameters of the MMD two-sample test: `MmdParams { .. }.check()?.fit::<B>(&TwoSamples { x, y })?`
/// chooses the kernels on the pooled sample, and [`FittedMmd::test`] runs the test.
#[derive(Debug, Clone, PartialEq)]
pub struct MmdParams {
    /// The estimator. Default [`MmdStatistic::Unbiased`].
    pub statistic: MmdStatistic,
    /// The null distribution. Default [`NullDistribution::Permutation`].
    pub null: NullDistribution,
    /// Number of permutations / bootstrap draws `B` (MMDAgg: `B₁ = B₂ = B`). Default 1000.
    pub permutations: usize,
    /// Test level α ∈ (0, 1). Default 0.05.
    pub alpha: f64,
    /// Seed of the resampling streams. Default 0.
    pub seed: u64,
    /// How the kernel(s) are chosen. Default: BKL-Bayes.
    pub selection: LengthscaleSelection,
    /// Dense Gram matrices at every size: the aggregated tests' published statistics, `O(N²B)` per
    /// kernel. Default `false`: Nyström factors above [`super::nystrom::EXACT_MAX_POINTS`] pooled
    /// points for the aggregated tests' permutation null (module docs).
    pub dense: bool,
}

impl Default for MmdParams {
    fn default() -> Self {
        Self {
            statistic: MmdStatistic::Unbiased,
            null: NullDistribution::Permutation,
            permutations: 1000,
            alpha: 0.05,
            seed: 0,
            selection: LengthscaleSelection::default(),
            dense: false,
        }
    }
}

impl Params for MmdParams {
    type Error = CoreError;

    /// Validates α, `B` (resampled nulls), the statistic/null combination and the selection.
    fn validate(&self) -> Result<(), CoreError> {
        check_alpha(self.alpha)?;
        if self.null.is_resampling() {
            check_draws(self.permutations)?;
        }
        self.selection.validate(TestKind::TwoSample)?;
        match (self.statistic, self.null) {
            (MmdStatistic::Linear, NullDistribution::Gamma) => {
                return Err(choice(
                    "null distribution 'gamma' for the linear-time statistic",
                    "the linear-time statistic is asymptotically normal: use --null normal, permutation or wild",
                ));
            }
            (MmdStatistic::Unbiased | MmdStatistic::Biased, NullDistribution::Normal) => {
                return Err(choice(
                    "null distribution 'normal' for a quadratic-time statistic",
                    "the normal null is for the linear-time statistic; use permutation, gamma or wild",
                ));
            }
            _ => {}
        }
        if self.selection.is_aggregated()
            && (self.statistic != MmdStatistic::Unbiased || !self.null.is_resampling())
        {
            return Err(choice(
                &format!(
                    "statistic '{}' with null '{}' for the aggregated selection '{}'",
                    self.statistic.name(),
                    self.null.name(),
                    self.selection.name()
                ),
                "aggregated tests (bkl-bayes, the default, mmdagg, fuse) use the unbiased statistic with the \
                 permutation or wild null; for another statistic or null choose one kernel: select median \
                 or bkl, or a fixed lengthscale",
            ));
        }
        Ok(())
    }
}

impl Estimator for MmdParams {
    type Data = TwoSamples;
    type Fitted = FittedMmd;

    /// Checks the samples and chooses the kernels on the pooled sample (label-invariant).
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TwoSamples,
        progress: &dyn Progress,
    ) -> Result<FittedMmd, CoreError> {
        check_samples(&data.x, &data.y, params.statistic, params.null)?;
        progress.update("choosing kernels", 0, 1);
        let pooled = data.x.concat(&data.y)?;
        let selected = select_kernels::<B>(&pooled, &params.selection, TestKind::TwoSample, progress)?;
        progress.update("choosing kernels", 1, 1);
        Ok(FittedMmd { params: params.clone(), selected, data: data.clone(), blocking: Blocking::default() })
    }
}

/// An MMD test with its kernels chosen: run it with [`FittedMmd::test`].
#[derive(Debug, Clone)]
pub struct FittedMmd {
    params: Valid<MmdParams>,
    selected: SelectedKernels,
    data: TwoSamples,
    blocking: Blocking,
}

impl FittedMmd {
    /// The parameters.
    pub fn params(&self) -> &MmdParams {
        &self.params
    }

    /// The chosen kernels.
    pub fn selected(&self) -> &SelectedKernels {
        &self.selected
    }

    /// The same test with other [`Blocking`] settings: when a single-kernel test with the unbiased or
    /// biased statistic and the permutation or gamma null works on tiles of the Gram matrix
    /// ([`BlockedMmd`]) instead of the whole of it. The results are the same up to rounding.
    pub fn with_blocking(mut self, blocking: Blocking) -> Self {
        self.blocking = blocking;
        self
    }

    /// The [`Blocking`] settings (default: [`Blocking::default`]).
    pub fn blocking(&self) -> Blocking {
        self.blocking
    }

    /// Whether the single-kernel quadratic statistic takes the blocked path (above
    /// [`Blocking::above`] pooled points, permutation or gamma null).
    fn blocked(&self) -> bool {
        let p = &self.params;
        !p.selection.is_aggregated()
            && p.statistic != MmdStatistic::Linear
            && matches!(p.null, NullDistribution::Permutation | NullDistribution::Gamma)
            && self.blocks(self.data.x.len() + self.data.y.len())
    }

    /// Whether an exact Gram matrix of `pooled` points is taken in blocks: above
    /// [`Blocking::above`], or where the dense one would not fit the memory limit.
    fn blocks(&self, pooled: usize) -> bool {
        self.blocking.applies(pooled) || check_dense_gram(pooled, 0).is_err()
    }

    /// Runs the test with backend `B`.
    pub fn test<B: Backend>(&self) -> Result<MmdReport, CoreError> {
        self.test_with_progress::<B>(&())
    }

    /// Runs the test with backend `B`, reporting progress per kernel.
    pub fn test_with_progress<B: Backend>(&self, progress: &dyn Progress) -> Result<MmdReport, CoreError> {
        self.report::<B>(progress, None)
    }

    /// The draws `range` of the permutation null of a single-kernel quadratic-statistic test
    /// (draw `b` from stream `(seed, b)`, as [`FittedMmd::test`] draws them): the null split into
    /// pieces computed anywhere (e.g. on Dask workers), finished by [`FittedMmd::test_with_null`].
    /// Errors for aggregated selections, the linear statistic and other nulls.
    pub fn null_draws<B: Backend>(&self, range: std::ops::Range<usize>) -> Result<Vec<f64>, CoreError> {
        self.check_splittable()?;
        let pooled = self.data.x.concat(&self.data.y)?;
        let kernel = self.selected.kernels[0];
        if self.blocked() {
            let blocked = BlockedMmd::new(&pooled, self.data.x.len(), kernel, self.blocking)?;
            return Ok(blocked.permutation::<B>(self.params.statistic, range, self.params.seed, &())?.null);
        }
        check_dense_gram(pooled.len(), 0)?;
        let k = Distances::new(&pooled).gram(&kernel);
        MmdPermutation::new(&k, self.data.x.len())?.null_range::<B>(
            self.params.statistic,
            range,
            self.params.seed,
        )
    }

    /// The report of [`FittedMmd::test`] from null draws computed by [`FittedMmd::null_draws`] over
    /// a partition of `0..permutations`, concatenated in order: the same report as `test` (to the
    /// GEMM's rounding of the draws). Errors unless there are `permutations` draws.
    pub fn test_with_null<B: Backend>(&self, null: Vec<f64>) -> Result<MmdReport, CoreError> {
        self.check_splittable()?;
        if null.len() != self.params.permutations {
            return Err(CoreError::DimensionMismatch {
                what: "null draws (one per permutation)".into(),
                expected: self.params.permutations,
                found: null.len(),
            });
        }
        self.report::<B>(&(), Some(null))
    }

    fn check_splittable(&self) -> Result<(), CoreError> {
        let p = &self.params;
        if p.selection.is_aggregated()
            || p.statistic == MmdStatistic::Linear
            || p.null != NullDistribution::Permutation
        {
            return Err(choice(
                "splitting the null of this test",
                "only the permutation null of a single-kernel test with the unbiased or biased statistic is split",
            ));
        }
        Ok(())
    }

    fn report<B: Backend>(
        &self,
        progress: &dyn Progress,
        null: Option<Vec<f64>>,
    ) -> Result<MmdReport, CoreError> {
        let p = &self.params;
        let (outcome, kernels, leading, u_alpha) = if p.selection.is_aggregated() {
            let (agg, stats, p_values) = self.aggregated::<B>(progress)?;
            let outcome = Outcome::from_draws(agg.statistic, agg.p_value, agg.null.clone(), p.alpha, p.null);
            let kernels = self.kernel_reports(&stats.observed, &p_values);
            (outcome, kernels, agg.leading, agg.u_alpha)
        } else {
            let o = self.single::<B>(null, progress)?;
            let kernels = self.kernel_reports(&[o.statistic], &[o.p_value]);
            (o, kernels, 0, None)
        };
        let lead = self.selected.kernels[leading];
        let resampled = p.null.is_resampling();
        Ok(MmdReport {
            outcome,
            lengthscale: lead.lengthscale,
            selection: p.selection.name(),
            selection_fields: SelectionFields::new(&self.selected, "", true),
            statistic_kind: p.statistic.name(),
            kernel: lead.family.name(),
            n_x: self.data.x.len(),
            n_y: self.data.y.len(),
            permutations: resampled.then_some(p.permutations),
            seed: resampled.then_some(p.seed),
            u_alpha,
            backend: B::name(),
            kernels,
        })
    }

    fn kernel_reports(&self, statistics: &[f64], p_values: &[f64]) -> Vec<KernelReport> {
        self.selected
            .kernels
            .iter()
            .zip(statistics.iter().zip(p_values))
            .map(|(k, (&statistic, &p_value))| KernelReport {
                family: k.family,
                lengthscale: k.lengthscale,
                lengthscale_y: None,
                weight: k.weight,
                statistic,
                p_value,
            })
            .collect()
    }

    /// The single-kernel test with any statistic and null; with `null`, the permutation null's
    /// draws computed elsewhere ([`FittedMmd::null_draws`]).
    fn single<B: Backend>(
        &self,
        null: Option<Vec<f64>>,
        progress: &dyn Progress,
    ) -> Result<Outcome, CoreError> {
        let (x, y, p) = (&self.data.x, &self.data.y, &self.params);
        let kernel = &self.selected.kernels[0];
        if p.statistic == MmdStatistic::Linear {
            return linear_test(kernel, x, y, p);
        }
        let pooled = x.concat(y)?;
        if self.blocked() {
            return self.single_blocked::<B>(&pooled, null, progress);
        }
        check_dense_gram(pooled.len(), wild_pairs(p.null, x.len()))?;
        let k = Distances::new(&pooled).gram(kernel);
        match null {
            Some(draws) => {
                let observed = mmd_from_gram(&k, x.len(), p.statistic)?;
                Ok(Outcome::from_samples(observed, draws, p.alpha, p.null))
            }
            None => mmd_test_gram::<B>(&k, x.len(), p),
        }
    }

    /// [`FittedMmd::single`] on tiles of the Gram matrix ([`BlockedMmd`]): permutation or gamma null.
    fn single_blocked<B: Backend>(
        &self,
        pooled: &Points,
        null: Option<Vec<f64>>,
        progress: &dyn Progress,
    ) -> Result<Outcome, CoreError> {
        let p = &self.params;
        let blocked = BlockedMmd::new(pooled, self.data.x.len(), self.selected.kernels[0], self.blocking)?;
        match (p.null, null) {
            (NullDistribution::Gamma, _) => {
                let (observed, mean, var) = blocked.gamma::<B>(p.statistic, progress)?;
                gamma_outcome(observed, mean, var, p)
            }
            (_, Some(draws)) => {
                let observed = blocked.observed::<B>(p.statistic, progress)?;
                Ok(Outcome::from_samples(observed, draws, p.alpha, p.null))
            }
            (_, None) => {
                let r = blocked.permutation::<B>(p.statistic, 0..p.permutations, p.seed, progress)?;
                Ok(Outcome::from_samples(r.observed, r.null, p.alpha, p.null))
            }
        }
    }

    /// Every kernel's statistic under the same draws, aggregated; with each kernel's own p-value
    /// (MMDAgg: against its `B₁` draws, as compared with `û_α w_k`).
    fn aggregated<B: Backend>(
        &self,
        progress: &dyn Progress,
    ) -> Result<(AggregateOutcome, KernelStatistics, Vec<f64>), CoreError> {
        let (x, y, p) = (&self.data.x, &self.data.y, &self.params);
        let n = x.len();
        let min_n = n.min(y.len()) as f64;
        let is_agg = matches!(p.selection.rule(), Some(SelectRule::Mmdagg | SelectRule::Hsicagg));
        let draws = if is_agg { 2 * p.permutations } else { p.permutations };
        let pooled = x.concat(y)?;
        let mut dist = Distances::new(&pooled);
        let landmarks = match p.null {
            NullDistribution::Permutation if !p.dense => NystromLandmarks::new(&pooled),
            _ => None,
        };
        // the exact permutation null on many points: tiles of each Gram matrix (BlockedMmd)
        let blocked =
            landmarks.is_none() && p.null == NullDistribution::Permutation && self.blocks(pooled.len());
        if landmarks.is_none() && !blocked {
            check_dense_gram(pooled.len(), wild_pairs(p.null, n))?;
        }
        let kernels = &self.selected.kernels;
        let relabellings = (p.null == NullDistribution::Permutation && !blocked)
            .then(|| Relabellings::draw(pooled.len(), n, 0..draws, p.seed));
        let mut stats = KernelStatistics { observed: Vec::new(), draws: Vec::new() };
        let batch = batch_size(pooled.len(), draws);
        let group = rayon::current_num_threads().clamp(1, FACTORS_AT_ONCE);
        for (g, kernels_g) in kernels.chunks(group).enumerate() {
            progress.checkpoint()?;
            // the group's Nyström factors and their nulls, one kernel per task (shared relabellings):
            // a factor's own loops are short (a column per pivot, a row per point), so kernels side
            // by side keep the threads busy with far fewer fork-joins than one kernel at a time
            let low_rank: Vec<Option<(f64, Vec<f64>, f64)>> = match (&landmarks, &relabellings) {
                (Some(l), Some(r)) => kernels_g
                    .par_iter()
                    .map(|k| {
                        l.factor::<B>(k)?.map(|f| factor_null::<B>(&f, n, r, batch, !is_agg)).transpose()
                    })
                    .collect::<Result<_, _>>()?,
                _ => vec![None; kernels_g.len()],
            };
            for (j, (kernel, low_rank)) in kernels_g.iter().zip(low_rank).enumerate() {
                let i = g * group + j;
                progress.checkpoint()?;
                progress.update("kernels", i as u64, kernels.len() as u64);
                // no factor (few pooled points, a null other than the permutation one, `dense`, or a
                // kernel the landmarks cannot resolve): the exact Gram matrix, dense or in tiles
                let tiles = blocked || (landmarks.is_some() && self.blocks(pooled.len()));
                let (mut observed, mut null, norm) = match low_rank {
                    Some(statistics) => statistics,
                    None if tiles => {
                        let stage = format!("kernel {} of {}: permutation null", i + 1, kernels.len());
                        let r = BlockedMmd::new(&pooled, n, *kernel, self.blocking)?
                            .named(&stage)
                            .permutation::<B>(MmdStatistic::Unbiased, 0..draws, p.seed, progress)?;
                        (r.observed, r.null, r.off_diagonal_norm)
                    }
                    None => {
                        let gram = dist.gram(kernel);
                        let perm = MmdPermutation::new(&gram, n)?;
                        // the permutation null's relabellings are shared; otherwise the wild bootstrap
                        let (observed, null) = match &relabellings {
                            Some(r) => (
                                perm.observed(MmdStatistic::Unbiased),
                                perm.null_of::<B>(MmdStatistic::Unbiased, r, batch)?,
                            ),
                            None => wild_null::<B>(&gram, n, MmdStatistic::Unbiased, draws, p.seed)?,
                        };
                        let norm = if is_agg { 0.0 } else { perm.off_diagonal_norm::<B>()? };
                        (observed, null, norm)
                    }
                };
                if !is_agg {
                    let c = min_n * (min_n - 1.0) / fuse_normaliser(norm)?;
                    observed *= c;
                    null.iter_mut().for_each(|v| *v *= c);
                }
                stats.observed.push(observed);
                stats.draws.push(null);
            }
        }
        progress.update("kernels", kernels.len() as u64, kernels.len() as u64);
        let weights: Vec<f64> = kernels.iter().map(|k| k.weight).collect();
        if is_agg {
            let reference = KernelStatistics {
                observed: stats.observed.clone(),
                draws: stats.draws.iter().map(|d| d[..p.permutations].to_vec()).collect(),
            };
            let p_values = reference.kernel_p_values();
            return Ok((min_p(&stats, &weights, p.permutations, p.alpha), stats, p_values));
        }
        let p_values = stats.kernel_p_values();
        Ok((soft_max_test(&stats, &weights, (min_n * (min_n - 1.0)).sqrt()), stats, p_values))
    }
}

/// The observed statistic, the null statistics of `relabellings` and (when `normaliser`) MMD-FUSE's
/// normaliser of the low-rank Gram matrix with factor `Φᵀ` (`factor`).
fn factor_null<B: Backend>(
    factor: &Mat,
    n: usize,
    relabellings: &Relabellings,
    batch: usize,
    normaliser: bool,
) -> Result<(f64, Vec<f64>, f64), CoreError> {
    let perm = MmdPermutation::from_factor(factor, n)?;
    let null = perm.null_of::<B>(MmdStatistic::Unbiased, relabellings, batch)?;
    let norm = if normaliser { perm.off_diagonal_norm::<B>()? } else { 0.0 };
    Ok((perm.observed(MmdStatistic::Unbiased), null, norm))
}

/// The most Nyström factors an aggregated test holds at once: one per thread, up to this many (each
/// at most [`super::nystrom::MAX_FACTOR_ENTRIES`] entries).
const FACTORS_AT_ONCE: usize = 4;

/// `√(Σ_{i≠j} K_ij²)`, MMD-FUSE's relabelling-invariant normaliser (module docs), or an error when it is 0.
fn fuse_normaliser(s: f64) -> Result<f64, CoreError> {
    if !(s > 0.0) {
        return Err(invalid(
            "normaliser of the MMD-FUSE statistic",
            s,
            "every off-diagonal kernel value is 0: the smallest bandwidth is far below the distances between points",
        ));
    }
    Ok(s)
}

/// The single-kernel MMD test from the pooled Gram matrix `K` (first `n` points are `x`), for the
/// quadratic statistics.
pub(crate) fn mmd_test_gram<B: Backend>(k: &Mat, n: usize, params: &MmdParams) -> Result<Outcome, CoreError> {
    let big_n = check_gram(k, n)?;
    let (alpha, stat) = (params.alpha, params.statistic);
    match params.null {
        NullDistribution::Permutation => {
            let observed = mmd_from_gram(k, n, stat)?;
            let null = MmdPermutation::new(k, n)?.null::<B>(stat, params.permutations, params.seed)?;
            Ok(Outcome::from_samples(observed, null, alpha, params.null))
        }
        NullDistribution::WildBootstrap => {
            if 2 * n != big_n {
                return Err(CoreError::DimensionMismatch {
                    what: "sample y size (wild bootstrap)".into(),
                    expected: n,
                    found: big_n - n,
                });
            }
            let (observed, null) = wild_null::<B>(k, n, stat, params.permutations, params.seed)?;
            Ok(Outcome::from_samples(observed, null, alpha, params.null))
        }
        NullDistribution::Gamma => {
            let observed = mmd_from_gram(k, n, stat)?;
            let (mean, var) = gamma_moments(k, n);
            gamma_outcome(observed, mean, var, params)
        }
        NullDistribution::Normal => Err(choice(
            "null distribution 'normal' for a quadratic-time statistic",
            "the normal null is for the linear-time statistic",
        )),
    }
}

/// The gamma null's outcome (module docs) from the observed statistic and the biased statistic's
/// permutation mean and variance.
fn gamma_outcome(observed: f64, mean: f64, var: f64, params: &MmdParams) -> Result<Outcome, CoreError> {
    if !(mean > 0.0 && var > 0.0) {
        return Err(invalid(
            "null variance of the MMD statistic",
            var,
            "the pooled Gram matrix is (numerically) constant, so the gamma fit is undefined: the lengthscale is far too large or too small for the data; use the permutation null or another lengthscale",
        ));
    }
    let stat = params.statistic;
    let (shape, scale) = (mean * mean / var, var / mean);
    let shifted = if stat == MmdStatistic::Biased { observed } else { observed + mean };
    let p = gamma_sf(shifted, shape, scale);
    let null_mean = if stat == MmdStatistic::Biased { mean } else { 0.0 };
    Ok(Outcome::from_p(observed, p, params.alpha, params.null, null_mean, var.sqrt()))
}

/// Refuses a dense pooled Gram matrix (with its distances: `16 N²` bytes; with the wild bootstrap's
/// `pairs × pairs` matrix `H`, `8 pairs²` more) beyond the memory limit
/// ([`crate::budget`]), saying which settings avoid it: only the wild bootstrap gets there (the
/// permutation and gamma nulls then take the blocked path).
fn check_dense_gram(pooled: usize, pairs: usize) -> Result<(), CoreError> {
    let setting = format!(
        "pooled points = {pooled} with the wild bootstrap (its pairs need the dense Gram matrix; the \
         permutation and gamma nulls work in blocks at any size: use --null permutation)"
    );
    let pairs = crate::budget::Bytes::f64s(pairs).times(pairs);
    crate::budget::check(&setting, crate::budget::Bytes::f64s(pooled).times(pooled).times(2).plus(pairs))
}

/// The `n` pairs of the wild bootstrap's `n × n` matrix `H` (module docs), 0 for the other nulls.
fn wild_pairs(null: NullDistribution, n: usize) -> usize {
    if null == NullDistribution::WildBootstrap { n } else { 0 }
}

/// The linear-time test (module docs), `n = m`.
fn linear_test(
    kernel: &WeightedKernel,
    x: &Points,
    y: &Points,
    params: &MmdParams,
) -> Result<Outcome, CoreError> {
    let h = linear_h(kernel, x, y);
    let observed = h.iter().sum::<f64>() / h.len() as f64;
    let (alpha, null) = (params.alpha, params.null);
    match null {
        NullDistribution::Normal => {
            let (p, sd) = linear_normal(&h)?;
            Ok(Outcome::from_p(observed, p, alpha, null, 0.0, sd))
        }
        NullDistribution::WildBootstrap => Ok(Outcome::from_samples(
            observed,
            linear_wild(&h, params.permutations, params.seed),
            alpha,
            null,
        )),
        NullDistribution::Permutation => {
            let draws = linear_permutation(kernel, x, y, params.permutations, params.seed)?;
            Ok(Outcome::from_samples(observed, draws, alpha, null))
        }
        NullDistribution::Gamma => Err(choice(
            "null distribution 'gamma' for the linear-time statistic",
            "use normal, permutation or wild",
        )),
    }
}
