//! The TTBLR (seed 004 Thm 5.3 (1), (3), (4)): the marginal likelihood against the dense Gaussian
//! density built from the definitions of M and Σ, the weight posterior against dense Gaussian
//! conditioning, the gradient against central differences, the MAP limit against the parametric DME
//! of Def. 4.5 with λ = σ²/(nβ²), ε = σ²/(mγ²), learning, and model files.

use crate::common::*;
use bke_core::model_file::{Saved, from_str, to_string};
use bke_core::{Kernel, KernelFamily, Params, Points, Predict};
use bke_dme::dme::{ParametricDmeParams, fourier_pair};
use bke_dme::learn::MultiStartOptions;
use bke_dme::ttblr::{
    FeatureData, Scales, Ttblr, TtblrForm, TtblrLearn, TtblrParams, feature_log_marginal,
    feature_log_marginal_value, log_marginal, weight_posterior,
};
use bke_linalg::{DefaultBackend, Mat};

fn features(data: &bke_dme::TaskData, kx: &Kernel, ky: &Kernel, count: usize) -> FeatureData {
    let (fx, fy) = fourier_pair(kx, ky, (data.x.dim(), data.y.dim()), count, 3).unwrap();
    FeatureData::new(
        fx.features(&data.x).unwrap(),
        fy.features(&data.y).unwrap(),
        fy.features(&data.y_tilde).unwrap(),
        data.z_tilde.clone(),
    )
    .unwrap()
}

/// `(D = MᵀΦ, Σ)` from their definitions (column-convention formulas of the seed, transposed).
fn dense_design(d: &FeatureData, sc: Scales, form: TtblrForm) -> (Mat, Mat) {
    let (q, m) = (d.psi.ncols(), d.psi_tilde.nrows());
    let s2 = sc.sigma * sc.sigma;
    let mut g = naive_mm(&d.psi.transpose(), &d.psi);
    for i in 0..q {
        g[(i, i)] += s2 / (sc.beta * sc.beta);
    }
    let (gi_pt, _) = naive_solve(&g, &d.psi_tilde.transpose()); // G⁻¹Ψ̃ᵀ
    let mmat = naive_mm(&d.psi, &gi_pt); // M = ΨG⁻¹Ψ̃ᵀ, n × m
    let design = naive_mm(&mmat.transpose(), &d.phi);
    let sigma = match form {
        TtblrForm::Map => Mat::from_fn(m, m, |i, j| if i == j { s2 } else { 0.0 }),
        TtblrForm::Full => {
            let pg = naive_mm(&d.psi_tilde, &gi_pt);
            Mat::from_fn(m, m, |i, j| s2 * pg[(i, j)] + if i == j { s2 } else { 0.0 })
        }
    };
    (design, sigma)
}

#[test]
fn marginal_likelihood_and_posterior_equal_the_dense_gaussian_ones() {
    for (seed, dx, dy) in [(1, 1, 1), (2, 2, 1)] {
        let data = problem(seed, 14, 11, dx, dy);
        let d = features(&data, &Kernel::se(0.8).unwrap(), &Kernel::se(0.6).unwrap(), 5);
        let sc = Scales { sigma: 0.3, beta: 1.4, gamma: 0.7 };
        for form in [TtblrForm::Full, TtblrForm::Map] {
            let (design, sigma) = dense_design(&d, sc, form);
            let p = design.ncols();
            let dd = naive_mm(&design, &design.transpose());
            let g2 = sc.gamma * sc.gamma;
            let cz = Mat::from_fn(sigma.nrows(), sigma.ncols(), |i, j| sigma[(i, j)] + g2 * dd[(i, j)]);
            let want = naive_log_density(&cz, &d.z_tilde);
            let got = feature_log_marginal_value::<DefaultBackend>(&d, sc, form).unwrap();
            assert!((got - want).abs() < 1e-9 * want.abs().max(1.0), "{form:?}: {got} vs {want}");
            let with_grad = feature_log_marginal::<DefaultBackend>(&d, sc, form).unwrap().value;
            assert!((with_grad - want).abs() < 1e-9 * want.abs().max(1.0));
            // w | z̃: cov(w, z̃) = γ²Dᵀ, cov(z̃) = C_z.
            let post = weight_posterior::<DefaultBackend>(&d, sc, form).unwrap();
            let zm = Mat::from_fn(d.z_tilde.len(), 1, |i, _| d.z_tilde[i]);
            let (ciz, _) = naive_solve(&cz, &zm);
            let (cid, _) = naive_solve(&cz, &design);
            let dtcd = naive_mm(&design.transpose(), &cid);
            for i in 0..p {
                let mean: f64 = g2 * (0..d.z_tilde.len()).map(|j| design[(j, i)] * ciz[(j, 0)]).sum::<f64>();
                assert!((post.mean[i] - mean).abs() < 1e-9, "{form:?} mean {i}: {} vs {mean}", post.mean[i]);
                for j in 0..p {
                    let cov = if i == j { g2 } else { 0.0 } - g2 * g2 * dtcd[(i, j)];
                    assert!((post.covariance[(i, j)] - cov).abs() < 1e-9, "{form:?} cov");
                }
            }
        }
    }
}

fn check_gradient(data: &bke_dme::TaskData, params: &TtblrParams) {
    let (_, g) = log_marginal::<DefaultBackend>(data, params).unwrap();
    let p0 = params.log_params();
    let f = |p: &[f64]| log_marginal::<DefaultBackend>(data, &params.with_log_params(p).unwrap()).unwrap().0;
    for i in 0..p0.len() {
        let (mut a, mut b) = (p0.clone(), p0.clone());
        a[i] += 1e-5;
        b[i] -= 1e-5;
        let fd = (f(&a) - f(&b)) / 2e-5;
        let err = (g[i] - fd).abs() / fd.abs().max(1.0);
        assert!(err < 1e-6, "{:?} parameter {i}: analytic {} vs central difference {fd}", params.form, g[i]);
    }
}

#[test]
fn gradient_matches_central_finite_differences() {
    for (seed, dx, dy, ard) in [(3, 1, 1, false), (4, 2, 2, true)] {
        let data = problem(seed, 12, 9, dx, dy);
        let h = hyper(dx, dy, ard);
        for form in [TtblrForm::Full, TtblrForm::Map] {
            let params = TtblrParams {
                kernel_x: h.kernel_x.clone(),
                kernel_y: h.kernel_y.clone(),
                features: 6,
                seed: 5,
                sigma: 0.35,
                beta: 1.3,
                gamma: 0.8,
                form,
                ..Default::default()
            };
            check_gradient(&data, &params);
        }
    }
    // Matérn features (Student-t frequencies) too.
    let data = problem(5, 10, 8, 1, 1);
    let params = TtblrParams {
        kernel_x: Kernel::new(KernelFamily::Matern52, vec![0.9]).unwrap(),
        kernel_y: Kernel::new(KernelFamily::Matern32, vec![0.7]).unwrap(),
        features: 5,
        ..Default::default()
    };
    check_gradient(&data, &params);
}

#[test]
fn map_limit_is_the_parametric_dme_with_lambda_and_epsilon_of_theorem_5_3() {
    let data = problem(6, 30, 25, 1, 1);
    let (kx, ky) = (Kernel::se(0.8).unwrap(), Kernel::se(0.6).unwrap());
    let params = TtblrParams {
        kernel_x: kx.clone(),
        kernel_y: ky.clone(),
        features: 8,
        seed: 11,
        sigma: 0.4,
        beta: 1.7,
        gamma: 0.6,
        form: TtblrForm::Map,
        ..Default::default()
    };
    let ttblr = params.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    let (n, m) = (data.n(), data.m());
    let (lambda, epsilon) = (params.lambda(n), params.epsilon(m));
    assert!(
        (lambda - 0.16 / (30.0 * 1.7 * 1.7)).abs() < 1e-15 && (epsilon - 0.16 / (25.0 * 0.36)).abs() < 1e-15
    );
    let dme = ParametricDmeParams { kernel_x: kx, kernel_y: ky, features: 8, seed: 11, lambda, epsilon }
        .check()
        .unwrap()
        .fit::<DefaultBackend>(&data)
        .unwrap();
    for (a, b) in ttblr.posterior().mean.iter().zip(dme.weights()) {
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} vs {b}");
    }
    let at = Points::from_1d("x*", &[-1.2, 0.1, 0.9]).unwrap();
    let (p, q) = (ttblr.predict::<DefaultBackend>(&at).unwrap(), dme.predict::<DefaultBackend>(&at).unwrap());
    for (a, b) in p.mean.iter().zip(&q) {
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0));
    }
    assert!(p.variance.iter().all(|v| *v > 0.0));
}

#[test]
fn learning_increases_the_marginal_likelihood_and_model_files_round_trip() {
    let data = problem(7, 40, 35, 1, 1);
    let init = TtblrParams {
        kernel_x: Kernel::se(2.0).unwrap(),
        kernel_y: Kernel::se(2.0).unwrap(),
        features: 20,
        sigma: 0.5,
        ..Default::default()
    };
    let fixed = init.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    let learn = TtblrParams {
        learn: TtblrLearn { beta: false, ..TtblrLearn::all() },
        search: MultiStartOptions { starts: 2, ..Default::default() },
        ..init.clone()
    };
    let learned = learn.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    assert!(
        learned.log_marginal() > fixed.log_marginal() + 1.0,
        "{} vs {}",
        learned.log_marginal(),
        fixed.log_marginal()
    );
    assert_eq!(learned.params().beta, 1.0);
    assert_eq!(learned.starts().len(), 2);
    let (v, g) = log_marginal::<DefaultBackend>(&data, learned.params()).unwrap();
    assert!((v - learned.log_marginal()).abs() < 1e-9);
    assert!(g.iter().enumerate().all(|(i, g)| i == 3 || g.abs() < 1e-2), "{g:?}");
    let text = to_string(&Saved::new(learned.clone())).unwrap();
    assert!(text.contains("\"kind\": \"ttblr\""));
    let back = from_str::<Ttblr>(&text, "m.json").unwrap().model;
    let at = Points::from_1d("x*", &[-0.7, 0.4]).unwrap();
    let (a, b) =
        (back.predict::<DefaultBackend>(&at).unwrap(), learned.predict::<DefaultBackend>(&at).unwrap());
    for (x, y) in a.mean.iter().zip(&b.mean).chain(a.variance.iter().zip(&b.variance)) {
        assert!((x - y).abs() < 1e-12 * y.abs().max(1.0));
    }
    let e = from_str::<bke_dme::ttgp::Ttgp>(&text, "m.json").unwrap_err().to_string();
    assert!(e.contains("'ttblr'") && e.contains("'ttgp'"), "{e}");
    let e = TtblrParams { gamma: -1.0, ..init }.check().unwrap_err().to_string();
    assert!(e.contains("gamma"), "{e}");
}
