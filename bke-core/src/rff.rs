//! Random Fourier features (Rahimi & Recht 2007; seed 001 eq. (3); seed 004 Def. 4.5).
//!
//! By Bochner's theorem a stationary kernel with `k(0) = 1` is `k(x − y) = E_ω cos(ωᵀ(x − y))` for
//! frequencies `ω` drawn from its spectral density. With `M` frequencies `ω_1..ω_M`,
//!
//! `φ(x) = M^{-1/2} [cos(ω₁ᵀx), …, cos(ω_Mᵀx), sin(ω₁ᵀx), …, sin(ω_Mᵀx)]ᵀ`
//!
//! gives `φ(x)ᵀφ(y) = M⁻¹ Σ_j cos(ω_jᵀ(x − y))`, an unbiased estimate of `k(x − y)`. (This paired
//! cos/sin form has lower variance than `√(2/M) cos(ωᵀx + b)` with random phases.)
//!
//! Spectral densities of the kernels of [`crate::Kernel`] (lengthscales `ℓ_d`, `z ~ N(0, I)`), all
//! Gaussian scale mixtures:
//!
//! | kernel | `ω_d` |
//! |---|---|
//! | squared exponential | `z_d / ℓ_d` |
//! | Matérn ν (Laplace = ν ½, 3/2, 5/2) | `z_d / ℓ_d · √(2ν / V)`, `V ~ χ²_{2ν}` (multivariate Student-t, 2ν dof) |
//! | rational quadratic α | `z_d / ℓ_d · √g`, `g ~ Gamma(α, rate α)` |

use crate::{CoreError, Kernel, KernelFamily, Points};
use bke_linalg::Mat;
use rand::Rng;
use rand_distr::{ChiSquared, Distribution, Gamma, StandardNormal};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// `M` frequencies in `D` dimensions and their feature map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FourierFeatures {
    /// Row-major `M × D`.
    frequencies: Vec<f64>,
    dim: usize,
}

impl FourierFeatures {
    /// Features of given frequencies (row-major `M × dim`). Errors on non-finite values or a length
    /// that is not a multiple of `dim`.
    pub fn new(frequencies: Vec<f64>, dim: usize) -> Result<Self, CoreError> {
        // Points validates shape and finiteness with row/column in the message.
        Points::new("frequencies", frequencies.clone(), dim)?;
        Ok(Self { frequencies, dim })
    }

    /// `m` frequencies drawn from the spectral density of `kernel` (see the module table).
    pub fn sample<R: Rng + ?Sized>(
        kernel: &Kernel,
        dim: usize,
        m: usize,
        rng: &mut R,
    ) -> Result<Self, CoreError> {
        kernel.check_dim(dim)?;
        let ls = kernel.lengthscales();
        let mixing = Mixing::of(kernel.family())?;
        let mut frequencies = Vec::with_capacity(m * dim);
        for _ in 0..m {
            let s = mixing.draw(rng);
            for d in 0..dim {
                let l = if ls.len() == 1 { ls[0] } else { ls[d] };
                let z: f64 = StandardNormal.sample(rng);
                frequencies.push(z * s / l);
            }
        }
        Ok(Self { frequencies, dim })
    }

    /// Number of frequencies `M` (the feature map has `2M` columns).
    pub fn len(&self) -> usize {
        self.frequencies.len() / self.dim
    }

    /// Whether there are no frequencies.
    pub fn is_empty(&self) -> bool {
        self.frequencies.is_empty()
    }

    /// Input dimension `D`.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The frequencies, row-major `M × D`.
    pub fn frequencies(&self) -> &[f64] {
        &self.frequencies
    }

    /// The feature matrix `Φ` (`N × 2M`): row `i` is `φ(x_i)ᵀ`.
    pub fn features(&self, x: &Points) -> Result<Mat, CoreError> {
        x.check_dim("feature inputs", self.dim)?;
        let m = self.len();
        let mut phi = Mat::zeros(x.len(), 2 * m);
        fill_features(&x.to_mat(), &self.frequencies, m, &mut phi);
        Ok(phi)
    }

    /// The approximate kernel `φ(x)ᵀφ(y)`.
    pub fn kernel(&self, x: &[f64], y: &[f64]) -> f64 {
        let m = self.len();
        let s: f64 = self
            .frequencies
            .chunks_exact(self.dim)
            .map(|w| w.iter().zip(x.iter().zip(y)).map(|(wk, (a, b))| wk * (a - b)).sum::<f64>().cos())
            .sum();
        s / m as f64
    }
}

/// The scale `s` of `ω = s z / ℓ` for each kernel family.
enum Mixing {
    Fixed,
    StudentT(ChiSquared<f64>, f64),
    Gamma(Gamma<f64>),
}

impl Mixing {
    fn of(family: KernelFamily) -> Result<Self, CoreError> {
        let student = |nu: f64| {
            let chi = ChiSquared::new(2.0 * nu).expect("positive degrees of freedom");
            Mixing::StudentT(chi, 2.0 * nu)
        };
        Ok(match family {
            KernelFamily::SquaredExponential => Mixing::Fixed,
            KernelFamily::Laplace => student(0.5),
            KernelFamily::Matern32 => student(1.5),
            KernelFamily::Matern52 => student(2.5),
            KernelFamily::RationalQuadratic { alpha } => {
                Mixing::Gamma(Gamma::new(alpha, 1.0 / alpha).map_err(|_| CoreError::InvalidParameter {
                    name: "rational quadratic alpha".into(),
                    value: alpha,
                    reason: "must be finite and positive".into(),
                })?)
            }
        })
    }

    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self {
            Mixing::Fixed => 1.0,
            Mixing::StudentT(chi, dof) => (dof / chi.sample(rng).max(f64::MIN_POSITIVE)).sqrt(),
            Mixing::Gamma(g) => g.sample(rng).sqrt(),
        }
    }
}

/// Fills `out` (`N × 2P`) with the features of the `P` frequencies `w` (row-major `P × d`) at the
/// inputs `x` (`N × d`, column-major), scaled by `1/√m_total`: column `p` holds `cos(ω_pᵀx)/√M`,
/// column `P + p` holds `sin(ω_pᵀx)/√M`. Groups of [`PROJECTION_GROUP`] frequencies are computed in
/// parallel (deterministically). `P < M` fills a block of columns of a larger feature matrix
/// (BaNK's sweep).
pub fn fill_features(x: &Mat, w: &[f64], m_total: usize, out: &mut Mat) {
    let (n, d) = (x.nrows(), x.ncols());
    let p = w.len() / d.max(1);
    debug_assert_eq!(out.nrows(), n);
    debug_assert_eq!(out.ncols(), 2 * p);
    let scale = 1.0 / (m_total as f64).sqrt();
    let inputs = PackedInputs::new(x);
    let (cos_part, sin_part) = out.as_mut_slice().split_at_mut(n * p);
    let group = PROJECTION_GROUP * n.max(1);
    cos_part.par_chunks_mut(group).zip(sin_part.par_chunks_mut(group)).enumerate().for_each(
        |(g, (cc, sc))| {
            let first = g * PROJECTION_GROUP;
            let count = cc.len() / n.max(1);
            inputs.project(&w[first * d..(first + count) * d], cc);
            for (cq, sq) in cc.chunks_mut(n.max(1)).zip(sc.chunks_mut(n.max(1))) {
                crate::simd::sin_cos_scaled(cq, sq, scale);
            }
        },
    );
}

/// Frequencies whose projections [`PackedInputs::project`] computes together.
const PROJECTION_GROUP: usize = 4;
/// Rows per register block of [`PackedInputs::project`].
const PROJECTION_ROWS: usize = 8;

/// The inputs `X` (`N × d`) in blocks of [`PROJECTION_ROWS`] rows, each block's `d` columns
/// contiguous (`R d` values), so a block's projections read one contiguous run; the `N mod R` last
/// rows stay as columns.
struct PackedInputs<'a> {
    x: &'a Mat,
    blocks: Vec<f64>,
}

impl<'a> PackedInputs<'a> {
    fn new(x: &'a Mat) -> Self {
        const R: usize = PROJECTION_ROWS;
        let (n, d) = (x.nrows(), x.ncols());
        let mut blocks = Vec::with_capacity((n - n % R) * d);
        for start in (0..n - n % R).step_by(R) {
            for k in 0..d {
                blocks.extend_from_slice(&x.col(k)[start..start + R]);
            }
        }
        PackedInputs { x, blocks }
    }

    /// `out` column `j` (`N` values each) ← `X ω_j` for the (at most [`PROJECTION_GROUP`])
    /// frequencies `w` (row-major). Each block of rows keeps all the group's sums in registers over
    /// the `d` inputs, so the inputs are read once per group instead of once per frequency; every
    /// sum still runs `((0 + ω_0 x_0) + ω_1 x_1) + …` in input order, so the result does not depend
    /// on the grouping.
    fn project(&self, w: &[f64], out: &mut [f64]) {
        const R: usize = PROJECTION_ROWS;
        const G: usize = PROJECTION_GROUP;
        let (n, d) = (self.x.nrows(), self.x.ncols());
        let count = out.len().checked_div(n).unwrap_or(0);
        debug_assert!(count <= G && w.len() == count * d);
        // input-major weights, a missing frequency of the last group as zeros (its sums are dropped)
        let mut weights = vec![[0.0; G]; d];
        for (k, wk) in weights.iter_mut().enumerate() {
            for j in 0..count {
                wk[j] = w[j * d + k];
            }
        }
        if d > 0 {
            for (b, block) in self.blocks.chunks_exact(R * d).enumerate() {
                let mut acc = [[0.0; R]; G];
                for (xk, wk) in block.chunks_exact(R).zip(&weights) {
                    for j in 0..G {
                        for r in 0..R {
                            acc[j][r] += wk[j] * xk[r];
                        }
                    }
                }
                for (j, a) in acc.iter().enumerate().take(count) {
                    out[j * n + b * R..j * n + (b + 1) * R].copy_from_slice(a);
                }
            }
        }
        let full = self.blocks.len().checked_div(d).unwrap_or(0);
        for j in 0..count {
            for i in full..n {
                out[j * n + i] = (0..d).fold(0.0, |t, k| t + weights[k][j] * self.x.col(k)[i]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The grouped, register-blocked features equal, bit for bit, one frequency at a time with one
    /// running sum per row (`N` not a multiple of the row block, `P` not of the group).
    #[test]
    fn grouped_features_equal_the_plain_loop_bitwise() {
        let (d, m_total) = (7, 11);
        for (n, p) in [(1, 1), (19, 5), (64, 4), (203, 9)] {
            let x = Mat::from_fn(n, d, |i, k| ((i * 7 + k * 3) as f64 * 0.37).sin() * 2.0);
            let w: Vec<f64> = (0..p * d).map(|t| ((t * 5) as f64 * 0.61).cos()).collect();
            let mut out = Mat::zeros(n, 2 * p);
            fill_features(&x, &w, m_total, &mut out);
            let scale = 1.0 / (m_total as f64).sqrt();
            for q in 0..p {
                let mut c: Vec<f64> = (0..n)
                    .map(|i| {
                        let mut t = 0.0;
                        for k in 0..d {
                            t += w[q * d + k] * x[(i, k)];
                        }
                        t
                    })
                    .collect();
                let mut s = vec![0.0; n];
                crate::simd::sin_cos_scaled(&mut c, &mut s, scale);
                for i in 0..n {
                    assert_eq!(out[(i, q)].to_bits(), c[i].to_bits(), "cos n={n} p={p} ({i}, {q})");
                    assert_eq!(out[(i, p + q)].to_bits(), s[i].to_bits(), "sin n={n} p={p} ({i}, {q})");
                }
            }
        }
    }

    /// With many frequencies `φ(x)ᵀφ(y)` matches every kernel family within Monte Carlo error
    /// (sd ≤ 1/√(2M) for the cos/sin pair form; tolerance 5 sd).
    #[test]
    fn features_approximate_every_kernel() {
        let m = 20_000;
        let tol = 5.0 / (2.0 * m as f64).sqrt();
        let pairs = [([0.0, 0.0], [0.4, -0.3]), ([1.0, 0.5], [0.2, 1.7]), ([0.0, 0.0], [2.5, 0.0])];
        for family in [
            KernelFamily::SquaredExponential,
            KernelFamily::Laplace,
            KernelFamily::Matern32,
            KernelFamily::Matern52,
            KernelFamily::RationalQuadratic { alpha: 0.8 },
        ] {
            for ls in [vec![0.9], vec![0.7, 1.6]] {
                let k = Kernel::new(family, ls).unwrap();
                let mut rng = ChaCha8Rng::seed_from_u64(3);
                let f = FourierFeatures::sample(&k, 2, m, &mut rng).unwrap();
                for (x, y) in &pairs {
                    let (exact, approx) = (k.eval(x, y), f.kernel(x, y));
                    assert!((exact - approx).abs() < tol, "{}: {exact} vs {approx}", family.name());
                }
            }
        }
    }

    #[test]
    fn feature_matrix_gives_the_approximate_kernel() {
        let k = Kernel::se(1.3).unwrap();
        let f = FourierFeatures::sample(&k, 1, 50, &mut ChaCha8Rng::seed_from_u64(1)).unwrap();
        let x = Points::from_1d("x", &[0.0, 0.7, -1.1]).unwrap();
        let phi = f.features(&x).unwrap();
        assert_eq!((phi.nrows(), phi.ncols()), (3, 100));
        for i in 0..3 {
            for j in 0..3 {
                let g: f64 = (0..100).map(|c| phi[(i, c)] * phi[(j, c)]).sum();
                assert!((g - f.kernel(x.point(i), x.point(j))).abs() < 1e-12);
            }
        }
        assert!(FourierFeatures::new(vec![1.0, f64::NAN], 1).is_err());
        assert!(FourierFeatures::new(vec![1.0, 2.0, 3.0], 2).is_err());
        assert!(f.features(&Points::from_rows("q", &[vec![0.0, 1.0]]).unwrap()).is_err());
    }
}
