//! `cargo xtask repro bank-cv`: seed 001 Tables 1 and 2 — 5-fold cross-validation at `M = 384`
//! frequencies (768 features) of RKS, MKL and BaNK on `data/concrete.csv` and `data/bikeshare.csv`
//! (regression, MSE on standardised targets) and `data/pima.csv` and `data/magic.csv` (classification
//! error), with standard errors over folds.
//!
//! To keep the run to minutes on two shared cores: magic is subsampled to 3000 rows (seeded) and BaNK
//! runs 60 sweeps (30 burn-in, 10 retained) per fold on every dataset. Both are printed with the table.

use anyhow::Context;
use bke_bank::cv::{CvParams, CvResult, Method};
use bke_bank::{BankParams, Task};
use bke_core::{Params, Points};
use bke_linalg::DefaultBackend;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::Table;

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

/// Runs the reproduction.
pub fn run(out: &Path) -> anyhow::Result<()> {
    let dir = out.join("bank-cv");
    std::fs::create_dir_all(&dir)?;
    let bank = BankParams {
        frequencies: M,
        iterations: 60,
        burn_in: Some(30),
        samples: 10,
        seed: 1,
        ..Default::default()
    };
    let mut table = Table::new(
        "BaNK 5-fold CV at M = 384 (regression: MSE on standardised targets; classification: error)",
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
        let (x, y) = read(&data_dir().join(format!("{}.csv", ds.file)), ds.target, ds.max_rows)?;
        let mut cells = Vec::new();
        let mut secs = Vec::new();
        let mut metric = String::new();
        for method in [Method::Rks, Method::Mkl, Method::Bank] {
            let t0 = std::time::Instant::now();
            let mut p = CvParams::new(method, ds.task);
            p.seed = 7;
            p.bank = bank.clone();
            p.baseline.frequencies = M;
            let data = bke_core::Dataset::new(x.clone(), y.clone())?;
            let r: CvResult = p.check()?.fit::<DefaultBackend>(&data)?;
            secs.push(t0.elapsed().as_secs_f64());
            eprintln!(
                "  {} {}: {:.4} ± {:.4} ({:.0} s)",
                ds.file,
                method.name(),
                r.mean,
                r.stderr,
                secs.last().unwrap()
            );
            for (f, s) in r.folds.iter().enumerate() {
                writeln!(csv, "{},{},{f},{s}", ds.file, method.name())?;
            }
            cells.push(format!("{:.4} ± {:.4}", r.mean, r.stderr));
            metric = r.metric;
        }
        let seed = |i: usize| ds.seed.map_or("-".to_string(), |s| format!("{:.4}", [s.0, s.1, s.2][i]));
        table.push(vec![
            ds.file.to_string()
                + if ds.max_rows.is_some_and(|k| k < 19020) { " (3000-row subsample)" } else { "" },
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
    println!(
        "BaNK: {} sweeps ({} burn-in, {} retained) per fold; baselines: evidence-chosen ridge / Laplace-evidence-chosen logistic prior",
        bank.iterations,
        bank.burn_in(),
        bank.samples
    );
    table.emit(&dir, "bank_cv")
}
