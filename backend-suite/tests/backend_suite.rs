//! One model test suite run on every compiled linear-algebra backend (as burn's `testgen` macros do
//! for its backends): every estimator fits and predicts on faer, nalgebra and (with `--features
//! openblas`) OpenBLAS, selected at run time through `bke_linalg::Selected` as the CLI and Python do,
//! and its results equal the static faer backend's to 1e-8 (relative to the magnitude, absolute
//! below 1).
//!
//! `cargo test -p bke-backend-suite` (faer, nalgebra);
//! `cargo test -p bke-backend-suite --features openblas` (also OpenBLAS; CI runs it).
//!
//! **Adding an estimator**: write `fn check_x<B: Backend>()` in your section at the bottom (fit with
//! `B` and with `Faer`, compare with [`close`]), and add the line `x: check_x::<B>(),` to your
//! section of the macro. Both sections are append-only, one per area, to keep merges trivial.

use bke_core::{LogDensity, Params, Points, Predict};
use bke_linalg::{Backend, Faer};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

macro_rules! backend_suite {
    ($name:ident, $kind:expr) => {
        mod $name {
            use super::*;
            type B = bke_linalg::Selected;
            const KIND: bke_linalg::BackendKind = $kind;

            suite_tests! {
                // ==== embeddings, fully Bayesian hyperparameters, densities (api; append below) ====
                bke_posterior: check_bke_posterior::<B>(),
                marginal_pseudolikelihood: check_marginal_pseudolikelihood::<B>(),
                ml2_embedding: check_ml2_embedding::<B>(),
                nuts_hyperparameters: check_nuts_hyperparameters::<B>(),
                kernel_student_t: check_kernel_student_t::<B>(),
                kernel_student_t_ard: check_kernel_student_t_ard::<B>(),
                gaussian_kde: check_gaussian_kde::<B>(),
                // ==== kernel tests: MMD, HSIC, witness (tests; append below) ====
                mmd_permutation_null: check_mmd_permutation_null::<B>(),
                mmd_tests_every_selection: check_mmd_tests::<B>(),
                hsic_tests_and_witness: check_hsic_and_witness::<B>(),
                // ==== BaNK, RKS, MKL (bank; append below) ====
                bank_regression: check_bank::<B>(bke_bank::Task::Regression),
                bank_classification: check_bank::<B>(bke_bank::Task::Classification),
                rks_mkl_regression: check_baselines::<B>(bke_bank::Task::Regression),
                rks_mkl_classification: check_baselines::<B>(bke_bank::Task::Classification),
                gp_ard: check_gp_ard::<B>(),
                a_la_carte: check_alac::<B>(),
                rfo: check_rfo::<B>(),
                gbdt: check_gbdt::<B>(),
                cross_validation: check_cv::<B>(),
                // ==== CME, DME, TTGP, LFI (dme; append below) ====
                cme: check_cme::<B>(),
                dme_both_forms_and_parametric: check_dme::<B>(),
                ttgp_every_form: check_ttgp::<B>(),
                ttgp_learned: check_ttgp_learned::<B>(),
                sparse_ttgp: check_sparse_ttgp::<B>(),
                ttblr: check_ttblr::<B>(),
                lfi_posterior_embedding: check_lfi::<B>(),
                kbr: check_kbr::<B>(),
                // ==== GP regression of bke-core (causal; append below) ====
                core_gp_regression: check_core_gp::<B>(),
                // ==== ABC baselines of bke-dme (lv; append below) ====
                abc_rejection_and_smc: check_abc::<B>(),
            }
        }
    };
}

/// `name: call,` → `#[test] fn name() { call }` with the module's backend selected: one line per
/// test in [`backend_suite!`].
macro_rules! suite_tests {
    ($($test:ident: $call:expr,)*) => {
        $(
            #[test]
            fn $test() {
                let _selection = bke_linalg::Selected::enter(KIND).unwrap();
                $call
            }
        )*
    };
}

// Every module runs the suite on `Selected` (what the CLI and Python run) with its backend selected,
// so the models compile twice (`Selected` and the reference `Faer`), not once per backend; the faer
// module also checks that `Selected` reproduces the static `Faer`.
backend_suite!(faer, bke_linalg::BackendKind::Faer);
backend_suite!(nalgebra, bke_linalg::BackendKind::Nalgebra);
#[cfg(feature = "openblas")]
backend_suite!(openblas, bke_linalg::BackendKind::OpenBlas);

/// Asserts `a ≈ b` elementwise to `1e-8 · max(1, |b|)` (equal infinities pass); `what` names the
/// quantity.
fn close(a: &[f64], b: &[f64], what: &str) {
    close_to(a, b, 1e-8, what)
}

/// Asserts `a ≈ b` elementwise to `tol · max(1, |b|)` (equal infinities pass), and prints the
/// largest difference `|a − b| / max(1, |b|)` with the test's name (shown with `--nocapture`).
fn close_to(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let mut worst = 0.0f64;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let diff = if x == y { 0.0 } else { (x - y).abs() / y.abs().max(1.0) };
        assert!(diff <= tol, "{what}[{i}]: {x} vs faer's {y}");
        worst = worst.max(diff);
    }
    let test = std::thread::current().name().unwrap_or("?").to_string();
    println!("max relative difference {worst:.1e} {test}: {what}");
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
    use bke_core::hypothesis::{MmdPermutation, MmdStatistic};
    let xy = clusters(51, 3, 14);
    let gram = Kernel::se(1.1).unwrap().gram(&xy).unwrap();
    let perm = MmdPermutation::new(&gram, 31).unwrap();
    for stat in [MmdStatistic::Unbiased, MmdStatistic::Biased] {
        let (a, b) = (perm.null::<B>(stat, 70, 9).unwrap(), perm.null::<Faer>(stat, 70, 9).unwrap());
        close(&a, &b, "permutation null");
    }
}

/// Statistic, p-value and every kernel's statistic of a test report, for comparing backends.
fn test_numbers(
    outcome: &bke_core::hypothesis::Outcome,
    kernels: &[bke_core::hypothesis::KernelReport],
) -> Vec<f64> {
    let mut v = vec![outcome.statistic, outcome.p_value];
    v.extend(kernels.iter().map(|k| k.statistic));
    v.extend(&outcome.null_samples);
    v
}

/// The MMD test under every selection (single kernels and the aggregated tests).
fn check_mmd_tests<B: Backend>() {
    use bke_core::TwoSamples;
    use bke_core::hypothesis::{BklParams, LengthscaleSelection, MmdParams, SelectRule};
    let data = TwoSamples { x: clusters(40, 2, 40), y: clusters(40, 2, 41) };
    for selection in [
        LengthscaleSelection::default(),
        LengthscaleSelection::new(SelectRule::Mmdagg),
        LengthscaleSelection::new(SelectRule::Fuse),
        LengthscaleSelection::with_bkl(
            SelectRule::BklBayes,
            BklParams { landmarks: 20, ..BklParams::default() },
        ),
    ] {
        let params = MmdParams { permutations: 100, selection, ..MmdParams::default() }.check().unwrap();
        let a = params.fit::<B>(&data).unwrap().test::<B>().unwrap();
        let b = params.fit::<Faer>(&data).unwrap().test::<Faer>().unwrap();
        // the permutation null's GEMM is single precision (MmdPermutation::null_of): ~1e-7 apart,
        // up to ~1e-4 for the nearly diagonal Gram matrices of BKL-Bayes's narrowest kernels on 80 points
        let (x, y) = (test_numbers(&a.outcome, &a.kernels), test_numbers(&b.outcome, &b.kernels));
        close_to(&x, &y, 1e-4, a.selection);
    }
}

/// HSIC (single kernel, permutation; HSICAgg, wild bootstrap) and the witness.
fn check_hsic_and_witness<B: Backend>() {
    use bke_core::TwoSamples;
    use bke_core::hypothesis::{
        HsicParams, LengthscaleSelection, NullDistribution, SelectRule, WitnessParams,
    };
    let data = TwoSamples { x: clusters(40, 2, 42), y: clusters(40, 1, 43) };
    for (selection, null) in [
        (LengthscaleSelection::default(), NullDistribution::Permutation),
        (LengthscaleSelection::new(SelectRule::Hsicagg), NullDistribution::WildBootstrap),
    ] {
        let params =
            HsicParams { permutations: 100, selection, null, ..HsicParams::default() }.check().unwrap();
        let a = params.fit::<B>(&data).unwrap().test::<B>().unwrap();
        let b = params.fit::<Faer>(&data).unwrap().test::<Faer>().unwrap();
        // the biased statistic's permutation null runs in single precision (hsic_null): ~1e-7 apart
        let tol = if null == NullDistribution::Permutation { 1e-5 } else { 1e-8 };
        close_to(
            &test_numbers(&a.outcome, &a.kernels),
            &test_numbers(&b.outcome, &b.kernels),
            tol,
            a.selection,
        );
    }
    let two = TwoSamples { x: clusters(30, 2, 44), y: clusters(30, 2, 45) };
    let grid = clusters(6, 2, 46);
    let params = WitnessParams::default().check().unwrap();
    let a = params.fit::<B>(&two).unwrap().witness::<B>(&grid).unwrap();
    let b = params.fit::<Faer>(&two).unwrap().witness::<Faer>(&grid).unwrap();
    close(&[a.mean, a.lower, a.upper].concat(), &[b.mean, b.lower, b.upper].concat(), "witness");
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

/// Tolerance of the fits whose hyperparameters are learned by multi-start L-BFGS (TTGP, sparse
/// TTGP, TTBLR, LFI). Each start's trajectory agrees across backends to ≈ 1e-12, but starts that
/// reach the same optimum stop anywhere within the optimiser's tolerance of it (`grad_tol` 1e-5,
/// so parameters differ by up to ≈ 1e-6) with log marginals that tie to ≈ 1e-12: a 1e-14 rounding
/// difference may pick another of those starts as the best, whose predictions differ at the
/// optimiser's resolution, not at 1e-8. Every fit at fixed hyperparameters is checked to 1e-8.
const LEARNED: f64 = 1e-5;

/// Transformation pairs `x = y + 0.05 cos 3y`, task pairs `(ỹ, sin ỹ + noise)` (noise sd 0.1:
/// with noise-free targets the learned `σ`, `λ`, `ε` collapse towards 1e-6, 1e-13, 1e-13 and the
/// predictions become ill-conditioned).
fn task_data() -> bke_dme::TaskData {
    let mut rng = ChaCha8Rng::seed_from_u64(60);
    let noise = Normal::new(0.0, 0.1).unwrap();
    let y: Vec<f64> = (0..30).map(|i| -3.0 + 0.2 * i as f64).collect();
    let x: Vec<f64> = y.iter().map(|v| v + 0.05 * (3.0 * v).cos()).collect();
    let yt: Vec<f64> = (0..25).map(|j| -3.0 + 0.24 * j as f64).collect();
    let zt: Vec<f64> = yt.iter().map(|v| v.sin() + noise.sample(&mut rng)).collect();
    let pts = |name: &str, v: &[f64]| Points::from_1d(name, v).unwrap();
    bke_dme::TaskData::new(pts("x", &x), pts("y", &y), pts("ỹ", &yt), zt).unwrap()
}

/// Query points inside and beyond the data.
fn dme_queries() -> Points {
    Points::from_1d("x*", &[-3.5, -2.0, -0.3, 0.55, 1.7, 3.2]).unwrap()
}

/// Compares two predictive distributions.
fn close_prediction(a: &bke_core::Prediction, b: &bke_core::Prediction, tol: f64, what: &str) {
    close_to(&a.mean, &b.mean, tol, &format!("{what} predictive mean"));
    close_to(&a.variance, &b.variance, tol, &format!("{what} predictive variance"));
}

fn check_cme<B: Backend>() {
    use bke_dme::cme::CmeParams;
    let data = task_data();
    let pairs = bke_core::TwoSamples { x: data.x.clone(), y: data.y.clone() };
    let params = CmeParams { lambda: 1e-2, ..Default::default() }.check().unwrap();
    let (a, b) = (params.fit::<B>(&pairs).unwrap(), params.fit::<Faer>(&pairs).unwrap());
    let (q, f) = (dme_queries(), data.x.iter().map(|p| p[0] * p[0]).collect::<Vec<_>>());
    close(
        &a.conditional_mean::<B>(&f, &q).unwrap(),
        &b.conditional_mean::<Faer>(&f, &q).unwrap(),
        "CME mean",
    );
    let (ea, eb) = (a.embedding::<B>(&q, &data.x).unwrap(), b.embedding::<Faer>(&q, &data.x).unwrap());
    close(ea.as_slice(), eb.as_slice(), "CME embedding");
}

/// The nonparametric DME in both computational forms, and the parametric DME.
fn check_dme<B: Backend>() {
    use bke_dme::dme::{DmeForm, DmeParams, ParametricDmeParams};
    let (data, q) = (task_data(), dme_queries());
    for form in [DmeForm::Standard, DmeForm::Alternative] {
        let params = DmeParams { lambda: 1e-3, epsilon: 1e-3, form, ..Default::default() }.check().unwrap();
        let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
        close(a.alpha(), b.alpha(), &format!("DME {form:?} ᾱ"));
        close(&a.predict::<B>(&q).unwrap(), &b.predict::<Faer>(&q).unwrap(), &format!("DME {form:?} f̄"));
        let (va, vb) = (a.embedding_weights::<B>(&q).unwrap(), b.embedding_weights::<Faer>(&q).unwrap());
        close(va.as_slice(), vb.as_slice(), &format!("DME {form:?} embedding weights"));
    }
    let params = ParametricDmeParams { features: 20, seed: 3, ..Default::default() }.check().unwrap();
    let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
    close(a.weights(), b.weights(), "parametric DME weights");
    close(&a.predict::<B>(&q).unwrap(), &b.predict::<Faer>(&q).unwrap(), "parametric DME f̄");
}

/// Every marginal-likelihood form at fixed hyperparameters: value, gradient, conditioned model.
fn check_ttgp<B: Backend>() {
    use bke_core::Kernel;
    use bke_dme::ttgp::{MarginalForm, TtgpParams, log_marginal};
    let (data, q) = (task_data(), dme_queries());
    for form in [MarginalForm::Full, MarginalForm::Map, MarginalForm::Alternative] {
        let tied = TtgpParams::tied(Kernel::se(1.0).unwrap(), Kernel::se(0.8).unwrap(), 0.1, 30, 25);
        let params = TtgpParams { form, ..tied };
        let (a, b) =
            (log_marginal::<B>(&data, &params).unwrap(), log_marginal::<Faer>(&data, &params).unwrap());
        close(&[a.value], &[b.value], &format!("TTGP {form:?} log marginal"));
        close(&a.gradient, &b.gradient, &format!("TTGP {form:?} log-marginal gradient"));
        let valid = params.check().unwrap();
        let (a, b) = (valid.fit::<B>(&data).unwrap(), valid.fit::<Faer>(&data).unwrap());
        close(&a.weights::<B>().unwrap(), &b.weights::<Faer>().unwrap(), &format!("TTGP {form:?} weights"));
        let (pa, pb) = (a.predict::<B>(&q).unwrap(), b.predict::<Faer>(&q).unwrap());
        close_prediction(&pa, &pb, 1e-8, &format!("TTGP {form:?}"));
    }
}

/// Every hyperparameter learned: each start to 1e-8, the chosen model to [`LEARNED`].
fn check_ttgp_learned<B: Backend>() {
    use bke_core::Kernel;
    use bke_dme::learn::Learn;
    use bke_dme::ttgp::TtgpParams;
    let (data, q) = (task_data(), dme_queries());
    let mut params = TtgpParams::tied(Kernel::se(1.0).unwrap(), Kernel::se(0.8).unwrap(), 0.1, 30, 25);
    (params.learn, params.search.starts) = (Learn::all(), 3);
    let valid = params.check().unwrap();
    let (a, b) = (valid.fit::<B>(&data).unwrap(), valid.fit::<Faer>(&data).unwrap());
    assert_eq!(a.starts().len(), b.starts().len(), "TTGP starts");
    for (sa, sb) in a.starts().iter().zip(b.starts()) {
        close(&[sa.log_marginal], &[sb.log_marginal], "TTGP start log marginal");
        close(&sa.params.log_params(), &sb.params.log_params(), "TTGP start log-hyperparameters");
    }
    close_to(&a.params().log_params(), &b.params().log_params(), LEARNED, "learned TTGP log-hyperparameters");
    close_prediction(&a.predict::<B>(&q).unwrap(), &b.predict::<Faer>(&q).unwrap(), LEARNED, "learned TTGP");
}

/// Inducing points at fixed values (1e-8) and learned jointly with `σ` and `ℓ`. The learned
/// inducing points coalesce (measured: 3 of 6 within 1e-3 of each other, one drifting to −6.2,
/// outside the data), where the marginal likelihood is flat in their spread: each start's
/// trajectory then differs across backends by ≈ 1e-4 in the inducing points and ≈ 1e-6 in the
/// predictions while the log marginals agree to ≈ 1e-11. So the learned fit compares its log
/// marginal to [`LEARNED`] and its predictions to 1e-4, not the inducing points themselves.
fn check_sparse_ttgp<B: Backend>() {
    use bke_dme::learn::Learn;
    use bke_dme::sparse::SparseTtgpParams;
    let data = task_data();
    let tasks = bke_core::Dataset::new(data.y_tilde.clone(), data.z_tilde.clone()).unwrap();
    let q = dme_queries();
    for learn in [false, true] {
        let mut params = SparseTtgpParams { inducing: 6, learn_inducing: learn, ..Default::default() };
        params.ttgp.search.starts = 2;
        if learn {
            params.ttgp.learn = Learn { kernel_y: true, sigma: true, ..Learn::none() };
        }
        let valid = params.check().unwrap();
        let (a, b) = (valid.fit::<B>(&tasks).unwrap(), valid.fit::<Faer>(&tasks).unwrap());
        let (la, lb) = (a.log_marginal::<B>().unwrap(), b.log_marginal::<Faer>().unwrap());
        let (pa, pb) = (a.predict::<B>(&q).unwrap(), b.predict::<Faer>(&q).unwrap());
        if learn {
            close_to(&[la], &[lb], LEARNED, "learned sparse TTGP log marginal");
            close_prediction(&pa, &pb, 1e-4, "learned sparse TTGP");
        } else {
            close(a.data().x.as_slice(), b.data().x.as_slice(), "sparse TTGP inducing points");
            close(&[la], &[lb], "sparse TTGP log marginal");
            close_prediction(&pa, &pb, 1e-8, "sparse TTGP");
        }
    }
}

/// Both marginal likelihoods at fixed hyperparameters (1e-8), then everything learned ([`LEARNED`]).
fn check_ttblr<B: Backend>() {
    use bke_dme::ttblr::{TtblrForm, TtblrLearn, TtblrParams, log_marginal};
    let (data, q) = (task_data(), dme_queries());
    for form in [TtblrForm::Full, TtblrForm::Map] {
        let params = TtblrParams { features: 15, seed: 2, form, ..Default::default() };
        let (a, b) =
            (log_marginal::<B>(&data, &params).unwrap(), log_marginal::<Faer>(&data, &params).unwrap());
        close(&[a.0], &[b.0], &format!("TTBLR {form:?} log marginal"));
        close(&a.1, &b.1, &format!("TTBLR {form:?} log-marginal gradient"));
        let valid = params.check().unwrap();
        let (a, b) = (valid.fit::<B>(&data).unwrap(), valid.fit::<Faer>(&data).unwrap());
        close_prediction(&a.predict::<B>(&q).unwrap(), &b.predict::<Faer>(&q).unwrap(), 1e-8, "TTBLR");
    }
    let mut params = TtblrParams { features: 15, seed: 2, learn: TtblrLearn::all(), ..Default::default() };
    params.search.starts = 2;
    let valid = params.check().unwrap();
    let (a, b) = (valid.fit::<B>(&data).unwrap(), valid.fit::<Faer>(&data).unwrap());
    close(a.starts(), b.starts(), "TTBLR start log marginals");
    close_prediction(&a.predict::<B>(&q).unwrap(), &b.predict::<Faer>(&q).unwrap(), LEARNED, "learned TTBLR");
}

/// Simulations of the conjugate model `θ ~ N(0, 1)`, `x | θ ~ N(θ, 0.5²)`, observed `x = 1`.
fn lfi_data() -> bke_dme::lfi::LfiData {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let normal = Normal::new(0.0, 1.0).unwrap();
    let theta: Vec<f64> = (0..120).map(|_| normal.sample(&mut rng)).collect();
    let x: Vec<f64> = theta.iter().map(|t| t + 0.5 * normal.sample(&mut rng)).collect();
    let prior: Vec<f64> = (0..100).map(|_| normal.sample(&mut rng)).collect();
    let pts = |name: &str, v: &[f64]| Points::from_1d(name, v).unwrap();
    bke_dme::lfi::LfiData::new(pts("θ", &theta), pts("x", &x), pts("θ̃", &prior), vec![1.0]).unwrap()
}

/// Algorithm 8.1 at the default hyperparameters (1e-8) and learned from `q̄` ([`LEARNED`]).
fn check_lfi<B: Backend>() {
    use bke_dme::lfi::{LfiLearnParams, LfiParams};
    let data = lfi_data();
    let mut learn = LfiLearnParams::default();
    learn.search.starts = 2;
    for (learn, tol) in [(None, 1e-8), (Some(learn), LEARNED)] {
        let params = LfiParams { learn, ..Default::default() }.check().unwrap();
        let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
        close_to(a.embedding().weights(), b.embedding().weights(), tol, "LFI posterior embedding weights");
        close_to(&[a.q_bar()], &[b.q_bar()], tol, "LFI q̄");
    }
}

/// Kernel Bayes' rule, both variants with both evidence inverses.
fn check_kbr<B: Backend>() {
    use bke_dme::kbr::{EvidenceInverse, KbrParams, KbrVariant};
    let data = lfi_data();
    for variant in [KbrVariant::A, KbrVariant::B] {
        for inverse in [EvidenceInverse::Tikhonov, EvidenceInverse::Squared] {
            let params = KbrParams { variant, inverse, ..Default::default() }.check().unwrap();
            let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
            close(a.embedding().weights(), b.embedding().weights(), &format!("KBR {variant:?} {inverse:?}"));
        }
    }
}

// ==== check functions: GP regression of bke-core (causal; append below) ====

/// `bke_core::gp`: the fitted evidence to 1e-8, residuals to 1e-6 (the multi-start optimiser may
/// stop at slightly different points on different backends).
fn check_core_gp<B: Backend>() {
    use bke_core::gp::GpParams;
    let data = supervised(40, bke_bank::Task::Regression, 33);
    let params = GpParams::default().check().unwrap();
    let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
    assert!((a.log_marginal() - b.log_marginal()).abs() < 1e-8, "GP log marginal");
    for (u, v) in a.residuals().iter().zip(b.residuals()) {
        assert!((u - v).abs() < 1e-6, "GP residuals: {u} vs {v}");
    }
}

// ==== check functions: ABC baselines of bke-dme (lv; append below) ====

/// Rejection ABC and SMC-ABC (whose perturbation kernel is factorised by the backend) on the
/// conjugate model.
fn check_abc<B: Backend>() {
    use bke_dme::abc::{Marginal, ProductPrior, RejectionAbcParams, Simulator, SmcAbcData, SmcAbcParams};
    let data = lfi_data();
    let params = RejectionAbcParams { quantile: 0.2, ..Default::default() }.check().unwrap();
    let (a, b) = (params.fit::<B>(&data).unwrap(), params.fit::<Faer>(&data).unwrap());
    close(a.posterior.points.as_slice(), b.posterior.points.as_slice(), "rejection ABC samples");
    let simulator: Simulator = std::sync::Arc::new(|t: &[f64], rng: &mut ChaCha8Rng| {
        Some(vec![t[0] + 0.5 * Normal::new(0.0, 1.0).unwrap().sample(rng)])
    });
    let prior = ProductPrior { marginals: vec![Marginal::Normal { mean: 0.0, sd: 1.0 }] };
    let smc = SmcAbcData { prior, simulator, observed: vec![1.0] };
    let params =
        SmcAbcParams { particles: 100, max_simulations: 1500, ..Default::default() }.check().unwrap();
    let (a, b) = (params.fit::<B>(&smc).unwrap(), params.fit::<Faer>(&smc).unwrap());
    close(a.posterior.points.as_slice(), b.posterior.points.as_slice(), "SMC-ABC particles");
    close(&a.posterior.weights, &b.posterior.weights, "SMC-ABC weights");
}
