//! `cargo xtask bench bank`: one BaNK regression sweep (seed 001 Fig. 4) against `N` and `M`, per
//! backend, beside the refactorising reference sweep (the classification sweep's rows are
//! [`crate::bank_classification`]).
//!
//! Flop count of one low-rank sweep with block size `P` (leading terms): the bulk Gram rows
//! `ΦᵀΦ_new` cost `2·N·2M·2M = 8NM²`, the in-block products `Φ_newᵀΦ_new` `8NMP`, `Φ_newᵀy` `4NM`,
//! the per-proposal five-column triangular solves `5·(2M)²·M = 20M³`; the features need `NMd`
//! multiply-adds and `NM` sine-cosine pairs (not counted). The refactorising reference costs per
//! proposal `2N(2M)² + (2M)³/3 + …`, i.e. `O(NM³)` a sweep: it is timed on a few proposals and
//! scaled by `M / count` (the table says how many).

use crate::timing::{median, median_seconds, median_sweep, process_cpu_seconds};
use bke_bank::evidence::NigParams;
use bke_bank::regression::RegressionState;
use bke_linalg::{Backend, BackendKind, Mat, Trans, with_backend};
use bke_report::table::{Table, fmt_seconds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::time::Instant;

/// Input dimension of the synthetic problem.
pub const DIM: usize = 8;
/// Block size of the bulk Gram products.
pub const BLOCK: usize = 64;

/// Nominal flops of one low-rank sweep (module docs).
pub fn sweep_flops(n: usize, m: usize, block: usize) -> f64 {
    let (n, m, p) = (n as f64, m as f64, block.min(m) as f64);
    8.0 * n * m * m + 8.0 * n * m * p + 4.0 * n * m + 20.0 * m * m * m
}

/// Nominal flops of one refactorising proposal.
pub fn refactor_flops(n: usize, m: usize) -> f64 {
    let (n, f) = (n as f64, 2.0 * m as f64);
    2.0 * n * f * f + f * f * f / 3.0 + 4.0 * n * f
}

/// The synthetic problem: `x ~ N(0, I_8)`, `y = sin(x₀) + x₁ x₂/2 + noise`, `W ~ N(0, I)`, proposals
/// `N(0, I)`, thresholds from uniforms.
pub struct Problem {
    x: Mat,
    y: Vec<f64>,
    w: Vec<f64>,
    props: Vec<f64>,
    log_u: Vec<f64>,
}

impl Problem {
    /// A problem of `n` points and `m` frequencies from `seed`.
    pub fn new(n: usize, m: usize, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let x = Mat::from_fn(n, DIM, |_, _| rng.sample::<f64, _>(StandardNormal));
        let y = (0..n)
            .map(|i| {
                x[(i, 0)].sin() + 0.5 * x[(i, 1)] * x[(i, 2)] + 0.1 * rng.sample::<f64, _>(StandardNormal)
            })
            .collect();
        let w = (0..m * DIM).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
        let props = (0..m * DIM).map(|_| rng.sample::<f64, _>(StandardNormal)).collect();
        let log_u = (0..m).map(|_| rng.random::<f64>().ln()).collect();
        Self { x, y, w, props, log_u }
    }
}

/// One measured configuration.
#[derive(Debug, Clone)]
pub struct Row {
    /// Backend name.
    pub backend: &'static str,
    /// Data points.
    pub n: usize,
    /// Frequencies.
    pub m: usize,
    /// Median seconds of one low-rank sweep.
    pub sweep: f64,
    /// Seconds of one refactorising sweep (extrapolated from `ref_count` proposals), if measured.
    pub refactor: Option<f64>,
    /// Proposals of the reference that were timed.
    pub ref_count: usize,
    /// Accepted proposals in the timed sweep.
    pub accepted: usize,
    /// Relative factor drift after the sweep (vs refactorisation).
    pub drift: f64,
}

/// Times a sweep over `p` with backend `B`, and the refactorising reference within
/// `reference_budget` seconds at the DGEMM `rate` (GFLOP/s).
fn measure<B: Backend>(p: &Problem, reference_budget: f64, rate: f64) -> anyhow::Result<Measured> {
    let (n, m) = (p.x.nrows(), p.w.len() / DIM);
    let base = RegressionState::<B>::new(p.x.clone(), p.y.clone(), p.w.clone(), NigParams::default())?;
    let reps = if n * m >= 4_000_000 { 1 } else { 3 };
    let mut accepted = 0;
    let (t, sweep_cpu, mut last) =
        median_sweep(&base, reps, |st| accepted = st.sweep(&p.props, &p.log_u, BLOCK).expect("sweep"));
    let drift = last.refactorise()?.0;
    drop(last);
    // reference: as many proposals as fit the time budget (at least 1, at most 4)
    let per = refactor_flops(n, m) / (rate * 1e9);
    let count = ((reference_budget / per) as usize).clamp(1, 4.min(m));
    let reference = if per <= 5.0 * reference_budget {
        let mut st = base.clone();
        let t0 = Instant::now();
        st.sweep_refactorising_first(&p.props, &p.log_u, count)?;
        Some((t0.elapsed().as_secs_f64() * m as f64 / count as f64, count))
    } else {
        None
    };
    Ok(Measured { sweep: t, sweep_cpu, reference, accepted, drift })
}

/// What [`measure`] measured.
struct Measured {
    /// Median wall seconds of a sweep.
    sweep: f64,
    /// Median CPU seconds of a sweep (all threads), where the platform reports CPU time.
    sweep_cpu: Option<f64>,
    /// Seconds of a refactorising sweep and the proposals it was extrapolated from.
    reference: Option<(f64, usize)>,
    /// Accepted proposals.
    accepted: usize,
    /// Factor drift after the sweep.
    drift: f64,
}

/// A DGEMM rate in GFLOP per wall second and per CPU second (all threads).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rate {
    pub(crate) wall: f64,
    pub(crate) cpu: Option<f64>,
}

/// DGEMM rate (GFLOP/s) of the sweep's own product shape `(2M × N)·(N × 2P)`.
pub(crate) fn gemm_rate<B: Backend>(n: usize, m: usize) -> Rate {
    let a = Mat::from_fn(n, 2 * m, |i, j| ((i * 31 + j * 17) % 97) as f64 / 97.0);
    let b = Mat::from_fn(n, 2 * BLOCK, |i, j| ((i * 13 + j * 7) % 89) as f64 / 89.0);
    let mut c = Mat::zeros(2 * m, 2 * BLOCK);
    let mut cpu = Vec::new();
    let t = median_seconds(
        &mut c,
        3,
        0.5,
        |_| {},
        |c| {
            let c0 = process_cpu_seconds();
            B::gemm(1.0, a.as_ref(), Trans::Yes, b.as_ref(), Trans::No, 0.0, c.as_mut()).expect("gemm");
            cpu.extend(c0.zip(process_cpu_seconds()).map(|(a, b)| b - a));
            c[(0, 0)]
        },
    );
    let gflop = 2.0 * n as f64 * (2 * m) as f64 * (2 * BLOCK) as f64 / 1e9;
    Rate { wall: gflop / t, cpu: median(cpu).filter(|&c| c > 0.0).map(|c| gflop / c) }
}

/// Runs the scaling benchmark; returns the table and the measured rows. Configurations whose sweep
/// would take more than `max_sweep_seconds` at the backend's measured DGEMM rate are skipped (and
/// listed as such; the estimate uses the DGEMM rate per CPU second where the platform reports CPU
/// time, so a loaded machine does not skip more); only the `backends` given run (all compiled ones
/// when empty). The sweep's *GEMM bound* is its nominal flops ([`sweep_flops`]) at the sweep-shaped
/// DGEMM rate; the table gives the sweep's CPU time over that bound in CPU time (a ratio that the
/// machine's load does not distort). The refactorising reference is timed on as many proposals (1 to 4) as fit in
/// `reference_budget` seconds at the measured DGEMM rate and scaled to a whole sweep (skipped when a
/// single proposal would take more than 5 × `reference_budget`).
pub fn bench(
    ns: &[usize],
    ms: &[usize],
    backends: &[BackendKind],
    reference_budget: f64,
    max_sweep_seconds: f64,
) -> anyhow::Result<(Table, Vec<Row>)> {
    let threads = rayon::current_num_threads();
    let mut table = Table::new(
        &format!("BaNK regression sweep (d = {DIM}, block P = {BLOCK}, {threads} threads)"),
        &[
            "backend",
            "N",
            "M",
            "sweep",
            "GFLOP",
            "GFLOP/s",
            "sweep CPU s",
            "GEMM bound CPU s",
            "x bound",
            "refactorising sweep",
            "ratio",
            "accepted",
            "drift",
        ],
    );
    let mut rows = Vec::new();
    let kinds = if backends.is_empty() { BackendKind::available() } else { backends.to_vec() };
    for kind in kinds {
        let (n_max, m_max) = (*ns.iter().max().unwrap_or(&10000), *ms.iter().max().unwrap_or(&384));
        let Rate { wall: rate, cpu: cpu_rate } = with_backend!(kind, B => gemm_rate::<B>(n_max, m_max))?;
        let cpu_text = cpu_rate.map_or("-".into(), |r| format!("{r:.1}"));
        eprintln!("{}: sweep-shaped DGEMM rate {rate:.1} GFLOP/s wall, {cpu_text} per CPU s", kind.name());
        for &n in ns {
            for &m in ms {
                let flops = sweep_flops(n, m, BLOCK);
                let estimate = flops / (cpu_rate.unwrap_or(rate) * 1e9);
                if estimate > max_sweep_seconds {
                    eprintln!(
                        "  {:<9} N={n:<7} M={m:<4} skipped (about {estimate:.0} s at its DGEMM rate)",
                        kind.name()
                    );
                    table.push(vec![
                        kind.name().into(),
                        n.to_string(),
                        m.to_string(),
                        format!("skipped (~{estimate:.0} s at {rate:.1} GFLOP/s)"),
                        format!("{:.2}", flops / 1e9),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                        "skipped".into(),
                        "-".into(),
                        "-".into(),
                        "-".into(),
                    ]);
                    continue;
                }
                let prob = Problem::new(n, m, 7);
                let Measured { sweep: t, sweep_cpu, reference, accepted, drift } =
                    with_backend!(kind, B => measure::<B>(&prob, reference_budget, rate))??;
                let bound = cpu_rate.map(|r| flops / (r * 1e9));
                let ratio = sweep_cpu.zip(bound).map(|(c, b)| c / b);
                eprintln!(
                    "  {:<9} N={n:<7} M={m:<4} sweep {} ({:.1} GFLOP/s), CPU {} = {} x GEMM bound, refactorising {}",
                    kind.name(),
                    fmt_seconds(t),
                    flops / t / 1e9,
                    sweep_cpu.map_or("-".into(), fmt_seconds),
                    ratio.map_or("-".into(), |r| format!("{r:.2}")),
                    reference.map_or("skipped".into(), |(r, c)| format!(
                        "{} (from {c} proposals)",
                        fmt_seconds(r)
                    ))
                );
                table.push(vec![
                    kind.name().into(),
                    n.to_string(),
                    m.to_string(),
                    fmt_seconds(t),
                    format!("{:.2}", flops / 1e9),
                    format!("{:.1}", flops / t / 1e9),
                    sweep_cpu.map_or("-".into(), |c| format!("{c:.2}")),
                    bound.map_or("-".into(), |b| format!("{b:.2}")),
                    ratio.map_or("-".into(), |r| format!("{r:.2}")),
                    reference.map_or("skipped".into(), |(r, c)| format!("{} (from {c})", fmt_seconds(r))),
                    reference.map_or("-".into(), |(r, _)| format!("{:.0}x", r / t)),
                    format!("{accepted}/{m}"),
                    format!("{drift:.1e}"),
                ]);
                rows.push(Row {
                    backend: kind.name(),
                    n,
                    m,
                    sweep: t,
                    refactor: reference.map(|r| r.0),
                    ref_count: reference.map_or(0, |r| r.1),
                    accepted,
                    drift,
                });
            }
        }
        table.push(vec![
            kind.name().into(),
            "DGEMM".into(),
            "rate".into(),
            "-".into(),
            "-".into(),
            format!("{rate:.1}"),
            "-".into(),
            "-".into(),
            cpu_text.clone(),
            "(sweep-shaped product; GFLOP/s wall, then per CPU s)".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ]);
    }
    Ok((table, rows))
}

/// Writes `bank_scaling.svg`: sweep time against `M` for each `N` and backend (log-log).
pub fn plot(rows: &[Row], out: &std::path::Path) -> anyhow::Result<()> {
    use bke_report::plot::{Plot, Series};
    let mut plot = Plot::new("BaNK: one regression sweep", "M (frequencies)", "seconds");
    plot.log_x = true;
    plot.log_y = true;
    let mut keys: Vec<(&str, usize)> = rows.iter().map(|r| (r.backend, r.n)).collect();
    keys.dedup();
    for (b, n) in keys {
        let pts: Vec<(f64, f64)> =
            rows.iter().filter(|r| r.backend == b && r.n == n).map(|r| (r.m as f64, r.sweep)).collect();
        plot = plot.with(Series::line(&format!("{b} N={n}"), pts));
        let refp: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.backend == b && r.n == n)
            .filter_map(|r| r.refactor.map(|t| (r.m as f64, t)))
            .collect();
        if !refp.is_empty() {
            plot = plot.with(Series::dashed(&format!("{b} N={n} refactorising"), refp));
        }
    }
    std::fs::create_dir_all(out)?;
    plot.save(&out.join("bank_scaling.svg"))?;
    println!("wrote {}/bank_scaling.svg", out.display());
    Ok(())
}
