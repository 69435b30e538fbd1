//! Special functions shared by the crate (kernel tests, priors, densities): `e^{−x}` without the
//! underflow path, `ln Γ`, the regularised incomplete gamma functions `P(a, x)` and
//! `Q(a, x) = 1 − P(a, x)` (gamma CDF and survival function), the standard normal CDF and its
//! quantile. Written here (Numerical Recipes §6.1–6.2 / Lanczos, Acklam + Halley) to keep bke-core free
//! of a statistics dependency; each is checked against closed forms in the tests.

/// `e^{−x}`, with `0` returned directly for `x > 746`, where `e^{−x}` rounds to `0` anyway: the
/// same value bit for bit, without libm's underflow path (which sets `errno` and costs several times
/// a regular call). Narrow kernels evaluate far more such arguments than others: a Gaussian of
/// bandwidth ℓ is `0` beyond `38.6 ℓ`.
#[inline]
pub fn exp_neg(x: f64) -> f64 {
    if x > 746.0 { 0.0 } else { (-x).exp() }
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, 9 terms; relative error ≲ 1e-15). Uses the reflection
/// formula below ½.
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Γ(x) Γ(1 − x) = π / sin(πx)
        let s = (std::f64::consts::PI * x).sin();
        return std::f64::consts::PI.ln() - s.abs().ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * crate::numeric::LN_2PI + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularised lower incomplete gamma `P(a, x) = γ(a, x)/Γ(a)`: the CDF at `x` of a Gamma(shape `a`,
/// scale 1). `a > 0`, `x ≥ 0` (0 for `x ≤ 0`).
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if x < a + 1.0 {
        gamma_series(a, x)
    } else {
        1.0 - gamma_cont_frac(a, x)
    }
}

/// Regularised upper incomplete gamma `Q(a, x) = 1 − P(a, x)`: the survival function of a
/// Gamma(shape `a`, scale 1), computed without cancellation in the upper tail.
pub fn gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        1.0
    } else if x < a + 1.0 {
        1.0 - gamma_series(a, x)
    } else {
        gamma_cont_frac(a, x)
    }
}

/// Series for `P(a, x)`, converges fast for `x < a + 1`.
fn gamma_series(a: f64, x: f64) -> f64 {
    let mut ap = a;
    let mut del = 1.0 / a;
    let mut sum = del;
    for _ in 0..10_000 {
        ap += 1.0;
        del *= x / ap;
        sum += del;
        if del.abs() < sum.abs() * 1e-16 {
            break;
        }
    }
    (sum.ln() - x + a * x.ln() - ln_gamma(a)).exp()
}

/// Lentz continued fraction for `Q(a, x)`, converges fast for `x > a + 1`.
fn gamma_cont_frac(a: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / TINY;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..10_000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < TINY {
            d = TINY;
        }
        c = b + an / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x + a * x.ln() - ln_gamma(a)).exp() * h
}

/// Survival function `P(G ≥ x)` of a Gamma distribution with the given shape and scale.
pub fn gamma_sf(x: f64, shape: f64, scale: f64) -> f64 {
    gamma_q(shape, x / scale)
}

/// Standard normal CDF `Φ(x)`, through `Φ(−t) = ½ Q(½, t²/2)` (accurate in both tails).
pub fn normal_cdf(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let t = 0.5 * x * x;
    if x < 0.0 { 0.5 * gamma_q(0.5, t) } else { 1.0 - 0.5 * gamma_q(0.5, t) }
}

/// Standard normal quantile `Φ⁻¹(p)` for `p ∈ (0, 1)` (Acklam's rational approximation polished by
/// two Halley steps; ±∞ at 0 and 1, NaN outside).
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || p.is_nan() {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let plow = 0.024_25;
    let mut x = if p < plow {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - plow {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    for _ in 0..2 {
        // Halley step on Φ(x) − p, with the error measured on the tail that keeps its digits.
        // Φ(x) − p, from the tail that keeps its digits: Φ(x) = 1 − ½Q(½, x²/2) for x ≥ 0.
        let tail = 0.5 * gamma_q(0.5, 0.5 * x * x);
        let e = if x < 0.0 { tail - p } else { (1.0 - p) - tail };
        let u = e * (2.0 * std::f64::consts::PI).sqrt() * (0.5 * x * x).exp();
        x -= u / (1.0 + 0.5 * x * u);
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + b.abs())
    }

    #[test]
    fn exp_neg_is_exp_bit_for_bit() {
        for x in [-3.0, 0.0, 1e-300, 0.5, 700.0, 708.5, 744.4, 745.1, 745.2, 746.0, 746.5, 1e4, f64::INFINITY]
        {
            assert_eq!(exp_neg(x).to_bits(), (-x).exp().to_bits(), "x = {x}");
        }
        assert!(exp_neg(f64::NAN).is_nan());
    }

    #[test]
    fn ln_gamma_known_values() {
        assert!(close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-14));
        let mut fact = 1.0f64;
        for n in 1..30 {
            // Γ(n + 1) = n!
            fact *= n as f64;
            assert!(close(ln_gamma(n as f64 + 1.0), fact.ln(), 1e-13), "n = {n}");
        }
        assert!(close(ln_gamma(0.1), 2.252_712_651_734_206, 1e-13));
    }

    /// For integer shape k, P(k, x) = 1 − e^{−x} Σ_{j<k} x^j / j! (Poisson–gamma duality).
    #[test]
    fn incomplete_gamma_matches_poisson_sums() {
        for k in 1..12 {
            for &x in &[0.01, 0.5, 1.0, 3.0, 7.5, 15.0, 40.0] {
                let mut term = 1.0;
                let mut sum = 0.0;
                for j in 0..k {
                    if j > 0 {
                        term *= x / j as f64;
                    }
                    sum += term;
                }
                let q = (-x).exp() * sum;
                assert!(
                    close(gamma_q(k as f64, x), q, 1e-12),
                    "k={k} x={x}: {} vs {q}",
                    gamma_q(k as f64, x)
                );
                assert!((gamma_p(k as f64, x) + gamma_q(k as f64, x) - 1.0).abs() < 1e-14);
            }
        }
        assert_eq!(gamma_p(2.0, 0.0), 0.0);
        assert_eq!(gamma_q(2.0, -1.0), 1.0);
    }

    #[test]
    fn normal_cdf_and_quantile() {
        assert!(close(normal_cdf(0.0), 0.5, 1e-15));
        assert!(close(normal_cdf(1.959_963_984_540_054), 0.975, 1e-14));
        assert!(close(normal_cdf(-1.0), 0.158_655_253_931_457_05, 1e-13));
        // deep lower tail keeps relative accuracy: Φ(−10) = 7.61985302416047e-24
        assert!(close(normal_cdf(-10.0) / 7.619_853_024_160_47e-24, 1.0, 1e-10));
        for &p in &[1e-12, 1e-6, 0.01, 0.1, 0.3, 0.5, 0.8, 0.9, 0.975, 0.999, 1.0 - 1e-9] {
            let x = normal_quantile(p);
            let back = if x < 0.0 { normal_cdf(x) } else { 1.0 - normal_cdf(-x) };
            assert!(close(back, p, 1e-12), "p={p}: x={x} back={back}");
            let back_lower = normal_cdf(x);
            assert!((back_lower - p).abs() < 1e-14, "p={p}");
        }
        assert!(close(normal_quantile(0.9), 1.281_551_565_544_600_5, 1e-13));
        assert!(normal_quantile(1.5).is_nan());
    }
}
