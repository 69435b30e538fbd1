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
use crate::repro::bank_data::{Spec, named};
use crate::stats::{mean_se, plus_minus};
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

/// BaNK's defaults, or `M = 16` and 20 sweeps at the smoke size.
fn base(smoke: bool) -> BankParams {
    let mut p = BankParams::default();
    if smoke {
        p.frequencies = 16;
        p.iterations = 20;
    }
    p
}

/// BaNK's 5-fold cross-validated score with `base` but `κ₀ = kappa0`, and seed `seed`.
fn cv(data: &Dataset, task: Task, base: &BankParams, kappa0: f64, seed: u64) -> anyhow::Result<f64> {
    let mut p = CvParams::new(Method::Bank, task);
    p.seed = seed;
    p.bank = BankParams { prior: BankPrior { kappa0, ..base.prior.clone() }, ..base.clone() };
    Ok(p.check()?.fit::<DefaultBackend>(data)?.mean)
}

/// Runs the reproduction (the table under `out/bank-prior`; one report section).
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let smoke = ctx.smoke;
    let base = base(smoke);
    let specs: Vec<Spec> = match crate::repro::flag("--datasets") {
        Some(list) => named(list.split(','))?,
        None if smoke => named(["breast_cancer", "ozone"])?,
        None => named(DATASETS.iter().copied())?,
    };
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
                v.push(cv(&data, spec.task, &base, kappa0, seed)?);
            }
        }
        let diff: Vec<f64> = scores[1].iter().zip(&scores[0]).map(|(a, b)| a - b).collect();
        let lower = diff.iter().filter(|d| **d < 0.0).count();
        let (old, new, delta) = (mean_se(&scores[0]), mean_se(&scores[1]), mean_se(&diff));
        let sign = if delta.0 >= 0.0 { "+" } else { "" };
        let (old, new, delta) =
            (plus_minus(old, 4), plus_minus(new, 4), format!("{sign}{}", plus_minus(delta, 4)));
        ctx.progress(&format!("{}: κ₀ = 0.1 {old} -> κ₀ = 10 {new}", spec.name));
        t.push(vec![
            spec.name.to_string(),
            data.len().to_string(),
            data.x().dim().to_string(),
            if spec.task == Task::Regression { "mse" } else { "error" }.to_string(),
            old,
            new,
            delta,
            format!("{lower} of {seeds}"),
        ]);
    }
    t.notes.push(format!(
        "each seed is its own 5-fold split and chain; mean ± SE over {seeds} seed(s); BaNK defaults otherwise \
         (M = {}, {} sweeps, relevance auto); mse on standardised targets",
        base.frequencies, base.iterations
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
