use super::*;
use crate::estimator::{Dataset, Params};
use crate::gp::GpParams;
use bke_linalg::DefaultBackend as D;
use rand_distr::Uniform;

/// `n` rows of `(x, y, z)`: `x = sin 2z + e₁`, `y = z² + e₂ (+ c x)`, uniform noise; CI for `c = 0`.
fn data(n: usize, c: f64, seed: u64) -> (Vec<f64>, Vec<f64>, Points) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let u = Uniform::new(-1.0, 1.0).unwrap();
    let (mut x, mut y, mut z) = (vec![], vec![], vec![]);
    for _ in 0..n {
        let zi: f64 = 1.5 * u.sample(&mut rng);
        let xi = (2.0 * zi).sin() + 0.4 * u.sample(&mut rng);
        y.push(zi * zi + c * xi + 0.4 * u.sample(&mut rng));
        x.push(xi);
        z.push(zi);
    }
    (x, y, Points::from_1d("z", &z).unwrap())
}

fn z_kernel(v: &[f64], z: &Points) -> ZKernel {
    let gp =
        GpParams::default().check().unwrap().fit::<D>(&Dataset::new(z.clone(), v.to_vec()).unwrap()).unwrap();
    ZKernel::learn::<D>(gp.kernel(), z, v, &[WeightedKernel::gaussian(0.6)], 0).unwrap()
}

fn mix() -> Vec<WeightedKernel> {
    vec![
        WeightedKernel { weight: 0.7, ..WeightedKernel::gaussian(0.5) },
        WeightedKernel { weight: 0.3, ..WeightedKernel::gaussian(2.0) },
    ]
}

/// `V Λ^{1/2}` of a PSD matrix: an exact factor.
fn factor(k: &Mat) -> Mat {
    let e = D::sym_eigen(k.as_ref()).unwrap();
    Mat::from_fn(k.nrows(), k.ncols(), |i, j| e.vectors[(i, j)] * e.values[j].max(0.0).sqrt())
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn features_with_exact_factors_equal_the_dense_test() {
    let (x, y, z) = data(50, 0.5, 1);
    let (zx, zy) = (z_kernel(&x, &z), z_kernel(&y, &z));
    let ks = mix();
    let sx = Side { values: &x, kernels: &ks, z: Some(&zx) };
    let sy = Side { values: &y, kernels: &ks, z: Some(&zy) };
    let n = x.len();
    let kx = hadamard(&Mat::from_fn(n, n, |i, j| mixture(&ks, x[i], x[j])), &z_gram(&z, &xz_factor(&z)));
    let ky = Mat::from_fn(n, n, |i, j| mixture(&ks, y[i], y[j]));
    let a = conditioned_features::<D>(&factor(&kx), Some((&factor(&z_gram(&z, &zx)), zx.ridge))).unwrap();
    let b = conditioned_features::<D>(&factor(&ky), Some((&factor(&z_gram(&z, &zy)), zy.ridge))).unwrap();
    // the residual kernel of the features is the dense one
    let dense = conditioned::<D>(&kx, &z, Some(&zx)).unwrap();
    let mut aat = Mat::zeros(n, n);
    D::gemm(1.0, a.as_ref(), Trans::No, a.as_ref(), Trans::Yes, 0.0, aat.as_mut()).unwrap();
    for (u, v) in aat.as_slice().iter().zip(dense.as_slice()) {
        assert!((u - v).abs() < 1e-8 * dense.norm_fro(), "{u} vs {v}");
    }
    for null in [KciNull::Gamma, KciNull::Spectral] {
        let p = KciParams { null, ..Default::default() };
        let (d, f) = (kci::<D>(sx, sy, &z, &p, 7).unwrap(), kci_of_features::<D>(&a, &b, &p, 7).unwrap());
        assert!(close(d.statistic, f.statistic, 1e-8), "{d:?} vs {f:?}");
        assert!((d.p_value - f.p_value).abs() < 0.01, "{null:?}: {d:?} vs {f:?}");
    }
}

#[test]
fn without_z_the_statistic_is_n_times_hsic() {
    let (x, y, z) = data(40, 1.0, 2);
    let ks = [WeightedKernel::gaussian(0.8)];
    let out = kci::<D>(
        Side { values: &x, kernels: &ks, z: None },
        Side { values: &y, kernels: &ks, z: None },
        &z,
        &KciParams::default(),
        0,
    )
    .unwrap();
    let n = x.len();
    let g = |v: &[f64]| centre(&Mat::from_fn(n, n, |i, j| ks[0].eval(&[v[i]], &[v[j]])));
    let (k, l) = (g(&x), g(&y));
    let hsic_b = k.as_slice().iter().zip(l.as_slice()).map(|(a, b)| a * b).sum::<f64>() / (n * n) as f64;
    assert!(close(out.statistic, n as f64 * hsic_b, 1e-10));
    assert!(out.p_value < 0.01, "y depends on x: {out:?}");
}

/// The spectral null's draws have the mean `Tr S`; the gamma law matches it in the bulk.
#[test]
fn gamma_and_spectral_nulls_agree() {
    let (x, y, z) = data(80, 0.0, 3);
    let (zx, zy) = (z_kernel(&x, &z), z_kernel(&y, &z));
    let ks = mix();
    let sx = Side { values: &x, kernels: &ks, z: Some(&zx) };
    let sy = Side { values: &y, kernels: &ks, z: Some(&zy) };
    let g = kci::<D>(sx, sy, &z, &KciParams::default(), 1).unwrap();
    let s = kci::<D>(sx, sy, &z, &KciParams { null: KciNull::Spectral, ..Default::default() }, 1).unwrap();
    assert_eq!(g.statistic, s.statistic);
    assert!((g.p_value - s.p_value).abs() < 0.05, "gamma {} vs spectral {}", g.p_value, s.p_value);
}

/// Under CI (z drives both) few rejections; with `y` depending on `x` given `z`, nearly all; KCI and
/// RCIT on the same data and learned kernels on `Z`.
#[test]
fn level_and_power_on_a_nonlinear_problem() {
    let ks = [WeightedKernel::gaussian(0.6)];
    let run = |c: f64, seed: u64| {
        let (x, y, z) = data(120, c, seed);
        let (zx, zy) = (z_kernel(&x, &z), z_kernel(&y, &z));
        let sx = Side { values: &x, kernels: &ks, z: Some(&zx) };
        let sy = Side { values: &y, kernels: &ks, z: Some(&zy) };
        let p = KciParams::default();
        [kci::<D>(sx, sy, &z, &p, seed), rcit::<D>(sx, sy, &z, &p, seed)].map(|o| o.unwrap().p_value < 0.05)
    };
    let count = |c: f64, reps: u64, base: u64| {
        (0..reps)
            .map(|s| run(c, base + s))
            .fold([0, 0], |acc, r| [acc[0] + r[0] as usize, acc[1] + r[1] as usize])
    };
    // 30 reps at α = 0.05: mean 1.5, sd 1.2
    let (false_rejections, detections) = (count(0.0, 30, 100), count(1.0, 10, 200));
    for (k, name) in ["kci", "rcit"].iter().enumerate() {
        assert!(false_rejections[k] <= 5, "{name}: {} of 30 rejected under CI", false_rejections[k]);
        assert!(detections[k] >= 9, "{name}: {} of 10 detected", detections[k]);
    }
}

/// Where `X` does not depend on `Z`, ML-II may give the regression a lengthscale far below the
/// spacing of `Z` (white noise, `K_Z ≈ I`): the regression is then a multiple of `I`, harmless, and
/// the `Z` factor of `K_Ẍ` must not be that kernel (it would make `K_Ẍ ≈ I` and the test blind).
#[test]
fn a_white_noise_regression_on_z_keeps_the_power() {
    let (_, _, z) = data(150, 0.0, 6);
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let u = Uniform::new(-1.0, 1.0).unwrap();
    let x: Vec<f64> = (0..150).map(|_| u.sample(&mut rng)).collect();
    let y: Vec<f64> = z.iter().zip(&x).map(|(p, xi)| p[0] * p[0] + xi + 0.4 * u.sample(&mut rng)).collect();
    let white = ZKernel { lengthscales: vec![1e-4], ridge: 10.0 };
    let zy = z_kernel(&y, &z);
    let ks = [WeightedKernel::gaussian(0.6)];
    let sx = Side { values: &x, kernels: &ks, z: Some(&white) };
    let sy = Side { values: &y, kernels: &ks, z: Some(&zy) };
    let p = KciParams::default();
    for out in [kci::<D>(sx, sy, &z, &p, 1), rcit::<D>(sx, sy, &z, &p, 1)] {
        let out = out.unwrap();
        assert!(out.p_value < 1e-3, "y depends on x given z: {out:?}");
    }
}

/// The `Z` factor of `K_Ẍ` is the widened median heuristic in each column's units: on one column
/// `2 ×` its median distance; rescaling a column rescales its lengthscale only; a discrete `Z`
/// (most pairs equal) still gets a finite, positive kernel.
#[test]
fn the_xz_factor_is_the_widened_median_heuristic_per_column() {
    let (x, _, z) = data(80, 0.0, 7);
    let one = xz_factor(&z).lengthscales[0];
    assert!(close(one, XZ_WIDENING * median_distance(&z).unwrap(), 1e-12), "{one}");
    let two = |scale: f64| {
        let rows: Vec<f64> = z.iter().zip(&x).flat_map(|(p, xi)| [p[0], scale * xi]).collect();
        xz_factor(&Points::new("z", rows, 2).unwrap()).lengthscales
    };
    let (a, b) = (two(1.0), two(1000.0));
    assert!(close(a[0], b[0], 1e-9) && close(1000.0 * a[1], b[1], 1e-9), "{a:?} vs {b:?}");
    let discrete = Points::new("z", (0..80).map(|i| f64::from(u8::from(i % 10 == 0))).collect(), 1).unwrap();
    let l = xz_factor(&discrete).lengthscales[0];
    assert!(l.is_finite() && l > 0.0, "{l}");
}

/// With many random features RCIT's statistic approaches KCI's.
#[test]
fn rcit_approaches_kci_with_many_features() {
    let (x, y, z) = data(100, 0.7, 4);
    let (zx, zy) = (z_kernel(&x, &z), z_kernel(&y, &z));
    let ks = mix();
    let sx = Side { values: &x, kernels: &ks, z: Some(&zx) };
    let sy = Side { values: &y, kernels: &ks, z: Some(&zy) };
    let exact = kci::<D>(sx, sy, &z, &KciParams::default(), 0).unwrap();
    let p = KciParams { features: 1500, ..Default::default() };
    let approx = rcit::<D>(sx, sy, &z, &p, 0).unwrap();
    assert!(close(exact.statistic, approx.statistic, 0.15), "{exact:?} vs {approx:?}");
}

#[test]
fn the_median_rule_is_the_median_distance_and_a_fixed_ridge() {
    let (_, _, z) = data(60, 0.0, 9);
    let zs: Vec<f64> = z.iter().map(|p| p[0]).collect();
    let mut d: Vec<f64> =
        (0..60).flat_map(|i| (i + 1..60).map(move |j| (i, j))).map(|(i, j)| (zs[i] - zs[j]).abs()).collect();
    d.sort_by(f64::total_cmp);
    let oracle = 0.5 * (d[d.len() / 2 - 1] + d[d.len() / 2]);
    let zk = ZKernel::median(&z).unwrap();
    assert!(close(zk.lengthscales[0], oracle, 1e-12) && zk.ridge == MEDIAN_RIDGE, "{zk:?} vs {oracle}");
    assert_eq!(ZRule::parse(ZRule::Median.name()).unwrap(), ZRule::Median);
    assert!(ZRule::parse("gp").unwrap_err().to_string().contains("learned or median"));
}

#[test]
fn bad_settings_are_errors() {
    assert!(KciNull::parse("chi2").unwrap_err().to_string().contains("gamma or spectral"));
    assert!(KciParams { draws: 3, ..Default::default() }.validate().is_err());
    assert!(KciParams { features: 0, ..Default::default() }.validate().is_err());
}

#[test]
fn pivoted_cholesky_reproduces_the_z_kernel() {
    let (_, _, z) = data(70, 0.0, 5);
    let zk = ZKernel { lengthscales: vec![0.4], ridge: 0.1 };
    let psi = pivoted_cholesky(&z, &zk, 200);
    let k = z_gram(&z, &zk);
    let mut approx = Mat::zeros(70, 70);
    D::gemm(1.0, psi.as_ref(), Trans::No, psi.as_ref(), Trans::Yes, 0.0, approx.as_mut()).unwrap();
    let err = k.as_slice().iter().zip(approx.as_slice()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(err < 1e-5, "largest error {err}");
    assert!(psi.ncols() < 40, "a smooth kernel on one dimension has a low rank: {}", psi.ncols());
    // a capped rank stops early
    assert_eq!(pivoted_cholesky(&z, &zk, 5).ncols(), 5);
}
