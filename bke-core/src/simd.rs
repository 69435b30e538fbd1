//! Small vectorisable kernels (the embedding's streaming pass, the tests' kernel values, BaNK's
//! logistic passes, random Fourier features): an `exp`, a `ln(1 + e)` and a `sin_cos` the compiler
//! can vectorise, lane arrays, and
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

/// Largest `|x|` for which [`sin_cos_reduced`] is accurate: its reduction's products `k·P₁`, `k·P₂`
/// are exact for `|k| < 2²⁰`.
pub const SIN_COS_MAX: f64 = 262_144.0;

/// `(sin x, cos x)` for `|x| ≤` [`SIN_COS_MAX`], within 2 ulp of libm's `sin_cos` (tested on dense
/// sweeps, near multiples of π/2 and at the limit). Branch-free, so loops over it vectorise:
/// `x = k π/2 + r` with `k` the nearest integer to `2x/π` and `|r| ≤ π/4` (Cody–Waite: π/2 split
/// into `P₁ + P₂ + P₃`, the first two of 33 bits, so `x − kP₁` is exact and `r` carries about
/// 99 bits of π/2); `sin r` and `cos r` by their Taylor polynomials to `r¹⁷` and `r¹⁸` (truncation
/// below `r¹⁹/19! < 1e−19`) in `z = r²` by Estrin's scheme, `cos r = w + ((1 − w) − z/2) + z²Q(z)`
/// with `w = 1 − z/2` so that the rounding of `w` is recovered; the quadrant `k mod 4` swaps the
/// pair and sets the signs. Beyond the limit (or for NaN) callers use libm.
#[inline(always)]
pub fn sin_cos_reduced(x: f64) -> (f64, f64) {
    const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
    const P1: f64 = 1.570_796_326_734_125_6;
    const P2: f64 = 6.077_100_506_303_966e-11;
    const P3: f64 = 2.022_266_248_795_950_6e-21;
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52
    // (−1)^{k+1}/(2k + 3)! for k = 0..8 (sin r = r + r z S(z)) and (−1)^k/(2k + 4)! (cos)
    const S: [f64; 8] = [
        -1.0 / 6.0,
        1.0 / 120.0,
        -1.0 / 5_040.0,
        1.0 / 362_880.0,
        -1.0 / 39_916_800.0,
        1.0 / 6_227_020_800.0,
        -1.0 / 1_307_674_368_000.0,
        1.0 / 355_687_428_096_000.0,
    ];
    const C: [f64; 8] = [
        1.0 / 24.0,
        -1.0 / 720.0,
        1.0 / 40_320.0,
        -1.0 / 3_628_800.0,
        1.0 / 479_001_600.0,
        -1.0 / 87_178_291_200.0,
        1.0 / 20_922_789_888_000.0,
        -1.0 / 6_402_373_705_728_000.0,
    ];
    let t = fma(x, TWO_OVER_PI, SHIFT);
    let k = t - SHIFT;
    let q = t.to_bits() & 3;
    let r = ((x - k * P1) - k * P2) - k * P3;
    let z = r * r;
    let (z2, z4) = (z * z, z * z * z * z);
    let estrin = |c: &[f64; 8]| {
        let pair = |i: usize| fma(c[i + 1], z, c[i]);
        fma(fma(pair(6), z2, pair(4)), z4, fma(pair(2), z2, pair(0)))
    };
    let sin_r = fma(r * z, estrin(&S), r);
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let cos_r = w + (((1.0 - w) - hz) + z2 * estrin(&C));
    let swap = q & 1 == 1;
    let (s, c) = if swap { (cos_r, sin_r) } else { (sin_r, cos_r) };
    let sign = |v: f64, bit: u64| f64::from_bits(v.to_bits() ^ (bit << 62));
    (sign(s, q & 2), sign(c, (q + 1) & 2))
}

/// Replaces every `v` of `values` by `scale · cos v` and writes `scale · sin v` to `sines` (same
/// length): [`sin_cos_reduced`] on blocks of lanes whose arguments are all within
/// [`SIN_COS_MAX`], libm elsewhere.
pub fn sin_cos_scaled(values: &mut [f64], sines: &mut [f64], scale: f64) {
    debug_assert_eq!(values.len(), sines.len());
    for (vs, ss) in values.chunks_mut(LANES).zip(sines.chunks_mut(LANES)) {
        if vs.len() == LANES && vs.iter().all(|v| v.abs() <= SIN_COS_MAX) {
            let mut pairs = [(0.0, 0.0); LANES];
            for (p, &v) in pairs.iter_mut().zip(vs.iter()) {
                *p = sin_cos_reduced(v);
            }
            for ((v, s), (sv, cv)) in vs.iter_mut().zip(ss.iter_mut()).zip(pairs) {
                (*v, *s) = (cv * scale, sv * scale);
            }
        } else {
            for (v, s) in vs.iter_mut().zip(ss.iter_mut()) {
                let (sv, cv) = v.sin_cos();
                (*v, *s) = (cv * scale, sv * scale);
            }
        }
    }
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

    /// `|a − b|` in units in the last place of `b` (a nonzero normal double).
    fn ulps_of(a: f64, b: f64) -> f64 {
        let spacing = f64::EPSILON * 2f64.powi(b.abs().log2().floor() as i32);
        (a - b).abs() / spacing
    }

    /// The reduced sine and cosine against libm: a dense sweep of `[−60, 60]`, a sparse one to
    /// the limit, the neighbourhoods of multiples of π/2 (where one of the two is tiny and the
    /// reduction decides its accuracy), tiny arguments and zero; and the scaled slice form,
    /// with libm beyond the limit and for NaN.
    #[test]
    fn sin_cos_is_within_two_ulp_of_libm() {
        let mut worst = 0.0f64;
        let mut check = |x: f64| {
            let ((s, c), (ls, lc)) = (sin_cos_reduced(x), x.sin_cos());
            for (a, b) in [(s, ls), (c, lc)] {
                if b == 0.0 {
                    assert_eq!(a, 0.0, "x = {x}");
                } else {
                    worst = worst.max(ulps_of(a, b));
                }
            }
        };
        let mut x = -60.0;
        while x < 60.0 {
            check(x);
            x += 0.000_987_654_3;
        }
        let mut x = 60.0;
        while x < SIN_COS_MAX {
            check(x);
            check(-x);
            x *= 1.000_123;
        }
        for k in [1.0, 2.0, 3.0, 4.0, 7.0, 100.0, 12_345.0, 166_886.0] {
            let near = k * std::f64::consts::FRAC_PI_2;
            let mut y = near;
            for _ in 0..20 {
                check(y);
                check(-y);
                y = f64::from_bits(y.to_bits() + 1);
            }
        }
        for x in [0.0, -0.0, 1e-300, 1e-20, -1e-9, 1e-5, SIN_COS_MAX, -SIN_COS_MAX] {
            check(x);
        }
        assert!(worst <= 2.0, "worst {worst} ulp");
        let args: Vec<f64> = (0..21).map(|i| i as f64 * 0.7 - 5.0).chain([1e7, f64::NAN, -3e6]).collect();
        let (mut values, mut sines) = (args.clone(), vec![0.0; args.len()]);
        sin_cos_scaled(&mut values, &mut sines, 0.5);
        for ((&x, &c), &s) in args.iter().zip(&values).zip(&sines) {
            let (ls, lc) = x.sin_cos();
            if x.is_nan() {
                assert!(c.is_nan() && s.is_nan());
            } else {
                assert!(
                    (c - 0.5 * lc).abs() <= 2.0 * f64::EPSILON && (s - 0.5 * ls).abs() <= 2.0 * f64::EPSILON
                );
            }
        }
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
