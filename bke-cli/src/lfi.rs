//! `bke lfi`: likelihood-free inference from simulations (bke-dme `lfi`, `kbr`, `herding`; seed 004
//! Algorithm 8.1). `--method dme` (default) is the deconditional mean embedding posterior, `--method
//! kbr` kernel Bayes' rule; both are herded into super-samples. Unset bandwidths and regularisers
//! take the library's data-scaled defaults.

use crate::exec::{Bar, ExecArgs};
use crate::io::{self, CsvTable};
use anyhow::{Context, bail};
use bke_core::{Kernel, Params, Points, Progress};
use bke_dme::herding::{HerdingParams, PosteriorEmbedding};
use bke_dme::kbr::{EvidenceInverse, KbrParams, KbrVariant};
use bke_dme::learn::MultiStartOptions;
use bke_dme::lfi::{LfiData, LfiLearnParams, LfiParams};
use bke_linalg::{Backend, WithBackend};
use clap::Args;
use serde_json::{Value, json};
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

/// The posterior estimator chosen by `--method`.
enum Method {
    Dme(LfiParams),
    Kbr(KbrParams),
}

struct LfiJob {
    data: LfiData,
    method: Method,
    candidates: Points,
    herding: HerdingParams,
}

/// The JSON of a posterior embedding's moments.
fn moments(e: &PosteriorEmbedding) -> Value {
    let d = e.points().dim();
    let cov = e.covariance();
    let sd: Vec<f64> = (0..d).map(|k| cov[k * d + k].max(0.0).sqrt()).collect();
    json!({"mean": e.mean(), "sd": sd, "negative_mass": e.negative_mass()})
}

impl WithBackend for LfiJob {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> anyhow::Result<Value> {
        let bar = Bar::new("lfi");
        let (embedding, mut out) = match self.method {
            Method::Dme(p) => {
                let post = p.check()?.fit_with_progress::<B>(&self.data, &bar)?;
                let out = json!({"method": "dme", "q_bar": post.q_bar(), "hyperparameters": post.hyperparameters()});
                (post.embedding().clone(), out)
            }
            Method::Kbr(p) => {
                let post = p.check()?.fit_with_progress::<B>(&self.data, &bar)?;
                let h = json!({
                    "kernel_theta": post.kernel_theta().family().spec(),
                    "lengthscale_theta": post.kernel_theta().lengthscales(),
                    "kernel_stat": post.kernel_stats().family().spec(),
                    "lengthscale_stat": post.kernel_stats().lengthscales(),
                    "lambda": p.lambda, "delta": p.delta,
                    "variant": p.variant.name(), "inverse": p.inverse.name(),
                });
                (post.embedding().clone(), json!({"method": "kbr", "hyperparameters": h}))
            }
        };
        bar.update("herding", 0, 1);
        let samples = embedding.herd(&self.candidates, &self.herding)?;
        bar.finish();
        let rows: Vec<&[f64]> = samples.iter().collect();
        out["samples"] = json!(rows);
        out["embedding"] = moments(&embedding);
        out["n_simulations"] = json!(self.data.theta.len());
        out["n_prior"] = json!(self.data.prior.len());
        Ok(out)
    }
}

/// Columns `names` if the table has all of them; all columns, by position, if it has none of them
/// and as many columns as `names` (a note on stderr says so); otherwise an error naming what is
/// missing (a partial match is ambiguous: the other columns are not silently taken instead).
fn named_or_all(t: &CsvTable, names: &[String]) -> anyhow::Result<Points> {
    let missing: Vec<&str> = names.iter().filter(|n| !t.names.contains(n)).map(String::as_str).collect();
    if missing.is_empty() {
        return t.points(Some(names));
    }
    if missing.len() == names.len() && t.names.len() == names.len() {
        eprintln!(
            "note: {} has no column named {}; using its columns ({}) by position",
            t.path,
            names.join(", "),
            t.names.join(", ")
        );
        return t.points(None);
    }
    bail!(
        "{}: no column named {} (it has: {}); name the columns as --theta-cols/--stat-cols, or give \
         exactly {} column(s) to be taken by position",
        t.path,
        missing.join(", "),
        t.names.join(", "),
        names.len()
    )
}

fn se(lengthscales: &Option<Vec<f64>>, flag: &str) -> anyhow::Result<Option<Kernel>> {
    lengthscales.as_ref().map(|l| Kernel::se_ard(l.clone()).context(flag.to_string())).transpose()
}

fn method(a: &LfiArgs) -> anyhow::Result<Method> {
    let defaults = LfiParams::default();
    let (lambda, delta) = (a.lambda.unwrap_or(defaults.lambda), a.delta.unwrap_or(defaults.delta));
    let (kernel_theta, kernel_stats) =
        (se(&a.lengthscale_theta, "--lengthscale-theta")?, se(&a.lengthscale_stat, "--lengthscale-stat")?);
    Ok(match a.method.trim().to_ascii_lowercase().as_str() {
        "dme" => {
            let learn = a.learn.then(|| LfiLearnParams {
                lambda: a.learn_lambda,
                search: MultiStartOptions { starts: a.starts, seed: a.seed, ..MultiStartOptions::default() },
                ..LfiLearnParams::default()
            });
            Method::Dme(LfiParams {
                kernel_theta,
                kernel_stats,
                epsilon: a.epsilon.clone(),
                lambda,
                delta,
                learn,
            })
        }
        "kbr" => {
            if a.learn {
                bail!("--learn applies to --method dme only (q̄ is the DME's evidence estimate)");
            }
            Method::Kbr(KbrParams {
                kernel_theta,
                kernel_stats,
                lambda,
                delta,
                variant: a.kbr_variant.parse::<KbrVariant>().context("--kbr-variant")?,
                inverse: a.kbr_inverse.parse::<EvidenceInverse>().context("--kbr-inverse")?,
            })
        }
        other => bail!("unknown --method '{other}'; use dme or kbr"),
    })
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
