//! Tests of the blocked single-kernel MMD test ([`super::mmd_blocked`]): against the dense path on
//! the same data and seed (the oracle), against the statistic's definition, split nulls, threads, and
//! refused settings.

use super::kernels::{Distances, WeightedKernel};
use super::mmd_blocked::{BlockedMmd, Blocking};
use super::mmd_null::{MmdPermutation, gamma_moments};
use super::mmd_statistic::{MmdStatistic, mmd_from_gram};
use super::mmd_tests::worst_relative_gap;
use crate::Points;
use crate::hypothesis::kernels::TestFamily;
use crate::hypothesis::mmd::{FittedMmd, MmdParams};
use crate::hypothesis::resampling::NullDistribution;
use crate::hypothesis::select::{LengthscaleSelection, SelectRule};
use crate::{Params, TwoSamples};
use bke_linalg::DefaultBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn sample(seed: u64, n: usize, shift: f64) -> Points {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    Points::new("z", (0..2 * n).map(|_| shift + rng.random::<f64>()).collect(), 2).unwrap()
}

/// Tiles of 7 points on 23 + 31 pooled points (a ragged last tile) and 5 relabellings per pass
/// (the observed one and 4 draws in the first): many passes, every tile shape.
/// Whether two samples of the same null draws agree to 1e-5 of their mean magnitude: the dense null
/// is computed in single precision ([`MmdPermutation::null_of`]), the blocked one in f64.
fn same_null(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && worst_relative_gap(a, b, 0.0) <= 1e-5
}

fn small_blocks() -> Blocking {
    Blocking { above: 0, tile: 7, label_bytes: 16 * 7 * 5 }
}

fn dense() -> Blocking {
    Blocking { above: usize::MAX, ..Blocking::default() }
}

fn fitted(params: MmdParams) -> FittedMmd {
    let data = TwoSamples { x: sample(1, 23, 0.0), y: sample(2, 31, 0.2) };
    params.check().unwrap().fit::<DefaultBackend>(&data).unwrap()
}

/// The statistic straight from its definition over pairs of points (no Gram matrix, no sums `q`,
/// `s`): the independent oracle.
fn by_definition(x: &Points, y: &Points, k: &WeightedKernel, statistic: MmdStatistic) -> f64 {
    let biased = statistic == MmdStatistic::Biased;
    let sum = |a: &Points, b: &Points, same: bool| -> f64 {
        (0..a.len())
            .flat_map(|i| (0..b.len()).map(move |j| (i, j)))
            .filter(|&(i, j)| biased || !same || i != j)
            .map(|(i, j)| k.eval(a.point(i), b.point(j)))
            .sum()
    };
    let (n, m) = (x.len() as f64, y.len() as f64);
    let (nn, mm) = if biased { (n * n, m * m) } else { (n * (n - 1.0), m * (m - 1.0)) };
    sum(x, x, true) / nn + sum(y, y, true) / mm - 2.0 * sum(x, y, false) / (n * m)
}

/// The blocked test against the dense one on the same data and seed, through [`FittedMmd`]:
/// statistic to 1e-10, every draw to 1e-5 of the null's scale ([`same_null`]), the same p-value; the gamma null's p-value and
/// moments to 1e-10 relative; and the statistic against its definition.
#[test]
fn blocked_test_equals_dense_test() {
    for statistic in [MmdStatistic::Unbiased, MmdStatistic::Biased] {
        for null in [NullDistribution::Permutation, NullDistribution::Gamma] {
            let params = MmdParams {
                statistic,
                null,
                permutations: 57,
                seed: 9,
                selection: LengthscaleSelection::fixed(0.4),
                ..MmdParams::default()
            };
            let f = fitted(params);
            let a = f.clone().with_blocking(dense()).test::<DefaultBackend>().unwrap().outcome;
            let b = f.clone().with_blocking(small_blocks()).test::<DefaultBackend>().unwrap().outcome;
            let what = format!("{statistic:?} {null:?}");
            assert!((a.statistic - b.statistic).abs() < 1e-10, "{what}: {a:?} {b:?}");
            let (x, y) = (sample(1, 23, 0.0), sample(2, 31, 0.2));
            let oracle = by_definition(&x, &y, &WeightedKernel::gaussian(0.4), statistic);
            assert!((b.statistic - oracle).abs() < 1e-12, "{what}: {} {oracle}", b.statistic);
            let close = |u: f64, v: f64| (u - v).abs() <= 1e-10 * (u.abs() + v.abs()) + 1e-14;
            match null {
                NullDistribution::Permutation => {
                    assert_eq!(a.p_value, b.p_value, "{what}");
                    assert_eq!(b.null_samples.len(), 57);
                    assert!(same_null(&a.null_samples, &b.null_samples), "{what}");
                }
                _ => {
                    assert!(close(a.p_value, b.p_value), "{what}: {} {}", a.p_value, b.p_value);
                    assert!(close(a.null_sd, b.null_sd) && close(a.null_mean, b.null_mean), "{what}");
                }
            }
        }
    }
}

/// [`BlockedMmd`] against the dense Gram matrix's sums ([`MmdPermutation`], [`mmd_from_gram`],
/// [`gamma_moments`]) for both kernel families, tiles of 1 to 60 points and 1 to all relabellings per
/// pass.
#[test]
fn blocked_sums_equal_dense_sums() {
    let z = sample(1, 23, 0.0).concat(&sample(2, 31, 0.2)).unwrap();
    let laplace = WeightedKernel { family: TestFamily::LaplaceL1, lengthscale: 0.7, weight: 1.0 };
    for kernel in [WeightedKernel::gaussian(0.4), laplace] {
        let k = Distances::new(&z).gram(&kernel);
        let perm = MmdPermutation::new(&k, 23).unwrap();
        let (mean, var) = gamma_moments(&k, 23);
        for (tile, per_pass) in [(1, 3), (7, 5), (16, 1), (60, 100)] {
            let blocking = Blocking { above: 0, tile, label_bytes: 54.max(16 * tile) * per_pass };
            assert_eq!(blocking.labels(54), per_pass);
            let b = BlockedMmd::new(&z, 23, kernel, blocking).unwrap();
            for stat in [MmdStatistic::Unbiased, MmdStatistic::Biased] {
                let what = format!("{kernel:?} tile {tile}, {per_pass} per pass, {stat:?}");
                let dense = perm.null::<DefaultBackend>(stat, 20, 3).unwrap();
                let r = b.permutation::<DefaultBackend>(stat, 0..20, 3, &()).unwrap();
                let observed = mmd_from_gram(&k, 23, stat).unwrap();
                assert!((r.observed - observed).abs() < 1e-12, "{what}");
                assert!(same_null(&dense, &r.null), "{what}");
                let norm = perm.off_diagonal_norm::<DefaultBackend>().unwrap();
                assert!((r.off_diagonal_norm - norm).abs() <= 1e-12 * norm, "{what}");
                let (o, m, v) = b.gamma::<DefaultBackend>(stat, &()).unwrap();
                assert!((o - observed).abs() < 1e-12, "{what}");
                assert!((m - mean).abs() <= 1e-12 * mean && (v - var).abs() <= 1e-10 * var, "{what}");
            }
        }
    }
}

/// The aggregated tests (BKL-Bayes, the default; MMD-FUSE; MMDAgg) with exact Gram matrices, blocked
/// against dense on the same data and seed: the aggregate and every kernel's statistic to 1e-10, the
/// same p-values.
#[test]
fn blocked_aggregated_tests_equal_dense_ones() {
    let data = TwoSamples { x: sample(1, 23, 0.0), y: sample(2, 31, 0.2) };
    for selection in [
        LengthscaleSelection::default(),
        LengthscaleSelection::new(SelectRule::Fuse),
        LengthscaleSelection::new(SelectRule::Mmdagg),
    ] {
        let params = MmdParams { permutations: 40, seed: 5, selection, dense: true, ..MmdParams::default() };
        let f = params.check().unwrap().fit::<DefaultBackend>(&data).unwrap();
        let a = f.clone().with_blocking(dense()).test::<DefaultBackend>().unwrap();
        let b = f.clone().with_blocking(small_blocks()).test::<DefaultBackend>().unwrap();
        let what = a.selection;
        assert!(f.selected().kernels.len() > 1, "{what}");
        let close = |u: f64, v: f64| (u - v).abs() <= 1e-10 * (1.0 + u.abs());
        assert!(close(a.outcome.statistic, b.outcome.statistic), "{what}: {a:?} {b:?}");
        assert_eq!(a.outcome.p_value, b.outcome.p_value, "{what}");
        assert_eq!(a.u_alpha.is_some(), b.u_alpha.is_some());
        if let (Some(u), Some(v)) = (a.u_alpha, b.u_alpha) {
            assert!(close(u, v), "{what}: {u} {v}");
        }
        for (u, v) in a.kernels.iter().zip(&b.kernels) {
            assert!(close(u.statistic, v.statistic), "{what}: {u:?} {v:?}");
            assert_eq!(u.p_value, v.p_value, "{what}");
        }
    }
}

/// The split null ([`FittedMmd::null_draws`]) is the blocked null, piece by piece, and the report
/// from it equals the report of the whole run.
#[test]
fn split_null_is_the_blocked_null() {
    let params = MmdParams {
        permutations: 30,
        seed: 4,
        selection: LengthscaleSelection::fixed(0.5),
        ..MmdParams::default()
    };
    let f = fitted(params).with_blocking(small_blocks());
    let whole = f.test::<DefaultBackend>().unwrap().outcome;
    let mut pieces = f.null_draws::<DefaultBackend>(0..13).unwrap();
    pieces.extend(f.null_draws::<DefaultBackend>(13..30).unwrap());
    assert_eq!(pieces, whole.null_samples);
    let dense = f.clone().with_blocking(dense()).null_draws::<DefaultBackend>(13..30).unwrap();
    assert!(same_null(&dense, &whole.null_samples[13..]));
    let again = f.test_with_null::<DefaultBackend>(pieces).unwrap().outcome;
    assert_eq!(again.p_value, whole.p_value);
    assert_eq!(again.statistic.to_bits(), whole.statistic.to_bits());
}

/// The blocked results do not depend on the number of threads.
#[test]
fn blocked_results_do_not_depend_on_the_thread_count() {
    let params = MmdParams {
        permutations: 40,
        seed: 2,
        selection: LengthscaleSelection::fixed(0.5),
        ..MmdParams::default()
    };
    let f = fitted(params).with_blocking(small_blocks());
    let in_pool = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| f.test::<DefaultBackend>().unwrap().outcome)
    };
    let a = in_pool(1);
    for threads in [2, 3] {
        let b = in_pool(threads);
        assert_eq!(a.null_samples, b.null_samples);
        assert_eq!(a.statistic.to_bits(), b.statistic.to_bits());
    }
}

/// Bad settings are refused with a reason, never a panic.
#[test]
fn refuses_bad_settings() {
    let z = sample(3, 10, 0.0);
    let k = WeightedKernel::gaussian(1.0);
    let tile0 = Blocking { tile: 0, ..Blocking::default() };
    assert!(BlockedMmd::new(&z, 5, k, tile0).unwrap_err().to_string().contains("tile"));
    assert!(BlockedMmd::new(&z, 1, k, Blocking::default()).is_err());
    assert!(BlockedMmd::new(&z, 9, k, Blocking::default()).is_err());
    assert!(BlockedMmd::new(&z, 5, WeightedKernel::gaussian(f64::NAN), Blocking::default()).is_err());
    let b = BlockedMmd::new(&z, 5, k, Blocking { label_bytes: 0, ..small_blocks() }).unwrap();
    assert!(b.permutation::<DefaultBackend>(MmdStatistic::Linear, 0..3, 0, &()).is_err());
    assert!(b.permutation::<DefaultBackend>(MmdStatistic::Unbiased, 0..0, 0, &()).is_err());
    // one relabelling per pass (the observed one alone in the first) still gives every draw
    let r = b.permutation::<DefaultBackend>(MmdStatistic::Unbiased, 0..3, 0, &()).unwrap();
    assert_eq!(r.null.len(), 3);
    assert!(r.observed.is_finite());
}

/// Progress counts tiles over all passes under one stage name, from 0 to the total.
#[test]
fn progress_counts_every_pass_under_one_stage() {
    struct Record(std::sync::Mutex<Vec<(String, u64, u64)>>);
    impl crate::Progress for Record {
        fn update(&self, stage: &str, done: u64, total: u64) {
            self.0.lock().unwrap().push((stage.into(), done, total));
        }
    }
    let z = sample(1, 23, 0.0).concat(&sample(2, 31, 0.2)).unwrap();
    let b = BlockedMmd::new(&z, 23, WeightedKernel::gaussian(0.5), small_blocks()).unwrap();
    let record = Record(Default::default());
    b.permutation::<DefaultBackend>(MmdStatistic::Unbiased, 0..12, 1, &record).unwrap();
    let seen = record.0.into_inner().unwrap();
    // 54 points in tiles of 7: 8 blocks, 36 tiles a pass; 13 labellings, 5 a pass: 3 passes
    assert!(
        seen.iter().all(|(s, _, t)| s == "permutation null (3 passes over the Gram matrix)" && *t == 108)
    );
    assert!(seen.windows(2).all(|w| w[0].1 <= w[1].1), "{seen:?}");
    assert_eq!((seen[0].1, seen[seen.len() - 1].1), (0, 108));
}
