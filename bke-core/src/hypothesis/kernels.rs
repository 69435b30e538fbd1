//! The kernels of the tests, their Gram matrices from one set of pairwise distances, and the kernel
//! collections of the aggregated tests.
//!
//! # Families (bke's lengthscale convention)
//! | [`TestFamily`] | kernel | as in |
//! |---|---|---|
//! | `Gaussian` (JSON `"se"`) | `exp(−‖x − y‖₂²/(2ℓ²))` | every bke test |
//! | `LaplaceL1` (JSON `"laplace-l1"`) | `exp(−‖x − y‖₁/ℓ)` | MMDAgg, MMD-FUSE (their Laplace kernel uses the ℓ₁ distance) |
//!
//! The papers write bandwidths `λ`; converted to bke's `ℓ`:
//! MMDAgg's `exp(−‖·‖₂²/λ²)` is `ℓ = λ/√2` and its `exp(−‖·‖₁/λ)` is `ℓ = λ`; MMD-FUSE's
//! `exp(−‖·‖₂²/(2λ²))` is `ℓ = λ` and its `exp(−√2‖·‖₁/λ)` is `ℓ = λ/√2`; HSICAgg's Gaussian
//! `exp(−‖·‖₂²/λ²)` is `ℓ = λ/√2`.
//!
//! # Collections (bandwidths `λ` from the pooled sample's inter-point distances `d`)
//! - **MMDAgg** (Schrab et al., JMLR 2023; the `mmdagg` package's default collection, which the
//!   MMD-FUSE paper runs for its published MMDAgg figures): per family, `n_λ = 10` bandwidths
//!   geometrically spaced from `λ_min` to `λ_max` ([`mmdagg_reference_range`], the package's
//!   `compute_bandwidths`): `λ_min = ½ min d` if the smallest distance is at least 0.1, else
//!   `λ_min = ½ max(d_(5%), 0.1)`; `λ_max = 2 max(max d, 0.3)` (`d` the distances of the family's
//!   norm). The floors 0.1 and 0.3 are absolute, in the data's units, as in the package (the
//!   reference collection is reproduced, not improved): they bind on data on the unit scale whose
//!   close pairs are dense (1-D samples of a few hundred points: the 5 % quantile of the pairwise
//!   distances of `N` uniform points on `[0, 1]` is about `0.025` at `N = 1000`) and not on data on
//!   larger scales. `cargo xtask repro power` measures the power of the collection.
//!   [`mmdagg_collection_scale_free`] is the collection without the floors (`d_(5%)/2` to `2 max d`),
//!   equivariant under rescaling of the data. *Choice:* the package takes the distances between `x`
//!   and `y` (first 500 points of each, zeros replaced by the median); bke takes all distinct pairs of
//!   the pooled sample, so the collection does not depend on the labels (see [`super::select`] for why
//!   that matters).
//! - **MMD-FUSE** (Biggs, Schrab & Gretton, NeurIPS 2023): per family, 10 bandwidths *linearly*
//!   spaced from `d_(5%)/2` to `2 d_(95%)` (reference code: `mmdfuse.py`, `compute_bandwidths`). The
//!   reference code includes the `N` zero self-distances (replaced by the median) in the quantiles;
//!   bke uses the distinct pairs only (a shift of `N` in `N(N+1)/2` ranks, 0.2 % at `N = 1000`).
//! - **HSICAgg** (Schrab et al., NeurIPS 2022): per variable, `λ = 2^i λ_med`, `i = −2…2`, `λ_med` the
//!   median inter-point distance of that variable; the collection is the 25 pairs.
//!
//! Weights `w` (Schrab et al. 2023 §5.1, summing to 1 over the collection): uniform, or, per family of `n_λ`
//! bandwidths ordered from small to large, centred `∝ 1/(|(n_λ+1)/2 − i| + 1)` (odd `n_λ`) or
//! `∝ 1/(|(n_λ+1)/2 − i| + ½)` (even), increasing `∝ 1/(n_λ + 1 − i)`, decreasing `∝ 1/i`, each
//! family getting `1/#families`.
//!
//! The quantiles are taken over the distances between distinct points: pairs of coinciding points
//! (ties in discrete data) are left out, so tied data get the collection of their distinct values
//! (the reference code would take a zero quantile and fail).
//!
//! Distances above [`MEDIAN_MAX_POINTS`] points are taken over an evenly spaced subsample, as for the
//! median heuristic.

use super::median::MEDIAN_MAX_POINTS;
use super::resampling::choice;
// The test kernels are evaluated in the crate's home of kernel families; re-exported for the paths.
pub use crate::kernel::{Distances, TestFamily, WeightedKernel};
use crate::{CoreError, Points};
use serde::Serialize;

/// The order statistics of the distances between distinct points that the collections read (module
/// docs): the smallest and largest, and the 5 % and 95 % quantiles (index `⌊q·len⌋` of the sorted
/// distances, as the reference code). All zero when every point coincides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistanceQuantiles {
    /// The smallest distance between distinct points.
    pub min: f64,
    /// The 5 % quantile.
    pub q05: f64,
    /// The 95 % quantile.
    pub q95: f64,
    /// The largest distance.
    pub max: f64,
}

/// [`DistanceQuantiles`] of the distances (ℓ₂ for the Gaussian, ℓ₁ for the Laplace family) of all
/// distinct pairs of `points` (thinned to [`MEDIAN_MAX_POINTS`] evenly spaced points above that size).
/// The quantiles are found by selection, `O(N²)` for the `N²/2` pairs, not by sorting them.
pub fn distance_quantiles(points: &Points, family: TestFamily) -> Result<DistanceQuantiles, CoreError> {
    points.check_len("sample for the kernel collection", 2)?;
    let n = points.len();
    let idx: Vec<usize> = if n > MEDIAN_MAX_POINTS {
        (0..MEDIAN_MAX_POINTS).map(|k| k * n / MEDIAN_MAX_POINTS).collect()
    } else {
        (0..n).collect()
    };
    // coinciding points (ties, a sample pooled with itself) say nothing about scale: the quantiles
    // are those of the distances between distinct points, which follow the zeros in sorted order.
    // The Gaussian family's distances are selected as squares and their roots taken (monotone).
    let mut d = Vec::with_capacity(idx.len() * (idx.len() - 1) / 2);
    for (a, &i) in idx.iter().enumerate() {
        let zi = points.point(i);
        d.extend(idx[a + 1..].iter().map(|&j| family.distance(zi, points.point(j))));
    }
    let zeros = d.iter().filter(|&&v| v == 0.0).count();
    let Some(last) = (d.len() - zeros).checked_sub(1) else {
        return Ok(DistanceQuantiles { min: 0.0, q05: 0.0, q95: 0.0, max: 0.0 });
    };
    let at = |q: f64| zeros + ((q * (last + 1) as f64).floor() as usize).min(last);
    let (i05, i95) = (at(0.05), at(0.95));
    let (below, &mut q05, above) = d.select_nth_unstable_by(i05, f64::total_cmp);
    let min = below.iter().copied().filter(|&v| v > 0.0).fold(q05, f64::min);
    let (q95, max) = match i95.checked_sub(i05 + 1) {
        Some(k) => {
            let (_, &mut q95, top) = above.select_nth_unstable_by(k, f64::total_cmp);
            (q95, top.iter().copied().fold(q95, f64::max))
        }
        None => (q05, above.iter().copied().fold(q05, f64::max)),
    };
    let root = |v: f64| if family == TestFamily::Gaussian { v.sqrt() } else { v };
    let (min, q05, q95, max) = (root(min), root(q05), root(q95), root(max));
    Ok(DistanceQuantiles { min, q05, q95, max })
}

/// [`distance_quantiles`] of one sample, computed once per family for every collection built from
/// it (once for both families in one dimension, where the ℓ₁ and ℓ₂ distances coincide).
#[derive(Debug)]
pub struct SampleDistances<'a> {
    points: &'a Points,
    by_family: [std::sync::OnceLock<DistanceQuantiles>; 2],
}

impl<'a> SampleDistances<'a> {
    /// None computed yet.
    pub fn new(points: &'a Points) -> Self {
        Self { points, by_family: Default::default() }
    }

    /// The distance quantiles of `family`.
    pub fn get(&self, family: TestFamily) -> Result<DistanceQuantiles, CoreError> {
        let own = family == TestFamily::LaplaceL1 && self.points.dim() > 1;
        let slot = &self.by_family[usize::from(own)];
        if let Some(q) = slot.get() {
            return Ok(*q);
        }
        let q = distance_quantiles(self.points, family)?;
        Ok(*slot.get_or_init(|| q))
    }
}

fn positive_range(family: TestFamily, lo: f64, hi: f64) -> Result<(f64, f64), CoreError> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Err(CoreError::InvalidParameter {
            name: format!("inter-point distances ({})", family.name()),
            value: lo,
            reason: "all points coincide, so no bandwidth collection can be built; use a fixed lengthscale"
                .into(),
        });
    }
    Ok((lo, hi))
}

/// Which weighting of the bandwidths of each family (Schrab et al. 2023 §5.1; module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BandwidthWeights {
    /// Equal weights. The default.
    #[default]
    Uniform,
    /// Largest in the middle of the collection.
    Centred,
    /// Growing with the bandwidth.
    Increasing,
    /// Falling with the bandwidth.
    Decreasing,
}

impl BandwidthWeights {
    /// Parses "uniform", "centred" (or "centered"), "increasing", "decreasing".
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        Ok(match name {
            "uniform" => Self::Uniform,
            "centred" | "centered" => Self::Centred,
            "increasing" => Self::Increasing,
            "decreasing" => Self::Decreasing,
            other => {
                return Err(choice(
                    &format!("bandwidth weights '{other}'"),
                    "use uniform, centred, increasing or decreasing",
                ));
            }
        })
    }

    /// The `count` weights (summing to 1), bandwidths ordered from small to large.
    pub fn weights(self, count: usize) -> Vec<f64> {
        let nf = count as f64;
        let raw: Vec<f64> = (1..=count)
            .map(|i| {
                let i = i as f64;
                match self {
                    Self::Uniform => 1.0,
                    Self::Centred if count % 2 == 1 => 1.0 / (((nf + 1.0) / 2.0 - i).abs() + 1.0),
                    Self::Centred => 1.0 / (((nf + 1.0) / 2.0 - i).abs() + 0.5),
                    Self::Increasing => 1.0 / (nf + 1.0 - i),
                    Self::Decreasing => 1.0 / i,
                }
            })
            .collect();
        let total: f64 = raw.iter().sum();
        raw.iter().map(|w| w / total).collect()
    }
}

/// The reference code's end points of the MMDAgg range (module docs), from the distances `d`:
/// `λ_min = ½ (min d if min d ≥ 0.1, else max(d_(5%), 0.1))`, `λ_max = 2 max(max d, 0.3)`.
pub fn mmdagg_reference_range(d: &DistanceQuantiles) -> (f64, f64) {
    let lo = if d.min >= MMDAGG_FLOOR_MIN { d.min } else { d.q05.max(MMDAGG_FLOOR_MIN) };
    (lo / 2.0, 2.0 * d.max.max(MMDAGG_FLOOR_MAX))
}

/// The reference code's floor of the smallest MMDAgg distance scale (module docs).
pub const MMDAGG_FLOOR_MIN: f64 = 0.1;
/// The reference code's floor of the largest MMDAgg distance scale (module docs).
pub const MMDAGG_FLOOR_MAX: f64 = 0.3;

/// The MMDAgg collection (module docs): for each family, `count ≥ 2` geometrically spaced bandwidths
/// between the reference code's end points ([`mmdagg_reference_range`], floors included), weighted by
/// `weights` and `1/#families`.
pub fn mmdagg_collection(
    points: &Points,
    families: &[TestFamily],
    count: usize,
    weights: BandwidthWeights,
) -> Result<Vec<WeightedKernel>, CoreError> {
    mmdagg_collection_of(&SampleDistances::new(points), families, count, weights)
}

/// [`mmdagg_collection`] from distances already summarised.
pub fn mmdagg_collection_of(
    d: &SampleDistances<'_>,
    families: &[TestFamily],
    count: usize,
    weights: BandwidthWeights,
) -> Result<Vec<WeightedKernel>, CoreError> {
    geometric_collection(d, families, count, weights, mmdagg_reference_range)
}

/// The MMDAgg collection without the reference code's absolute floors: `λ` from `d_(5%)/2` to
/// `2 max d`, equivariant under a rescaling of the data (module docs).
pub fn mmdagg_collection_scale_free(
    points: &Points,
    families: &[TestFamily],
    count: usize,
    weights: BandwidthWeights,
) -> Result<Vec<WeightedKernel>, CoreError> {
    geometric_collection(&SampleDistances::new(points), families, count, weights, |d| {
        (d.q05 / 2.0, 2.0 * d.max)
    })
}

fn geometric_collection(
    points: &SampleDistances<'_>,
    families: &[TestFamily],
    count: usize,
    weights: BandwidthWeights,
    range: impl Fn(&DistanceQuantiles) -> (f64, f64),
) -> Result<Vec<WeightedKernel>, CoreError> {
    collection(points, families, count, |family, d| {
        let (lo, hi) = range(&d);
        let (lo, hi) = positive_range(family, lo, hi)?;
        let ratio = (hi / lo).powf(1.0 / (count - 1) as f64);
        let to_l = if family == TestFamily::Gaussian { std::f64::consts::FRAC_1_SQRT_2 } else { 1.0 };
        let w = weights.weights(count);
        Ok((0..count).map(|i| (lo * ratio.powi(i as i32) * to_l, w[i])).collect())
    })
}

/// The MMD-FUSE collection (module docs): for each family, `count ≥ 2` linearly spaced bandwidths,
/// uniform weights.
pub fn fuse_collection(
    points: &Points,
    families: &[TestFamily],
    count: usize,
) -> Result<Vec<WeightedKernel>, CoreError> {
    fuse_collection_of(&SampleDistances::new(points), families, count)
}

/// [`fuse_collection`] from distances already summarised.
pub fn fuse_collection_of(
    points: &SampleDistances<'_>,
    families: &[TestFamily],
    count: usize,
) -> Result<Vec<WeightedKernel>, CoreError> {
    collection(points, families, count, |family, d| {
        let (lo, hi) = positive_range(family, d.q05 / 2.0, 2.0 * d.q95)?;
        let to_l = if family == TestFamily::Gaussian { 1.0 } else { std::f64::consts::FRAC_1_SQRT_2 };
        let step = (hi - lo) / (count - 1) as f64;
        Ok((0..count).map(|i| ((lo + step * i as f64) * to_l, 1.0 / count as f64)).collect())
    })
}

fn collection(
    points: &SampleDistances<'_>,
    families: &[TestFamily],
    count: usize,
    per_family: impl Fn(TestFamily, DistanceQuantiles) -> Result<Vec<(f64, f64)>, CoreError>,
) -> Result<Vec<WeightedKernel>, CoreError> {
    if families.is_empty() || count < 2 {
        return Err(CoreError::InvalidParameter {
            name: "kernel collection size".into(),
            value: count as f64,
            reason: "need at least one family and at least 2 bandwidths per family".into(),
        });
    }
    let share = 1.0 / families.len() as f64;
    let mut out = Vec::with_capacity(families.len() * count);
    for &family in families {
        for (lengthscale, w) in per_family(family, points.get(family)?)? {
            out.push(WeightedKernel { family, lengthscale, weight: w * share });
        }
    }
    Ok(out)
}

/// The HSICAgg lengthscales of one variable: `2^i λ_med/√2`, `i = −2…2` (module docs).
pub fn hsicagg_lengthscales(points: &Points) -> Result<Vec<f64>, CoreError> {
    let med = super::median::median_distance(points)?;
    Ok((-2..=2).map(|i| 2f64.powi(i) * med * std::f64::consts::FRAC_1_SQRT_2).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_match_the_published_formulas() {
        // Schrab et al. 2023 §5.1 with N = 4: centred ∝ 1/(|2.5 − i| + 0.5) = (1/2, 1, 1, 1/2) / 3
        let c = BandwidthWeights::Centred.weights(4);
        for (a, b) in c.iter().zip([1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0]) {
            assert!((a - b).abs() < 1e-15);
        }
        // N = 3: ∝ 1/(|2 − i| + 1) = (1/2, 1, 1/2) / 2
        let c3 = BandwidthWeights::Centred.weights(3);
        assert!((c3[0] - 0.25).abs() < 1e-15 && (c3[1] - 0.5).abs() < 1e-15);
        // decreasing ∝ 1/i, increasing its mirror, uniform 1/N
        let d = BandwidthWeights::Decreasing.weights(3);
        let h = 1.0 + 0.5 + 1.0 / 3.0;
        assert!((d[0] - 1.0 / h).abs() < 1e-15 && (d[2] - 1.0 / (3.0 * h)).abs() < 1e-15);
        let inc = BandwidthWeights::Increasing.weights(3);
        assert!((inc[2] - d[0]).abs() < 1e-15);
        assert_eq!(BandwidthWeights::Uniform.weights(4), vec![0.25; 4]);
        assert!(BandwidthWeights::parse("centered").is_ok() && BandwidthWeights::parse("flat").is_err());
    }

    /// Points 0, 1, …, 20 on a line: the 210 distances are known, so are the quantiles and collections.
    #[test]
    fn collections_from_known_distances() {
        let p = Points::from_1d("x", &(0..21).map(f64::from).collect::<Vec<_>>()).unwrap();
        let d = distance_quantiles(&p, TestFamily::Gaussian).unwrap();
        // distance k occurs 21 − k times; index ⌊0.05·210⌋ = 10 falls in the 20 ones (indices 0–19)
        assert_eq!((d.min, d.q05, d.max), (1.0, 1.0, 20.0));
        let agg = mmdagg_collection(
            &p,
            &[TestFamily::Gaussian, TestFamily::LaplaceL1],
            5,
            BandwidthWeights::Uniform,
        )
        .unwrap();
        assert_eq!(agg.len(), 10);
        // λ from 0.5 to 40, ratio 80^{1/4}; Gaussian ℓ = λ/√2, Laplace ℓ = λ
        assert!((agg[0].lengthscale - 0.5 / 2f64.sqrt()).abs() < 1e-14);
        assert!((agg[4].lengthscale - 40.0 / 2f64.sqrt()).abs() < 1e-12);
        assert!((agg[5].lengthscale - 0.5).abs() < 1e-14 && (agg[9].lengthscale - 40.0).abs() < 1e-12);
        assert!((agg[1].lengthscale / agg[0].lengthscale - 80f64.powf(0.25)).abs() < 1e-12);
        assert!(agg.iter().all(|k| (k.weight - 0.1).abs() < 1e-15));
        // FUSE: 95 % quantile index 199 → distance 16 (counts 20 + 19 + … + 6 = 195 up to 15); λ from 0.5 to 32
        assert_eq!(d.q95, 16.0);
        let fuse = fuse_collection(&p, &[TestFamily::Gaussian, TestFamily::LaplaceL1], 4).unwrap();
        let gl: Vec<f64> = fuse[..4].iter().map(|k| k.lengthscale).collect();
        for (a, b) in gl.iter().zip([0.5, 11.0, 21.5, 32.0]) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        assert!((fuse[4].lengthscale - 0.5 / 2f64.sqrt()).abs() < 1e-14);
        // HSICAgg: the median distance of 0..20 is (6 + 7)/2 (the 105th and 106th of 210)
        let h = hsicagg_lengthscales(&p).unwrap();
        assert!((h[2] - 6.5 / 2f64.sqrt()).abs() < 1e-12 && (h[0] * 4.0 - h[2]).abs() < 1e-12);
    }

    /// The reference code's MMDAgg end points (`mmdagg` package, `compute_bandwidths`), each branch:
    /// min distance ≥ 0.1 → `λ_min = min d/2`; else `max(d_(5%), 0.1)/2`; `λ_max = 2 max(max d, 0.3)`.
    #[test]
    fn mmdagg_range_follows_the_reference_code() {
        // 0, 0.01, …, 1: distance 0.01k occurs 101 − k times; index ⌊0.05·5050⌋ = 252 falls in the
        // 0.03's (cumulative 100, 199, 297): the 5 % quantile 0.03 is floored at 0.1
        let fine =
            Points::from_1d("x", &(0..=100).map(|i| f64::from(i) / 100.0).collect::<Vec<_>>()).unwrap();
        let d = distance_quantiles(&fine, TestFamily::Gaussian).unwrap();
        assert!((d.q05 - 0.03).abs() < 1e-12);
        let (lo, hi) = mmdagg_reference_range(&d);
        assert!((lo - 0.05).abs() < 1e-15 && (hi - 2.0).abs() < 1e-12, "{lo} {hi}");
        let agg = mmdagg_collection(&fine, &[TestFamily::LaplaceL1], 10, BandwidthWeights::Uniform).unwrap();
        assert!((agg[0].lengthscale - 0.05).abs() < 1e-15 && (agg[9].lengthscale - 2.0).abs() < 1e-12);
        // the scale-free collection starts at the unfloored 0.03/2
        let sf = mmdagg_collection_scale_free(&fine, &[TestFamily::LaplaceL1], 10, BandwidthWeights::Uniform)
            .unwrap();
        assert!((sf[0].lengthscale - 0.015).abs() < 1e-12 && (sf[9].lengthscale - 2.0).abs() < 1e-12);
        // a 5 % quantile above the floor is kept: 0, 1, …, 20 (quantile 1, min distance 1 ≥ 0.1)
        let wide = Points::from_1d("x", &(0..21).map(f64::from).collect::<Vec<_>>()).unwrap();
        let dw = distance_quantiles(&wide, TestFamily::Gaussian).unwrap();
        assert_eq!(mmdagg_reference_range(&dw), (0.5, 40.0));
        // min distance ≥ 0.1 takes the minimum, not the 5 % quantile: 0, 0.2, 0.4, …, 2, 10, 20, …, 100
        let spread: Vec<f64> =
            (0..=10).map(|i| f64::from(i) * 0.2).chain((1..=10).map(|i| f64::from(i) * 10.0)).collect();
        let ds = distance_quantiles(&Points::from_1d("x", &spread).unwrap(), TestFamily::Gaussian).unwrap();
        assert!(ds.q05 > 0.2 + 1e-9);
        assert!((mmdagg_reference_range(&ds).0 - 0.1).abs() < 1e-12);
        // a small sample: the largest distance 0.05 is floored at 0.3, and the smallest scale at 0.1
        let tiny =
            Points::from_1d("x", &(0..=50).map(|i| f64::from(i) / 1000.0).collect::<Vec<_>>()).unwrap();
        let dt = distance_quantiles(&tiny, TestFamily::Gaussian).unwrap();
        let (lo, hi) = mmdagg_reference_range(&dt);
        assert!((lo - 0.05).abs() < 1e-15 && (hi - 0.6).abs() < 1e-12);
    }

    /// The selected quantiles against a full sort of the positive distances, on tied data in two
    /// dimensions (both norms) and in one (where the families share one computation).
    #[test]
    fn quantiles_by_selection_match_a_full_sort() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for dim in [1, 2] {
            let v: Vec<f64> = (0..300 * dim).map(|_| f64::from(rng.random_range(0..40u8)) / 7.0).collect();
            let p = Points::new("z", v, dim).unwrap();
            let shared = SampleDistances::new(&p);
            for family in [TestFamily::Gaussian, TestFamily::LaplaceL1] {
                let mut d: Vec<f64> = (0..300)
                    .flat_map(|i| (i + 1..300).map(move |j| (i, j)))
                    .map(|(i, j)| family.distance(p.point(i), p.point(j)))
                    .map(|v| if family == TestFamily::Gaussian { v.sqrt() } else { v })
                    .filter(|&v| v > 0.0)
                    .collect();
                d.sort_unstable_by(f64::total_cmp);
                let at = |q: f64| d[(q * d.len() as f64).floor() as usize];
                let want = DistanceQuantiles { min: d[0], q05: at(0.05), q95: at(0.95), max: d[d.len() - 1] };
                assert_eq!(distance_quantiles(&p, family).unwrap(), want, "d = {dim}, {family:?}");
                assert_eq!(shared.get(family).unwrap(), want, "shared, d = {dim}, {family:?}");
            }
        }
        let same = Points::from_1d("x", &[2.0; 5]).unwrap();
        assert_eq!(distance_quantiles(&same, TestFamily::Gaussian).unwrap().max, 0.0);
    }

    #[test]
    fn gram_from_distances_matches_direct_evaluation() {
        let p = Points::from_rows("x", &[vec![0.0, 1.0], vec![2.0, -1.0], vec![0.5, 0.5], vec![-1.0, 3.0]])
            .unwrap();
        let mut dist = Distances::new(&p);
        let se = WeightedKernel::gaussian(0.8);
        let lap = WeightedKernel { family: TestFamily::LaplaceL1, lengthscale: 1.3, weight: 0.5 };
        let (g, l) = (dist.gram(&se), dist.gram(&lap));
        let k = crate::Kernel::se(0.8).unwrap();
        for i in 0..4 {
            for j in 0..4 {
                let (a, b) = (p.point(i), p.point(j));
                assert!((g[(i, j)] - k.eval(a, b)).abs() < 1e-15);
                let l1: f64 = a.iter().zip(b).map(|(u, v)| (u - v).abs()).sum();
                assert!((l[(i, j)] - (-l1 / 1.3).exp()).abs() < 1e-15);
            }
        }
        // coinciding points: no collection
        let dup = Points::from_1d("x", &[1.0; 30]).unwrap();
        assert!(
            fuse_collection(&dup, &[TestFamily::Gaussian], 10).unwrap_err().to_string().contains("coincide")
        );
    }
}
