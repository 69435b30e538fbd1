//! The paper reproductions behind `cargo xtask repro [name|all] [--out DIR]`: each writes CSV + SVG
//! under the output directory and prints what it measured beside the seed's reported numbers.

use anyhow::bail;

/// A registered reproduction: its name, what it reproduces, and the function that runs it.
type Repro = (&'static str, &'static str, fn(&std::path::Path) -> anyhow::Result<()>);

/// Every reproduction, in the order `all` runs them. Later issues register theirs here.
const REPROS: &[Repro] = &[
    (
        "fig3",
        "seed 000 Fig. 3: witness posterior with (lengthscale, tau2) integrated out by NUTS, n = 50 and 400",
        bke_bench::repro::fig3::run,
    ),
    (
        "dme",
        "seed 004 Fig. 3 (TTGP vs cascade/impute), Fig. 4 (inducing points), LFI exponential-gamma",
        bke_bench::repro::dme::run,
    ),
    (
        "lfi-budget",
        "issue 17: LFI (DME, DME --learn, KBR(b)) error vs simulation budget against exact posteriors (--smoke, --reps)",
        bke_bench::repro::lfi_budget::run,
    ),
    (
        "kbr",
        "seed 004 §7: DME vs kernel Bayes' rule posterior mean as δ → 0⁺, two priors, conjugate linear-Gaussian (--smoke)",
        bke_bench::repro::kbr::run,
    ),
    (
        "lotka-volterra",
        "seed 004 Fig. 5 (right): Lotka-Volterra LFI, DME (learned), KBR, rejection ABC (1x, 10x), SMC-ABC vs budget (--smoke, --reps, --budgets)",
        bke_bench::repro::lotka_volterra::run,
    ),
    (
        "bank-fig3",
        "BaNK seed 001 Fig. 3: learned spectral density and kernel",
        bke_bench::repro::bank_fig3::run,
    ),
    (
        "bank-cv",
        "BaNK seed 001 Tables 1-2 at the seed's M = 384: RKS, MKL, BaNK, paired tests",
        bke_bench::repro::bank_cv::run,
    ),
    (
        "bank-table",
        "BaNK seed 001 Tables 1-2: every baseline (RKS, MKL, AlaC/RFO, GBDT, GP-ARD) and dataset (--smoke)",
        bke_bench::repro::bank_table::run,
    ),
    (
        "bank-fig4",
        "BaNK seed 001 Fig. 4: error and time vs N and vs M (the M-curve on concrete and abalone; --smoke)",
        bke_bench::repro::bank_fig4::run,
    ),
    (
        "fig2d",
        "seed 000 Fig. 2D: BKE marginal pseudolikelihood vs lengthscale, grid of Gaussians",
        bke_bench::repro::fig2d::run,
    ),
    (
        "density",
        "seed 003: Fig. 1 (quadratic feature map) and held-out log-likelihood vs Gaussian KDE",
        bke_bench::repro::density::run,
    ),
    (
        "fig2c",
        "seed 000 Fig. 2C: MMD type-II error vs ε, median heuristic vs BKL (--reps, --permutations)",
        bke_bench::repro::fig2c::run,
    ),
    (
        "level",
        "type-I error of every MMD/HSIC null × kernel selection, BKL included (--reps, --permutations)",
        bke_bench::repro::level::run,
    ),
    (
        "power",
        "MMD power of median / bkl / mmdagg / fuse / bkl-bayes on perturbed uniform d = 1, 2 (--smoke, --reps, --permutations, --dims)",
        bke_bench::repro::power::run,
    ),
    (
        "witness",
        "seed 000 Fig. 3: witness N(0,1) vs Laplace with BKE posterior bands, n = 50 and 400 (θ by BKL)",
        bke_bench::repro::witness::run,
    ),
];

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| "target/bench".into())
        .join("repro");
    let name = args.first().filter(|a| !a.starts_with("--")).map(String::as_str);
    if REPROS.is_empty() {
        println!("no reproductions are registered yet: nothing to run");
        return Ok(());
    }
    match name {
        None => {
            println!("reproductions (cargo xtask repro <name|all>):");
            for (n, what, _) in REPROS {
                println!("  {n:<12} {what}");
            }
            Ok(())
        }
        Some("all") => REPROS.iter().try_for_each(|(_, _, f)| f(&out)),
        Some(n) => match REPROS.iter().find(|r| r.0 == n) {
            Some((_, _, f)) => f(&out),
            None => bail!("unknown reproduction '{n}'; run `cargo xtask repro` for the list"),
        },
    }
}
