//! CME and DME estimators: both DME forms against each other and against naive formulas, the
//! parametric DME against its definition, and Thm 6.2 (DME → CME in the other direction as λ → 0⁺)
//! as a property test. (The parametric DME against the nonparametric one with the finite-feature
//! kernel, Lemma 5.2, is a unit test of `dme.rs`.)

use crate::common::*;
use bke_core::{Kernel, Params, Points, Predict, TwoSamples};
use bke_dme::TaskData;
use bke_dme::cme::{Cme, CmeParams};
use bke_dme::dme::{Dme, DmeForm, DmeParams, ParametricDmeParams, fourier_pair, parametric_weights};
use bke_linalg::{DefaultBackend, Mat};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn pts(v: &[f64]) -> Points {
    Points::from_1d("p", v).unwrap()
}

fn fit_cme(x: &[f64], y: &[f64], kx: &Kernel, ky: &Kernel, lambda: f64) -> Result<Cme, bke_dme::DmeError> {
    let p = CmeParams { kernel_x: kx.clone(), kernel_y: ky.clone(), lambda };
    p.check()?.fit::<DefaultBackend>(&TwoSamples { x: pts(x), y: pts(y) })
}

fn fit_dme(data: &TaskData, kx: &Kernel, ky: &Kernel, lambda: f64, epsilon: f64, form: DmeForm) -> Dme {
    let p = DmeParams { kernel_x: kx.clone(), kernel_y: ky.clone(), lambda, epsilon, form };
    p.check().unwrap().fit::<DefaultBackend>(data).unwrap()
}

#[test]
fn cme_matches_the_naive_formula() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let y = uniform(&mut rng, 15, -3.0, 3.0);
    let x: Vec<f64> = y.iter().map(|v| v.sin()).collect();
    let (kx, ky) = (Kernel::se(0.5).unwrap(), Kernel::se(0.7).unwrap());
    let lambda = 0.01;
    let cme = fit_cme(&x, &y, &kx, &ky, lambda).unwrap();
    let at = pts(&[-1.0, 0.3, 2.0]);
    let f: Vec<f64> = x.iter().map(|v| v * v).collect();
    let got = cme.conditional_mean::<DefaultBackend>(&f, &at).unwrap();
    let mut p = ky.gram(&pts(&y)).unwrap();
    for i in 0..15 {
        p[(i, i)] += 15.0 * lambda;
    }
    let (w, _) = naive_solve(&p, &ky.cross_gram(&pts(&y), &at).unwrap());
    for q in 0..3 {
        let want: f64 = (0..15).map(|i| f[i] * w[(i, q)]).sum();
        assert!((got[q] - want).abs() < 1e-10);
        // E[sin(Y)² | Y = y*] = sin(y*)²: the estimate is close where there is data.
        assert!(
            (got[q] - at.point(q)[0].sin().powi(2)).abs() < 0.15,
            "{} vs {}",
            got[q],
            at.point(q)[0].sin().powi(2)
        );
    }
    let emb = cme.embedding::<DefaultBackend>(&at, &pts(&[0.0, 0.5])).unwrap();
    let kxx = kx.cross_gram(&pts(&x), &pts(&[0.0, 0.5])).unwrap();
    for q in 0..3 {
        for r in 0..2 {
            let want: f64 = (0..15).map(|i| w[(i, q)] * kxx[(i, r)]).sum();
            assert!((emb[(q, r)] - want).abs() < 1e-10);
        }
    }
    let e = fit_cme(&x[..3], &y, &kx, &ky, lambda).unwrap_err().to_string();
    assert!(e.contains("paired one to one"), "{e}");
}

#[test]
fn dme_forms_agree_with_the_naive_definition() {
    let data = problem(3, 9, 13, 1, 1);
    let h = hyper(1, 1, false);
    let at = pts(&[-1.0, 0.0, 0.7]);
    let k = h.kernel_x.gram(&data.x).unwrap();
    let mut p = h.kernel_y.gram(&data.y).unwrap();
    for i in 0..9 {
        p[(i, i)] += 9.0 * h.lambda;
    }
    let (a, _) = naive_solve(&p, &h.kernel_y.cross_gram(&data.y, &data.y_tilde).unwrap());
    let mut g = naive_mm(&a.transpose(), &naive_mm(&k, &a));
    for j in 0..13 {
        g[(j, j)] += 13.0 * h.epsilon;
    }
    let kstar = h.kernel_x.cross_gram(&data.x, &at).unwrap();
    let (v_naive, _) = naive_solve(&g, &naive_mm(&a.transpose(), &kstar)); // m × q
    for form in [DmeForm::Standard, DmeForm::Alternative] {
        let dme = fit_dme(&data, &h.kernel_x, &h.kernel_y, h.lambda, h.epsilon, form);
        let v = dme.embedding_weights::<DefaultBackend>(&at).unwrap();
        let vn = dme.embedding_weights::<DefaultBackend>(&at).unwrap();
        let est = dme.predict::<DefaultBackend>(&at).unwrap();
        for q in 0..3 {
            for j in 0..13 {
                assert!((v[(j, q)] - v_naive[(j, q)]).abs() < 1e-9, "{form:?}");
                assert!((vn[(j, q)] - v_naive[(j, q)]).abs() < 1e-9, "{form:?}");
            }
            let want: f64 = (0..13).map(|j| data.z_tilde[j] * v_naive[(j, q)]).sum();
            assert!((est[q] - want).abs() < 1e-9, "{form:?}: {} vs {want}", est[q]);
        }
        // The embedding as a function on Y: Σ_j v_j ℓ(ỹ_j, y').
        let ys = pts(&[0.1, -0.5]);
        let emb = dme.embedding::<DefaultBackend>(&at, &ys).unwrap();
        let lt = h.kernel_y.cross_gram(&data.y_tilde, &ys).unwrap();
        for q in 0..3 {
            for r in 0..2 {
                let want: f64 = (0..13).map(|j| v_naive[(j, q)] * lt[(j, r)]).sum();
                assert!((emb[(q, r)] - want).abs() < 1e-9);
            }
        }
    }
}

#[test]
fn parametric_dme_matches_definition_4_5() {
    // w̄ = [ΦᵀAAᵀΦ + mεI]⁻¹ΦᵀA z̃ with A = Ψ(ΨᵀΨ + nλI)⁻¹Ψ̃ᵀ, computed naively.
    let data = problem(4, 30, 25, 1, 1);
    let (kx, ky) = (Kernel::se(0.8).unwrap(), Kernel::se(0.6).unwrap());
    let (lambda, epsilon) = (0.03, 0.02);
    let params = ParametricDmeParams {
        kernel_x: kx.clone(),
        kernel_y: ky.clone(),
        features: 6,
        seed: 7,
        lambda,
        epsilon,
    };
    let fitted = params.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
    let (fx, fy) = fourier_pair(&kx, &ky, (1, 1), 6, 7).unwrap();
    let (phi, psi, psit) =
        (fx.features(&data.x).unwrap(), fy.features(&data.y).unwrap(), fy.features(&data.y_tilde).unwrap());
    let mut g = naive_mm(&psi.transpose(), &psi);
    for i in 0..g.nrows() {
        g[(i, i)] += 30.0 * lambda;
    }
    let (t, _) = naive_solve(&g, &psit.transpose());
    let a = naive_mm(&psi, &t);
    let pa = naive_mm(&phi.transpose(), &a);
    let mut h = naive_mm(&pa, &pa.transpose());
    for i in 0..h.nrows() {
        h[(i, i)] += 25.0 * epsilon;
    }
    let z = Mat::from_fn(25, 1, |j, _| data.z_tilde[j]);
    let (w, _) = naive_solve(&h, &naive_mm(&pa, &z));
    for (i, wi) in fitted.weights().iter().enumerate() {
        assert!((wi - w[(i, 0)]).abs() < 1e-9 * w[(i, 0)].abs().max(1.0), "{wi} vs {}", w[(i, 0)]);
    }
    let direct =
        parametric_weights::<DefaultBackend>(&phi, &psi, &psit, &data.z_tilde, lambda, epsilon).unwrap();
    for (a, b) in direct.iter().zip(fitted.weights()) {
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0));
    }
    let at = pts(&[-1.5, 0.4]);
    let pred = fitted.predict::<DefaultBackend>(&at).unwrap();
    let phis = fx.features(&at).unwrap();
    for q in 0..2 {
        let want: f64 = (0..12).map(|c| phis[(q, c)] * w[(c, 0)]).sum();
        assert!((pred[q] - want).abs() < 1e-9 * want.abs().max(1.0));
    }
    assert!(ParametricDmeParams { features: 0, ..params }.check().is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Thm 6.2: with m = n and ỹ = y, lim_{λ→0⁺} C̄'_{X|Y} = Ψ[K + nεI]⁻¹Φᵀ = Ĉ_{Y|X}: the DME
    /// weights on ℓ(y_j, ·) converge to the CME weights (K + nεI)⁻¹ k(x*) of Y | X, and the DME
    /// estimate of f from z̃ to the CME conditional mean E[g(Y) | X = x*] of the values z̃.
    #[test]
    fn dme_tends_to_the_reverse_cme(
        n in 3usize..10,
        seed in 0u64..1000,
        ly in 0.15f64..0.5,
        lx in 0.3f64..2.0,
        eps in 0.005f64..0.5,
    ) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Separated y keep L well conditioned, so the λ-error bound nλ‖L⁻¹‖ is small.
        let jit = uniform(&mut rng, n, -0.2, 0.2);
        let y: Vec<f64> = (0..n).map(|i| i as f64 + jit[i]).collect();
        let x = uniform(&mut rng, n, -2.0, 2.0);
        let z = uniform(&mut rng, n, -1.0, 1.0);
        let (kx, ky) = (Kernel::se(lx).unwrap(), Kernel::se(ly).unwrap());
        let at = pts(&[-1.0, 0.25, 1.5]);
        let cme = fit_cme(&y, &x, &ky, &kx, eps).unwrap();
        let w = cme.weights::<DefaultBackend>(&at).unwrap();
        let cm = cme.conditional_mean::<DefaultBackend>(&z, &at).unwrap();
        let mut errs = Vec::new();
        for lambda in [1e-3, 1e-10] {
            let data = TaskData::new(pts(&x), pts(&y), pts(&y), z.clone()).unwrap();
            let dme = fit_dme(&data, &kx, &ky, lambda, eps, DmeForm::Standard);
            let v = dme.embedding_weights::<DefaultBackend>(&at).unwrap();
            let est = dme.predict::<DefaultBackend>(&at).unwrap();
            let mut err: f64 = 0.0;
            for q in 0..3 {
                for i in 0..n {
                    err = err.max((v[(i, q)] - w[(i, q)]).abs());
                }
                err = err.max((est[q] - cm[q]).abs());
            }
            errs.push(err);
        }
        prop_assert!(errs[1] < 1e-6, "DME - CME = {} at λ = 1e-10", errs[1]);
        prop_assert!(errs[1] <= errs[0] + 1e-12, "error grew as λ shrank: {errs:?}");
    }
}
