//! The paper reproductions behind `cargo xtask repro [name|all] [--smoke] [--json] [--out DIR]
//! [--report DIR]`: each writes its data (CSV) under `DIR/repro` and publishes its sections —
//! paragraphs, figures, tables, the rerun command — to the HTML report (default
//! `target/bke-report/index.html`). `--smoke` runs every reproduction at a reduced size (CI);
//! `--json` prints the sections' text and tables as JSON on stdout instead of the summary.

use anyhow::bail;
use bke_bench::html::{Report, Section, utc_now};
use bke_bench::repro::{Ctx, Progress};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How a registered reproduction runs.
#[derive(Clone, Copy)]
enum Runner {
    /// Publishes its own report sections.
    Report(fn(&mut Ctx) -> anyhow::Result<()>),
    /// Writes files only (the former interface): the SVG figures it writes are collected into one
    /// section.
    #[allow(dead_code)]
    Legacy(fn(&Path) -> anyhow::Result<()>),
}

/// A registered reproduction: its name, what it reproduces, and how it runs.
type Repro = (&'static str, &'static str, Runner);
use Runner::Report as R;

/// Every reproduction, in the order `all` runs them (and the report shows them). Register new ones
/// here.
const REPROS: &[Repro] = &[
    (
        "fig2d",
        "seed 000 Fig. 2D: BKE marginal pseudolikelihood vs lengthscale, grid of Gaussians",
        R(bke_bench::repro::fig2d::run),
    ),
    (
        "fig2c",
        "seed 000 Fig. 2C: MMD type-II error vs ε, median heuristic vs BKL (--reps, --permutations)",
        R(bke_bench::repro::fig2c::run),
    ),
    (
        "level",
        "type-I error of every MMD/HSIC null × kernel selection, BKL included (--reps, --permutations)",
        R(bke_bench::repro::level::run),
    ),
    (
        "witness",
        "seed 000 Fig. 3: witness N(0,1) vs Laplace with BKE posterior bands, n = 50 and 400 (θ by BKL)",
        R(bke_bench::repro::witness::run),
    ),
    (
        "fig3",
        "seed 000 Fig. 3: witness posterior with (lengthscale, tau2) integrated out by NUTS, n = 50 and 400",
        R(bke_bench::repro::fig3::run),
    ),
    (
        "bank-fig3",
        "BaNK seed 001 Fig. 3: learned spectral density and kernel",
        R(bke_bench::repro::bank_fig3::run),
    ),
    (
        "bank-cv",
        "BaNK seed 001 Tables 1-2: 5-fold CV of RKS, MKL, BaNK at M = 384",
        R(bke_bench::repro::bank_cv::run),
    ),
    (
        "dme",
        "seed 004 Fig. 3 (TTGP vs cascade/impute), Fig. 4 (inducing points), LFI exponential-gamma",
        R(bke_bench::repro::dme::run),
    ),
    (
        "density",
        "seed 003: Fig. 1 (quadratic feature map) and held-out log-likelihood vs Gaussian KDE",
        R(bke_bench::repro::density::run),
    ),
];

/// The value after `flag` in the arguments.
fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out =
        flag_value(&args, "--out").map_or_else(|| PathBuf::from("target/bench"), PathBuf::from).join("repro");
    let report = Report::new(flag_value(&args, "--report").unwrap_or_else(|| "target/bke-report".into()));
    let smoke = args.iter().any(|a| a == "--smoke");
    let json = args.iter().any(|a| a == "--json");
    let name = args.first().filter(|a| !a.starts_with("--")).map(String::as_str);
    let chosen: Vec<(usize, &Repro)> = match name {
        None => {
            println!("reproductions (cargo xtask repro <name|all> [--smoke] [--json]):");
            for (n, what, _) in REPROS {
                println!("  {n:<10} {what}");
            }
            return Ok(());
        }
        Some("all") => REPROS.iter().enumerate().collect(),
        Some(n) => match REPROS.iter().enumerate().find(|(_, r)| r.0 == n) {
            Some(r) => vec![r],
            None => bail!("unknown reproduction '{n}'; run `cargo xtask repro` for the list"),
        },
    };
    let progress = Progress::new();
    let mut summary = Vec::new();
    let mut sections: Vec<String> = Vec::new();
    for (i, (name, what, runner)) in chosen {
        progress.line(&format!("{name}: start ({what}){}", if smoke { " [smoke size]" } else { "" }));
        let mut ctx = Ctx::new(name, i as u32 + 1, out.clone(), smoke, report.clone(), progress.clone());
        let t0 = progress.elapsed();
        match runner {
            Runner::Report(f) => f(&mut ctx)?,
            Runner::Legacy(f) => legacy(&mut ctx, *f, what)?,
        }
        let dt = progress.elapsed() - t0;
        progress.line(&format!("{name}: done in {dt:.1} s ({} section(s))", ctx.published.len()));
        summary.push(format!("  {name:<10} {dt:>7.1} s  {}", ctx.published.join("; ")));
        sections.extend(ctx.published.iter().cloned());
    }
    if json {
        let published: Vec<Section> =
            report.sections()?.into_iter().filter(|s| sections.contains(&s.title)).collect();
        let items: Vec<serde_json::Value> = published
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "title": s.title, "measured": s.measured, "warnings": s.warnings,
                    "tables": s.tables, "commands": s.commands, "seconds": s.seconds, "smoke": s.smoke,
                })
            })
            .collect();
        let doc = serde_json::json!({"report": report.index(), "smoke": smoke, "sections": items});
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        println!(
            "\n{} reproduction(s) in {:.1} s{}:",
            summary.len(),
            progress.elapsed(),
            if smoke { " at the smoke size" } else { "" }
        );
        summary.iter().for_each(|l| println!("{l}"));
        println!("data: {}", out.display());
        println!("report: {}", report.index().display());
    }
    Ok(())
}

/// Runs a reproduction of the former interface and publishes the SVG files it wrote as one section.
fn legacy(ctx: &mut Ctx, f: fn(&Path) -> anyhow::Result<()>, what: &str) -> anyhow::Result<()> {
    let start = SystemTime::now();
    let dir = ctx.dir("")?;
    f(&dir)?;
    let mut section = ctx.section("main", what).intro(format!(
        "Written by a reproduction that does not publish report sections yet: its figures are collected \
         from {}, its tables and numbers are in the files there and in the console output.",
        dir.display()
    ));
    let mut svgs = Vec::new();
    collect_new_svgs(&dir, start, &mut svgs)?;
    svgs.sort();
    for p in svgs {
        let svg = std::fs::read_to_string(&p)?;
        section.figures.push(bke_bench::html::FigureBlock { svg, caption: p.display().to_string() });
    }
    section.finished = utc_now();
    ctx.publish(section)
}

fn collect_new_svgs(dir: &Path, since: SystemTime, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let path = e?.path();
        if path.is_dir() {
            collect_new_svgs(&path, since, out)?;
        } else if path.extension().is_some_and(|x| x == "svg")
            && std::fs::metadata(&path)?.modified().is_ok_and(|m| m >= since)
        {
            out.push(path);
        }
    }
    Ok(())
}
