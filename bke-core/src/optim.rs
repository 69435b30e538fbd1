//! A small limited-memory BFGS minimiser (Nocedal & Wright, Alg. 7.4/7.5) with a backtracking
//! Armijo line search, used for hyperparameter learning on the log scale (BKE ML-II in
//! [`crate::embedding`], TTGP and LFI learning in bke-dme).
//!
//! Failed evaluations (the objective returns `None`, e.g. a matrix that is not positive definite at
//! extreme hyperparameters) are treated as `+∞`: the line search backtracks away from them. Steps
//! are capped at `max_step` in the ∞-norm so log-hyperparameters cannot jump to overflow.

use crate::numeric::dot;

/// Options of [`minimize`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LbfgsOptions {
    /// Number of stored correction pairs. Default 10.
    pub memory: usize,
    /// Maximum number of iterations. Default 200.
    pub max_iter: usize,
    /// Stop when `‖∇f‖∞ ≤ grad_tol`. Default `1e-5`.
    pub grad_tol: f64,
    /// Stop when the decrease of `f` over an iteration is below `f_tol · max(1, |f|)`. Default `1e-10`.
    pub f_tol: f64,
    /// Largest change of any coordinate in one iteration. Default 2.
    pub max_step: f64,
}

impl Default for LbfgsOptions {
    fn default() -> Self {
        Self { memory: 10, max_iter: 200, grad_tol: 1e-5, f_tol: 1e-10, max_step: 2.0 }
    }
}

/// The result of [`minimize`].
#[derive(Debug, Clone, PartialEq)]
pub struct LbfgsResult {
    /// The minimiser found.
    pub x: Vec<f64>,
    /// `f(x)`.
    pub f: f64,
    /// `‖∇f(x)‖∞`.
    pub grad_norm: f64,
    /// Iterations taken.
    pub iterations: usize,
    /// Objective evaluations.
    pub evaluations: usize,
    /// Whether a tolerance (rather than the iteration limit or a failed line search) stopped it.
    pub converged: bool,
}

fn inf_norm(a: &[f64]) -> f64 {
    a.iter().fold(0.0, |m, v| m.max(v.abs()))
}

/// Minimises `f` from `x0`. `f(x)` returns `(value, gradient)` or `None` where it cannot be
/// evaluated. Errors if `f(x0)` cannot be evaluated or is not finite.
pub fn minimize(
    mut f: impl FnMut(&[f64]) -> Option<(f64, Vec<f64>)>,
    x0: Vec<f64>,
    opts: LbfgsOptions,
) -> Result<LbfgsResult, String> {
    let mut evals = 1;
    let finite =
        |r: Option<(f64, Vec<f64>)>| r.filter(|(v, g)| v.is_finite() && g.iter().all(|x| x.is_finite()));
    let (mut fx, mut g) = finite(f(&x0))
        .ok_or_else(|| "the objective cannot be evaluated at the starting point".to_string())?;
    let mut x = x0;
    let n = x.len();
    let mut s_hist: Vec<Vec<f64>> = Vec::new();
    let mut y_hist: Vec<Vec<f64>> = Vec::new();
    let mut converged = false;
    let mut iter = 0;
    while iter < opts.max_iter {
        if inf_norm(&g) <= opts.grad_tol {
            converged = true;
            break;
        }
        iter += 1;
        // Two-loop recursion: d = −H g.
        let mut q = g.clone();
        let k = s_hist.len();
        let mut alphas = vec![0.0; k];
        for i in (0..k).rev() {
            let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
            alphas[i] = rho * dot(&s_hist[i], &q);
            q.iter_mut().zip(&y_hist[i]).for_each(|(qv, yv)| *qv -= alphas[i] * yv);
        }
        let gamma = if k > 0 {
            dot(&s_hist[k - 1], &y_hist[k - 1]) / dot(&y_hist[k - 1], &y_hist[k - 1])
        } else {
            1.0
        };
        q.iter_mut().for_each(|v| *v *= gamma);
        for i in 0..k {
            let rho = 1.0 / dot(&y_hist[i], &s_hist[i]);
            let beta = rho * dot(&y_hist[i], &q);
            q.iter_mut().zip(&s_hist[i]).for_each(|(qv, sv)| *qv += (alphas[i] - beta) * sv);
        }
        let mut d: Vec<f64> = q.iter().map(|v| -v).collect();
        let mut slope = dot(&d, &g);
        if !(slope < 0.0) {
            // Not a descent direction: restart from steepest descent.
            s_hist.clear();
            y_hist.clear();
            d = g.iter().map(|v| -v).collect();
            slope = dot(&d, &g);
        }
        let dn = inf_norm(&d);
        let mut t = if dn > opts.max_step { opts.max_step / dn } else { 1.0 };
        if k == 0 {
            t = t.min(1.0 / inf_norm(&g).max(1.0));
        }
        let mut accepted = None;
        for _ in 0..60 {
            let xn: Vec<f64> = x.iter().zip(&d).map(|(a, b)| a + t * b).collect();
            evals += 1;
            if let Some((fnew, gnew)) = finite(f(&xn))
                && fnew <= fx + 1e-4 * t * slope
            {
                accepted = Some((xn, fnew, gnew));
                break;
            }
            t *= 0.5;
        }
        let Some((xn, fnew, gnew)) = accepted else {
            break;
        };
        let s: Vec<f64> = xn.iter().zip(&x).map(|(a, b)| a - b).collect();
        let yv: Vec<f64> = gnew.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &yv);
        if sy > 1e-12 * dot(&s, &s).sqrt() * dot(&yv, &yv).sqrt() && sy > 0.0 {
            if s_hist.len() == opts.memory.max(1) {
                s_hist.remove(0);
                y_hist.remove(0);
            }
            s_hist.push(s);
            y_hist.push(yv);
        }
        let decrease = fx - fnew;
        x = xn;
        fx = fnew;
        g = gnew;
        if decrease <= opts.f_tol * fx.abs().max(1.0) {
            converged = true;
            break;
        }
    }
    debug_assert_eq!(x.len(), n);
    Ok(LbfgsResult { grad_norm: inf_norm(&g), x, f: fx, iterations: iter, evaluations: evals, converged })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimises_rosenbrock() {
        let f = |x: &[f64]| {
            let (a, b) = (x[0], x[1]);
            let v = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
            let g = vec![-2.0 * (1.0 - a) - 400.0 * a * (b - a * a), 200.0 * (b - a * a)];
            Some((v, g))
        };
        let opts = LbfgsOptions { max_iter: 500, grad_tol: 1e-8, f_tol: 0.0, ..Default::default() };
        let r = minimize(f, vec![-1.2, 1.0], opts).unwrap();
        assert!((r.x[0] - 1.0).abs() < 1e-5 && (r.x[1] - 1.0).abs() < 1e-5, "{r:?}");
        assert!(r.converged);
    }

    #[test]
    fn backtracks_from_failed_evaluations() {
        // f = (x − 3)² but undefined for x > 4: the first long step fails and must be shortened.
        let f = |x: &[f64]| {
            if x[0] > 4.0 { None } else { Some(((x[0] - 3.0).powi(2), vec![2.0 * (x[0] - 3.0)])) }
        };
        let opts = LbfgsOptions { max_step: 10.0, ..Default::default() };
        let r = minimize(f, vec![-5.0], opts).unwrap();
        assert!((r.x[0] - 3.0).abs() < 1e-4, "{r:?}");
        assert!(minimize(|_| None, vec![0.0], opts).is_err());
    }
}
