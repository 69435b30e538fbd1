//! The datasets of the BaNK reproductions (seed 001 Tables 1–2, Fig. 4): the bundled CSV files of
//! `data/` and synthetic large-`N` sets for the scaling rows.
//!
//! * `friedman` (regression): Friedman #1, `x ~ U(0, 1)^10`,
//!   `y = 10 sin(π x₁x₂) + 20(x₃ − ½)² + 10x₄ + 5x₅ + ε`, `ε ~ N(0, 1)` (five inputs are noise).
//! * `ring` (classification): `x ~ N(0, I₈)`, `y = 1[sin(2x₁) + x₂x₃ + ½x₄² − ½ + ε > 0]`,
//!   `ε ~ N(0, ½²)`: a smooth non-linear boundary with label noise.
//! * `sparse60` (classification): `x ~ N(0, I₆₀)`,
//!   `y = 1[sin(1.5x₁) + 0.8x₂x₃ + 0.5x₄ − 0.4x₅² + 0.3 + ½ε > 0]`, `ε` standard logistic, 5,000
//!   rows: five of sixty inputs matter (the case for per-input relevance, [`bke_bank::relevance`]).

use anyhow::Context;
use bke_bank::Task;
use bke_core::{Dataset, Points};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::path::{Path, PathBuf};

/// Where a dataset comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A bundled CSV file `data/<name>.csv` and its target column.
    Csv(&'static str),
    /// Synthetic Friedman #1 regression.
    Friedman,
    /// Synthetic non-linear classification.
    Ring,
    /// Synthetic classification with 5 relevant inputs of 60.
    Sparse60,
}

/// One dataset of the tables.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    /// Name in the table.
    pub name: &'static str,
    /// Source.
    pub source: Source,
    /// Task.
    pub task: Task,
    /// Rows used (a seeded subsample of a larger file; the size of a synthetic set).
    pub rows: Option<usize>,
}

/// The bundled data directory.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../data")
}

/// Reads a numeric CSV with a header; the target column `target`, every other column an input.
pub fn read_csv(path: &Path, target: &str) -> anyhow::Result<(Vec<Vec<f64>>, Vec<f64>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().context("empty CSV")?.split(',').map(str::trim).collect();
    let t = header.iter().position(|h| *h == target).with_context(|| format!("no column {target}"))?;
    let (mut xs, mut y) = (Vec::new(), Vec::new());
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Vec<f64> = line
            .split(',')
            .map(|c| c.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("{}, line {}", path.display(), i + 2))?;
        y.push(v[t]);
        xs.push(v.iter().enumerate().filter(|(j, _)| *j != t).map(|(_, v)| *v).collect());
    }
    Ok((xs, y))
}

fn friedman(n: usize, rng: &mut ChaCha8Rng) -> (Vec<Vec<f64>>, Vec<f64>) {
    let xs: Vec<Vec<f64>> = (0..n).map(|_| (0..10).map(|_| rng.random::<f64>()).collect()).collect();
    let y = xs
        .iter()
        .map(|x| {
            10.0 * (std::f64::consts::PI * x[0] * x[1]).sin()
                + 20.0 * (x[2] - 0.5).powi(2)
                + 10.0 * x[3]
                + 5.0 * x[4]
                + rng.sample::<f64, _>(StandardNormal)
        })
        .collect();
    (xs, y)
}

fn sparse60(n: usize, rng: &mut ChaCha8Rng) -> (Vec<Vec<f64>>, Vec<f64>) {
    let xs: Vec<Vec<f64>> =
        (0..n).map(|_| (0..60).map(|_| rng.sample::<f64, _>(StandardNormal)).collect()).collect();
    let y = xs
        .iter()
        .map(|x| {
            let u: f64 = rng.random::<f64>().clamp(1e-12, 1.0 - 1e-12);
            let f = (1.5 * x[0]).sin() + 0.8 * x[1] * x[2] + 0.5 * x[3] - 0.4 * x[4] * x[4] + 0.3;
            f64::from(u8::from(f + 0.5 * (u / (1.0 - u)).ln() > 0.0))
        })
        .collect();
    (xs, y)
}

fn ring(n: usize, rng: &mut ChaCha8Rng) -> (Vec<Vec<f64>>, Vec<f64>) {
    let xs: Vec<Vec<f64>> =
        (0..n).map(|_| (0..8).map(|_| rng.sample::<f64, _>(StandardNormal)).collect()).collect();
    let y = xs
        .iter()
        .map(|x| {
            let s = (2.0 * x[0]).sin() + x[1] * x[2] + 0.5 * x[3] * x[3] - 0.5
                + 0.5 * rng.sample::<f64, _>(StandardNormal);
            f64::from(u8::from(s > 0.0))
        })
        .collect();
    (xs, y)
}

impl Spec {
    /// Loads the dataset (`rows` overrides the spec's row count).
    pub fn load(&self, rows: Option<usize>) -> anyhow::Result<Dataset> {
        let rows = rows.or(self.rows);
        let mut rng = ChaCha8Rng::seed_from_u64(2016);
        let (mut xs, mut y) = match self.source {
            Source::Csv(target) => read_csv(&data_dir().join(format!("{}.csv", self.name)), target)?,
            Source::Friedman => friedman(rows.unwrap_or(100_000), &mut rng),
            Source::Ring => ring(rows.unwrap_or(100_000), &mut rng),
            Source::Sparse60 => sparse60(rows.unwrap_or(5000), &mut rng),
        };
        if let Some(k) = rows.filter(|&k| k < y.len()) {
            let mut idx: Vec<usize> = (0..y.len()).collect();
            idx.shuffle(&mut rng);
            idx.truncate(k);
            xs = idx.iter().map(|&i| xs[i].clone()).collect();
            y = idx.iter().map(|&i| y[i]).collect();
        }
        Ok(Dataset::new(Points::from_rows(self.name, &xs)?, y)?)
    }
}

/// The regression sets of Table 1: the bundled ones and the synthetic large-`N` row.
pub const REGRESSION: &[Spec] = &[
    Spec {
        name: "concrete",
        source: Source::Csv("compressive_strength"),
        task: Task::Regression,
        rows: None,
    },
    Spec { name: "diabetes", source: Source::Csv("progression"), task: Task::Regression, rows: None },
    Spec { name: "ozone", source: Source::Csv("O3"), task: Task::Regression, rows: None },
    Spec { name: "abalone", source: Source::Csv("rings"), task: Task::Regression, rows: None },
    Spec { name: "bikeshare", source: Source::Csv("bikers"), task: Task::Regression, rows: None },
    Spec { name: "friedman", source: Source::Friedman, task: Task::Regression, rows: Some(100_000) },
];

/// The classification sets of Table 2.
pub const CLASSIFICATION: &[Spec] = &[
    Spec { name: "pima", source: Source::Csv("class"), task: Task::Classification, rows: None },
    Spec { name: "breast_cancer", source: Source::Csv("malignant"), task: Task::Classification, rows: None },
    Spec { name: "banana", source: Source::Csv("class"), task: Task::Classification, rows: None },
    Spec { name: "magic", source: Source::Csv("class"), task: Task::Classification, rows: None },
    Spec { name: "ring", source: Source::Ring, task: Task::Classification, rows: Some(100_000) },
];

/// The simulation with 5 relevant inputs of 60 (not in the tables' default list).
pub const SPARSE60: Spec =
    Spec { name: "sparse60", source: Source::Sparse60, task: Task::Classification, rows: Some(5000) };

/// A dataset by name.
pub fn find(name: &str) -> Option<Spec> {
    REGRESSION.iter().chain(CLASSIFICATION).chain([&SPARSE60]).find(|s| s.name == name).copied()
}

/// The datasets of `names` (a `--datasets` list), in order; an unknown name is an error naming it.
pub fn named<'a>(names: impl IntoIterator<Item = &'a str>) -> anyhow::Result<Vec<Spec>> {
    names.into_iter().map(|d| find(d).ok_or_else(|| anyhow::anyhow!("unknown dataset '{d}'"))).collect()
}
