//! Oracles for the Jacobian term (`jacobian.rs`): Cauchy–Binet in log space for `½ log det G` on
//! every path, and central finite differences of the whole objective for the robust path's gradient.

use super::jacobian::{JacScratch, binary_exponent, ldexp, log_volume, log_volume_raw, robust};
use super::tests::random_points;
use super::*;
use bke_linalg::DefaultBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `det A` by Gaussian elimination with partial pivoting (rows of `a`).
fn lu_determinant(mut a: Vec<Vec<f64>>) -> f64 {
    let n = a.len();
    let mut det = 1.0;
    for k in 0..n {
        let p = (k..n).max_by(|&i, &j| a[i][k].abs().total_cmp(&a[j][k].abs())).unwrap();
        if a[p][k] == 0.0 {
            return 0.0;
        }
        if p != k {
            a.swap(p, k);
            det = -det;
        }
        det *= a[k][k];
        for i in k + 1..n {
            let f = a[i][k] / a[k][k];
            for j in k..n {
                a[i][j] -= f * a[k][j];
            }
        }
    }
    det
}

/// `½ log det G` by Cauchy–Binet: `det G = Σ_{S ⊂ rows, |S| = D} det(W_S)²`, every term positive, summed
/// in log space: exact where one landmark dominates or all weights underflow. (Determinants by
/// formula for `D ≤ 3`, by elimination above.)
fn cauchy_binet_half_logdet(x: &[f64], z: &Points, ls: &[f64]) -> f64 {
    let (m, dim) = (z.len(), x.len());
    let rows: Vec<(f64, Vec<f64>)> = (0..m)
        .map(|l| {
            let u: Vec<f64> = (0..dim).map(|d| (x[d] - z.point(l)[d]) / ls[d]).collect();
            let lw = -0.5 * u.iter().map(|t| t * t).sum::<f64>();
            (lw, u)
        })
        .collect();
    let mut terms = vec![];
    let det = |s: &[usize]| -> f64 {
        let r = |i: usize, j: usize| rows[s[i]].1[j];
        match dim {
            1 => r(0, 0),
            2 => r(0, 0) * r(1, 1) - r(0, 1) * r(1, 0),
            3 => {
                r(0, 0) * (r(1, 1) * r(2, 2) - r(1, 2) * r(2, 1))
                    - r(0, 1) * (r(1, 0) * r(2, 2) - r(1, 2) * r(2, 0))
                    + r(0, 2) * (r(1, 0) * r(2, 1) - r(1, 1) * r(2, 0))
            }
            _ => lu_determinant((0..dim).map(|i| rows[s[i]].1.clone()).collect()),
        }
    };
    let mut s = vec![0usize; dim];
    fn rec(start: usize, depth: usize, m: usize, s: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
        if depth == s.len() {
            f(s);
            return;
        }
        for i in start..m {
            s[depth] = i;
            rec(i + 1, depth + 1, m, s, f);
        }
    }
    rec(0, 0, m, &mut s, &mut |sel: &[usize]| {
        let d = det(sel);
        if d != 0.0 {
            let lw: f64 = sel.iter().map(|&i| rows[i].0).sum();
            terms.push(2.0 * (lw + d.abs().ln()));
        }
    });
    let mx = terms.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    0.5 * (mx + terms.iter().map(|t| (t - mx).exp()).sum::<f64>().ln())
}

fn features(x: &[f64], z: &Points, ls: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (m, dim) = (z.len(), x.len());
    let mut u = vec![0.0; m * dim];
    let mut q = vec![0.0; m];
    for l in 0..m {
        for d in 0..dim {
            let t = (x[d] - z.point(l)[d]) / ls[d];
            u[d * m + l] = t;
            q[l] += t * t;
        }
    }
    let k = q.iter().map(|v| (-0.5 * v).exp()).collect();
    (u, q, k)
}

#[test]
fn jacobian_is_finite_and_exact_for_tiny_lengthscales_and_dominant_landmarks() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut scratch = JacScratch::default();
    for dim in 1..=3 {
        let z = random_points(&mut rng, 7, dim, 2.0);
        for &theta in &[1.0, 0.3, 0.05, 0.01, 1e-3] {
            for _ in 0..5 {
                let x: Vec<f64> = (0..dim).map(|_| 2.0 * (rng.random::<f64>() * 2.0 - 1.0)).collect();
                let ls = vec![theta; dim];
                let (u, q, k) = features(&x, &z, &ls);
                let want = cauchy_binet_half_logdet(&x, &z, &ls);
                let got = log_volume(&u, &q, &k, z.len(), dim, None, &mut scratch);
                assert!(got.is_finite(), "D={dim} θ={theta}: {got}");
                assert!(
                    (got - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "D={dim} θ={theta}: {got} vs {want}"
                );
                let rob = robust(&u, &q, z.len(), dim, None, &mut scratch);
                assert!(
                    (rob - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "robust D={dim} θ={theta}: {rob} vs {want}"
                );
            }
        }
    }
    // A point sitting on a landmark (zero row of maximal weight) and one landmark dominating.
    let z = Points::from_rows("z", &[vec![0.0, 0.0], vec![0.3, 0.1], vec![-0.2, 0.5]]).unwrap();
    for theta in [0.5, 0.05, 0.005] {
        for x in [[0.0, 0.0], [0.29, 0.1]] {
            let ls = [theta, theta];
            let (u, q, k) = features(&x, &z, &ls);
            let want = cauchy_binet_half_logdet(&x, &z, &ls);
            let got = log_volume(&u, &q, &k, 3, 2, None, &mut scratch);
            assert!((got - want).abs() <= 1e-9 * want.abs().max(1.0), "θ={theta} x={x:?}: {got} vs {want}");
        }
    }
    // Exactly rank-deficient: all landmarks on a line through x in 2-D.
    let z = Points::from_rows("z", &[vec![1.0, 1.0], vec![2.0, 2.0], vec![-1.0, -1.0]]).unwrap();
    let (u, q, k) = features(&[0.0, 0.0], &z, &[1.0, 1.0]);
    assert_eq!(log_volume(&u, &q, &k, 3, 2, None, &mut scratch), f64::NEG_INFINITY);
}

/// The robust path's leverage gradient equals the fast path's where both apply, and finite
/// differences of the whole objective at tiny lengthscales (one landmark dominating: the robust path).
#[test]
fn robust_path_gradient() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut scratch = JacScratch::default();
    for dim in 1..=3 {
        let z = random_points(&mut rng, 6, dim, 1.0);
        let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>() - 0.5).collect();
        let ls: Vec<f64> = (0..dim).map(|d| 0.7 + 0.2 * d as f64).collect();
        let (u, q, k) = features(&x, &z, &ls);
        let (mut g1, mut g2) = (vec![0.0; dim], vec![0.0; dim]);
        let a = log_volume(&u, &q, &k, 6, dim, Some(&mut g1), &mut scratch);
        let b = robust(&u, &q, 6, dim, Some(&mut g2), &mut scratch);
        assert!((a - b).abs() < 1e-12 * a.abs().max(1.0));
        for d in 0..dim {
            assert!((g1[d] - g2[d]).abs() < 1e-10 * g1[d].abs().max(1.0), "{g1:?} vs {g2:?}");
        }
    }
    // whole objective at θ ≈ 0.02 on spread-out data, in 2 and 5 dimensions: one landmark
    // dominates at every point (robust path, elimination steps and full rotations)
    let h: f64 = 1e-5;
    let cases =
        [(2, vec![0.02]), (2, vec![0.02, 0.03]), (5, vec![0.02]), (5, vec![0.02, 0.025, 0.03, 0.02, 0.035])];
    for (dim, ls) in cases {
        let x = random_points(&mut rng, 20, dim, 3.0);
        let z = random_points(&mut rng, 8, dim, 3.0);
        let p = BkeParams::new(ls.clone(), 1.0);
        let ml = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap();
        assert!(ml.log_marginal.is_finite());
        for i in 0..ls.len() {
            let (mut pp, mut pm) = (p.clone(), p.clone());
            pp.lengthscales[i] *= h.exp();
            pm.lengthscales[i] *= (-h).exp();
            let f =
                |q: &BkeParams| marginal_pseudolikelihood::<DefaultBackend>(&x, &z, q).unwrap().log_marginal;
            let fd = (f(&pp) - f(&pm)) / (2.0 * h);
            let g = ml.grad_log_lengthscale[i];
            assert!((fd - g).abs() <= 1e-6 * g.abs().max(1.0), "θ{i}: {fd} vs {g}");
        }
    }
}

/// Every weight underflows (`k_l = e^{−q_l/2}`, `q ≈ 2500`) but several are comparable — the case
/// of lengthscales below the nearest-landmark distance in high dimensions: the fast path takes
/// the weights from their logarithms, matching Cauchy–Binet and the robust path's gradient.
#[test]
fn underflowing_comparable_weights_take_the_fast_path() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut scratch = JacScratch::default();
    for dim in 1..=3 {
        let rows: Vec<Vec<f64>> = (0..7)
            .map(|_| {
                let dir: Vec<f64> = (0..dim).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                let radius =
                    (1.0 + 1e-3 * rng.random::<f64>()) / dir.iter().map(|v| v * v).sum::<f64>().sqrt();
                dir.iter().map(|v| v * radius).collect()
            })
            .collect();
        let z = Points::from_rows("z", &rows).unwrap();
        let (x, ls) = (vec![0.0; dim], vec![0.02; dim]);
        let (u, q, k) = features(&x, &z, &ls);
        assert!(k.iter().all(|&v| v == 0.0));
        let mut grad = vec![0.0; dim];
        let (got, fast) = log_volume_raw(&u, &q, &k, 7, dim, false, &mut grad, &mut scratch);
        let want = cauchy_binet_half_logdet(&x, &z, &ls);
        assert!(fast, "D={dim}: the fast path");
        assert!((got - want).abs() <= 1e-9 * want.abs(), "D={dim}: {got} vs {want}");
        let (mut g1, mut g2) = (vec![0.0; dim], vec![0.0; dim]);
        log_volume(&u, &q, &k, 7, dim, Some(&mut g1), &mut scratch);
        robust(&u, &q, 7, dim, Some(&mut g2), &mut scratch);
        for d in 0..dim {
            assert!((g1[d] - g2[d]).abs() < 1e-9 * g2[d].abs().max(1.0), "D={dim}: {g1:?} vs {g2:?}");
        }
    }
}

/// The robust path against Cauchy–Binet in 3 and 6 dimensions, with weights spread over thousands
/// of nats (θ = 0.005 on points a unit apart: most rotations are single elimination steps) down to
/// comparable ones (θ = 0.5: full rotations). At θ = 0.005, once `R` has full rank the path stops at
/// the first row whose remainder is bounded below `1e-16` (`½ Σ_rest ‖R⁻ᵀw_l‖² ≤ ½ D · #rest · e^{2a}
/// ‖R⁻¹‖²_F`).
#[test]
fn robust_path_matches_cauchy_binet_and_stops_at_negligible_rows() {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let mut scratch = JacScratch::default();
    for (m, dim) in [(16, 3), (12, 6)] {
        for theta in [0.005, 0.05, 0.5] {
            for _ in 0..3 {
                let z = random_points(&mut rng, m, dim, 1.0);
                let x: Vec<f64> = (0..dim).map(|_| rng.random::<f64>() * 2.0 - 1.0).collect();
                let ls = vec![theta; dim];
                let (u, q, _) = features(&x, &z, &ls);
                let mut grad = vec![0.0; dim];
                let got = robust(&u, &q, m, dim, Some(&mut grad), &mut scratch);
                let want = cauchy_binet_half_logdet(&x, &z, &ls);
                assert!(
                    (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                    "D={dim} θ={theta}: {got} vs {want}"
                );
                assert!(grad.iter().all(|g| g.is_finite()));
                let used = scratch.robust_rows_used();
                assert!(theta > 0.01 || (dim..m).contains(&used), "D={dim}: {used} rows of {m}");
            }
        }
    }
}

/// The robust path's binary scales: `⌊log₂ |x|⌋` for normal and subnormal numbers (`−∞` at 0), and
/// exact multiplication by powers of two across the whole range.
#[test]
fn binary_scales_are_exact() {
    let min_subnormal = f64::from_bits(1);
    for (x, e) in [
        (1.0, 0.0),
        (1.5, 0.0),
        (-0.75, -1.0),
        (3e-310, -1029.0),
        (min_subnormal, -1074.0),
        (f64::MAX, 1023.0),
    ] {
        assert_eq!(binary_exponent(x), e, "{x:e}");
    }
    assert_eq!(binary_exponent(0.0), f64::NEG_INFINITY);
    assert_eq!(ldexp(1.0, -1074.0), min_subnormal);
    assert_eq!(ldexp(0.75, 2000.0), f64::INFINITY);
    assert_eq!(ldexp(ldexp(1.25, -1020.0), 1020.0), 1.25);
    assert_eq!(ldexp(3.0, f64::NEG_INFINITY), 0.0);
}
