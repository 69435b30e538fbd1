//! Kernel choice for the tests (seed 000 §2.4, §5): a fixed lengthscale, the median heuristic, **BKL**
//! (ML-II on the BKE marginal pseudolikelihood, seed 000 eq. (15)), the collections of the aggregated
//! tests (MMDAgg/HSICAgg, MMD-FUSE, [`super::kernels`]), or **BKL-Bayes**: a collection weighted by a
//! posterior over the lengthscale built from the same pseudolikelihood.
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
//! # BKL: why ML-II picks θ ≈ 0.005 on uniform data, and the rule among optima
//! With `τ² = 1` fixed (the seed's setting), the pseudolikelihood of a point is the Gaussian density of
//! its landmark features `φ(x) = (k_θ(x, z_l))_l` times the Jacobian `γ_θ(x) = ‖∂φ/∂x‖`
//! (seed 000 eq. (14)–(17)). As θ shrinks, the Gaussian term stays bounded (the features fall into `[0, 1]`,
//! `τ² = 1`) while the curve `x ↦ φ(x)` gets longer, `log γ_θ ≈ −D log θ` per point, as long as
//! every point has a landmark within about θ; below the landmarks' spacing γ collapses. So the
//! objective has a maximum at the **landmark resolution** — θ ≈ 1.5× the median distance from a
//! data point to its nearest landmark — whatever the data: on 1000 uniform points with 100 held-out
//! landmarks θ* ≈ 0.005 (landmark fill 0.0034), and θ* halves when the landmarks double (0.018, 0.011,
//! 0.005, 0.003 for 25, 50, 100, 200 landmarks; uniform data, `examples` in the report of issue 15).
//! It is a real maximum of the pseudolikelihood, but a degenerate one: it measures the landmark
//! design, not the data. The second optimum (≈ 0.9 on `[0, 1]`) grows slowly with the number of
//! landmarks too (0.54 → 1.1). The seed's own Fig. 2C optimum is of the first kind: on the blobs,
//! θ* = 0.55 / 0.73 / 1.0 for 200 / 100 / 50 landmarks (fill 0.37 / 0.53 / 0.77); it helps the test
//! there because within-cluster landmark spacing is close to the cluster scale.
//!
//! The rule ([`LengthscaleSelection::Bkl`]): the highest local optimum that is interior (not at the
//! search box) and resolved by the landmarks, `θ ≥ δ` with `δ` the median distance from a data point to
//! its nearest landmark (reported as `resolution`); if none qualifies, the highest optimum. On every
//! benchmark we ran the best optimum qualifies, so the rule changes nothing there; it excludes the
//! optima below the landmark spacing, which carry no information about the data.
//!
//! # BKL-Bayes: a posterior over the lengthscale weights a collection
//! The ML-II scan (41 log-spaced θ from `m/100` to `10m`, `m` the median distance) gives
//! `ℓ(θ) = log p(x | θ, τ² = 1)`. Its differences between optima are thousands of nats (it counts every
//! point's `M` landmark features as independent observations), so `exp(ℓ)` is a point mass. BKL-Bayes
//! uses the generalised-Bayes posterior with learning rate `1/n` (Bissiri, Holmes & Walker 2016),
//! `π(θ) ∝ exp(ℓ(θ)/n)` on the grid with a flat prior on `log θ`: the pseudolikelihood's average
//! log-score per point, which keeps every scale the sample supports within a few nats. The grid is
//! summarised by 11 Gaussian kernels a factor 2 apart (every 4th grid point; each carries the mass of
//! its nearest grid points); kernels with less than 10⁻³ of the largest mass are left out. For HSIC
//! the posterior is per variable and the collection the product. The weights enter the test through
//! the soft maximum of [`super::aggregate`].

use super::kernels::{
    BandwidthWeights, TestFamily, WeightedKernel, fuse_collection, hsicagg_lengthscales, mmdagg_collection,
};
use super::median::{MedianConvention, median_lengthscale};
use super::{choice, invalid};
use crate::embedding::{EmbeddingParams, EmbeddingPrior, FittedEmbedding};
use crate::estimator::Params;
use crate::{CoreError, Points, Progress, check_positive};
use bke_linalg::Backend;
use serde::Serialize;

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
    fn validate(&self) -> Result<(), CoreError> {
        check_positive("BKL tau2", self.tau2)?;
        self.prior.check()?;
        if self.landmarks == 0 {
            return Err(invalid("BKL landmarks", 0.0, "need at least one landmark (100 is the default)"));
        }
        Ok(())
    }

    fn fit<B: Backend>(&self, x: &Points, progress: &dyn Progress) -> Result<FittedEmbedding, CoreError> {
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
    fn list(self) -> Vec<TestFamily> {
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
    /// MMDAgg (two-sample) / HSICAgg (independence): a collection, weighted min-p with a corrected level.
    Agg(AggParams),
    /// MMD-FUSE: a collection, soft maximum of normalised statistics (two-sample only).
    Fuse(Families),
    /// BKL-Bayes: a Gaussian collection weighted by the BKE posterior over the lengthscale.
    BklBayes(BklParams),
}

impl Default for LengthscaleSelection {
    /// The median heuristic, Muandet convention.
    fn default() -> Self {
        LengthscaleSelection::Median(MedianConvention::Muandet)
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

    /// The name in outputs: "fixed", "median", "bkl", "mmdagg" / "hsicagg", "fuse", "bkl-bayes".
    pub fn name(&self, test: TestKind) -> &'static str {
        match (self, test) {
            (LengthscaleSelection::Fixed(_), _) => "fixed",
            (LengthscaleSelection::Median(_), _) => "median",
            (LengthscaleSelection::Bkl(_), _) => "bkl",
            (LengthscaleSelection::Agg(_), TestKind::TwoSample) => "mmdagg",
            (LengthscaleSelection::Agg(_), TestKind::Independence) => "hsicagg",
            (LengthscaleSelection::Fuse(_), _) => "fuse",
            (LengthscaleSelection::BklBayes(_), _) => "bkl-bayes",
        }
    }

    /// Whether the test aggregates a collection of kernels.
    pub fn is_aggregated(&self) -> bool {
        matches!(self, Self::Agg(_) | Self::Fuse(_) | Self::BklBayes(_))
    }

    /// Errors on invalid settings, or a selection the test does not offer.
    pub fn validate(&self, test: TestKind) -> Result<(), CoreError> {
        match self {
            Self::Fixed(l) => check_positive("lengthscale", *l),
            Self::Bkl(p) | Self::BklBayes(p) => p.validate(),
            Self::Fuse(_) if test == TestKind::Independence => Err(choice(
                "selection 'fuse' for the independence test",
                "MMD-FUSE is a two-sample test; use hsicagg or bkl-bayes for HSIC",
            )),
            _ => Ok(()),
        }
    }
}

/// What BKL found (for reports).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BklSummary {
    /// Log marginal pseudolikelihood at the chosen θ (the mode of the posterior for BKL-Bayes).
    pub log_marginal: f64,
    /// All local optima `(θ, log marginal)`, best first.
    pub local_optima: Vec<(f64, f64)>,
    /// The median distance of the sample.
    pub median_distance: f64,
    /// Number of held-out landmarks.
    pub landmarks: usize,
    /// `τ²` used.
    pub tau2: f64,
    /// The landmark resolution: median distance from a data point to its nearest landmark.
    pub resolution: f64,
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
        Self { kernels: vec![kernel], median_convention: None, bkl: None }
    }
}

/// The points in lexicographic order of their coordinates: a canonical order of the multiset.
pub fn canonical_order(points: &Points) -> Points {
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
    points.select(&idx)
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
    match selection {
        LengthscaleSelection::Fixed(l) => Ok(SelectedKernels::single(WeightedKernel::gaussian(*l))),
        LengthscaleSelection::Median(c) => Ok(SelectedKernels {
            median_convention: Some(*c),
            ..SelectedKernels::single(WeightedKernel::gaussian(median_lengthscale(&z, *c)?))
        }),
        LengthscaleSelection::Bkl(p) => {
            let r = p.fit::<B>(&z, progress)?;
            let (theta, log_marginal) = bkl_choice(&r, landmark_resolution(&z, &r));
            let mut summary = summarise(&z, &r, p);
            summary.log_marginal = log_marginal;
            Ok(SelectedKernels {
                bkl: Some(summary),
                ..SelectedKernels::single(WeightedKernel::gaussian(theta))
            })
        }
        LengthscaleSelection::Agg(a) => {
            let kernels = match test {
                TestKind::TwoSample => mmdagg_collection(&z, &a.families.list(), 10, a.weights)?,
                TestKind::Independence => {
                    let w = a.weights.weights(5);
                    let ls = hsicagg_lengthscales(&z)?;
                    ls.iter()
                        .zip(w)
                        .map(|(&l, w)| WeightedKernel { weight: w, ..WeightedKernel::gaussian(l) })
                        .collect()
                }
            };
            Ok(SelectedKernels { kernels, median_convention: None, bkl: None })
        }
        LengthscaleSelection::Fuse(f) => Ok(SelectedKernels {
            kernels: fuse_collection(&z, &f.list(), 10)?,
            median_convention: None,
            bkl: None,
        }),
        LengthscaleSelection::BklBayes(p) => {
            let r = p.fit::<B>(&z, progress)?;
            let kernels = posterior_collection(&r)?;
            let mut summary = summarise(&z, &r, p);
            let mode = kernels.iter().max_by(|a, b| a.weight.total_cmp(&b.weight)).expect("non-empty");
            summary.log_marginal = r
                .scan
                .iter()
                .min_by(|a, b| {
                    (a.lengthscale.ln() - mode.lengthscale.ln())
                        .abs()
                        .total_cmp(&(b.lengthscale.ln() - mode.lengthscale.ln()).abs())
                })
                .map_or(r.log_marginal, |s| s.log_marginal);
            Ok(SelectedKernels { kernels, median_convention: None, bkl: Some(summary) })
        }
    }
}

fn summarise(z: &Points, r: &FittedEmbedding, p: &BklParams) -> BklSummary {
    BklSummary {
        log_marginal: r.log_marginal,
        local_optima: r.local_optima.iter().map(|o| (o.lengthscales[0], o.log_marginal)).collect(),
        median_distance: r.median_heuristic,
        landmarks: r.landmarks.len(),
        tau2: p.tau2,
        resolution: landmark_resolution(z, r),
    }
}

/// The median over the data points (the sample minus the landmarks) of the distance to the nearest
/// landmark.
fn landmark_resolution(z: &Points, r: &FittedEmbedding) -> f64 {
    let held: std::collections::HashSet<usize> = r.landmark_indices.iter().flatten().copied().collect();
    let mut d: Vec<f64> = (0..z.len())
        .filter(|i| !held.contains(i))
        .map(|i| {
            let p = z.point(i);
            r.landmarks
                .iter()
                .map(|q| p.iter().zip(q).map(|(a, b)| (a - b) * (a - b)).sum::<f64>())
                .fold(f64::INFINITY, f64::min)
                .sqrt()
        })
        .collect();
    if d.is_empty() {
        return 0.0;
    }
    let mid = d.len() / 2;
    *d.select_nth_unstable_by(mid, f64::total_cmp).1
}

/// The BKL rule among the local optima (module docs): `(θ, log marginal)`.
fn bkl_choice(r: &FittedEmbedding, resolution: f64) -> (f64, f64) {
    r.local_optima
        .iter()
        .find(|o| !o.at_boundary && o.lengthscales[0] >= resolution)
        .or(r.local_optima.first())
        .map_or((r.params.lengthscales[0], r.log_marginal), |o| (o.lengthscales[0], o.log_marginal))
}

/// Scan points per kernel of the BKL-Bayes collection (every 4th point of the 41-point scan: a factor
/// 10^{3/10} ≈ 2 apart).
const SCAN_POINTS_PER_KERNEL: usize = 4;
/// Kernels with less than this share of the largest posterior mass are left out.
const MIN_RELATIVE_MASS: f64 = 1e-3;

/// The BKL-Bayes collection from the ML-II scan (module docs).
fn posterior_collection(r: &FittedEmbedding) -> Result<Vec<WeightedKernel>, CoreError> {
    let n = r.n_data as f64;
    let top = r.scan.iter().map(|s| s.log_marginal).fold(f64::NEG_INFINITY, f64::max);
    if !top.is_finite() {
        return Err(invalid(
            "BKE marginal pseudolikelihood",
            top,
            "it is not finite anywhere on the lengthscale grid, so no posterior can be formed; add landmarks or use another selection",
        ));
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
    Ok(kept
        .into_iter()
        .map(|(l, m)| WeightedKernel { weight: m / total, ..WeightedKernel::gaussian(l) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_linalg::DefaultBackend;

    fn select(x: &Points, s: &LengthscaleSelection) -> SelectedKernels {
        select_kernels::<DefaultBackend>(x, s, TestKind::TwoSample, &()).unwrap()
    }

    #[test]
    fn fixed_and_median() {
        let x = Points::from_1d("x", &[0.0, 1.0, 3.0, 7.0]).unwrap();
        let f = select(&x, &LengthscaleSelection::Fixed(0.3));
        assert_eq!(f.kernels, vec![WeightedKernel::gaussian(0.3)]);
        assert!(
            select_kernels::<DefaultBackend>(
                &x,
                &LengthscaleSelection::Fixed(-1.0),
                TestKind::TwoSample,
                &()
            )
            .is_err()
        );
        let m = select(&x, &LengthscaleSelection::default());
        assert_eq!((m.kernels[0].lengthscale, m.median_convention), (3.5, Some(MedianConvention::Muandet)));
        assert!(LengthscaleSelection::Fuse(Families::Both).validate(TestKind::Independence).is_err());
    }

    /// Every selection is a function of the multiset: shuffling the points changes nothing.
    #[test]
    fn selections_ignore_the_order_of_the_points() {
        let data: Vec<f64> =
            (0..300).map(|i| ((i * 7919 % 601) as f64 / 60.0).sin() * 2.0 + (i % 3) as f64).collect();
        let x = Points::new("x", data, 2).unwrap();
        let shuffled = x.select(&(0..150).map(|i| (i * 37) % 150).collect::<Vec<_>>());
        for s in [
            LengthscaleSelection::default(),
            LengthscaleSelection::bkl(3),
            LengthscaleSelection::Agg(AggParams::default()),
            LengthscaleSelection::Fuse(Families::Both),
            LengthscaleSelection::BklBayes(BklParams::default()),
        ] {
            assert_eq!(select(&x, &s), select(&shuffled, &s), "{s:?}");
        }
    }

    /// BKL picks the within-cluster scale on well-separated tight clusters, where the median heuristic
    /// picks the between-cluster distance; the choice is the best optimum it reports.
    #[test]
    fn bkl_finds_the_cluster_scale() {
        let mut data = Vec::new();
        for c in 0..4 {
            for i in 0..40 {
                let u = ((i * 37 + c * 11) % 41) as f64 / 40.0 - 0.5;
                let v = ((i * 17 + c * 5) % 43) as f64 / 42.0 - 0.5;
                data.push(10.0 * (c % 2) as f64 + 0.6 * u);
                data.push(10.0 * (c / 2) as f64 + 0.6 * v);
            }
        }
        let x = Points::new("x", data, 2).unwrap();
        let s = select(&x, &LengthscaleSelection::bkl(0));
        let med = select(&x, &LengthscaleSelection::default());
        let b = s.bkl.as_ref().unwrap();
        let theta = s.kernels[0].lengthscale;
        assert!(
            theta < 2.0 && med.kernels[0].lengthscale > 5.0,
            "bkl {theta} median {}",
            med.kernels[0].lengthscale
        );
        assert_eq!(b.local_optima[0].0, theta);
        assert!(theta >= b.resolution && b.resolution > 0.0, "{b:?}");
        assert_eq!(b.landmarks, 100);
        let small = x.select(&(0..60).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(select(&small, &LengthscaleSelection::bkl(0)).bkl.unwrap().landmarks, 12);
    }

    /// The BKL-Bayes weights are the tempered posterior masses of the scan cells: recomputed here from
    /// the scan of an independent ML-II fit.
    #[test]
    fn bkl_bayes_weights_are_the_tempered_posterior() {
        let data: Vec<f64> =
            (0..200).map(|i| (i as f64 * 0.61803).fract() * if i % 2 == 0 { 1.0 } else { 3.0 }).collect();
        let x = Points::from_1d("x", &data).unwrap();
        let p = BklParams::default();
        let s = select(&x, &LengthscaleSelection::BklBayes(p.clone()));
        let r = p.fit::<DefaultBackend>(&canonical_order(&x), &()).unwrap();
        let top = r.scan.iter().map(|v| v.log_marginal).fold(f64::NEG_INFINITY, f64::max);
        let mut mass = [0.0; 11];
        for (j, l) in r.scan.iter().map(|v| v.log_marginal).enumerate() {
            mass[(j + 2) / 4] += ((l - top) / r.n_data as f64).exp();
        }
        let largest = mass.iter().copied().fold(0.0, f64::max);
        let kept: Vec<usize> = (0..11).filter(|&c| mass[c] >= 1e-3 * largest).collect();
        let total: f64 = kept.iter().map(|&c| mass[c]).sum();
        assert_eq!(s.kernels.len(), kept.len());
        for (k, &c) in s.kernels.iter().zip(&kept) {
            assert_eq!(k.lengthscale, r.scan[4 * c].lengthscale);
            assert!((k.weight - mass[c] / total).abs() < 1e-12);
        }
        assert!((s.kernels.iter().map(|k| k.weight).sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
