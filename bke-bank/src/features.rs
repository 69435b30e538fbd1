//! Random Fourier features (seed 001 eq. (3)) and input standardisation.
//!
//! `φ(x) = M^{-1/2} [cos(ω₁ᵀx), …, cos(ω_Mᵀx), sin(ω₁ᵀx), …, sin(ω_Mᵀx)]ᵀ`, so that
//! `φ(x)ᵀφ(y) = M⁻¹ Σ_j cos(ω_jᵀ(x − y))` approximates `k(x − y) = E_ω cos(ωᵀ(x − y))` (Bochner).
//! The feature matrix `Φ` (`N × 2M`, column-major) has the cosines of frequency `j` in column `j` and the
//! sines in column `M + j`; it is filled by [`bke_core::rff::fill_features`].

use crate::error::BankError;
pub use bke_core::rff::fill_features;
use bke_core::{Dataset, Points};
use bke_linalg::Mat;
use serde::{Deserialize, Serialize};

/// The full feature matrix `Φ` (`N × 2M`) of the frequencies `w` (row-major `M × d`).
pub fn feature_matrix(x: &Mat, w: &[f64]) -> Mat {
    let m = w.len() / x.ncols().max(1);
    let mut phi = Mat::zeros(x.nrows(), 2 * m);
    fill_features(x, w, m, &mut phi);
    phi
}

/// Per-column affine standardisation `x ↦ (x − shift)/scale` (a column with zero spread keeps scale 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    /// Column means.
    pub shift: Vec<f64>,
    /// Column standard deviations (1 where a column is constant).
    pub scale: Vec<f64>,
}

impl Standardizer {
    /// Means and standard deviations of the columns of `x`.
    pub fn fit(x: &Points) -> Self {
        let (n, d) = (x.len(), x.dim());
        let mut shift = vec![0.0; d];
        for p in x.iter() {
            for k in 0..d {
                shift[k] += p[k] / n as f64;
            }
        }
        let mut scale = vec![0.0; d];
        for p in x.iter() {
            for k in 0..d {
                scale[k] += (p[k] - shift[k]).powi(2) / n as f64;
            }
        }
        for s in &mut scale {
            *s = if *s > 0.0 { s.sqrt() } else { 1.0 };
        }
        Self { shift, scale }
    }

    /// The identity transformation in `d` dimensions.
    pub fn identity(d: usize) -> Self {
        Self { shift: vec![0.0; d], scale: vec![1.0; d] }
    }

    /// The standardised inputs as a column-major `N × d` matrix.
    pub fn apply(&self, x: &Points) -> Mat {
        Mat::from_fn(x.len(), x.dim(), |i, k| (x.point(i)[k] - self.shift[k]) / self.scale[k])
    }
}

/// The training data of a regression baseline on the standardised scale: at most `max_rows` evenly
/// spaced rows (a subset of data when there are more), inputs and target standardised.
#[derive(Debug, Clone)]
pub(crate) struct StandardisedRows {
    /// The input standardisation (fitted on the kept rows).
    pub inputs: Standardizer,
    /// The standardised inputs (`n × d`).
    pub x: Mat,
    /// Target mean and standard deviation.
    pub y_moments: (f64, f64),
    /// The standardised target.
    pub y: Vec<f64>,
}

/// [`StandardisedRows`] of `data`; errors with fewer than two rows (`what` names the method).
pub(crate) fn standardised_rows(
    data: &Dataset,
    max_rows: usize,
    what: &str,
) -> Result<StandardisedRows, BankError> {
    let n0 = data.len();
    if n0 < 2 {
        return Err(BankError::TooFewRows { what: what.into(), needed: 2, found: n0 });
    }
    let rows: Vec<usize> =
        if n0 > max_rows { (0..max_rows).map(|k| k * n0 / max_rows).collect() } else { (0..n0).collect() };
    let data = data.select(&rows);
    let inputs = Standardizer::fit(data.x());
    let x = inputs.apply(data.x());
    let (mean, scale) = target_moments(data.y());
    let y = data.y().iter().map(|v| (v - mean) / scale).collect();
    Ok(StandardisedRows { inputs, x, y_moments: (mean, scale), y })
}

/// Mean and standard deviation of a target vector (standard deviation 1 if it is constant).
pub fn target_moments(y: &[f64]) -> (f64, f64) {
    let n = y.len().max(1) as f64;
    let mean = y.iter().sum::<f64>() / n;
    let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, if var > 0.0 { var.sqrt() } else { 1.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_match_definition_and_approximate_the_kernel() {
        let x = Mat::from_rows(&[vec![0.3, -1.0], vec![1.5, 0.2], vec![-0.7, 0.4]]).unwrap();
        let w = vec![1.0, 2.0, -0.5, 0.25, 0.0, 3.0];
        let phi = feature_matrix(&x, &w);
        assert_eq!((phi.nrows(), phi.ncols()), (3, 6));
        for i in 0..3 {
            for j in 0..3 {
                let t = w[2 * j] * x[(i, 0)] + w[2 * j + 1] * x[(i, 1)];
                assert!((phi[(i, j)] - t.cos() / 3f64.sqrt()).abs() < 1e-15);
                assert!((phi[(i, 3 + j)] - t.sin() / 3f64.sqrt()).abs() < 1e-15);
            }
        }
        // φ(x)ᵀφ(y) = M⁻¹ Σ cos(ωᵀ(x − y)).
        let dot: f64 = (0..6).map(|c| phi[(0, c)] * phi[(1, c)]).sum();
        let k: f64 = (0..3)
            .map(|j| (w[2 * j] * (x[(0, 0)] - x[(1, 0)]) + w[2 * j + 1] * (x[(0, 1)] - x[(1, 1)])).cos())
            .sum::<f64>()
            / 3.0;
        assert!((dot - k).abs() < 1e-14);
    }
}
