//! Low-rank Gram matrices for the aggregated two-sample tests at large pooled size: Nyström factors on
//! landmarks shared by every kernel of the collection.
//!
//! # The approximation
//! For a kernel `k` and landmarks `L ⊂ Z` (the pooled sample), the Nyström kernel is
//! `k̃(a, b) = k(a, L) W⁺ k(L, b)` with `W = k(L, L)` (Williams & Seeger 2001). Pivoted Cholesky on `W`
//! (greedy: the landmark with the largest residual variance next) stops after `r` pivots `P` when the
//! largest residual variance `k(l, l) − k̃(l, l)` over the landmarks falls below
//! [`RESIDUAL_VARIANCE`] (relative to `k(l, l) = 1`), or at `r = R`. With `W_PP = L_P L_Pᵀ`, the factor
//! is `Φᵀ = L_P⁻¹ k(P, Z)` (`r × N`) and `K̃ = ΦΦᵀ` — the Nyström kernel on the pivots. Smooth kernels
//! stop early (a Gaussian of bandwidth θ on data of range `s` needs about `s/θ` pivots per dimension);
//! rough ones (Laplace) use all `R`.
//!
//! The factor is then **truncated** to its leading pivots: the fewest that keep all but
//! [`TRUNCATED_VARIANCE`] (5 %) of the factor's centred variance on the landmarks,
//! `Σ_t ‖H g_t‖²` over the columns `g_t` of the landmarks' factor `G` (`W ≈ GGᵀ`, `H` the centring
//! matrix). A prefix of a pivoted Cholesky is the pivoted Cholesky stopped there, so the truncated
//! factor is the Nyström factor on the kept pivots. Why: the permutation null of kernel `k` reads
//! only its centred part, and the last pivots of a rough kernel carry little of it — for a Laplace
//! kernel much wider than the data, `1 − k ≈ |x − y|/θ` is a Brownian motion's covariance, whose
//! pivoted Cholesky on `r` of `R` evenly spread landmarks leaves about `1/r` of its centred variance,
//! so 5 % needs `r ≈ 20` where the residual tolerance takes all `R` (`cargo xtask bench tests`
//! measures what this saves).
//!
//! # Enough landmarks for every kernel
//! A kernel narrow against the landmarks' spacing — common in more than two dimensions, where `R`
//! points cover the sample sparsely — is mostly lost: `K̃` keeps only the part of it the landmarks
//! span, and the test loses the power that kernel carried (`cargo xtask repro power --dims gmm10`:
//! .55 against .85 for the dense BKL-Bayes before this check). So each factor is checked on the whole
//! pooled sample: the variance it loses, `(1/N) Σ_i (k(z_i, z_i) − ‖φ_i‖²)` (the mean of the
//! diagonal of `K − K̃ ⪰ 0`, relative to `k(z, z) = 1`), less the variance per
//! landmark the truncation dropped on purpose, may be at most [`MAX_LOST_VARIANCE`]. Where
//! it is more, the landmarks are doubled (every `⌊N/2R⌋`-th point, …) and the factor recomputed; when
//! more than `N/2` landmarks would be needed, the low rank saves little, and when the doubled
//! factor's pivoted Cholesky would cost more than the exact null ([`DOUBLING_COST`]) it saves nothing:
//! [`NystromLandmarks::factor`] answers `None` and the test uses the exact Gram matrix of that kernel.
//! A probe of [`PROBE_POINTS`] points midway between landmarks comes first: where its lost variance,
//! less three standard errors, is already above the bound, the whole factor is not formed for a
//! check it would fail (in ten dimensions most kernels of a collection fail it).
//! Above [`MAX_FACTOR_ENTRIES`] entries of `Φᵀ` the doubling stops and the last factor is used, so
//! memory stays bounded at any `N` (the power, not the level, then depends on `N`).
//!
//! # The test stays exact
//! The landmarks are every `⌊N/R⌋`-th point of the pooled sample in canonical order
//! ([`super::select::canonical_order`]), so `L`, the pivots, their truncation and `k̃` depend on the
//! pooled multiset only;
//! so do the probe and the lost variance (its terms are summed in sorted order), and with them the number of
//! landmarks and the choice of the exact Gram matrix.
//! `k̃` is a positive semi-definite kernel, and the statistic computed from it on the observed labels and
//! on every relabelling is one fixed function of the labelled data: the permutation test is exact by the
//! argument of [`super::select`]'s module docs. What the approximation costs is power, not level
//! (`cargo xtask repro power` measures it).
//!
//! # Cost
//! Per kernel: `R²` kernel evaluations and `R r²` flops for the pivoted Cholesky, `N r` evaluations and
//! `N r²` flops for `Φᵀ`, and `2 N r B` flops for the `B` relabellings (`ΦᵀU`, `MmdPermutation`)
//! — against `N²` evaluations and `2 N² B` flops with the dense Gram matrix. With
//! `R = N/`[`POINTS_PER_LANDMARK`] clamped to [[`MIN_LANDMARKS`], [`MAX_LANDMARKS`]] a collection of
//! `K` kernels the landmarks resolve costs at most `K R/N` times one dense kernel's null; a kernel
//! that needs more landmarks costs up to `½` (`N/2` of them) or the whole dense null. Memory: at most
//! [`MAX_FACTOR_ENTRIES`] entries of `Φᵀ` and as many again for the pivoted Cholesky per kernel, and
//! an aggregated test builds at most four at a time (one per thread), so linear in `N` at large `N`.

use super::kernels::WeightedKernel;
use crate::{CoreError, Points};
use bke_linalg::{Backend, Mat};
use rayon::prelude::*;

/// Pooled sizes up to this use the dense Gram matrices (exact statistics); above, Nyström factors.
pub const EXACT_MAX_POINTS: usize = 512;
/// Pooled points per landmark above [`EXACT_MAX_POINTS`]: `R = N / 6`. Fewer landmarks cost power
/// where the informative kernel is narrow against the data's extent (the blobs of seed 000 Fig. 2C),
/// more cost time; `--dense` gives the exact statistics at any size.
pub const POINTS_PER_LANDMARK: usize = 6;
/// The fewest landmarks of a low-rank Gram matrix.
pub const MIN_LANDMARKS: usize = 128;
/// The most landmarks a factor starts from: above `6 · 1024` pooled points the first factors' rank is
/// at most 1024 (more only for kernels they do not resolve, within [`MAX_FACTOR_ENTRIES`]).
pub const MAX_LANDMARKS: usize = 1024;
/// The pivoted Cholesky stops when no landmark's residual variance exceeds this (relative to
/// `k(l, l) = 1`).
pub const RESIDUAL_VARIANCE: f64 = 1e-3;
/// The share of a factor's centred variance on the landmarks its last pivots may carry and be
/// dropped (module docs): a rough kernel (Laplace) never reaches [`RESIDUAL_VARIANCE`] and uses
/// every landmark, though a wide one has little centred variance beyond its first pivots.
pub const TRUNCATED_VARIANCE: f64 = 0.05;
/// The most variance a factor may lose over the pooled sample (module docs) before the landmarks are
/// doubled.
pub const MAX_LOST_VARIANCE: f64 = 0.1;
/// Landmarks are doubled to `c` only while `c³ ≤ DOUBLING_COST · N²`. A kernel the first landmarks
/// do not resolve pivots on nearly all of the doubled ones: `c³/2` multiply-adds of a pivoted
/// Cholesky that runs at memory speed, against `2N²B` for its exact null in single-precision GEMM,
/// nearly two orders of magnitude faster per operation. With `B = 1000` the doubled factor pays for
/// itself only below about this bound; above, the exact Gram matrix is cheaper even where the doubled
/// factor would have resolved the kernel (`cargo xtask bench tests`, `D ≥ 5`, shows the saving).
pub const DOUBLING_COST: usize = 64;
/// The landmarks are not doubled beyond this many entries of `Φᵀ` (`r N`, 128 MB; the pivoted
/// Cholesky on `r ≤ N/2` landmarks holds at most as many again).
pub const MAX_FACTOR_ENTRIES: usize = 1 << 24;
/// Points of the lost-variance probe that skips a factor which clearly fails the full check
/// ([`NystromLandmarks::factor`]).
pub const PROBE_POINTS: usize = 256;

/// Landmarks of the pooled sample for [`NystromLandmarks::factor`], or `None` when the pooled sample
/// is small enough for the dense Gram matrices.
#[derive(Debug)]
pub struct NystromLandmarks<'a> {
    pooled: &'a Points,
    canonical: Points,
    landmarks: Points,
}

impl<'a> NystromLandmarks<'a> {
    /// The landmarks of `pooled` (module docs), or `None` at or below [`EXACT_MAX_POINTS`] points.
    pub fn new(pooled: &'a Points) -> Option<Self> {
        Self::above(pooled, EXACT_MAX_POINTS)
    }

    /// The landmarks of `pooled`, or `None` at or below `exact_max_points` points.
    pub fn above(pooled: &'a Points, exact_max_points: usize) -> Option<Self> {
        let n = pooled.len();
        if n <= exact_max_points {
            return None;
        }
        let count = (n / POINTS_PER_LANDMARK).clamp(MIN_LANDMARKS, MAX_LANDMARKS).min(n);
        let canonical = super::select::canonical_order(pooled);
        let landmarks = every_nth(&canonical, count);
        Some(Self { pooled, canonical, landmarks })
    }

    /// Number of landmarks `R`.
    pub fn len(&self) -> usize {
        self.landmarks.len()
    }

    /// Whether there are no landmarks (never: at least [`MIN_LANDMARKS`]).
    pub fn is_empty(&self) -> bool {
        self.landmarks.is_empty()
    }

    /// The factor `Φᵀ` (`r × N`, columns in the pooled order) of `kernel`'s Nyström Gram matrix
    /// `K̃ = ΦΦᵀ` on enough landmarks to lose at most [`MAX_LOST_VARIANCE`], or `None` when that
    /// takes more than `N/2` of them or a doubling that costs more than the exact null (module docs,
    /// [`DOUBLING_COST`]; the kernel's weight is ignored).
    pub fn factor<B: Backend>(&self, kernel: &WeightedKernel) -> Result<Option<Mat>, CoreError> {
        let n = self.pooled.len();
        let mut doubled = None;
        loop {
            let landmarks = doubled.as_ref().unwrap_or(&self.landmarks);
            let next = 2 * landmarks.len();
            let give_up = next > n / 2 || next.pow(3) > DOUBLING_COST * n * n;
            // the factor used even where it loses too much: doubling would exceed the memory bound
            let last = !give_up && next * n > MAX_FACTOR_ENTRIES;
            let pivots = pivoted_cholesky(landmarks, kernel);
            if last || !self.probe_loses_too_much::<B>(landmarks, &pivots, kernel)? {
                let ft = self.factor_from::<B>(self.pooled, landmarks, &pivots, kernel)?;
                if last || self.lost_variance(&ft, kernel) - pivots.dropped <= MAX_LOST_VARIANCE {
                    return Ok(Some(ft));
                }
            }
            if give_up {
                return Ok(None);
            }
            doubled = Some(every_nth(&self.canonical, next));
        }
    }

    /// Whether the factor on `landmarks` clearly loses more than [`MAX_LOST_VARIANCE`]: its lost
    /// variance on [`PROBE_POINTS`] points midway between successive landmarks of the canonical
    /// order, less three standard errors, is above the bound. Then the whole factor (`N r`
    /// evaluations, `N r²` flops) is not formed for a check it would fail. The probe depends on the
    /// pooled multiset only, as the full check does (module docs); where it is not clear, the full
    /// check decides.
    fn probe_loses_too_much<B: Backend>(
        &self,
        landmarks: &Points,
        pivots: &Pivots,
        kernel: &WeightedKernel,
    ) -> Result<bool, CoreError> {
        let n = self.canonical.len();
        let count = PROBE_POINTS.min(n / 2);
        if count < 2 {
            return Ok(false);
        }
        let idx: Vec<usize> = (0..count).map(|j| (2 * j + 1) * n / (2 * count)).collect();
        let probe = self.canonical.select(&idx);
        let lost = lost_per_point(&probe, &self.factor_from::<B>(&probe, landmarks, pivots, kernel)?, kernel);
        let mean = lost.iter().sum::<f64>() / count as f64;
        let var = lost.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (count - 1) as f64;
        Ok(mean - 3.0 * (var / count as f64).sqrt() - pivots.dropped > MAX_LOST_VARIANCE)
    }

    /// The factor `Φᵀ = L_P⁻¹ k(P, Z)` at the points `z` of the pivots `P` of `landmarks`.
    fn factor_from<B: Backend>(
        &self,
        z: &Points,
        landmarks: &Points,
        pivots: &Pivots,
        kernel: &WeightedKernel,
    ) -> Result<Mat, CoreError> {
        let r = pivots.order.len();
        let pivot_points = landmarks.select(&pivots.order);
        let mut ft = Mat::zeros(r, z.len());
        ft.as_mut_slice().par_chunks_mut(r.max(1)).enumerate().for_each(|(i, col)| {
            // distances first, then the kernel values in one vectorised loop
            let zi = z.point(i);
            for (j, v) in col.iter_mut().enumerate() {
                *v = kernel.family.distance(zi, pivot_points.point(j));
            }
            col.iter_mut().for_each(|v| *v = kernel.family.value(*v, kernel.lengthscale));
        });
        B::solve_lower_in_place(pivots.lower.as_ref(), ft.as_mut())?;
        Ok(ft)
    }

    /// The factor on `landmarks` and the variance per landmark its truncation dropped.
    #[cfg(test)]
    fn factor_on<B: Backend>(
        &self,
        landmarks: &Points,
        kernel: &WeightedKernel,
    ) -> Result<(Mat, f64), CoreError> {
        let pivots = pivoted_cholesky(landmarks, kernel);
        Ok((self.factor_from::<B>(self.pooled, landmarks, &pivots, kernel)?, pivots.dropped))
    }

    /// `(1/N) Σ_i (k(z_i, z_i) − ‖φ_i‖²)`, the terms added in sorted order so that the value does not
    /// depend on the order of the pooled points (module docs).
    fn lost_variance(&self, ft: &Mat, kernel: &WeightedKernel) -> f64 {
        let mut lost = lost_per_point(self.pooled, ft, kernel);
        lost.sort_unstable_by(f64::total_cmp);
        lost.iter().sum::<f64>() / lost.len() as f64
    }
}

/// `k(z_i, z_i) − ‖φ_i‖²` at each point `z_i` of `z`, whose factor columns `φ_i` are `ft`'s.
fn lost_per_point(z: &Points, ft: &Mat, kernel: &WeightedKernel) -> Vec<f64> {
    (0..z.len())
        .map(|i| {
            let zi = z.point(i);
            kernel.eval(zi, zi) - ft.col(i).iter().map(|a| a * a).sum::<f64>()
        })
        .collect()
}

/// `count` points of `canonical`, every `⌊N/count⌋`-th.
fn every_nth(canonical: &Points, count: usize) -> Points {
    let n = canonical.len();
    canonical.select(&(0..count).map(|j| j * n / count).collect::<Vec<_>>())
}

/// The pivots of a pivoted Cholesky of `W = k(L, L)`, the lower factor `L_P` of `W_PP`, and the
/// variance per landmark the truncation to `P` dropped (`(1/R) Σ_{t ∉ P} ‖g_t‖²`).
struct Pivots {
    order: Vec<usize>,
    lower: Mat,
    dropped: f64,
}

/// Greedy pivoted Cholesky of `k(L, L)` (module docs; [`crate::numeric::pivoted_cholesky`]) to
/// [`RESIDUAL_VARIANCE`], truncated to the fewest leading pivots that keep all but
/// [`TRUNCATED_VARIANCE`] of the factor's centred variance on the landmarks. The factor's columns
/// `g_t` (one per pivot, over the landmarks) have centred variances `‖g_t − ḡ_t 1‖²`; the pivots are
/// greedy, so these fall along the order, and a prefix of the pivots is the pivoted Cholesky
/// stopped there (its Nyström kernel on those pivots).
fn pivoted_cholesky(landmarks: &Points, kernel: &WeightedKernel) -> Pivots {
    let m = landmarks.len();
    let (mut order, g) = crate::numeric::pivoted_cholesky(
        m,
        |i, j| kernel.eval(landmarks.point(i), landmarks.point(j)),
        RESIDUAL_VARIANCE,
        m,
    );
    // per column: (variance, centred variance) over the landmarks, summed in landmark order
    let variances: Vec<(f64, f64)> = (0..order.len())
        .map(|t| {
            let (sum, squares) = g.iter().fold((0.0, 0.0), |(s, q), row| (s + row[t], q + row[t] * row[t]));
            (squares, squares - sum * sum / m as f64)
        })
        .collect();
    let budget = TRUNCATED_VARIANCE * variances.iter().map(|v| v.1).sum::<f64>();
    let (mut r, mut centred, mut dropped) = (order.len(), 0.0, 0.0);
    while r > 1 && centred + variances[r - 1].1 <= budget {
        centred += variances[r - 1].1;
        dropped += variances[r - 1].0;
        r -= 1;
    }
    order.truncate(r);
    let lower = Mat::from_fn(r, r, |a, b| if b <= a { g[order[a]][b] } else { 0.0 });
    Pivots { order, lower, dropped: dropped / m as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hypothesis::kernels::TestFamily;
    use bke_linalg::{DefaultBackend, Trans};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn sample(n: usize, dim: usize, seed: u64) -> Points {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        Points::new("z", (0..n * dim).map(|_| rng.random::<f64>()).collect(), dim).unwrap()
    }

    /// `ΦΦᵀ` against the Nyström kernel written out, `k(Z, P) W_PP⁻¹ k(P, Z)`, and against `K`: a smooth
    /// kernel is reproduced to within what its truncation drops ([`TRUNCATED_VARIANCE`]).
    #[test]
    fn factor_is_the_nystrom_kernel_on_its_pivots() {
        let z = sample(600, 2, 3);
        let lm = NystromLandmarks::new(&z).expect("above the exact size");
        assert_eq!(lm.len(), 128);
        let kernel = WeightedKernel::gaussian(0.4);
        let ft = lm.factor::<DefaultBackend>(&kernel).unwrap().expect("resolved");
        let mut approx = Mat::zeros(600, 600);
        DefaultBackend::gemm(1.0, ft.as_ref(), Trans::Yes, ft.as_ref(), Trans::No, 0.0, approx.as_mut())
            .unwrap();
        let pivots = pivoted_cholesky(&lm.landmarks, &kernel);
        assert_eq!(pivots.order.len(), ft.nrows());
        assert!(ft.nrows() < 128, "a smooth kernel stops early: rank {}", ft.nrows());
        let p = lm.landmarks.select(&pivots.order);
        let w = kernel_matrix(&p, &p, &kernel);
        let c = kernel_matrix(&z, &p, &kernel);
        let winv_ct = {
            let l = DefaultBackend::cholesky(w.as_ref()).unwrap();
            let mut b = c.transpose();
            DefaultBackend::cholesky_solve_in_place(l.as_ref(), b.as_mut()).unwrap();
            b
        };
        let mut worst = (0.0f64, 0.0f64);
        for i in 0..600 {
            for j in 0..600 {
                let direct: f64 = (0..p.len()).map(|t| c[(i, t)] * winv_ct[(t, j)]).sum();
                worst.0 = worst.0.max((direct - approx[(i, j)]).abs());
                worst.1 = worst.1.max((kernel.eval(z.point(i), z.point(j)) - approx[(i, j)]).abs());
            }
        }
        assert!(worst.0 < 1e-8, "Nyström formula {}", worst.0);
        // the truncation drops up to TRUNCATED_VARIANCE of the centred variance: a few hundredths
        assert!(worst.1 < 0.1, "against the kernel {}", worst.1);
    }

    /// A rough kernel pivots on every landmark and is truncated to the pivots that keep all but
    /// [`TRUNCATED_VARIANCE`] of its centred variance there — few for a wide one; the truncated
    /// factor is the Nyström factor on the kept pivots. Small samples get no landmarks.
    #[test]
    fn rough_kernels_are_truncated_and_small_samples_stay_dense() {
        let z = sample(1200, 1, 4);
        let lm = NystromLandmarks::new(&z).unwrap();
        assert_eq!(lm.len(), 200);
        let centred = |ft: &Mat, points: &[usize]| {
            let mean: Vec<f64> = (0..ft.nrows())
                .map(|t| points.iter().map(|&i| ft[(t, i)]).sum::<f64>() / points.len() as f64)
                .collect();
            points
                .iter()
                .map(|&i| (0..ft.nrows()).map(|t| (ft[(t, i)] - mean[t]).powi(2)).sum::<f64>())
                .sum::<f64>()
        };
        let mut ranks = Vec::new();
        for lengthscale in [0.05, 1.0] {
            let laplace =
                WeightedKernel { family: TestFamily::LaplaceL1, ..WeightedKernel::gaussian(lengthscale) };
            let (order, g) = crate::numeric::pivoted_cholesky(
                200,
                |i, j| laplace.eval(lm.landmarks.point(i), lm.landmarks.point(j)),
                RESIDUAL_VARIANCE,
                200,
            );
            assert_eq!(order.len(), 200, "a rough kernel never reaches the residual tolerance");
            let full_centred = {
                let g = Mat::from_fn(200, 200, |i, t| g[i][t]).transpose();
                centred(&g, &(0..200).collect::<Vec<_>>())
            };
            let ft = lm.factor::<DefaultBackend>(&laplace).unwrap().expect("resolved");
            // the landmarks' columns of the factor, found by their position in the pooled sample
            let at: Vec<usize> =
                (0..200).map(|l| (0..1200).find(|&i| z.point(i) == lm.landmarks.point(l)).unwrap()).collect();
            let kept = centred(&ft, &at);
            assert!(kept >= (1.0 - TRUNCATED_VARIANCE) * full_centred - 1e-9, "{kept} of {full_centred}");
            ranks.push(ft.nrows());
        }
        assert!(ranks[0] < 200 && ranks[1] < ranks[0] / 2, "ranks {ranks:?}");
        assert!(NystromLandmarks::new(&sample(EXACT_MAX_POINTS, 2, 5)).is_none());
    }

    /// The permutation null from the factor (observed value, draws, FUSE normaliser) equals the dense
    /// null of `ΦΦᵀ` on the same draws.
    #[test]
    fn factor_null_equals_the_dense_null_of_its_gram() {
        use crate::hypothesis::mmd_null::MmdPermutation;
        use crate::hypothesis::mmd_statistic::MmdStatistic;
        let z = sample(700, 2, 7);
        let lm = NystromLandmarks::new(&z).unwrap();
        let laplace = WeightedKernel { family: TestFamily::LaplaceL1, ..WeightedKernel::gaussian(0.3) };
        for kernel in [WeightedKernel::gaussian(0.2), laplace] {
            let ft = lm.factor::<DefaultBackend>(&kernel).unwrap().expect("resolved");
            let mut dense = Mat::zeros(700, 700);
            DefaultBackend::gemm(1.0, ft.as_ref(), Trans::Yes, ft.as_ref(), Trans::No, 0.0, dense.as_mut())
                .unwrap();
            let (low, full) =
                (MmdPermutation::from_factor(&ft, 300).unwrap(), MmdPermutation::new(&dense, 300).unwrap());
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * (1.0 + b.abs());
            for stat in [MmdStatistic::Unbiased, MmdStatistic::Biased] {
                assert!(close(low.observed(stat), full.observed(stat)));
                let (a, b) = (
                    low.null::<DefaultBackend>(stat, 40, 5).unwrap(),
                    full.null::<DefaultBackend>(stat, 40, 5).unwrap(),
                );
                // both nulls are computed in single precision (MmdPermutation::null_of)
                let gap = crate::hypothesis::mmd_tests::worst_relative_gap(&a, &b, 0.0);
                assert!(gap <= 1e-5, "{stat:?}: {gap:e}");
            }
            let norms = (
                low.off_diagonal_norm::<DefaultBackend>().unwrap(),
                full.off_diagonal_norm::<DefaultBackend>().unwrap(),
            );
            assert!(close(norms.0, norms.1), "{norms:?}");
        }
    }

    /// A kernel narrow against the landmarks' spacing gets more landmarks until the factor keeps all
    /// but [`MAX_LOST_VARIANCE`] of it, or the exact Gram matrix (`None`) when that takes more than
    /// `N/2` or [`DOUBLING_COST`] forbids the doubling; the answer does not depend on the order of the pooled points.
    #[test]
    fn narrow_kernels_get_more_landmarks_or_the_exact_gram() {
        let z = sample(1200, 3, 8);
        let lm = NystromLandmarks::new(&z).unwrap();
        assert_eq!(lm.len(), 200);
        let mut reversed_idx: Vec<usize> = (0..1200).collect();
        reversed_idx.reverse();
        let reversed = z.select(&reversed_idx);
        let lr = NystromLandmarks::new(&reversed).unwrap();
        let rank = |l: &NystromLandmarks, k: &WeightedKernel| {
            l.factor::<DefaultBackend>(k).unwrap().map(|ft| (ft.nrows(), l.lost_variance(&ft, k)))
        };
        // the 200 landmarks lose more than a tenth of this kernel; 400 do not
        let medium = WeightedKernel::gaussian(0.12);
        let (first, dropped) = lm.factor_on::<DefaultBackend>(&lm.landmarks, &medium).unwrap();
        assert!(lm.lost_variance(&first, &medium) - dropped > MAX_LOST_VARIANCE);
        let (r, lost) = rank(&lm, &medium).expect("400 landmarks suffice");
        // what the truncation drops on purpose comes on top (at most its share per landmark)
        assert!(r > 200 && lost <= MAX_LOST_VARIANCE + TRUNCATED_VARIANCE, "rank {r}, lost {lost}");
        assert_eq!(rank(&lr, &medium).map(|x| x.0), Some(r));
        // a kernel narrower than the points' spacing needs every point: the exact Gram matrix
        let narrow = WeightedKernel::gaussian(0.01);
        assert!(rank(&lm, &narrow).is_none() && rank(&lr, &narrow).is_none());
        // the probe skips the narrow kernel's factor, and only where the full check fails
        let probe = |l: &NystromLandmarks, k: &WeightedKernel| {
            let pivots = pivoted_cholesky(&l.landmarks, k);
            l.probe_loses_too_much::<DefaultBackend>(&l.landmarks, &pivots, k).unwrap()
        };
        assert!(probe(&lm, &narrow));
        for ls in [0.01, 0.05, 0.12, 0.3, 1.0] {
            let k = WeightedKernel::gaussian(ls);
            let (ft, dropped) = lm.factor_on::<DefaultBackend>(&lm.landmarks, &k).unwrap();
            let fails = lm.lost_variance(&ft, &k) - dropped > MAX_LOST_VARIANCE;
            assert!(!probe(&lm, &k) || fails, "lengthscale {ls}: the probe skips a factor that passes");
        }
        // a smooth kernel keeps the first landmarks
        assert!(rank(&lm, &WeightedKernel::gaussian(1.0)).expect("smooth").0 < 200);
        // at 2400 points the 400 landmarks do not resolve this kernel and 800 (`≤ N/2`) cost more
        // than its exact null: the exact Gram matrix straight away
        let z_big = sample(2400, 3, 9);
        let big = NystromLandmarks::new(&z_big).unwrap();
        assert!(800usize.pow(3) > DOUBLING_COST * 2400 * 2400);
        let (first, dropped) = big.factor_on::<DefaultBackend>(&big.landmarks, &medium).unwrap();
        assert!(big.lost_variance(&first, &medium) - dropped > MAX_LOST_VARIANCE);
        assert!(rank(&big, &medium).is_none());
    }

    fn kernel_matrix(a: &Points, b: &Points, k: &WeightedKernel) -> Mat {
        Mat::from_fn(a.len(), b.len(), |i, j| k.eval(a.point(i), b.point(j)))
    }
}
