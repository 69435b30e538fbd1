//! `cargo xtask test`: the README's test command. Runs `cargo test --workspace`, then builds the
//! Python package's wheel (maturin, from `python/`) into the virtual environment
//! `target/python-venv` (made by `scripts/python-venv.sh` with the pinned packages of
//! `python/requirements-test.txt`) and runs its pytest suite (`python/tests`) against the installed
//! wheel, with `BKE_CLI` pointing at the `bke` binary so the tests can compare with the CLI.
//!
//! ```text
//! cargo xtask test                     everything
//! cargo xtask test --python            only the Python part (wheel + pytest)
//! cargo xtask test --release           the wheel in the release profile (default: dev, which
//!                                      reuses what cargo test compiled)
//! cargo xtask test -- -k mmd           arguments after `--` go to pytest
//! ```

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the tests (see the module docs).
pub fn test(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let (ours, pytest_args) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    for a in ours {
        if !matches!(a.as_str(), "--python" | "--release") {
            bail!("cargo xtask test: unknown option {a} (use --python, --release, or -- <pytest args>)");
        }
    }
    let flag = |f: &str| ours.iter().any(|a| a == f);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    if !flag("--python") {
        run(Command::new(&cargo).args(["test", "--workspace"]), "cargo test --workspace")?;
    }
    run(Command::new(&cargo).args(["build", "--quiet", "-p", "bke-cli"]), "building the bke binary")?;
    let python = venv(root)?;
    let wheel = build_wheel(root, &python, if flag("--release") { "release" } else { "dev" })?;
    run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
            .args(["--force-reinstall", "--no-deps", &wheel.to_string_lossy()]),
        "installing the wheel",
    )?;
    let cli = root.join("target/debug/bke");
    run(
        Command::new(&python)
            .args(["-m", "pytest", "python/tests", "-q", "-p", "no:cacheprovider"])
            .args(pytest_args)
            .env("BKE_CLI", cli),
        "pytest python/tests",
    )
}

/// The virtual environment's python (created or refreshed by `scripts/python-venv.sh`).
fn venv(root: &Path) -> anyhow::Result<PathBuf> {
    let out = Command::new("bash")
        .arg("scripts/python-venv.sh")
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running scripts/python-venv.sh")?;
    if !out.status.success() {
        bail!("scripts/python-venv.sh failed: the Python test environment could not be made");
    }
    let python = String::from_utf8(out.stdout)?.trim().to_string();
    Ok(root.join(python))
}

/// Builds the wheel with maturin in `profile` into `target/wheels/python` and returns its path.
fn build_wheel(root: &Path, python: &Path, profile: &str) -> anyhow::Result<PathBuf> {
    let dir = root.join("target/wheels/python");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    let maturin = python.with_file_name("maturin");
    run(
        Command::new(&maturin)
            .args(["build", "--quiet", "--manifest-path", "python/Cargo.toml", "--profile", profile])
            .arg("--interpreter")
            .arg(python)
            .arg("--out")
            .arg(&dir),
        "maturin build",
    )?;
    let wheel = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .with_context(|| format!("maturin wrote no wheel into {}", dir.display()))?;
    Ok(wheel)
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
