//! The `bkl` suite: objective + gradient of the BKE marginal pseudolikelihood (bke-core
//! `embedding::marginal_pseudolikelihood`) at `n ∈ {1e3, 1e4, 1e5, 1e6}`, `m ∈ {50, 100, 200}`,
//! `D = 2` (and at `n = 1e5`, `m = 100` for the other `--dims`), for every compiled backend: median
//! wall time, CPU time, throughput, peak memory, the share of the same run's GEMM
//! ([`GemmReference`]) and the ratio to the naive per-point evaluation ([`naive_value`]).
//!
//! Peak memory is the growth of the process's peak resident set (`VmHWM`) during the timed calls,
//! after resetting it through `/proc/self/clear_refs` (Linux); the data set itself is allocated
//! before the reset and not counted.

use crate::timing::{GemmReference, TimingColumns, median_seconds};
use bke_core::embedding::{BkeParams, marginal_pseudolikelihood};
use bke_core::{Kernel, Points};
use bke_linalg::{Backend, BackendKind, Faer, Mat, with_backend};
use bke_report::table::{Table, fmt_seconds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Nominal flops per (data point, landmark) pair in dimension `D`, not counting the `exp`:
/// offsets and squared distance `3D`, embedding sums `3`, gradient sums `4D`, Jacobian Gram
/// `2·D(D+1)/2`, leverage pass `D² + 2D + 2`; in all `2D² + 10D + 5` (33 at `D = 2`).
pub fn flops_per_pair(dim: usize) -> f64 {
    let d = dim as f64;
    2.0 * d * d + 10.0 * d + 5.0
}

/// Nominal flops of one evaluation: the pairwise work plus `4m³/3 + 8m²` for the `m × m` terms.
pub fn nominal_flops(n: usize, m: usize, dim: usize) -> f64 {
    (n * m) as f64 * flops_per_pair(dim) + (m as f64).powi(3) * (1.0 / 3.0 + 1.0) + 8.0 * (m * m) as f64
}

/// `n` points and `m` landmarks: at `D = 2` from a mixture of unit Gaussians centred on the 3×3
/// grid `{0, 10, 20}²` (the suite's historical input); at other `D` from the standard normal (a
/// grid mixture would have `3^D` clusters, leaving almost every point far from every landmark).
pub fn inputs(n: usize, m: usize, dim: usize, seed: u64) -> (Points, Points) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let spacing = if dim == 2 { 10.0 } else { 0.0 };
    let mut draw = |k: usize| {
        let mut v = Vec::with_capacity(dim * k);
        for _ in 0..k * dim {
            let a: f64 = StandardNormal.sample(&mut rng);
            v.push(spacing * rng.random_range(0..3) as f64 + a);
        }
        v
    };
    let x = Points::new("bench data", draw(n), dim).expect("finite");
    let z = Points::new("bench landmarks", draw(m), dim).expect("finite");
    (x, z)
}

/// The bench's parameters in dimension `D`: `θ = 1` at `D = 2` (one grid cluster's scale), else the
/// median heuristic of the standard normal, `θ = √D`; `τ² = 1`, Lebesgue prior, with the Jacobian.
pub fn params(dim: usize) -> BkeParams {
    BkeParams::new(vec![if dim == 2 { 1.0 } else { (dim as f64).sqrt() }], 1.0)
}

/// The naive evaluation the streaming pass replaces, for the cost comparison (value only, no
/// gradient, so a lower bound on a naive code's time): per point, `k(x_i, z_l)` and `∂k/∂x` for
/// every landmark through [`Kernel::eval_grad_x`] (libm `exp`), the `m × D` Jacobian formed
/// explicitly and `½ log det(JᵀJ)` by a Cholesky factorisation; the Gaussian term's statistics
/// `Σ_i k_i` and `Σ_i ‖k_i‖²`. Returns their sum (kept only so the work is not optimised away).
pub fn naive_value(x: &Points, z: &Points, kernel: &Kernel) -> f64 {
    let (m, dim) = (z.len(), x.dim());
    let mut phi = vec![0.0; m];
    let (mut ss, mut logvol) = (0.0, 0.0);
    let mut g = vec![0.0; dim];
    let mut jac = Mat::zeros(m, dim);
    for xi in x.iter() {
        for (l, zl) in z.iter().enumerate() {
            let k = kernel.eval_grad_x(xi, zl, &mut g);
            phi[l] += k;
            ss += k * k;
            for d in 0..dim {
                jac[(l, d)] = g[d];
            }
        }
        let gram = Faer::gram(jac.as_ref());
        logvol += Faer::cholesky(gram.as_ref())
            .map_or(f64::NEG_INFINITY, |c| 0.5 * Faer::cholesky_logdet(c.as_ref()));
    }
    phi.iter().sum::<f64>() + ss + logvol
}

/// Seconds of [`naive_value`] on all `n` points, measured on the first `min(n, 5000)` and scaled
/// linearly (the naive cost is exactly linear in `n`).
fn naive_seconds(x: &Points, z: &Points, params: &BkeParams) -> anyhow::Result<f64> {
    let kernel = params.kernel()?;
    let sub = x.len().min(5000);
    let idx: Vec<usize> = (0..sub).collect();
    let xs = x.select(&idx);
    let t = median_seconds(&mut (), 1, 0.3, |_| {}, |_| naive_value(&xs, z, &kernel));
    Ok(t * x.len() as f64 / sub as f64)
}

/// Peak resident set size in KiB (`VmHWM`), if readable.
pub fn peak_rss_kib() -> Option<u64> {
    status_field("VmHWM:")
}

/// Current resident set size in KiB (`VmRSS`), if readable.
pub fn rss_kib() -> Option<u64> {
    status_field("VmRSS:")
}

fn status_field(name: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(1)?.parse().ok()
}

/// CPU seconds (user + system, all threads) used by this process so far, from `/proc/self/stat`
/// (10 ms resolution); with a loaded machine this is a steadier cost measure than wall time.
pub fn process_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
}

/// Resets `VmHWM` to the current RSS (Linux ≥ 4.0). Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    bke_core::model_file::write_atomic("/proc/self/clear_refs", "5").is_ok()
}

/// Times the marginal pseudolikelihood with backend `B`: median wall seconds, the value and the CPU
/// seconds per call.
fn time<B: Backend>(x: &Points, z: &Points, params: &BkeParams) -> (f64, f64, Option<f64>) {
    let n = x.len();
    let min_total = if n >= 1_000_000 { 0.0 } else { 0.5 };
    let mut value = 0.0;
    let mut calls = 0usize;
    let cpu0 = process_cpu_seconds();
    let t = median_seconds(
        &mut (),
        3,
        min_total,
        |_| {},
        |_| {
            let ml = marginal_pseudolikelihood::<B>(x, z, params).expect("valid inputs");
            value = ml.log_marginal;
            calls += 1;
            ml.log_marginal
        },
    );
    let cpu = cpu0.zip(process_cpu_seconds()).map(|(a, b)| (b - a) / calls as f64);
    (t, value, cpu)
}

/// The `(n, m, D)` configurations: the full `n × m` grid at `D = 2`, then `n = 1e5`, `m = 100` (or
/// the first given sizes) at each other dimension.
fn configurations(ns: &[usize], ms: &[usize], dims: &[usize]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for &dim in dims {
        if dim == 2 {
            out.extend(ns.iter().flat_map(|&n| ms.iter().map(move |&m| (n, m, 2))));
        } else {
            let n = if ns.contains(&100_000) { 100_000 } else { ns[0] };
            let m = if ms.contains(&100) { 100 } else { ms[0] };
            out.push((n, m.max(dim), dim));
        }
    }
    out
}

/// Runs the suite for the given `n`, `m` and `D` values.
pub fn bench(ns: &[usize], ms: &[usize], dims: &[usize], gemm: GemmReference) -> anyhow::Result<Table> {
    anyhow::ensure!(
        !ns.is_empty() && !ms.is_empty() && !dims.is_empty(),
        "sizes, landmarks and dims must not be empty"
    );
    let threads = rayon::current_num_threads();
    let mut table = Table::new(
        "BKE marginal pseudolikelihood + gradient (θ = 1 at D = 2, else √D; τ² = 1, Lebesgue, with Jacobian)",
        &[
            "n",
            "m",
            "D",
            "backend",
            "threads",
            "median wall",
            "cpu/call",
            "Mpairs/s",
            "peak extra MiB",
            "naive seconds",
            "x naive",
            "log_marginal",
        ],
    )
    .with_timing(gemm);
    for (n, m, dim) in configurations(ns, ms, dims) {
        let (x, z) = inputs(n, m, dim, 7);
        let params = params(dim);
        let naive = naive_seconds(&x, &z, &params)?;
        for kind in BackendKind::available() {
            let base = rss_kib().unwrap_or(0);
            let reset = reset_peak_rss();
            let (t, value, cpu) = with_backend!(kind, B => time::<B>(&x, &z, &params))?;
            let peak = peak_rss_kib().filter(|_| reset).map(|p| p.saturating_sub(base) as f64 / 1024.0);
            let pairs = (n * m) as f64;
            eprintln!("  n={n:<8} m={m:<4} D={dim:<3} {:<9} {}", kind.name(), fmt_seconds(t));
            let cells = vec![
                n.to_string(),
                m.to_string(),
                dim.to_string(),
                kind.name().into(),
                threads.to_string(),
                fmt_seconds(t),
                cpu.map_or("n/a".into(), fmt_seconds),
                format!("{:.1}", pairs / t / 1e6),
                peak.map_or("n/a".into(), |p| format!("{p:.1}")),
                format!("{naive:.6e}"),
                format!("{:.4}", t / naive),
                format!("{value:.6e}"),
            ];
            table.push_timed(gemm, cells, t, Some(nominal_flops(n, m, dim)));
        }
    }
    table.notes.push(format!("rayon threads: {threads} (set RAYON_NUM_THREADS to change)"));
    table.notes.push(
        "cpu/call: process CPU time (user + system, all threads) per call, 10 ms resolution; on a loaded machine \
         wall ≈ cpu/call ÷ threads is what an idle machine would show"
            .into(),
    );
    table.notes.push(
        "nominal flops (gflops column): 2D² + 10D + 5 per (point, landmark) pair (exp not counted) + 4m³/3 + 8m² for the m×m terms"
            .into(),
    );
    table.notes.push(
        "naive: per-point kernel and ∂k/∂x with libm exp, explicit m×D Jacobian and its Cholesky, value only (no gradient), \
         single-threaded, timed on min(n, 5000) points and scaled to n; x naive = seconds / naive seconds"
            .into(),
    );
    table.notes.push(
        "target (issue 20): n = 1e5, m = 100, D = 2 at ≤ 12 ms on 2 idle cores, i.e. x_gemm ≤ 0.05 with the GEMM at n = 2048"
            .into(),
    );
    table.notes.push(
        "peak extra MiB: growth of VmHWM over the RSS before the timed calls (data allocated before; 0.0 = below page-level noise)"
            .into(),
    );
    Ok(table)
}
