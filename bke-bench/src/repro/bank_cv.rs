//! `cargo xtask repro bank-cv`: seed 001 Tables 1 and 2 at the seed's own setting, `M = 384`
//! frequencies (768 features), for the three methods the seed's tables and ours share: RKS, MKL and
//! BaNK on concrete, bikeshare (regression) and pima, magic (classification), 5-fold, with paired
//! tests. [`crate::repro::bank_table`] is the full table (every baseline, every bundled set, the
//! synthetic scaling rows) at bke's default `M = 128`; this is its `--frequencies 384` subset.

use crate::repro::bank_table::{Settings, run_with};
use bke_bank::cv::Method;
use std::path::Path;

/// Frequencies of every method (the seed's 768 features).
pub const M: usize = 384;

/// Runs the reproduction.
pub fn run(out: &Path) -> anyhow::Result<()> {
    let mut s = Settings::from_args()?;
    if s.rows.is_none() {
        s.frequencies = M;
    }
    if s.datasets.is_empty() {
        s.datasets = ["concrete", "bikeshare", "pima", "magic"].map(String::from).to_vec();
    }
    if s.methods.is_empty() {
        s.methods = vec![Method::Rks, Method::Mkl, Method::Bank];
    }
    run_with(out, &s, "bank-cv")
}
