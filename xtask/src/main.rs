//! `cargo xtask` — project automation in Rust, in the style of rust-analyzer's xtask.
//!
//! ```text
//! cargo xtask demo               the main job: learn kernels and run every model on the bundled data
//! cargo xtask test               the tests: cargo test --workspace, then the Python package's pytest suite
//! cargo xtask setup              install system packages the optional backends need (libopenblas-dev)
//! cargo xtask bench <suite>      run a benchmark suite (linalg, bkl, tests, bank, dme, io) for every compiled backend
//! cargo xtask repro [name|all]   run paper reproductions; without a name, list them
//! cargo xtask fuzz [--seconds N] run the cargo-fuzz targets of fuzz/ (nightly + cargo-fuzz)
//! ```
//!
//! Heavy work runs in the release-built `bke-bench` binaries; xtask only decides features and paths.
//! The OpenBLAS backend is compiled in whenever the system library is present.

mod demo;
mod fuzz;
mod python;

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("setup") => setup(),
        Some("demo") => demo::run(&root, openblas_installed()),
        Some("test") => python::test(&root, &args[1..]),
        Some("bench") => {
            if args.get(1).map(String::as_str) == Some("io") {
                build_cli()?;
            }
            run_tool("bke-bench", &args[1..], &root)
        }
        Some("repro") => run_tool("bke-repro", &args[1..], &root),
        Some("fuzz") => fuzz::run(&root, &args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n  demo               run bke on the bundled data (the main job)\n  test               cargo test --workspace, then the Python tests (wheel built into target/python-venv)\n  setup              install libopenblas-dev (for --features openblas)\n  bench <suite>      benchmark suites: linalg, bkl, tests, bank, dme, io\n  repro [name|all]   paper reproductions (no name: list them)\n  fuzz [--seconds N] fuzz targets (nightly + cargo-fuzz)"
            );
            bail!("no command given")
        }
    }
}

fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace root").to_path_buf()
}

/// Whether the system OpenBLAS (Debian's libopenblas-dev) is installed.
fn openblas_installed() -> bool {
    [
        "/usr/lib/x86_64-linux-gnu/libopenblas.so",
        "/usr/lib/aarch64-linux-gnu/libopenblas.so",
        "/usr/lib/libopenblas.so",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

/// OpenBLAS picks its kernels from the CPU model and falls back to generic SSE3 ("Prescott") on
/// virtual CPUs it does not recognise, which costs it 2–4× here; name the kernel family from the
/// instruction set instead.
fn openblas_coretype() -> Option<&'static str> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = info.lines().find(|l| l.starts_with("flags"))?;
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    if has("avx512f") && has("avx512vl") {
        Some("SkylakeX")
    } else if has("avx2") && has("fma") {
        Some("Haswell")
    } else {
        None
    }
}

fn setup() -> anyhow::Result<()> {
    if openblas_installed() {
        println!("libopenblas-dev is installed");
        return Ok(());
    }
    let status = Command::new("bash")
        .arg("scripts/install-openblas.sh")
        .status()
        .context("running scripts/install-openblas.sh")?;
    if !status.success() {
        bail!("installing libopenblas-dev failed");
    }
    Ok(())
}

/// Builds the release `bke` binary (the `io` suite runs it end to end).
fn build_cli() -> anyhow::Result<()> {
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--quiet", "--release", "-p", "bke-cli"])
        .status()
        .context("building bke-cli")?;
    if !status.success() {
        bail!("building bke-cli failed");
    }
    Ok(())
}

fn run_tool(bin: &str, args: &[String], root: &Path) -> anyhow::Result<()> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["run", "--quiet", "--release", "-p", "bke-bench", "--bin", bin]);
    if openblas_installed() {
        cmd.args(["--features", "openblas"]);
    } else {
        eprintln!(
            "note: libopenblas-dev is not installed, so the OpenBLAS backend is left out (`cargo xtask setup` installs it)"
        );
    }
    if std::env::var_os("OPENBLAS_CORETYPE").is_none() {
        if let Some(core) = openblas_coretype() {
            cmd.env("OPENBLAS_CORETYPE", core);
        }
    }
    cmd.arg("--").args(args).args(["--out", &root.join("target/bench").to_string_lossy()]);
    let status = cmd.status().with_context(|| format!("running {bin}"))?;
    if !status.success() {
        bail!("{bin} failed");
    }
    Ok(())
}
