//! `bke density …`: kernel student-t density estimation (bke-core `density`, seed 003).
//!
//! `fit` chooses the hyperparameters (α, β, σ₀², lengthscale factor) by seeded K-fold cross-validated
//! log-likelihood of the normalised density (1-D and 2-D data) unless all are given, fits the model,
//! normalises it on a box in 1-D/2-D, and writes a JSON model file (the hyperparameters, the
//! training points and the normaliser; `eval` refits from them, which is deterministic).
//! `eval` prints `{"log_density": [..], "normalised": true|false}`.

use crate::io;
use anyhow::{Context, bail};
use bke_core::density::{
    DensityParams, Domain, KernelStudentT, Normalisation, NormaliseOptions, NormalisedDensity, SelectOptions,
    normalise, select_hyperparameters,
};
use bke_core::{Kernel, KernelFamily, Points};
use bke_linalg::{Backend, BackendKind, WithBackend};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
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
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where to write the model (JSON).
    #[arg(long)]
    model_out: PathBuf,
    /// Kernel family: se, laplace, matern32, matern52, or rq:ALPHA.
    #[arg(long, default_value = "se")]
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
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Normalisation box: the data range widened by this fraction of the range on each side.
    #[arg(long, default_value_t = 0.25)]
    margin: f64,
    /// Do not normalise (the model then gives unnormalised log densities).
    #[arg(long)]
    no_normalise: bool,
    /// Linear-algebra backend (compiled-in ones: see `bke backends`).
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
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
    /// Linear-algebra backend.
    #[arg(long, default_value = "faer")]
    backend: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
}

/// The model file.
#[derive(Serialize, Deserialize, Debug, Clone)]
struct ModelFile {
    format: String,
    columns: Vec<String>,
    kernel: String,
    lengthscales: Vec<f64>,
    alpha: f64,
    beta: f64,
    sigma0_sq: f64,
    data: Vec<Vec<f64>>,
    normalisation: Option<NormFile>,
    cv_log_lik: Option<f64>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
struct NormFile {
    lower: Vec<f64>,
    upper: Vec<f64>,
    log_z: f64,
    rel_err: f64,
    converged: bool,
    panels: usize,
    evaluations: usize,
}

const FORMAT: &str = "bke-density-v1";

fn parse_family(s: &str) -> anyhow::Result<KernelFamily> {
    Ok(match s {
        "se" => KernelFamily::SquaredExponential,
        "laplace" => KernelFamily::Laplace,
        "matern32" => KernelFamily::Matern32,
        "matern52" => KernelFamily::Matern52,
        other => match other.strip_prefix("rq:") {
            Some(a) => KernelFamily::RationalQuadratic {
                alpha: a.parse().with_context(|| format!("--kernel {other}: '{a}' is not a number"))?,
            },
            None => bail!("unknown kernel '{other}'; use se, laplace, matern32, matern52 or rq:ALPHA"),
        },
    })
}

fn family_name(f: KernelFamily) -> String {
    match f {
        KernelFamily::RationalQuadratic { alpha } => format!("rq:{alpha}"),
        f => f.name().to_string(),
    }
}

enum Job {
    Fit { a: Box<FitArgs>, x: Points, columns: Vec<String> },
    Eval { m: Box<ModelFile>, q: Points },
}

impl WithBackend for Job {
    type Output = anyhow::Result<Value>;
    fn run<B: Backend>(self) -> Self::Output {
        match self {
            Job::Fit { a, x, columns } => fit::<B>(&a, &x, columns),
            Job::Eval { m, q } => eval::<B>(&m, &q),
        }
    }
}

fn fit<B: Backend>(a: &FitArgs, x: &Points, columns: Vec<String>) -> anyhow::Result<Value> {
    let d = x.dim();
    let family = parse_family(&a.kernel)?;
    let normalised = !a.no_normalise && d <= 2;
    if !a.no_normalise && d > 2 {
        eprintln!(
            "note: {d}-dimensional data: the density is left unnormalised (quadrature is 1-D/2-D only)"
        );
    }
    let domain = if normalised { Some(Domain::around(x, a.margin)?) } else { None };
    let (kernel, params, cv, grid_notes) = match (&a.lengthscale, a.alpha, a.beta, a.sigma0_sq) {
        (Some(ls), Some(alpha), Some(beta), Some(sigma0_sq)) => {
            let ls = if ls.len() == 1 { vec![ls[0]] } else { ls.clone() };
            (Kernel::new(family, ls)?, DensityParams { alpha, beta, sigma0_sq }, None, Vec::new())
        }
        _ => {
            if d > 2 {
                bail!(
                    "hyperparameter selection needs the normalised density, available for 1-D and 2-D data only; \
                     for {d}-dimensional data give --lengthscale, --alpha, --beta and --sigma0-sq"
                );
            }
            if let Some(alpha) = a.alpha {
                DensityParams { alpha, ..DensityParams::default() }.check(d)?;
            }
            let def = SelectOptions::default();
            let opts = SelectOptions {
                family,
                lengthscale_factors: if a.lengthscale.is_some() {
                    vec![1.0]
                } else {
                    def.lengthscale_factors
                },
                scales: a.lengthscale.clone(),
                sigma0_sq: a.sigma0_sq.map_or(def.sigma0_sq, |v| vec![v]),
                beta: a.beta.map_or(def.beta, |v| vec![v]),
                alpha_offsets: a.alpha.map_or(def.alpha_offsets, |v| vec![v - (d as f64 - 1.0)]),
                folds: a.folds,
                seed: a.seed,
                domain: Some(Domain::around(x, a.margin)?),
                margin: a.margin,
                ..def
            };
            eprintln!("selecting hyperparameters ({}-fold cross-validation, seed {}) …", a.folds, a.seed);
            let sel = select_hyperparameters::<B>(x, &opts)?;
            for note in &sel.grid_notes {
                eprintln!("note: {note}");
            }
            (sel.kernel, sel.params, Some(sel.cv_log_lik), sel.grid_notes)
        }
    };
    let model = KernelStudentT::<Kernel, B>::fit(kernel.clone(), x, params)?;
    let norm = if normalised {
        let nd = normalise(model, &NormaliseOptions { domain, margin: a.margin, ..Default::default() })?;
        let n = nd.normalisation().clone();
        if !n.converged {
            eprintln!(
                "warning: the normaliser reached relative error {:.2e} only (node budget spent)",
                n.rel_err
            );
        }
        Some(NormFile {
            lower: n.domain.lower.clone(),
            upper: n.domain.upper.clone(),
            log_z: n.log_z,
            rel_err: n.rel_err,
            converged: n.converged,
            panels: n.panels,
            evaluations: n.evaluations,
        })
    } else {
        None
    };
    let file = ModelFile {
        format: FORMAT.into(),
        columns,
        kernel: family_name(family),
        lengthscales: kernel.lengthscales().to_vec(),
        alpha: params.alpha,
        beta: params.beta,
        sigma0_sq: params.sigma0_sq,
        data: x.iter().map(<[f64]>::to_vec).collect(),
        normalisation: norm.clone(),
        cv_log_lik: cv,
    };
    std::fs::write(&a.model_out, serde_json::to_string_pretty(&file)?)
        .with_context(|| format!("cannot write the model file {}", a.model_out.display()))?;
    Ok(json!({
        "model": a.model_out.display().to_string(),
        "n": x.len(),
        "dim": d,
        "columns": file.columns,
        "kernel": file.kernel,
        "lengthscales": file.lengthscales,
        "alpha": params.alpha,
        "beta": params.beta,
        "sigma0_sq": params.sigma0_sq,
        "cv_log_lik": cv,
        "grid_adjustments": grid_notes,
        "normalised": norm.is_some(),
        "log_z": norm.as_ref().map(|n| n.log_z),
        "normaliser_rel_err": norm.as_ref().map(|n| n.rel_err),
        "domain": norm.as_ref().map(|n| json!({"lower": n.lower, "upper": n.upper})),
        "backend": B::NAME,
    }))
}

fn eval<B: Backend>(m: &ModelFile, q: &Points) -> anyhow::Result<Value> {
    let d = m.data.first().map_or(0, Vec::len);
    let x = Points::from_rows("model training data", &m.data)?;
    x.check_dim("query points (columns of --at)", q.dim())
        .with_context(|| format!("the model was fitted on {d} column(s): {}", m.columns.join(", ")))?;
    let kernel = Kernel::new(parse_family(&m.kernel)?, m.lengthscales.clone())?;
    let params = DensityParams { alpha: m.alpha, beta: m.beta, sigma0_sq: m.sigma0_sq };
    let model = KernelStudentT::<Kernel, B>::fit(kernel, &x, params)?;
    let (ld, normalised) = match &m.normalisation {
        Some(n) => {
            let norm = Normalisation {
                domain: Domain::new(n.lower.clone(), n.upper.clone())?,
                log_z: n.log_z,
                rel_err: n.rel_err,
                converged: n.converged,
                panels: n.panels,
                evaluations: n.evaluations,
            };
            let nd = NormalisedDensity::from_parts(model, norm)?;
            let ld = nd.log_density(q)?;
            let outside = ld.iter().filter(|v| **v == f64::NEG_INFINITY).count();
            if outside > 0 {
                eprintln!(
                    "warning: {outside} query point(s) lie outside the normalisation box {:?} .. {:?}: \
                     the density is 0 there (log density -inf, written as null)",
                    n.lower, n.upper
                );
            }
            (ld, true)
        }
        None => (model.log_unnormalised(q)?, false),
    };
    Ok(json!({ "log_density": ld, "normalised": normalised }))
}

fn threads(t: Option<usize>) {
    if let Some(t) = t {
        rayon::ThreadPoolBuilder::new().num_threads(t.max(1)).build_global().ok();
    }
}

/// Runs a `bke density` command.
pub fn run(cmd: DensityCommand) -> anyhow::Result<()> {
    let (kind, job) = match cmd {
        DensityCommand::Fit(a) => {
            threads(a.threads);
            let kind = BackendKind::parse(&a.backend).map_err(anyhow::Error::msg)?;
            let table = io::CsvTable::read(&a.data)?;
            let x = table.points(a.columns.as_deref())?;
            let columns = a.columns.clone().unwrap_or_else(|| table.names.clone());
            (kind, Job::Fit { a, x, columns })
        }
        DensityCommand::Eval(a) => {
            threads(a.threads);
            let kind = BackendKind::parse(&a.backend).map_err(anyhow::Error::msg)?;
            let text = std::fs::read_to_string(&a.model)
                .with_context(|| format!("cannot read the model file {}", a.model.display()))?;
            let m: ModelFile = serde_json::from_str(&text)
                .with_context(|| format!("{}: not a `bke density fit` model file", a.model.display()))?;
            if m.format != FORMAT {
                bail!("{}: model format '{}', expected '{FORMAT}'", a.model.display(), m.format);
            }
            let table = io::CsvTable::read(&a.at)?;
            let q = match &a.columns {
                Some(c) => table.points(Some(c))?,
                None if m.columns.iter().all(|c| table.names.contains(c)) => {
                    table.points(Some(&m.columns))?
                }
                None => table.points(None)?,
            };
            (kind, Job::Eval { m: Box::new(m), q })
        }
    };
    let out = kind.dispatch(job)??;
    io::emit(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bke-density-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn fit_args(data: PathBuf, out: PathBuf) -> FitArgs {
        FitArgs {
            data,
            columns: None,
            seed: 0,
            model_out: out,
            kernel: "se".into(),
            lengthscale: None,
            alpha: None,
            beta: None,
            sigma0_sq: None,
            folds: 3,
            margin: 0.25,
            no_normalise: false,
            backend: "faer".into(),
            threads: None,
        }
    }

    /// fit → file → eval round trip: eval's log densities equal the in-memory normalised model's.
    #[test]
    fn fit_then_eval_round_trip() {
        let rows: String = (0..30).map(|i| format!("{},{}\n", (i as f64 * 0.9).sin(), i % 4)).collect();
        let data = write("d.csv", &format!("a,b\n{rows}"));
        let out = write("m.json", "");
        let mut a = fit_args(data, out.clone());
        a.columns = Some(vec!["a".into()]);
        let table = io::CsvTable::read(&a.data).unwrap();
        let x = table.points(a.columns.as_deref()).unwrap();
        let summary = fit::<bke_linalg::Faer>(&a, &x, vec!["a".into()]).unwrap();
        assert_eq!(summary["normalised"], json!(true));
        let m: ModelFile = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let q = Points::from_1d("q", &[0.0, 0.5, 100.0]).unwrap();
        let v = eval::<bke_linalg::Nalgebra>(&m, &q).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 2, "exactly log_density and normalised");
        assert_eq!(v["normalised"], json!(true));
        assert!(v["log_density"][2].is_null(), "outside the box");
        let kernel = Kernel::new(KernelFamily::SquaredExponential, m.lengthscales.clone()).unwrap();
        let params = DensityParams { alpha: m.alpha, beta: m.beta, sigma0_sq: m.sigma0_sq };
        let direct = KernelStudentT::<Kernel, bke_linalg::Faer>::fit(kernel, &x, params).unwrap();
        let lq = direct.log_unnormalised(&q).unwrap();
        let lz = m.normalisation.as_ref().unwrap().log_z;
        for i in 0..2 {
            assert!((v["log_density"][i].as_f64().unwrap() - (lq[i] - lz)).abs() < 1e-9);
        }
        // Dimension mismatch at eval.
        let q2 = Points::new("q", vec![0.0, 1.0], 2).unwrap();
        let e = format!("{:#}", eval::<bke_linalg::Faer>(&m, &q2).unwrap_err());
        assert!(e.contains("fitted on 1 column") && e.contains("has 2, expected 1"), "{e}");
    }

    #[test]
    fn bad_hyperparameters_are_clear_errors() {
        let data = write("e.csv", "a,b\n0,1\n1,0\n2,2\n0.5,0.3\n");
        let out = write("e.json", "");
        let table = io::CsvTable::read(&data).unwrap();
        let x = table.points(None).unwrap();
        let mut a = fit_args(data, out);
        a.lengthscale = Some(vec![1.0]);
        a.alpha = Some(1.0);
        a.beta = Some(0.1);
        a.sigma0_sq = Some(1.0);
        let e = fit::<bke_linalg::Faer>(&a, &x, vec![]).unwrap_err().to_string();
        assert!(e.contains("alpha") && e.contains("improper"), "{e}");
        a.alpha = Some(2.0);
        a.sigma0_sq = Some(0.0);
        let e = fit::<bke_linalg::Faer>(&a, &x, vec![]).unwrap_err().to_string();
        assert!(e.contains("sigma0_sq"), "{e}");
        a.sigma0_sq = Some(1.0);
        a.beta = Some(-1.0);
        assert!(fit::<bke_linalg::Faer>(&a, &x, vec![]).unwrap_err().to_string().contains("beta"));
        a.beta = Some(1.0);
        assert!(fit::<bke_linalg::Faer>(&a, &x, vec![]).is_ok());
    }
}
