//! `bke density …`: kernel student-t density estimation (bke-core `density`, seed 003).
//!
//! `fit` chooses the hyperparameters (α, β, σ₀², lengthscale factor) by seeded K-fold cross-validated
//! log-likelihood of the normalised density (1-D and 2-D data) unless all are given, fits the model,
//! normalises it on the whole space in 1-D/2-D (a box around the data, with Cauchy tails beyond it,
//! the quadrature checked against a rigorous lower bound; the fit fails, naming the cause, when the
//! quadrature cannot resolve the density on the box), and writes a model file (kind `density`; files
//! of bke 0.1 still load). `eval` prints `{"log_density": [..], "normalised": true|false}`; `sample` draws from a
//! normalised model.

use crate::exec::{ExecArgs, fit, run_with_backend};
use anyhow::{Context, bail};
use bke_core::density::{KernelStudentT, KernelStudentTParams, SelectOptions};
use bke_core::model_file::{self, Saved};
use bke_core::{KernelFamily, LogDensity, Params, Points};
use bke_io as io;
use bke_linalg::Backend;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::PathBuf;

/// `bke density` subcommands.
#[derive(Subcommand)]
pub enum DensityCommand {
    /// Fit a kernel student-t density (hyperparameters by cross-validated held-out log-likelihood of
    /// the normalised density unless all are given) and write the model file.
    Fit(Box<FitArgs>),
    /// Log density of a fitted model at query points: {"log_density": [..], "normalised": bool}.
    Eval(Box<EvalArgs>),
    /// Draws from a fitted, normalised model: {"samples": [[..]], "columns", "proposals"}.
    Sample(Box<SampleArgs>),
}

/// `bke density fit`.
#[derive(Args)]
pub struct FitArgs {
    /// Data CSV (header row, numeric columns).
    #[arg(long)]
    data: PathBuf,
    /// Columns to use, by name, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// Seed of the cross-validation folds.
    #[arg(long, default_value_t = SelectOptions::default().seed)]
    seed: u64,
    /// Where to write the model (JSON).
    #[arg(long)]
    model_out: PathBuf,
    /// Kernel family: se, laplace, matern32, matern52, rq or rq:ALPHA.
    #[arg(long, default_value_t = KernelStudentTParams::default().family.spec())]
    kernel: String,
    /// Fixed lengthscale: one value, or a comma list with one per dimension (default: selected as
    /// c × standard deviation of each column).
    #[arg(long, value_delimiter = ',')]
    lengthscale: Option<Vec<f64>>,
    /// Fixed α (> d − 1); default: selected.
    #[arg(long)]
    alpha: Option<f64>,
    /// Fixed β (> 0); default: selected.
    #[arg(long)]
    beta: Option<f64>,
    /// Fixed σ₀² (> 0); default: selected.
    #[arg(long)]
    sigma0_sq: Option<f64>,
    /// Cross-validation folds.
    #[arg(long, default_value_t = SelectOptions::default().folds)]
    folds: usize,
    /// Normalisation box: the data range widened by this fraction of the range on each side (beyond
    /// it the density continues with Cauchy tails of the box's width). A wide box needs finer
    /// quadrature: candidates it cannot resolve are left out of the selection.
    #[arg(long, default_value_t = SelectOptions::default().margin)]
    margin: f64,
    /// Do not normalise (the model then gives unnormalised log densities).
    #[arg(long)]
    no_normalise: bool,
    #[command(flatten)]
    exec: ExecArgs,
}

/// `bke density eval`.
#[derive(Args)]
pub struct EvalArgs {
    /// Model file written by `bke density fit`.
    #[arg(long)]
    model: PathBuf,
    /// Query points CSV. Columns: --columns, else the model's columns, else all.
    #[arg(long)]
    at: PathBuf,
    /// Columns of the query CSV, by name, comma-separated.
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    #[command(flatten)]
    out: crate::table_out::OutArgs,
    #[command(flatten)]
    exec: ExecArgs,
}

/// `bke density sample`.
#[derive(Args)]
pub struct SampleArgs {
    /// Model file written by `bke density fit` (normalised).
    #[arg(long)]
    model: PathBuf,
    /// Number of draws.
    #[arg(long, default_value_t = 1000)]
    n: usize,
    /// Seed of the draws (the result does not depend on --threads).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[command(flatten)]
    exec: ExecArgs,
}

/// The log density of `model` at `q` with backend `B`, warning about points outside the box of a
/// box-only normaliser (model files written before the density had tails; a fitted density is
/// finite everywhere).
fn eval_json<B: Backend>(model: &KernelStudentT, q: &Points) -> anyhow::Result<Value> {
    let ld = model.log_density::<B>(q)?;
    if let Some(n) = model.normalisation() {
        let outside = ld.iter().filter(|v| **v == f64::NEG_INFINITY).count();
        if outside > 0 {
            eprintln!(
                "warning: {outside} query point(s) lie outside the normalisation box {:?} .. {:?}: \
                 the density is 0 there (log density -inf, written as null)",
                n.domain.lower, n.domain.upper
            );
        }
    }
    Ok(json!({ "log_density": ld, "normalised": model.normalisation().is_some() }))
}

/// `n` draws from `model` with backend `B`.
fn sample_json<B: Backend>(model: &KernelStudentT, n: usize, seed: u64) -> anyhow::Result<Value> {
    let s = model.sample::<B>(n, seed)?;
    let rows: Vec<&[f64]> = s.points.iter().collect();
    Ok(json!({"samples": rows, "proposals": s.proposals, "envelope_violations": s.envelope_violations}))
}

fn fit_cmd(a: &FitArgs) -> anyhow::Result<Value> {
    let table = io::CsvTable::read(&a.data)?;
    let x = table.points(a.columns.as_deref())?;
    io::note_integer_columns(&x, &a.data, a.columns.as_deref().unwrap_or(&table.names));
    let columns = a.columns.clone().unwrap_or_else(|| table.names.clone());
    let d = x.dim();
    if !a.no_normalise && d > 2 {
        eprintln!(
            "note: {d}-dimensional data: the density is left unnormalised (quadrature is 1-D/2-D only)"
        );
    }
    let params = KernelStudentTParams {
        family: a.kernel.parse::<KernelFamily>().context("--kernel")?,
        lengthscales: a.lengthscale.clone(),
        alpha: a.alpha,
        beta: a.beta,
        sigma0_sq: a.sigma0_sq,
        normalise: !a.no_normalise && d <= 2,
        select: SelectOptions { folds: a.folds, seed: a.seed, margin: a.margin, ..SelectOptions::default() },
        ..KernelStudentTParams::default()
    };
    params.validate()?;
    if !params.all_fixed() {
        eprintln!("selecting hyperparameters ({}-fold cross-validation, seed {}) …", a.folds, a.seed);
    }
    let model = run_with_backend!(a.exec, B => fit::<B, _>("density fit", &params, &x))?;
    if let Some(n) = model.normalisation().filter(|n| !n.converged) {
        eprintln!(
            "warning: the normaliser reached relative error {:.2e} only within the node budget \
             (\"normaliser_converged\": false): the box is too wide or the density too sharp for the \
             quadrature to resolve; use a smaller --margin, or a larger --lengthscale or --sigma0-sq",
            n.rel_err
        );
    }
    for note in model.grid_notes() {
        eprintln!("note: {note}");
    }
    model_file::save(&Saved { columns: columns.clone(), target: None, model: model.clone() }, &a.model_out)?;
    let extra = json!({"model": a.model_out.display().to_string(), "columns": columns,
                       "backend": a.exec.kind()?.name()});
    io::merge(&model.summary(), extra)
}

/// The query points of `eval`: `--columns`, else the model's columns (an error naming the missing
/// ones when the table lacks any), else (a model file without column names) every column; of the
/// model's dimension.
fn query_points(a: &EvalArgs, columns: &[String], dim: usize) -> anyhow::Result<Points> {
    let table = io::CsvTable::read(&a.at)?;
    let missing: Vec<&str> =
        columns.iter().filter(|c| !table.names.contains(c)).map(String::as_str).collect();
    let q = match &a.columns {
        Some(c) => table.points(Some(c))?,
        None if columns.is_empty() => table.points(None)?,
        None if missing.is_empty() => table.points(Some(columns))?,
        None => bail!(
            "{}: the model was fitted on the columns {}, but this file has no column named {}; \
             rename them, or choose the query columns with --columns",
            table.path,
            columns.join(", "),
            missing.join(", ")
        ),
    };
    q.check_dim("query points (columns of --at)", dim)
        .with_context(|| format!("the model was fitted on {dim} column(s): {}", columns.join(", ")))?;
    Ok(q)
}

/// Runs a `bke density` command.
pub fn run(cmd: DensityCommand) -> anyhow::Result<()> {
    let out = match cmd {
        DensityCommand::Fit(a) => fit_cmd(&a)?,
        DensityCommand::Eval(a) => {
            let saved = model_file::load::<KernelStudentT>(&a.model)?;
            let q = query_points(&a, &saved.columns, saved.model.dim())?;
            let rows = q.len();
            let mut v = run_with_backend!(a.exec, B => eval_json::<B>(&saved.model, &q))?;
            a.out.divert(&mut v, rows, &["log_density"])?;
            v
        }
        DensityCommand::Sample(a) => {
            let saved = model_file::load::<KernelStudentT>(&a.model)?;
            let mut v = run_with_backend!(a.exec, B => sample_json::<B>(&saved.model, a.n, a.seed))?;
            v["columns"] = json!(saved.columns);
            v
        }
    };
    io::emit(&out)
}
