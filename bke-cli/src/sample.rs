//! `bke embed sample`: fully Bayesian kernel learning — NUTS over the BKE hyperparameters `(θ, τ²)`
//! (bke-core `bayes`, seed 000 §5 and Appendix B), with R̂, ESS and divergences.

use crate::io;
use anyhow::{Context, bail};
use bke_core::Points;
use bke_core::bayes::{BayesOptions, HyperDraws, HyperPrior, sample_hyperparameters, warnings};
use bke_core::embedding::{EmbeddingPrior, hold_out_landmarks};
use bke_core::nuts::{NutsParams, Summary};
use bke_linalg::{Backend, BackendKind, WithBackend};
use clap::Args;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;

/// `bke embed sample`.
#[derive(Args)]
pub struct SampleArgs {
    /// Data CSV (header row, numeric columns).
    #[arg(long)]
    data: PathBuf,
    /// Columns to use, by name, comma-separated (default: all). Applies to every CSV read.
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Landmarks CSV (then all data points are data). Default: hold out a random subset.
    #[arg(long, conflicts_with = "num_landmarks")]
    landmarks: Option<PathBuf>,
    /// Number of landmarks held out of the data at random (default min(100, max(D, n/5))).
    #[arg(long)]
    num_landmarks: Option<usize>,
    /// Number of chains (run in parallel).
    #[arg(long, default_value_t = 4)]
    chains: usize,
    /// Draws kept per chain.
    #[arg(long, default_value_t = 1000)]
    draws: usize,
    /// Warmup (adaptation) iterations per chain.
    #[arg(long, default_value_t = 1000)]
    warmup: usize,
    /// Seed of the landmark selection and of the sampler (chain c uses stream c).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Write every draw (chain, draw, lengthscale(s), tau2, sampler statistics) to this CSV.
    #[arg(long)]
    draws_out: Option<PathBuf>,
    /// Prior on the lengthscale(s): gamma:SHAPE,RATE or lognormal:MU,SIGMA.
    #[arg(long, default_value = "gamma:1,1")]
    lengthscale_prior: String,
    /// Prior on τ²: gamma:SHAPE,RATE or lognormal:MU,SIGMA.
    #[arg(long, default_value = "gamma:1,1")]
    tau2_prior: String,
    /// Hold τ² fixed at this value instead of sampling it.
    #[arg(long)]
    tau2: Option<f64>,
    /// One lengthscale per dimension.
    #[arg(long)]
    ard: bool,
    /// Leave out the log-Jacobian term of the pseudolikelihood.
    #[arg(long)]
    no_jacobian: bool,
    /// Prior measure of r_θ: lebesgue (default), unit (the seed's Stan listing) or gaussian:ETA.
    #[arg(long, default_value = "lebesgue")]
    prior: String,
    /// Maximum NUTS tree depth.
    #[arg(long, default_value_t = 10)]
    max_depth: usize,
    /// Target acceptance statistic of the step-size adaptation.
    #[arg(long, default_value_t = 0.8)]
    target_accept: f64,
    /// Linear-algebra backend (compiled-in ones: see `bke backends`).
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads (default: all cores; results do not depend on it).
    #[arg(long)]
    threads: Option<usize>,
}

struct Job {
    x: Points,
    z: Points,
    opts: BayesOptions,
    bar: indicatif::ProgressBar,
}

impl WithBackend for Job {
    type Output = Result<HyperDraws, bke_core::CoreError>;
    fn run<B: Backend>(self) -> Self::Output {
        let bar = self.bar.clone();
        sample_hyperparameters::<B>(&self.x, &self.z, &self.opts, &move || bar.inc(1))
    }
}

/// `{"mean", "sd", "q05", "q50", "q95", "rhat", "ess", …}` of one quantity.
pub fn summary_json(s: &Summary) -> Value {
    json!({
        "mean": s.mean,
        "sd": s.sd,
        "q05": s.q05,
        "q50": s.q50,
        "q95": s.q95,
        "rhat": s.rhat,
        "ess": s.ess_bulk,
        "ess_tail": s.ess_tail,
        "mcse_mean": s.mcse_mean,
    })
}

/// Writes the draws as CSV: chain, draw, lengthscale(s), tau2 and the sampler statistics.
fn write_draws(path: &PathBuf, d: &HyperDraws) -> anyhow::Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let k = d.num_lengthscales;
    let ls_names: Vec<String> = if k == 1 {
        vec!["lengthscale".into()]
    } else {
        (1..=k).map(|i| format!("lengthscale_{i}")).collect()
    };
    writeln!(
        w,
        "chain,draw,{},tau2,log_density,accept_stat,tree_depth,n_leapfrog,divergent,energy",
        ls_names.join(",")
    )?;
    let tau2 = d.tau2();
    for (c, chain) in d.nuts.chains.iter().enumerate() {
        for (t, u) in chain.draws.chunks(d.nuts.dim).enumerate() {
            let ls: Vec<String> = u[..k].iter().map(|v| format!("{}", v.exp())).collect();
            writeln!(
                w,
                "{c},{t},{},{},{},{},{},{},{},{}",
                ls.join(","),
                tau2[c][t],
                chain.log_density[t],
                chain.accept_stat[t],
                chain.tree_depth[t],
                chain.n_leapfrog[t],
                u8::from(chain.divergent[t]),
                chain.energy[t]
            )?;
        }
    }
    w.flush().with_context(|| format!("cannot write {}", path.display()))
}

/// Runs `bke embed sample`.
pub fn run(a: SampleArgs) -> anyhow::Result<()> {
    if let Some(t) = a.threads {
        rayon::ThreadPoolBuilder::new().num_threads(t.max(1)).build_global().ok();
    }
    let kind = BackendKind::parse(&a.backend).map_err(anyhow::Error::msg)?;
    let prior = EmbeddingPrior::parse(&a.prior).context("--prior")?;
    let lengthscale_prior = HyperPrior::parse(&a.lengthscale_prior).context("--lengthscale-prior")?;
    let tau2_prior = HyperPrior::parse(&a.tau2_prior).context("--tau2-prior")?;
    if let Some(t) = a.tau2 {
        if !(t.is_finite() && t > 0.0) {
            bail!("--tau2: {t} must be finite and > 0");
        }
    }
    let all = io::read_points(&a.data, a.columns.as_deref())?;
    let (x, z, landmark_indices) = match &a.landmarks {
        Some(p) => (all, io::read_points(p, a.columns.as_deref())?, None),
        None => {
            let m = a.num_landmarks.unwrap_or_else(|| 100.min((all.len() / 5).max(all.dim())));
            let (x, z, idx) = hold_out_landmarks(&all, m, a.seed).context("--num-landmarks")?;
            (x, z, Some(idx))
        }
    };
    let nuts = NutsParams {
        chains: a.chains,
        warmup: a.warmup,
        draws: a.draws,
        seed: a.seed,
        max_depth: a.max_depth,
        target_accept: a.target_accept,
        ..NutsParams::default()
    };
    let opts = BayesOptions {
        lengthscale_prior,
        tau2_prior,
        fixed_tau2: a.tau2,
        ard: a.ard,
        prior,
        jacobian: !a.no_jacobian,
        nuts,
    };
    opts.check()?;
    let bar = io::progress((a.chains * (a.warmup + a.draws)) as u64, "NUTS");
    let started = std::time::Instant::now();
    let draws = kind.dispatch(Job { x: x.clone(), z: z.clone(), opts: opts.clone(), bar: bar.clone() })??;
    bar.finish_and_clear();
    let seconds = started.elapsed().as_secs_f64();
    if let Some(p) = &a.draws_out {
        write_draws(p, &draws)?;
    }
    let k = draws.num_lengthscales;
    let lengthscale = if k == 1 {
        summary_json(&draws.lengthscale_summary(0))
    } else {
        Value::Array((0..k).map(|d| summary_json(&draws.lengthscale_summary(d))).collect())
    };
    let tau2 = match a.tau2 {
        Some(t) => json!({"mean": t, "sd": 0.0, "q05": t, "q50": t, "q95": t, "rhat": null, "ess": null,
                          "fixed": true}),
        None => summary_json(&draws.tau2_summary()),
    };
    let acc: Vec<f64> = draws.nuts.chains.iter().flat_map(|c| c.accept_stat.iter().copied()).collect();
    let mean_accept = acc.iter().sum::<f64>() / acc.len() as f64;
    let out = json!({
        "lengthscale": lengthscale,
        "tau2": tau2,
        "divergences": draws.nuts.divergences(),
        "warnings": warnings(&draws, x.len(), z.len(), x.dim()),
        "warmup_divergences": draws.nuts.chains.iter().map(|c| c.warmup_divergences).sum::<usize>(),
        "max_depth_hits": draws.nuts.max_depth_hits(a.max_depth),
        "step_size": draws.nuts.chains.iter().map(|c| c.step_size).collect::<Vec<_>>(),
        "e_bfmi": draws.nuts.e_bfmi(),
        "mean_accept_stat": mean_accept,
        "chains": a.chains,
        "draws": a.draws,
        "warmup": a.warmup,
        "seed": a.seed,
        "n_data": x.len(),
        "num_landmarks": z.len(),
        "landmark_indices": landmark_indices,
        "lengthscale_prior": lengthscale_prior.name(),
        "tau2_prior": if a.tau2.is_some() { Value::Null } else { json!(tau2_prior.name()) },
        "prior": prior.name(),
        "jacobian": !a.no_jacobian,
        "scale": "NUTS on log lengthscale and log tau2 (log-Jacobian of the transform included); summaries on the natural scale",
        "backend": kind.name(),
        "seconds": seconds,
    });
    io::emit(&out)
}

/// The `--bayes` options of `bke witness`: integrate the lengthscale (and optionally τ²) out of the
/// witness function by NUTS on the pooled sample (seed 000 Fig. 3).
#[derive(Args, Clone, Debug)]
pub struct BayesWitnessArgs {
    /// Integrate the hyperparameters out (NUTS on the pooled sample, seed Fig. 3) instead of fixing
    /// or selecting one lengthscale; --lengthscale/--select are then ignored.
    #[arg(long)]
    pub bayes: bool,
    /// With --bayes: number of chains.
    #[arg(long, default_value_t = 4)]
    pub chains: usize,
    /// With --bayes: draws per chain (one witness draw each).
    #[arg(long, default_value_t = 200)]
    pub draws: usize,
    /// With --bayes: warmup iterations per chain.
    #[arg(long, default_value_t = 200)]
    pub warmup: usize,
    /// With --bayes: landmarks held out of the pooled sample (default min(100, max(D, n/5))).
    #[arg(long)]
    pub num_landmarks: Option<usize>,
    /// With --bayes: prior on the lengthscale.
    #[arg(long, default_value = "gamma:1,1")]
    pub lengthscale_prior: String,
    /// With --bayes: sample τ² too (prior --tau2-prior; the seed's setting, but with m > D landmarks
    /// its posterior runs off to θ → ∞, τ² → 0, see `bke embed sample`); default: τ² fixed at --tau2.
    #[arg(long)]
    pub sample_tau2: bool,
    /// With --bayes --sample-tau2: prior on τ².
    #[arg(long, default_value = "gamma:1,1")]
    pub tau2_prior: String,
}

struct WitnessJob {
    pooled_data: Points,
    landmarks: Points,
    x: Points,
    y: Points,
    grid: Points,
    opts: BayesOptions,
    level: f64,
    seed: u64,
    bar: indicatif::ProgressBar,
}

impl WithBackend for WitnessJob {
    type Output = Result<(HyperDraws, bke_core::bayes::WitnessPosterior), bke_core::CoreError>;
    fn run<B: Backend>(self) -> Self::Output {
        let bar = self.bar.clone();
        let draws =
            sample_hyperparameters::<B>(&self.pooled_data, &self.landmarks, &self.opts, &move || bar.inc(1))?;
        self.bar.finish_and_clear();
        let w = bke_core::bayes::witness_posterior::<B>(
            &self.x,
            &self.y,
            &self.grid,
            None,
            &draws.params(),
            self.level,
            self.seed,
        )?;
        Ok((draws, w))
    }
}

/// `bke witness --bayes`: the witness posterior with the hyperparameters integrated out.
#[allow(clippy::too_many_arguments)]
pub fn bayes_witness(
    b: &BayesWitnessArgs,
    x: Points,
    y: Points,
    grid: Points,
    tau2: f64,
    prior: EmbeddingPrior,
    level: f64,
    seed: u64,
    kind: BackendKind,
) -> anyhow::Result<Value> {
    let lengthscale_prior = HyperPrior::parse(&b.lengthscale_prior).context("--lengthscale-prior")?;
    let tau2_prior = HyperPrior::parse(&b.tau2_prior).context("--tau2-prior")?;
    if !(level > 0.0 && level < 1.0) {
        bail!("--level: {level} must lie strictly between 0 and 1");
    }
    let pooled = x.concat(&y)?;
    let m = b.num_landmarks.unwrap_or_else(|| 100.min((pooled.len() / 5).max(pooled.dim())));
    let (data, landmarks, _) = hold_out_landmarks(&pooled, m, seed).context("--num-landmarks")?;
    let opts = BayesOptions {
        lengthscale_prior,
        tau2_prior,
        fixed_tau2: if b.sample_tau2 { None } else { Some(tau2) },
        prior,
        nuts: NutsParams {
            chains: b.chains,
            warmup: b.warmup,
            draws: b.draws,
            seed,
            ..NutsParams::default()
        },
        ..BayesOptions::default()
    };
    opts.check()?;
    let bar = io::progress((b.chains * (b.warmup + b.draws)) as u64, "NUTS");
    let (n, mm, dim) = (data.len(), landmarks.len(), data.dim());
    let (draws, w) = kind.dispatch(WitnessJob {
        pooled_data: data,
        landmarks,
        x: x.clone(),
        y: y.clone(),
        grid,
        opts,
        level,
        seed,
        bar: bar.clone(),
    })??;
    bar.finish_and_clear();
    let tau2_json = if b.sample_tau2 { summary_json(&draws.tau2_summary()) } else { json!(tau2) };
    Ok(json!({
        "mean": w.mean,
        "lower": w.lower,
        "upper": w.upper,
        "median": w.median,
        "prob_positive": w.prob_positive,
        "fraction_band_excludes_0": w.fraction_excluding_zero(),
        "level": level,
        "selection": "bayes",
        "lengthscale": summary_json(&draws.lengthscale_summary(0)),
        "tau2": tau2_json,
        "lengthscale_prior": lengthscale_prior.name(),
        "tau2_prior": if b.sample_tau2 { json!(tau2_prior.name()) } else { Value::Null },
        "divergences": draws.nuts.divergences(),
        "warnings": warnings(&draws, n, mm, dim),
        "witness_draws": draws.params().len(),
        "num_landmarks": mm,
        "prior": prior.name(),
        "posterior": "bke, hyperparameters integrated out by NUTS",
        "n_x": x.len(),
        "n_y": y.len(),
        "backend": kind.name(),
    }))
}
