//! `cargo xtask bench bank`, classification rows: one BaNK classification sweep — the joint
//! `(W_j, β_j)` moves of seed 001 §3.3.2 for every frequency, then the joint weight move — against `N`
//! and `M`, per backend.
//!
//! **GEMM bound.** The sweep's matrix products are the joint weight move's negative Hessians
//! `Φ̃ᵀDΦ̃` (`F = 2M + 1` columns), formed as symmetric products: `N F²` flops each (the lower
//! triangle of a `2NF²` product). The sweep counts them (typically two: one at the current weights,
//! reused by chord steps to the mode, and one at the mode; [`bke_bank::logistic::weight_laplace`]);
//! the bound is their flops at the sweep-shaped DGEMM rate per CPU second.
//! Beyond the bound the sweep spends `O(NM)` per Newton step of the `M` two-weight Laplace fits (one
//! exponential per row) and `O(NMd)` plus `NM` sine–cosine pairs on the proposals' features: work
//! linear in `M`, so the ratio falls as `M` grows.

use crate::timing::median_sweep;
use bke_bank::classification::ClassificationState;
use bke_linalg::{Backend, BackendKind, Mat, with_backend};
use bke_report::table::{Table, fmt_seconds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

/// Input dimension of the synthetic problem.
pub const DIM: usize = 8;

/// The synthetic problem: `x ~ N(0, I_8)`, `y = 1[sin(x₀) + x₁x₂/2 + logistic noise > 0]`, frequencies
/// and proposals `N(0, I/16)` (the scale of the median heuristic in 8 dimensions).
fn problem(n: usize, m: usize, seed: u64) -> (Mat, Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let x = Mat::from_fn(n, DIM, |_, _| rng.sample::<f64, _>(StandardNormal));
    let y = (0..n)
        .map(|i| {
            let u: f64 = rng.random::<f64>().clamp(1e-12, 1.0 - 1e-12);
            let noise = (u / (1.0 - u)).ln();
            f64::from(u8::from(x[(i, 0)].sin() + 0.5 * x[(i, 1)] * x[(i, 2)] + noise > 0.0))
        })
        .collect();
    let w = (0..m * DIM).map(|_| 0.25 * rng.sample::<f64, _>(StandardNormal)).collect();
    let props = (0..m * DIM).map(|_| 0.25 * rng.sample::<f64, _>(StandardNormal)).collect();
    (x, y, w, props)
}

/// One timed configuration.
struct Measured {
    sweep: f64,
    sweep_cpu: Option<f64>,
    hessians: f64,
    /// Passes over `Φ` of the joint weight move's mode search.
    passes: f64,
    accepted: usize,
}

fn measure<B: Backend>(n: usize, m: usize) -> anyhow::Result<Measured> {
    let (x, y, w, props) = problem(n, m, 11);
    let mut base = ClassificationState::new(x, y, w, 1.0, 10.0, 12)?;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // start from the weights' posterior given W, as inside a chain
    base.joint_weight_move::<B, _>(&mut rng)?;
    let reps = if n * m >= 2_000_000 { 1 } else { 3 };
    let (mut counts, mut accepted) = (Vec::new(), 0);
    let (t, sweep_cpu, _) = median_sweep(&base, reps, |st| {
        let (h0, e0) = (st.stats.weight_hessians, st.stats.weight_evaluations);
        accepted = st.sweep(&props, &mut rng).expect("sweep");
        st.joint_weight_move::<B, _>(&mut rng).expect("joint weight move");
        counts.push((st.stats.weight_hessians - h0, st.stats.weight_evaluations - e0));
    });
    let mean = |f: fn(&(usize, usize)) -> usize| {
        counts.iter().map(f).sum::<usize>() as f64 / counts.len().max(1) as f64
    };
    Ok(Measured { sweep: t, sweep_cpu, hessians: mean(|c| c.0), passes: mean(|c| c.1), accepted })
}

/// Times the classification sweep for every `(N, M)` and backend (all compiled ones when
/// `backends` is empty); configurations whose products alone would take more than
/// `max_sweep_seconds` at the DGEMM rate are skipped.
pub fn bench(
    ns: &[usize],
    ms: &[usize],
    backends: &[BackendKind],
    max_sweep_seconds: f64,
) -> anyhow::Result<Table> {
    let threads = rayon::current_num_threads();
    let mut table = Table::new(
        &format!("BaNK classification sweep (d = {DIM}, {threads} threads)"),
        &[
            "backend",
            "N",
            "M",
            "sweep",
            "sweep CPU s",
            "Hessian products",
            "mode-search passes",
            "GEMM bound CPU s",
            "x bound",
            "accepted",
        ],
    );
    let kinds = if backends.is_empty() { BackendKind::available() } else { backends.to_vec() };
    for kind in kinds {
        let (n_max, m_max) = (*ns.iter().max().unwrap_or(&4000), *ms.iter().max().unwrap_or(&128));
        let rate = with_backend!(kind, B => crate::bank::gemm_rate::<B>(n_max, m_max))?;
        let per_cpu = rate.cpu.unwrap_or(rate.wall);
        for &n in ns {
            for &m in ms {
                let f = (2 * m + 1) as f64;
                let product = n as f64 * f * f;
                if 5.0 * product / (per_cpu * 1e9) > max_sweep_seconds {
                    eprintln!("  {:<9} N={n:<7} M={m:<4} classification sweep skipped", kind.name());
                    continue;
                }
                let r = with_backend!(kind, B => measure::<B>(n, m))??;
                let bound = r.hessians * product / (per_cpu * 1e9);
                let ratio = r.sweep_cpu.map(|c| c / bound);
                eprintln!(
                    "  {:<9} N={n:<7} M={m:<4} classification sweep {}, CPU {} = {} x GEMM bound ({:.1} products, {:.1} passes)",
                    kind.name(),
                    fmt_seconds(r.sweep),
                    r.sweep_cpu.map_or("-".into(), fmt_seconds),
                    ratio.map_or("-".into(), |x| format!("{x:.2}")),
                    r.hessians,
                    r.passes
                );
                table.push(vec![
                    kind.name().into(),
                    n.to_string(),
                    m.to_string(),
                    fmt_seconds(r.sweep),
                    r.sweep_cpu.map_or("-".into(), |c| format!("{c:.3}")),
                    format!("{:.1}", r.hessians),
                    format!("{:.1}", r.passes),
                    format!("{bound:.3}"),
                    ratio.map_or("-".into(), |x| format!("{x:.2}")),
                    format!("{}/{m}", r.accepted),
                ]);
            }
        }
    }
    table.notes.push(
        "GEMM bound: the joint weight move's symmetric Hessian products (N (2M+1)^2 flops each, counted) at the \
         sweep-shaped DGEMM rate per CPU second; the rest of the sweep is linear in M (bke-bench/src/bank_classification.rs)"
            .into(),
    );
    table.notes.push(
        "mode-search passes: the points the joint weight move's mode search evaluated, one pass over the N x 2M features each"
            .into(),
    );
    Ok(table)
}
