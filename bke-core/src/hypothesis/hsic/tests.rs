//! Tests of the HSIC test: statistics against brute-force definitions, the batched permutation null
//! against recomputation on permuted data, the wild bootstrap against its definition, determinism
//! across threads, the aggregated tests' power and level.

use super::*;
use crate::hypothesis::SelectRule;
use crate::hypothesis::aggregate::KernelStatistics;
use crate::hypothesis::hsic_null::{permutation_stats, permutation_stats_in};
use crate::hypothesis::mmd_null::draw_permutation;
use crate::hypothesis::resampling::draw_rng;

use bke_linalg::DefaultBackend;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn normals(rng: &mut ChaCha8Rng, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u1: f64 = rng.random::<f64>().max(1e-300);
            let u2: f64 = rng.random();
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        })
        .collect()
}

/// `(x, y)` with `y = ρ x + noise` (2-D x, 1-D y).
fn dependent(seed: u64, n: usize, rho: f64) -> (Points, Points) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = normals(&mut rng, 2 * n);
    let e = normals(&mut rng, n);
    let y: Vec<f64> = (0..n).map(|i| rho * x[2 * i] + e[i]).collect();
    (Points::new("x", x, 2).unwrap(), Points::from_1d("y", &y).unwrap())
}

fn run(x: &Points, y: &Points, params: &HsicParams) -> Result<HsicReport, CoreError> {
    params
        .check()?
        .fit::<DefaultBackend>(&TwoSamples { x: x.clone(), y: y.clone() })?
        .test::<DefaultBackend>()
}

fn fixed(l: f64) -> LengthscaleSelection {
    LengthscaleSelection::fixed(l)
}

#[test]
fn statistics_match_definitions() {
    let (x, y) = dependent(1, 9, 0.8);
    let (kx, ky) = (WeightedKernel::gaussian(1.2), WeightedKernel::gaussian(0.7));
    let (k, l) = (Distances::new(&x).gram(&kx), Distances::new(&y).gram(&ky));
    let n = 9usize;
    let nf = n as f64;
    // biased: V-statistic expansion of Gretton et al. (2005)
    let (mut t1, mut sk, mut sl, mut t3) = (0.0, 0.0, 0.0, 0.0);
    for i in 0..n {
        for j in 0..n {
            t1 += k[(i, j)] * l[(i, j)];
            sk += k[(i, j)];
            sl += l[(i, j)];
            for q in 0..n {
                t3 += k[(i, j)] * l[(i, q)];
            }
        }
    }
    let v = t1 / (nf * nf) + sk * sl / nf.powi(4) - 2.0 * t3 / nf.powi(3);
    let b = hsic_statistic(&x, &y, &kx, &ky, HsicStatistic::Biased).unwrap();
    assert!((b - v).abs() < 1e-14, "{b} vs {v}");
    // unbiased: brute-force order-4 U-statistic over distinct (i, j, q, r)
    let (mut u, mut count) = (0.0, 0.0);
    for i in 0..n {
        for j in 0..n {
            for q in 0..n {
                for r in 0..n {
                    if i == j || i == q || i == r || j == q || j == r || q == r {
                        continue;
                    }
                    u += k[(i, j)] * l[(i, j)] + k[(i, j)] * l[(q, r)] - 2.0 * k[(i, j)] * l[(i, q)];
                    count += 1.0;
                }
            }
        }
    }
    let hu = hsic_statistic(&x, &y, &kx, &ky, HsicStatistic::Unbiased).unwrap();
    assert!((hu - u / count).abs() < 1e-13, "{hu} vs {}", u / count);
}

/// Within this of the largest `|draw|`, single-precision draws agree with double-precision ones.
const SINGLE_TOLERANCE: f64 = 1e-5;

/// `single` within [`SINGLE_TOLERANCE`] of `double`, draw by draw.
fn assert_close_in_single(single: &KernelStatistics, double: &KernelStatistics) {
    assert_eq!(single.observed, double.observed);
    for (s, d) in single.draws.iter().zip(&double.draws) {
        let scale = d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in s.iter().zip(d) {
            assert!((a - b).abs() <= SINGLE_TOLERANCE * scale, "{a} vs {b} (scale {scale})");
        }
    }
}

/// Every permutation draw equals the statistic recomputed on explicitly permuted `y`, for a
/// collection of 2 × 3 kernel pairs, in batches of 4 (several GEMMs) and in one; the biased
/// statistic's default single-precision draws agree with them to [`SINGLE_TOLERANCE`].
#[test]
fn permutation_draws_match_recomputation() {
    let (x, y) = dependent(2, 15, 0.5);
    let kxs = [WeightedKernel::gaussian(1.0), WeightedKernel::gaussian(0.4)];
    let kys = [WeightedKernel::gaussian(0.8), WeightedKernel::gaussian(2.0), WeightedKernel::gaussian(0.3)];
    let ks: Vec<Mat> = kxs.iter().map(|k| Distances::new(&x).gram(k)).collect();
    let ls: Vec<Mat> = kys.iter().map(|k| Distances::new(&y).gram(k)).collect();
    for stat in [HsicStatistic::Biased, HsicStatistic::Unbiased] {
        let double =
            |batch| permutation_stats_in::<DefaultBackend, f64>(&ks, &ls, stat, 25, 5, batch, &()).unwrap();
        let (batched, one) = (double(Some(4)), double(None));
        for (pair, draws) in batched.draws.iter().enumerate() {
            let (kx, ky) = (&kxs[pair / 3], &kys[pair % 3]);
            let direct = hsic_statistic(&x, &y, kx, ky, stat).unwrap();
            assert!((batched.observed[pair] - direct).abs() < 1e-13);
            for (b, v) in draws.iter().enumerate() {
                let mut idx = vec![0usize; 15];
                draw_permutation(&mut draw_rng(5, b), &mut idx);
                let direct = hsic_statistic(&x, &y.select(&idx), kx, ky, stat).unwrap();
                assert!((v - direct).abs() < 1e-13, "{stat:?} pair {pair} draw {b}: {v} vs {direct}");
                assert!((one.draws[pair][b] - direct).abs() < 1e-13);
            }
        }
        let default = permutation_stats::<DefaultBackend>(&ks, &ls, stat, 25, 5, Some(4), &()).unwrap();
        match stat {
            HsicStatistic::Biased => assert_close_in_single(&default, &batched),
            HsicStatistic::Unbiased => assert_eq!(default.draws, batched.draws),
        }
    }
}

/// With several blocks of pairs (`n = 150`: 11 325 pairs) and several batches of draws, the draws
/// still equal the recomputed statistics (to [`SINGLE_TOLERANCE`] in single precision), and are
/// bit-identical on 1, 2 and 3 threads in either precision.
#[test]
fn blocked_permutation_draws_match_recomputation_on_any_thread_count() {
    let (x, y) = dependent(12, 150, 0.4);
    let kxs = [WeightedKernel::gaussian(0.5), WeightedKernel::gaussian(1.5)];
    let kys = [WeightedKernel::gaussian(0.7), WeightedKernel::gaussian(2.0)];
    let ks: Vec<Mat> = kxs.iter().map(|k| Distances::new(&x).gram(k)).collect();
    let ls: Vec<Mat> = kys.iter().map(|k| Distances::new(&y).gram(k)).collect();
    for stat in [HsicStatistic::Biased, HsicStatistic::Unbiased] {
        let in_pool = |threads: usize, single: bool| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| match single {
                true => permutation_stats_in::<DefaultBackend, f32>(&ks, &ls, stat, 7, 3, Some(4), &()),
                false => permutation_stats_in::<DefaultBackend, f64>(&ks, &ls, stat, 7, 3, Some(4), &()),
            })
            .unwrap()
        };
        let (one, single) = (in_pool(1, false), in_pool(1, true));
        for threads in [2, 3] {
            assert_eq!(one.draws, in_pool(threads, false).draws, "{stat:?}, {threads} threads");
            assert_eq!(single.draws, in_pool(threads, true).draws, "{stat:?}, {threads} threads, f32");
        }
        for (pair, draws) in one.draws.iter().enumerate() {
            let (kx, ky) = (&kxs[pair / 2], &kys[pair % 2]);
            for (b, v) in draws.iter().enumerate() {
                let mut idx = vec![0usize; 150];
                draw_permutation(&mut draw_rng(3, b), &mut idx);
                let direct = hsic_statistic(&x, &y.select(&idx), kx, ky, stat).unwrap();
                assert!((v - direct).abs() < 1e-13, "{stat:?} {pair} {b}: {v} vs {direct}");
            }
        }
        if stat == HsicStatistic::Biased {
            assert_close_in_single(&single, &one);
        }
    }
}

/// A sample with repeated values keeps the double-precision null, whose relabellings that only swap
/// equal values tie with the observed statistic: rounding would break those ties at random.
#[test]
fn repeated_values_keep_the_double_precision_null() {
    let (x, y) = dependent(3, 40, 0.3);
    let rounded: Vec<f64> = y.as_slice().iter().map(|v| (2.0 * v).round() / 2.0).collect();
    let y_tied = Points::from_1d("y", &rounded).unwrap();
    let k = Distances::new(&x).gram(&WeightedKernel::gaussian(1.0));
    let biased = HsicStatistic::Biased;
    for (y, tied) in [(&y, false), (&y_tied, true)] {
        let l = Distances::new(y).gram(&WeightedKernel::gaussian(0.8));
        let (ks, ls) = (std::slice::from_ref(&k), std::slice::from_ref(&l));
        let default = permutation_stats::<DefaultBackend>(ks, ls, biased, 30, 1, None, &()).unwrap();
        let double = permutation_stats_in::<DefaultBackend, f64>(ks, ls, biased, 30, 1, None, &()).unwrap();
        assert_eq!(default.draws == double.draws, tied, "tied = {tied}");
    }
}

/// The wild bootstrap's statistic and draws from the pairs-of-pairs definition.
#[test]
fn wild_bootstrap_matches_its_definition() {
    let (x, y) = dependent(9, 20, 0.3);
    let (kx, ky) = (WeightedKernel::gaussian(1.1), WeightedKernel::gaussian(0.9));
    let params = HsicParams {
        null: NullDistribution::WildBootstrap,
        permutations: 15,
        seed: 4,
        selection: fixed(1.0),
        ..Default::default()
    };
    let fitted = HsicParams { selection: fixed(1.1), ..params.clone() }.check().unwrap();
    // one kernel per variable: x with 1.1, y with 1.1 too (fixed applies to both)
    let out = fitted
        .fit::<DefaultBackend>(&TwoSamples { x: x.clone(), y: y.clone() })
        .unwrap()
        .test::<DefaultBackend>()
        .unwrap();
    let ky = WeightedKernel { lengthscale: 1.1, ..ky };
    let h = 10;
    let hh = |i: usize, j: usize| {
        let hx = kx.eval(x.point(i), x.point(j))
            - kx.eval(x.point(i), x.point(h + j))
            - kx.eval(x.point(h + i), x.point(j))
            + kx.eval(x.point(h + i), x.point(h + j));
        let hy = ky.eval(y.point(i), y.point(j))
            - ky.eval(y.point(i), y.point(h + j))
            - ky.eval(y.point(h + i), y.point(j))
            + ky.eval(y.point(h + i), y.point(h + j));
        hx * hy
    };
    let scale = 1.0 / (4.0 * 10.0 * 9.0);
    let mut u = 0.0;
    for i in 0..h {
        for j in 0..h {
            if i != j {
                u += hh(i, j);
            }
        }
    }
    assert!((out.outcome.statistic - u * scale).abs() < 1e-13);
    assert_eq!(out.statistic_kind, "pairs");
    for (b, v) in out.outcome.null_samples.iter().enumerate() {
        let mut rng = draw_rng(4, b);
        let e: Vec<f64> = (0..h).map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 }).collect();
        let mut q = 0.0;
        for i in 0..h {
            for j in 0..h {
                if i != j {
                    q += e[i] * e[j] * hh(i, j);
                }
            }
        }
        assert!((v - q * scale).abs() < 1e-12, "draw {b}");
    }
}

/// Permutation, wild and gamma nulls give the same results on 1, 2 and 3 threads; a clear dependence
/// is detected.
#[test]
fn thread_count_invariance_and_power() {
    let (x, y) = dependent(3, 60, 0.7);
    for null in [NullDistribution::Permutation, NullDistribution::WildBootstrap, NullDistribution::Gamma] {
        for statistic in [HsicStatistic::Biased, HsicStatistic::Unbiased] {
            let params = HsicParams {
                statistic,
                null,
                permutations: 300,
                seed: 11,
                selection: fixed(1.0),
                ..Default::default()
            };
            let in_pool = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| run(&x, &y, &params).unwrap())
            };
            let a = in_pool(1);
            for t in [2, 3] {
                let b = in_pool(t);
                assert_eq!(a.outcome.null_samples, b.outcome.null_samples, "{null:?} {statistic:?}");
                assert_eq!(a.outcome.p_value.to_bits(), b.outcome.p_value.to_bits());
            }
            assert!(a.outcome.reject, "{null:?} {statistic:?}: p = {}", a.outcome.p_value);
        }
    }
}

/// Gamma moments against the permutation distribution of n·HSIC_b on independent data.
#[test]
fn gamma_moments_match_permutation_null() {
    let (x, y) = dependent(4, 80, 0.0);
    let (k, l) = (
        Distances::new(&x).gram(&WeightedKernel::gaussian(1.0)),
        Distances::new(&y).gram(&WeightedKernel::gaussian(1.0)),
    );
    let (mean, var) = gamma_moments(&k, &l);
    let draws = 3000;
    let s =
        permutation_stats::<DefaultBackend>(&[k], &[l], HsicStatistic::Biased, draws, 0, None, &()).unwrap();
    let s: Vec<f64> = s.draws[0].iter().map(|v| 80.0 * v).collect();
    let em = s.iter().sum::<f64>() / draws as f64;
    let ev = s.iter().map(|v| (v - em).powi(2)).sum::<f64>() / (draws as f64 - 1.0);
    assert!((em - mean).abs() < 4.0 * (ev / draws as f64).sqrt() + 0.02 * mean, "{em} vs {mean}");
    assert!((ev / var - 1.0).abs() < 0.2, "{ev} vs {var}");
    let mut sorted = s.clone();
    sorted.sort_by(f64::total_cmp);
    let q95 = sorted[(0.95 * draws as f64) as usize];
    let tail = gamma_sf(q95, mean * mean / var, var / mean);
    assert!((tail - 0.05).abs() < 0.015, "gamma tail at the permutation 95 % quantile: {tail}");
}

fn aggregated() -> Vec<LengthscaleSelection> {
    vec![LengthscaleSelection::new(SelectRule::Hsicagg), LengthscaleSelection::new(SelectRule::BklBayes)]
}

/// HSICAgg has 25 kernel pairs of uniform weight; both aggregated tests detect a dependence the
/// linear correlation misses (y = x² + noise), and hold their level on independent data.
#[test]
fn aggregated_tests_detect_dependence_and_hold_level() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let t = normals(&mut rng, 60);
    let e = normals(&mut rng, 60);
    let x = Points::from_1d("x", &t).unwrap();
    let y =
        Points::from_1d("y", &t.iter().zip(&e).map(|(a, b)| a * a + 0.3 * b).collect::<Vec<_>>()).unwrap();
    for selection in aggregated() {
        for null in [NullDistribution::Permutation, NullDistribution::WildBootstrap] {
            // 25 pairs of weight 1/25: the smallest weighted p-value is 25/(B₁ + 1), so B₁ = 500
            let out = run(
                &x,
                &y,
                &HsicParams { null, permutations: 500, selection: selection.clone(), ..Default::default() },
            )
            .unwrap();
            assert!(out.outcome.reject, "{} {null:?}: p = {}", out.selection, out.outcome.p_value);
            assert!(out.kernels.iter().all(|k| k.lengthscale_y.is_some()));
            assert!((out.kernels.iter().map(|k| k.weight).sum::<f64>() - 1.0).abs() < 1e-12);
            if out.selection == "hsicagg" {
                assert_eq!(out.kernels.len(), 25);
                assert_eq!(out.outcome.reject, out.outcome.statistic <= out.u_alpha.unwrap());
            }
        }
    }
    let reps = 200;
    for selection in aggregated() {
        let rejections = (0..reps)
            .filter(|&r| {
                let (x, y) = dependent(100 + r, 16, 0.0);
                let p = HsicParams {
                    permutations: 39,
                    alpha: 0.1,
                    seed: r,
                    selection: selection.clone(),
                    ..Default::default()
                };
                run(&x, &y, &p).unwrap().outcome.reject
            })
            .count();
        let rate = rejections as f64 / reps as f64;
        assert!(rate <= 0.1 + 3.0 * (0.09 / reps as f64).sqrt(), "{selection:?}: {rate}");
    }
}

#[test]
fn bad_input_is_rejected() {
    let (x, y) = dependent(5, 10, 0.0);
    let y9 = y.select(&(0..9).collect::<Vec<_>>());
    let e = run(&x, &y9, &HsicParams::default()).unwrap_err().to_string();
    assert!(e.contains("paired"), "{e}");
    assert!(run(&x.select(&[0]), &y.select(&[0]), &HsicParams::default()).is_err());
    let five = [0, 1, 2, 3, 4];
    assert!(
        run(
            &x.select(&five),
            &y.select(&five),
            &HsicParams { null: NullDistribution::Gamma, ..Default::default() }
        )
        .is_err()
    );
    assert!(run(&x, &y, &HsicParams { permutations: 0, ..Default::default() }).is_err());
    assert!(run(&x, &y, &HsicParams { alpha: 1.0, ..Default::default() }).is_err());
    let e = run(&x, &y, &HsicParams { null: NullDistribution::Normal, ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("permutation, wild and gamma"), "{e}");
    let e = HsicParams { selection: LengthscaleSelection::new(SelectRule::Fuse), ..Default::default() }
        .check()
        .unwrap_err();
    assert!(e.to_string().contains("two-sample"), "{e}");
    let e = HsicParams {
        null: NullDistribution::Gamma,
        selection: aggregated()[0].clone(),
        ..Default::default()
    }
    .check()
    .unwrap_err();
    assert!(e.to_string().contains("resampled null"), "{e}");
    let constant = Points::from_1d("y", &[0.5; 10]).unwrap();
    let e = run(&x, &constant, &HsicParams::default()).unwrap_err().to_string();
    assert!(e.contains("sample y") && e.contains("constant"), "{e}");
}

/// Progress of the permutation null: one update per batch of draws and `y`-kernel, ending at the
/// total; a cancelled run stops with `Cancelled` at the first batch.
#[test]
fn the_permutation_null_reports_its_batches_and_stops_when_cancelled() {
    use std::sync::Mutex;
    struct Log(Mutex<Vec<(u64, u64)>>, bool);
    impl Progress for Log {
        fn update(&self, stage: &str, done: u64, total: u64) {
            if stage == "null distribution" {
                self.0.lock().unwrap().push((done, total));
            }
        }
        fn cancelled(&self) -> bool {
            self.1
        }
    }
    let (x, y) = dependent(4, 30, 0.3);
    let ks = [Distances::new(&x).gram(&WeightedKernel::gaussian(1.0))];
    let ls: Vec<Mat> =
        [0.5, 1.0, 2.0].map(|l| Distances::new(&y).gram(&WeightedKernel::gaussian(l))).to_vec();
    let log = Log(Mutex::new(Vec::new()), false);
    permutation_stats::<DefaultBackend>(&ks, &ls, HsicStatistic::Biased, 10, 0, Some(4), &log).unwrap();
    let updates = log.0.into_inner().unwrap();
    assert_eq!(updates, (1..=9).map(|d| (d, 9)).collect::<Vec<_>>());
    let stop = Log(Mutex::new(Vec::new()), true);
    let err = permutation_stats::<DefaultBackend>(&ks, &ls, HsicStatistic::Biased, 10, 0, Some(4), &stop);
    assert_eq!(err.err(), Some(CoreError::Cancelled));
    assert!(stop.0.into_inner().unwrap().is_empty());
}
