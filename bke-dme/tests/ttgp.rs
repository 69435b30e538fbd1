//! TTGP marginal likelihoods against dense Gaussian log densities, gradients against central finite
//! differences, forms and backends against each other, predictions against the DME, bad input.

mod common;

use bke_core::{CoreError, Kernel, KernelFamily, Points};
use bke_dme::DmeError;
use bke_dme::dme::{Dme, DmeForm};
use bke_dme::ttgp::{
    FitOptions, Learn, MarginalForm, Ttgp, TtgpData, TtgpHyper, fit, log_marginal, log_marginal_value,
    marginal_covariance,
};
use bke_linalg::DefaultBackend;
use common::*;

const FORMS: [MarginalForm; 3] = [MarginalForm::Full, MarginalForm::Map, MarginalForm::Alternative];

#[test]
fn marginal_likelihoods_equal_dense_gaussian_log_densities() {
    for (seed, n, m, dx, dy, ard) in [(1, 9, 7, 1, 1, false), (2, 6, 11, 2, 1, true), (3, 12, 5, 1, 2, true)]
    {
        let data = problem(seed, n, m, dx, dy);
        let h = hyper(dx, dy, ard);
        for form in FORMS {
            let want =
                naive_log_density(&naive_covariance(&data, &h, form == MarginalForm::Full), &data.z_tilde);
            let got = log_marginal_value::<DefaultBackend>(&data, &h, form).unwrap();
            let with_grad = log_marginal::<DefaultBackend>(&data, &h, form).unwrap().value;
            assert!((got - want).abs() < 1e-9 * want.abs().max(1.0), "{form:?}: {got} vs {want}");
            assert!((with_grad - want).abs() < 1e-9 * want.abs().max(1.0), "{form:?}: {with_grad} vs {want}");
            // The exported dense covariance is the same matrix.
            let c = marginal_covariance::<DefaultBackend>(&data, &h, form).unwrap();
            let cn = naive_covariance(&data, &h, form == MarginalForm::Full);
            let diff = c.as_slice().iter().zip(cn.as_slice()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(diff < 1e-10, "{form:?}: covariance differs by {diff}");
        }
    }
}

fn check_gradient(data: &TtgpData, h: &TtgpHyper, form: MarginalForm) {
    let g = log_marginal::<DefaultBackend>(data, h, form).unwrap();
    let p = h.log_params();
    let step = 1e-5;
    for i in 0..p.len() {
        let mut pp = p.clone();
        pp[i] += step;
        let fp = log_marginal_value::<DefaultBackend>(data, &h.with_log_params(&pp).unwrap(), form).unwrap();
        pp[i] -= 2.0 * step;
        let fm = log_marginal_value::<DefaultBackend>(data, &h.with_log_params(&pp).unwrap(), form).unwrap();
        let fd = (fp - fm) / (2.0 * step);
        let err = (g.gradient[i] - fd).abs() / fd.abs().max(1.0);
        assert!(
            err < 1e-6,
            "{form:?} parameter {i}: analytic {} vs central difference {fd} (rel {err:e})",
            g.gradient[i]
        );
    }
}

#[test]
fn gradients_match_central_finite_differences() {
    for (seed, n, m, dx, dy, ard) in [(4, 8, 10, 1, 1, false), (5, 7, 6, 2, 2, true)] {
        let data = problem(seed, n, m, dx, dy);
        let h = hyper(dx, dy, ard);
        for form in FORMS {
            check_gradient(&data, &h, form);
        }
    }
    // Another kernel family (rational quadratic has a shape parameter too).
    let data = problem(6, 9, 8, 1, 1);
    let mut h = hyper(1, 1, false);
    h.kernel_x = Kernel::new(KernelFamily::RationalQuadratic { alpha: 1.3 }, vec![0.7]).unwrap();
    h.kernel_y = Kernel::new(KernelFamily::Matern52, vec![0.8]).unwrap();
    for form in FORMS {
        check_gradient(&data, &h, form);
    }
}

#[test]
fn alternative_form_equals_map_form() {
    let data = problem(7, 10, 25, 2, 1);
    let h = hyper(2, 1, true);
    let map = log_marginal::<DefaultBackend>(&data, &h, MarginalForm::Map).unwrap();
    let alt = log_marginal::<DefaultBackend>(&data, &h, MarginalForm::Alternative).unwrap();
    assert!((map.value - alt.value).abs() < 1e-9 * map.value.abs());
    for (a, b) in map.gradient.iter().zip(&alt.gradient) {
        assert!((a - b).abs() < 1e-7 * a.abs().max(1.0), "{a} vs {b}");
    }
}

#[test]
fn alternative_form_survives_a_singular_k() {
    // Duplicated x make K exactly singular; the alternative form must still match the dense one.
    let base = problem(8, 6, 9, 1, 1);
    let x: Vec<f64> = (0..12).map(|i| base.x.point(i % 6)[0]).collect();
    let y: Vec<f64> = (0..12).map(|i| base.y.point(i % 6)[0] + 0.01 * i as f64).collect();
    let data = TtgpData::new(
        Points::from_1d("x", &x).unwrap(),
        Points::from_1d("y", &y).unwrap(),
        base.y_tilde.clone(),
        base.z_tilde.clone(),
    )
    .unwrap();
    let h = hyper(1, 1, false);
    let map = log_marginal_value::<DefaultBackend>(&data, &h, MarginalForm::Map).unwrap();
    let alt = log_marginal_value::<DefaultBackend>(&data, &h, MarginalForm::Alternative).unwrap();
    assert!((map - alt).abs() < 1e-8 * map.abs(), "{map} vs {alt}");
}

#[test]
fn predictive_mean_is_the_dme_and_variance_matches_the_dense_posterior() {
    let data = problem(9, 12, 14, 1, 1);
    let h = hyper(1, 1, false);
    let at = Points::from_1d("x*", &[-1.7, -0.4, 0.0, 0.9, 2.2]).unwrap();
    let dme = Dme::new::<DefaultBackend>(
        data.x.clone(),
        data.y.clone(),
        data.y_tilde.clone(),
        h.kernel_x.clone(),
        h.kernel_y.clone(),
        h.lambda,
        h.epsilon,
        DmeForm::Standard,
    )
    .unwrap();
    let want_mean = dme.estimate::<DefaultBackend>(&data.z_tilde, &at).unwrap();
    for form in FORMS {
        let gp = Ttgp::new::<DefaultBackend>(data.clone(), h.clone(), form).unwrap();
        let pred = gp.predict::<DefaultBackend>(&at).unwrap();
        // Dense oracle: f* | z̃ with cov(f*, z̃) = γ² k*ᵀ A and cov(z̃) = C.
        let (n, m) = (data.n(), data.m());
        let c = naive_covariance(&data, &h, form == MarginalForm::Full);
        let mut p = h.kernel_y.gram(&data.y).unwrap();
        for i in 0..n {
            p[(i, i)] += n as f64 * h.lambda;
        }
        let (a, _) = naive_solve(&p, &h.kernel_y.cross_gram(&data.y, &data.y_tilde).unwrap());
        let ks = h.kernel_x.cross_gram(&data.x, &at).unwrap();
        let gamma2 = h.gamma2(m);
        let cross = naive_mm(&ks.transpose(), &a); // q × m, times γ²
        let (cinv_z, _) = naive_solve(&c, &bke_linalg::Mat::from_fn(m, 1, |i, _| data.z_tilde[i]));
        let (cinv_ct, _) = naive_solve(&c, &cross.transpose());
        for q in 0..at.len() {
            let mean: f64 = gamma2 * (0..m).map(|j| cross[(q, j)] * cinv_z[(j, 0)]).sum::<f64>();
            let var = gamma2 - gamma2 * gamma2 * (0..m).map(|j| cross[(q, j)] * cinv_ct[(j, q)]).sum::<f64>();
            assert!((pred.mean[q] - mean).abs() < 1e-9, "{form:?} mean {} vs {mean}", pred.mean[q]);
            assert!((pred.variance[q] - var).abs() < 1e-9, "{form:?} var {} vs {var}", pred.variance[q]);
            if form != MarginalForm::Full {
                assert!((pred.mean[q] - want_mean[q]).abs() < 1e-9, "{form:?}: TTGP mean is not the DME");
            }
        }
        let cov = gp.predict_covariance::<DefaultBackend>(&at).unwrap();
        for q in 0..at.len() {
            assert!((cov[(q, q)] - pred.variance[q]).abs() < 1e-10);
        }
        assert!(
            (gp.log_marginal() - log_marginal_value::<DefaultBackend>(&data, &h, form).unwrap()).abs()
                < 1e-10
        );
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let p = |v: &[f64]| Points::from_1d("p", v).unwrap();
    let e = TtgpData::new(p(&[1.0, 2.0]), p(&[1.0]), p(&[0.0]), vec![1.0]).unwrap_err();
    assert!(matches!(e, DmeError::LengthMismatch { n_left: 2, n_right: 1, .. }), "{e}");
    assert!(e.to_string().contains("x has 2") && e.to_string().contains("y has 1"), "{e}");
    let e = TtgpData::new(p(&[1.0]), p(&[1.0]), p(&[0.0, 1.0]), vec![1.0]).unwrap_err();
    assert!(matches!(e, DmeError::LengthMismatch { .. }) && e.to_string().contains("z̃"), "{e}");
    let e = TtgpData::new(p(&[1.0]), p(&[1.0]), p(&[0.0, 1.0]), vec![1.0, f64::NAN]).unwrap_err();
    assert!(matches!(e, DmeError::Core(CoreError::NonFinite { row: 1, .. })), "{e}");
    assert!(Points::from_1d("x", &[1.0, f64::INFINITY]).is_err());
    let e = TtgpData::new(p(&[]), p(&[]), p(&[0.0]), vec![1.0]).unwrap_err();
    assert!(matches!(e, DmeError::Core(CoreError::Empty { .. })), "{e}");
    let data = problem(10, 5, 5, 1, 1);
    for (name, f) in [
        ("sigma", Box::new(|h: &mut TtgpHyper| h.sigma = 0.0) as Box<dyn Fn(&mut TtgpHyper)>),
        ("lambda", Box::new(|h: &mut TtgpHyper| h.lambda = -1.0)),
        ("epsilon", Box::new(|h: &mut TtgpHyper| h.epsilon = f64::NAN)),
    ] {
        let mut h = hyper(1, 1, false);
        f(&mut h);
        let e = log_marginal::<DefaultBackend>(&data, &h, MarginalForm::Map).unwrap_err();
        assert!(e.to_string().contains(name) && e.to_string().contains("positive"), "{e}");
    }
    assert!(Kernel::se(-1.0).is_err());
    // ARD kernel of the wrong dimension.
    let mut h = hyper(1, 1, false);
    h.kernel_x = Kernel::se_ard(vec![1.0, 1.0]).unwrap();
    assert!(matches!(
        log_marginal::<DefaultBackend>(&data, &h, MarginalForm::Map),
        Err(DmeError::Core(CoreError::DimensionMismatch { .. }))
    ));
}

#[test]
fn fit_increases_the_marginal_likelihood_deterministically() {
    let data = problem(11, 25, 30, 1, 1);
    let init = TtgpHyper::tied(Kernel::se(3.0).unwrap(), Kernel::se(3.0).unwrap(), 1.0, 25, 30);
    let opts = FitOptions { starts: 3, seed: 5, ..Default::default() };
    let r = fit::<DefaultBackend>(&data, &init, &opts).unwrap();
    let l0 = log_marginal_value::<DefaultBackend>(&data, &init, opts.form).unwrap();
    assert!(r.log_marginal > l0 + 5.0, "{} vs initial {l0}", r.log_marginal);
    assert_eq!(r.starts.len(), 3);
    // The reported value is the value at the reported hyperparameters, and a local optimum.
    let at = log_marginal::<DefaultBackend>(&data, &r.hyper, opts.form).unwrap();
    assert!((at.value - r.log_marginal).abs() < 1e-9);
    // λ is tied to σ (λ = σ²/n): stationarity holds for ∂/∂log σ + 2 ∂/∂log λ and the others.
    assert!((r.hyper.lambda - r.hyper.sigma.powi(2) / 25.0).abs() < 1e-12 * r.hyper.lambda);
    let g = &at.gradient;
    assert!(
        g[0].abs() < 1e-2 && g[1].abs() < 1e-2 && g[4].abs() < 1e-2 && (g[2] + 2.0 * g[3]).abs() < 1e-2,
        "{g:?}"
    );
    let again = fit::<DefaultBackend>(&data, &init, &opts).unwrap();
    assert_eq!(again, r);
    // Frozen parameters stay put.
    let frozen = FitOptions {
        learn: Learn { sigma: false, ..Learn::default() },
        tie_lambda: false,
        starts: 1,
        ..opts
    };
    let r2 = fit::<DefaultBackend>(&data, &init, &frozen).unwrap();
    assert_eq!(r2.hyper.sigma, init.sigma);
    assert!(r2.hyper.lambda != init.lambda);
    let at2 = log_marginal::<DefaultBackend>(&data, &r2.hyper, opts.form).unwrap();
    assert!(at2.gradient.iter().enumerate().all(|(i, g)| i == 2 || g.abs() < 1e-2), "{:?}", at2.gradient);
}
