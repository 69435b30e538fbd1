//! One model test suite instantiated for every compiled linear-algebra backend (as burn's
//! `testgen` macros do for its backends): every estimator fits and predicts on faer, nalgebra and
//! (with `--features openblas`) OpenBLAS, and its results equal faer's to 1e-8 (relative to the
//! magnitude, absolute below 1).
//!
//! `cargo test -p bke-bench --test backend_suite` (faer, nalgebra);
//! `cargo test -p bke-bench --features openblas --test backend_suite` (also OpenBLAS; CI runs it).
//!
//! **Adding an estimator**: write `fn check_x<B: Backend>()` in your section at the bottom (fit with
//! `B` and with `Faer`, compare with [`close`]), and list `#[test] fn x() { check_x::<B>() }` in your
//! section of the macro. Both sections are append-only, one per area, to keep merges trivial.

use bke_core::{LogDensity, Params, Points, Predict};
use bke_linalg::{Backend, Faer};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

macro_rules! backend_suite {
    ($name:ident, $backend:ty) => {
        mod $name {
            use super::*;
            type B = $backend;

            // ==== embeddings, fully Bayesian hyperparameters, densities (api; append below) ====
            #[test]
            fn bke_posterior() {
                check_bke_posterior::<B>()
            }
            #[test]
            fn marginal_pseudolikelihood() {
                check_marginal_pseudolikelihood::<B>()
            }
            #[test]
            fn ml2_embedding() {
                check_ml2_embedding::<B>()
            }
            #[test]
            fn nuts_hyperparameters() {
                check_nuts_hyperparameters::<B>()
            }
            #[test]
            fn kernel_student_t() {
                check_kernel_student_t::<B>()
            }
            #[test]
            fn kernel_student_t_ard() {
                check_kernel_student_t_ard::<B>()
            }
            #[test]
            fn gaussian_kde() {
                check_gaussian_kde::<B>()
            }

            // ==== kernel tests: MMD, HSIC, witness (tests; append below) ====
            #[test]
            fn mmd_permutation_null() {
                check_mmd_permutation_null::<B>()
            }

            // ==== BaNK, RKS, MKL (bank; append below) ====
            #[test]
            fn bank_regression() {
                check_bank::<B>(bke_bank::Task::Regression)
            }
            #[test]
            fn bank_classification() {
                check_bank::<B>(bke_bank::Task::Classification)
            }
            #[test]
            fn rks_mkl_regression() {
                check_baselines::<B>(bke_bank::Task::Regression)
            }
            #[test]
            fn rks_mkl_classification() {
                check_baselines::<B>(bke_bank::Task::Classification)
            }
            #[test]
            fn gp_ard() {
                check_gp_ard::<B>()
            }
            #[test]
            fn a_la_carte() {
                check_alac::<B>()
            }
            #[test]
            fn rfo() {
                check_rfo::<B>()
            }
            #[test]
            fn gbdt() {
                check_gbdt::<B>()
            }
            #[test]
            fn cross_validation() {
                check_cv::<B>()
            }

            // ==== CME, DME, TTGP, LFI (dme; append below) ====
        }
    };
}

backend_suite!(faer, bke_linalg::Faer);
backend_suite!(nalgebra, bke_linalg::Nalgebra);
#[cfg(feature = "openblas")]
backend_suite!(openblas, bke_linalg::OpenBlas);

/// Asserts `a ≈ b` elementwise to `1e-8 · max(1, |b|)` (equal infinities pass); `what` names the
/// quantity.
fn close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let ok = x == y || (x - y).abs() <= 1e-8 * y.abs().max(1.0);
        assert!(ok, "{what}[{i}]: {x} vs faer's {y}");
    }
}

/// `n` points in `dim` dimensions from two Gaussian clusters (seeded).
fn clusters(n: usize, dim: usize, seed: u64) -> Points {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let z = Normal::new(0.0, 1.0).unwrap();
    let v: Vec<f64> =
        (0..n * dim).map(|i| z.sample(&mut rng) + if (i / dim) % 3 == 0 { 2.5 } else { -0.5 }).collect();
    Points::new("x", v, dim).unwrap()
}

// ==== check functions: embeddings, fully Bayesian hyperparameters, densities (api; append below) ====

fn check_bke_posterior<B: Backend>() {
    use bke_core::embedding::{BkeParams, BkePosterior};
    let (x, q, z) = (clusters(80, 2, 1), clusters(9, 2, 2), clusters(12, 2, 3));
    let p = BkeParams::new(vec![0.7, 1.3], 0.5);
    let (a, b) = (p.check().unwrap().fit::<B>(&x).unwrap(), p.check().unwrap().fit::<Faer>(&x).unwrap());
    let (pa, pb) = (a.predict::<B>(&q).unwrap(), b.predict::<Faer>(&q).unwrap());
    close(&pa.mean, &pb.mean, "posterior mean");
    close(&pa.variance, &pb.variance, "posterior variance");
    let (sa, sb) = (a.sample::<B>(&q, 5, 9).unwrap(), b.sample::<Faer>(&q, 5, 9).unwrap());
    close(sa.as_slice(), sb.as_slice(), "posterior draws");
    let (ca, cb) = (
        BkePosterior::conditioned_at::<B>(&p, &x, &z).unwrap(),
        BkePosterior::conditioned_at::<Faer>(&p, &x, &z).unwrap(),
    );
    close(ca.weights(), cb.weights(), "S-KMSE weights at landmarks");
}

/// Every prior on the embedding, isotropic and ARD lengthscales.
fn check_marginal_pseudolikelihood<B: Backend>() {
    use bke_core::embedding::{BkeParams, EmbeddingPrior, marginal_pseudolikelihood};
    let (x, z) = (clusters(300, 2, 4), clusters(15, 2, 5));
    for prior in [EmbeddingPrior::Lebesgue, EmbeddingPrior::Unit, EmbeddingPrior::Gaussian { eta: 1.5 }] {
        for ls in [vec![0.8], vec![0.8, 1.1]] {
            let p = BkeParams::new(ls, 0.7).with_prior(prior);
            let (a, b) = (
                marginal_pseudolikelihood::<B>(&x, &z, &p).unwrap(),
                marginal_pseudolikelihood::<Faer>(&x, &z, &p).unwrap(),
            );
            close(
                &[a.log_marginal, a.log_jacobian, a.grad_log_tau2],
                &[b.log_marginal, b.log_jacobian, b.grad_log_tau2],
                "pseudolikelihood",
            );
            close(&a.grad_log_lengthscale, &b.grad_log_lengthscale, "gradient");
        }
    }
}

fn check_ml2_embedding<B: Backend>() {
    use bke_core::embedding::EmbeddingParams;
    let (x, q) = (clusters(120, 2, 6), clusters(6, 2, 7));
    let params =
        EmbeddingParams { num_landmarks: 12, grid_points: 15, ..Default::default() }.check().unwrap();
    let (a, b) = (params.fit::<B>(&x).unwrap(), params.fit::<Faer>(&x).unwrap());
    close(&a.params.lengthscales, &b.params.lengthscales, "learned lengthscale");
    close(&[a.log_marginal], &[b.log_marginal], "log marginal");
    let scan =
        |f: &bke_core::embedding::FittedEmbedding| f.scan.iter().map(|s| s.log_marginal).collect::<Vec<_>>();
    close(&scan(&a), &scan(&b), "scan");
    let (pa, pb) = (a.predict::<B>(&q).unwrap(), b.predict::<Faer>(&q).unwrap());
    close(&pa.mean, &pb.mean, "ML-II posterior mean");
    close(&pa.variance, &pb.variance, "ML-II posterior variance");
}

/// The hyperparameter posterior (the target NUTS samples) agrees to 1e-8 at fixed points. The draws
/// themselves are compared statistically: a Hamiltonian trajectory amplifies the 1e-14 differences
/// between backends (measured: 1e-8 relative after ≈ 50 transitions), so the posterior means of
/// both chains sets must agree within their Monte-Carlo standard errors.
fn check_nuts_hyperparameters<B: Backend>() {
    use bke_core::bayes::{HyperPosterior, SampleParams};
    use bke_core::embedding::hold_out_landmarks;
    use bke_core::nuts::{NutsParams, Target};
    let x = clusters(40, 1, 8);
    // One landmark (m = D): the joint posterior of (θ, τ²) is proper (see bke_core::bayes).
    let params = SampleParams {
        num_landmarks: 1,
        nuts: NutsParams { chains: 4, warmup: 150, draws: 150, seed: 2, ..NutsParams::default() },
        ..SampleParams::default()
    }
    .check()
    .unwrap();
    let (data, z, _) = hold_out_landmarks(&x, 1, 2).unwrap();
    let (ta, tb) = (
        HyperPosterior::<B>::new(&data, &z, &params).unwrap(),
        HyperPosterior::<Faer>::new(&data, &z, &params).unwrap(),
    );
    for u in [[-1.0, 0.5], [0.2, -2.0], [1.5, 1.0]] {
        let (mut ga, mut gb) = ([0.0; 2], [0.0; 2]);
        let (la, lb) = (ta.log_density_grad(&u, &mut ga).unwrap(), tb.log_density_grad(&u, &mut gb).unwrap());
        close(&[la, ga[0], ga[1]], &[lb, gb[0], gb[1]], "log posterior and gradient");
    }
    let (a, b) = (params.fit::<B>(&x).unwrap(), params.fit::<Faer>(&x).unwrap());
    for (sa, sb) in
        [(a.lengthscale_summary(0), b.lengthscale_summary(0)), (a.tau2_summary(), b.tau2_summary())]
    {
        let tol = 4.0 * (sa.mcse_mean.powi(2) + sb.mcse_mean.powi(2)).sqrt();
        assert!(
            (sa.mean - sb.mean).abs() <= tol,
            "posterior mean {} vs faer's {} (± {tol})",
            sa.mean,
            sb.mean
        );
    }
}

fn check_kernel_student_t<B: Backend>() {
    use bke_core::density::{KernelStudentTParams, SelectOptions};
    let x = clusters(40, 1, 9);
    let q = Points::from_1d("q", &[-2.0, -0.4, 0.3, 2.6, 40.0]).unwrap();
    let select = SelectOptions {
        lengthscale_factors: vec![0.3, 0.6, 1.2],
        sigma0_sq: vec![0.3, 3.0],
        beta: vec![0.01, 1.0],
        alpha_offsets: vec![0.3, 3.0],
        folds: 3,
        ..Default::default()
    };
    let params = KernelStudentTParams { select, ..Default::default() }.check().unwrap();
    let (a, b) = (params.fit::<B>(&x).unwrap(), params.fit::<Faer>(&x).unwrap());
    assert_eq!((a.kernel(), a.niw()), (b.kernel(), b.niw()), "selected hyperparameters");
    close(&[a.cv_log_lik().unwrap()], &[b.cv_log_lik().unwrap()], "CV log-likelihood");
    let (na, nb) = (a.normalisation().unwrap(), b.normalisation().unwrap());
    close(&[na.log_z], &[nb.log_z], "log normaliser");
    close(&a.log_density::<B>(&q).unwrap(), &b.log_density::<Faer>(&q).unwrap(), "log density");
    let (sa, sb) = (a.sample::<B>(30, 4).unwrap(), b.sample::<Faer>(30, 4).unwrap());
    close(sa.points.as_slice(), sb.points.as_slice(), "samples");
}

/// The unnormalised kernel student-t with a fixed ARD kernel on more points than one block.
fn check_kernel_student_t_ard<B: Backend>() {
    use bke_core::Kernel;
    use bke_core::density::{KernelStudentT, NiwParams};
    let (x, q) = (clusters(600, 2, 12), clusters(700, 2, 13));
    let k = Kernel::se_ard(vec![0.4, 0.7]).unwrap();
    let p = NiwParams { alpha: 2.0, beta: 0.1, sigma0_sq: 0.5 };
    let a = KernelStudentT::with_kernel::<B>(k.clone(), &x, p).unwrap();
    let b = KernelStudentT::with_kernel::<Faer>(k, &x, p).unwrap();
    close(&a.log_unnormalised::<B>(&q).unwrap(), &b.log_unnormalised::<Faer>(&q).unwrap(), "log t");
}

fn check_gaussian_kde<B: Backend>() {
    use bke_core::density::KdeParams;
    let (x, q) = (clusters(50, 2, 10), clusters(8, 2, 11));
    let params = KdeParams::default().check().unwrap();
    let (a, b) = (params.fit::<B>(&x).unwrap(), params.fit::<Faer>(&x).unwrap());
    close(a.bandwidths(), b.bandwidths(), "KDE bandwidths");
    close(&a.log_density::<B>(&q).unwrap(), &b.log_density::<Faer>(&q).unwrap(), "KDE log density");
}

// ==== check functions: kernel tests (tests; append below) ====

/// The GEMM-batched permutation null of both quadratic MMD statistics.
fn check_mmd_permutation_null<B: Backend>() {
    use bke_core::Kernel;
    use bke_core::hypothesis::mmd::{MmdPermutation, MmdStatistic};
    let xy = clusters(51, 3, 14);
    let gram = Kernel::se(1.1).unwrap().gram(&xy).unwrap();
    let perm = MmdPermutation::new(&gram, 31).unwrap();
    for stat in [MmdStatistic::Unbiased, MmdStatistic::Biased] {
        let (a, b) = (perm.null::<B>(stat, 70, 9).unwrap(), perm.null::<Faer>(stat, 70, 9).unwrap());
        close(&a, &b, "permutation null");
    }
}

// ==== check functions: BaNK, RKS, MKL (bank; append below) ====

/// A seeded 2-D supervised data set: a smooth regression target, or its sign as 0/1 labels.
fn supervised(n: usize, task: bke_bank::Task, seed: u64) -> bke_core::Dataset {
    let x = clusters(n, 2, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 100);
    let noise = Normal::new(0.0, 0.2).unwrap();
    let y = x
        .iter()
        .map(|p| {
            let f = (1.3 * p[0]).sin() + 0.5 * p[1] + noise.sample(&mut rng);
            match task {
                bke_bank::Task::Regression => f,
                bke_bank::Task::Classification => f64::from(f > 0.3),
            }
        })
        .collect();
    bke_core::Dataset::new(x, y).unwrap()
}

/// Fits `params` on `B` and on faer, and compares the predictions on `q`.
fn same_predictions<P, B>(params: &bke_core::Valid<P>, data: &bke_core::Dataset, q: &Points, what: &str)
where
    B: Backend,
    P: bke_core::Estimator<Data = bke_core::Dataset>,
    P::Fitted: Predict<Output = bke_core::Prediction>,
    P::Error: std::fmt::Debug,
    <P::Fitted as Predict>::Error: std::fmt::Debug,
{
    let (a, b) = (params.fit::<B>(data).unwrap(), params.fit::<Faer>(data).unwrap());
    let (pa, pb) = (a.predict::<B>(q).unwrap(), b.predict::<Faer>(q).unwrap());
    close(&pa.mean, &pb.mean, &format!("{what} predictive mean"));
    close(&pa.variance, &pb.variance, &format!("{what} predictive variance"));
}

fn check_bank<B: Backend>(task: bke_bank::Task) {
    use bke_bank::BankParams;
    let (data, q) = (supervised(60, task, 20), clusters(7, 2, 21));
    let params =
        BankParams { task, frequencies: 6, iterations: 12, samples: 4, seed: 3, ..Default::default() };
    let params = params.check().unwrap();
    let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
    let (sa, sb) = (a.spectral_mixture(), b.spectral_mixture());
    close(&sa.weights, &sb.weights, "BaNK mixture weights");
    close(&sa.means.concat(), &sb.means.concat(), "BaNK mixture means");
    let (pa, pb) = (a.predict::<B>(&q).unwrap(), b.predict::<Faer>(&q).unwrap());
    close(&pa.mean, &pb.mean, "BaNK predictive mean");
    close(&pa.variance, &pb.variance, "BaNK predictive variance");
}

fn check_baselines<B: Backend>(task: bke_bank::Task) {
    use bke_bank::baselines::{Baseline, BaselineParams};
    let (data, q) = (supervised(60, task, 22), clusters(7, 2, 23));
    for kind in [Baseline::Rks, Baseline::Mkl] {
        let params = BaselineParams { kind, task, frequencies: 12, seed: 4, ..Default::default() };
        same_predictions::<_, B>(&params.check().unwrap(), &data, &q, &format!("{kind:?}"));
    }
}

fn check_gp_ard<B: Backend>() {
    use bke_bank::gp::GpArdParams;
    let (data, q) = (supervised(40, bke_bank::Task::Regression, 24), clusters(7, 2, 25));
    let params = GpArdParams { max_iter: 30, ..Default::default() }.check().unwrap();
    same_predictions::<_, B>(&params, &data, &q, "GP-ARD");
}

fn check_alac<B: Backend>() {
    use bke_bank::alac::AlacParams;
    let (data, q) = (supervised(50, bke_bank::Task::Regression, 26), clusters(7, 2, 27));
    let params = AlacParams {
        frequencies: 8,
        components: 2,
        restarts: 2,
        restart_iterations: 5,
        max_iterations: 20,
        seed: 5,
        ..Default::default()
    };
    same_predictions::<_, B>(&params.check().unwrap(), &data, &q, "A la Carte");
}

fn check_rfo<B: Backend>() {
    use bke_bank::rfo::RfoParams;
    let (data, q) = (supervised(50, bke_bank::Task::Classification, 28), clusters(7, 2, 29));
    let params =
        RfoParams { frequencies: 8, components: 2, max_iterations: 20, seed: 6, ..Default::default() };
    same_predictions::<_, B>(&params.check().unwrap(), &data, &q, "RFO");
}

fn check_gbdt<B: Backend>() {
    use bke_bank::gbdt::GbdtParams;
    for task in [bke_bank::Task::Regression, bke_bank::Task::Classification] {
        let (data, q) = (supervised(50, task, 30), clusters(7, 2, 31));
        let params = GbdtParams { task, stages: 10, ..Default::default() }.check().unwrap();
        same_predictions::<_, B>(&params, &data, &q, "GBDT");
    }
}

fn check_cv<B: Backend>() {
    use bke_bank::cv::{CvParams, Method};
    let data = supervised(45, bke_bank::Task::Regression, 32);
    let mut params = CvParams::new(Method::Mkl, bke_bank::Task::Regression);
    (params.folds, params.baseline.frequencies) = (3, 8);
    let params = params.check().unwrap();
    let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
    close(&a.folds, &b.folds, "CV fold scores");
    close(&a.predictions, &b.predictions, "CV held-out predictions");
}

// ==== check functions: CME, DME, TTGP, LFI (dme; append below) ====
