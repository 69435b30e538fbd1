//! Oracles for the BKE model: the dense `mn`-dimensional Gaussian, an explicit Jacobian, Cauchy–Binet
//! in log space, central finite differences, direct GP conditioning, a second backend, thread counts.

use super::params::full_lengthscales;
use super::*;
use crate::estimator::{Params, Predict, Prediction};
use bke_linalg::{Backend, DefaultBackend, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub(super) fn random_points(rng: &mut ChaCha8Rng, n: usize, dim: usize, spread: f64) -> Points {
    let data = (0..n * dim).map(|_| spread * (rng.random::<f64>() * 2.0 - 1.0)).collect();
    Points::new("random", data, dim).unwrap()
}

fn priors() -> Vec<EmbeddingPrior> {
    vec![EmbeddingPrior::Lebesgue, EmbeddingPrior::Unit, EmbeddingPrior::Gaussian { eta: 1.5 }]
}

/// `log N(vec K_zx; 0, 1 1ᵀ ⊗ R + τ² I_mn)` by a dense Cholesky of the `mn × mn` covariance.
fn dense_log_gaussian(x: &Points, z: &Points, p: &BkeParams) -> f64 {
    let (n, m, dim) = (x.len(), z.len(), x.dim());
    let ls = full_lengthscales(&p.lengthscales, dim);
    let k = p.kernel().unwrap();
    let mut y = vec![0.0; n * m];
    for i in 0..n {
        for l in 0..m {
            y[i * m + l] = k.eval(x.point(i), z.point(l));
        }
    }
    let c = Mat::from_fn(n * m, n * m, |a, b| {
        let (l1, l2) = (a % m, b % m);
        p.prior.r(&ls, z.point(l1), z.point(l2)) + if a == b { p.tau2 } else { 0.0 }
    });
    let l = DefaultBackend::cholesky(c.as_ref()).unwrap();
    let mut sol = y.clone();
    DefaultBackend::solve_lower_in_place(
        l.as_ref(),
        Mat::from_col_major(n * m, 1, sol.clone()).unwrap().as_mut(),
    )
    .unwrap();
    // ‖L⁻¹ y‖²
    let mut v = Mat::from_col_major(n * m, 1, std::mem::take(&mut sol)).unwrap();
    DefaultBackend::solve_lower_in_place(l.as_ref(), v.as_mut()).unwrap();
    let quad: f64 = v.col(0).iter().map(|t| t * t).sum();
    -0.5 * (DefaultBackend::cholesky_logdet(l.as_ref()) + quad + (n * m) as f64 * crate::numeric::LN_2PI)
}

/// `Σ_i ½ log det(J_iᵀ J_i)` with `J` formed explicitly from ∂k/∂x (the corrected seed 000 eq. (17)).
fn dense_log_jacobian(x: &Points, z: &Points, p: &BkeParams) -> f64 {
    let (m, dim) = (z.len(), x.dim());
    let k = p.kernel().unwrap();
    let mut total = 0.0;
    let mut g = vec![0.0; dim];
    for xi in x.iter() {
        let mut jac = Mat::zeros(m, dim);
        for l in 0..m {
            k.eval_grad_x(xi, z.point(l), &mut g);
            for d in 0..dim {
                jac[(l, d)] = g[d];
            }
        }
        let jtj = DefaultBackend::gram(jac.as_ref());
        let lf = DefaultBackend::cholesky(jtj.as_ref()).unwrap();
        total += 0.5 * DefaultBackend::cholesky_logdet(lf.as_ref());
    }
    total
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

#[test]
fn eq33_matches_dense_gaussian_and_explicit_jacobian() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for dim in [1, 2, 3, 5] {
        let x = random_points(&mut rng, 17, dim, 2.0);
        // Square Jacobians (m = D) are tested against an exact determinant below; the dense oracle
        // here forms JᵀJ, so it needs m comfortably above D to be accurate itself.
        let z = random_points(&mut rng, if dim > 3 { 2 * dim } else { 5 }, dim, 1.5);
        for prior in priors() {
            for ls in [vec![0.9], (0..dim).map(|d| 0.6 + 0.4 * d as f64).collect::<Vec<_>>()] {
                for tau2 in [0.3, 2.0] {
                    let p = BkeParams::new(ls.clone(), tau2).with_prior(prior);
                    let ml = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap();
                    let dg = dense_log_gaussian(&x, &z, &p);
                    let dj = dense_log_jacobian(&x, &z, &p);
                    assert!(
                        rel(ml.log_gaussian, dg) < 1e-9,
                        "D={dim} {prior:?} {ls:?}: {} vs {dg}",
                        ml.log_gaussian
                    );
                    assert!(
                        rel(ml.log_jacobian, dj) < 1e-9,
                        "D={dim} {prior:?} {ls:?}: {} vs {dj}",
                        ml.log_jacobian
                    );
                    assert!(rel(ml.log_marginal, dg + dj) < 1e-9);
                    let nj =
                        marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p.clone().with_jacobian(false))
                            .unwrap();
                    assert_eq!(nj.log_jacobian, 0.0);
                    assert!(rel(nj.log_marginal, dg) < 1e-9);
                }
            }
        }
    }
}

/// Central differences in (log θ…, log τ²) for every prior, D = 1, 2, 3, 5, iso and ARD, with and
/// without the Jacobian.
#[test]
fn gradients_match_central_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let h: f64 = 1e-5;
    for dim in [1, 2, 3, 5] {
        let x = random_points(&mut rng, 40, dim, 2.0);
        let z = random_points(&mut rng, 6, dim, 1.5);
        for prior in priors() {
            for ls in [vec![0.7], (0..dim).map(|d| 0.5 + 0.5 * d as f64).collect::<Vec<_>>()] {
                for jac in [true, false] {
                    let p = BkeParams::new(ls.clone(), 0.8).with_prior(prior).with_jacobian(jac);
                    let ml = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap();
                    let f = |q: &BkeParams| {
                        marginal_pseudolikelihood::<DefaultBackend>(&x, &z, q).unwrap().log_marginal
                    };
                    for i in 0..ls.len() {
                        let (mut pp, mut pm) = (p.clone(), p.clone());
                        pp.lengthscales[i] *= h.exp();
                        pm.lengthscales[i] *= (-h).exp();
                        let fd = (f(&pp) - f(&pm)) / (2.0 * h);
                        let g = ml.grad_log_lengthscale[i];
                        assert!(
                            (fd - g).abs() <= 1e-6 * g.abs().max(1.0),
                            "D={dim} {prior:?} {ls:?} jac={jac} θ{i}: fd {fd} vs {g}"
                        );
                    }
                    let (mut pp, mut pm) = (p.clone(), p.clone());
                    pp.tau2 *= h.exp();
                    pm.tau2 *= (-h).exp();
                    let fd = (f(&pp) - f(&pm)) / (2.0 * h);
                    let g = ml.grad_log_tau2;
                    assert!(
                        (fd - g).abs() <= 1e-6 * g.abs().max(1.0),
                        "D={dim} {prior:?} τ²: fd {fd} vs {g}"
                    );
                }
            }
        }
    }
}

#[test]
fn thread_counts_agree() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let x = random_points(&mut rng, 3000, 2, 3.0);
    let z = random_points(&mut rng, 30, 2, 3.0);
    for prior in priors() {
        let p = BkeParams::new(vec![0.8, 1.1], 0.7).with_prior(prior);
        let a = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap())
        };
        let (one, three) = (run(1), run(3));
        assert_eq!(one, three, "results must not depend on the thread count");
        assert_eq!(one, a);
    }
}

/// The stream regroups chunks of any sizes into the blocks of the whole-data pass: bit for bit the
/// same result (oracle: `marginal_pseudolikelihood` on all the data), for any thread count.
#[test]
fn streamed_chunks_equal_the_whole_data_bit_for_bit() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for (dim, ls, jacobian) in [(1, vec![0.6], true), (2, vec![0.8, 1.3], true), (5, vec![1.7], false)] {
        let x = random_points(&mut rng, 2000, dim, 3.0);
        let z = random_points(&mut rng, 12, dim, 3.0);
        let p = BkeParams::new(ls, 0.7).with_jacobian(jacobian);
        let whole = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap();
        let plan = PseudolikelihoodPlan::new(&z, &p).unwrap();
        for (sizes, threads) in [(vec![2000], 1), (vec![1, 255, 256, 257, 1000, 231], 3), (vec![7; 286], 2)] {
            let streamed =
                rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                    let mut stream = plan.stream();
                    let mut at = 0;
                    for k in sizes {
                        let rows = at..(at + k).min(x.len());
                        let chunk =
                            Points::new("x", x.as_slice()[rows.start * dim..rows.end * dim].to_vec(), dim);
                        stream.push(&chunk.unwrap()).unwrap();
                        at = rows.end;
                    }
                    assert_eq!((at, stream.len()), (x.len(), x.len()));
                    stream.finish::<DefaultBackend>().unwrap()
                });
            assert_eq!(streamed, whole, "D = {dim}, {threads} threads");
        }
        let e = plan.stream().finish::<DefaultBackend>().unwrap_err().to_string();
        assert!(e.contains("data (0 points)"), "{e}");
        let wrong = random_points(&mut rng, 3, dim + 1, 1.0);
        assert!(matches!(plan.stream().push(&wrong), Err(CoreError::DimensionMismatch { .. })));
    }
}

/// Conditioning at `m` sampled rows is conditioning at those points (whose oracle is
/// `posterior_equals_direct_gp_conditioning`); `m ≥ n` is conditioning at the data; the rows are
/// distinct, ascending and fixed by the seed.
#[test]
fn conditioning_at_sampled_rows_is_conditioning_at_those_points() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let x = random_points(&mut rng, 40, 2, 2.0);
    let q = random_points(&mut rng, 5, 2, 2.5);
    let p = BkeParams::new(vec![0.7], 0.5);
    let rows = BkePosterior::sampled_rows(40, 12, 3);
    assert_eq!(rows.len(), 12);
    assert!(rows.windows(2).all(|w| w[0] < w[1]) && rows[11] < 40);
    assert_eq!(rows, BkePosterior::sampled_rows(40, 12, 3));
    assert_ne!(rows, BkePosterior::sampled_rows(40, 12, 4));
    let sub = BkePosterior::conditioned_at_rows::<DefaultBackend>(&p, &x, 12, 3).unwrap();
    let direct = BkePosterior::conditioned_at::<DefaultBackend>(&p, &x, &x.select(&rows)).unwrap();
    assert_eq!(sub.conditioning_points(), direct.conditioning_points());
    assert_eq!(sub.predict::<DefaultBackend>(&q).unwrap(), direct.predict::<DefaultBackend>(&q).unwrap());
    let all = BkePosterior::conditioned_at_rows::<DefaultBackend>(&p, &x, 40, 3).unwrap();
    let exact = BkePosterior::conditioned_at::<DefaultBackend>(&p, &x, &x).unwrap();
    assert_eq!(all.predict::<DefaultBackend>(&q).unwrap(), exact.predict::<DefaultBackend>(&q).unwrap());
    assert!(BkePosterior::conditioned_at_rows::<DefaultBackend>(&p, &x, 0, 3).is_err());
}

/// Posterior mean and variance against Gaussian conditioning of the joint `(μ(q), μ̂(w))` computed by
/// an eigendecomposition of the joint covariance's noisy block; S-KMSE weights; sampling moments.
#[test]
fn posterior_equals_direct_gp_conditioning() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    for dim in 1..=2 {
        let x = random_points(&mut rng, 25, dim, 2.0);
        let q = random_points(&mut rng, 6, dim, 2.5);
        let z = random_points(&mut rng, 8, dim, 2.0);
        for prior in priors() {
            let p = BkeParams::new(vec![0.6], 0.5).with_prior(prior);
            for at in [None, Some(&z)] {
                let w = at.unwrap_or(&x);
                let post = BkePosterior::conditioned_at::<DefaultBackend>(&p, &x, at.unwrap_or(&x)).unwrap();
                let Prediction { mean, variance: var } = post.predict::<DefaultBackend>(&q).unwrap();
                let cov = post.covariance::<DefaultBackend>(&q).unwrap();
                // direct: y = μ̂(w) ~ N(μ(w), τ²/n I); μ(q), μ(w) jointly GP(0, r)
                let ls = vec![0.6; dim];
                let k = p.kernel().unwrap();
                let n = x.len() as f64;
                let y: Vec<f64> =
                    w.iter().map(|wj| x.iter().map(|xi| k.eval(xi, wj)).sum::<f64>() / n).collect();
                let pw = w.len();
                let a = Mat::from_fn(pw, pw, |i, j| {
                    prior.r(&ls, w.point(i), w.point(j)) + if i == j { p.tau2 / n } else { 0.0 }
                });
                let e = DefaultBackend::sym_eigen(a.as_ref()).unwrap();
                let a_inv = Mat::from_fn(pw, pw, |i, j| {
                    (0..pw).map(|t| e.vectors[(i, t)] * e.vectors[(j, t)] / e.values[t]).sum()
                });
                for s in 0..q.len() {
                    let rq: Vec<f64> = w.iter().map(|wj| prior.r(&ls, q.point(s), wj)).collect();
                    let ainv_rq: Vec<f64> =
                        (0..pw).map(|i| (0..pw).map(|j| a_inv[(i, j)] * rq[j]).sum()).collect();
                    let m_direct: f64 = ainv_rq.iter().zip(&y).map(|(a, b)| a * b).sum();
                    let v_direct = prior.r(&ls, q.point(s), q.point(s))
                        - ainv_rq.iter().zip(&rq).map(|(a, b)| a * b).sum::<f64>();
                    let scale = prior.r(&ls, q.point(s), q.point(s));
                    assert!(
                        (mean[s] - m_direct).abs() < 1e-9 * scale,
                        "{prior:?} mean {} vs {m_direct}",
                        mean[s]
                    );
                    assert!(
                        (var[s] - v_direct.max(0.0)).abs() < 1e-9 * scale,
                        "{prior:?} var {} vs {v_direct}",
                        var[s]
                    );
                    assert!((cov[(s, s)] - var[s]).abs() < 1e-9 * scale);
                    // S-KMSE form of the mean
                    let skmse: f64 = post.weights().iter().zip(&rq).map(|(b, r)| b * r).sum();
                    assert!((skmse - mean[s]).abs() < 1e-12 * scale.max(mean[s].abs()));
                    for t in 0..q.len() {
                        let rt: Vec<f64> = w.iter().map(|wj| prior.r(&ls, q.point(t), wj)).collect();
                        let c_direct = prior.r(&ls, q.point(s), q.point(t))
                            - ainv_rq.iter().zip(&rt).map(|(a, b)| a * b).sum::<f64>();
                        assert!((cov[(s, t)] - c_direct).abs() < 1e-9 * scale);
                    }
                }
                assert_eq!(post.mean(&q).unwrap(), mean);
            }
        }
    }
}

#[test]
fn posterior_samples_have_the_posterior_moments() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let x = random_points(&mut rng, 30, 1, 2.0);
    let q = Points::from_1d("grid", &[-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]).unwrap();
    let p = BkeParams::new(vec![0.5], 1.0);
    let post = p.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let Prediction { mean, variance: var } = post.predict::<DefaultBackend>(&q).unwrap();
    let draws = 4000;
    let s = post.sample::<DefaultBackend>(&q, draws, 42).unwrap();
    assert_eq!((s.nrows(), s.ncols()), (q.len(), draws));
    for i in 0..q.len() {
        let row: Vec<f64> = (0..draws).map(|j| s[(i, j)]).collect();
        let m = row.iter().sum::<f64>() / draws as f64;
        let v = row.iter().map(|t| (t - m).powi(2)).sum::<f64>() / (draws - 1) as f64;
        let se_m = (var[i] / draws as f64).sqrt();
        // 5 standard errors: the seed is fixed, so this is deterministic, and it cannot pass by luck
        assert!((m - mean[i]).abs() <= 5.0 * se_m + 1e-12, "mean {m} vs {}", mean[i]);
        let se_v = var[i] * (2.0 / (draws - 1) as f64).sqrt();
        assert!((v - var[i]).abs() <= 5.0 * se_v + 1e-12, "var {v} vs {}", var[i]);
    }
    // same seed, same draws; draw j does not depend on the number of draws
    let s2 = post.sample::<DefaultBackend>(&q, 10, 42).unwrap();
    for i in 0..q.len() {
        for j in 0..10 {
            assert_eq!(s2[(i, j)], s[(i, j)]);
        }
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    let x = Points::from_rows("x", &[vec![0.0, 1.0], vec![1.0, 2.0], vec![0.5, 0.5]]).unwrap();
    let z = Points::from_rows("z", &[vec![0.0, 0.0], vec![1.0, 1.0]]).unwrap();
    let p = BkeParams::new(vec![1.0], 1.0);
    assert!(marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).is_ok());
    // NaN with row and column
    let e = Points::from_rows("data.csv", &[vec![0.0, 1.0], vec![f64::NAN, 2.0]]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("row 1") && msg.contains("column 0") && msg.contains("data.csv"), "{msg}");
    let e = Points::from_rows("z", &[vec![0.0, f64::INFINITY]]).unwrap_err().to_string();
    assert!(e.contains("row 0") && e.contains("column 1"), "{e}");
    // m < D
    let z1 = Points::from_rows("z", &[vec![0.0, 0.0]]).unwrap();
    let e = marginal_pseudolikelihood::<DefaultBackend>(&x, &z1, &p).unwrap_err().to_string();
    assert!(e.contains("m ≥ D"), "{e}");
    // non-positive lengthscale / τ² / η
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let e =
            marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &BkeParams::new(vec![bad], 1.0)).unwrap_err();
        assert!(e.to_string().contains("lengthscale"), "{e}");
        let e =
            marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &BkeParams::new(vec![1.0], bad)).unwrap_err();
        assert!(e.to_string().contains("tau2"), "{e}");
        let e = marginal_pseudolikelihood::<DefaultBackend>(
            &x,
            &z,
            &BkeParams::new(vec![1.0], 1.0).with_prior(EmbeddingPrior::Gaussian { eta: bad }),
        )
        .unwrap_err();
        assert!(e.to_string().contains("eta"), "{e}");
        assert!(BkeParams::new(vec![bad], 1.0).check().is_err());
        assert!(
            BkePosterior::conditioned_at::<DefaultBackend>(&BkeParams::new(vec![bad], 1.0), &x, &x).is_err()
        );
    }
    // empty data / landmarks
    let empty = Points::new("x", vec![], 2).unwrap();
    let e = marginal_pseudolikelihood::<DefaultBackend>(&empty, &z, &p).unwrap_err().to_string();
    assert!(e.contains("data") && e.contains("empty"), "{e}");
    let e = marginal_pseudolikelihood::<DefaultBackend>(&x, &empty, &p).unwrap_err().to_string();
    assert!(e.contains("landmarks"), "{e}");
    assert!(p.check().unwrap().fit::<DefaultBackend>(&empty).is_err());
    // dimension mismatch: landmarks, ARD lengthscales, queries
    let z3 =
        Points::from_rows("z", &[vec![0.0, 0.0, 0.0], vec![1.0, 1.0, 1.0], vec![2.0, 0.0, 1.0]]).unwrap();
    let e = marginal_pseudolikelihood::<DefaultBackend>(&x, &z3, &p).unwrap_err().to_string();
    assert!(e.contains("dimension mismatch"), "{e}");
    let e = marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &BkeParams::new(vec![1.0, 2.0, 3.0], 1.0))
        .unwrap_err();
    assert!(e.to_string().contains("lengthscales"), "{e}");
    let post = p.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    assert!(post.mean(&z3).is_err());
    assert!(post.predict::<DefaultBackend>(&z3).is_err());
    assert!(post.sample::<DefaultBackend>(&z3, 3, 0).is_err());
}

/// Tiny and huge lengthscales give finite values (no underflow to −∞, no overflow).
#[test]
fn extreme_lengthscales_are_finite() {
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let x = random_points(&mut rng, 200, 2, 10.0);
    let z = random_points(&mut rng, 10, 2, 10.0);
    for theta in [1e-4, 1e-2, 0.1, 1.0, 10.0, 100.0, 1e3] {
        for prior in priors() {
            let ml = marginal_pseudolikelihood::<DefaultBackend>(
                &x,
                &z,
                &BkeParams::new(vec![theta], 1.0).with_prior(prior),
            )
            .unwrap();
            assert!(ml.log_marginal.is_finite(), "θ={theta} {prior:?}: {ml:?}");
            assert!(ml.grad_log_lengthscale[0].is_finite() && ml.grad_log_tau2.is_finite());
        }
    }
}

/// ML-II as an estimator: the fitted posterior is the BKE posterior at the learned hyperparameters
/// conditioned at the landmarks (every input point in `μ̂`), and the JSON has the fields of
/// `bke embed fit`.
#[test]
fn fitted_embedding_predicts_with_the_landmark_posterior() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let x = random_points(&mut rng, 60, 2, 2.0);
    let q = random_points(&mut rng, 5, 2, 2.5);
    let fitted = EmbeddingParams { num_landmarks: 8, ard: true, ..Default::default() }
        .check()
        .unwrap()
        .fit::<DefaultBackend>(&x)
        .unwrap();
    let direct =
        BkePosterior::conditioned_at::<DefaultBackend>(&fitted.params, &x, &fitted.landmarks).unwrap();
    let (a, b) =
        (fitted.predict::<DefaultBackend>(&q).unwrap(), direct.predict::<DefaultBackend>(&q).unwrap());
    for i in 0..q.len() {
        assert!((a.mean[i] - b.mean[i]).abs() < 1e-12 && (a.variance[i] - b.variance[i]).abs() < 1e-12);
    }
    let j = serde_json::to_value(&fitted).unwrap();
    for f in ["tau2", "log_marginal", "median_heuristic", "n_data", "evaluations", "num_landmarks"] {
        assert!(j[f].is_number(), "{f}: {j}");
    }
    assert_eq!(j["lengthscale"].as_array().map(Vec::len), Some(2), "ARD: an array");
    assert_eq!(j["local_optima"][0]["log_marginal"], j["log_marginal"]);
    assert_eq!(j["prior"], "lebesgue");
    assert_eq!(j["landmark_indices"].as_array().map(Vec::len), Some(8));
    assert!(j["scan"][0]["lengthscale"].is_number() && j["median_heuristic_convention"].is_string());
    // Data-independent checks at `check`, dimension checks at `fit`.
    assert!(EmbeddingParams { tau2: 0.0, ..Default::default() }.check().is_err());
    assert!(EmbeddingParams { grid_points: 2, ..Default::default() }.check().is_err());
    let p3 = BkeParams::new(vec![1.0, 1.0, 1.0], 1.0).check().unwrap();
    let e = p3.fit::<DefaultBackend>(&x).unwrap_err().to_string();
    assert!(e.contains("lengthscales") && e.contains("expected 2"), "{e}");
}

#[test]
fn constant_columns_and_overflowing_scales_are_named_errors() {
    use crate::Params;
    use crate::embedding::EmbeddingParams;
    let rows: Vec<Vec<f64>> = (0..20).map(|i| vec![(i as f64 * 0.7).sin(), 5.0]).collect();
    let x = Points::from_rows("x", &rows).unwrap();
    let e = EmbeddingParams::default().check().unwrap().fit::<DefaultBackend>(&x).unwrap_err().to_string();
    assert!(e.contains("column 2 is constant"), "{e}");
    let big: Vec<Vec<f64>> = (0..20).map(|i| vec![(i as f64 * 0.7).sin() * 1e200, i as f64]).collect();
    let x = Points::from_rows("x", &big).unwrap();
    let e = EmbeddingParams::default().check().unwrap().fit::<DefaultBackend>(&x).unwrap_err().to_string();
    assert!(e.contains("column 1 has values up to") && e.contains("standardise"), "{e}");
}

/// The streaming pass's Jacobian sums against an explicit evaluation, for dimensions covering the
/// compile-time-specialised paths (`D ≤ 3`) and the general one (`D ≥ 4`: several 4 × 4 Gram tiles
/// and 8-row leverage tiles, `D = 12` spans two): per point `J_l = k_l ũ_l` (`ũ = (x − z)/θ`),
/// `½ log det JᵀJ` and the leverages `p_l = J_l (JᵀJ)⁻¹ J_lᵀ` by a dense Cholesky, and the gradient
/// sums `Σ_l p_l t_lg` (`t = ‖ũ‖²` for one lengthscale, `ũ_g²` for ARD), to 1e-10 relative.
#[test]
fn streaming_jacobian_sums_match_explicit_leverages() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for dim in [1, 2, 3, 4, 5, 9, 12] {
        let (n, m) = (23, dim + 6);
        let x = random_points(&mut rng, n, dim, 1.5);
        let z = random_points(&mut rng, m, dim, 1.5);
        for ard in [false, true] {
            let ls: Vec<f64> = if ard { (0..dim).map(|d| 0.8 + 0.1 * d as f64).collect() } else { vec![1.1] };
            let p = BkeParams::new(ls.clone(), 0.5);
            let stats = PseudolikelihoodPlan::new(&z, &p).unwrap().partial(&x).unwrap();
            let full = full_lengthscales(&ls, dim);
            let gd = if ard { dim } else { 1 };
            let (mut logvol, mut dlv) = (0.0, vec![0.0; gd]);
            for xi in x.iter() {
                let u: Vec<Vec<f64>> =
                    z.iter().map(|zl| (0..dim).map(|d| (xi[d] - zl[d]) / full[d]).collect()).collect();
                let k: Vec<f64> =
                    u.iter().map(|ul| (-0.5 * ul.iter().map(|v| v * v).sum::<f64>()).exp()).collect();
                let jac = Mat::from_fn(m, dim, |l, d| k[l] * u[l][d]);
                let chol = DefaultBackend::cholesky(DefaultBackend::gram(jac.as_ref()).as_ref()).unwrap();
                logvol += 0.5 * DefaultBackend::cholesky_logdet(chol.as_ref());
                for l in 0..m {
                    let mut y: Vec<f64> = (0..dim).map(|d| jac[(l, d)]).collect();
                    DefaultBackend::cholesky_solve_vec_in_place(chol.as_ref(), &mut y).unwrap();
                    let pl: f64 = (0..dim).map(|d| y[d] * jac[(l, d)]).sum();
                    for (g, v) in dlv.iter_mut().enumerate() {
                        *v += pl * if ard { u[l][g] * u[l][g] } else { u[l].iter().map(|t| t * t).sum() };
                    }
                }
            }
            assert!(
                rel(stats.log_volume, logvol) < 1e-10,
                "D={dim} ard={ard}: {} vs {logvol}",
                stats.log_volume
            );
            for g in 0..gd {
                assert!(
                    rel(stats.dlog_volume[g], dlv[g]) < 1e-10,
                    "D={dim} ard={ard} g={g}: {:?} vs {dlv:?}",
                    stats.dlog_volume
                );
            }
        }
    }
}

/// With `m = D` landmarks the Jacobian `J = diag(k) U` is square, so `½ log det JᵀJ =
/// Σ_l log k_l + log |det U|` exactly (`U` by Gaussian elimination with partial pivoting): the
/// streaming pass (Gram path or, for nearly singular `U`, the Gram–Schmidt / Givens paths) to 1e-10
/// per point, in the general code path (`D ≥ 4`).
#[test]
fn square_jacobian_matches_exact_determinant() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for dim in [4, 5, 7] {
        let x = random_points(&mut rng, 17, dim, 2.0);
        let z = random_points(&mut rng, dim, dim, 1.5);
        let ls: Vec<f64> = (0..dim).map(|d| 0.6 + 0.4 * d as f64).collect();
        let plan = PseudolikelihoodPlan::new(&z, &BkeParams::new(ls.clone(), 0.3)).unwrap();
        for xi in x.iter() {
            let s = plan.partial(&Points::new("x", xi.to_vec(), dim).unwrap()).unwrap();
            let mut a: Vec<Vec<f64>> =
                z.iter().map(|zl| (0..dim).map(|d| (xi[d] - zl[d]) / ls[d]).collect()).collect();
            let mut exact: f64 = a.iter().map(|u| -0.5 * u.iter().map(|t| t * t).sum::<f64>()).sum();
            for c in 0..dim {
                let piv = (c..dim).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
                a.swap(c, piv);
                exact += a[c][c].abs().ln();
                for r in c + 1..dim {
                    let f = a[r][c] / a[c][c];
                    for cc in c..dim {
                        a[r][cc] -= f * a[c][cc];
                    }
                }
            }
            assert!(rel(s.log_volume, exact) < 1e-10, "D={dim}: {} vs {exact}", s.log_volume);
        }
    }
}

/// The upper bound of [`PseudolikelihoodPlan::upper_bound`] bounds the value on every Jacobian path
/// (Gram, Gram–Schmidt and the log-scaled robust path at lengthscales where every kernel value
/// underflows), keeps the Gaussian term exact, equals the value in one dimension, and is finite where
/// a data point sits on a landmark with all others far away.
#[test]
fn upper_bound_bounds_the_value_on_every_path() {
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    for dim in [1, 2, 3, 5, 12] {
        let x = random_points(&mut rng, 300, dim, 3.0);
        let z = random_points(&mut rng, 3 * dim + 10, dim, 3.0);
        for theta in [1e-3, 0.02, 0.1, 0.3, 1.0, 3.0, 30.0] {
            let p = BkeParams::new(vec![theta], 1.0);
            let plan = PseudolikelihoodPlan::new(&z, &p).unwrap();
            let value = plan.finish::<DefaultBackend>(&plan.partial(&x).unwrap()).unwrap();
            let bound_plan = plan.clone().upper_bound();
            let bound = bound_plan.finish::<DefaultBackend>(&bound_plan.partial(&x).unwrap()).unwrap();
            assert!(value.log_marginal.is_finite() && bound.log_marginal.is_finite(), "D={dim} θ={theta}");
            assert_eq!(bound.log_gaussian, value.log_gaussian);
            let slack = bound.log_marginal - value.log_marginal;
            assert!(slack >= -1e-9 * value.log_marginal.abs(), "D={dim} θ={theta}: {slack}");
            if dim == 1 {
                assert!(slack.abs() <= 1e-9 * value.log_marginal.abs(), "D=1 θ={theta}: {slack}");
            }
            assert!(bound.grad_log_lengthscale[0].is_nan());
        }
    }
    // a point on a landmark, every other landmark beyond e^{-700}: the shifted trace is the
    // flushed terms' bound alone
    let z = Points::new("z", vec![0.0, 0.0, 50.0, 0.0, 0.0, 50.0], 2).unwrap();
    let x = Points::new("x", vec![0.0, 0.0, 1.0, 1.0], 2).unwrap();
    let plan = PseudolikelihoodPlan::new(&z, &BkeParams::new(vec![1.0], 1.0)).unwrap().upper_bound();
    let bound = plan.finish::<DefaultBackend>(&plan.partial(&x).unwrap()).unwrap();
    assert!(bound.log_marginal.is_finite(), "{bound:?}");
}
