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
/// column `P + p` holds `sin(ω_pᵀx)/√M`. Columns are computed in parallel (deterministically).
/// `P < M` fills a block of columns of a larger feature matrix (BaNK's sweep).
pub fn fill_features(x: &Mat, w: &[f64], m_total: usize, out: &mut Mat) {
    let (n, d) = (x.nrows(), x.ncols());
    let p = w.len() / d.max(1);
    debug_assert_eq!(out.nrows(), n);
    debug_assert_eq!(out.ncols(), 2 * p);
    let scale = 1.0 / (m_total as f64).sqrt();
    let (cos_part, sin_part) = out.as_mut_slice().split_at_mut(n * p);
    cos_part.par_chunks_mut(n.max(1)).zip(sin_part.par_chunks_mut(n.max(1))).enumerate().for_each(
        |(q, (cc, sc))| {
            let wq = &w[q * d..(q + 1) * d];
            cc.fill(0.0);
            for (k, &wk) in wq.iter().enumerate() {
                for (t, &xv) in cc.iter_mut().zip(x.col(k)) {
                    *t += wk * xv;
                }
            }
            crate::simd::sin_cos_scaled(cc, sc, scale);
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

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
