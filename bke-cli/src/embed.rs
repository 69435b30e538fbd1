//! `bke embed …`: the Bayesian Kernel Embedding model (bke-core `embedding`): the marginal
//! pseudolikelihood and its gradient, ML-II kernel learning, and the posterior of the embedding.

use crate::exec::{ExecArgs, fit, run_with_backend};
use crate::table_out::OutArgs;
use anyhow::{Context, bail};
use bke_core::embedding::{
    BkeParams, BkePosterior, EmbeddingParams, EmbeddingPrior, LengthscaleGrid, PseudolikelihoodPlan,
    default_num_landmarks,
};
use bke_core::{Params, Points, Predict};
use bke_io as io;
use bke_io::PointChunks;
use bke_linalg::Backend;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// `bke embed` subcommands.
#[derive(Subcommand)]
pub enum EmbedCommand {
    /// Log marginal pseudolikelihood (seed 000 eq. (15) via eq. (33), with the log-Jacobian) and its gradient
    /// w.r.t. log lengthscale(s) and log tau2. The data file is read in chunks and streamed through the
    /// fused pass, so memory stays flat in the number of rows.
    Loglik(Box<LoglikArgs>),
    /// ML-II kernel learning: log-grid scan plus L-BFGS polishing; reports every local optimum and the
    /// median heuristic.
    Fit(Box<FitArgs>),
    /// Posterior mean and variance of the embedding at query points (seed 000 eq. (7)–(8)).
    Posterior(Box<PosteriorArgs>),
    /// Fully Bayesian kernel learning: NUTS over (lengthscale, tau2) with Gamma(1,1) priors (seed 000 §5);
    /// posterior summaries, split-R̂, bulk ESS and divergences.
    Sample(Box<crate::sample::SampleArgs>),
}

/// Options shared by the `embed` commands.
#[derive(Args)]
pub struct Common {
    /// Data CSV (header row, numeric columns).
    #[arg(long)]
    data: PathBuf,
    /// Columns to use, by name, comma-separated (default: all). Applies to every CSV read.
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Prior measure of r_θ: lebesgue (default), unit (the seed's Stan listing) or gaussian:ETA.
    #[arg(long, default_value_t = EmbeddingParams::default().prior.name())]
    prior: String,
    #[command(flatten)]
    exec: ExecArgs,
}

impl Common {
    fn read(&self, path: &Path) -> anyhow::Result<Points> {
        io::read_points(path, self.columns.as_deref())
    }

    /// The data (`--data`) in chunks ([`PointChunks`]).
    fn stream_data(&self) -> anyhow::Result<PointChunks> {
        PointChunks::open(&self.data, self.columns.as_deref())
    }

    /// The data (`--data`), with a note on integer-valued columns.
    fn read_data(&self) -> anyhow::Result<Points> {
        io::read_continuous(&self.data, self.columns.as_deref())
    }

    fn prior(&self) -> anyhow::Result<EmbeddingPrior> {
        EmbeddingPrior::parse(&self.prior).context("--prior")
    }
}

/// `bke embed loglik`.
#[derive(Args)]
pub struct LoglikArgs {
    #[command(flatten)]
    common: Common,
    /// Landmarks CSV (m ≥ D points; same columns as the data).
    #[arg(long)]
    landmarks: PathBuf,
    /// Lengthscale: one value, or a comma list with one per dimension (ARD).
    #[arg(long)]
    lengthscale: String,
    /// τ² of the likelihood μ̂(x) | μ(x) ~ N(μ(x), τ²/n).
    #[arg(long, default_value_t = EmbeddingParams::default().tau2)]
    tau2: f64,
    /// Leave out the log-Jacobian term Σ log γ(x_i).
    #[arg(long)]
    no_jacobian: bool,
}

/// `bke embed fit`.
#[derive(Args)]
pub struct FitArgs {
    #[command(flatten)]
    common: Common,
    /// Landmarks CSV (then all data points are data). Default: hold out a random subset.
    #[arg(long, conflicts_with = "num_landmarks")]
    landmarks: Option<PathBuf>,
    /// Number of landmarks held out of the data at random (default min(100, max(D, n/5))).
    #[arg(long)]
    num_landmarks: Option<usize>,
    /// Fixed τ² (default 1; the starting value with --learn-tau2).
    #[arg(long, conflicts_with = "learn_tau2")]
    tau2: Option<f64>,
    /// Learn τ² jointly with the lengthscale.
    #[arg(long)]
    learn_tau2: bool,
    /// One lengthscale per dimension.
    #[arg(long)]
    ard: bool,
    /// Leave out the log-Jacobian term.
    #[arg(long)]
    no_jacobian: bool,
    /// Smallest lengthscale of the scan (default: median heuristic / 100).
    #[arg(long)]
    grid_min: Option<f64>,
    /// Largest lengthscale of the scan (default: 10 × median heuristic).
    #[arg(long)]
    grid_max: Option<f64>,
    /// Number of scan points.
    #[arg(long, default_value_t = EmbeddingParams::default().grid_points)]
    grid_points: usize,
    /// Seed of the landmark selection.
    #[arg(long, default_value_t = EmbeddingParams::default().seed)]
    seed: u64,
}

/// `bke embed posterior`.
#[derive(Args)]
pub struct PosteriorArgs {
    #[command(flatten)]
    common: Common,
    /// Query points CSV (same columns as the data).
    #[arg(long)]
    at: PathBuf,
    /// Lengthscale: one value, or a comma list (ARD).
    #[arg(long)]
    lengthscale: String,
    /// τ².
    #[arg(long, default_value_t = EmbeddingParams::default().tau2)]
    tau2: f64,
    /// Condition on μ̂ at these points instead of at the data (O(p³) instead of O(n³)).
    #[arg(long, conflicts_with_all = ["num_landmarks", "exact"])]
    landmarks: Option<PathBuf>,
    /// Condition on μ̂ at K rows of the data drawn with --seed (cost O(nK + K³), then O(K²) per
    /// query) [default: every row up to 2000 rows, else 1000 rows]
    #[arg(long, value_name = "K", conflicts_with = "exact")]
    num_landmarks: Option<usize>,
    /// Condition on μ̂ at every row of the data whatever their number (cost O(n³), memory O(n²))
    #[arg(long)]
    exact: bool,
    /// Seed of the rows drawn for --num-landmarks.
    #[arg(long, default_value_t = BkePosterior::DEFAULT_SEED)]
    seed: u64,
    #[command(flatten)]
    out: OutArgs,
}

/// Where `bke embed posterior` conditions.
enum Conditioning {
    /// At the points of `--landmarks`.
    File(Points),
    /// At `m` rows of the data drawn with `seed` (every row when `m ≥ n`).
    Rows { m: usize, seed: u64 },
}

/// The numbers of a `--lengthscale` list (their validity is the library's to check).
fn parse_lengthscale(s: &str) -> anyhow::Result<Vec<f64>> {
    s.split(',')
        .map(|t| t.trim().parse().with_context(|| format!("--lengthscale: '{t}' is not a number")))
        .collect()
}

/// `bke embed loglik` with backend `B`.
fn loglik_json<B: Backend>(x: PointChunks, z: &Points, params: &BkeParams) -> anyhow::Result<Value> {
    let (ml, n) = streamed_loglik::<B>(x, z, params)?;
    let extra = json!({"n": n, "m": z.len(), "prior": params.prior,
                       "jacobian": params.jacobian, "backend": B::name()});
    io::merge(&ml.finite()?, extra)
}

/// `bke embed fit` with backend `B`.
fn fit_json<B: Backend>(x: &Points, params: &EmbeddingParams) -> anyhow::Result<Value> {
    let fitted = fit::<B, _>("ML-II", params, x)?;
    io::merge(&fitted, json!({"backend": B::name()}))
}

/// `bke embed posterior` with backend `B`: conditioned at the data, at some of its rows, or at
/// the points of `--landmarks`.
fn posterior_json<B: Backend>(
    x: &Points,
    q: &Points,
    at: &Conditioning,
    params: &BkeParams,
    out: &OutArgs,
) -> anyhow::Result<Value> {
    let (post, conditioned_at) = match at {
        Conditioning::File(w) => (BkePosterior::conditioned_at::<B>(params, x, w)?, "landmarks"),
        Conditioning::Rows { m, .. } if *m >= x.len() => (params.check()?.fit::<B>(x)?, "data"),
        Conditioning::Rows { m, seed } => {
            (BkePosterior::conditioned_at_rows::<B>(params, x, *m, *seed)?, "sampled rows")
        }
    };
    let extra = json!({"conditioning_points": post.conditioning_points().len(),
                       "conditioned_at": conditioned_at,
                       "jitter": post.jitter(), "prior": params.prior, "backend": B::name()});
    let mut v = io::merge(&post.predict::<B>(q)?, extra)?;
    out.divert(&mut v, q.len(), &["mean", "variance"])?;
    Ok(v)
}

/// `bke embed loglik` from the file: the data chunks are pushed through the streaming pass of
/// [`PseudolikelihoodPlan`], whose result is bitwise identical to `marginal_pseudolikelihood` on the
/// whole data (the same blocks, merged in the same order) for any thread count. The first chunk is
/// read before the landmarks are checked, so a data/landmark dimension mismatch is reported as the
/// whole-data function reports it. Returns the result and the number of rows.
fn streamed_loglik<B: Backend>(
    mut x: PointChunks,
    z: &Points,
    params: &BkeParams,
) -> anyhow::Result<(bke_core::embedding::MarginalLikelihood, usize)> {
    let first = x.next_chunk()?;
    if let Some(c) = &first {
        c.check_dim("landmarks", z.dim())?;
    }
    let plan = PseudolikelihoodPlan::new(z, params)?;
    let mut stream = plan.stream();
    let mut chunk = first;
    while let Some(c) = chunk {
        stream.push(&c)?;
        chunk = x.next_chunk()?;
    }
    x.note_integer_columns();
    let n = stream.len();
    Ok((stream.finish::<B>()?, n))
}

/// Runs a `bke embed` command.
pub fn run(cmd: EmbedCommand) -> anyhow::Result<()> {
    let out = match cmd {
        EmbedCommand::Sample(a) => return crate::sample::run(*a),
        EmbedCommand::Loglik(a) => {
            let c = &a.common;
            let params = BkeParams::new(parse_lengthscale(&a.lengthscale)?, a.tau2)
                .with_prior(c.prior()?)
                .with_jacobian(!a.no_jacobian);
            let (x, z) = (c.stream_data()?, c.read(&a.landmarks)?);
            run_with_backend!(c.exec, B => loglik_json::<B>(x, &z, &params))?
        }
        EmbedCommand::Fit(a) => {
            let c = &a.common;
            let x = c.read_data()?;
            let grid = match (a.grid_min, a.grid_max) {
                (None, None) => None,
                (Some(min), Some(max)) => Some(LengthscaleGrid { min, max, points: a.grid_points }),
                _ => bail!("give both --grid-min and --grid-max, or neither"),
            };
            let params = EmbeddingParams {
                num_landmarks: a.num_landmarks.unwrap_or_else(|| default_num_landmarks(x.len(), x.dim())),
                landmarks: a.landmarks.as_ref().map(|p| c.read(p)).transpose()?,
                tau2: a.tau2.unwrap_or(EmbeddingParams::default().tau2),
                learn_tau2: a.learn_tau2,
                prior: c.prior()?,
                jacobian: !a.no_jacobian,
                ard: a.ard,
                grid,
                grid_points: a.grid_points,
                seed: a.seed,
                ..EmbeddingParams::default()
            };
            run_with_backend!(c.exec, B => fit_json::<B>(&x, &params))?
        }
        EmbedCommand::Posterior(a) => {
            let c = &a.common;
            let params = BkeParams::new(parse_lengthscale(&a.lengthscale)?, a.tau2).with_prior(c.prior()?);
            let w = a.landmarks.as_ref().map(|p| c.read(p)).transpose()?;
            let (x, q) = (c.read_data()?, c.read(&a.at)?);
            let at = match (w, a.num_landmarks) {
                (Some(w), _) => Conditioning::File(w),
                (None, Some(0)) => bail!("--num-landmarks 0: at least one row is needed"),
                (None, Some(m)) => Conditioning::Rows { m, seed: a.seed },
                (None, None) if a.exact || x.len() <= BkePosterior::EXACT_ROWS => {
                    Conditioning::Rows { m: x.len(), seed: a.seed }
                }
                (None, None) => {
                    eprintln!(
                        "note: {} rows: conditioning on μ̂ at {} of them drawn with \
                         --seed {} (cost O(n m²)); --exact conditions at every row (O(n³)), --num-landmarks \
                         sets the number",
                        x.len(),
                        BkePosterior::DEFAULT_ROWS,
                        a.seed
                    );
                    Conditioning::Rows { m: BkePosterior::DEFAULT_ROWS, seed: a.seed }
                }
            };
            run_with_backend!(c.exec, B => posterior_json::<B>(&x, &q, &at, &params, &a.out))?
        }
    };
    io::emit(&out)
}
