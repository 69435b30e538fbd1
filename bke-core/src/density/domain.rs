//! The normalisation box of the kernel student-t density (`density::normalise` module docs).

use crate::{CoreError, Points};

/// A box `Π_d [lower_d, upper_d]`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Domain {
    /// Lower corner.
    pub lower: Vec<f64>,
    /// Upper corner.
    pub upper: Vec<f64>,
}

impl Domain {
    /// A box; errors unless the corners are finite, of equal length ≥ 1, and `lower < upper`.
    pub fn new(lower: Vec<f64>, upper: Vec<f64>) -> Result<Self, CoreError> {
        if lower.is_empty() || lower.len() != upper.len() {
            return Err(CoreError::DimensionMismatch {
                what: "domain upper corner".into(),
                expected: lower.len().max(1),
                found: upper.len(),
            });
        }
        for (d, (&a, &b)) in lower.iter().zip(&upper).enumerate() {
            if !(a.is_finite() && b.is_finite() && a < b) {
                return Err(CoreError::InvalidParameter {
                    name: format!("domain interval of dimension {d} (lower bound)"),
                    value: a,
                    reason: format!("need finite lower < upper, got [{a}, {b}]"),
                });
            }
        }
        Ok(Self { lower, upper })
    }

    /// The bounding box of `x` widened by `margin × range` on each side (a zero range counts as 1).
    pub fn around(x: &Points, margin: f64) -> Result<Self, CoreError> {
        x.check_len("data for the domain", 1)?;
        if !(margin.is_finite() && margin >= 0.0) {
            return Err(CoreError::InvalidParameter {
                name: "margin".into(),
                value: margin,
                reason: "must be finite and non-negative".into(),
            });
        }
        let d = x.dim();
        let (mut lo, mut hi) = (vec![f64::INFINITY; d], vec![f64::NEG_INFINITY; d]);
        for p in x.iter() {
            for k in 0..d {
                lo[k] = lo[k].min(p[k]);
                hi[k] = hi[k].max(p[k]);
            }
        }
        for k in 0..d {
            let range = if hi[k] > lo[k] { hi[k] - lo[k] } else { 1.0 };
            lo[k] -= margin * range;
            hi[k] += margin * range;
            if hi[k] <= lo[k] {
                hi[k] = lo[k] + 1.0;
            }
        }
        Self::new(lo, hi)
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.lower.len()
    }

    /// Whether `p` lies in the closed box.
    pub fn contains(&self, p: &[f64]) -> bool {
        p.iter().zip(self.lower.iter().zip(&self.upper)).all(|(&v, (&a, &b))| v >= a && v <= b)
    }

    /// `log` of the volume.
    pub fn log_volume(&self) -> f64 {
        self.lower.iter().zip(&self.upper).map(|(a, b)| (b - a).ln()).sum()
    }
}
