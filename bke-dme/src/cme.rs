//! Empirical conditional mean embeddings (seed 004 Def. 3.3, Thm 3.3, eq. (3.4)).
//!
//! `Ĉ_{X|Y} = Φ (L + nλI)⁻¹ Ψᵀ`, so with `w(y) = (L + nλI)⁻¹ ℓ(y)` (`ℓ(y) = {ℓ(y_i, y)}_i`):
//! * the CME `μ̂_{X|Y=y} = Σ_i w_i(y) k(x_i, ·)`;
//! * the conditional mean estimate `E[f(X) | Y = y] ≈ fᵀ w(y)` with `f = {f(x_i)}_i`.
//!
//! ```
//! use bke_core::{Kernel, Params, Points, TwoSamples};
//! use bke_dme::cme::CmeParams;
//! use bke_linalg::DefaultBackend;
//! let y: Vec<f64> = (0..30).map(|i| -3.0 + 0.2 * i as f64).collect();
//! let x: Vec<f64> = y.iter().map(|v| v.sin()).collect();
//! let pairs = TwoSamples { x: Points::from_1d("x", &x)?, y: Points::from_1d("y", &y)? };
//! let cme = CmeParams::default().check()?.fit::<DefaultBackend>(&pairs)?;
//! // E[X² | Y = 1] = sin(1)².
//! let f: Vec<f64> = x.iter().map(|v| v * v).collect();
//! let e = cme.conditional_mean::<DefaultBackend>(&f, &Points::from_1d("y*", &[1.0])?)?;
//! assert!((e[0] - 1f64.sin().powi(2)).abs() < 0.05);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use crate::ops::{mm, mv};
use crate::ttgp::transform;
use bke_core::{Estimator, Kernel, Params, Points, Progress, TwoSamples, Valid, check_positive};
use bke_linalg::{Backend, Mat, Trans};

/// The empirical CME of `P_{X|Y}`: kernels `k` on X and `ℓ` on Y and the regulariser `λ`. Fitted
/// to paired samples `{x_i, y_i}` ([`TwoSamples`] with `x` and `y` paired row by row; their
/// dimensions may differ).
#[derive(Debug, Clone, PartialEq)]
pub struct CmeParams {
    /// Kernel `k` on X. Default: squared exponential, lengthscale 1.
    pub kernel_x: Kernel,
    /// Kernel `ℓ` on Y. Default: squared exponential, lengthscale 1.
    pub kernel_y: Kernel,
    /// Regulariser `λ > 0` of `(L + nλI)⁻¹`. Default `10⁻³`.
    pub lambda: f64,
}

impl Default for CmeParams {
    fn default() -> Self {
        Self {
            kernel_x: Kernel::se(1.0).expect("positive lengthscale"),
            kernel_y: Kernel::se(1.0).expect("positive lengthscale"),
            lambda: 1e-3,
        }
    }
}

impl Params for CmeParams {
    type Error = DmeError;

    fn validate(&self) -> Result<(), DmeError> {
        Ok(check_positive("lambda", self.lambda)?)
    }
}

impl Estimator for CmeParams {
    type Data = TwoSamples;
    type Fitted = Cme;

    /// Factorises `L + nλI` (`O(n³)`).
    fn fit_valid<B: Backend>(
        params: &Valid<Self>,
        data: &TwoSamples,
        _: &dyn Progress,
    ) -> Result<Cme, DmeError> {
        let (x, y) = (&data.x, &data.y);
        x.check_len("x", 1)?;
        check_same_len("x", x.len(), "y", y.len())?;
        params.kernel_x.check_dim(x.dim())?;
        params.kernel_y.check_dim(y.dim())?;
        let l = params.kernel_y.gram(y)?;
        let (factor, _) = transform::<B>(&l, &Mat::zeros(y.len(), 0), params.lambda)?;
        Ok(Cme { x: x.clone(), y: y.clone(), params: (**params).clone(), factor })
    }
}

/// A fitted empirical CME of `P_{X|Y}`.
#[derive(Debug, Clone)]
pub struct Cme {
    x: Points,
    y: Points,
    params: CmeParams,
    factor: Mat,
}

impl Cme {
    /// The hyperparameters.
    pub fn params(&self) -> &CmeParams {
        &self.params
    }

    /// `W = (L + nλI)⁻¹ ℓ(y, at)`, one column of weights per query `y*` (`n × q`).
    pub fn weights<B: Backend>(&self, at: &Points) -> Result<Mat, DmeError> {
        let mut w = self.params.kernel_y.cross_gram(&self.y, at)?;
        B::cholesky_solve_in_place(self.factor.as_ref(), w.as_mut())?;
        Ok(w)
    }

    /// `E[f(X) | Y = y*] ≈ fᵀ (L + nλI)⁻¹ ℓ(y*)` for the values `f_values = {f(x_i)}`.
    pub fn conditional_mean<B: Backend>(&self, f_values: &[f64], at: &Points) -> Result<Vec<f64>, DmeError> {
        check_same_len("x", self.x.len(), "f values", f_values.len())?;
        check_finite_vec("f values", f_values)?;
        let w = self.weights::<B>(at)?;
        mv::<B>(&w, Trans::Yes, f_values)
    }

    /// The embeddings `μ̂_{X|Y=y*}(x')` for every query `y*` (rows) and point `x'` (columns).
    pub fn embedding<B: Backend>(&self, at_y: &Points, at_x: &Points) -> Result<Mat, DmeError> {
        let w = self.weights::<B>(at_y)?;
        let k = self.params.kernel_x.cross_gram(&self.x, at_x)?;
        mm::<B>(&w, Trans::Yes, &k, Trans::No)
    }
}
