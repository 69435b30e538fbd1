//! The `bkl` suite: objective + gradient of the BKE marginal pseudolikelihood (bke-core
//! `embedding::marginal_pseudolikelihood`) at `n ∈ {1e3, 1e4, 1e5, 1e6}`, `m ∈ {50, 100, 200}`,
//! `D = 2`, for every compiled backend: median wall time, throughput and peak memory.
//!
//! Peak memory is the growth of the process's peak resident set (`VmHWM`) during the timed calls,
//! after resetting it through `/proc/self/clear_refs` (Linux); the data set itself is allocated
//! before the reset and not counted.

use crate::report::{Table, fmt_seconds, median_seconds};
use bke_core::Points;
use bke_core::embedding::{BkeParams, marginal_pseudolikelihood};
use bke_linalg::{Backend, BackendKind, WithBackend};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

/// Nominal flops per (data point, landmark) pair at `D = 2`, not counting the `exp`:
/// offsets and squared distance `3D`, embedding sums `3`, gradient sums `4D`, Jacobian Gram
/// `2·D(D+1)/2`, leverage pass `D² + 2D + 2`.
pub const FLOPS_PER_PAIR_D2: f64 = 6.0 + 3.0 + 8.0 + 6.0 + 10.0;

/// `n` points of a 3×3 grid of unit Gaussians (spacing 10) in 2-D, and `m` landmarks from the same law.
pub fn inputs(n: usize, m: usize, seed: u64) -> (Points, Points) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draw = |k: usize| {
        let mut v = Vec::with_capacity(2 * k);
        for _ in 0..k {
            let (i, j) = (rng.random_range(0..3), rng.random_range(0..3));
            let a: f64 = StandardNormal.sample(&mut rng);
            let b: f64 = StandardNormal.sample(&mut rng);
            v.push(10.0 * i as f64 + a);
            v.push(10.0 * j as f64 + b);
        }
        v
    };
    let x = Points::new("bench data", draw(n), 2).expect("finite");
    let z = Points::new("bench landmarks", draw(m), 2).expect("finite");
    (x, z)
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

struct Time<'a> {
    x: &'a Points,
    z: &'a Points,
    params: &'a BkeParams,
}

impl WithBackend for Time<'_> {
    type Output = (f64, f64, Option<f64>);
    fn run<B: Backend>(self) -> (f64, f64, Option<f64>) {
        let n = self.x.len();
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
                let ml = marginal_pseudolikelihood::<B>(self.x, self.z, self.params).expect("valid inputs");
                value = ml.log_marginal;
                calls += 1;
                ml.log_marginal
            },
        );
        let cpu = cpu0.zip(process_cpu_seconds()).map(|(a, b)| (b - a) / calls as f64);
        (t, value, cpu)
    }
}

/// Runs the suite for the given `n` and `m` values.
pub fn bench(ns: &[usize], ms: &[usize]) -> anyhow::Result<Table> {
    let threads = rayon::current_num_threads();
    let mut table = Table::new(
        "BKE marginal pseudolikelihood + gradient (D = 2, θ = 1, τ² = 1, Lebesgue, with Jacobian)",
        &[
            "n",
            "m",
            "backend",
            "threads",
            "median wall",
            "cpu/call",
            "Mpairs/s",
            "GFLOP/s (nominal)",
            "peak extra MiB",
            "log_marginal",
        ],
    );
    let params = BkeParams::new(vec![1.0], 1.0);
    for &n in ns {
        for &m in ms {
            let (x, z) = inputs(n, m, 7);
            for kind in BackendKind::available() {
                let base = rss_kib().unwrap_or(0);
                let reset = reset_peak_rss();
                let (t, value, cpu) = kind.dispatch(Time { x: &x, z: &z, params: &params })?;
                let peak = peak_rss_kib().filter(|_| reset).map(|p| p.saturating_sub(base) as f64 / 1024.0);
                let pairs = (n * m) as f64;
                let flops =
                    pairs * FLOPS_PER_PAIR_D2 + (m as f64).powi(3) * (1.0 / 3.0 + 1.0) + 8.0 * (m * m) as f64;
                eprintln!("  n={n:<8} m={m:<4} {:<9} {}", kind.name(), fmt_seconds(t));
                table.push(vec![
                    n.to_string(),
                    m.to_string(),
                    kind.name().into(),
                    threads.to_string(),
                    fmt_seconds(t),
                    cpu.map_or("n/a".into(), fmt_seconds),
                    format!("{:.1}", pairs / t / 1e6),
                    format!("{:.2}", flops / t / 1e9),
                    peak.map_or("n/a".into(), |p| format!("{p:.1}")),
                    format!("{value:.6e}"),
                ]);
            }
        }
    }
    table.notes.push(format!("rayon threads: {threads} (set RAYON_NUM_THREADS to change)"));
    table.notes.push(
        "cpu/call: process CPU time (user + system, all threads) per call, 10 ms resolution; on a loaded machine \
         wall ≈ cpu/call ÷ threads is what an idle machine would show"
            .into(),
    );
    table.notes.push(format!(
        "nominal flops: {FLOPS_PER_PAIR_D2} per (point, landmark) pair (exp not counted) + 4m³/3 + 8m² for the m×m terms"
    ));
    table.notes.push(
        "peak extra MiB: growth of VmHWM over the RSS before the timed calls (data allocated before; 0.0 = below page-level noise)"
            .into(),
    );
    Ok(table)
}
