//! `cargo xtask repro bank-relevance [--smoke] [--datasets a,b]`: the input-relevance gate of
//! BaNK's spectral prior ([`bke_bank::relevance`]) on a simulation where 5 of 60 inputs matter
//! (`sparse60`, [`crate::repro::bank_data`]) and on every bundled data set but bikeshare.
//!
//! Per fold of a 5-fold split (the folds of [`bke_bank::cv`] with seed 7), the gate's statistic on
//! that fold's training rows — the held-out squared-error gain of per-input lengthscales over one
//! shared lengthscale, in standard errors — and whether it passed [`bke_bank::relevance::GATE`];
//! then BaNK's cross-validated error (classification) or MSE on standardised targets (regression)
//! with `--relevance auto` (the default), `ard` and `off` (seed 001's isotropic prior) on the same
//! folds, with the paired test of `auto` against `off` (McNemar mid-p on the rows, or paired t on
//! the fold MSEs). These are the numbers the gate of 3 standard errors was chosen from.
//!
//! `--smoke`: 300 rows of each set, `M = 16`, 20 sweeps.

use crate::repro::Ctx;
use crate::repro::bank_data::{CLASSIFICATION, REGRESSION, SPARSE60, Spec, named};
use crate::table::Table;
use bke_bank::compare::paired_p_value;
use bke_bank::cv::{CvParams, CvResult, Method, fold_indices};
use bke_bank::features::Standardizer;
use bke_bank::relevance::{self, GATE, Relevance};
use bke_bank::{BankParams, Task};
use bke_core::{Dataset, Params};
use bke_linalg::DefaultBackend;
use std::fmt::Write as _;

/// The data sets: the simulation, then the bundled sets (bikeshare's 8,645 rows add little).
fn specs() -> Vec<Spec> {
    let bundled = REGRESSION
        .iter()
        .chain(CLASSIFICATION)
        .filter(|s| matches!(s.source, crate::repro::bank_data::Source::Csv(_)));
    std::iter::once(SPARSE60).chain(bundled.filter(|s| s.name != "bikeshare").copied()).collect()
}

/// The gate's statistic (gain / standard error) on each fold's training rows, and whether it passed.
fn gates(data: &Dataset, folds: &[Vec<usize>]) -> anyhow::Result<Vec<Option<(f64, bool)>>> {
    let n = data.len();
    folds
        .iter()
        .map(|test| {
            let mut is_test = vec![false; n];
            test.iter().for_each(|&i| is_test[i] = true);
            let train: Vec<usize> = (0..n).filter(|&i| !is_test[i]).collect();
            let part = data.select(&train);
            let xs = Standardizer::fit(part.x()).apply(part.x());
            let fit = relevance::fit::<DefaultBackend>(Relevance::Auto, &xs, part.y())?;
            Ok(fit.map(|f| (f.held_out_gain / f.held_out_gain_sd, f.used)))
        })
        .collect()
}

/// BaNK's 5-fold cross-validation under `rule`.
fn cv(data: &Dataset, task: Task, rule: Relevance, smoke: bool) -> anyhow::Result<CvResult> {
    let mut p = CvParams::new(Method::Bank, task);
    p.seed = 7;
    p.bank = BankParams { relevance: rule, ..Default::default() };
    if smoke {
        p.bank.frequencies = 16;
        p.bank.iterations = 20;
    }
    Ok(p.check()?.fit::<DefaultBackend>(data)?)
}

fn cell(r: &CvResult) -> String {
    format!("{:.4} ± {:.4}", r.mean, r.stderr)
}

/// Runs the reproduction (`gates.csv` and the table under `out/bank-relevance`; one report section).
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let smoke = ctx.smoke;
    let specs = match crate::repro::flag("--datasets") {
        Some(list) => named(list.split(','))?,
        None => specs(),
    };
    let mut t = Table::new(
        "BaNK's input-relevance gate per fold, and 5-fold BaNK with relevance auto / ard / off",
        &[
            "dataset",
            "N",
            "d",
            "metric",
            "gate (gain / SE) per fold",
            "folds with ARD",
            "auto",
            "ard",
            "off",
            "p (auto vs off)",
            "auto: 5-fold wall s",
        ],
    );
    let mut csv = String::from("dataset,fold,gain_over_se,used\n");
    for spec in specs {
        let data = spec.load(smoke.then_some(300).or(spec.rows))?;
        let folds = fold_indices(data.len(), 5, 7);
        let gates = gates(&data, &folds)?;
        for (f, g) in gates.iter().enumerate() {
            if let Some((z, used)) = g {
                writeln!(csv, "{},{f},{z},{used}", spec.name)?;
            }
        }
        let t0 = std::time::Instant::now();
        let auto = cv(&data, spec.task, Relevance::Auto, smoke)?;
        let seconds = t0.elapsed().as_secs_f64();
        let (ard, off) =
            (cv(&data, spec.task, Relevance::Ard, smoke)?, cv(&data, spec.task, Relevance::Off, smoke)?);
        let z: Vec<String> = gates.iter().map(|g| g.map_or("-".into(), |(z, _)| format!("{z:.1}"))).collect();
        let opened = gates.iter().filter(|g| g.is_some_and(|(_, used)| used)).count();
        ctx.progress(&format!(
            "{}: gates {} -> auto {} / ard {} / off {}",
            spec.name,
            z.join(" "),
            cell(&auto),
            cell(&ard),
            cell(&off)
        ));
        t.push(vec![
            spec.name.to_string(),
            data.len().to_string(),
            data.x().dim().to_string(),
            auto.metric.clone(),
            z.join(", "),
            format!("{opened} of 5"),
            cell(&auto),
            cell(&ard),
            cell(&off),
            format!("{:.2}", paired_p_value(&auto, &off)),
            format!("{seconds:.1}"),
        ]);
    }
    t.notes.push(format!(
        "gate: the per-input GP's held-out squared-error gain over the shared-lengthscale GP on each fold's training rows, \
         in standard errors; ARD is used above {GATE}; BaNK defaults otherwise (M = 128, 100 sweeps, seed 7); \
         mse on standardised targets; wall time of the default (auto) 5-fold CV as `bke bank cv` runs it (folds \
         concurrently, one per core; issue 32's bar for 5,000 × 60 is 60 s on 2 cores)"
    ));
    let dir = ctx.dir("bank-relevance")?;
    bke_core::model_file::write_atomic(dir.join("gates.csv"), &csv)?;
    t.write_files(&dir, "relevance")?;
    let mut section = ctx
        .section("gate", "BaNK: per-input relevance (ARD) for the spectral prior, and when it is used")
        .intro(
            "Before the chain, a GP on up to 1000 training rows learns one lengthscale per input; BaNK divides \
             the inputs by them only when they predict held-out rows better than one shared lengthscale by 3 \
             standard errors (bke_bank::relevance). Per fold: that statistic; then BaNK's 5-fold error with \
             the gate (auto, the default), with per-input lengthscales always (ard) and never (off, seed 001).",
        )
        .seed("Seed 001 uses an isotropic base measure Ψ₀ = ψ₀I for the frequencies; per-input relevance is bke's extension.");
    section.push_table(&t);
    ctx.publish(section)
}
