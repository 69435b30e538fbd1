//! The median heuristic (seed 000 §2.4): `m = median_{i<j} ‖x_i − x_j‖₂`, then one of two conventions
//! for the squared exponential kernel. bke's kernels are parameterised as `exp(−‖x − y‖²/(2θ²))`, so:
//!
//! | convention | kernel in the literature | bke lengthscale θ |
//! |---|---|---|
//! | [`MedianConvention::Muandet`] (**default**; Muandet et al. 2014) | `exp(−‖x−y‖²/(2m²))` | `θ = m` |
//! | [`MedianConvention::Mooij`] (Mooij et al. 2015) | `exp(−‖x−y‖²/m²)` | `θ = m/√2` |
//!
//! The default is the one seed 000 Fig. 2D quotes ("the median heuristic suggests a value of 20",
//! a lengthscale in the seed's own `exp(−‖x−y‖²/(2θ²))` parameterisation).
//!
//! The median is exact (all `n(n−1)/2` pairs) up to [`MEDIAN_MAX_POINTS`] points; above that it is
//! taken over an evenly spaced deterministic subsample of that many points (no randomness, so the
//! selected lengthscale never depends on a seed).
//!
//! **Discrete samples.** Where more than half of the pairs coincide — a binary variable (a treatment
//! indicator in causal discovery), a count with a dominant value — the median over all pairs is 0
//! and gives no kernel. The median is then taken over the pairs at a positive distance, the rule
//! Gretton et al.'s reference HSIC code and causal-learn use for every sample; it depends on the
//! sample alone, so a permutation test stays exact. Only a sample whose points all coincide (a
//! constant variable) has no median heuristic.

use crate::{CoreError, Points};

/// Largest number of points whose pairwise distances are all used; larger samples are thinned to
/// this many evenly spaced points (≈ 2·10⁶ pairs).
pub const MEDIAN_MAX_POINTS: usize = 2000;

/// Which of the two median-heuristic conventions of seed 000 §2.4 turns the median distance into a
/// lengthscale. See the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MedianConvention {
    /// `θ = median distance` — `k = exp(−d²/(2m²))`, Muandet et al. (2014). The default.
    #[default]
    Muandet,
    /// `θ = median distance / √2` — `k = exp(−d²/m²)`, Mooij et al. (2015).
    Mooij,
}

impl MedianConvention {
    /// Name used in outputs and on the command line ("muandet", "mooij").
    pub fn name(self) -> &'static str {
        match self {
            MedianConvention::Muandet => "muandet",
            MedianConvention::Mooij => "mooij",
        }
    }

    /// Parses a name as written by [`MedianConvention::name`].
    pub fn parse(name: &str) -> Result<Self, CoreError> {
        match name {
            "muandet" => Ok(MedianConvention::Muandet),
            "mooij" => Ok(MedianConvention::Mooij),
            other => Err(CoreError::InvalidChoice {
                what: format!("median convention '{other}'"),
                reason: "use 'muandet' (θ = median distance, the default) or 'mooij' (θ = median/√2)".into(),
            }),
        }
    }

    /// The lengthscale θ for median pairwise distance `m`.
    pub fn lengthscale(self, median: f64) -> f64 {
        match self {
            MedianConvention::Muandet => median,
            MedianConvention::Mooij => median / std::f64::consts::SQRT_2,
        }
    }
}

/// The rows of `n` points whose pairwise distances [`median_distance`] uses: all of them up to
/// [`MEDIAN_MAX_POINTS`], else that many evenly spaced rows `k·n/MEDIAN_MAX_POINTS`. The median of
/// a sample held elsewhere (chunks) is `median_distance` of these rows.
pub fn median_subsample(n: usize) -> Vec<usize> {
    if n > MEDIAN_MAX_POINTS {
        (0..MEDIAN_MAX_POINTS).map(|k| k * n / MEDIAN_MAX_POINTS).collect()
    } else {
        (0..n).collect()
    }
}

/// The median of the pairwise Euclidean distances `‖x_i − x_j‖`, `i < j` (for an even number of
/// pairs, the mean of the two middle values), or, where that is 0 (more than half the pairs
/// coincide), the median over the pairs at a positive distance (module docs). Errors with fewer
/// than 2 points or when every pair coincides (a constant sample).
pub fn median_distance(x: &Points) -> Result<f64, CoreError> {
    x.check_len("sample for the median heuristic", 2)?;
    let idx = median_subsample(x.len());
    let mut d2 = Vec::with_capacity(idx.len() * (idx.len() - 1) / 2);
    for (a, &i) in idx.iter().enumerate() {
        let xi = x.point(i);
        for &j in &idx[a + 1..] {
            d2.push(xi.iter().zip(x.point(j)).map(|(p, q)| (p - q) * (p - q)).sum::<f64>());
        }
    }
    let med = median_of_squares(&mut d2);
    if med > 0.0 {
        return Ok(med);
    }
    d2.retain(|&v| v > 0.0);
    if d2.is_empty() {
        return Err(CoreError::InvalidParameter {
            name: "median pairwise distance".into(),
            value: 0.0,
            reason: "every point of the sample is the same (a constant variable), so no kernel can \
                     tell its points apart; remove it"
                .into(),
        });
    }
    Ok(median_of_squares(&mut d2))
}

/// `√` of the median of the non-empty `d2` (the mean of the two middle values' roots for an even
/// count); reorders `d2`.
fn median_of_squares(d2: &mut [f64]) -> f64 {
    let len = d2.len();
    let mid = len / 2;
    let (_, &mut upper, _) = d2.select_nth_unstable_by(mid, f64::total_cmp);
    if len % 2 == 1 {
        upper.sqrt()
    } else {
        let lower = d2[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
        0.5 * (lower.sqrt() + upper.sqrt())
    }
}

/// The median-heuristic lengthscale of `x` under `convention`.
pub fn median_lengthscale(x: &Points, convention: MedianConvention) -> Result<f64, CoreError> {
    Ok(convention.lengthscale(median_distance(x)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_known_configurations() {
        // 1-D points 0, 1, 3: distances 1, 2, 3 → median 2.
        let x = Points::from_1d("x", &[0.0, 1.0, 3.0]).unwrap();
        assert_eq!(median_distance(&x).unwrap(), 2.0);
        // 0, 1, 3, 7: distances 1, 2, 3, 4, 6, 7 → (3 + 4)/2.
        let x = Points::from_1d("x", &[0.0, 1.0, 3.0, 7.0]).unwrap();
        assert_eq!(median_distance(&x).unwrap(), 3.5);
        assert_eq!(median_lengthscale(&x, MedianConvention::Muandet).unwrap(), 3.5);
        assert!((median_lengthscale(&x, MedianConvention::Mooij).unwrap() - 3.5 / 2f64.sqrt()).abs() < 1e-15);
        // 2-D: unit square corners: four sides 1, two diagonals √2 → median 1.
        let sq = Points::from_rows("sq", &[vec![0.0, 0.0], vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]])
            .unwrap();
        assert_eq!(median_distance(&sq).unwrap(), 1.0);
    }

    #[test]
    fn median_matches_sorting_oracle() {
        // deterministic pseudo-random points, odd and even pair counts
        for n in [5usize, 6, 17] {
            let data: Vec<f64> = (0..2 * n).map(|i| ((i * 7919 % 113) as f64).sin() * 3.0).collect();
            let x = Points::new("x", data, 2).unwrap();
            let mut all = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    let (a, b) = (x.point(i), x.point(j));
                    all.push(((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt());
                }
            }
            all.sort_by(f64::total_cmp);
            let k = all.len();
            let want = if k % 2 == 1 { all[k / 2] } else { 0.5 * (all[k / 2 - 1] + all[k / 2]) };
            assert!((median_distance(&x).unwrap() - want).abs() < 1e-12);
        }
    }

    /// More than half the pairs coincide: the median over the pairs at a positive distance.
    #[test]
    fn discrete_samples_take_the_median_of_positive_distances() {
        // 1, 1, 1, 1, 2: six of ten pairs coincide; the four others are at distance 1
        assert_eq!(median_distance(&Points::from_1d("x", &[1.0, 1.0, 1.0, 1.0, 2.0]).unwrap()).unwrap(), 1.0);
        // 0 ×5, 1, 3: ten of 21 pairs coincide, not more than half, so the plain median stands
        // (distances 0 ×10, 1 ×5, 2, 3 ×5: the 11th is 1)
        let x = Points::from_1d("x", &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 3.0]).unwrap();
        assert_eq!(median_distance(&x).unwrap(), 1.0);
        // binary, 7 zeros and 3 ones: 24 of 45 pairs coincide; the 21 others are at distance 1
        let mut b = vec![0.0; 7];
        b.extend([1.0; 3]);
        assert_eq!(median_distance(&Points::from_1d("b", &b).unwrap()).unwrap(), 1.0);
        // 0 ×6, 1, 4: 15 of 28 pairs coincide; the positive distances 1 ×6, 3, 4 ×6: the 7th is 3
        let mut c = vec![0.0; 6];
        c.extend([1.0, 4.0]);
        assert_eq!(median_distance(&Points::from_1d("c", &c).unwrap()).unwrap(), 3.0);
    }

    #[test]
    fn degenerate_inputs_are_errors() {
        assert!(median_distance(&Points::from_1d("x", &[1.0]).unwrap()).is_err());
        let e = median_distance(&Points::from_1d("x", &[2.0, 2.0, 2.0]).unwrap()).unwrap_err();
        assert!(e.to_string().contains("constant variable"), "{e}");
        assert!(MedianConvention::parse("mooij").is_ok());
        assert!(MedianConvention::parse("gretton").is_err());
    }
}
