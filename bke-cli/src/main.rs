//! `bke`: Bayesian kernel learning from the command line. CSV in (header row, numeric columns),
//! JSON out on stdout, progress on stderr, errors that name the file, line and column.

use bke_io::interrupt;
use clap::{Parser, Subcommand};

mod bank;
mod causal;
mod density;
mod dme;
mod embed;
mod exec;
mod hypothesis;
mod lfi;
mod sample;
mod table_out;

/// Bayesian kernel learning: kernel embeddings, kernel tests, BaNK, deconditional embeddings.
#[derive(Parser)]
#[command(name = "bke", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the linear-algebra backends compiled into this build.
    Backends,
    /// Bayesian Kernel Embedding: marginal pseudolikelihood, ML-II kernel learning, posterior.
    #[command(subcommand)]
    Embed(embed::EmbedCommand),
    /// Kernel hypothesis tests: `bke test mmd` (two-sample), `bke test hsic` (independence).
    #[command(subcommand)]
    Test(hypothesis::TestCommand),
    /// Deconditional mean embeddings and task-transformed GPs: loglik, fit, predict.
    Dme(dme::DmeArgs),
    /// Likelihood-free inference from simulations: DME (default) or kernel Bayes' rule posterior
    /// herded into samples, or the rejection / SMC-ABC baselines.
    Lfi(lfi::LfiArgs),
    /// BaNK (seed 001): Bayesian nonparametric kernel learning with random Fourier features.
    #[command(subcommand)]
    Bank(bank::BankCommand),
    /// Kernel student-t density estimation (seed 003): fit with cross-validated hyperparameters, eval.
    #[command(subcommand)]
    Density(density::DensityCommand),
    /// Witness function μ_P − μ_Q on a grid with BKE posterior mean and credible band.
    Witness(Box<hypothesis::WitnessArgs>),
    /// Causal discovery: the PC algorithm with kernel conditional-independence tests (seed 000 Fig. 4).
    #[command(subcommand)]
    Causal(causal::CausalCommand),
}

fn main() {
    let cli = Cli::parse();
    interrupt::install();
    let result = match cli.command {
        Command::Backends => backends(),
        Command::Embed(c) => embed::run(c),
        Command::Test(cmd) => hypothesis::run(cmd),
        Command::Dme(a) => dme::run_dme(a),
        Command::Lfi(a) => lfi::run_lfi(a),
        Command::Density(c) => density::run(c),
        Command::Bank(c) => bank::run(c),
        Command::Witness(args) => hypothesis::run_witness(*args),
        Command::Causal(c) => causal::run(c),
    };
    if let Err(e) = result {
        if interrupt::interrupted() {
            eprintln!("{}", interrupt::MESSAGE);
            std::process::exit(interrupt::EXIT_STATUS);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn backends() -> anyhow::Result<()> {
    let names: Vec<&str> = bke_linalg::BackendKind::available().iter().map(|k| k.name()).collect();
    let out = serde_json::json!({
        "available": names,
        "default": bke_linalg::BackendKind::default_kind().name(),
    });
    bke_io::emit(&out)
}
