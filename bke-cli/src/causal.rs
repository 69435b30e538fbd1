//! `bke causal pc`: the PC algorithm with kernel conditional-independence tests (KCI or RCIT by
//! default, or GP regression on the conditioning set then HSIC on the residuals as in seed 000 §5;
//! [`bke_core::causal::ci`]), after pre-whitening against a time column (seed 000 Fig. 4). JSON on stdout (the library's
//! [`bke_core::causal::PcResult`] plus the input file and time column), progress on stderr, and an
//! SVG drawing of the CPDAG with `--svg`.

use crate::exec::{ExecArgs, fit, run_with_backend};
use crate::hypothesis::Selection;
use anyhow::{Context, bail};
use bke_core::Points;
use bke_core::causal::{CausalData, CiMethod, KciNull, Orientation, PcParams, Prewhitening, ZRule, draw};
use bke_core::hypothesis::hsic::HsicStatistic;
use bke_io as io;
use clap::{Args, Subcommand};
use serde_json::json;
use std::path::PathBuf;

/// Causal discovery.
#[derive(Subcommand)]
pub enum CausalCommand {
    /// The PC algorithm (stable version) with kernel conditional-independence tests: prints the
    /// CPDAG, every test and its p-value. Here --select defaults to bkl-bayes for gp-hsic
    /// (single-kernel bkl picks its resolution limit on one-dimensional residuals and loses power)
    /// and to median for kci and rcit (measured level; see bke_core::causal::ci).
    Pc(Box<PcArgs>),
}

/// `bke causal pc`.
#[derive(Args, Clone, Debug)]
pub struct PcArgs {
    /// CSV file with one column per variable (header row).
    #[arg(long)]
    pub data: PathBuf,
    /// Variables to use (comma-separated column names; default: every column except --time).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Column holding the time index: every variable is pre-whitened against it first.
    #[arg(long)]
    pub time: Option<String>,
    /// Pre-whitening against --time: gp (default), ar:P (autoregression of order P) or none.
    #[arg(long, default_value_t = PcParams::default().prewhiten.name())]
    pub prewhiten: String,
    /// Level α of every conditional-independence test: an edge is removed when p > α.
    #[arg(long, default_value_t = PcParams::default().alpha, allow_negative_numbers = true)]
    pub alpha: f64,
    /// The conditional-independence test: auto (the default: kci up to 500 observations, rcit
    /// above), kci (the kernel conditional-independence test of Zhang et al. 2011, O(n³) per test),
    /// rcit (KCI on random features, for large n) or gp-hsic (GP regression on the conditioning set,
    /// then HSIC on the residuals, seed 000's test). See bke_core::causal::ci for the measurements.
    #[arg(long, default_value = PcParams::default().ci.method.name())]
    pub ci: String,
    /// KCI's and RCIT's null approximation: gamma (default) or spectral (draws from the null's
    /// eigenvalues).
    #[arg(long, default_value = PcParams::default().ci.kci.null.name())]
    pub kci_null: String,
    /// KCI's and RCIT's kernel on the conditioning set and ridge of its regression: learned (by
    /// marginal likelihood; the default) or median (the median heuristic and ε = 1e-3,
    /// causal-learn's defaults: about 5 times faster, as accurate when the dependence on the
    /// conditioning set is smooth, not valid when it is rough; see bke_core::causal::ci).
    #[arg(long, default_value = PcParams::default().ci.kci.z_rule.name())]
    pub kci_z: String,
    /// With --kci-z learned: the most rows the GP regression that shapes the kernel on the
    /// conditioning set is fitted on (its cost grows as the cube; the scale and ridge are then chosen
    /// on every row).
    #[arg(long, default_value_t = PcParams::default().ci.kci.hyper_points)]
    pub kci_hyper_points: usize,
    /// Fixed lengthscale of every HSIC kernel (instead of --select).
    #[arg(long, conflicts_with = "select", allow_negative_numbers = true)]
    pub lengthscale: Option<f64>,
    #[command(flatten)]
    pub selection: Selection,
    /// HSIC statistic: biased (default) or unbiased.
    #[arg(long, default_value = PcParams::default().ci.hsic.statistic.name())]
    pub statistic: String,
    /// Permutations per test (the smallest attainable p-value is 1/(1 + B)).
    #[arg(long, default_value_t = PcParams::default().ci.hsic.permutations)]
    pub permutations: usize,
    /// Largest conditioning set tried (default: no limit).
    #[arg(long)]
    pub max_condition: Option<usize>,
    /// How unshielded triples become v-structures: standard (collider iff the centre is not in the
    /// separating set found), conservative (Ramsey et al. 2006: all separating sets among the
    /// neighbours must agree, else the triple is ambiguous), majority (Colombo & Maathuis 2014; the
    /// default: the lowest structural Hamming distance in repro fig4's study) or max-p (the
    /// separating set with the largest p-value; causal-learn's uc_rule = 1). The JSON's "triples"
    /// lists every decision with its votes.
    #[arg(long, default_value = PcParams::default().orientation.name())]
    pub orientation: String,
    /// Seed of the permutations and of BKL's landmark hold-out (results do not depend on --threads).
    #[arg(long, default_value_t = PcParams::default().ci.hsic.seed)]
    pub seed: u64,
    /// Also draw the CPDAG as an SVG file here.
    #[arg(long)]
    pub svg: Option<PathBuf>,
    #[command(flatten)]
    pub exec: ExecArgs,
}

/// Runs a `bke causal …` command.
pub fn run(cmd: CausalCommand) -> anyhow::Result<()> {
    match cmd {
        CausalCommand::Pc(a) => pc(&a),
    }
}

fn pc(a: &PcArgs) -> anyhow::Result<()> {
    let table = io::CsvTable::read(&a.data)?;
    let time_col = a.time.as_deref().map(|t| table.column_index(t)).transpose()?;
    let names: Vec<String> = match &a.columns {
        Some(c) => c.clone(),
        None => table
            .names
            .iter()
            .enumerate()
            .filter(|(j, _)| Some(*j) != time_col)
            .map(|(_, n)| n.clone())
            .collect(),
    };
    if names.len() < 2 {
        bail!("{}: causal discovery needs at least 2 variables; --columns names {}", table.path, names.len());
    }
    if let (Some(t), Some(j)) = (&a.time, time_col)
        && names.iter().any(|n| *n == table.names[j])
    {
        bail!("--time column '{t}' is also among the variables; leave it out of --columns");
    }
    let idx: Vec<usize> = names.iter().map(|n| table.column_index(n)).collect::<anyhow::Result<_>>()?;
    let values: Points = table.points_at(&idx)?;
    let time = time_col.map(|j| table.column(j));
    let data = CausalData::new(names, values, time).with_context(|| table.path.clone())?;

    let mut params = PcParams { alpha: a.alpha, max_condition: a.max_condition, ..PcParams::default() };
    params.ci.method = CiMethod::parse(&a.ci)?;
    let mut selection = a.selection.clone();
    let default_rule = params.ci.method.default_selection().rule();
    selection.select = selection.select.or(default_rule);
    params.prewhiten = Prewhitening::parse(&a.prewhiten)?;
    params.orientation = Orientation::parse(&a.orientation)?;
    params.ci.selection = selection.rule(a.lengthscale, a.seed, false)?;
    params.ci.kci.null = KciNull::parse(&a.kci_null)?;
    params.ci.kci.z_rule = ZRule::parse(&a.kci_z)?;
    params.ci.kci.hyper_points = a.kci_hyper_points;
    params.ci.hsic.statistic = HsicStatistic::parse(&a.statistic)?;
    params.ci.hsic.permutations = a.permutations;
    params.ci.hsic.seed = a.seed;

    let result = run_with_backend!(a.exec, B => fit::<B, _>("causal pc", &params, &data))?;
    if let Some(path) = &a.svg {
        let title = format!("PC, {} with {} kernels, α = {}", result.ci_test, result.selection, result.alpha);
        let svg = draw::graph_svg(&result.nodes, &[(&title, &result.graph())], &[]);
        bke_core::model_file::write_atomic(path, svg)
            .with_context(|| format!("cannot write the SVG to {}", path.display()))?;
    }
    let mut out = serde_json::to_value(&result)?;
    if let Some(m) = out.as_object_mut() {
        m.insert("data".into(), json!(table.path));
        m.insert("time".into(), json!(a.time));
        m.insert("backend".into(), json!(a.exec.kind()?.name()));
        if let Some(p) = &a.svg {
            m.insert("svg".into(), json!(p.display().to_string()));
        }
    }
    io::emit(&out)
}
