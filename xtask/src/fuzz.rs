//! `cargo xtask fuzz [--seconds N] [target…]`: runs the cargo-fuzz (libFuzzer) targets of `fuzz/`
//! for `N` seconds each (default 60), starting from the committed seed corpus `fuzz/corpus/<target>`.
//! New interesting inputs go to the scratch corpus `target/fuzz-corpus/<target>` (kept between runs,
//! never committed), so the committed corpus stays small; a crash is written to
//! `fuzz/artifacts/<target>/`: fix it and commit that input to `fuzz/corpus/<target>` so the replay
//! test covers it. An input running longer than 20 s counts as a hang, and one using more than 2 GB
//! as a memory failure (libFuzzer's `-timeout`, `-rss_limit_mb`).
//!
//! Needs a nightly toolchain and cargo-fuzz (`rustup toolchain install nightly`,
//! `cargo install cargo-fuzz`). Without them, the corpus is still replayed by `cargo test`
//! (`bke-cli/tests/cli/fuzz_corpus.rs`), which CI runs.

use anyhow::{Context, bail};
use std::path::Path;
use std::process::Command;

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`).
pub const TARGETS: &[&str] = &["csv_reader", "npy_reader", "model_files", "params"];

/// Runs the targets named in `args` (all by default) for `--seconds` each.
pub fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let mut seconds = 60u64;
    let mut targets = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().context("--seconds needs a number")?;
                seconds = v.parse().with_context(|| format!("--seconds {v}: not a whole number"))?;
            }
            t if TARGETS.contains(&t) => targets.push(t),
            other => bail!("unknown fuzz target or option '{other}'; targets: {}", TARGETS.join(", ")),
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    let probe = Command::new("cargo").args(["+nightly", "fuzz", "--version"]).output();
    if !probe.map(|o| o.status.success()).unwrap_or(false) {
        bail!(
            "cargo-fuzz on a nightly toolchain is needed: `rustup toolchain install nightly` and \
             `cargo install cargo-fuzz` (the corpus replay in `cargo test` runs without them)"
        );
    }
    for t in targets {
        println!("fuzzing {t} for {seconds} s");
        let scratch = root.join("target/fuzz-corpus").join(t);
        std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
        let seeds = root.join("fuzz/corpus").join(t);
        let status = Command::new("cargo")
            .current_dir(root.join("fuzz"))
            .args(["+nightly", "fuzz", "run", t])
            .arg(&scratch)
            .arg(&seeds)
            .args(["--", &format!("-max_total_time={seconds}"), "-timeout=20", "-rss_limit_mb=2048"])
            .args(["-print_final_stats=1"])
            .status()
            .with_context(|| format!("running cargo fuzz run {t}"))?;
        if !status.success() {
            bail!("fuzz target {t} failed: see the crash input under fuzz/artifacts/{t}");
        }
    }
    Ok(())
}
