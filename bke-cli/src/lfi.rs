//! `bke lfi`: likelihood-free inference from simulations (bke-dme `lfi`, `kbr`, `herding`; seed 004
//! Algorithm 8.1). `--method dme` (default) is the deconditional mean embedding posterior, `--method
//! kbr` kernel Bayes' rule; both are herded into super-samples. Unset bandwidths and regularisers
//! take the library's data-scaled defaults. `--method abc-rejection` keeps the nearest simulations
//! (bke-dme `abc`); `--method abc-smc` runs SMC-ABC against a built-in simulator (`--simulator
//! lotka-volterra`, bke-dme `lotka_volterra`).

use crate::exec::{Bar, ExecArgs, run_with_backend};
use anyhow::{Context, bail};
use bke_core::{CoreError, Kernel, Params, Points};
use bke_dme::DmeError;
use bke_dme::abc::{RejectionAbcParams, SmcAbcData, SmcAbcParams, WeightedSamples};
use bke_dme::herding::HerdingParams;
use bke_dme::infer::{LfiMethod, LfiSpec, infer};
use bke_dme::kbr::KbrParams;
use bke_dme::learn::MultiStartOptions;
use bke_dme::lfi::LfiData;
use bke_dme::lotka_volterra::LotkaVolterra;
use bke_io::{self as io, CsvTable};
use bke_linalg::Backend;
use clap::Args;
use serde_json::{Value, json};
use std::path::PathBuf;

/// `bke lfi`: likelihood-free inference with deconditional mean embeddings (seed 004 Algorithm 8.1).
#[derive(Args)]
pub struct LfiArgs {
    /// CSV of simulations: parameters θ_i and simulated statistics x_i, one simulation per row
    /// (required except with --method abc-smc; for abc-rejection θ_i must be prior draws).
    #[arg(long)]
    simulations: Option<PathBuf>,
    /// Columns of --simulations holding the parameters θ (comma-separated).
    #[arg(long, value_delimiter = ',')]
    theta_cols: Vec<String>,
    /// Columns of --simulations holding the statistics x (comma-separated).
    #[arg(long, value_delimiter = ',')]
    stat_cols: Vec<String>,
    /// CSV of prior samples θ̃ (columns named as --theta-cols, else all columns); they are also the
    /// herding candidates unless --candidates is given (required by dme and kbr).
    #[arg(long)]
    prior_samples: Option<PathBuf>,
    /// CSV of the observed statistics y (columns named as --stat-cols, else all columns; first row).
    #[arg(long)]
    observed: PathBuf,
    /// Posterior: dme (deconditional mean embedding, seed 004 Algorithm 8.1), kbr (kernel Bayes' rule,
    /// seed 004 §6/App. F; see --kbr-variant, --kbr-inverse), abc-rejection (the nearest simulations,
    /// see --abc-quantile, --abc-epsilon) or abc-smc (population Monte Carlo ABC against --simulator).
    #[arg(long, default_value = "dme")]
    method: String,
    /// Number of posterior super-samples drawn by kernel herding.
    #[arg(long, default_value_t = HerdingParams::default().samples)]
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
    /// [default: half of Silverman's rule on the simulated statistics, widened until √n of them (at
    /// least 10) carry weight at the observation].
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    epsilon: Option<Vec<f64>>,
    /// CME regulariser λ [default: 1e-3].
    #[arg(long, allow_hyphen_values = true)]
    lambda: Option<f64>,
    /// DME (or KBR evidence) regulariser δ [default: 1].
    #[arg(long, allow_hyphen_values = true)]
    delta: Option<f64>,
    /// Learn ℓ's lengthscales by maximising q̄ under a log-normal hyperprior centred on their
    /// initial values (multi-start L-BFGS) before herding (--method dme only); ε keeps its width
    /// (q̄ rewards widening it towards the prior).
    #[arg(long)]
    learn: bool,
    /// With --learn, learn λ too (q̄ grows without bound as λ → 0, so it is frozen by default).
    #[arg(long)]
    learn_lambda: bool,
    /// Number of L-BFGS starts for --learn.
    #[arg(long, default_value_t = MultiStartOptions::default().starts)]
    starts: usize,
    /// Seed of the random starts of --learn and of SMC-ABC's simulations (--method abc-smc).
    #[arg(long, default_value_t = MultiStartOptions::default().seed)]
    seed: u64,
    /// KBR variant (--method kbr): a (weights on the prior samples) or b (Fukumizu et al.,
    /// weights on the simulations).
    #[arg(long, default_value = KbrParams::default().variant.name())]
    kbr_variant: String,
    /// KBR evidence inverse (--method kbr): squared (Fukumizu et al.) or tikhonov.
    #[arg(long, default_value = KbrParams::default().inverse.name())]
    kbr_inverse: String,
    /// abc-rejection: fraction of the simulations accepted (the nearest in standardised distance).
    #[arg(long, default_value_t = RejectionAbcParams::default().quantile)]
    abc_quantile: f64,
    /// abc-rejection: accept every simulation within this standardised distance instead.
    #[arg(long)]
    abc_epsilon: Option<f64>,
    /// Built-in simulator for --method abc-smc: lotka-volterra (4 log-rates, uniform prior on
    /// [−5, 2]⁴, 9 summary statistics in the order mean, log(1+var) of predators and prey, their
    /// autocorrelations at lags 1, 2, and their correlation).
    #[arg(long)]
    simulator: Option<String>,
    /// abc-smc: simulation budget.
    #[arg(long, default_value_t = SmcAbcParams::default().max_simulations)]
    abc_simulations: usize,
    /// abc-smc: particles per generation.
    #[arg(long, default_value_t = SmcAbcParams::default().particles)]
    particles: usize,
    #[command(flatten)]
    exec: ExecArgs,
}

/// The posterior estimator chosen by `--method`: the kernel methods of the library's `infer`
/// (DME, KBR) or an ABC baseline.
enum Method {
    Kernel(LfiMethod),
    Rejection(RejectionAbcParams),
    Smc(SmcAbcParams, LotkaVolterra),
}

/// The JSON of weighted ABC samples.
fn abc_json(method: &str, post: &WeightedSamples) -> Value {
    let rows: Vec<&[f64]> = post.points.iter().collect();
    json!({
        "method": method,
        "samples": rows,
        "weights": post.weights,
        "posterior": {"mean": post.mean(), "sd": post.sd(), "effective_size": post.effective_size()},
    })
}

/// `bke lfi --method abc-smc` with backend `B`: SMC-ABC against a built-in simulator.
fn smc_json<B: Backend>(params: &SmcAbcParams, data: &SmcAbcData) -> anyhow::Result<Value> {
    let bar = Bar::new("abc-smc");
    let fitted = params.check().and_then(|p| p.fit_with_progress::<B>(data, &bar));
    let r = fitted.map_err(|e| name_flags(e, SMC_FLAGS))?;
    bar.finish();
    let mut out = abc_json("abc-smc", &r.posterior);
    out["epsilons"] = json!(r.epsilons.iter().map(|e| e.is_finite().then_some(*e)).collect::<Vec<_>>());
    out["n_simulations"] = json!(r.simulations);
    Ok(out)
}

/// `bke lfi --method dme|kbr` with backend `B`: a posterior embedding herded into samples.
fn kernel_json<B: Backend>(
    data: &LfiData,
    method: &LfiMethod,
    candidates: &Points,
    herding: &HerdingParams,
) -> anyhow::Result<Value> {
    let bar = Bar::new("lfi");
    let report = infer::<B>(data, method, candidates, herding, &bar)?;
    bar.finish();
    Ok(serde_json::to_value(report)?)
}

/// `bke lfi --method abc-rejection` with backend `B`: the simulations nearest the observation.
fn rejection_json<B: Backend>(params: &RejectionAbcParams, data: &LfiData) -> anyhow::Result<Value> {
    let bar = Bar::new("abc-rejection");
    let fitted = params.check().and_then(|p| p.fit_with_progress::<B>(data, &bar));
    let r = fitted.map_err(|e| name_flags(e, REJECTION_FLAGS))?;
    bar.finish();
    let mut out = abc_json("abc-rejection", &r.posterior);
    out["threshold"] = json!(r.threshold);
    out["n_accepted"] = json!(r.posterior.points.len());
    out["n_simulations"] = json!(data.theta.len());
    Ok(out)
}

/// The flags of the settings of rejection ABC, by the library's parameter names.
const REJECTION_FLAGS: &[(&str, &str)] = &[("epsilon", "--abc-epsilon"), ("quantile", "--abc-quantile")];

/// The flags of the settings of SMC-ABC, by the library's parameter names.
const SMC_FLAGS: &[(&str, &str)] = &[("max_simulations", "--abc-simulations"), ("particles", "--particles")];

/// An error of the ABC library with its parameter names replaced by the flags users type
/// (`epsilon` → `--abc-epsilon`, …), in the name and in the reason.
fn name_flags(e: DmeError, flags: &[(&str, &str)]) -> anyhow::Error {
    let DmeError::Core(CoreError::InvalidParameter { name, value, reason }) = &e else {
        return e.into();
    };
    let flag = |text: &str| {
        let found = flags.iter().find(|(lib, _)| *lib == text.trim_matches('`'));
        found.map_or_else(|| text.to_string(), |(_, f)| f.to_string())
    };
    let reason = reason.split(' ').map(flag).collect::<Vec<_>>().join(" ");
    CoreError::InvalidParameter { name: flag(name), value: *value, reason }.into()
}

/// All columns when no names are given; columns `names` if the table has all of them; all columns, by position, if it has none of them
/// and as many columns as `names` (a note on stderr says so); otherwise an error naming what is
/// missing (a partial match is ambiguous: the other columns are not silently taken instead).
fn named_or_all(t: &CsvTable, names: &[String]) -> anyhow::Result<Points> {
    if names.is_empty() {
        return t.points(None);
    }
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
    let name = a.method.trim().to_ascii_lowercase();
    if a.learn && ["kbr", "abc-rejection", "abc-smc"].contains(&name.as_str()) {
        bail!("--learn applies to --method dme only (q̄ is the DME's evidence estimate), not {name}");
    }
    Ok(match name.as_str() {
        "dme" | "kbr" => Method::Kernel(LfiMethod::parse(&LfiSpec {
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
        })?),
        "abc-rejection" => {
            let params = RejectionAbcParams {
                quantile: a.abc_quantile,
                epsilon: a.abc_epsilon,
                ..RejectionAbcParams::default()
            };
            params.validate().map_err(|e| name_flags(e, REJECTION_FLAGS))?;
            Method::Rejection(params)
        }
        "abc-smc" => {
            let simulator = match a.simulator.as_deref().map(|s| s.trim().to_ascii_lowercase()) {
                Some(s) if s == "lotka-volterra" => LotkaVolterra::default(),
                Some(other) => bail!("unknown --simulator '{other}'; the built-in one is lotka-volterra"),
                None => bail!(
                    "--method abc-smc simulates as it goes and needs a built-in simulator: pass \
                     --simulator lotka-volterra (with a CSV of fixed simulations use --method abc-rejection)"
                ),
            };
            let params = SmcAbcParams {
                particles: a.particles,
                max_simulations: a.abc_simulations,
                seed: a.seed,
                ..SmcAbcParams::default()
            };
            params.validate().map_err(|e| name_flags(e, SMC_FLAGS))?;
            Method::Smc(params, simulator)
        }
        other => bail!("unknown --method '{other}'; use dme, kbr, abc-rejection or abc-smc"),
    })
}

/// The simulations, prior samples and observation of the methods that read them from CSV; without
/// `--prior-samples`, rejection ABC (`theta_as_prior`) takes the simulations' θ as prior draws.
fn simulation_data(a: &LfiArgs, observed: Vec<f64>, theta_as_prior: bool) -> anyhow::Result<LfiData> {
    let Some(sims_path) = &a.simulations else {
        bail!("--simulations is required for --method {}", a.method);
    };
    if a.theta_cols.is_empty() || a.stat_cols.is_empty() {
        bail!("--theta-cols and --stat-cols are required with --simulations (comma-separated column names)");
    }
    let sims = CsvTable::read(sims_path)?;
    let theta = sims.points(Some(&a.theta_cols))?;
    let stats = sims.points(Some(&a.stat_cols))?;
    let prior = match &a.prior_samples {
        Some(p) => named_or_all(&CsvTable::read(p)?, &a.theta_cols)?,
        None if theta_as_prior => theta.clone(),
        None => bail!("--prior-samples is required for --method {}", a.method),
    };
    Ok(LfiData::new(theta, stats, prior, observed)?)
}

/// Runs `bke lfi`.
pub fn run_lfi(a: LfiArgs) -> anyhow::Result<()> {
    let method = method(&a)?;
    let obs_t = CsvTable::read(&a.observed)?;
    if obs_t.rows == 0 {
        bail!("{}: no data rows; the first row must hold the observed statistics", a.observed.display());
    }
    let observed = named_or_all(&obs_t, &a.stat_cols)?.point(0).to_vec();
    let out = match method {
        Method::Smc(params, simulator) => {
            let data =
                SmcAbcData { prior: LotkaVolterra::prior(), simulator: simulator.as_simulator(), observed };
            run_with_backend!(a.exec, B => smc_json::<B>(&params, &data))?
        }
        Method::Rejection(params) => {
            let data = simulation_data(&a, observed, true)?;
            run_with_backend!(a.exec, B => rejection_json::<B>(&params, &data))?
        }
        Method::Kernel(method) => {
            let data = simulation_data(&a, observed, false)?;
            let candidates = match &a.candidates {
                Some(p) => named_or_all(&CsvTable::read(p)?, &a.theta_cols)?,
                None => data.prior.clone(),
            };
            let herding = HerdingParams {
                samples: a.herd,
                continuous: a.continuous,
                kernel: se(&a.lengthscale_herding, "--lengthscale-herding")?,
                ..HerdingParams::default()
            };
            run_with_backend!(a.exec, B => kernel_json::<B>(&data, &method, &candidates, &herding))?
        }
    };
    io::emit(&out)
}
