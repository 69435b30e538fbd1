//! Paired significance tests between two methods cross-validated on the same folds (seed 001
//! Tables 1 and 2): the paired t-test on the per-fold mean squared errors (regression), and
//! McNemar's test on the per-row correctness of two classifiers in its mid-p form (Fagerland,
//! Lydersen & Laake 2013, the reference the seed cites).
//!
//! * **Paired t**: `d_f = a_f − b_f`, `t = d̄ / (s_d/√K)` with `K − 1` degrees of freedom; two-sided
//!   `p = I_{ν/(ν+t²)}(ν/2, ½)` (the regularised incomplete beta function).
//! * **McNemar mid-p**: with `n₁₀` rows only the first method gets right and `n₀₁` only the second,
//!   `n = n₁₀ + n₀₁`, `k = min(n₁₀, n₀₁)`: `p = 2 P(X ≤ k) − P(X = k)` for `X ~ Bin(n, ½)`, capped at 1
//!   (1 when `n = 0`).

use crate::cv::CvResult;
use bke_core::special::ln_gamma;

/// The regularised incomplete beta function `I_x(a, b)` (continued fraction, modified Lentz).
pub fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    // The fraction converges fast for x < (a + 1)/(a + b + 2); use the symmetry otherwise.
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(1.0 - x, b, a);
    }
    let tiny = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / if d.abs() < tiny { tiny } else { d };
    let mut h = d;
    for m in 1..500 {
        let m = m as f64;
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < tiny { tiny } else { d };
            c = 1.0 + num / c;
            if c.abs() < tiny {
                c = tiny;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-15 {
            break;
        }
    }
    (ln_front.exp() * h / a).clamp(0.0, 1.0)
}

/// Two-sided p-value of Student's t statistic `t` with `dof` degrees of freedom.
pub fn student_t_two_sided(t: f64, dof: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { 1.0 } else { 0.0 };
    }
    incomplete_beta(dof / (dof + t * t), 0.5 * dof, 0.5)
}

/// Two-sided paired t-test of equal means of `a` and `b` (same length ≥ 2): the p-value (1 when the
/// differences are all equal to zero, 0 when they are equal and non-zero).
pub fn paired_t(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let k = d.len() as f64;
    if d.len() < 2 {
        return 1.0;
    }
    let mean = d.iter().sum::<f64>() / k;
    let sd = (d.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    if sd == 0.0 {
        return if mean == 0.0 { 1.0 } else { 0.0 };
    }
    student_t_two_sided(mean / (sd / k.sqrt()), k - 1.0)
}

/// McNemar's mid-p test from the discordant counts `n10` (only the first method right) and `n01`.
pub fn mcnemar_mid_p(n10: usize, n01: usize) -> f64 {
    let n = n10 + n01;
    if n == 0 {
        return 1.0;
    }
    let k = n10.min(n01);
    let pmf = |i: usize| {
        (ln_gamma(n as f64 + 1.0)
            - ln_gamma(i as f64 + 1.0)
            - ln_gamma((n - i) as f64 + 1.0)
            - n as f64 * std::f64::consts::LN_2)
            .exp()
    };
    let cdf: f64 = (0..=k).map(pmf).sum();
    (2.0 * cdf - pmf(k)).min(1.0)
}

/// The p-value of the paired test between two results on the same rows and folds: paired t on the
/// fold scores (regression), McNemar mid-p on the per-row correctness (classification).
pub fn paired_p_value(a: &CvResult, b: &CvResult) -> f64 {
    if a.metric == "mse" {
        return paired_t(&a.folds, &b.folds);
    }
    let right = |r: &CvResult, i: usize| (r.predictions[i] > 0.5) == (r.targets[i] > 0.5);
    let (mut n10, mut n01) = (0, 0);
    for i in 0..a.targets.len().min(b.targets.len()) {
        match (right(a, i), right(b, i)) {
            (true, false) => n10 += 1,
            (false, true) => n01 += 1,
            _ => {}
        }
    }
    mcnemar_mid_p(n10, n01)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `I_x(a, b)` against the midpoint-rule integral of the beta density.
    #[test]
    fn incomplete_beta_matches_quadrature() {
        for &(x, a, b) in &[(0.3, 2.0, 3.0), (0.8, 0.5, 0.5), (0.5, 2.0, 0.5), (0.95, 7.0, 1.5)] {
            let n = 400_000;
            let h = x / n as f64;
            let lb = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b);
            let quad: f64 = (0..n)
                .map(|i| {
                    let t = (i as f64 + 0.5) * h;
                    (lb + (a - 1.0) * t.ln() + (b - 1.0) * (1.0 - t).ln()).exp() * h
                })
                .sum();
            let tol = if a < 1.0 { 2e-3 } else { 1e-6 };
            assert!(
                (incomplete_beta(x, a, b) - quad).abs() < tol,
                "I_{x}({a},{b}) {} vs {quad}",
                incomplete_beta(x, a, b)
            );
        }
    }

    /// Tabulated critical values: t = 2.776 at 4 dof and t = 12.706 at 1 dof are the 5% two-sided
    /// points; t(∞) → normal: 1.96 at 10⁶ dof.
    #[test]
    fn t_test_matches_tables() {
        assert!((student_t_two_sided(2.776_445, 4.0) - 0.05).abs() < 1e-5);
        assert!((student_t_two_sided(12.706_2, 1.0) - 0.05).abs() < 1e-5);
        assert!((student_t_two_sided(1.959_964, 1e6) - 0.05).abs() < 1e-4);
        assert_eq!(paired_t(&[1.0, 2.0], &[1.0, 2.0]), 1.0);
        // d = (1, 2, 3): mean 2, sd 1, t = 2√3 at 2 dof: p = 1 − 2√3/√(4 + 12)... closed form
        // for 2 dof: p = 1 − t/√(2 + t²)
        let t = 2.0 * 3f64.sqrt();
        assert!(
            (paired_t(&[2.0, 3.0, 4.0], &[1.0, 1.0, 1.0]) - (1.0 - t / (2.0 + t * t).sqrt())).abs() < 1e-12
        );
    }

    /// Mid-p by hand: n10 = 1, n01 = 5: P(X ≤ 1) = 7/64, P(X = 1) = 6/64, mid-p = 14/64 − 6/64.
    #[test]
    fn mcnemar_mid_p_by_hand() {
        assert!((mcnemar_mid_p(1, 5) - 8.0 / 64.0).abs() < 1e-12);
        assert!((mcnemar_mid_p(5, 1) - 8.0 / 64.0).abs() < 1e-12);
        assert_eq!(mcnemar_mid_p(0, 0), 1.0);
        // n10 = n01 = 3: 2 · 42/64 − 20/64 = 1
        assert!((mcnemar_mid_p(3, 3) - 1.0).abs() < 1e-12);
    }
}
