//! `cargo xtask` — project automation in Rust, in the style of rust-analyzer's xtask.
//!
//! ```text
//! cargo xtask demo [--json]              the main job: a tour of bke on the bundled data -> target/bke-report/index.html
//! cargo xtask repro [name|all] [--smoke] paper reproductions into the same report (and docs/results.md at full
//!                                        size); without a name, list them
//! cargo xtask check-report [PATH]        load the report in headless Chromium, check it, save screenshot.png
//! cargo xtask test                       the tests: cargo test --workspace, then the Python package's pytest suite
//! cargo xtask wheel                      the Python package's release wheel (abi3, manylinux) into target/wheels
//! cargo xtask setup                      install system packages the optional backends need (libopenblas-dev)
//! cargo xtask bench <suite>              run a benchmark suite (linalg, bkl, tests, bank, dme, io) for every compiled backend
//! cargo xtask fuzz [--seconds N]         run the cargo-fuzz targets of fuzz/ (nightly + cargo-fuzz)
//! ```
//!
//! Heavy work runs in release-built binaries (`bke`, `bke-report`'s `bke-demo` and `bke-repro`,
//! `bke-bench`); xtask only builds them — showing cargo's progress — decides features and paths, and
//! runs them. The OpenBLAS backend is compiled in whenever the system library is present.

mod browser;
mod build;
mod fuzz;
mod python;

use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() -> anyhow::Result<()> {
    forget_own_package_vars();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    std::env::set_current_dir(&root)?;
    match args.first().map(String::as_str) {
        Some("setup") => setup(),
        Some("demo") => demo(&args[1..], &root),
        Some("test") => python::test(&root, &args[1..]),
        Some("wheel") => python::wheel(&root, &args[1..]),
        Some("fuzz") => fuzz::run(&root, &args[1..]),
        Some("bench") => {
            if args.get(1).map(String::as_str) == Some("io") {
                build_cli()?;
            }
            let out = root.join("target/bench");
            run_tool("bke-bench", "bke-bench", &args[1..], &root, &["--out", &out.to_string_lossy()])
        }
        Some("repro") => run_tool(
            "bke-report",
            "bke-repro",
            &args[1..],
            &root,
            &[
                "--out",
                &root.join("target/bench").to_string_lossy(),
                "--report",
                &report_dir(&root).to_string_lossy(),
                "--results",
                &root.join("docs/results.md").to_string_lossy(),
            ],
        ),
        Some("check-report") => {
            let page = args.get(1).map_or_else(|| report_dir(&root).join("index.html"), PathBuf::from);
            browser::check(&page)
        }
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n  demo [--json]                    a tour of bke on the bundled data (the main job), report in target/bke-report\n  repro [name|all] [--smoke]       paper reproductions into the same report and docs/results.md (no name: list them)\n  check-report [PATH]              check the report in headless Chromium and save a screenshot\n  setup                            install libopenblas-dev (for --features openblas)\n  bench <suite>                    benchmark suites: linalg, bkl, tests, bank, dme, io\n  test                             cargo test --workspace, then the Python tests (wheel built into target/python-venv)\n  wheel                            the Python package's release wheel into target/wheels\n  fuzz [--seconds N]               fuzz targets (nightly + cargo-fuzz)"
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

/// The HTML report's directory.
fn report_dir(root: &Path) -> PathBuf {
    target_dir(root).join("bke-report")
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), Into::into)
}

/// Removes the variables `cargo run` (the `cargo xtask` alias) sets for xtask itself —
/// `CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, … — so that the builds xtask starts (cargo, maturin) see the
/// environment a plain `cargo test` sees. ring's build script tracks `CARGO_MANIFEST_DIR`: inherited,
/// it made ring, the OpenBLAS build chain and every bke crate compile again whenever `cargo test` and
/// a `cargo xtask` command alternated.
fn forget_own_package_vars() {
    let own = |k: &str| {
        k.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
            ]
            .contains(&k)
    };
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(own) {
            // SAFETY: called first thing in `main`, before any other thread exists.
            unsafe { std::env::remove_var(&key) };
        }
    }
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// `OPENBLAS_CORETYPE` for the child processes, and a note when OpenBLAS is left out.
fn blas_env(cmd: &mut Command) {
    if !openblas_installed() {
        eprintln!(
            "note: libopenblas-dev is not installed, so the OpenBLAS backend is left out (`cargo xtask setup` installs it)"
        );
    }
    if std::env::var_os("OPENBLAS_CORETYPE").is_none() {
        if let Some(core) = openblas_coretype() {
            cmd.env("OPENBLAS_CORETYPE", core);
        }
    }
}

/// Builds the release `bke` binary (the `io` suite runs it end to end).
fn build_cli() -> anyhow::Result<()> {
    if !build::release(&["build", "-p", "bke-cli"]).status().context("building bke-cli")?.success() {
        bail!("building bke-cli failed");
    }
    Ok(())
}

/// `cargo xtask demo`: builds `bke` and `bke-demo` in release (cargo's own progress on screen), then
/// runs the tour.
fn demo(args: &[String], root: &Path) -> anyhow::Result<()> {
    let t0 = std::time::Instant::now();
    eprintln!("building bke and the demo in release (the first build takes a few minutes) …");
    let mut build = build::release(&["build"]);
    build.args(build::DEMO).args(["--bin", "bke", "--bin", "bke-demo"]);
    if !build.status().context("running cargo build")?.success() {
        bail!("building bke failed");
    }
    eprintln!("[build done in {:.0} s]", t0.elapsed().as_secs_f64());
    let release = target_dir(root).join("release");
    let mut run = Command::new(release.join("bke-demo"));
    run.args([
        "--bke",
        &release.join("bke").to_string_lossy(),
        "--report",
        &report_dir(root).to_string_lossy(),
    ])
    .args(["--data", &target_dir(root).join("demo").to_string_lossy()])
    .args(args)
    .current_dir(root);
    blas_env(&mut run);
    if !run.status().context("running bke-demo")?.success() {
        bail!("the demo failed");
    }
    Ok(())
}

/// Runs binary `bin` of package `package` through `cargo run --release` (cargo's build progress
/// shows).
fn run_tool(package: &str, bin: &str, args: &[String], root: &Path, extra: &[&str]) -> anyhow::Result<()> {
    let mut cmd = build::release(&["run", "-p", package, "--bin", bin]);
    blas_env(&mut cmd);
    cmd.arg("--").args(args).args(extra).current_dir(root);
    let status = cmd.status().with_context(|| format!("running {bin}"))?;
    if !status.success() {
        bail!("{bin} failed");
    }
    Ok(())
}
