//! Anderson acceleration of the chord iteration in the weight posterior's mode search
//! ([`crate::logistic::weight_laplace`]).
//!
//! With a fixed Hessian factor `H₀` (the chord), the mode search iterates `b ← b + r(b)` with the
//! preconditioned gradient `r(b) = H₀⁻¹ g(b)`. Near the mode that is a linear iteration whose error
//! shrinks by the spectral radius of `I − H₀⁻¹H(b̂)` per step — slow when the Hessian has moved since
//! `H₀` was formed. Anderson's method (type II, Walker & Ni 2011) keeps the last few differences
//! `Δb_i`, `Δr_i` and extrapolates
//! `b⁺ = b + r − Σ_i γ_i (Δb_i + Δr_i)`, `γ = argmin_γ ‖r − Σ_i γ_i Δr_i‖²_{H₀}`.
//! The norm is `H₀`'s, whose Gram matrix needs no product with `H₀`: `H₀ r = g`, so
//! `Δr_iᵀH₀Δr_j = Δr_iᵀΔg_j` and `Δr_iᵀH₀ r = Δr_iᵀ g` (`‖r‖²_{H₀} = rᵀg` is the Newton decrement
//! the search already computes). On a quadratic objective this is a Krylov method (GMRES in the
//! `H₀` inner product) with restarts every [`MEMORY`] steps.
//!
//! The extrapolation is a candidate only: the search evaluates it and keeps it when it lowers the
//! decrement (and does not lower the objective outside round-off), else forgets the differences and
//! takes the plain chord step. Deterministic, so the search's result is a function of its inputs.

use crate::small::{dot, lu_solve_logdet};
use std::collections::VecDeque;

/// Differences kept (the restart length of the Krylov view).
pub(crate) const MEMORY: usize = 5;

/// A point of the iteration: `b`, `r = H₀⁻¹g` and `g`.
#[derive(Debug, Clone)]
struct Point {
    b: Vec<f64>,
    r: Vec<f64>,
    g: Vec<f64>,
}

/// The last point and the differences `(Δb, Δr, Δg)` between the last [`MEMORY`] + 1 points.
#[derive(Debug, Default)]
pub(crate) struct Anderson {
    last: Option<Point>,
    differences: VecDeque<Point>,
}

impl Anderson {
    /// Drops everything (a new `H₀`: the old residuals are in another metric).
    pub(crate) fn reset(&mut self) {
        self.last = None;
        self.differences.clear();
    }

    /// Drops the differences, keeping the last point (after a rejected candidate).
    pub(crate) fn forget(&mut self) {
        self.differences.clear();
    }

    /// Records the point `(b, r, g)` and returns the extrapolated candidate, or `None` without
    /// differences or where their Gram matrix is numerically singular.
    pub(crate) fn candidate(&mut self, b: &[f64], r: &[f64], g: &[f64]) -> Option<Vec<f64>> {
        let now = Point { b: b.to_vec(), r: r.to_vec(), g: g.to_vec() };
        if let Some(last) = self.last.replace(now) {
            let minus = |a: &[f64], c: &[f64]| a.iter().zip(c).map(|(x, y)| x - y).collect();
            let d = Point { b: minus(b, &last.b), r: minus(r, &last.r), g: minus(g, &last.g) };
            if self.differences.len() == MEMORY {
                self.differences.pop_front();
            }
            self.differences.push_back(d);
        }
        let k = self.differences.len();
        if k == 0 {
            return None;
        }
        let mut gram = vec![0.0; k * k];
        for (i, di) in self.differences.iter().enumerate() {
            for (j, dj) in self.differences.iter().enumerate() {
                // symmetrised: Δr_iᵀΔg_j = Δr_iᵀH₀Δr_j up to round-off
                gram[i * k + j] = 0.5 * (dot(&di.r, &dj.g) + dot(&dj.r, &di.g));
            }
        }
        let ridge = 1e-12 * (0..k).map(|i| gram[i * k + i]).fold(0.0, f64::max);
        for i in 0..k {
            gram[i * k + i] += ridge;
        }
        let mut gamma: Vec<f64> = self.differences.iter().map(|d| dot(&d.r, g)).collect();
        lu_solve_logdet(&mut gram, k, &mut gamma)?;
        if !gamma.iter().all(|v| v.is_finite()) {
            return None;
        }
        let mut next: Vec<f64> = b.iter().zip(r).map(|(x, y)| x + y).collect();
        for (d, gi) in self.differences.iter().zip(&gamma) {
            for ((v, db), dr) in next.iter_mut().zip(&d.b).zip(&d.r) {
                *v -= gi * (db + dr);
            }
        }
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a quadratic `½ bᵀAb − cᵀb` with a poor preconditioner `H₀ = diag(A)`, the accelerated
    /// iteration reaches the solution `A⁻¹c` (to 1e-10) in at most `dim + 1` steps — a Krylov method
    /// in exact arithmetic — where the plain chord iteration `b ← b + H₀⁻¹(c − Ab)` is still far.
    #[test]
    fn accelerated_chord_solves_a_quadratic_in_dimension_many_steps() {
        let n = 4;
        let a = [4.0, 1.0, 0.5, 0.2, 1.0, 3.0, 0.8, 0.1, 0.5, 0.8, 2.0, 0.9, 0.2, 0.1, 0.9, 1.5];
        let c = [1.0, -2.0, 0.5, 3.0];
        let gradient =
            |b: &[f64]| -> Vec<f64> { (0..n).map(|i| c[i] - dot(&a[i * n..(i + 1) * n], b)).collect() };
        let precondition = |g: &[f64]| -> Vec<f64> { (0..n).map(|i| g[i] / a[i * n + i]).collect() };
        let mut exact = c.to_vec();
        let mut lu = a.to_vec();
        lu_solve_logdet(&mut lu, n, &mut exact).unwrap();
        let error = |b: &[f64]| b.iter().zip(&exact).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);

        let mut anderson = Anderson::default();
        let mut b = vec![0.0; n];
        for _ in 0..=n {
            let g = gradient(&b);
            let r = precondition(&g);
            b = anderson
                .candidate(&b, &r, &g)
                .unwrap_or_else(|| b.iter().zip(&r).map(|(x, y)| x + y).collect());
        }
        assert!(error(&b) < 1e-10, "accelerated error {}", error(&b));

        let mut plain = vec![0.0; n];
        for _ in 0..=n {
            let r = precondition(&gradient(&plain));
            plain.iter_mut().zip(&r).for_each(|(x, y)| *x += y);
        }
        assert!(error(&plain) > 1e-3, "plain error {}", error(&plain));

        anderson.reset();
        assert!(anderson.candidate(&b, &[0.0; 4], &[0.0; 4]).is_none());
    }
}
