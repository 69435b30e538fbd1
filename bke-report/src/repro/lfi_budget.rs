//! `cargo xtask repro lfi-budget [--smoke] [--reps R] [--budgets 100,200,..]`: the error of likelihood-free inference
//! (seed 004 Algorithm 8.1) against exact posteriors as the simulation budget grows (issue 17).
//!
//! Problems (the exact posterior is known in closed form):
//! * conjugate 1-D: θ ~ N(0, 1), x | θ ~ N(θ, 0.5²), y = 1; posterior N(0.8, 0.2);
//! * conjugate 2-D: the same per coordinate, y = (1, −0.5); posterior N((0.8, −0.4), 0.2 I);
//! * exponential–gamma (seed 004 Fig. 5 left): rate θ ~ Gamma(2, rate 2), 20 draws from Exp(θ),
//!   statistic the log of their mean, kernels on log θ, observed mean 1/1.5; posterior
//!   Gamma(22, rate 2 + 20/1.5) on θ.
//!
//! At each budget `n` (simulations, and as many prior samples) and repetition (fresh simulations),
//! the methods draw 200 herded samples: the DME with the library's data-scaled defaults, the DME
//! with q̄-learned bandwidths (`--learn`), and KBR(b) with the same kernels. Measured per
//! repetition: |posterior mean error| and |sd / exact sd − 1| of the herded samples (averaged over
//! coordinates), and a distance to 20 000 exact samples (2 000 at the smoke size) — Wasserstein-1 in 1-D, the biased MMD² with
//! an SE kernel of the posterior sd in 2-D. The table gives mean ± standard error over repetitions,
//! with the distance of 200 exact samples (the floor herding aims at) beside it.

use super::Ctx;
use crate::plot::{Figure, Series};
use crate::stats::{mean_sd, mean_se};
use crate::table::Table;
use bke_core::hypothesis::mmd::mmd_statistic;
use bke_core::hypothesis::{MmdStatistic, WeightedKernel};
use bke_core::{Params, Points};
use bke_dme::herding::{HerdingParams, PosteriorEmbedding, wasserstein1};
use bke_dme::kbr::KbrParams;
use bke_dme::lfi::{LfiData, LfiLearnParams, LfiParams};
use bke_linalg::Faer;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma, Normal};

/// Herded samples per posterior.
const SAMPLES: usize = 200;

/// A test problem with a known posterior.
#[derive(Clone, Copy, PartialEq)]
pub enum Problem {
    /// θ ~ N(0, 1), x | θ ~ N(θ, 0.5²), y = 1.
    Conjugate1d,
    /// The same in two independent coordinates, y = (1, −0.5).
    Conjugate2d,
    /// Exponential–gamma on log θ.
    ExponentialGamma,
}

impl Problem {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Problem::Conjugate1d => "conjugate-1d",
            Problem::Conjugate2d => "conjugate-2d",
            Problem::ExponentialGamma => "exponential-gamma",
        }
    }

    /// Simulations and prior samples (`n` each) and the observation.
    pub fn data(self, n: usize, seed: u64) -> anyhow::Result<LfiData> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        match self {
            Problem::Conjugate1d | Problem::Conjugate2d => {
                let y = if self == Problem::Conjugate1d { vec![1.0] } else { vec![1.0, -0.5] };
                let d = y.len();
                let std = Normal::new(0.0, 1.0)?;
                let theta: Vec<f64> = (0..n * d).map(|_| std.sample(&mut rng)).collect();
                let x: Vec<f64> = theta.iter().map(|t| t + 0.5 * std.sample(&mut rng)).collect();
                let prior: Vec<f64> = (0..n * d).map(|_| std.sample(&mut rng)).collect();
                Ok(LfiData::new(
                    Points::new("θ", theta, d)?,
                    Points::new("x", x, d)?,
                    Points::new("θ̃", prior, d)?,
                    y,
                )?)
            }
            Problem::ExponentialGamma => {
                let prior = Gamma::new(2.0, 0.5)?;
                let sim = |t: f64, rng: &mut ChaCha8Rng| -> anyhow::Result<f64> {
                    let e = Exp::new(t)?;
                    Ok(((0..20).map(|_| e.sample(rng)).sum::<f64>() / 20.0).ln())
                };
                let theta: Vec<f64> = (0..n).map(|_| prior.sample(&mut rng)).collect();
                let x: Vec<f64> = theta.iter().map(|&t| sim(t, &mut rng)).collect::<anyhow::Result<_>>()?;
                let tilde: Vec<f64> = (0..n).map(|_| prior.sample(&mut rng).ln()).collect();
                let log_theta: Vec<f64> = theta.iter().map(|t| t.ln()).collect();
                Ok(LfiData::new(
                    Points::from_1d("log θ", &log_theta)?,
                    Points::from_1d("log mean", &x)?,
                    Points::from_1d("log θ̃", &tilde)?,
                    vec![(1.0f64 / 1.5).ln()],
                )?)
            }
        }
    }

    /// `k` exact posterior samples (on θ, row-major `k × d`).
    pub fn exact(self, k: usize, seed: u64) -> anyhow::Result<Points> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        match self {
            Problem::Conjugate1d | Problem::Conjugate2d => {
                let means: &[f64] = if self == Problem::Conjugate1d { &[0.8] } else { &[0.8, -0.4] };
                let std = Normal::new(0.0, 0.2f64.sqrt())?;
                let v =
                    (0..k).flat_map(|_| means.iter().map(|m| m + std.sample(&mut rng)).collect::<Vec<_>>());
                Ok(Points::new("exact", v.collect(), means.len())?)
            }
            Problem::ExponentialGamma => {
                let g = Gamma::new(22.0, 1.0 / (2.0 + 20.0 / 1.5))?;
                Ok(Points::from_1d("exact", &(0..k).map(|_| g.sample(&mut rng)).collect::<Vec<_>>())?)
            }
        }
    }

    /// Herded samples (in the inference space) mapped to θ.
    fn to_theta(self, s: &Points) -> anyhow::Result<Points> {
        Ok(match self {
            Problem::ExponentialGamma => Points::new("θ", s.as_slice().iter().map(|v| v.exp()).collect(), 1)?,
            _ => s.clone(),
        })
    }
}

/// The errors of one set of samples against the exact posterior.
#[derive(Clone, Copy, Debug)]
pub struct Errors {
    /// Mean over coordinates of |mean − exact mean|.
    pub mean: f64,
    /// Mean over coordinates of |sd / exact sd − 1|.
    pub sd: f64,
    /// W1 (1-D) or biased MMD² (2-D, SE kernel of the exact sd) to the exact samples.
    pub distance: f64,
}

fn column(p: &Points, k: usize) -> Vec<f64> {
    p.iter().map(|r| r[k]).collect()
}

/// Errors of `samples` against `exact` (both on θ).
pub fn errors(samples: &Points, exact: &Points) -> anyhow::Result<Errors> {
    let d = exact.dim();
    let (mut me, mut se, mut sd_exact) = (0.0, 0.0, 0.0);
    for k in 0..d {
        let (m, s) = mean_sd(&column(samples, k));
        let (em, es) = mean_sd(&column(exact, k));
        me += (m - em).abs() / d as f64;
        se += (s / es - 1.0).abs() / d as f64;
        sd_exact += es / d as f64;
    }
    let distance = if d == 1 {
        wasserstein1(samples.as_slice(), exact.as_slice())
    } else {
        mmd_statistic(samples, exact, &WeightedKernel::gaussian(sd_exact), MmdStatistic::Biased)?
    };
    Ok(Errors { mean: me, sd: se, distance })
}

/// The methods compared.
const METHODS: [&str; 3] = ["dme", "dme --learn", "kbr(b)"];

fn embedding(method: &str, data: &LfiData) -> anyhow::Result<PosteriorEmbedding> {
    Ok(match method {
        "dme" => LfiParams::default().check()?.fit::<Faer>(data)?.embedding().clone(),
        "dme --learn" => {
            let p = LfiParams { learn: Some(LfiLearnParams::default()), ..LfiParams::default() };
            p.check()?.fit::<Faer>(data)?.embedding().clone()
        }
        _ => KbrParams::default().check()?.fit::<Faer>(data)?.embedding().clone(),
    })
}

/// Runs the study.
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let smoke = ctx.smoke;
    let reps: usize = match args.iter().position(|a| a == "--reps").and_then(|i| args.get(i + 1)) {
        Some(r) => r.parse()?,
        None if smoke => 2,
        None => 5,
    };
    let budgets: Vec<usize> = match args.iter().position(|a| a == "--budgets").and_then(|i| args.get(i + 1)) {
        Some(b) => b.split(',').map(str::parse).collect::<Result<_, _>>()?,
        None if smoke => vec![100, 200],
        None => vec![100, 200, 400, 800, 1600],
    };
    let dir = ctx.dir("lfi-budget")?;
    ctx.progress(&format!(
        "issue 17: LFI error vs simulation budget against exact posteriors ({reps} repetitions)"
    ));
    let mut figures = Vec::new();
    let mut table = Table::new(
        "LFI posterior error vs simulation budget (n simulations = n prior samples; 200 herded samples)",
        &["problem", "method", "n", "|mean err|", "|sd/sd* − 1|", "distance", "floor (200 exact)"],
    );
    for problem in [Problem::Conjugate1d, Problem::Conjugate2d, Problem::ExponentialGamma] {
        let exact = problem.exact(if smoke { 2_000 } else { 20_000 }, 17)?;
        let floor = errors(&problem.exact(SAMPLES, 18)?, &exact)?.distance;
        let metric = if exact.dim() == 1 { "W1" } else { "MMD²" };
        let mut plot = Figure::new(
            &format!("LFI {}: posterior-mean error vs simulations", problem.name()),
            "simulations n",
            "|mean error| (mean ± se)",
        );
        plot = plot.log_x().log_y();
        for method in METHODS {
            let mut curve = Vec::new();
            for &n in &budgets {
                let mut runs = Vec::new();
                for r in 0..reps {
                    let data = problem.data(n, 1000 * n as u64 + r as u64)?;
                    let emb = embedding(method, &data)?;
                    let s =
                        emb.herd(&data.prior, &HerdingParams { samples: SAMPLES, ..Default::default() })?;
                    runs.push(errors(&problem.to_theta(&s)?, &exact)?);
                }
                let stat = |f: fn(&Errors) -> f64| mean_se(&runs.iter().map(f).collect::<Vec<_>>());
                let (m, d, s) = (stat(|e| e.mean), stat(|e| e.distance), stat(|e| e.sd));
                table.push(vec![
                    problem.name().into(),
                    method.into(),
                    n.to_string(),
                    format!("{:.4} ± {:.4}", m.0, m.1),
                    format!("{:.3} ± {:.3}", s.0, s.1),
                    format!("{metric} {:.4} ± {:.4}", d.0, d.1),
                    format!("{floor:.4}"),
                ]);
                ctx.progress(&format!(
                    "{:<18} {method:<12} n = {n:<5} mean err {:.4}  sd err {:.3}  {metric} {:.4}",
                    problem.name(),
                    m.0,
                    s.0,
                    d.0
                ));
                curve.push((n as f64, m.0.max(1e-4)));
            }
            plot = plot.with(Series::line(method, curve));
        }
        plot.save(&dir.join(format!("{}.svg", problem.name())))?;
        figures.push((problem.name(), plot));
    }
    table.notes.push(format!(
        "{reps} repetitions (fresh simulations each); distance: W1 to 20 000 exact samples (1-D, on θ), \
         biased MMD² with an SE kernel of the posterior sd (2-D); floor: the same distance for 200 exact samples"
    ));
    table.write_files(&dir, "lfi_budget")?;
    let mut section = ctx
        .section("budget", "Likelihood-free inference: error vs simulation budget against exact posteriors")
        .intro(format!(
            "seed 004 Algorithm 8.1 on three problems with closed-form posteriors (conjugate 1-D and 2-D, \
             exponential–gamma): the DME with default kernels, the DME with q̄-learned bandwidths and KBR(b), \
             200 herded samples each, at budgets {budgets:?} with {reps} repetitions."
        ));
    for (name, plot) in &figures {
        section.push_figure(
            plot,
            &format!("{name}: |posterior-mean error| vs simulations (mean over repetitions)."),
        )?;
    }
    section.push_table(&table);
    ctx.publish(section)
}
