//! `cargo xtask bench dme`: TTGP log marginal likelihood + analytic gradient (seed 004 Thm 5.3) per
//! backend and size.
//!
//! Rows: `map` (dense `m × m` form, `n = m = size`), `alternative` (`O(n³ + n²m)` form, `n = m =
//! size`), `full` (Thm 5.3 (3), `n = m = size`) and `alternative, n = 128` (inducing-point regime:
//! `m = size` task points through 128 transformation points, the form's use case). The issue's
//! target is under 0.5 s at `n = 2000` on 2 cores. To bound the run time, nalgebra (single-threaded)
//! and the `alternative`/`full` rows stop at 2000/1000 unless `--all` is given.

use crate::timing::{GemmReference, TimingColumns, median_seconds};
use bke_core::{Kernel, Points};
use bke_dme::TaskData;
use bke_dme::ttgp::{MarginalForm, TtgpParams, flops, log_marginal};
use bke_linalg::{Backend, BackendKind, with_backend};
use bke_report::table::{Table, fmt_seconds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A 1-D task-transformed problem with `n` transformation and `m` task pairs.
pub fn problem(n: usize, m: usize, seed: u64) -> TaskData {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let y: Vec<f64> = (0..n).map(|_| rng.random_range(-6.0..6.0)).collect();
    let x: Vec<f64> = y.iter().map(|v| 0.2 * v * v + (1.5 * v).sin() + rng.random_range(-0.3..0.3)).collect();
    let yt: Vec<f64> = (0..m).map(|_| rng.random_range(-6.0..6.0)).collect();
    let zt: Vec<f64> = yt.iter().map(|v| (0.26 * v * v).sin() + rng.random_range(-0.3..0.3)).collect();
    TaskData::new(
        Points::from_1d("x", &x).expect("finite"),
        Points::from_1d("y", &y).expect("finite"),
        Points::from_1d("ỹ", &yt).expect("finite"),
        zt,
    )
    .expect("valid")
}

/// Times the log marginal likelihood of `data` under `hyper` with backend `B`.
fn time<B: Backend>(data: &TaskData, hyper: &TtgpParams) -> anyhow::Result<f64> {
    let size = data.m().max(data.n());
    let (reps, total) = if size >= 2000 { (1, 0.0) } else { (3, 0.5) };
    // Validate once outside the timing.
    log_marginal::<B>(data, hyper)?;
    Ok(median_seconds(
        &mut (),
        reps,
        total,
        |_| {},
        |_| log_marginal::<B>(data, hyper).map(|r| r.value).unwrap_or(f64::NAN),
    ))
}

/// Runs the suite.
/// `backends` empty: every compiled backend.
pub fn bench(
    sizes: &[usize],
    all: bool,
    backends: &[BackendKind],
    gemm: GemmReference,
) -> anyhow::Result<Table> {
    let threads = rayon::current_num_threads();
    let mut table = Table::new(
        "TTGP log marginal likelihood + gradient (seed 004 Thm 5.3)",
        &["form", "n", "m", "backend", "threads", "flops_n3", "median", "target"],
    )
    .with_timing(gemm);
    for &size in sizes {
        let mut cases = vec![("map", MarginalForm::Map, size, size)];
        if all || size <= 2000 {
            cases.push(("alternative", MarginalForm::Alternative, size, size));
        }
        if all || size <= 1000 {
            cases.push(("full", MarginalForm::Full, size, size));
        }
        cases.push(("alternative", MarginalForm::Alternative, 128, size));
        for (name, form, n, m) in cases {
            let data = problem(n, m, 7);
            let hyper =
                TtgpParams { form, ..TtgpParams::tied(Kernel::se(1.0)?, Kernel::se(1.0)?, 0.3, n, m) };
            for kind in BackendKind::available() {
                if !backends.is_empty() && !backends.contains(&kind) {
                    continue;
                }
                if kind == BackendKind::Nalgebra && size > 2000 && !all {
                    continue;
                }
                let t = with_backend!(kind, B => time::<B>(&data, &hyper))??;
                eprintln!("  {name:<12} n={n:<5} m={m:<5} {:<9} {}", kind.name(), fmt_seconds(t));
                let kind_threads = if kind == BackendKind::Nalgebra { 1 } else { threads };
                let count = flops(form, n, m);
                let x_gemm = t / gemm.seconds;
                let target = if size == 2000 && n == m && form == MarginalForm::Map {
                    format!("<= 2.5x GEMM: {}", if x_gemm <= 2.5 { "met" } else { "missed" })
                } else {
                    String::new()
                };
                table.push_timed(
                    gemm,
                    vec![
                        name.into(),
                        n.to_string(),
                        m.to_string(),
                        kind.name().into(),
                        kind_threads.to_string(),
                        format!("{:.2}", count / (n.max(m) as f64).powi(3)),
                        fmt_seconds(t),
                        target,
                    ],
                    t,
                    Some(count),
                );
            }
        }
    }
    table.notes.push(format!(
        "threads: faer and the kernel/gradient loops use the rayon pool ({threads}); nalgebra's products are single-threaded"
    ));
    table.notes.push(
        "flops_n3: the form's value + gradient flop count (bke_dme::ttgp::flops) over max(n, m)^3; \
         gflops = flops / seconds; the map form needs 5.7 n^3 for the value and 8 n^3 more for the \
         adjoints of K, L and L~ (see bke-dme's ttgp::marginal docs)"
            .into(),
    );
    table.notes.push(
        "timed: Gram matrices, factorisations, the value and the full analytic gradient (5 log-parameters); \
         median of 3 runs (1 run from 2000 on)"
            .into(),
    );
    if !all {
        table.notes.push(
            "skipped without --all: nalgebra above 2000, alternative (n = m) above 2000, full above 1000"
                .into(),
        );
    }
    Ok(table)
}
