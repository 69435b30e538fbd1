//! The data of a task-transformed regression problem (seed 004 §5.2): transformation pairs
//! `{x_i, y_i}_{i=1}^n` (samples of `P_{X|Y}`) and task pairs `{ỹ_j, z̃_j}_{j=1}^m` (observations
//! of the conditional mean `g(y) = E[f(X) | Y = y]`). The DME, the TTGP, the parametric DME and
//! the TTBLR are all fitted to it.

use crate::DmeError;
use crate::error::{check_finite_vec, check_same_len};
use bke_core::Points;

/// Transformation pairs `(x_i, y_i)` and task pairs `(ỹ_j, z̃_j)`, validated on construction.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskData {
    /// Inputs `x` (n points in X).
    pub x: Points,
    /// Mediating inputs `y` paired with `x` (n points in Y).
    pub y: Points,
    /// Task inputs `ỹ` (m points in Y).
    pub y_tilde: Points,
    /// Task targets `z̃` (m values).
    pub z_tilde: Vec<f64>,
}

impl TaskData {
    /// Validates lengths (`|x| = |y|`, `|ỹ| = |z̃|`), dimensions (`dim y = dim ỹ`), emptiness and
    /// finiteness of `z̃` (the points are finite by construction).
    pub fn new(x: Points, y: Points, y_tilde: Points, z_tilde: Vec<f64>) -> Result<Self, DmeError> {
        x.check_len("x", 1)?;
        y_tilde.check_len("ỹ", 1)?;
        check_same_len("x", x.len(), "y", y.len())?;
        check_same_len("ỹ", y_tilde.len(), "z̃", z_tilde.len())?;
        y.check_dim("ỹ (must match y)", y_tilde.dim())?;
        check_finite_vec("z̃", &z_tilde)?;
        Ok(Self { x, y, y_tilde, z_tilde })
    }

    /// `n`, the number of transformation pairs.
    pub fn n(&self) -> usize {
        self.x.len()
    }

    /// `m`, the number of task pairs.
    pub fn m(&self) -> usize {
        self.y_tilde.len()
    }
}
