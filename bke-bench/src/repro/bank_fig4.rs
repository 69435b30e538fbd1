//! `cargo xtask repro bank-fig4 [--smoke] [--part m|n] [--ms 16,32,..] [--datasets concrete,..]`: seed 001 Fig. 4 — 5-fold test error and time
//! per fit of BaNK (default parameters) against the number of frequencies `M` (panels d–f: the
//! *M-curve*, with RKS and MKL beside BaNK) and against the number of rows `N` (panels a–c, at
//! `M = 128`). Regression (MSE on standardised targets) on concrete and abalone for the M-curve and
//! on bikeshare for the N-curve; classification error on pima (M) and magic (N).
//!
//! Writes `error_vs_m.svg`, `time_vs_m.svg`, `error_vs_n.svg`, `time_vs_n.svg` and the CSV of every
//! point; `--smoke` uses 200-row subsamples, `M ∈ {8, 16}` and 10 sweeps. Times are wall seconds of
//! one fit (a fold) on whatever the machine is doing: compare them within a run.

use crate::plot::{Plot, Series};
use crate::repro::bank_data::find;
use bke_bank::cv::{CvParams, CvResult, Method};
use bke_bank::{BankParams, Task};
use bke_core::Params;
use bke_linalg::DefaultBackend;
use std::fmt::Write as _;
use std::path::Path;

struct Point {
    dataset: &'static str,
    method: Method,
    m: usize,
    n: usize,
    result: CvResult,
    seconds_per_fit: f64,
}

fn cv(
    dataset: &'static str,
    method: Method,
    m: usize,
    rows: Option<usize>,
    iterations: usize,
) -> anyhow::Result<Point> {
    let spec = find(dataset).ok_or_else(|| anyhow::anyhow!("unknown dataset {dataset}"))?;
    let data = spec.load(rows)?;
    let mut p = CvParams::new(method, spec.task);
    p.seed = 7;
    p.bank = BankParams { frequencies: m, iterations, ..Default::default() };
    p.baseline.frequencies = m;
    let t0 = std::time::Instant::now();
    let result = p.check()?.fit::<DefaultBackend>(&data)?;
    let seconds_per_fit = t0.elapsed().as_secs_f64() / result.folds.len() as f64;
    eprintln!(
        "  {dataset} {} M={m} N={}: {:.4} ± {:.4} ({seconds_per_fit:.1} s/fit)",
        method.name(),
        data.len(),
        result.mean,
        result.stderr
    );
    Ok(Point { dataset, method, m, n: data.len(), result, seconds_per_fit })
}

fn series(
    points: &[Point],
    dataset: &str,
    method: Method,
    x: impl Fn(&Point) -> f64,
    y: impl Fn(&Point) -> f64,
) -> Vec<(f64, f64)> {
    points.iter().filter(|p| p.dataset == dataset && p.method == method).map(|p| (x(p), y(p))).collect()
}

fn plot(points: &[Point], title: &str, x_label: &str, y_label: &str, by_m: bool, time: bool) -> Plot {
    let mut plot = Plot::new(title, x_label, y_label);
    plot.log_x = true;
    plot.log_y = time;
    let mut keys: Vec<(&str, Method)> = points.iter().map(|p| (p.dataset, p.method)).collect();
    keys.dedup();
    for (d, m) in keys {
        if time && m != Method::Bank {
            continue;
        }
        let pts = series(
            points,
            d,
            m,
            |p| if by_m { p.m as f64 } else { p.n as f64 },
            |p| if time { p.seconds_per_fit } else { p.result.mean },
        );
        let name = format!("{d} {}", m.name());
        let classification = points.iter().any(|p| p.dataset == d && p.result.task == Task::Classification);
        plot = plot.with(if classification { Series::dashed(&name, pts) } else { Series::line(&name, pts) });
    }
    plot
}

/// Writes the CSV of every point and the SVGs of the curves measured so far (called after every
/// `M` or `N`, so a run that is cut off keeps what it measured).
fn write_outputs(dir: &Path, by_m: &[Point], by_n: &[Point]) -> anyhow::Result<()> {
    let mut csv = String::from("dataset,method,M,N,metric,mean,stderr,seconds_per_fit\n");
    for p in by_m.iter().chain(by_n) {
        writeln!(
            csv,
            "{},{},{},{},{},{},{},{}",
            p.dataset,
            p.method.name(),
            p.m,
            p.n,
            p.result.metric,
            p.result.mean,
            p.result.stderr,
            p.seconds_per_fit
        )?;
    }
    bke_core::model_file::write_atomic(dir.join("fig4.csv"), csv)?;
    if !by_m.is_empty() {
        plot(by_m, "BaNK Fig. 4(d): test error vs M (5-fold)", "M (frequencies)", "MSE / error", true, false)
            .save(&dir.join("error_vs_m.svg"))?;
        plot(by_m, "BaNK Fig. 4(e,f): seconds per fit vs M", "M (frequencies)", "seconds", true, true)
            .save(&dir.join("time_vs_m.svg"))?;
    }
    if !by_n.is_empty() {
        plot(by_n, "BaNK Fig. 4(a): test error vs N (5-fold)", "N (rows)", "MSE / error", false, false)
            .save(&dir.join("error_vs_n.svg"))?;
        plot(by_n, "BaNK Fig. 4(b,c): seconds per fit vs N", "N (rows)", "seconds", false, true)
            .save(&dir.join("time_vs_n.svg"))?;
    }
    Ok(())
}

/// Runs the reproduction.
pub fn run(out: &Path) -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let smoke = args.iter().any(|a| a == "--smoke");
    let part = args.iter().position(|a| a == "--part").and_then(|i| args.get(i + 1)).cloned();
    let dir = out.join("bank-fig4");
    std::fs::create_dir_all(&dir)?;
    let (mut ms, iterations, rows): (Vec<usize>, usize, Option<usize>) =
        if smoke { (vec![8, 16], 10, Some(200)) } else { (vec![16, 32, 64, 128, 256, 512], 100, None) };
    if let Some(v) = args.iter().position(|a| a == "--ms").and_then(|i| args.get(i + 1)) {
        ms = v.split(',').map(str::parse).collect::<Result<_, _>>()?;
    }
    let datasets: Vec<&'static str> =
        match args.iter().position(|a| a == "--datasets").and_then(|i| args.get(i + 1)) {
            Some(v) => v.split(',').filter_map(|d| find(d).map(|s| s.name)).collect(),
            None => vec!["concrete", "abalone", "pima"],
        };
    let ns: Vec<usize> = if smoke { vec![100, 200] } else { vec![500, 1000, 2000, 4000, 8645] };
    let mut by_m = Vec::new();
    let mut by_n = Vec::new();
    if part.as_deref() != Some("n") {
        for &m in &ms {
            for &d in &datasets {
                let methods: &[Method] =
                    if d == "pima" { &[Method::Bank] } else { &[Method::Rks, Method::Mkl, Method::Bank] };
                for &method in methods {
                    by_m.push(cv(d, method, m, rows, iterations)?);
                }
            }
            write_outputs(&dir, &by_m, &by_n)?;
        }
    }
    if part.as_deref() != Some("m") {
        for &n in &ns {
            by_n.push(cv("bikeshare", Method::Bank, if smoke { 16 } else { 128 }, Some(n), iterations)?);
            by_n.push(cv("magic", Method::Bank, if smoke { 16 } else { 128 }, Some(n), iterations)?);
            write_outputs(&dir, &by_m, &by_n)?;
        }
    }
    println!("bank-fig4: wrote {}", dir.display());
    for p in by_m.iter().chain(&by_n) {
        println!(
            "  {:<10} {:<5} M={:<4} N={:<6} {} {:.4} ± {:.4}  {:.1} s/fit",
            p.dataset,
            p.method.name(),
            p.m,
            p.n,
            p.result.metric,
            p.result.mean,
            p.result.stderr,
            p.seconds_per_fit
        );
    }
    Ok(())
}
