//! `cargo xtask repro bank-cv`: seed 001 Tables 1 and 2 at the seed's own setting, `M = 384`
//! frequencies (768 features), for the three methods the seed's tables and ours share: RKS, MKL and
//! BaNK on concrete, bikeshare (regression) and pima, magic (classification), 5-fold, with paired
//! tests. [`crate::repro::bank_table`] is the full table (every baseline, every bundled set, the
//! synthetic scaling rows) at bke's default `M = 128`; this is its `--frequencies 384` subset.

use crate::repro::Ctx;
use crate::repro::bank_table::{SEED_NUMBERS, Settings, run_with};
use bke_bank::cv::Method;

/// Frequencies of every method (the seed's 768 features).
pub const M: usize = 384;

/// Runs the reproduction (`folds.csv` and the tables under `out/bank-cv`; one report section).
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let mut s = Settings::from_args(ctx.smoke)?;
    if s.rows.is_none() {
        s.frequencies = M;
    }
    if s.datasets.is_empty() {
        s.datasets = ["concrete", "bikeshare", "pima", "magic"].map(String::from).to_vec();
    }
    if s.methods.is_empty() {
        s.methods = vec![Method::Rks, Method::Mkl, Method::Bank];
    }
    let (tables, _) = run_with(ctx, &s, "bank-cv")?;
    let mut section = ctx
        .section("tables", "BaNK (seed 001 Tables 1–2): cross-validated error of RKS, MKL and BaNK")
        .intro(format!(
            "5-fold cross-validation at M = {} frequencies ({} features) on concrete and bikeshare (MSE on \
             standardised targets) and pima and magic (classification error), {} BaNK sweeps with learned \
             hyperparameters; ± is the standard error over the 5 folds.",
            s.frequencies,
            2 * s.frequencies,
            s.iterations
        ))
        .seed(SEED_NUMBERS);
    for (_, t) in &tables {
        section.push_table(t);
    }
    ctx.publish(section)
}
