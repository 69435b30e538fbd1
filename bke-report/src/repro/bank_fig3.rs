//! `cargo xtask repro bank-fig3`: seed 001 §4.1, Fig. 3. Data from the kernel with spectral density
//! `ρ(ω) = ½N(0, ¼) + ½N(3π/4, ¼)`, i.e. `k(t) = exp(−t²/8)(½ + ½cos(3πt/4))`: `X ~ N(0, 4²)`,
//! `N = 1000`, `Y ~ N(φ_ρ(X)ᵀβ, 1)` with 250 true frequencies and `β ~ N(0, I)`. BaNK (250 frequencies,
//! raw inputs) should recover both spectral modes and track `k(t)`.
//!
//! A real kernel only sees `ρ` through `E cos(ωᵀt)`, which does not change under `ω → −ω`, so spectral
//! densities are compared in their symmetrised form `½(ρ(ω) + ρ(−ω))`.

use bke_bank::features::feature_matrix;
use bke_bank::{BankParams, BankPrior, Task};
use bke_core::{Dataset, Params, Points};
use bke_linalg::{DefaultBackend, Mat};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::plot::{Figure, Series};
use crate::repro::Ctx;
use crate::table::write_columns;

fn normal_pdf(x: f64, m: f64, v: f64) -> f64 {
    (-(x - m).powi(2) / (2.0 * v)).exp() / (2.0 * std::f64::consts::PI * v).sqrt()
}

/// The true spectral density.
pub fn rho(w: f64) -> f64 {
    0.5 * normal_pdf(w, 0.0, 0.25) + 0.5 * normal_pdf(w, 0.75 * std::f64::consts::PI, 0.25)
}

/// The true kernel.
pub fn k_true(t: f64) -> f64 {
    (-t * t / 8.0).exp() * (0.5 + 0.5 * (0.75 * std::f64::consts::PI * t).cos())
}

/// Runs the reproduction: CSV under `out/bank-fig3`, one report section.
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let dir = ctx.dir("bank-fig3")?;
    let (n, m) = ctx.size((1000, 250), (300, 60));
    let (iterations, burn_in, samples) = ctx.size((1000, 500, 50), (80, 40, 10));
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let w_true: Vec<f64> = (0..m)
        .map(|_| {
            let mean = if rng.random::<f64>() < 0.5 { 0.0 } else { 0.75 * std::f64::consts::PI };
            mean + 0.5 * rng.sample::<f64, _>(StandardNormal)
        })
        .collect();
    let xs: Vec<f64> = (0..n).map(|_| 4.0 * rng.sample::<f64, _>(StandardNormal)).collect();
    let xm = Mat::from_fn(n, 1, |i, _| xs[i]);
    let phi = feature_matrix(&xm, &w_true);
    let beta: Vec<f64> = (0..2 * m).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
    let y: Vec<f64> = (0..n)
        .map(|i| {
            (0..2 * m).map(|c| phi[(i, c)] * beta[c]).sum::<f64>() + rng.sample::<f64, _>(StandardNormal)
        })
        .collect();
    let params = BankParams {
        frequencies: m,
        iterations,
        burn_in: Some(burn_in),
        samples,
        // The seed's generative settings: β ~ N(0, I) (λ₀ = 1 with unit noise), raw inputs.
        prior: BankPrior {
            kappa0: 0.05,
            nu0: Some(10.0),
            psi0: Some(2.0),
            a0: 1.0,
            b0: 1.0,
            prior_precision: Some(1.0),
            init_scale: Some(1.0),
            ..Default::default()
        },
        standardize_inputs: false,
        seed: 11,
        ..Default::default()
    };
    let t0 = std::time::Instant::now();
    let x = Points::from_1d("x", &xs)?;
    let data = Dataset::new(x, y.clone())?;
    let model =
        BankParams { task: Task::Regression, ..params.clone() }.check()?.fit::<DefaultBackend>(&data)?;
    let secs = t0.elapsed().as_secs_f64();
    // Spectral densities (symmetrised) on a grid.
    let grid: Vec<f64> = (0..=400).map(|i| -4.0 + 8.0 * i as f64 / 400.0).collect();
    let learned = model.spectral_density(&Points::from_1d("omega", &grid)?)?;
    let sym = |v: &[f64]| -> Vec<f64> { (0..v.len()).map(|i| 0.5 * (v[i] + v[v.len() - 1 - i])).collect() };
    let learned_sym = sym(&learned);
    let truth: Vec<f64> = grid.iter().map(|&w| rho(w)).collect();
    let truth_sym = sym(&truth);
    write_columns(
        dir.join("spectral.csv"),
        "omega,learned_symmetrised,true_symmetrised",
        &[&grid, &learned_sym, &truth_sym],
    )?;
    // Local maxima of the learned symmetrised density on ω ≥ 0.
    let half: Vec<(f64, f64)> =
        grid.iter().zip(&learned_sym).filter(|(w, _)| **w >= 0.0).map(|(w, v)| (*w, *v)).collect();
    let mut modes = Vec::new();
    for i in 0..half.len() {
        let left = if i == 0 { f64::NEG_INFINITY } else { half[i - 1].1 };
        let right = if i + 1 == half.len() { f64::NEG_INFINITY } else { half[i + 1].1 };
        if half[i].1 >= left
            && half[i].1 > right
            && half[i].1 > 0.05 * half.iter().map(|p| p.1).fold(0.0, f64::max)
        {
            modes.push(half[i].0);
        }
    }
    // Kernels on t ∈ [0, 10].
    let ts: Vec<f64> = (0..=200).map(|i| 10.0 * i as f64 / 200.0).collect();
    let (k_feat, k_mix) = model.kernel(&Points::from_1d("t", &ts)?)?;
    let k_rff: Vec<f64> =
        ts.iter().map(|t| w_true.iter().map(|w| (w * t).cos()).sum::<f64>() / m as f64).collect();
    let kt: Vec<f64> = ts.iter().map(|&t| k_true(t)).collect();
    let rmse =
        |a: &[f64]| (a.iter().zip(&kt).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / kt.len() as f64).sqrt();
    write_columns(
        dir.join("kernel.csv"),
        "t,true,true_frequencies_rff,bank_features,bank_mixture",
        &[&ts, &kt, &k_rff, &k_feat, &k_mix],
    )?;
    let pts = |xs: &[f64], ys: &[f64]| xs.iter().copied().zip(ys.iter().copied()).collect::<Vec<_>>();
    let spectral = Figure::new(
        "BaNK (seed 001 Fig. 3): learned spectral density, symmetrised",
        "frequency ω (radians per input unit)",
        "spectral density ρ(ω)",
    )
    .with(Series::dashed("true ρ", pts(&grid, &truth_sym)).color(6))
    .with(Series::line("BaNK posterior (mean of retained states)", pts(&grid, &learned_sym)).color(0));
    let kernel = Figure::new("BaNK (seed 001 Fig. 3b): kernel k(t)", "lag t (input units)", "k(t)")
        .with(Series::dashed("true k", pts(&ts, &kt)).color(6))
        .with(Series::line(&format!("k of the {m} true frequencies"), pts(&ts, &k_rff)))
        .with(Series::line("BaNK (sampled frequencies)", pts(&ts, &k_feat)))
        .with(Series::line("BaNK (learned mixture, eq. 5)", pts(&ts, &k_mix)));
    let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..n).collect();
        o.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]));
        o
    };
    let data = Figure::new("BaNK (seed 001 Fig. 3a): synthetic data", "input x", "target y")
        .with(Series::markers("data", order.iter().map(|&i| (xs[i], y[i])).collect()));
    let sm = model.spectral_mixture();
    let st = &model.stats.sweep;
    let mut section = ctx
        .section("spectral", "BaNK (seed 001 Fig. 3): learned spectral density and kernel")
        .intro(format!(
            "Data from the kernel with spectral density ρ(ω) = ½N(0, ¼) + ½N(3π/4, ¼): X ~ N(0, 4²), N = {n}, \
             Y = φ_ρ(X)ᵀβ + N(0, 1) with {m} true frequencies. BaNK ({m} frequencies, raw inputs, {iterations} \
             sweeps, {burn_in} burn-in, {samples} retained) should recover both modes; densities are compared \
             symmetrised, ½(ρ(ω) + ρ(−ω)), since a real kernel cannot tell ω from −ω."
        ))
        .seed("Qualitative only: the learned density recovers both modes and the BaNK kernel tracks the true k (Fig. 3b).")
        .measured(format!(
            "acceptance {:.3}, {} components in the last state, max factor drift {:.1e}, {} fallbacks, {secs:.1} s",
            st.accepted as f64 / st.proposals as f64,
            sm.weights.len(),
            st.max_factor_drift,
            st.fallbacks
        ))
        .measured(format!("modes of the learned symmetrised density on ω ≥ 0: {modes:.3?} (true: 0 and 3π/4 = 2.356)"))
        .measured(format!(
            "k(t) RMSE on [0, 10]: BaNK features {:.4}, BaNK mixture {:.4}; kernel of the {m} true frequencies {:.4}",
            rmse(&k_feat),
            rmse(&k_mix),
            rmse(&k_rff)
        ));
    for (k, w) in sm.weights.iter().enumerate() {
        section.push_measured(format!(
            "component {k}: weight {w:.3}, mean {:.3}, variance {:.3} (truth: ½, ±0 or ±2.356, 0.25)",
            sm.means[k][0], sm.covariances[k][0]
        ));
    }
    let section = section
        .figure(&spectral, "Both modes (0 and 3π/4 ≈ 2.36) should appear at the right places and widths.")?
        .figure(&kernel, "The learned kernel should follow the true k(t), including its oscillation.")?
        .figure(&data, "The regression data BaNK learns from.")?;
    ctx.publish(section)
}
