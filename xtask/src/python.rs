//! The Python package: `cargo xtask wheel` and the Python half of `cargo xtask test`.
//!
//! `cargo xtask test` runs `cargo test --release --workspace` (every crate but bke-py, whose tests
//! are the pytest suite), then builds the Python package's wheel with maturin in the same `release`
//! profile, installs it into the virtual environment `target/python-venv` (made by
//! `scripts/python-venv.sh` with the pinned packages of `python/requirements-test.txt`) and runs
//! `python/tests` with pytest, with `BKE_CLI` pointing at the release `bke` binary that `cargo test`
//! built (the tests compare with the CLI) and `BKE_WHEEL` at the wheel (one test installs it where
//! no Rust toolchain is on `PATH`). Every step shares one profile and one feature set (see
//! `build.rs`), so each crate compiles once: maturin adds only PyO3, numpy and the bindings, and
//! `cargo xtask demo` afterwards only links its binaries.
//!
//! ```text
//! cargo xtask test                     everything
//! cargo xtask test --python            only the Python part (wheel + pytest)
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
    if let Some(a) = ours.iter().find(|a| a.as_str() != "--python") {
        bail!("cargo xtask test: unknown option {a} (use --python, or -- <pytest args>)");
    }
    if ours.is_empty() {
        // bke-py has no cargo tests (pytest tests it); leaving it out here means only maturin builds
        // it, so the PyO3 crates are not rebuilt twice per run (maturin sets PYO3_* variables that
        // plain cargo builds do not, and PyO3's build script reruns when they change). The `bke`
        // binary the pytest suite calls is built here too: the CLI's integration tests need it.
        let mut test = crate::build::release(&["test"]);
        run(test.args(crate::build::TEST), "cargo test --release --workspace")?;
    } else {
        // the demo's selection: its features are the test build's (build.rs's test), so a tree that
        // `cargo test` or `cargo xtask demo` built is reused and only `bke` links
        let mut build = crate::build::release(&["build"]);
        run(build.args(crate::build::DEMO).args(["--bin", "bke"]), "building the bke binary")?;
    }
    let python = venv(root)?;
    let dir = crate::target_dir(root).join("wheels").join("test");
    let wheel = build_wheel(root, &python, &dir, Portable::No)?;
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
            .env("BKE_CLI", crate::target_dir(root).join("release/bke"))
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
    let wheel = build_wheel(root, &python, &crate::target_dir(root).join("wheels"), Portable::Yes)?;
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
/// tests' wheel, which reuses what `cargo test --release` compiled, with `.cargo/config.toml`'s
/// `-C target-cpu=native` and the OpenBLAS backend when it is installed).
#[derive(PartialEq)]
enum Portable {
    Yes,
    No,
}

/// Builds the wheel with maturin in the release profile into `dir` (its earlier wheels removed) and
/// returns its path. Cargo's progress shows.
fn build_wheel(root: &Path, python: &Path, dir: &Path, portable: Portable) -> anyhow::Result<PathBuf> {
    for old in wheels_in(dir) {
        std::fs::remove_file(&old).with_context(|| format!("removing {}", old.display()))?;
    }
    eprintln!("building the Python wheel (maturin, release profile) …");
    let mut maturin = Command::new(python.with_file_name("maturin"));
    maturin
        .args(["build", "--manifest-path", crate::build::PYTHON_MANIFEST, "--release"])
        .arg("--interpreter")
        .arg(python)
        .arg("--out")
        .arg(dir)
        .current_dir(root);
    if portable == Portable::Yes {
        // Replaces the project's rustflags (target-cpu=native): faer picks its SIMD kernels at run
        // time. Its own build directory keeps the test build's artefacts (native flags) intact. No
        // OpenBLAS: the wheel must not need a system library.
        maturin
            .env("CARGO_ENCODED_RUSTFLAGS", "")
            .env("CARGO_TARGET_DIR", crate::target_dir(root).join("portable"));
    } else {
        // The OpenBLAS backend links the system library, which a manylinux wheel would have to carry
        // (auditwheel's repair needs patchelf): this wheel is for this machine, tagged `linux`.
        maturin.args(crate::build::features()).args(["--auditwheel", "skip", "--compatibility", "linux"]);
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
