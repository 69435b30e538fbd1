//! Oracles of the regression sweep: dense evidence, refactorising chains, spectral evidence.

use super::*;
use bke_linalg::DefaultBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

fn problem(n: usize, m: usize, d: usize, seed: u64) -> (Mat, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = Mat::from_fn(n, d, |_, _| rng.sample::<f64, _>(StandardNormal));
    let y: Vec<f64> =
        (0..n).map(|i| (2.0 * x[(i, 0)]).sin() + 0.1 * rng.sample::<f64, _>(StandardNormal)).collect();
    let w: Vec<f64> = (0..m * d).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
    (x, y, w)
}

fn check_evidence_matches_dense<B: Backend>() {
    let (x, y, w) = problem(40, 5, 2, 1);
    let nig = NigParams::default();
    let st = RegressionState::<B>::new(x, y.clone(), w, nig).unwrap();
    let dense = log_evidence_dense::<B>(st.phi(), &y, &nig).unwrap();
    assert!((st.log_evidence() - dense).abs() < 1e-10, "{} vs {dense}", st.log_evidence());
}

#[test]
fn few_rhs_solve_matches_the_backend() {
    let (x, _, _) = problem(9, 1, 9, 4);
    let mut a = DefaultBackend::gram(x.as_ref());
    for i in 0..9 {
        a[(i, i)] += 1.0;
    }
    let l = DefaultBackend::cholesky(a.as_ref()).unwrap();
    let b = Mat::from_fn(9, 5, |i, j| ((i * 5 + j) as f64 * 0.3).sin());
    let mut ours = b.clone();
    solve_lower_few(l.as_ref(), &mut ours);
    let mut theirs = b.clone();
    DefaultBackend::solve_lower_in_place(l.as_ref(), theirs.as_mut()).unwrap();
    for (u, v) in ours.as_slice().iter().zip(theirs.as_slice()) {
        assert!((u - v).abs() < 1e-12);
    }
}

/// The spectral evidence (primal `N ≥ 2M` and dual `N < 2M`) against a Cholesky factorisation
/// at several λ.
#[test]
fn spectral_evidence_matches_the_factorisation() {
    for (n, m) in [(40, 5), (12, 9)] {
        let (x, y, w) = problem(n, m, 2, 7);
        let st = RegressionState::<DefaultBackend>::new(x, y, w, NigParams::default()).unwrap();
        let spec = st.evidence_spectrum().unwrap();
        assert_eq!(spec.dual, n < 2 * m);
        for lambda in [1e-3, 0.1, 1.0, 30.0] {
            let (a, b) = (st.log_evidence_with(&spec, lambda), st.log_evidence_at(lambda).unwrap());
            assert!((a - b).abs() < 1e-8 * b.abs().max(1.0), "N {n} M {m} λ {lambda}: {a} vs {b}");
        }
    }
}

#[test]
fn evidence_matches_dense() {
    check_evidence_matches_dense::<DefaultBackend>();
}

/// Every proposal's Woodbury evidence against a dense computation, with the chain moving.
#[test]
fn proposal_evidence_matches_dense() {
    let (x, y, w) = problem(30, 6, 2, 2);
    let nig = NigParams { a0: 2.0, b0: 0.5, prior_precision: 0.3 };
    let mut st = RegressionState::<DefaultBackend>::new(x, y.clone(), w, nig).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for _ in 0..3 {
        let props: Vec<f64> = (0..12).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
        // Accept everything: each step's state evidence must equal the dense one.
        let log_u = vec![f64::NEG_INFINITY; 6];
        st.sweep(&props, &log_u, 4).unwrap();
        let dense = log_evidence_dense::<DefaultBackend>(st.phi(), &y, &nig).unwrap();
        assert!((st.log_evidence() - dense).abs() < 1e-9);
        let fresh =
            RegressionState::<DefaultBackend>::new(st.x.clone(), y.clone(), st.w.clone(), nig).unwrap();
        for (a, b) in st.gram.as_slice().iter().zip(fresh.gram.as_slice()) {
            assert!((a - b).abs() < 1e-12);
        }
    }
}

fn chains_agree<B: Backend>(block: usize) {
    let (x, y, w) = problem(50, 8, 2, 3);
    let nig = NigParams::default();
    let mut fast = RegressionState::<B>::new(x.clone(), y.clone(), w.clone(), nig).unwrap();
    let mut slow = RegressionState::<B>::new(x, y, w, nig).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut acc = (0, 0);
    for _ in 0..6 {
        let props: Vec<f64> = (0..16).map(|_| 1.5 * rng.sample::<f64, _>(StandardNormal)).collect();
        let log_u: Vec<f64> = (0..8).map(|_| rng.random::<f64>().ln()).collect();
        acc.0 += fast.sweep(&props, &log_u, block).unwrap();
        acc.1 += slow.sweep_refactorising(&props, &log_u).unwrap();
        for (a, b) in fast.w.iter().zip(&slow.w) {
            assert!((a - b).abs() < 1e-8);
        }
        assert!((fast.log_evidence() - slow.log_evidence()).abs() < 1e-8);
    }
    assert_eq!(acc.0, acc.1);
    assert!(acc.0 > 3 && acc.0 < 45, "test needs a mix of accepts and rejects: {acc:?}");
    let (drift, ev_drift) = fast.refactorise().unwrap();
    assert!(drift < 1e-10 && ev_drift < 1e-8, "{drift} {ev_drift}");
    assert_eq!(fast.stats.fallbacks, 0);
}

#[test]
fn rank_update_chain_equals_refactorising_chain() {
    for block in [1, 3, 8] {
        chains_agree::<DefaultBackend>(block);
    }
}
