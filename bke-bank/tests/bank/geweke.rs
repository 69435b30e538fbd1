//! Geweke's joint-distribution test (Geweke 2004) of the BaNK samplers.
//!
//! The *successive-conditional* simulator alternates one BaNK iteration (Gibbs for `Z`, NIW draws, the
//! frequency moves) with a fresh draw of the data from the likelihood. If every update leaves the
//! posterior invariant, the chain's stationary law is the joint prior `p(Z, μ, Σ, W, y)`: averages of
//! test functions must match their prior expectations, known exactly or estimated by independent
//! *marginal-conditional* (forward) draws. Tolerances are 4.5 combined standard errors (batch means for
//! the chain). The statistic `y₀y₁ · k̂_W(x₀ − x₁)` is taken after the frequency move and before the
//! data refresh, so a frequency update that ignored the data (sampling its prior conditional) would
//! fail it.
//!
//! The learned hyperparameters are part of the state: the DP base scale `ψ₀` (Gamma hyperprior, Gibbs
//! draw), the regression prior precision `λ₀` (log-normal hyperprior, slice update) and the
//! classification weight variance `s²` (inverse-gamma hyperprior, Gibbs draw and rescaling moves).
//! Their prior moments, and joint statistics of each with the data it was updated on, must match.

use bke_bank::SweepMethod;
use bke_bank::classification::{ClassificationState, sigmoid};
use bke_bank::dpmix::{GammaPrior, Mixture, MixtureParams, niw_posterior_draw};
use bke_bank::evidence::{LogNormalPrior, NigParams};
use bke_bank::features::feature_matrix;
use bke_bank::priors::InvGammaPrior;
use bke_bank::regression::RegressionState;
use bke_bank::sampler::{Hyperpriors, SweepSettings, classification_sweep, regression_sweep};
use bke_linalg::{DefaultBackend, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma, StandardNormal};

const XS: [f64; 5] = [-1.5, -0.4, 0.3, 1.1, 2.0];

/// A forward draw of (ψ₀, Z, μ, Σ, W) from the DP-NIW prior (CRP for Z); `p.psi0` is set to the
/// drawn base scale.
fn prior_draw(
    p: &mut MixtureParams,
    psi0: &GammaPrior,
    m: usize,
    rng: &mut ChaCha8Rng,
) -> (Mixture, Vec<f64>) {
    p.psi0 = psi0.sample(rng);
    let mut assignments = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for j in 0..m {
        let mut logw: Vec<f64> = counts.iter().map(|&c| (c as f64).ln()).collect();
        logw.push(p.alpha.ln());
        let tot: f64 = logw.iter().map(|l| l.exp()).sum();
        let mut u = rng.random::<f64>() * tot;
        let mut k = logw.len() - 1;
        for (i, l) in logw.iter().enumerate() {
            u -= l.exp();
            if u < 0.0 {
                k = i;
                break;
            }
        }
        if k == counts.len() {
            counts.push(0);
        }
        counts[k] += 1;
        assignments.push(k);
        let _ = j;
    }
    let components: Vec<_> = counts.iter().map(|_| niw_posterior_draw(p, 1, &[], rng).unwrap()).collect();
    let mut w = vec![0.0; m];
    for j in 0..m {
        components[assignments[j]].sample(rng, &mut w[j..j + 1]);
    }
    (Mixture { dim: 1, components, assignments, counts }, w)
}

fn khat(w: &[f64], t: f64) -> f64 {
    w.iter().map(|v| (v * t).cos()).sum::<f64>() / w.len() as f64
}

/// Mean and batch-means standard error.
fn batch_stats(v: &[f64], batches: usize) -> (f64, f64) {
    let n = v.len() / batches * batches;
    let b = n / batches;
    let mean = v[..n].iter().sum::<f64>() / n as f64;
    let bm: Vec<f64> = (0..batches).map(|i| v[i * b..(i + 1) * b].iter().sum::<f64>() / b as f64).collect();
    let var = bm.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (batches - 1) as f64;
    (mean, (var / batches as f64).sqrt())
}

fn check(name: &str, chain: (f64, f64), truth: f64, truth_se: f64) {
    eprintln!("{name}: chain {:.5} ± {:.5}, prior {truth:.5} ± {truth_se:.5}", chain.0, chain.1);
    let se = (chain.1.powi(2) + truth_se.powi(2)).sqrt();
    assert!(
        (chain.0 - truth).abs() < 4.5 * se,
        "{name}: chain {:.5} ± {:.5}, prior {truth:.5} ± {truth_se:.5}",
        chain.0,
        chain.1
    );
}

fn mixture_params() -> MixtureParams {
    MixtureParams { alpha: 1.0, mu0: None, kappa0: 1.0, nu0: Some(7.0), psi0: 1.0 }
}

const PSI0: GammaPrior = GammaPrior { shape: 4.0, rate: 1.0 };

#[test]
fn geweke_regression_sampler() {
    let m = 3;
    let n = XS.len();
    let nig = NigParams { a0: 4.0, b0: 3.0, prior_precision: 0.25 };
    let lam = LogNormalPrior { median: 0.25, log_sd: 0.5 };
    let hyper = Hyperpriors { psi0: Some(PSI0), prior_precision: Some(lam), weight_variance: None };
    let settings = SweepSettings { block: 2, refactor_every: 1, method: SweepMethod::LowRank };
    let mut mix = mixture_params();
    let x = Mat::from_fn(n, 1, |i, _| XS[i]);
    let t = XS[0] - XS[1];
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    let ig = Gamma::new(nig.a0, 1.0 / nig.b0).unwrap();
    let draw_y = |w: &[f64], lambda: f64, rng: &mut ChaCha8Rng| -> Vec<f64> {
        let phi = feature_matrix(&x, w);
        let s2 = 1.0 / ig.sample(rng);
        let beta: Vec<f64> =
            (0..2 * m).map(|_| (s2 / lambda).sqrt() * rng.sample::<f64, _>(StandardNormal)).collect();
        (0..n)
            .map(|i| {
                (0..2 * m).map(|c| phi[(i, c)] * beta[c]).sum::<f64>()
                    + s2.sqrt() * rng.sample::<f64, _>(StandardNormal)
            })
            .collect()
    };
    // Forward (marginal-conditional) estimates of E k̂ and E k̂².
    let fwd = 100_000;
    let (mut k1, mut k2, mut k2sq) = (0.0, 0.0, 0.0);
    for _ in 0..fwd {
        let (_, w) = prior_draw(&mut mix, &PSI0, m, &mut rng);
        let k = khat(&w, t);
        k1 += k;
        k2 += k * k;
        k2sq += k.powi(4);
    }
    let (ek, ek2) = (k1 / fwd as f64, k2 / fwd as f64);
    let se_k2 = ((k2sq / fwd as f64 - ek2 * ek2) / fwd as f64).sqrt();
    // Successive-conditional chain.
    let (mut mixture, w) = prior_draw(&mut mix, &PSI0, m, &mut rng);
    let lambda0 = lam.sample(&mut rng);
    let y = draw_y(&w, lambda0, &mut rng);
    let mut st = RegressionState::<DefaultBackend>::new(
        x.clone(),
        y,
        w,
        NigParams { prior_precision: lambda0, ..nig },
    )
    .unwrap();
    let iters = 40_000;
    let mut stats: Vec<Vec<f64>> = vec![Vec::new(); 8];
    let mut accepted = 0;
    for it in 0..iters {
        accepted +=
            regression_sweep(&mut st, &mut mixture, &mut mix, &hyper, settings, it, &mut rng).unwrap();
        let w = st.w().to_vec();
        let lambda = st.nig().prior_precision;
        stats[0].push(w.iter().sum::<f64>() / m as f64);
        stats[1].push(w.iter().map(|v| v * v).sum::<f64>() / m as f64);
        stats[2].push(mixture.components.len() as f64);
        // after the moves, before the data refresh: the y they conditioned on
        let old_y = st.targets().to_vec();
        let ybar2 = old_y.iter().map(|v| v * v).sum::<f64>() / n as f64;
        stats[3].push(ybar2);
        stats[4].push(old_y[0] * old_y[1] * khat(&w, t));
        stats[5].push(mix.psi0);
        stats[6].push(lambda.ln());
        stats[7].push(lambda.ln() * ybar2);
        let y = draw_y(&w, lambda, &mut rng);
        st.set_targets(y).unwrap();
    }
    let e_psi0 = PSI0.shape / PSI0.rate;
    let e_sigma = e_psi0 / (mix.nu0(1) - 2.0);
    let e_s2 = nig.b0 / (nig.a0 - 1.0);
    let (mu, sd) = (lam.median.ln(), lam.log_sd);
    let e_inv_lambda = (-mu + 0.5 * sd * sd).exp();
    check("mean W", batch_stats(&stats[0], 100), 0.0, 0.0);
    check("mean W^2", batch_stats(&stats[1], 100), e_sigma * (1.0 + 1.0 / mix.kappa0), 0.0);
    let ek_clusters: f64 = (0..m).map(|i| mix.alpha / (mix.alpha + i as f64)).sum();
    check("clusters", batch_stats(&stats[2], 100), ek_clusters, 0.0);
    check("mean y^2", batch_stats(&stats[3], 100), e_s2 * (1.0 + e_inv_lambda), 0.0);
    check("y0 y1 k(W)", batch_stats(&stats[4], 100), e_s2 * e_inv_lambda * ek2, e_s2 * e_inv_lambda * se_k2);
    check("psi0", batch_stats(&stats[5], 100), e_psi0, 0.0);
    check("log lambda0", batch_stats(&stats[6], 100), mu, 0.0);
    // E[u ȳ²] = E σ² (E u + E[u e^{−u}]), E[u e^{−u}] = e^{−μ + s²/2}(μ − s²) for u ~ N(μ, s²)
    check(
        "log lambda0 * mean y^2",
        batch_stats(&stats[7], 100),
        e_s2 * (mu + e_inv_lambda * (mu - sd * sd)),
        0.0,
    );
    let rate = accepted as f64 / (iters * m) as f64;
    assert!(rate > 0.05 && rate < 0.95, "acceptance rate {rate} makes the test insensitive");
    // The joint statistic must separate "W moved with the data" from "W ignored the data".
    assert!((ek2 - ek * ek) > 0.02, "test statistic not sensitive: E k̂² = {ek2}, (E k̂)² = {}", ek * ek);
}

#[test]
fn geweke_classification_sampler() {
    let m = 2;
    let n = XS.len();
    let s2_prior = InvGammaPrior { shape: 4.0, scale: 4.5 };
    let v0: f64 = 1.5;
    let hyper = Hyperpriors { psi0: Some(PSI0), prior_precision: None, weight_variance: Some(s2_prior) };
    let mut mix = mixture_params();
    let x = Mat::from_fn(n, 1, |i, _| XS[i]);
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    // forward estimate of E Σ_i (σ(η_i) − ½) η_i
    let fwd = 100_000;
    let (mut a, mut a2) = (0.0, 0.0);
    for _ in 0..fwd {
        let (_, w) = prior_draw(&mut mix, &PSI0, m, &mut rng);
        let phi = feature_matrix(&x, &w);
        let s2 = s2_prior.sample(&mut rng);
        let beta: Vec<f64> = (0..2 * m).map(|_| s2.sqrt() * rng.sample::<f64, _>(StandardNormal)).collect();
        let b0 = v0.sqrt() * rng.sample::<f64, _>(StandardNormal);
        let v: f64 = (0..n)
            .map(|i| {
                let eta = (0..2 * m).map(|c| phi[(i, c)] * beta[c]).sum::<f64>() + b0;
                (sigmoid(eta) - 0.5) * eta
            })
            .sum();
        a += v;
        a2 += v * v;
    }
    let ea = a / fwd as f64;
    let se_a = ((a2 / fwd as f64 - ea * ea) / fwd as f64).sqrt();
    let (mut mixture, w) = prior_draw(&mut mix, &PSI0, m, &mut rng);
    let y0: Vec<f64> = (0..n).map(|_| if rng.random::<f64>() < 0.5 { 1.0 } else { 0.0 }).collect();
    let mut st = ClassificationState::new(x, y0, w, s2_prior.sample(&mut rng), v0, 8).unwrap();
    // the chain forgets its start (β = 0) during the first sweeps
    let iters = 40_000;
    let mut stats: Vec<Vec<f64>> = vec![Vec::new(); 7];
    let mut accepted = 0;
    let mut y = vec![0.0; n];
    for _ in 0..iters {
        accepted +=
            classification_sweep::<DefaultBackend, _>(&mut st, &mut mixture, &mut mix, &hyper, &mut rng)
                .unwrap();
        let w = st.w();
        let beta = st.beta();
        stats[0].push(w.iter().map(|v| v * v).sum::<f64>() / m as f64);
        stats[1].push(beta[..2 * m].iter().map(|v| v * v).sum::<f64>() / (2 * m) as f64);
        stats[2].push(beta[2 * m] * beta[2 * m]);
        stats[3].push(mixture.components.len() as f64);
        // joint statistic with the labels the moves conditioned on
        stats[4].push(st.labels().iter().zip(st.eta()).map(|(yi, e)| (yi - 0.5) * e).sum());
        stats[5].push(st.weight_variance());
        stats[6].push(mix.psi0);
        for i in 0..n {
            y[i] = if rng.random::<f64>() < sigmoid(st.eta()[i]) { 1.0 } else { 0.0 };
        }
        st.set_labels(y.clone()).unwrap();
    }
    let rate = accepted as f64 / (iters * m) as f64;
    assert!(rate > 0.05 && rate < 0.99, "acceptance rate {rate}");
    let joint = st.stats.weight_moves_accepted as f64 / iters as f64;
    assert!(joint > 0.05 && joint < 0.99, "joint weight move acceptance rate {joint}");
    let e_psi0 = PSI0.shape / PSI0.rate;
    let e_sigma = e_psi0 / (mix.nu0(1) - 2.0);
    let e_s2 = s2_prior.scale / (s2_prior.shape - 1.0);
    check("mean W^2", batch_stats(&stats[0], 100), e_sigma * (1.0 + 1.0 / mix.kappa0), 0.0);
    check("mean beta^2", batch_stats(&stats[1], 100), e_s2, 0.0);
    check("intercept^2", batch_stats(&stats[2], 100), v0, 0.0);
    let ek_clusters: f64 = (0..m).map(|i| mix.alpha / (mix.alpha + i as f64)).sum();
    check("clusters", batch_stats(&stats[3], 100), ek_clusters, 0.0);
    // E Σ (y_i − ½) η_i = E Σ (σ(η_i) − ½) η_i under the joint.
    check("sum (y-1/2) eta", batch_stats(&stats[4], 100), ea, se_a);
    check("s2", batch_stats(&stats[5], 100), e_s2, 0.0);
    check("psi0", batch_stats(&stats[6], 100), e_psi0, 0.0);
}
