//! Oracles of the RBF SVC: the analytic two-point solution, the KKT conditions of the dual (a
//! certificate of optimality for a convex QP) recomputed in `f64`, Platt's stationarity, a fit.

use super::*;
use bke_core::Params;
use bke_linalg::DefaultBackend as B;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

/// Two noisy concentric rings (class 1 the outer one), `n` rows.
fn rings(n: usize, seed: u64) -> (Mat, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let y: Vec<f64> = (0..n).map(|i| (i % 2) as f64).collect();
    let mut x = Mat::zeros(n, 2);
    for i in 0..n {
        let angle = rng.random::<f64>() * std::f64::consts::TAU;
        let radius = 1.0 + y[i] + 0.25 * rng.sample::<f64, _>(StandardNormal);
        x[(i, 0)] = radius * angle.cos();
        x[(i, 1)] = radius * angle.sin();
    }
    (x, y)
}

fn kernel(x: &Mat, length: f64) -> (KernelMatrix, Mat) {
    let n = x.nrows();
    let d2 = Mat::from_fn(n, n, |i, j| (0..x.ncols()).map(|k| (x[(i, k)] - x[(j, k)]).powi(2)).sum());
    let dense = Mat::from_fn(n, n, |i, j| (-d2[(i, j)] / (2.0 * length * length)).exp());
    let f32s: Vec<f32> = d2.as_slice().iter().map(|&v| v as f32).collect();
    let rows: Vec<usize> = (0..n).collect();
    (KernelMatrix::gaussian(&f32s, n, &rows, length), dense)
}

/// Two points `x = ∓1` with signs `∓1`: `α₁ = α₂ = 1/(1 − k₁₂)` (capped at `C`), `ρ = 0`.
#[test]
fn two_points_have_the_analytic_solution() {
    let x = Mat::from_fn(2, 1, |i, _| if i == 0 { -1.0 } else { 1.0 });
    let (k, _) = kernel(&x, 1.0);
    let k12 = (-2.0f64).exp();
    for c in [100.0, 0.5] {
        let dual = solve_dual(&k, &[-1.0, 1.0], c, 1e-9, 1000);
        let want = (1.0 / (1.0 - k12)).min(c);
        assert!(dual.converged);
        for a in &dual.alpha {
            assert!((a - want).abs() < 1e-6 * want, "C = {c}: {a} vs {want}");
        }
        assert!(dual.rho.abs() < 1e-6, "{}", dual.rho);
    }
}

/// Feasibility and the KKT conditions with margins `s_t f(x_t)` recomputed from the `f64` kernel:
/// `α = 0 ⇒ ≥ 1`, `α = C ⇒ ≤ 1`, free `⇒ = 1`, all to the solver's tolerance.
#[test]
fn the_solution_satisfies_the_kkt_conditions() {
    let (x, y) = rings(120, 3);
    let s: Vec<f64> = y.iter().map(|v| 2.0 * v - 1.0).collect();
    let (k, dense) = kernel(&x, 0.7);
    for c in [0.1, 1.0, 100.0] {
        let dual = solve_dual(&k, &s, c, 1e-3, 1_000_000);
        assert!(dual.converged, "C = {c}");
        let balance: f64 = dual.alpha.iter().zip(&s).map(|(a, s)| a * s).sum();
        assert!(balance.abs() < 1e-9 * c * 120.0, "C = {c}: sᵀα = {balance}");
        let mut free = 0;
        for t in 0..120 {
            let a = dual.alpha[t];
            assert!((0.0..=c).contains(&a));
            let f: f64 = (0..120).map(|u| dual.alpha[u] * s[u] * dense[(u, t)]).sum::<f64>() - dual.rho;
            let margin = s[t] * f;
            let slack = 2e-3 + 1e-5 * c;
            if a == 0.0 {
                assert!(margin >= 1.0 - slack, "C = {c}, row {t}: α = 0, margin {margin}");
            } else if a == c {
                assert!(margin <= 1.0 + slack, "C = {c}, row {t}: α = C, margin {margin}");
            } else {
                free += 1;
                assert!((margin - 1.0).abs() <= slack, "C = {c}, row {t}: free, margin {margin}");
            }
        }
        assert!(free > 0, "C = {c}: no free support vector");
    }
}

/// Platt's fit is a stationary point of the target cross-entropy, and no nearby point is lower.
#[test]
fn platt_is_the_minimum_of_the_target_cross_entropy() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let f: Vec<f64> = (0..200).map(|_| 2.0 * rng.sample::<f64, _>(StandardNormal)).collect();
    let y: Vec<f64> =
        f.iter().map(|fi| if rng.random::<f64>() < sigmoid(1.7 * fi - 0.4) { 1.0 } else { 0.0 }).collect();
    let (a, b) = platt(&f, &y);
    assert!((a - 1.7).abs() < 0.6 && (b + 0.4).abs() < 0.5, "A = {a}, B = {b}");
    let pos = y.iter().sum::<f64>();
    let neg = 200.0 - pos;
    let t: Vec<f64> =
        y.iter().map(|&v| if v > 0.5 { (pos + 1.0) / (pos + 2.0) } else { 1.0 / (neg + 2.0) }).collect();
    let loss = |a: f64, b: f64| -> f64 {
        f.iter().zip(&t).map(|(fi, ti)| softplus(a * fi + b) - ti * (a * fi + b)).sum()
    };
    let at = loss(a, b);
    for (da, db) in [(1e-3, 0.0), (-1e-3, 0.0), (0.0, 1e-3), (0.0, -1e-3), (1e-3, 1e-3)] {
        assert!(loss(a + da, b + db) >= at - 1e-9, "({da}, {db})");
    }
}

#[test]
fn stratified_folds_partition_the_rows_and_balance_the_classes() {
    let y: Vec<f64> = (0..31).map(|i| if i < 10 { 1.0 } else { 0.0 }).collect();
    let folds = stratified_folds(&y, 3, 1);
    let mut all: Vec<usize> = folds.concat();
    all.sort_unstable();
    assert_eq!(all, (0..31).collect::<Vec<_>>());
    for f in &folds {
        let pos = f.iter().filter(|&&i| y[i] == 1.0).count();
        assert!((3..=4).contains(&pos), "{pos} positives in a fold");
    }
}

/// On rings the tuned SVC classifies new draws, its probabilities are Platt's sigmoid of the
/// decision function, and the decision function is the dual's expansion.
#[test]
fn fit_classifies_rings_with_platt_probabilities() {
    let (x, y) = rings(300, 1);
    let data = Dataset::new(Points::from_mat("x", &x).unwrap(), y).unwrap();
    let model = SvcParams::default().check().unwrap().fit::<B>(&data).unwrap();
    assert!(model.converged && model.inner_error < 0.1, "inner error {}", model.inner_error);
    assert!(model.platt.0 > 0.0, "Platt A = {}", model.platt.0);
    let (xt, yt) = rings(400, 2);
    let pts = Points::from_mat("x", &xt).unwrap();
    let p = model.predict::<B>(&pts).unwrap().mean;
    let errors = p.iter().zip(&yt).filter(|(p, y)| (**p > 0.5) != (**y > 0.5)).count();
    assert!(errors < 40, "{errors} of 400 held-out errors");
    let f = model.decision::<B>(&pts).unwrap();
    let z = model.inputs.apply(&pts);
    for i in 0..5 {
        let dense: f64 = (0..model.support.nrows())
            .map(|a| {
                let d2: f64 = (0..2).map(|c| (z[(i, c)] - model.support[(a, c)]).powi(2)).sum();
                model.coefficients[a] * (-d2 / (2.0 * model.length * model.length)).exp()
            })
            .sum::<f64>()
            - model.rho;
        assert!((f[i] - dense).abs() < 1e-9 * (1.0 + dense.abs()));
        assert!((p[i] - sigmoid(model.platt.0 * f[i] + model.platt.1)).abs() < 1e-12);
    }
    let e = model.predict::<B>(&Points::from_1d("z", &[0.0]).unwrap()).unwrap_err();
    assert!(e.to_string().contains("columns"), "{e}");
}

#[test]
fn too_few_rows_of_a_class_and_bad_grids_are_refused() {
    let x = Points::from_1d("x", &[0.0, 1.0, 2.0, 3.0, 4.0]).unwrap();
    let data = Dataset::new(x, vec![0.0, 0.0, 0.0, 1.0, 1.0]).unwrap();
    let e = SvcParams::default().check().unwrap().fit::<B>(&data).unwrap_err();
    assert!(e.to_string().contains("smaller class"), "{e}");
    assert!(SvcParams { costs: vec![], ..Default::default() }.check().is_err());
    assert!(SvcParams { inner_folds: 1, ..Default::default() }.check().is_err());
    assert!(SvcParams { length_factors: vec![-1.0], ..Default::default() }.check().is_err());
}
