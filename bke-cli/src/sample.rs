//! `bke embed sample`: fully Bayesian kernel learning — NUTS over the BKE hyperparameters `(θ, τ²)`
//! (bke-core `bayes`, seed 000 §5 and Appendix B), with R̂, ESS and divergences; and the `--bayes`
//! witness of `bke witness`.

use crate::exec::{Bar, ExecArgs, run_with_backend};
use anyhow::{Context, bail};
use bke_core::bayes::{HyperDraws, HyperPrior, SampleParams, sample_hyperparameters, witness_posterior};
use bke_core::budget::{Bytes, human};
use bke_core::embedding::{EmbeddingPrior, default_num_landmarks};
use bke_core::model_file::AtomicFile;
use bke_core::nuts::{Draw, DrawSink, NutsParams};
use bke_core::{CoreError, Params, Points};
use bke_io::TableFormat;
use bke_io::{self as io, interrupt};
use bke_linalg::{Backend, BackendKind};
use clap::Args;
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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
    #[arg(long, default_value_t = NutsParams::default().chains)]
    chains: usize,
    /// Draws kept per chain.
    #[arg(long, default_value_t = NutsParams::default().draws)]
    draws: usize,
    /// Warmup (adaptation) iterations per chain.
    #[arg(long, default_value_t = NutsParams::default().warmup)]
    warmup: usize,
    /// Seed of the landmark selection and of the sampler (chain c uses stream c).
    #[arg(long, default_value_t = NutsParams::default().seed)]
    seed: u64,
    /// Write every draw (chain, draw, lengthscale(s), tau2, sampler statistics) to this CSV, as the
    /// sampler makes them (then only the lengthscale/tau2 draws are kept in memory, for the summary);
    /// the file appears, whole, when sampling ends. A name ending in `.npy` writes a NumPy float64
    /// array instead, one row per draw, its columns those of the CSV in the same order (the JSON
    /// output lists them as "draws_columns").
    #[arg(long)]
    draws_out: Option<PathBuf>,
    /// Prior on the lengthscale(s): gamma:SHAPE,RATE or lognormal:MU,SIGMA.
    #[arg(long, default_value_t = SampleParams::default().lengthscale_prior.name())]
    lengthscale_prior: String,
    /// Prior on τ²: gamma:SHAPE,RATE or lognormal:MU,SIGMA.
    #[arg(long, default_value_t = SampleParams::default().tau2_prior.name())]
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
    #[arg(long, default_value_t = SampleParams::default().prior.name())]
    prior: String,
    /// Maximum NUTS tree depth.
    #[arg(long, default_value_t = NutsParams::default().max_depth)]
    max_depth: usize,
    /// Target acceptance statistic of the step-size adaptation.
    #[arg(long, default_value_t = NutsParams::default().target_accept)]
    target_accept: f64,
    #[command(flatten)]
    exec: ExecArgs,
}

/// Samples the hyperparameter posterior of `params` given `x` with backend `B` and the progress
/// bar of `NUTS`, streaming the draws to `sink` if given.
fn sample<B: Backend>(
    x: &Points,
    params: &SampleParams,
    sink: Option<&DrawsFile>,
) -> anyhow::Result<HyperDraws> {
    let bar = Bar::new("NUTS");
    let sink = sink.map(|s| s as &dyn DrawSink);
    let draws = sample_hyperparameters::<B>(&params.check()?, x, &bar, sink)?;
    bar.finish();
    Ok(draws)
}

/// `--draws-out`: every draw (chain, draw, lengthscale(s), tau2 and the sampler statistics) as CSV
/// or `.npy` (by the extension, [`TableFormat`]), written as the sampler makes it, so the number of
/// draws is bounded by the disk rather than the memory. Chain `c` writes its rows to its own
/// temporary file beside the target (chains run in parallel); [`DrawsFile::finish`] joins them in
/// chain order, under the CSV header or the `.npy` header (whose shape counts the rows written),
/// into one more temporary file and renames it over the target. An error or an interrupt removes
/// the temporary files and leaves the target as it was.
struct DrawsFile {
    target: PathBuf,
    format: TableFormat,
    num_lengthscales: usize,
    fixed_tau2: Option<f64>,
    chains: Vec<Mutex<AtomicFile>>,
}

impl DrawsFile {
    /// Opens one temporary file per chain, after checking that the disk has room for the output.
    fn create(target: &Path, params: &SampleParams, dim: usize) -> anyhow::Result<Self> {
        let k = params.num_lengthscales(dim);
        check_disk(target, &params.nuts, k)?;
        let chains = (0..params.nuts.chains)
            .map(|c| {
                let f = AtomicFile::create_tagged(target, &format!("chain-{c}"))?;
                interrupt::remove_on_exit(f.temp_path());
                Ok(Mutex::new(f))
            })
            .collect::<anyhow::Result<_>>()?;
        let format = TableFormat::of(target);
        Ok(Self {
            target: target.to_path_buf(),
            format,
            num_lengthscales: k,
            fixed_tau2: params.fixed_tau2,
            chains,
        })
    }

    /// The column names: `chain, draw, lengthscale (or lengthscale_1, …), tau2, log_density,
    /// accept_stat, tree_depth, n_leapfrog, divergent, energy`.
    fn columns(&self) -> Vec<String> {
        let k = self.num_lengthscales;
        let mut names = vec!["chain".to_string(), "draw".into()];
        if k == 1 {
            names.push("lengthscale".into());
        } else {
            names.extend((1..=k).map(|i| format!("lengthscale_{i}")));
        }
        let stats = ["tau2", "log_density", "accept_stat", "tree_depth", "n_leapfrog", "divergent", "energy"];
        names.extend(stats.iter().map(|s| s.to_string()));
        names
    }

    /// Joins the chains' files under the header and renames the result over the target.
    fn finish(self) -> anyhow::Result<()> {
        let names = self.columns();
        let mut chains = Vec::with_capacity(self.chains.len());
        let mut bytes = 0;
        for chain in self.chains {
            let mut chain = chain.into_inner().unwrap_or_else(|e| e.into_inner());
            let reader = chain.reader()?;
            bytes += reader.metadata().map_err(|e| chain.error("read back", e))?.len();
            chains.push((chain, reader));
        }
        let rows = (bytes / (8 * names.len() as u64)) as usize; // used by `.npy` only
        let mut out = AtomicFile::create(&self.target)?;
        interrupt::remove_on_exit(out.temp_path());
        out.write_all(&self.format.preamble(&names, rows)).map_err(|e| out.error("write", e))?;
        for (_chain, mut reader) in chains {
            std::io::copy(&mut reader, &mut out).map_err(|e| out.error("write", e))?;
        }
        Ok(out.commit()?)
    }
}

impl DrawSink for DrawsFile {
    fn record(&self, d: &Draw<'_>) -> Result<(), CoreError> {
        let k = self.num_lengthscales;
        let mut row = Vec::with_capacity(k + 9);
        row.extend([d.chain as f64, d.index as f64]);
        row.extend(d.q[..k].iter().map(|u| u.exp()));
        row.push(self.fixed_tau2.unwrap_or_else(|| d.q[k].exp()));
        row.extend([d.log_density, d.accept_stat, d.tree_depth as f64, d.n_leapfrog as f64]);
        row.extend([f64::from(u8::from(d.divergent)), d.energy]);
        let mut bytes = Vec::with_capacity(25 * row.len());
        self.format.push_row(&row, &mut bytes);
        let mut f = self.chains[d.chain].lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&bytes).map_err(|e| f.error("write", e))
    }
}

/// Refuses `--draws` when the draws CSV (held twice while the chains' files are joined) would not
/// fit on the target's file system; the estimate allows 25 bytes per number.
fn check_disk(target: &Path, nuts: &NutsParams, num_lengthscales: usize) -> anyhow::Result<()> {
    let row = Bytes(25 * (num_lengthscales as u64 + 9));
    let needed = row.times(nuts.chains).times(nuts.draws).times(2);
    let Some(free) = free_disk(target) else { return Ok(()) };
    if needed.0 > free {
        bail!(
            "--draws {}: the draws CSV of {} chains would take about {} (twice while its chains are \
             joined) but {} is free where {} goes; lower --draws or --chains, or write it elsewhere",
            nuts.draws,
            nuts.chains,
            human(needed.0),
            human(free),
            target.display()
        );
    }
    Ok(())
}

/// Free bytes on the file system holding `target` (None where unknown).
fn free_disk(target: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: `c` is a NUL-terminated path and `st` a zeroed statvfs the call fills in.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        None
    }
}

/// Runs `bke embed sample`.
pub fn run(a: SampleArgs) -> anyhow::Result<()> {
    if let Some(t) = a.tau2 {
        bke_core::check_positive("--tau2", t)?;
    }
    let x = io::read_continuous(&a.data, a.columns.as_deref())?;
    let params = SampleParams {
        lengthscale_prior: HyperPrior::parse(&a.lengthscale_prior).context("--lengthscale-prior")?,
        tau2_prior: HyperPrior::parse(&a.tau2_prior).context("--tau2-prior")?,
        fixed_tau2: a.tau2,
        ard: a.ard,
        prior: EmbeddingPrior::parse(&a.prior).context("--prior")?,
        jacobian: !a.no_jacobian,
        num_landmarks: a.num_landmarks.unwrap_or_else(|| default_num_landmarks(x.len(), x.dim())),
        landmarks: a.landmarks.as_ref().map(|p| io::read_points(p, a.columns.as_deref())).transpose()?,
        nuts: NutsParams {
            chains: a.chains,
            warmup: a.warmup,
            draws: a.draws,
            seed: a.seed,
            max_depth: a.max_depth,
            target_accept: a.target_accept,
            ..NutsParams::default()
        },
    };
    params.validate()?;
    let sink = a.draws_out.as_deref().map(|p| DrawsFile::create(p, &params, x.dim())).transpose()?;
    let draws_columns = sink.as_ref().map(DrawsFile::columns);
    let started = std::time::Instant::now();
    let draws = run_with_backend!(a.exec, B => sample::<B>(&x, &params, sink.as_ref()))?;
    let seconds = started.elapsed().as_secs_f64();
    if let Some(sink) = sink {
        sink.finish()?;
    }
    let mut extra = json!({"backend": a.exec.kind()?.name(), "seconds": seconds});
    if let Some(names) = draws_columns {
        extra["draws_columns"] = names.into();
    }
    io::emit(&io::merge(&draws, extra)?)
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
    #[arg(long, default_value_t = NutsParams::default().chains)]
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
    #[arg(long, default_value_t = SampleParams::default().lengthscale_prior.name())]
    pub lengthscale_prior: String,
    /// With --bayes: sample τ² too (prior --tau2-prior; the seed's setting, but with m > D landmarks
    /// its posterior runs off to θ → ∞, τ² → 0, see `bke embed sample`); default: τ² fixed at --tau2.
    #[arg(long)]
    pub sample_tau2: bool,
    /// With --bayes --sample-tau2: prior on τ².
    #[arg(long, default_value_t = SampleParams::default().tau2_prior.name())]
    pub tau2_prior: String,
}

/// NUTS on the pooled sample with backend `B`, then one witness draw per hyperparameter draw.
fn witness_json<B: Backend>(
    samples: (&Points, &Points),
    grid: &Points,
    params: &SampleParams,
    level: f64,
    seed: u64,
) -> anyhow::Result<Value> {
    let (x, y) = samples;
    let draws = sample::<B>(&x.concat(y)?, params, None)?;
    let w = witness_posterior::<B>(x, y, grid, None, &draws.params(), level, seed)?;
    let st = &draws.settings;
    let tau2 = match st.fixed_tau2 {
        Some(t) => json!(t),
        None => serde_json::to_value(draws.tau2_summary())?,
    };
    io::merge(
        &w,
        json!({
            "selection": "bayes",
            "lengthscale": draws.lengthscale_summary(0),
            "tau2": tau2,
            "lengthscale_prior": st.lengthscale_prior,
            "tau2_prior": st.fixed_tau2.is_none().then_some(st.tau2_prior),
            "divergences": draws.nuts.divergences(),
            "warnings": draws.warnings(),
            "witness_draws": draws.params().len(),
            "num_landmarks": draws.landmarks.len(),
            "prior": st.prior,
            "posterior": "bke, hyperparameters integrated out by NUTS",
            "n_x": x.len(),
            "n_y": y.len(),
            "backend": B::name(),
        }),
    )
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
    if !(level > 0.0 && level < 1.0) {
        bail!("--level: {level} must lie strictly between 0 and 1");
    }
    let (n, dim) = (x.len() + y.len(), x.dim());
    let params = SampleParams {
        lengthscale_prior: HyperPrior::parse(&b.lengthscale_prior).context("--lengthscale-prior")?,
        tau2_prior: HyperPrior::parse(&b.tau2_prior).context("--tau2-prior")?,
        fixed_tau2: if b.sample_tau2 { None } else { Some(tau2) },
        prior,
        num_landmarks: b.num_landmarks.unwrap_or_else(|| default_num_landmarks(n, dim)),
        nuts: NutsParams {
            chains: b.chains,
            warmup: b.warmup,
            draws: b.draws,
            seed,
            ..NutsParams::default()
        },
        ..SampleParams::default()
    };
    params.validate()?;
    bke_linalg::with_backend!(kind, B => witness_json::<B>((&x, &y), &grid, &params, level, seed))?
}
