//! `cargo xtask repro bank-cv`: seed 001 Tables 1 and 2 — 5-fold cross-validation at `M = 384`
//! frequencies (768 features) of RKS, MKL and BaNK on `data/concrete.csv` and `data/bikeshare.csv`
//! (regression, MSE on standardised targets) and `data/pima.csv` and `data/magic.csv` (classification
//! error), with standard errors over folds.
//!
//! To keep the run to minutes on two shared cores: magic is subsampled to 3000 rows (seeded) and BaNK
//! runs 60 sweeps (30 burn-in, 10 retained) per fold on every dataset. Both are printed with the table.

use anyhow::Context;
use bke_bank::baselines::BaselineParams;
use bke_bank::cv::{CvResult, Method, cross_validate};
use bke_bank::{BankParams, Task};
use bke_core::Points;
use bke_linalg::DefaultBackend;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::Table;
use crate::repro::Ctx;

/// Frequencies of every method (the seed's 768 features).
pub const M: usize = 384;

struct Dataset {
    file: &'static str,
    target: &'static str,
    task: Task,
    max_rows: Option<usize>,
    /// Seed's (RKS, MKL, BaNK) numbers where the seed reports this dataset.
    seed: Option<(f64, f64, f64)>,
}

const DATASETS: &[Dataset] = &[
    Dataset {
        file: "concrete",
        target: "compressive_strength",
        task: Task::Regression,
        max_rows: None,
        seed: Some((0.1313, 0.0942, 0.1195)),
    },
    // The seed's "bike" is the full 17379-row hourly data; ours is the 2011 half (8645 rows).
    Dataset {
        file: "bikeshare",
        target: "bikers",
        task: Task::Regression,
        max_rows: None,
        seed: Some((0.1832, 0.1509, 0.0496)),
    },
    Dataset {
        file: "pima",
        target: "class",
        task: Task::Classification,
        max_rows: None,
        seed: Some((0.332, 0.4455, 0.263)),
    },
    Dataset { file: "magic", target: "class", task: Task::Classification, max_rows: Some(3000), seed: None },
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data")
}

/// Reads a numeric CSV with a header; returns (inputs, target).
fn read(path: &Path, target: &str, max_rows: Option<usize>) -> anyhow::Result<(Points, Vec<f64>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().context("empty CSV")?.split(',').map(str::trim).collect();
    let t = header.iter().position(|h| *h == target).with_context(|| format!("no column {target}"))?;
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<f64> = line
            .split(',')
            .map(|c| c.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("{}, line {}", path.display(), i + 2))?;
        rows.push(v);
    }
    if let Some(k) = max_rows {
        if rows.len() > k {
            rows.shuffle(&mut ChaCha8Rng::seed_from_u64(2016));
            rows.truncate(k);
        }
    }
    let y = rows.iter().map(|r| r[t]).collect();
    let x: Vec<Vec<f64>> = rows
        .iter()
        .map(|r| r.iter().enumerate().filter(|(j, _)| *j != t).map(|(_, v)| *v).collect())
        .collect();
    Ok((Points::from_rows(&path.display().to_string(), &x)?, y))
}

/// Runs the reproduction (`folds.csv`, `bank_cv.{csv,md}` under `out/bank-cv`; one report section).
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let dir = ctx.dir("bank-cv")?;
    let m = ctx.size(M, 32);
    let (iterations, burn_in, samples) = ctx.size((60, 30, 10), (10, 5, 3));
    let bank = BankParams {
        frequencies: m,
        iterations,
        burn_in: Some(burn_in),
        samples,
        seed: 1,
        ..Default::default()
    };
    let baseline = BaselineParams { frequencies: m, seed: 1, ..Default::default() };
    let mut table = Table::new(
        &format!(
            "BaNK 5-fold CV at M = {m} (regression: MSE on standardised targets; classification: error)"
        ),
        &[
            "dataset",
            "N",
            "d",
            "metric",
            "RKS",
            "MKL",
            "BaNK",
            "seed RKS",
            "seed MKL",
            "seed BaNK",
            "seconds (RKS/MKL/BaNK)",
        ],
    );
    let mut csv = String::from("dataset,method,fold,score\n");
    for ds in DATASETS {
        let max_rows = ctx.size(ds.max_rows, Some(400));
        let (x, y) = read(&data_dir().join(format!("{}.csv", ds.file)), ds.target, max_rows)?;
        let mut cells = Vec::new();
        let mut secs = Vec::new();
        let mut metric = String::new();
        for method in [Method::Rks, Method::Mkl, Method::Bank] {
            let t0 = std::time::Instant::now();
            let r: CvResult =
                cross_validate::<DefaultBackend>(&x, &y, ds.task, method, 5, &bank, &baseline, 7, || {})?;
            secs.push(t0.elapsed().as_secs_f64());
            ctx.progress(&format!(
                "{} {}: {:.4} ± {:.4} ({:.0} s)",
                ds.file,
                method.name(),
                r.mean,
                r.stderr,
                secs.last().unwrap_or(&0.0)
            ));
            for (f, s) in r.folds.iter().enumerate() {
                writeln!(csv, "{},{},{f},{s}", ds.file, method.name())?;
            }
            cells.push(format!("{:.4} ± {:.4}", r.mean, r.stderr));
            metric = r.metric;
        }
        let seed = |i: usize| ds.seed.map_or("-".to_string(), |s| format!("{:.4}", [s.0, s.1, s.2][i]));
        table.push(vec![
            match max_rows {
                Some(k) => format!("{} ({k}-row subsample)", ds.file),
                None => ds.file.to_string(),
            },
            x.len().to_string(),
            x.dim().to_string(),
            metric,
            cells[0].clone(),
            cells[1].clone(),
            cells[2].clone(),
            seed(0),
            seed(1),
            seed(2),
            format!("{:.0}/{:.0}/{:.0}", secs[0], secs[1], secs[2]),
        ]);
    }
    std::fs::write(dir.join("folds.csv"), csv)?;
    let setup = format!(
        "BaNK: {} sweeps ({} burn-in, {} retained) per fold; baselines: evidence-chosen ridge / \
         Laplace-evidence-chosen logistic prior; ± is the standard error over the 5 folds.",
        bank.iterations,
        bank.burn_in(),
        bank.samples
    );
    table.notes.push(setup.clone());
    table.write_files(&dir, "bank_cv")?;
    let section = ctx
        .section("tables", "BaNK (seed 001 Tables 1–2): cross-validated error of RKS, MKL and BaNK")
        .intro(format!(
            "5-fold cross-validation at M = {m} frequencies ({} features) on concrete and bikeshare (MSE on \
             standardised targets) and pima and magic (classification error). {setup}",
            2 * m
        ))
        .seed("Table 1–2 (M = 384): concrete RKS 0.1313, MKL 0.0942, BaNK 0.1195; bike 0.1832 / 0.1509 / 0.0496; \
               pima 0.332 / 0.4455 / 0.263 (the seed's bike is the full 17,379-row hourly data, ours the 2011 half).")
        .table(&table);
    ctx.publish(section)
}
