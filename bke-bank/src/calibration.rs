//! Probabilistic scores of a binary classifier's predicted probabilities `p_i = P(y_i = 1 | x_i)`
//! against 0/1 labels `y_i`, reported by [`crate::cv`] next to the error rate:
//!
//! * **log-loss** `−(1/N) Σ_i [y_i log p̃_i + (1 − y_i) log(1 − p̃_i)]` with
//!   `p̃_i = clamp(p_i, ε, 1 − ε)`, `ε = 10⁻¹⁵` ([`PROBABILITY_FLOOR`], scikit-learn's historical
//!   clip), so one confident mistake costs `−log ε ≈ 34.5` instead of infinity;
//! * **Brier score** `(1/N) Σ_i (p_i − y_i)²` (a proper scoring rule, `0.25` for the constant `½`);
//! * **expected calibration error** (Naeini, Cooper & Hauskrecht 2015; Guo et al. 2017) on the
//!   predicted probability of class 1: the unit interval is cut into `B = 15` equal-width bins
//!   ([`ECE_BINS`], Guo et al.'s default) `[k/B, (k + 1)/B)` (the last bin closed), and
//!   `ECE = Σ_b (n_b/N) |ȳ_b − p̄_b|` with `n_b` the rows whose `p_i` falls in bin `b`, `ȳ_b` the
//!   fraction of them labelled 1 and `p̄_b` their mean `p_i` (empty bins contribute 0). This is the
//!   gap a reliability diagram ([`reliability`]: `ȳ_b` against `p̄_b`) shows, weighted by the bins'
//!   populations. Using `P(y = 1)` rather than the top-label confidence `max(p, 1 − p)` keeps the
//!   diagram's axis the same for both classes.
//!
//! A non-finite probability is treated as `½` (no information); the scores then stay finite.

use serde::{Deserialize, Serialize};

/// Equal-width bins of the expected calibration error and the reliability diagram.
pub const ECE_BINS: usize = 15;
/// Probabilities are clipped to `[ε, 1 − ε]` inside the log-loss (module docs).
pub const PROBABILITY_FLOOR: f64 = 1e-15;

fn finite_or_half(p: f64) -> f64 {
    if p.is_finite() { p.clamp(0.0, 1.0) } else { 0.5 }
}

/// Mean negative log-likelihood of the labels `y` under the probabilities `p` (module docs); `0`
/// when there are no rows.
pub fn log_loss(p: &[f64], y: &[f64]) -> f64 {
    let n = y.len().max(1) as f64;
    let eps = PROBABILITY_FLOOR;
    p.iter()
        .zip(y)
        .map(|(&p, &y)| {
            let q = finite_or_half(p).clamp(eps, 1.0 - eps);
            if y > 0.5 { -q.ln() } else { -(1.0 - q).ln() }
        })
        .sum::<f64>()
        / n
}

/// Brier score `(1/N) Σ (p_i − y_i)²`; `0` when there are no rows.
pub fn brier_score(p: &[f64], y: &[f64]) -> f64 {
    let n = y.len().max(1) as f64;
    p.iter().zip(y).map(|(&p, &y)| (finite_or_half(p) - y).powi(2)).sum::<f64>() / n
}

/// One bin of a reliability diagram.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    /// Lower edge `k/B` of the bin.
    pub lower: f64,
    /// Upper edge `(k + 1)/B`.
    pub upper: f64,
    /// Rows whose probability falls in the bin.
    pub count: usize,
    /// Their mean predicted probability `p̄_b` (the bin's centre when empty).
    pub mean_probability: f64,
    /// The fraction of them labelled 1, `ȳ_b` (`0` when empty).
    pub frequency: f64,
}

/// The bin of probability `p` among `bins` equal-width bins of `[0, 1]` (the last one closed).
fn bin_of(p: f64, bins: usize) -> usize {
    ((finite_or_half(p) * bins as f64) as usize).min(bins - 1)
}

/// The reliability diagram of `p` against `y` with `bins` equal-width bins (at least 1).
pub fn reliability(p: &[f64], y: &[f64], bins: usize) -> Vec<ReliabilityBin> {
    let bins = bins.max(1);
    let mut count = vec![0usize; bins];
    let mut sum_p = vec![0.0; bins];
    let mut sum_y = vec![0.0; bins];
    for (&pi, &yi) in p.iter().zip(y) {
        let b = bin_of(pi, bins);
        count[b] += 1;
        sum_p[b] += finite_or_half(pi);
        sum_y[b] += if yi > 0.5 { 1.0 } else { 0.0 };
    }
    (0..bins)
        .map(|b| {
            let (lower, upper) = (b as f64 / bins as f64, (b + 1) as f64 / bins as f64);
            let c = count[b];
            ReliabilityBin {
                lower,
                upper,
                count: c,
                mean_probability: if c > 0 { sum_p[b] / c as f64 } else { 0.5 * (lower + upper) },
                frequency: if c > 0 { sum_y[b] / c as f64 } else { 0.0 },
            }
        })
        .collect()
}

/// Expected calibration error with `bins` equal-width bins (module docs); `0` when there are no rows.
pub fn expected_calibration_error(p: &[f64], y: &[f64], bins: usize) -> f64 {
    let n = y.len().max(1) as f64;
    reliability(p, y, bins)
        .iter()
        .map(|b| b.count as f64 / n * (b.frequency - b.mean_probability).abs())
        .sum::<f64>()
}

/// A score measured on each fold: mean, standard error `sd/√K` and the per-fold values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldScore {
    /// Mean over folds.
    pub mean: f64,
    /// Standard error of the mean over folds.
    pub stderr: f64,
    /// Per-fold scores.
    pub folds: Vec<f64>,
}

impl FoldScore {
    /// Mean and standard error of per-fold `scores` (standard error 0 with fewer than two).
    pub fn of(scores: Vec<f64>) -> Self {
        let k = scores.len() as f64;
        let mean = scores.iter().sum::<f64>() / k.max(1.0);
        let sd = if scores.len() > 1 {
            (scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt()
        } else {
            0.0
        };
        Self { mean, stderr: sd / k.max(1.0).sqrt(), folds: scores }
    }
}

/// The probabilistic scores of a cross-validated classifier: each of log-loss, Brier score and ECE
/// per fold, and the reliability diagram of all held-out predictions pooled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbabilisticScores {
    /// Log-loss (nats per row).
    pub log_loss: FoldScore,
    /// Brier score.
    pub brier: FoldScore,
    /// Expected calibration error with [`ECE_BINS`] bins.
    pub ece: FoldScore,
    /// Number of equal-width bins of the ECE and the reliability diagram.
    pub bins: usize,
    /// The reliability diagram of every row's held-out probability.
    pub reliability: Vec<ReliabilityBin>,
}

impl ProbabilisticScores {
    /// The scores of per-fold `(probabilities, labels)` pairs.
    pub fn of(folds: &[(Vec<f64>, Vec<f64>)]) -> Self {
        let per =
            |f: &dyn Fn(&[f64], &[f64]) -> f64| FoldScore::of(folds.iter().map(|(p, y)| f(p, y)).collect());
        let (all_p, all_y): (Vec<f64>, Vec<f64>) =
            folds.iter().flat_map(|(p, y)| p.iter().copied().zip(y.iter().copied())).unzip();
        Self {
            log_loss: per(&log_loss),
            brier: per(&brier_score),
            ece: per(&|p, y| expected_calibration_error(p, y, ECE_BINS)),
            bins: ECE_BINS,
            reliability: reliability(&all_p, &all_y, ECE_BINS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed values on four rows.
    #[test]
    fn scores_match_hand_computation() {
        let p = [0.9, 0.2, 0.6, 0.5];
        let y = [1.0, 0.0, 0.0, 1.0];
        // −(ln .9 + ln .8 + ln .4 + ln .5)/4
        let ll = -(0.9f64.ln() + 0.8f64.ln() + 0.4f64.ln() + 0.5f64.ln()) / 4.0;
        assert!((log_loss(&p, &y) - ll).abs() < 1e-15);
        // (.01 + .04 + .36 + .25)/4 = .165
        assert!((brier_score(&p, &y) - 0.165).abs() < 1e-15);
        // Two bins: [0, .5) holds .2 (label 0): gap .2; [.5, 1] holds .9, .6, .5 (labels 1, 0, 1):
        // mean p = 2/3, frequency 2/3, gap 0. ECE = (1/4)·.2 = .05.
        assert!((expected_calibration_error(&p, &y, 2) - 0.05).abs() < 1e-14);
        // 15 bins: .9 → bin 13, .2 → bin 3, .6 → bin 9, .5 → bin 7, each alone:
        // gaps .1, .2, .6, .5 → ECE = 1.4/4 = .35.
        assert!((expected_calibration_error(&p, &y, ECE_BINS) - 0.35).abs() < 1e-14);
        let r = reliability(&p, &y, ECE_BINS);
        assert_eq!(r.iter().map(|b| b.count).sum::<usize>(), 4);
        assert_eq!((r[13].count, r[13].frequency), (1, 1.0));
        assert!((r[14].upper - 1.0).abs() < 1e-15 && r[0].lower == 0.0);
    }

    /// A perfectly calibrated predictor (each bin's frequency equals its probability) has ECE 0; a
    /// constant ½ has Brier ¼ and log-loss ln 2; p = 1 exactly on a wrong label costs −ln ε.
    #[test]
    fn limits_and_edge_cases() {
        let p = [0.25, 0.25, 0.25, 0.25, 1.0, 1.0];
        let y = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0];
        assert!(expected_calibration_error(&p, &y, ECE_BINS).abs() < 1e-14);
        let half = [0.5; 6];
        assert!((brier_score(&half, &y) - 0.25).abs() < 1e-15);
        assert!((log_loss(&half, &y) - std::f64::consts::LN_2).abs() < 1e-15);
        let wrong = log_loss(&[1.0], &[0.0]);
        assert!((wrong + PROBABILITY_FLOOR.ln()).abs() < 1e-3, "{wrong}");
        // non-finite probabilities count as ½, empty inputs score 0, no panics
        assert!((log_loss(&[f64::NAN], &[1.0]) - std::f64::consts::LN_2).abs() < 1e-15);
        assert_eq!(bin_of(f64::INFINITY, 15), 7);
        assert_eq!(
            (log_loss(&[], &[]), brier_score(&[], &[]), expected_calibration_error(&[], &[], 15)),
            (0.0, 0.0, 0.0)
        );
        assert_eq!(reliability(&[0.3], &[1.0], 0).len(), 1);
    }

    /// Fold statistics: mean and `sd/√K` of the per-fold values; pooled reliability counts.
    #[test]
    fn fold_scores_pool_and_average() {
        let s = FoldScore::of(vec![0.1, 0.3]);
        // sd = √(((−.1)² + .1²)/1) = .1414…, stderr = .1
        assert!((s.mean - 0.2).abs() < 1e-15 && (s.stderr - 0.1).abs() < 1e-15);
        let folds = vec![(vec![0.9, 0.1], vec![1.0, 0.0]), (vec![0.8], vec![0.0])];
        let ps = ProbabilisticScores::of(&folds);
        assert_eq!(ps.reliability.iter().map(|b| b.count).sum::<usize>(), 3);
        assert!((ps.brier.folds[1] - 0.64).abs() < 1e-15);
        assert!((ps.log_loss.folds[0] + 0.9f64.ln()).abs() < 1e-15);
    }
}
