//! The `io` suite: the time from a data file to the answer. For each `n`, a 2-column CSV of the
//! `bkl` suite's inputs ([`crate::bkl::inputs`], written with Rust's shortest round-trip float
//! format, ≈ 38 bytes a row) and 100 landmarks go to a temporary directory; the release `bke`
//! binary (next to this one: `cargo build --release -p bke-cli`) runs
//! `bke embed loglik --data x.csv --landmarks z.csv --lengthscale 1 --threads T` end to end (process
//! start, CSV parse, objective + gradient, JSON out), and the same objective is timed in process on
//! the same points. `parse MB/s` is the file size over the difference (end-to-end − compute): a lower
//! bound on the reader's rate, since the difference also holds process start and output.
//!
//! Target (issue 20): end to end < 1.5 s at n = 10⁶ on 2 cores; the reader ≥ 300 MB/s on 2 cores.

use crate::bkl::{inputs, nominal_flops, params};
use crate::timing::{GemmReference, TimingColumns, median_seconds};
use anyhow::{Context, bail};
use bke_core::Points;
use bke_core::embedding::marginal_pseudolikelihood;
use bke_linalg::DefaultBackend;
use bke_report::table::{Table, fmt_seconds};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `points` as a CSV with header `x0,x1,…`.
fn write_csv(path: &Path, points: &Points) -> anyhow::Result<()> {
    let dim = points.dim();
    let mut text = (0..dim).map(|d| format!("x{d}")).collect::<Vec<_>>().join(",");
    text.push('\n');
    for p in points.iter() {
        for (d, v) in p.iter().enumerate() {
            let sep = if d + 1 == dim { '\n' } else { ',' };
            write!(text, "{v}{sep}").expect("writing to a String");
        }
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// CPU seconds (user + system) of this process's waited-for children, from `/proc/self/stat`
/// (10 ms resolution).
fn children_cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    Some((f.get(13)?.parse::<f64>().ok()? + f.get(14)?.parse::<f64>().ok()?) / 100.0)
}

/// The release `bke` binary next to the running one.
fn bke_binary() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?.with_file_name("bke");
    if !exe.exists() {
        bail!("{} not found; build it first: cargo build --release -p bke-cli", exe.display());
    }
    Ok(exe)
}

/// Median wall seconds and mean CPU seconds of `bke embed loglik` on the files.
fn end_to_end(bke: &Path, x: &Path, z: &Path, threads: usize) -> anyhow::Result<(f64, Option<f64>)> {
    let mut failure = None;
    let cpu0 = children_cpu_seconds();
    let reps = 3;
    let t = median_seconds(
        &mut (),
        reps,
        0.0,
        |_| {},
        |_| {
            let out = Command::new(bke)
                .args(["embed", "loglik", "--lengthscale", "1", "--threads", &threads.to_string()])
                .arg("--data")
                .arg(x)
                .arg("--landmarks")
                .arg(z)
                .output();
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => failure = Some(String::from_utf8_lossy(&o.stderr).into_owned()),
                Err(e) => failure = Some(e.to_string()),
            }
            0.0
        },
    );
    if let Some(f) = failure {
        bail!("bke embed loglik failed: {f}");
    }
    let cpu = cpu0.zip(children_cpu_seconds()).map(|(a, b)| (b - a) / reps as f64);
    Ok((t, cpu))
}

/// Median wall seconds and CPU seconds per call of the objective on in-memory points.
fn compute(x: &Points, z: &Points, threads: usize) -> anyhow::Result<(f64, Option<f64>)> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let p = params(2);
    let mut calls = 0usize;
    let cpu0 = crate::timing::process_cpu_seconds();
    let t = pool.install(|| {
        median_seconds(
            &mut (),
            3,
            0.3,
            |_| {},
            |_| {
                calls += 1;
                marginal_pseudolikelihood::<DefaultBackend>(x, z, &p).expect("valid inputs").log_marginal
            },
        )
    });
    let cpu = cpu0.zip(crate::timing::process_cpu_seconds()).map(|(a, b)| (b - a) / calls as f64);
    Ok((t, cpu))
}

/// Runs the suite for the given row counts (m = 100 landmarks, D = 2) with 1 thread and with all
/// of rayon's threads.
pub fn bench(ns: &[usize], gemm: GemmReference) -> anyhow::Result<Table> {
    let bke = bke_binary()?;
    let dir = std::env::temp_dir().join(format!("bke-bench-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let all = rayon::current_num_threads();
    let mut table = Table::new(
        "File to answer: bke embed loglik on a 2-column CSV (m = 100, θ = 1, τ² = 1, with Jacobian)",
        &[
            "n",
            "m",
            "threads",
            "file MB",
            "end-to-end wall",
            "end-to-end cpu",
            "compute wall",
            "compute cpu",
            "parse MB/s (≥)",
            "MB per cpu-s (≥)",
        ],
    )
    .with_timing(gemm);
    let m = 100;
    for &n in ns {
        let (x, z) = inputs(n, m, 2, 7);
        let (xp, zp) = (dir.join(format!("x{n}.csv")), dir.join("z.csv"));
        write_csv(&xp, &x)?;
        write_csv(&zp, &z)?;
        let mb = std::fs::metadata(&xp)?.len() as f64 / 1e6;
        let mut threads = vec![1, all];
        threads.dedup();
        for t in threads {
            let (e2e, e2e_cpu) = end_to_end(&bke, &xp, &zp, t)?;
            let (comp, comp_cpu) = compute(&x, &z, t)?;
            eprintln!(
                "  n={n:<8} threads={t}: end to end {}, compute {}",
                fmt_seconds(e2e),
                fmt_seconds(comp)
            );
            let cpu = |c: Option<f64>| c.map_or("n/a".into(), fmt_seconds);
            let cells = vec![
                n.to_string(),
                m.to_string(),
                t.to_string(),
                format!("{mb:.1}"),
                fmt_seconds(e2e),
                cpu(e2e_cpu),
                fmt_seconds(comp),
                cpu(comp_cpu),
                format!("{:.0}", mb / (e2e - comp).max(1e-9)),
                e2e_cpu.zip(comp_cpu).map_or("n/a".into(), |(a, b)| format!("{:.0}", mb / (a - b).max(1e-9))),
            ];
            table.push_timed(gemm, cells, e2e, Some(nominal_flops(n, m, 2)));
        }
        std::fs::remove_file(&xp)?;
    }
    std::fs::remove_dir_all(&dir)?;
    table.notes.push(format!("rayon threads available: {all}; the machine's cores are shared if others run"));
    table.notes.push(
        "seconds/x_gemm columns: the end-to-end wall time; cpu columns: user + system CPU per call (10 ms resolution \
         for the child process), steadier than wall time on a loaded machine"
            .into(),
    );
    table.notes.push(
        "target (issue 20): end to end < 1.5 s at n = 1e6 on 2 cores; reader ≥ 300 MB/s on 2 cores".into(),
    );
    Ok(table)
}
