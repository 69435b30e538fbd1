//! `cargo xtask bench tests`: the permutation null of the kernel tests.
//!
//! The headline workload is issue #4's target: an MMD permutation null with `N = 1800` pooled points
//! (900 + 900, 2-D) and `B = 1000` permutations, on the rayon pool (2 threads on the project
//! machine). It compares
//! - **batched**: the Gram matrix once, then one GEMM `K·U` for all relabellings
//!   (`MmdPermutation::null`), per backend;
//! - **naive, Gram reused**: the same relabellings, block sums recomputed per permutation from `K`
//!   (`MmdPermutation::null_naive`, `O(N²)` each, parallel over permutations);
//! - **naive, from scratch**: every permutation recomputes the statistic from kernel evaluations
//!   (`mmd_statistic` on the relabelled points, what a direct implementation does); timed on a few
//!   permutations and scaled to `B`.
//!
//! and, for scale, the HSIC permutation null (`n = 900`, `B = 1000`); then the CPU seconds of a whole
//! MMD test (`--selection-n`, `--selection-dims`) and HSIC test (`--hsic-n`) under every selection
//! rule, against the median heuristic's.

use crate::timing::{GemmReference, TimingColumns, median_seconds};
use anyhow::Context;
use bke_core::hypothesis::kernels::Distances;
use bke_core::hypothesis::mmd::{MmdStatistic, mmd_statistic};
use bke_core::hypothesis::{
    HsicParams, LengthscaleSelection, MmdParams, MmdPermutation, SelectRule, WeightedKernel,
};
use bke_core::{Params, Points, TwoSamples};
use bke_linalg::{Backend, BackendKind, with_backend};
use bke_report::table::{Table, fmt_seconds};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use std::time::Instant;

/// `n` standard-normal points in `dim` dimensions, shifted by `shift` in the first coordinate.
pub fn normal_points(seed: u64, n: usize, dim: usize, shift: f64) -> Points {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let data = (0..n * dim)
        .map(|i| rng.sample::<f64, _>(StandardNormal) + if i % dim == 0 { shift } else { 0.0 })
        .collect();
    Points::new("benchmark sample", data, dim).expect("finite")
}

/// Times `draws` relabellings of the batched MMD permutation null with backend `B`.
fn time_batched<B: Backend>(perm: &MmdPermutation<'_>, draws: usize) -> f64 {
    median_seconds(
        &mut (),
        3,
        1.0,
        |_| {},
        |_| perm.null::<B>(MmdStatistic::Unbiased, draws, 1).expect("valid")[0],
    )
}

/// One MMDAgg test end to end (collection from the pooled sample, `B₁ + B₂` relabellings for
/// every kernel, the level bisection): `N = 1000` (500 + 500, 2-D, mean shift 0.3), `B = 2000`,
/// Gaussian and Laplace families with 10 bandwidths each — issue 15's target is under 1 s on 2 cores.
fn aggregated_test() -> anyhow::Result<f64> {
    let data = TwoSamples { x: normal_points(6, 500, 2, 0.0), y: normal_points(7, 500, 2, 0.3) };
    let params = MmdParams {
        permutations: 2000,
        selection: LengthscaleSelection::new(SelectRule::Mmdagg),
        ..MmdParams::default()
    }
    .check()?;
    Ok(median_seconds(
        &mut (),
        1,
        0.5,
        |_| {},
        |_| {
            let fitted = params.fit::<bke_linalg::DefaultBackend>(&data).expect("valid");
            fitted.test::<bke_linalg::DefaultBackend>().expect("valid").outcome.p_value
        },
    ))
}

/// Runs the suite and returns its table.
pub fn bench(n_per_sample: usize, draws: usize, gemm: GemmReference) -> anyhow::Result<Table> {
    let threads = rayon::current_num_threads();
    let x = normal_points(1, n_per_sample, 2, 0.0);
    let y = normal_points(2, n_per_sample, 2, 0.0);
    let pooled = x.concat(&y)?;
    let big_n = pooled.len();
    let kernel = WeightedKernel::gaussian(1.0);
    let mut table = Table::new(
        "kernel tests: permutation null",
        &["workload", "N", "B", "backend", "threads", "median", "x batched"],
    )
    .with_timing(gemm);

    let t_gram = median_seconds(&mut (), 3, 0.5, |_| {}, |_| Distances::new(&pooled).gram(&kernel)[(0, 0)]);
    let gram = Distances::new(&pooled).gram(&kernel);
    let perm = MmdPermutation::new(&gram, n_per_sample)?;

    // correctness guard: the batched (single-precision) and naive nulls agree on the same draws
    let fast = perm.null::<bke_linalg::DefaultBackend>(MmdStatistic::Unbiased, 50, 1)?;
    let slow = perm.null_naive(MmdStatistic::Unbiased, 50, 1)?;
    let scale = slow.iter().map(|v| v.abs()).sum::<f64>() / slow.len() as f64;
    let max_diff = fast.iter().zip(&slow).map(|(a, b)| (a - b).abs() / scale).fold(0.0, f64::max);
    anyhow::ensure!(max_diff < 1e-5, "batched and naive nulls differ by {max_diff} of their scale");

    let mut batched = Vec::new();
    for kind in BackendKind::available() {
        let t = with_backend!(kind, B => time_batched::<B>(&perm, draws))?;
        eprintln!("  MMD null batched      {:<9} {}", kind.name(), fmt_seconds(t));
        batched.push((kind, t));
    }
    let best = batched.iter().map(|b| b.1).fold(f64::INFINITY, f64::min);
    let t_naive = median_seconds(
        &mut (),
        1,
        0.0,
        |_| {},
        |_| perm.null_naive(MmdStatistic::Unbiased, draws, 1).expect("valid")[0],
    );
    eprintln!("  MMD null naive (Gram reused)    {}", fmt_seconds(t_naive));
    // from scratch: a few permutations, scaled to B
    let few = 5;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let start = Instant::now();
    let mut sink = 0.0;
    for _ in 0..few {
        let mut idx: Vec<usize> = (0..big_n).collect();
        for i in 0..big_n - 1 {
            let j = rng.random_range(i..big_n);
            idx.swap(i, j);
        }
        let xp = pooled.select(&idx[..n_per_sample]);
        let yp = pooled.select(&idx[n_per_sample..]);
        sink += mmd_statistic(&xp, &yp, &kernel, MmdStatistic::Unbiased)?;
    }
    std::hint::black_box(sink);
    let t_scratch = start.elapsed().as_secs_f64() / few as f64 * draws as f64;
    eprintln!("  MMD null from scratch (scaled)  {}", fmt_seconds(t_scratch));

    let null_flops = Some(2.0 * (big_n as f64).powi(2) * draws as f64);
    let row = |table: &mut Table,
               w: &str,
               n: usize,
               b: usize,
               backend: &str,
               t: f64,
               rel: f64,
               flops: Option<f64>| {
        let cells = vec![
            w.to_string(),
            n.to_string(),
            b.to_string(),
            backend.to_string(),
            threads.to_string(),
            fmt_seconds(t),
            format!("{rel:.2}"),
        ];
        table.push_timed(gemm, cells, t, flops);
    };
    row(&mut table, "MMD Gram matrix (once)", big_n, 0, "-", t_gram, t_gram / best, None);
    for (kind, t) in &batched {
        row(&mut table, "MMD null, batched GEMM", big_n, draws, kind.name(), *t, t / best, null_flops);
    }
    row(
        &mut table,
        "MMD Gram + null, batched (total)",
        big_n,
        draws,
        BackendKind::default_kind().name(),
        t_gram + batched[0].1,
        (t_gram + batched[0].1) / best,
        None,
    );
    row(
        &mut table,
        "MMD null, naive per permutation (Gram reused)",
        big_n,
        draws,
        "-",
        t_naive,
        t_naive / best,
        None,
    );
    row(
        &mut table,
        "MMD null, naive from scratch (scaled from 5 permutations)",
        big_n,
        draws,
        "-",
        t_scratch,
        t_scratch / best,
        None,
    );

    // HSIC for scale
    let hn = n_per_sample;
    let hx = normal_points(4, hn, 2, 0.0);
    let hy = normal_points(5, hn, 1, 0.0);
    let hsic = HsicParams {
        permutations: draws,
        selection: LengthscaleSelection::fixed(1.0),
        ..HsicParams::default()
    }
    .check()?
    .fit::<bke_linalg::DefaultBackend>(&TwoSamples { x: hx, y: hy })?;
    let t_hsic = median_seconds(
        &mut (),
        1,
        0.5,
        |_| {},
        |_| hsic.test::<bke_linalg::DefaultBackend>().expect("valid").outcome.p_value,
    );
    eprintln!("  HSIC null                       {}", fmt_seconds(t_hsic));
    row(&mut table, "HSIC null (permute y, symmetric pass)", hn, draws, "-", t_hsic, t_hsic / best, None);

    let t_agg = aggregated_test()?;
    eprintln!("  MMDAgg (10 kernels, N = 1000, B = 2000)  {}", fmt_seconds(t_agg));
    row(
        &mut table,
        "MMDAgg test, 2×10 kernels, B₁ = B₂ = 2000 (selection + nulls)",
        1000,
        2000,
        "-",
        t_agg,
        t_agg / best,
        None,
    );

    table.notes.push(format!(
        "threads: the rayon pool ({threads}); target for the batched MMD null at N = 1800, B = 1000: < 0.25 s on 2 cores"
    ));
    table.notes.push(format!(
        "speed-up of the batched null over naive recomputation per permutation: {:.1}x (Gram reused), {:.0}x (from scratch)",
        t_naive / best,
        t_scratch / best
    ));
    let gflop = 2.0 * (big_n as f64).powi(2) * draws as f64 / 1e9;
    table.notes.push(format!(
        "the batched null is one GEMM of 2·N²·B = {gflop:.2} GFLOP: {:.1} GFLOP/s achieved (compare the GEMM rate of `cargo xtask bench linalg` measured at the same time; on a loaded machine both drop together)",
        gflop / best
    ));
    table.notes.push("kernel: squared exponential, lengthscale 1; statistic: unbiased MMD²".into());
    Ok(table)
}

/// CPU seconds of one `bke test mmd` call (selection, statistic and permutation null) per selection
/// rule, on uniform samples of `n` points each on `[0, 1]^d` for each `d` of `dims` (y's first
/// coordinate shifted by 0.1), `B = draws`, and the ratio to the median heuristic (issue 31's target
/// for BKL-Bayes: at most 3×). CPU time, so the ratio does not move with the machine's load; in more
/// dimensions BKL's Jacobian term, `O(n m D²)` per scan point, dominates.
pub fn selection_costs(
    ns: &[usize],
    dims: &[usize],
    draws: usize,
    gemm: GemmReference,
) -> anyhow::Result<Table> {
    use bke_core::hypothesis::MedianConvention;
    let rules = [
        ("median", LengthscaleSelection::median(MedianConvention::default())),
        ("bkl", LengthscaleSelection::bkl(0)),
        ("mmdagg", LengthscaleSelection::new(SelectRule::Mmdagg)),
        ("fuse", LengthscaleSelection::new(SelectRule::Fuse)),
        ("bkl-bayes", LengthscaleSelection::new(SelectRule::BklBayes)),
    ];
    let mut table = cost_table("kernel tests: CPU s per MMD test", gemm);
    for (&d, &n) in dims.iter().flat_map(|d| ns.iter().map(move |n| (d, n))) {
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        let mut uniform = |name: &str, shift: f64| {
            let v =
                (0..n * d).map(|i| (if i % d == 0 { shift } else { 0.0 }) + rng.random::<f64>()).collect();
            Points::new(name, v, d)
        };
        let data = TwoSamples { x: uniform("x", 0.0)?, y: uniform("y", 0.1)? };
        let mut median_cpu = None;
        for (name, selection) in &rules {
            let params =
                MmdParams { permutations: draws, selection: selection.clone(), ..MmdParams::default() };
            let cpu = cpu_per_call(|| {
                let fitted = params.clone().check()?.fit::<bke_linalg::DefaultBackend>(&data)?;
                Ok(fitted.test::<bke_linalg::DefaultBackend>()?.outcome.p_value)
            })?;
            push_cost(&mut table, gemm, ("MMD", name, n, d, draws), cpu, &mut median_cpu);
        }
    }
    table.notes.push("unbiased MMD², permutation null; Nyström factors above 512 pooled points".into());
    Ok(table)
}

/// CPU seconds of one `bke test hsic` call per selection rule (median, BKL, HSICAgg, BKL-Bayes — the
/// default), on `n` pairs `y = sin(3x) + ε`, `x` uniform on `[0, 1]`, `ε ~ N(0, 0.5²)`, `B = draws`,
/// and the ratio to the median heuristic.
pub fn hsic_selection_costs(ns: &[usize], draws: usize, gemm: GemmReference) -> anyhow::Result<Table> {
    use bke_core::hypothesis::MedianConvention;
    let rules = [
        ("median", LengthscaleSelection::median(MedianConvention::default())),
        ("bkl", LengthscaleSelection::bkl(0)),
        ("hsicagg", LengthscaleSelection::new(SelectRule::Hsicagg)),
        ("bkl-bayes", LengthscaleSelection::new(SelectRule::BklBayes)),
    ];
    let mut table = cost_table("kernel tests: CPU s per HSIC test", gemm);
    for &n in ns {
        let mut rng = ChaCha8Rng::seed_from_u64(n as u64);
        let x: Vec<f64> = (0..n).map(|_| rng.random::<f64>()).collect();
        let y: Vec<f64> =
            x.iter().map(|v| (3.0 * v).sin() + 0.5 * rng.sample::<f64, _>(StandardNormal)).collect();
        let data = TwoSamples { x: Points::from_1d("x", &x)?, y: Points::from_1d("y", &y)? };
        let mut median_cpu = None;
        for (name, selection) in &rules {
            let params =
                HsicParams { permutations: draws, selection: selection.clone(), ..HsicParams::default() };
            let cpu = cpu_per_call(|| {
                let fitted = params.clone().check()?.fit::<bke_linalg::DefaultBackend>(&data)?;
                Ok(fitted.test::<bke_linalg::DefaultBackend>()?.outcome.p_value)
            })?;
            push_cost(&mut table, gemm, ("HSIC", name, n, 1, draws), cpu, &mut median_cpu);
        }
    }
    table.notes.push("biased HSIC, permutation null (HSICAgg: its own 2B draws)".into());
    Ok(table)
}

/// The table of [`selection_costs`] and [`hsic_selection_costs`].
fn cost_table(title: &str, gemm: GemmReference) -> Table {
    Table::new(title, &["selection", "n = m", "d", "B", "CPU seconds", "x median test"]).with_timing(gemm)
}

/// CPU seconds of one `run()`: the first call when it takes a second or more, else the mean of the
/// calls after it (a warm-up) until they have taken a second (three calls gave the median test at
/// n = 500 anywhere from 0.035 to 0.045 s, and with it the ratios a quarter apart).
fn cpu_per_call(run: impl Fn() -> anyhow::Result<f64>) -> anyhow::Result<f64> {
    let cpu = || crate::timing::process_cpu_seconds().context("CPU time needs /proc (Linux)");
    let start = cpu()?;
    std::hint::black_box(run()?);
    let first = cpu()? - start;
    if first >= 1.0 {
        return Ok(first);
    }
    let (start, mut reps) = (cpu()?, 0);
    while reps == 0 || cpu()? - start < 1.0 {
        std::hint::black_box(run()?);
        reps += 1;
    }
    Ok((cpu()? - start) / reps as f64)
}

/// One row of a cost table: `(test, selection, n, d, B)`, the CPU seconds and the ratio to the
/// first row of this `n` and `d` (the median heuristic, remembered in `median_cpu`).
fn push_cost(
    table: &mut Table,
    gemm: GemmReference,
    (test, name, n, d, draws): (&str, &str, usize, usize, usize),
    cpu: f64,
    median_cpu: &mut Option<f64>,
) {
    let ratio = cpu / *median_cpu.get_or_insert(cpu);
    eprintln!("  {test} test {name:<10} n = m = {n:<5} d = {d:<3} {cpu:.3} CPU s ({ratio:.1}x median)");
    let cells = [name.to_string(), n.to_string(), d.to_string(), draws.to_string(), format!("{cpu:.3}")];
    table.push_timed(gemm, [&cells[..], &[format!("{ratio:.2}")]].concat(), cpu, None);
}
