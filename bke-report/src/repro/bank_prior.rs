//! `cargo xtask repro bank-prior [--smoke] [--datasets a,b] [--seeds k]`: the pseudo-count `κ₀` of
//! the component means in BaNK's NIW base measure ([`bke_bank::BankPrior::kappa0`]), the default
//! `κ₀ = 10` against bke ≤ 0.3's `κ₀ = 0.1`, by 5-fold cross-validation on the bundled data sets.
//!
//! Each seed `s = 0, …, k − 1` is one 5-fold split and chain seed ([`bke_bank::cv`] with seed `s`),
//! run once per value; the table gives the mean over seeds of the cross-validated error
//! (classification) or MSE on standardised targets (regression) with its standard error, and the
//! paired difference `κ₀ = 10` minus `κ₀ = 0.1` over the seeds, with its standard error and the
//! number of seeds on which the default is lower. Every other setting is BaNK's default
//! (`M = 128`, 100 sweeps, relevance auto).
//!
//! `--smoke`: 300 rows of breast cancer and ozone, one seed, `M = 16`, 20 sweeps.

use crate::repro::Ctx;
use crate::repro::bank_data::{Spec, find};
use crate::table::Table;
use bke_bank::cv::{CvParams, Method};
use bke_bank::{BankParams, BankPrior, Task};
use bke_core::{Dataset, Params};
use bke_linalg::DefaultBackend;

/// The pseudo-counts compared: bke ≤ 0.3's, then the default.
const KAPPAS: [f64; 2] = [0.1, 10.0];

/// The data sets of a full run (magic's 19,020 rows would take as long as all of them together).
const DATASETS: &[&str] =
    &["breast_cancer", "pima", "banana", "concrete", "diabetes", "ozone", "abalone", "bikeshare"];

/// BaNK's 5-fold cross-validated score with `κ₀ = kappa0` and seed `seed`.
fn cv(data: &Dataset, task: Task, kappa0: f64, seed: u64, smoke: bool) -> anyhow::Result<f64> {
    let mut p = CvParams::new(Method::Bank, task);
    p.seed = seed;
    p.bank = BankParams { prior: BankPrior { kappa0, ..Default::default() }, ..Default::default() };
    if smoke {
        p.bank.frequencies = 16;
        p.bank.iterations = 20;
    }
    Ok(p.check()?.fit::<DefaultBackend>(data)?.mean)
}

/// Mean and standard error of `v`.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, (var / n).sqrt())
}

fn cell((mean, se): (f64, f64)) -> String {
    format!("{mean:.4} ± {se:.4}")
}

/// Runs the reproduction (the table under `out/bank-prior`; one report section).
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let smoke = ctx.smoke;
    let names: Vec<String> = match crate::repro::flag("--datasets") {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None if smoke => vec!["breast_cancer".into(), "ozone".into()],
        None => DATASETS.iter().map(|s| s.to_string()).collect(),
    };
    let specs: Vec<Spec> = names
        .iter()
        .map(|d| find(d).ok_or_else(|| anyhow::anyhow!("unknown dataset '{d}'")))
        .collect::<anyhow::Result<_>>()?;
    let seeds: u64 = match crate::repro::flag("--seeds") {
        Some(k) => k.parse().map_err(|_| anyhow::anyhow!("--seeds takes a count, got '{k}'"))?,
        None if smoke => 1,
        None => 4,
    };
    let mut t = Table::new(
        "BaNK: 5-fold CV with the component means' pseudo-count κ₀ = 0.1 (bke ≤ 0.3) and κ₀ = 10 (default)",
        &[
            "dataset",
            "N",
            "d",
            "metric",
            "κ₀ = 0.1",
            "κ₀ = 10",
            "difference (10 − 0.1)",
            "seeds lower with 10",
        ],
    );
    for spec in specs {
        let data = spec.load(smoke.then_some(300).or(spec.rows))?;
        let mut scores = [Vec::new(), Vec::new()];
        for seed in 0..seeds {
            for (v, &kappa0) in scores.iter_mut().zip(&KAPPAS) {
                v.push(cv(&data, spec.task, kappa0, seed, smoke)?);
            }
        }
        let diff: Vec<f64> = scores[1].iter().zip(&scores[0]).map(|(a, b)| a - b).collect();
        let lower = diff.iter().filter(|d| **d < 0.0).count();
        let (old, new, delta) = (mean_se(&scores[0]), mean_se(&scores[1]), mean_se(&diff));
        ctx.progress(&format!("{}: κ₀ = 0.1 {} -> κ₀ = 10 {}", spec.name, cell(old), cell(new)));
        t.push(vec![
            spec.name.to_string(),
            data.len().to_string(),
            data.x().dim().to_string(),
            if spec.task == Task::Regression { "mse" } else { "error" }.to_string(),
            cell(old),
            cell(new),
            format!("{:+.4} ± {:.4}", delta.0, delta.1),
            format!("{lower} of {seeds}"),
        ]);
    }
    t.notes.push(format!(
        "each seed is its own 5-fold split and chain; mean ± SE over {seeds} seed(s); BaNK defaults otherwise \
         (M = 128, 100 sweeps, relevance auto); mse on standardised targets"
    ));
    let dir = ctx.dir("bank-prior")?;
    t.write_files(&dir, "prior")?;
    let mut section = ctx
        .section("kappa0", "BaNK: how far the spectral components' means may move (κ₀)")
        .intro(
            "The component means of BaNK's DP mixture have the prior μ_k ~ N(0, Σ_k/κ₀). Where the likelihood \
             says little about single frequencies the means drift with their frequencies, held back only by \
             this prior (bke_bank::params). The same splits and chain seeds with κ₀ = 0.1 and with the \
             default κ₀ = 10.",
        )
        .seed("Seed 001 puts a Normal-inverse-Wishart prior on the components (§3.1) without giving its pseudo-counts.");
    section.push_table(&t);
    ctx.publish(section)
}
