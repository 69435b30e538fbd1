//! Kernels of a distance, as the tests use them: a family ([`TestFamily`]: the Gaussian of the squared
//! ℓ₂ distance, the Laplace kernel of the ℓ₁ distance) with a lengthscale and a weight in an aggregate
//! ([`WeightedKernel`]), and Gram matrices of many kernels from one matrix of pairwise distances per
//! family ([`Distances`]).

#[cfg(doc)]
use super::stationary::KernelFamily;
use crate::Points;
use crate::simd::exp_nonpos;
use bke_linalg::Mat;
use rayon::prelude::*;
use serde::Serialize;

/// A kernel family of the tests ([`crate::hypothesis::kernels`] gives the papers' conventions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum TestFamily {
    /// `exp(−‖x − y‖₂²/(2ℓ²))`, written `"se"`.
    #[serde(rename = "se")]
    Gaussian,
    /// `exp(−‖x − y‖₁/ℓ)`, written `"laplace-l1"`.
    #[serde(rename = "laplace-l1")]
    LaplaceL1,
}

impl TestFamily {
    /// The name in outputs: "se" or "laplace-l1".
    pub fn name(self) -> &'static str {
        match self {
            TestFamily::Gaussian => "se",
            TestFamily::LaplaceL1 => "laplace-l1",
        }
    }

    /// `k` at distance `d` (squared ℓ₂ distance for the Gaussian, ℓ₁ distance for the Laplace): the
    /// Gaussian is [`KernelFamily::SquaredExponential`]'s profile `e^{−r²/2}` at `r² = d/ℓ²`. The
    /// exponential is `simd::exp_nonpos` (within 2 ulp of libm's, 0 below `e^{−700}`): branch-free, so
    /// loops of kernel values over distances — Gram matrices, Nyström factors — vectorise.
    #[inline(always)]
    pub fn value(self, d: f64, lengthscale: f64) -> f64 {
        match self {
            TestFamily::Gaussian => exp_nonpos(-0.5 * (d / (lengthscale * lengthscale))),
            TestFamily::LaplaceL1 => exp_nonpos(-(d / lengthscale)),
        }
    }

    /// The distance `value` expects, between two points.
    #[inline]
    pub(crate) fn distance(self, a: &[f64], b: &[f64]) -> f64 {
        match self {
            TestFamily::Gaussian => a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum(),
            TestFamily::LaplaceL1 => a.iter().zip(b).map(|(p, q)| (p - q).abs()).sum(),
        }
    }
}

/// One kernel of a test: its family, lengthscale and weight in the aggregate (1 for a single kernel).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WeightedKernel {
    /// The family.
    pub family: TestFamily,
    /// The lengthscale ℓ (bke's convention, module docs).
    pub lengthscale: f64,
    /// Its weight in the aggregate.
    pub weight: f64,
}

impl WeightedKernel {
    /// A Gaussian kernel of weight 1.
    pub fn gaussian(lengthscale: f64) -> Self {
        Self { family: TestFamily::Gaussian, lengthscale, weight: 1.0 }
    }

    /// `k(a, b)`.
    #[inline]
    pub fn eval(&self, a: &[f64], b: &[f64]) -> f64 {
        self.family.value(self.family.distance(a, b), self.lengthscale)
    }
}

/// The pairwise distances of a point set, computed once per family and reused for every kernel.
#[derive(Debug)]
pub struct Distances<'a> {
    points: &'a Points,
    squared: Option<Mat>,
    l1: Option<Mat>,
}

impl<'a> Distances<'a> {
    /// No distances computed yet.
    pub fn new(points: &'a Points) -> Self {
        Self { points, squared: None, l1: None }
    }

    fn matrix(&mut self, family: TestFamily) -> &Mat {
        let slot = match family {
            TestFamily::Gaussian => &mut self.squared,
            TestFamily::LaplaceL1 => &mut self.l1,
        };
        let points = self.points;
        slot.get_or_insert_with(|| {
            let n = points.len();
            let mut d = Mat::zeros(n, n);
            d.as_mut_slice().par_chunks_mut(n.max(1)).enumerate().for_each(|(j, col)| {
                let b = points.point(j);
                for (i, v) in col.iter_mut().enumerate() {
                    *v = family.distance(points.point(i), b);
                }
            });
            d
        })
    }

    /// The Gram matrix of `kernel` (its weight is ignored).
    pub fn gram(&mut self, kernel: &WeightedKernel) -> Mat {
        let d = self.matrix(kernel.family);
        let mut k = Mat::zeros(d.nrows(), d.ncols());
        k.as_mut_slice().par_chunks_mut(1024).zip(d.as_slice().par_chunks(1024)).for_each(|(kc, dc)| {
            for (kv, dv) in kc.iter_mut().zip(dc) {
                *kv = kernel.family.value(*dv, kernel.lengthscale);
            }
        });
        k
    }
}
