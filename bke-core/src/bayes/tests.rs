//! Oracles: exact log Γ values, numerical normalisation of the priors, central finite differences of
//! the log posterior, fine-grid quadrature of the unnormalised posterior against the NUTS marginals,
//! and the fixed-hyperparameter BKE posterior for the witness draws.

use super::*;
use crate::Predict;
use crate::nuts::diagnostics::{ess_mean, quantile};
use bke_linalg::DefaultBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Fits `opts` to `x` with the landmarks `z`.
fn fit_at<B: Backend>(x: &Points, z: &Points, opts: &SampleParams) -> Result<HyperDraws, CoreError> {
    SampleParams { landmarks: Some(z.clone()), ..opts.clone() }.check()?.fit::<B>(x)
}

fn normal_data(n: usize, seed: u64, what: &str) -> Points {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let v: Vec<f64> = (0..n).map(|_| StandardNormal.sample(&mut rng)).collect();
    Points::from_1d(what, &v).unwrap()
}

#[test]
fn priors_parse_normalise_and_differentiate() {
    assert_eq!(HyperPrior::parse("gamma:1,1").unwrap(), HyperPrior::default());
    assert_eq!(
        HyperPrior::parse(" LogNormal: 0.5 , 2 ").unwrap(),
        HyperPrior::LogNormal { mu: 0.5, sigma: 2.0 }
    );
    for bad in ["gamma", "gamma:1", "gamma:1,0", "gamma:-1,1", "beta:1,1", "lognormal:0,-1", "gamma:a,b"] {
        assert!(HyperPrior::parse(bad).is_err(), "{bad}");
    }
    for p in [
        HyperPrior::Gamma { shape: 1.0, rate: 1.0 },
        HyperPrior::Gamma { shape: 2.5, rate: 0.3 },
        HyperPrior::LogNormal { mu: -0.5, sigma: 1.3 },
    ] {
        assert_eq!(HyperPrior::parse(&p.name()).unwrap(), p);
        // ∫ exp(log density) du = 1 on the log scale (trapezoid over a wide range).
        let h = 1e-3;
        let total: f64 = (0..40_000).map(|i| p.log_density_log_scale(-25.0 + h * i as f64).0.exp() * h).sum();
        assert!((total - 1.0).abs() < 1e-6, "{p:?}: integral {total}");
        for u in [-2.0, 0.0, 1.7] {
            let (_, d) = p.log_density_log_scale(u);
            let e = 1e-6;
            let fd = (p.log_density_log_scale(u + e).0 - p.log_density_log_scale(u - e).0) / (2.0 * e);
            assert!((d - fd).abs() < 1e-6 * (1.0 + d.abs()), "{p:?} at {u}: {d} vs {fd}");
        }
    }
}

#[test]
fn log_posterior_gradient_matches_central_differences() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let x2: Vec<f64> = (0..30).map(|_| StandardNormal.sample(&mut rng)).collect();
    let x2 = Points::new("x", x2, 2).unwrap();
    let z2 = Points::from_rows("z", &[vec![0.0, 0.0], vec![1.0, -0.5], vec![-0.7, 0.4]]).unwrap();
    let x1 = normal_data(25, 5, "x");
    let z1 = Points::from_1d("z", &[-1.0, 0.2, 1.1]).unwrap();
    let cases = [
        (&x1, &z1, SampleParams::default(), vec![0.1, -0.3]),
        (&x2, &z2, SampleParams { ard: true, ..SampleParams::default() }, vec![-0.2, 0.4, 0.5]),
        (
            &x2,
            &z2,
            SampleParams {
                fixed_tau2: Some(0.7),
                lengthscale_prior: HyperPrior::LogNormal { mu: 0.0, sigma: 0.5 },
                prior: EmbeddingPrior::Gaussian { eta: 2.0 },
                ..SampleParams::default()
            },
            vec![0.3],
        ),
    ];
    for (x, z, opts, u) in cases {
        let t = HyperPosterior::<DefaultBackend>::new(x, z, &opts).unwrap();
        assert_eq!(t.dim(), u.len());
        let mut g = vec![0.0; u.len()];
        t.log_density_grad(&u, &mut g).unwrap();
        let mut scratch = vec![0.0; u.len()];
        for j in 0..u.len() {
            let e = 1e-5;
            let mut up = u.clone();
            up[j] += e;
            let mut dn = u.clone();
            dn[j] -= e;
            let fd = (t.log_density_grad(&up, &mut scratch).unwrap()
                - t.log_density_grad(&dn, &mut scratch).unwrap())
                / (2.0 * e);
            assert!((g[j] - fd).abs() < 1e-5 * (1.0 + fd.abs()), "coordinate {j}: {} vs {fd}", g[j]);
        }
    }
}

/// Checks that the NUTS marginal `chains` of a coordinate on the log scale matches a density known
/// on a uniform grid (`grid[i]`, unnormalised `dens[i]`): quantiles within 4.5 Monte-Carlo standard
/// errors (from the ESS of the indicator and the quadrature density at the quantile).
fn check_against_quadrature(chains: &[Vec<f64>], grid: &[f64], dens: &[f64], what: &str) {
    let h = grid[1] - grid[0];
    let total: f64 = dens.iter().sum::<f64>() * h;
    let pdf: Vec<f64> = dens.iter().map(|d| d / total).collect();
    assert!(pdf[0] < 1e-6 * pdf.iter().cloned().fold(0.0, f64::max), "{what}: grid too narrow at the left");
    assert!(pdf[pdf.len() - 1] < 1e-6 * pdf.iter().cloned().fold(0.0, f64::max), "{what}: grid too narrow");
    // CDF by the trapezoid rule; quantiles by linear interpolation.
    let mut cdf = vec![0.0; grid.len()];
    for i in 1..grid.len() {
        cdf[i] = cdf[i - 1] + 0.5 * h * (pdf[i] + pdf[i - 1]);
    }
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    for p in [0.05, 0.25, 0.5, 0.75, 0.95] {
        let i = cdf.iter().position(|&c| c >= p).unwrap();
        let t = (p - cdf[i - 1]) / (cdf[i] - cdf[i - 1]);
        let q = grid[i - 1] + t * h;
        let dens_q = pdf[i - 1] + t * (pdf[i] - pdf[i - 1]);
        let ind: Vec<Vec<f64>> =
            chains.iter().map(|c| c.iter().map(|&v| f64::from(u8::from(v <= q))).collect()).collect();
        let ess = ess_mean(&ind.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let se = (p * (1.0 - p) / ess).sqrt() / dens_q;
        let qh = quantile(&all, p);
        assert!((qh - q).abs() < 4.5 * se, "{what}: q{p} NUTS {qh} vs quadrature {q} (se {se}, ess {ess})");
    }
}

/// The NUTS marginals of log θ and log τ² on a 1-D problem match a fine-grid quadrature of the
/// unnormalised joint posterior. One landmark keeps the joint posterior proper and data-driven (with
/// several landmarks and τ² free it is dominated by the θ → ∞, τ² → 0 ridge, see the module docs).
#[test]
fn nuts_marginals_match_grid_quadrature() {
    let x = normal_data(40, 1, "x");
    let z = Points::from_1d("z", &[0.0]).unwrap();
    let opts = SampleParams {
        nuts: NutsParams { chains: 4, warmup: 500, draws: 1000, seed: 11, ..NutsParams::default() },
        ..SampleParams::default()
    };
    let draws = fit_at::<DefaultBackend>(&x, &z, &opts).unwrap();
    assert_eq!(draws.nuts.divergences(), 0);
    for j in 0..2 {
        let s = draws.nuts.summary(j);
        assert!(s.rhat < 1.02 && s.ess_bulk > 300.0, "{s:?}");
    }
    // Quadrature on (u0, u1) = (log θ, log τ²): rows of u0, and for each row the conditional of u1
    // on a window around its mode found by a coarse scan.
    let target = HyperPosterior::<DefaultBackend>::new(&x, &z, &opts).unwrap();
    let mut g = [0.0; 2];
    let lp = |u0: f64, u1: f64, g: &mut [f64; 2]| target.log_density_grad(&[u0, u1], g).unwrap();
    let (h0, h1) = (0.02, 0.02);
    let u0s: Vec<f64> = (0..=500).map(|i| -3.0 + h0 * i as f64).collect();
    let mut rows = Vec::with_capacity(u0s.len());
    for &u0 in &u0s {
        let coarse = (0..=90).map(|j| -40.0 + 0.5 * j as f64).fold((f64::NEG_INFINITY, 0.0), |b, u1| {
            let v = lp(u0, u1, &mut g);
            if v > b.0 { (v, u1) } else { b }
        });
        let u1s: Vec<f64> = (0..=600).map(|j| coarse.1 - 6.0 + h1 * j as f64).collect();
        let vals: Vec<f64> = u1s.iter().map(|&u1| lp(u0, u1, &mut g)).collect();
        let max = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        assert!(vals[0] < max - 25.0 && vals[vals.len() - 1] < max - 25.0, "u1 window too narrow at {u0}");
        rows.push((u1s, vals));
    }
    let gmax = rows.iter().flat_map(|r| r.1.iter()).cloned().fold(f64::NEG_INFINITY, f64::max);
    // Marginal of u0: Σ_j exp(lp − gmax) h1 per row.
    let marg0: Vec<f64> =
        rows.iter().map(|(_, v)| v.iter().map(|l| (l - gmax).exp()).sum::<f64>() * h1).collect();
    check_against_quadrature(&draws.nuts.coordinate(0), &u0s, &marg0, "log lengthscale");
    // Marginal of u1 on a common grid: accumulate each row's values into bins of width h1.
    let lo = rows.iter().map(|r| r.0[0]).fold(f64::INFINITY, f64::min) - 1.0;
    let hi = rows.iter().map(|r| r.0[r.0.len() - 1]).fold(f64::NEG_INFINITY, f64::max) + 1.0;
    let nb = ((hi - lo) / h1).round() as usize + 1;
    let mut marg1 = vec![0.0; nb];
    for (u1s, vals) in &rows {
        for (u1, l) in u1s.iter().zip(vals) {
            // Linear interpolation onto the common grid (the row grids are shifted by the mode).
            let f = (u1 - lo) / h1;
            let b = f.floor() as usize;
            let t = f - b as f64;
            let w = (l - gmax).exp() * h0;
            marg1[b] += (1.0 - t) * w;
            marg1[b + 1] += t * w;
        }
    }
    let u1grid: Vec<f64> = (0..nb).map(|i| lo + h1 * i as f64).collect();
    check_against_quadrature(&draws.nuts.coordinate(1), &u1grid, &marg1, "log tau2");
}

/// With τ² fixed the posterior of θ alone (several landmarks) matches a 1-D quadrature.
#[test]
fn fixed_tau2_marginal_matches_quadrature() {
    let x = normal_data(60, 2, "x");
    let z = Points::from_1d("z", &[-1.5, -0.5, 0.5, 1.5]).unwrap();
    let opts = SampleParams {
        fixed_tau2: Some(1.0),
        nuts: NutsParams { chains: 4, warmup: 500, draws: 1000, seed: 12, ..NutsParams::default() },
        ..SampleParams::default()
    };
    let draws = fit_at::<DefaultBackend>(&x, &z, &opts).unwrap();
    assert_eq!(draws.nuts.dim, 1);
    assert!(draws.tau2().iter().flatten().all(|&t| t == 1.0));
    let target = HyperPosterior::<DefaultBackend>::new(&x, &z, &opts).unwrap();
    let mut g = [0.0; 1];
    let grid: Vec<f64> = (0..=1200).map(|i| -4.0 + 0.005 * i as f64).collect();
    let vals: Vec<f64> = grid.iter().map(|&u| target.log_density_grad(&[u], &mut g).unwrap()).collect();
    let max = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let dens: Vec<f64> = vals.iter().map(|v| (v - max).exp()).collect();
    check_against_quadrature(&draws.nuts.coordinate(0), &grid, &dens, "log lengthscale (fixed tau2)");
    // This posterior has two modes (log θ ≈ −1.3 and −0.7, 2.7 nats of valley between them; the
    // multimodality of seed Fig. 2D): chains cross slowly (bulk ESS ≈ 160 of 4000), so R̂ sits a
    // little above 1.01; the quantiles above already account for the ESS.
    let s = draws.lengthscale_summary(0);
    assert!(s.rhat < 1.05 && s.q05 < s.q50 && s.q50 < s.q95, "{s:?}");
}

/// With every draw at the same hyperparameters, the witness draws are draws of the fixed-θ BKE
/// posterior of `μ_P − μ_Q`: mean `m_P − m_Q`, variance `v_P + v_Q`, normal quantiles.
#[test]
fn witness_draws_at_fixed_hyperparameters_match_the_bke_posterior() {
    let xp = normal_data(30, 21, "P");
    let xq: Vec<f64> = normal_data(30, 22, "Q").as_slice().iter().map(|v| 0.8 * v + 0.4).collect();
    let xq = Points::from_1d("Q", &xq).unwrap();
    let grid = Points::from_1d("grid", &[-2.0, -0.5, 0.0, 0.7, 2.5]).unwrap();
    let p = BkeParams::new(vec![0.7], 0.5);
    let draws = vec![p.clone(); 4000];
    let w = witness_posterior::<DefaultBackend>(&xp, &xq, &grid, None, &draws, 0.8, 5).unwrap();
    let fit = |x: &Points| {
        p.check().unwrap().fit::<DefaultBackend>(x).unwrap().predict::<DefaultBackend>(&grid).unwrap()
    };
    let (pp, pq) = (fit(&xp), fit(&xq));
    let (mp, vp, mq, vq) = (pp.mean, pp.variance, pq.mean, pq.variance);
    let s = draws.len() as f64;
    let z90 = crate::special::normal_quantile(0.9);
    for i in 0..grid.len() {
        let (m, sd) = (mp[i] - mq[i], (vp[i] + vq[i]).sqrt());
        assert!((w.mean[i] - m).abs() < 4.5 * sd / s.sqrt(), "grid {i}: mean {} vs {m}", w.mean[i]);
        // Quantile SE √(p(1−p)/S)/φ(z_p) · sd ≈ 0.027 sd at p = 0.1 with S = 4000.
        let se_q =
            (0.09f64 / s).sqrt() / ((-0.5 * z90 * z90).exp() / (2.0 * std::f64::consts::PI).sqrt()) * sd;
        assert!((w.upper[i] - (m + z90 * sd)).abs() < 4.5 * se_q, "grid {i}: upper {}", w.upper[i]);
        assert!((w.lower[i] - (m - z90 * sd)).abs() < 4.5 * se_q, "grid {i}: lower {}", w.lower[i]);
        assert!(w.lower[i] <= w.median[i] && w.median[i] <= w.upper[i]);
    }
    assert_eq!(w.draws.len(), 4000 * grid.len());
}

#[test]
fn witness_posterior_is_thread_count_invariant_and_validates_input() {
    let xp = normal_data(20, 31, "P");
    let xq = normal_data(25, 32, "Q");
    let grid = Points::from_1d("grid", &[-1.0, 0.0, 1.0]).unwrap();
    let draws: Vec<BkeParams> = (0..16).map(|i| BkeParams::new(vec![0.5 + 0.05 * i as f64], 0.5)).collect();
    let run =
        |threads| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                witness_posterior::<DefaultBackend>(&xp, &xq, &grid, None, &draws, 0.8, 9).unwrap()
            })
        };
    let (a, b) = (run(1), run(3));
    assert_eq!(a.draws, b.draws);
    assert_eq!(a.upper, b.upper);
    assert!(witness_posterior::<DefaultBackend>(&xp, &xq, &grid, None, &draws, 1.0, 9).is_err());
    assert!(witness_posterior::<DefaultBackend>(&xp, &xq, &grid, None, &[], 0.8, 9).is_err());
    let grid2 = Points::from_rows("grid", &[vec![0.0, 0.0]]).unwrap();
    assert!(matches!(
        witness_posterior::<DefaultBackend>(&xp, &xq, &grid2, None, &draws, 0.8, 9),
        Err(CoreError::DimensionMismatch { .. })
    ));
}

#[test]
fn bad_input_is_rejected_before_sampling() {
    let x = Points::from_rows("x", &[vec![0.0, 1.0], vec![1.0, 0.0], vec![0.5, 0.5]]).unwrap();
    let z = Points::from_rows("z", &[vec![0.0, 0.0]]).unwrap();
    // m < D
    let e = fit_at::<DefaultBackend>(&x, &z, &SampleParams::default()).unwrap_err();
    assert!(e.to_string().contains("landmarks"), "{e}");
    let z = Points::from_1d("z", &[0.0, 1.0]).unwrap();
    assert!(matches!(
        fit_at::<DefaultBackend>(&x, &z, &SampleParams::default()),
        Err(CoreError::DimensionMismatch { .. })
    ));
    let x1 = normal_data(10, 1, "x");
    for opts in [
        SampleParams { fixed_tau2: Some(-1.0), ..SampleParams::default() },
        SampleParams { tau2_prior: HyperPrior::Gamma { shape: 0.0, rate: 1.0 }, ..SampleParams::default() },
        SampleParams { nuts: NutsParams { chains: 0, ..NutsParams::default() }, ..SampleParams::default() },
    ] {
        assert!(fit_at::<DefaultBackend>(&x1, &z, &opts).is_err(), "{opts:?}");
    }
}

/// The profile log pseudolikelihood (τ² at its optimum) grows along the ridge with the slope
/// [`ridge_exponent`] predicts, and falls once τ² is held fixed.
#[test]
fn ridge_exponent_matches_the_profile_slope() {
    let x = normal_data(40, 1, "x");
    let z = Points::from_1d("z", &[-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5]).unwrap();
    let profile = |u0: f64| {
        (0..2000)
            .map(|j| {
                let p = BkeParams::new(vec![u0.exp()], (-40.0 + 0.02 * j as f64).exp());
                marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &p).unwrap().log_marginal
            })
            .fold(f64::NEG_INFINITY, f64::max)
    };
    let slope = (profile(3.5) - profile(3.0)) / 0.5;
    let predicted = ridge_exponent(40, 7, 1, true);
    assert!((slope / predicted - 1.0).abs() < 0.05, "slope {slope} vs {predicted}");
    let fixed = |u0: f64| {
        marginal_pseudolikelihood::<DefaultBackend>(&x, &z, &BkeParams::new(vec![u0.exp()], 1.0))
            .unwrap()
            .log_marginal
    };
    let slope_fixed = (fixed(3.5) - fixed(3.0)) / 0.5;
    assert!((slope_fixed / -80.0 - 1.0).abs() < 0.05, "fixed tau2: slope {slope_fixed} vs -2nD = -80");
    assert!(ridge_exponent(40, 1, 1, true) < 0.0 && ridge_exponent(40, 2, 1, false) > 0.0);
}

/// Held-out landmarks (seeded by the NUTS seed) and the JSON fields of `bke embed sample`.
#[test]
fn held_out_landmarks_and_json_fields() {
    let x = normal_data(30, 41, "x");
    let params = SampleParams {
        num_landmarks: 3,
        fixed_tau2: Some(1.0),
        nuts: NutsParams { chains: 2, warmup: 60, draws: 40, seed: 5, ..NutsParams::default() },
        ..SampleParams::default()
    };
    let draws = params.check().unwrap().fit::<DefaultBackend>(&x).unwrap();
    let (_, z, idx) = hold_out_landmarks(&x, 3, 5).unwrap();
    assert_eq!((draws.n_data, draws.landmarks.clone(), draws.landmark_indices.clone()), (27, z, Some(idx)));
    let j = serde_json::to_value(&draws).unwrap();
    for f in ["mean", "sd", "q05", "q50", "q95", "rhat", "ess", "ess_tail", "mcse_mean"] {
        assert!(j["lengthscale"][f].is_number(), "{f}: {j}");
    }
    assert_eq!(j["tau2"]["fixed"], true);
    assert!(j["tau2"]["rhat"].is_null() && j["tau2_prior"].is_null());
    assert_eq!(j["lengthscale_prior"], "gamma:1,1");
    assert_eq!(
        (j["chains"].as_u64(), j["draws"].as_u64(), j["num_landmarks"].as_u64()),
        (Some(2), Some(40), Some(3))
    );
    assert_eq!(j["warnings"], serde_json::json!(draws.warnings()));
    let e =
        SampleParams { num_landmarks: 30, ..params }.check().unwrap().fit::<DefaultBackend>(&x).unwrap_err();
    assert!(e.to_string().contains("m < n"), "{e}");
}
