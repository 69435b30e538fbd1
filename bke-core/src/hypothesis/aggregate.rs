//! Aggregating the statistics of a collection of kernels into one test, from the observed statistic
//! `M_k` of every kernel `k` and its resampled null `M_{k,b}` (the same relabellings or sign flips
//! `b` for every kernel, so the joint null of the collection is sampled).
//!
//! # Weighted minimum p-value with a corrected level (MMDAgg, HSICAgg)
//! Schrab et al. (JMLR 2023, Algorithm 1): the draws are split into `B₁` for the per-kernel quantiles
//! and `B₂` for the level correction. With `S_k` the `B₁` draws of kernel `k` plus its observed value,
//! the quantile `q_k(u)` is the `⌈(B₁+1)(1 − u w_k)⌉`-th smallest of `S_k`; kernel `k` rejects a value
//! `v` when `v > q_k(u)`, and the test rejects when some kernel rejects its observed value at
//! `u = û_α`, the largest `u` (by `B₃ = 50` bisection steps on `[0, min_k 1/w_k]`) at which the
//! fraction `P̂_u` of the `B₂` draws rejected by some kernel is at most α.
//!
//! By counting, `v > q_k(u)` ⟺ `c_k(v) ≤ (B₁+1) u w_k`, `c_k(v) = #{s ∈ S_k : s ≥ v}` (ties included),
//! i.e. `p̂_k(v)/w_k ≤ u` with `p̂_k(v) = c_k(v)/(B₁+1)`, the usual permutation p-value. So the test is
//! the weighted min-p test with statistic `T = min_k p̂_k(M_k)/w_k` ([`AggregateOutcome::statistic`];
//! small is significant), `P̂_u` is the empirical distribution function of the `B₂` values `T_b` at
//! `u`, and the test rejects iff `#{b : T_b ≤ T}/B₂ ≤ α`. *bke's choice:* the level correction counts
//! the observed statistic among the draws, `P̂_u = (1 + #{b : T_b ≤ u})/(1 + B₂)`, as every bke
//! permutation p-value does; the p-value is `p = (1 + #{b : T_b ≤ T})/(1 + B₂)`, and the bisection's
//! decision `T ≤ û_α` equals `p ≤ α` (tested). This rejects at most one draw's worth (`1/B₂`) less
//! often than the paper's rule.
//!
//! The smallest weighted p-value is `1/((B₁ + 1) w_k)`: with `K` kernels of equal weight the test can
//! only reject clearly when `B₁ + 1 ≫ K/α` (the papers use `B₁ = 500` to `2000` for `K` up to 20).
//!
//! # Soft maximum (MMD-FUSE, BKL-Bayes)
//! Biggs, Schrab & Gretton (NeurIPS 2023): with normalised statistics `S_k` and weights `π_k`,
//! `F = (1/λ) log Σ_k π_k exp(λ S_k)` for the observed statistics and for each draw; the p-value is
//! the permutation p-value `(1 + #{b : F_b ≥ F})/(1 + B)` of [`super::resampling_p_value`]. With
//! `Σ π_k = 1`, `max_k (S_k + (log π_k)/λ) ≤ F ≤ max_k S_k`: large `λ` makes it the maximum, `λ → 0`
//! the π-weighted mean.
//!
//! # Studentised statistics (BKL-Bayes for HSIC)
//! [`studentise`] replaces each kernel's values by `(v − mean)/sd` over its `B + 1` values (the observed
//! and the draws). Mean and sd are symmetric functions of those `B + 1` values, so the studentised
//! observed value and draws are exchangeable whenever the raw ones are: the permutation p-value stays
//! exact, and kernels become comparable whatever their scale.
//!
//! The HSIC BKL-Bayes test aggregates them at `λ = 1` ([`STUDENTISED_TEMPERATURE`]; the two-sample
//! BKL-Bayes test uses MMD-FUSE's normalisation instead, [`super::mmd`]; [`super::select`] says
//! why): `F = log Σ_k π_k exp(S_k)` is
//! the log of the posterior mixture of the exponential tilts `exp(S_k)` — for a studentised statistic
//! that is roughly Gaussian, `exp(S − ½)` is the likelihood ratio of a shift by one null standard
//! deviation, so `F` is a log Bayes factor against that local alternative, averaged over the
//! posterior on the kernel. A factor `e` of posterior weight is worth one null standard deviation of
//! the statistic: the weights matter, and a kernel of small weight still decides when its statistic
//! is large. (MMD-FUSE's `λ = √(n(n−1))` on studentised values would make `F` the plain maximum and the
//! weights irrelevant: `log π_k / λ ≈ 0`.)

use super::resampling::resampling_p_value;
use crate::numeric::log_sum_exp;

/// The soft-maximum temperature `λ` for studentised statistics (BKL-Bayes for HSIC; module docs).
pub const STUDENTISED_TEMPERATURE: f64 = 1.0;

/// Bisection steps of the level correction (MMDAgg's `B₃`).
pub const BISECTION_STEPS: usize = 50;

/// The statistics of a collection of kernels: `observed[k]` and `draws[k][b]`.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelStatistics {
    /// The observed statistic of each kernel.
    pub observed: Vec<f64>,
    /// The resampled statistics of each kernel, draw `b` the same relabelling for every kernel.
    pub draws: Vec<Vec<f64>>,
}

impl KernelStatistics {
    /// Number of draws.
    pub fn num_draws(&self) -> usize {
        self.draws.first().map_or(0, Vec::len)
    }

    /// The permutation p-value of each kernel's own test, over all draws.
    pub fn kernel_p_values(&self) -> Vec<f64> {
        self.observed.iter().zip(&self.draws).map(|(&m, d)| resampling_p_value(m, d)).collect()
    }
}

/// The result of an aggregated test.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateOutcome {
    /// The aggregated statistic (weighted minimum p-value, or soft maximum).
    pub statistic: f64,
    /// Its p-value.
    pub p_value: f64,
    /// The aggregated statistic of each null draw used for the p-value.
    pub null: Vec<f64>,
    /// The index of the kernel that decides the aggregate: the smallest `p̂_k/w_k`, or the largest term
    /// `π_k exp(λ S_k)` of the soft maximum.
    pub leading: usize,
    /// The corrected level `û_α` (min-p aggregation only): kernel `k` rejects when `p̂_k ≤ û_α w_k`.
    pub u_alpha: Option<f64>,
}

/// `#{s ∈ sorted : s ≥ v}`, counting values within a relative `1e-10` of `v` as ties (as
/// [`resampling_p_value`]).
fn count_at_least(sorted: &[f64], v: f64, scale: f64) -> usize {
    let tol = 1e-10 * scale;
    sorted.len() - sorted.partition_point(|&s| s < v - tol)
}

/// The weighted min-p aggregation of MMDAgg/HSICAgg (module docs): the first `b1` draws give the
/// per-kernel p-values, the rest (`B₂ ≥ 1`) the level correction. `weights` sum to at most 1.
pub fn min_p(stats: &KernelStatistics, weights: &[f64], b1: usize, alpha: f64) -> AggregateOutcome {
    let kernels = stats.observed.len();
    let b2 = stats.num_draws() - b1;
    let reference: Vec<(Vec<f64>, f64)> = (0..kernels)
        .map(|k| {
            let mut s: Vec<f64> = stats.draws[k][..b1].to_vec();
            s.push(stats.observed[k]);
            s.sort_by(f64::total_cmp);
            let scale = s.iter().map(|v| v.abs()).sum::<f64>() / s.len() as f64;
            (s, scale)
        })
        .collect();
    let weighted_p = |k: usize, v: f64| {
        let (s, scale) = &reference[k];
        count_at_least(s, v, *scale) as f64 / (b1 + 1) as f64 / weights[k]
    };
    let (leading, statistic) = (0..kernels)
        .map(|k| (k, weighted_p(k, stats.observed[k])))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one kernel");
    let null: Vec<f64> = (b1..b1 + b2)
        .map(|b| (0..kernels).map(|k| weighted_p(k, stats.draws[k][b])).fold(f64::INFINITY, f64::min))
        .collect();
    // `c/((B₁+1) w_k)` of different kernels can be the same rational yet differ in the last bit:
    // values within a relative 1e-12 are ties
    let at_most = |t: f64, u: f64| t <= u * (1.0 + 1e-12);
    let level_at = |u: f64| (1 + null.iter().filter(|&&t| at_most(t, u)).count()) as f64 / (1 + b2) as f64;
    let (mut lo, mut hi) = (0.0, weights.iter().map(|w| 1.0 / w).fold(f64::INFINITY, f64::min));
    for _ in 0..BISECTION_STEPS {
        let u = 0.5 * (lo + hi);
        if level_at(u) <= alpha {
            lo = u;
        } else {
            hi = u;
        }
    }
    let p_value = level_at(statistic);
    AggregateOutcome { statistic, p_value, null, leading, u_alpha: Some(lo) }
}

/// Studentises every kernel's statistics against its own `B + 1` values (module docs); a kernel whose
/// values are all equal gets zeros.
pub fn studentise(stats: &mut KernelStatistics) {
    for (obs, draws) in stats.observed.iter_mut().zip(stats.draws.iter_mut()) {
        let count = (draws.len() + 1) as f64;
        let mean = (*obs + draws.iter().sum::<f64>()) / count;
        let var = ((*obs - mean).powi(2) + draws.iter().map(|v| (v - mean).powi(2)).sum::<f64>()) / count;
        let scale = if var > 0.0 { 1.0 / var.sqrt() } else { 0.0 };
        *obs = (*obs - mean) * scale;
        draws.iter_mut().for_each(|v| *v = (*v - mean) * scale);
    }
}

/// `(1/λ) log Σ_k π_k exp(λ s_k)` with `log π_k` given, by a stable log-sum-exp; and the index of
/// its largest term.
pub fn soft_max(values: &[f64], log_weights: &[f64], lambda: f64) -> (f64, usize) {
    let terms: Vec<f64> = values.iter().zip(log_weights).map(|(s, lw)| lambda * s + lw).collect();
    let leading = terms.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(k, _)| k);
    (log_sum_exp(&terms) / lambda, leading)
}

/// The soft-maximum aggregation (module docs) of already normalised statistics over all draws.
pub fn soft_max_test(stats: &KernelStatistics, weights: &[f64], lambda: f64) -> AggregateOutcome {
    let log_w: Vec<f64> = weights.iter().map(|w| w.ln()).collect();
    let (statistic, leading) = soft_max(&stats.observed, &log_w, lambda);
    let mut column = vec![0.0; stats.observed.len()];
    let null: Vec<f64> = (0..stats.num_draws())
        .map(|b| {
            for (c, d) in column.iter_mut().zip(&stats.draws) {
                *c = d[b];
            }
            soft_max(&column, &log_w, lambda).0
        })
        .collect();
    let p_value = resampling_p_value(statistic, &null);
    AggregateOutcome { statistic, p_value, null, leading, u_alpha: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The published decision, transcribed from the definitions of Schrab et al. (Algorithm 1):
    /// quantiles by index `⌈(B₁+1)(1 − u w_k)⌉ − 1` of the sorted `B₁ + 1` values, `P̂_u` over `B₂`,
    /// the bisection, and rejection when some `M_k > q_k(û)`. `plus_one` counts the observed value in
    /// `P̂_u` as bke does.
    fn published_reject(stats: &KernelStatistics, w: &[f64], b1: usize, alpha: f64, plus_one: bool) -> bool {
        let kernels = w.len();
        let b2 = stats.num_draws() - b1;
        let sorted: Vec<Vec<f64>> = (0..kernels)
            .map(|k| {
                let mut s = stats.draws[k][..b1].to_vec();
                s.push(stats.observed[k]);
                s.sort_by(f64::total_cmp);
                s
            })
            .collect();
        let q = |k: usize, u: f64| {
            let idx = ((b1 + 1) as f64 * (1.0 - u * w[k])).ceil() as usize;
            sorted[k][idx.max(1) - 1]
        };
        let p_u = |u: f64| {
            let hits = (b1..b1 + b2).filter(|&b| (0..kernels).any(|k| stats.draws[k][b] > q(k, u))).count();
            if plus_one { (1 + hits) as f64 / (1 + b2) as f64 } else { hits as f64 / b2 as f64 }
        };
        let (mut lo, mut hi) = (0.0, w.iter().map(|v| 1.0 / v).fold(f64::INFINITY, f64::min));
        for _ in 0..BISECTION_STEPS {
            let u = 0.5 * (lo + hi);
            if p_u(u) <= alpha {
                lo = u;
            } else {
                hi = u;
            }
        }
        (0..kernels).any(|k| stats.observed[k] > q(k, lo))
    }

    /// Integer-valued statistics (many ties) and continuous ones, several weightings: the min-p form
    /// decides exactly as the published quantile/bisection form, and `p ≤ α` ⟺ `T ≤ û_α`.
    #[test]
    fn min_p_equals_the_published_bisection() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let (mut rejections, mut compared) = (0, 0);
        for case in 0..300 {
            let kernels = 1 + case % 4;
            let (b1, b2) = (20 + case % 13, 15 + case % 11);
            let discrete = case % 2 == 0;
            let shift = (case % 5) as f64 * 0.4;
            let draw = |rng: &mut ChaCha8Rng| {
                let v: f64 = rng.random::<f64>() * 4.0;
                if discrete { v.floor() } else { v }
            };
            let observed: Vec<f64> = (0..kernels).map(|_| draw(&mut rng) + shift).collect();
            let draws: Vec<Vec<f64>> =
                (0..kernels).map(|_| (0..b1 + b2).map(|_| draw(&mut rng)).collect()).collect();
            let stats = KernelStatistics { observed, draws };
            let raw: Vec<f64> = (0..kernels).map(|k| 1.0 + (k % 3) as f64).collect();
            let total: f64 = raw.iter().sum();
            let w: Vec<f64> = raw.iter().map(|v| v / total).collect();
            for alpha in [0.05, 0.2, 0.5] {
                let out = min_p(&stats, &w, b1, alpha);
                let reject = out.p_value <= alpha;
                assert_eq!(reject, out.statistic <= out.u_alpha.unwrap(), "case {case} α {alpha}");
                rejections += usize::from(reject);
                // the published algorithm evaluates its quantiles at û, within 1e-14 of the critical
                // lattice value t*, where floating-point `ceil` decides the side: compare away from
                // an observed statistic equal to t*
                let ties = |v: f64, t: f64| v <= t * (1.0 + 1e-12);
                let critical = |level: &dyn Fn(usize) -> f64| {
                    let mut sorted = out.null.clone();
                    sorted.sort_by(f64::total_cmp);
                    sorted
                        .iter()
                        .copied()
                        .find(|&t| level(out.null.iter().filter(|&&v| ties(v, t)).count()) > alpha)
                };
                let near = |c: Option<f64>| c.is_some_and(|t| (t - out.statistic).abs() <= 1e-12 * t);
                let plus_one = |c: usize| (1 + c) as f64 / (1 + b2) as f64;
                let paper = |c: usize| c as f64 / b2 as f64;
                if !near(critical(&plus_one)) {
                    assert_eq!(
                        reject,
                        published_reject(&stats, &w, b1, alpha, true),
                        "case {case} α {alpha}"
                    );
                    compared += 1;
                }
                // the paper's own criterion (no +1) is the same test with #{T_b ≤ T}/B₂ ≤ α
                if !near(critical(&paper)) {
                    let hits = out.null.iter().filter(|&&t| ties(t, out.statistic)).count();
                    let published = published_reject(&stats, &w, b1, alpha, false);
                    assert_eq!(paper(hits) <= alpha, published, "case {case} α {alpha}");
                }
            }
        }
        assert!(rejections > 50 && rejections < 850, "{rejections}");
        assert!(compared > 800, "{compared}");
    }

    /// A 2-kernel example by hand: B₁ = 4, B₂ = 3, equal weights.
    #[test]
    fn min_p_small_exact_example() {
        let stats = KernelStatistics {
            observed: vec![5.0, 1.5],
            draws: vec![vec![1.0, 2.0, 3.0, 4.0, 9.0, 0.5, 2.5], vec![1.0, 2.0, 3.0, 4.0, 0.1, 3.5, 0.2]],
        };
        let out = min_p(&stats, &[0.5, 0.5], 4, 0.5);
        // p̂₀(5) = 1/5, p̂₁(1.5) = 4/5 → T = min(0.4, 1.6) = 0.4, decided by kernel 0
        assert_eq!((out.statistic, out.leading), (0.4, 0));
        // B₂ draws: (9, 0.1) → min(0/5, 5/5)/½ = 0; (0.5, 3.5) → min(5/5, 1/5)/½ = 0.4;
        // (2.5, 0.2) → min(3/5, 5/5)/½ = 1.2
        assert_eq!(out.null, vec![0.0, 0.4, 1.2]);
        // p = (1 + #{T_b ≤ 0.4})/(1 + 3), the tie counted
        assert_eq!(out.p_value, 0.75);
    }

    #[test]
    fn soft_max_limits_and_exact_value() {
        let v = [1.0, 3.0, 2.0];
        let lw = [0.2f64.ln(), 0.3f64.ln(), 0.5f64.ln()];
        let (f, lead) = soft_max(&v, &lw, 1.0);
        let direct = (0.2 * 1f64.exp() + 0.3 * 3f64.exp() + 0.5 * 2f64.exp()).ln();
        assert!((f - direct).abs() < 1e-14 && lead == 1);
        // large λ → max; small λ → weighted mean
        assert!((soft_max(&v, &lw, 1e6).0 - 3.0).abs() < 1e-5);
        assert!((soft_max(&v, &lw, 1e-8).0 - (0.2 + 0.9 + 1.0)).abs() < 1e-6);
        // no overflow for large statistics
        assert!(
            (soft_max(&[800.0, 799.0], &[0.5f64.ln(); 2], 1.0).0
                - (800.0 + (0.5 * (1.0 + (-1f64).exp())).ln()))
            .abs()
                < 1e-12
        );
    }
}
