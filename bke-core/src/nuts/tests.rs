//! Validation of the sampler on targets with known moments and quantiles. Tolerances are 4.5 Monte-Carlo
//! standard errors, each computed from the ESS of the statistic in question (the mean, the squared
//! deviation for the variance, the indicator for a quantile), with fixed seeds.

use super::diagnostics::ess_mean;
use super::tree::Tree;
use super::*;
use crate::special::normal_quantile;

const Z: f64 = 4.5;

fn refs(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(Vec::as_slice).collect()
}

/// Checks the mean and variance of a marginal, and the given quantiles `(p, q_p, density at q_p)`.
fn check_marginal(chains: &[Vec<f64>], mean: f64, var: f64, quantiles: &[(f64, f64, f64)], what: &str) {
    let all: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = all.len() as f64;
    let m = all.iter().sum::<f64>() / s;
    let ess_m = ess_mean(&refs(chains));
    let se_m = (var / ess_m).sqrt();
    assert!((m - mean).abs() < Z * se_m, "{what}: mean {m} vs {mean} (se {se_m}, ess {ess_m})");
    let sq: Vec<Vec<f64>> =
        chains.iter().map(|c| c.iter().map(|x| (x - mean) * (x - mean)).collect()).collect();
    let v = sq.iter().flatten().sum::<f64>() / s;
    let sq_all: Vec<f64> = sq.iter().flatten().copied().collect();
    let sd_sq = (sq_all.iter().map(|x| (x - v) * (x - v)).sum::<f64>() / (s - 1.0)).sqrt();
    let ess_v = ess_mean(&refs(&sq));
    let se_v = sd_sq / ess_v.sqrt();
    assert!((v - var).abs() < Z * se_v, "{what}: variance {v} vs {var} (se {se_v}, ess {ess_v})");
    let mut sorted = all.clone();
    sorted.sort_by(f64::total_cmp);
    for &(p, q, dens) in quantiles {
        let ind: Vec<Vec<f64>> =
            chains.iter().map(|c| c.iter().map(|&x| f64::from(u8::from(x <= q))).collect()).collect();
        let ess_q = ess_mean(&refs(&ind));
        let se_q = (p * (1.0 - p) / ess_q).sqrt() / dens;
        let qh = diagnostics::quantile_sorted(&sorted, p);
        assert!((qh - q).abs() < Z * se_q, "{what}: q{p} {qh} vs {q} (se {se_q}, ess {ess_q})");
    }
}

fn normal_quantiles(mean: f64, sd: f64) -> Vec<(f64, f64, f64)> {
    [0.05, 0.25, 0.5, 0.75, 0.95]
        .iter()
        .map(|&p| {
            let z = normal_quantile(p);
            (p, mean + sd * z, (-0.5 * z * z).exp() / ((2.0 * std::f64::consts::PI).sqrt() * sd))
        })
        .collect()
}

/// A Gaussian `N(mu, Σ)` given by its precision matrix `Σ⁻¹` (row-major).
struct Gaussian {
    mu: Vec<f64>,
    prec: Vec<f64>,
}

impl Target for Gaussian {
    fn dim(&self) -> usize {
        self.mu.len()
    }
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        let d = self.mu.len();
        let mut lp = 0.0;
        for i in 0..d {
            let mut g = 0.0;
            for j in 0..d {
                g -= self.prec[i * d + j] * (q[j] - self.mu[j]);
            }
            grad[i] = g;
            lp += 0.5 * g * (q[i] - self.mu[i]);
        }
        Ok(lp)
    }
}

/// Three coordinates with scales 1, 10, 0.1; the first two correlated with ρ = 0.9.
fn correlated_gaussian() -> (Gaussian, [f64; 3], f64) {
    let sd = [1.0, 10.0, 0.1];
    let rho = 0.9;
    // Precision of the 2×2 block [[1, ρ·10], [ρ·10, 100]] and of the independent third coordinate.
    let det = 100.0 * (1.0 - rho * rho);
    let prec = vec![100.0 / det, -rho * 10.0 / det, 0.0, -rho * 10.0 / det, 1.0 / det, 0.0, 0.0, 0.0, 100.0];
    (Gaussian { mu: vec![1.0, -2.0, 3.0], prec }, sd, rho)
}

fn quick(seed: u64) -> NutsParams {
    NutsParams { chains: 4, warmup: 1000, draws: 1000, seed, ..NutsParams::default() }
}

#[test]
fn correlated_gaussian_moments_quantiles_and_correlation() {
    let (model, sd, rho) = correlated_gaussian();
    let out = sample(&model, &quick(1)).unwrap();
    for j in 0..3 {
        let c = out.coordinate(j);
        check_marginal(
            &c,
            model.mu[j],
            sd[j] * sd[j],
            &normal_quantiles(model.mu[j], sd[j]),
            &format!("x{j}"),
        );
        let s = out.summary(j);
        assert!(s.rhat < 1.01, "x{j}: rhat {}", s.rhat);
        assert!(s.ess_bulk > 400.0, "x{j}: bulk ESS {}", s.ess_bulk);
    }
    // Correlation of the first two coordinates: E[(x0−μ0)(x1−μ1)/(σ0σ1)] = ρ.
    let prod = out.map_draws(|x| (x[0] - 1.0) * (x[1] + 2.0) / 10.0);
    let all: Vec<f64> = prod.iter().flatten().copied().collect();
    let r = all.iter().sum::<f64>() / all.len() as f64;
    let sdp = (all.iter().map(|v| (v - r) * (v - r)).sum::<f64>() / all.len() as f64).sqrt();
    let se = sdp / ess_mean(&refs(&prod)).sqrt();
    assert!((r - rho).abs() < Z * se, "correlation {r} vs {rho} (se {se})");
    assert_eq!(out.divergences(), 0);
    let acc: Vec<f64> = out.chains.iter().flat_map(|c| c.accept_stat.iter().copied()).collect();
    let mean_acc = acc.iter().sum::<f64>() / acc.len() as f64;
    assert!((0.7..0.95).contains(&mean_acc), "mean acceptance {mean_acc} (target 0.8)");
    assert!(out.e_bfmi().iter().all(|&e| e > 0.3), "E-BFMI {:?}", out.e_bfmi());
}

/// The adapted diagonal inverse metric approaches the marginal variances, whatever their scale.
#[test]
fn metric_adaptation_learns_the_scales() {
    let sd = [0.01, 1.0, 100.0];
    let prec = vec![1e4, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1e-4];
    let model = Gaussian { mu: vec![0.0; 3], prec };
    let out = sample(&model, &NutsParams { chains: 2, ..quick(2) }).unwrap();
    for c in &out.chains {
        for j in 0..3 {
            let ratio = c.inv_metric[j] / (sd[j] * sd[j]);
            // The last window averages ~500 draws: the variance estimate is within ±30% with margin.
            assert!((0.7..1.3).contains(&ratio), "coordinate {j}: inv metric / variance = {ratio}");
        }
        // With the right metric the target is isotropic: a step size near 1 and short trajectories.
        assert!(c.step_size > 0.4 && c.step_size < 1.6, "step size {}", c.step_size);
        let mean_depth = c.tree_depth.iter().sum::<usize>() as f64 / c.tree_depth.len() as f64;
        assert!(mean_depth < 3.5, "mean tree depth {mean_depth}");
    }
    assert_eq!(out.max_depth_hits(10), 0);
}

/// A banana: `x₀ ~ N(0, 2²)`, `x₁ | x₀ ~ N(b x₀², 1)`, b = 0.3; `E x₁ = 4b`, `Var x₁ = 1 + 32 b²`.
struct Banana {
    b: f64,
}

impl Target for Banana {
    fn dim(&self) -> usize {
        2
    }
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        let r = q[1] - self.b * q[0] * q[0];
        grad[0] = -q[0] / 4.0 + r * 2.0 * self.b * q[0];
        grad[1] = -r;
        Ok(-q[0] * q[0] / 8.0 - 0.5 * r * r)
    }
}

#[test]
fn banana_moments_and_quantiles() {
    let b = 0.3;
    // The curvature grows like 2b|x₀| in the arms; as in Stan, a higher target acceptance (smaller
    // step) keeps divergences rare there (with 0.8: 18 of 4000 here, moments still within error).
    let out = sample(&Banana { b }, &NutsParams { target_accept: 0.9, ..quick(3) }).unwrap();
    check_marginal(&out.coordinate(0), 0.0, 4.0, &normal_quantiles(0.0, 2.0), "banana x0");
    check_marginal(&out.coordinate(1), 4.0 * b, 1.0 + 32.0 * b * b, &[], "banana x1");
    for j in 0..2 {
        // Moving between the arms is slow (bulk ESS ≈ 360 of 4000 for x₀), so R̂ − 1 fluctuates at the
        // 0.01 level; a stuck chain gives far larger values.
        let s = out.summary(j);
        assert!(s.rhat < 1.02 && s.ess_bulk > 200.0, "{s:?}");
    }
    assert!(out.divergences() <= 10, "{} divergences", out.divergences());
}

/// A funnel: `v ~ N(0, σ_v²)`, `x_k | v ~ N(0, e^v)` for k = 1..K.
struct Funnel {
    sd_v: f64,
    k: usize,
}

impl Target for Funnel {
    fn dim(&self) -> usize {
        self.k + 1
    }
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        let v = q[0];
        let ev = (-v).exp();
        let mut lp = -0.5 * v * v / (self.sd_v * self.sd_v) - 0.5 * self.k as f64 * v;
        grad[0] = -v / (self.sd_v * self.sd_v) - 0.5 * self.k as f64;
        for i in 1..=self.k {
            lp -= 0.5 * q[i] * q[i] * ev;
            grad[0] += 0.5 * q[i] * q[i] * ev;
            grad[i] = -q[i] * ev;
        }
        Ok(lp)
    }
}

/// A mild funnel (σ_v = 1, scale ratio e³ ≈ 20 between its ±3σ ends) is sampled correctly.
#[test]
fn mild_funnel_marginal_of_the_scale() {
    let out = sample(&Funnel { sd_v: 1.0, k: 3 }, &quick(4)).unwrap();
    check_marginal(&out.coordinate(0), 0.0, 1.0, &normal_quantiles(0.0, 1.0), "funnel v");
    check_marginal(&out.coordinate(1), 0.0, 0.5f64.exp(), &[], "funnel x1");
    assert!(out.summary(0).rhat < 1.01);
    assert!(out.divergences() <= 4, "{} divergences", out.divergences());
}

/// Neal's funnel (σ_v = 3, nine x's) has a neck the step size cannot resolve: divergences are detected.
#[test]
fn neals_funnel_reports_divergences() {
    let out =
        sample(&Funnel { sd_v: 3.0, k: 9 }, &NutsParams { warmup: 500, draws: 500, ..quick(5) }).unwrap();
    assert!(out.divergences() > 0, "no divergences in Neal's funnel");
    // Divergences happen in the neck: the divergent draws sit at lower v than the average draw.
    let mut div_v = vec![];
    for c in &out.chains {
        for (t, &d) in c.divergent.iter().enumerate() {
            if d {
                div_v.push(c.draws[t * 10]);
            }
        }
    }
    let mean_all = out.summary(0).mean;
    let mean_div = div_v.iter().sum::<f64>() / div_v.len() as f64;
    assert!(mean_div < mean_all, "divergent mean v {mean_div} vs overall {mean_all}");
}

/// `q = log x`, `x ~ Gamma(a, 1)`: a skewed 1-D target like the log-hyperparameters of the BKE;
/// `E q = ψ(a)`, `Var q = ψ'(a)`, `E e^q = a`.
struct LogGamma {
    a: f64,
}

impl Target for LogGamma {
    fn dim(&self) -> usize {
        1
    }
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        grad[0] = self.a - q[0].exp();
        Ok(self.a * q[0] - q[0].exp())
    }
}

#[test]
fn log_gamma_moments() {
    let out = sample(&LogGamma { a: 2.0 }, &quick(6)).unwrap();
    let psi2 = 1.0 - 0.577_215_664_901_532_9;
    let trigamma2 = std::f64::consts::PI.powi(2) / 6.0 - 1.0;
    check_marginal(&out.coordinate(0), psi2, trigamma2, &[], "log gamma q");
    check_marginal(&out.map_draws(|q| q[0].exp()), 2.0, 2.0, &[], "gamma x");
}

#[test]
fn draws_do_not_depend_on_the_thread_count() {
    let (model, _, _) = correlated_gaussian();
    let params = NutsParams { warmup: 200, draws: 100, ..quick(7) };
    let run = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| sample(&model, &params))
    };
    let one = run(1).unwrap();
    let three = run(3).unwrap();
    assert_eq!(one, three);
    let other = sample(&model, &NutsParams { seed: 8, ..params.clone() }).unwrap();
    assert_ne!(one.chains[0].draws, other.chains[0].draws);
    // Chains differ from each other (independent streams).
    assert_ne!(one.chains[0].draws, one.chains[1].draws);
}

/// A density that always fails, or whose support lies outside the initialisation box.
struct Nowhere;

impl Target for Nowhere {
    fn dim(&self) -> usize {
        2
    }
    fn log_density_grad(&self, q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        if q[0] < 10.0 {
            return Err(CoreError::InvalidParameter {
                name: "q0".into(),
                value: q[0],
                reason: "outside the support (q0 ≥ 10)".into(),
            });
        }
        grad[0] = -(q[0] - 11.0);
        grad[1] = -q[1];
        Ok(-0.5 * (q[0] - 11.0).powi(2) - 0.5 * q[1] * q[1])
    }
}

#[test]
fn failed_initialisation_says_why() {
    let e = sample(&Nowhere, &quick(9)).unwrap_err().to_string();
    assert!(e.contains("failed to initialise") && e.contains("outside the support"), "{e}");
    // Given initial values inside the support it runs.
    let inits = vec![vec![11.0, 0.0]; 4];
    let out =
        sample_with(&Nowhere, &NutsParams { warmup: 100, draws: 50, ..quick(9) }, Some(&inits), &(), None);
    assert!(out.is_ok(), "{:?}", out.err());
    let bad = vec![vec![0.0, 0.0]; 4];
    let e = sample_with(&Nowhere, &quick(9), Some(&bad), &(), None).unwrap_err().to_string();
    assert!(e.contains("given initial value"), "{e}");
    let e = sample_with(&Nowhere, &quick(9), Some(&bad[..2]), &(), None).unwrap_err();
    assert!(matches!(e, CoreError::DimensionMismatch { .. }), "{e}");
}

/// A flat density: the step-size search diverges, which is reported as an improper posterior.
struct Flat;

impl Target for Flat {
    fn dim(&self) -> usize {
        1
    }
    fn log_density_grad(&self, _q: &[f64], grad: &mut [f64]) -> Result<f64, CoreError> {
        grad[0] = 0.0;
        Ok(0.0)
    }
}

#[test]
fn improper_posterior_is_reported() {
    let e = sample(&Flat, &quick(10)).unwrap_err().to_string();
    assert!(e.contains("improper"), "{e}");
}

#[test]
fn invalid_settings_are_rejected() {
    let (model, _, _) = correlated_gaussian();
    for p in [
        NutsParams { chains: 0, ..NutsParams::default() },
        NutsParams { draws: 0, ..NutsParams::default() },
        NutsParams { target_accept: 1.0, ..NutsParams::default() },
        NutsParams { max_depth: 0, ..NutsParams::default() },
        NutsParams { init_radius: f64::NAN, ..NutsParams::default() },
    ] {
        assert!(sample(&model, &p).is_err(), "{p:?}");
    }
}

/// The leapfrog integrator is time-reversible and its energy error is second order in ε.
#[test]
fn leapfrog_is_reversible_and_second_order() {
    let (model, _, _) = correlated_gaussian();
    let rng = ChaCha8Rng::seed_from_u64(0);
    let mut tree = Tree {
        model: &model,
        dim: 3,
        eps: 0.01,
        inv_metric: vec![1.0, 50.0, 0.01],
        max_energy_error: 1000.0,
        rng,
        n_leapfrog: 0,
        sum_metro_prob: 0.0,
        divergent: false,
    };
    let mut z = PsPoint::new(3);
    z.q.copy_from_slice(&[0.3, 1.0, 3.05]);
    evaluate(&model, &mut z).unwrap();
    tree.sample_momentum(&mut z);
    let start = z.clone();
    for _ in 0..50 {
        tree.leapfrog(&mut z, 0.01);
    }
    for _ in 0..50 {
        tree.leapfrog(&mut z, -0.01);
    }
    for i in 0..3 {
        assert!((z.q[i] - start.q[i]).abs() < 1e-10 && (z.p[i] - start.p[i]).abs() < 1e-10);
    }
    // Energy error after a fixed integration time T = 0.4 scales like ε².
    let err = |eps: f64| {
        let mut z = start.clone();
        let h0 = tree.hamiltonian(&z);
        for _ in 0..(0.4 / eps).round() as usize {
            tree.leapfrog(&mut z, eps);
        }
        (tree.hamiltonian(&z) - h0).abs()
    };
    let ratio = err(0.02) / err(0.01);
    assert!((3.0..5.0).contains(&ratio), "energy error ratio {ratio} (expected ≈ 4)");
}

/// One streamed draw: its index, coordinates and six statistics.
type Row = (usize, Vec<f64>, [f64; 6]);

/// Collects the streamed draws, one vector of rows per chain.
#[derive(Default)]
struct Collect(std::sync::Mutex<Vec<Vec<Row>>>);

impl DrawSink for Collect {
    fn record(&self, d: &Draw<'_>) -> Result<(), CoreError> {
        let mut all = self.0.lock().unwrap();
        if all.len() <= d.chain {
            all.resize(d.chain + 1, vec![]);
        }
        let stats = [
            d.log_density,
            d.accept_stat,
            d.tree_depth as f64,
            d.n_leapfrog as f64,
            f64::from(u8::from(d.divergent)),
            d.energy,
        ];
        all[d.chain].push((d.index, d.q.to_vec(), stats));
        Ok(())
    }
}

/// Streaming to a sink gives the sink exactly the draws and statistics an in-memory run keeps, in
/// order, keeps no per-draw statistics, and gives the same diagnostics; the running aggregates
/// agree with the two-pass formulas on the kept vectors (the oracle).
#[test]
fn a_sink_receives_every_draw_and_the_aggregates_match_the_stored_statistics() {
    let model = Funnel { sd_v: 3.0, k: 3 };
    let params = NutsParams { chains: 3, warmup: 150, draws: 120, ..quick(11) };
    let kept = sample(&model, &params).unwrap();
    let sink = Collect::default();
    let streamed = sample_with(&model, &params, None, &(), Some(&sink)).unwrap();
    let got = sink.0.into_inner().unwrap();
    assert_eq!(got.len(), 3);
    for (c, (chain, rows)) in kept.chains.iter().zip(&got).enumerate() {
        assert_eq!(rows.len(), 120);
        for (t, (index, q, st)) in rows.iter().enumerate() {
            assert_eq!(*index, t);
            assert_eq!(q.as_slice(), &chain.draws[t * kept.dim..(t + 1) * kept.dim]);
            let want = [
                chain.log_density[t],
                chain.accept_stat[t],
                chain.tree_depth[t] as f64,
                chain.n_leapfrog[t] as f64,
                f64::from(u8::from(chain.divergent[t])),
                chain.energy[t],
            ];
            assert_eq!(st, &want, "chain {c} draw {t}");
        }
        let s = &streamed.chains[c];
        assert!(s.log_density.is_empty() && s.energy.is_empty() && s.divergent.is_empty());
        assert_eq!(s.draws, chain.draws);
        assert_eq!(s.stats, chain.stats);
        // Oracle: two-pass E-BFMI, counts and mean from the stored vectors.
        let e = &chain.energy;
        let mean = e.iter().sum::<f64>() / e.len() as f64;
        let num: f64 = e.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
        let den: f64 = e.iter().map(|v| (v - mean).powi(2)).sum();
        assert!((chain.stats.e_bfmi() - num / den).abs() < 1e-10 * (num / den));
        assert_eq!(chain.stats.divergences, chain.divergent.iter().filter(|&&d| d).count());
        let hits = chain.tree_depth.iter().filter(|&&d| d >= 3).count();
        assert_eq!(chain.stats.depth_counts.iter().skip(3).sum::<usize>(), hits);
    }
    assert_eq!(streamed.divergences(), kept.divergences());
    assert_eq!(streamed.e_bfmi(), kept.e_bfmi());
    let acc: Vec<f64> = kept.chains.iter().flat_map(|c| c.accept_stat.iter().copied()).collect();
    let mean_acc = acc.iter().sum::<f64>() / acc.len() as f64;
    assert!((kept.mean_accept_stat() - mean_acc).abs() < 1e-12);
    assert_eq!(streamed.summary(0), kept.summary(0));
}

/// A sink's error stops the sampler and is returned.
#[test]
fn a_failing_sink_stops_the_sampler() {
    struct Full;
    impl DrawSink for Full {
        fn record(&self, d: &Draw<'_>) -> Result<(), CoreError> {
            if d.index == 5 { Err(CoreError::Sampler("disk full".into())) } else { Ok(()) }
        }
    }
    let params = NutsParams { chains: 2, warmup: 20, draws: 50, ..quick(1) };
    let e = sample_with(&Funnel { sd_v: 1.0, k: 1 }, &params, None, &(), Some(&Full)).unwrap_err();
    assert!(e.to_string().contains("disk full"), "{e}");
}

/// Streaming lowers the memory estimate to the draws' coordinates.
#[test]
fn streaming_needs_less_memory_for_the_same_draws() {
    let p = NutsParams { chains: 4, draws: 1_000_000_000, ..NutsParams::default() };
    crate::budget::set_limit(Some(100 << 30));
    let kept = p.check_memory(2, false);
    let streamed = p.check_memory(2, true);
    crate::budget::set_limit(None);
    assert!(kept.is_err(), "4e9 draws × 8 values (256 GB) accepted under a 100 GiB limit");
    assert!(streamed.is_ok(), "{streamed:?}: 4e9 draws × 2 values = 64 GB under a 100 GiB limit");
}
