//! `bke lfi`: likelihood-free inference from simulations (bke-dme `lfi`, `kbr`, `herding`; seed 004
//! Algorithm 8.1). `--method dme` (default) is the deconditional mean embedding posterior, `--method
//! kbr` kernel Bayes' rule; both are herded into super-samples. Unset bandwidths and regularisers
//! take the library's data-scaled defaults.

use crate::exec::{Bar, ExecArgs};
use crate::io::{self, CsvTable};
use anyhow::{Context, bail};
use bke_core::{Kernel, Points};
use bke_dme::herding::HerdingParams;
use bke_dme::infer::{LfiMethod, LfiSpec, infer};
use bke_dme::lfi::LfiData;
use bke_linalg::{Backend, WithBackend};
use clap::Args;
use serde_json::Value;
use std::path::PathBuf;

/// `bke lfi`: likelihood-free inference with deconditional mean embeddings (seed 004 Algorithm 8.1).
#[derive(Args)]
pub struct LfiArgs {
    /// CSV of simulations: parameters θ_i and simulated statistics x_i, one simulation per row.
    #[arg(long)]
    simulations: PathBuf,
    /// Columns of --simulations holding the parameters θ (comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    theta_cols: Vec<String>,
    /// Columns of --simulations holding the statistics x (comma-separated).
    #[arg(long, value_delimiter = ',', required = true)]
    stat_cols: Vec<String>,
    /// CSV of prior samples θ̃ (columns named as --theta-cols, else all columns); they are also the
    /// herding candidates unless --candidates is given.
    #[arg(long)]
    prior_samples: PathBuf,
    /// CSV of the observed statistics y (columns named as --stat-cols, else all columns; first row).
    #[arg(long)]
    observed: PathBuf,
    /// Posterior: dme (deconditional mean embedding, seed 004 Algorithm 8.1) or kbr (kernel Bayes' rule,
    /// seed 004 §6/App. F; see --kbr-variant, --kbr-inverse).
    #[arg(long, default_value = "dme")]
    method: String,
    /// Number of posterior super-samples drawn by kernel herding.
    #[arg(long, default_value_t = 100)]
    herd: usize,
    /// CSV of herding candidates (query points θ*) [default: the prior samples].
    #[arg(long)]
    candidates: Option<PathBuf>,
    /// Refine every super-sample continuously by L-BFGS from the best candidates.
    #[arg(long)]
    continuous: bool,
    /// Lengthscale(s) of the SE kernel ℓ on θ (also the herding kernel), comma-separated for ARD
    /// [default: Silverman's rule on the simulation parameters].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    lengthscale_theta: Option<Vec<f64>>,
    /// Lengthscale(s) of the SE kernel k on the statistics, comma-separated for ARD [default: ε,
    /// the shape of the ε-kernel].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    lengthscale_stat: Option<Vec<f64>>,
    /// Lengthscale(s) of the herding kernel ℓ' [default: those of ℓ].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    lengthscale_herding: Option<Vec<f64>>,
    /// Width(s) ε of the ε-kernel κ_ε(y, x) = N(y; x, diag ε²) of q̄: one, or one per statistic
    /// [default: half of Silverman's rule on the simulated statistics].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    epsilon: Option<Vec<f64>>,
    /// CME regulariser λ [default: 1e-3].
    #[arg(long, allow_hyphen_values = true)]
    lambda: Option<f64>,
    /// DME (or KBR evidence) regulariser δ [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    delta: Option<f64>,
    /// Learn ℓ's lengthscales and ε by maximising q̄ under a log-normal hyperprior centred on
    /// their initial values (multi-start L-BFGS) before herding (--method dme only).
    #[arg(long)]
    learn: bool,
    /// With --learn, learn λ too (q̄ grows without bound as λ → 0, so it is frozen by default).
    #[arg(long)]
    learn_lambda: bool,
    /// Number of L-BFGS starts for --learn.
    #[arg(long, default_value_t = 5)]
    starts: usize,
    /// Seed of the random starts of --learn.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// KBR variant (--method kbr): a (weights on the prior samples) or b (Fukumizu et al.,
    /// weights on the simulations).
    #[arg(long, default_value = "b")]
    kbr_variant: String,
    /// KBR evidence inverse (--method kbr): squared (Fukumizu et al.) or tikhonov.
    #[arg(long, default_value = "squared")]
    kbr_inverse: String,
    #[command(flatten)]
    exec: ExecArgs,
}

struct LfiJob {
    data: LfiData,
    method: LfiMethod,
    candidates: Points,
    herding: HerdingParams,
}

impl WithBackend for LfiJob {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> anyhow::Result<Value> {
        let bar = Bar::new("lfi");
        let report = infer::<B>(&self.data, &self.method, &self.candidates, &self.herding, &bar)?;
        bar.finish();
        Ok(serde_json::to_value(report)?)
    }
}

/// Columns `names` if the table has all of them, else all columns.
fn named_or_all(t: &CsvTable, names: &[String]) -> anyhow::Result<Points> {
    if names.iter().all(|n| t.names.contains(n)) { t.points(Some(names)) } else { t.points(None) }
}

fn se(lengthscales: &Option<Vec<f64>>, flag: &str) -> anyhow::Result<Option<Kernel>> {
    lengthscales.as_ref().map(|l| Kernel::se_ard(l.clone()).context(flag.to_string())).transpose()
}

fn method(a: &LfiArgs) -> anyhow::Result<LfiMethod> {
    if a.learn && a.method.trim().eq_ignore_ascii_case("kbr") {
        bail!("--learn applies to --method dme only (q̄ is the DME's evidence estimate)");
    }
    Ok(LfiMethod::parse(&LfiSpec {
        method: &a.method,
        lengthscale_theta: a.lengthscale_theta.clone(),
        lengthscale_stat: a.lengthscale_stat.clone(),
        epsilon: a.epsilon.clone(),
        lambda: a.lambda,
        delta: a.delta,
        learn: a.learn,
        learn_lambda: a.learn_lambda,
        starts: a.starts,
        seed: a.seed,
        kbr_variant: &a.kbr_variant,
        kbr_inverse: &a.kbr_inverse,
    })?)
}

/// Runs `bke lfi`.
pub fn run_lfi(a: LfiArgs) -> anyhow::Result<()> {
    let method = method(&a)?;
    let sims = CsvTable::read(&a.simulations)?;
    let theta = sims.points(Some(&a.theta_cols))?;
    let stats = sims.points(Some(&a.stat_cols))?;
    let prior = named_or_all(&CsvTable::read(&a.prior_samples)?, &a.theta_cols)?;
    let obs_t = CsvTable::read(&a.observed)?;
    if obs_t.rows == 0 {
        bail!("{}: no data rows; the first row must hold the observed statistics", a.observed.display());
    }
    let observed = named_or_all(&obs_t, &a.stat_cols)?.point(0).to_vec();
    let candidates = match &a.candidates {
        Some(p) => named_or_all(&CsvTable::read(p)?, &a.theta_cols)?,
        None => prior.clone(),
    };
    let data = LfiData::new(theta, stats, prior, observed)?;
    let herding = HerdingParams {
        samples: a.herd,
        continuous: a.continuous,
        kernel: se(&a.lengthscale_herding, "--lengthscale-herding")?,
        ..HerdingParams::default()
    };
    let out = a.exec.run(LfiJob { data, method, candidates, herding })?;
    io::emit(&out)
}
