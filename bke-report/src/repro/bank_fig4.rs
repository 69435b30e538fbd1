//! `cargo xtask repro bank-fig4 [--smoke] [--part m|n] [--ms 16,32,..] [--datasets concrete,..]`: seed 001 Fig. 4 — 5-fold test error and time
//! per fit of BaNK (default parameters) against the number of frequencies `M` (panels d–f: the
//! *M-curve*, with RKS and MKL beside BaNK) and against the number of rows `N` (panels a–c, at
//! `M = 128`). Regression (MSE on standardised targets) on concrete and abalone for the M-curve and
//! on bikeshare for the N-curve; classification error on pima (M) and magic (N).
//!
//! Writes `error_vs_m.svg`, `time_vs_m.svg`, `error_vs_n.svg`, `time_vs_n.svg` and the CSV of every
//! point; `--smoke` uses 200-row subsamples, `M ∈ {8, 16}` and 10 sweeps. Times are wall seconds of
//! one fit (a fold) on whatever the machine is doing: compare them within a run.

use crate::plot::{Figure, Series};
use crate::repro::Ctx;
use crate::repro::bank_data::find;
use crate::table::Table;
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
    ctx: &Ctx,
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
    p.sequential_folds = true; // the time of one fit
    p.bank = BankParams { frequencies: m, iterations, ..Default::default() };
    p.baseline.frequencies = m;
    let t0 = std::time::Instant::now();
    let result = p.check()?.fit::<DefaultBackend>(&data)?;
    let seconds_per_fit = t0.elapsed().as_secs_f64() / result.folds.len() as f64;
    ctx.progress(&format!(
        "{dataset} {} M={m} N={}: {:.4} ± {:.4} ({seconds_per_fit:.1} s/fit)",
        method.name(),
        data.len(),
        result.mean,
        result.stderr
    ));
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

fn plot(points: &[Point], title: &str, x_label: &str, y_label: &str, by_m: bool, time: bool) -> Figure {
    let mut plot = Figure::new(title, x_label, y_label);
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

/// The figures of the curves measured so far, with their file stems.
fn figures(by_m: &[Point], by_n: &[Point]) -> Vec<(&'static str, Figure)> {
    let mut figures = Vec::new();
    if !by_m.is_empty() {
        figures.push((
            "error_vs_m",
            plot(
                by_m,
                "BaNK Fig. 4(d): test error vs M (5-fold)",
                "M (frequencies)",
                "MSE / error",
                true,
                false,
            ),
        ));
        figures.push((
            "time_vs_m",
            plot(by_m, "BaNK Fig. 4(e,f): seconds per fit vs M", "M (frequencies)", "seconds", true, true),
        ));
    }
    if !by_n.is_empty() {
        figures.push((
            "error_vs_n",
            plot(by_n, "BaNK Fig. 4(a): test error vs N (5-fold)", "N (rows)", "MSE / error", false, false),
        ));
        figures.push((
            "time_vs_n",
            plot(by_n, "BaNK Fig. 4(b,c): seconds per fit vs N", "N (rows)", "seconds", false, true),
        ));
    }
    figures
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
    for (stem, fig) in figures(by_m, by_n) {
        fig.save(&dir.join(format!("{stem}.svg")))?;
    }
    Ok(())
}

/// Runs the reproduction (CSV and SVGs under `out/bank-fig4`, rewritten after every `M` and `N`;
/// one report section).
pub fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let smoke = ctx.smoke;
    let part = args.iter().position(|a| a == "--part").and_then(|i| args.get(i + 1)).cloned();
    let dir = ctx.dir("bank-fig4")?;
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
    let (mut by_m, mut by_n) = (Vec::new(), Vec::new());
    if part.as_deref() != Some("n") {
        for &m in &ms {
            for &d in &datasets {
                let methods: &[Method] =
                    if d == "pima" { &[Method::Bank] } else { &[Method::Rks, Method::Mkl, Method::Bank] };
                for &method in methods {
                    by_m.push(cv(ctx, d, method, m, rows, iterations)?);
                }
            }
            write_outputs(&dir, &by_m, &by_n)?;
        }
    }
    if part.as_deref() != Some("m") {
        for &n in &ns {
            by_n.push(cv(ctx, "bikeshare", Method::Bank, if smoke { 16 } else { 128 }, Some(n), iterations)?);
            by_n.push(cv(ctx, "magic", Method::Bank, if smoke { 16 } else { 128 }, Some(n), iterations)?);
            write_outputs(&dir, &by_m, &by_n)?;
        }
    }
    let mut section = ctx
        .section("curves", "BaNK (seed 001 Fig. 4): error and time against M and N")
        .intro(format!(
            "5-fold test error (MSE on standardised targets; classification error dashed) and wall seconds \
             per fit of BaNK with default parameters against the number of frequencies M (RKS and MKL \
             beside it) and against the number of rows N; {iterations} sweeps. Times are wall seconds on \
             whatever the machine was doing: compare them within a run."
        ))
        .seed(
            "Fig. 4: BaNK's error falls with M and N like the baselines' or faster, and its time per fit \
             grows linearly in N and roughly linearly in M.",
        );
    for (_, fig) in &figures(&by_m, &by_n) {
        section.push_figure(fig, &fig.title)?;
    }
    let mut table = Table::new(
        "BaNK Fig. 4: every point (mean ± standard error over 5 folds)",
        &["dataset", "method", "M", "N", "metric", "value", "s/fit"],
    );
    for p in by_m.iter().chain(&by_n) {
        table.push(vec![
            p.dataset.to_string(),
            p.method.name().to_string(),
            p.m.to_string(),
            p.n.to_string(),
            p.result.metric.clone(),
            format!("{:.4} ± {:.4}", p.result.mean, p.result.stderr),
            format!("{:.1}", p.seconds_per_fit),
        ]);
    }
    section.push_table(&table);
    ctx.publish(section)
}
