//! Oracles for GP regression: a dense textbook computation (explicit inverse by Gauss–Jordan,
//! determinant by elimination), central finite differences for every gradient, recovery of known
//! hyperparameters (agreement across backends: `bke-bench/tests/backend_suite.rs`).

use super::*;
use bke_linalg::DefaultBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

fn data(n: usize, dim: usize, noise: f64, seed: u64) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut xs = Vec::with_capacity(n * dim);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let p: Vec<f64> = (0..dim)
            .map(|d| {
                let z: f64 = StandardNormal.sample(&mut rng);
                2.0 * z * (1.0 + d as f64)
            })
            .collect();
        let e: f64 = StandardNormal.sample(&mut rng);
        y.push(3.0 + (p[0]).sin() * 2.0 + 0.1 * p.iter().skip(1).sum::<f64>() + noise * e);
        xs.extend(p);
    }
    Dataset::new(Points::new("x", xs, dim).unwrap(), y).unwrap()
}

/// Inverse and log-determinant of a symmetric positive definite matrix by Gauss–Jordan elimination
/// with partial pivoting (no Cholesky: an independent route).
fn dense_inverse_logdet(a: &[Vec<f64>]) -> (Vec<Vec<f64>>, f64) {
    let n = a.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut row = r.clone();
            row.extend((0..n).map(|j| f64::from(u8::from(i == j))));
            row
        })
        .collect();
    let mut logdet = 0.0;
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs())).unwrap();
        m.swap(c, p);
        let piv = m[c][c];
        logdet += piv.abs().ln();
        for v in m[c].iter_mut() {
            *v /= piv;
        }
        for r in 0..n {
            if r != c {
                let f = m[r][c];
                let row_c = m[c].clone();
                for (v, w) in m[r].iter_mut().zip(&row_c) {
                    *v -= f * w;
                }
            }
        }
    }
    (m.into_iter().map(|r| r[n..].to_vec()).collect(), logdet)
}

fn dense_k(x: &Points, k: &GpKernel, noise: bool) -> Vec<Vec<f64>> {
    let ls = k.full_lengthscales(x.dim()).unwrap();
    (0..x.len())
        .map(|i| {
            (0..x.len())
                .map(|j| {
                    let r2: f64 =
                        (0..x.dim()).map(|d| ((x.point(i)[d] - x.point(j)[d]) / ls[d]).powi(2)).sum();
                    k.signal_variance * (-0.5 * r2).exp()
                        + if noise && i == j { k.noise_variance } else { 0.0 }
                })
                .collect()
        })
        .collect()
}

fn kernel(ls: Vec<f64>) -> GpKernel {
    GpKernel { lengthscales: ls, signal_variance: 1.7, noise_variance: 0.3 }
}

#[test]
fn log_marginal_and_prediction_match_dense_oracle() {
    let d = data(25, 2, 0.2, 1);
    for k in [kernel(vec![1.3]), kernel(vec![0.9, 2.5])] {
        let kk = dense_k(d.x(), &k, true);
        let (inv, logdet) = dense_inverse_logdet(&kk);
        let m = d.y().iter().sum::<f64>() / 25.0;
        let yc: Vec<f64> = d.y().iter().map(|v| v - m).collect();
        let alpha: Vec<f64> = inv.iter().map(|r| r.iter().zip(&yc).map(|(a, b)| a * b).sum()).collect();
        let quad: f64 = yc.iter().zip(&alpha).map(|(a, b)| a * b).sum();
        let oracle = -0.5 * quad - 0.5 * logdet - 12.5 * LN_2PI;
        let ev = k.log_marginal::<DefaultBackend>(&d).unwrap();
        assert!((ev.log_marginal - oracle).abs() < 1e-9, "{} vs {oracle}", ev.log_marginal);

        let fitted = GpParams { fixed: Some(k.clone()), ..Default::default() }
            .check()
            .unwrap()
            .fit::<DefaultBackend>(&d)
            .unwrap();
        assert!((fitted.log_marginal() - oracle).abs() < 1e-9);
        // residuals y − K_f α
        let kf = dense_k(d.x(), &k, false);
        for i in 0..25 {
            let fi: f64 = kf[i].iter().zip(&alpha).map(|(a, b)| a * b).sum();
            assert!((fitted.residuals()[i] - (yc[i] - fi)).abs() < 1e-9);
        }
        // predictions at new points: m + k*ᵀK⁻¹y, σ_f² − k*ᵀK⁻¹k*
        let q = Points::new("q", vec![0.1, -0.4, 2.0, 1.0, -3.0, 0.5], 2).unwrap();
        let p = fitted.predict::<DefaultBackend>(&q).unwrap();
        let ls = k.full_lengthscales(2).unwrap();
        for j in 0..3 {
            let ks: Vec<f64> = (0..25)
                .map(|i| {
                    let r2: f64 = (0..2).map(|t| ((d.x().point(i)[t] - q.point(j)[t]) / ls[t]).powi(2)).sum();
                    k.signal_variance * (-0.5 * r2).exp()
                })
                .collect();
            let mean = m + ks.iter().zip(&alpha).map(|(a, b)| a * b).sum::<f64>();
            let kinv_ks: Vec<f64> = inv.iter().map(|r| r.iter().zip(&ks).map(|(a, b)| a * b).sum()).collect();
            let var = k.signal_variance - ks.iter().zip(&kinv_ks).map(|(a, b)| a * b).sum::<f64>();
            assert!((p.mean[j] - mean).abs() < 1e-9, "{} vs {mean}", p.mean[j]);
            assert!((p.variance[j] - var).abs() < 1e-9, "{} vs {var}", p.variance[j]);
        }
    }
}

#[test]
fn gradient_matches_finite_differences() {
    let d = data(20, 3, 0.3, 2);
    for k in [kernel(vec![1.1]), kernel(vec![0.7, 1.9, 4.0])] {
        let ev = k.log_marginal::<DefaultBackend>(&d).unwrap();
        let h: f64 = 1e-5;
        let at = |f: &dyn Fn(&mut GpKernel)| {
            let mut kk = k.clone();
            f(&mut kk);
            kk.log_marginal::<DefaultBackend>(&d).unwrap().log_marginal
        };
        for t in 0..k.lengthscales.len() {
            let up = at(&|kk| kk.lengthscales[t] *= h.exp());
            let dn = at(&|kk| kk.lengthscales[t] *= (-h).exp());
            let fd = (up - dn) / (2.0 * h);
            assert!(
                (fd - ev.grad_log_lengthscales[t]).abs() < 1e-6 * (1.0 + fd.abs()),
                "ℓ{t}: {fd} vs {:?}",
                ev
            );
        }
        let fd_s = (at(&|kk| kk.signal_variance *= h.exp()) - at(&|kk| kk.signal_variance *= (-h).exp()))
            / (2.0 * h);
        assert!((fd_s - ev.grad_log_signal_variance).abs() < 1e-6 * (1.0 + fd_s.abs()));
        let fd_n =
            (at(&|kk| kk.noise_variance *= h.exp()) - at(&|kk| kk.noise_variance *= (-h).exp())) / (2.0 * h);
        assert!((fd_n - ev.grad_log_noise_variance).abs() < 1e-6 * (1.0 + fd_n.abs()));
    }
}

/// ML-II lands on a stationary point of the evidence, beats the starts' hyperparameters, finds the
/// noise level it was given, and makes the irrelevant ARD input long.
#[test]
fn learning_finds_a_stationary_point_and_the_noise() {
    let d = data(120, 2, 0.25, 3);
    let gp = GpParams::default().check().unwrap().fit::<DefaultBackend>(&d).unwrap();
    let k = gp.kernel().clone();
    let ev = k.log_marginal::<DefaultBackend>(&d).unwrap();
    let gmax = ev
        .grad_log_lengthscales
        .iter()
        .chain([&ev.grad_log_signal_variance, &ev.grad_log_noise_variance])
        .fold(0.0f64, |m, g| m.max(g.abs()));
    assert!(gmax < 1e-3, "gradient at the optimum {ev:?}");
    assert!((gp.log_marginal() - ev.log_marginal).abs() < 1e-8);
    assert!((k.noise_variance.sqrt() - 0.25).abs() < 0.08, "noise sd {}", k.noise_variance.sqrt());
    assert!(k.lengthscales[0] < k.lengthscales[1], "{:?}", k.lengthscales);
    // the residuals are about the noise
    let r = gp.residuals();
    let rms = (r.iter().map(|v| v * v).sum::<f64>() / 120.0).sqrt();
    assert!((rms - 0.25).abs() < 0.08, "residual rms {rms}");
    // isotropic fit: one lengthscale
    let iso =
        GpParams { ard: false, ..Default::default() }.check().unwrap().fit::<DefaultBackend>(&d).unwrap();
    assert_eq!(iso.kernel().lengthscales.len(), 1);
    assert!(iso.log_marginal() <= gp.log_marginal() + 1e-6);
}

#[test]
fn bad_settings_and_data_are_reported() {
    assert!(GpParams { starts: 0, ..Default::default() }.check().is_err());
    assert!(GpParams { min_noise: 1.0, ..Default::default() }.check().is_err());
    let bad = GpKernel { lengthscales: vec![-1.0], signal_variance: 1.0, noise_variance: 1.0 };
    assert!(GpParams { fixed: Some(bad), ..Default::default() }.check().is_err());
    let one = Dataset::new(Points::from_1d("x", &[1.0]).unwrap(), vec![2.0]).unwrap();
    assert!(GpParams::default().check().unwrap().fit::<DefaultBackend>(&one).is_err());
    let d = data(10, 2, 0.1, 5);
    let wrong = GpKernel { lengthscales: vec![1.0, 1.0, 1.0], signal_variance: 1.0, noise_variance: 0.1 };
    assert!(wrong.log_marginal::<DefaultBackend>(&d).unwrap_err().to_string().contains("one per input"));
    // constant targets: fitted without NaN, residuals zero
    let flat = Dataset::new(d.x().clone(), vec![5.0; 10]).unwrap();
    let gp = GpParams::default().check().unwrap().fit::<DefaultBackend>(&flat).unwrap();
    assert!(gp.residuals().iter().all(|r| r.abs() < 1e-6));
}
