//! Small vector kernels for the streaming pass: a SIMD `exp`, lane arrays, and reductions with
//! independent lanes in a fixed summation order (so results are deterministic).
//!
//! [`V`] holds `W = 8` doubles: one AVX-512 register where the build target has AVX-512F, two AVX2
//! registers where it has AVX2 + FMA, else a plain array the compiler vectorises as it can. The
//! choice is made at compile time (the workspace builds with `target-cpu=native`), nothing requires
//! AVX-512, and every path performs the same operations in the same order with fused
//! multiply-adds where the target has them, so AVX-512 and AVX2 builds give bitwise identical
//! results. (Auto-vectorisation of the `[f64; 8]` loops proved fragile: loop-carried lane
//! accumulators and possibly aliasing buffers made LLVM emit scalar code.)

/// Lanes of the reductions and of a [`Lane`].
const LANES: usize = 8;
/// Width of a [`Lane`] and of a [`V`].
pub(crate) const W: usize = LANES;
/// `W` values processed together (one landmark block of the streaming pass).
pub(crate) type Lane = [f64; W];

pub(crate) use imp::V;

/// `a·b + c`, fused where the target has FMA (then one rounding), else a multiply and an add: no
/// slow software `fma` call on targets without it.
#[inline(always)]
pub(crate) fn fma(a: f64, b: f64, c: f64) -> f64 {
    if cfg!(target_feature = "fma") { a.mul_add(b, c) } else { a * b + c }
}

/// `Σ_j v[j]` in the fixed order of [`V::sum`].
#[inline(always)]
pub(crate) fn hsum(v: &Lane) -> f64 {
    let a = [v[0] + v[4], v[1] + v[5], v[2] + v[6], v[3] + v[7]];
    (a[0] + a[2]) + (a[1] + a[3])
}

const LOG2E: f64 = std::f64::consts::LOG2_E;
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// 1.5 · 2^52: adding it rounds to an integer, which then sits in the low mantissa bits.
const SHIFT: f64 = 6_755_399_441_055_744.0;
/// Below this argument the exponential is flushed to exactly 0 (`e^−700 ≈ 1e−304`), so no
/// subnormal ever reaches the accumulations.
const EXP_FLUSH: f64 = -700.0;
/// Taylor coefficients `1/k!`, `k = 0, 1, …, 13`.
const EXP_POLY: [f64; 14] = [
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

/// `Σ_k EXP_POLY[k] r^k` by Estrin's scheme: pairs `c_2k + c_2k+1 r`, then powers `r², r⁴, r⁸`,
/// a dependency chain of 5 fused multiply-adds instead of Horner's 13 (the exponentials of one
/// point are latency-bound otherwise). Generic over scalar and vector arithmetic, so both
/// versions perform the same operations.
#[inline(always)]
fn estrin<T: Copy>(r: T, fma: impl Fn(T, T, T) -> T, mul: impl Fn(T, T) -> T) -> T
where
    T: From<f64>,
{
    let c = |k: usize| T::from(EXP_POLY[k]);
    let pair = |k: usize| fma(c(k + 1), r, c(k));
    let r2 = mul(r, r);
    let r4 = mul(r2, r2);
    let r8 = mul(r4, r4);
    let q0 = fma(pair(2), r2, pair(0));
    let q1 = fma(pair(6), r2, pair(4));
    let q2 = fma(pair(10), r2, pair(8));
    let q3 = pair(12);
    let o0 = fma(q1, r4, q0);
    let o1 = fma(q3, r4, q2);
    fma(o1, r8, o0)
}

/// `exp(x)` for `x ≤ 0`, within 2 ulp of libm on `[−700, 0]` (about 1 ulp measured, see the
/// tests) and flushed to exactly 0 below `−700`: `x = n ln 2 + r`, `|r| ≤ ln2/2` (Cody–Waite with
/// a two-part `ln 2`), degree-13 Taylor polynomial for `e^r` with fused multiply-adds
/// (truncation error `< r¹⁴/14! < 5e−18`; Estrin's evaluation order), `2^n` built from the exponent bits. The scalar twin
/// of [`exp_v`] (the same operations, so the same results lane by lane).
#[inline(always)]
pub(crate) fn exp_nonpos(x: f64) -> f64 {
    let xc = if x > EXP_FLUSH { x } else { EXP_FLUSH };
    let t = fma(xc, LOG2E, SHIFT);
    let n = t - SHIFT;
    let r = fma(n, -LN2_LO, fma(n, -LN2_HI, xc));
    let p = estrin(r, fma, |a, b| a * b);
    let bits = t.to_bits().wrapping_add(1023u64.wrapping_sub(SHIFT.to_bits())) << 52;
    let v = p * f64::from_bits(bits);
    if x < EXP_FLUSH { 0.0 } else { v }
}

/// [`exp_nonpos`] on `W` lanes at once.
#[inline(always)]
pub(crate) fn exp_v(x: V) -> V {
    let xc = x.max(V::splat(EXP_FLUSH));
    let t = xc.fma(V::splat(LOG2E), V::splat(SHIFT));
    let n = t.sub(V::splat(SHIFT));
    let r = n.fma(V::splat(-LN2_LO), n.fma(V::splat(-LN2_HI), xc));
    let p = estrin(r, |a: V, b, c| a.fma(b, c), |a, b| a.mul(b));
    p.mul(t.exp2_of_shifted()).zero_below(x, EXP_FLUSH)
}

/// The `W`-lane vector type on AVX-512F.
#[cfg(all(target_arch = "x86_64", target_feature = "avx512f"))]
mod imp {
    use super::{Lane, SHIFT};
    use std::arch::x86_64::*;

    /// `W` doubles in one AVX-512 register.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct V(__m512d);

    // SAFETY (every `unsafe` block below): this module is compiled only when the target has
    // AVX-512F, and loads/stores go through `&Lane` / `&mut Lane` of exactly `W` elements.
    impl V {
        #[inline(always)]
        pub(crate) fn splat(x: f64) -> V {
            unsafe { V(_mm512_set1_pd(x)) }
        }
        #[inline(always)]
        pub(crate) fn load(a: &Lane) -> V {
            unsafe { V(_mm512_loadu_pd(a.as_ptr())) }
        }
        #[inline(always)]
        pub(crate) fn store(self, a: &mut Lane) {
            unsafe { _mm512_storeu_pd(a.as_mut_ptr(), self.0) }
        }
        #[inline(always)]
        pub(crate) fn add(self, b: V) -> V {
            unsafe { V(_mm512_add_pd(self.0, b.0)) }
        }
        #[inline(always)]
        pub(crate) fn sub(self, b: V) -> V {
            unsafe { V(_mm512_sub_pd(self.0, b.0)) }
        }
        #[inline(always)]
        pub(crate) fn mul(self, b: V) -> V {
            unsafe { V(_mm512_mul_pd(self.0, b.0)) }
        }
        /// `self · b + c`, one rounding.
        #[inline(always)]
        pub(crate) fn fma(self, b: V, c: V) -> V {
            unsafe { V(_mm512_fmadd_pd(self.0, b.0, c.0)) }
        }
        /// `self > b ? self : b` lane-wise.
        #[inline(always)]
        pub(crate) fn max(self, b: V) -> V {
            unsafe { V(_mm512_max_pd(self.0, b.0)) }
        }
        /// 0 where `x < bound`, else `self`.
        #[inline(always)]
        pub(crate) fn zero_below(self, x: V, bound: f64) -> V {
            unsafe {
                let lt = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x.0, _mm512_set1_pd(bound));
                V(_mm512_mask_blend_pd(lt, self.0, _mm512_setzero_pd()))
            }
        }
        /// `2^n` from `self = n + SHIFT` (the integer `n` in the low mantissa bits).
        #[inline(always)]
        pub(crate) fn exp2_of_shifted(self) -> V {
            unsafe {
                let bias = _mm512_set1_epi64(1023u64.wrapping_sub(SHIFT.to_bits()) as i64);
                let bits = _mm512_add_epi64(_mm512_castpd_si512(self.0), bias);
                V(_mm512_castsi512_pd(_mm512_slli_epi64::<52>(bits)))
            }
        }
        /// `Σ_j v_j` as `((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7))`.
        #[inline(always)]
        pub(crate) fn sum(self) -> f64 {
            unsafe {
                let a = _mm256_add_pd(_mm512_castpd512_pd256(self.0), _mm512_extractf64x4_pd::<1>(self.0));
                let b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd::<1>(a));
                _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b))
            }
        }
    }
}

/// The `W`-lane vector type on AVX2 + FMA (without AVX-512F).
#[cfg(all(
    target_arch = "x86_64",
    not(target_feature = "avx512f"),
    target_feature = "avx2",
    target_feature = "fma"
))]
mod imp {
    use super::{Lane, SHIFT};
    use std::arch::x86_64::*;

    /// `W` doubles in two AVX2 registers (lanes 0–3, 4–7).
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct V(__m256d, __m256d);

    // SAFETY (every `unsafe` block below): this module is compiled only when the target has AVX2
    // and FMA, and loads/stores go through `&Lane` / `&mut Lane` of exactly `W` elements.
    impl V {
        #[inline(always)]
        pub(crate) fn splat(x: f64) -> V {
            unsafe { V(_mm256_set1_pd(x), _mm256_set1_pd(x)) }
        }
        #[inline(always)]
        pub(crate) fn load(a: &Lane) -> V {
            unsafe { V(_mm256_loadu_pd(a.as_ptr()), _mm256_loadu_pd(a.as_ptr().add(4))) }
        }
        #[inline(always)]
        pub(crate) fn store(self, a: &mut Lane) {
            unsafe {
                _mm256_storeu_pd(a.as_mut_ptr(), self.0);
                _mm256_storeu_pd(a.as_mut_ptr().add(4), self.1);
            }
        }
        #[inline(always)]
        pub(crate) fn add(self, b: V) -> V {
            unsafe { V(_mm256_add_pd(self.0, b.0), _mm256_add_pd(self.1, b.1)) }
        }
        #[inline(always)]
        pub(crate) fn sub(self, b: V) -> V {
            unsafe { V(_mm256_sub_pd(self.0, b.0), _mm256_sub_pd(self.1, b.1)) }
        }
        #[inline(always)]
        pub(crate) fn mul(self, b: V) -> V {
            unsafe { V(_mm256_mul_pd(self.0, b.0), _mm256_mul_pd(self.1, b.1)) }
        }
        /// `self · b + c`, one rounding.
        #[inline(always)]
        pub(crate) fn fma(self, b: V, c: V) -> V {
            unsafe { V(_mm256_fmadd_pd(self.0, b.0, c.0), _mm256_fmadd_pd(self.1, b.1, c.1)) }
        }
        /// `self > b ? self : b` lane-wise.
        #[inline(always)]
        pub(crate) fn max(self, b: V) -> V {
            unsafe { V(_mm256_max_pd(self.0, b.0), _mm256_max_pd(self.1, b.1)) }
        }
        /// 0 where `x < bound`, else `self`.
        #[inline(always)]
        pub(crate) fn zero_below(self, x: V, bound: f64) -> V {
            unsafe {
                let (b, z) = (_mm256_set1_pd(bound), _mm256_setzero_pd());
                V(
                    _mm256_blendv_pd(self.0, z, _mm256_cmp_pd::<_CMP_LT_OQ>(x.0, b)),
                    _mm256_blendv_pd(self.1, z, _mm256_cmp_pd::<_CMP_LT_OQ>(x.1, b)),
                )
            }
        }
        /// `2^n` from `self = n + SHIFT` (the integer `n` in the low mantissa bits).
        #[inline(always)]
        pub(crate) fn exp2_of_shifted(self) -> V {
            unsafe {
                let bias = _mm256_set1_epi64x(1023u64.wrapping_sub(SHIFT.to_bits()) as i64);
                let f = |v: __m256d| {
                    let bits = _mm256_add_epi64(_mm256_castpd_si256(v), bias);
                    _mm256_castsi256_pd(_mm256_slli_epi64::<52>(bits))
                };
                V(f(self.0), f(self.1))
            }
        }
        /// `Σ_j v_j` as `((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7))`.
        #[inline(always)]
        pub(crate) fn sum(self) -> f64 {
            unsafe {
                let a = _mm256_add_pd(self.0, self.1);
                let b = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd::<1>(a));
                _mm_cvtsd_f64(b) + _mm_cvtsd_f64(_mm_unpackhi_pd(b, b))
            }
        }
    }
}

/// The portable `W`-lane vector type (any other target).
#[cfg(not(all(
    target_arch = "x86_64",
    any(target_feature = "avx512f", all(target_feature = "avx2", target_feature = "fma"))
)))]
mod imp {
    use super::{Lane, SHIFT, W, fma, hsum};

    /// `W` doubles in an array.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct V(Lane);

    impl V {
        #[inline(always)]
        fn map(self, b: V, f: impl Fn(f64, f64) -> f64) -> V {
            let mut o = [0.0; W];
            for j in 0..W {
                o[j] = f(self.0[j], b.0[j]);
            }
            V(o)
        }
        #[inline(always)]
        pub(crate) fn splat(x: f64) -> V {
            V([x; W])
        }
        #[inline(always)]
        pub(crate) fn load(a: &Lane) -> V {
            V(*a)
        }
        #[inline(always)]
        pub(crate) fn store(self, a: &mut Lane) {
            *a = self.0;
        }
        #[inline(always)]
        pub(crate) fn add(self, b: V) -> V {
            self.map(b, |x, y| x + y)
        }
        #[inline(always)]
        pub(crate) fn sub(self, b: V) -> V {
            self.map(b, |x, y| x - y)
        }
        #[inline(always)]
        pub(crate) fn mul(self, b: V) -> V {
            self.map(b, |x, y| x * y)
        }
        /// `self · b + c`, fused where the target has FMA.
        #[inline(always)]
        pub(crate) fn fma(self, b: V, c: V) -> V {
            let mut o = [0.0; W];
            for j in 0..W {
                o[j] = fma(self.0[j], b.0[j], c.0[j]);
            }
            V(o)
        }
        /// `self > b ? self : b` lane-wise.
        #[inline(always)]
        pub(crate) fn max(self, b: V) -> V {
            self.map(b, |x, y| if x > y { x } else { y })
        }
        /// 0 where `x < bound`, else `self`.
        #[inline(always)]
        pub(crate) fn zero_below(self, x: V, bound: f64) -> V {
            self.map(x, |v, x| if x < bound { 0.0 } else { v })
        }
        /// `2^n` from `self = n + SHIFT` (the integer `n` in the low mantissa bits).
        #[inline(always)]
        pub(crate) fn exp2_of_shifted(self) -> V {
            let mut o = [0.0; W];
            for j in 0..W {
                o[j] = f64::from_bits(self.0[j].to_bits().wrapping_add(1023u64.wrapping_sub(SHIFT.to_bits())) << 52);
            }
            V(o)
        }
        /// `Σ_j v_j` as `((v0+v4) + (v2+v6)) + ((v1+v5) + (v3+v7))`.
        #[inline(always)]
        pub(crate) fn sum(self) -> f64 {
            hsum(&self.0)
        }
    }
}

impl From<f64> for V {
    #[inline(always)]
    fn from(x: f64) -> V {
        V::splat(x)
    }
}

impl V {
    /// All zeros.
    #[inline(always)]
    pub(crate) fn zero() -> V {
        V::splat(0.0)
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

    /// Distance in units in the last place of `b`.
    fn ulps(a: f64, b: f64) -> f64 {
        let ulp = f64::from_bits(b.to_bits() + 1) - b;
        (a - b).abs() / ulp
    }

    /// Against libm on a dense grid of `[−700, 0]` plus the endpoints and tiny arguments: at most
    /// 2 ulp (the documented bound; about 1 is measured), the vector and scalar versions bitwise
    /// equal, flushed to 0 below −700.
    #[test]
    fn exp_is_within_two_ulp_of_libm_and_flushes() {
        let mut xs: Vec<f64> = (0..=700_000).map(|i| -(i as f64) * 1e-3 - 1.234_567e-7 * (i % 7) as f64).collect();
        xs.extend([0.0, -0.0, -1e-300, -1e-17, -1e-9, -0.5 * std::f64::consts::LN_2, -700.0, -699.999_999]);
        let mut worst = 0.0f64;
        for chunk in xs.chunks_exact(W) {
            let lane: Lane = chunk.try_into().unwrap();
            let mut out = [0.0; W];
            exp_v(V::load(&lane)).store(&mut out);
            for (x, v) in chunk.iter().zip(out) {
                let want = x.exp();
                if *x >= EXP_FLUSH {
                    worst = worst.max(ulps(v, want));
                }
                assert_eq!(v.to_bits(), exp_nonpos(*x).to_bits(), "vector and scalar differ at {x}");
            }
        }
        assert!(worst <= 2.0, "worst error {worst} ulp");
        assert_eq!(exp_nonpos(0.0), 1.0);
        assert_eq!(exp_nonpos(-700.5), 0.0);
        assert_eq!(exp_nonpos(f64::NEG_INFINITY), 0.0);
        assert!(exp_nonpos(-699.9) > 0.0);
    }

    #[test]
    fn lane_reductions() {
        let v: Vec<f64> = (0..37).map(|i| (i as f64 * 0.7).sin()).collect();
        assert_eq!(lane_max(&v), v.iter().cloned().fold(f64::NEG_INFINITY, f64::max));
        let w: Vec<f64> = (0..37).map(|i| i as f64 * 0.1).collect();
        let d = lane_dot3(&v, &w, &v);
        assert!((d - (0..37).map(|i| v[i] * w[i] * v[i]).sum::<f64>()).abs() < 1e-12);
        let lane: Lane = v[..W].try_into().unwrap();
        assert_eq!(V::load(&lane).sum(), hsum(&lane));
        assert!((hsum(&lane) - v[..W].iter().sum::<f64>()).abs() < 1e-14);
    }
}
