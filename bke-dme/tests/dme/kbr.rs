//! Kernel Bayes' rule (seed 004 §6, §7, App. F): the weights of KBR(a) and KBR(b) with both
//! regularised inverses against the dense non-symmetric formulas (Gaussian elimination on `KΛ`).

use crate::common::*;
use bke_core::{Kernel, Params, Points};
use bke_dme::kbr::{EvidenceInverse, KbrParams, KbrVariant};
use bke_dme::lfi::LfiData;
use bke_linalg::{DefaultBackend, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// Simulations θ ~ U(−3, 3), x | θ ~ N(θ, 0.5²); `m` prior samples from N(`prior_mean`, 1);
/// observation y. Exact posterior under the N(μ₀, 1) prior: N((μ₀ + 4y)/5, 1/5).
fn linear_gaussian(n: usize, m: usize, prior_mean: f64, y: f64, seed: u64) -> LfiData {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let std = Normal::new(0.0, 1.0).unwrap();
    let theta: Vec<f64> = (0..n).map(|_| rng.random_range(-3.0..3.0)).collect();
    let x: Vec<f64> = theta.iter().map(|t| t + 0.5 * std.sample(&mut rng)).collect();
    let mut prng = ChaCha8Rng::seed_from_u64(seed + 1000);
    let prior: Vec<f64> = (0..m).map(|_| prior_mean + std.sample(&mut prng)).collect();
    LfiData::new(
        Points::from_1d("θ", &theta).unwrap(),
        Points::from_1d("x", &x).unwrap(),
        Points::from_1d("θ̃", &prior).unwrap(),
        vec![y],
    )
    .unwrap()
}

#[test]
fn kbr_weights_match_the_dense_formulas() {
    let data = linear_gaussian(14, 18, 0.3, 0.7, 1);
    let (kt, ks) = (Kernel::se(0.8).unwrap(), Kernel::se(0.6).unwrap());
    let (n, m, lambda) = (14, 18, 1e-2);
    let mut p = kt.gram(&data.theta).unwrap();
    for i in 0..n {
        p[(i, i)] += n as f64 * lambda;
    }
    let (a, _) = naive_solve(&p, &kt.cross_gram(&data.theta, &data.prior).unwrap());
    let beta: Vec<f64> = (0..n).map(|i| (0..m).map(|j| a[(i, j)]).sum::<f64>() / m as f64).collect();
    let k = ks.gram(&data.stats).unwrap();
    let e = Mat::from_fn(n, n, |i, j| k[(i, j)] * beta[j]); // KΛ
    let ky = ks.cross_gram(&data.stats, &Points::from_1d("y", &[0.7]).unwrap()).unwrap();
    for inverse in [EvidenceInverse::Tikhonov, EvidenceInverse::Squared] {
        let delta = 0.05;
        // g(E) k(y): (E + δI)⁻¹ k(y), or E (E² + δI)⁻¹ k(y).
        let r = match inverse {
            EvidenceInverse::Tikhonov => {
                let mut s = e.clone();
                (0..n).for_each(|i| s[(i, i)] += delta);
                naive_solve(&s, &ky).0
            }
            EvidenceInverse::Squared => {
                let mut s = naive_mm(&e, &e);
                (0..n).for_each(|i| s[(i, i)] += delta);
                naive_mm(&e, &naive_solve(&s, &ky).0)
            }
        };
        let r: Vec<f64> = (0..n).map(|i| r[(i, 0)]).collect();
        let weights_a: Vec<f64> =
            (0..m).map(|j| (0..n).map(|i| a[(i, j)] * r[i]).sum::<f64>() / m as f64).collect();
        let weights_b: Vec<f64> = (0..n).map(|i| beta[i] * r[i]).collect();
        for (variant, want, points) in
            [(KbrVariant::A, weights_a, &data.prior), (KbrVariant::B, weights_b, &data.theta)]
        {
            let params = KbrParams {
                kernel_theta: Some(kt.clone()),
                kernel_stats: Some(ks.clone()),
                lambda,
                delta,
                variant,
                inverse,
            };
            let post = params.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
            let emb = post.embedding();
            assert_eq!(emb.points(), points);
            let total: f64 = want.iter().sum();
            for (got, w) in emb.weights().iter().zip(&want) {
                assert!((got - w / total).abs() < 1e-7, "{variant:?} {inverse:?}: {got} vs {}", w / total);
            }
        }
    }
}
