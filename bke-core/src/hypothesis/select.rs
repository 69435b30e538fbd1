//! Kernel choice for the tests (seed 000 §2.4, §5): a fixed lengthscale, the median heuristic, **BKL**
//! (ML-II on the BKE marginal pseudolikelihood, seed 000 eq. (15)), the collections of the aggregated
//! tests (MMDAgg/HSICAgg, MMD-FUSE, [`super::kernels`]), or **BKL-Bayes**: a collection weighted by a
//! posterior over the lengthscale built from the same pseudolikelihood, contaminated by the aggregated
//! tests' uniform prior over their collection.
//!
//! # The choice depends on the pooled sample only, so the permutation tests are exact
//! Every rule here is a function of the *multiset* of points it is given: the pooled sample `x ∪ y`
//! for the two-sample test, each marginal for the independence test. The points are put in a
//! canonical order first ([`canonical_order`]: lexicographic), so even the seeded landmark hold-out of
//! BKL and the thinning of large samples see the same sequence whatever the labels.
//!
//! *Proof of exact level.* Let `z` be the pooled sample in label order and `G` the group of
//! relabellings (permutations of the `N` positions; for HSIC, permutations of `y` against `x`; for the
//! wild bootstrap, swaps within pairs). The kernels are `s(z) = s(canonical(z))`, and
//! `canonical(gz) = canonical(z)`, so `s(gz) = s(z)` for every `g ∈ G`. The test statistic on data
//! `w` with kernels `s(w)` is `T(w) = t_{s(w)}(w)`; for the draws, the code evaluates
//! `t_{s(z)}(g_b z) = t_{s(g_b z)}(g_b z) = T(g_b z)` — one fixed function `T` applied to `z` and to
//! `g_1 z, …, g_B z` with `g_b` i.i.d. uniform on `G`. Under `H₀` the data are exchangeable under `G`
//! (`gz ~ z`), so `(T(z), T(g_1 z), …, T(g_B z))` is exchangeable, and
//! `P(p ≤ α) ≤ α` for `p = (1 + #{b : T(g_b z) ≥ T(z)})/(1 + B)` (Hemerik & Goeman 2018, Thm. 2).
//! This holds for every selection here, BKL-Bayes and MMD-FUSE included, whatever the weights; MMDAgg's
//! two-stage calibration ([`super::aggregate`]) is exact up to its `B₁` Monte-Carlo error.
//! `cargo xtask repro level` measures it.
//!
//! # BKL: the optima of the pseudolikelihood, and the rule among them
//! With `τ² = 1` fixed (the seed's setting) the log pseudolikelihood of seed 000 eq. (15) is a Gaussian
//! term in the landmark features `φ(x) = (k_θ(x, z_l))_l` plus the log-Jacobian `Σ_i log γ_θ(x_i)`,
//! `γ = det(JᵀJ)^{1/2}` (seed 000 eq. (16)–(17)).
//! - The **Gaussian term** is U-shaped in `θ`, with both ends at the same limit `−½ nm log 2π`:
//!   features ≈ 0 (θ → 0) or ≈ 1 (θ → ∞) are explained perfectly, and it is lowest at intermediate
//!   scales, where the features vary most across points. With `τ² = 1` and features in `[0, 1]` it
//!   penalises exactly the informative scales.
//! - The **Jacobian** depends on the landmark layout, not on the data. For `θ` above the landmark
//!   spacing `h` the sum over landmarks in `JᵀJ = θ⁻⁴ Σ_l k_l² (x − z_l)(x − z_l)ᵀ` is a Riemann sum,
//!   `≈ θ⁻⁴ h^{−D} ∫ e^{−‖u‖²/θ²} uuᵀ du = ½ (√π/h)^D θ^{D−2} I`, so per point
//!   `log γ ≈ ½ D(D−2) log θ − ½ D² log h + c`: growing as θ shrinks in d = 1, flat in d = 2. Below `h`
//!   one landmark at distance `d` dominates, `log γ ≈ log d − 2 log θ − d²/(2θ²)` (d = 1), maximal at
//!   `θ = d/√2` and collapsing for smaller θ. So the Jacobian peaks at the landmark resolution.
//!
//! With the Gaussian term falling away from its θ → 0 limit, the sum can have its global maximum just
//! below the landmark spacing: a **degenerate** optimum, a real maximum of the pseudolikelihood that
//! measures the landmark design, not the data (it moves with the number of landmarks). A second,
//! far optimum lies at a few times the median distance, where the Gaussian term has recovered toward
//! its θ → ∞ limit while the Jacobian decays; it is the "nearly constant features" end, also
//! uninformative. On uniform-like data the pseudolikelihood need have no optimum at the scales in
//! between, where the differences a test looks for may live.
//!
//! The rule ([`SelectRule::Bkl`]): **only lengthscales the landmarks resolve and the data
//! resolve count**, `h ≤ θ ≤ t̃`, with `h` the [`landmark_spacing`] (the side of the cube per landmark,
//! estimated from the landmarks' nearest-neighbour distances) and `t̃` the sample's median distance.
//! Why `h`: on a lattice of spacing `h`, Poisson summation gives
//! `Σ_l k_θ(x − z_l) = (√(2π) θ/h)^D (1 + ripple)` with relative ripple `2 exp(−2π²θ²/h²)` (and
//! `2 exp(−π²θ²/h²)` for the `k²` sums of the Jacobian): at `θ ≥ h` it is below `10⁻⁴`, so features and
//! Jacobian no longer depend on where a point falls between landmarks; below `h/2` they do by more
//! than 1 %. Why `t̃`: above it more than half of all pairs lie within one lengthscale, where
//! `k = 1 − r²/(2θ²) + O(r⁴/θ⁴)`: the features are nearly constant and the embedding compares the
//! samples through their low moments only — the regime of the far optimum. BKL takes the largest
//! pseudolikelihood over `[h, t̃]`: the interior local optima there and the scan points at both limits
//! (the first at or above `h`, the last at or below `t̃`; the constrained maximum when the objective
//! rises beyond a limit — below `h` toward a degenerate optimum, above `t̃` toward the far one; at the
//! upper limit BKL's kernel is the median heuristic's to within one scan step, a factor 1.19). The
//! limits are reported as `resolution` and `upper_limit` (JSON `bkl_resolution`, `bkl_upper_limit`).
//! They depend on the landmarks and the pooled distances only, not on the labels, so the tests stay
//! exact. The lengthscales chosen and the resulting power are measured by `cargo xtask repro power`
//! and `cargo xtask repro fig2c`.
//!
//! **ML-II** ([`SelectRule::MlIi`], `--select ml-ii`) is the seed's rule as published: the
//! global optimum over the whole scan, degenerate optimum included. It is there to reproduce the
//! seed (`cargo xtask repro fig2c`); `bkl` is its guarded form, and BKL-Bayes (the default) the rule to
//! use.
//!
//! # BKL-Bayes: a posterior over the lengthscale weights a collection
//! The ML-II scan (41 log-spaced θ from `m/100` to `10m`, `m` the median distance) gives
//! `ℓ(θ) = log p(x | θ, τ² = 1)`. Its differences between optima are thousands of nats (it counts every
//! point's `M` landmark features as independent observations), so `exp(ℓ)` is a point mass. BKL-Bayes
//! uses the generalised-Bayes posterior with learning rate `1/n` (Bissiri, Holmes & Walker 2016),
//! `π(θ) ∝ exp(ℓ(θ)/n)` on the grid with a flat prior on `log θ`: the pseudolikelihood's average
//! log-score per point, which keeps every scale the sample supports within a few nats. The grid is
//! summarised by 11 Gaussian kernels a factor 2 apart (every 4th grid point; each carries the mass of
//! its nearest grid points); kernels with less than 10⁻³ of the largest mass are left out. Unlike the
//! single-kernel rule, the posterior keeps the sub-resolution optimum with its mass: a mixture can
//! afford a kernel that is only sometimes the right one, and the level holds whatever the weights. For
//! HSIC the posterior is per variable and the collection the product. How the weights enter the test:
//! below.
//!
//! ## Robust Bayes: the posterior contaminated by the aggregated tests' prior
//! The pseudolikelihood describes the pooled sample's density, not the difference between the two
//! samples: where the difference lives at a scale the density does not single out (as on the
//! perturbed uniform benchmark, whose perturbations are no optimum of `ℓ`), a pure posterior weights
//! the wrong kernels. BKL-Bayes therefore uses the ε-contaminated posterior of robust Bayesian
//! analysis (Berger 1985, §4.7): weights `(1 − ε) π(θ | z) + ε u`, `u` uniform over a prior collection,
//! with `ε = ½` ([`PRIOR_SHARE`]). For MMD the prior collection is the union of the two published
//! ones ([`prior_collection`]): MMDAgg's (Gaussian and Laplace, 10 bandwidths each, geometrically
//! spaced: a log-uniform prior over the bandwidth, [`super::kernels::mmdagg_collection`]) and
//! MMD-FUSE's (the same families, 10 linearly spaced bandwidths each, dense at large scales,
//! [`super::kernels::fuse_collection`]) — 40 kernels of equal prior weight, so neither paper's choice
//! of spacing is privileged; a kernel within a factor 2 of an earlier one of its family
//! ([`MERGE_RATIO`], the spacing of the posterior's kernels) is merged into it (weights added), which
//! leaves about 6 kernels per family. For
//! HSIC it is the variable's 5 HSICAgg bandwidths. The collection of the test is the union of
//! posterior and prior kernels, merged the same way (a kernel in both gets both shares). Every prior kernel keeps weight `≥ ε/40`, whatever the posterior; where the posterior is
//! informative its kernels keep `1 − ε` of their posterior weight. The prior collection is a function
//! of the pooled sample's distances (order-free), so the proof of exact level above holds. Where
//! the pseudolikelihood is not finite anywhere on the scan (a discrete sample whose held-out
//! landmarks all share one value) there is no posterior, and the collection is the prior alone.
//!
//! ## The statistic: MMD-FUSE with the posterior as its prior
//! MMD-FUSE's statistic is `F = (1/λ) log Σ_k π_k exp(λ S_k)` with `S_k = n(n−1) MMD²_k/√N̂_k`,
//! `N̂_k = Σ_{i≠j} k(z_i, z_j)²`, `λ = √(n(n−1))` ([`super::mmd`]); Biggs, Schrab & Gretton derive it
//! as the log-partition function of a *prior* `π` over the kernels, and any `π` that is a function of
//! the pooled sample keeps the permutation test exact. The two-sample BKL-Bayes test is exactly that
//! with `π` the contaminated posterior above: the posterior enters where FUSE's theory puts a prior.
//! `λ S_k` has a null spread of order one for kernels that resolve the data, and far below one for
//! nearly constant kernels (large bandwidths: `√N̂_k ≈ N` while the null spread of `MMD²_k` is set by
//! the centred kernel, which is small), which then add `≈ π_k` to the sum and do not compete with the
//! informative kernels. Studentised statistics, by contrast, give every kernel, the nearly constant
//! ones included, a null spread of one, so every added kernel adds noise to a soft maximum; the HSIC
//! BKL-Bayes test keeps studentised statistics at `λ = 1` ([`super::aggregate`]).
//!
//! Power and level of every rule here, against MMDAgg and MMD-FUSE on the benchmarks of their papers,
//! are measured by `cargo xtask repro power` and `cargo xtask repro level`.
use super::kernels::{
    BandwidthWeights, SampleDistances, WeightedKernel, fuse_collection, fuse_collection_of,
    hsicagg_lengthscales, mmdagg_collection, mmdagg_collection_of,
};
use super::median::{MedianConvention, median_lengthscale};
use super::resampling::invalid;
use crate::embedding::{FittedEmbedding, PseudolikelihoodScan, ScanPoint};
use crate::{CoreError, Points, Progress};
use bke_linalg::Backend;
use serde::Serialize;

mod params;
mod rule;
pub use params::{AggParams, BklParams, Families, LengthscaleSelection, TestKind};
pub use rule::SelectRule;

/// What BKL found (for reports).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BklSummary {
    /// Log marginal pseudolikelihood at the chosen θ (the mode of the posterior for BKL-Bayes).
    pub log_marginal: f64,
    /// All local optima `(θ, log marginal)`, best first: polished for BKL and ML-II, the scan's
    /// maxima (grid points) for BKL-Bayes.
    pub local_optima: Vec<(f64, f64)>,
    /// The median distance of the sample.
    pub median_distance: f64,
    /// Number of held-out landmarks.
    pub landmarks: usize,
    /// `τ²` used.
    pub tau2: f64,
    /// The resolution limit: the smallest lengthscale the landmarks resolve (module docs); BKL and
    /// BKL-Bayes consider no smaller one.
    pub resolution: f64,
    /// The largest lengthscale BKL considers: the largest scan point at or below the median distance
    /// (module docs; not used by BKL-Bayes).
    pub upper_limit: f64,
}

/// The kernels chosen for one sample and how.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedKernels {
    /// The kernels with their weights (one, of weight 1, for a single-kernel selection).
    pub kernels: Vec<WeightedKernel>,
    /// The median convention, for the median heuristic.
    pub median_convention: Option<MedianConvention>,
    /// BKL details, for BKL and BKL-Bayes.
    pub bkl: Option<BklSummary>,
}

impl SelectedKernels {
    fn single(kernel: WeightedKernel) -> Self {
        Self::collection(vec![kernel])
    }

    fn collection(kernels: Vec<WeightedKernel>) -> Self {
        Self { kernels, median_convention: None, bkl: None }
    }
}

/// The points in lexicographic order of their coordinates: a canonical order of the multiset.
pub fn canonical_order(points: &Points) -> Points {
    points.select(&canonical_indices(points))
}

/// The indices of [`canonical_order`] (equal points in their order in `points`).
pub fn canonical_indices(points: &Points) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..points.len()).collect();
    idx.sort_by(|&a, &b| {
        points
            .point(a)
            .iter()
            .zip(points.point(b))
            .map(|(u, v)| u.total_cmp(v))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    idx
}

/// Chooses the kernels for the sample `points` (the pooled sample for MMD, one variable for HSIC),
/// after putting it in [`canonical_order`].
pub fn select_kernels<B: Backend>(
    points: &Points,
    selection: &LengthscaleSelection,
    test: TestKind,
    progress: &dyn Progress,
) -> Result<SelectedKernels, CoreError> {
    selection.validate(test)?;
    progress.checkpoint()?;
    let z = canonical_order(points);
    if let Some(l) = selection.fixed {
        return Ok(SelectedKernels::single(WeightedKernel::gaussian(l)));
    }
    let (p, a, c) = (&selection.bkl, &selection.agg, selection.median_convention);
    match selection.rule {
        SelectRule::Median => Ok(SelectedKernels {
            median_convention: Some(c),
            ..SelectedKernels::single(WeightedKernel::gaussian(median_lengthscale(&z, c)?))
        }),
        SelectRule::Bkl => {
            let r = p.fit::<B>(&z, progress)?;
            let limits = scan_limits(&r.scan, &r.landmarks, r.median_heuristic);
            let (theta, log_marginal) = bkl_choice(&r, limits);
            let summary = summarise(&scan_of(&r), p, polished_optima(&r), log_marginal);
            Ok(SelectedKernels {
                bkl: Some(summary),
                ..SelectedKernels::single(WeightedKernel::gaussian(theta))
            })
        }
        SelectRule::MlIi => {
            let r = p.fit::<B>(&z, progress)?;
            let (theta, log_marginal) = global_optimum(&r);
            let summary = summarise(&scan_of(&r), p, polished_optima(&r), log_marginal);
            Ok(SelectedKernels {
                bkl: Some(summary),
                ..SelectedKernels::single(WeightedKernel::gaussian(theta))
            })
        }
        SelectRule::Mmdagg => {
            Ok(SelectedKernels::collection(mmdagg_collection(&z, &a.families.list(), 10, a.weights)?))
        }
        SelectRule::Hsicagg => {
            let w = a.weights.weights(5);
            let ls = hsicagg_lengthscales(&z)?;
            let kernels = ls
                .iter()
                .zip(w)
                .map(|(&l, w)| WeightedKernel { weight: w, ..WeightedKernel::gaussian(l) })
                .collect();
            Ok(SelectedKernels::collection(kernels))
        }
        SelectRule::Fuse => Ok(SelectedKernels::collection(fuse_collection(&z, &a.families.list(), 10)?)),
        SelectRule::BklBayes => {
            let r = p.scan::<B>(&z, progress)?;
            let prior = prior_collection(&z, test)?;
            // no posterior where the pseudolikelihood is nowhere finite (a discrete sample whose
            // held-out landmarks all share one value): the prior collection alone
            let Some(posterior) = posterior_collection(&r) else {
                let summary = summarise(&r, p, r.maxima(), f64::NEG_INFINITY);
                return Ok(SelectedKernels { kernels: prior, median_convention: None, bkl: Some(summary) });
            };
            let kernels = contaminate(&posterior, &prior, PRIOR_SHARE);
            let mode = posterior.iter().max_by(|a, b| a.weight.total_cmp(&b.weight)).expect("non-empty");
            // the mode's kernel sits on a scan point (posterior_collection)
            let at_mode = r.scan.iter().find(|s| s.lengthscale == mode.lengthscale);
            let log_marginal = at_mode.map_or(f64::NEG_INFINITY, |s| s.log_marginal);
            let summary = summarise(&r, p, r.maxima(), log_marginal);
            Ok(SelectedKernels { kernels, median_convention: None, bkl: Some(summary) })
        }
    }
}

/// The scan part of a whole ML-II fit.
fn scan_of(r: &FittedEmbedding) -> PseudolikelihoodScan {
    PseudolikelihoodScan {
        scan: r.scan.clone(),
        landmarks: r.landmarks.clone(),
        median_heuristic: r.median_heuristic,
        n_data: r.n_data,
        skipped_below: f64::NEG_INFINITY,
    }
}

/// The polished local optima `(θ, log marginal)` of an ML-II fit, best first.
fn polished_optima(r: &FittedEmbedding) -> Vec<(f64, f64)> {
    r.local_optima.iter().map(|o| (o.lengthscales[0], o.log_marginal)).collect()
}

/// The report of a BKL fit: its scan, the local optima (polished for BKL and ML-II, the scan's own
/// maxima for BKL-Bayes, which weighs the grid points) and the log marginal of the kernel chosen.
fn summarise(
    r: &PseudolikelihoodScan,
    p: &BklParams,
    local_optima: Vec<(f64, f64)>,
    log_marginal: f64,
) -> BklSummary {
    let (low, high) = scan_limits(&r.scan, &r.landmarks, r.median_heuristic);
    let lengthscale = |i: usize| r.scan.get(i).map_or(0.0, |s| s.lengthscale);
    BklSummary {
        log_marginal,
        local_optima,
        median_distance: r.median_heuristic,
        landmarks: r.landmarks.len(),
        tau2: p.tau2,
        resolution: lengthscale(low),
        upper_limit: lengthscale(high),
    }
}

/// The landmark spacing `h` of a BKL fit (module docs): the side of the cube each landmark occupies,
/// `h = t̃ (V_D / ln 2)^{1/D}` from the median distance `t̃` of a landmark to its nearest other landmark,
/// `V_D` the volume of the unit ball (for a Poisson sample of intensity `h^{−D}` the median of that
/// distance is `(ln 2/V_D)^{1/D} h`).
pub fn landmark_spacing(landmarks: &Points) -> f64 {
    let m = landmarks.len();
    if m < 2 {
        return 0.0;
    }
    let mut nearest: Vec<f64> = (0..m)
        .map(|i| {
            let p = landmarks.point(i);
            (0..m)
                .filter(|&j| j != i)
                .map(|j| p.iter().zip(landmarks.point(j)).map(|(a, b)| (a - b) * (a - b)).sum::<f64>())
                .fold(f64::INFINITY, f64::min)
                .sqrt()
        })
        .collect();
    let mid = m / 2;
    let median = *nearest.select_nth_unstable_by(mid, f64::total_cmp).1;
    let d = landmarks.dim() as f64;
    let ln_unit_ball = 0.5 * d * std::f64::consts::PI.ln() - crate::special::ln_gamma(0.5 * d + 1.0);
    median * ((ln_unit_ball - std::f64::consts::LN_2.ln()) / d).exp()
}

/// The resolution limit of a BKL fit (module docs): the index of the smallest scan lengthscale at or
/// above the [`landmark_spacing`] (the last scan point if none is).
fn resolution_index(scan: &[ScanPoint], landmarks: &Points) -> usize {
    let h = landmark_spacing(landmarks);
    scan.iter().position(|s| s.lengthscale >= h).unwrap_or(scan.len().saturating_sub(1))
}

/// The scan indices of BKL's range (module docs): the [`resolution_index`], and the largest scan
/// lengthscale at or below the sample's median distance `median` (not below the former).
fn scan_limits(scan: &[ScanPoint], landmarks: &Points, median: f64) -> (usize, usize) {
    let low = resolution_index(scan, landmarks);
    let below = scan.iter().rposition(|s| s.lengthscale <= median);
    (low, below.map_or(low, |i| i.max(low)))
}

/// The BKL rule (module docs): the largest pseudolikelihood over the lengthscales between the
/// resolution limit and the median distance — the interior local optima there and the scan points at
/// both limits. `(θ, log marginal)`.
fn bkl_choice(r: &FittedEmbedding, (low, high): (usize, usize)) -> (f64, f64) {
    let point = |i: usize| r.scan.get(i).map(|s| (s.lengthscale, s.log_marginal));
    let (floor, ceiling) = (point(low), point(high));
    let range = floor.zip(ceiling).map_or((0.0, f64::INFINITY), |(a, b)| (a.0, b.0.max(r.median_heuristic)));
    r.local_optima
        .iter()
        .filter(|o| !o.at_boundary && (range.0..=range.1).contains(&o.lengthscales[0]))
        .map(|o| (o.lengthscales[0], o.log_marginal))
        .chain([floor, ceiling].into_iter().flatten().filter(|s| s.1.is_finite()))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((r.params.lengthscales[0], r.log_marginal))
}

/// The seed's ML-II: the largest pseudolikelihood over every scan point and refined local optimum,
/// `(θ, log marginal)`.
fn global_optimum(r: &FittedEmbedding) -> (f64, f64) {
    r.local_optima
        .iter()
        .map(|o| (o.lengthscales[0], o.log_marginal))
        .chain(r.scan.iter().map(|s| (s.lengthscale, s.log_marginal)))
        .filter(|s| s.1.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((r.params.lengthscales[0], r.log_marginal))
}

/// The BKL-Bayes posterior collection alone (Gaussian kernels weighted by the tempered BKE posterior,
/// module docs) of the sample `points`, after putting it in [`canonical_order`]; an error where the
/// pseudolikelihood is not finite anywhere on the scan.
pub fn bkl_posterior_kernels<B: Backend>(
    points: &Points,
    params: &BklParams,
    progress: &dyn Progress,
) -> Result<Vec<WeightedKernel>, CoreError> {
    params.validate()?;
    posterior_collection(&params.scan::<B>(&canonical_order(points), progress)?).ok_or_else(|| {
        invalid(
            "BKE marginal pseudolikelihood",
            f64::NEG_INFINITY,
            "it is not finite anywhere on the lengthscale grid, so no posterior can be formed; add landmarks or use another selection",
        )
    })
}

/// The share `ε` of the prior collection in the BKL-Bayes weights (module docs).
pub const PRIOR_SHARE: f64 = 0.5;

/// The BKL-Bayes prior collection (module docs): for the two-sample test the union of the MMDAgg and
/// MMD-FUSE collections (Gaussian and Laplace, 10 bandwidths each), uniform over its distinct kernels;
/// for the independence test the HSICAgg bandwidths of the variable (5 Gaussian, uniform weights).
pub fn prior_collection(z: &Points, test: TestKind) -> Result<Vec<WeightedKernel>, CoreError> {
    match test {
        TestKind::TwoSample => {
            let families = Families::Both.list();
            let d = SampleDistances::new(z);
            let mut union = mmdagg_collection_of(&d, &families, 10, BandwidthWeights::Uniform)?;
            union.extend(fuse_collection_of(&d, &families, 10)?);
            union.iter_mut().for_each(|k| k.weight = 1.0);
            let mut out = merge_near(&[], &union);
            let total: f64 = out.iter().map(|k| k.weight).sum();
            out.iter_mut().for_each(|k| k.weight /= total);
            Ok(out)
        }
        TestKind::Independence => {
            let ls = hsicagg_lengthscales(z)?;
            let w = 1.0 / ls.len() as f64;
            Ok(ls.iter().map(|&l| WeightedKernel { weight: w, ..WeightedKernel::gaussian(l) }).collect())
        }
    }
}

/// The ε-contaminated weights `(1 − ε) π + ε u` over the union of the posterior collection `π` and the
/// prior collection `u` (each summing to 1); a prior kernel within a factor [`MERGE_RATIO`] of a kernel
/// already there (same family) adds its share to that kernel.
pub fn contaminate(
    posterior: &[WeightedKernel],
    prior: &[WeightedKernel],
    share: f64,
) -> Vec<WeightedKernel> {
    let scaled = |ks: &[WeightedKernel], f: f64| -> Vec<WeightedKernel> {
        ks.iter().map(|k| WeightedKernel { weight: f * k.weight, ..*k }).collect()
    };
    merge_near(&scaled(posterior, 1.0 - share), &scaled(prior, share))
}

/// Kernels of one family whose lengthscales differ by less than this factor are one kernel of the
/// BKL-Bayes collection (weights added): their Gram matrices differ little and their statistics are
/// nearly collinear, so the second adds cost, not power (`cargo xtask repro power` measures the
/// collection).
pub const MERGE_RATIO: f64 = 2.0;

/// `first` as it is, then each kernel of `then` added to the weight of the first earlier kernel of its
/// family within a factor [`MERGE_RATIO`], or appended.
fn merge_near(first: &[WeightedKernel], then: &[WeightedKernel]) -> Vec<WeightedKernel> {
    let mut out: Vec<WeightedKernel> = first.to_vec();
    for k in then {
        let near = |o: &&mut WeightedKernel| {
            o.family == k.family && (o.lengthscale / k.lengthscale).ln().abs() < MERGE_RATIO.ln()
        };
        match out.iter_mut().find(near) {
            Some(o) => o.weight += k.weight,
            None => out.push(*k),
        }
    }
    out
}

/// Grid points whose tempered log posterior `ℓ(θ)/n` lies provably more than this below the mode's
/// are not evaluated ([`crate::embedding::scan_pseudolikelihood`]): their mass, `< e^{−45}` of the
/// mode's each, `< 10⁻¹⁸` over the 41 points, is below the `f64` resolution of the mass the weights
/// are normalised by, so the collection is the full scan's.
pub(super) const NEGLIGIBLE_NATS: f64 = 45.0;

/// Scan points per kernel of the BKL-Bayes collection (every 4th point of the 41-point scan: a factor
/// 10^{3/10} ≈ 2 apart).
const SCAN_POINTS_PER_KERNEL: usize = 4;
/// Kernels with less than this share of the largest posterior mass are left out.
const MIN_RELATIVE_MASS: f64 = 1e-3;

/// The BKL-Bayes collection from the whole ML-II scan (module docs), or `None` where the
/// pseudolikelihood is not finite anywhere on the grid.
fn posterior_collection(r: &PseudolikelihoodScan) -> Option<Vec<WeightedKernel>> {
    let n = r.n_data as f64;
    let top = r.scan.iter().map(|s| s.log_marginal).fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return None;
    }
    let centres = (r.scan.len() - 1) / SCAN_POINTS_PER_KERNEL + 1;
    let mut mass = vec![0.0; centres];
    for (j, l) in r.scan.iter().map(|s| s.log_marginal).enumerate() {
        let c = ((j as f64 / SCAN_POINTS_PER_KERNEL as f64).round() as usize).min(centres - 1);
        if l.is_finite() {
            mass[c] += ((l - top) / n).exp();
        }
    }
    let largest = mass.iter().copied().fold(0.0, f64::max);
    let kept: Vec<(f64, f64)> = (0..centres)
        .filter(|&c| mass[c] >= MIN_RELATIVE_MASS * largest)
        .map(|c| (r.scan[(c * SCAN_POINTS_PER_KERNEL).min(r.scan.len() - 1)].lengthscale, mass[c]))
        .collect();
    let total: f64 = kept.iter().map(|k| k.1).sum();
    Some(
        kept.into_iter()
            .map(|(l, m)| WeightedKernel { weight: m / total, ..WeightedKernel::gaussian(l) })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
