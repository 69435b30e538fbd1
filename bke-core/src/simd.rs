//! Small vectorisable kernels (the embedding's streaming pass, the tests' kernel values, BaNK's
//! logistic passes): an `exp` and a `ln(1 + e)` the compiler can vectorise, lane arrays, and
//! reductions with independent lanes (a fixed summation order, so results are deterministic).
//! Portable code: with `target-cpu=native` LLVM maps a lane array of eight `f64` to one AVX-512
//! register (or two AVX2 registers); nothing here requires either.

/// Lanes of the reductions and of a [`Lane`].
const LANES: usize = 8;
/// Width of a [`Lane`].
pub(crate) const W: usize = LANES;
/// `W` values processed together (one landmark block of the streaming pass).
pub(crate) type Lane = [f64; W];

/// `a·b + c`, fused where the target has FMA (then one rounding), else a multiply and an add: no
/// slow software `fma` call on targets without it.
#[inline(always)]
pub(crate) fn fma(a: f64, b: f64, c: f64) -> f64 {
    if cfg!(target_feature = "fma") { a.mul_add(b, c) } else { a * b + c }
}

/// `Σ_j v[j]` in a fixed pairwise order.
#[inline(always)]
pub(crate) fn hsum(v: &Lane) -> f64 {
    let a = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
    (a[0] + a[2]) + (a[1] + a[3])
}

/// `exp(x)` for `x ≤ 0`, within 2 ulp of libm's `exp` on `[−700, 0]` (tested on a dense sweep,
/// the reduction's breakpoints, tiny arguments and the flush boundary) and flushed to exactly 0 below `−700` (so
/// no subnormal ever reaches the accumulations; `e^−700 ≈ 1e−304`). Branch-free apart from the
/// flush select, so loops over it vectorise: `x = n ln 2 + r` with `|r| ≤ ln2/2` (Cody–Waite, two
/// FMA steps), the degree-13 Taylor polynomial of `e^r` (truncation error `< r¹⁴/14! < 4e−18`)
/// evaluated by Estrin's scheme (depth 4 instead of Horner's 13 dependent FMAs, so successive calls
/// overlap in the pipeline), and `2^n` built from the exponent bits. NaN gives NaN.
#[inline(always)]
pub fn exp_nonpos(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52: adding it rounds to an integer
    // 1/k! for k = 0..=13
    const C: [f64; 14] = [
        1.0,
        1.0,
        0.5,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5_040.0,
        1.0 / 40_320.0,
        1.0 / 362_880.0,
        1.0 / 3_628_800.0,
        1.0 / 39_916_800.0,
        1.0 / 479_001_600.0,
        1.0 / 6_227_020_800.0,
    ];
    // a select, not `max`, so that NaN stays NaN
    let xc = if x < -700.0 { -700.0 } else { x };
    let t = fma(xc, LOG2E, SHIFT);
    let n = t - SHIFT;
    let r = fma(-n, LN2_LO, fma(-n, LN2_HI, xc));
    let (r2, pair) = (r * r, |k: usize| fma(C[k + 1], r, C[k]));
    let r4 = r2 * r2;
    let q0 = fma(pair(2), r2, pair(0));
    let q1 = fma(pair(6), r2, pair(4));
    let q2 = fma(pair(10), r2, pair(8));
    let q3 = pair(12);
    let p = fma(fma(q3, r4, q2), r4 * r4, fma(q1, r4, q0));
    let bits = (t.to_bits().wrapping_sub(SHIFT.to_bits()).wrapping_add(1023)) << 52;
    let v = p * f64::from_bits(bits);
    if x < -700.0 { 0.0 } else { v }
}

/// `ln(1 + e)` for `e ∈ [0, 1]`, within 2 ulp of libm's `ln_1p` on the tested sweep (dense, near 0
/// and near 1; the rounding of `z` bounds it by about 2.6 ulp of the exact value): the logarithm of
/// the logistic function's `1 + e^{−|η|}`. Branch-free, so loops over it vectorise: `ln(1 + e) = 2 atanh z = 2z + 2z·u·Σ_k u^k/(2k + 3)` with `z = e/(2 + e) ∈ [0, ⅓]`,
/// `u = z²`, the sum to `k = 15` (truncation below `(1/9)^17/35 < 2e−18` relative) by Estrin's
/// scheme. The correction `2z·u·Σ` is at most 4 % of the result, so its own rounding is negligible
/// and the error is that of `z`.
#[inline(always)]
pub fn ln_1p_unit(e: f64) -> f64 {
    // 1/(2k + 3) for k = 0..=15
    const C: [f64; 16] = [
        1.0 / 3.0,
        1.0 / 5.0,
        1.0 / 7.0,
        1.0 / 9.0,
        1.0 / 11.0,
        1.0 / 13.0,
        1.0 / 15.0,
        1.0 / 17.0,
        1.0 / 19.0,
        1.0 / 21.0,
        1.0 / 23.0,
        1.0 / 25.0,
        1.0 / 27.0,
        1.0 / 29.0,
        1.0 / 31.0,
        1.0 / 33.0,
    ];
    let z = e / (2.0 + e);
    let u = z * z;
    let (u2, pair) = (u * u, |k: usize| fma(C[k + 1], u, C[k]));
    let u4 = u2 * u2;
    let q0 = fma(pair(2), u2, pair(0));
    let q1 = fma(pair(6), u2, pair(4));
    let q2 = fma(pair(10), u2, pair(8));
    let q3 = fma(pair(14), u2, pair(12));
    let sum = fma(fma(q3, u4, q2), u4 * u4, fma(q1, u4, q0));
    let two_z = z + z;
    fma(two_z * u, sum, two_z)
}

/// `Σ_l a_l b_l c_l` with `LANES` independent accumulators (slices of equal length).
#[inline(always)]
pub(crate) fn lane_dot3(a: &[f64], b: &[f64], c: &[f64]) -> f64 {
    let n = a.len().min(b.len()).min(c.len());
    let (a, b, c) = (&a[..n], &b[..n], &c[..n]);
    let mut acc = [0.0f64; LANES];
    let (ca, cb, cc) = (a.chunks_exact(LANES), b.chunks_exact(LANES), c.chunks_exact(LANES));
    let (ra, rb, rc) = (ca.remainder(), cb.remainder(), cc.remainder());
    for ((x, y), z) in ca.zip(cb).zip(cc) {
        for j in 0..LANES {
            acc[j] += x[j] * y[j] * z[j];
        }
    }
    let mut tail = 0.0;
    for ((x, y), z) in ra.iter().zip(rb).zip(rc) {
        tail += x * y * z;
    }
    let mut s = 0.0;
    for v in acc {
        s += v;
    }
    s + tail
}

/// `max_l |v[l]|` (0 for an empty slice; for non-NaN input).
#[inline(always)]
pub(crate) fn max_abs(v: &[f64]) -> f64 {
    let mut acc = [0.0f64; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for c in &mut chunks {
        for j in 0..LANES {
            let a = c[j].abs();
            acc[j] = if a > acc[j] { a } else { acc[j] };
        }
    }
    acc.iter().chain(chunks.remainder()).fold(0.0, |m, a| if a.abs() > m { a.abs() } else { m })
}

/// `max_l v[l]` (for non-NaN input).
#[inline(always)]
pub(crate) fn lane_max(v: &[f64]) -> f64 {
    let mut acc = [f64::NEG_INFINITY; LANES];
    let mut chunks = v.chunks_exact(LANES);
    for c in &mut chunks {
        for j in 0..LANES {
            acc[j] = if c[j] > acc[j] { c[j] } else { acc[j] };
        }
    }
    let mut mx = f64::NEG_INFINITY;
    for a in acc.iter().chain(chunks.remainder()) {
        if *a > mx {
            mx = *a;
        }
    }
    mx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two positive normal doubles.
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn exp_is_within_two_ulp_of_libm_and_flushes() {
        let mut worst = 0u64;
        let mut check = |x: f64| {
            let (a, b) = (exp_nonpos(x), x.exp());
            worst = worst.max(ulps(a, b));
        };
        // A dense sweep of the whole range, the neighbourhood of 0 and of the reduction's
        // breakpoints (x = (k + ½) ln 2), and the last values before the flush.
        let mut x = 0.0;
        while x > -700.0 {
            check(x);
            x -= 0.001234567;
        }
        for k in 0..1000 {
            let b = -(k as f64 + 0.5) * std::f64::consts::LN_2;
            for e in [-1e-12, 0.0, 1e-12] {
                check((b + e).clamp(-700.0, 0.0));
            }
        }
        for i in 0..10_000 {
            check(-1e-300 * i as f64);
            check(-(i as f64) * 1e-13);
            check(-700.0 + i as f64 * 1e-4);
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        assert_eq!(exp_nonpos(0.0), 1.0);
        assert_eq!(exp_nonpos(-0.0), 1.0);
        assert_eq!(exp_nonpos(-700.5), 0.0);
        assert_eq!(exp_nonpos(-1e300), 0.0);
        assert_eq!(exp_nonpos(f64::NEG_INFINITY), 0.0);
        assert!(exp_nonpos(f64::NAN).is_nan());
        assert!(exp_nonpos(-699.9) > 0.0 && exp_nonpos(-700.0) > 1e-305);
    }

    #[test]
    fn ln_1p_is_within_two_ulp_of_libm() {
        let mut worst = 0u64;
        let mut check = |e: f64| {
            let (a, b) = (ln_1p_unit(e), e.ln_1p());
            worst = worst.max(ulps(a, b));
        };
        for i in 0..=1_000_000 {
            check(i as f64 * 1e-6);
        }
        for i in 1..10_000 {
            check(i as f64 * 1e-300);
            check(i as f64 * 1.1e-13);
            check(1.0 - i as f64 * 1e-12);
        }
        assert!(worst <= 2, "worst error {worst} ulp");
        assert_eq!(ln_1p_unit(0.0), 0.0);
        assert!(ln_1p_unit(f64::NAN).is_nan());
    }

    #[test]
    fn lane_reductions() {
        let v: Vec<f64> = (0..37).map(|i| (i as f64 * 0.7).sin()).collect();
        assert_eq!(lane_max(&v), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
        let w: Vec<f64> = (0..37).map(|i| i as f64 * 0.1).collect();
        let d = lane_dot3(&v, &w, &v);
        assert!((d - (0..37).map(|i| v[i] * w[i] * v[i]).sum::<f64>()).abs() < 1e-12);
    }
}
