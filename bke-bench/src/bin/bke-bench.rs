//! The benchmark runner behind `cargo xtask bench`: `bke-bench <suite> [--out DIR] [--sizes a,b,..]`.

use anyhow::{Context, bail};
use bke_bench::linalg::{Inputs, Op, Scratch, run};
use bke_bench::timing::{GemmReference, TimingColumns, median_seconds};
use bke_linalg::{Backend, BackendKind, with_backend};
use bke_report::table::{Table, fmt_seconds};
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let suite = args.first().map(String::as_str).unwrap_or("");
    let out = flag(&args, "--out").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("target/bench"));
    // The same run's faer GEMM: 2000 for dme (its targets are stated at n = 2000), else 2048.
    let gemm_n = match flag(&args, "--gemm-n") {
        Some(v) => v.parse().context("--gemm-n takes an integer")?,
        None if suite == "dme" => 2000,
        None => 2048,
    };
    let known = ["linalg", "tests", "dme", "bank", "bkl", "io"];
    if suite.is_empty() || args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "bke-bench <suite> [--out DIR] [--gemm-n N] [flags]; suites and their flags:\n  \
             linalg [--sizes a,b,..]\n  \
             tests [--n N] [--permutations B] [--selection-n a,b,..] [--selection-dims a,b,..] [--hsic-n a,b,..]\n  \
             dme [--sizes a,b,..] [--all] [--backends a,b]\n  \
             bank [--n a,b,..] [--m a,b,..] [--classification-n a,b,..] [--classification-m a,b,..] [--backends a,b]\n  \
             bkl [--sizes a,b,..] [--landmarks a,b,..] [--dims a,b,..]\n  \
             io [--sizes a,b,..]"
        );
        return Ok(());
    }
    if !known.contains(&suite) {
        bail!("unknown suite '{suite}'; available: {}", known.join(", "));
    }
    let gemm = GemmReference::measure(gemm_n);
    eprintln!("{}", gemm.note());
    match suite {
        "linalg" => {
            bench_linalg(&list(&args, "--sizes", &[128, 512, 1024, 2048])?, gemm)?.emit(&out, "linalg")
        }
        "tests" => {
            let n = flag(&args, "--n")
                .map(str::parse)
                .transpose()
                .context("--n takes an integer")?
                .unwrap_or(900);
            let b = flag(&args, "--permutations")
                .map(str::parse)
                .transpose()
                .context("--permutations takes an integer")?
                .unwrap_or(1000);
            bke_bench::hypothesis::bench(n, b, gemm)?.emit(&out, "tests")?;
            let ns = list(&args, "--selection-n", &[500, 2000])?;
            let dims = list(&args, "--selection-dims", &[1, 50])?;
            bke_bench::hypothesis::selection_costs(&ns, &dims, b, gemm)?.emit(&out, "tests-selection")?;
            let hsic_ns = list(&args, "--hsic-n", &[500, 2000])?;
            bke_bench::hypothesis::hsic_selection_costs(&hsic_ns, b, gemm)?.emit(&out, "tests-hsic-selection")
        }
        "dme" => {
            let sizes = list(&args, "--sizes", &[500, 1000, 2000, 4000])?;
            let all = args.iter().any(|a| a == "--all");
            bke_bench::dme::bench(&sizes, all, &backends_flag(&args)?, gemm)?.emit(&out, "dme")
        }
        "bank" => {
            let ns = list(&args, "--n", &[1000, 10000, 100000])?;
            let ms = list(&args, "--m", &[24, 48, 96, 192, 384])?;
            let (table, rows) = bke_bench::bank::bench(&ns, &ms, &backends_flag(&args)?, 3.0, 30.0)?;
            table.emit(&out, "bank")?;
            let cn = list(&args, "--classification-n", &[1000, 4000, 16000])?;
            let cm = list(&args, "--classification-m", &[64, 128])?;
            bke_bench::bank_classification::bench(&cn, &cm, &backends_flag(&args)?, 30.0)?
                .emit(&out, "bank_classification")?;
            bke_bench::bank::plot(&rows, &out)
        }
        "bkl" => {
            let ns = list(&args, "--sizes", &[1_000, 10_000, 100_000, 1_000_000])?;
            let ms = list(&args, "--landmarks", &[50, 100, 200])?;
            let dims = list(&args, "--dims", &[2, 10, 50])?;
            bke_bench::bkl::bench(&ns, &ms, &dims, gemm)?.emit(&out, "bkl")
        }
        "io" => bke_bench::io::bench(&list(&args, "--sizes", &[100_000, 1_000_000])?, gemm)?.emit(&out, "io"),
        other => unreachable!("suite '{other}' was checked against the known list"),
    }
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// The integers of `name a,b,..` (`default` without the flag).
fn list(args: &[String], name: &str, default: &[usize]) -> anyhow::Result<Vec<usize>> {
    match flag(args, name) {
        Some(s) => {
            s.split(',').map(|v| v.parse().with_context(|| format!("{name} takes integers"))).collect()
        }
        None => Ok(default.to_vec()),
    }
}

/// Times `op` on `inputs` with backend `B`.
fn time<B: Backend>(op: Op, inputs: &Inputs) -> f64 {
    let n = inputs.a.nrows();
    let mut s = Scratch::new(n);
    let min_total = if n >= 1024 { 1.0 } else { 0.3 };
    median_seconds(&mut s, 3, min_total, |s| s.prepare(op, inputs), |s| run::<B>(op, inputs, s))
}

fn bench_linalg(sizes: &[usize], gemm: GemmReference) -> anyhow::Result<Table> {
    let threads = rayon::current_num_threads();
    let mut speedups = Vec::new();
    let mut table = Table::new(
        "bke-linalg kernels",
        &["op", "n", "backend", "threads", "median", "GFLOP/s", "x fastest"],
    )
    .with_timing(gemm);
    for &n in sizes {
        let inputs = Inputs::new(n, 42);
        for op in Op::ALL {
            let mut times = Vec::new();
            for kind in BackendKind::available() {
                let t = with_backend!(kind, B => time::<B>(op, &inputs))?;
                eprintln!("  {:<13} n={n:<5} {:<9} {}", op.name(), kind.name(), fmt_seconds(t));
                times.push((kind, t));
            }
            let fastest = times.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
            if op == Op::Cholesky {
                speedups.extend(times.iter().map(|&(k, t)| (n, k, t)));
            } else if op == Op::Rank1Update {
                for (k, t) in &times {
                    if let Some(chol) = speedups.iter_mut().find(|s| s.0 == n && s.1 == *k) {
                        chol.2 /= t;
                    }
                }
            }
            for (kind, t) in times {
                let kind_threads = if kind == BackendKind::Nalgebra { 1 } else { threads };
                table.push_timed(
                    gemm,
                    vec![
                        op.name().into(),
                        n.to_string(),
                        kind.name().into(),
                        kind_threads.to_string(),
                        fmt_seconds(t),
                        format!("{:.2}", op.flops(n) / t / 1e9),
                        format!("{:.2}", t / fastest),
                    ],
                    t,
                    Some(op.flops(n)),
                );
            }
        }
    }
    table.notes.push(format!(
        "threads: faer uses the rayon pool ({threads}), OpenBLAS its own pthreads (OPENBLAS_NUM_THREADS={}), nalgebra is single-threaded",
        std::env::var("OPENBLAS_NUM_THREADS").unwrap_or_else(|_| "unset = all cores".into())
    ));
    table.notes.push("flops: cholesky n^3/3, eigen 9n^3, rank1_update 3n^2, gemm 2n^3".into());
    for (n, kind, ratio) in speedups {
        table.notes.push(format!("rank-1 update vs refactorising, n = {n}, {kind}: {ratio:.1}x faster"));
    }
    Ok(table)
}

/// The backends named by `--backends a,b` (empty: every compiled backend).
fn backends_flag(args: &[String]) -> anyhow::Result<Vec<BackendKind>> {
    match flag(args, "--backends") {
        Some(s) => {
            s.split(',').map(BackendKind::parse).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)
        }
        None => Ok(Vec::new()),
    }
}
