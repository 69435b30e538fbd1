//! The Python package: `cargo xtask wheel` and the Python half of `cargo xtask test`.
//!
//! `cargo xtask test` runs `cargo test --workspace` (every crate but bke-py, whose tests are the
//! pytest suite), then builds the Python package's wheel with maturin in the same `dev` profile,
//! installs it into the virtual environment `target/python-venv` (made by `scripts/python-venv.sh`
//! with the pinned packages of `python/requirements-test.txt`) and runs `python/tests` with pytest,
//! with `BKE_CLI` pointing at the `bke` binary that `cargo test` built (the tests compare with the
//! CLI) and `BKE_WHEEL` at the wheel (one test installs it where no Rust toolchain is on `PATH`).
//! Every step shares one feature set (`workspace-hack/`) and one profile, so each crate compiles
//! once: maturin adds only PyO3, numpy and the bindings.
//!
//! ```text
//! cargo xtask test                     everything
//! cargo xtask test --python            only the Python part (wheel + pytest)
//! cargo xtask test --release           the wheel in the release profile (compiles the tree again)
//! cargo xtask test -- -k mmd           arguments after `--` go to pytest
//! cargo xtask wheel                    the release wheel (abi3, manylinux) into target/wheels
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
    if let Some(a) = ours.iter().find(|a| !matches!(a.as_str(), "--python" | "--release")) {
        bail!("cargo xtask test: unknown option {a} (use --python, --release, or -- <pytest args>)");
    }
    let flag = |f: &str| ours.iter().any(|a| a == f);
    if !flag("--python") {
        // bke-py has no cargo tests (pytest tests it); leaving it out here means only maturin builds
        // it, so the PyO3 crates are not rebuilt twice per run (maturin sets PYO3_* variables that
        // plain cargo builds do not, and PyO3's build script reruns when they change). The `bke`
        // binary the pytest suite calls is built here too: the CLI's integration tests need it.
        run(crate::cargo().args(["test", "--workspace", "--exclude", "bke-py"]), "cargo test --workspace")?;
    } else {
        run(
            crate::cargo().args(["build", "--workspace", "--exclude", "bke-py", "--bins"]),
            "building the bke binary",
        )?;
    }
    let python = venv(root)?;
    let profile = if flag("--release") { "release" } else { "dev" };
    let dir = crate::target_dir(root).join("wheels").join(profile);
    let wheel = build_wheel(root, &python, profile, &dir, Portable::No)?;
    run(
        Command::new(&python).args([
            "-m",
            "pip",
            "uninstall",
            "--quiet",
            "--disable-pip-version-check",
            "--yes",
            "bke",
        ]),
        "removing an earlier bke from the test environment",
    )?;
    run(
        Command::new(&python)
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"])
            .arg(&wheel),
        "installing the wheel",
    )?;
    run(
        Command::new(&python)
            .args(["-m", "pytest", "python/tests", "-p", "no:cacheprovider", "--durations=5"])
            .args(pytest_args)
            .env("BKE_CLI", crate::target_dir(root).join("debug/bke"))
            .env("BKE_WHEEL", &wheel),
        "pytest python/tests",
    )
}

/// `cargo xtask wheel`: the release wheel (abi3 for CPython ≥ 3.9, manylinux tag from the glibc
/// symbols it uses) into `target/wheels`; prints its path.
pub fn wheel(root: &Path, args: &[String]) -> anyhow::Result<()> {
    if let Some(a) = args.first() {
        bail!("cargo xtask wheel: unknown option {a} (it takes none)");
    }
    let python = venv(root)?;
    let wheel =
        build_wheel(root, &python, "release", &crate::target_dir(root).join("wheels"), Portable::Yes)?;
    println!("{}", wheel.display());
    eprintln!("install it with: pip install {}", wheel.display());
    Ok(())
}

/// The virtual environment's python (created or refreshed by `scripts/python-venv.sh`).
fn venv(root: &Path) -> anyhow::Result<PathBuf> {
    let out = Command::new("bash")
        .arg("scripts/python-venv.sh")
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running scripts/python-venv.sh")?;
    if !out.status.success() {
        bail!("scripts/python-venv.sh failed: the Python build environment could not be made");
    }
    let python = String::from_utf8(out.stdout)?.trim().to_string();
    Ok(root.join(python))
}

/// Whether a wheel must run on any x86-64 CPU (one to hand out) or only on this machine (the
/// tests' wheel, which then reuses what `cargo test` compiled with `.cargo/config.toml`'s
/// `-C target-cpu=native`).
#[derive(PartialEq)]
enum Portable {
    Yes,
    No,
}

/// Builds the wheel with maturin in `profile` into `dir` (its earlier wheels removed) and returns
/// its path. Cargo's progress shows.
fn build_wheel(
    root: &Path,
    python: &Path,
    profile: &str,
    dir: &Path,
    portable: Portable,
) -> anyhow::Result<PathBuf> {
    for old in wheels_in(dir) {
        std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    eprintln!("building the Python wheel (maturin, {profile} profile) …");
    let mut maturin = Command::new(python.with_file_name("maturin"));
    maturin
        .args(["build", "--manifest-path", "python/Cargo.toml", "--profile", profile])
        .arg("--interpreter")
        .arg(python)
        .arg("--out")
        .arg(dir)
        .current_dir(root);
    if portable == Portable::Yes {
        // Replaces the project's rustflags (target-cpu=native): faer picks its SIMD kernels at run time.
        maturin.env("CARGO_ENCODED_RUSTFLAGS", "");
    }
    run(&mut maturin, "maturin build")?;
    wheels_in(dir).pop().with_context(|| format!("maturin wrote no wheel into {}", dir.display()))
}

fn wheels_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "whl"))
        .collect()
}

fn run(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("starting {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}
