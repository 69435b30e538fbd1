//! TTGP marginal likelihoods against dense Gaussian log densities, gradients against central finite
//! differences, forms and backends against each other, predictions against the DME, bad input.

use crate::common::*;
use bke_core::{CoreError, Kernel, KernelFamily, Params, Points, Predict};
use bke_dme::dme::{DmeForm, DmeParams};
use bke_dme::learn::{Learn, MultiStartOptions};
use bke_dme::ttgp::{MarginalForm, TtgpParams, log_marginal, log_marginal_value, marginal_covariance};
use bke_dme::{DmeError, TaskData};
use bke_linalg::DefaultBackend;

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
            let got = log_marginal_value::<DefaultBackend>(&data, &with_form(&h, form)).unwrap();
            let with_grad = log_marginal::<DefaultBackend>(&data, &with_form(&h, form)).unwrap().value;
            assert!((got - want).abs() < 1e-9 * want.abs().max(1.0), "{form:?}: {got} vs {want}");
            assert!((with_grad - want).abs() < 1e-9 * want.abs().max(1.0), "{form:?}: {with_grad} vs {want}");
            // The exported dense covariance is the same matrix.
            let c = marginal_covariance::<DefaultBackend>(&data, &with_form(&h, form)).unwrap();
            let cn = naive_covariance(&data, &h, form == MarginalForm::Full);
            let diff = c.as_slice().iter().zip(cn.as_slice()).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(diff < 1e-10, "{form:?}: covariance differs by {diff}");
        }
    }
}

fn check_gradient(data: &TaskData, h: &TtgpParams, form: MarginalForm) {
    let g = log_marginal::<DefaultBackend>(data, &with_form(h, form)).unwrap();
    let p = h.log_params();
    let step = 1e-5;
    for i in 0..p.len() {
        let mut pp = p.clone();
        pp[i] += step;
        let fp =
            log_marginal_value::<DefaultBackend>(data, &with_form(&h.with_log_params(&pp).unwrap(), form))
                .unwrap();
        pp[i] -= 2.0 * step;
        let fm =
            log_marginal_value::<DefaultBackend>(data, &with_form(&h.with_log_params(&pp).unwrap(), form))
                .unwrap();
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
fn alternative_form_equals_map_form_and_backends_agree() {
    let data = problem(7, 10, 25, 2, 1);
    let h = hyper(2, 1, true);
    let map = log_marginal::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Map)).unwrap();
    let alt = log_marginal::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Alternative)).unwrap();
    assert!((map.value - alt.value).abs() < 1e-9 * map.value.abs());
    for (a, b) in map.gradient.iter().zip(&alt.gradient) {
        assert!((a - b).abs() < 1e-7 * a.abs().max(1.0), "{a} vs {b}");
    }
    for form in FORMS {
        let f = log_marginal::<DefaultBackend>(&data, &with_form(&h, form)).unwrap();
        let n = log_marginal::<DefaultBackend>(&data, &with_form(&h, form)).unwrap();
        assert!((f.value - n.value).abs() < 1e-9 * f.value.abs());
        for (a, b) in f.gradient.iter().zip(&n.gradient) {
            assert!((a - b).abs() < 1e-7 * a.abs().max(1.0), "{form:?}: {a} vs {b}");
        }
    }
}

#[test]
fn alternative_form_survives_a_singular_k() {
    // Duplicated x make K exactly singular; the alternative form must still match the dense one.
    let base = problem(8, 6, 9, 1, 1);
    let x: Vec<f64> = (0..12).map(|i| base.x.point(i % 6)[0]).collect();
    let y: Vec<f64> = (0..12).map(|i| base.y.point(i % 6)[0] + 0.01 * i as f64).collect();
    let data = TaskData::new(
        Points::from_1d("x", &x).unwrap(),
        Points::from_1d("y", &y).unwrap(),
        base.y_tilde.clone(),
        base.z_tilde.clone(),
    )
    .unwrap();
    let h = hyper(1, 1, false);
    let map = log_marginal_value::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Map)).unwrap();
    let alt = log_marginal_value::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Alternative)).unwrap();
    assert!((map - alt).abs() < 1e-8 * map.abs(), "{map} vs {alt}");
}

#[test]
fn predictive_mean_is_the_dme_and_variance_matches_the_dense_posterior() {
    let data = problem(9, 12, 14, 1, 1);
    let h = hyper(1, 1, false);
    let at = Points::from_1d("x*", &[-1.7, -0.4, 0.0, 0.9, 2.2]).unwrap();
    let dme = DmeParams {
        kernel_x: h.kernel_x.clone(),
        kernel_y: h.kernel_y.clone(),
        lambda: h.lambda,
        epsilon: h.epsilon,
        form: DmeForm::Standard,
    }
    .check()
    .unwrap()
    .fit::<DefaultBackend>(&data)
    .unwrap();
    let want_mean = dme.predict::<DefaultBackend>(&at).unwrap();
    for form in FORMS {
        let gp = with_form(&h, form).check().unwrap().fit::<DefaultBackend>(&data).unwrap();
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
            (gp.log_marginal::<DefaultBackend>().unwrap()
                - log_marginal_value::<DefaultBackend>(&data, &with_form(&h, form)).unwrap())
            .abs()
                < 1e-10
        );
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let p = |v: &[f64]| Points::from_1d("p", v).unwrap();
    let e = TaskData::new(p(&[1.0, 2.0]), p(&[1.0]), p(&[0.0]), vec![1.0]).unwrap_err();
    assert!(matches!(e, DmeError::Core(CoreError::DimensionMismatch { expected: 2, found: 1, .. })), "{e}");
    assert!(e.to_string().contains("y (paired one to one with the 2 rows of x)"), "{e}");
    let e = TaskData::new(p(&[1.0]), p(&[1.0]), p(&[0.0, 1.0]), vec![1.0]).unwrap_err();
    assert!(
        matches!(e, DmeError::Core(CoreError::DimensionMismatch { .. })) && e.to_string().contains("z̃"),
        "{e}"
    );
    let e = TaskData::new(p(&[1.0]), p(&[1.0]), p(&[0.0, 1.0]), vec![1.0, f64::NAN]).unwrap_err();
    assert!(matches!(e, DmeError::Core(CoreError::NonFinite { row: 1, .. })), "{e}");
    assert!(Points::from_1d("x", &[1.0, f64::INFINITY]).is_err());
    let e = TaskData::new(p(&[]), p(&[]), p(&[0.0]), vec![1.0]).unwrap_err();
    assert!(matches!(e, DmeError::Core(CoreError::Empty { .. })), "{e}");
    let data = problem(10, 5, 5, 1, 1);
    for (name, f) in [
        ("sigma", Box::new(|h: &mut TtgpParams| h.sigma = 0.0) as Box<dyn Fn(&mut TtgpParams)>),
        ("lambda", Box::new(|h: &mut TtgpParams| h.lambda = -1.0)),
        ("epsilon", Box::new(|h: &mut TtgpParams| h.epsilon = f64::NAN)),
    ] {
        let mut h = hyper(1, 1, false);
        f(&mut h);
        let e = log_marginal::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Map)).unwrap_err();
        assert!(e.to_string().contains(name) && e.to_string().contains("positive"), "{e}");
    }
    assert!(Kernel::se(-1.0).is_err());
    // ARD kernel of the wrong dimension.
    let mut h = hyper(1, 1, false);
    h.kernel_x = Kernel::se_ard(vec![1.0, 1.0]).unwrap();
    assert!(matches!(
        log_marginal::<DefaultBackend>(&data, &with_form(&h, MarginalForm::Map)),
        Err(DmeError::Core(CoreError::DimensionMismatch { .. }))
    ));
}

/// The learned hyperparameters of a fitted TTGP.
fn learned(data: &TaskData, p: &TtgpParams) -> (TtgpParams, f64, usize) {
    let gp = p.check().unwrap().fit::<DefaultBackend>(data).unwrap();
    (gp.params().clone(), gp.log_marginal::<DefaultBackend>().unwrap(), gp.starts().len())
}

#[test]
fn fit_increases_the_marginal_likelihood_deterministically() {
    let data = problem(11, 25, 30, 1, 1);
    let init = TtgpParams::tied(Kernel::se(3.0).unwrap(), Kernel::se(3.0).unwrap(), 1.0, 25, 30);
    let p = TtgpParams {
        learn: Learn::all(),
        search: MultiStartOptions { starts: 3, seed: 5, ..Default::default() },
        ..init.clone()
    };
    let (h, lm, starts) = learned(&data, &p);
    let l0 = log_marginal_value::<DefaultBackend>(&data, &init).unwrap();
    assert!(lm > l0 + 5.0, "{lm} vs initial {l0}");
    assert_eq!(starts, 3);
    // The reported value is the value at the reported hyperparameters, and a local optimum.
    let at = log_marginal::<DefaultBackend>(&data, &h).unwrap();
    assert!((at.value - lm).abs() < 1e-9);
    // λ is tied to σ (λ = σ²/n): stationarity holds for ∂/∂log σ + 2 ∂/∂log λ and the others.
    assert!((h.lambda - h.sigma.powi(2) / 25.0).abs() < 1e-12 * h.lambda);
    let g = &at.gradient;
    assert!(
        g[0].abs() < 1e-2 && g[1].abs() < 1e-2 && g[4].abs() < 1e-2 && (g[2] + 2.0 * g[3]).abs() < 1e-2,
        "{g:?}"
    );
    assert_eq!(learned(&data, &p).0, h);
    // Frozen parameters stay put.
    let frozen = TtgpParams {
        learn: Learn { sigma: false, ..Learn::all() },
        tie_lambda: false,
        search: MultiStartOptions { starts: 1, ..p.search },
        ..p.clone()
    };
    let (h2, _, _) = learned(&data, &frozen);
    assert_eq!(h2.sigma, init.sigma);
    assert!(h2.lambda != init.lambda);
    let at2 = log_marginal::<DefaultBackend>(&data, &h2).unwrap();
    assert!(at2.gradient.iter().enumerate().all(|(i, g)| i == 2 || g.abs() < 1e-2), "{:?}", at2.gradient);
    // Without anything to learn, the model is conditioned at the given values.
    let (h3, lm3, starts3) = learned(&data, &init);
    assert_eq!((h3, starts3), (init.clone(), 0));
    assert!((lm3 - l0).abs() < 1e-12);
}

#[test]
fn model_files_round_trip_refuse_other_kinds_and_read_bke_0_1_files() {
    use bke_core::model_file::{Saved, from_str, to_string};
    use bke_dme::ttgp::Ttgp;
    let data = problem(12, 8, 7, 1, 1);
    let mut h = hyper(1, 1, false);
    h.kernel_y = Kernel::new(KernelFamily::RationalQuadratic { alpha: 0.7 }, vec![0.6]).unwrap();
    let gp = with_form(&h, MarginalForm::Full).check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    let saved = Saved { columns: vec!["x".into()], target: Some("z".into()), model: gp.clone() };
    let text = to_string(&saved).unwrap();
    assert!(text.contains("\"kind\": \"ttgp\"") && text.contains("\"alpha_y\": 0.7"), "{text}");
    let back = from_str::<Ttgp>(&text, "m.json").unwrap();
    assert_eq!(back.columns, saved.columns);
    assert_eq!(back.model.params(), gp.params());
    assert_eq!(back.model.data(), gp.data());
    let at = Points::from_1d("x*", &[-0.3, 0.8]).unwrap();
    assert_eq!(
        back.model.predict::<DefaultBackend>(&at).unwrap(),
        gp.predict::<DefaultBackend>(&at).unwrap()
    );
    let other = text.replace("\"kind\": \"ttgp\"", "\"kind\": \"density\"");
    let e = from_str::<Ttgp>(&other, "m.json").unwrap_err().to_string();
    assert!(e.contains("'density'") && e.contains("'ttgp'"), "{e}");
    // The layout bke 0.1's `bke dme fit --model-out` wrote.
    let legacy = r#"{"format": "bke-dme-ttgp-1", "form": "map",
        "hyperparameters": {"kernel": "se", "lengthscale_x": [0.9], "lengthscale_y": [0.6],
                            "sigma": 0.3, "lambda": 0.02, "epsilon": 0.05},
        "x": [[0.1], [0.5], [0.9]], "y": [[0.0], [0.4], [1.0]], "y_tilde": [[0.2], [0.7]], "z_tilde": [0.3, -0.1]}"#;
    let old = from_str::<Ttgp>(legacy, "old.json").unwrap().model;
    assert_eq!(old.params().form, MarginalForm::Map);
    assert_eq!(old.params().kernel_x.lengthscales(), &[0.9]);
    assert!(old.log_marginal::<DefaultBackend>().unwrap().is_finite());
    let bad = legacy.replace("\"sigma\": 0.3", "\"sigma\": -0.3");
    assert!(from_str::<Ttgp>(&bad, "bad.json").unwrap_err().to_string().contains("sigma"));
}
