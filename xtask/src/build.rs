//! One build of the tree. Every cargo invocation of xtask — the test command, the CLI the Python
//! tests call, the Python extension, the demo, the reproductions and the benchmarks — builds the
//! libraries in the `release` profile with one feature set, so cargo compiles each crate once and
//! every later step only compiles its own binary and links:
//!
//! * profile: `cargo test --release` builds the libraries in `release` and only the test targets in
//!   `bench` (the workspace's `[profile.bench]`: lightly optimised, with debug assertions);
//! * features: [`features`] turns `openblas` on in every selected package that has it when the system
//!   library is installed, and `workspace-hack/` unifies the features of shared dependencies across
//!   the selections (a dev-dependency or the Python bindings would otherwise turn on a feature of,
//!   say, num-traits that the demo's build lacks, and faer, nalgebra and every bke crate would compile
//!   a second time).
//!
//! The test at the bottom checks with `cargo tree` that every package the demo or the Python
//! extension compiles has a feature set the test command already compiled.

use std::process::Command;

/// The package selection of the test command's `cargo test` (the Python bindings are tested by
/// pytest, through the wheel maturin builds; the fuzz targets need libFuzzer and a nightly
/// toolchain to run, and CI's clippy checks that they compile).
pub const TEST: [&str; 5] = ["--workspace", "--exclude", "bke-py", "--exclude", "bke-fuzz"];

/// The packages of `cargo xtask demo`'s build.
pub const DEMO: [&str; 4] = ["-p", "bke-cli", "-p", "bke-report"];

/// The Python package's manifest (maturin builds `bke-py` from it).
pub const PYTHON_MANIFEST: &str = "python/Cargo.toml";

/// The `--features` arguments of every build: `openblas` (in each selected package that has the
/// feature) when the system OpenBLAS is installed, else none.
pub fn features() -> Vec<&'static str> {
    if crate::openblas_installed() { vec!["--features", "openblas"] } else { Vec::new() }
}

/// `cargo <args…> --release <features>`: a release-profile command with the shared feature set.
pub fn release(args: &[&str]) -> Command {
    let mut cmd = crate::cargo();
    cmd.args(args).arg("--release").args(features());
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// Features maturin passes to cargo for the Python extension (`python/pyproject.toml`'s
    /// `tool.maturin.features`).
    const PYTHON_FEATURES: &str = "pyo3/abi3-py39";

    /// `cargo tree`'s view of a build: one line per compiled package instance, "name version
    /// features" (a dependency built for the host and for the target with different features is two
    /// instances).
    fn instances(args: &[&str], edges: &str) -> BTreeSet<String> {
        let out = crate::cargo()
            .current_dir(crate::project_root())
            .args(["tree", "--prefix", "none", "--format", "{p} {f}", "-e", edges])
            .args(args)
            .args(features())
            .output()
            .expect("running cargo tree");
        assert!(out.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.trim_end_matches(" (*)").replace(" (proc-macro)", ""))
            .filter(|l| !l.trim().is_empty())
            .collect()
    }

    #[test]
    fn the_demo_and_the_python_extension_reuse_the_test_build() {
        let test = instances(&TEST, "normal,build,dev");
        let name_of = |l: &str| l.split(' ').next().unwrap_or("").to_string();
        let test_names: BTreeSet<String> = test.iter().map(|l| name_of(l)).collect();
        let demo = instances(&DEMO, "normal,build");
        let python = instances(
            &["--manifest-path", PYTHON_MANIFEST, "-p", "bke-py", "--features", PYTHON_FEATURES],
            "normal,build",
        );
        for (name, selection) in [("the demo", &demo), ("the Python extension", &python)] {
            // Packages only this build has (PyO3, numpy) compile once anyway.
            let extra: Vec<&String> =
                selection.difference(&test).filter(|l| test_names.contains(&name_of(l))).collect();
            assert!(
                extra.is_empty(),
                "{name} compiles these packages with a feature set `cargo test` does not build, so they \
                 compile twice: turn a dependency's missing features on in workspace-hack/Cargo.toml, \
                 and give a bke package the same features in every build (see `features`):\n{extra:#?}"
            );
        }
    }
}
