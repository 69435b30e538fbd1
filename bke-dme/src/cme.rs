//! Empirical conditional mean embeddings (seed Def. 3.3, Thm 3.3, eq. 3.4).
//!
//! `Ĉ_{X|Y} = Φ (L + nλI)⁻¹ Ψᵀ`, so with `w(y) = (L + nλI)⁻¹ ℓ(y)` (`ℓ(y) = {ℓ(y_i, y)}_i`):
//! * the CME `μ̂_{X|Y=y} = Σ_i w_i(y) k(x_i, ·)`;
//! * the conditional mean estimate `E[f(X) | Y = y] ≈ fᵀ w(y)` with `f = {f(x_i)}_i`.

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{mm, mv};
use crate::ttgp::transform;
use bke_core::{Kernel, Points, check_positive};
use bke_linalg::{Backend, Mat, Trans};

/// An empirical CME of `P_{X|Y}` from joint samples `{x_i, y_i}`.
#[derive(Debug, Clone)]
pub struct Cme {
    x: Points,
    y: Points,
    kernel_x: Kernel,
    kernel_y: Kernel,
    lambda: f64,
    factor: Mat,
}

impl Cme {
    /// Builds the CME: factorises `L + nλI` (`O(n³)`). Errors on mismatched lengths, dimension
    /// mismatches and non-positive `λ`.
    pub fn new<B: Backend>(
        x: Points,
        y: Points,
        kernel_x: Kernel,
        kernel_y: Kernel,
        lambda: f64,
    ) -> Result<Self, DmeError> {
        x.check_len("x", 1)?;
        check_same_len("x", x.len(), "y", y.len())?;
        check_positive("lambda", lambda)?;
        kernel_x.check_dim(x.dim())?;
        kernel_y.check_dim(y.dim())?;
        let l = kernel_y.gram(&y)?;
        let (factor, _) = transform::<B>(&l, &Mat::zeros(y.len(), 0), lambda)?;
        Ok(Self { x, y, kernel_x, kernel_y, lambda, factor })
    }

    /// The regulariser `λ`.
    pub fn lambda(&self) -> f64 {
        self.lambda
    }

    /// `W = (L + nλI)⁻¹ ℓ(y, at)`, one column of weights per query `y*` (`n × q`).
    pub fn weights<B: Backend>(&self, at: &Points) -> Result<Mat, DmeError> {
        let mut w = self.kernel_y.cross_gram(&self.y, at)?;
        B::cholesky_solve_in_place(self.factor.as_ref(), w.as_mut())?;
        Ok(w)
    }

    /// `E[f(X) | Y = y*] ≈ fᵀ (L + nλI)⁻¹ ℓ(y*)` for the values `f_values = {f(x_i)}`.
    pub fn conditional_mean<B: Backend>(&self, f_values: &[f64], at: &Points) -> Result<Vec<f64>, DmeError> {
        check_same_len("f values", f_values.len(), "x", self.x.len())?;
        check_finite_vec("f values", f_values)?;
        let w = self.weights::<B>(at)?;
        mv::<B>(&w, Trans::Yes, f_values)
    }

    /// The embeddings `μ̂_{X|Y=y*}(x')` for every query `y*` (rows) and point `x'` (columns).
    pub fn embedding<B: Backend>(&self, at_y: &Points, at_x: &Points) -> Result<Mat, DmeError> {
        let w = self.weights::<B>(at_y)?;
        let k = self.kernel_x.cross_gram(&self.x, at_x)?;
        mm::<B>(&w, Trans::Yes, &k, Trans::No)
    }
}
