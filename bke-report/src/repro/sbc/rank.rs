//! The statistics of simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman
//! 2018): for each replication, the true `θ*` drawn from the prior and the posterior's sample at
//! the data `θ*` generated, the normalised rank `u ∈ (0, 1)` of `θ*_k` among the samples of
//! coordinate `k`. A posterior that is the exact one makes `u` uniform, so its histogram is flat
//! and the central interval at level `c` (`|u − ½| ≤ c/2`) covers `θ*` with probability `c`.

use bke_core::special::gamma_q;
use bke_dme::abc::WeightedSamples;
use rand::Rng;

/// The normalised rank of `truth` among coordinate `k` of `post`: with `L` samples and `F` the
/// weight of those below `truth`, `u = (L·F + U)/(L + 1)`, `U ~ U(0, 1)`. For `L` equally weighted
/// exact draws `L·F` is the rank `r`, uniform on `0..=L`, and the jitter makes `u` exactly
/// uniform on `(0, 1)` (no histogram bin gets more rank values than another); for weighted
/// samples it is the jittered weighted empirical CDF.
pub fn normalised_rank(post: &WeightedSamples, k: usize, truth: f64, rng: &mut impl Rng) -> f64 {
    let l = post.points.len() as f64;
    let below: f64 =
        post.points.iter().zip(&post.weights).filter(|(p, _)| p[k] < truth).map(|(_, w)| w).sum();
    (l * below.clamp(0.0, 1.0) + rng.random::<f64>()) / (l + 1.0)
}

/// Whether the central interval at level `level` covers the truth of normalised rank `u`.
pub fn covers(u: f64, level: f64) -> bool {
    (u - 0.5).abs() <= 0.5 * level
}

/// Counts of `ranks` in `bins` equal-width bins of `(0, 1)`.
pub fn histogram(ranks: &[f64], bins: usize) -> Vec<usize> {
    let mut counts = vec![0; bins];
    for &u in ranks {
        counts[((u * bins as f64) as usize).min(bins - 1)] += 1;
    }
    counts
}

/// The p-value of Pearson's χ² test that `counts` come from equally likely bins
/// (`X² = Σ (c_b − E)²/E`, `E = N/B`, `B − 1` degrees of freedom); 1 without data.
pub fn uniformity_p(counts: &[usize]) -> f64 {
    let n: usize = counts.iter().sum();
    if n == 0 || counts.len() < 2 {
        return 1.0;
    }
    let e = n as f64 / counts.len() as f64;
    let x2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
    gamma_q(0.5 * (counts.len() - 1) as f64, 0.5 * x2)
}

/// The number of histogram bins for `n` ranks: 10, fewer when there are under 5 ranks per bin
/// (the χ² approximation's usual rule), at least 2.
pub fn bins_for(n: usize) -> usize {
    (n / 5).clamp(2, 10)
}

/// The uniformity p-value of a method over several coordinates: the smallest per-coordinate
/// p-value times their number (Bonferroni), at most 1.
pub fn joint_uniformity_p(per_coordinate: &[Vec<f64>]) -> f64 {
    let p = per_coordinate.iter().map(|u| uniformity_p(&histogram(u, bins_for(u.len())))).fold(1.0, f64::min);
    (p * per_coordinate.len() as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bke_core::Points;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, Normal};

    fn samples(v: &[f64]) -> WeightedSamples {
        WeightedSamples::uniform(Points::from_1d("s", v).unwrap())
    }

    #[test]
    fn the_rank_counts_the_weight_below_and_is_jittered_within_its_cell() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let post = samples(&[0.0, 1.0, 2.0, 3.0]);
        for _ in 0..100 {
            let u = normalised_rank(&post, 0, 1.5, &mut rng);
            assert!((2.0 / 5.0..3.0 / 5.0).contains(&u), "{u}");
        }
        let weighted = WeightedSamples { weights: vec![0.7, 0.1, 0.1, 0.1], ..post };
        let u = normalised_rank(&weighted, 0, 0.5, &mut rng);
        assert!((2.8 / 5.0..3.8 / 5.0).contains(&u), "{u}");
    }

    /// The oracle: exact posterior draws of a conjugate normal model give uniform ranks and
    /// nominal coverage; a posterior half as wide as the exact one does not.
    #[test]
    fn exact_posteriors_are_calibrated_and_overconfident_ones_are_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let std = Normal::new(0.0, 1.0).unwrap();
        let (exact, narrow): (Vec<f64>, Vec<f64>) = (0..2000)
            .map(|_| {
                // θ ~ N(0, 1), x | θ ~ N(θ, 1): θ | x ~ N(x/2, 1/2)
                let theta = std.sample(&mut rng);
                let x = theta + std.sample(&mut rng);
                let draws = |scale: f64, rng: &mut ChaCha8Rng| {
                    let v: Vec<f64> =
                        (0..99).map(|_| x / 2.0 + scale * 0.5f64.sqrt() * std.sample(rng)).collect();
                    samples(&v)
                };
                let (e, n) = (draws(1.0, &mut rng), draws(0.5, &mut rng));
                (normalised_rank(&e, 0, theta, &mut rng), normalised_rank(&n, 0, theta, &mut rng))
            })
            .unzip();
        let coverage =
            |u: &[f64], c: f64| u.iter().filter(|&&u| covers(u, c)).count() as f64 / u.len() as f64;
        for c in [0.5, 0.8, 0.95] {
            assert!((coverage(&exact, c) - c).abs() < 0.035, "{c}: {}", coverage(&exact, c));
        }
        assert!(coverage(&narrow, 0.95) < 0.75, "{}", coverage(&narrow, 0.95));
        assert!(uniformity_p(&histogram(&exact, 10)) > 1e-3);
        assert!(uniformity_p(&histogram(&narrow, 10)) < 1e-10);
        assert!(joint_uniformity_p(&[exact.clone(), narrow]) < 1e-9);
        assert!(joint_uniformity_p(&[exact]) > 1e-3);
    }

    #[test]
    fn chi_square_p_values_match_known_values() {
        // X² = (20−10)²/10 + (0−10)²/10 = 20 on 1 df: p = erfc(√10) = 7.7442e-6
        assert!((uniformity_p(&[20, 0]) - 7.744_216_431_044_e-6).abs() < 1e-12);
        assert_eq!(uniformity_p(&[5, 5, 5, 5]), 1.0);
        assert_eq!(uniformity_p(&[]), 1.0);
        assert_eq!(histogram(&[0.0, 0.09, 0.1, 0.999_999, 1.0], 10), vec![2, 1, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!((bins_for(7), bins_for(30), bins_for(1000)), (2, 6, 10));
    }
}
