//! The paper reproductions behind `cargo xtask repro [name|all] [--smoke] [--json] [--out DIR]
//! [--report DIR] [--results FILE]`: each writes its data (CSV) under `DIR/repro`, publishes its
//! sections — paragraphs, figures, tables, the rerun command — to the HTML report (default
//! `target/bke-report/index.html`), and writes their measured part as its block of the results file
//! (default `docs/results.md`; see `bke_report::results`). `--smoke` runs every reproduction at a
//! reduced size (CI) and writes `results.md` in the report directory instead, leaving the
//! repository's file alone; `--json` prints the sections' text and tables as JSON on stdout instead
//! of the summary.

use anyhow::bail;
use bke_report::html::{Environment, Report, Section};
use bke_report::repro::{Ctx, Progress};
use bke_report::results;
use std::path::PathBuf;

/// A registered reproduction: its name, what it reproduces, and the function that runs it and
/// publishes its report sections.
type Repro = (&'static str, &'static str, fn(&mut Ctx) -> anyhow::Result<()>);

/// Every reproduction, in the order `all` runs them (and the report shows them). Register new ones
/// here.
const REPROS: &[Repro] = &[
    (
        "fig1",
        "seed 000 Fig. 1: prior draws of the embedding, the empirical embedding, the posterior against the truth",
        bke_report::repro::fig1::run,
    ),
    (
        "fig2-panels",
        "seed 000 Fig. 2A/B (blob samples at two ε) and 2E (witness of the ε = 2 blobs as a heat map)",
        bke_report::repro::fig2_panels::run,
    ),
    (
        "fig2d",
        "seed 000 Fig. 2D: BKE marginal pseudolikelihood vs lengthscale, grid of Gaussians",
        bke_report::repro::fig2d::run,
    ),
    (
        "fig2c",
        "seed 000 Fig. 2C: MMD type-II error vs ε, median heuristic vs BKL, BKL-Bayes and the seed's ML-II (--reps, --permutations)",
        bke_report::repro::fig2c::run,
    ),
    (
        "level",
        "type-I error of every MMD/HSIC null × kernel selection, BKL included (--reps, --permutations)",
        bke_report::repro::level::run,
    ),
    (
        "power",
        "MMD power of median / bkl / mmdagg / fuse / bkl-bayes (and bkl-bayes-dense) on perturbed uniform d = 1, 2, blobs, normal vs Laplace, Gaussian mixtures in D dimensions (--reps, --permutations, --dims 1|2|blobs|laplace|gmmD, --scales, --selections, --n)",
        bke_report::repro::power::run,
    ),
    (
        "witness",
        "seed 000 Fig. 3: witness N(0,1) vs Laplace with BKE posterior bands, n = 50 and 400 (θ by BKL)",
        bke_report::repro::witness::run,
    ),
    (
        "fig3",
        "seed 000 Fig. 3: witness posterior with (lengthscale, tau2) integrated out by NUTS, n = 50 and 400",
        bke_report::repro::fig3::run,
    ),
    (
        "bank-fig3",
        "BaNK seed 001 Fig. 3: learned spectral density and kernel",
        bke_report::repro::bank_fig3::run,
    ),
    (
        "bank-cv",
        "BaNK seed 001 Tables 1-2 at the seed's M = 384: RKS, MKL, BaNK, paired tests",
        bke_report::repro::bank_cv::run,
    ),
    (
        "bank-table",
        "BaNK seed 001 Tables 1-2: every baseline (RKS, MKL, AlaC/RFO, GBDT, GP-ARD or GP classification, RBF SVC) and dataset (--smoke)",
        bke_report::repro::bank_table::run,
    ),
    (
        "bank-relevance",
        "BaNK input relevance (ARD): the gate per fold and 5-fold error with relevance auto / ard / off (--smoke, --datasets)",
        bke_report::repro::bank_relevance::run,
    ),
    (
        "bank-prior",
        "BaNK's NIW pseudo-count of the component means: 5-fold error with κ₀ = 0.1 (bke ≤ 0.3) and 10 (the default) over seeds (--smoke, --datasets, --seeds)",
        bke_report::repro::bank_prior::run,
    ),
    (
        "bank-fig4",
        "BaNK seed 001 Fig. 4: error and time vs N and vs M (the M-curve on concrete and abalone; --smoke)",
        bke_report::repro::bank_fig4::run,
    ),
    (
        "dme",
        "seed 004 Fig. 3 (TTGP vs cascade/impute), Fig. 4 (inducing points), LFI exponential-gamma",
        bke_report::repro::dme::run,
    ),
    (
        "lfi-budget",
        "issue 17: LFI (DME, DME --learn, KBR(b)) error vs simulation budget against exact posteriors (--reps, --budgets)",
        bke_report::repro::lfi_budget::run,
    ),
    (
        "kbr",
        "seed 004 §7: DME vs kernel Bayes' rule posterior mean as δ → 0⁺, two priors, conjugate linear-Gaussian",
        bke_report::repro::kbr::run,
    ),
    (
        "lotka-volterra",
        "seed 004 Fig. 5 (right): Lotka-Volterra LFI, DME (learned), KBR, rejection ABC (1x, 10x), SMC-ABC vs budget (--smoke, --reps, --budgets)",
        bke_report::repro::lotka_volterra::run,
    ),
    (
        "sbc",
        "issue 33: simulation-based calibration of DME, KBR, rejection ABC, SMC-ABC (and sbi's NPE with --sbi) on conjugate Gaussians and Lotka-Volterra (--reps, --budgets, --problems)",
        bke_report::repro::sbc::run,
    ),
    (
        "fig4",
        "seed 000 Fig. 4: PC causal discovery on ozone, BKL / BKL-Bayes / HSICAgg vs median heuristic; CI-test level/power; random-DAG SHD",
        bke_report::repro::fig4::run,
    ),
    (
        "density",
        "seed 003: Fig. 1 (quadratic feature map) and held-out log-likelihood vs Gaussian KDE",
        bke_report::repro::density::run,
    ),
    (
        "fantasy",
        "seed 003 Fig. 2: fantasy data from a 2-D kernel student-t model at three α, next-draw log density as grey levels",
        bke_report::repro::fantasy::run,
    ),
];

/// The value after `flag` in the arguments.
fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned()
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("simulate") {
        // not a reproduction: the simulator that sbi's 2-round SNPE calls (`repro sbc --sbi`)
        return bke_report::repro::sbc::problem::simulate_command(&args[1..]);
    }
    let out =
        flag_value(&args, "--out").map_or_else(|| PathBuf::from("target/bench"), PathBuf::from).join("repro");
    let report = Report::new(flag_value(&args, "--report").unwrap_or_else(|| "target/bke-report".into()));
    let smoke = args.iter().any(|a| a == "--smoke");
    let json = args.iter().any(|a| a == "--json");
    // smoke runs must not touch tracked files: their results go next to the report
    let results_file = match flag_value(&args, "--results") {
        _ if smoke => report.dir().join("results.md"),
        Some(path) => PathBuf::from(path),
        None => PathBuf::from("docs/results.md"),
    };
    let name = args.first().filter(|a| !a.starts_with("--")).map(String::as_str);
    let help = args.iter().any(|a| a == "--help" || a == "-h");
    if let Some(n) = name.filter(|n| *n != "all" && !REPROS.iter().any(|r| r.0 == *n)) {
        bail!("unknown reproduction '{n}'; run `cargo xtask repro` for the list");
    }
    // without a name, or with `--help`: the list (`--help` never runs one; some take hours)
    let Some(name) = name.filter(|_| !help) else {
        println!(
            "reproductions (cargo xtask repro <name|all> [--smoke] [--json] [--out DIR] [--report DIR] \
             [--results FILE]):"
        );
        let listed = REPROS.iter().filter(|r| name.is_none_or(|n| n == "all" || n == r.0));
        listed.for_each(|(n, what, _)| println!("  {n:<10} {what}"));
        return Ok(());
    };
    let chosen: Vec<(usize, &Repro)> = match name {
        "all" => REPROS.iter().enumerate().collect(),
        n => REPROS.iter().enumerate().filter(|(_, r)| r.0 == n).collect(),
    };
    let progress = Progress::new();
    let env = Environment::read();
    let order: Vec<&str> = REPROS.iter().map(|r| r.0).collect();
    let mut summary = Vec::new();
    let mut sections: Vec<String> = Vec::new();
    for (i, (name, what, runner)) in chosen {
        progress.line(&format!("{name}: start ({what}){}", if smoke { " [smoke size]" } else { "" }));
        let mut ctx = Ctx::new(name, i as u32 + 1, out.clone(), smoke, report.clone(), progress.clone());
        ctx.command = bke_report::repro::rerun_command(name, &args[1..]);
        let t0 = progress.elapsed();
        runner(&mut ctx)?;
        let dt = progress.elapsed() - t0;
        progress.line(&format!("{name}: done in {dt:.1} s ({} section(s))", ctx.published.len()));
        let titles: Vec<&str> = ctx.published.iter().map(|s| s.title.as_str()).collect();
        summary.push(format!("  {name:<10} {dt:>7.1} s  {}", titles.join("; ")));
        sections.extend(ctx.published.iter().map(|s| s.id.clone()));
        // a run of some parts (`--parts`; power's `--dims`, its benchmarks) keeps the reproduction's
        // other stored sections; a whole run writes only its own, so sections no longer produced
        // do not linger
        let block = if args.iter().any(|a| a == "--parts" || a == "--dims") {
            let prefix = format!("repro-{name}-");
            let stored: Vec<Section> = report
                .sections()?
                .into_iter()
                .filter(|s| s.id.starts_with(&prefix) && s.smoke == smoke)
                .collect();
            results::repro_block(name, what, &stored, &env)
        } else {
            results::repro_block(name, what, &ctx.published, &env)
        };
        results::update(&results_file, block, &order)?;
    }
    if json {
        let published: Vec<Section> =
            report.sections()?.into_iter().filter(|s| sections.contains(&s.id)).collect();
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
        println!("results: {}", results_file.display());
    }
    Ok(())
}
